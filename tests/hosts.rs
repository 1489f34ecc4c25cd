//! What third-party component hosts read: README's "Any component host (WIT)" section
//! against the WIT, and the scenario vectors as the runners under `tests/hosts/` (jco in
//! Node, wasmtime-py) take them.

use crate::vectors;

use serde_json::{Value, json};
use spool::Command;

const WIT: &str = include_str!("../wit/spool.wit");
const README: &str = include_str!("../README.md");
const HOST_VECTORS: &str = include_str!("hosts/vectors.json");

/// The scenario vectors the runners under `tests/hosts/` run: every one whose calls
/// cross the WIT as records, enums, options, lists and JSON text only. Left out: the
/// vectors whose calls or answers hold a WIT variant with data (`role-state-change`,
/// `disposition`, `probe-outcome`), which the core's JSON tags inside the object
/// (`action`, `disposition`, `outcome`) where the WIT tags it outside.
const HOST_VECTOR_FILES: &[&str] = &[
    "create_append_read_page.json",
    "append_entries_one_commit.json",
    "transcript_order_is_insertion_order.json",
    "duplicate_create_conflicts.json",
    "unknown_key_not_found.json",
    "same_timestamp_keeps_insertion_order.json",
    "page_cursors_both_directions.json",
    "invalid_arguments.json",
    "list_sessions_by_recency.json",
    "workspaces_are_isolated.json",
    "reset_archives_per_workspace.json",
    "get_or_create_and_intents.json",
    "reset_same_key.json",
    "reset_missing_key_creates.json",
    "resume_update_finish.json",
    "append_accounting.json",
    "entry_fields_round_trip.json",
    "truncate.json",
    "rollback_turns.json",
    "delete_prune_cap.json",
    "context_states.json",
    "list_filters.json",
    "compact_reduces_and_keeps_canonical.json",
    "compact_tool_boundary.json",
    "compact_underreported_tokens.json",
    "compact_backfill.json",
    "compact_blocking.json",
    "compact_two_phase.json",
    "persist_compaction_result.json",
    "compact_live_tail.json",
    "compact_parallel_tool_results.json",
    "compact_quality_gate.json",
    "flush_receipts.json",
    "provider_thread_binding.json",
    "branch_creates_child.json",
    "branch_fork_transcript.json",
    "branch_before_message_prefix_only.json",
    "branch_before_message_missing_id.json",
    "branch_copies_compaction_summaries.json",
    "branch_copies_compacted_archive.json",
    "branch_skipped_over_budget.json",
    "branch_budget_counts_summaries.json",
    "branch_isolation_parent_writes.json",
    "branch_isolation_child_writes.json",
    "branch_chains.json",
    "turns_lifecycle.json",
    "bounds_and_visible_keys.json",
    "turns_list.json",
    "search_terms_phrases_prefixes_filters.json",
    "search_pages_by_cursor.json",
    "search_compacted_and_branched.json",
    "search_never_returns_removed_entries.json",
    "search_workspaces_are_isolated.json",
    "streamed_entries.json",
    "search_index_backfill.json",
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

/// The selected vectors, every call as the core reads it (`Command`'s JSON, each field
/// the vector leaves to a default spelled out), for the runners that cross the WIT
/// without the core's serde.
fn host_vectors() -> Value {
    let parsed: Vec<(&str, Value)> = vectors::FILES
        .iter()
        .map(|(file, text)| (*file, serde_json::from_str(text).expect("vectors parse")))
        .collect();
    let mut out = Vec::new();
    for &file in HOST_VECTOR_FILES {
        let (_, vector) = parsed
            .iter()
            .find(|(f, _)| *f == file)
            .unwrap_or_else(|| panic!("{file} is not a vector (tests/vectors/mod.rs FILES)"));
        let mut vector = vector.clone();
        for (index, step) in vector["steps"]
            .as_array_mut()
            .expect("steps")
            .iter_mut()
            .enumerate()
        {
            let call = step["call"].take();
            let command: Command = serde_json::from_value(call.clone())
                .unwrap_or_else(|e| panic!("{file} step {index}: {call} is no call: {e}"));
            step["call"] = serde_json::to_value(&command).expect("a call serializes");
        }
        out.push(json!({ "file": file, "vector": vector }));
    }
    json!({
        "generated": "by tests/hosts.rs from tests/vectors/ (SPOOL_BLESS=1 cargo test -p spool --test suite hosts::)",
        "vectors": out,
    })
}

#[test]
fn test_host_vectors_are_the_selected_vectors_as_the_core_reads_them() {
    let want = serde_json::to_string_pretty(&host_vectors()).expect("JSON") + "\n";
    if std::env::var_os("SPOOL_BLESS").is_some() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosts/vectors.json");
        // A write the developer asked for (SPOOL_BLESS), like ts_table's.
        #[allow(clippy::disallowed_methods)]
        std::fs::write(&path, &want).expect("write tests/hosts/vectors.json");
        return;
    }
    assert!(
        HOST_VECTORS == want,
        "tests/hosts/vectors.json is stale: rerun with SPOOL_BLESS=1"
    );
}
