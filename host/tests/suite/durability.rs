//! `Durability::Normal` (SQLite `synchronous=NORMAL`): a commit that returned survives
//! its process being killed. A writer process appends one entry per commit on such a
//! database, saying each one that returned, and is killed (`SIGKILL`) mid-stream; the
//! database, opened again, holds every entry it was told of, in order, with counters
//! that match, and no half-written append.
//!
//! The test re-runs its own binary (`--exact <the test>`) as the writer; the environment
//! variable `SPOOL_DURABILITY_DB` names the database it writes.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use spool::{AppendRequest, Role};
use spool_host::{Durability, Instance, Runtime, SqliteStorage};

const DB: &str = "SPOOL_DURABILITY_DB";
const WS: &str = "default";
const KEY: &str = "agent:durable:main";
/// Appends the writer is killed after (it would go on to [`MOST`]).
const KILL_AFTER: usize = 300;
const MOST: usize = 100_000;
/// What the writer prints, with the entry's number, when an append returned.
const ACK: &str = "appended m";

fn instance(storage: SqliteStorage) -> Instance {
    Runtime::shared()
        .expect("runtime")
        .instantiate(storage, spool::NoArchive)
        .expect("instance")
}

/// The writer: appends `m0`, `m1`, … one commit each, printing [`ACK`] and `n` after each
/// returns, until it is killed.
fn write(db: &str) {
    let storage = SqliteStorage::open_with(db, Durability::Normal).expect("open");
    assert_eq!(
        storage.durability().expect("durability"),
        Durability::Normal
    );
    let mut spool = instance(storage);
    let mut out = std::io::stdout().lock();
    for n in 0..MOST {
        let mut request = AppendRequest::new(Role::User, format!("entry {n} ").repeat(20));
        request.message_id = Some(format!("m{n}"));
        spool
            .call(
                WS,
                spool::ops::AppendEntry {
                    key: KEY.to_owned(),
                    request,
                    now_ms: 10 + n as u64,
                },
            )
            .expect("append");
        writeln!(out, "{ACK}{n}").expect("stdout");
        out.flush().expect("stdout");
    }
}

#[test]
fn test_appends_that_returned_under_normal_durability_survive_kill_9() {
    if let Ok(db) = std::env::var(DB) {
        return write(&db);
    }
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("normal.db");
    let mut setup = instance(SqliteStorage::open_with(&db, Durability::Normal).expect("open"));
    setup
        .call(
            WS,
            spool::ops::CreateSession {
                key: KEY.to_owned(),
                session_id: "s".to_owned(),
                now_ms: 1,
            },
        )
        .expect("create");
    drop(setup);

    let mut writer = crate::common::test_in_new_process(
        module_path!(),
        "test_appends_that_returned_under_normal_durability_survive_kill_9",
    )
    .env(DB, &db)
    .stdout(Stdio::piped())
    .spawn()
    .expect("start the writer");
    // An ack counts once its whole line arrived (the writer may be killed mid-line).
    let mut out = BufReader::new(writer.stdout.take().expect("stdout"));
    let mut acked = 0;
    let read_acks = |out: &mut BufReader<_>, until: usize, acked: &mut usize| {
        let mut line = String::new();
        while *acked < until {
            line.clear();
            if out.read_line(&mut line).expect("a line") == 0 || !line.ends_with('\n') {
                break;
            }
            // The harness's own words may share the first line.
            if let Some((_, n)) = line.trim_end().split_once(ACK) {
                assert_eq!(
                    n.parse::<usize>().expect("a number"),
                    *acked,
                    "acks in order"
                );
                *acked += 1;
            }
        }
    };
    read_acks(&mut out, KILL_AFTER, &mut acked);
    assert_eq!(acked, KILL_AFTER, "the writer stopped early");
    writer.kill().expect("SIGKILL");
    writer.wait().expect("the writer ends");
    // The writer does not wait for its acks to be read: those it wrote before the kill
    // are acknowledged appends too.
    read_acks(&mut out, usize::MAX, &mut acked);

    // Opened again (as a fresh process would, with the default durability): every
    // entry that was acknowledged, in order; at most the one in flight beyond them.
    let storage = SqliteStorage::open(&db).expect("reopen");
    assert_eq!(storage.durability().expect("durability"), Durability::Full);
    let mut spool = instance(storage);
    let entries = crate::common::transcript(&mut spool, WS, KEY);
    assert!(
        entries.len() == acked || entries.len() == acked + 1,
        "{} entries after {acked} acknowledged appends",
        entries.len()
    );
    for (n, entry) in entries.iter().enumerate() {
        assert_eq!(entry.message_id, format!("m{n}"), "entry {n} in order");
        assert_eq!(entry.id, n as u64 + 1);
    }
    let get = spool::ops::GetSession { key: KEY.into() };
    let session = spool.call(WS, get).expect("get").expect("the session");
    assert_eq!(session.entry_count, entries.len() as u64);
    assert_eq!(session.last_entry_id, entries.len() as u64);
    // The search index is whole too: the newest acknowledged entry is found.
    let found = spool
        .call(
            WS,
            spool::ops::Search {
                query: format!("\"entry {}\"", acked - 1),
                limit: 10,
                cursor: None,
            },
        )
        .expect("search");
    assert!(
        found
            .hits
            .iter()
            .any(|hit| hit.message_id == format!("m{}", acked - 1)),
        "the newest acknowledged entry is searchable"
    );
}
