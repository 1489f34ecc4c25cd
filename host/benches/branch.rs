//! Branching (a fork of the whole history) through the wasmtime component on
//! `SqliteStorage`, for parents of 100, 10,000 and 100,000 entries: the median time of a
//! fork, the bytes it writes (keys and values of its one commit, counted by a storage
//! wrapper) and the time to read the newest page of 50 from the child. A fork shares the
//! parent's history instead of copying it, so time and bytes must stay flat as the
//! parent grows (goal: 100,000 / 100 time ratio ≤ 2). A one-entry append, interleaved
//! with the forks, shows what one durable commit costs on the disk at that moment.
//!
//! Each parent is built through the component with `commit_turn`, 1,000 entries per
//! commit, in a database of its own; only the forks and the page reads are timed.
//! `cargo bench -p spool-host --bench branch`; `SPOOL_BENCH_SIZES=100,10000` changes the
//! sizes, `SPOOL_BENCH_FORKS` the number of forks per size.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use spool::{
    AppendRequest, Batch, BranchRequest, Kv, Order, PageRequest, RangeQuery, Role, Storage,
    StorageError, TurnCommit,
};
use spool_host::{Instance, Runtime, SqliteStorage};

const WS: &str = "bench";
const PARENT: &str = "agent:bench:main";
const REF: &str = "agent:bench:reference";
const BATCH: usize = 1_000;

/// Forwards to SQLite and counts the bytes of every committed batch: keys and values
/// put, keys deleted, bounds of range deletes.
struct Counting {
    inner: SqliteStorage,
    bytes: Arc<AtomicUsize>,
}

impl Storage for Counting {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(ws, key)
    }
    fn range(&self, ws: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.inner.range(ws, query)
    }
    fn commit(&self, ws: &str, batch: Batch) -> Result<(), StorageError> {
        let written = batch.written_bytes();
        self.bytes.fetch_add(written, Ordering::Relaxed);
        self.inner.commit(ws, batch)
    }
}

fn entry(i: usize) -> AppendRequest {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let mut r = AppendRequest::new(
        role,
        format!(
            "step {i}: edit src/module_{}.rs and run the tests {}",
            i % 50,
            "x".repeat(300)
        ),
    );
    r.token_count = Some(100);
    r
}

/// A parent of `n` entries, built in batches of [`BATCH`].
fn build(spool: &mut Instance, n: usize) {
    spool
        .call(
            WS,
            spool::ops::CreateSession {
                key: PARENT.to_owned(),
                session_id: "parent".to_owned(),
                now_ms: 1,
            },
        )
        .expect("create");
    let mut i = 0;
    while i < n {
        let end = (i + BATCH).min(n);
        let turn = TurnCommit {
            entries: (i..end).map(entry).collect(),
            thread: None,
            expected_epoch: None,
        };
        spool
            .call(
                WS,
                spool::ops::CommitTurn {
                    key: PARENT.to_owned(),
                    turn,
                    now_ms: 2 + i as u64,
                },
            )
            .expect("commit a batch");
        i = end;
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
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
        Err(_) if benching => vec![100, 10_000, 100_000],
        Err(_) => vec![100, 1_000],
    };
    let forks: usize = std::env::var("SPOOL_BENCH_FORKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 200 } else { 10 });
    // On disk (the target directory), not a tmpfs: the commit's durability is part of
    // the cost.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    let runtime = Runtime::shared().expect("runtime");
    println!(
        "fork (whole history) through the component on SQLite, median of {forks} forks per parent:"
    );
    let mut times = Vec::new();
    for &n in &sizes {
        let path = dir.path().join(format!("fork-{n}.db"));
        let bytes = Arc::new(AtomicUsize::new(0));
        let storage = Counting {
            inner: SqliteStorage::open(&path).expect("open"),
            bytes: Arc::clone(&bytes),
        };
        let mut spool = runtime
            .instantiate(storage, spool::NoArchive)
            .expect("instantiate");
        let started = Instant::now();
        build(&mut spool, n);
        let built = started.elapsed();

        // A one-entry durable append, interleaved with the forks: the floor a commit
        // costs on this disk at this moment (SQLite WAL, synchronous=FULL).
        spool
            .call(
                WS,
                spool::ops::CreateSession {
                    key: REF.to_owned(),
                    session_id: "ref".to_owned(),
                    now_ms: 1,
                },
            )
            .expect("create");
        let mut appends = Vec::with_capacity(forks);
        let mut samples = Vec::with_capacity(forks);
        let mut written = Vec::with_capacity(forks);
        for f in 0..forks {
            let started = Instant::now();
            spool
                .call(
                    WS,
                    spool::ops::AppendEntry {
                        key: REF.to_owned(),
                        request: entry(f),
                        now_ms: 10 * n as u64 + 10,
                    },
                )
                .expect("append");
            appends.push(started.elapsed().as_secs_f64() * 1e6);
            let child = format!("agent:bench:fork-{f}");
            let before = bytes.load(Ordering::Relaxed);
            let started = Instant::now();
            let branch = spool
                .call(
                    WS,
                    spool::ops::Branch {
                        parent_key: PARENT.to_owned(),
                        child_key: child.clone(),
                        request: BranchRequest::fork(format!("child-{f}")),
                        now_ms: 10 * n as u64 + 10,
                    },
                )
                .expect("branch");
            samples.push(started.elapsed().as_secs_f64() * 1e6);
            written.push(bytes.load(Ordering::Relaxed) - before);
            assert_eq!(branch.session.entry_count, n as u64);
        }

        // The newest page of 50 from a child merges its own range and the shared one.
        let mut pages = Vec::new();
        for f in 0..forks.min(50) {
            let started = Instant::now();
            let page = spool
                .call(
                    WS,
                    spool::ops::ReadPage {
                        key: format!("agent:bench:fork-{f}"),
                        request: PageRequest {
                            order: Order::NewestFirst,
                            cursor: None,
                            limit: 50,
                        },
                    },
                )
                .expect("page");
            pages.push(started.elapsed().as_secs_f64() * 1e6);
            assert_eq!(page.entries.len(), 50.min(n));
            assert_eq!(page.entries[0].id, n as u64);
        }
        let us = median(&mut samples);
        written.sort_unstable();
        times.push((n, us));
        println!(
            "  N = {n:>7}: {us:8.1} µs per fork (one-entry append {:8.1} µs), {:>5} bytes \
             written per fork (max {}), newest page of 50 from a child {:7.1} µs (parent \
             built in {:.1} s)",
            median(&mut appends),
            written[written.len() / 2],
            written.last().copied().unwrap_or(0),
            median(&mut pages),
            built.as_secs_f64(),
        );
        drop(spool);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    if let (Some((small, first)), Some((large, last))) = (times.first(), times.last())
        && large > small
    {
        println!(
            "  ratio fork time N={large} / N={small}: {:.2} (goal <= 2)",
            last / first
        );
    }
}
