//! The sans-IO machinery and the first operations, driven step by step against the
//! in-memory storage and against storages that fail on purpose.

use std::cell::{Cell, RefCell};

use spool::{
    AppendRequest, Batch, Error, Kv, MemoryStorage, Order, PageRequest, RangeQuery, ReadRequest,
    Role, Step, Storage, StorageError, keys, run,
};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

/// Wraps the memory storage, counts calls and fails commits on demand.
#[derive(Default)]
struct Probe {
    inner: MemoryStorage,
    reads: Cell<usize>,
    commits: Cell<usize>,
    conflicts_left: Cell<usize>,
    fail_commit: RefCell<Option<String>>,
    fail_reads: Cell<bool>,
}

impl Storage for Probe {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.reads.set(self.reads.get() + 1);
        if self.fail_reads.get() {
            return Err(StorageError::Backend("disk unreadable".into()));
        }
        self.inner.get(ws, key)
    }
    fn range(&self, ws: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.reads.set(self.reads.get() + 1);
        if self.fail_reads.get() {
            return Err(StorageError::Backend("disk unreadable".into()));
        }
        self.inner.range(ws, query)
    }
    fn commit(&self, ws: &str, batch: Batch) -> Result<(), StorageError> {
        self.commits.set(self.commits.get() + 1);
        if let Some(cause) = self.fail_commit.borrow().clone() {
            return Err(StorageError::Backend(cause));
        }
        if self.conflicts_left.get() > 0 {
            self.conflicts_left.set(self.conflicts_left.get() - 1);
            return Err(StorageError::Conflict(0));
        }
        self.inner.commit(ws, batch)
    }
}

fn user(text: &str) -> AppendRequest {
    AppendRequest::new(Role::User, text)
}

fn all_entries(storage: &impl Storage) -> Vec<String> {
    let page = run(
        storage,
        spool::read_page(
            WS,
            KEY,
            PageRequest {
                order: Order::OldestFirst,
                cursor: None,
                limit: 1000,
            },
        ),
    )
    .expect("read");
    page.entries.into_iter().map(|e| e.content).collect()
}

#[test]
fn test_create_reads_the_key_and_a_data_id_then_commits_once() {
    let storage = MemoryStorage::new();
    let mut op = spool::create_session(WS, KEY, "s1", 10);
    let Step::Read(ReadRequest::Get(key)) = op.poll() else {
        panic!("expected a get first")
    };
    assert_eq!(key, keys::session(KEY));
    op.handle_read(spool::read_sync(&storage, WS, &ReadRequest::Get(key)));
    // The new identity's keys get a short name: its data-id registry slot is read once.
    let Step::Read(ReadRequest::Get(slot)) = op.poll() else {
        panic!("expected the data-id registry read")
    };
    assert_eq!(slot.first(), Some(&keys::DATA_ID));
    op.handle_read(spool::read_sync(
        &storage,
        WS,
        &ReadRequest::Get(slot.clone()),
    ));
    let Step::Commit(batch) = op.poll() else {
        panic!("expected the commit")
    };
    assert!(
        batch
            .preconditions
            .contains(&spool::Precondition::Absent(keys::session(KEY)))
    );
    // The slot is claimed for this session id, guarded by its absence.
    assert!(
        batch
            .preconditions
            .contains(&spool::Precondition::Absent(slot.clone()))
    );
    assert!(batch.mutations.contains(&spool::Mutation::Put(spool::Kv {
        key: slot,
        value: b"s1".to_vec(),
    })));
    op.handle_commit(storage.commit(WS, batch));
    match op.poll() {
        Step::Done(Ok(session)) => assert_eq!(session.session_id, "s1"),
        other => panic!("expected done, got {other:?}"),
    }
    // Polling a finished operation is a driver bug, reported as such.
    assert!(matches!(op.poll(), Step::Done(Err(Error::Internal { .. }))));
}

#[test]
fn test_poll_before_answer_is_an_internal_error_not_a_panic() {
    let mut op = spool::get_session(WS, KEY);
    assert!(matches!(op.poll(), Step::Read(_)));
    assert!(matches!(op.poll(), Step::Done(Err(Error::Internal { .. }))));
}

#[test]
fn test_append_is_one_read_and_one_commit_whatever_the_length() {
    let storage = Probe::default();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    for i in 0..300 {
        run(
            &storage,
            spool::append_entry(WS, KEY, user(&format!("m{i}")), 2 + i),
        )
        .expect("append");
    }
    let (reads, commits) = (storage.reads.get(), storage.commits.get());
    run(&storage, spool::append_entry(WS, KEY, user("last"), 1000)).expect("append");
    assert_eq!(storage.reads.get() - reads, 1);
    assert_eq!(storage.commits.get() - commits, 1);
}

#[test]
fn test_lost_race_restarts_the_operation_from_its_reads() {
    let storage = Probe::default();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    storage.conflicts_left.set(2);
    let entry = run(
        &storage,
        spool::append_entry(WS, KEY, user("after two lost races"), 5),
    )
    .expect("append");
    assert_eq!(entry.id, 1);
    assert_eq!(all_entries(&storage), vec!["after two lost races"]);
}

#[test]
fn test_a_mapped_outcome_is_mapped_once_after_the_retries() {
    let storage = Probe::default();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    storage.conflicts_left.set(2);
    let calls = std::rc::Rc::new(Cell::new(0));
    let counted = calls.clone();
    let op = spool::append_entry(WS, KEY, user("mapped"), 5)
        .map(move |entry| {
            counted.set(counted.get() + 1);
            entry.content
        })
        .map(|content| content.len());
    assert_eq!(run(&storage, op).expect("append"), "mapped".len());
    assert_eq!(calls.get(), 1, "once, after the two lost races");
    // A failing operation is not mapped.
    let counted = calls.clone();
    let failed = spool::append_entry(WS, "agent:main:absent", user("x"), 6).map(move |_| {
        counted.set(counted.get() + 1);
    });
    assert_eq!(
        run(&storage, failed).expect_err("no session").code(),
        "not_found"
    );
    assert_eq!(calls.get(), 1);
}

#[test]
fn test_endless_contention_gives_up_with_conflict() {
    let storage = Probe::default();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    storage.conflicts_left.set(usize::MAX);
    let before = storage.commits.get();
    let err = run(&storage, spool::append_entry(WS, KEY, user("never"), 5)).expect_err("must fail");
    assert_eq!(err.code(), "conflict");
    assert_eq!(storage.commits.get() - before, spool::MAX_ATTEMPTS as usize);
}

#[test]
fn test_concurrent_create_loser_sees_conflict() {
    // Two writers read "absent"; the second commit loses, re-reads, and reports the
    // duplicate instead of overwriting.
    let storage = MemoryStorage::new();
    let mut first = spool::create_session(WS, KEY, "one", 1);
    let mut second = spool::create_session(WS, KEY, "two", 1);
    // Each reads the key, then its data-id registry slot.
    for _ in 0..2 {
        let (Step::Read(r1), Step::Read(r2)) = (first.poll(), second.poll()) else {
            panic!("reads")
        };
        first.handle_read(spool::read_sync(&storage, WS, &r1));
        second.handle_read(spool::read_sync(&storage, WS, &r2));
    }
    let (Step::Commit(b1), Step::Commit(b2)) = (first.poll(), second.poll()) else {
        panic!("commits")
    };
    first.handle_commit(storage.commit(WS, b1));
    second.handle_commit(storage.commit(WS, b2));
    assert!(matches!(first.poll(), Step::Done(Ok(_))));
    let Step::Read(again) = second.poll() else {
        panic!("the loser re-reads")
    };
    second.handle_read(spool::read_sync(&storage, WS, &again));
    let Step::Done(Err(err)) = second.poll() else {
        panic!("the loser fails")
    };
    assert_eq!(err.code(), "conflict");
    let session = run(&storage, spool::get_session(WS, KEY))
        .expect("get")
        .expect("exists");
    assert_eq!(session.session_id, "one");
}

#[test]
fn test_storage_failure_surfaces_its_cause_and_writes_nothing() {
    let storage = Probe::default();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    run(&storage, spool::append_entry(WS, KEY, user("kept"), 2)).expect("append");
    let before = storage.inner.len();
    *storage.fail_commit.borrow_mut() = Some("disk full".into());
    let err = run(&storage, spool::append_entry(WS, KEY, user("lost"), 3)).expect_err("must fail");
    assert_eq!(
        err,
        Error::Storage {
            cause: "disk full".into()
        }
    );
    *storage.fail_commit.borrow_mut() = None;
    assert_eq!(storage.inner.len(), before);
    assert_eq!(all_entries(&storage), vec!["kept"]);
    let session = run(&storage, spool::get_session(WS, KEY))
        .expect("get")
        .expect("exists");
    assert_eq!((session.entry_count, session.updated_at), (1, 2));
}

#[test]
fn test_read_failure_surfaces_as_storage_error() {
    let storage = Probe::default();
    storage.fail_reads.set(true);
    let err = run(&storage, spool::get_session(WS, KEY)).expect_err("must fail");
    assert_eq!(
        err,
        Error::Storage {
            cause: "disk unreadable".into()
        }
    );
}

#[test]
fn test_corrupt_session_record_is_a_typed_error_naming_its_key() {
    let storage = MemoryStorage::new();
    let mut batch = Batch::default();
    batch.put(keys::session(KEY), b"\x01{\"key\": 42".to_vec());
    storage.commit(WS, batch).expect("plant garbage");
    for err in [
        run(&storage, spool::get_session(WS, KEY)).expect_err("must fail"),
        run(&storage, spool::append_entry(WS, KEY, user("x"), 1)).expect_err("must fail"),
    ] {
        let Error::Corruption { key, .. } = &err else {
            panic!("expected corruption, got {err:?}")
        };
        assert!(key.contains(KEY), "{key}");
    }
}

#[test]
fn test_stale_epoch_append_writes_nothing() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    let mut stale = user("from an old writer");
    stale.expected_epoch = Some(7);
    let err = run(&storage, spool::append_entry(WS, KEY, stale, 2)).expect_err("must fail");
    assert_eq!(
        err,
        Error::StaleEpoch {
            key: KEY.into(),
            expected: 7,
            actual: 0
        }
    );
    assert!(all_entries(&storage).is_empty());
}

#[test]
fn test_same_inputs_give_the_same_bytes() {
    let script = |storage: &MemoryStorage| {
        run(storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
        run(storage, spool::create_session(WS, "agent:b:c", "s2", 2)).expect("create");
        for i in 0..20 {
            let mut r = user(&format!("m{i}"));
            r.token_count = Some(i);
            run(
                storage,
                spool::append_entry(
                    WS,
                    if i % 3 == 0 { "agent:b:c" } else { KEY },
                    r,
                    10 + i / 2,
                ),
            )
            .expect("append");
        }
        storage
            .range(
                WS,
                &RangeQuery {
                    range: spool::KeyRange::prefix(b""),
                    limit: 0,
                    reverse: false,
                },
            )
            .expect("dump")
    };
    assert_eq!(script(&MemoryStorage::new()), script(&MemoryStorage::new()));
}

#[test]
fn test_a_page_of_the_session_list_is_one_read() {
    let storage = Probe::default();
    for i in 0..60 {
        run(
            &storage,
            spool::create_session(WS, &format!("agent:a:{i}"), &format!("s{i}"), i),
        )
        .expect("create");
    }
    run(
        &storage,
        spool::append_entry(WS, "agent:a:7", user("bump"), 100),
    )
    .expect("append");
    let reads = storage.reads.get();
    let page = run(&storage, spool::list_sessions(WS, 50, None)).expect("list");
    assert_eq!(storage.reads.get() - reads, 1);
    assert_eq!(page.sessions.len(), 50);
    // The index copy is the record as of the latest write.
    assert_eq!(
        (page.sessions[0].key.as_str(), page.sessions[0].entry_count),
        ("agent:a:7", 1)
    );
    assert_eq!(page.sessions[1].key, "agent:a:59");
}

#[test]
fn test_oversized_content_is_refused_before_any_read_or_write() {
    let storage = Probe::default();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    let (reads, commits) = (storage.reads.get(), storage.commits.get());
    let huge = "x".repeat(spool::validate::MAX_CONTENT_BYTES + 1);
    let err = run(&storage, spool::append_entry(WS, KEY, user(&huge), 2)).expect_err("too big");
    assert_eq!(err.code(), "invalid_argument");
    assert_eq!(
        (storage.reads.get(), storage.commits.get()),
        (reads, commits)
    );
    let at_limit = "x".repeat(spool::validate::MAX_CONTENT_BYTES);
    run(&storage, spool::append_entry(WS, KEY, user(&at_limit), 3)).expect("at the limit");
}

/// `n` turns of `KEY`, each settled before the next starts.
fn turns(storage: &impl Storage, n: u64) {
    for i in 1..=n {
        let id = format!("t{i}");
        let start = spool::turns::NewTurn {
            turn_id: id.clone(),
            provider_turn_id: None,
            provider_binding: None,
            expected_epoch: None,
        };
        run(storage, spool::start_turn(WS, KEY, start, 10 * i)).expect("start");
        let close = spool::turns::CloseTurn::default();
        run(storage, spool::settle_turn(WS, KEY, &id, close, 10 * i + 1)).expect("settle");
    }
}

#[test]
fn test_turn_pages_cover_every_turn_once_in_either_order() {
    for n in 0..=7u64 {
        let storage = Probe::default();
        run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
        turns(&storage, n);
        for order in [Order::OldestFirst, Order::NewestFirst] {
            for limit in 1..=4u32 {
                let (mut seen, mut cursor, mut pages) = (Vec::new(), None, 0);
                loop {
                    let reads = storage.reads.get();
                    let request = spool::turns::TurnPageRequest {
                        order,
                        cursor: cursor.clone(),
                        limit,
                    };
                    let page = run(&storage, spool::list_turns(WS, KEY, request)).expect("page");
                    // The session record, then one range read of the turns.
                    assert_eq!(storage.reads.get() - reads, 2);
                    assert!(page.turns.len() <= limit as usize);
                    pages += 1;
                    seen.extend(page.turns.iter().map(|t| t.seq));
                    match page.next_cursor {
                        Some(next) => {
                            assert_eq!(
                                page.turns.len(),
                                limit as usize,
                                "only a full page goes on"
                            );
                            cursor = Some(next);
                        }
                        None => break,
                    }
                }
                let mut all: Vec<u64> = (1..=n).collect();
                if order == Order::NewestFirst {
                    all.reverse();
                }
                assert_eq!(seen, all, "n={n} limit={limit} {order:?}");
                // No empty trailing page: a cursor is given only when turns remain.
                let full_pages = n.div_ceil(u64::from(limit)).max(1);
                assert_eq!(pages, full_pages, "n={n} limit={limit} {order:?}");
            }
        }
    }
}

#[test]
fn test_turn_list_refuses_bad_requests_before_reading() {
    let storage = Probe::default();
    run(&storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    let reads = storage.reads.get();
    for (limit, cursor) in [
        (0, None),
        (1001, None),
        (5, Some("xyz")),
        (5, Some("0102")),
        (5, Some("000000000000000100")),
    ] {
        let request = spool::turns::TurnPageRequest {
            order: Order::OldestFirst,
            cursor: cursor.map(str::to_owned),
            limit,
        };
        let err = run(&storage, spool::list_turns(WS, KEY, request)).expect_err("refused");
        assert_eq!(err.code(), "invalid_argument", "{limit} {cursor:?}: {err}");
    }
    assert_eq!(storage.reads.get(), reads, "nothing was read");
    let missing = spool::list_turns(WS, "agent:main:none", Default::default());
    let err = run(&storage, missing).expect_err("unknown session");
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
}
