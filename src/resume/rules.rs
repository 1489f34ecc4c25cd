//! Resume selection for external agent CLIs (Codex, Claude Code, opencode): which
//! provider session a new task should resume, and what a finished task leaves behind.
//! Plain functions over plain data; the storage operations build on them.
//!
//! Rules (ARCHITECTURE.md, "Resume selection"):
//! - the role's adapter state for the agent type is the first source; only when it has
//!   nothing does the run history decide;
//! - among history rows of one token the newest decides (a newer failure vetoes an older
//!   success);
//! - a synthetic monitor id shaped `agent:project:task` is never a provider token;
//! - a token captured mid-stream (`source` `provider_stream`, status `working`) is only
//!   resumable once a finished row confirms it, and is dropped when its run failed;
//! - a run that resumed a token and ended in a terminal failure is a run of that token
//!   too ([`outcome_tokens`]), whatever token it reported itself;
//! - a token whose newest run ended in a terminal failure is rejected even when resume
//!   was preconfigured: mode `new`, the role state and the task's resume metadata are
//!   cleared and `external_resume_fallback` is `provider_terminal_failure` — unless the
//!   agent's sessions survive failed runs (Claude Code by default);
//! - one agent type's token never serves another.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Run statuses that end a provider session for agents whose sessions do not survive
/// failures.
pub const TERMINAL_FAILURES: [&str; 7] = [
    "failed",
    "cancelled",
    "denied",
    "rejected",
    "hard_timeout",
    "idle_timeout",
    "startup_timeout",
];

/// The legacy flat keys of a role's adapter state that name a resume token.
pub const LEGACY_RESUME_KEYS: [&str; 4] = [
    "external_resume_session_id",
    "external_resume_session_scope_id",
    "external_resume_agent_type",
    "resume_source_session",
];

/// The task-metadata keys a resume decision sets or clears.
const TASK_RESUME_KEYS: [&str; 3] = [
    "external_resume_session_id",
    "external_resume_session_scope_id",
    "external_resume_agent_type",
];

/// One external run as the host recorded it: one row per (agent type, token, project,
/// task); recording the same run again (e.g. `working` then `done`) replaces the row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `codex`, `claude_code`, `opencode`, …
    pub agent_type: String,
    /// The project the run belonged to.
    pub project_id: String,
    /// The provider token, or a synthetic monitor id.
    pub session_id: String,
    /// `working`, `done`, `failed`, …
    pub status: String,
    /// When the row was last written.
    pub updated_at: u64,
    /// The task the run executed.
    #[serde(default)]
    pub task_id: String,
    /// The role session the run belonged to, if any.
    #[serde(default)]
    pub role_session_id: Option<String>,
    /// Where the agent worked.
    #[serde(default)]
    pub workspace_path: Option<String>,
    /// How the agent was run (`exec`, `interactive`, …).
    #[serde(default)]
    pub run_mode: Option<String>,
    /// Anything else the host keeps about the run.
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
}

/// Which agents keep their provider sessions usable after a failed run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumePolicy {
    /// Agent types whose tokens survive failures (default: `claude_code`).
    pub surviving_agents: Vec<String>,
}

impl Default for ResumePolicy {
    fn default() -> Self {
        ResumePolicy {
            surviving_agents: vec!["claude_code".into()],
        }
    }
}

impl ResumePolicy {
    /// Whether a run of `agent_type` ending in `status` makes its token unusable.
    pub fn kills(&self, agent_type: &str, status: &str) -> bool {
        TERMINAL_FAILURES.contains(&status)
            && !self.surviving_agents.iter().any(|a| a == agent_type)
    }
}

/// Whether `token` is a synthetic monitor id (`agent:project:task`), never a provider's.
pub fn is_synthetic(token: &str, agent_type: &str) -> bool {
    let parts: Vec<&str> = token.split(':').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty()) && parts[0] == agent_type
}

/// The newest history row of `token` for `agent_type` (in `project`, when given): the
/// one that decides whether the token lives. Of rows written at the same time, one whose
/// status kills the token wins (fail closed), so the answer never depends on row order.
pub fn newest<'a>(
    history: &'a [RunRecord],
    agent_type: &str,
    project: Option<&str>,
    token: &str,
    policy: &ResumePolicy,
) -> Option<&'a RunRecord> {
    history
        .iter()
        .filter(|r| r.agent_type == agent_type && r.session_id == token)
        .filter(|r| project.is_none_or(|p| r.project_id == p))
        .max_by_key(|r| (r.updated_at, policy.kills(agent_type, &r.status)))
}

/// What a new task should do about resuming.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeDecision {
    /// `resume` (with `session_id`), `new` (a token was rejected), or `auto`.
    pub mode: String,
    /// The token to resume; empty unless `mode` is `resume`.
    pub session_id: String,
    /// Task metadata to set.
    pub set_metadata: BTreeMap<String, Value>,
    /// Task metadata keys to remove.
    pub remove_metadata: Vec<String>,
    /// Clear the role's adapter state for this agent type (and its legacy keys).
    pub clear_role_state: bool,
    /// With mode `new`: the token that was rejected (its newest run failed terminally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_token: Option<String>,
}

/// What a new task asks before it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeQuery {
    /// The adapter's agent type.
    pub agent_type: String,
    /// The task's project.
    pub project_id: Option<String>,
    /// The task's session scope (recorded as `external_resume_session_scope_id`).
    pub scope_id: Option<String>,
    /// The role's adapter-state entry for `agent_type`, if any.
    pub role_state: Option<BTreeMap<String, Value>>,
    /// A token the adapter was configured to resume, if any.
    pub preconfigured: Option<String>,
}

fn resume(token: &str, query: &ResumeQuery) -> ResumeDecision {
    let mut set = BTreeMap::new();
    set.insert(
        "external_resume_session_id".into(),
        Value::String(token.into()),
    );
    set.insert(
        "external_resume_agent_type".into(),
        Value::String(query.agent_type.clone()),
    );
    if let Some(scope) = &query.scope_id {
        set.insert(
            "external_resume_session_scope_id".into(),
            Value::String(scope.clone()),
        );
    }
    ResumeDecision {
        mode: "resume".into(),
        session_id: token.into(),
        set_metadata: set,
        remove_metadata: Vec::new(),
        clear_role_state: false,
        rejected_token: None,
    }
}

fn start(mode: &str, clear_role_state: bool, fallback: bool) -> ResumeDecision {
    let mut set = BTreeMap::new();
    if fallback {
        set.insert(
            "external_resume_fallback".into(),
            Value::String("provider_terminal_failure".into()),
        );
    }
    ResumeDecision {
        mode: mode.into(),
        session_id: String::new(),
        set_metadata: set,
        remove_metadata: TASK_RESUME_KEYS.iter().map(|k| (*k).to_owned()).collect(),
        clear_role_state,
        rejected_token: None,
    }
}

/// Decides whether a new task resumes a provider session, from the role state first and
/// the run history second, with every veto of the module docs.
pub fn choose_resume(
    query: &ResumeQuery,
    history: &[RunRecord],
    policy: &ResumePolicy,
) -> ResumeDecision {
    let agent = query.agent_type.as_str();
    let project = query.project_id.as_deref();
    let role_token = query
        .role_state
        .as_ref()
        .and_then(|s| s.get("resume_session_id"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    let candidate = role_token.or(query.preconfigured.as_deref().filter(|t| !t.is_empty()));
    if let Some(token) = candidate {
        let from_role = role_token.is_some();
        if is_synthetic(token, agent) {
            return start("auto", from_role, false);
        }
        let newest_row = newest(history, agent, project, token, policy);
        if newest_row.is_some_and(|r| policy.kills(agent, &r.status)) {
            // A dead provider session: start over, even if resume was preconfigured.
            return ResumeDecision {
                rejected_token: Some(token.to_owned()),
                ..start("new", from_role, true)
            };
        }
        let streamed = query.role_state.as_ref().is_some_and(|s| {
            s.get("source").and_then(Value::as_str) == Some("provider_stream")
                && s.get("status").and_then(Value::as_str) == Some("working")
        });
        if from_role && streamed && newest_row.is_none_or(|r| r.status != "done") {
            // Captured mid-stream and never confirmed by a finished run; a failed run
            // drops it from the role state even for agents whose sessions survive.
            let failed = newest_row.is_some_and(|r| TERMINAL_FAILURES.contains(&r.status.as_str()));
            return start("auto", failed, false);
        }
        return resume(token, query);
    }
    // No role state: the newest `done` row of this agent (and project) whose token is
    // real and still alive. Equal times are ordered by token, then project, so the
    // choice never depends on the order rows were given in.
    let mut done: Vec<&RunRecord> = history
        .iter()
        .filter(|r| r.agent_type == agent && project.is_none_or(|p| r.project_id == p))
        .filter(|r| r.status == "done" && !is_synthetic(&r.session_id, agent))
        .collect();
    crate::order::sort_by(&mut done, |a, b| done_order(b).cmp(&done_order(a)));
    // The decisive row of every token in one pass, exactly as `newest` picks it (the
    // last of equal maxima wins), so the walk below stays linear in the history.
    let mut decisive_rows: BTreeMap<&str, &RunRecord> = BTreeMap::new();
    for r in history
        .iter()
        .filter(|r| r.agent_type == agent && project.is_none_or(|p| r.project_id == p))
    {
        let rank = |r: &RunRecord| (r.updated_at, policy.kills(agent, &r.status));
        match decisive_rows.get(r.session_id.as_str()) {
            Some(d) if rank(d) > rank(r) => {}
            _ => {
                decisive_rows.insert(r.session_id.as_str(), r);
            }
        }
    }
    for row in done {
        let decisive = decisive_rows.get(row.session_id.as_str());
        if decisive.is_some_and(|d| !policy.kills(agent, &d.status)) {
            return resume(&row.session_id, query);
        }
    }
    start("auto", false, false)
}

/// The order in which `done` rows are considered when the role has no state: newest
/// first (the storage index is laid out in this order).
pub fn done_order(row: &RunRecord) -> (u64, &str, &str, &str) {
    (
        row.updated_at,
        row.session_id.as_str(),
        row.project_id.as_str(),
        row.task_id.as_str(),
    )
}

/// How a finished task changes the role's adapter state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RoleStateChange {
    /// Leave it as it is.
    Keep,
    /// Replace this agent type's entry (latest wins).
    Set {
        /// The new entry.
        entry: BTreeMap<String, Value>,
    },
    /// Remove this agent type's entry and the legacy flat keys.
    Clear,
}

/// What a finished task leaves behind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskOutcomeEffects {
    /// The change to the role's adapter state for the agent type.
    pub role_state: RoleStateChange,
    /// Task metadata to set.
    pub set_metadata: BTreeMap<String, Value>,
    /// Task metadata keys to remove.
    pub remove_metadata: Vec<String>,
}

/// A finished (or streaming) task, as the host saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskOutcome {
    /// The adapter's agent type.
    pub agent_type: String,
    /// The task.
    pub task_id: String,
    /// `done`, `failed`, `working`, …
    pub status: String,
    /// The provider token the run reported, if any.
    #[serde(default)]
    pub token: Option<String>,
    /// The token the run was resuming, if it was one.
    #[serde(default)]
    pub resumed_from: Option<String>,
    /// True when the token was captured from the provider's stream before the run ended.
    #[serde(default)]
    pub from_stream: bool,
}

/// The tokens whose history a task's outcome adds a run row to (each with the outcome's
/// status): the token the run reported, and, when the run ended in a terminal failure,
/// the token it was resuming — a run that only resumed a token and failed still ends
/// it, whatever token (if any) it reported itself.
pub fn outcome_tokens(outcome: &TaskOutcome) -> Vec<&str> {
    let mut tokens: Vec<&str> = outcome
        .token
        .as_deref()
        .filter(|t| !t.is_empty())
        .into_iter()
        .collect();
    if TERMINAL_FAILURES.contains(&outcome.status.as_str())
        && let Some(resumed) = outcome.resumed_from.as_deref().filter(|t| !t.is_empty())
        && !tokens.contains(&resumed)
    {
        tokens.push(resumed);
    }
    tokens
}

/// Decides what a task's outcome leaves behind: a `done` task with a usable token pins it
/// for its role and agent; a failed run never pins, and a failed resume of `T` clears `T`.
pub fn outcome_effects(
    outcome: &TaskOutcome,
    current_role_token: Option<&str>,
    policy: &ResumePolicy,
) -> TaskOutcomeEffects {
    let agent = outcome.agent_type.as_str();
    let usable = outcome
        .token
        .as_deref()
        .filter(|t| !t.is_empty() && !is_synthetic(t, agent));
    let keep = TaskOutcomeEffects {
        role_state: RoleStateChange::Keep,
        set_metadata: BTreeMap::new(),
        remove_metadata: Vec::new(),
    };
    let entry = |token: &str, extra: &[(&str, &str)]| {
        let mut e = BTreeMap::new();
        e.insert("resume_session_id".to_owned(), Value::String(token.into()));
        e.insert("agent_type".to_owned(), Value::String(agent.into()));
        e.insert(
            "last_task_id".to_owned(),
            Value::String(outcome.task_id.clone()),
        );
        for (k, v) in extra {
            e.insert((*k).to_owned(), Value::String((*v).into()));
        }
        e
    };
    if outcome.from_stream && outcome.status == "working" {
        return match usable {
            Some(token) => TaskOutcomeEffects {
                role_state: RoleStateChange::Set {
                    entry: entry(
                        token,
                        &[
                            ("provider_session_id", token),
                            ("source", "provider_stream"),
                            ("status", "working"),
                        ],
                    ),
                },
                ..keep
            },
            None => keep,
        };
    }
    if outcome.status == "done" {
        return match usable {
            Some(token) => TaskOutcomeEffects {
                role_state: RoleStateChange::Set {
                    entry: entry(token, &[]),
                },
                ..keep
            },
            None => keep,
        };
    }
    if policy.kills(agent, &outcome.status)
        && let Some(dead) = outcome.resumed_from.as_deref()
    {
        let mut set = BTreeMap::new();
        set.insert(
            "external_resume_fallback".into(),
            Value::String("provider_terminal_failure".into()),
        );
        return TaskOutcomeEffects {
            role_state: if current_role_token == Some(dead) {
                RoleStateChange::Clear
            } else {
                RoleStateChange::Keep
            },
            set_metadata: set,
            remove_metadata: TASK_RESUME_KEYS.iter().map(|k| (*k).to_owned()).collect(),
        };
    }
    keep
}

#[cfg(test)]
#[path = "tests/rules.rs"]
mod tests;
