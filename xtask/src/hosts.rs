//! The component in hosts that are not Spool's own: transpiled by jco and run in Node,
//! and loaded by wasmtime-py. Each runs every scenario vector, as the core's
//! `tests/hosts.rs` writes them for hosts without the core's serde, against a storage of
//! its own language, and prints the `test result: … N passed; M failed` line the tally
//! reads.

use std::path::{Path, PathBuf};

use crate::cmd::{Step, Tally, cargo, root};
use crate::setup::{self, Toolchain};

/// Where the exported component and jco's output go.
fn out_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
        .join("hosts")
}

/// Writes the component the host embeds to `target/hosts/spool.component.wasm`.
pub(crate) fn export_component(toolchain: &Toolchain) -> Result<PathBuf, String> {
    let dir = out_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let component = dir.join("spool.component.wasm");
    export_component_to(toolchain, &component)?;
    Ok(component)
}

/// Writes the component the host embeds to `out` (`spool component OUT`, through the
/// debug CLI).
pub(crate) fn export_component_to(toolchain: &Toolchain, out: &Path) -> Result<(), String> {
    cargo(
        toolchain,
        &[
            "run",
            "--quiet",
            "--package",
            "spool-host",
            "--bin",
            "spool",
            "--",
            "component",
        ],
    )
    .arg(out)
    .run("export the component")
}

/// Writes the vectors as the hosts read them to `target/hosts/vectors.json` (the core's
/// `tests/hosts.rs`, through `SPOOL_HOST_VECTORS`).
fn write_vectors(toolchain: &Toolchain) -> Result<PathBuf, String> {
    let path = out_dir().join("vectors.json");
    let _ = std::fs::remove_file(&path);
    let mut step = cargo(
        toolchain,
        &[
            "test",
            "--package",
            "spool",
            "--test",
            "suite",
            "hosts::test_host_vectors_every_call_is_a_command",
        ],
    );
    step.env("SPOOL_HOST_VECTORS", &path);
    step.run("write the scenario vectors as the hosts read them")?;
    if !path.exists() {
        return Err(format!(
            "the vectors were not written to {}",
            path.display()
        ));
    }
    Ok(path)
}

/// The vectors through jco's transpilation of the component, in Node.
fn node(component: &Path, vectors: &Path, tally: &mut Tally) -> Result<(), String> {
    let jco = setup::ensure_jco()?;
    let transpiled = out_dir().join("jco");
    let _ = std::fs::remove_dir_all(&transpiled);
    Step::new("node")
        .arg(&jco)
        .arg("transpile")
        .arg(component)
        .args(["--instantiation", "async", "--quiet", "-o"])
        .arg(&transpiled)
        .run("jco transpile the component")?;
    Step::new("node")
        .arg(root().join("tests/hosts/node/vectors.mjs"))
        .arg(&transpiled)
        .arg(vectors)
        .run_counting("the scenario vectors in Node (jco)", tally)
}

/// The vectors through wasmtime-py.
fn python(component: &Path, vectors: &Path, tally: &mut Tally) -> Result<(), String> {
    let python = setup::ensure_wasmtime_py()?;
    Step::new(&python.to_string_lossy())
        .arg(root().join("tests/hosts/python/vectors.py"))
        .arg(component)
        .arg(vectors)
        .run_counting("the scenario vectors in Python (wasmtime-py)", tally)
}

/// Exports the component, then runs the vectors in Node (jco) and in Python
/// (wasmtime-py), adding their counts to `tally`.
pub(crate) fn run(toolchain: &Toolchain, tally: &mut Tally) -> Result<(), String> {
    let component = export_component(toolchain)?;
    let vectors = write_vectors(toolchain)?;
    node(&component, &vectors, tally)?;
    python(&component, &vectors, tally)
}
