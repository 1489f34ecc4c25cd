//! opencode sessions, as one JSON document per session: `{info, messages: [{info,
//! parts}]}`, the shape `opencode export <session>` prints. `info` is the session
//! (`id`, `parentID`, `directory`, `title`, `version`, `time.created`); each message's
//! `info` has `id`, `role`, `time.created` and, for a reply, `modelID`, `tokens`
//! (`input`, `output`, `reasoning`, `cache.read`, `cache.write`), `summary` and `error`;
//! its `parts` are `text`, `reasoning`, `tool`, `file`, `step-start`, `step-finish`,
//! `snapshot`, `patch`, `compaction`, `agent`, `subtask`, … in order.
//!
//! opencode keeps sessions in SQLite since 1.2 (`~/.local/share/opencode/opencode.db`,
//! tables `session`, `message` and `part`, a message's and a part's fields in their
//! `data` JSON column) and before that in JSON files
//! (`~/.local/share/opencode/storage/session/<project>/<session>.json`,
//! `message/<session>/<message>.json`, `part/<message>/<part>.json`). The host reads
//! either and hands each session over in this document's shape: messages in `id`
//! order (opencode's ids sort by time), each with its parts in `id` order.
//!
//! What becomes an entry (its message id is the opencode part's or message's id):
//! - A user message: one user entry (the message id; none when the message holds no
//!   text or file, as a compaction request) holding its text parts (those
//!   opencode marks `synthetic`, text it added itself, are a separate system entry of
//!   kind `context`), its `file` parts as attachments (a `data:` URL decoded for size
//!   and SHA-256, a file by its path or URL).
//! - A reply: an entry per part, in order: `text` an assistant entry, `reasoning` an
//!   assistant entry with `reasoning`, `tool` an assistant entry with the call
//!   (`callID`, `tool`, `state.input`) and, once it ended, a `tool` entry
//!   (`<part id>.result`) with `state.output` (status `ok`) or `state.error` (status
//!   `error`, `cancelled` when opencode says the tool was aborted). A reply opencode
//!   wrote as a compaction summary (`summary: true`) gives system entries of kind
//!   `summary`. A reply without such parts but with an `error` is an assistant entry
//!   `[error: …]`. The reply's usage goes on its first entry: opencode counts `input`
//!   apart from cache reads and writes, and `reasoning` apart from `output` (Spool's
//!   output is their sum).
//! - Counted in `skipped` as `part:<type>`: step markers, snapshots, patches,
//!   compaction markers, agent and subtask parts, and parts of other types.
//!
//! A session's `parentID` (a sub-agent's session) is its `spawned_by`. The first model
//! a reply names is the session's model; its title is opencode's. A document is parsed
//! whole; its messages count as its lines.

use serde_json::{Map, Value, json};

use super::{
    ImportFormat, ImportedEntry, ImportedLog, ImportedSession, ImportedSpawn, str_field, u64_field,
};
use crate::types::{Attachment, EntryKind, Role, ToolStatus, TurnUsage};

/// Parses an opencode session document (`{info, messages}`).
pub fn parse_opencode(text: &str) -> ImportedLog {
    let mut log = ImportedLog::new(ImportFormat::Opencode);
    let doc = match crate::storage::record::parse_json(text.as_bytes()) {
        Ok(Value::Object(doc)) => doc,
        _ => {
            log.lines = 1;
            log.invalid_lines.push(1);
            return log;
        }
    };
    let info = doc.get("info").and_then(Value::as_object);
    let id = info
        .and_then(|i| str_field(i, "id"))
        .unwrap_or("opencode-session");
    let mut session = ImportedSession::new(id);
    if let Some(info) = info {
        session.cwd = str_field(info, "directory").map(str::to_owned);
        session.title = str_field(info, "title")
            .filter(|t| !t.trim().is_empty())
            .map(str::to_owned);
        session.version = str_field(info, "version").map(str::to_owned);
        session.started_at = time(info, "created");
        session.spawned_by = str_field(info, "parentID").map(|parent| ImportedSpawn {
            provider_session_id: parent.to_owned(),
            tool_call_id: None,
        });
    }
    for message in doc
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        log.lines += 1;
        let Some(message) = message.as_object() else {
            log.skip("message (not an object)");
            continue;
        };
        let before = session.entries.len();
        read_message(&mut log, &mut session, message);
        for e in &session.entries[before..] {
            log.attachments += e.attachments.len() as u64;
            log.attachment_bytes_not_stored += e
                .attachments
                .iter()
                .filter(|a| a.sha256.is_some())
                .map(|a| a.size)
                .sum::<u64>();
        }
    }
    // Each entry follows the one before it.
    let mut previous: Option<String> = None;
    for e in &mut session.entries {
        e.parent_message_id = previous.replace(e.message_id.clone());
    }
    if !session.entries.is_empty() {
        log.sessions.push(session);
    }
    log
}

/// `time.<key>` of an info, ms since the epoch.
fn time(info: &Map<String, Value>, key: &str) -> u64 {
    info.get("time")
        .and_then(|t| t.get(key))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

fn read_message(
    log: &mut ImportedLog,
    session: &mut ImportedSession,
    message: &Map<String, Value>,
) {
    let Some(info) = message.get("info").and_then(Value::as_object) else {
        log.skip("message (no info)");
        return;
    };
    let Some(id) = str_field(info, "id") else {
        log.skip("message (no id)");
        return;
    };
    let at = time(info, "created");
    let parts: Vec<&Map<String, Value>> = message
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    match str_field(info, "role") {
        Some("user") => {
            let mut texts = Vec::new();
            let mut context = Vec::new();
            let mut e = ImportedEntry::new(id, Role::User, String::new(), at);
            for part in parts {
                match str_field(part, "type") {
                    Some("text")
                        if part.get("synthetic").and_then(Value::as_bool) == Some(true) =>
                    {
                        let mut c = ImportedEntry::new(
                            part_id(part, id),
                            Role::System,
                            str_field(part, "text").unwrap_or_default().to_owned(),
                            at,
                        );
                        c.kind = Some(EntryKind::Context);
                        context.push(c);
                    }
                    Some("text") => texts.push(str_field(part, "text").unwrap_or_default()),
                    Some("file") => match file(part) {
                        Some(a) => e.attachments.push(a),
                        None => log.skip("part:file (unreadable)"),
                    },
                    other => log.skip(&format!("part:{}", other.unwrap_or("(untyped)"))),
                }
            }
            e.content = texts.join("\n");
            // The prompt (unless the message held none: a compaction request), then the
            // context opencode added to it.
            if !e.content.trim().is_empty() || !e.attachments.is_empty() {
                session.entries.push(e);
            }
            session.entries.extend(context);
        }
        Some("assistant") => {
            let model = str_field(info, "modelID").unwrap_or_default();
            if !model.is_empty() {
                session.model.get_or_insert_with(|| model.to_owned());
            }
            let summary = info.get("summary").and_then(Value::as_bool) == Some(true);
            let first = session.entries.len();
            for part in parts {
                match str_field(part, "type") {
                    Some("text") if summary => {
                        let mut e = ImportedEntry::new(
                            part_id(part, id),
                            Role::System,
                            str_field(part, "text").unwrap_or_default().to_owned(),
                            at,
                        );
                        e.kind = Some(EntryKind::Summary);
                        session.entries.push(e);
                    }
                    Some("text") => session.entries.push(ImportedEntry::new(
                        part_id(part, id),
                        Role::Assistant,
                        str_field(part, "text").unwrap_or_default().to_owned(),
                        at,
                    )),
                    Some("reasoning") => {
                        let text = str_field(part, "text").unwrap_or_default();
                        if text.trim().is_empty() {
                            log.skip("part:reasoning (empty)");
                            continue;
                        }
                        let mut e = ImportedEntry::new(
                            part_id(part, id),
                            Role::Assistant,
                            String::new(),
                            at,
                        );
                        e.reasoning = Some(text.to_owned());
                        session.entries.push(e);
                    }
                    Some("tool") => session.entries.extend(tool(part, id, at)),
                    other => log.skip(&format!("part:{}", other.unwrap_or("(untyped)"))),
                }
            }
            if session.entries.len() == first
                && let Some(error) = info.get("error")
            {
                let why = error
                    .get("data")
                    .and_then(|d| d.get("message"))
                    .and_then(Value::as_str)
                    .or_else(|| error.get("name").and_then(Value::as_str))
                    .unwrap_or("unknown");
                session.entries.push(ImportedEntry::new(
                    id,
                    Role::Assistant,
                    format!("[error: {why}]"),
                    at,
                ));
            }
            if let Some(tokens) = info.get("tokens").and_then(Value::as_object)
                && let Some(e) = session.entries.get_mut(first)
            {
                let cache = tokens.get("cache").and_then(Value::as_object);
                let mut u = TurnUsage::new(
                    model,
                    u64_field(tokens, "input"),
                    u64_field(tokens, "output").saturating_add(u64_field(tokens, "reasoning")),
                );
                u.cache_read_tokens = cache.map_or(0, |c| u64_field(c, "read"));
                u.cache_write_tokens = cache.map_or(0, |c| u64_field(c, "write"));
                e.turn_usage = Some(u);
            }
        }
        other => log.skip(&format!("message:{}", other.unwrap_or("(none)"))),
    }
}

/// A part's id, or one derived from its message's when it has none.
fn part_id(part: &Map<String, Value>, message: &str) -> String {
    str_field(part, "id").map_or_else(|| format!("{message}.part"), str::to_owned)
}

/// A `tool` part: the call, and its result once it ended.
fn tool(part: &Map<String, Value>, message: &str, at: u64) -> Vec<ImportedEntry> {
    let id = part_id(part, message);
    let state = part.get("state").and_then(Value::as_object);
    let mut call = ImportedEntry::new(id.as_str(), Role::Assistant, String::new(), at);
    let call_id = part.get("callID").cloned().unwrap_or(Value::Null);
    call.tool_calls = Some(json!([{
        "id": call_id,
        "name": part.get("tool").cloned().unwrap_or(Value::Null),
        "arguments": state.and_then(|s| s.get("input")).cloned().unwrap_or_else(|| json!({})),
    }]));
    let mut out = vec![call];
    let ended = state.map(|s| time(s, "end")).filter(|t| *t > 0);
    let result = match state.and_then(|s| str_field(s, "status")) {
        Some("completed") => Some((
            ToolStatus::Ok,
            state
                .and_then(|s| str_field(s, "output"))
                .unwrap_or_default(),
        )),
        Some("error") => {
            let error = state
                .and_then(|s| str_field(s, "error"))
                .unwrap_or_default();
            let aborted = error.to_ascii_lowercase().contains("aborted");
            Some((
                if aborted {
                    ToolStatus::Cancelled
                } else {
                    ToolStatus::Error
                },
                error,
            ))
        }
        _ => None,
    };
    if let Some((status, text)) = result {
        let mut e = ImportedEntry::new(
            format!("{id}.result"),
            Role::Tool,
            text.to_owned(),
            ended.unwrap_or(at),
        );
        e.tool_call_id = call_id.as_str().map(str::to_owned);
        e.tool_status = Some(status);
        if let Some(files) = state
            .and_then(|s| s.get("attachments"))
            .and_then(Value::as_array)
        {
            e.attachments = files
                .iter()
                .filter_map(Value::as_object)
                .filter_map(file)
                .collect();
        }
        out.push(e);
    }
    out
}

/// A `file` part: a `data:` URL decoded, or the file by its path or URL.
fn file(part: &Map<String, Value>) -> Option<Attachment> {
    let media = str_field(part, "mime");
    let kind = match media {
        Some(m) if m.starts_with("image/") => "image",
        _ => "file",
    };
    let url = str_field(part, "url").unwrap_or_default();
    if url.starts_with("data:") {
        return super::inline_attachment(kind, media, url);
    }
    let source = part
        .get("source")
        .and_then(|s| s.get("path"))
        .and_then(Value::as_str)
        .unwrap_or(url);
    (!source.is_empty() && source.len() <= crate::validate::MAX_PATH_BYTES).then(|| Attachment {
        kind: kind.to_owned(),
        media_type: media.map(str::to_owned),
        size: 0,
        sha256: None,
        source: Some(source.to_owned()),
    })
}
