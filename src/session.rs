//! Session records: create, get, list by recency.

use crate::error::Error;
use crate::keys;
use crate::model::{Session, SessionList, SessionStatus};
use crate::op::{Io, OpResult, Operation};
use crate::record;
use crate::storage::{Batch, KeyRange, RangeQuery, prefix_end};
use crate::validate;

/// A session record as read, with the exact bytes it was read from (the commit's
/// precondition: nobody changed it in between).
pub(crate) struct Loaded {
    pub(crate) session: Session,
    pub(crate) bytes: Vec<u8>,
}

/// Reads the session under `key`.
pub(crate) async fn load(io: &Io, key: &str) -> Result<Option<Loaded>, Error> {
    let record_key = keys::session(key);
    match io.get(record_key.clone()).await? {
        None => Ok(None),
        Some(bytes) => Ok(Some(Loaded {
            session: record::decode(&record_key, &bytes)?,
            bytes,
        })),
    }
}

/// Reads the session under `key`, or fails with `not_found`.
pub(crate) async fn require(io: &Io, key: &str) -> Result<Loaded, Error> {
    load(io, key).await?.ok_or_else(|| Error::NotFound {
        what: "session",
        key: key.to_owned(),
    })
}

/// Adds to `batch` the writes that replace `old` by `new`, guarded by `old` still being
/// what was read: the record and its recency index entry, which holds a copy of the
/// record so that listing by recency is one range read.
pub(crate) fn write_update(batch: &mut Batch, old: &Loaded, new: &Session) -> Result<(), Error> {
    let record_key = keys::session(&new.key);
    let bytes = record::encode(new)?;
    batch.require_equals(record_key.clone(), old.bytes.clone());
    batch.put(record_key, bytes.clone());
    if old.session.updated_at != new.updated_at {
        batch.delete(keys::recency(old.session.updated_at, &old.session.key));
    }
    batch.put(keys::recency(new.updated_at, &new.key), bytes);
    Ok(())
}

/// The agent id of a key: its second `:`-separated segment, if non-empty.
pub fn agent_id(key: &str) -> Option<String> {
    key.split(':')
        .nth(1)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Creates a session; a key in use is a `conflict`.
pub fn create_session(
    workspace: &str,
    key: &str,
    session_id: &str,
    now_ms: u64,
) -> Operation<Session> {
    if let Err(e) = validate::workspace(workspace)
        .and_then(|()| validate::session_key(key))
        .and_then(|()| validate::session_id(session_id))
    {
        return Operation::failed(workspace, e);
    }
    let (key, session_id) = (key.to_owned(), session_id.to_owned());
    Operation::new(workspace, move |io| {
        let (key, session_id) = (key.clone(), session_id.clone());
        async move { create(&io, key, session_id, now_ms).await }
    })
}

async fn create(io: &Io, key: String, session_id: String, now_ms: u64) -> OpResult<Session> {
    if load(io, &key).await?.is_some() {
        return Err(Error::Conflict {
            reason: format!("a session with key `{key}` already exists"),
        }
        .into());
    }
    let session = Session {
        agent_id: agent_id(&key),
        key,
        session_id,
        status: SessionStatus::Running,
        epoch: 0,
        created_at: now_ms,
        updated_at: now_ms,
        entry_count: 0,
        last_entry_id: 0,
        total_tokens: 0,
    };
    let record_key = keys::session(&session.key);
    let bytes = record::encode(&session)?;
    let mut batch = Batch::default();
    batch.require_absent(record_key.clone());
    batch.put(record_key, bytes.clone());
    batch.put(keys::recency(session.updated_at, &session.key), bytes);
    io.commit(batch).await?;
    Ok(session)
}

/// The session under `key`, or `None`. Reads only.
pub fn get_session(workspace: &str, key: &str) -> Operation<Option<Session>> {
    if let Err(e) = validate::workspace(workspace).and_then(|()| validate::session_key(key)) {
        return Operation::failed(workspace, e);
    }
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move { Ok(load(&io, &key).await?.map(|l| l.session)) }
    })
}

/// Lists sessions, most recently updated first.
pub fn list_sessions(workspace: &str, limit: u32, cursor: Option<&str>) -> Operation<SessionList> {
    let parsed = validate::workspace(workspace)
        .and_then(|()| validate::limit(limit))
        .and_then(|()| cursor.map(|c| validate::unhex("cursor", c)).transpose());
    let cursor = match parsed {
        Ok(cursor) => cursor,
        Err(e) => return Operation::failed(workspace, e),
    };
    Operation::new(workspace, move |io| {
        let cursor = cursor.clone();
        async move { list(&io, limit, cursor).await }
    })
}

async fn list(io: &Io, limit: u32, cursor: Option<Vec<u8>>) -> OpResult<SessionList> {
    let prefix = [keys::RECENCY];
    if let Some(c) = &cursor
        && !c.starts_with(&prefix)
    {
        return Err(Error::invalid("cursor", "not a session-list cursor").into());
    }
    let query = RangeQuery {
        range: KeyRange {
            start: prefix.to_vec(),
            end: cursor.or_else(|| prefix_end(&prefix)),
        },
        limit: limit + 1,
        reverse: true,
    };
    let mut index = io.range(query).await?;
    let more = index.len() > limit as usize;
    index.truncate(limit as usize);
    let sessions = index
        .iter()
        .map(|kv| record::decode::<Session>(&kv.key, &kv.value))
        .collect::<Result<Vec<_>, _>>()?;
    let next_cursor = more
        .then(|| index.last().map(|kv| validate::hex(&kv.key)))
        .flatten();
    Ok(SessionList {
        sessions,
        next_cursor,
    })
}
