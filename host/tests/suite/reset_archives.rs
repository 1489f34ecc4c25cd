//! A reset archive is listed only for a reset that happened: a reset whose commit fails,
//! or whose process is killed between keeping the archive and committing, leaves a file
//! that `export --archive` never shows.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{cache_dir, ok, ok_json, temp_db};
use serde_json::Value;
use spool::{AppendRequest, Batch, Kv, RangeQuery, Role, Storage, StorageError};
use spool_host::{Spool, SqliteStorage};

const KEY: &str = "agent:main:main";

/// SQLite whose commits fail while `fail` is set, like a disk that filled up.
struct FailingCommits {
    inner: SqliteStorage,
    fail: Arc<AtomicBool>,
}

impl Storage for FailingCommits {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(workspace, key)
    }
    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.inner.range(workspace, query)
    }
    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StorageError::Backend("injected: disk full".into()));
        }
        self.inner.commit(workspace, batch)
    }
}

/// Every archive file under `dir` (any depth).
fn archive_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(archive_files(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    out
}

fn exported_archives(db: &Path) -> Vec<Value> {
    ok(db, &["export", KEY, "--archive"])
        .lines()
        .map(|line| serde_json::from_str(line).expect("an archive line"))
        .collect()
}

#[test]
fn test_a_reset_whose_commit_fails_lists_no_archive() {
    let (dir, db) = temp_db();
    let fail = Arc::new(AtomicBool::new(false));
    let mut clock = 1_000;
    let mut spool = Spool::builder()
        .storage(FailingCommits {
            inner: SqliteStorage::open(&db).expect("open"),
            fail: Arc::clone(&fail),
        })
        .archive_dir(dir.path().join("spool-archives"))
        .clock(move || {
            clock += 1;
            clock
        })
        .open()
        .expect("open");
    let created = spool.create_session(KEY).expect("create");
    spool
        .append_entry(KEY, AppendRequest::new(Role::User, "keep me"))
        .expect("append");

    fail.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        let err = spool.reset(KEY).expect_err("the commit fails");
        assert_eq!(err.code(), "storage", "{err}");
    }
    // The archives were kept before the commits that failed…
    assert_eq!(archive_files(&dir.path().join("spool-archives")).len(), 2);
    // …but no reset happened, so none is an archive of a reset.
    assert_eq!(exported_archives(&db), Vec::<Value>::new());
    let shown = ok_json(&db, &["show", KEY, "--json"]);
    assert_eq!(shown["session"]["session_id"], created.session_id.as_str());
    assert_eq!(shown["session"]["epoch"], 0);

    // A reset that commits lists exactly its own archive.
    fail.store(false, Ordering::SeqCst);
    let reset = spool.reset(KEY).expect("reset");
    assert!(reset.archive.expect("kept").written);
    let archives = exported_archives(&db);
    assert_eq!(archives.len(), 1, "{archives:?}");
    assert_eq!(archives[0]["session_id"], created.session_id.as_str());
    assert_eq!(archives[0]["transcript_entries"][0]["content"], "keep me");
    assert_eq!(spool.reset_archives(KEY).expect("archives").len(), 1);
}

#[test]
fn test_a_reset_killed_before_its_commit_lists_no_archive() {
    let (dir, db) = temp_db();
    let created = ok_json(&db, &["create", KEY, "--json"]);
    ok(
        &db,
        &["append", KEY, "--role", "user", "--content", "keep me"],
    );
    let archives = dir.path().join("spool-archives");

    // Hold the database's write lock: the reset reads, keeps its archive, then waits
    // for the lock in its commit — where it is killed.
    let lock = rusqlite::Connection::open(&db).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_spool"))
        .arg("--db")
        .arg(&db)
        .args(["reset", KEY, "--json"])
        .env("SPOOL_CACHE_DIR", cache_dir())
        .env_remove("SPOOL_WORKSPACE")
        .env_remove("SPOOL_ARCHIVE_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn spool reset");
    let deadline = Instant::now() + Duration::from_secs(60);
    while archive_files(&archives).is_empty() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the reset ended before it kept its archive"
        );
        assert!(Instant::now() < deadline, "no archive was kept");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    lock.execute_batch("ROLLBACK").expect("release the lock");
    drop(lock);

    assert_eq!(
        archive_files(&archives).len(),
        1,
        "the archive file is there"
    );
    let shown = ok_json(&db, &["show", KEY, "--json"]);
    assert_eq!(shown["session"]["session_id"], created["session_id"]);
    assert_eq!(shown["entries"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        exported_archives(&db),
        Vec::<Value>::new(),
        "a reset that never happened has no archive"
    );

    // The next reset happens; only its archive is listed.
    ok(&db, &["reset", KEY]);
    let listed = exported_archives(&db);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["session_id"], created["session_id"]);
}

#[test]
fn test_a_damaged_recorded_archive_is_corruption_naming_the_file() {
    let (dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    ok(&db, &["append", KEY, "--role", "user", "--content", "one"]);
    ok(&db, &["reset", KEY]);
    let files = archive_files(&dir.path().join("spool-archives"));
    assert_eq!(files.len(), 1);
    // Another archive's content in its place: one entry fewer than recorded.
    let mut archive: Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).expect("read")).expect("json");
    archive["transcript_entries"] = Value::Array(Vec::new());
    std::fs::write(&files[0], archive.to_string()).expect("write");
    let err = crate::common::fails(&db, &["export", KEY, "--archive"], "corruption");
    assert!(
        err.contains(files[0].file_name().and_then(|n| n.to_str()).expect("name")),
        "{err}"
    );
    std::fs::remove_file(&files[0]).expect("rm");
    crate::common::fails(&db, &["export", KEY, "--archive"], "corruption");
}

#[test]
fn test_a_reset_that_fails_after_its_archive_began_leaves_no_file_behind() {
    let (dir, db) = temp_db();
    let archives = dir.path().join("spool-archives");
    let mut spool = Spool::builder()
        .db_path(&db)
        .archive_dir(&archives)
        .open()
        .expect("open");
    let created = spool.create_session(KEY).expect("create");
    for text in ["one", "two", "three"] {
        spool
            .append_entry(KEY, AppendRequest::new(Role::User, text))
            .expect("append");
    }
    // One entry record vanishes: the reset reads its first page (the archive has
    // begun) and then finds the transcript damaged.
    let prefix = spool::keys::entries(&created.session_id);
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "DELETE FROM kv WHERE key = (SELECT key FROM kv WHERE key > ?1 ORDER BY key LIMIT 1)",
        rusqlite::params![prefix],
    )
    .expect("damage");
    drop(conn);
    let err = spool.reset(KEY).expect_err("damaged");
    assert_eq!(err.code(), "corruption", "{err}");
    // While this Spool is still open, nothing of the begun archive is left.
    assert_eq!(crate::common::files_under(&archives), Vec::<PathBuf>::new());
    assert_eq!(spool.count_entries(KEY).expect("count"), 3);
}
