//! Provider fork operations (ARCHITECTURE.md, "Turns and provider forks") as storage
//! operations over the rules in `types.rs`.
//!
//! A provider fork asks the agent's provider (e.g. Codex) to fork its own session, and
//! materializes the child in Spool once the provider agreed. The provider call is the
//! host's: the core records every step so that a crash at any point is recoverable and
//! nothing is ever dispatched twice.
//!
//! 1. [`fork`] prepares: checks idempotency (same `request_id` + same request → the
//!    existing operation; a changed request → fork conflict `request_changed`), the turn
//!    barrier (a second fork of the same point while one is active, `unknown`, or
//!    committed but unacknowledged → the existing operation), reserves the target key,
//!    freezes the snapshot (the source identity, the fork point's turn and the transcript
//!    boundary) and the target context, and returns `accepted` / `frozen`.
//! 2. [`begin_fork_dispatch`] records `dispatching` **before** the host calls the
//!    provider, and returns the payload to send.
//! 3. [`record_fork_disposition`]: `accepted` → `provider_accepted`; `rejected` →
//!    `failed` (error text and reason code kept verbatim); `unknown` → `unknown`.
//! 4. [`commit_fork`] materializes the child from the frozen snapshot (not the live
//!    source) and writes its lineage in the same atomic commit → `committed`. The
//!    snapshot is pinned: a write that would change the source's entries other than by
//!    an append copies the frozen entries into the operation first
//!    (`branch::history::keep_snapshots`, part of every release of shared history), and
//!    the commit reads that copy.
//! 5. [`get_fork_operation`] returns the operation (a committed one with its immutable
//!    child and lineage, even after the child was deleted) and never acknowledges;
//!    [`acknowledge_fork_operation`] does, once, and releases the barrier.
//! 6. [`recover_fork_operations`] after a restart: `dispatching` → `unknown`; `prepared`
//!    → listed for dispatch; `provider_accepted` → listed for commit only.
//! 7. [`claim_fork_provider_binding`] / [`complete_fork_provider_binding`]: the one-time
//!    provider state binding before a committed child first runs.
//!
//! Records: `F · operation_id` (the operation, compare-and-set on every transition),
//! `G · request_id` (idempotency), `B · source_session_id · point` (barrier),
//! `K · target_key` (reservation), `A · operation_id` (active, for recovery),
//! `L · data_id` (lineage, owned by the child identity), `P · source_session_id ·
//! operation_id` (snapshot pin) and `Q · operation_id · position` (copied snapshot).

pub mod capabilities;
pub mod types;

pub use types::*;

use serde_json::Value;

use crate::branch::history::frozen_entries;
use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::read_all;
use crate::session::{Identity, load, require};
use crate::storage::entry_record::{decode_entry, encode_entry};
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange};
use crate::turns::{Turn, TurnPhase, last_position, latest_turn, load_turn};
use crate::types::{Entry, Session};

/// Longest prepared working directory, in bytes.
const MAX_CWD_BYTES: usize = validate::MAX_PATH_BYTES;

async fn require_op(io: &Io, operation_id: &str) -> Result<LoadedOp, Error> {
    load_op(io, operation_id)
        .await?
        .ok_or_else(|| Error::NotFound {
            what: "fork operation",
            key: operation_id.to_owned(),
        })
}

/// The operation an index entry (`G`, `B`, `K`) points at.
async fn indexed_op(io: &Io, index_key: &[u8]) -> Result<Option<LoadedOp>, Error> {
    let Some(bytes) = io.get(index_key.to_vec()).await? else {
        return Ok(None);
    };
    let id = String::from_utf8(bytes).map_err(|_| Error::Corruption {
        key: keys::display(index_key),
        detail: "not an operation id".into(),
    })?;
    match load_op(io, &id).await? {
        Some(loaded) => Ok(Some(loaded)),
        None => Err(Error::Corruption {
            key: keys::display(index_key),
            detail: format!("names operation `{id}`, which is missing"),
        }),
    }
}

fn barrier_key(op: &ForkOperation) -> Vec<u8> {
    keys::fork_barrier(&op.source_session_id, &op.point.barrier_name())
}

/// Releases what a terminal operation no longer holds (and its snapshot pin and copy,
/// which only it used). Each release happens once, when the operation leaves the state
/// that held it, so it never frees someone else's entry.
fn release(batch: &mut Batch, op: &ForkOperation, barrier: bool, target: bool) {
    batch.delete(keys::fork_active(&op.operation_id));
    batch.delete(keys::fork_pin(&op.source_session_id, &op.operation_id));
    batch.delete_range(KeyRange::prefix(&keys::fork_snapshot(&op.operation_id)));
    if barrier {
        batch.delete(barrier_key(op));
    }
    if target {
        batch.delete(keys::fork_target(&op.target_key));
    }
}

fn check_id(field: &'static str, value: &str) -> Result<(), Error> {
    validate::id(field, value)
}

fn check_request(source_key: &str, request: &ForkRequest) -> Result<(), Error> {
    validate::session_key(source_key)?;
    check_id("request_id", &request.request_id)?;
    validate::new_session_key(&request.target_key)
        .map_err(|e| Error::invalid("target_key", e.to_string()))?;
    validate::session_id(&request.target_session_id)
        .map_err(|e| Error::invalid("target_session_id", e.to_string()))?;
    if let Some(turn) = &request.through_turn_id {
        check_id("through_turn_id", turn)?;
    }
    if let Some(cwd) = &request.cwd
        && (cwd.is_empty() || cwd.len() > MAX_CWD_BYTES || cwd.chars().any(char::is_control))
    {
        return Err(Error::invalid(
            "cwd",
            format!("must be 1 to {MAX_CWD_BYTES} bytes without control characters"),
        ));
    }
    if request.target_key == source_key {
        return Err(Error::invalid(
            "target_key",
            "a fork needs a key other than its source's",
        ));
    }
    Ok(())
}

/// Prepares a provider fork of the session under `source_key` and returns the operation
/// at once (`accepted`, phase `frozen`). `operation_id` is the fresh id the operation
/// gets if the request is new.
pub fn fork(
    workspace: &str,
    source_key: &str,
    request: ForkRequest,
    operation_id: &str,
    now_ms: u64,
) -> Operation<ForkOperationView> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::workspace(workspace))
            .and_then(|()| check_request(source_key, &request))
            .and_then(|()| check_id("operation_id", operation_id))
    );
    let (source_key, operation_id) = (source_key.to_owned(), operation_id.to_owned());
    Operation::new(workspace, move |io| {
        let (source_key, request, operation_id) =
            (source_key.clone(), request.clone(), operation_id.clone());
        async move { prepare(&io, &source_key, request, &operation_id, now_ms).await }
    })
}

async fn prepare(
    io: &Io,
    source_key: &str,
    request: ForkRequest,
    operation_id: &str,
    now_ms: u64,
) -> OpResult<ForkOperationView> {
    let hash = request_hash(source_key, &request);
    let request_key = keys::fork_request(&request.request_id);
    if let Some(existing) = indexed_op(io, &request_key).await? {
        if existing.op.request_hash == hash
            && existing.op.request == request
            && existing.op.source_key == source_key
        {
            return Ok(fork_result(&existing.op, ForkOrigin::SameRequest));
        }
        return Err(Error::fork_conflict(
            "request_changed",
            format!(
                "request `{}` was made with different arguments (operation `{}`)",
                request.request_id, existing.op.operation_id
            ),
        )
        .into());
    }
    let source = require(io, source_key).await?;
    let sid = source.session.session_id.clone();
    let (point, boundary) = match &request.through_turn_id {
        Some(turn_id) => {
            let Some(turn) = load_turn(io, source.data_id(), turn_id).await? else {
                return Err(crate::turns::not_found(source_key, turn_id).into());
            };
            check_closed(&turn.turn)?;
            (
                point_of(ForkPointKind::ThroughTurn, Some(&turn.turn)),
                turn.turn.boundary,
            )
        }
        None => {
            // The whole session as it is: only a running turn (no boundary yet) stops it.
            let latest = latest_turn(io, source.data_id()).await?;
            if let Some(l) = latest
                .as_ref()
                .filter(|l| l.turn.phase == TurnPhase::Running)
            {
                check_closed(&l.turn)?;
            }
            let point = point_of(ForkPointKind::Session, latest.as_ref().map(|l| &l.turn));
            (point, last_position(io, &source).await?)
        }
    };
    let barrier = keys::fork_barrier(&sid, &point.barrier_name());
    let held = indexed_op(io, &barrier).await?;
    if let Some(existing) = &held
        && holds_barrier(existing.op.state, existing.op.acknowledged_at.is_some())
    {
        return Ok(fork_result(&existing.op, ForkOrigin::BarrierHeld));
    }
    if load(io, &request.target_key).await?.is_some() {
        return Err(Error::fork_conflict(
            "target_exists",
            format!("a session with key `{}` already exists", request.target_key),
        )
        .into());
    }
    let target = keys::fork_target(&request.target_key);
    if let Some(other) = indexed_op(io, &target).await? {
        return Err(Error::fork_conflict(
            "target_reserved",
            format!(
                "key `{}` is reserved by fork operation `{}`",
                request.target_key, other.op.operation_id
            ),
        )
        .into());
    }
    let op_key = keys::fork_operation(operation_id);
    if io.get(op_key.clone()).await?.is_some() {
        return Err(Error::Conflict {
            reason: format!("fork operation id `{operation_id}` is taken by another request"),
        }
        .into());
    }
    let session = &source.session;
    let op = ForkOperation {
        operation_id: operation_id.to_owned(),
        request_id: request.request_id.clone(),
        request_hash: hash,
        state: ForkState::Prepared,
        source_key: source_key.to_owned(),
        source_session_id: sid,
        source_provider: string_fact(&session.model_config, PROVIDER_KEY),
        source_provider_session_id: string_fact(&session.model_config, PROVIDER_SESSION_ID_KEY),
        point,
        boundary,
        snapshot_copied: false,
        target_key: request.target_key.clone(),
        target_session_id: request.target_session_id.clone(),
        target_context: target_context(session, request.cwd.as_deref()),
        target_provider_session_id: None,
        error: None,
        error_reason: None,
        session: None,
        lineage: None,
        provider_state_binding: ProviderStateBinding::NotRequired,
        acknowledged_at: None,
        created_at: now_ms,
        updated_at: now_ms,
        request,
    };
    let id = operation_id.as_bytes().to_vec();
    let mut batch = Batch::default();
    // The snapshot is what was read: the source record must not have moved since.
    batch.require_equals(keys::session(source_key), source.bytes.clone());
    batch.require_absent(keys::session(&op.target_key));
    batch.require_absent(request_key.clone());
    batch.require_absent(target.clone());
    batch.require_absent(op_key.clone());
    match held {
        // A stale barrier entry (its operation no longer holds it) is taken over.
        Some(stale) => batch.require_equals(barrier.clone(), stale.op.operation_id.into_bytes()),
        None => batch.require_absent(barrier.clone()),
    }
    batch.put(op_key, record::encode(&op)?);
    batch.put(request_key, id.clone());
    batch.put(barrier, id.clone());
    batch.put(target, id);
    batch.put(keys::fork_active(operation_id), Vec::new());
    if op.boundary.is_some() {
        // Pins the frozen history: a write that would change it copies it first.
        batch.put(
            keys::fork_pin(&op.source_session_id, operation_id),
            Vec::new(),
        );
    }
    io.commit(batch).await?;
    Ok(fork_result(&op, ForkOrigin::Prepared))
}

/// A fork point must be a closed turn: a running one has no boundary yet.
fn check_closed(turn: &Turn) -> Result<(), Error> {
    match turn.phase {
        TurnPhase::Settled => Ok(()),
        TurnPhase::Running => Err(Error::fork_conflict(
            "turn_running",
            format!("turn `{}` is still running", turn.turn_id),
        )),
        TurnPhase::Interrupted => Err(Error::fork_conflict(
            "turn_interrupted",
            format!(
                "turn `{}` was interrupted; fork through a settled turn",
                turn.turn_id
            ),
        )),
    }
}

fn point_of(kind: ForkPointKind, turn: Option<&Turn>) -> ForkPoint {
    ForkPoint {
        kind,
        turn_id: turn.map(|t| t.turn_id.clone()),
        turn_seq: turn.map(|t| t.seq),
        provider_turn_id: turn.and_then(|t| t.provider_turn_id.clone()),
        provider_binding: turn.and_then(|t| t.provider_binding.clone()),
    }
}

fn by_id<T: 'static, F, Fut>(workspace: &str, operation_id: &str, body: F) -> Operation<T>
where
    F: Fn(Io, String) -> Fut + 'static,
    Fut: std::future::Future<Output = OpResult<T>> + 'static,
{
    check!(
        workspace,
        validate::workspace(workspace).and_then(|()| check_id("operation_id", operation_id))
    );
    let operation_id = operation_id.to_owned();
    Operation::new(workspace, move |io| body(io, operation_id.clone()))
}

/// Records that the host is about to call the provider (`prepared` → `dispatching`) and
/// returns what to send. Call it once per operation; a second call is a fork conflict
/// `stale_transition`, so a fork is never dispatched twice.
pub fn begin_fork_dispatch(
    workspace: &str,
    operation_id: &str,
    now_ms: u64,
) -> Operation<DispatchPayload> {
    check!(workspace, validate::now_ms(now_ms));
    by_id(workspace, operation_id, move |io, id| async move {
        let loaded = require_op(&io, &id).await?;
        let mut op = loaded.op.clone();
        op.state = transition(op.state, ForkEvent::Dispatch)?;
        op.updated_at = now_ms;
        let mut batch = Batch::default();
        write_op(&mut batch, &loaded, &op)?;
        io.commit(batch).await?;
        Ok(dispatch_payload(&op))
    })
}

/// Records the provider's answer to a dispatched fork: `accepted` → `provider_accepted`
/// (then [`commit_fork`]), `rejected` → `failed` (releases the barrier and the target),
/// `unknown` → `unknown` (keeps both: never retried automatically). An answer that is not
/// a valid disposition (e.g. an empty reason or provider session id) is recorded as
/// `unknown` with reason `invalid_disposition` ([`recorded_disposition`]).
pub fn record_fork_disposition(
    workspace: &str,
    operation_id: &str,
    disposition: Disposition,
    now_ms: u64,
) -> Operation<ForkOperationView> {
    check!(workspace, validate::now_ms(now_ms));
    let (disposition, unknown_reason) = recorded_disposition(disposition);
    by_id(workspace, operation_id, move |io, id| {
        let disposition = disposition.clone();
        async move {
            let loaded = require_op(&io, &id).await?;
            let mut op = loaded.op.clone();
            let mut batch = Batch::default();
            match disposition {
                Disposition::Accepted {
                    target_provider_session_id,
                    bind_provider_state,
                } => {
                    op.state = transition(op.state, ForkEvent::ProviderAccepted)?;
                    op.target_provider_session_id = target_provider_session_id;
                    if bind_provider_state {
                        op.provider_state_binding = ProviderStateBinding::Pending;
                    }
                }
                Disposition::Rejected { error, reason } => {
                    op.state = transition(op.state, ForkEvent::ProviderRejected)?;
                    op.error = Some(error);
                    op.error_reason = reason;
                    release(&mut batch, &op, true, true);
                }
                Disposition::Unknown { error } => {
                    op.state = transition(op.state, ForkEvent::DeliveryUnknown)?;
                    op.error = Some(error);
                    op.error_reason = Some(unknown_reason.into());
                    release(&mut batch, &op, false, false);
                }
            }
            op.updated_at = now_ms;
            write_op(&mut batch, &loaded, &op)?;
            io.commit(batch).await?;
            Ok(view(&op))
        }
    })
}

/// Materializes the child of a `provider_accepted` fork from the snapshot frozen at
/// prepare and writes its lineage, atomically (→ `committed`). Committing a committed
/// operation returns it; a failed one is a fork conflict carrying its reason. If the
/// source identity is gone or the target key was taken meanwhile, the operation becomes
/// `failed` (reason `source_changed` / `target_exists`) and is returned.
pub fn commit_fork(
    workspace: &str,
    operation_id: &str,
    now_ms: u64,
) -> Operation<ForkOperationView> {
    check!(workspace, validate::now_ms(now_ms));
    by_id(workspace, operation_id, move |io, id| async move {
        let loaded = require_op(&io, &id).await?;
        match loaded.op.state {
            ForkState::Committed => return committed_view(&io, &loaded.op).await,
            ForkState::Failed => return Err(failed_error(&loaded.op).into()),
            _ => {}
        }
        transition(loaded.op.state, ForkEvent::Commit)?;
        let mut op = loaded.op.clone();
        op.updated_at = now_ms;
        let mut batch = Batch::default();
        let source = load(&io, &op.source_key).await?;
        let gone = match &source {
            Some(s) if s.session.session_id == op.source_session_id => None,
            _ => Some(("source_changed", "the source session was reset or deleted")),
        };
        let taken = load(&io, &op.target_key).await?.is_some();
        if let Some((reason, text)) =
            gone.or(taken.then_some(("target_exists", "the target key was taken")))
        {
            op.state = transition(op.state, ForkEvent::CommitImpossible)?;
            op.error = Some(format!("cannot materialize the fork: {text}"));
            op.error_reason = Some(reason.into());
            release(&mut batch, &op, true, true);
            write_op(&mut batch, &loaded, &op)?;
            io.commit(batch).await?;
            return Ok(view(&op));
        }
        let Some(source) = source else {
            return Err(Error::internal("source checked above").into());
        };
        // Guards the frozen history: nothing may compact, truncate or reset the source
        // between these reads and the commit.
        batch.require_equals(keys::session(&op.source_key), source.bytes.clone());
        let (child, child_data) =
            materialize_child(&io, &op, source.data_id(), now_ms, &mut batch).await?;
        let lineage = ForkLineage {
            target_key: op.target_key.clone(),
            target_session_id: op.target_session_id.clone(),
            source_key: op.source_key.clone(),
            source_session_id: op.source_session_id.clone(),
            source_turn_id: op.point.turn_id.clone(),
            target_turn_id: op.point.turn_id.clone(),
            operation_id: op.operation_id.clone(),
            forked_at: now_ms,
        };
        let lineage_key = keys::lineage(&child_data);
        batch.require_absent(lineage_key.clone());
        batch.put(lineage_key, record::encode(&lineage)?);
        op.state = ForkState::Committed;
        op.session = Some(ForkedSession {
            session: child,
            forked_from: lineage.clone(),
        });
        op.lineage = Some(lineage);
        // The session now occupies the key; the barrier stays until acknowledged.
        release(&mut batch, &op, false, true);
        write_op(&mut batch, &loaded, &op)?;
        io.commit(batch).await?;
        Ok(view(&op))
    })
}

fn failed_error(op: &ForkOperation) -> Error {
    Error::fork_conflict(
        op.error_reason.as_deref().unwrap_or("operation_failed"),
        format!(
            "fork operation `{}` failed: {}",
            op.operation_id,
            op.error.as_deref().unwrap_or("no error recorded")
        ),
    )
}

/// Writes the child session and its history into `batch`: the source's canonical
/// transcript (active and compaction-archived entries) up to the frozen boundary — or
/// the operation's copy of it, once a write on the source made one — as the child's
/// active transcript at the same positions with the same ids, and the source turns up
/// to the fork point. Kept in one function: history sharing (O(1) branch) can
/// replace the copy here without touching the state machine.
async fn materialize_child(
    io: &Io,
    op: &ForkOperation,
    source_data: &str,
    now_ms: u64,
    batch: &mut Batch,
) -> Result<(Session, String), Error> {
    let child_sid = &op.target_session_id;
    let data_id = crate::session::mint(io, batch, child_sid).await?;
    let child_data = data_id.as_deref().unwrap_or(child_sid);
    let child_identity = Identity {
        data_id: child_data,
        session_id: child_sid,
    };
    let mut entries: Vec<Entry> = if op.snapshot_copied {
        read_all(io, KeyRange::prefix(&keys::fork_snapshot(&op.operation_id)))
            .await?
            .iter()
            .map(|kv| decode_entry(&kv.key, &kv.value, None))
            .collect::<Result<_, _>>()?
    } else {
        match frozen_entries(io, op).await? {
            Some(frozen) => frozen.into_iter().map(|(_, e)| e).collect(),
            None => return Err(Error::internal("the source identity was checked before")),
        }
    };
    crate::order::sort_by_key(&mut entries, |e| (e.created_at, e.id));

    let ctx = &op.target_context;
    let mut child = Session::new(&op.target_key, child_sid, now_ms);
    child.model = ctx.model.clone();
    child.channel = ctx.channel.clone();
    child.model_config = ctx.model_config.clone();
    child.metadata = ctx.metadata.clone();
    if let Some(provider_session) = &op.target_provider_session_id {
        child.model_config.insert(
            PROVIDER_SESSION_ID_KEY.into(),
            Value::String(provider_session.clone()),
        );
    }
    for entry in &entries {
        child.entry_count += 1;
        child.last_entry_id = child.last_entry_id.max(entry.id);
        crate::transcript::account(&mut child, entry);
        batch.put(
            keys::entry(child_data, entry.created_at, entry.id),
            encode_entry(entry, Some(child_sid))?,
        );
        crate::branch::history::index_message(batch, child_identity, entry);
    }
    if let Some(seq) = op.point.turn_seq {
        let turns = KeyRange {
            start: keys::identity(keys::TURN, source_data),
            end: Some(keys::turn(source_data, seq.saturating_add(1))),
        };
        for kv in read_all(io, turns).await? {
            let mut turn: Turn = record::decode(&kv.key, &kv.value)?;
            turn.session_key = op.target_key.clone();
            turn.session_id = child_sid.clone();
            batch.put(keys::turn(child_data, turn.seq), record::encode(&turn)?);
            batch.put(
                keys::turn_id(child_data, &turn.turn_id),
                turn.seq.to_be_bytes().to_vec(),
            );
        }
    }
    // The copied history keeps its positions; the child's own entries sort after it.
    let clock = entries.iter().map(|e| e.created_at).max().unwrap_or(0);
    let tail = crate::session::Tail::fresh(data_id.as_deref(), clock);
    let bytes = crate::session::Stored::encode(&child, tail)?;
    batch.require_absent(keys::session(&child.key));
    batch.put(keys::session(&child.key), bytes.clone());
    batch.put(keys::recency(child.updated_at, &child.key), bytes);
    Ok((child, child_data.to_owned()))
}

/// A committed operation after checking its identities against the live lineage.
async fn committed_view(io: &Io, op: &ForkOperation) -> OpResult<ForkOperationView> {
    let child_data = crate::session::data_id_of(io, &op.target_session_id).await?;
    let live = read_lineage(io, &child_data).await?;
    check_committed_identity(op, live.as_ref())?;
    Ok(view(op))
}

async fn read_lineage(io: &Io, data_id: &str) -> Result<Option<ForkLineage>, Error> {
    let key = keys::lineage(data_id);
    io.get(key.clone())
        .await?
        .map(|bytes| record::decode(&key, &bytes))
        .transpose()
}

/// The operation `operation_id`; unknown → `not_found`. A committed operation comes with
/// its immutable child and lineage (even after the child was deleted); inconsistent
/// stored identities are a fork conflict `inconsistent_identity`. Never acknowledges.
pub fn get_fork_operation(workspace: &str, operation_id: &str) -> Operation<ForkOperationView> {
    by_id(workspace, operation_id, |io, id| async move {
        let loaded = require_op(&io, &id).await?;
        if loaded.op.state == ForkState::Committed {
            return committed_view(&io, &loaded.op).await;
        }
        Ok(view(&loaded.op))
    })
}

/// Acknowledges a committed operation: the first call records it and releases the turn
/// barrier (a new fork of the same turn may start); later calls return it unchanged.
/// Any other state is a fork conflict `stale_transition`.
pub fn acknowledge_fork_operation(
    workspace: &str,
    operation_id: &str,
    now_ms: u64,
) -> Operation<ForkOperationView> {
    check!(workspace, validate::now_ms(now_ms));
    by_id(workspace, operation_id, move |io, id| async move {
        let loaded = require_op(&io, &id).await?;
        if loaded.op.state != ForkState::Committed {
            return Err(Error::fork_conflict(
                "stale_transition",
                format!(
                    "only a committed operation can be acknowledged; `{id}` is {}",
                    loaded.op.state.as_str()
                ),
            )
            .into());
        }
        let checked = committed_view(&io, &loaded.op).await?;
        if loaded.op.acknowledged_at.is_some() {
            return Ok(checked);
        }
        let mut op = loaded.op.clone();
        op.acknowledged_at = Some(now_ms);
        op.updated_at = now_ms;
        let mut batch = Batch::default();
        batch.delete(barrier_key(&op));
        write_op(&mut batch, &loaded, &op)?;
        io.commit(batch).await?;
        Ok(view(&op))
    })
}

/// Restart recovery: every `dispatching` operation becomes `unknown` (the provider may or
/// may not have forked; it is never retried automatically), `prepared` ones are returned
/// for dispatch and `provider_accepted` ones for commit only. One commit.
pub fn recover_fork_operations(workspace: &str, now_ms: u64) -> Operation<RecoveryReport> {
    check!(
        workspace,
        validate::now_ms(now_ms).and_then(|()| validate::workspace(workspace))
    );
    Operation::new(workspace, move |io| async move {
        let active = read_all(&io, KeyRange::prefix(&[keys::FORK_ACTIVE])).await?;
        let mut report = RecoveryReport {
            marked_unknown: Vec::new(),
            to_dispatch: Vec::new(),
            to_commit: Vec::new(),
        };
        let mut batch = Batch::default();
        for kv in active {
            let Some((id, _)) = keys::read_str(&kv.key, 1) else {
                return Err(Error::Corruption {
                    key: keys::display(&kv.key),
                    detail: "not an active-operation key".into(),
                }
                .into());
            };
            let Some(loaded) = load_op(&io, &id).await? else {
                batch.delete(kv.key);
                continue;
            };
            let mut op = loaded.op.clone();
            op.state = transition(op.state, ForkEvent::Restart).unwrap_or(op.state);
            match (loaded.op.state, op.state) {
                (ForkState::Dispatching, ForkState::Unknown) => {
                    op.error = Some(
                        "delivery unknown: the host restarted while the fork was being dispatched"
                            .into(),
                    );
                    op.error_reason = Some("delivery_unknown".into());
                    op.updated_at = now_ms;
                    release(&mut batch, &op, false, false);
                    write_op(&mut batch, &loaded, &op)?;
                    report.marked_unknown.push(view(&op));
                }
                (ForkState::Prepared, _) => report.to_dispatch.push(view(&op)),
                (ForkState::ProviderAccepted, _) => report.to_commit.push(view(&op)),
                // A terminal operation left in the index: drop the entry.
                _ => batch.delete(kv.key),
            }
        }
        if !batch.mutations.is_empty() {
            io.commit(batch).await?;
        }
        Ok(report)
    })
}

/// Before the child session under `key` first runs: if it is the child of a committed
/// fork whose provider keeps provider-side state, claims the one-time binding
/// (`pending` → `claimed`) and returns what to bind. Every other call returns `None`, so
/// the host is asked exactly once.
pub fn claim_fork_provider_binding(
    workspace: &str,
    key: &str,
    now_ms: u64,
) -> Operation<Option<ProviderBindingRequest>> {
    check!(
        workspace,
        validate::now_ms(now_ms).and_then(|()| validate::keyed(workspace, key))
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            let Some(lineage) = read_lineage(&io, loaded.data_id()).await? else {
                return Ok(None);
            };
            let Some(loaded) = load_op(&io, &lineage.operation_id).await? else {
                return Ok(None);
            };
            if loaded.op.provider_state_binding != ProviderStateBinding::Pending {
                return Ok(None);
            }
            let mut op = loaded.op.clone();
            op.provider_state_binding = ProviderStateBinding::Claimed;
            op.updated_at = now_ms;
            let mut batch = Batch::default();
            write_op(&mut batch, &loaded, &op)?;
            io.commit(batch).await?;
            Ok(Some(ProviderBindingRequest {
                operation_id: op.operation_id.clone(),
                provider: op.source_provider.clone(),
                source_key: op.source_key.clone(),
                source_session_id: op.source_session_id.clone(),
                target_key: op.target_key.clone(),
                target_session_id: op.target_session_id.clone(),
                source_provider_session_id: op.source_provider_session_id.clone(),
                target_provider_session_id: op.target_provider_session_id.clone(),
            }))
        }
    })
}

/// Records that the host bound the provider state it claimed (`claimed` → `bound`;
/// `bound` again returns the operation; anything else is `stale_transition`).
pub fn complete_fork_provider_binding(
    workspace: &str,
    operation_id: &str,
    now_ms: u64,
) -> Operation<ForkOperationView> {
    check!(workspace, validate::now_ms(now_ms));
    by_id(workspace, operation_id, move |io, id| async move {
        let loaded = require_op(&io, &id).await?;
        match loaded.op.provider_state_binding {
            ProviderStateBinding::Bound => return Ok(view(&loaded.op)),
            ProviderStateBinding::Claimed => {}
            other => {
                return Err(Error::fork_conflict(
                    "stale_transition",
                    format!("the provider binding of `{id}` is {other:?}, not claimed"),
                )
                .into());
            }
        }
        let mut op = loaded.op.clone();
        op.provider_state_binding = ProviderStateBinding::Bound;
        op.updated_at = now_ms;
        let mut batch = Batch::default();
        write_op(&mut batch, &loaded, &op)?;
        io.commit(batch).await?;
        Ok(view(&op))
    })
}

/// The fork lineage of the session under `key` (`None`: not the child of a fork).
pub fn get_fork_lineage(workspace: &str, key: &str) -> Operation<Option<ForkLineage>> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            Ok(read_lineage(&io, loaded.data_id()).await?)
        }
    })
}

/// The lineage of the session identity whose keys `data_id` names (one read), for
/// projections.
pub(crate) async fn lineage_of(io: &Io, data_id: &str) -> Result<Option<ForkLineage>, Error> {
    read_lineage(io, data_id).await
}
