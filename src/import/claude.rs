//! Claude Code session logs: one JSON object per line with `type` (`user`, `assistant`,
//! `system`, `summary`, …), `uuid`, `parentUuid`, `sessionId`, `timestamp`, `cwd`,
//! `version`, `gitBranch`, `isSidechain` (and `agentId` on a sub-agent's lines) and, for
//! messages, `message` in the Anthropic Messages shape (`content` a string or blocks:
//! `text`, `thinking`, `redacted_thinking`, `tool_use`, `tool_result`, `image`,
//! `document`; `id` and `usage` on assistant messages).
//!
//! What becomes what:
//! - A user line's `tool_result` blocks become one `tool` entry each, with the call's
//!   id, the result's text, its images as attachments and a status: `error` when
//!   `is_error` is set, `cancelled` when the user interrupted the tool (the result says
//!   `[Request interrupted by user…` or `The user doesn't want to take this action right
//!   now`, or the line's `toolUseResult.interrupted` is true), else `ok`. Its other text,
//!   images and documents become one `user` entry.
//! - A user line marked `isCompactSummary` (Claude's summary after compacting) becomes a
//!   `system` entry of kind `summary`; one marked `isMeta` (context Claude Code gives the
//!   model) a `user` entry of kind `context`; a local slash command or its output
//!   (`<command-name>`, `<local-command-stdout>`, `<bash-input>`, …) a `user` entry of
//!   kind `command`, as does a `system` line of subtype `local_command`.
//! - An assistant line becomes one `assistant` entry: its text, its `tool_use` blocks as
//!   `tool_calls` (`id`, `name`, `input`), its thinking as `reasoning` (a
//!   `redacted_thinking` block as `[redacted thinking: N bytes]`). A line with only
//!   thinking is an entry with empty content. Claude Code writes one response
//!   (`message.id`) as several lines, each repeating the usage so far: the response's
//!   first entry carries the last line's figures (`input_tokens`; cache reads and
//!   writes as `cache_read_tokens` / `cache_write_tokens`, not in `input_tokens`).
//! - A `system` line with text becomes a `system` entry; bookkeeping subtypes
//!   (`compact_boundary`, `microcompact_boundary`, `stop_hook_summary`,
//!   `turn_duration`) and system lines without text are counted in `skipped` as
//!   `system:<subtype>`. ANSI escape sequences are stripped from system and command
//!   text (hook and command output); a tool result's text is kept as written.
//! - `summary` lines name the session: the title of a session is the last summary whose
//!   `leafUuid` is one of its messages; the log's main session falls back to the log's
//!   last summary.
//! - Other line types (`file-history-snapshot`, `queue-operation`, `progress`, …) and
//!   block types the parser does not know (`block:<type>`) are counted in `skipped`.
//!
//! Sessions. Every line with a `uuid` is a node of a tree through `parentUuid` (or,
//! for a compaction's boundary, whose `parentUuid` is null, `logicalParentUuid`), and a
//! message's parent is its nearest imported ancestor *earlier in the log* (so a skipped
//! line in between changes nothing). A message's *conversation children* are user
//! prompts (plain user text) and assistant lines that start a response (a `message.id`
//! not seen earlier). Reading the log in order, a message joins its parent's session,
//! except a conversation child of a parent that already had one: that is a rewind (an
//! edited or retried turn), and it opens a branch, imported as its own session
//! `<session id>@<uuid>` that forks its parent's session after the parent. Tool results
//! (however a parallel tool call fans the tree out), continuation lines of a response,
//! meta, summary and command lines always join their parent's session. A line whose
//! parent the log does not hold (other than the first) continues the session of the line
//! before it. So the log's first path is its main session, and a prefix of a log gives a
//! prefix of every session (re-importing a grown log adds to them; see
//! [`super::import_session`] for usage figures that grow).
//!
//! Sub-agents. Sidechain lines (`isSidechain: true`) are sub-agent work: inline in old
//! logs, one `agent-<agentId>.jsonl` file per sub-agent in newer ones (beside the
//! session or in `<session>/subagents/`). Each sub-agent is its own session,
//! `<session id>@agent-<agentId>` (or, without `agentId`, `<session id>@<uuid of its
//! first line>`), `spawned_by` the log's session and, when the log says, the `Task` /
//! `Agent` tool call that started it: the call whose result's `toolUseResult.agentId`
//! names the agent, else the first unclaimed call whose `input.prompt` is the sub-agent's
//! first prompt. A sub-agent file parsed alone cannot name the call: the log it came
//! from does ([`ImportedLog::spawn_calls`]), and [`link_sub_agents`] links the files
//! parsed after it ([`parse_claude_code_files`] does so for a directory's files).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{
    ImportFormat, ImportedEntry, ImportedFork, ImportedLog, ImportedSession, ImportedSpawn,
    inline_attachment, json_lines, str_field, strip_ansi, text_of, u64_field,
};
use crate::types::{Attachment, EntryKind, Role, ToolStatus, TurnUsage};

/// Parses a Claude Code session log (a main session's log or a sub-agent's file).
pub fn parse_claude_code(text: &str) -> ImportedLog {
    let (mut log, links) = parse_with_links(text);
    log.spawn_calls = links;
    log
}

/// Links the sub-agent sessions of `log` whose spawning tool call their own file does
/// not name to a call an earlier log of the same directory named (`known`, what
/// [`ImportedLog::spawn_calls`] of the logs imported before it held), then adds `log`'s
/// own calls to `known`. A host that parses one file at a time calls it for each file,
/// main logs first, and so links a sub-agent file to the Task call that spawned it.
pub fn link_sub_agents(known: &mut SpawnCalls, log: &mut ImportedLog) {
    for s in &mut log.sessions {
        let Some(spawn) = &mut s.spawned_by else {
            continue;
        };
        if spawn.tool_call_id.is_none() {
            let agent = s
                .provider_session_id
                .strip_prefix(&format!("{}@agent-", spawn.provider_session_id));
            let prompt = first_prompt(&s.entries);
            spawn.tool_call_id = known.claim(&spawn.provider_session_id, agent, prompt, None);
        }
    }
    known.merge(std::mem::take(&mut log.spawn_calls));
}

/// Parses a directory's worth of Claude Code logs, given as `(path, text)` pairs, in the
/// order a host imports them: main logs first (in the order given), then sub-agent files
/// (a file name starting with `agent-`), so a sub-agent's parent session exists when the
/// sub-agent is imported. A sub-agent session whose own file cannot name the tool call
/// that spawned it gets it from the main logs of the same session (the Task result naming
/// its `agentId`, else the first unclaimed Task call with its first prompt). Returns each
/// path with its parsed log.
pub fn parse_claude_code_files<'a>(files: &[(&'a str, &str)]) -> Vec<(&'a str, ImportedLog)> {
    let is_agent = |path: &str| {
        path.rsplit(['/', '\\'])
            .next()
            .is_some_and(|name| name.starts_with("agent-"))
    };
    let mut order: Vec<usize> = (0..files.len())
        .filter(|&i| !is_agent(files[i].0))
        .collect();
    order.extend((0..files.len()).filter(|&i| is_agent(files[i].0)));
    let mut known = SpawnCalls::default();
    let mut out = Vec::with_capacity(files.len());
    for i in order {
        let (path, text) = files[i];
        let mut log = parse_claude_code(text);
        link_sub_agents(&mut known, &mut log);
        out.push((path, log));
    }
    out
}

/// What a log says about the tool calls that started sub-agents (see
/// [`link_sub_agents`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnCalls {
    /// Session id → agent id → the tool call whose result names the agent.
    by_agent: BTreeMap<String, BTreeMap<String, String>>,
    /// Task / Agent calls: session id, line number, the prompt, the call id.
    calls: Vec<(String, u64, String, String)>,
    /// Calls already linked to a sub-agent.
    claimed: BTreeSet<String>,
}

impl SpawnCalls {
    fn merge(&mut self, other: SpawnCalls) {
        for (session, agents) in other.by_agent {
            self.by_agent.entry(session).or_default().extend(agents);
        }
        self.calls.extend(other.calls);
        self.claimed.extend(other.claimed);
    }

    /// The call that started the sub-agent `agent` (or with first prompt `prompt`) of
    /// session `session`, among calls before line `before` when given.
    fn claim(
        &mut self,
        session: &str,
        agent: Option<&str>,
        prompt: Option<&str>,
        before: Option<u64>,
    ) -> Option<String> {
        if let Some(agent) = agent
            && let Some(call) = self.by_agent.get(session).and_then(|a| a.get(agent))
        {
            self.claimed.insert(call.clone());
            return Some(call.clone());
        }
        let prompt = prompt?.trim();
        let found = self
            .calls
            .iter()
            .find(|(s, line, p, call)| {
                s == session
                    && before.is_none_or(|b| *line < b)
                    && p.trim() == prompt
                    && !self.claimed.contains(call)
            })
            .map(|c| c.3.clone())?;
        self.claimed.insert(found.clone());
        Some(found)
    }
}

fn first_prompt(entries: &[ImportedEntry]) -> Option<&str> {
    entries
        .iter()
        .find(|e| e.role == Role::User && e.kind.is_none())
        .map(|e| e.content.as_str())
}

/// One line that became entries.
struct Node {
    number: u64,
    uuid: String,
    parent: Option<String>,
    sidechain: bool,
    agent_id: Option<String>,
    session_id: Option<String>,
    /// A user prompt or the first line of a response.
    conversation: bool,
    entries: Vec<ImportedEntry>,
    meta: Meta,
}

#[derive(Default, Clone)]
struct Meta {
    cwd: Option<String>,
    version: Option<String>,
    git_branch: Option<String>,
    model: Option<String>,
    started_at: Option<u64>,
}

impl Meta {
    fn of(line: &Map<String, Value>) -> Self {
        let get = |key: &str| {
            str_field(line, key)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Meta {
            cwd: get("cwd"),
            version: get("version"),
            git_branch: get("gitBranch"),
            model: line
                .get("message")
                .and_then(|m| m.get("model"))
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty() && *m != "<synthetic>")
                .map(str::to_owned),
            started_at: str_field(line, "timestamp").and_then(super::parse_rfc3339_ms),
        }
    }

    /// The first value of each field, over lines in order.
    fn fill(&mut self, other: &Meta) {
        for (slot, value) in [
            (&mut self.cwd, &other.cwd),
            (&mut self.version, &other.version),
            (&mut self.git_branch, &other.git_branch),
            (&mut self.model, &other.model),
        ] {
            if slot.is_none() {
                slot.clone_from(value);
            }
        }
        if self.started_at.is_none() {
            self.started_at = other.started_at;
        }
    }
}

/// One response, written as one or more lines.
#[derive(Default)]
struct Response {
    /// The node of its first entry.
    first: Option<usize>,
    /// The usage its last line reported so far, and the model.
    usage: Option<(Map<String, Value>, Option<String>)>,
}

/// Everything read from a log before it is cut into sessions.
#[derive(Default)]
struct Read {
    nodes: Vec<Node>,
    /// Every line's uuid → (line number, parent uuid).
    tree: BTreeMap<String, (u64, Option<String>)>,
    /// uuid → node index.
    node_of: BTreeMap<String, usize>,
    /// `summary` lines: (summary, leaf uuid), in log order.
    summaries: Vec<(String, Option<String>)>,
    /// Per response id (`message.id`): where it starts and its last usage.
    responses: BTreeMap<String, Response>,
    links: SpawnCalls,
}

impl Read {
    /// The nearest node above `parent`, each step earlier in the log than the last.
    fn ancestor(&self, parent: Option<&str>, mut before: u64) -> Option<usize> {
        let mut at = parent?;
        loop {
            let (number, up) = self.tree.get(at)?;
            if *number >= before {
                return None;
            }
            if let Some(&n) = self.node_of.get(at) {
                return Some(n);
            }
            before = *number;
            at = up.as_deref()?;
        }
    }

    /// The node a uuid names or, for a skipped line, its nearest node above.
    fn node_at(&self, uuid: &str) -> Option<usize> {
        match self.node_of.get(uuid) {
            Some(&n) => Some(n),
            None => {
                let (number, up) = self.tree.get(uuid)?;
                self.ancestor(up.as_deref(), *number)
            }
        }
    }
}

fn parse_with_links(text: &str) -> (ImportedLog, SpawnCalls) {
    let mut log = ImportedLog::new(ImportFormat::ClaudeCode);
    let mut read = Read::default();
    for (number, line) in json_lines(text, &mut log) {
        read_line(&mut log, &mut read, number, &line);
    }
    // Usage: the last figures of each response, on its first entry.
    for response in read.responses.values() {
        let (Some(n), Some((usage, model))) = (&response.first, &response.usage) else {
            continue;
        };
        let mut u = TurnUsage::new(
            model.clone().unwrap_or_else(|| "unknown".to_owned()),
            u64_field(usage, "input_tokens"),
            u64_field(usage, "output_tokens"),
        );
        u.cache_read_tokens = u64_field(usage, "cache_read_input_tokens");
        u.cache_write_tokens = u64_field(usage, "cache_creation_input_tokens");
        if let Some(e) = read.nodes[*n].entries.first_mut() {
            e.turn_usage = Some(u);
        }
    }
    split_sessions(&mut log, &mut read);
    (log, read.links)
}

fn read_line(log: &mut ImportedLog, read: &mut Read, number: u64, line: &Map<String, Value>) {
    let kind = str_field(line, "type").unwrap_or("(untyped)").to_owned();
    let uuid = str_field(line, "uuid").map(str::to_owned);
    let parent = str_field(line, "parentUuid")
        .or_else(|| str_field(line, "logicalParentUuid"))
        .map(str::to_owned);
    if let Some(u) = &uuid {
        if read.tree.contains_key(u) {
            log.skip("duplicate uuid");
            return;
        }
        read.tree.insert(u.clone(), (number, parent.clone()));
    }
    let sidechain = line.get("isSidechain").and_then(Value::as_bool) == Some(true);
    let session_id = str_field(line, "sessionId").map(str::to_owned);
    let created_at = str_field(line, "timestamp")
        .and_then(super::parse_rfc3339_ms)
        .unwrap_or(0);
    let id = uuid.clone().unwrap_or_else(|| format!("line-{number}"));
    let mut conversation = false;
    let entries = match kind.as_str() {
        "summary" => {
            if let Some(s) = str_field(line, "summary").filter(|s| !s.trim().is_empty()) {
                let leaf = str_field(line, "leafUuid").map(str::to_owned);
                read.summaries.push((s.to_owned(), leaf));
            } else {
                log.skip("summary (empty)");
            }
            return;
        }
        "system" => match system_entry(line, &id, created_at) {
            Ok(e) => vec![e],
            Err(skip) => {
                log.skip(&skip);
                return;
            }
        },
        "user" => {
            let (entries, prompt) = user_entries(log, line, &id, created_at);
            conversation = prompt;
            if !sidechain {
                note_spawn_result(read, line, session_id.as_deref());
            }
            entries
        }
        "assistant" => {
            let Some(message) = line.get("message").and_then(Value::as_object) else {
                log.skip("assistant (no message)");
                return;
            };
            let response = str_field(message, "id").map(str::to_owned);
            let seen = response
                .as_ref()
                .is_some_and(|r| read.responses.contains_key(r));
            conversation = !seen;
            let e = assistant_entry(log, message, &id, created_at);
            if let Some(session) = session_id.as_deref().filter(|_| !sidechain) {
                note_spawn_calls(read, message, session, number);
            }
            let index = read.nodes.len();
            if let Some(r) = response {
                let slot = read.responses.entry(r).or_default();
                if slot.first.is_none() && e.is_some() {
                    slot.first = Some(index);
                }
                if let Some(usage) = message.get("usage").and_then(Value::as_object) {
                    let model = str_field(message, "model")
                        .filter(|m| !m.is_empty())
                        .map(str::to_owned);
                    slot.usage = Some((usage.clone(), model));
                }
            }
            e.into_iter().collect()
        }
        other => {
            log.skip(other);
            return;
        }
    };
    if entries.is_empty() {
        log.skip(&format!("{kind} (empty)"));
        return;
    }
    read.node_of.insert(id.clone(), read.nodes.len());
    read.nodes.push(Node {
        number,
        uuid: id,
        parent,
        sidechain,
        agent_id: str_field(line, "agentId").map(str::to_owned),
        session_id,
        conversation,
        entries,
        meta: Meta::of(line),
    });
}

/// A Task result naming the sub-agent it ran (`toolUseResult.agentId`).
fn note_spawn_result(read: &mut Read, line: &Map<String, Value>, session: Option<&str>) {
    let (Some(session), Some(agent)) = (
        session,
        line.get("toolUseResult")
            .and_then(|r| r.get("agentId"))
            .and_then(Value::as_str),
    ) else {
        return;
    };
    let call = line
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .and_then(|blocks| {
            blocks
                .iter()
                .find_map(|b| b.get("tool_use_id").and_then(Value::as_str))
        });
    if let Some(call) = call {
        read.links
            .by_agent
            .entry(session.to_owned())
            .or_default()
            .insert(agent.to_owned(), call.to_owned());
    }
}

/// Task / Agent tool calls and their prompts.
fn note_spawn_calls(read: &mut Read, message: &Map<String, Value>, session: &str, number: u64) {
    let Some(blocks) = message.get("content").and_then(Value::as_array) else {
        return;
    };
    for b in blocks {
        let is_spawn = b.get("type").and_then(Value::as_str) == Some("tool_use")
            && matches!(
                b.get("name").and_then(Value::as_str),
                Some("Task" | "Agent")
            );
        let prompt = b
            .get("input")
            .and_then(|i| i.get("prompt"))
            .and_then(Value::as_str);
        if let (true, Some(prompt), Some(id)) =
            (is_spawn, prompt, b.get("id").and_then(Value::as_str))
        {
            read.links
                .calls
                .push((session.to_owned(), number, prompt.to_owned(), id.to_owned()));
        }
    }
}

/// System subtypes that are bookkeeping, never content.
const NOISE_SUBTYPES: [&str; 4] = [
    "compact_boundary",
    "microcompact_boundary",
    "stop_hook_summary",
    "turn_duration",
];

fn system_entry(
    line: &Map<String, Value>,
    id: &str,
    created_at: u64,
) -> Result<ImportedEntry, String> {
    let subtype = str_field(line, "subtype");
    let skip = || match subtype {
        Some(s) => format!("system:{s}"),
        None => "system (empty)".to_owned(),
    };
    if subtype.is_some_and(|s| NOISE_SUBTYPES.contains(&s)) {
        return Err(skip());
    }
    let content = strip_ansi(&text_of(line.get("content").unwrap_or(&Value::Null)));
    if content.trim().is_empty() {
        return Err(skip());
    }
    let mut e = ImportedEntry::new(id, Role::System, content, created_at);
    if subtype == Some("local_command") {
        e.kind = Some(EntryKind::Command);
    }
    Ok(e)
}

/// Tags that open a local command's line (a slash command, its output, `!` shell mode).
const COMMAND_TAGS: [&str; 8] = [
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
];

fn is_command(text: &str) -> bool {
    let t = text.trim_start();
    COMMAND_TAGS.iter().any(|tag| t.starts_with(tag)) || t.starts_with("<bash-stderr>")
}

/// A user line's entries, and whether it is a prompt (plain user text).
fn user_entries(
    log: &mut ImportedLog,
    line: &Map<String, Value>,
    uuid: &str,
    created_at: u64,
) -> (Vec<ImportedEntry>, bool) {
    let content = line
        .get("message")
        .and_then(|m| m.get("content"))
        .unwrap_or(&Value::Null);
    let next_id = |out: &Vec<ImportedEntry>| {
        if out.is_empty() {
            uuid.to_owned()
        } else {
            format!("{uuid}#{}", out.len() + 1)
        }
    };
    let interrupted = line
        .get("toolUseResult")
        .and_then(|r| r.get("interrupted"))
        .and_then(Value::as_bool)
        == Some(true);
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    match content {
        Value::Array(blocks) => {
            for block in blocks {
                let Some(block) = block.as_object() else {
                    continue;
                };
                match str_field(block, "type") {
                    Some("tool_result") => {
                        let inner = block.get("content").unwrap_or(&Value::Null);
                        let body = text_of_blocks(inner);
                        let mut e = ImportedEntry::new(next_id(&out), Role::Tool, body, created_at);
                        e.tool_call_id = str_field(block, "tool_use_id").map(str::to_owned);
                        if let Value::Array(parts) = inner {
                            e.attachments = parts
                                .iter()
                                .filter_map(Value::as_object)
                                .filter_map(|p| attachment(log, p))
                                .collect();
                        }
                        let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
                        e.tool_status = Some(if interrupted || was_cancelled(&e.content) {
                            ToolStatus::Cancelled
                        } else if is_error {
                            ToolStatus::Error
                        } else {
                            ToolStatus::Ok
                        });
                        out.push(e);
                    }
                    Some("text") => {
                        if let Some(t) = str_field(block, "text") {
                            text.push(t.to_owned());
                        }
                    }
                    Some("image" | "document") => {
                        if let Some(a) = attachment(log, block) {
                            attachments.push(a);
                        }
                    }
                    Some(other) => log.skip(&format!("block:{other}")),
                    None => {}
                }
            }
        }
        other => {
            let t = text_of(other);
            if !t.is_empty() {
                text.push(t);
            }
        }
    }
    let mut prompt = false;
    if !text.is_empty() || !attachments.is_empty() {
        let body = text.join("\n");
        let flag = |key: &str| line.get(key).and_then(Value::as_bool) == Some(true);
        let mut e = if flag("isCompactSummary") {
            let mut e = ImportedEntry::new(next_id(&out), Role::System, body, created_at);
            e.kind = Some(EntryKind::Summary);
            e
        } else if is_command(&body) {
            let mut e =
                ImportedEntry::new(next_id(&out), Role::User, strip_ansi(&body), created_at);
            e.kind = Some(EntryKind::Command);
            e
        } else if flag("isMeta") {
            let mut e = ImportedEntry::new(next_id(&out), Role::User, body, created_at);
            e.kind = Some(EntryKind::Context);
            e
        } else {
            prompt = out.is_empty();
            ImportedEntry::new(next_id(&out), Role::User, body, created_at)
        };
        e.attachments = attachments;
        out.push(e);
    }
    (out, prompt)
}

/// The text of a tool result's content (text parts only; images are attachments).
fn text_of_blocks(content: &Value) -> String {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) if str_field(o, "type").is_none_or(|t| t == "text") => {
                    str_field(o, "text")
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => text_of(other),
    }
}

/// Whether a tool result is Claude Code's word that the user stopped the tool.
fn was_cancelled(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("[Request interrupted by user")
        || t.starts_with("The user doesn't want to take this action right now")
}

/// An `image` or `document` block as an attachment (counted in the log); `None`, counted
/// in `skipped`, when its source is not one the parser reads.
fn attachment(log: &mut ImportedLog, block: &Map<String, Value>) -> Option<Attachment> {
    let kind = match str_field(block, "type") {
        Some("image") => "image",
        Some("document") => "document",
        _ => return None,
    };
    let source = block.get("source").and_then(Value::as_object);
    let media_type = source.and_then(|s| str_field(s, "media_type"));
    let found = match source.and_then(|s| str_field(s, "type")) {
        Some("base64") => source
            .and_then(|s| str_field(s, "data"))
            .and_then(|data| inline_attachment(kind, media_type, data)),
        Some("text") => source
            .and_then(|s| str_field(s, "data"))
            .map(|data| super::bytes_attachment(kind, media_type, data.as_bytes())),
        Some("url") => source
            .and_then(|s| str_field(s, "url"))
            .map(|url| Attachment {
                kind: kind.to_owned(),
                media_type: media_type.map(str::to_owned),
                size: 0,
                sha256: None,
                source: Some(url.to_owned()),
            }),
        Some("file") => source
            .and_then(|s| str_field(s, "file_id"))
            .map(|file| Attachment {
                kind: kind.to_owned(),
                media_type: media_type.map(str::to_owned),
                size: 0,
                sha256: None,
                source: Some(format!("file:{file}")),
            }),
        _ => None,
    };
    match &found {
        Some(a) => {
            log.attachments += 1;
            if a.sha256.is_some() {
                log.attachment_bytes_not_stored += a.size;
            }
        }
        None => log.skip(&format!("{kind} (unreadable source)")),
    }
    found
}

fn assistant_entry(
    log: &mut ImportedLog,
    message: &Map<String, Value>,
    uuid: &str,
    created_at: u64,
) -> Option<ImportedEntry> {
    let mut text = Vec::new();
    let mut calls = Vec::new();
    let mut reasoning = Vec::new();
    match message.get("content") {
        Some(Value::Array(blocks)) => {
            for block in blocks.iter().filter_map(Value::as_object) {
                match str_field(block, "type") {
                    Some("text") => {
                        if let Some(t) = str_field(block, "text") {
                            text.push(t.to_owned());
                        }
                    }
                    Some("tool_use") => calls.push(json!({
                        "id": block.get("id").cloned().unwrap_or(Value::Null),
                        "name": block.get("name").cloned().unwrap_or(Value::Null),
                        "input": block.get("input").cloned().unwrap_or(Value::Null),
                    })),
                    Some("thinking") => {
                        if let Some(t) = str_field(block, "thinking").filter(|t| !t.is_empty()) {
                            reasoning.push(t.to_owned());
                        }
                    }
                    Some("redacted_thinking") => {
                        let n = str_field(block, "data").map_or(0, str::len);
                        reasoning.push(format!("[redacted thinking: {n} bytes]"));
                    }
                    Some(other) => log.skip(&format!("block:{other}")),
                    None => {}
                }
            }
        }
        Some(other) => text.push(text_of(other)),
        None => {}
    }
    if text.iter().all(String::is_empty) && calls.is_empty() && reasoning.is_empty() {
        return None;
    }
    let mut e = ImportedEntry::new(uuid, Role::Assistant, text.join("\n"), created_at);
    if !calls.is_empty() {
        e.tool_calls = Some(Value::Array(calls));
    }
    if !reasoning.is_empty() {
        e.reasoning = Some(reasoning.join("\n\n"));
    }
    Some(e)
}

/// Which session-tree a line belongs to: the log's own, or a sub-agent's.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Main,
    Agent(String),
    Side(String),
}

/// One session being built: its id, where it forks, its nodes.
struct Branch {
    id: String,
    fork: Option<(usize, usize)>,
    members: Vec<usize>,
}

/// Cuts the nodes into sessions: per group (the log's own lines, each sub-agent's), the
/// first path and one session per rewind.
fn split_sessions(log: &mut ImportedLog, read: &mut Read) {
    if read.nodes.is_empty() {
        return;
    }
    let main_id = read
        .nodes
        .iter()
        .find_map(|n| n.session_id.clone())
        .unwrap_or_else(|| read.nodes[0].uuid.clone());
    // Groups, in order of first appearance.
    let mut group_of: Vec<Group> = Vec::with_capacity(read.nodes.len());
    let mut groups: Vec<Group> = Vec::new();
    for i in 0..read.nodes.len() {
        let n = &read.nodes[i];
        let g = if !n.sidechain {
            Group::Main
        } else if let Some(agent) = &n.agent_id {
            Group::Agent(agent.clone())
        } else {
            match read.ancestor(n.parent.as_deref(), n.number) {
                Some(a) if read.nodes[a].sidechain && read.nodes[a].agent_id.is_none() => {
                    group_of[a].clone()
                }
                _ => Group::Side(n.uuid.clone()),
            }
        };
        if !groups.contains(&g) {
            groups.push(g.clone());
        }
        group_of.push(g);
    }
    let last_summary = read.summaries.last().map(|s| s.0.clone());
    for group in groups {
        let members: Vec<usize> = (0..read.nodes.len())
            .filter(|&i| group_of[i] == group)
            .collect();
        let first = &read.nodes[members[0]];
        let sid = first.session_id.clone().unwrap_or_else(|| main_id.clone());
        let id = match &group {
            Group::Main => main_id.clone(),
            Group::Agent(agent) => format!("{sid}@agent-{agent}"),
            Group::Side(uuid) => format!("{sid}@{uuid}"),
        };
        let spawned_by = (group != Group::Main).then(|| {
            let agent = match &group {
                Group::Agent(a) => Some(a.as_str()),
                _ => None,
            };
            let prompt = members
                .iter()
                .find_map(|&i| first_prompt(&read.nodes[i].entries))
                .map(str::to_owned);
            ImportedSpawn {
                provider_session_id: sid.clone(),
                tool_call_id: read
                    .links
                    .claim(&sid, agent, prompt.as_deref(), Some(first.number)),
            }
        });
        let branches = branch(read, &members, &group_of, &id);
        let mut meta = Meta::default();
        for &i in &members {
            meta.fill(&read.nodes[i].meta);
        }
        for (b, branch) in branches.iter().enumerate() {
            let mut parent = branch
                .fork
                .map(|(_, after)| {
                    read.nodes[after]
                        .entries
                        .last()
                        .map(|e| e.message_id.clone())
                })
                .unwrap_or_default();
            let mut entries = Vec::new();
            for &i in &branch.members {
                for e in &read.nodes[i].entries {
                    let mut e = e.clone();
                    e.parent_message_id = parent.take();
                    parent = Some(e.message_id.clone());
                    entries.push(e);
                }
            }
            let in_branch = |leaf: &Option<String>| {
                leaf.as_deref()
                    .and_then(|l| read.node_at(l))
                    .is_some_and(|n| branch.members.contains(&n))
            };
            let title = read
                .summaries
                .iter()
                .rev()
                .find(|(_, leaf)| in_branch(leaf))
                .map(|s| s.0.clone())
                .or_else(|| (group == Group::Main && b == 0).then(|| last_summary.clone())?);
            let started_at = if b == 0 {
                meta.started_at.unwrap_or(0)
            } else {
                entries.first().map_or(0, |e| e.created_at)
            };
            let fork_of = branch.fork.and_then(|(of, after)| {
                Some(ImportedFork {
                    provider_session_id: branches[of].id.clone(),
                    after_message_id: read.nodes[after].entries.last()?.message_id.clone(),
                })
            });
            log.sessions.push(ImportedSession {
                provider_session_id: branch.id.clone(),
                cwd: meta.cwd.clone(),
                model: meta.model.clone(),
                version: meta.version.clone(),
                git_branch: meta.git_branch.clone(),
                started_at,
                fork_of,
                spawned_by: if b == 0 { spawned_by.clone() } else { None },
                title,
                exported: None,
                entries,
            });
        }
    }
}

/// The sessions of one group's nodes (`members`, in log order): the first path, then one
/// branch per rewind, each with the branch and node it forks after.
fn branch(read: &Read, members: &[usize], group_of: &[Group], id: &str) -> Vec<Branch> {
    let mut branches: Vec<Branch> = Vec::new();
    let mut branch_of: BTreeMap<usize, usize> = BTreeMap::new();
    let mut answered: BTreeSet<usize> = BTreeSet::new();
    let mut previous: Option<usize> = None;
    for &i in members {
        let n = &read.nodes[i];
        let above = read
            .ancestor(n.parent.as_deref(), n.number)
            .filter(|&a| group_of[a] == group_of[i] && branch_of.contains_key(&a));
        let b = match (above, previous) {
            (Some(a), _) => {
                let rewind = n.conversation && !answered.insert(a);
                if rewind {
                    branches.push(Branch {
                        id: format!("{id}@{}", n.uuid),
                        fork: Some((branch_of[&a], a)),
                        members: Vec::new(),
                    });
                    branches.len() - 1
                } else {
                    branch_of[&a]
                }
            }
            // A line whose parent the log does not hold continues the line before it.
            (None, Some(p)) => {
                if n.conversation {
                    answered.insert(p);
                }
                branch_of[&p]
            }
            (None, None) => {
                branches.push(Branch {
                    id: id.to_owned(),
                    fork: None,
                    members: Vec::new(),
                });
                0
            }
        };
        branches[b].members.push(i);
        branch_of.insert(i, b);
        previous = Some(i);
    }
    branches
}
