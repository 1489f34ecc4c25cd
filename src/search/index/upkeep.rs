//! How appends keep the index: the tail, cutting runs in the append's commit, removal.

use crate::engine::error::Error;
use crate::engine::op::Io;
use crate::session::Identity;
use crate::storage::entry_record::decode_entry;
use crate::storage::keys;
use crate::storage::{Batch, KeyRange, MAX_BATCH_BYTES, MAX_BATCH_MUTATIONS, RangeQuery};
use crate::types::Entry;

use super::*;

/// The position `(created_at, id)` of the newest entry the runs of identity `data_id`
/// cover (the last entry of its last doc table); `None` before its first run. The
/// identity's tail is every entry after it.
pub(crate) async fn indexed_through(io: &Io, data_id: &str) -> Result<Option<(u64, u64)>, Error> {
    let last = io
        .range(RangeQuery {
            range: KeyRange::prefix(&bucket_runs(data_id, DOCS)),
            limit: 1,
            reverse: true,
        })
        .await?;
    let Some(kv) = last.first() else {
        return Ok(None);
    };
    let table = decode(&kv.key, &kv.value, |_: &[u8]| Want::SkipRest)?;
    Ok(table.docs.last().map(|d| (d.created_at, d.id)))
}

/// The first `limit` entries of `identity` after position `after` (all of them when
/// `None`), in position order (one range read).
pub(crate) async fn tail_entries(
    io: &Io,
    identity: Identity<'_>,
    after: Option<(u64, u64)>,
    limit: usize,
) -> Result<Vec<Entry>, Error> {
    let prefix = keys::entries(identity.data_id);
    let start = match after {
        Some((created_at, id)) => {
            let mut key = keys::entry(identity.data_id, created_at, id);
            key.push(0);
            key
        }
        None => prefix.clone(),
    };
    let kvs = io
        .range(RangeQuery {
            range: KeyRange {
                start,
                end: crate::storage::prefix_end(&prefix),
            },
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
            reverse: false,
        })
        .await?;
    kvs.iter()
        .map(|kv| decode_entry(&kv.key, &kv.value, Some(identity.session_id)))
        .collect()
}

/// Adds to `batch` the index records due with `entries`, new entries of `identity` in
/// increasing id order, for the commit that writes them: nothing,
/// unless their ids cross a multiple of [`BLOCK_ENTRIES`]; then the identity's tail
/// (its entries after its last run, at most [`MAX_MERGE_ENTRIES`], one range read
/// after one small read) and these entries become one run. Call it after every other
/// record of the commit but the session record is staged (the run keeps room for it).
pub(crate) async fn stage_entries(
    io: &Io,
    batch: &mut Batch,
    identity: Identity<'_>,
    entries: &[Entry],
) -> Result<(), Error> {
    let data_id = identity.data_id;
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Ok(());
    };
    let crosses = last.id / BLOCK_ENTRIES > first.id.saturating_sub(1) / BLOCK_ENTRIES;
    if !crosses {
        return Ok(());
    }
    let through = indexed_through(io, data_id).await?;
    let tail = tail_entries(io, identity, through, MAX_MERGE_ENTRIES).await?;
    // A tail longer than one run holds (entries written before this index existed)
    // is merged oldest first, a run per crossing; this commit's entries wait. (The
    // entries are read where they are, not copied: an import's commit holds a MiB.)
    let stored = tail.last().map_or(0, |l| l.id);
    let new: &[Entry] = if tail.len() < MAX_MERGE_ENTRIES {
        let from = entries.partition_point(|e| e.id <= stored);
        &entries[from..]
    } else {
        &[]
    };
    // An entry in progress changes until it settles: a run stops before it, and it
    // and what follows stay in the tail (which queries read whole) until then.
    let live = tail
        .iter()
        .chain(new)
        .position(|e| e.status == Some(crate::types::EntryStatus::InProgress));
    let (tail, new) = match live {
        Some(i) if i < tail.len() => (&tail[..i], &new[..0]),
        Some(i) => (&tail[..], &new[..i - tail.len()]),
        None => (&tail[..], new),
    };
    let Some(run_first) = tail.first().or(new.first()).map(|e| e.id) else {
        return Ok(());
    };
    let mut records = Batch::default();
    stage_v1_removal(&mut records, data_id, through);
    put_run(
        &mut records,
        data_id,
        run_first,
        &Run::of(tail.iter().chain(new)),
    );
    let fits = batch.mutations.len() + records.mutations.len() + MERGE_RESERVE_MUTATIONS
        <= MAX_BATCH_MUTATIONS
        && batch.written_bytes() + records.written_bytes() + MERGE_RESERVE_BYTES <= MAX_BATCH_BYTES;
    if fits {
        batch.extend(records);
    }
    Ok(())
}

/// Adds to `batch` the records of `run`, the merged run starting at entry `run_first`:
/// one per bucket its terms fall in and its doc table.
pub(crate) fn put_run(batch: &mut Batch, data_id: &str, run_first: u64, run: &Run) {
    let lists = run.lists();
    // By bucket, each bucket's terms in byte order: their first 8 bytes (zero-padded,
    // big-endian) order most pairs in one comparison, the text the rest.
    let head = |term: &str| {
        let mut bytes = [0u8; 8];
        let n = term.len().min(8);
        bytes[..n].copy_from_slice(&term.as_bytes()[..n]);
        u64::from_be_bytes(bytes)
    };
    let mut terms: Vec<(u8, u64, TermList<'_>)> = run
        .numbered()
        .map(|(term, number)| (bucket(term), head(term), (term, lists.of(number))))
        .collect();
    terms.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then_with(|| a.2.0.cmp(b.2.0)));
    let mut scratch = Scratch::default();
    for part in terms.chunk_by(|a, b| a.0 == b.0) {
        let value = encode_parts(
            &mut scratch,
            INDEX_FORMAT,
            &[],
            part.len(),
            part.iter().map(|&(_, _, term)| term),
        );
        batch.put(run_key(data_id, part[0].0, run_first), value);
    }
    batch.put(
        run_key(data_id, DOCS, run_first),
        encode_parts(
            &mut scratch,
            INDEX_FORMAT,
            run.docs(),
            0,
            std::iter::empty(),
        ),
    );
}

/// Adds to `batch` the removal of the whole index of identity `data_id`, under its
/// tag and the old one (a range delete each, whatever its size). Deleting or resetting
/// a session does this already: the index's tags are identity tags
/// ([`keys::IDENTITY_TAGS`]).
pub fn stage_removal(batch: &mut Batch, data_id: &str) {
    for tag in [keys::SEARCH_POSTINGS, keys::SEARCH_POSTINGS_V1] {
        batch.delete_range(KeyRange::prefix(&keys::identity(tag, data_id)));
    }
}

/// Adds to `batch` the removal of identity `data_id`'s index under the tag builds
/// before [`keys::SEARCH_POSTINGS`] wrote (nothing reads it), for the commit that writes
/// the identity's first run (`through`, what its runs cover, is `None`).
pub(crate) fn stage_v1_removal(batch: &mut Batch, data_id: &str, through: Option<(u64, u64)>) {
    if through.is_none() {
        batch.delete_range(KeyRange::prefix(&keys::identity(
            keys::SEARCH_POSTINGS_V1,
            data_id,
        )));
    }
}
