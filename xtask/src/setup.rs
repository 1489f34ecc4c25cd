//! Toolchain set-up owned by the project: everything a fresh Debian machine lacks for
//! wasm builds and browser tests. Idempotent; each check is quick when its tool is there.
//!
//! Route 1 (preferred): rustup's `wasm32-unknown-unknown` target (`rustup target add`,
//! guarded by a timeout). Route 2 (fallback, only when route 1 fails): Debian's
//! `rustc-web` with `-Zbuild-std`, reached through a generated `wasm-cargo` wrapper.

use std::path::{Path, PathBuf};

use crate::cmd::{Step, root};
use crate::web;

/// What [`run`] checks and installs.
pub(crate) struct Options {
    /// Also Chromium, chromedriver and wasm-bindgen-cli (browser tests).
    pub(crate) browser: bool,
}

/// How wasm is built on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// rustup's own wasm32 target.
    Rustup,
    /// Debian's rustc-web with `-Zbuild-std`.
    Debian,
}

/// The result of set-up: which cargo to run and with what environment.
pub(crate) struct Toolchain {
    pub(crate) cargo: String,
    pub(crate) route: Route,
    wrapper: Option<PathBuf>,
    wasm_opt: Option<PathBuf>,
}

impl Toolchain {
    /// A recent enough `wasm-opt`; `None` with `SPOOL_WASM_OPT=0`.
    pub(crate) fn wasm_opt(&self) -> Option<&Path> {
        self.wasm_opt.as_deref()
    }

    /// Environment every cargo step gets (the guest cargo the host's build script uses).
    pub(crate) fn apply_env(&self, step: &mut Step) {
        if let Some(wrapper) = &self.wrapper {
            step.env("SPOOL_GUEST_CARGO", wrapper);
        }
        if let Some(wasm_opt) = &self.wasm_opt {
            step.env("SPOOL_WASM_OPT", wasm_opt);
        }
    }

    /// A cargo that builds for wasm32 on this route.
    pub(crate) fn wasm_cargo(&self, args: &[&str]) -> Step {
        let mut step = match &self.wrapper {
            Some(wrapper) => {
                let mut s = Step::new(&wrapper.to_string_lossy());
                // Separate target dir: switching routes would rebuild everything.
                s.env("CARGO_TARGET_DIR", self.target_dir());
                s
            }
            None => Step::new(&self.cargo),
        };
        step.args(args);
        step
    }

    /// The target directory wasm builds of this route land in.
    pub(crate) fn target_dir(&self) -> PathBuf {
        match &self.wrapper {
            Some(_) => root().join("target/debian-route"),
            None => std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root().join("target")),
        }
    }

    /// Clippy for wasm32 needs rustup's target (Debian's rustc-web ships no clippy).
    pub(crate) fn has_wasm_clippy(&self) -> bool {
        self.route == Route::Rustup
    }
}

pub(crate) fn run(options: &Options) -> Result<Toolchain, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    ensure_components()?;
    let forced = std::env::var("SPOOL_WASM_ROUTE").ok();
    let route = if forced.as_deref() == Some("debian") {
        eprintln!("setup: SPOOL_WASM_ROUTE=debian forces the fallback route");
        Route::Debian
    } else if rustup_target_works() {
        Route::Rustup
    } else {
        eprintln!("setup: adding the wasm32-unknown-unknown target with rustup (120 s limit)");
        let added = Step::new("timeout")
            .args(["120", "rustup", "target", "add", "wasm32-unknown-unknown"])
            .run("rustup target add wasm32-unknown-unknown")
            .is_ok();
        if added && rustup_target_works() {
            Route::Rustup
        } else {
            eprintln!(
                "setup: rustup's wasm target is not usable; falling back to Debian's rustc-web"
            );
            Route::Debian
        }
    };
    let wrapper = match route {
        Route::Rustup => None,
        Route::Debian => Some(debian_route()?),
    };
    // The component (host/build.rs) and the browser package both go through it.
    let wasm_opt = ensure_wasm_opt();
    if options.browser {
        ensure_browser()?;
        ensure_wasm_bindgen_cli(&cargo)?;
    }
    eprintln!("setup: ready (wasm route: {route:?})");
    Ok(Toolchain {
        cargo,
        route,
        wrapper,
        wasm_opt,
    })
}

/// The binaryen set-up installs when no recent `wasm-opt` is on PATH: npm's build of it
/// (wasm-opt compiled to wasm, run by node; one 11 MB package, installed in seconds).
/// Debian 12's binaryen is 108, too old (see [`web::MIN_BINARYEN`]).
const BINARYEN_NPM: &str = "binaryen@132.0.0";

/// Where [`BINARYEN_NPM`] is installed (an npm prefix).
fn binaryen_prefix() -> PathBuf {
    root().join("target/tools/binaryen")
}

/// A recent enough `wasm-opt`: `SPOOL_WASM_OPT`'s (a path; `0`: none), else PATH's, else
/// npm's in `target/tools`, installed on first use. Optional: without one (no npm,
/// offline) the component and the browser package ship unoptimized, said once.
fn ensure_wasm_opt() -> Option<PathBuf> {
    match std::env::var_os("SPOOL_WASM_OPT") {
        Some(value) if value == "0" => {
            eprintln!(
                "setup: SPOOL_WASM_OPT=0: the component and the browser package are not run \
                 through wasm-opt"
            );
            return None;
        }
        Some(value) => return Some(PathBuf::from(value)),
        None => {}
    }
    let on_path = PathBuf::from("wasm-opt");
    if web::usable_wasm_opt(&on_path) {
        return Some(on_path);
    }
    let npm_copy = binaryen_prefix().join("node_modules/binaryen/bin/wasm-opt");
    if !npm_copy.exists() {
        eprintln!(
            "setup: installing {BINARYEN_NPM} from npm into {}",
            binaryen_prefix().display()
        );
        if let Err(e) = npm_install(&binaryen_prefix(), BINARYEN_NPM) {
            eprintln!("setup: {e}; the component and the browser package ship without wasm-opt");
            return None;
        }
    }
    web::usable_wasm_opt(&npm_copy).then_some(npm_copy)
}

/// jco, which transpiles the component to JavaScript for Node (the hosts step).
const JCO_NPM: &str = "@bytecodealliance/jco@1.35.0";

/// wasmtime's Python bindings, which load the component (the hosts step).
const WASMTIME_PY: &str = "wasmtime==51.0.0";

/// jco's command-line script, installed from npm into `target/tools/jco` on first use.
pub(crate) fn ensure_jco() -> Result<PathBuf, String> {
    let prefix = root().join("target/tools/jco");
    let script = prefix.join("node_modules/@bytecodealliance/jco/dist/jco.js");
    let version = JCO_NPM.rsplit('@').next().unwrap_or_default();
    let manifest = prefix.join("node_modules/@bytecodealliance/jco/package.json");
    let installed = std::fs::read_to_string(&manifest)
        .is_ok_and(|text| text.contains(&format!("\"version\": \"{version}\"")));
    if !installed || !script.exists() {
        eprintln!(
            "setup: installing {JCO_NPM} from npm into {}",
            prefix.display()
        );
        npm_install(&prefix, JCO_NPM)?;
    }
    if !script.exists() {
        return Err(format!("{JCO_NPM} installed no {}", script.display()));
    }
    Ok(script)
}

/// A Python with wasmtime's bindings: a virtualenv in `target/tools/wasmtime-py`,
/// created and installed from PyPI on first use.
pub(crate) fn ensure_wasmtime_py() -> Result<PathBuf, String> {
    let venv = root().join("target/tools/wasmtime-py");
    let python = venv.join("bin/python");
    if !python.exists() {
        Step::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .run("setup: create a virtualenv for wasmtime-py")?;
    }
    let version = WASMTIME_PY.rsplit('=').next().unwrap_or_default();
    let has = Step::new(&python.to_string_lossy())
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('wasmtime'))",
        ])
        .output()
        .is_some_and(|out| out.trim() == version);
    if !has {
        Step::new(&python.to_string_lossy())
            .args(["-m", "pip", "install", "--quiet", WASMTIME_PY])
            .run(&format!("setup: pip install {WASMTIME_PY} (PyPI)"))?;
    }
    Ok(python)
}

/// Installs the npm `package` (`name@version`) under the npm prefix `prefix`.
pub(crate) fn npm_install(prefix: &std::path::Path, package: &str) -> Result<(), String> {
    Step::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(prefix)
        .arg(package)
        .run(&format!("npm install {package}"))
}

fn ensure_components() -> Result<(), String> {
    let have = |tool: &str| {
        Step::new("cargo")
            .args([tool, "--version"])
            .output()
            .is_some()
    };
    if have("clippy") && have("fmt") {
        return Ok(());
    }
    Step::new("rustup")
        .args(["component", "add", "clippy", "rustfmt"])
        .run("rustup component add clippy rustfmt")
}

/// The target is installed and links a tiny std cdylib.
fn rustup_target_works() -> bool {
    let installed = Step::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_some_and(|out| out.lines().any(|l| l.trim() == "wasm32-unknown-unknown"));
    if !installed {
        return false;
    }
    let dir = std::env::temp_dir().join(format!("spool-wasm-probe-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return false;
    }
    let source = dir.join("probe.rs");
    let ok = std::fs::write(
        &source,
        "#[unsafe(no_mangle)] pub extern \"C\" fn probe(n: usize) -> usize { vec![1u8; n].len() }\n",
    )
    .is_ok()
        && Step::new("rustc")
            .args(["--edition", "2024", "--target", "wasm32-unknown-unknown", "--crate-type", "cdylib", "-O"])
            .arg(&source)
            .arg("-o")
            .arg(dir.join("probe.wasm"))
            .output()
            .is_some();
    let _ = std::fs::remove_dir_all(&dir);
    ok
}

fn dpkg_installed(package: &str) -> bool {
    Step::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_some_and(|s| s.starts_with("install ok installed"))
}

/// Installs the missing Debian packages.
pub(crate) fn apt_install(packages: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    // Once per run: a fresh machine's package lists may be empty.
    static UPDATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !UPDATED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        Step::new("apt-get").arg("update").run("apt-get update")?;
    }
    Step::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .run(&format!("apt-get install {}", missing.join(" ")))
}

fn ensure_browser() -> Result<(), String> {
    if Path::new("/usr/bin/chromium").exists() && Path::new("/usr/bin/chromedriver").exists() {
        return Ok(());
    }
    apt_install(&["chromium", "chromium-driver"])
}

/// The wasm-bindgen version Cargo.lock pins (the CLI must match it exactly).
fn locked_wasm_bindgen() -> Result<String, String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\""
            && let Some(version) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
                .and_then(|v| v.strip_suffix('"'))
        {
            return Ok(version.to_owned());
        }
    }
    Err("Cargo.lock does not pin wasm-bindgen".into())
}

fn ensure_wasm_bindgen_cli(cargo: &str) -> Result<(), String> {
    let version = locked_wasm_bindgen()?;
    let installed = Step::new("wasm-bindgen-test-runner")
        .arg("--version")
        .output()
        .and_then(|out| out.split_whitespace().nth(1).map(str::to_owned));
    if installed.as_deref() == Some(version.as_str()) {
        return Ok(());
    }
    // Without --locked: the CLI's own lockfile pins a crate the registry no longer offers.
    Step::new(cargo)
        .args(["install", "--force", &format!("wasm-bindgen-cli@{version}")])
        .run(&format!(
            "cargo install wasm-bindgen-cli@{version} (a few minutes)"
        ))
}

/// Route 2: Debian's rustc-web + std sources + lld, and a `wasm-cargo` wrapper.
fn debian_route() -> Result<PathBuf, String> {
    apt_install(&["rustc-web", "cargo-web", "rust-web-src", "rust-web-llvm"])?;
    // /usr/bin/rust-lld links to lld-NN, which rust-web-llvm does not depend on.
    if let Ok(target) = std::fs::read_link("/usr/bin/rust-lld") {
        let package = target.to_string_lossy().into_owned();
        if !package.contains('/') {
            apt_install(&[&package])?;
        }
    }
    if !Path::new("/usr/bin/rust-lld").exists() {
        return Err("/usr/bin/rust-lld is not usable after installing rust-web-llvm".into());
    }
    let dir = root().join("target/xtask");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let wrapper = dir.join("wasm-cargo");
    let script = "#!/bin/sh\n# Generated by `cargo xtask setup` (Debian rustc-web route).\n\
        export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1\n\
        export CARGO_UNSTABLE_BUILD_STD=\"${CARGO_UNSTABLE_BUILD_STD:-std,panic_abort}\"\n\
        exec /usr/bin/cargo \"$@\"\n";
    std::fs::write(&wrapper, script).map_err(|e| format!("{}: {e}", wrapper.display()))?;
    Step::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .run("chmod +x wasm-cargo")?;
    Ok(wrapper)
}
