//! Appends per second, each append its own durable commit: through the wasmtime
//! component on `SqliteStorage`, versus raw rusqlite doing the equivalent SQL with the
//! same pragmas (read the session row, insert the entry row, update the session row and
//! its recency row, one transaction per append).
//!
//! `cargo bench -p spool-host --bench append`; `SPOOL_BENCH_N` changes the count
//! (default 10000).

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use spool::{AppendRequest, Role};
use spool_host::{Instance, Runtime, SqliteStorage};

const WS: &str = "default";
const KEY: &str = "agent:bench:main";

fn content(i: usize) -> String {
    format!(
        "message {i}: the parser drops the last element of nested lists; moving the check after the push fixes it."
    )
}

fn request(i: usize) -> AppendRequest {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let mut request = AppendRequest::new(role, content(i));
    request.token_count = Some(20 + (i % 7) as u64);
    request
}

/// Appends through the wasmtime component on `SqliteStorage`.
struct ComponentSide {
    spool: Instance,
    done: usize,
}

impl ComponentSide {
    fn new(dir: &Path) -> Self {
        let storage = SqliteStorage::open(dir.join("component.db")).expect("open");
        let mut spool = Runtime::shared()
            .expect("runtime")
            .instantiate(storage, spool::NoArchive)
            .expect("instantiate");
        spool
            .call(
                WS,
                spool::ops::CreateSession {
                    key: KEY.to_owned(),
                    session_id: "bench".to_owned(),
                    now_ms: 1,
                },
            )
            .expect("create");
        ComponentSide { spool, done: 0 }
    }

    fn run(&mut self, count: usize) -> Duration {
        let start = Instant::now();
        for i in self.done..self.done + count {
            self.spool
                .call(
                    WS,
                    spool::ops::AppendEntry {
                        key: KEY.to_owned(),
                        request: request(i),
                        now_ms: 2 + i as u64,
                    },
                )
                .expect("append");
        }
        self.done += count;
        start.elapsed()
    }

    fn check(&mut self) {
        let session = self
            .spool
            .call(
                WS,
                spool::ops::GetSession {
                    key: KEY.to_owned(),
                },
            )
            .expect("get")
            .expect("exists");
        assert_eq!(session.entry_count, self.done as u64);
    }
}

const RAW_SCHEMA: &str = "
    CREATE TABLE session (
        workspace TEXT NOT NULL, key TEXT NOT NULL, session_id TEXT NOT NULL,
        status TEXT NOT NULL, epoch INTEGER NOT NULL, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL, entry_count INTEGER NOT NULL,
        last_entry_id INTEGER NOT NULL, total_tokens INTEGER NOT NULL,
        PRIMARY KEY (workspace, key)) WITHOUT ROWID;
    CREATE TABLE recency (
        workspace TEXT NOT NULL, updated_at INTEGER NOT NULL, key TEXT NOT NULL,
        PRIMARY KEY (workspace, updated_at, key)) WITHOUT ROWID;
    CREATE TABLE entry (
        workspace TEXT NOT NULL, session_id TEXT NOT NULL, created_at INTEGER NOT NULL,
        id INTEGER NOT NULL, message_id TEXT NOT NULL, role TEXT NOT NULL,
        content TEXT NOT NULL, token_count INTEGER, tool_calls TEXT, tool_call_id TEXT,
        turn_id TEXT,
        PRIMARY KEY (workspace, session_id, created_at, id)) WITHOUT ROWID;";

/// The same append in hand-written SQL on relational tables, same pragmas.
struct RawSide {
    conn: Connection,
    done: usize,
}

impl RawSide {
    fn new(dir: &Path) -> Self {
        let conn = Connection::open(dir.join("raw.db")).expect("open");
        conn.busy_timeout(Duration::from_millis(5000))
            .expect("busy_timeout");
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
            .expect("wal");
        conn.pragma_update(None, "synchronous", "FULL")
            .expect("synchronous");
        conn.execute_batch(RAW_SCHEMA).expect("schema");
        conn.execute(
            "INSERT INTO session VALUES (?1, ?2, 'bench', 'running', 0, 1, 1, 0, 0, 0)",
            params![WS, KEY],
        )
        .expect("create");
        conn.execute("INSERT INTO recency VALUES (?1, 1, ?2)", params![WS, KEY])
            .expect("recency");
        RawSide { conn, done: 0 }
    }

    fn run(&mut self, count: usize) -> Duration {
        let start = Instant::now();
        for i in self.done..self.done + count {
            self.append(i);
        }
        self.done += count;
        start.elapsed()
    }

    fn append(&mut self, i: usize) {
        let now = 2 + i as i64;
        let req = request(i);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        let (session_id, updated_at, last_id): (String, i64, i64) = tx
            .prepare_cached(
                "SELECT session_id, updated_at, last_entry_id FROM session \
                 WHERE workspace = ?1 AND key = ?2",
            )
            .expect("prepare")
            .query_row(params![WS, KEY], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .expect("read")
            .expect("session exists");
        let id = last_id + 1;
        tx.prepare_cached(
            "INSERT INTO entry (workspace, session_id, created_at, id, message_id, role, content, \
             token_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .expect("prepare")
        .execute(params![
            WS,
            session_id,
            now,
            id,
            format!("{session_id}-{id}"),
            req.role.as_str(),
            req.content,
            req.token_count.map(|t| t as i64)
        ])
        .expect("insert entry");
        tx.prepare_cached(
            "UPDATE session SET updated_at = ?3, entry_count = entry_count + 1, \
             last_entry_id = ?4, total_tokens = total_tokens + ?5 \
             WHERE workspace = ?1 AND key = ?2",
        )
        .expect("prepare")
        .execute(params![
            WS,
            KEY,
            now,
            id,
            req.token_count.unwrap_or(0) as i64
        ])
        .expect("update session");
        tx.prepare_cached(
            "DELETE FROM recency WHERE workspace = ?1 AND updated_at = ?2 AND key = ?3",
        )
        .expect("prepare")
        .execute(params![WS, updated_at, KEY])
        .expect("delete recency");
        tx.prepare_cached("INSERT INTO recency VALUES (?1, ?2, ?3)")
            .expect("prepare")
            .execute(params![WS, now, KEY])
            .expect("insert recency");
        tx.commit().expect("commit");
    }
}

fn rate(n: usize, elapsed: Duration) -> f64 {
    n as f64 / elapsed.as_secs_f64()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with nothing, so
    // keep that run short.
    let benching = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SPOOL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 10_000 } else { 100 });
    // On disk (the target directory), not a tmpfs: durability is part of the cost.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    // Load (and cache) the compiled component before timing anything.
    Runtime::shared().expect("runtime");

    // Fsync latency drifts a lot on shared machines: interleave the two in rounds
    // (alternating which goes first) so both see the same disk.
    let mut raw = RawSide::new(dir.path());
    let mut component = ComponentSide::new(dir.path());
    let rounds = 20.min(n.max(1));
    let (mut raw_time, mut component_time) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        let count = n / rounds + usize::from(round < n % rounds);
        if round.is_multiple_of(2) {
            raw_time += raw.run(count);
            component_time += component.run(count);
        } else {
            component_time += component.run(count);
            raw_time += raw.run(count);
        }
    }
    component.check();
    assert_eq!(raw.done, n);
    let (raw_rate, component_rate) = (rate(n, raw_time), rate(n, component_time));
    println!("{n} appends, each its own durable commit (WAL, synchronous=FULL):");
    println!(
        "  component + SQLite : {component_rate:>9.0} appends/s ({:.1} µs each)",
        component_time.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "  raw rusqlite       : {raw_rate:>9.0} appends/s ({:.1} µs each)",
        raw_time.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "  ratio component/raw: {:.2} (design goal ≥ 0.70)",
        component_rate / raw_rate
    );
}
