//! Cold start. In the library: compiling the component and storing the compiled-component
//! cache, loading the compilation from that cache (both `Runtime::load`), and instantiating
//! the pre-compiled, pre-linked component on a storage (`Runtime::instantiate`, goal
//! <= 1 ms, the storage opened beforehand). In the CLI: the wall time of
//! `spool --db X append KEY --role user --content …`, from spawning the process to its
//! exit (so the first append's durable commit and the process's exit included), with the
//! compiled-component cache warm and cold (`SPOOL_CACHE_DIR` a fresh empty directory
//! each time, so the process compiles the component and writes the cache). The database
//! is on disk, in the target directory.
//!
//! `cargo bench -p spool-host --bench startup`. Every figure is also printed as a
//! `figure` line for `cargo xtask bench`'s table.

#[path = "support/figure.rs"]
mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use spool_host::{Runtime, SqliteStorage};
use support::figure;

const KEY: &str = "agent:bench:main";

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs the `spool` CLI on `db` with `cache` as its compiled-component cache; returns
/// the wall time from spawn to exit. Panics (naming the command's stderr) on failure.
fn spool(db: &Path, cache: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_spool"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("SPOOL_CACHE_DIR", cache)
        .output()
        .expect("run spool");
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "spool {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

fn append(db: &Path, cache: &Path, i: usize) -> Duration {
    let content = format!(
        "message {i}: the parser drops the last element of nested lists; moving the check after the push fixes it."
    );
    spool(
        db,
        cache,
        &["append", KEY, "--role", "user", "--content", &content],
    )
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with nothing, so
    // keep that run short.
    let benching = std::env::args().any(|a| a == "--bench");
    let (instances, warm_runs, cold_runs) = if benching { (200, 20, 5) } else { (5, 2, 1) };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");

    // The library: compile (and store the cache, in a fresh directory each time), load
    // from the cache, instantiate.
    let mut compiles: Vec<Duration> = (0..cold_runs)
        .map(|i| {
            let fresh = dir.path().join(format!("compile-{i}"));
            let started = Instant::now();
            let runtime = Runtime::load(Some(&fresh)).expect("compile");
            let elapsed = started.elapsed();
            assert_eq!(runtime.cache_status(), &spool_host::CacheStatus::Stored);
            elapsed
        })
        .collect();
    let cache = dir.path().join("compile-0");
    let mut loads: Vec<Duration> = (0..warm_runs)
        .map(|_| {
            let started = Instant::now();
            let runtime = Runtime::load(Some(&cache)).expect("load");
            let elapsed = started.elapsed();
            assert_eq!(runtime.cache_status(), &spool_host::CacheStatus::Hit);
            elapsed
        })
        .collect();
    let runtime = Runtime::load(Some(&cache)).expect("load");
    let mut instantiations: Vec<Duration> = (0..instances)
        .map(|_| {
            let storage = SqliteStorage::open_in_memory().expect("storage");
            let started = Instant::now();
            let instance = runtime
                .instantiate(storage, spool::NoArchive)
                .expect("instantiate");
            let elapsed = started.elapsed();
            drop(instance);
            elapsed
        })
        .collect();
    let (compile, load, instantiate) = (
        median(&mut compiles),
        median(&mut loads),
        median(&mut instantiations),
    );
    println!("cold start in the library (medians):");
    println!(
        "  compile the component, store the cache: {:8.2} ms",
        ms(compile)
    );
    println!(
        "  load its compilation from the cache   : {:8.2} ms",
        ms(load)
    );
    println!(
        "  instantiate (pre-compiled, pre-linked): {:8.3} ms (goal <= 1 ms)",
        ms(instantiate)
    );
    figure(
        "startup: compile component, store cache",
        ms(compile),
        "ms",
        "-",
    );
    figure(
        "startup: load compiled component (cache)",
        ms(load),
        "ms",
        "-",
    );
    figure(
        "startup: instantiate component",
        ms(instantiate),
        "ms",
        "<= 1",
    );
    // Its size against the budget is `cargo xtask bench size`'s figure.
    println!("the component: {} bytes", spool_host::COMPONENT.len());

    // The CLI: a session created first, then one append per process.
    let db = dir.path().join("cli.db");
    spool(&db, &cache, &["create", KEY]);
    let mut warm: Vec<Duration> = (0..warm_runs).map(|i| append(&db, &cache, i)).collect();
    let mut cold: Vec<Duration> = (0..cold_runs)
        .map(|i| {
            let fresh = dir.path().join(format!("cold-cache-{i}"));
            let elapsed = append(&db, &fresh, warm_runs + i);
            assert!(
                std::fs::read_dir(&fresh).is_ok_and(|mut d| d.next().is_some()),
                "the cold run wrote no cache in {}",
                fresh.display()
            );
            elapsed
        })
        .collect();
    let (warm, cold) = (median(&mut warm), median(&mut cold));
    println!(
        "CLI: process start to the first append's return and exit (medians of {warm_runs} warm, \
         {cold_runs} cold):"
    );
    println!("  compiled-component cache warm: {:8.1} ms", ms(warm));
    println!("  compiled-component cache cold: {:8.1} ms", ms(cold));
    figure("startup: CLI first append, cache warm", ms(warm), "ms", "-");
    figure("startup: CLI first append, cache cold", ms(cold), "ms", "-");
}
