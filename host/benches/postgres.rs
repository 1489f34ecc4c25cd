//! Spool on a PostgreSQL server, in one run on one server:
//!
//! 1. **Appends per second** through the component, one durable commit each, on
//!    PostgreSQL (straight, and through PgBouncer in transaction pooling mode) beside
//!    SQLite on disk; and a hand-written loop on the same server doing what an append
//!    minimally is: one transaction that inserts the entry's row and updates the
//!    session's counter (`BEGIN`, `INSERT`, `UPDATE`, `COMMIT` with statements prepared
//!    once). Goal: Spool on PostgreSQL >= 0.8 of the loop.
//!    With `SPOOL_TEST_POSTGRES_SYNC_STANDBY` (the URL of a second server, which waits
//!    for a synchronous standby at every commit), the same appends there, and their
//!    ratio to the server alone: what an acknowledged commit on two machines costs.
//! 2. **The newest page** (50 entries) of the appended session: the median of repeated
//!    reads, on PostgreSQL and on SQLite.
//! 3. **Serial commits per workspace: advisory lock or `SERIALIZABLE`.** Four threads,
//!    each with its own connection, append 250 entries each, once all to one session
//!    (every commit contends) and once each to its own session, with either isolation
//!    (see ARCHITECTURE.md, "PostgreSQL"). Every entry is checked to be there once.
//!
//! Needs a server: `cargo xtask bench postgres` starts one (and a PgBouncer) and sets
//! `SPOOL_TEST_POSTGRES` / `SPOOL_TEST_PGBOUNCER`. `SPOOL_BENCH_N` sets the appends of
//! parts 1 and 2 (default 2000; 50 as a smoke test, `cargo test --benches`, which
//! without a server says so and runs nothing).

#[path = "support/figure.rs"]
mod support;

use std::time::{Duration, Instant};

use spool::{AppendRequest, Order, PageRequest, Role};
use spool_host::{Instance, Isolation, PostgresStorage, Runtime, SqliteStorage};
use support::figure;

const WS: &str = "default";

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run this benchmark with `cargo xtask bench postgres`")
    })
}

fn with_database(url: &str, database: &str) -> String {
    let base = url.rsplit_once('/').expect("a database in the URL").0;
    format!("{base}/{database}")
}

/// A new empty database on the server of `admin` (a superuser's URL); its URL.
fn database_on(admin: &str, name: &str) -> String {
    let mut client = postgres::Client::connect(admin, postgres::NoTls).expect("connect");
    let name = format!("bench_{name}_{}", std::process::id());
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("create the database");
    with_database(admin, &name)
}

/// A new empty database; its URL straight to the server and through the pooler.
fn fresh_database(name: &str) -> (String, String) {
    let direct = database_on(&var("SPOOL_TEST_POSTGRES"), name);
    let database = direct.rsplit_once('/').expect("a database").1;
    let pooled = with_database(&var("SPOOL_TEST_PGBOUNCER"), database);
    (direct, pooled)
}

fn request(i: usize) -> AppendRequest {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let mut request = AppendRequest::new(
        role,
        format!(
            "message {i}: the parser drops the last element of nested lists; moving the check after the push fixes it."
        ),
    );
    request.token_count = Some(20 + (i % 7) as u64);
    request
}

fn instance(storage: impl spool::Storage + Send + 'static) -> Instance {
    Runtime::shared()
        .expect("runtime")
        .instantiate(storage, spool::NoArchive)
        .expect("instantiate")
}

fn create(spool: &mut Instance, key: &str) {
    spool
        .call(
            WS,
            spool::ops::CreateSession {
                key: key.to_owned(),
                session_id: format!("id-{}", key.replace(':', "-")),
                now_ms: 1,
            },
        )
        .expect("create");
}

fn append(spool: &mut Instance, key: &str, i: usize) {
    spool
        .call(
            WS,
            spool::ops::AppendEntry {
                key: key.to_owned(),
                request: request(i),
                now_ms: 2 + i as u64,
            },
        )
        .expect("append");
}

/// Appends `n` entries to a new session; returns appends per second.
fn appends_per_second(spool: &mut Instance, key: &str, n: usize) -> f64 {
    create(spool, key);
    // Warm-up, in a session of its own.
    let warm = format!("{key}:warm");
    create(spool, &warm);
    for i in 0..20 {
        append(spool, &warm, i);
    }
    let start = Instant::now();
    for i in 0..n {
        append(spool, key, i);
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// The median time of reading the newest page of 50 entries, over 200 reads.
fn newest_page(spool: &mut Instance, key: &str) -> Duration {
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            let page = spool
                .call(
                    WS,
                    spool::ops::ReadPage {
                        key: key.to_owned(),
                        request: PageRequest {
                            order: Order::NewestFirst,
                            cursor: None,
                            limit: 50,
                        },
                    },
                )
                .expect("read the newest page");
            assert_eq!(page.entries.len(), 50);
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// The hand-written loop: per append, one transaction inserting the entry and updating
/// the session's counter, statements prepared once.
fn hand_written(url: &str, n: usize) -> f64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .batch_execute(
            "CREATE TABLE sessions (id text PRIMARY KEY, entry_count bigint NOT NULL, \
                 total_tokens bigint NOT NULL);
             CREATE TABLE entries (session text NOT NULL, seq bigint NOT NULL, role text NOT NULL, \
                 content text NOT NULL, token_count bigint NOT NULL, created_at bigint NOT NULL, \
                 PRIMARY KEY (session, seq));
             INSERT INTO sessions VALUES ('s', 0, 0);",
        )
        .expect("schema");
    let insert = client
        .prepare(
            "INSERT INTO entries (session, seq, role, content, token_count, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .expect("prepare");
    let update = client
        .prepare(
            "UPDATE sessions SET entry_count = entry_count + 1, total_tokens = total_tokens + $2 \
             WHERE id = $1",
        )
        .expect("prepare");
    let start = Instant::now();
    for i in 0..n {
        let request = request(i);
        let tokens = request.token_count.unwrap_or(0) as i64;
        let role = if i.is_multiple_of(2) {
            "user"
        } else {
            "assistant"
        };
        let mut tx = client.transaction().expect("begin");
        tx.execute(
            &insert,
            &[
                &"s",
                &(i as i64),
                &role,
                &request.content,
                &tokens,
                &(i as i64),
            ],
        )
        .expect("insert");
        tx.execute(&update, &[&"s", &tokens]).expect("update");
        tx.commit().expect("commit");
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// Four threads append 250 entries each (to one session or to one each) with
/// `isolation`; returns appends per second and the appends that failed (a `conflict`:
/// the core gave up; a `storage` error: the server gave up), after checking every other
/// entry is there.
fn contended(url: &str, isolation: Isolation, one_session: bool) -> (f64, u64) {
    const THREADS: usize = 4;
    const EACH: usize = 250;
    let key = |t: usize| {
        if one_session {
            "agent:bench:shared".to_owned()
        } else {
            format!("agent:bench:t{t}")
        }
    };
    let mut setup = instance(PostgresStorage::connect(url).expect("connect"));
    for t in 0..if one_session { 1 } else { THREADS } {
        create(&mut setup, &key(t));
    }
    let barrier = std::sync::Barrier::new(THREADS);
    let failed = std::sync::atomic::AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (barrier, failed, key) = (&barrier, &failed, key(t));
            scope.spawn(move || {
                let storage = PostgresStorage::connect(url)
                    .expect("connect")
                    .with_isolation(isolation);
                let mut spool = instance(storage);
                barrier.wait();
                for i in 0..EACH {
                    let appended = spool.call(
                        WS,
                        spool::ops::AppendEntry {
                            key: key.clone(),
                            request: request(t * EACH + i),
                            now_ms: 2 + (t * EACH + i) as u64,
                        },
                    );
                    match appended {
                        Ok(_) => {}
                        Err(e) if matches!(e.code(), "conflict" | "storage") => {
                            if failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
                                println!("  first failure ({isolation:?}): {e}");
                            }
                        }
                        Err(e) => panic!("append ({isolation:?}): {e}"),
                    }
                }
            });
        }
    });
    let failed = failed.into_inner();
    let rate = (THREADS * EACH) as f64 / start.elapsed().as_secs_f64();
    let total: u64 = (0..if one_session { 1 } else { THREADS })
        .map(|t| {
            setup
                .call(WS, spool::ops::GetSession { key: key(t) })
                .expect("get")
                .expect("the session")
                .entry_count
        })
        .sum();
    assert_eq!(
        total + failed,
        (THREADS * EACH) as u64,
        "an append is missing"
    );
    (rate, failed)
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    if !benching && std::env::var_os("SPOOL_TEST_POSTGRES").is_none() {
        // `cargo test --benches` without a server: nothing to run against.
        println!("postgres: no server (SPOOL_TEST_POSTGRES unset): not run");
        return;
    }
    let n: usize = std::env::var("SPOOL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 2000 } else { 50 });
    let key = "agent:bench:main";

    println!("== appends, one durable commit each (N={n})");
    let (direct, _) = fresh_database("appends");
    let mut pg = instance(PostgresStorage::connect(&direct).expect("connect"));
    let pg_rate = appends_per_second(&mut pg, key, n);
    let (_, pooled) = fresh_database("appends_pooled");
    let mut bouncer = instance(PostgresStorage::connect(&pooled).expect("connect"));
    let bouncer_rate = appends_per_second(&mut bouncer, key, n);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let mut sqlite = instance(SqliteStorage::open(dir.path().join("spool.db")).expect("open"));
    let sqlite_rate = appends_per_second(&mut sqlite, key, n);
    let (loop_url, _) = fresh_database("hand_written");
    let loop_rate = hand_written(&loop_url, n);
    println!("  Spool on PostgreSQL          {pg_rate:>8.0} appends/s");
    println!("  Spool through PgBouncer      {bouncer_rate:>8.0} appends/s");
    println!("  Spool on SQLite (disk)       {sqlite_rate:>8.0} appends/s");
    println!("  hand-written postgres loop   {loop_rate:>8.0} appends/s");
    figure("postgres: appends", pg_rate, "appends/s", "-");
    figure(
        "postgres: appends via pgbouncer",
        bouncer_rate,
        "appends/s",
        "-",
    );
    figure(
        "postgres: sqlite appends (disk)",
        sqlite_rate,
        "appends/s",
        "-",
    );
    figure("postgres: hand-written loop", loop_rate, "appends/s", "-");
    figure(
        "postgres: spool/hand-written",
        pg_rate / loop_rate,
        "ratio",
        ">= 0.8",
    );
    figure(
        "postgres: postgres/sqlite appends",
        pg_rate / sqlite_rate,
        "ratio",
        "-",
    );

    // The same appends on a primary that waits for its synchronous standby at every
    // commit (a second server pair, when `cargo xtask bench` started one).
    if let Ok(admin) = std::env::var("SPOOL_TEST_POSTGRES_SYNC_STANDBY") {
        let url = database_on(&admin, "synchronous");
        let mut paired = instance(PostgresStorage::connect(&url).expect("connect"));
        let paired_rate = appends_per_second(&mut paired, key, n);
        println!("  Spool, synchronous standby   {paired_rate:>8.0} appends/s");
        figure(
            "postgres: appends, synchronous standby",
            paired_rate,
            "appends/s",
            "-",
        );
        figure(
            "postgres: synchronous standby/none",
            paired_rate / pg_rate,
            "ratio",
            "-",
        );
    }

    println!("== the newest page of 50 entries (median of 200 reads)");
    let pg_page = newest_page(&mut pg, key);
    let sqlite_page = newest_page(&mut sqlite, key);
    println!(
        "  PostgreSQL {:.3} ms, SQLite {:.3} ms",
        ms(pg_page),
        ms(sqlite_page)
    );
    figure("postgres: newest page", ms(pg_page), "ms", "-");
    figure("postgres: sqlite newest page", ms(sqlite_page), "ms", "-");

    println!("== 4 threads x 250 appends: advisory lock vs SERIALIZABLE");
    for (label, one_session) in [("one session", true), ("a session each", false)] {
        for (name, isolation) in [
            ("advisory lock", Isolation::AdvisoryLock),
            ("serializable", Isolation::Serializable),
        ] {
            let (url, _) = fresh_database(&format!(
                "contended_{}_{}",
                u8::from(one_session),
                u8::from(isolation == Isolation::Serializable)
            ));
            let (rate, failed) = contended(&url, isolation, one_session);
            println!("  {label:<15} {name:<14} {rate:>8.0} appends/s, {failed} failed");
            figure(
                &format!("postgres: 4 writers, {label}, {name}"),
                rate,
                "appends/s",
                "-",
            );
            figure(
                &format!("postgres: 4 writers, {label}, {name}: failed appends"),
                failed as f64,
                "appends",
                "-",
            );
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
