//! Branching under interleavings the drivers allow: a release (the parent rewriting
//! shared entries) landing between a branch's reads, or between the reads of a page of
//! the branch, must never show a mixed view.

use spool::{
    AppendRequest, BranchRequest, MemoryStorage, Operation, Order, PageRequest, Role, Step,
    read_sync, run,
};

const WS: &str = "default";
const PARENT: &str = "agent:main:main";
const CHILD: &str = "agent:main:direct:u1";

fn parent_with(n: u64) -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, PARENT, "p", 1)).expect("ok");
    for i in 0..n {
        let request = AppendRequest::new(Role::User, format!("m{i}"));
        run(&storage, spool::append_entry(WS, PARENT, request, 2 + i)).expect("ok");
    }
    storage
}

/// Answers `reads` read steps of `op` from `storage` (and nothing else).
fn answer_reads<T: std::fmt::Debug + 'static>(
    storage: &MemoryStorage,
    op: &mut Operation<T>,
    reads: usize,
) {
    for _ in 0..reads {
        match op.poll() {
            Step::Read(request) => {
                let result = read_sync(storage, WS, &request);
                op.handle_read(result);
            }
            other => panic!("expected a read, got {other:?}"),
        }
    }
}

/// Drives `op` to the end against `storage`.
fn finish<T: 'static>(storage: &MemoryStorage, mut op: Operation<T>) -> T {
    loop {
        match op.poll() {
            Step::Read(request) => {
                let result = read_sync(storage, WS, &request);
                op.handle_read(result);
            }
            Step::Commit(batch) => {
                let result = spool::Storage::commit(storage, WS, batch);
                op.handle_commit(result);
            }
            Step::Archive(_) => op.handle_archive(Err("none".into())),
            Step::Done(outcome) => return outcome.expect("ok"),
        }
    }
}

fn contents(storage: &MemoryStorage, key: &str) -> Vec<String> {
    let page = run(
        storage,
        spool::read_page(
            WS,
            key,
            PageRequest {
                order: Order::OldestFirst,
                cursor: None,
                limit: 100,
            },
        ),
    )
    .expect("ok");
    page.entries.into_iter().map(|e| e.content).collect()
}

#[test]
fn test_page_of_a_branch_restarts_when_its_parent_truncates_mid_read() {
    let storage = parent_with(5);
    run(
        &storage,
        spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 10),
    )
    .expect("ok");
    let mut page = spool::read_page(
        WS,
        CHILD,
        PageRequest {
            order: Order::OldestFirst,
            cursor: None,
            limit: 100,
        },
    );
    // The page has read the child's record (with its base) and its own range...
    answer_reads(&storage, &mut page, 2);
    // ...when the parent truncates: the child gets its own copy, the shared entries go.
    run(&storage, spool::truncate(WS, PARENT, 1, None, 11)).expect("ok");
    let got: Vec<String> = finish(&storage, page)
        .entries
        .into_iter()
        .map(|e| e.content)
        .collect();
    assert_eq!(got, ["m0", "m1", "m2", "m3", "m4"]);
    assert_eq!(contents(&storage, PARENT), ["m4"]);
}

#[test]
fn test_branch_restarts_when_its_parent_truncates_before_it_commits() {
    let storage = parent_with(4);
    let mut branch = spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 10);
    // The branch has read everything it needs (parent, child key, summaries, states)...
    answer_reads(&storage, &mut branch, 4);
    // ...when the parent truncates, before the branch commits.
    run(&storage, spool::truncate(WS, PARENT, 2, None, 11)).expect("ok");
    let made = finish(&storage, branch);
    // The branch saw the truncated parent on its second attempt.
    assert_eq!(made.session.entry_count, 2);
    assert_eq!(contents(&storage, CHILD), ["m2", "m3"]);
    run(&storage, spool::truncate(WS, PARENT, 0, None, 12)).expect("ok");
    assert_eq!(contents(&storage, CHILD), ["m2", "m3"]);
}

#[test]
fn test_parent_truncation_waits_for_a_branch_that_committed_first() {
    let storage = parent_with(4);
    let mut truncate = spool::truncate(WS, PARENT, 1, None, 11);
    // The truncation read the parent and found no branch to release...
    answer_reads(&storage, &mut truncate, 2);
    // ...then a branch commits.
    run(
        &storage,
        spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 10),
    )
    .expect("ok");
    let outcome = finish(&storage, truncate);
    assert_eq!(outcome.after_count, 1);
    assert_eq!(contents(&storage, CHILD), ["m0", "m1", "m2", "m3"]);
    assert_eq!(contents(&storage, PARENT), ["m3"]);
}

#[test]
fn test_a_deep_chain_reads_through_every_layer_and_survives_its_roots() {
    let storage = parent_with(3);
    let mut parent = PARENT.to_owned();
    let mut expected = vec!["m0".to_owned(), "m1".to_owned(), "m2".to_owned()];
    for depth in 1..=6u64 {
        let child = format!("agent:main:d{depth}");
        let made = run(
            &storage,
            spool::branch(
                WS,
                &parent,
                &child,
                BranchRequest::fork(format!("d{depth}")),
                100 + depth,
            ),
        )
        .expect("ok");
        assert_eq!(made.lineage.spawn_depth, depth);
        let text = format!("from d{depth}");
        run(
            &storage,
            spool::append_entry(
                WS,
                &child,
                AppendRequest::new(Role::User, text.clone()),
                200,
            ),
        )
        .expect("ok");
        expected.push(text);
        assert_eq!(contents(&storage, &child), expected);
        parent = child;
    }
    // Deleting the root and a middle link leaves the deepest exactly as it was.
    run(&storage, spool::delete_session(WS, PARENT, None)).expect("ok");
    run(&storage, spool::delete_session(WS, "agent:main:d3", None)).expect("ok");
    assert_eq!(contents(&storage, "agent:main:d6"), expected);
    assert_eq!(contents(&storage, "agent:main:d2"), expected[..5].to_vec());
}

/// Counts the pairs range reads return.
struct CountingReads {
    inner: MemoryStorage,
    pairs: std::cell::Cell<usize>,
}

impl spool::Storage for CountingReads {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, spool::StorageError> {
        self.inner.get(ws, key)
    }
    fn range(
        &self,
        ws: &str,
        query: &spool::RangeQuery,
    ) -> Result<Vec<spool::Kv>, spool::StorageError> {
        let out = self.inner.range(ws, query)?;
        self.pairs.set(self.pairs.get() + out.len());
        Ok(out)
    }
    fn commit(&self, ws: &str, batch: spool::Batch) -> Result<(), spool::StorageError> {
        self.inner.commit(ws, batch)
    }
}

#[test]
fn test_a_page_of_a_branch_does_not_read_what_its_parent_appended_later() {
    let storage = CountingReads {
        inner: parent_with(20),
        pairs: std::cell::Cell::new(0),
    };
    run(
        &storage,
        spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 100),
    )
    .expect("branch");
    for i in 0..2_000 {
        let request = AppendRequest::new(Role::User, format!("later {i}"));
        run(&storage, spool::append_entry(WS, PARENT, request, 200 + i)).expect("append");
    }
    storage.pairs.set(0);
    let page = run(
        &storage,
        spool::read_page(
            WS,
            CHILD,
            PageRequest {
                order: Order::NewestFirst,
                cursor: None,
                limit: 5,
            },
        ),
    )
    .expect("page");
    let got: Vec<String> = page.entries.into_iter().map(|e| e.content).collect();
    assert_eq!(got, ["m19", "m18", "m17", "m16", "m15"]);
    assert!(
        storage.pairs.get() <= 12,
        "read {} pairs for a page of 5",
        storage.pairs.get()
    );
}

#[test]
fn test_session_records_are_format_7_entry_records_format_6_and_others_format_2() {
    use spool::Storage;
    let storage = parent_with(2);
    run(
        &storage,
        spool::create_session(WS, "agent:main:other", "o", 1),
    )
    .expect("create");
    run(
        &storage,
        spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 10),
    )
    .expect("branch");
    let version = |key: &[u8]| storage.get(WS, key).expect("get").expect("record")[0];
    // Every session record carries the entry clock and the active start: a build that
    // reads up to format 4 refuses it instead of reading archived entries as active (or,
    // up to format 3, appending out of order; for a branch, reading one without its
    // history or rewriting its parent without releasing it). A new identity's keys
    // carry a minted data id (format 7): a build that reads up to format 6 refuses it
    // instead of reading its keys under the session id.
    for key in [CHILD, PARENT, "agent:main:other"] {
        assert_eq!(
            version(&spool::keys::session(key)),
            spool::record::DATA_ID_FORMAT_VERSION
        );
    }
    let parent = run(&storage, spool::session_data_id(WS, PARENT))
        .expect("get")
        .expect("parent");
    assert!(spool::keys::is_minted(&parent), "{parent}");
    let entry = spool::keys::entries(&parent);
    let first = storage
        .range(
            WS,
            &spool::RangeQuery {
                range: spool::KeyRange::prefix(&entry),
                limit: 1,
                reverse: false,
            },
        )
        .expect("range");
    assert_eq!(first[0].value[0], spool::record::ENTRY_FORMAT_VERSION);
    assert_eq!(spool::record::ENTRY_FORMAT_VERSION, 6);
    assert_eq!(spool::record::FORMAT_VERSION, 2);
    assert_eq!(spool::record::SESSION_FORMAT_VERSION, 6);
    assert_eq!(spool::record::DATA_ID_FORMAT_VERSION, 7);
}

/// Keeps reset archives.
#[derive(Default)]
struct Archives(std::cell::RefCell<Vec<spool::ResetArchive>>);

impl spool::Archiver for Archives {
    fn write_archive(&self, _ws: &str, archive: &spool::ResetArchive) -> Result<(), String> {
        self.0.borrow_mut().push(archive.clone());
        Ok(())
    }
}

#[test]
fn test_reset_archive_of_a_branch_holds_its_inherited_canonical_transcript() {
    let storage = parent_with(4);
    let persist = spool::compaction::PersistRequest {
        // Short enough to shrink the 4-token transcript.
        summary_text: "m0-2".into(),
        kept_entries: vec![AppendRequest::new(Role::Assistant, "latest")],
        compaction_id: Some("cmp-1".into()),
        trigger_reason: None,
    };
    run(
        &storage,
        spool::compaction::persist_compaction_result(WS, PARENT, persist, 9),
    )
    .expect("persist");
    run(
        &storage,
        spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 10),
    )
    .expect("branch");
    run(
        &storage,
        spool::append_entry(WS, CHILD, AppendRequest::new(Role::User, "mine"), 11),
    )
    .expect("append");
    let archives = Archives::default();
    let outcome = spool::run_with(
        &storage,
        &archives,
        spool::apply_intent(WS, CHILD, spool::Intent::ResetSameKey, "c2", 12),
    )
    .expect("reset");
    assert!(outcome.archive.expect("archived").written);
    let kept = archives.0.borrow();
    let archived: Vec<&str> = kept[0]
        .transcript_entries
        .iter()
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(archived, ["m0", "m1", "m2", "latest", "mine"]);
    assert_eq!(kept[0].session_id, "c");
    assert_eq!(kept[0].summaries[0]["compaction_id"], "cmp-1");
    assert_eq!(kept[0].summaries[0]["session_id"], "c");
    // The parent is untouched; the reset branch starts empty but stays in the tree.
    assert_eq!(contents(&storage, PARENT), ["latest"]);
    assert!(contents(&storage, CHILD).is_empty());
    let lineage = run(&storage, spool::lineage(WS, CHILD)).expect("lineage");
    assert_eq!(
        lineage.node.lineage.parent_session_key.as_deref(),
        Some(PARENT)
    );
    assert!(!lineage.node.lineage.forked_from_parent);
}
