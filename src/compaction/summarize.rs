//! The built-in deterministic summarizer: a `structured_v1` payload and its rendered
//! text, from the entries a compaction removes. Used when no LLM is plugged in
//! (`summary_source` `fallback`). Large tool payloads appear as size, hash and a short
//! preview, never copied whole.

use serde_json::{Value, json};

use super::obligations::{Obligation, ObligationKind};
use crate::types::{Entry, Role};

/// The payload's schema version.
pub const SCHEMA_VERSION: u64 = 1;
/// Longest single line the summarizer copies (goal, status, failure, …).
const CLIP: usize = 160;
/// Characters of a tool payload shown as its preview.
const PREVIEW: usize = 60;
/// Tool output longer than this is represented by size, hash and preview.
const LARGE: usize = 400;

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(CLIP) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

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

/// How many of a kind the structured fields list: the newest ones. The bound keeps the
/// built-in summary of 100,000 messages as small as one of 100; it loses nothing, since
/// coverage back-fills every obligation the fields leave out, or reports it.
fn shown(kind: ObligationKind) -> usize {
    use ObligationKind as K;
    match kind {
        K::Goal | K::NextAction => 4,
        K::Question => 8,
        K::Constraint | K::Decision | K::Failure | K::Command => 16,
        K::ToolCall | K::PendingTool | K::Identifier => 32,
        K::File => 48,
        K::CarryForward => 64,
    }
}

/// The newest [`shown`] obligations of `kind`, oldest first, clipped.
fn texts(obligations: &[Obligation], kind: ObligationKind) -> Vec<String> {
    let of_kind: Vec<&Obligation> = obligations.iter().filter(|o| o.kind == kind).collect();
    let skip = of_kind.len().saturating_sub(shown(kind));
    of_kind[skip..].iter().map(|o| clip(&o.text)).collect()
}

/// How many large tool payloads the structured fields reference: the newest ones (the
/// others stay in the canonical transcript, and their ids are obligations).
const SHOWN_PAYLOADS: usize = 32;

/// Builds the `structured_v1` payload for `removed` entries (its `critical_carry_forward`
/// starts empty: coverage fills it).
pub fn summarize(removed: &[Entry], obligations: &[Obligation]) -> Value {
    let mut digest = Digest::default();
    for entry in removed {
        digest.feed(entry);
    }
    digest.summarize(obligations)
}

/// What the built-in summarizer keeps of the removed entries as it reads them in
/// pages: the newest status line, the newest large payloads' references and a count.
#[derive(Debug, Default)]
pub struct Digest {
    status: Option<String>,
    tool_payloads: std::collections::VecDeque<Value>,
    removed: u64,
}

impl Digest {
    fn payload(&mut self, reference: Value) {
        if self.tool_payloads.len() == SHOWN_PAYLOADS {
            self.tool_payloads.pop_front();
        }
        self.tool_payloads.push_back(reference);
    }

    /// Takes in the next removed entry.
    pub fn feed(&mut self, entry: &Entry) {
        self.removed += 1;
        if entry.role == Role::Assistant && !entry.content.trim().is_empty() {
            self.status = Some(clip(entry.content.lines().next().unwrap_or_default()));
        }
        if let Some(calls) = &entry.tool_calls {
            let text = calls.to_string();
            if text.len() > LARGE {
                self.payload(payload_ref("tool_calls", &text));
            }
        }
        if entry.role == Role::Tool && entry.content.len() > LARGE {
            self.payload(payload_ref("tool_result", &entry.content));
        }
    }

    /// The payload for what was fed.
    pub fn summarize(self, obligations: &[Obligation]) -> Value {
        use ObligationKind as K;
        let first = |kind| texts(obligations, kind).into_iter().next();
        let failures = texts(obligations, K::Failure);
        json!({
            "schema_version": SCHEMA_VERSION,
            "goal": first(K::Goal),
            "constraints": texts(obligations, K::Constraint),
            "current_status": self.status,
            "next_action": first(K::NextAction),
            "files": texts(obligations, K::File),
            "commands": texts(obligations, K::Command),
            "failures": failures,
            "decisions": texts(obligations, K::Decision),
            "pending_tool_ids": texts(obligations, K::PendingTool),
            "identifiers": texts(obligations, K::Identifier),
            "questions": texts(obligations, K::Question),
            "do_not_repeat": texts(obligations, K::Failure),
            "tool_payloads": Vec::from(self.tool_payloads),
            "removed_messages": self.removed,
            "critical_carry_forward": [],
        })
    }
}

/// Renders a `structured_v1` payload as the summary text a model reads.
pub fn render(payload: &Value) -> String {
    let mut out = String::new();
    let removed = payload["removed_messages"].as_u64().unwrap_or(0);
    out.push_str(&format!("Summary of {removed} earlier messages\n"));
    let line = |out: &mut String, label: &str, value: &Value| {
        if let Some(text) = value.as_str() {
            out.push_str(&format!("{label}: {text}\n"));
        }
    };
    let list = |out: &mut String, label: &str, value: &Value| {
        let items: Vec<String> = value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|item| match item.as_str() {
                        Some(text) => text.to_owned(),
                        None => item.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !items.is_empty() {
            out.push_str(&format!("{label}:\n"));
            for item in items {
                out.push_str(&format!("- {item}\n"));
            }
        }
    };
    line(&mut out, "Goal", &payload["goal"]);
    list(&mut out, "Constraints", &payload["constraints"]);
    line(&mut out, "Current status", &payload["current_status"]);
    line(&mut out, "Next action", &payload["next_action"]);
    list(&mut out, "Files", &payload["files"]);
    list(&mut out, "Commands", &payload["commands"]);
    list(&mut out, "Failures", &payload["failures"]);
    list(&mut out, "Decisions", &payload["decisions"]);
    list(&mut out, "Pending tool calls", &payload["pending_tool_ids"]);
    list(&mut out, "Identifiers", &payload["identifiers"]);
    list(&mut out, "Open questions", &payload["questions"]);
    list(&mut out, "Do not repeat", &payload["do_not_repeat"]);
    let payloads: Vec<String> = payload["tool_payloads"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|p| {
                    format!(
                        "{} ({} bytes, fnv64 {}): {}…",
                        p["what"].as_str().unwrap_or("payload"),
                        p["size"],
                        p["hash"].as_str().unwrap_or_default(),
                        p["preview"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    list(&mut out, "Large tool payloads", &json!(payloads));
    list(
        &mut out,
        "Critical carry-forward",
        &payload["critical_carry_forward"],
    );
    out
}
