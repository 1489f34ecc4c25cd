//! The storage conformance suite against IndexedDB, in a real browser; plus the parts
//! of `IdbStorage` the suite does not reach (schema version, `versionchange`).
#![cfg(target_arch = "wasm32")]

mod common;
#[path = "../../tests/conformance/mod.rs"]
mod conformance;

use std::cell::RefCell;
use std::rc::Rc;

use spool::{AsyncStorage, Batch, StorageError};
use spool_web::{IdbStorage, Known};
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

struct IndexedDb;

impl conformance::Backend for IndexedDb {
    type Store = IdbStorage;

    async fn open(&self, name: &str) -> IdbStorage {
        IdbStorage::open(&common::db_name("conformance", name))
            .await
            .expect("open IndexedDB")
    }
}

conformance_tests!(wasm, IndexedDb);

/// The same suite through one long-lived [`spool_web::Attempt`]: its shared transaction
/// ends whenever the suite waits on anything else, so this also exercises the fallback to
/// a fresh transaction.
mod shared_transaction {
    use super::*;

    pub(super) struct SharedTransaction;

    impl conformance::Backend for SharedTransaction {
        type Store = spool_web::Attempt<'static>;

        async fn open(&self, name: &str) -> spool_web::Attempt<'static> {
            let storage = IdbStorage::open(&common::db_name("conformance-shared", name))
                .await
                .expect("open IndexedDB");
            // Leaked: an attempt borrows its database for the whole test.
            Box::leak(Box::new(storage)).attempt()
        }
    }

    conformance_tests!(wasm, SharedTransaction);
}

/// The same suite through one long-lived attempt that keeps what it reads and commits
/// ([`IdbStorage::attempt_knowing`]), as the JS API runs operations under a Web Lock:
/// every read after the first of a key is answered from what is known.
mod known_values {
    use super::*;

    pub(super) struct KnownValues;

    impl conformance::Backend for KnownValues {
        type Store = spool_web::Attempt<'static>;

        async fn open(&self, name: &str) -> spool_web::Attempt<'static> {
            let storage = IdbStorage::open(&common::db_name("conformance-known", name))
                .await
                .expect("open IndexedDB");
            // Leaked: an attempt borrows its database for the whole test.
            Box::leak(Box::new(storage)).attempt_knowing(Rc::default())
        }
    }

    conformance_tests!(wasm, KnownValues);
}

/// A put of `key` = `value`.
fn put(key: &[u8], value: &[u8]) -> Batch {
    let mut batch = Batch::default();
    batch.put(key.to_vec(), value.to_vec());
    batch
}

#[wasm_bindgen_test]
async fn test_a_stale_known_value_never_lets_a_write_through() {
    let name = common::db_name("idb", "stale_known");
    let ours = IdbStorage::open(&name).await.expect("open");
    // A writer the caller failed to keep out: a second connection.
    let theirs = IdbStorage::open(&name).await.expect("open again");
    let known: Rc<RefCell<Known>> = Rc::default();
    let knowing = || ours.attempt_knowing(Rc::clone(&known));
    knowing()
        .commit("ws", put(b"k", b"v1"))
        .await
        .expect("commit");
    theirs.commit("ws", put(b"k", b"v2")).await.expect("commit");
    // Reads trust what is known: that is the caller's promise to keep.
    let read = knowing().get("ws", b"k").await.expect("get");
    assert_eq!(read.as_deref(), Some(&b"v1"[..]));
    // A commit does not: its precondition is read in the committing transaction.
    let mut batch = put(b"k", b"v3");
    batch.require_equals(b"k".to_vec(), b"v1".to_vec());
    let lost = knowing().commit("ws", batch).await;
    assert!(matches!(lost, Err(StorageError::Conflict(0))), "{lost:?}");
    assert!(known.borrow().is_empty(), "a failed commit forgets");
    let read = knowing().get("ws", b"k").await.expect("get");
    assert_eq!(read.as_deref(), Some(&b"v2"[..]), "read afresh");
    assert_eq!(
        theirs.get("ws", b"k").await.expect("get").as_deref(),
        Some(&b"v2"[..])
    );
}

#[wasm_bindgen_test]
async fn test_appends_through_a_stale_known_record_lose_nothing() {
    let name = common::db_name("idb", "stale_append");
    let ours = IdbStorage::open(&name).await.expect("open");
    let theirs = IdbStorage::open(&name).await.expect("open again");
    let known: Rc<RefCell<Known>> = Rc::default();
    let append = |content: &str, now: u64| {
        let request = spool::AppendRequest::new(spool::Role::User, content.to_owned());
        spool::append_entry("ws", "agent:a:main", request, now)
    };
    spool::run_async(
        &ours.attempt_knowing(Rc::clone(&known)),
        spool::create_session("ws", "agent:a:main", "s", 1),
    )
    .await
    .expect("create");
    spool::run_async(&ours.attempt_knowing(Rc::clone(&known)), append("ours", 2))
        .await
        .expect("append");
    // Another writer appends behind the known session record's back …
    spool::run_async(&theirs, append("theirs", 3))
        .await
        .expect("append");
    // … so this append's first commit conflicts; the retry reads afresh.
    let entry = spool::run_async(
        &ours.attempt_knowing(Rc::clone(&known)),
        append("ours again", 4),
    )
    .await
    .expect("append");
    assert_eq!(entry.id, 3);
    let session = spool::run_async(&theirs, spool::get_session("ws", "agent:a:main"))
        .await
        .expect("get")
        .expect("the session");
    assert_eq!((session.entry_count, session.last_entry_id), (3, 3));
}

#[wasm_bindgen_test]
async fn test_known_values_follow_range_deletes_and_stay_bounded() {
    let ours = IdbStorage::open(&common::db_name("idb", "known_bounds"))
        .await
        .expect("open");
    let known: Rc<RefCell<Known>> = Rc::default();
    let knowing = || ours.attempt_knowing(Rc::clone(&known));
    knowing()
        .commit("ws", put(b"a1", b"x"))
        .await
        .expect("commit");
    knowing()
        .commit("other", put(b"a1", b"y"))
        .await
        .expect("commit");
    let mut batch = Batch::default();
    batch.delete_range(spool::KeyRange::prefix(b"a"));
    knowing().commit("ws", batch).await.expect("delete range");
    assert_eq!(knowing().get("ws", b"a1").await.expect("get"), None);
    assert_eq!(
        knowing().get("other", b"a1").await.expect("get").as_deref(),
        Some(&b"y"[..]),
        "another workspace's key is untouched"
    );
    assert!(!known.borrow().is_empty());
    // More than it keeps: it starts over rather than grow.
    let big = vec![7; Known::MAX_BYTES + 1];
    knowing()
        .commit("ws", put(b"big", &big))
        .await
        .expect("commit");
    assert!(known.borrow().is_empty());
    let read = knowing().get("ws", b"big").await.expect("get");
    assert_eq!(read.map(|v| v.len()), Some(big.len()));
}

#[wasm_bindgen_test]
async fn test_schema_version_is_the_number_of_upgrade_steps() {
    assert_eq!(spool_web::SCHEMA_VERSION, 2);
    assert_eq!(spool_web::ARCHIVES, "archives");
    assert_eq!(spool_web::STORE, "kv");
}

#[wasm_bindgen_test]
async fn test_version_change_closes_the_connection_instead_of_blocking() {
    let name = common::db_name("idb", "version_change");
    let store = IdbStorage::open(&name).await.expect("open");
    let mut batch = Batch::default();
    batch.put(b"k".to_vec(), b"v".to_vec());
    store.commit("ws", batch).await.expect("commit");
    // Deleting needs every connection closed: the open one must step aside.
    IdbStorage::delete(&name)
        .await
        .expect("delete is not blocked");
    match store.get("ws", b"k").await {
        Err(StorageError::Backend(cause)) => assert!(cause.contains("closed"), "{cause}"),
        other => panic!("a closed connection answered {other:?}"),
    }
    let reopened = IdbStorage::open(&name).await.expect("reopen");
    assert_eq!(reopened.get("ws", b"k").await.expect("get"), None);
}

#[wasm_bindgen_test]
async fn test_closed_storage_fails_with_backend_error() {
    let store = IdbStorage::open(&common::db_name("idb", "closed"))
        .await
        .expect("open");
    store.close();
    store.close();
    assert!(matches!(
        store.commit("ws", Batch::default()).await,
        Err(StorageError::Backend(_))
    ));
}

/// IndexedDB for the key space, but an archive store that always fails.
struct FailingArchives(IdbStorage);

impl AsyncStorage for FailingArchives {
    async fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.0.get(workspace, key).await
    }

    async fn range(
        &self,
        workspace: &str,
        query: &spool::RangeQuery,
    ) -> Result<Vec<spool::Kv>, StorageError> {
        self.0.range(workspace, query).await
    }

    async fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        self.0.commit(workspace, batch).await
    }

    async fn write_archive(
        &self,
        _workspace: &str,
        _archive: &spool::ResetArchive,
    ) -> Result<(), String> {
        Err("archive store unavailable".into())
    }
}

#[wasm_bindgen_test]
async fn test_reset_archives_in_indexeddb_and_a_failed_archive_does_not_block() {
    let key = "agent:main:main";
    let store = IdbStorage::open(&common::db_name("idb", "reset_archive"))
        .await
        .expect("open");
    spool::run_async(&store, spool::create_session("ws", key, "s1", 1))
        .await
        .expect("create");
    let request = spool::AppendRequest::new(spool::Role::User, "hi");
    spool::run_async(&store, spool::append_entry("ws", key, request, 2))
        .await
        .expect("append");
    let reset =
        |sid: &str, now| spool::apply_intent("ws", key, spool::Intent::ResetSameKey, sid, now);
    let outcome = spool::run_async(&store, reset("s2", 3))
        .await
        .expect("reset");
    assert_eq!(
        outcome.archive,
        Some(spool::ArchiveStatus {
            written: true,
            error: None
        })
    );
    let archives = store.archives("ws", key).await.expect("archives");
    assert_eq!(archives.len(), 1);
    assert_eq!(archives[0].session_id, "s1");
    assert_eq!(archives[0].transcript_entries[0].content, "hi");

    let failing = FailingArchives(store);
    let outcome = spool::run_async(&failing, reset("s3", 4))
        .await
        .expect("the reset completes without its archive");
    assert_eq!(outcome.session.session_id, "s3");
    assert_eq!(outcome.session.epoch, 2);
    let status = outcome.archive.expect("an archive status");
    assert!(!status.written);
    assert_eq!(status.error.as_deref(), Some("archive store unavailable"));
    assert_eq!(
        failing.0.archives("ws", key).await.expect("archives").len(),
        1
    );
}

/// `absent` on a key the batch puts goes out as an `add`: a taken key is still that
/// precondition's conflict, by index, and nothing of the batch is written.
#[wasm_bindgen_test]
async fn test_absent_and_put_of_the_same_key_conflicts_by_index_and_writes_nothing() {
    let store = IdbStorage::open(&common::db_name("idb", "absent_put"))
        .await
        .expect("open");
    let mut seed = Batch::default();
    seed.put(b"taken".to_vec(), b"v0".to_vec());
    seed.put(b"record".to_vec(), b"r0".to_vec());
    store.commit("ws", seed).await.expect("seed");
    for through_attempt in [false, true] {
        let mut batch = Batch::default();
        batch.require_equals(b"record".to_vec(), b"r0".to_vec());
        batch.require_absent(b"free".to_vec());
        batch.require_absent(b"taken".to_vec());
        batch.put(b"record".to_vec(), b"r1".to_vec());
        batch.put(b"free".to_vec(), b"f".to_vec());
        batch.put(b"taken".to_vec(), b"v1".to_vec());
        let attempt = store.attempt();
        let result = if through_attempt {
            // The record read in the shared transaction is checked without a read.
            assert_eq!(
                attempt.get("ws", b"record").await.expect("get"),
                Some(b"r0".to_vec())
            );
            attempt.commit("ws", batch).await
        } else {
            store.commit("ws", batch).await
        };
        assert_eq!(
            result,
            Err(StorageError::Conflict(2)),
            "attempt: {through_attempt}"
        );
        assert_eq!(
            store.get("ws", b"record").await.expect("get"),
            Some(b"r0".to_vec())
        );
        assert_eq!(store.get("ws", b"free").await.expect("get"), None);
        assert_eq!(
            store.get("ws", b"taken").await.expect("get"),
            Some(b"v0".to_vec())
        );
    }
    // The same batch without the clash commits all of it.
    let mut batch = Batch::default();
    batch.require_equals(b"record".to_vec(), b"r0".to_vec());
    batch.require_absent(b"free".to_vec());
    batch.put(b"record".to_vec(), b"r1".to_vec());
    batch.put(b"free".to_vec(), b"f".to_vec());
    let attempt = store.attempt();
    assert_eq!(
        attempt.get("ws", b"record").await.expect("get"),
        Some(b"r0".to_vec())
    );
    attempt.commit("ws", batch).await.expect("commit");
    assert_eq!(
        store.get("ws", b"free").await.expect("get"),
        Some(b"f".to_vec())
    );
    // A stale value read in the shared transaction is decided without a request.
    let mut stale = Batch::default();
    stale.require_equals(b"record".to_vec(), b"r0".to_vec());
    stale.put(b"other".to_vec(), b"x".to_vec());
    let attempt = store.attempt();
    assert_eq!(
        attempt.get("ws", b"record").await.expect("get"),
        Some(b"r1".to_vec())
    );
    assert_eq!(
        attempt.commit("ws", stale).await,
        Err(StorageError::Conflict(0))
    );
    assert_eq!(store.get("ws", b"other").await.expect("get"), None);
}
