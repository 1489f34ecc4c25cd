//! Codex rollouts: one JSON object per line, `{timestamp, type, payload}` with types
//! `session_meta` (thread id, cwd, CLI version), `turn_context` (model), `response_item`
//! (`message`, `function_call`, `function_call_output`, `custom_tool_call`,
//! `custom_tool_call_output`, `local_shell_call`, `reasoning`, …), `event_msg`
//! (`token_count` with `last_token_usage`, and UI echoes of messages) and `compacted`.
//! Older rollouts start with a bare `{id, timestamp, instructions}` line followed by bare
//! response items; both are read.
//!
//! - A user or assistant `message` becomes an entry; `developer`/`system` messages and
//!   the environment/instructions blocks Codex sends as user messages become `system`
//!   entries.
//! - A function call becomes an assistant entry with `tool_calls` (`id` = `call_id`,
//!   `name`, `arguments`); its output a `tool` entry answering that call id.
//! - `token_count` usage is put on the assistant entry it follows (once).
//! - Reasoning, UI echoes (`event_msg` other than `token_count`), `compacted` markers and
//!   unknown types are counted, not imported.
//! - Rollout lines carry no message ids: an entry's id is `<thread id>:<line number>`,
//!   stable while the rollout only grows.

use serde_json::{Map, Value, json};

use super::{
    ImportFormat, ImportedEntry, ImportedLog, ImportedSession, json_lines, str_field, text_of,
    u64_field,
};
use crate::types::{Role, TurnUsage};

/// The thread id of a rollout without a `session_meta` line.
const UNNAMED: &str = "rollout";

/// Parses a Codex rollout.
pub fn parse_codex(text: &str) -> ImportedLog {
    let mut log = ImportedLog::new(ImportFormat::Codex);
    let mut session = ImportedSession {
        provider_session_id: String::new(),
        cwd: None,
        model: None,
        version: None,
        git_branch: None,
        started_at: 0,
        fork_of: None,
        spawned_by: None,
        title: None,
        entries: Vec::new(),
        exported: None,
    };
    // The entry a `token_count` belongs to: the last assistant entry without usage.
    let mut usage_target: Option<usize> = None;
    for (number, line) in json_lines(text, &mut log) {
        let at = str_field(&line, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(0);
        if line.contains_key("record_type") {
            // Legacy state snapshots.
            log.skip("state");
            continue;
        }
        let (kind, payload) = match (str_field(&line, "type"), line.get("payload")) {
            (Some(kind), Some(Value::Object(payload))) => (kind.to_owned(), payload.clone()),
            // Legacy: the first line is the session, later lines are bare items.
            (None, _) if line.contains_key("id") && line.contains_key("instructions") => {
                ("session_meta".to_owned(), line.clone())
            }
            (Some(_), None) => ("response_item".to_owned(), line.clone()),
            _ => {
                log.skip("(untyped)");
                continue;
            }
        };
        match kind.as_str() {
            "session_meta" => {
                session.provider_session_id =
                    str_field(&payload, "id").unwrap_or_default().to_owned();
                session.cwd = str_field(&payload, "cwd").map(str::to_owned);
                session.version = str_field(&payload, "cli_version").map(str::to_owned);
                session.git_branch = payload
                    .get("git")
                    .and_then(|g| g.get("branch"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                session.started_at = str_field(&payload, "timestamp")
                    .and_then(super::parse_rfc3339_ms)
                    .unwrap_or(at);
            }
            "turn_context" => {
                if let Some(model) = str_field(&payload, "model") {
                    session.model = Some(model.to_owned());
                }
                log.skip("turn_context");
            }
            "response_item" => {
                let id = |session: &ImportedSession| {
                    let name = super::recorded_provider_id(&session.provider_session_id);
                    format!("{}:{number}", if name.is_empty() { UNNAMED } else { &name })
                };
                let Some(mut entry) = item(&payload, at, &mut log) else {
                    continue;
                };
                entry.message_id = id(&session);
                entry.parent_message_id = session
                    .entries
                    .last()
                    .map(|e: &ImportedEntry| e.message_id.clone());
                if entry.role == Role::Assistant {
                    usage_target = Some(session.entries.len());
                }
                session.entries.push(entry);
            }
            "event_msg" => match str_field(&payload, "type") {
                Some("token_count") => {
                    let last = payload
                        .get("info")
                        .and_then(|i| i.get("last_token_usage"))
                        .and_then(Value::as_object);
                    match (last, usage_target.take()) {
                        (Some(usage), Some(i)) => {
                            session.entries[i].turn_usage = Some(TurnUsage {
                                model: session.model.clone().unwrap_or_default(),
                                input_tokens: u64_field(usage, "input_tokens"),
                                output_tokens: u64_field(usage, "output_tokens"),
                                cache_read_tokens: 0,
                                cache_write_tokens: 0,
                            });
                        }
                        _ => log.skip("event_msg:token_count"),
                    }
                }
                Some(other) => log.skip(&format!("event_msg:{other}")),
                None => log.skip("event_msg"),
            },
            other => log.skip(other),
        }
    }
    if session.provider_session_id.is_empty() {
        // No session line: a fragment, still importable.
        session.provider_session_id = UNNAMED.into();
    }
    if !session.entries.is_empty() {
        log.sessions.push(session);
    }
    log
}

fn blank(role: Role, content: String, created_at: u64) -> ImportedEntry {
    ImportedEntry {
        message_id: String::new(),
        parent_message_id: None,
        role,
        content,
        created_at,
        tool_calls: None,
        tool_call_id: None,
        turn_usage: None,
        tool_status: None,
        reasoning: None,
        attachments: Vec::new(),
        kind: None,
        token_count: None,
        turn_id: None,
    }
}

/// The entry a response item becomes, if any.
fn item(payload: &Map<String, Value>, at: u64, log: &mut ImportedLog) -> Option<ImportedEntry> {
    let kind = str_field(payload, "type").unwrap_or("(untyped)");
    match kind {
        "message" => {
            let text = text_of(payload.get("content").unwrap_or(&Value::Null));
            let role = match str_field(payload, "role") {
                Some("assistant") => Role::Assistant,
                Some("user") if is_context_block(&text) => Role::System,
                Some("user") => Role::User,
                Some("developer" | "system") => Role::System,
                _ => {
                    log.skip("message:unknown_role");
                    return None;
                }
            };
            Some(blank(role, text, at))
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let arguments = payload
                .get("arguments")
                .or_else(|| payload.get("input"))
                .or_else(|| payload.get("action"))
                .cloned()
                .unwrap_or(Value::Null);
            let mut e = blank(Role::Assistant, String::new(), at);
            e.tool_calls = Some(json!([{
                "id": payload.get("call_id").cloned().unwrap_or(Value::Null),
                "name": payload.get("name").and_then(Value::as_str).unwrap_or(kind),
                "arguments": arguments,
            }]));
            Some(e)
        }
        "function_call_output" | "custom_tool_call_output" => {
            let output = match payload.get("output") {
                Some(Value::Object(o)) => text_of(o.get("content").unwrap_or(&Value::Null)),
                Some(other) => text_of(other),
                None => String::new(),
            };
            let mut e = blank(Role::Tool, output, at);
            e.tool_call_id = str_field(payload, "call_id").map(str::to_owned);
            Some(e)
        }
        other => {
            log.skip(&format!("response_item:{other}"));
            None
        }
    }
}

/// Codex sends its environment and the user's instructions as user messages.
fn is_context_block(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md instructions")
}
