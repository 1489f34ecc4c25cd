//! The data Spool stores and returns. Field names are part of the JSON record format and
//! of the vectors, so they are `snake_case` and stable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Lifecycle state of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Open for appends.
    Running,
    /// Finished successfully.
    Done,
    /// Finished with a failure.
    Failed,
}

/// A session, addressed by its key.
///
/// Fields added by record format 2 read as their defaults from format-1 records:
/// counters and costs `0`, `cost_source` `none`, optional fields absent, maps empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The stable key, e.g. `agent:main:main`.
    pub key: String,
    /// The current identity; rotates when the session is reset.
    pub session_id: String,
    /// The second `:`-separated segment of the key, if any.
    pub agent_id: Option<String>,
    /// Lifecycle state.
    pub status: SessionStatus,
    /// Fencing counter.
    pub epoch: u64,
    /// Creation time (ms since the Unix epoch).
    pub created_at: u64,
    /// Time of the last write (ms since the Unix epoch).
    pub updated_at: u64,
    /// Number of transcript entries.
    pub entry_count: u64,
    /// Insertion id of the newest entry; 0 before the first append.
    pub last_entry_id: u64,
    /// Tokens counted from appended entries that carry no `turn_usage`.
    pub total_tokens: u64,
    /// When the session finished (`done` or `failed`).
    #[serde(default)]
    pub ended_at: Option<u64>,
    /// `ended_at - created_at` once finished.
    #[serde(default)]
    pub runtime_ms: Option<u64>,
    /// Prompt tokens reported by `turn_usage` and recorded usage.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens reported by `turn_usage` and recorded usage.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt-cache read tokens.
    #[serde(default)]
    pub cache_read: u64,
    /// Prompt-cache write tokens.
    #[serde(default)]
    pub cache_write: u64,
    /// Estimated cost in USD.
    #[serde(default)]
    pub estimated_cost_usd: f64,
    /// Total cost in USD.
    #[serde(default)]
    pub total_cost_usd: f64,
    /// Cost billed by the provider, in USD.
    #[serde(default)]
    pub billed_cost_usd: f64,
    /// Estimated part of the total cost, in USD.
    #[serde(default)]
    pub estimated_cost_component_usd: f64,
    /// Where the costs come from: `none`, `billed`, `estimated` or `mixed`.
    #[serde(default = "cost_source_none")]
    pub cost_source: String,
    /// Usage records that carried no cost.
    #[serde(default)]
    pub missing_cost_entries: u64,
    /// Number of compactions of the current identity.
    #[serde(default)]
    pub compaction_count: u64,
    /// The model in use.
    #[serde(default)]
    pub model: Option<String>,
    /// The channel the session talks on (e.g. `cli`, `telegram`).
    #[serde(default)]
    pub channel: Option<String>,
    /// Provider/model settings, merged key by key by `update`.
    #[serde(default)]
    pub model_config: BTreeMap<String, serde_json::Value>,
    /// Free-form metadata, merged key by key by `update`.
    #[serde(default)]
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// Id of the last context state saved (states are numbered per key).
    #[serde(default)]
    pub last_state_id: u64,
    /// Whether every entry of this identity is in the message-id index (false for
    /// identities created before record format 2; lookups then scan).
    #[serde(default)]
    pub message_index: bool,
}

fn cost_source_none() -> String {
    "none".into()
}

impl Session {
    /// A fresh, running session at epoch 0 with every counter zeroed.
    pub fn new(key: &str, session_id: &str, now_ms: u64) -> Session {
        Session {
            key: key.to_owned(),
            session_id: session_id.to_owned(),
            agent_id: crate::agent_id(key),
            status: SessionStatus::Running,
            epoch: 0,
            created_at: now_ms,
            updated_at: now_ms,
            entry_count: 0,
            last_entry_id: 0,
            total_tokens: 0,
            ended_at: None,
            runtime_ms: None,
            input_tokens: 0,
            output_tokens: 0,
            cache_read: 0,
            cache_write: 0,
            estimated_cost_usd: 0.0,
            total_cost_usd: 0.0,
            billed_cost_usd: 0.0,
            estimated_cost_component_usd: 0.0,
            cost_source: cost_source_none(),
            missing_cost_entries: 0,
            compaction_count: 0,
            model: None,
            channel: None,
            model_config: BTreeMap::new(),
            metadata: BTreeMap::new(),
            last_state_id: 0,
            message_index: true,
        }
    }
}

/// Who wrote a transcript entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The human.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
    /// A system message.
    System,
}

impl Role {
    /// The role's name as stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            "system" => Ok(Role::System),
            other => Err(crate::Error::invalid(
                "role",
                format!(
                    "{} is not one of user, assistant, tool, system",
                    crate::engine::error::quote(other)
                ),
            )),
        }
    }
}

/// One transcript message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Insertion id, strictly increasing within a session.
    pub id: u64,
    /// Stable message id.
    pub message_id: String,
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Time of the append (ms since the Unix epoch).
    pub created_at: u64,
    /// Token count reported by the writer.
    #[serde(default)]
    pub token_count: Option<u64>,
    /// Tool calls made by an assistant message.
    #[serde(default)]
    pub tool_calls: Option<serde_json::Value>,
    /// The tool call a `tool` entry answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The turn the entry belongs to.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Model usage reported with this (assistant) message.
    #[serde(default)]
    pub turn_usage: Option<TurnUsage>,
    /// How the tool call a `tool` entry answers ended, when the writer said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_status: Option<ToolStatus>,
    /// The model's reasoning (thinking) behind an assistant message, kept apart from
    /// its text: compaction counts it as a size, never as words to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Files that came with the message (images, documents), described, not stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// What the message is when it is not a plain one of its role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<EntryKind>,
    /// Where an entry written while it streams stands ([`crate::begin_entry`]):
    /// absent once it is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<EntryStatus>,
    /// Why an `incomplete` entry stopped (`abort_entry`'s reason, or `interrupted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// Where an entry written while it streams stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// Its writer is still adding to it ([`crate::update_entry`]).
    InProgress,
    /// It stopped before it finished: aborted, or found in progress after its writer
    /// went away. What arrived is kept.
    Incomplete,
}

impl Entry {
    /// The entry `request` becomes as entry `id` with `message_id`, written at `created_at`.
    pub fn from_request(
        request: AppendRequest,
        id: u64,
        message_id: String,
        created_at: u64,
    ) -> Self {
        Entry {
            id,
            message_id,
            role: request.role,
            content: request.content,
            created_at,
            token_count: request.token_count,
            tool_calls: request.tool_calls,
            tool_call_id: request.tool_call_id,
            turn_id: request.turn_id,
            turn_usage: request.turn_usage,
            tool_status: request.tool_status,
            reasoning: request.reasoning,
            attachments: request.attachments,
            kind: request.kind,
            status: None,
            stop_reason: None,
        }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It succeeded.
    Ok,
    /// It failed (an error result, a non-zero exit, a refusal).
    Error,
    /// It was stopped before it finished (interrupted, cancelled, timed out).
    Cancelled,
}

impl ToolStatus {
    /// The status's name as stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
            ToolStatus::Cancelled => "cancelled",
        }
    }
}

/// What an entry is when it is not a plain message of its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// Context the agent gave the model (instructions, environment, developer
    /// messages), not words of the user.
    Context,
    /// The agent's own summary of earlier history (written when it compacted).
    Summary,
    /// A command run inside the agent (`/status`) or its output: never sent to the model.
    Command,
}

impl EntryKind {
    /// The kind's name as stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Context => "context",
            EntryKind::Summary => "summary",
            EntryKind::Command => "command",
        }
    }
}

/// A file that came with a message, described by what identifies it: Spool keeps the
/// description, not the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    /// What it is: `image`, `document`, `file`, …
    pub kind: String,
    /// Its media type (`image/png`), when known.
    #[serde(default)]
    pub media_type: Option<String>,
    /// Its size in bytes (decoded).
    pub size: u64,
    /// The SHA-256 of its bytes, lowercase hex, when the bytes were seen.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Where it was, when it was referenced rather than inlined (a path or URL).
    #[serde(default)]
    pub source: Option<String>,
}

/// Model usage reported with a message. A message that carries it is accounted in the
/// session's `input_tokens`/`output_tokens`, never also in `total_tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnUsage {
    /// The model that produced the message.
    pub model: String,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache (not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TurnUsage {
    /// Usage of `model` with no cache figures.
    pub fn new(model: impl Into<String>, input_tokens: u64, output_tokens: u64) -> Self {
        TurnUsage {
            model: model.into(),
            input_tokens,
            output_tokens,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }
    }
}

/// What to append to a transcript. Unknown fields are rejected, so a misspelt option
/// (`tokenCount` for `token_count`) is an error rather than silently ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendRequest {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Token count reported by the writer.
    #[serde(default)]
    pub token_count: Option<u64>,
    /// Stable message id; derived from the session id and insertion id when absent.
    #[serde(default)]
    pub message_id: Option<String>,
    /// Tool calls made by an assistant message.
    #[serde(default)]
    pub tool_calls: Option<serde_json::Value>,
    /// The tool call a `tool` entry answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The turn the entry belongs to.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Model usage reported with this message (see [`TurnUsage`]).
    #[serde(default)]
    pub turn_usage: Option<TurnUsage>,
    /// How the tool call a `tool` entry answers ended.
    #[serde(default)]
    pub tool_status: Option<ToolStatus>,
    /// The model's reasoning behind an assistant message.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Files that came with the message (at most [`crate::validate::MAX_ATTACHMENTS`]).
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// What the message is when it is not a plain one of its role.
    #[serde(default)]
    pub kind: Option<EntryKind>,
    /// When given, the append fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub expected_epoch: Option<u64>,
}

impl AppendRequest {
    /// A plain message with nothing optional set.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        AppendRequest {
            role,
            content: content.into(),
            token_count: None,
            message_id: None,
            tool_calls: None,
            tool_call_id: None,
            turn_id: None,
            turn_usage: None,
            tool_status: None,
            reasoning: None,
            attachments: Vec::new(),
            kind: None,
            expected_epoch: None,
        }
    }
}

/// Reading direction of a transcript page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Oldest entry first.
    #[default]
    OldestFirst,
    /// Newest entry first.
    NewestFirst,
}

/// Which page of a transcript to read. Unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageRequest {
    /// Reading direction.
    #[serde(default)]
    pub order: Order,
    /// `next_cursor` of the previous page read in the same order.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size, 1 to [`crate::MAX_PAGE`].
    pub limit: u32,
}

/// A page of a transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// The entries in the requested order.
    pub entries: Vec<Entry>,
    /// Cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// A page of sessions, most recently updated first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    /// The sessions.
    pub sessions: Vec<Session>,
    /// Cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// The record of a session generation that a reset replaces: kept by the host (a JSON
/// file natively, an archive store in the browser) before the reset commits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResetArchive {
    /// The session key.
    pub session_key: String,
    /// The identity being replaced.
    pub session_id: String,
    /// The epoch being replaced.
    pub epoch: u64,
    /// When the reset happened.
    pub archived_at: u64,
    /// The canonical transcript (entries archived by compaction and active ones, in
    /// original order).
    pub transcript_entries: Vec<Entry>,
    /// The compaction summaries, with their compaction ids.
    pub summaries: Vec<serde_json::Value>,
}

/// The record of a committed reset's archive, written in the reset's own commit (so a
/// reset that failed or was killed has none): which archive the host kept and what it
/// holds. Hosts list archives from these records only ([`crate::list_reset_archives`])
/// and check each kept archive against its record ([`ArchivedReset::check`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedReset {
    /// The session key.
    pub session_key: String,
    /// The identity the reset replaced.
    pub session_id: String,
    /// The epoch the reset replaced.
    pub epoch: u64,
    /// When the reset happened (the archive's `archived_at`).
    pub archived_at: u64,
    /// How many entries the archive's canonical transcript holds.
    pub transcript_entries: u64,
    /// How many compaction summaries the archive holds.
    pub summaries: u64,
}

impl ArchivedReset {
    /// Whether `archive` is the one this record names, whole: `Err` says what differs.
    pub fn check(&self, archive: &ResetArchive) -> Result<(), String> {
        let found = (
            archive.session_key.as_str(),
            archive.session_id.as_str(),
            archive.epoch,
            archive.archived_at,
        );
        let wanted = (
            self.session_key.as_str(),
            self.session_id.as_str(),
            self.epoch,
            self.archived_at,
        );
        if found != wanted {
            return Err(format!(
                "the archive is of {found:?}, its reset record names {wanted:?}"
            ));
        }
        let counts = (
            archive.transcript_entries.len() as u64,
            archive.summaries.len() as u64,
        );
        if counts != (self.transcript_entries, self.summaries) {
            return Err(format!(
                "the archive holds {} entries and {} summaries, its reset record {} and {}",
                counts.0, counts.1, self.transcript_entries, self.summaries
            ));
        }
        Ok(())
    }
}

/// What to do with a key before starting work on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// Keep the session (identity and transcript); create it if missing.
    Continue,
    /// Start a new chat: the key must be free (`session_key conflict` otherwise).
    NewChat,
    /// Rotate the identity under the same key: archive the old generation, then a new
    /// session id, epoch + 1, every counter zeroed, transcript and summaries removed,
    /// context states invalidated. A missing key is created.
    ResetSameKey,
}

/// Whether the archive of a reset was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveStatus {
    /// True when the host kept the archive.
    pub written: bool,
    /// Why it was not kept.
    pub error: Option<String>,
}

/// The result of [`crate::apply_intent`] and [`crate::get_or_create`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentOutcome {
    /// The session as it is now.
    pub session: Session,
    /// True when the key had no session and one was created.
    pub created: bool,
    /// True when the identity was rotated (a reset, or a reset that created the key).
    pub rotated: bool,
    /// For a reset of an existing session: whether its archive was kept.
    pub archive: Option<ArchiveStatus>,
}

/// Fields to change on a session; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateRequest {
    /// New model.
    #[serde(default)]
    pub model: Option<String>,
    /// New channel.
    #[serde(default)]
    pub channel: Option<String>,
    /// Merged into `model_config` key by key; a `null` value removes the key.
    #[serde(default)]
    pub model_config: BTreeMap<String, serde_json::Value>,
    /// Merged into `metadata` key by key; a `null` value removes the key.
    #[serde(default)]
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// When given, fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub expected_epoch: Option<u64>,
}

/// The result of [`crate::truncate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncateOutcome {
    /// Whether any entry was removed.
    pub truncated: bool,
    /// Entries before.
    pub before_count: u64,
    /// Entries after.
    pub after_count: u64,
}

/// A provider or portable context state (e.g. a structured summary) saved for a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextState {
    /// Id, increasing per session key.
    pub id: u64,
    /// The session identity the state was saved for.
    pub session_id: String,
    /// The session key.
    pub session_key: String,
    /// Who can use it (`portable` for any provider).
    pub provider: String,
    /// The model it belongs to, if any.
    pub model: Option<String>,
    /// What it is (e.g. `structured_summary_v1`).
    pub state_kind: String,
    /// The state itself.
    pub payload: serde_json::Value,
    /// The last transcript entry id it covers.
    pub covered_through_id: u64,
    /// When it was saved.
    pub created_at: u64,
    /// When it stops being useful, if ever.
    pub expires_at: Option<u64>,
    /// Usable with any provider.
    pub portable: bool,
    /// May be cached by a provider.
    pub cacheable: bool,
    /// False once invalidated.
    pub valid: bool,
    /// Why it was invalidated (e.g. `session_reset`).
    pub invalid_reason: Option<String>,
}

/// What to save as a context state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewContextState {
    /// Who can use it (`portable` for any provider).
    pub provider: String,
    /// The model it belongs to, if any.
    #[serde(default)]
    pub model: Option<String>,
    /// What it is (e.g. `structured_summary_v1`).
    pub state_kind: String,
    /// The state itself.
    pub payload: serde_json::Value,
    /// The last transcript entry id it covers.
    #[serde(default)]
    pub covered_through_id: u64,
    /// When it stops being useful, if ever.
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// Usable with any provider.
    #[serde(default)]
    pub portable: bool,
    /// May be cached by a provider.
    #[serde(default)]
    pub cacheable: bool,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishStatus {
    /// Finished successfully.
    Done,
    /// Finished with a failure.
    Failed,
}

/// Which sessions to list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListFilter {
    /// Only sessions of this agent id.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Only sessions in this state.
    #[serde(default)]
    pub status: Option<SessionStatus>,
}

/// Where a branched session was forked from its parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkPoint {
    /// The parent's identity at the fork.
    pub parent_session_id: String,
    /// The parent's newest entry id at the fork: the child's entry ids continue after it.
    pub parent_last_entry_id: u64,
    /// For a fork before a message: that message; the child holds the canonical prefix
    /// strictly before it.
    #[serde(default)]
    pub before_message_id: Option<String>,
    /// For a fork before a message: its position (`created_at`, entry id).
    #[serde(default)]
    pub before_position: Option<(u64, u64)>,
    /// Active entries the child inherited.
    pub inherited_entries: u64,
    /// Compaction summaries the child inherited.
    pub inherited_summaries: u64,
}

/// How a session relates to the session it was branched from, and to its own branches.
/// Sessions that were never branched have the default: no parent, depth 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchLineage {
    /// The key of the session this one was branched from.
    #[serde(default)]
    pub parent_session_key: Option<String>,
    /// 0 for a root session, the parent's depth + 1 for a branch.
    #[serde(default)]
    pub spawn_depth: u64,
    /// True when the branch inherited the parent's history (transcript, summaries,
    /// context states); false for an empty branch (or one whose history was over the
    /// token budget), and after the branch is reset.
    #[serde(default)]
    pub forked_from_parent: bool,
    /// Where the history was forked, when it was.
    #[serde(default)]
    pub fork_point: Option<ForkPoint>,
    /// Branches made from this session's current identity.
    #[serde(default)]
    pub fork_count: u64,
}

/// How to branch a session. Unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchRequest {
    /// The identity of the new session.
    pub child_session_id: String,
    /// Inherit the parent's transcript, summaries, context states and canonical archive.
    #[serde(default)]
    pub fork_transcript: bool,
    /// Inherit only the canonical prefix strictly before this message (no summaries, no
    /// context states). Implies a fork of the transcript.
    #[serde(default)]
    pub fork_before_message_id: Option<String>,
    /// When the inherited transcript tokens plus summary tokens exceed this, the branch
    /// is created without history.
    #[serde(default)]
    pub max_fork_tokens: Option<u64>,
}

impl BranchRequest {
    /// A branch with no history.
    pub fn empty(child_session_id: impl Into<String>) -> Self {
        BranchRequest {
            child_session_id: child_session_id.into(),
            fork_transcript: false,
            fork_before_message_id: None,
            max_fork_tokens: None,
        }
    }

    /// A branch that inherits the parent's whole history.
    pub fn fork(child_session_id: impl Into<String>) -> Self {
        BranchRequest {
            fork_transcript: true,
            ..Self::empty(child_session_id)
        }
    }
}

/// A session with its lineage (the result of [`crate::branch`], an entry of
/// [`crate::list_children`]). Serialized flat: the session's fields and the lineage's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchInfo {
    /// The session.
    #[serde(flatten)]
    pub session: Session,
    /// Its lineage.
    #[serde(flatten)]
    pub lineage: BranchLineage,
}

/// A session's place in its tree: itself with its lineage, and its direct branches,
/// in key order (what `spool tree KEY` walks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineageView {
    /// The session and its lineage.
    #[serde(flatten)]
    pub node: BranchInfo,
    /// The sessions branched from it (whose `parent_session_key` is its key).
    pub children: Vec<BranchInfo>,
}

/// A transcript position: the `(created_at, entry id)` of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Position {
    /// The entry's `created_at`.
    pub created_at: u64,
    /// The entry's insertion id.
    pub entry_id: u64,
}
