//! Where to cut: which oldest entries a compaction removes.
//!
//! Entries are grouped into units that are never split: a tool result belongs with the
//! assistant entry whose `tool_calls` names its `tool_call_id` (found by id, not by
//! position: four parallel calls followed by their four results are one unit, and so is
//! everything between a call and its result); every other entry is a unit on its own.
//!
//! The live protocol state stays raw: the unit of the newest tool call that no result
//! answers yet (unless a user message followed it: an abandoned call is summarized), and
//! the last unit when it holds a failing tool result (the error the agent is about to
//! react to), and the unit of the first entry still being written (in progress), are
//! kept with everything after them, even over half the window. When that live tail alone fills the window, nothing can be compacted without
//! hiding it: the plan is skipped (`protected_tail_exhausts_compaction_window`).
//!
//! Other units are kept from the newest backwards while they fit in half the context
//! window (after the live tail and any protected recent messages); everything before the
//! first kept unit is removed. A kept tool result therefore always keeps its tool call,
//! and the first kept entry may be that assistant message. When even the newest unit
//! that is not live does not fit, it is compacted too.

use serde::{Deserialize, Serialize};

use std::collections::{BTreeMap, BTreeSet};

use super::obligations::failed_result;
use super::tokens::entry_tokens;
use crate::types::{Entry, Role};

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
    /// Nothing to do, and why (`below_threshold`, `nothing_to_compact`,
    /// `protected_tail_exhausts_compaction_window`).
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

pub use super::calls::call_ids;

/// What planning reads of one entry: a few dozen bytes however large the entry, so a
/// compaction plans a transcript of any size from one pass over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Its tokens ([`entry_tokens`]).
    pub tokens: u64,
    /// Its role.
    pub role: Role,
    /// For an assistant entry with tool calls, the ids they name (possibly none).
    pub calls: Option<Box<[String]>>,
    /// The tool call a tool result answers.
    pub answers: Option<Box<str>>,
    /// A tool result that reports a failure.
    pub fails: bool,
    /// An entry still being written ([`crate::begin_entry`]).
    pub in_progress: bool,
}

impl Shape {
    /// The shape of `entry`.
    pub fn of(entry: &Entry) -> Shape {
        Shape {
            tokens: entry_tokens(entry),
            role: entry.role,
            calls: calls_tools(entry).then(|| {
                entry
                    .tool_calls
                    .as_ref()
                    .map(call_ids)
                    .unwrap_or_default()
                    .into_boxed_slice()
            }),
            answers: entry.tool_call_id.as_deref().map(Into::into),
            fails: failed_result(entry),
            in_progress: entry.status == Some(crate::types::EntryStatus::InProgress),
        }
    }
}

/// The units of a transcript and what is live in it.
struct Units {
    /// Unsplittable units, oldest first: `(first index, length)`.
    spans: Vec<(usize, usize)>,
    /// Index of the newest assistant entry with a tool call no result answers.
    newest_pending: Option<usize>,
}

/// Whether `entry` is an assistant message with at least one tool call.
fn calls_tools(entry: &Entry) -> bool {
    let calls = match &entry.tool_calls {
        Some(serde_json::Value::Array(items)) => items.len(),
        Some(serde_json::Value::Null) | None => 0,
        Some(_) => 1,
    };
    entry.role == Role::Assistant && calls > 0
}

/// Groups entries into units. A result joins the newest earlier call with its id; a
/// result without an id joins the entry just before it when that one is a tool call or
/// result. A call and its result make every entry between them one unit.
fn units(shapes: &[Shape]) -> Units {
    // The newest call of each id, and which calls (index, id) some result answers.
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut answered: BTreeSet<(usize, &str)> = BTreeSet::new();
    let mut has_result = vec![false; shapes.len()];
    // reach[i]: the newest entry that must stay in the same unit as entry i.
    let mut reach: Vec<usize> = (0..shapes.len()).collect();
    for (j, shape) in shapes.iter().enumerate() {
        if shape.role == Role::Tool {
            let call = match shape.answers.as_deref() {
                Some(id) => calls.get(id).copied().inspect(|&i| {
                    answered.insert((i, id));
                }),
                None => j
                    .checked_sub(1)
                    .filter(|&i| shapes[i].calls.is_some() || shapes[i].role == Role::Tool),
            };
            if let Some(i) = call {
                reach[i] = reach[i].max(j);
                has_result[i] = true;
            }
        }
        for id in shape.calls.iter().flatten() {
            calls.insert(id, j);
        }
    }
    let newest_pending = shapes.iter().enumerate().rev().find_map(|(i, shape)| {
        let ids = shape.calls.as_ref()?;
        let pending = if ids.is_empty() {
            !has_result[i]
        } else {
            ids.iter().any(|id| !answered.contains(&(i, id.as_str())))
        };
        pending.then_some(i)
    });
    let mut spans = Vec::new();
    let (mut start, mut end) = (0, 0);
    for (i, &r) in reach.iter().enumerate() {
        end = end.max(r);
        if end == i {
            spans.push((start, i + 1 - start));
            start = i + 1;
        }
    }
    Units {
        spans,
        newest_pending,
    }
}

impl Units {
    /// Where the live tail begins: the unit of the newest pending tool call (unless a
    /// user message came after it: then the call was abandoned, and the summary carries
    /// its id), or the last unit when one of its tool results failed (whichever is older).
    fn live_from(&self, shapes: &[Shape]) -> Option<usize> {
        let unit_of = |index: usize| {
            self.spans
                .iter()
                .find(|(start, len)| (*start..start + len).contains(&index))
                .map(|(start, _)| *start)
        };
        let pending = self
            .newest_pending
            .filter(|&i| shapes[i..].iter().all(|e| e.role != Role::User))
            .and_then(unit_of);
        let failing = self.spans.last().and_then(|&(start, len)| {
            shapes[start..start + len]
                .iter()
                .any(|e| e.fails)
                .then_some(start)
        });
        // An entry still being written is the live edge: it and what follows stay.
        let writing = shapes.iter().position(|s| s.in_progress).and_then(unit_of);
        pending.into_iter().chain(failing).chain(writing).min()
    }
}

/// Plans a compaction of `entries` (the active transcript, oldest first) for a context
/// window of `window` tokens.
pub fn plan(entries: &[Entry], window: u64, config: &CompactionConfig) -> Plan {
    let shapes: Vec<Shape> = entries.iter().map(Shape::of).collect();
    plan_shapes(&shapes, window, config)
}

/// [`plan`] from the entries' [`Shape`]s.
pub fn plan_shapes(shapes: &[Shape], window: u64, config: &CompactionConfig) -> Plan {
    let total = |shapes: &[Shape]| crate::engine::validate::total(shapes.iter().map(|s| s.tokens));
    let tokens_before = total(shapes);
    if (tokens_before as f64) * config.safety_margin <= window as f64 {
        return Plan::Skip {
            reason: "below_threshold",
            tokens_before,
        };
    }
    let units = units(shapes);
    let live_from = units.live_from(shapes).unwrap_or(shapes.len());
    let live = total(&shapes[live_from..]);
    if live >= window && live_from < shapes.len() {
        return Plan::Skip {
            reason: "protected_tail_exhausts_compaction_window",
            tokens_before,
        };
    }
    let budget = window / 2;
    let protected_from = shapes
        .len()
        .saturating_sub(config.protected_recent as usize);
    let mut kept_from = shapes.len();
    let mut tokens_kept = 0u64;
    for &(start, len) in units.spans.iter().rev() {
        let unit = total(&shapes[start..start + len]);
        let protected = start + len > protected_from || start >= live_from;
        if !protected && crate::engine::validate::add(tokens_kept, unit) > budget {
            break;
        }
        tokens_kept = crate::engine::validate::add(tokens_kept, unit);
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
#[path = "tests/plan.rs"]
mod tests;
