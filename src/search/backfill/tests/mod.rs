//! The backfill against the in-memory storage: history without an index, appends
//! beside it, a commit that loses a race.

use std::cell::RefCell;

use super::*;
use crate::run;
use crate::search::{SearchPage, SearchRequest, search};
use crate::session::data_id_in;
use crate::storage::memory::MemoryStorage;
use crate::storage::{Kv, Storage, StorageError};
use crate::types::{AppendRequest, Role};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn say(storage: &impl Storage, key: &str, text: &str, now: u64) {
    run(
        storage,
        crate::append_entry(WS, key, AppendRequest::new(Role::User, text), now),
    )
    .expect("append");
}

/// A session of `n` entries whose index is gone: history written before the index.
fn old_history(storage: &MemoryStorage, key: &str, id: &str, n: u64) {
    run(storage, crate::create_session(WS, key, id, 1)).expect("create");
    let requests: Vec<AppendRequest> = (1..=n)
        .map(|i| AppendRequest::new(Role::User, format!("note{i} every entry says filler")))
        .collect();
    for chunk in requests.chunks(500) {
        run(storage, crate::append_entries(WS, key, chunk.to_vec(), 10)).expect("append");
    }
    let mut batch = Batch::default();
    index::stage_removal(&mut batch, &data_id_in(storage, WS, id));
    storage.commit(WS, batch).expect("drop the index");
}

/// Old history of `n` entries under [`KEY`] (identity `s1`, no index) and a branch of
/// all of it, `agent:main:branch` (identity `b1`); the branch's key.
fn branched_history(storage: &MemoryStorage, n: u64) -> &'static str {
    old_history(storage, KEY, "s1", n);
    let child = "agent:main:branch";
    run(
        storage,
        crate::branch(WS, KEY, child, crate::BranchRequest::fork("b1"), 100),
    )
    .expect("branch");
    child
}

/// Every key and value of the workspace.
fn snapshot(storage: &MemoryStorage) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    storage
        .range(
            WS,
            &RangeQuery {
                range: KeyRange {
                    start: Vec::new(),
                    end: None,
                },
                limit: 0,
                reverse: false,
            },
        )
        .expect("range")
        .into_iter()
        .map(|kv| (kv.key, kv.value))
        .collect()
}

fn find(storage: &MemoryStorage, query: &str) -> SearchPage {
    crate::search::tests::find(storage, query).expect(query)
}

/// The keys of the index records of identity `id`.
fn index_keys(storage: &MemoryStorage, id: &str) -> Vec<Vec<u8>> {
    snapshot(storage)
        .into_keys()
        .filter(|k| {
            k.starts_with(&keys::identity(
                keys::SEARCH_POSTINGS,
                &data_id_in(storage, WS, id),
            ))
        })
        .collect()
}

/// `storage`, where another writer does `race` right before the first commit.
fn racing<'a>(storage: &'a MemoryStorage, race: impl FnOnce(&MemoryStorage) + 'a) -> Racing<'a> {
    Racing {
        inner: storage,
        before_commit: RefCell::new(Some(Box::new(race))),
    }
}

/// Every call until the cursor runs out.
fn backfill_all(storage: &impl Storage) -> Vec<IndexProgress> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let progress = run(storage, index_backfill(WS, cursor.as_deref())).expect("index backfill");
        cursor.clone_from(&progress.next_cursor);
        out.push(progress);
        if cursor.is_none() {
            return out;
        }
        assert!(out.len() < 1000, "the backfill ends");
    }
}

/// The entries `calls` indexed, in all.
fn indexed<'a>(calls: impl IntoIterator<Item = &'a IndexProgress>) -> u64 {
    calls
        .into_iter()
        .map(|p| u64::from(p.indexed_entries))
        .sum()
}

#[test]
fn test_history_without_an_index_is_found_after_the_backfill() {
    let storage = MemoryStorage::new();
    old_history(&storage, KEY, "s1", 3000);
    // The first MAX_MERGE_ENTRIES of the tail are searched, the rest counted.
    assert_eq!(find(&storage, "note1000").hits.len(), 1);
    let missed = find(&storage, "note2500");
    assert!(missed.hits.is_empty());
    assert_eq!(missed.unindexed, 3000 - index::MAX_MERGE_ENTRIES as u64);

    let calls = backfill_all(&storage);
    let worked: Vec<&IndexProgress> = calls.iter().filter(|p| p.indexed_entries > 0).collect();
    assert_eq!(indexed(worked.iter().copied()), 3000);
    assert!(
        worked
            .iter()
            .all(|p| p.indexed_entries as usize <= index::MAX_MERGE_ENTRIES
                && p.session_key.as_deref() == Some(KEY))
    );
    let pending: Vec<u64> = worked.iter().map(|p| p.pending_entries).collect();
    assert!(pending.windows(2).all(|w| w[0] > w[1]), "{pending:?}");
    assert_eq!(pending.last(), Some(&0));

    for n in [1, 1024, 1025, 2500, 3000] {
        let page = find(&storage, &format!("note{n}"));
        assert_eq!(page.hits.len(), 1, "note{n}");
        assert_eq!(page.hits[0].entry_id, n);
        assert_eq!(page.unindexed, 0);
    }
    // Nothing left: another pass writes nothing.
    let before = snapshot(&storage);
    let again = backfill_all(&storage);
    assert!(again.iter().all(|p| p.indexed_entries == 0));
    assert_eq!(snapshot(&storage), before);
}

#[test]
fn test_every_entry_is_found_once_with_appends_between_calls() {
    let storage = MemoryStorage::new();
    old_history(&storage, KEY, "s1", 1500);
    let mut cursor = None;
    let mut now = 100;
    loop {
        let progress = run(&storage, index_backfill(WS, cursor.as_deref())).expect("call");
        // An agent goes on writing meanwhile, crossing blocks.
        for _ in 0..40 {
            now += 1;
            say(
                &storage,
                KEY,
                &format!("note{now} every entry says filler"),
                now,
            );
        }
        cursor = progress.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let total = 1500 + (now - 100);
    let mut seen = std::collections::BTreeSet::new();
    let mut page_cursor = None;
    loop {
        let page = run(
            &storage,
            search(
                WS,
                SearchRequest {
                    query: "filler".into(),
                    limit: 100,
                    cursor: page_cursor,
                },
            ),
        )
        .expect("page");
        for hit in &page.hits {
            assert!(seen.insert(hit.entry_id), "entry {} twice", hit.entry_id);
        }
        page_cursor = page.next_cursor;
        if page_cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen.len() as u64, total);
    assert_eq!(seen.last(), Some(&total));
}

#[test]
fn test_sessions_are_walked_in_pages_and_small_tails_left_alone() {
    let storage = MemoryStorage::new();
    let sessions = SESSIONS_PER_CALL as usize + 6;
    for i in 0..sessions {
        let key = format!("agent:a{i:03}:main");
        run(
            &storage,
            crate::create_session(WS, &key, &format!("id{i}"), 1),
        )
        .expect("create");
        say(&storage, &key, "a short tail", 2);
    }
    old_history(&storage, "agent:zz:main", "old", 100);
    let before = snapshot(&storage);
    let calls = backfill_all(&storage);
    // A full page of sessions, then the rest with the one that needs a run, then the
    // same session once more.
    assert_eq!(calls[0].sessions_checked, SESSIONS_PER_CALL);
    assert_eq!(calls[0].indexed_entries, 0);
    assert_eq!(calls[1].session_key.as_deref(), Some("agent:zz:main"));
    assert_eq!(calls[1].indexed_entries, 100);
    assert_eq!(calls.len(), 3);
    let after = snapshot(&storage);
    let written: Vec<&Vec<u8>> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert!(!written.is_empty());
    let old = keys::identity(keys::SEARCH_POSTINGS, &data_id_in(&storage, WS, "old"));
    assert!(
        written.iter().all(|k| k.starts_with(&old)),
        "only the old session's index is written"
    );
}

#[test]
fn test_bad_cursors_are_invalid() {
    let storage = MemoryStorage::new();
    for bad in ["", "zz", "00", &validate::hex(b"x-not-a-session-key")] {
        let err = run(&storage, index_backfill(WS, Some(bad))).expect_err(bad);
        assert_eq!(err.code(), "invalid_argument", "{bad}: {err}");
    }
    let err = run(&storage, index_backfill("", None)).expect_err("workspace");
    assert_eq!(err.code(), "invalid_argument");
}

/// A write of another writer.
type Race<'a> = Box<dyn FnOnce(&MemoryStorage) + 'a>;

/// Runs `before_commit` once, right before the first commit it forwards.
struct Racing<'a> {
    inner: &'a MemoryStorage,
    before_commit: RefCell<Option<Race<'a>>>,
}

impl Storage for Racing<'_> {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(workspace, key)
    }
    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.inner.range(workspace, query)
    }
    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        if let Some(race) = self.before_commit.borrow_mut().take() {
            race(self.inner);
        }
        self.inner.commit(workspace, batch)
    }
}

#[test]
fn test_a_backfill_that_loses_a_race_to_an_append_starts_again() {
    let storage = MemoryStorage::new();
    old_history(&storage, KEY, "s1", 2000);
    // An append lands between the backfill's reads and its commit; it crosses a block,
    // so it merges the same tail itself.
    let racing = racing(&storage, |s: &MemoryStorage| {
        let request: Vec<AppendRequest> = (0..24)
            .map(|i| AppendRequest::new(Role::User, format!("late{i} filler")))
            .collect();
        run(s, crate::append_entries(WS, KEY, request, 50)).expect("racing append");
    });
    let progress = run(&racing, index_backfill(WS, None)).expect("backfill");
    assert_eq!(progress.session_key.as_deref(), Some(KEY));
    backfill_all(&storage);
    for n in [1, 1024, 1025, 2000] {
        assert_eq!(find(&storage, &format!("note{n}")).hits.len(), 1, "note{n}");
    }
    assert_eq!(find(&storage, "late23").hits.len(), 1);
    // Each entry in exactly one run: the doc tables together list ids 1..=2024 once.
    let mut ids = Vec::new();
    for kv in storage
        .range(
            WS,
            &RangeQuery {
                range: KeyRange::prefix(&index::bucket_runs(
                    &data_id_in(&storage, WS, "s1"),
                    index::DOCS,
                )),
                limit: 0,
                reverse: false,
            },
        )
        .expect("doc tables")
    {
        let table =
            index::decode(&kv.key, &kv.value, |_: &[u8]| index::Want::SkipRest).expect("decodes");
        ids.extend(table.docs.iter().map(|d| d.id));
    }
    assert_eq!(ids, (1..=2024).collect::<Vec<u64>>());
}

#[test]
fn test_a_session_deleted_meanwhile_gets_no_index_back() {
    let storage = MemoryStorage::new();
    old_history(&storage, KEY, "s1", 200);
    let racing = racing(&storage, |s: &MemoryStorage| {
        run(s, crate::delete_session(WS, KEY, None)).expect("racing delete");
    });
    let progress = run(&racing, index_backfill(WS, None)).expect("backfill");
    assert_eq!(progress.indexed_entries, 0, "{progress:?}");
    assert_eq!(progress.next_cursor, None);
    let left = index_keys(&storage, "s1");
    assert!(
        left.is_empty(),
        "index records of a deleted identity: {left:?}"
    );
}

#[test]
fn test_retired_history_a_branch_reads_is_indexed_under_its_guard() {
    let storage = MemoryStorage::new();
    let child = branched_history(&storage, 1500);
    run(&storage, crate::delete_session(WS, KEY, None)).expect("delete the parent");
    let missed = find(&storage, "note1400");
    assert!(missed.hits.is_empty());
    assert!(missed.unindexed > 0, "{missed:?}");

    let calls = backfill_all(&storage);
    let indexed: u64 = calls.iter().map(|p| u64::from(p.indexed_entries)).sum();
    assert_eq!(indexed, 1500);
    assert!(
        calls
            .iter()
            .filter(|p| p.indexed_entries > 0)
            .all(|p| p.session_key.as_deref() == Some(child))
    );
    let page = find(&storage, "note1400");
    assert_eq!(page.unindexed, 0);
    assert_eq!(page.hits.len(), 1);
    assert_eq!(
        (
            page.hits[0].session_key.as_str(),
            page.hits[0].session_id.as_str()
        ),
        (child, "s1")
    );

    // The last reader leaving while a backfill of the retired history is under way:
    // its commit fails its guard, and nothing of the identity is left behind.
    let storage = MemoryStorage::new();
    let child = branched_history(&storage, 200);
    run(&storage, crate::delete_session(WS, KEY, None)).expect("delete the parent");
    let racing = racing(&storage, move |s: &MemoryStorage| {
        run(s, crate::delete_session(WS, child, None)).expect("the last reader goes");
    });
    let progress = run(&racing, index_backfill(WS, None)).expect("backfill");
    assert_eq!(progress.indexed_entries, 0);
    let left = index_keys(&storage, "s1");
    assert!(
        left.is_empty(),
        "index records of a deleted identity: {left:?}"
    );
}

#[test]
fn test_history_copied_below_a_branchs_runs_is_searched_and_backfilled() {
    let storage = MemoryStorage::new();
    let child = branched_history(&storage, 1500);
    // The branch's own entries, indexed in runs, then rolled back: the rollback copies
    // the history the branch reads into its own identity, below those runs.
    let own: Vec<AppendRequest> = (0..2 * index::BLOCK_ENTRIES)
        .map(|i| {
            let role = if i == 0 { Role::User } else { Role::Assistant };
            AppendRequest::new(role, format!("own{i} branch words"))
        })
        .collect();
    run(&storage, crate::append_entries(WS, child, own, 200)).expect("append");
    assert!(
        !index_keys(&storage, "b1").is_empty(),
        "the branch's own runs"
    );
    run(&storage, crate::rollback(WS, child, 1, None, 300)).expect("rollback");
    run(&storage, crate::delete_session(WS, KEY, None)).expect("delete the parent");
    assert!(find(&storage, "own3").hits.is_empty());
    let before = find(&storage, "note1400");
    assert!(before.hits.is_empty());
    // An upper bound: counted by ids, and the rolled-back ids are gone.
    assert!(
        before.unindexed >= 1500 - index::MAX_MERGE_ENTRIES as u64,
        "{before:?}"
    );
    assert_eq!(
        find(&storage, "note1000").hits.len(),
        1,
        "the tail's head is read"
    );

    let calls = backfill_all(&storage);
    let indexed: u64 = calls.iter().map(|p| u64::from(p.indexed_entries)).sum();
    assert_eq!(indexed, 1500, "{calls:?}");
    let page = find(&storage, "note1400");
    assert_eq!(page.unindexed, 0);
    assert_eq!(page.hits.len(), 1);
    assert_eq!(page.hits[0].session_key, child);
    assert!(find(&storage, "own3").hits.is_empty());
}

/// Moves every index record of the workspace to the tag builds before
/// [`keys::SEARCH_POSTINGS`] wrote (same records).
fn as_v1_index(storage: &MemoryStorage) {
    let mut batch = Batch::default();
    for (key, value) in snapshot(storage) {
        if key.first() == Some(&keys::SEARCH_POSTINGS) {
            let mut old = key.clone();
            old[0] = keys::SEARCH_POSTINGS_V1;
            batch.delete(key);
            batch.put(old, value);
        }
    }
    assert!(!batch.mutations.is_empty(), "an index to move");
    storage.commit(WS, batch).expect("move");
}

fn v1_keys(storage: &MemoryStorage) -> usize {
    snapshot(storage)
        .into_keys()
        .filter(|k| k.first() == Some(&keys::SEARCH_POSTINGS_V1))
        .count()
}

#[test]
fn test_an_index_under_the_old_tag_reads_as_unindexed_until_the_backfill_replaces_it() {
    let storage = MemoryStorage::new();
    run(&storage, crate::create_session(WS, KEY, "s1", 1)).expect("create");
    let requests: Vec<AppendRequest> = (1..=1500)
        .map(|i| AppendRequest::new(Role::User, format!("note{i} every entry says filler")))
        .collect();
    for chunk in requests.chunks(100) {
        run(&storage, crate::append_entries(WS, KEY, chunk.to_vec(), 10)).expect("append");
    }
    // Another identity with too few entries for a run: its tail is searched whole.
    run(
        &storage,
        crate::create_session(WS, "agent:main:short", "s2", 1),
    )
    .expect("create");
    say(&storage, "agent:main:short", "note1400 short", 20);
    let fresh = snapshot(&storage);
    assert_eq!(find(&storage, "note1400").hits.len(), 2);
    as_v1_index(&storage);

    // Not read: the old runs' entries are a tail, its first MAX_MERGE_ENTRIES searched.
    let page = find(&storage, "note1400");
    assert_eq!(page.hits.len(), 1, "only the short session's");
    assert_eq!(page.unindexed, 1500 - index::MAX_MERGE_ENTRIES as u64);

    let calls = backfill_all(&storage);
    assert_eq!(indexed(&calls), 1500);
    assert_eq!(
        v1_keys(&storage),
        0,
        "the first new run removes the old index"
    );
    let page = find(&storage, "note1400");
    assert_eq!((page.hits.len(), page.unindexed), (2, 0));
    // The rebuilt runs start where the appended ones did, at the first entry (their
    // sizes differ: the backfill cuts runs of its own).
    let ids = |s: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>| -> Vec<u64> {
        let docs = index::bucket_runs(&data_id_in(&storage, WS, "s1"), index::DOCS);
        s.keys()
            .filter(|k| k.starts_with(&docs))
            .map(|k| u64::from_be_bytes(k[k.len() - 8..].try_into().expect("8 bytes")))
            .collect()
    };
    assert_eq!(ids(&snapshot(&storage)).first(), ids(&fresh).first());
}

/// Session [`KEY`] (identity `s1`) of one block of entries, its run under the old tag.
fn one_v1_run() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, crate::create_session(WS, KEY, "s1", 1)).expect("create");
    for i in 1..=index::BLOCK_ENTRIES {
        say(&storage, KEY, &format!("note{i}"), 10 + i);
    }
    as_v1_index(&storage);
    storage
}

#[test]
fn test_an_append_that_writes_the_first_new_run_removes_the_old_index() {
    let storage = one_v1_run();
    assert!(v1_keys(&storage) > 0);
    // Appends up to the next crossing merge the tail (the old run's entries too).
    for i in index::BLOCK_ENTRIES + 1..=index::BLOCK_ENTRIES * 2 {
        say(&storage, KEY, &format!("note{i}"), 10 + i);
    }
    assert_eq!(v1_keys(&storage), 0);
    let page = find(&storage, "note3");
    assert_eq!((page.hits.len(), page.unindexed), (1, 0));
    assert_eq!(page.hits[0].entry_id, 3);
}

#[test]
fn test_deleting_a_session_removes_its_index_under_either_tag() {
    let storage = one_v1_run();
    run(&storage, crate::delete_session(WS, KEY, None)).expect("delete");
    assert_eq!(v1_keys(&storage), 0);
    assert!(index_keys(&storage, "s1").is_empty());
}
