//! Updates per second of one entry in progress (`update_entry`), each update its own
//! durable commit (WAL, `synchronous=FULL`, on disk): an answer growing by 56 bytes an
//! update (to 55 KiB after 1,000), in a session that already holds 1,000 entries. Beside it,
//! in the same run, the **limit**: raw rusqlite rewriting one row with the same bytes,
//! one transaction per update, same pragmas. Printed: updates per second (goal >= 100),
//! the ratio to the limit, and the time of the first and the last hundred updates (the
//! entry is 1,000 times larger at the end: an update's cost must grow only with the bytes
//! it writes, not with the session).
//!
//! `cargo bench -p spool-host --bench stream`; `SPOOL_BENCH_N` changes the count of
//! updates (default 1000); run without `--bench` it makes 50.

// A benchmark times the core from outside: the clock rule is for the core itself.
#![allow(clippy::disallowed_methods)]

#[path = "support/figure.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use spool::{AppendRequest, EntryUpdate, Role};
use spool_host::{Durability, Instance, Runtime, SqliteStorage};
use support::figure;

const WS: &str = "default";
const KEY: &str = "agent:bench:main";
/// Entries the session holds before the answer begins.
const HISTORY: usize = 1_000;

/// The answer after update `i`: 56 bytes more each time.
fn answer(i: usize) -> String {
    (0..=i)
        .map(|k| format!("token run {k:05}: the parser keeps the last element now. "))
        .collect()
}

fn component(dir: &Path) -> (Instance, String) {
    let storage = SqliteStorage::open_with(dir.join("spool.db"), Durability::Full).expect("open");
    let mut spool = Runtime::shared()
        .expect("runtime")
        .instantiate(storage, spool::NoArchive)
        .expect("instantiate");
    let now = 1_000;
    spool
        .call(
            WS,
            spool::ops::CreateSession {
                key: KEY.into(),
                session_id: "s".into(),
                now_ms: now,
            },
        )
        .expect("create");
    let history = (0..HISTORY)
        .map(|i| AppendRequest::new(Role::User, format!("message {i}: fix the parser")))
        .collect::<Vec<_>>();
    for chunk in history.chunks(500) {
        spool
            .call(
                WS,
                spool::ops::AppendEntries {
                    key: KEY.into(),
                    requests: chunk.to_vec(),
                    now_ms: now,
                },
            )
            .expect("history");
    }
    let entry = spool
        .call(
            WS,
            spool::ops::BeginEntry {
                key: KEY.into(),
                request: AppendRequest::new(Role::Assistant, ""),
                now_ms: now,
            },
        )
        .expect("begin");
    (spool, entry.message_id)
}

fn raw(dir: &Path) -> Connection {
    let db = Connection::open(dir.join("raw.db")).expect("open raw");
    db.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;
         CREATE TABLE entries (id INTEGER PRIMARY KEY, content TEXT NOT NULL);",
    )
    .expect("schema");
    for i in 0..=HISTORY {
        db.execute(
            "INSERT INTO entries (id, content) VALUES (?1, ?2)",
            params![i as i64, format!("message {i}: fix the parser")],
        )
        .expect("insert");
    }
    db
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SPOOL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 1_000 } else { 50 });
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    let (mut spool, message_id) = component(dir.path());
    let mut db = raw(dir.path());
    let answers: Vec<String> = (0..n).map(answer).collect();
    let (mut spool_times, mut raw_times) = (Vec::with_capacity(n), Vec::with_capacity(n));
    // Interleaved, an update of each side in turn: the disk's mood is shared.
    for text in &answers {
        let started = Instant::now();
        spool
            .call(
                WS,
                spool::ops::UpdateEntry {
                    key: KEY.into(),
                    update: EntryUpdate {
                        message_id: message_id.clone(),
                        content: Some(text.clone()),
                        ..EntryUpdate::default()
                    },
                    now_ms: 2_000,
                },
            )
            .expect("update");
        spool_times.push(started.elapsed());
        let started = Instant::now();
        let tx = db.transaction().expect("begin");
        tx.execute(
            "UPDATE entries SET content = ?1 WHERE id = ?2",
            params![text, HISTORY as i64],
        )
        .expect("update raw");
        tx.commit().expect("commit raw");
        raw_times.push(started.elapsed());
    }
    let stored = spool
        .call(
            WS,
            spool::ops::GetEntry {
                key: KEY.into(),
                message_id: message_id.clone(),
            },
        )
        .expect("get")
        .expect("the entry");
    assert_eq!(
        stored.content,
        answers[n - 1],
        "the last update is what is stored"
    );
    let total = |t: &[Duration]| t.iter().sum::<Duration>();
    let per_s = |t: &[Duration]| t.len() as f64 / total(t).as_secs_f64();
    let ms = |t: &[Duration]| total(t).as_secs_f64() * 1e3 / t.len() as f64;
    let k = 100.min(n / 2).max(1);
    println!(
        "{n} updates of one entry in progress, each a durable commit (WAL, synchronous=FULL, on disk), \
         the answer growing to {} bytes, in a session of {HISTORY} entries:",
        answers[n - 1].len()
    );
    println!(
        "  component: {:.0} updates/s; raw SQLite (one row rewritten): {:.0} updates/s; component/raw {:.2}",
        per_s(&spool_times),
        per_s(&raw_times),
        per_s(&spool_times) / per_s(&raw_times)
    );
    println!(
        "  first {k}: {:.2} ms an update ({:.2} raw); last {k}: {:.2} ms ({:.2} raw), at {} bytes",
        ms(&spool_times[..k]),
        ms(&raw_times[..k]),
        ms(&spool_times[n - k..]),
        ms(&raw_times[n - k..]),
        answers[n - 1].len()
    );
    figure(
        "stream updates/s",
        per_s(&spool_times),
        "updates/s",
        ">= 100",
    );
    figure(
        "stream component/raw",
        per_s(&spool_times) / per_s(&raw_times),
        "ratio",
        "-",
    );
}
