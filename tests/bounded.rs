//! Operations on big sessions stay bounded: a compaction, a delete or a reset of shared
//! history writes a boundary or a reference, never a copy, so its commit does not grow
//! with the transcript; a page holds a bounded number of bytes.

use crate::support;

use spool::compaction::{self, CompactRequest};
use spool::{AppendRequest, BranchRequest, Intent, Order, PageRequest, Role, run};
use support::{Recording, Written, dump};

const WS: &str = "default";
const PARENT: &str = "agent:main:main";
const CHILD: &str = "agent:main:child";

/// A session of `n` entries of `size` characters each, then a fresh commit log.
fn session(n: usize, size: usize) -> Recording {
    let storage = Recording::default();
    run(&storage, spool::create_session(WS, PARENT, "p", 1)).expect("create");
    for i in 0..n {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        let content = format!("{i:06} {}", "word ".repeat(size / 5));
        run(
            &storage,
            spool::append_entry(WS, PARENT, AppendRequest::new(role, content), 2 + i as u64),
        )
        .expect("append");
    }
    storage.take();
    storage
}

fn compact(storage: &Recording, key: &str, now_ms: u64) -> compaction::CompactionResult {
    let request = CompactRequest {
        context_window_tokens: 2_000,
        config: Default::default(),
        compaction_id: None,
        trigger_reason: None,
        flush_receipt_status: None,
    };
    run(storage, compaction::compact(WS, key, request, now_ms)).expect("compact")
}

/// Every entry of a transcript read page by page (canonical with `canonical`), with the
/// pages' sizes in bytes of content.
fn pages(storage: &Recording, key: &str, order: Order, canonical: bool) -> (Vec<u64>, Vec<usize>) {
    let (mut ids, mut sizes) = (Vec::new(), Vec::new());
    let mut cursor = None;
    loop {
        let request = PageRequest {
            order,
            cursor,
            limit: 50,
        };
        let op = if canonical {
            spool::read_canonical_page(WS, key, request)
        } else {
            spool::read_page(WS, key, request)
        };
        let page = run(storage, op).expect("page");
        assert!(
            !page.entries.is_empty() || page.next_cursor.is_none(),
            "an empty page before the end"
        );
        sizes.push(page.entries.iter().map(|e| e.content.len()).sum());
        ids.extend(page.entries.iter().map(|e| e.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return (ids, sizes),
        }
    }
}

fn only(commits: Vec<Written>) -> Written {
    assert_eq!(commits.len(), 1, "{commits:?}");
    commits[0]
}

#[test]
fn test_a_compaction_commit_does_not_grow_with_what_it_removes() {
    let mut commits = Vec::new();
    for n in [200, 2_000] {
        let storage = session(n, 400);
        let result = compact(&storage, PARENT, 10_000);
        assert_eq!(result.skip_reason, None);
        let kept = result.kept_entries.len();
        assert_eq!(result.removed_count as usize, n - kept);
        assert!(kept > 0 && kept < 20, "{kept}");
        commits.push(only(storage.take()));
        // Nothing moved: the canonical transcript is every entry, the active one the
        // kept entries, and a second compaction finds nothing more to cut.
        let every: Vec<u64> = (1..=n as u64).collect();
        assert_eq!(pages(&storage, PARENT, Order::OldestFirst, true).0, every);
        let active = pages(&storage, PARENT, Order::OldestFirst, false).0;
        let kept_ids: Vec<u64> = result.kept_entries.iter().map(|e| e.id).collect();
        assert_eq!(active, kept_ids);
        let preimage = run(
            &storage,
            compaction::compaction_preimage(WS, PARENT, result.compaction_id.as_deref().unwrap()),
        )
        .expect("preimage");
        assert_eq!(
            preimage.iter().map(|e| e.id).collect::<Vec<_>>(),
            (1..=(n - kept) as u64).collect::<Vec<_>>()
        );
    }
    let (small, large) = (commits[0], commits[1]);
    assert_eq!(small.mutations, large.mutations, "{small:?} vs {large:?}");
    // The summaries differ only in their counts.
    assert!(large.bytes < small.bytes + 512, "{small:?} vs {large:?}");
    assert!(large.bytes < 32 * 1024, "{large:?}");
}

#[test]
fn test_compacting_twice_archives_each_range_once() {
    let storage = session(300, 400);
    let first = compact(&storage, PARENT, 10_000);
    for i in 0..200u64 {
        run(
            &storage,
            spool::append_entry(
                WS,
                PARENT,
                AppendRequest::new(Role::User, "more ".repeat(80)),
                20_000 + i,
            ),
        )
        .expect("append");
    }
    let second = compact(&storage, PARENT, 30_000);
    assert_eq!(second.skip_reason, None);
    let ids = |r: &compaction::CompactionResult| {
        let id = r.compaction_id.clone().expect("id");
        run(&storage, compaction::compaction_preimage(WS, PARENT, &id))
            .expect("preimage")
            .iter()
            .map(|e| e.id)
            .collect::<Vec<_>>()
    };
    let (a, b) = (ids(&first), ids(&second));
    assert_eq!(a.len() as u64, first.removed_count);
    assert_eq!(b.len() as u64, second.removed_count);
    // The second archived what followed the first, up to its own kept entries.
    assert_eq!(a.last().map(|id| id + 1), b.first().copied());
    assert_eq!(
        b.last().map(|id| id + 1),
        second.kept_entries.first().map(|e| e.id)
    );
    assert_eq!(
        pages(&storage, PARENT, Order::NewestFirst, true).0,
        (1..=500).rev().collect::<Vec<u64>>()
    );
}

#[test]
fn test_pages_of_large_entries_hold_about_a_megabyte() {
    let storage = session(12, 300_000);
    for canonical in [false, true] {
        for order in [Order::OldestFirst, Order::NewestFirst] {
            let (mut ids, sizes) = pages(&storage, PARENT, order, canonical);
            if order == Order::NewestFirst {
                ids.reverse();
            }
            assert_eq!(ids, (1..=12).collect::<Vec<u64>>());
            assert!(sizes.len() >= 3, "{sizes:?}");
            assert!(sizes.iter().all(|&s| s <= (1 << 20) + 300_010), "{sizes:?}");
        }
    }
    // A range answer is bounded too, not only the page built from it.
    assert!(
        storage.largest_range.get() < 3 << 20,
        "{}",
        storage.largest_range.get()
    );
}

/// Deletes or resets the parent of a branch that reads its `n` entries; returns that
/// commit.
fn retire_parent(n: usize, reset: bool) -> (Recording, Written) {
    let storage = session(n, 100);
    compact(&storage, PARENT, 9_000);
    run(
        &storage,
        spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 9_001),
    )
    .expect("branch");
    let before = pages(&storage, CHILD, Order::OldestFirst, true).0;
    let active = pages(&storage, CHILD, Order::OldestFirst, false).0;
    storage.take();
    if reset {
        run(
            &storage,
            spool::apply_intent(WS, PARENT, Intent::ResetSameKey, "p2", 9_002),
        )
        .expect("reset");
    } else {
        run(&storage, spool::delete_session(WS, PARENT, None)).expect("delete");
    }
    let commit = only(storage.take());
    assert_eq!(pages(&storage, CHILD, Order::OldestFirst, true).0, before);
    assert_eq!(pages(&storage, CHILD, Order::OldestFirst, false).0, active);
    (storage, commit)
}

#[test]
fn test_deleting_or_resetting_shared_history_copies_nothing_and_frees_it_with_its_last_reader() {
    for reset in [false, true] {
        let (storage, small) = retire_parent(100, reset);
        let (_, large) = retire_parent(1_000, reset);
        assert_eq!(small.mutations, large.mutations, "reset {reset}");
        // What it writes besides references is the compaction's summary, bounded by the
        // window (2,000 tokens), not by the history.
        assert!(large.mutations < 40 && large.bytes < 12 * 1024, "{large:?}");
        assert!(large.bytes < small.bytes + 512, "{small:?} vs {large:?}");
        // The branch goes: the parent's history goes with its last reader.
        run(&storage, spool::delete_session(WS, CHILD, None)).expect("delete the branch");
        if reset {
            run(&storage, spool::delete_session(WS, PARENT, None)).expect("delete the parent");
        }
        let left: Vec<String> = dump(&storage.inner, WS)
            .iter()
            .map(|kv| spool::keys::display(&kv.key))
            .collect();
        assert!(
            left.iter()
                .all(|k| k.starts_with('a') || k.starts_with('c')),
            "left behind: {left:?}"
        );
    }
}

#[test]
fn test_an_agent_summary_replaces_a_tail_larger_than_a_page() {
    let storage = session(8, 600_000);
    let persist = compaction::PersistRequest {
        summary_text: "the agent's summary".into(),
        kept_entries: (0..3)
            .map(|i| AppendRequest::new(Role::Assistant, format!("kept {i}")))
            .collect(),
        compaction_id: None,
        trigger_reason: None,
    };
    let result = run(
        &storage,
        compaction::persist_compaction_result(WS, PARENT, persist, 9_000),
    )
    .expect("persist");
    assert_eq!(result.removed_count, 5);
    // The three replaced entries (1.8 MB, more than a page) are gone; the agent's
    // version follows the five archived ones.
    let canonical = pages(&storage, PARENT, Order::OldestFirst, true).0;
    assert_eq!(canonical, [1, 2, 3, 4, 5, 9, 10, 11]);
    assert_eq!(
        pages(&storage, PARENT, Order::OldestFirst, false).0,
        [9, 10, 11]
    );
    for id in 6..=8 {
        let message = format!("p-{id}");
        let found = run(&storage, spool::get_entry(WS, PARENT, &message)).expect("lookup");
        assert_eq!(found, None, "{message}");
    }
}

/// The progress of one phase, as reported: (done, total) in order.
fn phase(storage: &Recording, name: &str) -> Vec<(u64, u64)> {
    storage
        .progress
        .borrow()
        .iter()
        .filter(|p| p.phase == name)
        .map(|p| (p.done, p.total))
        .collect()
}

#[test]
fn test_a_compaction_and_a_reset_report_their_progress_a_page_at_a_time() {
    // 600 entries of 4 KiB: pages stop at about a megabyte, so each pass reads several.
    let storage = session(600, 4_000);
    let result = compact(&storage, PARENT, 9_000);
    assert!(result.removed_count > 0, "{:?}", result.skip_reason);
    for name in ["compact: plan", "compact: read"] {
        let seen = phase(&storage, name);
        assert!(seen.len() >= 3, "{name}: one report a page, got {seen:?}");
        assert!(
            seen.windows(2).all(|w| w[0].0 < w[1].0),
            "{name} goes forward: {seen:?}"
        );
        assert!(
            seen.iter().all(|&(_, total)| total == 600),
            "{name}: {seen:?}"
        );
        assert_eq!(seen.last().map(|p| p.0), Some(600), "{name} ends done");
    }
    storage.progress.borrow_mut().clear();
    run(
        &storage,
        spool::apply_intent(WS, PARENT, Intent::ResetSameKey, "p2", 9_001),
    )
    .expect("reset");
    let archived = phase(&storage, "reset: archive");
    // The canonical transcript: the entries the compaction archived and those it kept.
    assert_eq!(archived.last(), Some(&(600, 0)), "{archived:?}");
    assert!(archived.len() >= 3, "{archived:?}");
    // A short call reports nothing.
    storage.progress.borrow_mut().clear();
    run(&storage, spool::get_session(WS, PARENT)).expect("get");
    assert!(storage.progress.borrow().is_empty());
}
