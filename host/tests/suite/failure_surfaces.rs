//! Failures surface as typed errors with their reason codes: corrupt records, failing
//! storage, a guest over its memory or execution limit, a database from a newer build.

use spool::{AppendRequest, Batch, Kv, RangeQuery, Role, Storage, StorageError};
use spool_host::{Error, ResourceLimits, Runtime, SqliteStorage};

const WS: &str = "default";

#[test]
fn test_corrupt_session_record_is_corruption_naming_the_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("spool.db");
    let writer = SqliteStorage::open(&path).expect("open");
    let mut batch = Batch::default();
    batch.put(
        spool::keys::session("agent:x:main"),
        b"\x01{this is not json".to_vec(),
    );
    writer.commit(WS, batch).expect("write garbage");

    let storage = SqliteStorage::open(&path).expect("reopen");
    let mut instance = Runtime::shared()
        .expect("runtime")
        .instantiate(storage, spool::NoArchive)
        .expect("instance");
    let err = instance
        .call(
            WS,
            spool::ops::GetSession {
                key: "agent:x:main".to_owned(),
            },
        )
        .expect_err("garbage must not decode");
    assert_eq!(err.code(), "corruption", "{err}");
    assert!(
        err.to_string().contains("agent:x:main"),
        "the message names the key: {err}"
    );
    // The instance is still usable: corruption is a value, not a trap.
    assert_eq!(
        instance
            .call(
                WS,
                spool::ops::GetSession {
                    key: "agent:y:main".to_owned()
                }
            )
            .expect("get"),
        None
    );
    let err = instance
        .call(
            WS,
            spool::ops::AppendEntry {
                key: "agent:x:main".to_owned(),
                request: AppendRequest::new(Role::User, "hi"),
                now_ms: 1,
            },
        )
        .expect_err("append to a corrupt session");
    assert_eq!(err.code(), "corruption");
}

/// A storage whose every call fails, like a disk that went away.
struct Broken;

impl Storage for Broken {
    fn get(&self, _: &str, _: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Err(StorageError::Backend("disk I/O error".into()))
    }
    fn range(&self, _: &str, _: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        Err(StorageError::Backend("disk I/O error".into()))
    }
    fn commit(&self, _: &str, _: Batch) -> Result<(), StorageError> {
        Err(StorageError::Backend("disk I/O error".into()))
    }
}

#[test]
fn test_backend_failure_is_storage_error_with_its_cause() {
    let mut instance = Runtime::shared()
        .expect("runtime")
        .instantiate(Broken, spool::NoArchive)
        .expect("instance");
    let err = instance.call(WS, create_main()).expect_err("broken disk");
    assert_eq!(err.code(), "storage");
    assert!(err.to_string().contains("disk I/O error"), "{err}");
    let err = instance
        .call(
            WS,
            spool::ops::ListSessions {
                limit: 10,
                cursor: None,
                agent_id: None,
                status: None,
            },
        )
        .expect_err("broken disk");
    assert_eq!(err.code(), "storage");
}

#[test]
fn test_guest_over_memory_limit_fails_with_error_and_recovers() {
    let storage = SqliteStorage::open_in_memory().expect("open");
    let mut instance = Runtime::shared()
        .expect("runtime")
        .instantiate_with_memory_limit(storage, spool::NoArchive, 8 * 1024 * 1024)
        .expect("instance under an 8 MiB cap");
    instance.call(WS, create_main()).expect("create");
    // A 4 MiB entry is valid, but copying and encoding it needs more than 8 MiB.
    let big = AppendRequest::new(Role::Tool, "x".repeat(4 * 1024 * 1024));
    let err = instance
        .call(
            WS,
            spool::ops::AppendEntry {
                key: "agent:a:main".to_owned(),
                request: big,
                now_ms: 2,
            },
        )
        .expect_err("over the cap");
    match &err {
        Error::ResourceLimit { limit, message } => {
            assert_eq!(*limit, "memory");
            assert!(
                message.contains("append-entry") && message.contains("8388608"),
                "the call and the limit are named: {message}"
            );
        }
        other => panic!("expected a resource limit error, got {other:?}"),
    }
    assert_eq!(err.code(), "resource_limit");
    let text = err.to_string();
    assert!(!text.contains('\n'), "one line: {text}");
    // The next call runs on a fresh instance over the same storage; nothing was written.
    let session = instance
        .call(
            WS,
            spool::ops::GetSession {
                key: "agent:a:main".to_owned(),
            },
        )
        .expect("get")
        .expect("exists");
    assert_eq!(session.entry_count, 0);
    let entry = instance
        .call(
            WS,
            spool::ops::AppendEntry {
                key: "agent:a:main".to_owned(),
                request: AppendRequest::new(Role::User, "small"),
                now_ms: 3,
            },
        )
        .expect("a small append still works");
    assert_eq!(entry.id, 1);
}

#[test]
fn test_peak_guest_memory_counts_every_growth_and_outlives_a_trap() {
    const LIMIT: usize = 8 * 1024 * 1024;
    let storage = SqliteStorage::open_in_memory().expect("open");
    let mut instance = Runtime::shared()
        .expect("runtime")
        .instantiate_with_memory_limit(storage, spool::NoArchive, LIMIT)
        .expect("instance under an 8 MiB cap");
    // The initial memory counts: a fresh instance already holds its stack and data.
    let fresh = instance.peak_memory_bytes();
    assert!((64 * 1024..LIMIT).contains(&fresh), "fresh: {fresh}");
    instance.call(WS, create_main()).expect("create");
    let append = |content: String, now_ms| spool::ops::AppendEntry {
        key: "agent:a:main".to_owned(),
        request: AppendRequest::new(Role::Tool, content),
        now_ms,
    };
    // A 1 MiB entry crosses into the guest and is encoded there: at least that much more.
    instance
        .call(WS, append("x".repeat(1024 * 1024), 2))
        .expect("a 1 MiB append fits");
    let grown = instance.peak_memory_bytes();
    assert!(grown >= fresh + 1024 * 1024, "{fresh} → {grown}");
    // A refused growth is not counted, and the peak of the retired store stays.
    let err = instance
        .call(WS, append("x".repeat(4 * 1024 * 1024), 3))
        .expect_err("over the cap");
    assert_eq!(err.code(), "resource_limit");
    let at_trap = instance.peak_memory_bytes();
    assert!(grown <= at_trap && at_trap <= LIMIT, "{grown} → {at_trap}");
    instance
        .call(WS, append("small".into(), 4))
        .expect("the next call runs on a fresh store");
    assert!(instance.peak_memory_bytes() >= at_trap);
}

#[test]
fn test_guest_over_execution_limit_fails_with_resource_limit_and_recovers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = SqliteStorage::open(dir.path().join("spool.db")).expect("open");
    let limits = ResourceLimits {
        fuel_per_call: 10_000_000,
        ..ResourceLimits::default()
    };
    let mut instance = Runtime::shared()
        .expect("runtime")
        .instantiate_with_limits(storage, spool::NoArchive, limits)
        .expect("instance with a small execution limit");
    instance.call(WS, create_main()).expect("a small call fits");
    // Parsing 20,000 log lines (about 4 MB) takes far more than 10 million fuel.
    let line = concat!(
        r#"{"type":"user","uuid":"u1","sessionId":"s-1","cwd":"/src/app","#,
        r#""timestamp":"2025-10-17T09:00:00Z","message":{"role":"user","content":"#,
        r#""the parser drops the last element of nested lists; please fix it"}}"#,
        "\n"
    );
    let log = line.repeat(20_000);
    let err = instance
        .parse_import(spool::import::ImportFormat::ClaudeCode, &log)
        .expect_err("over the execution limit");
    assert_eq!(err.code(), "resource_limit", "{err}");
    assert!(
        matches!(err, Error::ResourceLimit { limit: "fuel", .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("parse-import"), "{err}");
    // Each call starts with a full tank, on a fresh instance over the same storage.
    let entry = instance
        .call(
            WS,
            spool::ops::AppendEntry {
                key: "agent:a:main".to_owned(),
                request: AppendRequest::new(Role::User, "hi"),
                now_ms: 2,
            },
        )
        .expect("the next call works");
    assert_eq!(entry.id, 1);
}

/// A call's fuel grows with the bytes its reads return: a compaction too big for the
/// fuel a call starts with runs with what its reads add, and not past the cap.
#[test]
fn test_a_call_gains_fuel_with_the_bytes_it_reads_up_to_its_cap() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("spool.db");
    let key = "agent:big:main";
    {
        let mut builder = Runtime::shared()
            .expect("runtime")
            .instantiate(SqliteStorage::open(&db).expect("open"), spool::NoArchive)
            .expect("instance");
        builder
            .call(
                WS,
                spool::ops::CreateSession {
                    key: key.to_owned(),
                    session_id: "big-1".to_owned(),
                    now_ms: 1,
                },
            )
            .expect("create");
        // 2,000 entries of about 2 KiB of varied words: 4 MiB to compact.
        for batch in 0..20u64 {
            let requests = (0..100u64)
                .map(|i| {
                    let n = batch * 100 + i;
                    let words: Vec<String> = (0..256)
                        .map(|w| format!("w{}", (n * 7919 + w) % 10_007))
                        .collect();
                    AppendRequest::new(Role::User, words.join(" "))
                })
                .collect();
            builder
                .call(
                    WS,
                    spool::ops::AppendEntries {
                        key: key.to_owned(),
                        requests,
                        now_ms: 10 + batch,
                    },
                )
                .expect("append");
        }
    }
    let compact = |limits: ResourceLimits| {
        let storage = SqliteStorage::open(&db).expect("open");
        let mut instance = Runtime::shared()
            .expect("runtime")
            .instantiate_with_limits(storage, spool::NoArchive, limits)
            .expect("instance");
        instance.call(
            WS,
            spool::ops::Compact {
                key: key.to_owned(),
                request: spool::compaction::CompactRequest::new(4_000),
                now_ms: 100,
            },
        )
    };
    let start = 300_000_000;
    let alone = ResourceLimits {
        fuel_per_call: start,
        fuel_per_byte_read: 0,
        ..ResourceLimits::default()
    };
    let err = compact(alone).expect_err("the start alone is too little");
    assert!(
        matches!(err, Error::ResourceLimit { limit: "fuel", .. }),
        "{err:?}"
    );
    let capped = ResourceLimits {
        fuel_per_call: start,
        max_fuel_per_call: start,
        ..ResourceLimits::default()
    };
    let err = compact(capped).expect_err("the cap holds it to the start");
    assert!(
        matches!(err, Error::ResourceLimit { limit: "fuel", .. }),
        "{err:?}"
    );
    let growing = ResourceLimits {
        fuel_per_call: start,
        ..ResourceLimits::default()
    };
    let result = compact(growing).expect("the reads' fuel carries it through");
    assert!(result.removed_count > 1_000, "{result:?}");
}

#[test]
fn test_database_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("future.db");
    drop(SqliteStorage::open(&path).expect("create"));
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    conn.pragma_update(None, "user_version", SqliteStorage::schema_version() + 1)
        .expect("bump the version");
    drop(conn);
    let err = SqliteStorage::open(&path).expect_err("newer schema");
    assert_eq!(err.code(), "storage");
    let text = err.to_string();
    assert!(
        text.contains("schema version") && text.contains("newer Spool"),
        "{text}"
    );
}

#[test]
fn test_reopening_keeps_the_schema_version_and_data() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested/dirs/spool.db");
    let storage = SqliteStorage::open(&path).expect("creates parent directories");
    let mut batch = Batch::default();
    batch.put(b"k".to_vec(), b"v".to_vec());
    storage.commit(WS, batch).expect("commit");
    drop(storage);
    let storage = SqliteStorage::open(&path).expect("reopen");
    assert_eq!(storage.get(WS, b"k").expect("get"), Some(b"v".to_vec()));
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    let version: u32 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    assert_eq!(version, SqliteStorage::schema_version());
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
}

/// Creates the session `agent:a:main` (id `s1`, at 1).
fn create_main() -> spool::ops::CreateSession {
    spool::ops::CreateSession {
        key: "agent:a:main".to_owned(),
        session_id: "s1".to_owned(),
        now_ms: 1,
    }
}
