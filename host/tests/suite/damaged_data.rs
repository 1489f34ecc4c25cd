//! Damaged stored data is `corruption` naming what is damaged, never a short or wrong
//! answer: values SQLite holds as another type than BLOB, a message-id index that leads
//! nowhere (or elsewhere), entries lost from a transcript, bytes overwritten in the file.

use std::path::Path;

use crate::common::{fails, ok, ok_json, spool, stderr, stdout, temp_db};
use rusqlite::params;
use spool::keys;

const KEY: &str = "agent:x:main";

/// Creates the session under [`KEY`] with `n` entries through the CLI; the name of its
/// keys (its data id).
fn session(db: &Path, n: usize) -> String {
    let created = ok_json(db, &["create", KEY, "--json"]);
    for i in 1..=n {
        ok(
            db,
            &[
                "append",
                KEY,
                "--role",
                "user",
                "--content",
                &format!("entry {i}"),
                "--message-id",
                &format!("m-{i}"),
            ],
        );
    }
    assert!(created["session_id"].is_string(), "{created}");
    let storage = spool_host::SqliteStorage::open(db).expect("open");
    spool::run(&storage, spool::session_data_id("default", KEY))
        .expect("read")
        .expect("the session")
}

fn sql(db: &Path, statement: &str, key: &[u8]) -> usize {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.execute(statement, params![key]).expect("damage")
}

#[test]
fn test_a_value_stored_as_text_is_corruption_naming_the_key() {
    let (_dir, db) = temp_db();
    session(&db, 2);
    let changed = sql(
        &db,
        "UPDATE kv SET value = CAST(value AS TEXT) WHERE key = ?1",
        &keys::session(KEY),
    );
    assert_eq!(changed, 1);
    for args in [
        vec!["show", KEY, "--json"],
        vec!["count", KEY],
        vec!["append", KEY, "--role", "user", "--content", "x"],
    ] {
        let err = fails(&db, &args, "corruption");
        assert!(err.contains(KEY), "{args:?} names the key: {err}");
        assert!(err.contains("TEXT"), "{args:?} says what is wrong: {err}");
    }
    // The recency index (what `list` reads) holds a copy: damage it too.
    let conn = rusqlite::Connection::open(&db).expect("open");
    let changed = conn
        .execute(
            "UPDATE kv SET value = 42 WHERE substr(key, 1, 1) = x'72'",
            [],
        )
        .expect("damage");
    assert_eq!(changed, 1);
    drop(conn);
    let err = fails(&db, &["list", "--json"], "corruption");
    assert!(err.contains(KEY), "{err}");
    assert!(err.contains("INTEGER"), "{err}");
}

#[test]
fn test_a_garbage_message_index_is_corruption_not_a_missing_entry() {
    let (_dir, db) = temp_db();
    let data_id = session(&db, 3);
    let index = keys::message(&data_id, "m-1");
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "UPDATE kv SET value = X'00ff00ff' WHERE key = ?1",
        params![index],
    )
    .expect("damage");
    let err = fails(&db, &["entry", KEY, "m-1", "--json"], "corruption");
    assert!(err.contains("m-1"), "names the index key: {err}");
    // An index that leads to another entry is as wrong.
    let other: Vec<u8> = conn
        .query_row(
            "SELECT value FROM kv WHERE key = ?1",
            params![keys::message(&data_id, "m-2")],
            |row| row.get(0),
        )
        .expect("m-2's position");
    conn.execute(
        "UPDATE kv SET value = ?2 WHERE key = ?1",
        params![keys::message(&data_id, "m-3"), other],
    )
    .expect("damage");
    drop(conn);
    let err = fails(&db, &["entry", KEY, "m-3", "--json"], "corruption");
    assert!(err.contains("m-2"), "{err}");
    // A message id nobody used is still simply absent.
    fails(&db, &["entry", KEY, "m-404"], "not_found");
    ok(&db, &["entry", KEY, "m-2", "--json"]);
}

#[test]
fn test_entries_lost_from_a_transcript_fail_every_whole_read_with_corruption() {
    let (dir, db) = temp_db();
    let data_id = session(&db, 5);
    // Two entry records vanish (a damaged page, a bad restore); the record still says 5.
    let prefix = keys::entries(&data_id);
    let conn = rusqlite::Connection::open(&db).expect("open");
    let doomed: Vec<Vec<u8>> = conn
        .prepare("SELECT key FROM kv WHERE key > ?1 ORDER BY key LIMIT 2")
        .expect("prepare")
        .query_map(params![prefix], |row| row.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("keys");
    for key in &doomed {
        assert!(key.starts_with(&prefix));
        conn.execute("DELETE FROM kv WHERE key = ?1", params![key])
            .expect("delete");
    }
    drop(conn);
    for args in [
        vec!["show", KEY, "--json"],
        vec!["canonical", KEY, "--json"],
        vec!["export", KEY],
    ] {
        let err = fails(&db, &args, "corruption");
        assert!(err.contains(KEY), "{args:?}: {err}");
        assert!(err.contains("counts 5"), "{args:?}: {err}");
    }
    // A reset would archive 3 entries and delete the record of 5: refused, nothing
    // written, no archive kept.
    fails(&db, &["reset", KEY], "corruption");
    let left = crate::common::files_under(&dir.path().join("spool-archives"));
    assert_eq!(
        left,
        Vec::<std::path::PathBuf>::new(),
        "no archive file is left"
    );
    assert_eq!(ok(&db, &["count", KEY]), "5\n");
}

/// A small deterministic generator (xorshift64*), for reproducible damage.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.max(1);
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

#[test]
fn test_bytes_overwritten_in_the_file_never_give_a_short_transcript() {
    let (dir, db) = temp_db();
    {
        let mut spool = spool_host::Spool::builder()
            .db_path(&db)
            .open()
            .expect("open");
        spool.create_session(KEY).expect("create");
        for i in 0..200 {
            spool
                .append_entry(
                    KEY,
                    spool::AppendRequest::new(
                        spool::Role::User,
                        format!("entry {i} {}", "x".repeat(60)),
                    ),
                )
                .expect("append");
        }
    }
    let pristine = std::fs::read(&db).expect("read the db");
    assert!(
        !dir.path().join("spool.db-wal").exists(),
        "closing checkpointed the database into its file"
    );
    let page = 4096;
    let pages = pristine.len() / page;
    let mut short = Vec::new();
    let mut refused = 0;
    for n in 1..pages {
        for (offset, seed) in [(0, n as u64), (1024, 7 * n as u64 + 3)] {
            let mut bytes = pristine.clone();
            let at = n * page + offset;
            bytes[at..at + 512].copy_from_slice(&noise(seed, 512));
            let damaged = dir.path().join(format!("damaged-{n}-{offset}.db"));
            std::fs::write(&damaged, &bytes).expect("write");
            let out = spool(&damaged, &["show", KEY, "--json"]);
            match out.status.code() {
                Some(0) => {
                    let shown: serde_json::Value =
                        serde_json::from_str(&stdout(&out)).expect("json");
                    let entries = shown["entries"].as_array().map_or(0, Vec::len);
                    if entries != 200 {
                        short.push((n, offset, entries));
                    }
                }
                _ => {
                    let err = stderr(&out);
                    assert!(
                        err.starts_with("error[corruption]: ")
                            || err.starts_with("error[not_found]: ")
                            || err.starts_with("error[storage]: "),
                        "page {n} + {offset}: {err}"
                    );
                    refused += 1;
                }
            }
        }
    }
    assert!(
        short.is_empty(),
        "short answers (page, offset, entries) out of {pages} pages: {short:?}"
    );
    assert!(refused > 0, "some damage was detected");
}
