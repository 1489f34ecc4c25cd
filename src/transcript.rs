//! Transcript entries: append and paged reads.

use crate::error::Error;
use crate::keys;
use crate::model::{AppendRequest, Entry, Order, Page, PageRequest};
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
        .and_then(|()| validate::content(&request.content))
        .and_then(|()| {
            let ids = [
                ("message_id", &request.message_id),
                ("turn_id", &request.turn_id),
                ("tool_call_id", &request.tool_call_id),
            ];
            ids.into_iter()
                .filter_map(|(field, value)| value.as_deref().map(|v| (field, v)))
                .try_for_each(|(field, value)| validate::id(field, value))
        })
        .and_then(|()| {
            request
                .tool_calls
                .as_ref()
                .map_or(Ok(()), validate::tool_calls)
        });
    if let Err(e) = checked {
        return Operation::failed(workspace, e);
    }
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, request) = (key.clone(), request.clone());
        async move { append(&io, &key, request, now_ms).await }
    })
}

async fn append(io: &Io, key: &str, request: AppendRequest, now_ms: u64) -> OpResult<Entry> {
    let loaded = require(io, key).await?;
    let current = &loaded.session;
    if let Some(expected) = request.expected_epoch
        && expected != current.epoch
    {
        return Err(Error::StaleEpoch {
            key: key.to_owned(),
            expected,
            actual: current.epoch,
        }
        .into());
    }
    let id = current.last_entry_id + 1;
    let entry = Entry {
        id,
        message_id: request
            .message_id
            .unwrap_or_else(|| format!("{}-{id}", current.session_id)),
        role: request.role,
        content: request.content,
        created_at: now_ms,
        token_count: request.token_count,
        tool_calls: request.tool_calls,
        tool_call_id: request.tool_call_id,
        turn_id: request.turn_id,
    };
    let mut updated = current.clone();
    updated.last_entry_id = id;
    updated.entry_count += 1;
    updated.updated_at = now_ms;
    updated.total_tokens = updated
        .total_tokens
        .saturating_add(entry.token_count.unwrap_or(0));

    let mut batch = Batch::default();
    batch.put(
        keys::entry(&current.session_id, entry.created_at, entry.id),
        record::encode(&entry)?,
    );
    write_update(&mut batch, &loaded, &updated)?;
    io.commit(batch).await?;
    Ok(entry)
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
