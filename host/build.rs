//! Builds the Spool component that the host embeds.
//!
//! The core (`spool`, feature `component`) is compiled for wasm32-unknown-unknown with
//! the `guest` profile in its own target directory (a nested cargo must not share the
//! outer build's lock), then packaged as a component with `wit-component`. The result is
//! embedded with `include_bytes!`, so the `spool` binary is self-contained.
//!
//! The module is run through binaryen's `wasm-opt -Oz` before it is packaged (13%
//! smaller): `SPOOL_WASM_OPT` names the `wasm-opt` to use (`cargo xtask` sets it to the
//! one its set-up found or installed), `0` skips the step; unset, a `wasm-opt` on PATH
//! is used when there is one, else the module is packaged as rustc wrote it (said in a
//! build warning).
//!
//! `SPOOL_GUEST_CARGO` names the cargo used for the guest (default: the cargo running
//! this build); `SPOOL_GUEST_RUSTFLAGS`/`SPOOL_GUEST_ENV` are not needed on the rustup
//! route. The Debian fallback route sets `SPOOL_GUEST_CARGO` to its wrapper.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "wasm_features.rs"]
mod wasm_features;
use wasm_features::WASM_FEATURES;

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace root")
        .to_path_buf();
    println!("cargo:rerun-if-changed=wasm_features.rs");
    for watched in ["src", "wit", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=SPOOL_GUEST_CARGO");
    println!("cargo:rerun-if-env-changed=SPOOL_WASM_OPT");

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let guest_target = guest_target_dir(&root);
    let module = optimize(&build_module(&root, &guest_target), &out_dir);
    let bytes = std::fs::read(&module)
        .unwrap_or_else(|e| panic!("cannot read the core module {}: {e}", module.display()));
    let component = wit_component::ComponentEncoder::default()
        .module(&bytes)
        .and_then(|encoder| encoder.validate(true).encode())
        .unwrap_or_else(|e| panic!("packaging the core module as a component failed: {e:#}"));
    let component = without_names(&component)
        .unwrap_or_else(|| panic!("wit-component wrote a component that does not parse"));
    let path = out_dir.join("spool.component.wasm");
    std::fs::write(&path, component).expect("write the component");
    println!("cargo:rustc-env=SPOOL_COMPONENT_PATH={}", path.display());
}

/// `component` without its top-level `component-name` section: the names of its
/// instances, types and functions, read by nothing that runs it (8 KB, like the core
/// module's symbol names, stripped too). `None` when the sections do not parse.
fn without_names(component: &[u8]) -> Option<Vec<u8>> {
    fn leb(bytes: &[u8], at: &mut usize) -> Option<usize> {
        let mut value = 0usize;
        for shift in (0..35).step_by(7) {
            let byte = *bytes.get(*at)?;
            *at += 1;
            value |= usize::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    let mut out = component.get(..8)?.to_vec();
    let mut at = 8;
    while at < component.len() {
        let start = at;
        let id = component[at];
        at += 1;
        let size = leb(component, &mut at)?;
        let body = component.get(at..at.checked_add(size)?)?;
        at += size;
        let mut name_at = 0;
        let name = (id == 0)
            .then(|| {
                let len = leb(body, &mut name_at)?;
                body.get(name_at..name_at + len)
            })
            .flatten();
        if name != Some(b"component-name".as_slice()) {
            out.extend_from_slice(&component[start..at]);
        }
    }
    Some(out)
}

/// `<target>/guest`: beside the outer build's own directories, never inside a profile's.
fn guest_target_dir(root: &Path) -> PathBuf {
    let target = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join("guest")
}

/// `module` after `wasm-opt -Oz` (written into `out_dir`), or `module` itself when no
/// `wasm-opt` is to be used.
fn optimize(module: &Path, out_dir: &Path) -> PathBuf {
    let chosen = env::var_os("SPOOL_WASM_OPT");
    let program = match &chosen {
        Some(value) if value == "0" => return module.to_path_buf(),
        Some(value) => PathBuf::from(value),
        None => PathBuf::from("wasm-opt"),
    };
    let runs = Command::new(&program)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !runs {
        if chosen.is_some() {
            panic!(
                "SPOOL_WASM_OPT names {}, which does not run (set it to 0 to skip wasm-opt)",
                program.display()
            );
        }
        println!(
            "cargo:warning=no wasm-opt on PATH: the component is packaged unoptimized \
             (binaryen's wasm-opt makes it 13% smaller; `cargo xtask setup` installs one)"
        );
        return module.to_path_buf();
    }
    let optimized = out_dir.join("spool.opt.wasm");
    let status = Command::new(&program)
        .arg("-Oz")
        .args(WASM_FEATURES)
        .arg(module)
        .arg("-o")
        .arg(&optimized)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    if !status.success() {
        panic!("{} -Oz failed ({status})", program.display());
    }
    optimized
}

fn build_module(root: &Path, target_dir: &Path) -> PathBuf {
    let cargo = env::var("SPOOL_GUEST_CARGO")
        .or_else(|_| env::var("CARGO"))
        .unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--package",
            "spool",
            "--features",
            "component",
            "--lib",
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            "guest",
            "--target-dir",
        ])
        .arg(target_dir);
    // The outer build's settings are for the host, not the guest.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_MAKEFLAGS",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    if env::var_os("SPOOL_GUEST_CARGO").is_none() {
        // Under the rustup route the outer RUSTC is the same toolchain; keep it.
    } else {
        cmd.env_remove("RUSTC").env_remove("RUSTDOC");
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run `{cargo}` to build the guest: {e}"));
    if !status.success() {
        panic!(
            "building the Spool component failed ({status}). Is the wasm32-unknown-unknown target \
             installed? Run `cargo xtask setup` (it installs it, or sets up the fallback route)."
        );
    }
    target_dir.join("wasm32-unknown-unknown/guest/spool.wasm")
}
