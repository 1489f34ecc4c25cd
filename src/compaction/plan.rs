//! Where to cut: which oldest entries a compaction removes.
//!
//! Entries are grouped into units that are never split: an assistant message with tool
//! calls together with the tool results that answer it; every other entry on its own.
//! Units are kept from the newest backwards while they fit in half the context window
//! (after any protected recent messages); everything before the first kept unit is
//! removed. A kept tool result therefore always keeps its tool call, and the first kept
//! entry may be that assistant message. When even the newest unit does not fit, it is
//! compacted too.

use serde::{Deserialize, Serialize};

use super::tokens::entry_tokens;
use crate::model::{Entry, Role};

/// How compaction decides and checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompactionConfig {
    /// Compact when `tokens × safety_margin > window` (default 1.2).
    pub safety_margin: f64,
    /// Refuse to write a summary that misses a critical obligation (default false:
    /// missing obligations are back-filled instead).
    pub coverage_blocking: bool,
    /// The newest this-many entries are always kept (default 0).
    pub protected_recent: u32,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            safety_margin: 1.2,
            coverage_blocking: false,
            protected_recent: 0,
        }
    }
}

/// The outcome of planning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to do, and why (`below_threshold`, `nothing_to_compact`).
    Skip {
        /// The skip reason.
        reason: &'static str,
        /// Tokens of the active transcript.
        tokens_before: u64,
    },
    /// Remove the oldest `removed` entries.
    Cut {
        /// How many of the oldest entries go.
        removed: usize,
        /// Tokens of the active transcript.
        tokens_before: u64,
        /// Tokens of the entries kept.
        tokens_kept: u64,
    },
}

/// The tool call ids an assistant's `tool_calls` names (`id`, `tool_use_id` or `call_id`
/// of each call).
pub fn call_ids(tool_calls: &serde_json::Value) -> Vec<String> {
    let calls: Vec<&serde_json::Value> = match tool_calls {
        serde_json::Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    calls
        .into_iter()
        .filter_map(|call| {
            ["id", "tool_use_id", "call_id"]
                .iter()
                .find_map(|field| call.get(field).and_then(|v| v.as_str()))
                .map(str::to_owned)
        })
        .collect()
}

/// Splits entries into unsplittable units: `(first index, length)`.
fn units(entries: &[Entry]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut open_calls: Vec<String> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let answers_open_call = entry.role == Role::Tool
            && entry
                .tool_call_id
                .as_ref()
                .is_none_or(|id| open_calls.contains(id))
            && !open_calls.is_empty();
        match out.last_mut() {
            Some((_, len)) if answers_open_call => *len += 1,
            _ => {
                open_calls = match (&entry.role, &entry.tool_calls) {
                    (Role::Assistant, Some(calls)) => call_ids(calls),
                    _ => Vec::new(),
                };
                out.push((i, 1));
            }
        }
    }
    out
}

/// Plans a compaction of `entries` (the active transcript, oldest first) for a context
/// window of `window` tokens.
pub fn plan(entries: &[Entry], window: u64, config: &CompactionConfig) -> Plan {
    let tokens: Vec<u64> = entries.iter().map(entry_tokens).collect();
    let tokens_before = crate::validate::total(tokens.iter().copied());
    if (tokens_before as f64) * config.safety_margin <= window as f64 {
        return Plan::Skip {
            reason: "below_threshold",
            tokens_before,
        };
    }
    let budget = window / 2;
    let protected_from = entries
        .len()
        .saturating_sub(config.protected_recent as usize);
    let mut kept_from = entries.len();
    let mut tokens_kept = 0u64;
    for (start, len) in units(entries).into_iter().rev() {
        let unit = crate::validate::total(tokens[start..start + len].iter().copied());
        let protected = start + len > protected_from;
        if !protected && crate::validate::add(tokens_kept, unit) > budget {
            break;
        }
        tokens_kept = crate::validate::add(tokens_kept, unit);
        kept_from = start;
    }
    if kept_from == 0 {
        return Plan::Skip {
            reason: "nothing_to_compact",
            tokens_before,
        };
    }
    Plan::Cut {
        removed: kept_from,
        tokens_before,
        tokens_kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(role: Role, content: &str, tokens: u64) -> Entry {
        Entry {
            id: 0,
            message_id: String::new(),
            role,
            content: content.into(),
            created_at: 0,
            token_count: Some(tokens),
            tool_calls: None,
            tool_call_id: None,
            turn_id: None,
            turn_usage: None,
        }
    }

    fn exact() -> CompactionConfig {
        CompactionConfig {
            safety_margin: 1.0,
            ..CompactionConfig::default()
        }
    }

    #[test]
    fn test_below_the_trigger_nothing_happens() {
        let entries = vec![e(Role::User, "hi", 5)];
        assert!(matches!(
            plan(&entries, 100_000, &CompactionConfig::default()),
            Plan::Skip {
                reason: "below_threshold",
                tokens_before: 5
            }
        ));
        // The safety margin counts: 90 × 1.2 > 100.
        let entries = vec![e(Role::User, "a", 45), e(Role::User, "b", 45)];
        assert!(matches!(
            plan(&entries, 100, &CompactionConfig::default()),
            Plan::Cut { .. }
        ));
        assert!(matches!(plan(&entries, 100, &exact()), Plan::Skip { .. }));
    }

    #[test]
    fn test_tool_call_and_result_are_never_split() {
        let mut call = e(Role::Assistant, "calling tool", 4);
        call.tool_calls = Some(serde_json::json!([{"id": "call_1", "type": "function"}]));
        let mut result = e(Role::Tool, "tool result", 4);
        result.tool_call_id = Some("call_1".into());
        let entries = vec![
            e(Role::User, "old context", 300),
            call,
            result,
            e(Role::User, "next question", 3),
            e(Role::Assistant, "answer", 3),
        ];
        match plan(&entries, 100, &exact()) {
            Plan::Cut { removed, .. } => assert_eq!(removed, 1),
            other => panic!("expected a cut, got {other:?}"),
        }
        // With room for only the newest two, the pair goes together, not half of it.
        match plan(&entries, 14, &exact()) {
            Plan::Cut { removed, .. } => assert_eq!(removed, 3),
            other => panic!("expected a cut, got {other:?}"),
        }
    }

    #[test]
    fn test_an_oversized_newest_entry_is_compacted_too() {
        let entries = vec![e(Role::Assistant, "huge", 5000)];
        match plan(&entries, 50, &exact()) {
            Plan::Cut {
                removed,
                tokens_kept,
                ..
            } => assert_eq!((removed, tokens_kept), (1, 0)),
            other => panic!("expected a cut, got {other:?}"),
        }
    }

    #[test]
    fn test_protected_recent_entries_stay_even_over_budget() {
        let entries: Vec<Entry> = (0..6)
            .map(|i| e(Role::User, &format!("m{i}"), 100))
            .collect();
        let config = CompactionConfig {
            protected_recent: 3,
            ..exact()
        };
        match plan(&entries, 200, &config) {
            Plan::Cut { removed, .. } => assert_eq!(removed, 3),
            other => panic!("expected a cut, got {other:?}"),
        }
        let all = CompactionConfig {
            protected_recent: 6,
            ..exact()
        };
        assert!(matches!(
            plan(&entries, 200, &all),
            Plan::Skip {
                reason: "nothing_to_compact",
                ..
            }
        ));
    }
}
