//! Every surface lists the same calls as the operation table (`spool::ops`): the WIT
//! `api` interface, the `Command` enum, the native host's typed calls (and the `Spool`
//! methods know every field the table fills), the JavaScript class and the TypeScript
//! `Command` union; and the same reason codes as
//! `spool::ErrorCode`: the WIT `error-code` enum and the TypeScript `SpoolErrorCode`.

use std::collections::BTreeSet;
use std::path::Path;

/// The table's names, in snake case.
fn table() -> BTreeSet<String> {
    spool::ops::NAMES.iter().map(|n| (*n).to_owned()).collect()
}

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The functions of the WIT `api` interface, in snake case.
fn wit_functions() -> BTreeSet<String> {
    let wit = read("wit/spool.wit");
    let start = wit.find("interface api {").expect("an api interface");
    let end = start + wit[start..].find("\n}").expect("the interface ends");
    wit[start..end]
        .lines()
        .filter_map(|line| line.trim().split_once(": func("))
        .map(|(name, _)| name.replace('-', "_"))
        .collect()
}

/// The methods of the JavaScript class, in snake case (`appendEntry` → `append_entry`):
/// the hand-written ones (`pub fn`, renamed by a `js_name` just above) and, when
/// `web/src/api/calls.rs` derives one method per table entry from the table itself, every
/// call of the table.
fn js_methods() -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/src/api");
    let mut sources = vec![read("web/src/api.rs")];
    for entry in std::fs::read_dir(&dir).expect("web/src/api") {
        let path = entry.expect("an entry").path();
        sources.push(std::fs::read_to_string(&path).expect("a source file"));
    }
    let mut methods = BTreeSet::new();
    for source in &sources {
        let lines: Vec<&str> = source.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim().strip_prefix("pub fn ") else {
                continue;
            };
            let rust = rest.split('(').next().unwrap_or_default();
            if rust.starts_with('$') {
                continue; // the derived methods, counted below
            }
            // A `js_name` in the attributes just above renames the method.
            let js = lines[i.saturating_sub(4)..i]
                .iter()
                .find_map(|l| l.split("js_name = ").nth(1))
                .and_then(|n| {
                    n.split(|c: char| !c.is_alphanumeric())
                        .find(|n| !n.is_empty())
                })
                .map(str::to_owned);
            methods.insert(snake(js.as_deref().unwrap_or(rust)));
        }
    }
    if derives_the_table(&read("web/src/api/calls.rs")) {
        methods.extend(table());
    }
    methods
}

/// Whether `source` expands the operation table into one `wasm_bindgen` method of
/// `Spool` per entry, named by the entry's `jsName`.
fn derives_the_table(source: &str) -> bool {
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let compact: String = code.split_whitespace().collect();
    let Some(body) = compact
        .find("macro_rules!js_calls{")
        .map(|start| &compact[start..])
    else {
        return false;
    };
    compact.contains("spool::for_each_op!(js_calls);")
        && body.contains("$name:ident$js:ident$Op:ident")
        && body.contains("#[wasm_bindgen]implSpool{$(")
        && body.contains("#[wasm_bindgen(js_name=$js")
        && body.contains("pubfn$name(")
        && body.contains("operation::<spool::ops::$Op>")
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn test_wit_exports_exactly_the_table_plus_the_parsers() {
    let mut expected = table();
    expected.insert("parse_import".to_owned());
    expected.insert("parse_import_slice".to_owned());
    assert_eq!(wit_functions(), expected);
}

#[test]
fn test_command_names_are_the_table() {
    let from_json: BTreeSet<String> = spool::ops::NAMES
        .iter()
        .map(|name| {
            let text = format!(r#"{{"op":"{name}"}}"#);
            // Missing fields are an error naming the call's own fields, never an
            // unknown variant: the enum has every name of the table.
            let err = spool::Command::from_json(&text).map(|c| c.name().to_owned());
            match err {
                Ok(name) => name,
                Err(e) => {
                    let message = e.to_string();
                    assert!(!message.contains("unknown variant"), "{name}: {message}");
                    (*name).to_owned()
                }
            }
        })
        .collect();
    assert_eq!(from_json, table());
    assert!(spool::Command::from_json(r#"{"op":"no_such_call"}"#).is_err());
}

/// Every field the table fills at the top level has its arm in `filled!`
/// (`host/src/client.rs`): without one, the generated `Spool` method would take the
/// field as an argument and then overwrite it.
#[test]
fn test_the_native_methods_know_every_field_the_table_fills() {
    let client = read("host/src/client.rs");
    let start = client
        .find("macro_rules! filled {")
        .expect("the filled! macro");
    let known: BTreeSet<&str> = client[start..]
        .lines()
        .take_while(|line| !line.starts_with('}'))
        .filter_map(|line| {
            let (name, rest) = line.trim().strip_prefix('(')?.split_once(" [")?;
            rest.starts_with(&format!("{name} ")).then_some(name)
        })
        .collect();
    assert!(known.contains("now_ms"), "arms read: {known:?}");
    for call in spool::ops::CALLS {
        for fill in call.fills.iter().filter(|f| !f.contains('.')) {
            assert!(
                known.contains(fill),
                "`{}` fills `{fill}`, which `filled!` has no arm for",
                call.name
            );
        }
    }
}

#[test]
fn test_the_javascript_class_has_a_method_for_every_call() {
    let methods = js_methods();
    let missing: Vec<String> = table().difference(&methods).cloned().collect();
    assert!(missing.is_empty(), "no JS method for {missing:?}");
}

/// The quoted names after `field` in each member of the TypeScript union `name`
/// (`op: "append_entry"` → `append_entry`), or its members when they are bare strings.
fn ts_union(name: &str, field: Option<&str>) -> BTreeSet<String> {
    let ts = read("web/src/ts.rs");
    let start = ts
        .find(&format!("export type {name} ="))
        .unwrap_or_else(|| panic!("no TypeScript type {name}"));
    let end = start + ts[start..].find(";\n/**").expect("the union ends");
    let union = &ts[start..end];
    let quoted = |text: &str| text.split('"').nth(1).map(str::to_owned);
    match field {
        Some(field) => union
            .split(&format!("{field}: "))
            .skip(1)
            .filter_map(quoted)
            .collect(),
        None => union.split('|').skip(1).filter_map(quoted).collect(),
    }
}

#[test]
fn test_the_typescript_command_union_has_every_call() {
    assert_eq!(ts_union("Command", Some("op")), table());
}

#[test]
fn test_error_codes_are_one_list_in_rust_wit_and_typescript() {
    let codes: BTreeSet<String> = spool::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    assert_eq!(codes.len(), spool::ErrorCode::ALL.len());
    for code in spool::ErrorCode::ALL {
        assert_eq!(
            serde_json::to_value(code).expect("serialize"),
            serde_json::Value::String(code.as_str().to_owned()),
            "{code:?}: its JSON is its name"
        );
    }
    let wit = read("wit/spool.wit");
    let start = wit.find("enum error-code {").expect("the error-code enum");
    let end = start + wit[start..].find('}').expect("the enum ends");
    let wit_codes: BTreeSet<String> = wit[start..end]
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.is_empty())
        .map(|l| l.trim_end_matches(',').replace('-', "_"))
        .collect();
    assert_eq!(wit_codes, codes, "the WIT error-code enum");
    assert_eq!(
        ts_union("SpoolErrorCode", None),
        codes,
        "TypeScript's SpoolErrorCode"
    );
}
