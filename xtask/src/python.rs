//! The Python package (`python/`) in CI and in the benchmarks: installed with pip from
//! the checkout, offline (`--no-index`: its in-tree build backend needs nothing from
//! PyPI), into the peers' virtualenv, which has the OpenAI Agents SDK, LangGraph and
//! pytest (see `bench::peers_python`).

use std::path::PathBuf;

use crate::bench::{Line, collect, peers_python, target_dir};
use crate::cmd::{Step, Tally, root};
use crate::setup::Toolchain;

/// Installs the package into the peers' virtualenv, built with cargo profile `profile`
/// (`dev` reuses the test build), and returns that virtualenv's Python.
fn install(toolchain: &Toolchain, profile: &str) -> Result<String, String> {
    let python = peers_python()?;
    let mut pip = Step::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        "--no-deps",
        "--force-reinstall",
    ])
    .arg(root().join("python"))
    .env("CARGO", &toolchain.cargo)
    .env("SPOOL_PYTHON_PROFILE", profile);
    toolchain.apply_env(&mut pip);
    pip.run(&format!(
        "python: pip install --no-index ./python (cargo profile {profile})"
    ))?;
    Ok(python)
}

/// The `spool` CLI of the debug build (the cross-host test runs it).
fn debug_cli() -> PathBuf {
    target_dir().join("debug").join("spool")
}

/// The package's tests: the API, the Agents SDK behaviours, the CLI and Python on one
/// database. Adds pytest's counts (printed in cargo test's shape by the tests'
/// conftest) to `tally`.
pub(crate) fn test(toolchain: &Toolchain, tally: &mut Tally) -> Result<(), String> {
    let python = install(toolchain, "dev")?;
    let cli = debug_cli();
    if !cli.is_file() {
        return Err(format!(
            "python tests: the CLI {} is missing (the native tests build it)",
            cli.display()
        ));
    }
    let mut pytest = Step::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root().join("python").join("tests"))
        .env("SPOOL_CLI", &cli);
    pytest.run_counting("python: pytest python/tests", tally)
}

/// `cargo xtask bench python`: appends/s through `SpoolSession` beside the Agents SDK's
/// `SQLiteSession` and LangGraph's `SqliteSaver`, on disk and on tmpfs.
pub(crate) fn bench(
    toolchain: &Toolchain,
    what: &str,
    lines: &mut Vec<Line>,
) -> Result<(), String> {
    let profile = std::env::var("SPOOL_PYTHON_PROFILE").unwrap_or_else(|_| "release".into());
    let python = install(toolchain, &profile)?;
    let disk = target_dir().join("peers-bench");
    std::fs::create_dir_all(&disk).map_err(|e| format!("{}: {e}", disk.display()))?;
    Step::new(&python)
        .arg(root().join("python/benches/session_append.py"))
        .arg("--disk-dir")
        .arg(&disk)
        .run_lines(&format!("bench: python, {what}"), collect(lines))?;
    // The component under wasmtime-py, the route without the package, beside it.
    let component = crate::hosts::export_component(toolchain)?;
    let wasmtime_py = crate::setup::ensure_wasmtime_py()?;
    let n: u32 = std::env::var("SPOOL_BENCH_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    Step::new(&wasmtime_py.to_string_lossy())
        .arg(root().join("tests/hosts/python/append_bench.py"))
        .arg(&component)
        // About 5 ms an append: a fifth of the package's appends is plenty.
        .arg((n / 5).max(100).to_string())
        .run_lines(
            "bench: python, the component under wasmtime-py",
            collect(lines),
        )
}
