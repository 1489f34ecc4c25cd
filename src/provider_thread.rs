//! Provider thread bindings (ARCHITECTURE.md, "Resume selection"): a session remembers the
//! provider-side thread its turns ran on (e.g. `codex_thread_id` in its `model_config`), so
//! an agent rebuilt for the same session resumes that thread instead of starting an empty
//! one.
//!
//! - The binding is written only by [`commit_turn`], in the same commit that makes the
//!   turn's entries durable: a crash can never leave a binding to a thread whose turn
//!   Spool does not have.
//! - [`plan_provider_thread`] tells a new agent what to do: resume the bound thread, or
//!   start one. When the host reports that the bound thread could not be resumed, the
//!   plan is "start fresh" with exactly one notice (`Codex thread could not be resumed;
//!   starting a new one.`) and the dead binding is dropped at once, so no later plan
//!   offers it again; the next turn's commit binds the new thread, and only if the
//!   binding is still the dead one or none (otherwise another agent already rotated it,
//!   and the commit fails with `conflict` rather than undo that).
//! - A binding belongs to one session of one workspace: nothing is ever resumed across
//!   sessions or workspaces.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::{require, write_update};
use crate::storage::Batch;
use crate::transcript::{check_appends, check_epoch, commit_appends, stage_appends};
use crate::types::{AppendRequest, Entry, Session};

/// The most entries one turn may commit at once.
pub const MAX_TURN_ENTRIES: usize = crate::transcript::MAX_APPEND_ENTRIES;

/// The `model_config` key that holds `agent_type`'s thread binding.
pub fn binding_key(agent_type: &str) -> String {
    format!("{agent_type}_thread_id")
}

/// How a notice names an agent type.
pub fn provider_name(agent_type: &str) -> String {
    match agent_type {
        "codex" => "Codex".into(),
        "claude_code" => "Claude Code".into(),
        "opencode" => "opencode".into(),
        other => other.into(),
    }
}

/// What a new agent does about its provider thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPlan {
    /// `resume` (with `thread_id`) or `start`.
    pub action: String,
    /// The thread to resume.
    pub thread_id: Option<String>,
    /// The thread the next turn's binding replaces (pass it to [`commit_turn`] as
    /// `replaces`), when a stored binding is being given up.
    pub replaces: Option<String>,
    /// A notice for the user, at most one per plan.
    pub notice: Option<String>,
}

/// Decides, from a session's `model_config`, whether `agent_type` resumes its bound
/// thread or starts a new one; `dead_thread` is a thread the provider just refused to
/// resume.
pub fn thread_plan(
    model_config: &BTreeMap<String, Value>,
    agent_type: &str,
    dead_thread: Option<&str>,
) -> ThreadPlan {
    let bound = model_config
        .get(&binding_key(agent_type))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    match (bound, dead_thread) {
        (Some(bound), Some(dead)) if bound == dead => ThreadPlan {
            action: "start".into(),
            thread_id: None,
            replaces: Some(bound.to_owned()),
            notice: Some(format!(
                "{} thread could not be resumed; starting a new one.",
                provider_name(agent_type)
            )),
        },
        (Some(bound), _) => ThreadPlan {
            action: "resume".into(),
            thread_id: Some(bound.to_owned()),
            replaces: None,
            notice: None,
        },
        (None, _) => ThreadPlan {
            action: "start".into(),
            thread_id: None,
            replaces: None,
            notice: None,
        },
    }
}

/// Reads the session under `key` and plans its provider thread ([`thread_plan`]). When
/// `dead_thread` is the bound thread, the binding is dropped in the same operation: the
/// refusal is remembered, and a later plan (with or without `dead_thread`) starts a new
/// thread without another notice. `updated_at` is left alone (nothing was used).
pub fn plan_provider_thread(
    workspace: &str,
    key: &str,
    agent_type: &str,
    dead_thread: Option<String>,
) -> Operation<ThreadPlan> {
    check!(
        workspace,
        validate::keyed(workspace, key)
            .and_then(|()| validate::id("agent_type", agent_type))
            .and_then(|()| {
                dead_thread
                    .as_deref()
                    .map_or(Ok(()), |t| validate::id("dead_thread", t))
            })
    );
    let (key, agent) = (key.to_owned(), agent_type.to_owned());
    Operation::new(workspace, move |io| {
        let (key, agent, dead) = (key.clone(), agent.clone(), dead_thread.clone());
        async move {
            let loaded = require(&io, &key).await?;
            let plan = thread_plan(&loaded.session.model_config, &agent, dead.as_deref());
            if plan.replaces.is_some() {
                // The provider refused the bound thread: drop the binding in the same
                // step, so no later plan offers it again.
                let mut updated = loaded.session.clone();
                updated.model_config.remove(&binding_key(&agent));
                let mut batch = Batch::default();
                write_update(&mut batch, &loaded, &updated)?;
                io.commit(batch).await?;
            }
            Ok(plan)
        }
    })
}

/// The thread a turn ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadBinding {
    /// The agent type (`codex`, …): the binding is `<agent_type>_thread_id`.
    pub agent_type: String,
    /// The provider's thread id.
    pub thread_id: String,
    /// The binding this one replaces: the commit fails with `conflict` unless the
    /// session is still bound to it (or, when absent, to nothing or to `thread_id`).
    #[serde(default)]
    pub replaces: Option<String>,
}

/// One turn's entries and the thread it ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnCommit {
    /// The entries, in order.
    pub entries: Vec<AppendRequest>,
    /// The thread binding to record with them.
    #[serde(default)]
    pub thread: Option<ThreadBinding>,
    /// Fence: fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub expected_epoch: Option<u64>,
}

/// What [`commit_turn`] wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnCommitted {
    /// The entries as stored.
    pub entries: Vec<Entry>,
    /// The session after the commit.
    pub session: Session,
}

/// Appends a turn's entries and records its thread binding in one atomic commit.
pub fn commit_turn(
    workspace: &str,
    key: &str,
    turn: TurnCommit,
    now_ms: u64,
) -> Operation<TurnCommitted> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| check_turn(&turn))
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, turn) = (key.clone(), turn.clone());
        async move { commit(&io, &key, turn, now_ms).await }
    })
}

fn check_turn(turn: &TurnCommit) -> Result<(), Error> {
    if turn.entries.is_empty() && turn.thread.is_none() {
        return Err(Error::invalid(
            "entries",
            "a turn commits entries or a binding",
        ));
    }
    check_appends("entries", &turn.entries)?;
    if let Some(thread) = &turn.thread {
        validate::id("agent_type", &thread.agent_type)?;
        validate::id("thread_id", &thread.thread_id)?;
        if let Some(old) = &thread.replaces {
            validate::id("replaces", old)?;
        }
    }
    Ok(())
}

async fn commit(io: &Io, key: &str, turn: TurnCommit, now_ms: u64) -> OpResult<TurnCommitted> {
    let loaded = require(io, key).await?;
    check_epoch(key, &loaded.session, turn.expected_epoch)?;
    let mut updated = loaded.session.clone();
    updated.updated_at = now_ms;
    if let Some(thread) = &turn.thread {
        let name = binding_key(&thread.agent_type);
        let bound = updated.model_config.get(&name).and_then(Value::as_str);
        let expected_ok = match (&thread.replaces, bound) {
            (Some(old), Some(bound)) => bound == old || bound == thread.thread_id,
            (Some(_), None) => true,
            (None, None) => true,
            (None, Some(bound)) => bound == thread.thread_id,
        };
        if !expected_ok {
            return Err(Error::Conflict {
                reason: format!(
                    "session `{key}` is bound to {} thread `{}`, not `{}`",
                    provider_name(&thread.agent_type),
                    bound.unwrap_or_default(),
                    thread.replaces.as_deref().unwrap_or(&thread.thread_id),
                ),
            }
            .into());
        }
        updated
            .model_config
            .insert(name, Value::String(thread.thread_id.clone()));
        validate::session_map("model_config", &updated.model_config)?;
    }
    let staged = stage_appends(io, key, &loaded, &mut updated, turn.entries, now_ms).await?;
    let entries = commit_appends(io, key, &loaded, &updated, staged).await?;
    Ok(TurnCommitted {
        entries,
        session: updated,
    })
}

#[cfg(test)]
#[path = "tests/provider_thread.rs"]
mod tests;
