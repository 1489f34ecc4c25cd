//! Claude Code session logs: one JSON object per line with `type` (`user`, `assistant`,
//! `system`, `summary`, …), `uuid`, `parentUuid`, `sessionId`, `timestamp`, `cwd`,
//! `version`, `gitBranch`, `isSidechain` and, for messages, `message` in the Anthropic
//! Messages shape (`content` a string or blocks: `text`, `thinking`, `tool_use`,
//! `tool_result`; `usage` on assistant messages).
//!
//! - A user line whose content holds `tool_result` blocks becomes one `tool` entry per
//!   block; other text becomes a `user` entry.
//! - An assistant line becomes one `assistant` entry: its text, and its `tool_use`
//!   blocks as `tool_calls` (`id`, `name`, `input`). Thinking is not imported. Claude
//!   Code writes one line per content block of a response and repeats the response's
//!   usage on each; the usage is kept on the first line of each response only.
//! - Messages form a tree through `parentUuid`. The session is the path that ends at the
//!   last message; a message off that path starts a branch (an edited or rewound turn),
//!   imported as its own session that forks the main one after the branch's parent.
//! - Sidechain lines (sub-agent work, `isSidechain: true`) and line types Spool does not
//!   import (`summary`, `file-history-snapshot`, …) are counted, not imported.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::{
    ImportFormat, ImportedEntry, ImportedLog, ImportedSession, json_lines, str_field, text_of,
    u64_field,
};
use crate::types::{Role, TurnUsage};

/// One message line, as entries.
struct Node {
    uuid: String,
    parent: Option<String>,
    entries: Vec<ImportedEntry>,
}

/// Parses a Claude Code session log.
pub fn parse_claude_code(text: &str) -> ImportedLog {
    let mut log = ImportedLog::new(ImportFormat::ClaudeCode);
    let mut nodes: Vec<Node> = Vec::new();
    let mut session_id: Option<String> = None;
    let mut meta = Meta::default();
    let mut responses_seen = BTreeSet::new();
    for (number, line) in json_lines(text, &mut log) {
        let kind = str_field(&line, "type").unwrap_or("(untyped)").to_owned();
        if !matches!(kind.as_str(), "user" | "assistant" | "system") {
            log.skip(&kind);
            continue;
        }
        if line.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            log.skip("sidechain");
            continue;
        }
        if session_id.is_none() {
            session_id = str_field(&line, "sessionId").map(str::to_owned);
        }
        meta.take(&line);
        let uuid = str_field(&line, "uuid")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("line-{number}"));
        let created_at = str_field(&line, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(0);
        let entries = match kind.as_str() {
            "system" => vec![entry(
                &uuid,
                Role::System,
                text_of(line.get("content").unwrap_or(&Value::Null)),
                created_at,
            )],
            "user" => user_entries(&line, &uuid, created_at),
            _ => assistant_entry(&line, &uuid, created_at, &mut responses_seen, &mut meta)
                .into_iter()
                .collect(),
        };
        if entries.is_empty() {
            log.skip(&format!("{kind} (empty)"));
            continue;
        }
        nodes.push(Node {
            uuid,
            parent: str_field(&line, "parentUuid").map(str::to_owned),
            entries,
        });
    }
    let Some(last) = nodes.last() else {
        return log;
    };
    let id = session_id.unwrap_or_else(|| last.uuid.clone());
    split_branches(&mut log, &id, &meta, nodes);
    log
}

#[derive(Default)]
struct Meta {
    cwd: Option<String>,
    version: Option<String>,
    git_branch: Option<String>,
    model: Option<String>,
    started_at: Option<u64>,
}

impl Meta {
    fn take(&mut self, line: &Map<String, Value>) {
        let set = |slot: &mut Option<String>, key: &str| {
            if slot.is_none() {
                *slot = str_field(line, key)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned);
            }
        };
        set(&mut self.cwd, "cwd");
        set(&mut self.version, "version");
        set(&mut self.git_branch, "gitBranch");
        if self.started_at.is_none() {
            self.started_at = str_field(line, "timestamp").and_then(super::parse_rfc3339_ms);
        }
    }
}

fn entry(id: &str, role: Role, content: String, created_at: u64) -> ImportedEntry {
    ImportedEntry {
        message_id: id.to_owned(),
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

fn user_entries(line: &Map<String, Value>, uuid: &str, created_at: u64) -> Vec<ImportedEntry> {
    let content = line
        .get("message")
        .and_then(|m| m.get("content"))
        .unwrap_or(&Value::Null);
    let Value::Array(blocks) = content else {
        let text = text_of(content);
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![entry(uuid, Role::User, text, created_at)]
        };
    };
    let mut out = Vec::new();
    let mut text = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_result") => {
                let id = if out.is_empty() {
                    uuid.to_owned()
                } else {
                    format!("{uuid}#{}", out.len() + 1)
                };
                let mut e = entry(
                    &id,
                    Role::Tool,
                    text_of(block.get("content").unwrap_or(&Value::Null)),
                    created_at,
                );
                e.tool_call_id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                out.push(e);
            }
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    text.push(t);
                }
            }
            _ => {}
        }
    }
    if !text.is_empty() {
        let id = if out.is_empty() {
            uuid.to_owned()
        } else {
            format!("{uuid}#{}", out.len() + 1)
        };
        out.push(entry(&id, Role::User, text.join("\n"), created_at));
    }
    out
}

fn assistant_entry(
    line: &Map<String, Value>,
    uuid: &str,
    created_at: u64,
    responses_seen: &mut BTreeSet<String>,
    meta: &mut Meta,
) -> Option<ImportedEntry> {
    let message = line.get("message").and_then(Value::as_object)?;
    let mut text = Vec::new();
    let mut calls = Vec::new();
    match message.get("content") {
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block.get("text").and_then(Value::as_str) {
                            text.push(t.to_owned());
                        }
                    }
                    Some("tool_use") => calls.push(json!({
                        "id": block.get("id").cloned().unwrap_or(Value::Null),
                        "name": block.get("name").cloned().unwrap_or(Value::Null),
                        "input": block.get("input").cloned().unwrap_or(Value::Null),
                    })),
                    _ => {}
                }
            }
        }
        Some(other) => text.push(text_of(other)),
        None => {}
    }
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let model = str_field(message, "model").map(str::to_owned);
    if meta.model.is_none() {
        meta.model.clone_from(&model);
    }
    let mut e = entry(uuid, Role::Assistant, text.join("\n"), created_at);
    if !calls.is_empty() {
        e.tool_calls = Some(Value::Array(calls));
    }
    let response = str_field(message, "id").unwrap_or(uuid).to_owned();
    if let Some(usage) = message.get("usage").and_then(Value::as_object)
        && responses_seen.insert(response)
    {
        e.turn_usage = Some(TurnUsage {
            model: model.unwrap_or_default(),
            input_tokens: u64_field(usage, "input_tokens")
                + u64_field(usage, "cache_creation_input_tokens")
                + u64_field(usage, "cache_read_input_tokens"),
            output_tokens: u64_field(usage, "output_tokens"),
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        });
    }
    Some(e)
}

/// Turns the message tree into the main session (the path ending at the last message)
/// and one session per branch off it.
fn split_branches(log: &mut ImportedLog, id: &str, meta: &Meta, nodes: Vec<Node>) {
    let index: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.uuid.as_str(), i))
        .collect();
    // A parent the log does not hold (a skipped line) is read as "the line before".
    let parent_of = |i: usize| -> Option<usize> {
        match nodes[i].parent.as_deref() {
            None => None,
            Some(p) => index
                .get(p)
                .copied()
                .filter(|&j| j < i)
                .or(i.checked_sub(1)),
        }
    };
    let mut main = BTreeSet::new();
    let mut at = Some(nodes.len() - 1);
    while let Some(i) = at {
        if !main.insert(i) {
            break;
        }
        at = parent_of(i);
    }
    // Each node off the main path belongs to the branch of its parent, or opens one.
    let mut branch_of: BTreeMap<usize, usize> = BTreeMap::new();
    let mut branches: Vec<(Option<usize>, Vec<usize>)> = Vec::new();
    for i in (0..nodes.len()).filter(|i| !main.contains(i)) {
        match parent_of(i).and_then(|p| branch_of.get(&p).copied()) {
            Some(b) => {
                branches[b].1.push(i);
                branch_of.insert(i, b);
            }
            None => {
                branch_of.insert(i, branches.len());
                branches.push((parent_of(i), vec![i]));
            }
        }
    }
    let last_id = |i: usize| nodes[i].entries.last().map(|e| e.message_id.clone());
    let chain = |members: &[usize], first_parent: Option<String>| {
        let mut out = Vec::new();
        let mut parent = first_parent;
        for &i in members {
            for e in &nodes[i].entries {
                let mut e = e.clone();
                e.parent_message_id = parent.take();
                parent = Some(e.message_id.clone());
                out.push(e);
            }
        }
        out
    };
    let session = |provider_session_id: String, entries: Vec<ImportedEntry>| ImportedSession {
        provider_session_id,
        cwd: meta.cwd.clone(),
        model: meta.model.clone(),
        version: meta.version.clone(),
        git_branch: meta.git_branch.clone(),
        started_at: meta.started_at.unwrap_or(0),
        fork_of: None,
        spawned_by: None,
        title: None,
        entries,
        exported: None,
    };
    let main: Vec<usize> = main.into_iter().collect();
    log.sessions
        .push(session(id.to_owned(), chain(&main, None)));
    for (parent, members) in branches {
        let first = &nodes[members[0]].uuid;
        let after = parent.and_then(last_id);
        let mut s = session(format!("{id}@{first}"), chain(&members, after.clone()));
        s.started_at = s.entries.first().map_or(s.started_at, |e| e.created_at);
        s.fork_of = after.map(|after_message_id| super::ImportedFork {
            provider_session_id: id.to_owned(),
            after_message_id,
        });
        log.sessions.push(s);
    }
}
