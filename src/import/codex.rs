//! Codex rollouts: one JSON object per line, `{timestamp, type, payload}` with types
//! `session_meta` (thread id, cwd, CLI version), `turn_context` (model), `response_item`
//! (`message`, `function_call`, `function_call_output`, `custom_tool_call`,
//! `custom_tool_call_output`, `local_shell_call`, `reasoning`, `web_search_call`, …),
//! `event_msg` (`user_message`, `token_count`, `context_compacted`, `turn_aborted`, UI
//! echoes) and `compacted`. Older rollouts start with a bare `{id, timestamp,
//! instructions}` line followed by bare response items; both are read.
//!
//! What becomes an entry:
//! - A user or assistant `message`. Its `input_image` parts (a `data:` URL or another
//!   `image_url`) become `attachments` (described, bytes not stored: an inlined image has
//!   its decoded size and SHA-256, a referenced one its URL or path as `source` and size
//!   0); the text stays the text. `developer`/`system` messages and the environment / instructions blocks Codex
//!   sends as user messages are `system` entries of kind `context`, not the user's words.
//! - A prompt written only as `event_msg` `user_message` (Codex Desktop) is a user entry
//!   too, with its `images` / `local_images` as attachments (one holding a context block
//!   is counted, not imported). When a `response_item` user
//!   message also holds it, the one written first is kept and the other is counted as a
//!   duplicate (under its own kind): the second matches when no model output came
//!   between them and its text equals the first's (or one of its text parts, or is
//!   contained in it). The rule reads only earlier lines, so it holds for every prefix.
//! - A `reasoning` item is its own assistant entry with empty content and `reasoning`
//!   set: the summary texts (and raw reasoning text, when present) joined by blank lines,
//!   and `encrypted_content` only as `[encrypted reasoning: N bytes]`. It is never merged
//!   into a later entry, so a log cut after it imports to a prefix of the whole.
//! - A function call (`function_call`, `custom_tool_call`, `local_shell_call`) is an
//!   assistant entry with `tool_calls` (`id` = `call_id`, `name`, `arguments`); its output
//!   a `tool` entry answering that call id, with `tool_status`: `error` for a non-zero
//!   exit (`metadata.exit_code` of the structured output, `Exit code: N` /
//!   `Process exited with code N` of the text output) or `success: false`, `cancelled`
//!   for `aborted` / `aborted by user…` outputs and timed-out commands, else `ok`.
//!   At `event_msg` `turn_aborted`, each call of the turn still without an output gets a
//!   `tool` entry of status `cancelled` (id `<thread>:<line>.<n>`). Images in an output
//!   given as content items (`input_image`) are attachments of the `tool` entry.
//! - A `web_search_call` is an assistant entry with one tool call named `web_search`
//!   whose `arguments` are the call's `action` (query, URL, …) and whose `status` is the
//!   call's; the entry's `tool_status` is `ok` / `error` / `cancelled` for a completed /
//!   failed / incomplete search. It has no `id`: Codex records no result for it.
//! - A `compacted` line is a `system` entry of kind `summary` holding the compaction
//!   message (`[encrypted compaction summary: N bytes]` or a marker when it has none);
//!   `event_msg` `context_compacted` is one too unless it marks the same compaction as a
//!   `compacted` line just before it. The entries before a compaction are all kept
//!   (`replacement_history` repeats them and is not imported).
//!
//! Usage: `token_count`'s `last_token_usage` goes on the last assistant entry without
//! usage, once. OpenAI counts cached prompt tokens inside `input_tokens`: Spool's
//! `input_tokens` is input minus `cached_input_tokens`, and `cached_input_tokens` is
//! `cache_read_tokens`. `output_tokens` includes `reasoning_output_tokens`, as Codex
//! reports it. A `token_count` repeating the previous one's `total_token_usage` (a rate
//! limit update) is counted, not applied again.
//!
//! Counted in `skipped`, not imported: `turn_context` (its model is read),
//! `event_msg:<type>` for UI echoes (`agent_message`, `agent_reasoning`,
//! `exec_command_end`, …), turn markers and duplicates, `response_item:<type>` for
//! unknown items and duplicate prompts, other top-level types by name, legacy `state`
//! snapshots.
//!
//! The first `session_meta` line names the thread; a later one (a resumed or forked
//! rollout repeating it) is counted, not applied.
//!
//! Rollout lines carry no message ids: an entry's id is `<thread id>:<line number>`,
//! stable while the rollout only grows.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{
    ImportFormat, ImportedEntry, ImportedLog, ImportedSession, JsonLines, str_field, text_of,
    u64_field,
};
use crate::types::{Attachment, EntryKind, Role, ToolStatus, TurnUsage};

/// The thread id of a rollout without a `session_meta` line.
const UNNAMED: &str = "rollout";

/// Which kind of line a prompt or compaction was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Source {
    Item,
    Event,
}

/// A prompt imported and not yet matched by its echo from the other source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PendingPrompt {
    source: Source,
    /// The whole text and each text part.
    texts: Vec<String>,
}

/// What a parse carries from one slice of a rollout to the next
/// ([`super::ParseCursor`]): the thread's header, what earlier lines left open, and the
/// entry the next `token_count` goes on. Its size is that of a few lines, whatever the
/// rollout's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Carry {
    /// The session's header (its entries are each slice's own).
    session: ImportedSession,
    /// The `total_token_usage` of the last `token_count`.
    last_total: Option<Value>,
    prompt: Option<PendingPrompt>,
    /// The last compaction imported, not yet matched by its echo.
    compaction: Option<(Source, String)>,
    /// Call ids of the current turn without an output, in call order.
    open_calls: Vec<String>,
    /// The message id of the last entry (the next one's parent).
    last_message_id: Option<String>,
    /// The last assistant entry without usage, when an earlier slice holds it: a
    /// `token_count` puts its usage on it and imports it again (an import updates the
    /// usage of an entry it already holds).
    held: Option<ImportedEntry>,
    /// Usage a `token_count` reported before any entry of its request: the next
    /// assistant or summary entry's.
    #[serde(default)]
    pending: Option<TurnUsage>,
}

impl Default for Carry {
    fn default() -> Self {
        Carry {
            session: ImportedSession::new(String::new()),
            last_total: None,
            prompt: None,
            compaction: None,
            open_calls: Vec::new(),
            last_message_id: None,
            held: None,
            pending: None,
        }
    }
}

/// The parse of one slice in progress.
struct Rollout {
    log: ImportedLog,
    carry: Carry,
    /// The entries of this slice.
    entries: Vec<ImportedEntry>,
    /// The entry a `token_count` belongs to, in this slice: the last assistant entry
    /// without usage.
    usage_target: Option<usize>,
}

/// Parses a Codex rollout.
pub fn parse_codex(text: &str) -> ImportedLog {
    parse_codex_slice(&mut Carry::default(), 0, text, true)
}

/// Parses the lines of `text`, numbered from `first_line + 1`, continuing from `carry`
/// (left as the next slice needs it). `text` ends with a newline unless it ends the
/// rollout (`last`). The session holds this slice's entries (and an earlier one's entry
/// whose usage this slice reported); it is listed when it has any.
pub(super) fn parse_codex_slice(
    carry: &mut Carry,
    first_line: u64,
    text: &str,
    last: bool,
) -> ImportedLog {
    let mut r = Rollout {
        log: ImportedLog::new(ImportFormat::Codex),
        carry: std::mem::take(carry),
        entries: Vec::new(),
        usage_target: None,
    };
    let mut lines = JsonLines::new(text);
    while let Some((number, line)) = lines.next(&mut r.log) {
        r.line(first_line + number, &line);
    }
    super::renumber(&mut r.log, first_line);
    let Rollout {
        mut log,
        carry: mut kept,
        entries,
        usage_target,
    } = r;
    if let Some(i) = usage_target {
        kept.held = entries.get(i).cloned();
    }
    if last && kept.pending.take().is_some() {
        // Usage reported after the last entry: nothing to put it on.
        log.skip("event_msg:token_count");
    }
    let mut session = kept.session.clone();
    if session.provider_session_id.is_empty() {
        // No session line: a fragment, still importable.
        session.provider_session_id = UNNAMED.into();
    }
    session.entries = entries;
    if !session.entries.is_empty() {
        log.sessions.push(session);
    }
    *carry = kept;
    log
}

impl Rollout {
    fn line(&mut self, number: u64, line: &Map<String, Value>) {
        let at = str_field(line, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(0);
        if line.contains_key("record_type") {
            // Legacy state snapshots.
            self.log.skip("state");
            return;
        }
        let (kind, payload) = match (str_field(line, "type"), line.get("payload")) {
            (Some(kind), Some(Value::Object(payload))) => (kind, payload),
            // Legacy: the first line is the session, later lines are bare items.
            (None, _) if line.contains_key("id") && line.contains_key("instructions") => {
                ("session_meta", line)
            }
            (Some(_), None) => ("response_item", line),
            _ => {
                self.log.skip("(untyped)");
                return;
            }
        };
        match kind {
            "session_meta" => self.session_meta(payload, at),
            "turn_context" => {
                if let Some(model) = str_field(payload, "model") {
                    self.carry.session.model = Some(model.to_owned());
                }
                // A model request begins: earlier entries are an earlier request's.
                self.usage_target = None;
                self.carry.held = None;
                self.log.skip("turn_context");
            }
            "response_item" => self.response_item(number, payload, at),
            "event_msg" => self.event(number, payload, at),
            "compacted" => {
                let content = compaction_message(payload);
                if matches!(&self.carry.compaction, Some((Source::Event, c)) if *c == content) {
                    self.carry.compaction = None;
                    self.log.skip("compacted");
                    return;
                }
                self.push_summary(number, content, at, Source::Item);
            }
            other => self.log.skip(other),
        }
    }

    fn session_meta(&mut self, payload: &Map<String, Value>, at: u64) {
        let s = &mut self.carry.session;
        if !s.provider_session_id.is_empty() {
            // A resumed or forked rollout can repeat a session line; the first names it.
            self.log.skip("session_meta");
            return;
        }
        s.provider_session_id = str_field(payload, "id").unwrap_or_default().to_owned();
        s.cwd = str_field(payload, "cwd").map(str::to_owned);
        s.version = str_field(payload, "cli_version").map(str::to_owned);
        s.git_branch = payload
            .get("git")
            .and_then(|g| g.get("branch"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        s.started_at = str_field(payload, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(at);
    }

    fn response_item(&mut self, number: u64, payload: &Map<String, Value>, at: u64) {
        let kind = str_field(payload, "type").unwrap_or("(untyped)");
        let entry = match kind {
            "message" => {
                let Some(entry) = self.message(payload, at) else {
                    return;
                };
                entry
            }
            "reasoning" => match reasoning_text(payload) {
                Some(text) => {
                    let mut e = ImportedEntry::new("", Role::Assistant, String::new(), at);
                    e.reasoning = Some(text);
                    e
                }
                None => {
                    self.log.skip("response_item:reasoning");
                    return;
                }
            },
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let arguments = payload
                    .get("arguments")
                    .or_else(|| payload.get("input"))
                    .or_else(|| payload.get("action"))
                    .cloned()
                    .unwrap_or(Value::Null);
                if let Some(id) = str_field(payload, "call_id") {
                    self.carry.open_calls.push(id.to_owned());
                }
                let mut e = ImportedEntry::new("", Role::Assistant, String::new(), at);
                e.tool_calls = Some(json!([{
                    "id": payload.get("call_id").cloned().unwrap_or(Value::Null),
                    "name": payload.get("name").and_then(Value::as_str).unwrap_or(kind),
                    "arguments": arguments,
                }]));
                e
            }
            "function_call_output" | "custom_tool_call_output" => {
                let raw = payload.get("output");
                let output = match raw {
                    Some(Value::Object(o)) => text_of(o.get("content").unwrap_or(&Value::Null)),
                    Some(other) => text_of(other),
                    None => String::new(),
                };
                let mut e = ImportedEntry::new("", Role::Tool, String::new(), at);
                e.tool_status = Some(output_status(raw, &output));
                if let Some(items) = raw.filter(|r| r.is_array()) {
                    e.attachments = self.images(items);
                }
                e.content = output;
                e.tool_call_id = str_field(payload, "call_id").map(str::to_owned);
                if let Some(id) = &e.tool_call_id {
                    self.carry.open_calls.retain(|open| open != id);
                }
                e
            }
            "web_search_call" => {
                let status = str_field(payload, "status");
                let mut call = json!({
                    "name": "web_search",
                    "arguments": payload.get("action").cloned().unwrap_or_else(|| json!({})),
                });
                if let Some(status) = status {
                    call["status"] = status.into();
                }
                let mut e = ImportedEntry::new("", Role::Assistant, String::new(), at);
                e.tool_calls = Some(json!([call]));
                e.tool_status = match status {
                    Some("completed") => Some(ToolStatus::Ok),
                    Some("failed") => Some(ToolStatus::Error),
                    Some("incomplete" | "cancelled") => Some(ToolStatus::Cancelled),
                    _ => None,
                };
                e
            }
            other => {
                self.log.skip(&format!("response_item:{other}"));
                return;
            }
        };
        self.push(number, None, entry);
    }

    /// The entry a `message` item becomes, or `None` when it is not imported.
    fn message(&mut self, payload: &Map<String, Value>, at: u64) -> Option<ImportedEntry> {
        let content = payload.get("content").unwrap_or(&Value::Null);
        let text = text_of(content);
        let parts = text_parts(content);
        let context = !parts.is_empty() && parts.iter().all(|p| is_context_block(p));
        let (role, kind) = match str_field(payload, "role") {
            Some("assistant") => (Role::Assistant, None),
            Some("user") if context => (Role::System, Some(EntryKind::Context)),
            Some("user") => (Role::User, None),
            Some("developer" | "system") => (Role::System, Some(EntryKind::Context)),
            _ => {
                self.log.skip("message:unknown_role");
                return None;
            }
        };
        let mut texts = vec![text.clone()];
        texts.extend(parts);
        if role == Role::User
            && let Some(p) = &self.carry.prompt
            && p.source == Source::Event
            && echoes(&p.texts[0], &texts)
        {
            self.carry.prompt = None;
            self.log.skip("response_item:message");
            return None;
        }
        let mut e = ImportedEntry::new("", role, text, at);
        e.kind = kind;
        e.attachments = self.images(content);
        if role == Role::User {
            self.carry.prompt = Some(PendingPrompt {
                source: Source::Item,
                texts,
            });
        }
        Some(e)
    }

    fn event(&mut self, number: u64, payload: &Map<String, Value>, at: u64) {
        let Some(kind) = str_field(payload, "type") else {
            self.log.skip("event_msg");
            return;
        };
        match kind {
            "user_message" => self.event_prompt(number, payload, at),
            "token_count" => self.token_count(payload),
            "context_compacted" => {
                if matches!(self.carry.compaction, Some((Source::Item, _))) {
                    self.carry.compaction = None;
                    self.log.skip("event_msg:context_compacted");
                    return;
                }
                let content = str_field(payload, "message")
                    .filter(|m| !m.trim().is_empty())
                    .map_or_else(|| "[context compacted]".to_owned(), str::to_owned);
                self.push_summary(number, content, at, Source::Event);
            }
            "turn_aborted" => {
                let open = std::mem::take(&mut self.carry.open_calls);
                if open.is_empty() {
                    self.log.skip("event_msg:turn_aborted");
                    return;
                }
                let reason = str_field(payload, "reason").unwrap_or("aborted");
                for (n, id) in open.into_iter().enumerate() {
                    let mut e = ImportedEntry::new(
                        "",
                        Role::Tool,
                        format!("[no output: the turn was {reason}]"),
                        at,
                    );
                    e.tool_call_id = Some(id);
                    e.tool_status = Some(ToolStatus::Cancelled);
                    self.push(number, Some(n + 1), e);
                }
            }
            other => {
                if matches!(
                    other,
                    "task_started" | "turn_started" | "task_complete" | "turn_complete"
                ) {
                    self.carry.open_calls.clear();
                }
                self.log.skip(&format!("event_msg:{other}"));
            }
        }
    }

    /// An `event_msg` `user_message`: the prompt unless a `response_item` just held it.
    fn event_prompt(&mut self, number: u64, payload: &Map<String, Value>, at: u64) {
        let message = str_field(payload, "message").unwrap_or_default().to_owned();
        let duplicate = self
            .carry
            .prompt
            .as_ref()
            .is_some_and(|p| p.source == Source::Item && echoes(&message, &p.texts));
        if duplicate || is_context_block(&message) {
            if duplicate {
                self.carry.prompt = None;
            }
            self.log.skip("event_msg:user_message");
            return;
        }
        let mut e = ImportedEntry::new("", Role::User, message.clone(), at);
        for url in payload
            .get("images")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            e.attachments.extend(self.image(url));
        }
        for path in payload
            .get("local_images")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = path
                .as_str()
                .or_else(|| path.get("path").and_then(Value::as_str));
            if let Some(path) = path {
                e.attachments.extend(referenced("image", path));
            }
        }
        self.push(number, None, e);
        self.carry.prompt = Some(PendingPrompt {
            source: Source::Event,
            texts: vec![message],
        });
    }

    fn token_count(&mut self, payload: &Map<String, Value>) {
        let info = payload.get("info").and_then(Value::as_object);
        let last = info
            .and_then(|i| i.get("last_token_usage"))
            .and_then(Value::as_object);
        let total = info.and_then(|i| i.get("total_token_usage")).cloned();
        let repeat = total.is_some() && total == self.carry.last_total;
        if total.is_some() {
            self.carry.last_total = total;
        }
        let usage = match last {
            Some(usage) if !repeat => usage,
            _ => {
                self.log.skip("event_msg:token_count");
                return;
            }
        };
        let input = u64_field(usage, "input_tokens");
        let cached = u64_field(usage, "cached_input_tokens");
        let mut u = TurnUsage::new(
            self.carry.session.model.clone().unwrap_or_default(),
            input.saturating_sub(cached),
            u64_field(usage, "output_tokens"),
        );
        u.cache_read_tokens = cached;
        if let Some(i) = self.usage_target.take() {
            self.entries[i].turn_usage = Some(u);
        } else if let Some(mut held) = self.carry.held.take() {
            // An earlier slice's entry: imported again, first, with its usage.
            held.turn_usage = Some(u);
            self.entries.insert(0, held);
            self.log.repeated += 1;
            self.usage_target = None;
        } else {
            // The request's entries come after it (or it made none): the next one's.
            self.carry.pending = Some(match self.carry.pending.take() {
                Some(before) => TurnUsage {
                    input_tokens: before.input_tokens.saturating_add(u.input_tokens),
                    output_tokens: before.output_tokens.saturating_add(u.output_tokens),
                    cache_read_tokens: before.cache_read_tokens.saturating_add(u.cache_read_tokens),
                    ..u
                },
                None => u,
            });
        }
    }

    fn push_summary(&mut self, number: u64, content: String, at: u64, source: Source) {
        let mut e = ImportedEntry::new("", Role::System, content.clone(), at);
        e.kind = Some(EntryKind::Summary);
        self.push(number, None, e);
        self.carry.compaction = Some((source, content));
    }

    /// Appends `entry` as the entry of line `number` (the `n`th of that line, when a line
    /// makes several).
    fn push(&mut self, number: u64, n: Option<usize>, mut entry: ImportedEntry) {
        let name = super::recorded_provider_id(&self.carry.session.provider_session_id);
        let name = if name.is_empty() { UNNAMED } else { &name };
        entry.message_id = match n {
            Some(n) => format!("{name}:{number}.{n}"),
            None => format!("{name}:{number}"),
        };
        entry.parent_message_id = self.carry.last_message_id.clone();
        self.carry.last_message_id = Some(entry.message_id.clone());
        if entry.role == Role::Assistant || entry.kind == Some(EntryKind::Summary) {
            entry.turn_usage = self.carry.pending.take();
        }
        if entry.role == Role::Assistant {
            self.usage_target = entry.turn_usage.is_none().then_some(self.entries.len());
            self.carry.held = None;
        }
        if matches!(entry.role, Role::Assistant | Role::Tool) {
            self.carry.prompt = None;
        }
        if entry.kind != Some(EntryKind::Summary) {
            self.carry.compaction = None;
        }
        self.log.attachments += entry.attachments.len() as u64;
        self.log.attachment_bytes_not_stored += entry
            .attachments
            .iter()
            .filter(|a| a.sha256.is_some())
            .map(|a| a.size)
            .sum::<u64>();
        self.entries.push(entry);
    }

    /// The `input_image` parts of a message's content.
    fn images(&mut self, content: &Value) -> Vec<Attachment> {
        let mut out = Vec::new();
        for part in content.as_array().into_iter().flatten() {
            if part.get("type").and_then(Value::as_str) != Some("input_image") {
                continue;
            }
            let url = part
                .get("image_url")
                .and_then(|u| u.as_str().or_else(|| u.get("url").and_then(Value::as_str)));
            match url {
                Some(url) => out.extend(self.image(url)),
                None => self.log.skip("input_image (no image_url)"),
            }
        }
        out
    }

    /// An image given by URL: inlined (`data:`) or referenced.
    fn image(&mut self, url: &str) -> Option<Attachment> {
        if url.starts_with("data:") {
            let found = super::inline_attachment("image", None, url);
            if found.is_none() {
                self.log.skip("input_image (undecodable)");
            }
            found
        } else {
            referenced("image", url)
        }
    }
}

/// An attachment referenced by path or URL (its bytes were not in the log).
fn referenced(kind: &str, source: &str) -> Option<Attachment> {
    (!source.is_empty() && source.len() <= crate::validate::MAX_PATH_BYTES).then(|| Attachment {
        kind: kind.to_owned(),
        media_type: None,
        size: 0,
        sha256: None,
        source: Some(source.to_owned()),
    })
}

/// The text parts of a message's content.
fn text_parts(content: &Value) -> Vec<String> {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => str_field(o, "text").map(str::to_owned),
                _ => None,
            })
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Whether `prompt` is the same prompt as one whose whole text is `texts[0]` and whose
/// text parts are the rest: equal to the whole or to a part, or contained in the whole.
fn echoes(prompt: &str, texts: &[String]) -> bool {
    let prompt = prompt.trim();
    let Some((whole, parts)) = texts.split_first() else {
        return false;
    };
    let whole = whole.trim();
    prompt == whole
        || parts.iter().any(|p| p.trim() == prompt)
        || (!prompt.is_empty() && whole.contains(prompt))
}

/// The reasoning an item holds: summary and raw texts, encrypted content as a size.
fn reasoning_text(payload: &Map<String, Value>) -> Option<String> {
    let mut parts: Vec<String> = ["summary", "content"]
        .iter()
        .filter_map(|key| payload.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .filter(|t| !t.trim().is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(encrypted) = str_field(payload, "encrypted_content").filter(|e| !e.is_empty()) {
        parts.push(format!("[encrypted reasoning: {} bytes]", encrypted.len()));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The text a `compacted` line's summary entry holds.
fn compaction_message(payload: &Map<String, Value>) -> String {
    if let Some(message) = str_field(payload, "message").filter(|m| !m.trim().is_empty()) {
        return message.to_owned();
    }
    let encrypted = payload
        .get("replacement_history")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| {
            matches!(
                item.get("type").and_then(Value::as_str),
                Some("compaction" | "compaction_summary")
            )
        })
        .filter_map(|item| item.get("encrypted_content").and_then(Value::as_str))
        .map(str::len)
        .sum::<usize>();
    if encrypted > 0 {
        format!("[encrypted compaction summary: {encrypted} bytes]")
    } else {
        "[context compacted; the log holds no summary text]".to_owned()
    }
}

/// How a tool output says its call ended.
fn output_status(raw: Option<&Value>, text: &str) -> ToolStatus {
    if let Some(Value::Object(o)) = raw
        && o.get("success").and_then(Value::as_bool) == Some(false)
    {
        return ToolStatus::Error;
    }
    let trimmed = text.trim();
    if trimmed == "aborted" || trimmed.starts_with("aborted by user") {
        return ToolStatus::Cancelled;
    }
    // The structured shell output: `{"output": …, "metadata": {"exit_code": N}}`.
    if trimmed.starts_with('{')
        && let Ok(Value::Object(o)) = crate::storage::record::parse_json(trimmed.as_bytes())
    {
        let output = str_field(&o, "output").unwrap_or_default();
        if output.starts_with("command timed out after") {
            return ToolStatus::Cancelled;
        }
        if let Some(code) = o
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64)
        {
            return if code == 0 {
                ToolStatus::Ok
            } else {
                ToolStatus::Error
            };
        }
        if o.get("success").and_then(Value::as_bool) == Some(false) {
            return ToolStatus::Error;
        }
        return ToolStatus::Ok;
    }
    // The text shell output: a header (`Exit code: N`, `Wall time: …`, `Process exited
    // with code N`, …), then `Output:` and the output.
    let header = ["Exit code:", "Chunk ID:", "Wall time:"];
    if !header.iter().any(|h| trimmed.starts_with(h)) {
        return ToolStatus::Ok;
    }
    let mut lines = trimmed.lines();
    let mut code = None;
    for line in lines.by_ref() {
        if line == "Output:" {
            break;
        }
        if line == "aborted by user" {
            return ToolStatus::Cancelled;
        }
        let number = line
            .strip_prefix("Exit code:")
            .or_else(|| line.strip_prefix("Process exited with code"));
        if let Some(n) = number.and_then(|n| n.trim().parse::<i64>().ok()) {
            code = Some(n);
        }
    }
    if lines
        .next()
        .is_some_and(|first| first.starts_with("command timed out after"))
    {
        return ToolStatus::Cancelled;
    }
    match code {
        Some(0) | None => ToolStatus::Ok,
        Some(_) => ToolStatus::Error,
    }
}

/// Codex sends its environment and the user's instructions as user messages.
fn is_context_block(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<environment_context>",
        "<user_instructions>",
        "<INSTRUCTIONS>",
        "# AGENTS.md instructions",
        "<permissions instructions>",
        "<skills_instructions>",
        "<collaboration_mode>",
        "<turn_aborted>",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}
