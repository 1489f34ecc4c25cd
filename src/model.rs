//! The data Spool stores and returns. Field names are part of the JSON record format and
//! of the vectors, so they are `snake_case` and stable.

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Tokens counted from appended entries.
    pub total_tokens: u64,
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
                format!("`{other}` is not one of user, assistant, tool, system"),
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionList {
    /// The sessions.
    pub sessions: Vec<Session>,
    /// Cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}
