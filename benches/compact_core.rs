//! Compaction in the native core on the in-memory storage: the core's own time, without
//! a wasm boundary or a database. `cargo bench -p spool --bench compact_core`
//! (`cargo xtask bench` runs it with the component benchmarks).

// A benchmark times the core from outside: the clock rule is for the core itself.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use spool::compaction::{self, CompactRequest, CompactionConfig};
use spool::{AppendRequest, MemoryStorage, Role, run};

fn session(n: u64) -> (MemoryStorage, u64) {
    let storage = MemoryStorage::new();
    run(
        &storage,
        spool::create_session("bench", "agent:bench:main", "s", 1),
    )
    .expect("create");
    let mut tokens = 0;
    for i in 0..n {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        let mut r = AppendRequest::new(
            role,
            format!(
                "step {i}: edit src/module_{}.rs, then run `cargo test -p crate_{}` and check the output {}",
                i % 50,
                i % 7,
                "x".repeat(600)
            ),
        );
        r.token_count = Some(200);
        tokens += 200;
        run(
            &storage,
            spool::append_entry("bench", "agent:bench:main", r, 2 + i),
        )
        .expect("append");
    }
    (storage, tokens)
}

fn main() {
    println!("compaction in the native core (in-memory storage), window = half the session:");
    for n in [1_000u64, 10_000, 100_000] {
        let (storage, tokens) = session(n);
        let request = CompactRequest {
            context_window_tokens: tokens / 2,
            config: CompactionConfig::default(),
            compaction_id: None,
            trigger_reason: None,
            flush_receipt_status: None,
        };
        let started = Instant::now();
        let result = run(
            &storage,
            compaction::compact("bench", "agent:bench:main", request, 10 * n),
        )
        .expect("compact");
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        println!(
            "  N = {n:>7}: {ms:9.1} ms ({:6.2} ms per 1k entries), removed {}, tokens {} -> {}",
            ms / (n as f64 / 1000.0),
            result.removed_count,
            result.tokens_before,
            result.tokens_after
        );
    }
}
