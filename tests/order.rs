//! Transcript order is insertion order, whatever the writers' clocks: ids strictly
//! increase in every read, and an entry committed behind a reader's cursor is read after
//! it.

use crate::support;

use spool::compaction::PersistRequest;
use spool::{AppendRequest, BranchRequest, Entry, MemoryStorage, Order, PageRequest, Role, run};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn append(storage: &MemoryStorage, key: &str, content: &str, now_ms: u64) -> Entry {
    let mut request = AppendRequest::new(Role::User, content);
    request.message_id = Some(format!("{key}/{content}"));
    run(storage, spool::append_entry(WS, key, request, now_ms)).expect("append")
}

/// Every page of `key` in `order`, `limit` entries at a time, by cursor.
fn pages(storage: &MemoryStorage, key: &str, order: Order, limit: u32) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let page = run(
            storage,
            spool::read_page(
                WS,
                key,
                PageRequest {
                    order,
                    cursor: cursor.take(),
                    limit,
                },
            ),
        )
        .expect("page");
        ids.extend(page.entries.iter().map(|e| e.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
}

fn canonical(storage: &MemoryStorage, key: &str) -> Vec<Entry> {
    run(storage, spool::compaction::canonical_transcript(WS, key)).expect("canonical")
}

/// Asserts every read of `key` gives exactly `expected` ids, in order (reversed newest
/// first), and that `created_at` never decreases in that order.
fn assert_reads_in_order(storage: &MemoryStorage, key: &str, expected: &[u64]) {
    for limit in [1, 3, 100] {
        assert_eq!(
            pages(storage, key, Order::OldestFirst, limit),
            expected,
            "{key}, oldest first, pages of {limit}"
        );
        let mut newest_first = pages(storage, key, Order::NewestFirst, limit);
        newest_first.reverse();
        assert_eq!(
            newest_first, expected,
            "{key}, newest first, pages of {limit}"
        );
    }
    let entries = canonical(storage, key);
    let ids: Vec<u64> = entries.iter().map(|e| e.id).collect();
    assert_eq!(ids, expected, "{key}, canonical");
    assert!(
        entries
            .windows(2)
            .all(|w| w[0].created_at <= w[1].created_at),
        "{key}: created_at goes down in read order: {entries:?}"
    );
}

#[test]
fn test_appends_with_decreasing_clocks_keep_insertion_order_in_every_read() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    // Clocks going backwards, with one writer ahead in the middle.
    let clocks = [
        9_000, 8_000, 7_000, 12_000, 3_000, 2_000, 1_000, 12_500, 100,
    ];
    let entries: Vec<Entry> = clocks
        .iter()
        .enumerate()
        .map(|(i, &now)| append(&storage, KEY, &format!("e{i}"), now))
        .collect();
    let ids: Vec<u64> = (1..=clocks.len() as u64).collect();
    assert_eq!(entries.iter().map(|e| e.id).collect::<Vec<_>>(), ids);
    // `created_at` is the caller's time, raised to the newest earlier entry's.
    let created: Vec<u64> = entries.iter().map(|e| e.created_at).collect();
    assert_eq!(
        created,
        [
            9_000, 9_000, 9_000, 12_000, 12_000, 12_000, 12_000, 12_500, 12_500
        ]
    );
    assert_reads_in_order(&storage, KEY, &ids);

    // The message-id index holds each entry's position, and positions follow ids.
    let data_id = run(&storage, spool::session_data_id(WS, KEY))
        .expect("get")
        .expect("session");
    let mut positions = Vec::new();
    for entry in &entries {
        let found = run(&storage, spool::get_entry(WS, KEY, &entry.message_id))
            .expect("lookup")
            .expect("found");
        assert_eq!(found, *entry);
        let index = spool::keys::message(&data_id, &entry.message_id);
        let position = support::dump(&storage, WS)
            .into_iter()
            .find(|kv| kv.key == index)
            .expect("indexed")
            .value;
        assert_eq!(position, spool::keys::position(entry.created_at, entry.id));
        positions.push(position);
    }
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}

#[test]
fn test_an_entry_committed_behind_a_cursor_is_read_after_it() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    for (i, now) in [5_000, 6_000, 7_000].into_iter().enumerate() {
        append(&storage, KEY, &format!("e{i}"), now);
    }
    let first = run(
        &storage,
        spool::read_page(
            WS,
            KEY,
            PageRequest {
                order: Order::OldestFirst,
                cursor: None,
                limit: 2,
            },
        ),
    )
    .expect("page");
    // A writer whose clock is behind the entries the reader has passed.
    append(&storage, KEY, "late", 1_000);
    let rest = run(
        &storage,
        spool::read_page(
            WS,
            KEY,
            PageRequest {
                order: Order::OldestFirst,
                cursor: first.next_cursor,
                limit: 10,
            },
        ),
    )
    .expect("page");
    let ids: Vec<u64> = first
        .entries
        .iter()
        .chain(&rest.entries)
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, [1, 2, 3, 4]);
}

#[test]
fn test_a_branch_childs_own_entries_sort_after_its_inherited_history() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    for (i, now) in [5_000, 3_000, 7_000, 4_000].into_iter().enumerate() {
        append(&storage, KEY, &format!("e{i}"), now);
    }
    let child = "agent:main:child";
    run(
        &storage,
        spool::branch(WS, KEY, child, BranchRequest::fork("c"), 8_000),
    )
    .expect("branch");
    let own = append(&storage, child, "own", 10);
    assert_eq!((own.id, own.created_at), (5, 7_000));
    let parent_after = append(&storage, KEY, "parent after", 20);
    assert_eq!(parent_after.id, 5);
    assert_reads_in_order(&storage, child, &[1, 2, 3, 4, 5]);
    assert_reads_in_order(&storage, KEY, &[1, 2, 3, 4, 5]);
    assert_eq!(
        canonical(&storage, child)[4].content,
        "own",
        "the child reads its own entry, not the parent's"
    );

    // A fork before a message: the child's entries sort after the inherited prefix.
    let prefix = "agent:main:prefix";
    let mut request = BranchRequest::fork("p");
    request.fork_transcript = false;
    request.fork_before_message_id = Some(format!("{KEY}/e2"));
    run(&storage, spool::branch(WS, KEY, prefix, request, 8_000)).expect("branch before");
    let own = append(&storage, prefix, "own", 1);
    assert_eq!(own.id, 6);
    assert_reads_in_order(&storage, prefix, &[1, 2, 6]);

    // A branch of the branch, appended with a clock behind everything.
    let grandchild = "agent:main:grandchild";
    run(
        &storage,
        spool::branch(WS, child, grandchild, BranchRequest::fork("g"), 9_000),
    )
    .expect("branch of a branch");
    let own = append(&storage, grandchild, "own", 2);
    assert_eq!(own.id, 6);
    assert_reads_in_order(&storage, grandchild, &[1, 2, 3, 4, 5, 6]);
}

#[test]
fn test_a_turn_and_an_external_compactions_kept_entries_sort_after_the_rest() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    for (i, now) in [5_000, 6_000, 7_000, 8_000].into_iter().enumerate() {
        append(&storage, KEY, &format!("e{i}"), now);
    }
    let turn = spool::TurnCommit {
        entries: vec![
            AppendRequest::new(Role::User, "turn question"),
            AppendRequest::new(Role::Assistant, "turn answer"),
        ],
        thread: None,
        expected_epoch: None,
    };
    let committed = run(&storage, spool::commit_turn(WS, KEY, turn, 100)).expect("turn");
    let turn_ids: Vec<u64> = committed.entries.iter().map(|e| e.id).collect();
    assert_eq!(turn_ids, [5, 6]);
    assert_reads_in_order(&storage, KEY, &[1, 2, 3, 4, 5, 6]);

    // The agent's own summary replaces the last entry by one kept entry, written with a
    // clock behind the entries it keeps.
    let persist = PersistRequest {
        summary_text: "the early part".into(),
        kept_entries: vec![AppendRequest::new(Role::Assistant, "kept by the agent")],
        compaction_id: Some("cmp-1".into()),
        trigger_reason: None,
    };
    run(
        &storage,
        spool::compaction::persist_compaction_result(WS, KEY, persist, 200),
    )
    .expect("persist");
    let canonical = canonical(&storage, KEY);
    let ids: Vec<u64> = canonical.iter().map(|e| e.id).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 7], "{canonical:?}");
    assert_eq!(canonical[5].content, "kept by the agent");
    let after = append(&storage, KEY, "after", 300);
    assert_eq!(after.id, 8);
    assert_eq!(
        pages(&storage, KEY, Order::NewestFirst, 2).first(),
        Some(&8)
    );
}
