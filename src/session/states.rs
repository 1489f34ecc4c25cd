//! Context states: provider or portable state saved for a session (e.g. a structured
//! summary), kept across resets but invalidated by them.

use crate::engine::error::Error;
use crate::engine::op::Operation;
use crate::engine::validate;
use crate::session::{fence, read_all};
use crate::session::{require, write_update};
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange};
use crate::types::{ContextState, NewContextState};

/// The model, numbers and payload of a state to save (payload at most
/// [`validate::MAX_CONTENT_BYTES`] of JSON).
fn check_state(state: &NewContextState) -> Result<(), Error> {
    if let Some(model) = &state.model {
        validate::id("model", model)?;
    }
    validate::count("covered_through_id", state.covered_through_id)?;
    if let Some(at) = state.expires_at {
        validate::count("expires_at", at)?;
    }
    validate::json_size("payload", &state.payload, validate::MAX_CONTENT_BYTES)
}

/// Saves a context state for the session under `key`; returns it with its id.
pub fn save_state(
    workspace: &str,
    key: &str,
    state: NewContextState,
    expected_epoch: Option<u64>,
    now_ms: u64,
) -> Operation<ContextState> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| validate::id("provider", &state.provider))
            .and_then(|()| validate::id("state_kind", &state.state_kind))
            .and_then(|()| check_state(&state))
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, state) = (key.clone(), state.clone());
        async move {
            let loaded = require(&io, &key).await?;
            fence(&loaded, expected_epoch)?;
            let mut session = loaded.session.clone();
            session.last_state_id += 1;
            session.updated_at = now_ms;
            let saved = ContextState {
                id: session.last_state_id,
                session_id: session.session_id.clone(),
                session_key: key.clone(),
                provider: state.provider,
                model: state.model,
                state_kind: state.state_kind,
                payload: state.payload,
                covered_through_id: state.covered_through_id,
                created_at: now_ms,
                expires_at: state.expires_at,
                portable: state.portable,
                cacheable: state.cacheable,
                valid: true,
                invalid_reason: None,
            };
            let mut batch = Batch::default();
            write_update(&mut batch, &loaded, &session)?;
            batch.put(keys::state(&key, saved.id), record::encode(&saved)?);
            io.commit(batch).await?;
            Ok(saved)
        }
    })
}

/// The context states of the session under `key`, oldest first; only valid ones unless
/// `valid_only` is false.
pub fn list_states(workspace: &str, key: &str, valid_only: bool) -> Operation<Vec<ContextState>> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            require(&io, &key).await?;
            let mut states = Vec::new();
            for kv in read_all(&io, KeyRange::prefix(&keys::states(&key))).await? {
                let state: ContextState = record::decode(&kv.key, &kv.value)?;
                if state.valid || !valid_only {
                    states.push(state);
                }
            }
            Ok(states)
        }
    })
}

/// Invalidates the valid context states of the session under `key` (only those of
/// `state_kind` when given) with `reason`; returns how many.
pub fn invalidate_states(
    workspace: &str,
    key: &str,
    state_kind: Option<&str>,
    reason: &str,
    now_ms: u64,
) -> Operation<u64> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| validate::id("reason", reason))
            .and_then(|()| state_kind.map_or(Ok(()), |k| validate::id("state_kind", k)))
    );
    let (key, kind, reason) = (
        key.to_owned(),
        state_kind.map(str::to_owned),
        reason.to_owned(),
    );
    Operation::new(workspace, move |io| {
        let (key, kind, reason) = (key.clone(), kind.clone(), reason.clone());
        async move {
            let loaded = require(&io, &key).await?;
            let mut batch = Batch::default();
            let mut count = 0;
            for kv in read_all(&io, KeyRange::prefix(&keys::states(&key))).await? {
                let mut state: ContextState = record::decode(&kv.key, &kv.value)?;
                if state.valid && kind.as_ref().is_none_or(|k| *k == state.state_kind) {
                    state.valid = false;
                    state.invalid_reason = Some(reason.clone());
                    batch.put(kv.key, record::encode(&state)?);
                    count += 1;
                }
            }
            if count > 0 {
                let mut session = loaded.session.clone();
                session.updated_at = now_ms;
                write_update(&mut batch, &loaded, &session)?;
                io.commit(batch).await?;
            }
            Ok(count)
        }
    })
}
