//! The browser package (`web/pkg`, npm name `@spool/engine`): spool-web built for wasm32,
//! bound with `wasm-bindgen --target web`, optionally shrunk with `wasm-opt -Oz`, with a
//! generated `package.json`. The `.d.ts` comes from the Rust side (the `#[wasm_bindgen]`
//! signatures and the `typescript_custom_section` in `web/src/ts.rs`); a check here makes
//! sure it declares every method the JS glue exports, so the two cannot drift.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::cmd::{Step, root};

#[path = "../../host/wasm_features.rs"]
mod wasm_features;
use crate::setup::Toolchain;
pub(crate) use wasm_features::WASM_FEATURES;

/// The npm name of the package.
pub(crate) const PACKAGE_NAME: &str = "@spool/engine";

/// What a build produced.
pub(crate) struct Built {
    /// Which build.
    pub(crate) variant: Variant,
    /// Where its package is.
    pub(crate) out: PathBuf,
    /// The wasm as wasm-bindgen wrote it.
    pub(crate) raw_wasm: u64,
    /// After `wasm-opt -Oz`, when binaryen is installed.
    pub(crate) optimized_wasm: Option<u64>,
    /// The shipped wasm gzipped (`gzip -9`), what a browser downloads; `None` without gzip.
    pub(crate) gzip: Option<u64>,
}

/// The package directory.
pub(crate) fn pkg_dir() -> PathBuf {
    root().join("web/pkg")
}

/// Which calls a build of the package has (the features of `web/Cargo.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// Every call: the default features. What `web/pkg` holds and the demo serves.
    Full,
    /// Without the optional features (`--no-default-features`; see spool-web's crate
    /// docs, "Features"): sessions, transcripts, entries in progress, search, lineage.
    Lean,
}

impl Variant {
    /// The cargo arguments that build this variant's module for wasm32.
    pub(crate) fn cargo_build(self) -> Vec<&'static str> {
        let mut args = vec![
            "build",
            "--package",
            "spool-web",
            "--lib",
            "--target",
            "wasm32-unknown-unknown",
            // Size first (see `[profile.web]` in Cargo.toml).
            "--profile",
            "web",
        ];
        if self == Variant::Lean {
            args.push("--no-default-features");
        }
        args
    }

    /// Where the package is written: `web/pkg`, or `target/web-lean` for the lean build
    /// (built to be measured and checked, not served).
    pub(crate) fn out_dir(self, toolchain: &Toolchain) -> PathBuf {
        match self {
            Variant::Full => pkg_dir(),
            Variant::Lean => toolchain.target_dir().join("web-lean"),
        }
    }

    /// Its name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Variant::Full => "full",
            Variant::Lean => "lean (--no-default-features)",
        }
    }
}

/// Builds the package (`variant`) into its directory ([`Variant::out_dir`]); with
/// `optimize`, runs `wasm-opt -Oz` when present.
pub(crate) fn build(
    toolchain: &Toolchain,
    optimize: bool,
    variant: Variant,
) -> Result<Built, String> {
    toolchain
        .wasm_cargo(&variant.cargo_build())
        .run(&format!("build spool-web ({}) for wasm32", variant.name()))?;
    let module = toolchain
        .target_dir()
        .join("wasm32-unknown-unknown/web/spool_web.wasm");
    let out = variant.out_dir(toolchain);
    Step::new("wasm-bindgen")
        .args(["--target", "web"])
        // Function names are for debuggers, a tenth of the module: the package ships without.
        .args(["--remove-name-section", "--remove-producers-section"])
        .arg("--out-dir")
        .arg(&out)
        .arg(&module)
        .run("wasm-bindgen --target web")?;
    let wasm = out.join("spool_web_bg.wasm");
    let raw_wasm = size(&wasm);
    let wasm_opt = toolchain.wasm_opt().filter(|_| optimize);
    let optimized_wasm = if let Some(wasm_opt) = wasm_opt {
        let tmp = out.join("spool_web_bg.opt.wasm");
        Step::new(&wasm_opt.to_string_lossy())
            .args(["-Oz", "--strip-debug", "--strip-producers"])
            .args(WASM_FEATURES)
            .arg(&wasm)
            .arg("-o")
            .arg(&tmp)
            .run("wasm-opt -Oz")?;
        std::fs::rename(&tmp, &wasm).map_err(|e| format!("{}: {e}", wasm.display()))?;
        Some(size(&wasm))
    } else {
        None
    };
    write_package_json(&out)?;
    check_declarations(&out)?;
    check_calls(&out, variant)?;
    Ok(Built {
        variant,
        out,
        raw_wasm,
        optimized_wasm,
        gzip: gzip_size(&wasm),
    })
}

/// Builds unless `web/pkg` is newer than every source of the wasm.
pub(crate) fn build_if_needed(toolchain: &Toolchain) -> Result<(), String> {
    let built = std::fs::metadata(pkg_dir().join("package.json"))
        .and_then(|m| m.modified())
        .ok();
    let stale = match built {
        None => true,
        Some(built) => ["src", "web/src", "Cargo.lock", "web/Cargo.toml"]
            .iter()
            .any(|p| newer_than(&root().join(p), built)),
    };
    if stale {
        let built = build(toolchain, true, Variant::Full)?;
        report(&built);
    }
    Ok(())
}

/// The TypeScript compiler the declarations are checked with (npm, installed in
/// `target/tools/typescript` on first use).
const TYPESCRIPT_NPM: &str = "typescript@5.9.3";

/// Type-checks `web/tests/typescript/use.ts` against the package's `.d.ts` with `tsc
/// --strict` (building the package when it is stale): the generated signatures of the
/// table methods must accept what a caller writes and reject what it gets wrong (the
/// file's `@ts-expect-error` lines fail when their line compiles).
pub(crate) fn typecheck(toolchain: &Toolchain) -> Result<(), String> {
    build_if_needed(toolchain)?;
    let prefix = root().join("target/tools/typescript");
    let tsc = prefix.join("node_modules/typescript/bin/tsc");
    if !tsc.exists() {
        crate::setup::npm_install(&prefix, TYPESCRIPT_NPM)?;
    }
    Step::new("node")
        .arg(&tsc)
        .args([
            "--noEmit",
            "--strict",
            "--target",
            "es2022",
            "--lib",
            "esnext,dom",
        ])
        .args(["--module", "esnext", "--moduleResolution", "bundler"])
        .arg(root().join("web/tests/typescript/use.ts"))
        .run("tsc --strict web/tests/typescript/use.ts")
}

/// Prints the sizes of a build.
pub(crate) fn report(built: &Built) {
    let kib = |n: u64| n as f64 / 1024.0;
    let dir = built
        .out
        .strip_prefix(root())
        .unwrap_or(&built.out)
        .display()
        .to_string();
    println!(
        "{dir} ({PACKAGE_NAME}, {}): spool_web_bg.wasm raw {} bytes ({:.0} KiB), glue {} bytes",
        built.variant.name(),
        built.raw_wasm,
        kib(built.raw_wasm),
        size(&built.out.join("spool_web.js"))
    );
    match built.optimized_wasm {
        Some(n) => println!(
            "{dir}: after wasm-opt -Oz {n} bytes ({:.0} KiB, {:.0}% of raw)",
            kib(n),
            100.0 * n as f64 / built.raw_wasm.max(1) as f64
        ),
        None => {
            println!("{dir}: wasm-opt not used (binaryen {MIN_BINARYEN}+ on PATH shrinks the wasm)")
        }
    }
    if let Some(n) = built.gzip {
        println!(
            "{dir}: spool_web_bg.wasm gzip -9 {n} bytes ({:.0} KiB)",
            kib(n)
        );
    }
}

/// The gzipped size of a file (`gzip -9`), what a server sends; `None` without gzip.
pub(crate) fn gzip_size(path: &Path) -> Option<u64> {
    let out = std::process::Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout.len() as u64)
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The oldest binaryen whose `wasm-opt` keeps wasm-bindgen's externref table intact:
/// Debian's 108 re-points the `__wbindgen_externrefs` export at the function table, and
/// the page then fails to start (`WebAssembly.Table.set(): … function-typed object`).
pub(crate) const MIN_BINARYEN: u32 = 116;

/// The binaryen version of a `wasm-opt` (`wasm-opt version 132 (version_132)`); `None`
/// when it does not run.
pub(crate) fn wasm_opt_version(program: &Path) -> Option<u32> {
    let version = Step::new(&program.to_string_lossy())
        .arg("--version")
        .output()?;
    Some(
        version
            .split_whitespace()
            .find_map(|w| w.parse::<u32>().ok())
            .unwrap_or(0),
    )
}

/// A `wasm-opt` that is recent enough (see [`MIN_BINARYEN`]); a too-old one is named
/// in a note.
pub(crate) fn usable_wasm_opt(program: &Path) -> bool {
    match wasm_opt_version(program) {
        None => false,
        Some(number) if number < MIN_BINARYEN => {
            eprintln!(
                "note: {} is binaryen {number}, which mis-optimizes wasm-bindgen's externref \
                 table; {MIN_BINARYEN} or newer is needed",
                program.display()
            );
            false
        }
        Some(_) => true,
    }
}

fn newer_than(path: &Path, time: std::time::SystemTime) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if meta.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .any(|e| newer_than(&e.path(), time))
            })
            .unwrap_or(false)
    } else {
        meta.modified().is_ok_and(|m| m > time)
    }
}

/// The `version` of `[package]` in `web/Cargo.toml`.
fn crate_version() -> Result<String, String> {
    let manifest = root().join("web/Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    text.lines()
        .skip_while(|l| l.trim() != "[package]")
        .find_map(|l| {
            l.trim()
                .strip_prefix("version = \"")
                .and_then(|v| v.strip_suffix('"'))
        })
        .map(str::to_owned)
        .ok_or_else(|| format!("{} has no package version", manifest.display()))
}

fn write_package_json(out: &Path) -> Result<(), String> {
    let files: Vec<String> = std::fs::read_dir(out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "package.json" && !n.starts_with('.'))
        .collect();
    let mut files = files;
    files.sort();
    // Written by hand, not through a map: the order of `exports` conditions matters
    // (`types` before `default`), and serde_json's maps sort their keys.
    let string = |v: &str| serde_json::Value::from(v).to_string();
    let files = files.iter().map(|f| string(f)).collect::<Vec<_>>();
    let text = format!(
        r#"{{
  "name": {name},
  "version": {version},
  "description": "Spool, a session engine for AI coding agents, in the browser on IndexedDB",
  "license": "MIT OR Apache-2.0",
  "type": "module",
  "main": "spool_web.js",
  "module": "spool_web.js",
  "types": "spool_web.d.ts",
  "exports": {{
    ".": {{ "types": "./spool_web.d.ts", "default": "./spool_web.js" }},
    "./spool_web_bg.wasm": "./spool_web_bg.wasm"
  }},
  "files": [{files}],
  "sideEffects": false
}}
"#,
        name = string(PACKAGE_NAME),
        version = string(&crate_version()?),
        files = files.join(", "),
    );
    let path = out.join("package.json");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Fails unless the `.d.ts` declares every `Spool` member the glue exports, and holds the
/// record types of `web/src/ts.rs`.
fn check_declarations(out: &Path) -> Result<(), String> {
    let read = |name: &str| {
        let path = out.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let glue = class_members(&read("spool_web.js")?, "Spool");
    // The class's own members, and the table methods' signatures generated from the
    // operation table into an interface of the same name (`web/src/ts.rs`).
    let dts = read("spool_web.d.ts")?;
    let mut declared = class_members(&dts, "Spool");
    // (wasm-bindgen may re-indent the custom section).
    for indent in ["  ", "    "] {
        declared.extend(members(&dts, "export interface Spool {", indent));
    }
    if glue.is_empty() {
        return Err("spool_web.js exports no `Spool` methods: has the glue changed shape?".into());
    }
    let missing: Vec<&String> = glue.difference(&declared).collect();
    if !missing.is_empty() {
        return Err(format!(
            "spool_web.d.ts does not declare these Spool members of the glue: {missing:?}"
        ));
    }
    // And the other way: a build without a feature must not declare its methods.
    let absent: Vec<&String> = declared.difference(&glue).collect();
    if !absent.is_empty() {
        return Err(format!(
            "spool_web.d.ts declares Spool members the glue lacks: {absent:?}"
        ));
    }
    let types = read("spool_web.d.ts")?;
    for record in ["export interface Session ", "export interface SpoolError "] {
        if !types.contains(record) {
            return Err(format!(
                "spool_web.d.ts lacks `{record}`: web/src/ts.rs's custom section is missing"
            ));
        }
    }
    println!(
        "{}: spool_web.d.ts declares the {} Spool members of the glue, and no other",
        out.display(),
        glue.len()
    );
    Ok(())
}

/// Checks that the glue's `Spool` has the method of every table call the build has and
/// none of the others: the full build every call, the lean one none of a call marked
/// with an optional feature (`#[web = "…"]` in the table).
fn check_calls(out: &Path, variant: Variant) -> Result<(), String> {
    let path = out.join("spool_web.js");
    let glue = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let members = class_members(&glue, "Spool");
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    for call in spool::ops::CALLS {
        let built = variant == Variant::Full || call.web_feature.is_none();
        match (built, members.contains(call.js_name)) {
            (true, false) => missing.push(call.js_name),
            (false, true) => extra.push(call.js_name),
            _ => {}
        }
    }
    if !missing.is_empty() || !extra.is_empty() {
        return Err(format!(
            "the {} build's Spool lacks {missing:?} and has {extra:?}",
            variant.name()
        ));
    }
    let left_out = spool::ops::CALLS
        .iter()
        .filter(|call| call.web_feature.is_some() && variant == Variant::Lean)
        .count();
    println!(
        "{}: Spool has the method of each of the build's table calls ({left_out} left out)",
        out.display(),
    );
    Ok(())
}

/// The member names of `export class <class>` in JS or `.d.ts` text: methods, statics
/// and accessors at the class's own indentation (wasm-bindgen's `__` internals aside).
pub(crate) fn class_members(text: &str, class: &str) -> BTreeSet<String> {
    members(text, &format!("export class {class} {{"), "    ")
}

/// The member names of the blocks that open with the line `header` (an interface may be
/// declared in several), at `indent`.
fn members(text: &str, header: &str, indent: &str) -> BTreeSet<String> {
    let mut members = BTreeSet::new();
    let mut inside = false;
    for line in text.lines() {
        if !inside {
            inside = line.trim_end() == header;
            continue;
        }
        if line.starts_with('}') {
            inside = false;
            continue;
        }
        let Some(rest) = line.strip_prefix(indent) else {
            continue;
        };
        // A member opens with its name, then `(` (a method) or `:` (a property); a
        // line with neither continues a wrapped declaration (`    Promise<Page>;`).
        if rest.starts_with([' ', '*', '/']) || !rest.contains(['(', ':']) {
            continue;
        }
        let mut rest = rest;
        for modifier in [
            "private ",
            "public ",
            "static ",
            "readonly ",
            "get ",
            "set ",
            "async ",
        ] {
            rest = rest.strip_prefix(modifier).unwrap_or(rest);
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        if !name.is_empty() && !name.starts_with("__") && name != "constructor" {
            members.insert(name);
        }
    }
    members
}

#[cfg(test)]
#[path = "tests/web.rs"]
mod tests;
