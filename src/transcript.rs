//! Transcript entries: append and paged reads.

use crate::error::Error;
use crate::keys;
use crate::model::{AppendRequest, Entry, Order, Page, PageRequest, TruncateOutcome};
use crate::op::{Io, OpResult, Operation};
use crate::record;
use crate::session::{require, write_update};
use crate::storage::{Batch, KeyRange, RangeQuery, prefix_end};
use crate::validate;

/// Appends one entry to the session under `key`.
///
/// One read (the session record) and one commit (entry, session record, recency index),
/// whatever the transcript's length.
pub fn append_entry(
    workspace: &str,
    key: &str,
    request: AppendRequest,
    now_ms: u64,
) -> Operation<Entry> {
    let checked = validate::workspace(workspace)
        .and_then(|()| validate::session_key(key))
        .and_then(|()| check_append(&request));
    if let Err(e) = checked {
        return Operation::failed(workspace, e);
    }
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, request) = (key.clone(), request.clone());
        async move { append(&io, &key, request, now_ms).await }
    })
}

/// Checks an append request's content, ids and tool calls.
pub(crate) fn check_append(request: &AppendRequest) -> Result<(), Error> {
    validate::content(&request.content)?;
    let ids = [
        ("message_id", &request.message_id),
        ("turn_id", &request.turn_id),
        ("tool_call_id", &request.tool_call_id),
    ];
    ids.into_iter()
        .filter_map(|(field, value)| value.as_deref().map(|v| (field, v)))
        .try_for_each(|(field, value)| validate::id(field, value))?;
    request
        .tool_calls
        .as_ref()
        .map_or(Ok(()), validate::tool_calls)
}

/// Fails with `stale_epoch` when `expected` is given and is not the session's epoch.
pub(crate) fn check_epoch(
    key: &str,
    session: &crate::Session,
    expected: Option<u64>,
) -> Result<(), Error> {
    match expected {
        Some(expected) if expected != session.epoch => Err(Error::StaleEpoch {
            key: key.to_owned(),
            expected,
            actual: session.epoch,
        }),
        _ => Ok(()),
    }
}

/// Makes `request` the next entry of `session` (which is updated: ids, counts, tokens,
/// `updated_at`) and adds the entry and its message-id index to `batch`. Returns the
/// entry and the index of the precondition that fails when its message id is taken.
pub(crate) fn stage_entry(
    batch: &mut Batch,
    session: &mut crate::Session,
    request: AppendRequest,
    now_ms: u64,
) -> Result<(Entry, u32), Error> {
    let id = session.last_entry_id + 1;
    let entry = Entry {
        id,
        message_id: request
            .message_id
            .unwrap_or_else(|| format!("{}-{id}", session.session_id)),
        role: request.role,
        content: request.content,
        created_at: now_ms,
        token_count: request.token_count,
        tool_calls: request.tool_calls,
        tool_call_id: request.tool_call_id,
        turn_id: request.turn_id,
        turn_usage: request.turn_usage,
    };
    session.last_entry_id = id;
    session.entry_count += 1;
    session.updated_at = now_ms;
    account(session, &entry);
    // The message-id index: absent, or the id is taken in this identity.
    let index_key = keys::message(&session.session_id, &entry.message_id);
    let taken = batch.preconditions.len() as u32;
    batch.require_absent(index_key.clone());
    batch.put(index_key, keys::position(entry.created_at, entry.id));
    batch.put(
        keys::entry(&session.session_id, entry.created_at, entry.id),
        record::encode(&entry)?,
    );
    Ok((entry, taken))
}

async fn append(io: &Io, key: &str, request: AppendRequest, now_ms: u64) -> OpResult<Entry> {
    let loaded = require(io, key).await?;
    check_epoch(key, &loaded.session, request.expected_epoch)?;
    let mut updated = loaded.session.clone();
    let mut staged = Batch::default();
    let (entry, taken) = stage_entry(&mut staged, &mut updated, request, now_ms)?;
    // The session record's precondition comes first: a lost race restarts the
    // operation before a taken message id is judged.
    let mut batch = Batch::default();
    write_update(&mut batch, &loaded, &updated)?;
    let taken = taken + batch.extend(staged);
    let message_id = entry.message_id.clone();
    io.commit_or(batch, |failed| {
        (failed == taken).then(|| Error::Conflict {
            reason: format!("message id `{message_id}` is already in session `{key}`"),
        })
    })
    .await?;
    Ok(entry)
}

/// Adds an entry's tokens to the session: `turn_usage` goes to input/output tokens, a
/// bare `token_count` to `total_tokens`; never both, so nothing is counted twice.
fn account(session: &mut crate::Session, entry: &Entry) {
    match &entry.turn_usage {
        Some(usage) => {
            session.input_tokens = session.input_tokens.saturating_add(usage.input_tokens);
            session.output_tokens = session.output_tokens.saturating_add(usage.output_tokens);
        }
        None => {
            session.total_tokens = session
                .total_tokens
                .saturating_add(entry.token_count.unwrap_or(0));
        }
    }
}

/// Reads one page of the transcript of the session under `key`, in
/// `(created_at, id)` order or its reverse.
pub fn read_page(workspace: &str, key: &str, request: PageRequest) -> Operation<Page> {
    let parsed = validate::workspace(workspace)
        .and_then(|()| validate::session_key(key))
        .and_then(|()| validate::limit(request.limit))
        .and_then(|()| {
            request
                .cursor
                .as_deref()
                .map(|c| validate::unhex("cursor", c))
                .transpose()
        })
        .and_then(|cursor| match cursor {
            Some(c) if c.len() != 16 => Err(Error::invalid(
                "cursor",
                "not a transcript cursor Spool returned",
            )),
            other => Ok(other),
        });
    let cursor = match parsed {
        Ok(cursor) => cursor,
        Err(e) => return Operation::failed(workspace, e),
    };
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, cursor) = (key.clone(), cursor.clone());
        async move { page(&io, &key, request.order, cursor, request.limit).await }
    })
}

async fn page(
    io: &Io,
    key: &str,
    order: Order,
    cursor: Option<Vec<u8>>,
    limit: u32,
) -> OpResult<Page> {
    let session = require(io, key).await?.session;
    let prefix = keys::entries(&session.session_id);
    let after = |cursor: &[u8]| {
        let mut k = prefix.clone();
        k.extend_from_slice(cursor);
        k
    };
    let range = match (order, &cursor) {
        (Order::OldestFirst, None) | (Order::NewestFirst, None) => KeyRange::prefix(&prefix),
        (Order::OldestFirst, Some(c)) => {
            // Strictly after the cursor's entry: its key followed by a zero byte.
            let mut start = after(c);
            start.push(0);
            KeyRange {
                start,
                end: prefix_end(&prefix),
            }
        }
        (Order::NewestFirst, Some(c)) => KeyRange {
            start: prefix.clone(),
            end: Some(after(c)),
        },
    };
    let mut pairs = io
        .range(RangeQuery {
            range,
            limit: limit + 1,
            reverse: order == Order::NewestFirst,
        })
        .await?;
    let more = pairs.len() > limit as usize;
    pairs.truncate(limit as usize);
    let entries = pairs
        .iter()
        .map(|kv| record::decode::<Entry>(&kv.key, &kv.value))
        .collect::<Result<Vec<_>, _>>()?;
    let next_cursor = match (more, pairs.last()) {
        (true, Some(last)) => Some(validate::hex(&last.key[prefix.len()..])),
        _ => None,
    };
    Ok(Page {
        entries,
        next_cursor,
    })
}

/// The number of entries in the transcript of the session under `key`.
pub fn count_entries(workspace: &str, key: &str) -> Operation<u64> {
    if let Err(e) = validate::workspace(workspace).and_then(|()| validate::session_key(key)) {
        return Operation::failed(workspace, e);
    }
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move { Ok(require(&io, &key).await?.session.entry_count) }
    })
}

/// The entry with `message_id` in the transcript of the session under `key`, or `None`.
pub fn get_entry(workspace: &str, key: &str, message_id: &str) -> Operation<Option<Entry>> {
    if let Err(e) = validate::workspace(workspace)
        .and_then(|()| validate::session_key(key))
        .and_then(|()| validate::id("message_id", message_id))
    {
        return Operation::failed(workspace, e);
    }
    let (key, message_id) = (key.to_owned(), message_id.to_owned());
    Operation::new(workspace, move |io| {
        let (key, message_id) = (key.clone(), message_id.clone());
        async move {
            let session = require(&io, &key).await?.session;
            Ok(find_entry(&io, &session, &message_id).await?)
        }
    })
}

/// Looks `message_id` up in the message-id index (or, for identities older than the
/// index, scans the transcript).
pub(crate) async fn find_entry(
    io: &Io,
    session: &crate::Session,
    message_id: &str,
) -> Result<Option<Entry>, Error> {
    let sid = &session.session_id;
    if session.message_index {
        let Some(position) = io.get(keys::message(sid, message_id)).await? else {
            return Ok(None);
        };
        let mut entry_key = keys::entries(sid);
        entry_key.extend_from_slice(&position);
        if let Some(bytes) = io.get(entry_key.clone()).await? {
            return record::decode(&entry_key, &bytes).map(Some);
        }
        // A compaction moved it to the canonical archive, at the same position.
        let mut archived_key = keys::identity(b'x', sid);
        archived_key.extend_from_slice(&position);
        return match io.get(archived_key.clone()).await? {
            Some(bytes) => {
                record::decode::<crate::compaction::ArchivedEntry>(&archived_key, &bytes)
                    .map(|a| Some(a.entry))
            }
            // The index outlived its entry (a truncation); the entry is gone.
            None => Ok(None),
        };
    }
    for kv in crate::lifecycle::read_all(io, KeyRange::prefix(&keys::entries(sid))).await? {
        let entry: Entry = record::decode(&kv.key, &kv.value)?;
        if entry.message_id == message_id {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}

/// Keeps the newest `max_messages` entries of the session under `key` and deletes the
/// rest (with their message-id index entries).
pub fn truncate(
    workspace: &str,
    key: &str,
    max_messages: u64,
    expected_epoch: Option<u64>,
    now_ms: u64,
) -> Operation<TruncateOutcome> {
    if let Err(e) = validate::workspace(workspace)
        .and_then(|()| validate::session_key(key))
        .and_then(|()| validate::count("max_messages", max_messages))
    {
        return Operation::failed(workspace, e);
    }
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move { truncate_body(&io, &key, max_messages, expected_epoch, now_ms).await }
    })
}

async fn truncate_body(
    io: &Io,
    key: &str,
    max_messages: u64,
    expected_epoch: Option<u64>,
    now_ms: u64,
) -> OpResult<TruncateOutcome> {
    let loaded = require(io, key).await?;
    crate::lifecycle::fence(&loaded, expected_epoch)?;
    let before = loaded.session.entry_count;
    if before <= max_messages {
        return Ok(TruncateOutcome {
            truncated: false,
            before_count: before,
            after_count: before,
        });
    }
    let sid = loaded.session.session_id.clone();
    let prefix = keys::entries(&sid);
    // Everything below the oldest kept entry goes.
    let end = if max_messages == 0 {
        prefix_end(&prefix)
    } else {
        let kept = io
            .range(RangeQuery {
                range: KeyRange::prefix(&prefix),
                limit: u32::try_from(max_messages).unwrap_or(u32::MAX),
                reverse: true,
            })
            .await?;
        kept.last().map(|kv| kv.key.clone())
    };
    let doomed = KeyRange {
        start: prefix.clone(),
        end,
    };
    let mut batch = Batch::default();
    let mut removed = 0u64;
    for kv in crate::lifecycle::read_all(io, doomed.clone()).await? {
        let entry: Entry = record::decode(&kv.key, &kv.value)?;
        batch.delete(keys::message(&sid, &entry.message_id));
        removed += 1;
    }
    batch.delete_range(doomed);
    let mut updated = loaded.session.clone();
    updated.entry_count = before - removed;
    updated.updated_at = now_ms;
    write_update(&mut batch, &loaded, &updated)?;
    io.commit(batch).await?;
    Ok(TruncateOutcome {
        truncated: removed > 0,
        before_count: before,
        after_count: updated.entry_count,
    })
}
