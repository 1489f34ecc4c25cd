//! Stored data the core can cross-check: a transcript against its record's
//! `entry_count`, a message-id index against the entry it leads to, and reset archives
//! against the records their resets committed.

use crate::support;

use std::cell::RefCell;

use spool::{
    AppendRequest, Archiver, Batch, Error, Intent, KeyRange, MemoryStorage, Order, PageRequest,
    ResetArchive, Role, Step, Storage, keys, read_sync, run, run_with,
};
use support::{FailingCommits, dump};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn session(storage: &MemoryStorage, n: usize) -> String {
    let created = run(storage, spool::create_session(WS, KEY, "s1", 1)).expect("create");
    for i in 1..=n {
        let mut request = AppendRequest::new(Role::User, format!("entry {i}"));
        request.message_id = Some(format!("m-{i}"));
        run(storage, spool::append_entry(WS, KEY, request, 1 + i as u64)).expect("append");
    }
    assert_eq!(created.session_id, "s1");
    run(storage, spool::session_data_id(WS, KEY))
        .expect("read")
        .expect("session")
}

fn whole_page() -> PageRequest {
    PageRequest {
        order: Order::OldestFirst,
        cursor: None,
        limit: 100,
    }
}

fn assert_corruption_naming_the_session(result: Result<impl std::fmt::Debug, Error>) {
    match result {
        Err(Error::Corruption { key, detail }) => {
            assert!(key.contains(KEY), "{key}: {detail}");
            assert!(detail.contains("counts 3"), "{detail}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// Removes the oldest entry record of identity `data_id`, as damage would: the session
/// record still counts it.
fn lose_oldest_entry(storage: &MemoryStorage, data_id: &str) {
    let first = storage
        .range(
            WS,
            &spool::RangeQuery {
                range: KeyRange::prefix(&keys::entries(data_id)),
                limit: 1,
                reverse: false,
            },
        )
        .expect("range");
    let mut batch = Batch::default();
    batch.delete(first[0].key.clone());
    storage.commit(WS, batch).expect("damage");
}

#[test]
fn test_a_lost_entry_fails_every_whole_transcript_read_with_corruption() {
    let storage = MemoryStorage::new();
    let data_id = session(&storage, 3);
    lose_oldest_entry(&storage, &data_id);

    assert_corruption_naming_the_session(run(&storage, spool::read_page(WS, KEY, whole_page())));
    assert_corruption_naming_the_session(run(
        &storage,
        spool::compaction::canonical_transcript(WS, KEY),
    ));
    let before = dump(&storage, WS);
    assert_corruption_naming_the_session(run(
        &storage,
        spool::apply_intent(WS, KEY, Intent::ResetSameKey, "s2", 10),
    ));
    assert_eq!(dump(&storage, WS), before, "a refused reset writes nothing");
    // A compaction would rewrite the count to what is left: refused, nothing written.
    let request: spool::compaction::CompactRequest =
        serde_json::from_value(serde_json::json!({"context_window_tokens": 1})).expect("request");
    assert_corruption_naming_the_session(run(
        &storage,
        spool::compaction::compact(WS, KEY, request.clone(), 11),
    ));
    assert_corruption_naming_the_session(run(
        &storage,
        spool::compaction::prepare_compaction(WS, KEY, request),
    ));
    assert_eq!(
        dump(&storage, WS),
        before,
        "a refused compaction writes nothing"
    );
    // A page that is not the whole transcript cannot tell, and does not claim to.
    let page = run(
        &storage,
        spool::read_page(
            WS,
            KEY,
            PageRequest {
                limit: 1,
                ..whole_page()
            },
        ),
    )
    .expect("a first page of one");
    assert_eq!(page.entries.len(), 1);
}

#[test]
fn test_an_append_landing_during_a_whole_read_is_not_corruption() {
    let storage = MemoryStorage::new();
    session(&storage, 3);
    let mut op = spool::read_page(WS, KEY, whole_page());
    let mut reads = 0;
    let page = loop {
        match op.poll() {
            Step::Read(request) => {
                reads += 1;
                if reads == 2 {
                    // Between the record read and the transcript read, another writer.
                    let request = AppendRequest::new(Role::User, "meanwhile");
                    run(&storage, spool::append_entry(WS, KEY, request, 50)).expect("append");
                }
                op.handle_read(read_sync(&storage, WS, &request));
            }
            Step::Done(result) => break result.expect("a concurrent append is no damage"),
            other => panic!("unexpected step {other:?}"),
        }
    };
    assert_eq!(page.entries.len(), 4);
}

#[test]
fn test_a_message_index_that_leads_nowhere_or_elsewhere_is_corruption() {
    let storage = MemoryStorage::new();
    let data_id = session(&storage, 3);
    let mut batch = Batch::default();
    batch.put(keys::message(&data_id, "m-1"), b"\x00\xff garbage".to_vec());
    storage.commit(WS, batch).expect("damage");
    match run(&storage, spool::get_entry(WS, KEY, "m-1")) {
        Err(Error::Corruption { key, .. }) => assert!(key.contains("m-1"), "{key}"),
        other => panic!("expected corruption, got {other:?}"),
    }
    let m2 = storage
        .get(WS, &keys::message(&data_id, "m-2"))
        .expect("get")
        .expect("indexed");
    let mut batch = Batch::default();
    batch.put(keys::message(&data_id, "m-3"), m2);
    storage.commit(WS, batch).expect("damage");
    match run(&storage, spool::get_entry(WS, KEY, "m-3")) {
        Err(Error::Corruption { key, detail }) => {
            assert!(key.contains("m-3"), "{key}");
            assert!(detail.contains("m-2"), "{detail}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert_eq!(
        run(&storage, spool::get_entry(WS, KEY, "m-404")).expect("absent"),
        None
    );
}

/// Keeps every archive it is handed.
#[derive(Default)]
struct Keep(RefCell<Vec<ResetArchive>>);

impl Archiver for Keep {
    fn write_archive(&self, _ws: &str, archive: &ResetArchive) -> Result<(), String> {
        self.0.borrow_mut().push(archive.clone());
        Ok(())
    }
}

#[test]
fn test_only_committed_resets_record_their_archive() {
    let failing = FailingCommits {
        inner: MemoryStorage::new(),
        cause: "disk full",
    };
    session(&failing.inner, 2);
    let kept = Keep::default();
    let reset = spool::apply_intent(WS, KEY, Intent::ResetSameKey, "s2", 10);
    assert!(run_with(&failing, &kept, reset).is_err());
    assert_eq!(
        kept.0.borrow().len(),
        1,
        "the archive went out before the commit"
    );
    let records = run(&failing.inner, spool::list_reset_archives(WS, KEY)).expect("list");
    assert!(records.is_empty(), "{records:?}");

    let storage = failing.inner;
    let reset = spool::apply_intent(WS, KEY, Intent::ResetSameKey, "s2", 20);
    run_with(&storage, &kept, reset).expect("reset");
    let records = run(&storage, spool::list_reset_archives(WS, KEY)).expect("list");
    assert_eq!(records.len(), 1, "{records:?}");
    let archive = kept.0.borrow().last().cloned().expect("kept");
    records[0]
        .check(&archive)
        .expect("the record names that archive");
    assert_eq!(
        (
            records[0].session_id.as_str(),
            records[0].transcript_entries
        ),
        ("s1", 2)
    );
    // The earlier, uncommitted archive is not the recorded one.
    assert!(records[0].check(&kept.0.borrow()[0]).is_err());

    // A reset whose archive was not kept records none; records outlive the session.
    let reset = spool::apply_intent(WS, KEY, Intent::ResetSameKey, "s3", 30);
    run(&storage, reset).expect("reset without an archive store");
    run(&storage, spool::delete_session(WS, KEY, None)).expect("delete");
    let records = run(&storage, spool::list_reset_archives(WS, KEY)).expect("list");
    assert_eq!(records.len(), 1);
    // Another workspace has none.
    let other = run(&storage, spool::list_reset_archives("other", KEY)).expect("list");
    assert!(other.is_empty());
}
