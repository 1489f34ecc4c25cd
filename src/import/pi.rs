//! pi coding agent sessions (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`): one
//! JSON object per line, a `session` header (`id`, `cwd`, `timestamp`, `version`), then
//! entries, each with an `id` and the `parentId` it follows (version 1 files have
//! neither: each line follows the one before it, and an entry's id is
//! `<session id>:<line number>`).
//!
//! What becomes an entry (its message id is the pi entry's id):
//! - A `message` line by its role: `user` (text, images as attachments: media type,
//!   decoded size, SHA-256); `assistant` (text, `thinking` as `reasoning`, `toolCall`
//!   parts as `tool_calls`, `usage` as the entry's usage: pi counts `input` apart from
//!   `cacheRead` and `cacheWrite`, as Spool does; an error or abort without text is
//!   `[error: …]` / `[aborted: …]`); `toolResult` (a `tool` entry answering
//!   `toolCallId`, status `error` when `isError`, images as attachments);
//!   `bashExecution` (a command the user ran with `!`: a user entry of kind `command`
//!   with its output and exit code); `custom` (an extension's message, a user entry of
//!   kind `context`); `branchSummary` / `compactionSummary` (system entries of kind
//!   `summary`).
//! - `compaction` and `branch_summary` lines: system entries of kind `summary`.
//! - `custom_message` lines (an extension's message sent to the model): user entries of
//!   kind `context`.
//!
//! Read, not imported as entries: `model_change` (the first model a session names, by
//! this or an assistant message, is its model; counted in `skipped`), `session_info` (its `name` is the session's title). Counted in `skipped`:
//! `thinking_level_change`, `custom`, `label`, other line types, and messages of other
//! roles (`message:<role>`).
//!
//! A pi session is a tree: going back to an earlier entry and going on from there
//! makes a branch. The file's first path is the session; an entry whose parent already
//! has a child starts a branch session `<session id>@<entry id>` that forks the session
//! holding the nearest message above it (after that message), or, with no message
//! above it, stands alone. Each line's place depends only on the lines before it, so
//! importing a file while it grows gives the same sessions as importing it once.
//! A pi file is parsed whole (not a slice at a time).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{
    ImportFormat, ImportedEntry, ImportedFork, ImportedLog, ImportedSession, json_lines, str_field,
    text_of, u64_field,
};
use crate::types::{Attachment, EntryKind, Role, ToolStatus, TurnUsage};

/// The session id of a file without a header.
const UNNAMED: &str = "pi-session";

/// Where an entry of the tree sits.
struct Node {
    /// The session that holds it.
    session: usize,
    /// The nearest message entry at or above it (its message id).
    anchor: Option<String>,
}

struct Pi {
    log: ImportedLog,
    /// The header's fields, copied into each session.
    header: ImportedSession,
    sessions: Vec<ImportedSession>,
    /// Each session's newest tree entry: an entry following it continues the session.
    tips: Vec<String>,
    nodes: BTreeMap<String, Node>,
    /// The previous line's entry id (version 1 files chain on it).
    previous: Option<String>,
}

/// Parses a pi session file.
pub fn parse_pi(text: &str) -> ImportedLog {
    let mut pi = Pi {
        log: ImportedLog::new(ImportFormat::Pi),
        header: ImportedSession::new(UNNAMED),
        sessions: Vec::new(),
        tips: Vec::new(),
        nodes: BTreeMap::new(),
        previous: None,
    };
    for (number, line) in json_lines(text, &mut pi.log) {
        pi.line(number, &line);
    }
    let Pi {
        mut log, sessions, ..
    } = pi;
    log.sessions = sessions
        .into_iter()
        .filter(|s| !s.entries.is_empty())
        .collect();
    log
}

impl Pi {
    fn line(&mut self, number: u64, line: &Map<String, Value>) {
        let kind = str_field(line, "type").unwrap_or("(untyped)");
        if kind == "session" {
            self.header_line(line);
            return;
        }
        let at = str_field(line, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(0);
        let id = match str_field(line, "id") {
            Some(id) => id.to_owned(),
            None => format!("{}:{number}", self.header.provider_session_id),
        };
        let parent = if line.contains_key("id") || line.contains_key("parentId") {
            str_field(line, "parentId").map(str::to_owned)
        } else {
            self.previous.clone()
        };
        self.previous = Some(id.clone());
        let (session, anchor) = self.place(&id, parent.as_deref(), at);
        let entry = match kind {
            "message" => match line.get("message").and_then(Value::as_object) {
                Some(message) => self.message(&id, message, at, session),
                None => {
                    self.log.skip("message:(none)");
                    None
                }
            },
            "compaction" | "branch_summary" => {
                let summary = str_field(line, "summary").unwrap_or_default().to_owned();
                let mut e = ImportedEntry::new(id.as_str(), Role::System, summary, at);
                e.kind = Some(EntryKind::Summary);
                Some(e)
            }
            "custom_message" => {
                let content = text_of(line.get("content").unwrap_or(&Value::Null));
                let mut e = ImportedEntry::new(id.as_str(), Role::User, content, at);
                e.kind = Some(EntryKind::Context);
                e.attachments = self.images(line.get("content"));
                Some(e)
            }
            "model_change" => {
                if let Some(model) = str_field(line, "modelId") {
                    let named = &mut self.sessions[session].model;
                    named.get_or_insert_with(|| model.to_owned());
                }
                self.log.skip("model_change");
                None
            }
            "session_info" => {
                if let Some(name) = str_field(line, "name").filter(|n| !n.trim().is_empty()) {
                    self.sessions[session].title = Some(name.to_owned());
                }
                None
            }
            other => {
                self.log.skip(other);
                None
            }
        };
        let anchor = match entry {
            Some(mut e) => {
                e.parent_message_id = anchor;
                let own = e.message_id.clone();
                self.push(session, e);
                Some(own)
            }
            None => anchor,
        };
        self.tips[session] = id.clone();
        self.nodes.insert(id, Node { session, anchor });
    }

    fn header_line(&mut self, line: &Map<String, Value>) {
        let h = &mut self.header;
        if let Some(id) = str_field(line, "id") {
            h.provider_session_id = id.to_owned();
        }
        h.cwd = str_field(line, "cwd").map(str::to_owned);
        h.version = line.get("version").map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        h.started_at = str_field(line, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(0);
    }

    /// The session an entry with `id` following `parent` belongs to (created when it
    /// starts one), and the nearest message above it.
    fn place(&mut self, id: &str, parent: Option<&str>, at: u64) -> (usize, Option<String>) {
        let known = parent.and_then(|p| self.nodes.get(p).map(|n| (p, n)));
        match known {
            Some((p, node)) if self.tips[node.session] == p => (node.session, node.anchor.clone()),
            Some((_, node)) => {
                // The parent already has a child: a branch.
                let anchor = node.anchor.clone();
                let from = node.session;
                let fork = anchor.as_ref().and_then(|a| {
                    let owner = self.nodes.get(a)?.session;
                    Some(ImportedFork {
                        provider_session_id: self.sessions[owner].provider_session_id.clone(),
                        after_message_id: a.clone(),
                    })
                });
                let mut session = self.new_session(Some(id), at);
                session.model.clone_from(&self.sessions[from].model);
                session.title.clone_from(&self.sessions[from].title);
                session.fork_of = fork;
                (self.add(session), anchor)
            }
            None if parent.is_some() && !self.sessions.is_empty() => {
                // A parent the file does not hold: go on from the line before.
                let last = self.sessions.len() - 1;
                let anchor = self
                    .nodes
                    .get(&self.tips[last])
                    .and_then(|n| n.anchor.clone());
                (last, anchor)
            }
            None => {
                let name = (!self.sessions.is_empty()).then_some(id);
                let session = self.new_session(name, at);
                (self.add(session), None)
            }
        }
    }

    /// A session with the header's fields, named `<id>@<first entry>` when it is not the
    /// file's first.
    fn new_session(&self, first: Option<&str>, at: u64) -> ImportedSession {
        let mut s = self.header.clone();
        if let Some(first) = first {
            s.provider_session_id = format!("{}@{first}", self.header.provider_session_id);
            s.started_at = at;
        } else if s.started_at == 0 {
            s.started_at = at;
        }
        s
    }

    fn add(&mut self, session: ImportedSession) -> usize {
        self.sessions.push(session);
        self.tips.push(String::new());
        self.sessions.len() - 1
    }

    fn push(&mut self, session: usize, entry: ImportedEntry) {
        self.log.attachments += entry.attachments.len() as u64;
        self.log.attachment_bytes_not_stored += entry
            .attachments
            .iter()
            .filter(|a| a.sha256.is_some())
            .map(|a| a.size)
            .sum::<u64>();
        self.sessions[session].entries.push(entry);
    }

    fn message(
        &mut self,
        id: &str,
        message: &Map<String, Value>,
        at: u64,
        session: usize,
    ) -> Option<ImportedEntry> {
        let at = if at == 0 {
            u64_field(message, "timestamp")
        } else {
            at
        };
        let content = message.get("content").unwrap_or(&Value::Null);
        let role = str_field(message, "role").unwrap_or("(none)");
        let entry = match role {
            "user" => {
                let mut e = ImportedEntry::new(id, Role::User, text_of(content), at);
                e.attachments = self.images(Some(content));
                e
            }
            "assistant" => {
                let model = str_field(message, "model").map(str::to_owned);
                if let Some(model) = &model {
                    let named = &mut self.sessions[session].model;
                    named.get_or_insert_with(|| model.clone());
                }
                assistant(id, message, content, model, at)
            }
            "toolResult" => {
                let mut e = ImportedEntry::new(id, Role::Tool, text_of(content), at);
                e.tool_call_id = str_field(message, "toolCallId").map(str::to_owned);
                e.tool_status = Some(
                    if message.get("isError").and_then(Value::as_bool) == Some(true) {
                        ToolStatus::Error
                    } else {
                        ToolStatus::Ok
                    },
                );
                e.attachments = self.images(Some(content));
                e
            }
            "bashExecution" => {
                let mut text = format!(
                    "! {}\n{}",
                    str_field(message, "command").unwrap_or_default(),
                    str_field(message, "output").unwrap_or_default()
                );
                if message.get("cancelled").and_then(Value::as_bool) == Some(true) {
                    text.push_str("\n[cancelled]");
                } else if let Some(code) = message
                    .get("exitCode")
                    .and_then(Value::as_i64)
                    .filter(|c| *c != 0)
                {
                    text.push_str(&format!("\n[exit code {code}]"));
                }
                let mut e = ImportedEntry::new(id, Role::User, text, at);
                e.kind = Some(EntryKind::Command);
                e
            }
            "custom" => {
                let mut e = ImportedEntry::new(id, Role::User, text_of(content), at);
                e.kind = Some(EntryKind::Context);
                e.attachments = self.images(Some(content));
                e
            }
            "branchSummary" | "compactionSummary" => {
                let summary = str_field(message, "summary").unwrap_or_default();
                let mut e = ImportedEntry::new(id, Role::System, summary.to_owned(), at);
                e.kind = Some(EntryKind::Summary);
                e
            }
            other => {
                self.log.skip(&format!("message:{other}"));
                return None;
            }
        };
        Some(entry)
    }

    /// The `image` parts of a content list (base64 `data` with its `mimeType`).
    fn images(&mut self, content: Option<&Value>) -> Vec<Attachment> {
        let mut out = Vec::new();
        for part in content.and_then(Value::as_array).into_iter().flatten() {
            if part.get("type").and_then(Value::as_str) != Some("image") {
                continue;
            }
            let media = part.get("mimeType").and_then(Value::as_str);
            let data = part.get("data").and_then(Value::as_str).unwrap_or_default();
            match super::inline_attachment("image", media, data) {
                Some(a) => out.push(a),
                None => self.log.skip("image (undecodable)"),
            }
        }
        out
    }
}

/// An assistant message: its text, thinking, tool calls and usage.
fn assistant(
    id: &str,
    message: &Map<String, Value>,
    content: &Value,
    model: Option<String>,
    at: u64,
) -> ImportedEntry {
    let parts = content.as_array().map(Vec::as_slice).unwrap_or_default();
    let of_type = |t: &'static str| {
        parts
            .iter()
            .filter(move |p| p.get("type").and_then(Value::as_str) == Some(t))
    };
    let mut text: String = match content {
        Value::String(s) => s.clone(),
        _ => of_type("text")
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let thinking: Vec<&str> = of_type("thinking")
        .filter_map(|p| p.get("thinking").and_then(Value::as_str))
        .filter(|t| !t.trim().is_empty())
        .collect();
    let calls: Vec<Value> = of_type("toolCall")
        .map(|p| {
            json!({
                "id": p.get("id").cloned().unwrap_or(Value::Null),
                "name": p.get("name").cloned().unwrap_or(Value::Null),
                "arguments": p.get("arguments").cloned().unwrap_or_else(|| json!({})),
            })
        })
        .collect();
    let stop = str_field(message, "stopReason").unwrap_or_default();
    if text.trim().is_empty() && calls.is_empty() && matches!(stop, "error" | "aborted") {
        let why = str_field(message, "errorMessage").unwrap_or("no message");
        text = format!("[{stop}: {why}]");
    }
    let mut e = ImportedEntry::new(id, Role::Assistant, text, at);
    e.reasoning = (!thinking.is_empty()).then(|| thinking.join("\n\n"));
    e.tool_calls = (!calls.is_empty()).then_some(Value::Array(calls));
    if let Some(usage) = message.get("usage").and_then(Value::as_object) {
        let mut u = TurnUsage::new(
            model.unwrap_or_default(),
            u64_field(usage, "input"),
            u64_field(usage, "output"),
        );
        u.cache_read_tokens = u64_field(usage, "cacheRead");
        u.cache_write_tokens = u64_field(usage, "cacheWrite");
        e.turn_usage = Some(u);
    }
    e
}
