//! What third-party component hosts read: README's "Any component host (WIT)" section
//! against the WIT, and the scenario vectors as the runners under `tests/hosts/` (jco in
//! Node, wasmtime-py) take them.

use crate::vectors;

use serde_json::{Value, json};
use spool::Command;

const WIT: &str = include_str!("../wit/spool.wit");
const README: &str = include_str!("../README.md");

/// The WIT variants of the API, each with the field the core's JSON tags its case in:
/// the WIT tags a variant outside its payload (`disposition::accepted(record)`), the
/// core's JSON inside the object (`{"disposition": "accepted", …}`).
const VARIANT_TAGS: &[(&str, &str)] = &[
    ("role-state-change", "action"),
    ("disposition", "disposition"),
    ("probe-outcome", "outcome"),
];

/// The WIT text between the `{` after `header` and its matching `}`.
fn block<'a>(text: &'a str, header: &str) -> &'a str {
    let at = text
        .find(header)
        .unwrap_or_else(|| panic!("no `{header}` in the WIT"));
    let open = at + text[at..].find('{').expect("a block opens");
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("`{header}` does not close");
}

/// The `name: func(…) …;` declarations of a text, comments dropped, whitespace collapsed.
fn funcs(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    code.split(';')
        .map(|decl| decl.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|decl| decl.contains(": func("))
        .map(|decl| {
            // What precedes the name in the same statement (a closing `}` of a record).
            let start = decl.rfind(['{', '}']).map_or(0, |i| i + 1);
            format!("{};", decl[start..].trim())
        })
        .collect()
}

/// README's "Any component host (WIT)" section.
fn readme_section() -> &'static str {
    let start = README
        .find("### Any component host (WIT)\n")
        .expect("README has the section `### Any component host (WIT)`");
    let rest = &README[start + 4..];
    &rest[..rest.find("\n### ").unwrap_or(rest.len())]
}

#[test]
fn test_readme_wit_section_declares_exactly_the_imports_of_the_wit() {
    let version = WIT
        .lines()
        .find_map(|l| l.strip_prefix("package spool:engine@"))
        .and_then(|v| v.strip_suffix(';'))
        .expect("the WIT names its package version");
    let world = block(WIT, "world spool");
    let imports: Vec<&str> = world
        .lines()
        .filter_map(|l| l.trim().strip_prefix("import "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert_eq!(
        imports,
        ["storage", "archive", "progress"],
        "the world's imports"
    );
    let section = readme_section();
    let fence = section
        .find("```wit\n")
        .expect("the section shows the imports in a ```wit block");
    let shown = &section[fence + "```wit\n".len()..];
    let shown = &shown[..shown.find("```").expect("the block closes")];
    let mut declared = Vec::new();
    for interface in &imports {
        let name = format!("spool:engine/{interface}@{version}");
        assert!(
            section.contains(&name),
            "README's section does not name the import {name}"
        );
        declared.extend(funcs(block(WIT, &format!("interface {interface} "))));
    }
    assert!(declared.len() >= 7, "the imports' functions: {declared:?}");
    let in_readme = funcs(shown);
    for f in &declared {
        assert!(
            in_readme.contains(f),
            "README's section does not show the import `{f}` as the WIT declares it \
             (it shows {in_readme:?})"
        );
    }
    for f in &in_readme {
        assert!(
            declared.contains(f),
            "README's section shows `{f}`, which no imported interface of the WIT declares"
        );
    }
    // Every other function of an imported interface named in prose exists too.
    for word in section.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        if word.ends_with("-reset-archive") {
            assert!(
                declared.iter().any(|f| f.starts_with(&format!("{word}: "))),
                "README's section names `{word}`, which the WIT does not declare"
            );
        }
    }
}

/// Every vector, each call as the core reads it (`Command`'s JSON, each field the vector
/// leaves to a default spelled out), and how the core's JSON tags each WIT variant: what
/// the runners that cross the WIT without the core's serde need. JSON, one step a line.
fn host_vectors() -> String {
    let line = |value: &Value| serde_json::to_string(value).expect("JSON");
    // Each with its cases, by which a host whose bindings give no variant names
    // (wasmtime-py) knows it.
    let tags: serde_json::Map<String, Value> = VARIANT_TAGS
        .iter()
        .map(|(variant, field)| {
            let cases: Vec<&str> = block(WIT, &format!("variant {variant} "))
                .lines()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty() && !l.starts_with("//"))
                .filter_map(|l| l.split(['(', ',']).next())
                .collect();
            (
                (*variant).to_owned(),
                json!({ "field": field, "cases": cases }),
            )
        })
        .collect();
    let mut out = String::from("{\n");
    out += &format!(
        "  \"generated\": {},\n",
        line(&json!(
            "by tests/hosts.rs from tests/vectors/ (SPOOL_HOST_VECTORS=PATH cargo test -p spool --test suite hosts::)"
        ))
    );
    out += &format!("  \"variant_tags\": {},\n", line(&Value::Object(tags)));
    out += "  \"vectors\": [\n";
    for (n, (file, text)) in vectors::FILES.iter().enumerate() {
        let vector: Value = serde_json::from_str(text).expect("vectors parse");
        out += &format!(
            "    {{\"file\": {}, \"vector\": {{\"name\": {}, \"description\": {}, \"steps\": [\n",
            line(&json!(file)),
            line(&vector["name"]),
            line(&vector["description"])
        );
        let steps = vector["steps"].as_array().expect("steps");
        for (index, step) in steps.iter().enumerate() {
            let mut step = step.clone();
            let call = step["call"].take();
            let command: Command = serde_json::from_value(call.clone())
                .unwrap_or_else(|e| panic!("{file} step {index}: {call} is no call: {e}"));
            step["call"] = serde_json::to_value(&command).expect("a call serializes");
            let comma = if index + 1 < steps.len() { "," } else { "" };
            out += &format!("      {}{comma}\n", line(&step));
        }
        let comma = if n + 1 < vectors::FILES.len() {
            ","
        } else {
            ""
        };
        out += &format!("    ]}}}}{comma}\n");
    }
    out + "  ]\n}\n"
}

/// Builds the vectors as the hosts under `tests/hosts/` read them (every call must parse
/// as a `Command`); with `SPOOL_HOST_VECTORS=PATH`, writes them there (what
/// `cargo xtask test-hosts` does before it runs the hosts).
#[test]
fn test_host_vectors_every_call_is_a_command() {
    let vectors = host_vectors();
    let parsed: Value = serde_json::from_str(&vectors).expect("the host vectors are JSON");
    assert_eq!(
        parsed["vectors"].as_array().map(Vec::len),
        Some(vectors::FILES.len()),
        "every vector is there"
    );
    if let Some(path) = std::env::var_os("SPOOL_HOST_VECTORS") {
        // The one write asked for, like ts_table's bless.
        #[allow(clippy::disallowed_methods)]
        std::fs::write(&path, &vectors).expect("write SPOOL_HOST_VECTORS");
    }
}

#[test]
fn test_variant_tags_name_every_api_variant_and_the_field_the_core_tags_it_in() {
    use spool::provider_fork::Disposition;
    use spool::provider_fork::capabilities::ProbeOutcome;
    use spool::resume::rules::RoleStateChange;

    let api = block(WIT, "interface api ");
    let variants: Vec<&str> = api
        .lines()
        .filter_map(|l| l.trim().strip_prefix("variant "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let listed: Vec<&str> = VARIANT_TAGS.iter().map(|(v, _)| *v).collect();
    assert_eq!(
        variants, listed,
        "VARIANT_TAGS lists every variant of the API, in order"
    );
    let samples = [
        (
            "role-state-change",
            serde_json::to_value(RoleStateChange::Keep),
            "keep",
        ),
        (
            "disposition",
            serde_json::to_value(Disposition::Unknown {
                error: "lost".into(),
            }),
            "unknown",
        ),
        (
            "probe-outcome",
            serde_json::to_value(ProbeOutcome::Failed {
                error: "down".into(),
            }),
            "failed",
        ),
    ];
    for (variant, value, case) in samples {
        let value = value.expect("serializes");
        let field = VARIANT_TAGS
            .iter()
            .find(|(v, _)| *v == variant)
            .map(|(_, f)| *f)
            .expect("listed");
        assert_eq!(
            value.get(field),
            Some(&json!(case)),
            "the core's JSON of a {variant} names its case in `{field}`: {value}"
        );
    }
}
