//! Coverage: does a summary keep every obligation? Missing ones are back-filled into
//! `critical_carry_forward` (and the rendered text), or, in blocking mode, a missing
//! critical one refuses the compaction.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::obligations::Obligation;

/// The verdict of a coverage check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// `pass`, `pass_with_backfill`, `unknown` (no obligations) or `fail_blocked`.
    pub status: String,
    /// The obligations the summary did not keep, as `kind: text`.
    pub missing: Vec<String>,
}

/// Checks `text` against `obligations`. Unless `blocking` refuses, missing obligations
/// are appended to `payload.critical_carry_forward` and to `text` (which then names every
/// obligation). Returns the verdict; on `fail_blocked`, `text` and `payload` are
/// untouched.
pub fn check(
    text: &mut String,
    payload: &mut Value,
    obligations: &[Obligation],
    blocking: bool,
) -> Coverage {
    if obligations.is_empty() {
        return Coverage {
            status: "unknown".into(),
            missing: Vec::new(),
        };
    }
    let missing: Vec<&Obligation> = obligations
        .iter()
        .filter(|o| !text.contains(o.text.as_str()))
        .collect();
    let described: Vec<String> = missing.iter().map(|o| o.describe()).collect();
    if missing.is_empty() {
        return Coverage {
            status: "pass".into(),
            missing: described,
        };
    }
    if blocking && missing.iter().any(|o| o.critical) {
        return Coverage {
            status: "fail_blocked".into(),
            missing: described,
        };
    }
    if !payload.is_object() {
        *payload = serde_json::json!({ "summary": payload.clone() });
    }
    let carried = payload
        .as_object_mut()
        .map(|map| {
            map.entry("critical_carry_forward")
                .or_insert_with(|| Value::Array(Vec::new()))
        })
        .and_then(Value::as_array_mut);
    if let Some(carried) = carried {
        carried.extend(described.iter().cloned().map(Value::String));
    }
    if !text.ends_with('\n') && !text.is_empty() {
        text.push('\n');
    }
    text.push_str("Critical carry-forward (back-filled):\n");
    for item in &described {
        text.push_str(&format!("- {item}\n"));
    }
    Coverage {
        status: "pass_with_backfill".into(),
        missing: described,
    }
}
