//! `cargo xtask size-report [--lean] [--top N]`: where the browser module's bytes go.
//!
//! The package is built as `build-web` builds it, but with symbol names kept in the v0
//! mangling (which names the type arguments of generic functions) into
//! `target/size-report`, then run through `wasm-opt -Oz` with inlining turned off, so
//! that every function keeps its own body and name. Each function's code size is put in
//! one category by its demangled name ([`CATEGORIES`], first match wins) and the
//! categories are printed with their share, then the largest functions. Without inlining
//! the code is a few percent larger than what ships; the shares are what to read. What
//! LLVM inlined stays where it was inlined: `Spool::call_named` holds every table call's
//! argument reading, operation set-up and result writing (each called from there only).

use std::path::Path;

use crate::cmd::{Step, root};
use crate::setup;
use crate::web::{self, Variant};

/// The categories, in the order they are tried: a name goes to the first whose pattern
/// it contains. The call arguments come before the readers (their readers are named
/// by both), drop glue and serde before the modules whose types they handle.
const CATEGORIES: &[(&str, &[&str])] = &[
    (
        "call arguments (the table's structs)",
        &["spool::engine::ops::"],
    ),
    ("drop glue", &["drop_in_place"]),
    (
        "serde readers",
        &[
            "serde_core::de",
            "serde_json::de",
            "value_de",
            "serde::de",
            "Deserialize",
            "Visitor",
            "MapAccess",
            "SeqAccess",
            "serde_wasm_bindgen::de",
            "serde_json::value::de",
        ],
    ),
    (
        "serde writers",
        &[
            "serde_core::ser",
            "serde_json::ser",
            "serde_json::value::ser",
            "Serialize",
            "serde_wasm_bindgen::ser",
            "serde::private::ser",
        ],
    ),
    ("BTreeMap and BTreeSet", &["alloc::collections::btree"]),
    ("sorting", &["core::slice::sort"]),
    (
        "formatting",
        &["core::fmt", "alloc::fmt", "flt2dec", "core::num::fmt"],
    ),
    // A module's operation bodies (`Erased<spool::search::…>`) count as the module's.
    ("core: import", &["spool::import"]),
    ("core: compaction", &["spool::compaction"]),
    ("core: search", &["spool::search"]),
    ("core: branch", &["spool::branch"]),
    ("core: provider_fork", &["spool::provider_fork"]),
    ("core: resume", &["spool::resume"]),
    (
        "core: session and transcript",
        &["spool::session", "spool::transcript", "spool::streaming"],
    ),
    ("operation machinery", &["spool::engine::op"]),
    (
        "browser shell and bindings (with call_named)",
        &[
            "spool_web::",
            "js_sys::",
            "wasm_bindgen",
            "web_sys::",
            "indexed_db_futures::",
            "tokio::",
        ],
    ),
    ("core: other", &["spool::"]),
];

/// What a function not matched by [`CATEGORIES`] is counted as.
const OTHER: &str = "std, alloc and other crates";

/// Runs the report (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut variant = Variant::Full;
    let mut top = 25;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--lean" => variant = Variant::Lean,
            "--top" => {
                top = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--top takes a number")?;
            }
            other => return Err(format!("size-report: unknown argument {other:?}")),
        }
    }
    let toolchain = setup::run(&setup::Options { browser: true })?;
    let wasm_opt = toolchain
        .wasm_opt()
        .ok_or("size-report needs wasm-opt (`cargo xtask setup` installs binaryen)")?
        .to_path_buf();
    let target = root().join("target/size-report");
    toolchain
        .wasm_cargo(&variant.cargo_build())
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_ENCODED_RUSTFLAGS", "-Csymbol-mangling-version=v0")
        .run(&format!(
            "build spool-web ({}) with v0 symbol names",
            variant.name()
        ))?;
    let out = target.join("report");
    Step::new("wasm-bindgen")
        .args(["--target", "web", "--out-dir"])
        .arg(&out)
        .arg(target.join("wasm32-unknown-unknown/web/spool_web.wasm"))
        .run("wasm-bindgen --target web (names kept)")?;
    let optimized = out.join("spool_web_noinline.wasm");
    Step::new(&wasm_opt.to_string_lossy())
        // Binaryen runs its flags in order: the marks must come before `-Oz` inlines.
        .args(["--no-inline=*", "-Oz", "-g"])
        .args(web::WASM_FEATURES)
        .arg(out.join("spool_web_bg.wasm"))
        .arg("-o")
        .arg(&optimized)
        .run("wasm-opt -Oz without inlining (names kept)")?;
    let bytes = std::fs::read(&optimized).map_err(|e| format!("{}: {e}", optimized.display()))?;
    let functions = functions(&bytes).map_err(|e| format!("{}: {e}", optimized.display()))?;
    print!("{}", report(&functions, top, &optimized));
    Ok(())
}

/// One function of a module: its demangled name and the size of its body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Function {
    pub(crate) name: String,
    pub(crate) size: u64,
}

/// The report's text: the categories by size with their share, then the `top` largest
/// functions.
pub(crate) fn report(functions: &[Function], top: usize, path: &Path) -> String {
    let total: u64 = functions.iter().map(|f| f.size).sum();
    let mut sums: Vec<(&str, u64, usize)> = Vec::new();
    for function in functions {
        let category = category(&function.name);
        match sums.iter_mut().find(|(name, _, _)| *name == category) {
            Some(sum) => {
                sum.1 += function.size;
                sum.2 += 1;
            }
            None => sums.push((category, function.size, 1)),
        }
    }
    sums.sort_by_key(|s| std::cmp::Reverse(s.1));
    let share = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
    let mut text = format!(
        "\n{}: {} functions, {total} bytes of code (without inlining)\n\n",
        path.display(),
        functions.len()
    );
    for (name, size, count) in &sums {
        text.push_str(&format!(
            "{size:>9} {:>5.1}% {count:>5} fns  {name}\n",
            share(*size)
        ));
    }
    let mut largest: Vec<&Function> = functions.iter().collect();
    largest.sort_by_key(|f| std::cmp::Reverse(f.size));
    text.push_str(&format!("\nthe {top} largest functions:\n"));
    for function in largest.into_iter().take(top) {
        let name: String = function.name.chars().take(160).collect();
        text.push_str(&format!("{:>9}  {name}\n", function.size));
    }
    text
}

/// The category of the function named `name` ([`CATEGORIES`], else [`OTHER`]).
pub(crate) fn category(name: &str) -> &'static str {
    CATEGORIES
        .iter()
        .find(|(_, patterns)| patterns.iter().any(|p| name.contains(p)))
        .map_or(OTHER, |(category, _)| category)
}

/// The functions a module defines, with their names from its `name` section (demangled;
/// `?` when it has none) and their body sizes.
pub(crate) fn functions(module: &[u8]) -> Result<Vec<Function>, String> {
    if module.get(..8) != Some(&[0, b'a', b's', b'm', 1, 0, 0, 0][..]) {
        return Err("not a wasm module".into());
    }
    let mut reader = Reader {
        bytes: module,
        at: 8,
    };
    let (mut imported, mut sizes, mut names) = (0u32, Vec::new(), Vec::new());
    while !reader.done() {
        let id = reader.byte()?;
        let size = reader.leb()? as usize;
        let mut section = reader.part(size)?;
        match id {
            // Imports: functions imported come first in the function index space.
            2 => {
                for _ in 0..section.leb()? {
                    section.name()?;
                    section.name()?;
                    match section.byte()? {
                        0 => {
                            section.leb()?;
                            imported += 1;
                        }
                        1 => {
                            section.byte()?;
                            section.limits()?;
                        }
                        2 => section.limits()?,
                        3 => {
                            section.byte()?;
                            section.byte()?;
                        }
                        4 => {
                            section.byte()?;
                            section.leb()?;
                        }
                        kind => return Err(format!("import of unknown kind {kind}")),
                    }
                }
            }
            10 => {
                for _ in 0..section.leb()? {
                    let body = section.leb()?;
                    section.take(body as usize)?;
                    sizes.push(body);
                }
            }
            0 if section.name()? == "name" => {
                while !section.done() {
                    let kind = section.byte()?;
                    let length = section.leb()? as usize;
                    let mut sub = section.part(length)?;
                    if kind == 1 {
                        for _ in 0..sub.leb()? {
                            let index = sub.leb()?;
                            names.push((index, sub.name()?.to_owned()));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut functions: Vec<Function> = sizes
        .into_iter()
        .map(|size| Function {
            name: "?".into(),
            size,
        })
        .collect();
    for (index, name) in names {
        if let Some(function) = index
            .checked_sub(u64::from(imported))
            .and_then(|i| functions.get_mut(i as usize))
        {
            function.name =
                without_disambiguators(&format!("{:#}", rustc_demangle::demangle(&name)));
        }
    }
    Ok(functions)
}

/// `name` without the crate disambiguators v0 names keep (`spool[bdf5c908d2e4ef17]::x`
/// is `spool::x`).
fn without_disambiguators(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let tail = &rest[open + 1..];
        match tail.find(']') {
            Some(close) if close > 0 && tail[..close].bytes().all(|b| b.is_ascii_hexdigit()) => {
                out.push_str(&rest[..open]);
                rest = &tail[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A cursor over a module's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self.bytes.get(self.at).ok_or("the module ends early")?;
        self.at += 1;
        Ok(byte)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let end = end.ok_or("a section or body runs past the module's end")?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    /// The next `n` bytes as a reader of their own (a section, a subsection).
    fn part(&mut self, n: usize) -> Result<Reader<'a>, String> {
        Ok(Reader {
            bytes: self.take(n)?,
            at: 0,
        })
    }

    /// An unsigned LEB128 number.
    fn leb(&mut self) -> Result<u64, String> {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let byte = self.byte()?;
            if shift >= 64 {
                return Err("a number is too long".into());
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    fn name(&mut self) -> Result<&'a str, String> {
        let length = self.leb()? as usize;
        std::str::from_utf8(self.take(length)?).map_err(|e| format!("a name is not UTF-8: {e}"))
    }

    /// The limits of a table or memory (a flag, a minimum, a maximum when flagged).
    fn limits(&mut self) -> Result<(), String> {
        let flags = self.byte()?;
        self.leb()?;
        if flags & 1 != 0 {
            self.leb()?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "tests/size_report.rs"]
mod tests;
