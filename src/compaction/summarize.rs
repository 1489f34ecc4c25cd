//! The built-in deterministic summarizer: a `structured_v1` payload and its rendered
//! text, from the facts of the entries a compaction removes. Used when no LLM is plugged
//! in (`summary_source` `fallback`).
//!
//! The summary is shaped for an agent to continue from: task, constraints, latest
//! request, current state, files touched (with what happened to each), commands and how
//! their last run ended, unresolved failures, rejected calls, pending calls, next step;
//! then decisions, identifiers, questions, resolved failures, answered tool call ids and
//! references to large tool payloads (size, hash, preview: never copied whole).
//!
//! Every fact is written whole, never cut. The summary fits the size budget it is given:
//! when everything does not fit, the least useful facts are left out first (answered
//! ids, payload references, files only read, identifiers, …, the oldest of a kind
//! first), and critical facts only when they alone exceed it (earlier summaries' facts,
//! files, failures, pending calls, constraints, and last the task and the latest
//! request; the oldest first).
//! Coverage then reports each one left out.

use serde_json::{Value, json};

use super::obligations::{Facts, ObligationKind};
use crate::types::{Entry, Role};

/// The payload's schema version.
pub const SCHEMA_VERSION: u64 = 1;
/// Characters of a tool payload shown as its preview.
const PREVIEW: usize = 60;
/// Tool output longer than this is represented by size, hash and preview.
const LARGE: usize = 400;

/// FNV-1a, 64 bits, as 16 hex digits: a stable fingerprint of a payload.
pub fn fingerprint(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn payload_ref(label: &str, text: &str) -> Value {
    let preview: String = text.chars().take(PREVIEW).collect();
    json!({
        "what": label,
        "size": text.len(),
        "hash": fingerprint(text.as_bytes()),
        "preview": preview,
    })
}

/// References to the large tool payloads of one entry (its calls' arguments, its
/// result).
pub(crate) fn large_payloads(entry: &Entry) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(calls) = &entry.tool_calls {
        let text = calls.to_string();
        if text.len() > LARGE {
            out.push(payload_ref("tool_calls", &text));
        }
    }
    if entry.role == Role::Tool && entry.content.len() > LARGE {
        out.push(payload_ref("tool_result", &entry.content));
    }
    out
}

/// The sections of a summary: payload field, rendered label, whether the field is one
/// string (the first item) rather than a list.
const SECTIONS: &[(&str, &str, bool)] = &[
    ("task", "Task", false),
    ("goal", "Goal", true),
    ("requests", "Other requests", false),
    ("constraints", "Constraints", false),
    ("latest_request", "Latest request", true),
    ("current_status", "Current state", true),
    ("files", "Files", false),
    ("commands", "Commands (last result)", false),
    ("failures", "Failures unresolved", false),
    ("rejected", "Rejected by the user", false),
    ("pending_tool_ids", "Pending tool calls", false),
    ("next_action", "Next step", true),
    ("decisions", "Decisions", false),
    ("identifiers", "Identifiers", false),
    ("questions", "Open questions", false),
    ("do_not_repeat", "Resolved failures (do not repeat)", false),
    ("carried", "Carried from earlier summaries", false),
    ("tool_calls", "Answered tool calls", false),
    ("tool_payloads", "Large tool payloads", false),
];

/// One line a summary may hold.
struct Item {
    section: usize,
    value: Value,
    /// 0 for a critical fact; the larger, the sooner it is left out.
    rank: u8,
    /// Order within its section (older first).
    order: usize,
    chars: usize,
}

fn section(name: &str) -> usize {
    SECTIONS.iter().position(|(n, ..)| *n == name).unwrap_or(0)
}

fn rendered(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Object(p) => format!(
            "{} ({} bytes, fnv64 {}): {}…",
            p.get("what").and_then(Value::as_str).unwrap_or("payload"),
            p.get("size").cloned().unwrap_or(Value::Null),
            p.get("hash").and_then(Value::as_str).unwrap_or_default(),
            p.get("preview").and_then(Value::as_str).unwrap_or_default()
        ),
        other => other.to_string(),
    }
}

struct Builder {
    items: Vec<Item>,
    /// Items per section so far.
    counts: [usize; SECTIONS.len()],
}

impl Builder {
    fn push(&mut self, name: &str, value: Value, rank: u8) {
        let s = section(name);
        let order = self.counts[s];
        self.counts[s] += 1;
        let chars = rendered(&value).chars().count() + 3;
        self.items.push(Item {
            section: s,
            value,
            rank,
            order,
            chars,
        });
    }

    fn text(&mut self, name: &str, text: &str, critical: bool, rank: u8) {
        self.push(
            name,
            Value::String(text.to_owned()),
            if critical { 0 } else { rank },
        );
    }
}

fn header(removed: u64) -> String {
    format!("Summary of {removed} earlier messages\n")
}

/// Builds the `structured_v1` payload for the facts of the removed entries, within
/// `budget_chars` characters of rendered text (its `critical_carry_forward` starts
/// empty: coverage fills it).
pub fn summarize(facts: &Facts, budget_chars: usize) -> Value {
    use ObligationKind as K;
    let mut b = Builder {
        items: Vec::new(),
        counts: [0; SECTIONS.len()],
    };
    let of = |kind: K| facts.obligations.iter().filter(move |o| o.kind == kind);
    let latest = of(K::LatestRequest).next_back();
    // The latest request is written once, under its own label, when it is also a task.
    for o in of(K::Task).filter(|o| latest.is_none_or(|l| l.text != o.text)) {
        b.text("task", &o.text, o.critical, 2);
    }
    for request in &facts.requests {
        b.text("requests", request, false, 2);
    }
    // The newest goal and next step have a line of their own; older ones are listed
    // whole with what earlier summaries carried.
    let all: Vec<_> = of(K::Goal).collect();
    if let Some((goal, older)) = all.split_last() {
        b.text("goal", &goal.text, true, 0);
        for o in older {
            b.text("carried", &o.describe(), o.critical, 3);
        }
    }
    for o in of(K::Constraint) {
        b.text("constraints", &o.text, o.critical, 1);
    }
    if let Some(latest) = latest {
        b.text("latest_request", &latest.text, true, 0);
    }
    if let Some(status) = &facts.status {
        b.text("current_status", status, false, 2);
    }
    let mut listed = std::collections::BTreeSet::new();
    for file in &facts.files {
        listed.insert(file.path.as_str());
        let rank = if file.changes.is_empty() { 5 } else { 0 };
        b.text("files", &file.describe(), rank == 0, rank);
    }
    for o in of(K::File).filter(|o| !listed.contains(o.text.as_str())) {
        b.text("files", &format!("{} (mentioned)", o.text), o.critical, 5);
    }
    let mut run = std::collections::BTreeSet::new();
    for (command, last) in &facts.commands {
        run.insert(command.as_str());
        b.text("commands", &format!("`{command}` → {last}"), false, 4);
    }
    for o in of(K::Command).filter(|o| !run.contains(o.text.as_str())) {
        b.text("commands", &format!("`{}`", o.text), false, 4);
    }
    for o in of(K::Failure) {
        if o.critical {
            b.text("failures", &o.text, true, 0);
        } else {
            b.text("do_not_repeat", &o.text, false, 4);
        }
    }
    for o in of(K::Rejected) {
        b.text("rejected", &o.text, o.critical, 1);
    }
    for o in of(K::PendingTool) {
        let line = match facts.pending.get(&o.text) {
            Some(what) => format!("{} ({what})", o.text),
            None => o.text.clone(),
        };
        b.text("pending_tool_ids", &line, o.critical, 1);
    }
    let all: Vec<_> = of(K::NextAction).collect();
    if let Some((next, older)) = all.split_last() {
        b.text("next_action", &next.text, next.critical, 2);
        for o in older {
            b.text("carried", &o.describe(), o.critical, 3);
        }
    }
    for o in of(K::Decision) {
        b.text("decisions", &o.text, o.critical, 3);
    }
    for o in of(K::Identifier) {
        b.text("identifiers", &o.text, o.critical, 5);
    }
    for o in of(K::Question) {
        b.text("questions", &o.text, o.critical, 4);
    }
    for o in of(K::CarryForward) {
        b.text("carried", &o.text, o.critical, 3);
    }
    for o in of(K::ToolCall) {
        b.text("tool_calls", &o.text, o.critical, 7);
    }
    for reference in &facts.payloads {
        b.push("tool_payloads", reference.clone(), 6);
    }
    fit(&mut b.items, budget_chars, facts.removed);
    payload(&b.items, facts.removed)
}

/// The characters the items take rendered, headers included.
fn size(items: &[Item], removed: u64) -> usize {
    let mut sections = vec![false; SECTIONS.len()];
    let mut total = header(removed).chars().count();
    for item in items {
        if !sections[item.section] {
            sections[item.section] = true;
            total += SECTIONS[item.section].1.chars().count() + 3;
        }
        total += item.chars;
    }
    total
}

/// How strongly a critical fact of a section holds its place when critical facts alone
/// exceed the budget: the lowest goes first.
const KEEP: &[(&str, u8)] = &[
    ("task", 9),
    ("latest_request", 9),
    ("goal", 8),
    ("constraints", 8),
    ("pending_tool_ids", 7),
    ("failures", 6),
    ("rejected", 6),
    ("files", 5),
    ("next_action", 4),
    ("carried", 3),
];

/// Characters the facts that are not critical may fill at most, however large the
/// budget: a summary an agent reads quickly, and a record of bounded size.
const SOFT_CHARS: usize = 8 << 10;

/// Leaves out items until the rest fit: facts that are not critical until the summary
/// fits `budget` and [`SOFT_CHARS`], the highest rank first and the oldest of a rank
/// first; then critical ones until it fits `budget`, by [`KEEP`], the oldest first.
fn fit(items: &mut Vec<Item>, budget: usize, removed: u64) {
    let soft = budget.min(SOFT_CHARS);
    let mut total = size(items, removed);
    if total <= soft {
        return;
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    crate::order::sort_by_key(&mut order, |&i| {
        let item = &items[i];
        let keep = if item.rank == 0 {
            KEEP.iter()
                .find(|(name, _)| *name == SECTIONS[item.section].0)
                .map_or(0, |(_, keep)| *keep)
        } else {
            0
        };
        (std::cmp::Reverse(item.rank), keep, item.order)
    });
    let mut live = vec![0usize; SECTIONS.len()];
    for item in items.iter() {
        live[item.section] += 1;
    }
    let mut gone = vec![false; items.len()];
    for i in order {
        let limit = if items[i].rank == 0 { budget } else { soft };
        if total <= limit {
            if items[i].rank == 0 {
                break;
            }
            continue;
        }
        gone[i] = true;
        total = total.saturating_sub(items[i].chars);
        // A section that empties loses its header too.
        let section = items[i].section;
        live[section] -= 1;
        if live[section] == 0 {
            total = total.saturating_sub(SECTIONS[section].1.chars().count() + 3);
        }
    }
    let mut index = 0;
    items.retain(|_| {
        let keep = !gone[index];
        index += 1;
        keep
    });
}

fn payload(items: &[Item], removed: u64) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("schema_version".into(), json!(SCHEMA_VERSION));
    for (s, (name, _, single)) in SECTIONS.iter().enumerate() {
        let values: Vec<Value> = items
            .iter()
            .filter(|i| i.section == s)
            .map(|i| i.value.clone())
            .collect();
        let value = if *single {
            values.into_iter().next().unwrap_or(Value::Null)
        } else {
            Value::Array(values)
        };
        out.insert((*name).into(), value);
    }
    out.insert("removed_messages".into(), json!(removed));
    out.insert("critical_carry_forward".into(), json!([]));
    Value::Object(out)
}

/// Renders a `structured_v1` payload as the summary text a model reads.
pub fn render(payload: &Value) -> String {
    let removed = payload["removed_messages"].as_u64().unwrap_or(0);
    let mut out = header(removed);
    let list = |out: &mut String, label: &str, value: &Value| match value {
        Value::Null => {}
        Value::Array(items) if items.is_empty() => {}
        Value::Array(items) => {
            out.push_str(&format!("{label}:\n"));
            for item in items {
                out.push_str(&format!("- {}\n", rendered(item)));
            }
        }
        single => out.push_str(&format!("{label}: {}\n", rendered(single))),
    };
    for (name, label, _) in SECTIONS {
        list(&mut out, label, &payload[*name]);
    }
    list(
        &mut out,
        "Critical carry-forward",
        &payload["critical_carry_forward"],
    );
    out
}

#[cfg(test)]
#[path = "tests/summarize.rs"]
mod tests;
