//! Branching in the native core on the in-memory storage: the time and the bytes a fork
//! writes, for parents of 100, 10,000 and 100,000 entries. A fork shares the parent's
//! history instead of copying it, so both must stay flat as the parent grows.
//! `cargo bench -p spool --bench branch_core`.

// A benchmark times the core from outside: the clock rule is for the core itself.
#![allow(clippy::disallowed_methods)]

use std::cell::Cell;
use std::time::Instant;

use spool::{
    AppendRequest, Batch, BranchRequest, Kv, MemoryStorage, Order, PageRequest, RangeQuery, Role,
    Storage, StorageError, run,
};

/// Forwards to the in-memory storage and counts the bytes of every committed batch:
/// keys and values put, keys deleted, bounds of range deletes.
struct Counting {
    inner: MemoryStorage,
    bytes: Cell<usize>,
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
        self.bytes.set(self.bytes.get() + written);
        self.inner.commit(ws, batch)
    }
}

const WS: &str = "bench";
const PARENT: &str = "agent:bench:main";
const FORKS: usize = 200;

fn parent(n: u64) -> Counting {
    let storage = Counting {
        inner: MemoryStorage::new(),
        bytes: Cell::new(0),
    };
    run(&storage, spool::create_session(WS, PARENT, "s", 1)).expect("create");
    for i in 0..n {
        let role = if i % 2 == 0 {
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
        run(&storage, spool::append_entry(WS, PARENT, r, 2 + i)).expect("append");
    }
    storage
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    println!(
        "fork (whole history) in the native core, in-memory storage, median of {FORKS} forks:"
    );
    let mut times = Vec::new();
    for n in [100u64, 10_000, 100_000] {
        let storage = parent(n);
        let mut samples = Vec::with_capacity(FORKS);
        let mut bytes = Vec::with_capacity(FORKS);
        for f in 0..FORKS {
            let child = format!("agent:bench:fork-{f}");
            let before = storage.bytes.get();
            let started = Instant::now();
            let branch = run(
                &storage,
                spool::branch(
                    WS,
                    PARENT,
                    &child,
                    BranchRequest::fork(format!("c{f}")),
                    10 * n + 10,
                ),
            )
            .expect("branch");
            samples.push(started.elapsed().as_secs_f64() * 1e6);
            bytes.push(storage.bytes.get() - before);
            assert_eq!(branch.session.entry_count, n);
        }
        // Reading the newest page of a fork merges its own and the shared ranges.
        let started = Instant::now();
        let page = run(
            &storage,
            spool::read_page(
                WS,
                "agent:bench:fork-0",
                PageRequest {
                    order: Order::NewestFirst,
                    cursor: None,
                    limit: 50,
                },
            ),
        )
        .expect("page");
        let page_us = started.elapsed().as_secs_f64() * 1e6;
        assert_eq!(page.entries.len(), 50.min(n as usize));
        let us = median(samples);
        times.push(us);
        println!(
            "  N = {n:>7}: {us:8.1} µs per fork, {:>4} bytes written per fork (max {}), newest page of 50 from the fork {page_us:7.1} µs",
            bytes[bytes.len() / 2],
            bytes.iter().max().copied().unwrap_or(0),
        );
    }
    println!(
        "  ratio fork time N=100,000 / N=100: {:.2} (must be <= 2)",
        times[2] / times[0]
    );
}
