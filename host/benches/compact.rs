//! Compaction cost: planning, obligation extraction, the built-in summary and the one
//! atomic commit (archive, summary, context state, session), through the wasmtime
//! component on `SqliteStorage`, for sessions of 1,000, 10,000 and 100,000 entries of
//! about 200 tokens each.
//!
//! Each session is built through the component (one durable append at a time) in a
//! workspace of its own; only the `compact` call is timed. The window is half the
//! session's tokens, so about three quarters of the entries move to the archive.
//!
//! Beside each, the same compaction of the same entries in the native core on its
//! in-memory storage (`native ms`): what the component path costs over the core's own
//! work, measured in the same run.
//!
//! `cargo bench -p spool-host --bench compact`; `SPOOL_BENCH_SIZES=1000,10000` changes
//! the sizes.

// A benchmark times the core from outside: the clock rule is for the core itself.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::time::{Duration, Instant};

use spool::compaction::{CompactRequest, CompactionConfig};
use spool::{AppendRequest, Role};
use spool_host::{DEFAULT_MEMORY_LIMIT, Error, Instance, Runtime, SqliteStorage};

const KEY: &str = "agent:bench:main";
const TOKENS: u64 = 200;

/// About 200 tokens of a coding-agent transcript, with the facts compaction looks for
/// (goals, files, commands, failures, decisions) recurring as they do in real sessions.
fn entry(i: usize) -> AppendRequest {
    let file = format!("src/module{}/file{}.rs", i % 13, i % 29);
    let (role, head) = match i % 10 {
        0 => (
            Role::User,
            format!("Goal: make step {} pass in {file}.", i / 10 % 50),
        ),
        1 => (
            Role::Assistant,
            format!(
                "Next I will run `cargo test -p m{}` and read {file}.",
                i % 7
            ),
        ),
        3 => (
            Role::Assistant,
            format!("Error: test t{} failed in {file}; Exit code 101.", i % 17),
        ),
        5 => (
            Role::Assistant,
            format!("Decision: keep the parser in {file}."),
        ),
        n if n % 2 == 0 => (Role::User, format!("Looked at {file} again.")),
        _ => (Role::Assistant, format!("Edited {file}.")),
    };
    let mut request = AppendRequest::new(
        role,
        format!(
            "{head} {}",
            "The change keeps the existing behaviour and adds a regression test. ".repeat(11)
        ),
    );
    request.token_count = Some(TOKENS);
    request
}

struct Run {
    entries: usize,
    build: Duration,
    compact: Duration,
    removed: u64,
    tokens: (u64, u64),
}

/// The compaction the benchmark times: the window is half the session's tokens.
fn request(n: usize) -> CompactRequest {
    CompactRequest {
        context_window_tokens: n as u64 * TOKENS / 2,
        config: CompactionConfig::default(),
        compaction_id: None,
        trigger_reason: Some("bench".into()),
        flush_receipt_status: None,
    }
}

/// The same session compacted in the native core on the in-memory storage: the time of
/// the `compact` call alone.
fn native(n: usize) -> Duration {
    let storage = spool::MemoryStorage::new();
    spool::run(&storage, spool::create_session("bench", KEY, "s", 1)).expect("create");
    for i in 0..n {
        spool::run(
            &storage,
            spool::append_entry("bench", KEY, entry(i), 2 + i as u64),
        )
        .expect("append");
    }
    let start = Instant::now();
    let result = spool::run(
        &storage,
        spool::compaction::compact("bench", KEY, request(n), 10 + n as u64),
    )
    .expect("native compact");
    let time = start.elapsed();
    assert_eq!(result.removed_count as usize + result.kept_entries.len(), n);
    time
}

fn run(spool: &mut Instance, n: usize) -> Result<Run, Error> {
    let workspace = format!("bench-{n}");
    spool
        .call(
            &workspace,
            spool::ops::CreateSession {
                key: KEY.to_owned(),
                session_id: format!("s{n}"),
                now_ms: 1,
            },
        )
        .expect("create");
    let start = Instant::now();
    for i in 0..n {
        spool
            .call(
                &workspace,
                spool::ops::AppendEntry {
                    key: KEY.to_owned(),
                    request: entry(i),
                    now_ms: 2 + i as u64,
                },
            )
            .expect("append");
    }
    let build = start.elapsed();
    let start = Instant::now();
    let result = spool.call(
        &workspace,
        spool::ops::Compact {
            key: KEY.to_owned(),
            request: request(n),
            now_ms: 10 + n as u64,
        },
    )?;
    let compact = start.elapsed();
    assert!(result.removed_count > 0, "{:?}", result.skip_reason);
    assert_eq!(result.removed_count as usize + result.kept_entries.len(), n);
    Ok(Run {
        entries: n,
        build,
        compact,
        removed: result.removed_count,
        tokens: (result.tokens_before, result.tokens_after),
    })
}

/// Builds and compacts a session of `n` entries in a fresh database, with the
/// instance's memory capped at `memory` bytes.
fn measure(runtime: &Runtime, dir: &Path, n: usize, memory: usize) -> Result<Run, Error> {
    let path = dir.join(format!("compact-{n}-{memory}.db"));
    let storage = SqliteStorage::open(&path).expect("open");
    let mut spool = runtime
        .instantiate_with_memory_limit(storage, spool::NoArchive, memory)
        .expect("instantiate");
    let result = run(&mut spool, n);
    drop(spool);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    result
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with nothing, so
    // keep that run short.
    let benching = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("SPOOL_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|s| s.trim().parse().expect("SPOOL_BENCH_SIZES: numbers"))
            .collect(),
        Err(_) if benching => vec![1_000, 10_000, 100_000],
        Err(_) => vec![200],
    };
    // On disk (the target directory), not a tmpfs: the commit's durability is part of
    // the cost.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    let runtime = Runtime::shared().expect("runtime");
    // The instance's memory cap (MiB); the default is the host's own default.
    let memory = std::env::var("SPOOL_BENCH_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(DEFAULT_MEMORY_LIMIT, |mb| mb * 1024 * 1024);
    println!(
        "compaction in the component on SQLite (WAL, synchronous=FULL), ~{TOKENS} tokens per entry,"
    );
    println!("window = half the session's tokens; only `compact` is timed:");
    println!(
        "{:>9}  {:>10}  {:>14}  {:>9}  {:>8}  {:>9}  {:>21}  {:>10}",
        "N",
        "compact ms",
        "ms / 1k entries",
        "native ms",
        "×native",
        "removed",
        "tokens before → after",
        "build s"
    );
    for n in sizes {
        let r = match measure(runtime, dir.path(), n, memory) {
            Ok(r) => r,
            Err(e @ Error::Wasm { .. }) => {
                // Report the failure, then measure the time with room to spare.
                let mib = memory / (1024 * 1024);
                println!(
                    "{n:>9}  FAILED within {mib} MiB of instance memory: {}",
                    e.message()
                );
                let bigger = 4 * memory;
                println!("{:>9}  (again with {} MiB)", "", bigger / (1024 * 1024));
                measure(runtime, dir.path(), n, bigger).expect("compact with more memory")
            }
            Err(e) => panic!("compact of {n} entries failed: {e}"),
        };
        let ms = r.compact.as_secs_f64() * 1e3;
        let native_ms = native(n).as_secs_f64() * 1e3;
        println!(
            "{:>9}  {:>10.1}  {:>14.2}  {:>9.1}  {:>8.2}  {:>9}  {:>21}  {:>10.1}",
            r.entries,
            ms,
            ms * 1000.0 / r.entries as f64,
            native_ms,
            ms / native_ms,
            r.removed,
            format!("{} → {}", r.tokens.0, r.tokens.1),
            r.build.as_secs_f64()
        );
    }
}
