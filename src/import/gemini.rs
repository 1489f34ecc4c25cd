//! Gemini CLI sessions (`~/.gemini/tmp/<project hash>/chats/session-….json` or
//! `.jsonl`), in either of the two forms Gemini CLI writes:
//! - one JSON document, `{sessionId, projectHash, startTime, lastUpdated, summary?,
//!   messages: [...]}`, rewritten whole as the session grows;
//! - JSON Lines: a first record with `sessionId` and `projectHash`, then message
//!   records (a message written again, with the same `id`, when it changes: tool calls
//!   added, usage known), `{"$set": {...}}` metadata updates and `{"$rewindTo": id}`
//!   rewinds.
//!
//! A message is `{id, timestamp, type, content}`; `type` is `user`, `gemini`, `info`,
//! `warning` or `error`; a `gemini` message may hold `toolCalls` (`id`, `name`, `args`,
//! `result`, `status`), `thoughts` (`subject`, `description`), `tokens` and `model`.
//!
//! What becomes an entry:
//! - A `user` message: a user entry (message id: the message's `id`), its text parts
//!   joined; `inlineData` parts are attachments (media type, decoded size, SHA-256),
//!   `fileData` parts referenced attachments.
//! - A `gemini` message: an assistant entry (`id`) with its text (parts marked
//!   `thought` and the `thoughts` go to `reasoning`) and its usage, when it has text,
//!   thoughts or no tool call; then, for each tool call, an assistant entry
//!   (`<id>.<call id>`) holding that call, and once the call has a result or ended, a
//!   `tool` entry (`<id>.<call id>.result`) answering it: status `ok` for `success`,
//!   `error` for `error`, `cancelled` for `cancelled`. The usage goes on the message's
//!   first entry. Gemini counts cached tokens inside `input`: Spool's input is `input`
//!   minus `cached` plus `tool` (tool-use prompt tokens), `cached` is cache reads, and
//!   output is `output` plus `thoughts`.
//! - `info`, `warning` and `error` messages: system entries of kind `command` (the
//!   CLI's own notices, never sent to the model).
//!
//! A message written again keeps the entries it already made (their text is the first
//! record's) and adds the ones it did not (new tool calls and results), after the
//! entries read so far; its usage is the newest record's. So a file parsed while it
//! grows gives a prefix of what the whole gives. A `$rewindTo` (Gemini drops the
//! messages from that one on) starts a branch session `<session id>@<next message id>`
//! forking the session after the entry before the rewound message (standalone when the
//! rewind drops every message). `summary` is the session's title, the first model
//! named its model. Counted in `skipped`: records of no known shape, messages of other
//! types. A file is parsed whole (not a slice at a time); a JSON document counts its
//! messages as its lines.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{
    ImportFormat, ImportedEntry, ImportedFork, ImportedLog, ImportedSession, json_lines, str_field,
    u64_field,
};
use crate::types::{Attachment, EntryKind, Role, ToolStatus, TurnUsage};

/// The session id of a file without one.
const UNNAMED: &str = "gemini-session";

/// What a message made so far.
struct Made {
    session: usize,
    /// Its entries' ids, in the order made.
    entries: Vec<String>,
    /// The entry its usage goes on.
    usage_on: Option<String>,
}

struct Gemini {
    log: ImportedLog,
    sessions: Vec<ImportedSession>,
    /// The session new messages go to.
    current: usize,
    /// Where each entry id is: its session.
    owners: BTreeMap<String, usize>,
    messages: BTreeMap<String, Made>,
    /// A rewind's fork point, for the session the next new message starts.
    rewound: Option<Option<ImportedFork>>,
}

/// Parses a Gemini CLI session file (a JSON document or JSON Lines).
pub fn parse_gemini(text: &str) -> ImportedLog {
    let mut g = Gemini {
        log: ImportedLog::new(ImportFormat::Gemini),
        sessions: vec![ImportedSession::new(UNNAMED)],
        current: 0,
        owners: BTreeMap::new(),
        messages: BTreeMap::new(),
        rewound: None,
    };
    let document = text.trim_start().starts_with('{')
        && text.trim_start().lines().next().map(str::trim) == Some("{");
    match crate::storage::record::parse_json(text.as_bytes()) {
        Ok(Value::Object(doc)) if doc.contains_key("messages") => {
            g.metadata(&doc);
            for message in doc
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                g.log.lines += 1;
                match message.as_object() {
                    Some(m) => g.message(m),
                    None => g.log.skip("message (not an object)"),
                }
            }
        }
        _ if document => {
            // A pretty-printed document that does not parse: cut short or broken.
            g.log.lines = 1;
            g.log.invalid_lines.push(1);
        }
        _ => {
            for (_, record) in json_lines(text, &mut g.log) {
                g.record(&record);
            }
        }
    }
    let Gemini {
        mut log, sessions, ..
    } = g;
    log.sessions = sessions
        .into_iter()
        .filter(|s| !s.entries.is_empty())
        .collect();
    log
}

impl Gemini {
    fn record(&mut self, record: &Map<String, Value>) {
        if let Some(to) = str_field(record, "$rewindTo") {
            self.rewind(to);
        } else if let Some(Value::Object(set)) = record.get("$set") {
            self.metadata(set);
        } else if record.contains_key("id") && record.contains_key("type") {
            self.message(record);
        } else if record.contains_key("sessionId") {
            self.metadata(record);
        } else {
            self.log.skip("(unknown record)");
        }
    }

    /// Session metadata: its id (before any message), start and summary.
    fn metadata(&mut self, m: &Map<String, Value>) {
        let alone = self.sessions.len() == 1;
        let main = &mut self.sessions[0];
        if let Some(id) = str_field(m, "sessionId")
            && main.entries.is_empty()
            && alone
        {
            main.provider_session_id = id.to_owned();
        }
        if let Some(at) = str_field(m, "startTime").and_then(super::parse_rfc3339_ms)
            && main.started_at == 0
        {
            main.started_at = at;
        }
        if let Some(summary) = str_field(m, "summary").filter(|s| !s.trim().is_empty()) {
            for s in &mut self.sessions {
                s.title = Some(summary.to_owned());
            }
        }
    }

    fn rewind(&mut self, to: &str) {
        // The fork point: the entry before the rewound message's first one.
        let fork = self
            .messages
            .get(to)
            .and_then(|made| made.entries.first())
            .and_then(|first| {
                let session = &self.sessions[*self.owners.get(first)?];
                let at = session
                    .entries
                    .iter()
                    .position(|e| &e.message_id == first)?;
                let before = match at {
                    0 => session.entries[0].parent_message_id.clone()?,
                    n => session.entries[n - 1].message_id.clone(),
                };
                let owner = *self.owners.get(&before)?;
                Some(ImportedFork {
                    provider_session_id: self.sessions[owner].provider_session_id.clone(),
                    after_message_id: before,
                })
            });
        self.rewound = Some(fork);
    }

    fn message(&mut self, m: &Map<String, Value>) {
        let Some(id) = str_field(m, "id").map(str::to_owned) else {
            self.log.skip("message (no id)");
            return;
        };
        let kind = str_field(m, "type").unwrap_or("(none)");
        let at = str_field(m, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(0);
        let made = self.messages.contains_key(&id);
        if !made && let Some(fork) = self.rewound.take() {
            let base = &self.sessions[0];
            let mut branch = ImportedSession::new(format!("{}@{id}", base.provider_session_id));
            branch.title.clone_from(&base.title);
            branch.model.clone_from(&self.sessions[self.current].model);
            branch.started_at = at;
            branch.fork_of = fork;
            self.sessions.push(branch);
            self.current = self.sessions.len() - 1;
        }
        let content = m.get("content").unwrap_or(&Value::Null);
        let mut entries: Vec<ImportedEntry> = Vec::new();
        let mut usage = None;
        match kind {
            "user" => {
                let mut e = ImportedEntry::new(id.as_str(), Role::User, texts(content, false), at);
                e.attachments = self.attachments(content);
                entries.push(e);
            }
            "gemini" => {
                if let Some(model) = str_field(m, "model") {
                    let named = &mut self.sessions[self.current].model;
                    named.get_or_insert_with(|| model.to_owned());
                }
                let model = str_field(m, "model").unwrap_or_default();
                usage = m
                    .get("tokens")
                    .and_then(Value::as_object)
                    .map(|t| tokens(model, t));
                let calls: &[Value] = m
                    .get("toolCalls")
                    .and_then(Value::as_array)
                    .map_or(&[], Vec::as_slice);
                let text = texts(content, false);
                let reasoning = reasoning(m, content);
                if !text.trim().is_empty() || reasoning.is_some() || calls.is_empty() {
                    let mut e = ImportedEntry::new(id.as_str(), Role::Assistant, text, at);
                    e.reasoning = reasoning;
                    entries.push(e);
                }
                for (n, call) in calls.iter().enumerate() {
                    entries.extend(tool_call(&id, n, call, at));
                }
            }
            "info" | "warning" | "error" => {
                let mut e =
                    ImportedEntry::new(id.as_str(), Role::System, texts(content, false), at);
                e.kind = Some(EntryKind::Command);
                entries.push(e);
            }
            other => {
                self.log.skip(&format!("message:{other}"));
                return;
            }
        }
        let made = self.messages.entry(id).or_insert_with(|| Made {
            session: self.current,
            entries: Vec::new(),
            usage_on: None,
        });
        let session = made.session;
        let mut fresh = Vec::new();
        for e in entries {
            if !made.entries.contains(&e.message_id) {
                made.entries.push(e.message_id.clone());
                made.usage_on.get_or_insert_with(|| e.message_id.clone());
                fresh.push(e);
            }
        }
        let usage_on = made.usage_on.clone();
        let target = &mut self.sessions[session];
        for mut e in fresh {
            e.parent_message_id =
                target
                    .entries
                    .last()
                    .map(|p| p.message_id.clone())
                    .or_else(|| {
                        // A branch's first entry follows its fork point.
                        target.fork_of.as_ref().map(|f| f.after_message_id.clone())
                    });
            self.log.attachments += e.attachments.len() as u64;
            self.log.attachment_bytes_not_stored += e
                .attachments
                .iter()
                .filter(|a| a.sha256.is_some())
                .map(|a| a.size)
                .sum::<u64>();
            self.owners.insert(e.message_id.clone(), session);
            target.entries.push(e);
        }
        if let (Some(usage), Some(on)) = (usage, usage_on)
            && let Some(e) = target.entries.iter_mut().find(|e| e.message_id == on)
        {
            e.turn_usage = Some(usage);
        }
    }

    /// The `inlineData` and `fileData` parts of a content.
    fn attachments(&mut self, content: &Value) -> Vec<Attachment> {
        let mut out = Vec::new();
        for part in parts(content) {
            if let Some(inline) = part.get("inlineData").and_then(Value::as_object) {
                let media = str_field(inline, "mimeType");
                let data = str_field(inline, "data").unwrap_or_default();
                let kind = kind_of(media);
                match super::inline_attachment(kind, media, data) {
                    Some(a) => out.push(a),
                    None => self.log.skip("inlineData (undecodable)"),
                }
            } else if let Some(file) = part.get("fileData").and_then(Value::as_object) {
                let media = str_field(file, "mimeType");
                if let Some(uri) = str_field(file, "fileUri")
                    .filter(|u| !u.is_empty() && u.len() <= crate::validate::MAX_PATH_BYTES)
                {
                    out.push(Attachment {
                        kind: kind_of(media).to_owned(),
                        media_type: media.map(str::to_owned),
                        size: 0,
                        sha256: None,
                        source: Some(uri.to_owned()),
                    });
                }
            }
        }
        out
    }
}

/// `image` for an image media type, else `file`.
fn kind_of(media: Option<&str>) -> &'static str {
    match media {
        Some(m) if m.starts_with("image/") => "image",
        _ => "file",
    }
}

/// The parts of a content: a list, one part, or a string as one text part.
fn parts(content: &Value) -> Vec<&Map<String, Value>> {
    match content {
        Value::Array(list) => list.iter().filter_map(Value::as_object).collect(),
        Value::Object(part) => vec![part],
        _ => Vec::new(),
    }
}

/// The text of a content: a string, or its text parts (those marked `thought` when
/// `thought`, else the others) joined.
fn texts(content: &Value, thought: bool) -> String {
    match content {
        Value::String(s) if !thought => s.clone(),
        Value::Array(list) => list
            .iter()
            .filter_map(|p| match p {
                Value::String(s) if !thought => Some(s.as_str()),
                Value::Object(o)
                    if o.get("thought").and_then(Value::as_bool).unwrap_or(false) == thought =>
                {
                    str_field(o, "text")
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(o)
            if o.get("thought").and_then(Value::as_bool).unwrap_or(false) == thought =>
        {
            str_field(o, "text").unwrap_or_default().to_owned()
        }
        _ => String::new(),
    }
}

/// A `gemini` message's thoughts (`**subject** description`) and thought parts.
fn reasoning(m: &Map<String, Value>, content: &Value) -> Option<String> {
    let mut out: Vec<String> = m
        .get("thoughts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let subject = t.get("subject").and_then(Value::as_str).unwrap_or_default();
            let description = t
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match (subject.trim().is_empty(), description.trim().is_empty()) {
                (true, true) => None,
                (true, false) => Some(description.to_owned()),
                (false, true) => Some(format!("**{subject}**")),
                (false, false) => Some(format!("**{subject}** {description}")),
            }
        })
        .collect();
    let parts = texts(content, true);
    if !parts.trim().is_empty() {
        out.push(parts);
    }
    (!out.is_empty()).then(|| out.join("\n\n"))
}

/// Usage from a `tokens` summary.
fn tokens(model: &str, t: &Map<String, Value>) -> TurnUsage {
    let cached = u64_field(t, "cached");
    let mut u = TurnUsage::new(
        model,
        u64_field(t, "input")
            .saturating_sub(cached)
            .saturating_add(u64_field(t, "tool")),
        u64_field(t, "output").saturating_add(u64_field(t, "thoughts")),
    );
    u.cache_read_tokens = cached;
    u
}

/// The entries of a message's `n`th tool call: the call, and its result once it has
/// one or ended.
fn tool_call(message: &str, n: usize, call: &Value, at: u64) -> Vec<ImportedEntry> {
    let Some(call) = call.as_object() else {
        return Vec::new();
    };
    let call_id = str_field(call, "id")
        .map(str::to_owned)
        .unwrap_or_else(|| n.to_string());
    let at = str_field(call, "timestamp")
        .and_then(super::parse_rfc3339_ms)
        .unwrap_or(at);
    let mut made = ImportedEntry::new(
        format!("{message}.{call_id}"),
        Role::Assistant,
        String::new(),
        at,
    );
    made.tool_calls = Some(json!([{
        "id": call_id,
        "name": call.get("name").cloned().unwrap_or(Value::Null),
        "arguments": call.get("args").cloned().unwrap_or_else(|| json!({})),
    }]));
    let status = match str_field(call, "status") {
        Some("success") => Some(ToolStatus::Ok),
        Some("error") => Some(ToolStatus::Error),
        Some("cancelled") => Some(ToolStatus::Cancelled),
        _ => None,
    };
    let result = call.get("result").filter(|r| !r.is_null());
    let mut out = vec![made];
    if result.is_some() || status.is_some() {
        let text = result.map(result_text).unwrap_or_default();
        let mut e = ImportedEntry::new(format!("{message}.{call_id}.result"), Role::Tool, text, at);
        e.tool_call_id = Some(call_id);
        e.tool_status = Some(status.unwrap_or(ToolStatus::Ok));
        out.push(e);
    }
    out
}

/// A tool result's text: `functionResponse.response.output` (or `error`, or the whole
/// response as JSON) of each part, and text parts.
fn result_text(result: &Value) -> String {
    let one = |p: &Value| -> Option<String> {
        if let Some(s) = p.as_str() {
            return Some(s.to_owned());
        }
        let o = p.as_object()?;
        if let Some(text) = str_field(o, "text") {
            return Some(text.to_owned());
        }
        let response = o.get("functionResponse")?.get("response")?;
        Some(
            ["output", "error"]
                .iter()
                .find_map(|k| response.get(*k).and_then(Value::as_str))
                .map_or_else(|| response.to_string(), str::to_owned),
        )
    };
    match result {
        Value::Array(list) => list.iter().filter_map(one).collect::<Vec<_>>().join("\n"),
        other => one(other).unwrap_or_default(),
    }
}
