//! The browser package's TypeScript for the operation table, generated from it
//! (`spool::ops::CALLS`) and kept in `web/src/ts.rs` between two markers: the
//! `Command` union, each call's arguments (`CallArgs`, what the shell fills in
//! optional) and result (`CallResult`), and the typed signature of every table method
//! of the `Spool` class. The test fails when the text there is not what the table
//! generates; `SPOOL_BLESS=1 cargo test -p spool --test suite ts_table` writes it.
//! Every type the generated text names must be declared in `web/src/ts.rs`.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeSet;
use std::path::Path;

use spool::ops::{CALLS, Call};

const BEGIN: &str = "/* BEGIN generated from the operation table by tests/ts_table.rs */\n";
const END: &str = "/* END generated from the operation table */\n";
/// Where generated lines wrap.
const WIDTH: usize = 92;

/// The TypeScript of a Rust type as the table writes it (`Option < $crate :: Session >`
/// → `Session | null`).
pub(crate) fn ts_type(rust: &str) -> String {
    let rust: String = rust.chars().filter(|c| !c.is_whitespace()).collect();
    let generic = |outer: &str| {
        rust.strip_prefix(outer)
            .and_then(|r| r.strip_prefix('<'))
            .and_then(|r| r.strip_suffix('>'))
    };
    if let Some(inner) = generic("Option") {
        return format!("{} | null", ts_type(inner));
    }
    if let Some(inner) = generic("Vec") {
        let inner = ts_type(inner);
        return if inner.contains(' ') {
            format!("({inner})[]")
        } else {
            format!("{inner}[]")
        };
    }
    match rust.rsplit("::").next().unwrap_or_default() {
        "String" => "string".into(),
        "u8" | "u32" | "u64" | "usize" | "i64" | "f64" => "number".into(),
        "bool" => "boolean".into(),
        "()" => "void".into(),
        name => name.into(),
    }
}

/// A field's declaration, `optional` as `name?:`.
fn member(name: &str, ty: &str, optional: bool) -> String {
    let mark = if optional { "?" } else { "" };
    format!("{name}{mark}: {ty};")
}

/// The declared type of `field` of `call`: an object argument with an id inside it
/// that the shell fills in carries it required in `Command` (`ImportRequest & {
/// session_id: string; }`).
fn field_type(call: &Call, field: &spool::ops::Field) -> String {
    let ty = ts_type(field.ty);
    let inner: Vec<&str> = call
        .fills
        .iter()
        .filter_map(|fill| fill.strip_prefix(field.name)?.strip_prefix('.'))
        .collect();
    if inner.is_empty() {
        ty
    } else {
        let members: Vec<String> = inner.iter().map(|f| member(f, "string", false)).collect();
        format!("{ty} & {{ {} }}", members.join(" "))
    }
}

/// `head` then `parts` separated by spaces, wrapped at [`WIDTH`] with `indent`; `tail`
/// stays on the line of the last part.
fn wrapped(head: &str, parts: &[String], tail: &str, indent: &str) -> String {
    let mut parts = parts.to_vec();
    match parts.last_mut() {
        Some(last) => {
            last.push(' ');
            last.push_str(tail);
        }
        None => parts.push(tail.to_owned()),
    }
    let mut out = String::new();
    let mut line = head.to_owned();
    for part in &parts {
        if line.len() + 1 + part.len() > WIDTH && line.trim() != head.trim() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = format!("{indent}{part}");
        } else {
            if !line.ends_with(' ') && !line.is_empty() {
                line.push(' ');
            }
            line.push_str(part);
        }
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A `/** … */` comment of `doc`'s lines, indented by `indent`.
fn comment(doc: &str, indent: &str) -> String {
    let lines: Vec<&str> = doc.lines().map(str::trim).collect();
    match lines.as_slice() {
        [] => String::new(),
        [one] => format!("{indent}/** {one} */\n"),
        [first, rest @ ..] => {
            let mut out = format!("{indent}/** {first}\n");
            for line in rest {
                out.push_str(&format!("{indent} * {line}\n"));
            }
            out.push_str(&format!("{indent} */\n"));
            out
        }
    }
}

/// What the table generates.
fn generated() -> String {
    let mut out = String::from(BEGIN);
    out.push_str(
        "/** Any core call as data (`execute`): the shape of the scenario vectors. Nothing is\n \
         * defaulted: `now_ms` and ids are given. */\nexport type Command =\n",
    );
    for (i, call) in CALLS.iter().enumerate() {
        let mut parts = vec![format!("op: \"{}\";", call.name)];
        for field in call.fields {
            parts.push(member(
                field.name,
                &field_type(call, field),
                field.defaulted(),
            ));
        }
        let end = if i + 1 == CALLS.len() { "};" } else { "}" };
        out.push_str(&wrapped("  | {", &parts, end, "      "));
    }
    out.push_str(
        "/** The `args` of each table method (`spool.appendEntry(workspace, args)`): the\n \
         * call's `Command` without `op`; what the shell fills in when absent is optional\n \
         * (`now_ms`: `Date.now()`; created ids: `crypto.randomUUID()`). */\n\
         export interface CallArgsOf {\n",
    );
    for call in CALLS {
        let parts: Vec<String> = call
            .fields
            .iter()
            .map(|field| {
                let filled = call.fills(field.name)
                    || call
                        .fills
                        .iter()
                        .any(|f| f.starts_with(&format!("{}.", field.name)));
                let ty = ts_type(field.ty);
                member(field.name, &ty, field.defaulted() || filled)
            })
            .collect();
        out.push_str(&wrapped(
            &format!("  {}: {{", call.name),
            &parts,
            "};",
            "    ",
        ));
    }
    out.push_str(
        "}\n/** The arguments of the call `Op`. */\n\
         export type CallArgs<Op extends Command[\"op\"]> = CallArgsOf[Op];\n\
         /** What each call resolves to. */\nexport interface CallResults {\n",
    );
    for call in CALLS {
        out.push_str(&format!("  {}: {};\n", call.name, ts_type(call.output)));
    }
    out.push_str(
        "}\n/** What the call `Op` resolves to. */\n\
         export type CallResult<Op extends Command[\"op\"]> = CallResults[Op];\n\
         /** The table methods of `Spool`, one per call: `args` is the call's `CallArgs`\n \
         * (those of the optional features are declared with them, below). */\n\
         export interface Spool {\n",
    );
    out.push_str(&methods(None));
    out.push_str("}\n");
    out.push_str(END);
    out
}

/// The methods of the calls built with the browser package's feature `feature` (`None`:
/// those of every build), one declaration each.
fn methods(feature: Option<&str>) -> String {
    let mut out = String::new();
    for call in CALLS.iter().filter(|call| call.web_feature == feature) {
        out.push_str(&comment(call.doc, "  "));
        let optional = call.fields.iter().all(|field| {
            field.defaulted()
                || call.fills(field.name)
                || call
                    .fills
                    .iter()
                    .any(|f| f.starts_with(&format!("{}.", field.name)))
        });
        let args = if optional { "args?" } else { "args" };
        let (js, name) = (call.js_name, call.name);
        let head = format!("  {js}(workspace: string, {args}: CallArgs<\"{name}\">):");
        let result = format!("Promise<{}>;", ts_type(call.output));
        if head.len() + 1 + result.len() <= WIDTH {
            out.push_str(&format!("{head} {result}\n"));
        } else {
            out.push_str(&format!("{head}\n    {result}\n"));
        }
    }
    out
}

/// The markers of the block of `feature`'s methods.
fn feature_markers(feature: &str) -> (String, String) {
    (
        format!(
            "/* BEGIN the methods of feature \"{feature}\", generated by tests/ts_table.rs */\n"
        ),
        format!("/* END the methods of feature \"{feature}\" */\n"),
    )
}

/// The block of the methods of `feature`'s calls: a declaration of `Spool` of their own,
/// which `web/src/ts.rs` emits only in builds with the feature.
fn feature_block(feature: &str) -> String {
    let (begin, end) = feature_markers(feature);
    format!(
        "{begin}/** The table methods of the feature `{feature}`. */\n\
         export interface Spool {{\n{}}}\n{end}",
        methods(Some(feature))
    )
}

/// The browser package's optional features that calls are built with, in table order.
fn features() -> Vec<&'static str> {
    let mut features: Vec<&str> = Vec::new();
    for feature in CALLS.iter().filter_map(|call| call.web_feature) {
        if !features.contains(&feature) {
            features.push(feature);
        }
    }
    features
}

/// Checks (or, with `SPOOL_BLESS`, writes) each generated block of `web/src/ts.rs`:
/// `blocks` are the markers of each and what belongs between them.
fn check_blocks(blocks: &[(String, String, String)]) {
    let mut text = TS.to_owned();
    let mut stale = Vec::new();
    for (begin, end, generated) in blocks {
        let start = text
            .find(begin.as_str())
            .unwrap_or_else(|| panic!("web/src/ts.rs lacks the marker {begin}"));
        let stop = text[start..]
            .find(end.as_str())
            .unwrap_or_else(|| panic!("web/src/ts.rs lacks the marker {end}"))
            + start
            + end.len();
        if text[start..stop] != *generated {
            stale.push(begin.trim().to_owned());
            text.replace_range(start..stop, generated);
        }
    }
    if std::env::var_os("SPOOL_BLESS").is_some() {
        if !stale.is_empty() {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("web/src/ts.rs");
            // The one write of the core's tests: the developer asked for the file.
            #[allow(clippy::disallowed_methods)]
            std::fs::write(path, text).expect("write web/src/ts.rs");
        }
        return;
    }
    assert!(
        stale.is_empty(),
        "web/src/ts.rs's table declarations are not what the table generates ({}): run \
         `SPOOL_BLESS=1 cargo test -p spool --test suite ts_table` and review the diff",
        stale.join(", ")
    );
}

/// The default features of the browser package (`default = [...]` in web/Cargo.toml),
/// sorted.
fn web_default_features() -> Vec<&'static str> {
    let manifest = include_str!("../web/Cargo.toml");
    let line = manifest
        .lines()
        .find_map(|line| line.strip_prefix("default = ["))
        .expect("web/Cargo.toml has a `default = [...]` line");
    let mut features: Vec<&str> = line
        .trim_end_matches(']')
        .split(',')
        .map(|name| name.trim().trim_matches('"'))
        .filter(|name| !name.is_empty())
        .collect();
    features.sort_unstable();
    features
}

/// `web/src/ts.rs` as this test was compiled with.
const TS: &str = include_str!("../web/src/ts.rs");

#[test]
fn test_ts_table_declarations_are_what_the_table_generates() {
    let mut blocks = vec![(BEGIN.to_owned(), END.to_owned(), generated())];
    for feature in features() {
        let (begin, end) = feature_markers(feature);
        blocks.push((begin, end, feature_block(feature)));
    }
    check_blocks(&blocks);
}

#[test]
fn test_ts_each_feature_block_is_emitted_only_with_its_feature() {
    // The block of a feature's methods sits in a `typescript_custom_section` of its own,
    // under the `cfg` of the feature: a build without it must not declare its methods.
    for feature in features() {
        let (begin, _) = feature_markers(feature);
        let at = TS.find(begin.as_str()).expect("the feature's block");
        let before = &TS[..at];
        let item = before
            .rfind("#[cfg(")
            .expect("a cfg before the feature's block");
        let cfg = &before[item..];
        assert!(
            cfg.starts_with(&format!("#[cfg(feature = \"{feature}\")]"))
                && cfg.contains("typescript_custom_section")
                && !cfg.contains("BEGIN"),
            "the block of feature {feature} is not under its own cfg: {cfg}"
        );
    }
    let mut marked = features();
    marked.sort_unstable();
    assert_eq!(
        marked,
        web_default_features(),
        "the features the table marks are the browser package's default features \
         (web/Cargo.toml), each on by default"
    );
}

#[test]
fn test_ts_every_type_the_table_names_is_declared() {
    let text = TS;
    let builtin = [
        "string", "number", "boolean", "void", "null", "Record", "unknown",
    ];
    let mut missing = BTreeSet::new();
    for call in CALLS {
        let types = call
            .fields
            .iter()
            .map(|f| ts_type(f.ty))
            .chain([ts_type(call.output)]);
        for ty in types {
            for name in ty.split(|c: char| !c.is_alphanumeric() && c != '_') {
                if name.is_empty() || builtin.contains(&name) {
                    continue;
                }
                let declared = text.contains(&format!("export interface {name} "))
                    || text.contains(&format!("export type {name} ="));
                if !declared {
                    missing.insert(format!("{name} ({})", call.name));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not declared in web/src/ts.rs: {missing:?}"
    );
}
