//! Scenario vectors: the documented behaviours as data (calls → expected outcomes), run
//! by every host. Included with `#[path = ".../tests/vectors/mod.rs"] mod vectors;`.
//!
//! A vector is a JSON file in this folder:
//!
//! ```json
//! { "name": "test_…", "description": "…",
//!   "steps": [ { "workspace": "default",            // optional
//!                "call": { "op": "append_entry", … },  // a `spool::Command`
//!                "expect": { "ok": <subset> } | { "error": "not_found" },
//!                "save": { "name": "/json/pointer" } } ] }  // optional
//! ```
//!
//! Every host (the native core, the component on SQLite and PostgreSQL, the browser)
//! runs every vector.
//!
//! `ok` matches as a subset: every field the vector names must be equal, arrays must
//! have the same length and match element by element, `null` must be `null`. A string
//! `"$name"` anywhere in a later call is replaced by the value saved under `name`.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::collections::BTreeMap;
use std::future::Future;

use serde::Deserialize;
use serde_json::Value;
use spool::Command;

/// Every vector file, by name. `test_every_vector_file_is_listed` keeps this complete.
pub const FILES: &[(&str, &str)] = &[
    (
        "create_append_read_page.json",
        include_str!("create_append_read_page.json"),
    ),
    (
        "append_entries_one_commit.json",
        include_str!("append_entries_one_commit.json"),
    ),
    (
        "transcript_order_is_insertion_order.json",
        include_str!("transcript_order_is_insertion_order.json"),
    ),
    (
        "duplicate_create_conflicts.json",
        include_str!("duplicate_create_conflicts.json"),
    ),
    (
        "unknown_key_not_found.json",
        include_str!("unknown_key_not_found.json"),
    ),
    (
        "same_timestamp_keeps_insertion_order.json",
        include_str!("same_timestamp_keeps_insertion_order.json"),
    ),
    (
        "page_cursors_both_directions.json",
        include_str!("page_cursors_both_directions.json"),
    ),
    (
        "invalid_arguments.json",
        include_str!("invalid_arguments.json"),
    ),
    (
        "list_sessions_by_recency.json",
        include_str!("list_sessions_by_recency.json"),
    ),
    (
        "workspaces_are_isolated.json",
        include_str!("workspaces_are_isolated.json"),
    ),
    (
        "reset_archives_per_workspace.json",
        include_str!("reset_archives_per_workspace.json"),
    ),
    (
        "get_or_create_and_intents.json",
        include_str!("get_or_create_and_intents.json"),
    ),
    ("reset_same_key.json", include_str!("reset_same_key.json")),
    (
        "reset_missing_key_creates.json",
        include_str!("reset_missing_key_creates.json"),
    ),
    (
        "resume_update_finish.json",
        include_str!("resume_update_finish.json"),
    ),
    (
        "append_accounting.json",
        include_str!("append_accounting.json"),
    ),
    ("usage_report.json", include_str!("usage_report.json")),
    (
        "entry_fields_round_trip.json",
        include_str!("entry_fields_round_trip.json"),
    ),
    ("truncate.json", include_str!("truncate.json")),
    ("rollback_turns.json", include_str!("rollback_turns.json")),
    ("pop_entry.json", include_str!("pop_entry.json")),
    (
        "delete_prune_cap.json",
        include_str!("delete_prune_cap.json"),
    ),
    ("context_states.json", include_str!("context_states.json")),
    ("list_filters.json", include_str!("list_filters.json")),
    (
        "compact_reduces_and_keeps_canonical.json",
        include_str!("compact_reduces_and_keeps_canonical.json"),
    ),
    (
        "compact_tool_boundary.json",
        include_str!("compact_tool_boundary.json"),
    ),
    (
        "compact_underreported_tokens.json",
        include_str!("compact_underreported_tokens.json"),
    ),
    (
        "compact_backfill.json",
        include_str!("compact_backfill.json"),
    ),
    (
        "compact_blocking.json",
        include_str!("compact_blocking.json"),
    ),
    (
        "compact_two_phase.json",
        include_str!("compact_two_phase.json"),
    ),
    (
        "persist_compaction_result.json",
        include_str!("persist_compaction_result.json"),
    ),
    (
        "compact_live_tail.json",
        include_str!("compact_live_tail.json"),
    ),
    (
        "compact_parallel_tool_results.json",
        include_str!("compact_parallel_tool_results.json"),
    ),
    (
        "compact_quality_gate.json",
        include_str!("compact_quality_gate.json"),
    ),
    ("flush_receipts.json", include_str!("flush_receipts.json")),
    (
        "resume_role_state.json",
        include_str!("resume_role_state.json"),
    ),
    (
        "resume_after_task.json",
        include_str!("resume_after_task.json"),
    ),
    (
        "resume_failed_resume_ends_token.json",
        include_str!("resume_failed_resume_ends_token.json"),
    ),
    (
        "resume_before_task.json",
        include_str!("resume_before_task.json"),
    ),
    (
        "provider_thread_binding.json",
        include_str!("provider_thread_binding.json"),
    ),
    (
        "branch_creates_child.json",
        include_str!("branch_creates_child.json"),
    ),
    (
        "branch_fork_transcript.json",
        include_str!("branch_fork_transcript.json"),
    ),
    (
        "branch_before_message_prefix_only.json",
        include_str!("branch_before_message_prefix_only.json"),
    ),
    (
        "branch_before_message_missing_id.json",
        include_str!("branch_before_message_missing_id.json"),
    ),
    (
        "branch_copies_compaction_summaries.json",
        include_str!("branch_copies_compaction_summaries.json"),
    ),
    (
        "branch_copies_compacted_archive.json",
        include_str!("branch_copies_compacted_archive.json"),
    ),
    (
        "branch_skipped_over_budget.json",
        include_str!("branch_skipped_over_budget.json"),
    ),
    (
        "branch_budget_counts_summaries.json",
        include_str!("branch_budget_counts_summaries.json"),
    ),
    (
        "branch_isolation_parent_writes.json",
        include_str!("branch_isolation_parent_writes.json"),
    ),
    (
        "branch_isolation_child_writes.json",
        include_str!("branch_isolation_child_writes.json"),
    ),
    ("branch_chains.json", include_str!("branch_chains.json")),
    ("turns_lifecycle.json", include_str!("turns_lifecycle.json")),
    (
        "bounds_and_visible_keys.json",
        include_str!("bounds_and_visible_keys.json"),
    ),
    ("turns_list.json", include_str!("turns_list.json")),
    (
        "fork_accepted_commits_child.json",
        include_str!("fork_accepted_commits_child.json"),
    ),
    (
        "fork_rejected_and_unknown.json",
        include_str!("fork_rejected_and_unknown.json"),
    ),
    (
        "fork_idempotency_and_barrier.json",
        include_str!("fork_idempotency_and_barrier.json"),
    ),
    (
        "fork_commits_frozen_snapshot.json",
        include_str!("fork_commits_frozen_snapshot.json"),
    ),
    (
        "fork_snapshot_and_origin.json",
        include_str!("fork_snapshot_and_origin.json"),
    ),
    (
        "fork_get_after_child_deleted.json",
        include_str!("fork_get_after_child_deleted.json"),
    ),
    (
        "fork_restart_recovery.json",
        include_str!("fork_restart_recovery.json"),
    ),
    (
        "fork_target_context_policy.json",
        include_str!("fork_target_context_policy.json"),
    ),
    (
        "fork_provider_state_binding.json",
        include_str!("fork_provider_state_binding.json"),
    ),
    (
        "fork_boundary_errors.json",
        include_str!("fork_boundary_errors.json"),
    ),
    (
        "fork_capability_projection.json",
        include_str!("fork_capability_projection.json"),
    ),
    (
        "search_terms_phrases_prefixes_filters.json",
        include_str!("search_terms_phrases_prefixes_filters.json"),
    ),
    (
        "search_pages_by_cursor.json",
        include_str!("search_pages_by_cursor.json"),
    ),
    (
        "search_compacted_and_branched.json",
        include_str!("search_compacted_and_branched.json"),
    ),
    (
        "search_never_returns_removed_entries.json",
        include_str!("search_never_returns_removed_entries.json"),
    ),
    (
        "search_workspaces_are_isolated.json",
        include_str!("search_workspaces_are_isolated.json"),
    ),
    (
        "streamed_entries.json",
        include_str!("streamed_entries.json"),
    ),
    (
        "search_index_backfill.json",
        include_str!("search_index_backfill.json"),
    ),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vector {
    pub name: String,
    pub description: String,
    pub steps: Vec<VectorStep>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorStep {
    #[serde(default = "default_workspace")]
    pub workspace: String,
    pub call: Value,
    pub expect: Expect,
    #[serde(default)]
    pub save: BTreeMap<String, String>,
}

fn default_workspace() -> String {
    "default".into()
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Expect {
    Ok(Value),
    Error(ErrorSpec),
}

/// An expected failure: its reason code, and optionally text its message must contain.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ErrorSpec {
    Code(String),
    Detail {
        code: String,
        message_contains: String,
    },
}

impl ErrorSpec {
    fn check(&self, failure: &Failure) -> Result<(), String> {
        let (code, needle) = match self {
            ErrorSpec::Code(code) => (code, None),
            ErrorSpec::Detail {
                code,
                message_contains,
            } => (code, Some(message_contains)),
        };
        if *code != failure.code {
            return Err(format!(
                "expected error {code}, got {} ({})",
                failure.code, failure.message
            ));
        }
        match needle {
            Some(needle) if !failure.message.contains(needle.as_str()) => Err(format!(
                "error message {:?} does not contain {needle:?}",
                failure.message
            )),
            _ => Ok(()),
        }
    }

    fn code(&self) -> &str {
        match self {
            ErrorSpec::Code(code) | ErrorSpec::Detail { code, .. } => code,
        }
    }
}

/// A failed call as a host reports it: the reason code and the message.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

/// What a host implements to run vectors: perform one call, return its JSON result.
pub trait VectorHost {
    fn exec(
        &mut self,
        workspace: &str,
        command: Command,
    ) -> impl Future<Output = Result<Value, Failure>>;
}

/// Runs a future that never waits: the vectors through a synchronous host (the native
/// core, the component) complete without a real executor.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("a synchronous host never waits"),
    }
}

/// Parses every vector.
pub fn all() -> Vec<Vector> {
    FILES
        .iter()
        .map(|(file, text)| {
            serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("vector {file} does not parse: {e}"))
        })
        .collect()
}

fn substitute(value: &Value, saved: &BTreeMap<String, Value>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) if s.starts_with('$') => saved
            .get(&s[1..])
            .cloned()
            .ok_or_else(|| format!("nothing saved under `{}`", &s[1..]))?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, saved))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, saved)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

/// Whether `actual` matches the subset `expected`; on mismatch, where and how.
pub fn matches(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => {
            for (k, v) in want {
                let here = format!("{path}/{k}");
                match have.get(k) {
                    Some(a) => matches(v, a, &here)?,
                    None if v.is_null() => {}
                    None => return Err(format!("{here}: missing, expected {v}")),
                }
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(have)) => {
            if want.len() != have.len() {
                return Err(format!(
                    "{path}: expected {} items, got {}: {actual}",
                    want.len(),
                    have.len()
                ));
            }
            for (i, (w, h)) in want.iter().zip(have).enumerate() {
                matches(w, h, &format!("{path}/{i}"))?;
            }
            Ok(())
        }
        (w, h) if w == h => Ok(()),
        // JSON has one number type: `0.0` from one host and `0` from another are equal.
        (Value::Number(w), Value::Number(h)) if w.as_f64() == h.as_f64() => Ok(()),
        (w, h) => Err(format!("{path}: expected {w}, got {h}")),
    }
}

/// Runs one vector on a fresh host; `Err` says which step failed and why.
pub async fn run<H: VectorHost>(host: &mut H, vector: &Vector) -> Result<(), String> {
    let mut saved = BTreeMap::new();
    for (index, step) in vector.steps.iter().enumerate() {
        let at = format!("{} step {index}", vector.name);
        let call = substitute(&step.call, &saved).map_err(|e| format!("{at}: {e}"))?;
        let command: Command = serde_json::from_value(call.clone())
            .map_err(|e| format!("{at}: bad call {call}: {e}"))?;
        let outcome = host.exec(&step.workspace, command).await;
        match (&step.expect, outcome) {
            (Expect::Ok(want), Ok(have)) => {
                matches(want, &have, "").map_err(|e| format!("{at} ({call}): {e}"))?;
                for (name, pointer) in &step.save {
                    let value = have
                        .pointer(pointer)
                        .ok_or_else(|| format!("{at}: nothing at {pointer} in {have}"))?;
                    saved.insert(name.clone(), value.clone());
                }
            }
            (Expect::Error(spec), Err(failure)) => {
                spec.check(&failure)
                    .map_err(|e| format!("{at} ({call}): {e}"))?;
            }
            (Expect::Error(spec), Ok(have)) => {
                return Err(format!(
                    "{at} ({call}): expected error {}, got ok {have}",
                    spec.code()
                ));
            }
            (Expect::Ok(_), Err(failure)) => {
                return Err(format!(
                    "{at} ({call}): expected ok, got {} ({})",
                    failure.code, failure.message
                ));
            }
        }
    }
    Ok(())
}

/// Runs every vector, each on a fresh host from `fresh`; panics listing all failures.
/// Returns how many vectors ran.
pub async fn run_all<H: VectorHost, F: Future<Output = H>>(mut fresh: impl FnMut() -> F) -> usize {
    let vectors = all();
    let mut failures = Vec::new();
    for vector in &vectors {
        let mut host = fresh().await;
        if let Err(e) = run(&mut host, vector).await {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} vector(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    vectors.len()
}
