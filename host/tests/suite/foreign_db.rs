//! Spool changes no file that is not its own: another application's SQLite database, or
//! a file that is no database, is refused and left byte-identical; an empty or missing
//! file is Spool's to create; a Spool database Spool may not write is read, not written.

use std::path::{Path, PathBuf};

use crate::common::{ok, ok_json, spool, stderr, temp_db};
use spool_host::SqliteStorage;

const KEY: &str = "agent:main:main";
/// `PRAGMA application_id` of a Spool database: "SPOL".
const SPOOL_APPLICATION_ID: i32 = 0x5350_4f4c;

/// Every file in `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let path = e.expect("entry").path();
            let bytes = std::fs::read(&path).unwrap_or_default();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn test_another_applications_database_is_refused_and_left_byte_identical() {
    // With a schema version of its own, and with none (what Spool used to take over).
    for user_version in [7, 0] {
        refused_and_untouched(user_version);
    }
}

fn refused_and_untouched(user_version: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let other = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other).expect("open");
        conn.execute_batch(&format!(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
             INSERT INTO notes (body) VALUES ('not Spool''s');
             PRAGMA user_version = {user_version};"
        ))
        .expect("another application's schema");
    }
    let before = snapshot(dir.path());
    for args in [
        vec!["list"],
        vec!["list", "--json"],
        vec!["create", KEY],
        vec!["show", KEY],
    ] {
        let out = spool(&other, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error[storage]: "), "{args:?}: {err}");
        assert!(err.contains("not a Spool database"), "{args:?}: {err}");
        assert!(err.contains("notes"), "{args:?} says what it found: {err}");
    }
    assert_eq!(
        snapshot(dir.path()),
        before,
        "the file (and its directory) are untouched"
    );

    // The API refuses it the same way.
    let err = SqliteStorage::open(&other).expect_err("foreign");
    assert!(err.to_string().contains("not a Spool database"), "{err}");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn test_a_file_that_is_no_database_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().expect("temp dir");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "shopping list: milk, eggs\n".repeat(100)).expect("write");
    let before = snapshot(dir.path());
    let out = spool(&notes, &["list"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Spool leaves it as it is"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn test_an_empty_or_missing_file_becomes_a_spool_database() {
    let (dir, db) = temp_db();
    std::fs::write(&db, b"").expect("an empty file");
    ok(&db, &["create", KEY]);
    let missing = dir.path().join("sub").join("new.db");
    ok(&missing, &["create", KEY]);
    for path in [&db, &missing] {
        let conn = rusqlite::Connection::open(path).expect("open");
        let id: i32 = conn
            .pragma_query_value(None, "application_id", |row| row.get(0))
            .expect("application_id");
        assert_eq!(id, SPOOL_APPLICATION_ID, "{path:?}");
    }
    // An empty SQLite database (no schema) is as good as an empty file.
    let blank = dir.path().join("blank.db");
    rusqlite::Connection::open(&blank)
        .expect("open")
        .execute_batch("VACUUM")
        .expect("create an empty database");
    ok(&blank, &["create", KEY]);
}

#[test]
fn test_a_spool_database_from_before_the_application_id_opens_and_gets_it() {
    let (_dir, db) = temp_db();
    {
        // As an older Spool wrote it: schema version 1 (the `kv` table alone, keyed by
        // the workspace's name) and no application id.
        let conn = rusqlite::Connection::open(&db).expect("open");
        conn.execute_batch(
            "CREATE TABLE kv (
                workspace TEXT NOT NULL,
                key BLOB NOT NULL,
                value BLOB NOT NULL,
                PRIMARY KEY (workspace, key)
            ) WITHOUT ROWID;
            PRAGMA user_version = 1;",
        )
        .expect("an older Spool's schema");
    }
    ok(&db, &["create", KEY]);
    ok(
        &db,
        &["append", KEY, "--role", "user", "--content", "still mine"],
    );
    let conn = rusqlite::Connection::open(&db).expect("open");
    let id: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .expect("application_id");
    assert_eq!(id, SPOOL_APPLICATION_ID);
    let version: u32 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    assert_eq!(version, 1, "its schema is kept");
    assert!(ok(&db, &["show", KEY]).contains("still mine"));
}

/// Makes `path` unwritable for this process: permissions, and for root (whom
/// permissions do not stop) the immutable attribute. `false` when neither works here.
fn make_read_only(path: &Path, mode: u32) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    let writable = |p: &Path| {
        if p.is_dir() {
            let probe = p.join(".probe");
            let made = std::fs::write(&probe, b"").is_ok();
            let _ = std::fs::remove_file(&probe);
            made
        } else {
            std::fs::OpenOptions::new().append(true).open(p).is_ok()
        }
    };
    if !writable(path) {
        return true;
    }
    let _ = std::process::Command::new("chattr")
        .arg("+i")
        .arg(path)
        .status();
    !writable(path)
}

fn make_writable(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::process::Command::new("chattr")
        .arg("-i")
        .arg(path)
        .stderr(std::process::Stdio::null())
        .status();
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
}

#[test]
fn test_a_spool_database_in_a_read_only_location_is_read_not_written() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("ro");
    std::fs::create_dir(&dir).expect("mkdir");
    let db = dir.join("spool.db");
    ok(&db, &["create", KEY]);
    ok(
        &db,
        &["append", KEY, "--role", "user", "--content", "read me"],
    );
    assert!(!dir.join("spool.db-wal").exists(), "checkpointed on close");

    let locked = make_read_only(&db, 0o444) && make_read_only(&dir, 0o555);
    if !locked {
        make_writable(&db, 0o644);
        make_writable(&dir, 0o755);
        eprintln!("skipped: this process can write whatever the permissions");
        return;
    }
    let before = snapshot(&dir);
    let shown = spool(&db, &["show", KEY, "--json"]);
    let listed = spool(&db, &["list", "--json"]);
    let count = spool(&db, &["count", KEY]);
    let write = spool(&db, &["append", KEY, "--role", "user", "--content", "no"]);
    let after = snapshot(&dir);
    make_writable(&db, 0o644);
    make_writable(&dir, 0o755);

    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("json");
    assert_eq!(shown["entries"][0]["content"], "read me");
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert_eq!(String::from_utf8_lossy(&count.stdout), "1\n");
    assert_eq!(write.status.code(), Some(1));
    let err = stderr(&write);
    assert!(err.starts_with("error[storage]: "), "{err}");
    assert!(
        err.contains("read-only") && err.contains("not writable"),
        "{err}"
    );
    assert_eq!(after, before, "nothing in the read-only directory changed");
    assert_eq!(ok_json(&db, &["count", KEY, "--json"])["entry_count"], 1);
}
