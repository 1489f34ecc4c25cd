//! Fork capabilities of session projections (ARCHITECTURE.md, "Turns and provider forks"),
//! as plain functions plus one thin read operation.
//!
//! Whether a session can be forked is the provider runtime's call, so the core never
//! guesses: it lists the **probes** a projection needs, the host asks the provider and
//! hands the answers back, and the core projects. A callback-free two-step:
//!
//! 1. [`fork_projection`] (or [`plan_probes`] over data the host already has) with no
//!    answers returns the pending probes, and a projection that fails closed meanwhile;
//! 2. the same call with the answers returns the projection.
//!
//! Rules, by [`ProjectionMode`]:
//! - `detail` (one session shown in full): lifecycle capabilities `fork` and
//!   `fork_through_turn` come from the provider runtime's answer for the session (a
//!   provider may support only through-turn forks); they do not depend on whether the
//!   session is busy; a failed or rejected probe, or no answer, gives `false` (fail
//!   closed). Per-turn availability is projected as in `list`.
//! - `list` (session lists, batch projections): session-level capabilities are never
//!   resolved (`lifecycle_capabilities` is absent) — the lineage is read once per
//!   session — but the active and latest turns carry `provider_fork_binding_available`,
//!   probed at most once per (session, turn) per request (distinct turns are distinct
//!   probes) and `false` on probe error or rejection.
//! - `hydration` (loading messages): nothing is probed; both capabilities are `false`.
//!
//! A probe is only asked where it can succeed: the session must have a provider session
//! id, and a turn a provider turn id or binding; otherwise the answer is `false` at once.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::error::Error;
use crate::engine::op::Operation;
use crate::engine::validate;
use crate::provider_fork::types::{
    ForkLineage, PROVIDER_KEY, PROVIDER_SESSION_ID_KEY, string_fact,
};
use crate::session::require;
use crate::turns::{Turn, TurnSummary, turns_of};

/// Which projection is being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectionMode {
    /// One session in full: session-level capabilities resolved.
    Detail,
    /// A list: per-turn availability only.
    List,
    /// Message hydration: nothing probed, capabilities false.
    Hydration,
}

/// What the session's lifecycle allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LifecycleCapabilities {
    /// The whole session can be forked.
    pub fork: bool,
    /// The session can be forked through a turn.
    pub fork_through_turn: bool,
}

/// The provider's answer to a probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProbeOutcome {
    /// Session-level: what the provider runtime supports for this session.
    Capability {
        /// Whole-session forks.
        fork: bool,
        /// Through-turn forks.
        through_turn: bool,
    },
    /// Turn-level: whether the provider can fork through this turn.
    Forkable {
        /// The answer.
        available: bool,
    },
    /// The provider refused to answer (or refused the binding).
    Rejected {
        /// Its reason, if any.
        #[serde(default)]
        reason: Option<String>,
    },
    /// The probe failed.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// A probe the host must ask the provider: session-level when `turn_id` is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRequest {
    /// The session key.
    pub session_key: String,
    /// The session identity.
    pub session_id: String,
    /// The session's provider.
    pub provider: Option<String>,
    /// The session's provider session id.
    pub provider_session_id: Option<String>,
    /// The turn (turn-level probes).
    pub turn_id: Option<String>,
    /// The turn's provider id.
    pub provider_turn_id: Option<String>,
    /// The turn's opaque provider binding.
    pub provider_binding: Option<Value>,
}

/// The host's answer to a [`ProbeRequest`], matched by session key and turn id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeAnswer {
    /// The session key.
    pub session_key: String,
    /// The turn; `None` for the session-level probe.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// What the provider said.
    pub outcome: ProbeOutcome,
}

/// What a projection needs to know about one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionForkInput {
    /// The session key.
    pub key: String,
    /// The session identity.
    pub session_id: String,
    /// Its provider.
    pub provider: Option<String>,
    /// Its provider session id.
    pub provider_session_id: Option<String>,
    /// Its lineage, if it is the child of a fork.
    pub lineage: Option<ForkLineage>,
    /// Its latest and active turns.
    pub turns: TurnSummary,
}

/// A turn with its provider forkability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectedTurn {
    /// The turn.
    #[serde(flatten)]
    pub turn: Turn,
    /// Whether the provider can fork through it (false when unknown).
    pub provider_fork_binding_available: bool,
}

/// One session's fork projection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectedSession {
    /// The session key.
    pub key: String,
    /// The session identity.
    pub session_id: String,
    /// Where it was forked from.
    pub forked_from: Option<ForkLineage>,
    /// Session-level capabilities; absent in list projections (never resolved there).
    pub lifecycle_capabilities: Option<LifecycleCapabilities>,
    /// The latest turn.
    pub latest_turn: Option<ProjectedTurn>,
    /// The active (running) turn.
    pub active_turn: Option<ProjectedTurn>,
}

/// A projection and the probes it still needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// The sessions, in the order asked; unanswered probes count as `false`.
    pub sessions: Vec<ProjectedSession>,
    /// Probes without an answer: ask the provider, then project again with the answers.
    pub probes: Vec<ProbeRequest>,
}

type ProbeKey = (String, Option<String>);

/// Session-level capabilities from the provider runtime's answer: exactly what it
/// supports (through-turn needs a turn to fork through); busy or not makes no
/// difference; anything but a capability answer fails closed.
pub fn session_capabilities(
    outcome: Option<&ProbeOutcome>,
    has_turn: bool,
) -> LifecycleCapabilities {
    match outcome {
        Some(ProbeOutcome::Capability { fork, through_turn }) => LifecycleCapabilities {
            fork: *fork,
            fork_through_turn: *through_turn && has_turn,
        },
        _ => LifecycleCapabilities::default(),
    }
}

/// Per-turn availability from the provider's answer; fails closed.
pub fn turn_binding_available(outcome: Option<&ProbeOutcome>) -> bool {
    matches!(outcome, Some(ProbeOutcome::Forkable { available: true }))
}

fn probeable_turn(input: &SessionForkInput, turn: &Turn) -> bool {
    input.provider_session_id.is_some()
        && (turn.provider_turn_id.is_some() || turn.provider_binding.is_some())
}

fn turn_probe(input: &SessionForkInput, turn: &Turn) -> ProbeRequest {
    ProbeRequest {
        session_key: input.key.clone(),
        session_id: input.session_id.clone(),
        provider: input.provider.clone(),
        provider_session_id: input.provider_session_id.clone(),
        turn_id: Some(turn.turn_id.clone()),
        provider_turn_id: turn.provider_turn_id.clone(),
        provider_binding: turn.provider_binding.clone(),
    }
}

/// The probes a projection needs, each (session, turn) once, in input order.
pub fn plan_probes(mode: ProjectionMode, inputs: &[SessionForkInput]) -> Vec<ProbeRequest> {
    let mut seen: BTreeSet<ProbeKey> = BTreeSet::new();
    let mut probes = Vec::new();
    if mode == ProjectionMode::Hydration {
        return probes;
    }
    for input in inputs {
        if mode == ProjectionMode::Detail
            && input.provider_session_id.is_some()
            && seen.insert((input.key.clone(), None))
        {
            probes.push(ProbeRequest {
                session_key: input.key.clone(),
                session_id: input.session_id.clone(),
                provider: input.provider.clone(),
                provider_session_id: input.provider_session_id.clone(),
                turn_id: None,
                provider_turn_id: None,
                provider_binding: None,
            });
        }
        for turn in [&input.turns.active, &input.turns.latest]
            .into_iter()
            .flatten()
        {
            if probeable_turn(input, turn)
                && seen.insert((input.key.clone(), Some(turn.turn_id.clone())))
            {
                probes.push(turn_probe(input, turn));
            }
        }
    }
    probes
}

/// Projects `inputs` with the provider's `answers` (the first answer per probe counts).
pub fn project(
    mode: ProjectionMode,
    inputs: &[SessionForkInput],
    answers: &[ProbeAnswer],
) -> Projection {
    let mut answered: BTreeMap<ProbeKey, &ProbeOutcome> = BTreeMap::new();
    for answer in answers {
        answered
            .entry((answer.session_key.clone(), answer.turn_id.clone()))
            .or_insert(&answer.outcome);
    }
    let probes = plan_probes(mode, inputs)
        .into_iter()
        .filter(|p| !answered.contains_key(&(p.session_key.clone(), p.turn_id.clone())))
        .collect();
    let sessions = inputs
        .iter()
        .map(|input| {
            let turn = |turn: &Option<Turn>| {
                turn.as_ref().map(|t| ProjectedTurn {
                    provider_fork_binding_available: mode != ProjectionMode::Hydration
                        && probeable_turn(input, t)
                        && turn_binding_available(
                            answered
                                .get(&(input.key.clone(), Some(t.turn_id.clone())))
                                .copied(),
                        ),
                    turn: t.clone(),
                })
            };
            let lifecycle_capabilities = match mode {
                ProjectionMode::List => None,
                ProjectionMode::Hydration => Some(LifecycleCapabilities::default()),
                ProjectionMode::Detail => Some(session_capabilities(
                    answered.get(&(input.key.clone(), None)).copied(),
                    input.turns.latest.is_some(),
                )),
            };
            ProjectedSession {
                key: input.key.clone(),
                session_id: input.session_id.clone(),
                forked_from: input.lineage.clone(),
                lifecycle_capabilities,
                latest_turn: turn(&input.turns.latest),
                active_turn: turn(&input.turns.active),
            }
        })
        .collect();
    Projection { sessions, probes }
}

/// Reads what the projection of the sessions under `keys` needs — per session its
/// record, its lineage (one read) and its latest turn (one range read) — and projects
/// them with `answers` (see the module docs for the two-step).
pub fn fork_projection(
    workspace: &str,
    keys: Vec<String>,
    mode: ProjectionMode,
    answers: Vec<ProbeAnswer>,
) -> Operation<Projection> {
    let checked = validate::workspace(workspace).and_then(|()| {
        if keys.len() > validate::MAX_PAGE as usize {
            return Err(Error::invalid(
                "keys",
                format!("{} keys; at most {}", keys.len(), validate::MAX_PAGE),
            ));
        }
        keys.iter().try_for_each(|k| validate::session_key(k))
    });
    check!(workspace, checked);
    Operation::new(workspace, move |io| {
        let (keys, answers) = (keys.clone(), answers.clone());
        async move {
            let mut inputs = Vec::with_capacity(keys.len());
            for key in &keys {
                let loaded = require(&io, key).await?;
                let lineage = crate::provider_fork::lineage_of(&io, loaded.data_id()).await?;
                let turns = turns_of(&io, loaded.data_id()).await?;
                let session = loaded.session;
                inputs.push(SessionForkInput {
                    key: key.clone(),
                    provider: string_fact(&session.model_config, PROVIDER_KEY),
                    provider_session_id: string_fact(
                        &session.model_config,
                        PROVIDER_SESSION_ID_KEY,
                    ),
                    session_id: session.session_id,
                    lineage,
                    turns,
                });
            }
            Ok(project(mode, &inputs, &answers))
        }
    })
}

#[cfg(test)]
#[path = "tests/capabilities.rs"]
mod tests;
