//! Provider fork operations (ARCHITECTURE.md, "Turns and provider forks"): the data, and
//! the pure rules over it — the state machine's transitions, the public status, the turn
//! barrier, the target context policy and the identity check of a committed operation. The
//! storage operations that use them are in `mod.rs`.
//!
//! ```text
//!    fork          begin_fork_dispatch    record_fork_disposition       commit_fork
//!     ─► prepared ─────► dispatching ─────── accepted ──► provider_accepted ──► committed ─► acknowledged (once)
//!        (frozen)        (dispatching)                    (materializing)
//!                          ├─ rejected ─► failed            └─ source reset / target taken ─► failed
//!                          └─ unknown ──► unknown
//!
//! restart recovery: dispatching ─► unknown · prepared: dispatch continues · provider_accepted: commit only
//! ```
//!
//! Every transition is a compare-and-set on the stored operation record; a transition
//! from any other state is a fork conflict with reason `stale_transition`. The public
//! status collapses the three active states to `accepted` (phases `frozen`,
//! `dispatching`, `materializing`); `committed`, `failed` and `unknown` are terminal.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::error::Error;
use crate::engine::op::Io;
use crate::storage::{Batch, keys, record};
use crate::types::Position;
use crate::types::Session;

/// The `model_config` key naming a session's provider (e.g. `codex`).
pub const PROVIDER_KEY: &str = "provider";
/// The `model_config` key holding a session's provider session (thread) id.
pub const PROVIDER_SESSION_ID_KEY: &str = "provider_session_id";
/// The `metadata` key holding a session's working directory.
pub const CWD_KEY: &str = "cwd";

/// Internal state of a fork operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkState {
    /// Recorded, the snapshot frozen, the target reserved; not yet sent to the provider.
    Prepared,
    /// About to be (or being) sent to the provider.
    Dispatching,
    /// The provider forked; the child is not materialized yet.
    ProviderAccepted,
    /// The child exists with its lineage (terminal).
    Committed,
    /// The provider rejected the fork, or it could not be materialized (terminal).
    Failed,
    /// Whether the provider got the fork is unknown; never retried automatically
    /// (terminal).
    Unknown,
}

impl ForkState {
    /// The public status: the three active states are all `accepted`.
    pub fn status(self) -> ForkStatus {
        match self {
            ForkState::Prepared | ForkState::Dispatching | ForkState::ProviderAccepted => {
                ForkStatus::Accepted
            }
            ForkState::Committed => ForkStatus::Committed,
            ForkState::Failed => ForkStatus::Failed,
            ForkState::Unknown => ForkStatus::Unknown,
        }
    }

    /// The public phase of an `accepted` operation.
    pub fn phase(self) -> Option<ForkPhase> {
        match self {
            ForkState::Prepared => Some(ForkPhase::Frozen),
            ForkState::Dispatching => Some(ForkPhase::Dispatching),
            ForkState::ProviderAccepted => Some(ForkPhase::Materializing),
            _ => None,
        }
    }

    /// Whether the operation still has work ahead (restart recovery looks at these).
    pub fn is_active(self) -> bool {
        self.status() == ForkStatus::Accepted
    }

    /// The state's name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            ForkState::Prepared => "prepared",
            ForkState::Dispatching => "dispatching",
            ForkState::ProviderAccepted => "provider_accepted",
            ForkState::Committed => "committed",
            ForkState::Failed => "failed",
            ForkState::Unknown => "unknown",
        }
    }
}

/// Public status of a fork operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkStatus {
    /// In progress (see [`ForkPhase`]).
    Accepted,
    /// The child exists.
    Committed,
    /// The provider rejected it (the error text and reason are kept).
    Failed,
    /// Delivery unknown.
    Unknown,
}

/// Public phase of an `accepted` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkPhase {
    /// Prepared: the snapshot is frozen.
    Frozen,
    /// Being sent to the provider.
    Dispatching,
    /// The provider accepted; the child is being materialized.
    Materializing,
}

/// What moves a fork operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkEvent {
    /// The host is about to call the provider.
    Dispatch,
    /// The provider forked.
    ProviderAccepted,
    /// The provider refused.
    ProviderRejected,
    /// The call's outcome is unknown (timeout, crash, lost connection).
    DeliveryUnknown,
    /// The child and its lineage were written.
    Commit,
    /// The child cannot be written (the source identity or the target key changed).
    CommitImpossible,
    /// The host restarted (recovery).
    Restart,
}

/// The state after `event`, or a fork conflict `stale_transition` when `event` does not
/// apply to `from` (someone else moved the operation first, or the host is confused).
pub fn transition(from: ForkState, event: ForkEvent) -> Result<ForkState, Error> {
    use ForkEvent as E;
    use ForkState as S;
    let to = match (from, event) {
        (S::Prepared, E::Dispatch) => S::Dispatching,
        (S::Dispatching, E::ProviderAccepted) => S::ProviderAccepted,
        (S::Dispatching, E::ProviderRejected) => S::Failed,
        (S::Dispatching, E::DeliveryUnknown | E::Restart) => S::Unknown,
        (S::ProviderAccepted, E::Commit) => S::Committed,
        (S::ProviderAccepted, E::CommitImpossible) => S::Failed,
        // Recovery leaves prepared (dispatch continues) and accepted (commit only) alone.
        (S::Prepared | S::ProviderAccepted, E::Restart) => from,
        _ => {
            return Err(Error::fork_conflict(
                "stale_transition",
                format!("a {} operation cannot take {event:?}", from.as_str()),
            ));
        }
    };
    Ok(to)
}

/// Whether an operation in `state` holds its fork point's barrier: a second fork of the
/// same point returns it instead of starting another. Active operations hold it, so do
/// `unknown` ones (they are never retried automatically) and committed ones until they
/// are acknowledged; a failed one releases it (a new request may try again).
pub fn holds_barrier(state: ForkState, acknowledged: bool) -> bool {
    match state {
        ForkState::Failed => false,
        ForkState::Committed => !acknowledged,
        _ => true,
    }
}

/// A fork request. Unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The caller's idempotency id: the same request under it returns the same operation.
    pub request_id: String,
    /// Key of the child session (must be free).
    pub target_key: String,
    /// Identity of the child session.
    pub target_session_id: String,
    /// Fork through this (settled) turn; absent: the whole session as it is now (no
    /// turn may be running).
    #[serde(default)]
    pub through_turn_id: Option<String>,
    /// The working directory prepared for the child; wins over the source's.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Which point of the source a fork copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkPointKind {
    /// Through one settled turn.
    ThroughTurn,
    /// The whole session (no turn running).
    Session,
}

/// The frozen fork point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkPoint {
    /// Through a turn, or the whole session.
    pub kind: ForkPointKind,
    /// The turn (for a whole-session fork: the latest turn, if any).
    pub turn_id: Option<String>,
    /// Its start order in the source (the child gets the source turns up to it).
    pub turn_seq: Option<u64>,
    /// The provider's id of that turn.
    pub provider_turn_id: Option<String>,
    /// The turn's opaque provider binding.
    pub provider_binding: Option<Value>,
}

impl ForkPoint {
    /// The name of the point in the barrier key.
    pub fn barrier_name(&self) -> String {
        let kind = match self.kind {
            ForkPointKind::ThroughTurn => "turn",
            ForkPointKind::Session => "session",
        };
        format!("{kind}:{}", self.turn_id.as_deref().unwrap_or(""))
    }
}

/// What the child session starts with besides its history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetContext {
    /// The working directory (the prepared one, else the source's).
    pub cwd: Option<String>,
    /// The source's model.
    pub model: Option<String>,
    /// The source's channel.
    pub channel: Option<String>,
    /// The source's model config without the facts the source owns.
    pub model_config: BTreeMap<String, Value>,
    /// The source's metadata (worktree isolation and other runtime facts), `cwd` set.
    pub metadata: BTreeMap<String, Value>,
}

/// Whether a `model_config` key is a fact the source session owns (its provider session
/// or thread id) and a child must not inherit: the provider gives the child its own.
pub fn is_owned_fact(key: &str) -> bool {
    key == PROVIDER_SESSION_ID_KEY || key.ends_with("_thread_id")
}

/// The target context policy: the child keeps the source's worktree isolation facts
/// and every other runtime fact it does not own (model, channel, model config, metadata);
/// the prepared working directory wins over the source's.
pub fn target_context(source: &Session, prepared_cwd: Option<&str>) -> TargetContext {
    let model_config = crate::order::map_of(
        source
            .model_config
            .iter()
            .filter(|(k, _)| !is_owned_fact(k))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    let mut metadata = source.metadata.clone();
    let cwd = prepared_cwd
        .map(str::to_owned)
        .or_else(|| string_fact(&source.metadata, CWD_KEY));
    if let Some(cwd) = &cwd {
        metadata.insert(CWD_KEY.into(), Value::String(cwd.clone()));
    }
    TargetContext {
        cwd,
        model: source.model.clone(),
        channel: source.channel.clone(),
        model_config,
        metadata,
    }
}

/// A string value of a map, if present.
pub fn string_fact(map: &BTreeMap<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Where a forked session comes from. Written in the same commit as the child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkLineage {
    /// The child's key.
    pub target_key: String,
    /// The child's identity.
    pub target_session_id: String,
    /// The source's key.
    pub source_key: String,
    /// The source's identity at the fork.
    pub source_session_id: String,
    /// The source turn forked through.
    pub source_turn_id: Option<String>,
    /// The same turn in the child (turn ids are kept).
    pub target_turn_id: Option<String>,
    /// The operation that made the child.
    pub operation_id: String,
    /// When the child was committed.
    pub forked_at: u64,
}

/// A session with where it was forked from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForkedSession {
    /// The session as committed.
    #[serde(flatten)]
    pub session: Session,
    /// Its lineage.
    pub forked_from: ForkLineage,
}

impl<'de> Deserialize<'de> for ForkedSession {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        crate::storage::record::read_flat(deserializer, |object| {
            Ok(ForkedSession {
                session: crate::storage::record::read(object)?,
                forked_from: crate::storage::record::member(object, "forked_from")?
                    .ok_or_else(|| serde_json::Error::missing_field("forked_from"))?,
            })
        })
    }
}

/// The one-time provider state binding of a committed fork's child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderStateBinding {
    /// The provider keeps no state to bind.
    #[default]
    NotRequired,
    /// Must be bound before the child first runs.
    Pending,
    /// A host took it ([`crate::claim_fork_provider_binding`]); never offered again.
    Claimed,
    /// Done.
    Bound,
}

/// What the host reports after calling the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "disposition", rename_all = "snake_case", deny_unknown_fields)]
pub enum Disposition {
    /// The provider forked.
    Accepted {
        /// The child's provider session (thread) id.
        #[serde(default)]
        target_provider_session_id: Option<String>,
        /// The provider keeps state the host must bind before the child first runs.
        #[serde(default)]
        bind_provider_state: bool,
    },
    /// The provider refused.
    Rejected {
        /// Its message, kept verbatim.
        error: String,
        /// Its reason code (e.g. `attachment_unsupported`), kept verbatim.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Whether the provider got the call is unknown.
    Unknown {
        /// What the host saw, kept verbatim.
        error: String,
    },
}

/// The reason code of an `unknown` operation whose provider answer was not a valid
/// disposition.
pub const INVALID_DISPOSITION: &str = "invalid_disposition";

/// Whether `disposition` is one the core can record as it is: ids and reason codes of 1
/// to [`crate::engine::validate::MAX_ID_BYTES`] bytes without control characters, error texts
/// within the content limit.
pub fn check_disposition(disposition: &Disposition) -> Result<(), Error> {
    let error_text = |error: &str| {
        crate::engine::validate::content(error).map_err(|e| Error::invalid("error", e.to_string()))
    };
    match disposition {
        Disposition::Accepted {
            target_provider_session_id: Some(id),
            ..
        } => crate::engine::validate::id("target_provider_session_id", id),
        Disposition::Accepted { .. } => Ok(()),
        Disposition::Rejected { error, reason } => error_text(error).and_then(|()| {
            reason
                .as_deref()
                .map_or(Ok(()), |r| crate::engine::validate::id("reason", r))
        }),
        Disposition::Unknown { error } => error_text(error),
    }
}

/// What is recorded for a provider's answer: a valid disposition as it is; anything
/// else is `unknown` (whether the provider forked cannot be told from it, and the
/// operation must not stay `dispatching`), its error saying why, with the reason code
/// [`INVALID_DISPOSITION`]. Returns the disposition and the reason code of an `unknown`.
pub fn recorded_disposition(disposition: Disposition) -> (Disposition, &'static str) {
    match check_disposition(&disposition) {
        Ok(()) => (disposition, "delivery_unknown"),
        Err(e) => (
            Disposition::Unknown {
                error: format!("the provider's answer is not a valid disposition: {e}"),
            },
            INVALID_DISPOSITION,
        ),
    }
}

/// A provider fork operation as stored (and, with status and phase, as returned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkOperation {
    /// The operation id (given by the caller of [`crate::fork`]).
    pub operation_id: String,
    /// The request's idempotency id.
    pub request_id: String,
    /// FNV-64 of the canonical request (source key + [`ForkRequest`]).
    pub request_hash: String,
    /// The request as given.
    pub request: ForkRequest,
    /// Internal state.
    pub state: ForkState,
    /// The source's key.
    pub source_key: String,
    /// The source's identity at prepare.
    pub source_session_id: String,
    /// The source's provider (`model_config.provider`).
    #[serde(default)]
    pub source_provider: Option<String>,
    /// The source's provider session id (`model_config.provider_session_id`).
    #[serde(default)]
    pub source_provider_session_id: Option<String>,
    /// The frozen fork point.
    pub point: ForkPoint,
    /// The newest source entry the child gets (`None`: an empty history).
    #[serde(default)]
    pub boundary: Option<Position>,
    /// Whether the frozen history was copied into the operation because a write on the
    /// source (truncation, compaction, reset, deletion) was about to change it; the
    /// commit then reads the copy, not the source.
    #[serde(default)]
    pub snapshot_copied: bool,
    /// The child's key.
    pub target_key: String,
    /// The child's identity.
    pub target_session_id: String,
    /// The child's context (frozen at prepare).
    pub target_context: TargetContext,
    /// The child's provider session id, once the provider accepted.
    #[serde(default)]
    pub target_provider_session_id: Option<String>,
    /// Error text of a failed or unknown operation, verbatim.
    #[serde(default)]
    pub error: Option<String>,
    /// Reason code of a failed or unknown operation, verbatim.
    #[serde(default)]
    pub error_reason: Option<String>,
    /// The committed child (immutable once committed; survives the child's deletion).
    #[serde(default)]
    pub session: Option<ForkedSession>,
    /// The committed lineage (immutable once committed).
    #[serde(default)]
    pub lineage: Option<ForkLineage>,
    /// The one-time provider state binding of the child.
    #[serde(default)]
    pub provider_state_binding: ProviderStateBinding,
    /// When the caller acknowledged the committed result.
    #[serde(default)]
    pub acknowledged_at: Option<u64>,
    /// When prepared.
    pub created_at: u64,
    /// When last moved.
    pub updated_at: u64,
}

impl ForkOperation {
    /// The source turn forked through.
    pub fn source_turn_id(&self) -> Option<&str> {
        self.point.turn_id.as_deref()
    }
}

/// A fork operation as the API returns it: the record with its public status and phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkOperationView {
    /// Public status.
    pub status: ForkStatus,
    /// Public phase while `accepted`.
    pub phase: Option<ForkPhase>,
    /// The source turn forked through.
    pub source_turn_id: Option<String>,
    /// The same turn in the child.
    pub target_turn_id: Option<String>,
    /// Whether the committed result was acknowledged.
    pub acknowledged: bool,
    /// How a [`crate::fork`] call came to return this operation; `None` from every
    /// other call. Only a `prepared` one is the caller's to dispatch.
    #[serde(default)]
    pub origin: Option<ForkOrigin>,
    /// The record.
    #[serde(flatten)]
    pub operation: ForkOperation,
}

/// What a driver holding a fork operation does next ([`ForkOperationView::next_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkStep {
    /// [`crate::begin_fork_dispatch`], call the provider once, then
    /// [`crate::record_fork_disposition`] with its answer.
    Dispatch,
    /// [`crate::commit_fork`]: the provider accepted; writing the child calls no provider.
    Commit,
    /// Nothing: the operation ended, is in flight elsewhere, or is someone else's.
    Done,
}

impl ForkOperationView {
    /// The step this view calls for. A `prepared` operation is dispatched only when it
    /// is the caller's to dispatch: returned by any call but [`crate::fork`], or by a
    /// `fork` that prepared it. The caller's own earlier request is only committed when
    /// the provider had accepted it; an operation holding the barrier for another
    /// request is never advanced.
    pub fn next_step(&self) -> ForkStep {
        let mine = match self.origin {
            None | Some(ForkOrigin::Prepared) => true,
            Some(ForkOrigin::SameRequest) => false,
            Some(ForkOrigin::BarrierHeld) => return ForkStep::Done,
        };
        match self.operation.state {
            ForkState::Prepared if mine => ForkStep::Dispatch,
            ForkState::ProviderAccepted => ForkStep::Commit,
            _ => ForkStep::Done,
        }
    }
}

/// How a [`crate::fork`] call came to return an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkOrigin {
    /// This call prepared it: the caller dispatches it.
    Prepared,
    /// The same request was made before (same `request_id`, same arguments): the
    /// caller's own operation, as it is now.
    SameRequest,
    /// Another request's operation holds the fork point's barrier: someone else's,
    /// returned as it is; the caller must not advance it.
    BarrierHeld,
}

/// The public projection of an operation.
pub fn view(operation: &ForkOperation) -> ForkOperationView {
    ForkOperationView {
        status: operation.state.status(),
        phase: operation.state.phase(),
        source_turn_id: operation.point.turn_id.clone(),
        target_turn_id: operation.point.turn_id.clone(),
        acknowledged: operation.acknowledged_at.is_some(),
        origin: None,
        operation: operation.clone(),
    }
}

/// The projection a [`crate::fork`] call returns: [`view`] with its `origin`.
pub fn fork_result(operation: &ForkOperation, origin: ForkOrigin) -> ForkOperationView {
    ForkOperationView {
        origin: Some(origin),
        ..view(operation)
    }
}

/// Checks that a committed operation's stored identities agree: its lineage and child
/// name this operation, its target and its source; the live lineage of the target (if
/// the child still exists) names this operation too. Otherwise a fork conflict
/// `inconsistent_identity`.
pub fn check_committed_identity(
    operation: &ForkOperation,
    live_lineage: Option<&ForkLineage>,
) -> Result<(), Error> {
    let bad = |what: String| {
        Err(Error::fork_conflict(
            "inconsistent_identity",
            format!("operation `{}`: {what}", operation.operation_id),
        ))
    };
    let (Some(lineage), Some(session)) = (&operation.lineage, &operation.session) else {
        return bad("committed without a child or lineage".into());
    };
    if lineage.operation_id != operation.operation_id {
        return bad(format!(
            "lineage names operation `{}`",
            lineage.operation_id
        ));
    }
    if lineage.target_session_id != operation.target_session_id
        || lineage.target_key != operation.target_key
    {
        return bad(format!(
            "lineage target `{}` ({}) is not the operation's target `{}` ({})",
            lineage.target_session_id,
            lineage.target_key,
            operation.target_session_id,
            operation.target_key
        ));
    }
    if lineage.source_session_id != operation.source_session_id
        || lineage.source_turn_id.as_deref() != operation.source_turn_id()
    {
        return bad("lineage source is not the operation's source".into());
    }
    if session.session.session_id != operation.target_session_id || session.forked_from != *lineage
    {
        return bad("the committed child is not the operation's target".into());
    }
    if let Some(live) = live_lineage
        && live.operation_id != operation.operation_id
    {
        return bad(format!(
            "the target's lineage names operation `{}`",
            live.operation_id
        ));
    }
    Ok(())
}

/// What the host needs to call the provider for a fork.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchPayload {
    /// The operation.
    pub operation_id: String,
    /// The source's key.
    pub source_key: String,
    /// The source's identity.
    pub source_session_id: String,
    /// The source's provider.
    pub source_provider: Option<String>,
    /// The source's provider session id.
    pub source_provider_session_id: Option<String>,
    /// The child's key.
    pub target_key: String,
    /// The child's identity.
    pub target_session_id: String,
    /// The frozen fork point, with the turn's provider id and binding.
    pub point: ForkPoint,
    /// The child's context.
    pub target_context: TargetContext,
}

/// The dispatch payload of an operation.
pub fn dispatch_payload(operation: &ForkOperation) -> DispatchPayload {
    DispatchPayload {
        operation_id: operation.operation_id.clone(),
        source_key: operation.source_key.clone(),
        source_session_id: operation.source_session_id.clone(),
        source_provider: operation.source_provider.clone(),
        source_provider_session_id: operation.source_provider_session_id.clone(),
        target_key: operation.target_key.clone(),
        target_session_id: operation.target_session_id.clone(),
        point: operation.point.clone(),
        target_context: operation.target_context.clone(),
    }
}

/// What the host must bind, once, before the child of a committed fork first runs on a
/// provider that keeps provider-side state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderBindingRequest {
    /// The operation (complete with [`crate::complete_fork_provider_binding`]).
    pub operation_id: String,
    /// The provider.
    pub provider: Option<String>,
    /// The source's key.
    pub source_key: String,
    /// The source's identity.
    pub source_session_id: String,
    /// The child's key.
    pub target_key: String,
    /// The child's identity.
    pub target_session_id: String,
    /// The source's provider session id.
    pub source_provider_session_id: Option<String>,
    /// The child's provider session id.
    pub target_provider_session_id: Option<String>,
}

/// What restart recovery did and what it leaves to the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Operations that were `dispatching`: now `unknown`, never retried automatically.
    pub marked_unknown: Vec<ForkOperationView>,
    /// `prepared` operations: dispatch continues ([`crate::begin_fork_dispatch`]).
    pub to_dispatch: Vec<ForkOperationView>,
    /// `provider_accepted` operations: commit only ([`crate::commit_fork`]).
    pub to_commit: Vec<ForkOperationView>,
}

/// FNV-1a 64 of the canonical request, as 16 hex digits: what "the same request" means.
pub fn request_hash(source_key: &str, request: &ForkRequest) -> String {
    // Struct fields serialize in declaration order, so this text is canonical.
    let text = serde_json::to_string(&(source_key, request)).unwrap_or_default();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// An operation record as read, with its bytes (the compare-and-set precondition).
pub(crate) struct LoadedOp {
    pub(crate) op: ForkOperation,
    pub(crate) bytes: Vec<u8>,
}

pub(crate) async fn load_op(io: &Io, operation_id: &str) -> Result<Option<LoadedOp>, Error> {
    let key = keys::fork_operation(operation_id);
    Ok(match io.get(key.clone()).await? {
        Some(bytes) => Some(LoadedOp {
            op: record::decode(&key, &bytes)?,
            bytes,
        }),
        None => None,
    })
}

/// Adds the compare-and-set write of `new` over `old` to `batch`.
pub(crate) fn write_op(
    batch: &mut Batch,
    old: &LoadedOp,
    new: &ForkOperation,
) -> Result<(), Error> {
    let key = keys::fork_operation(&new.operation_id);
    batch.require_equals(key.clone(), old.bytes.clone());
    batch.put(key, record::encode(new)?);
    Ok(())
}

#[cfg(test)]
#[path = "tests/types.rs"]
mod tests;
