//! Session lifecycle: get-or-create, intents (continue, new chat, reset), resume, update,
//! finish, delete, and the cascading clean-ups `prune_stale` and `cap_sessions`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::branch::history;
use crate::engine::error::Error;
use crate::engine::op::{ArchivePart, Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::{Loaded, Tail, fence, load, read_all, require, write_record, write_update};
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange, Kv, RangeQuery, prefix_end};
use crate::types::{
    ArchiveStatus, ArchivedReset, BranchLineage, ContextState, Entry, FinishStatus, Intent,
    IntentOutcome, ResetArchive, Session, SessionStatus, UpdateRequest,
};

/// Adds to `batch` the deletion of a session and everything it owns: its records, its
/// identity (kept for the branches that still read it, [`history::retire`]), its
/// back-references to shared history and its entry in its parent's lineage index.
/// Sessions in `done` are deleted in the same batch.
async fn delete_everything(
    io: &Io,
    batch: &mut Batch,
    loaded: &Loaded,
    done: &BTreeSet<String>,
) -> Result<(), Error> {
    let session = &loaded.session;
    batch.delete(keys::session(&session.key));
    batch.delete(keys::recency(session.updated_at, &session.key));
    history::retire(io, batch, loaded.data_id(), done).await?;
    history::drop_references(io, batch, &session.key, &loaded.base, done).await?;
    if let Some(parent) = &loaded.lineage.parent_session_key {
        batch.delete(keys::child(parent, &session.key));
    }
    batch.delete_range(KeyRange::prefix(&keys::states(&session.key)));
    batch.delete_range(KeyRange::prefix(&crate::compaction::repairs(&session.key)));
    Ok(())
}

async fn create_batch(io: &Io, session: &Session) -> Result<Batch, Error> {
    let mut batch = Batch::default();
    let data_id = crate::session::mint(io, &mut batch, &session.session_id).await?;
    let bytes = crate::session::Stored::encode_fresh(session, data_id.as_deref())?;
    batch.require_absent(keys::session(&session.key));
    batch.put(keys::session(&session.key), bytes.clone());
    batch.put(keys::recency(session.updated_at, &session.key), bytes);
    Ok(batch)
}

/// The session under `key`, created with `session_id` when missing.
pub fn get_or_create(
    workspace: &str,
    key: &str,
    session_id: &str,
    now_ms: u64,
) -> Operation<IntentOutcome> {
    apply_intent(workspace, key, Intent::Continue, session_id, now_ms)
}

/// Applies an [`Intent`] to `key`. `session_id` is the identity a created or reset
/// session gets.
pub fn apply_intent(
    workspace: &str,
    key: &str,
    intent: Intent,
    session_id: &str,
    now_ms: u64,
) -> Operation<IntentOutcome> {
    check!(workspace, validate::now_ms(now_ms));
    check!(
        workspace,
        validate::keyed(workspace, key).and_then(|()| validate::session_id(session_id))
    );
    let (key, session_id) = (key.to_owned(), session_id.to_owned());
    Operation::new(workspace, move |io| {
        let (key, session_id) = (key.clone(), session_id.clone());
        async move { intent_body(&io, &key, intent, &session_id, now_ms).await }
    })
}

async fn intent_body(
    io: &Io,
    key: &str,
    intent: Intent,
    session_id: &str,
    now_ms: u64,
) -> OpResult<IntentOutcome> {
    let Some(loaded) = load(io, key).await? else {
        validate::new_session_key(key)?;
        let session = Session::new(key, session_id, now_ms);
        io.commit(create_batch(io, &session).await?).await?;
        return Ok(IntentOutcome {
            session,
            created: true,
            rotated: intent == Intent::ResetSameKey,
            archive: None,
        });
    };
    match intent {
        Intent::Continue => Ok(IntentOutcome {
            session: loaded.session,
            created: false,
            rotated: false,
            archive: None,
        }),
        Intent::NewChat => Err(Error::Conflict {
            reason: format!(
                "session_key conflict: `{key}` already has a session; reset it or pick another key"
            ),
        }
        .into()),
        Intent::ResetSameKey => reset(io, loaded, session_id, now_ms).await,
    }
}

async fn reset(io: &Io, loaded: Loaded, session_id: &str, now_ms: u64) -> OpResult<IntentOutcome> {
    let old = &loaded.session;
    if session_id == old.session_id {
        return Err(Error::invalid("session_id", "a reset needs a new session id").into());
    }
    // The archive holds the canonical transcript: entries archived by compaction and the
    // active ones, in their original order, a page at a time. A branch's shared history
    // is part of it.
    let head = ResetArchive {
        session_key: old.key.clone(),
        session_id: old.session_id.clone(),
        epoch: old.epoch,
        archived_at: now_ms,
        transcript_entries: Vec::new(),
        summaries: Vec::new(),
    };
    let mut archived = io.archive(ArchivePart::Begin(head)).await?;
    let view = history::View::of(&loaded);
    let (mut entries, mut active) = (0u64, 0usize);
    let mut cursor: Option<Vec<u8>> = None;
    loop {
        let (items, more) = history::page(
            io,
            &view,
            true,
            crate::types::Order::OldestFirst,
            cursor.as_deref(),
            validate::MAX_PAGE as usize,
        )
        .await?;
        cursor = items.last().map(|i| i.position.clone());
        entries += items.len() as u64;
        active += items.iter().filter(|i| !i.archived).count();
        // The canonical transcript's length is in no record: the total is unknown.
        io.progress("reset: archive", entries, 0);
        if archived.is_ok() && !items.is_empty() {
            let page: Vec<Entry> = items.into_iter().map(|i| i.entry).collect();
            archived = io.archive(ArchivePart::Entries(page)).await?;
        }
        if !more || cursor.is_none() {
            break;
        }
    }
    // An archive of a damaged transcript would keep less than the reset deletes.
    history::check_count(io, &loaded, active).await?;
    history::confirm(io, &loaded).await?;
    let summaries = read_all(
        io,
        KeyRange::prefix(&keys::identity(keys::SUMMARY, loaded.data_id())),
    )
    .await?
    .iter()
    .map(|kv| record::decode::<Value>(&kv.key, &kv.value))
    .collect::<Result<Vec<_>, _>>()?;
    let states = read_all(io, KeyRange::prefix(&keys::states(&old.key))).await?;

    let kept = ArchivedReset {
        session_key: old.key.clone(),
        session_id: old.session_id.clone(),
        epoch: old.epoch,
        archived_at: now_ms,
        transcript_entries: entries,
        summaries: summaries.len() as u64,
    };
    if archived.is_ok() {
        archived = io.archive(ArchivePart::Finish(summaries)).await?;
    }

    let mut fresh = Session::new(&old.key, session_id, now_ms);
    fresh.epoch = old.epoch + 1;
    fresh.model = old.model.clone();
    fresh.channel = old.channel.clone();
    fresh.model_config = old.model_config.clone();
    fresh.metadata = old.metadata.clone();
    // State ids are numbered per key and keep increasing across generations.
    fresh.last_state_id = old.last_state_id;

    let mut batch = Batch::default();
    // Branches that read the old identity's entries keep reading them: its shared
    // ranges stay until the last of them goes.
    let done = BTreeSet::from([old.key.clone()]);
    history::retire(io, &mut batch, loaded.data_id(), &done).await?;
    // The new generation keeps its place in the tree but inherits no history.
    let lineage = BranchLineage {
        parent_session_key: loaded.lineage.parent_session_key.clone(),
        spawn_depth: loaded.lineage.spawn_depth,
        ..BranchLineage::default()
    };
    let data_id = crate::session::mint(io, &mut batch, session_id).await?;
    let tail = Tail {
        lineage: &lineage,
        ..Tail::fresh(data_id.as_deref(), 0)
    };
    write_record(&mut batch, &loaded, &fresh, tail)?;
    history::drop_references(io, &mut batch, &old.key, &loaded.base, &done).await?;
    batch.delete_range(KeyRange::prefix(&crate::compaction::repairs(&old.key)));
    for kv in states {
        let mut state: ContextState = record::decode(&kv.key, &kv.value)?;
        if state.valid {
            state.valid = false;
            state.invalid_reason = Some("session_reset".into());
            batch.put(kv.key, record::encode(&state)?);
        }
    }
    // The archive counts only once this commit makes the reset real: a reset that fails
    // or dies before it leaves an archive no record names, which no listing shows.
    if archived.is_ok() {
        batch.put(
            keys::reset_archive(&old.key, now_ms, &old.session_id),
            record::encode(&kept)?,
        );
    }
    io.commit(batch).await?;
    Ok(IntentOutcome {
        session: fresh,
        created: false,
        rotated: true,
        archive: Some(match archived {
            Ok(()) => ArchiveStatus {
                written: true,
                error: None,
            },
            Err(error) => ArchiveStatus {
                written: false,
                error: Some(error),
            },
        }),
    })
}

/// The records of the archives the committed resets of `key` kept, oldest first (by
/// `archived_at`). A key that is gone keeps its records: its archives outlive it.
pub fn list_reset_archives(workspace: &str, key: &str) -> Operation<Vec<ArchivedReset>> {
    check!(workspace, validate::keyed(workspace, key));
    let prefix = keys::reset_archives(key);
    Operation::new(workspace, move |io| {
        let prefix = prefix.clone();
        async move {
            let records = read_all(&io, KeyRange::prefix(&prefix)).await?;
            let records = records
                .iter()
                .map(|kv| record::decode::<ArchivedReset>(&kv.key, &kv.value))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(records)
        }
    })
}

/// Reads, changes and writes back the session under `key` (fenced by `expected_epoch`).
fn modify(
    workspace: &str,
    key: &str,
    expected_epoch: Option<u64>,
    change: impl Fn(&mut Session) -> Result<(), Error> + 'static,
) -> Operation<Session> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    let change = std::rc::Rc::new(change);
    Operation::new(workspace, move |io| {
        let (key, change) = (key.clone(), change.clone());
        async move {
            let loaded = require(&io, &key).await?;
            fence(&loaded, expected_epoch)?;
            let mut session = loaded.session.clone();
            change(&mut session)?;
            let mut batch = Batch::default();
            write_update(&mut batch, &loaded, &session)?;
            io.commit(batch).await?;
            Ok(session)
        }
    })
}

/// Marks the session under `key` as in use now (`updated_at`); missing → `not_found`.
pub fn resume(workspace: &str, key: &str, now_ms: u64) -> Operation<Session> {
    check!(workspace, validate::now_ms(now_ms));
    modify(workspace, key, None, move |s| {
        s.updated_at = now_ms;
        Ok(())
    })
}

fn merge(
    target: &mut std::collections::BTreeMap<String, Value>,
    changes: &std::collections::BTreeMap<String, Value>,
) {
    for (k, v) in changes {
        if v.is_null() {
            target.remove(k);
        } else {
            target.insert(k.clone(), v.clone());
        }
    }
}

/// Changes a session's model, channel, model config and metadata (maps merge key by key;
/// `null` removes a key).
pub fn update(
    workspace: &str,
    key: &str,
    request: UpdateRequest,
    now_ms: u64,
) -> Operation<Session> {
    check!(workspace, validate::now_ms(now_ms));
    let fields = [("model", &request.model), ("channel", &request.channel)];
    if let Some(Err(e)) = fields
        .iter()
        .filter_map(|(f, v)| v.as_deref().map(|v| validate::id(f, v)))
        .find(Result::is_err)
    {
        return Operation::failed(workspace, e);
    }
    check!(
        workspace,
        validate::session_map("model_config", &request.model_config)
            .and_then(|()| validate::session_map("metadata", &request.metadata))
    );
    let expected = request.expected_epoch;
    modify(workspace, key, expected, move |s| {
        if let Some(model) = &request.model {
            s.model = Some(model.clone());
        }
        if let Some(channel) = &request.channel {
            s.channel = Some(channel.clone());
        }
        merge(&mut s.model_config, &request.model_config);
        merge(&mut s.metadata, &request.metadata);
        // The merged maps too: updates must not grow a record past the limit.
        validate::session_map("model_config", &s.model_config)?;
        validate::session_map("metadata", &s.metadata)?;
        s.updated_at = now_ms;
        Ok(())
    })
}

/// Finishes a session: status `done` or `failed`, `ended_at` now, `runtime_ms` since
/// creation.
pub fn finish(
    workspace: &str,
    key: &str,
    status: FinishStatus,
    expected_epoch: Option<u64>,
    now_ms: u64,
) -> Operation<Session> {
    check!(workspace, validate::now_ms(now_ms));
    modify(workspace, key, expected_epoch, move |s| {
        s.status = match status {
            FinishStatus::Done => SessionStatus::Done,
            FinishStatus::Failed => SessionStatus::Failed,
        };
        s.ended_at = Some(now_ms);
        s.runtime_ms = Some(now_ms.saturating_sub(s.created_at));
        s.updated_at = now_ms;
        Ok(())
    })
}

/// Deletes the session under `key` and everything it owns (transcript, message index,
/// compaction archive and summaries, context states). The records of its resets'
/// archives stay, like the archives ([`list_reset_archives`]).
pub fn delete_session(workspace: &str, key: &str, expected_epoch: Option<u64>) -> Operation<()> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            fence(&loaded, expected_epoch)?;
            let mut batch = Batch::default();
            batch.require_equals(keys::session(&key), loaded.bytes.clone());
            delete_everything(&io, &mut batch, &loaded, &BTreeSet::from([key])).await?;
            io.commit(batch).await
        }
    })
}

/// Deletes every session whose `updated_at` is older than `now_ms - max_age_ms`, with
/// everything it owns; returns how many. Walks the recency index, never all records.
pub fn prune_stale(workspace: &str, max_age_ms: u64, now_ms: u64) -> Operation<u64> {
    check!(workspace, validate::now_ms(now_ms));
    if let Err(e) =
        validate::workspace(workspace).and_then(|()| validate::count("max_age_ms", max_age_ms))
    {
        return Operation::failed(workspace, e);
    }
    let Some(cutoff) = now_ms.checked_sub(max_age_ms) else {
        // Nothing can be older than the epoch.
        return Operation::new(workspace, |_io| async { Ok(0) });
    };
    Operation::new(workspace, move |io| async move {
        let doomed = read_all(
            &io,
            KeyRange {
                start: vec![keys::RECENCY],
                end: Some(keys::recency(cutoff, "")),
            },
        )
        .await?;
        delete_sessions(&io, doomed).await
    })
}

/// Keeps the `max` most recently updated sessions and deletes the rest with everything
/// they own; returns how many were deleted.
pub fn cap_sessions(workspace: &str, max: u64) -> Operation<u64> {
    check!(
        workspace,
        validate::workspace(workspace).and_then(|()| validate::count("max", max))
    );
    Operation::new(workspace, move |io| async move {
        let index = KeyRange::prefix(&[keys::RECENCY]);
        // The newest `max` entries stay; everything below the oldest of them goes.
        let boundary = if max == 0 {
            None
        } else {
            let kept = io
                .range(RangeQuery {
                    range: index.clone(),
                    limit: u32::try_from(max).unwrap_or(u32::MAX),
                    reverse: true,
                })
                .await?;
            if (kept.len() as u64) < max {
                return Ok(0);
            }
            kept.last().map(|kv| kv.key.clone())
        };
        let doomed = read_all(
            &io,
            KeyRange {
                start: index.start.clone(),
                end: boundary.or_else(|| prefix_end(&[keys::RECENCY])),
            },
        )
        .await?;
        delete_sessions(&io, doomed).await
    })
}

/// Deletes the sessions whose recency index entries (record copies) are `doomed`, in one
/// commit guarded by every record being unchanged.
async fn delete_sessions(io: &Io, doomed: Vec<Kv>) -> OpResult<u64> {
    let mut batch = Batch::default();
    let doomed = doomed
        .into_iter()
        .map(|kv| crate::session::decode(&kv.key, kv.value))
        .collect::<Result<Vec<_>, _>>()?;
    // Sessions deleted here are no readers to keep history for.
    let done = crate::order::set_of(doomed.iter().map(|l| l.session.key.clone()));
    for loaded in &doomed {
        batch.require_equals(keys::session(&loaded.session.key), loaded.bytes.clone());
        delete_everything(io, &mut batch, loaded, &done).await?;
    }
    if !doomed.is_empty() {
        io.commit(batch).await?;
    }
    Ok(doomed.len() as u64)
}
