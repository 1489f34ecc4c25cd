//! Coverage: does a summary keep every obligation? Missing ones are back-filled into
//! `critical_carry_forward` (and the rendered text) within a size budget; each one the
//! budget cannot hold is reported as dropped. In blocking mode, a missing critical one
//! refuses the compaction.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::obligations::Obligation;

/// The verdict of a coverage check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// `pass`, `pass_with_backfill`, `partial_backfill` (some missing obligations did
    /// not fit and were dropped), `unknown` (no obligations) or `fail_blocked`.
    pub status: String,
    /// The obligations the summary did not keep, as `kind: text`: back-filled or dropped
    /// (every critical one, the first 64 others, then `kind: N more, not critical`).
    pub missing: Vec<String>,
    /// The missing obligations the budget could not hold: not in the summary at all
    /// (only in the archived entries).
    pub dropped: Vec<String>,
}

/// The tokens a summary may take, back-fill included: kept entries and summary together
/// fit in the `window` and stay below the `tokens_before` of the active transcript.
pub fn budget(window: u64, tokens_before: u64, tokens_kept: u64) -> u64 {
    window
        .min(tokens_before.saturating_sub(1))
        .saturating_sub(tokens_kept)
}

const HEADER: &str = "Critical carry-forward (back-filled):\n";

/// Checks `text` against `obligations`. Unless `blocking` refuses, missing obligations
/// are appended to `payload.critical_carry_forward` and to `text` while `text` stays
/// within `budget` tokens (the token measure: a quarter of its characters, rounded up),
/// critical ones first and then the newest first; the rest are listed in `dropped`.
/// Returns the verdict; on `fail_blocked`, `text` and `payload` are untouched.
pub fn check(
    text: &mut String,
    payload: &mut Value,
    obligations: &[Obligation],
    blocking: bool,
    budget: u64,
) -> Coverage {
    let verdict = |status: &str, missing: Vec<String>, dropped: Vec<String>| Coverage {
        status: status.into(),
        missing,
        dropped,
    };
    if obligations.is_empty() {
        return verdict("unknown", Vec::new(), Vec::new());
    }
    let texts: Vec<&str> = obligations.iter().map(|o| o.text.as_str()).collect();
    let held = super::contained::contained(text, &texts);
    let missing: Vec<&Obligation> = obligations
        .iter()
        .zip(held)
        .filter_map(|(o, held)| (!held).then_some(o))
        .collect();
    let described: Vec<String> = missing.iter().map(|o| o.describe()).collect();
    let all: Vec<usize> = (0..missing.len()).collect();
    if missing.is_empty() {
        return verdict("pass", Vec::new(), Vec::new());
    }
    if blocking && missing.iter().any(|o| o.critical) {
        return verdict(
            "fail_blocked",
            report(&all, &missing, &described),
            Vec::new(),
        );
    }
    // Characters the text may reach; a line is taken when it still fits, so a smaller
    // one after a large one that did not may.
    let limit = budget.saturating_mul(4);
    let separator = u64::from(!text.ends_with('\n') && !text.is_empty());
    let mut used = text.chars().count() as u64 + separator + HEADER.chars().count() as u64;
    let mut order: Vec<usize> = (0..missing.len()).collect();
    crate::order::sort_by_key(&mut order, |&i| {
        (!missing[i].critical, std::cmp::Reverse(i))
    });
    let mut carried = vec![false; missing.len()];
    for i in order {
        let line = described[i].chars().count() as u64 + 3;
        if used.saturating_add(line) <= limit {
            used += line;
            carried[i] = true;
        }
    }
    let left: Vec<usize> = (0..missing.len()).filter(|&i| !carried[i]).collect();
    let dropped = report(&left, &missing, &described);
    let backfill: Vec<&String> = (0..missing.len())
        .filter(|&i| carried[i])
        .map(|i| &described[i])
        .collect();
    if !backfill.is_empty() {
        if !payload.is_object() {
            *payload = serde_json::json!({ "summary": payload.clone() });
        }
        let list = payload.as_object_mut().and_then(|map| {
            map.entry("critical_carry_forward")
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
        });
        if let Some(list) = list {
            list.extend(backfill.iter().map(|item| Value::String((*item).clone())));
        }
        if separator == 1 {
            text.push('\n');
        }
        text.push_str(HEADER);
        for item in backfill {
            text.push_str(&format!("- {item}\n"));
        }
    }
    let status = if dropped.is_empty() {
        "pass_with_backfill"
    } else {
        "partial_backfill"
    };
    verdict(status, report(&all, &missing, &described), dropped)
}

/// Facts that are not critical a report names one by one; past them it counts the rest
/// per kind, so a report stays small on a session of any size.
const NAMED: usize = 64;

/// The report of the missing obligations at `which`: every critical one, the first
/// [`NAMED`] others, then per kind a line `kind: N more, not critical`.
fn report(which: &[usize], missing: &[&Obligation], described: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut named = 0;
    let mut more: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for &i in which {
        if missing[i].critical {
            out.push(described[i].clone());
        } else if named < NAMED {
            named += 1;
            out.push(described[i].clone());
        } else {
            *more.entry(missing[i].kind.label()).or_default() += 1;
        }
    }
    out.extend(
        more.into_iter()
            .map(|(kind, n)| format!("{kind}: {n} more, not critical")),
    );
    out
}
