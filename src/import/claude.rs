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

use super::uuid_tree::{Link, UuidTree};
use super::{
    ImportFormat, ImportedEntry, ImportedFork, ImportedLog, ImportedSession, ImportedSpawn,
    inline_attachment, str_field, strip_ansi, text_of, u64_field,
};
use crate::types::{Attachment, EntryKind, Role, ToolStatus, TurnUsage};

/// Parses a Claude Code session log (a main session's log or a sub-agent's file).
pub fn parse_claude_code(text: &str) -> ImportedLog {
    parse_claude_slice(&mut Carry::default(), 0, text, true)
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
            // A log read a slice at a time lists a session once per slice: the call
            // it was linked to stays its call.
            if let Some(call) = known.linked.get(&s.provider_session_id) {
                spawn.tool_call_id = Some(call.clone());
                continue;
            }
            let agent = s
                .provider_session_id
                .strip_prefix(&format!("{}@agent-", spawn.provider_session_id));
            let prompt = first_prompt(&s.entries);
            spawn.tool_call_id = known.claim(&spawn.provider_session_id, agent, prompt, None);
            if let Some(call) = &spawn.tool_call_id {
                known
                    .linked
                    .insert(s.provider_session_id.clone(), call.clone());
            }
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
    /// Sub-agent session id → the call [`link_sub_agents`] linked it to.
    #[serde(default)]
    linked: BTreeMap<String, String>,
}

impl SpawnCalls {
    fn merge(&mut self, other: SpawnCalls) {
        for (session, agents) in other.by_agent {
            self.by_agent.entry(session).or_default().extend(agents);
        }
        self.calls.extend(other.calls);
        self.claimed.extend(other.claimed);
        self.linked.extend(other.linked);
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

/// What a parse carries from one slice of a log to the next ([`super::ParseCursor`]):
/// the log's tree as far as it was read, a few dozen bytes a line (each uuid and the
/// message it stands for), never the lines themselves; the sessions made so far and
/// what each was last given as; each response's usage; the summaries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Carry {
    /// Every uuid read so far and the node it stands for.
    tree: UuidTree,
    nodes: Vec<NodeState>,
    groups: Vec<GroupState>,
    sessions: Vec<SessionState>,
    /// Per response id (`message.id`).
    responses: BTreeMap<String, ResponseState>,
    /// The models the responses' usage names (their usage refers to them by index).
    models: Vec<String>,
    /// `summary` lines: (summary, leaf uuid), in log order.
    summaries: Vec<(String, Option<String>)>,
    /// The log's own session id, fixed by the first slice with a message.
    main_id: Option<String>,
    links: SpawnCalls,
}

/// A line that became entries, as later lines need it: its group, its session, whether
/// a conversation child already follows it (a second one is a rewind), and how many
/// entries it became (a branch forks after its last: its uuid, `#n` after the first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct NodeState(u32, u32, bool, u32);

impl NodeState {
    fn group(&self) -> u32 {
        self.0
    }

    fn session(&self) -> u32 {
        self.1
    }
}

/// One session-tree: the log's own lines, or one sub-agent's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct GroupState {
    key: Group,
    /// The `sessionId` of its first line.
    session_id: Option<String>,
    /// The line number of its first line.
    first_line: u64,
    meta: Meta,
    /// Its last node.
    previous: Option<u32>,
    /// Its first user prompt.
    prompt: Option<String>,
    /// The tool call that spawned it, once found.
    spawn_call: Option<String>,
}

/// One session being built: the group's first path, or a rewind's branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SessionState {
    group: u32,
    /// The uuid of the rewind that opened it (its id is the group's, `@` it).
    rewind: Option<String>,
    /// The session and the message it forks after.
    fork: Option<(u32, String)>,
    /// Its last entry's message id (the next entry's parent).
    last_message: Option<String>,
    /// Its first entry's time (a branch starts then).
    first_at: Option<u64>,
    /// The session as last given, without entries.
    given: Option<ImportedSession>,
}

/// One response, written as one or more lines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct ResponseState {
    /// The session of its first entry and the entry.
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    first: Option<(u32, First)>,
    /// The usage its last line reported so far (its first entry, once given, carries
    /// it at the end of every slice): the model's index in [`Carry::models`], input,
    /// output, cache read and cache write tokens.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    usage: Option<(u32, [u64; 4])>,
}

/// A response's first entry: the entry of node `n` (its id is the node's uuid), or,
/// for a line without a uuid, its message id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum First {
    Node(u32),
    Id(String),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    fn fill(&mut self, other: Meta) {
        for (slot, value) in [
            (&mut self.cwd, other.cwd),
            (&mut self.version, other.version),
            (&mut self.git_branch, other.git_branch),
            (&mut self.model, other.model),
        ] {
            if slot.is_none() {
                *slot = value;
            }
        }
        if self.started_at.is_none() {
            self.started_at = other.started_at;
        }
    }
}

/// Which session-tree a line belongs to: the log's own, or a sub-agent's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Group {
    Main,
    Agent(String),
    Side(String),
}

/// One line that became entries, before it is placed.
struct Node {
    number: u64,
    id: String,
    uuid: Option<String>,
    /// The node its parent stands for.
    above: Option<u32>,
    sidechain: bool,
    agent_id: Option<String>,
    session_id: Option<String>,
    /// A user prompt or the first line of a response.
    conversation: bool,
    entries: Vec<ImportedEntry>,
    meta: Meta,
}

/// The parse of one slice in progress.
struct Slice<'c> {
    log: ImportedLog,
    carry: &'c mut Carry,
    /// Each session's entries in this slice.
    out: BTreeMap<u32, Vec<ImportedEntry>>,
    /// Responses whose first entry this slice placed: its session and its index in that
    /// session's output.
    placed: BTreeMap<String, (u32, usize)>,
    /// Responses whose usage or first entry this slice reported, with the usage their
    /// first entry was given with before it (`None`: not given).
    touched: BTreeMap<String, Option<(u32, [u64; 4])>>,
    /// The first `sessionId` of this slice's messages, and its first message's id
    /// (the log's session id when no line names one).
    first_session: (Option<String>, Option<String>),
}

/// Parses the lines of `text`, numbered from `first_line + 1`, continuing from `carry`
/// (left as the next slice needs it); `last` when `text` ends the log. The sessions
/// hold this slice's entries, and a session is listed when it has some or when what it
/// was given as changed (its title, its metadata, the call that spawned it). A
/// response's first entry in an earlier slice whose usage this slice reported is given
/// again as a `usage_only` entry, counted in `repeated`.
pub(super) fn parse_claude_slice(
    carry: &mut Carry,
    first_line: u64,
    text: &str,
    last: bool,
) -> ImportedLog {
    let mut s = Slice {
        log: ImportedLog::new(ImportFormat::ClaudeCode),
        carry,
        out: BTreeMap::new(),
        touched: BTreeMap::new(),
        placed: BTreeMap::new(),
        first_session: (None, None),
    };
    let mut lines = super::JsonLines::new(text);
    while let Some((number, line)) = lines.next(&mut s.log) {
        s.read_line(first_line + number, &line);
    }
    super::renumber(&mut s.log, first_line);
    s.usage();
    s.finish(last)
}

impl Slice<'_> {
    fn read_line(&mut self, number: u64, line: &Map<String, Value>) {
        let log = &mut self.log;
        let carry = &mut *self.carry;
        let kind = str_field(line, "type").unwrap_or("(untyped)").to_owned();
        let uuid = str_field(line, "uuid").map(str::to_owned);
        let parent = str_field(line, "parentUuid").or_else(|| str_field(line, "logicalParentUuid"));
        // Resolved before the line's own uuid is known: a line is not its own parent.
        let above = parent.and_then(|p| carry.tree.get(p)).and_then(Link::node);
        if let Some(u) = &uuid {
            if carry.tree.contains(u) {
                log.skip("duplicate uuid");
                return;
            }
            carry.tree.insert(u, above.map_or(Link::None, Link::Above));
        }
        let sidechain = line.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let session_id = str_field(line, "sessionId").map(str::to_owned);
        let created_at = str_field(line, "timestamp")
            .and_then(super::parse_rfc3339_ms)
            .unwrap_or(0);
        let id = uuid.clone().unwrap_or_else(|| format!("line-{number}"));
        let mut conversation = false;
        let mut response = None;
        let entries = match kind.as_str() {
            "summary" => {
                if let Some(s) = str_field(line, "summary").filter(|s| !s.trim().is_empty()) {
                    let leaf = str_field(line, "leafUuid").map(str::to_owned);
                    carry.summaries.push((s.to_owned(), leaf));
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
                    note_spawn_result(&mut carry.links, line, session_id.as_deref());
                }
                entries
            }
            "assistant" => {
                let Some(message) = line.get("message").and_then(Value::as_object) else {
                    log.skip("assistant (no message)");
                    return;
                };
                let r = str_field(message, "id").map(str::to_owned);
                conversation = !r.as_ref().is_some_and(|r| carry.responses.contains_key(r));
                let e = assistant_entry(log, message, &id, created_at);
                if let Some(session) = session_id.as_deref().filter(|_| !sidechain) {
                    note_spawn_calls(&mut carry.links, message, session, number);
                }
                if let Some(r) = r {
                    let slot = carry.responses.entry(r.clone()).or_default();
                    let given = slot.first.as_ref().and(slot.usage);
                    if let Some(usage) = message.get("usage").and_then(Value::as_object) {
                        let model = str_field(message, "model").filter(|m| !m.is_empty());
                        let model = model.unwrap_or("unknown");
                        let m = match carry.models.iter().position(|x| x == model) {
                            Some(m) => m,
                            None => {
                                carry.models.push(model.to_owned());
                                carry.models.len() - 1
                            }
                        };
                        let figures = [
                            "input_tokens",
                            "output_tokens",
                            "cache_read_input_tokens",
                            "cache_creation_input_tokens",
                        ]
                        .map(|k| u64_field(usage, k));
                        slot.usage = Some((m as u32, figures));
                        self.touched.entry(r.clone()).or_insert(given);
                    }
                    if slot.first.is_none() && e.is_some() {
                        self.touched.insert(r.clone(), None);
                        response = Some(r);
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
        let node = Node {
            number,
            id,
            uuid,
            above,
            sidechain,
            agent_id: str_field(line, "agentId").map(str::to_owned),
            session_id,
            conversation,
            entries,
            meta: Meta::of(line),
        };
        let own = node.uuid.is_some().then_some(self.carry.nodes.len() as u32);
        let (session, index, first) = self.place(node);
        if let Some(r) = response
            && let Some(slot) = self.carry.responses.get_mut(&r)
        {
            slot.first = Some((session, own.map_or(First::Id(first), First::Node)));
            self.placed.insert(r, (session, index));
        }
    }

    /// Puts a node in its group and session (a new one for a rewind) and its entries in
    /// this slice's output: the session, and its first entry's index in that output and
    /// message id.
    fn place(&mut self, n: Node) -> (u32, usize, String) {
        let carry = &mut *self.carry;
        let fresh = self.first_session.1.is_none();
        if fresh {
            self.first_session.1 = Some(n.id.clone());
        }
        if self.first_session.0.is_none() {
            self.first_session.0.clone_from(&n.session_id);
        }
        let key = if !n.sidechain {
            Group::Main
        } else if let Some(agent) = &n.agent_id {
            Group::Agent(agent.clone())
        } else {
            match n.above.map(|a| carry.nodes[a as usize].group()) {
                Some(g) if matches!(carry.groups[g as usize].key, Group::Side(_)) => {
                    carry.groups[g as usize].key.clone()
                }
                _ => Group::Side(n.id.clone()),
            }
        };
        let g = match carry.groups.iter().position(|x| x.key == key) {
            Some(g) => g,
            None => {
                carry.groups.push(GroupState {
                    key,
                    session_id: n.session_id.clone(),
                    first_line: n.number,
                    meta: Meta::default(),
                    previous: None,
                    prompt: None,
                    spawn_call: None,
                });
                carry.groups.len() - 1
            }
        };
        let above = n
            .above
            .filter(|&a| carry.nodes[a as usize].group() as usize == g);
        let session = match (above, carry.groups[g].previous) {
            (Some(a), _) => {
                let node = &mut carry.nodes[a as usize];
                let rewind = n.conversation && std::mem::replace(&mut node.2, true);
                if rewind {
                    // It forks after the last entry of the line it follows.
                    let uuid = carry.tree.uuid_of(a).unwrap_or_default();
                    let last = match node.3 {
                        1 => uuid,
                        k => format!("{uuid}#{k}"),
                    };
                    let fork = (node.session(), last);
                    carry
                        .sessions
                        .push(SessionState::new(g, Some(n.id.clone()), Some(fork)));
                    carry.sessions.len() - 1
                } else {
                    node.session() as usize
                }
            }
            // A line whose parent the log does not hold continues the line before it.
            (None, Some(p)) => {
                let p = &mut carry.nodes[p as usize];
                p.2 |= n.conversation;
                p.session() as usize
            }
            (None, None) => {
                carry.sessions.push(SessionState::new(g, None, None));
                carry.sessions.len() - 1
            }
        };
        let group = &mut carry.groups[g];
        group.meta.fill(n.meta);
        if group.prompt.is_none() {
            group.prompt = first_prompt(&n.entries).map(str::to_owned);
        }
        let index = carry.nodes.len() as u32;
        group.previous = Some(index);
        let state = &mut carry.sessions[session];
        state.first_at = state.first_at.or(n.entries.first().map(|e| e.created_at));
        let first = n
            .entries
            .first()
            .map(|e| e.message_id.clone())
            .unwrap_or_default();
        let out = self.out.entry(session as u32).or_default();
        let at = out.len();
        let count = n.entries.len() as u32;
        for mut e in n.entries {
            e.parent_message_id = state.last_message.replace(e.message_id.clone());
            out.push(e);
        }
        carry
            .nodes
            .push(NodeState(g as u32, session as u32, false, count));
        if let Some(u) = n.uuid {
            carry.tree.insert(&u, Link::Own(index));
        }
        (session as u32, at, first)
    }

    /// Puts each response's usage on its first entry: in this slice's output when it
    /// is there, else as a `usage_only` entry for the one an earlier slice gave.
    fn usage(&mut self) {
        for (r, given) in std::mem::take(&mut self.touched) {
            let Some(slot) = self.carry.responses.get(&r) else {
                continue;
            };
            let Some((session, first)) = &slot.first else {
                continue;
            };
            if slot.usage == given {
                continue;
            }
            let session = *session;
            let usage = slot.usage.map(|(m, [input, output, read, write])| {
                let mut u = TurnUsage::new(self.carry.models[m as usize].clone(), input, output);
                u.cache_read_tokens = read;
                u.cache_write_tokens = write;
                u
            });
            if let Some(&(_, at)) = self.placed.get(&r) {
                if let Some(e) = self.out.get_mut(&session).and_then(|o| o.get_mut(at)) {
                    e.turn_usage = usage;
                }
                continue;
            }
            // An earlier slice gave it: its id (a scan of the tree, once a slice or so).
            let id = match first {
                First::Node(n) => self.carry.tree.uuid_of(*n).unwrap_or_default(),
                First::Id(id) => id.clone(),
            };
            let mut e = ImportedEntry::new(id, Role::Assistant, String::new(), 0);
            e.turn_usage = usage;
            e.usage_only = true;
            self.out.entry(session).or_default().push(e);
            self.log.repeated += 1;
        }
    }

    /// The sessions to list: each with this slice's entries or changed since it was
    /// last given.
    fn finish(mut self, last: bool) -> ImportedLog {
        let carry = &mut *self.carry;
        if carry.main_id.is_none() {
            let (sid, first) = std::mem::take(&mut self.first_session);
            carry.main_id = sid.or(first);
        }
        let Some(main_id) = carry.main_id.clone() else {
            return self.log;
        };
        // The title of each session: the last summary whose leaf is one of its messages.
        let mut titles: BTreeMap<u32, String> = BTreeMap::new();
        for (summary, leaf) in carry.summaries.iter().rev() {
            if let Some(n) = leaf
                .as_deref()
                .and_then(|l| carry.tree.get(l))
                .and_then(Link::node)
            {
                titles
                    .entry(carry.nodes[n as usize].session())
                    .or_insert_with(|| summary.clone());
            }
        }
        let last_summary = carry.summaries.last().map(|s| s.0.clone());
        let group_ids: Vec<(String, String)> = carry
            .groups
            .iter()
            .map(|g| {
                let sid = g.session_id.clone().unwrap_or_else(|| main_id.clone());
                let id = match &g.key {
                    Group::Main => main_id.clone(),
                    Group::Agent(agent) => format!("{sid}@agent-{agent}"),
                    Group::Side(uuid) => format!("{sid}@{uuid}"),
                };
                (sid, id)
            })
            .collect();
        let session_id = |s: &SessionState| {
            let group = &group_ids[s.group as usize].1;
            match &s.rewind {
                Some(uuid) => format!("{group}@{uuid}"),
                None => group.clone(),
            }
        };
        // The call that spawned each sub-agent, once the log names it.
        for (g, group) in carry.groups.iter_mut().enumerate() {
            if group.key == Group::Main || group.spawn_call.is_some() {
                continue;
            }
            let agent = match &group.key {
                Group::Agent(a) => Some(a.as_str()),
                _ => None,
            };
            group.spawn_call = carry.links.claim(
                &group_ids[g].0,
                agent,
                group.prompt.as_deref(),
                Some(group.first_line),
            );
        }
        let mut order: Vec<usize> = (0..carry.sessions.len()).collect();
        order.sort_by_key(|&i| (carry.sessions[i].group, i));
        for i in order {
            let state = &carry.sessions[i];
            let g = state.group as usize;
            let group = &carry.groups[g];
            let root = state.rewind.is_none();
            let title = titles
                .get(&(i as u32))
                .cloned()
                .or_else(|| (group.key == Group::Main && root).then(|| last_summary.clone())?);
            let header = ImportedSession {
                provider_session_id: session_id(state),
                cwd: group.meta.cwd.clone(),
                model: group.meta.model.clone(),
                version: group.meta.version.clone(),
                git_branch: group.meta.git_branch.clone(),
                started_at: if root {
                    group.meta.started_at.unwrap_or(0)
                } else {
                    state.first_at.unwrap_or(0)
                },
                fork_of: state.fork.as_ref().map(|(of, after)| ImportedFork {
                    provider_session_id: session_id(&carry.sessions[*of as usize]),
                    after_message_id: after.clone(),
                }),
                spawned_by: (group.key != Group::Main && root).then(|| ImportedSpawn {
                    provider_session_id: group_ids[g].0.clone(),
                    tool_call_id: group.spawn_call.clone(),
                }),
                title,
                exported: None,
                entries: Vec::new(),
            };
            let entries = self.out.remove(&(i as u32)).unwrap_or_default();
            if entries.is_empty() && state.given.as_ref() == Some(&header) {
                continue;
            }
            carry.sessions[i].given = Some(header.clone());
            self.log
                .sessions
                .push(ImportedSession { entries, ..header });
        }
        if last {
            self.log.spawn_calls = carry.links.clone();
        }
        self.log
    }
}

impl SessionState {
    fn new(group: usize, rewind: Option<String>, fork: Option<(u32, String)>) -> Self {
        SessionState {
            group: group as u32,
            last_message: fork.as_ref().map(|f| f.1.clone()),
            rewind,
            fork,
            first_at: None,
            given: None,
        }
    }
}

/// A Task result naming the sub-agent it ran (`toolUseResult.agentId`).
fn note_spawn_result(links: &mut SpawnCalls, line: &Map<String, Value>, session: Option<&str>) {
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
        links
            .by_agent
            .entry(session.to_owned())
            .or_default()
            .insert(agent.to_owned(), call.to_owned());
    }
}

/// Task / Agent tool calls and their prompts.
fn note_spawn_calls(
    links: &mut SpawnCalls,
    message: &Map<String, Value>,
    session: &str,
    number: u64,
) {
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
            links
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
