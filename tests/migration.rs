//! Data written by record format 1 (the previous release) opens and reads with the
//! documented defaults. The fixture is a dump of a database that release wrote
//! (`tests/fixtures/format-v1/`); the hosts open the same data through SQLite and
//! IndexedDB.

use serde::Deserialize;
use spool::{AppendRequest, Batch, MemoryStorage, Order, PageRequest, Role, Storage, record, run};

#[derive(Deserialize)]
struct Dump {
    format_version: u8,
    pairs: Vec<Pair>,
}

#[derive(Deserialize)]
struct Pair {
    workspace: String,
    key: String,
    value: String,
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn restored() -> MemoryStorage {
    let dump: Dump =
        serde_json::from_str(include_str!("fixtures/format-v1/kv-dump.json")).expect("dump parses");
    assert_eq!(dump.format_version, 1);
    let storage = MemoryStorage::new();
    for pair in dump.pairs {
        let value = unhex(&pair.value);
        assert_eq!(value[0], 1, "the fixture holds format-1 records only");
        let mut batch = Batch::default();
        batch.put(unhex(&pair.key), value);
        storage.commit(&pair.workspace, batch).expect("restore");
    }
    storage
}

#[test]
fn test_format_1_sessions_read_with_documented_defaults() {
    let storage = restored();
    let list = run(&storage, spool::list_sessions("default", 10, None)).expect("list");
    let [demo] = list.sessions.as_slice() else {
        panic!("one session in `default`: {list:?}")
    };
    assert_eq!(demo.key, "agent:demo:main");
    assert_eq!(demo.entry_count, 6);
    assert_eq!(demo.cost_source, "none");
    assert_eq!(
        (
            demo.input_tokens,
            demo.output_tokens,
            demo.cache_read,
            demo.cache_write
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(
        (
            demo.compaction_count,
            demo.missing_cost_entries,
            demo.last_state_id
        ),
        (0, 0, 0)
    );
    assert_eq!(demo.total_cost_usd, 0.0);
    assert!(demo.model_config.is_empty() && demo.metadata.is_empty());
    assert!(demo.model.is_none() && demo.ended_at.is_none());
    assert!(
        !demo.message_index,
        "format-1 identities have no message-id index"
    );
    let team = run(&storage, spool::list_sessions("team-b", 10, None)).expect("list");
    assert_eq!(team.sessions[0].key, "agent:reviewer:pr-42");
    assert_eq!(team.sessions[0].total_tokens, 4);
}

#[test]
fn test_format_1_transcripts_read_and_grow() {
    let storage = restored();
    let key = "agent:demo:main";
    let page = run(
        &storage,
        spool::read_page(
            "default",
            key,
            PageRequest {
                order: Order::OldestFirst,
                cursor: None,
                limit: 100,
            },
        ),
    )
    .expect("page");
    assert_eq!(page.entries.len(), 6);
    assert!(page.entries.iter().all(|e| e.turn_usage.is_none()));
    // Lookups by message id scan an identity that predates the index.
    let third = &page.entries[2];
    let found = run(
        &storage,
        spool::get_entry("default", key, &third.message_id),
    )
    .expect("lookup");
    assert_eq!(found.as_ref().map(|e| e.id), Some(third.id));
    // New writes go out in the current format and are counted.
    let entry = run(
        &storage,
        spool::append_entry(
            "default",
            key,
            AppendRequest::new(Role::User, "after the upgrade"),
            9_999_999_999_999,
        ),
    )
    .expect("append");
    assert_eq!(entry.id, 7);
    let session = run(&storage, spool::get_session("default", key))
        .expect("get")
        .expect("exists");
    assert_eq!(session.entry_count, 7);
    let raw = storage
        .get("default", &spool::keys::session(key))
        .expect("raw")
        .expect("record");
    assert_eq!(raw[0], record::SESSION_FORMAT_VERSION);
}

#[test]
fn test_format_1_sessions_branch_and_their_branches_read_exactly() {
    let storage = restored();
    let key = "agent:demo:main";
    let read = |key: &str| {
        run(
            &storage,
            spool::read_page(
                "default",
                key,
                PageRequest {
                    order: Order::OldestFirst,
                    cursor: None,
                    limit: 100,
                },
            ),
        )
        .expect("page")
        .entries
    };
    let parent = read(key);
    let whole = run(
        &storage,
        spool::branch(
            "default",
            key,
            "agent:demo:fork",
            spool::BranchRequest::fork("f1"),
            9_999_999_999_000,
        ),
    )
    .expect("branch");
    assert!(whole.lineage.forked_from_parent);
    assert_eq!(read("agent:demo:fork"), parent);
    // Lookups by message id scan the un-indexed parent identity through the base.
    let third = &parent[2];
    let found = run(
        &storage,
        spool::get_entry("default", "agent:demo:fork", &third.message_id),
    )
    .expect("lookup");
    assert_eq!(found.as_ref(), Some(third));
    let mut request = spool::BranchRequest::fork("f2");
    request.fork_before_message_id = Some(third.message_id.clone());
    let prefix = run(
        &storage,
        spool::branch(
            "default",
            key,
            "agent:demo:prefix",
            request,
            9_999_999_999_001,
        ),
    )
    .expect("branch before a message");
    assert_eq!(prefix.session.entry_count, 2);
    assert_eq!(read("agent:demo:prefix"), parent[..2].to_vec());
    // The parent's deletion hands both branches their own copy.
    run(&storage, spool::delete_session("default", key, None)).expect("delete");
    assert_eq!(read("agent:demo:fork"), parent);
    assert_eq!(read("agent:demo:prefix"), parent[..2].to_vec());
}

/// The dump of a database written by the release before the entry clock (record formats
/// 2 and 3), whose transcripts hold entries out of insertion order.
fn restored_v3() -> MemoryStorage {
    let dump: Dump =
        serde_json::from_str(include_str!("fixtures/format-v3/kv-dump.json")).expect("dump parses");
    assert_eq!(dump.format_version, 3);
    let storage = MemoryStorage::new();
    for pair in dump.pairs {
        let value = unhex(&pair.value);
        let mut batch = Batch::default();
        batch.put(unhex(&pair.key), value);
        storage.commit(&pair.workspace, batch).expect("restore");
    }
    storage
}

fn ids(storage: &MemoryStorage, workspace: &str, key: &str, order: Order) -> Vec<u64> {
    let (mut ids, mut cursor) = (Vec::new(), None);
    loop {
        let request = PageRequest {
            order,
            cursor: cursor.take(),
            limit: 2,
        };
        let page = run(storage, spool::read_page(workspace, key, request)).expect("page");
        ids.extend(page.entries.iter().map(|e| e.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
}

#[test]
fn test_format_3_transcripts_read_in_stored_order_and_grow_after_every_entry() {
    let storage = restored_v3();
    let cases = [
        ("default", "agent:demo:main", vec![6, 2, 4, 1, 5, 3], 7),
        ("default", "agent:demo:branch", vec![2, 4, 1, 5, 6, 3], 7),
        ("team-b", "agent:reviewer:pr-7", vec![2, 1], 3),
    ];
    for (workspace, key, stored, next) in cases {
        assert_eq!(ids(&storage, workspace, key, Order::OldestFirst), stored);
        let record = storage
            .get(workspace, &spool::keys::session(key))
            .expect("get")
            .expect("record");
        assert!(
            record[0] < record::SESSION_FORMAT_VERSION,
            "{key}: {}",
            record[0]
        );
        // A clock behind every stored entry: the entry still goes last, its time raised
        // to the newest stored one (derived from the entries: the record has no clock).
        let newest = run(
            &storage,
            spool::compaction::canonical_transcript(workspace, key),
        )
        .expect("canonical")
        .iter()
        .map(|e| e.created_at)
        .max()
        .expect("entries");
        let entry = run(
            &storage,
            spool::append_entry(workspace, key, AppendRequest::new(Role::User, "late"), 1),
        )
        .expect("append");
        assert_eq!((entry.id, entry.created_at), (next, newest), "{key}");
        let mut expected = stored.clone();
        expected.push(next);
        assert_eq!(ids(&storage, workspace, key, Order::OldestFirst), expected);
        let mut newest_first = ids(&storage, workspace, key, Order::NewestFirst);
        newest_first.reverse();
        assert_eq!(newest_first, expected, "{key}, newest first");
        let record = storage
            .get(workspace, &spool::keys::session(key))
            .expect("get")
            .expect("record");
        assert_eq!(record[0], record::SESSION_FORMAT_VERSION, "{key}");
    }
}
