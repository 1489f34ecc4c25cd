//! Indexing history written before the search index existed.
//!
//! Appends keep every identity's unindexed tail short ([`index`]), but a database
//! written before the index holds identities whose whole history is a tail; a query
//! reads only the first [`index::MAX_MERGE_ENTRIES`] entries of a tail, so the rest is
//! not found (a [`super::SearchPage`] counts them in `unindexed`). [`index_backfill`]
//! turns such tails into runs, one run per call, resumably:
//!
//! - **One run per call.** A call walks the session records from its cursor and, for
//!   the first session whose current identity (or a retired identity it reads: the
//!   history of a session deleted or reset while branches read it) has at least
//!   [`index::BLOCK_ENTRIES`] entries after its last run, writes one run of at most
//!   [`index::MAX_MERGE_ENTRIES`] of them in one commit (the records an append that
//!   crosses a block would write). It returns the cursor to call again with: the same
//!   session while it has more, then the sessions after it; `None` when every session
//!   of the workspace was checked.
//! - **Never blocks appends.** Its commit writes only index records, under two
//!   preconditions: the session record is still what it read (an append, truncate,
//!   reset or delete meanwhile makes it start again, as every operation does on a
//!   conflict; for a retired identity, its retirement record, which its last reader
//!   leaving deletes) and the run's doc table is absent. Appends do not depend on what it
//!   writes: an append that merges the same tail concurrently writes the same run, or
//!   one that holds it and the append's own entries. So appends run beside it at full
//!   speed, and it can stop at any point (killed, failed) and start over from any
//!   cursor, or none: what it wrote is the index, and nothing else records progress.
//! - **Bounded.** Each call reads at most [`SESSIONS_PER_CALL`] session records, one
//!   doc table per session checked, one tail and writes one run.

use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::Identity;
use crate::storage::keys;
use crate::storage::{Batch, KeyRange, MAX_BATCH_BYTES, MAX_BATCH_MUTATIONS, RangeQuery};

use super::index;

/// The most session records one call reads.
pub const SESSIONS_PER_CALL: u32 = 64;

/// What one call of [`index_backfill`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexProgress {
    /// The session whose history this call indexed a run of; `None` when the sessions
    /// it checked needed nothing.
    pub session_key: Option<String>,
    /// The entries the call indexed (0 or up to [`index::MAX_MERGE_ENTRIES`]).
    pub indexed_entries: u32,
    /// Entries of that session still after its last run (an upper bound: entry ids
    /// after the last indexed one, removed entries included); 0 with no session.
    pub pending_entries: u64,
    /// Sessions the call checked.
    pub sessions_checked: u32,
    /// Where the next call continues; `None` when every session has been checked.
    pub next_cursor: Option<String>,
}

/// Indexes one run of history written before the search index, in the first session
/// from `cursor` (the previous call's `next_cursor`; `None`: from the first session)
/// that needs one (see the [module documentation](self)).
pub fn index_backfill(workspace: &str, cursor: Option<&str>) -> Operation<IndexProgress> {
    let start = match cursor.map(decode_cursor).transpose() {
        Ok(start) => start,
        Err(e) => return Operation::failed(workspace, e),
    };
    check!(workspace, validate::workspace(workspace));
    Operation::new(workspace, move |io| {
        let start = start.clone();
        async move { run(&io, start).await }
    })
}

fn all_sessions() -> Vec<u8> {
    let mut prefix = keys::session("");
    prefix.pop();
    prefix
}

fn decode_cursor(text: &str) -> Result<Vec<u8>, Error> {
    let bytes = validate::unhex("cursor", text)?;
    if !bytes.starts_with(&all_sessions()) {
        return Err(Error::invalid(
            "cursor",
            format!("{} is not a cursor Spool returned", validate::quote(text)),
        ));
    }
    Ok(bytes)
}

/// The entries of `loaded`'s own identity after its last run (an upper bound from the
/// ids), and the position its runs cover.
async fn pending(
    io: &Io,
    loaded: &crate::session::Loaded,
) -> Result<(u64, Option<(u64, u64)>), Error> {
    let through = index::indexed_through(io, loaded.data_id()).await?;
    let indexed = through.map_or(0, |(_, id)| id).max(loaded.inherited());
    Ok((
        loaded.session.last_entry_id.saturating_sub(indexed),
        through,
    ))
}

/// The most bytes of indexed text one run of a backfill takes: its records stay far
/// below a commit's limits, and the call fits in 8 MiB of guest memory whatever the
/// entries hold (`host/tests/suite/index_backfill_memory.rs`; a run of 4 MiB of varied text
/// did not).
pub const MAX_RUN_TEXT_BYTES: usize = 1024 * 1024;

/// The most bytes the in-memory index of one run may take, roughly: a run stops
/// early on text of many distinct terms (identifiers, hashes), whose vocabulary, not
/// their length, sizes the index.
pub const MAX_RUN_INDEX_BYTES: usize = 2 * 1024 * 1024;

/// What the in-memory index of a run costs per distinct term (the term, its map node
/// and its list) and per posting, roughly.
const TERM_COST: usize = 96;
const POSTING_COST: usize = 8;

/// The bytes a read of entries aims at.
const READ_BYTES: usize = 512 * 1024;

/// The bytes of `entry` a run indexes, roughly (for sizing reads and runs).
fn text_bytes(entry: &crate::types::Entry) -> usize {
    index::fields(entry)
        .iter()
        .map(|(_, text)| index::capped(text).len())
        .sum()
}

/// The next run of `identity`, its entries after `through`: at most
/// [`index::MAX_MERGE_ENTRIES`] entries, about [`MAX_RUN_TEXT_BYTES`] of text and
/// [`MAX_RUN_INDEX_BYTES`] of in-memory index,
/// read a few at a time and indexed as they come (never held together).
async fn next_run(
    io: &Io,
    identity: Identity<'_>,
    mut through: Option<(u64, u64)>,
) -> Result<Option<(u64, index::Run)>, Error> {
    let mut run = index::Run::default();
    let mut first = None;
    let (mut text, mut chunk, mut postings) = (0usize, 4usize, 0usize);
    let full = |run: &index::Run, text: usize, postings: usize| {
        run.docs().len() >= index::MAX_MERGE_ENTRIES
            || text >= MAX_RUN_TEXT_BYTES
            || run.term_count() * TERM_COST + postings * POSTING_COST >= MAX_RUN_INDEX_BYTES
    };
    while !full(&run, text, postings) {
        let want = chunk.min(index::MAX_MERGE_ENTRIES - run.docs().len());
        let entries = index::tail_entries(io, identity, through, want).await?;
        let mut read = 0usize;
        for entry in &entries {
            let bytes = text_bytes(entry);
            if !run.docs().is_empty()
                && (text + bytes > MAX_RUN_TEXT_BYTES || full(&run, text, postings))
            {
                return Ok(first.map(|f| (f, run)));
            }
            first.get_or_insert(entry.id);
            postings += run.push(entry);
            (text, read) = (text + bytes, read + bytes);
            through = Some((entry.created_at, entry.id));
        }
        if entries.len() < want {
            break;
        }
        // The next read aims at READ_BYTES, from the size of the entries just read.
        let average = (read / entries.len()).max(1);
        chunk = (READ_BYTES / average).clamp(1, index::MAX_MERGE_ENTRIES);
    }
    Ok(first.map(|f| (f, run)))
}

/// An identity whose tail a call indexes.
struct Work {
    data_id: String,
    /// The session id of the identity (its entries' generated message ids carry it).
    session_id: String,
    /// The record that must still hold these bytes at the commit: the session record
    /// for its own identity, the retirement record for a retired one it reads (a
    /// delete, reset or the last reader leaving changes it).
    guard: (Vec<u8>, Vec<u8>),
    through: Option<(u64, u64)>,
    /// The newest entry id of the history (an upper bound of what is to index).
    newest: u64,
}

/// The identities of the session under `record_key` that need a run by their ids: its
/// own first, then the retired identities it reads (history whose session was deleted
/// or reset).
async fn due(
    io: &Io,
    record_key: &[u8],
    loaded: &crate::session::Loaded,
) -> Result<Vec<Work>, Error> {
    let mut out = Vec::new();
    let (pending, through) = pending(io, loaded).await?;
    if pending >= index::BLOCK_ENTRIES {
        out.push(Work {
            data_id: loaded.data_id().to_owned(),
            session_id: loaded.session.session_id.clone(),
            guard: (record_key.to_vec(), loaded.bytes.clone()),
            through,
            newest: loaded.session.last_entry_id,
        });
    }
    for layer in &loaded.base {
        let retired = keys::retired(&layer.data_id);
        let Some(marker) = io.get(retired.clone()).await? else {
            continue;
        };
        let through = index::indexed_through(io, &layer.data_id).await?;
        let indexed = through.map_or(0, |(_, id)| id);
        if layer.last_entry_id.saturating_sub(indexed) >= index::BLOCK_ENTRIES {
            out.push(Work {
                data_id: layer.data_id.clone(),
                session_id: layer.identity().session_id.to_owned(),
                guard: (retired, marker),
                through,
                newest: layer.last_entry_id,
            });
        }
    }
    Ok(out)
}

async fn run(io: &Io, start: Option<Vec<u8>>) -> OpResult<IndexProgress> {
    let prefix = all_sessions();
    let range = KeyRange {
        start: start.unwrap_or_else(|| prefix.clone()),
        end: crate::storage::prefix_end(&prefix),
    };
    let records = io
        .range(RangeQuery {
            range,
            limit: SESSIONS_PER_CALL,
            reverse: false,
        })
        .await?;
    let full = records.len() == SESSIONS_PER_CALL as usize;
    let mut progress = IndexProgress::default();
    let mut last_key = None;
    for kv in records {
        let loaded = crate::session::decode(&kv.key, kv.value)?;
        progress.sessions_checked += 1;
        for work in due(io, &kv.key, &loaded).await? {
            let Work {
                data_id,
                session_id,
                guard,
                through,
                newest,
            } = work;
            let identity = Identity {
                data_id: &data_id,
                session_id: &session_id,
            };
            let Some((first, run)) = next_run(io, identity, through).await? else {
                // Fewer entries than their ids said (removed ones): nothing to index.
                continue;
            };
            let indexed = run.docs().last().map_or(0, |d| d.id);
            let count = run.docs().len();
            let mut batch = Batch::default();
            batch.require_equals(guard.0, guard.1);
            batch.require_absent(index::run_key(&data_id, index::DOCS, first));
            index::stage_v1_removal(&mut batch, &data_id, through);
            index::put_run(&mut batch, &data_id, first, &run);
            if batch.mutations.len() > MAX_BATCH_MUTATIONS
                || batch.written_bytes() > MAX_BATCH_BYTES
            {
                return Err(Error::internal(format!(
                    "the index run of {count} entries of session {} exceeds a commit's limits",
                    loaded.session.key
                ))
                .into());
            }
            io.commit(batch).await?;
            progress.indexed_entries = u32::try_from(count).unwrap_or(u32::MAX);
            progress.pending_entries = newest.saturating_sub(indexed);
            progress.session_key = Some(loaded.session.key);
            // The same session again: it may hold more.
            progress.next_cursor = Some(validate::hex(&kv.key));
            return Ok(progress);
        }
        last_key = Some(kv.key);
    }
    progress.next_cursor = match last_key {
        Some(mut key) if full => {
            // Just after this record: the next session's.
            key.push(0);
            Some(validate::hex(&key))
        }
        _ => None,
    };
    Ok(progress)
}

#[cfg(test)]
mod tests;
