//! Shared history: how a branched session reads its parent's entries without copying
//! them, and how the sharing ends.
//!
//! A branch that inherits history does not copy the parent's entries. Its record
//! carries a **base**: a list of [`Layer`]s, each naming an identity whose entries it
//! reads (`data_id`, the parent's session id at the fork) and the filter that selects
//! the fork-time view of them: entry ids up to the parent's newest id at the fork (later
//! appends, whatever their timestamp, have larger ids), archive entries of compactions
//! before the fork only, and for a fork before a message, positions below that message
//! (`flatten`: the canonical prefix, archived entries included, is the child's active
//! transcript). A branch of a branch copies its parent's layers (narrowed to its own fork
//! point) and adds one for its parent's own identity, so every read is a merge of a few
//! ordered ranges, never a walk up the chain. Entry ids and positions stay unique across
//! the merge: a branch's own ids continue after its parent's newest id.
//!
//! The layered view is exact as long as the shared entries do not change, and most
//! writes never change them:
//! - appends add entries the layers filter out by id;
//! - a compaction moves the active start of one session's view (`active_from` in its
//!   record), not entries: what a branch reads is where it was;
//! - deleting or resetting a session whose identity others read **retires** it
//!   ([`retire`]): everything of it goes but the ranges the readers read (entries,
//!   message index, archive), which stay behind a retirement record `R · data_id` until
//!   the last reader drops its back-reference ([`drop_references`], in the reader's own
//!   delete, reset or materialization), which deletes them. The commit is a few range
//!   deletes whatever the history's size; the back-references `b · data_id ·
//!   holder_key` are the reference records.
//!
//! The writes that do remove shared entries — `persist_compaction_result` (the tail it
//! replaces), truncation and rollback — first **materialize** every session that reads
//! them ([`release`]): the view it reads is copied into its own identity (same
//! positions, ids, message ids and archive tags) and its base is dropped, in the same
//! commit as the write. That copy is O(n) in the shared history. A session's own such
//! writes materialize its own base first in the same way. The frozen snapshots of
//! provider fork operations pinned on the identity (`P`) are copied in the same step
//! ([`keep_snapshots`], over the operation records of `provider_fork::types`); a
//! retired source fails their commit anyway.
//!
//! Why one pass suffices for chains: a session drops all its layers at once, and a
//! branch of a session that still reads identity D reads D too (it copied the layer).
//! So everyone whose view changes when D's owner (or a reader of D) writes is a holder
//! of D, found by one range read.
//!
//! Concurrency: a branch changes its parent's record (`fork_count`) and every releasing
//! write is guarded by the owner's record and by each holder's record, so a branch and a
//! release never interleave unseen. Reads through a base re-read the record at the end
//! and start over if it changed (a release landed in between).

use std::collections::BTreeSet;

use crate::compaction::types::ArchivedEntry;
use crate::engine::error::Error;
use crate::engine::op::{Abort, Io, OpResult};
use crate::provider_fork::types::{ForkOperation, load_op, write_op};
use crate::session::{CHUNK, read_all};
use crate::session::{Identity, Loaded, Tail, load, write_record};
use crate::storage::entry_record::{decode_entry, encode_entry, generated_number};
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange, RangeQuery, prefix_end};
use crate::types::{Entry, Order, Session};

pub(crate) use crate::session::Layer;

impl Layer {
    fn below(&self) -> Option<Vec<u8>> {
        self.before.map(|(at, id)| keys::position(at, id))
    }

    fn admits(&self, entry: &Entry, compaction_index: Option<u64>) -> bool {
        entry.id <= self.last_entry_id && compaction_index.is_none_or(|i| i < self.compactions)
    }
}

/// An entry of a session's view: its position, and whether it is archived (canonical,
/// not active), with the compaction tag of an entry of the archive range `x`.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    /// `created_at · id`, 16 bytes: the key suffix and the transcript cursor.
    pub(crate) position: Vec<u8>,
    pub(crate) entry: Entry,
    /// Archived by a compaction: below the view's active start, or in the archive range.
    pub(crate) archived: bool,
    /// `Some((compaction_id, compaction_index))` for an entry of the archive range `x`
    /// (written by builds before record format 5).
    pub(crate) tag: Option<(String, u64)>,
}

/// What one session reads: its own identity and its shared base, active from
/// `active_from` on (see [`crate::session::Stored`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) session: &'a Session,
    /// The session's own identity.
    pub(crate) identity: Identity<'a>,
    pub(crate) base: &'a [Layer],
    pub(crate) active_from: Option<(u64, u64)>,
}

impl<'a> View<'a> {
    /// The view of a session as read.
    pub(crate) fn of(loaded: &'a Loaded) -> View<'a> {
        View {
            session: &loaded.session,
            identity: loaded.identity(),
            base: &loaded.base,
            active_from: loaded.active_from,
        }
    }

    fn from(&self) -> Option<Vec<u8>> {
        self.active_from.map(|(at, id)| keys::position(at, id))
    }
}

/// One ordered range of a view.
struct Source<'a> {
    prefix: Vec<u8>,
    /// The identity whose range it is.
    identity: Identity<'a>,
    /// Values are archive records.
    archive: bool,
    /// The layer's filter; `None` for the session's own ranges.
    layer: Option<&'a Layer>,
}

fn lower(a: Option<Vec<u8>>, b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The ranges of a session's view: its own transcript (and archive when `canonical`),
/// and each layer's (archive too when `canonical` or when the layer flattens).
fn sources<'a>(own: Identity<'a>, base: &'a [Layer], canonical: bool) -> Vec<Source<'a>> {
    let mut out = vec![Source::active(own, None)];
    if canonical {
        out.push(Source::archive(own, None));
    }
    for layer in base {
        out.push(Source::active(layer.identity(), Some(layer)));
        if canonical || layer.flatten {
            out.push(Source::archive(layer.identity(), Some(layer)));
        }
    }
    out
}

impl<'a> Source<'a> {
    /// The transcript range `e` of `identity`.
    fn active(identity: Identity<'a>, layer: Option<&'a Layer>) -> Source<'a> {
        Source {
            prefix: keys::entries(identity.data_id),
            identity,
            archive: false,
            layer,
        }
    }

    /// The archive range `x` of `identity`.
    fn archive(identity: Identity<'a>, layer: Option<&'a Layer>) -> Source<'a> {
        Source {
            prefix: keys::identity(keys::ARCHIVE, identity.data_id),
            identity,
            archive: true,
            layer,
        }
    }

    /// The key of `position` (canonical, possibly followed by more bytes) in the range.
    fn key(&self, position: &[u8]) -> Vec<u8> {
        let mut key = self.prefix.clone();
        key.extend_from_slice(&keys::suffix(self.identity.data_id, position));
        key
    }
}

/// The bounds of one read of a source, as positions: from `from` (inclusive) or after
/// `after` (exclusive), whichever is later, and below `below`; entries below `active`
/// read as archived.
#[derive(Debug, Clone, Copy, Default)]
struct Bounds<'a> {
    from: Option<&'a [u8]>,
    after: Option<&'a [u8]>,
    below: Option<&'a [u8]>,
    active: Option<&'a [u8]>,
}

/// About how many bytes of values one range read of a transcript asks for: reads start
/// at [`FIRST_READ`] pairs and then ask for as many as fit, judged by the largest value
/// seen, so a range of multi-megabyte entries is read a few at a time.
const READ_BYTES: usize = 1 << 20;
/// Pairs in the first range read of a scan.
const FIRST_READ: u32 = 8;
/// Most bytes of entry values one page holds (at least one entry, whatever its size).
pub(crate) const PAGE_BYTES: usize = 1 << 20;

/// What a [`scan`] read, and whether the source has nothing more within the bounds.
struct Scanned {
    items: Vec<Item>,
    exhausted: bool,
}

/// Reads `source` within `bounds`, in order (or reversed), keeping what its layer
/// admits, until `want` items (0: all) or `budget` bytes of values (then with at least
/// one item).
async fn scan(
    io: &Io,
    source: &Source<'_>,
    bounds: Bounds<'_>,
    reverse: bool,
    want: usize,
    budget: usize,
) -> Result<Scanned, Error> {
    let Bounds {
        from,
        after,
        below,
        active,
    } = bounds;
    let prefix = &source.prefix;
    let at = |position: &[u8]| source.key(position);
    let mut start = match after {
        Some(p) => {
            let mut key = at(p);
            key.push(0);
            key
        }
        None => prefix.clone(),
    };
    if let Some(from) = from {
        start = start.max(at(from));
    }
    let mut end = match below {
        Some(p) => Some(at(p)),
        None => prefix_end(prefix),
    };
    let cap = if want == 0 {
        CHUNK
    } else {
        u32::try_from(want).unwrap_or(CHUNK).clamp(1, CHUNK)
    };
    let mut chunk = FIRST_READ.min(cap);
    let (mut largest, mut bytes) = (1usize, 0usize);
    let mut out = Vec::new();
    loop {
        let pairs = io
            .range(RangeQuery {
                range: KeyRange {
                    start: start.clone(),
                    end: end.clone(),
                },
                limit: chunk,
                reverse,
            })
            .await?;
        let full = pairs.len() == chunk as usize;
        if let Some(last) = pairs.last() {
            if reverse {
                end = Some(last.key.clone());
            } else {
                start = last.key.clone();
                start.push(0);
            }
        }
        for kv in pairs {
            largest = largest.max(kv.value.len());
            let size = kv.value.len();
            let (entry, tags) = if source.archive {
                let a: ArchivedEntry = record::decode(&kv.key, &kv.value)?;
                (a.entry, Some((a.compaction_id, a.compaction_index)))
            } else {
                (
                    decode_entry(&kv.key, &kv.value, Some(source.identity.session_id))?,
                    None,
                )
            };
            let tag = match source.layer {
                Some(layer) if !layer.admits(&entry, tags.as_ref().map(|t| t.1)) => continue,
                Some(layer) if layer.flatten => None,
                _ => tags,
            };
            let position = position_of(&kv.key, source.identity.data_id, prefix.len())?;
            let archived = tag.is_some() || active.is_some_and(|a| position.as_slice() < a);
            out.push(Item {
                position,
                entry,
                archived,
                tag,
            });
            bytes = bytes.saturating_add(size);
            if (want > 0 && out.len() == want) || bytes >= budget {
                return Ok(Scanned {
                    items: out,
                    exhausted: false,
                });
            }
        }
        if !full {
            return Ok(Scanned {
                items: out,
                exhausted: true,
            });
        }
        let room = (READ_BYTES.min(budget - bytes) / largest).max(1);
        let left = if want == 0 {
            cap as usize
        } else {
            want - out.len()
        };
        chunk = u32::try_from(room.min(left)).unwrap_or(cap).clamp(1, cap);
    }
}

/// Every item of a session's view in position order: its active transcript, or with
/// `canonical` its canonical transcript (archived entries too); only positions below
/// `below` when given. Holds the whole view: for bounded reads, page with [`page`].
pub(crate) async fn items(
    io: &Io,
    view: &View<'_>,
    canonical: bool,
    below: Option<&[u8]>,
) -> Result<Vec<Item>, Error> {
    let mut all = Vec::new();
    let active = view.from();
    for source in sources(view.identity, view.base, canonical) {
        let bound = lower(
            source.layer.and_then(Layer::below),
            below.map(<[u8]>::to_vec),
        );
        let bounds = Bounds {
            from: if canonical { None } else { active.as_deref() },
            after: None,
            below: bound.as_deref(),
            active: active.as_deref(),
        };
        all.extend(scan(io, &source, bounds, false, 0, usize::MAX).await?.items);
    }
    crate::order::sort_by(&mut all, |a, b| a.position.cmp(&b.position));
    Ok(all)
}

/// How many entries a session's view holds (active, or with `canonical` all; only
/// positions below `below` when given) and their tokens, read a page at a time.
pub(crate) async fn tally(
    io: &Io,
    view: &View<'_>,
    canonical: bool,
    below: Option<&[u8]>,
) -> Result<(u64, u64), Error> {
    let (mut count, mut tokens) = (0u64, 0u64);
    let active = view.from();
    for source in sources(view.identity, view.base, canonical) {
        let bound = lower(
            source.layer.and_then(Layer::below),
            below.map(<[u8]>::to_vec),
        );
        let mut after: Option<Vec<u8>> = None;
        loop {
            let bounds = Bounds {
                from: if canonical { None } else { active.as_deref() },
                after: after.as_deref(),
                below: bound.as_deref(),
                active: active.as_deref(),
            };
            let read = scan(io, &source, bounds, false, CHUNK as usize, PAGE_BYTES).await?;
            count += read.items.len() as u64;
            tokens = crate::engine::validate::total(
                std::iter::once(tokens).chain(
                    read.items
                        .iter()
                        .map(|i| crate::compaction::tokens::entry_tokens(&i.entry)),
                ),
            );
            after = read.items.last().map(|i| i.position.clone());
            if read.exhausted || after.is_none() {
                break;
            }
        }
    }
    Ok((count, tokens))
}

/// One page of a session's active transcript (canonical with `canonical`) after
/// `cursor` (a position) in `order`: the items and whether more follow. Each range is
/// read only up to `limit + 1` items and about [`PAGE_BYTES`] of values, so a page holds
/// fewer than `limit` entries when they are large (never none while more follow).
pub(crate) async fn page(
    io: &Io,
    view: &View<'_>,
    canonical: bool,
    order: Order,
    cursor: Option<&[u8]>,
    limit: usize,
) -> Result<(Vec<Item>, bool), Error> {
    let reverse = order == Order::NewestFirst;
    let cursor = cursor.map(<[u8]>::to_vec);
    let active = view.from();
    let mut all = Vec::new();
    // The merge is exact up to the last position read from each range that has more.
    let mut cut: Option<Vec<u8>> = None;
    for source in sources(view.identity, view.base, canonical) {
        let bound = source.layer.and_then(Layer::below);
        let (after, below) = if reverse {
            (None, lower(bound, cursor.clone()))
        } else {
            (cursor.clone(), bound)
        };
        let bounds = Bounds {
            from: if canonical { None } else { active.as_deref() },
            after: after.as_deref(),
            below: below.as_deref(),
            active: active.as_deref(),
        };
        let read = scan(io, &source, bounds, reverse, limit + 1, PAGE_BYTES).await?;
        if !read.exhausted
            && let Some(last) = read.items.last()
        {
            let last = last.position.clone();
            cut = Some(match cut {
                Some(c) if reverse => c.max(last),
                Some(c) => c.min(last),
                None => last,
            });
        }
        all.extend(read.items);
    }
    crate::order::sort_by(&mut all, |a, b| a.position.cmp(&b.position));
    if reverse {
        all.reverse();
    }
    let more = cut.is_some() || all.len() > limit;
    if let Some(cut) = cut {
        all.retain(|i| {
            if reverse {
                i.position >= cut
            } else {
                i.position <= cut
            }
        });
    }
    all.truncate(limit);
    Ok((all, more))
}

/// The position of the newest entry (active or archived) a base lets its session read,
/// or `None`: one reverse read per layer range, skipping what the layer does not admit.
pub(crate) async fn newest_in_base(io: &Io, base: &[Layer]) -> Result<Option<Vec<u8>>, Error> {
    let mut newest = None;
    for layer in base {
        let below = layer.below();
        for source in sources_of_layer(layer) {
            let bounds = Bounds {
                below: below.as_deref(),
                ..Bounds::default()
            };
            let found = scan(io, &source, bounds, true, 1, usize::MAX).await?.items;
            newest = newest.max(found.into_iter().next().map(|item| item.position));
        }
    }
    Ok(newest)
}

/// Adds the message-id index row of `entry`, written into `identity`, to `batch`, unless
/// its message id is its own generated one (`{session_id}-{id}`): those are found by
/// position ([`indexed_position`]), so the common append writes one row, not two.
/// Whether a row was added.
pub(crate) fn index_message(batch: &mut Batch, identity: Identity<'_>, entry: &Entry) -> bool {
    if generated_number(identity.session_id, &entry.message_id) == Some(entry.id) {
        return false;
    }
    batch.put(
        keys::message(identity.data_id, &entry.message_id),
        keys::position(entry.created_at, entry.id),
    );
    true
}

/// The position (`created_at · id`) of the entry with `message_id` in the transcript
/// range `e` of `identity` (which has a message-id index), or `None`.
///
/// The index row decides when there is one: builds before record format 6 wrote one for
/// every entry, and this one for every entry whose message id is not its own generated
/// id. An entry with its own generated id `{session_id}-{n}` and no row is found by its
/// id `n`: positions increase with ids for every entry written since record format 4,
/// and every entry written before has a row (or an id below `n`), so a bisection of the
/// time span (one single-pair range read per halving: about 27 reads for a day of
/// entries, 35 for a year) and then point reads find it. The entry found must hold
/// `message_id`, else it is not this one.
pub(crate) async fn indexed_position(
    io: &Io,
    identity: Identity<'_>,
    message_id: &str,
) -> Result<Option<Vec<u8>>, Error> {
    let data_id = identity.data_id;
    if let Some(position) = io.get(keys::message(data_id, message_id)).await? {
        return Ok(Some(position));
    }
    let Some(n) = generated_number(identity.session_id, message_id) else {
        return Ok(None);
    };
    let prefix = keys::entries(data_id);
    let first = first_position(io, data_id, prefix.clone(), false).await?;
    let last = first_position(io, data_id, prefix.clone(), true).await?;
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(None);
    };
    if n < first.1 || n > last.1 {
        return Ok(None);
    }
    // The entry `n`, if any, has a `created_at` in `[lo, hi]`.
    let (mut lo, mut hi) = (first.0, last.0);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let start = keys::entry(data_id, mid, 0);
        let Some((at, id)) = first_position(io, data_id, start, false).await? else {
            hi = mid - 1;
            continue;
        };
        match id.cmp(&n) {
            std::cmp::Ordering::Equal => {
                lo = at;
                hi = at;
            }
            // Every entry from `mid` on is at or after this one, so `n` is before `mid`.
            std::cmp::Ordering::Greater => hi = mid - 1,
            // `n` is after this entry: no earlier than its time.
            std::cmp::Ordering::Less => lo = at,
        }
    }
    for at in [lo, hi] {
        let key = keys::entry(data_id, at, n);
        if let Some(bytes) = io.get(key.clone()).await? {
            let entry = decode_entry(&key, &bytes, Some(identity.session_id))?;
            return Ok((entry.message_id == message_id).then_some(keys::position(at, n)));
        }
        if lo == hi {
            break;
        }
    }
    Ok(None)
}

/// The `(created_at, id)` of the first entry key from `start` on (of the last, when
/// `reverse`) in the transcript range of identity `data_id`.
async fn first_position(
    io: &Io,
    data_id: &str,
    start: Vec<u8>,
    reverse: bool,
) -> Result<Option<(u64, u64)>, Error> {
    let prefix = &keys::entries(data_id);
    let pairs = io
        .range(RangeQuery {
            range: KeyRange {
                start,
                end: prefix_end(prefix),
            },
            limit: 1,
            reverse,
        })
        .await?;
    pairs
        .first()
        .map(|kv| split_entry_key(&kv.key, data_id, prefix.len()))
        .transpose()
}

/// The `(created_at, id)` of an entry key of identity `data_id` whose identity prefix is
/// `prefix_len` bytes.
fn split_entry_key(key: &[u8], data_id: &str, prefix_len: usize) -> Result<(u64, u64), Error> {
    key.get(prefix_len..)
        .and_then(|suffix| keys::read_position(data_id, suffix))
        .ok_or_else(|| Error::Corruption {
            key: keys::display(key),
            detail: "not an entry key".into(),
        })
}

/// The canonical position of an entry key of identity `data_id` whose identity prefix is
/// `prefix_len` bytes.
fn position_of(key: &[u8], data_id: &str, prefix_len: usize) -> Result<Vec<u8>, Error> {
    split_entry_key(key, data_id, prefix_len).map(|(at, id)| keys::position(at, id))
}

/// Looks an entry up by message id in the session's own identity (active or archived).
async fn locate_own(io: &Io, view: &View<'_>, message_id: &str) -> Result<Option<Item>, Error> {
    let identity = view.identity;
    let data_id = identity.data_id;
    if view.session.message_index {
        let index_key = keys::message(data_id, message_id);
        let Some(position) = indexed_position(io, identity, message_id).await? else {
            return Ok(None);
        };
        let entry_key = keys::entry_at(data_id, &position);
        if let Some(bytes) = io.get(entry_key.clone()).await? {
            let entry = decode_entry(&entry_key, &bytes, Some(identity.session_id))?;
            indexed_as(&index_key, &entry, message_id)?;
            return Ok(Some(Item {
                position,
                entry,
                archived: false,
                tag: None,
            }));
        }
        // A compaction moved it to the canonical archive, at the same position.
        let archived_key = keys::archived(data_id, &position);
        let Some(bytes) = io.get(archived_key.clone()).await? else {
            // Every write that removes an entry removes its index entry too.
            return Err(Error::Corruption {
                key: keys::display(&index_key),
                detail: "the message-id index points at no entry".into(),
            });
        };
        let a: ArchivedEntry = record::decode(&archived_key, &bytes)?;
        indexed_as(&index_key, &a.entry, message_id)?;
        return Ok(Some(Item {
            position,
            entry: a.entry,
            archived: true,
            tag: Some((a.compaction_id, a.compaction_index)),
        }));
    }
    // An identity older than the index: scan its transcript.
    let prefix = keys::entries(data_id);
    for kv in read_all(io, KeyRange::prefix(&prefix)).await? {
        let entry = decode_entry(&kv.key, &kv.value, Some(identity.session_id))?;
        if entry.message_id == message_id {
            return Ok(Some(Item {
                position: position_of(&kv.key, data_id, prefix.len())?,
                entry,
                archived: false,
                tag: None,
            }));
        }
    }
    Ok(None)
}

/// Fails with `corruption` naming the index key unless the entry the message-id index
/// led to is the one it indexes.
fn indexed_as(index_key: &[u8], entry: &Entry, message_id: &str) -> Result<(), Error> {
    if entry.message_id == message_id {
        return Ok(());
    }
    Err(Error::Corruption {
        key: keys::display(index_key),
        detail: format!(
            "the message-id index leads to the entry of message `{}`",
            entry.message_id
        ),
    })
}

/// Cross-checks a read of a session's whole active transcript: `seen` entries against
/// the `entry_count` of the record in `loaded`. A mismatch while the record is still the
/// one read is damage — entries lost or gained that no write accounts for, since every
/// write to a transcript rewrites the record — and fails with `corruption` naming the
/// record. A record that changed meanwhile (a concurrent write) explains it.
pub(crate) async fn check_count(io: &Io, loaded: &Loaded, seen: usize) -> Result<(), Error> {
    let counted = loaded.session.entry_count;
    if seen as u64 == counted {
        return Ok(());
    }
    let key = keys::session(&loaded.session.key);
    match io.get(key.clone()).await? {
        Some(bytes) if bytes == loaded.bytes => Err(Error::Corruption {
            key: keys::display(&key),
            detail: format!(
                "the session counts {counted} transcript entries, but {seen} are stored"
            ),
        }),
        _ => Ok(()),
    }
}

/// Looks an entry up by message id in the layers of a base only.
pub(crate) async fn locate_in_base(
    io: &Io,
    base: &[Layer],
    message_id: &str,
) -> Result<Option<Item>, Error> {
    for layer in base {
        let below = layer.below();
        if !layer.indexed {
            for source in sources_of_layer(layer) {
                let bounds = Bounds {
                    below: below.as_deref(),
                    ..Bounds::default()
                };
                let found = scan(io, &source, bounds, false, 0, usize::MAX)
                    .await?
                    .items
                    .into_iter()
                    .find(|i| i.entry.message_id == message_id);
                if found.is_some() {
                    return Ok(found);
                }
            }
            continue;
        }
        let index_key = keys::message(&layer.data_id, message_id);
        let Some(position) = indexed_position(io, layer.identity(), message_id).await? else {
            continue;
        };
        if below.as_ref().is_some_and(|b| position >= *b) {
            continue;
        }
        let entry_key = keys::entry_at(&layer.data_id, &position);
        if let Some(bytes) = io.get(entry_key.clone()).await? {
            let entry = decode_entry(&entry_key, &bytes, Some(layer.identity().session_id))?;
            indexed_as(&index_key, &entry, message_id)?;
            if layer.admits(&entry, None) {
                return Ok(Some(Item {
                    position,
                    entry,
                    archived: false,
                    tag: None,
                }));
            }
            continue;
        }
        let archived_key = keys::archived(&layer.data_id, &position);
        if let Some(bytes) = io.get(archived_key.clone()).await? {
            let a: ArchivedEntry = record::decode(&archived_key, &bytes)?;
            indexed_as(&index_key, &a.entry, message_id)?;
            if layer.admits(&a.entry, Some(a.compaction_index)) {
                let tag = (!layer.flatten).then_some((a.compaction_id, a.compaction_index));
                return Ok(Some(Item {
                    position,
                    entry: a.entry,
                    archived: tag.is_some(),
                    tag,
                }));
            }
        }
    }
    Ok(None)
}

fn sources_of_layer(layer: &Layer) -> [Source<'_>; 2] {
    [
        Source::active(layer.identity(), Some(layer)),
        Source::archive(layer.identity(), Some(layer)),
    ]
}

/// The entry with `message_id` in a session's canonical view (own or shared), with its
/// position.
pub(crate) async fn locate(
    io: &Io,
    view: &View<'_>,
    message_id: &str,
) -> Result<Option<Item>, Error> {
    let found = match locate_own(io, view, message_id).await? {
        Some(item) => Some(item),
        None => locate_in_base(io, view.base, message_id).await?,
    };
    let active = view.from();
    Ok(found.map(|mut item| {
        item.archived |= active.as_ref().is_some_and(|a| item.position < *a);
        item
    }))
}

/// Copies what a session reads through `base` into its own identity — active entries to
/// its transcript, archived ones to its archive with their compaction tags, every one
/// into its message-id index, at the same positions — and removes its
/// back-references. The caller writes the record with an empty base in the same batch,
/// after these puts (so its own deletes of the same keys apply after them).
///
/// The copies land below the identity's own entries, where its search index runs
/// (which start after the last entry they cover) would never reach them: the identity's
/// index is dropped in the same batch, so that all of its entries form one unindexed
/// tail, which queries read (and count) and appends and the backfill index again.
pub(crate) async fn materialize(
    io: &Io,
    batch: &mut Batch,
    loaded: &Loaded,
    base: &[Layer],
    done: &BTreeSet<String>,
) -> Result<(), Error> {
    copy_base(io, batch, loaded.identity(), base).await?;
    if !base.is_empty() {
        crate::search::index::stage_removal(batch, loaded.data_id());
    }
    drop_references(io, batch, &loaded.session.key, base, done).await
}

/// The copy of [`materialize`] into `identity`, without dropping the back-references.
async fn copy_base(
    io: &Io,
    batch: &mut Batch,
    identity: Identity<'_>,
    base: &[Layer],
) -> Result<(), Error> {
    let data_id = identity.data_id;
    for layer in base {
        let below = layer.below();
        for source in sources_of_layer(layer) {
            let bounds = Bounds {
                below: below.as_deref(),
                ..Bounds::default()
            };
            for item in scan(io, &source, bounds, false, 0, usize::MAX).await?.items {
                index_message(batch, identity, &item.entry);
                match item.tag {
                    None => {
                        batch.put(
                            keys::entry_at(data_id, &item.position),
                            encode_entry(&item.entry, Some(identity.session_id))?,
                        );
                    }
                    Some((compaction_id, compaction_index)) => {
                        let archived = ArchivedEntry {
                            entry: item.entry,
                            compaction_id,
                            compaction_index,
                        };
                        batch.put(
                            keys::archived(data_id, &item.position),
                            record::encode(&archived)?,
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

/// The sessions that read identity `data_id` through their base, but those in `done`
/// (handled in the same batch), with their back-reference keys. A back-reference nobody
/// holds any more is dropped in `batch`.
async fn readers(
    io: &Io,
    batch: &mut Batch,
    data_id: &str,
    done: &BTreeSet<String>,
) -> Result<Vec<(Vec<u8>, Loaded)>, Error> {
    let prefix = keys::holders(data_id);
    let mut out = Vec::new();
    for kv in read_all(io, KeyRange::prefix(&prefix)).await? {
        let Some((holder, _)) = keys::read_str(&kv.key, prefix.len()) else {
            return Err(Error::Corruption {
                key: keys::display(&kv.key),
                detail: "not a back-reference key".into(),
            });
        };
        if done.contains(&holder) {
            continue;
        }
        match load(io, &holder).await? {
            Some(loaded) if loaded.base.iter().any(|l| l.data_id == data_id) => {
                out.push((kv.key, loaded));
            }
            _ => batch.delete(kv.key),
        }
    }
    Ok(out)
}

/// Adds to `batch` the deletion of every range of identity `data_id`, and of its entry in
/// the data-id registry (a later identity may take the id: nothing of this one is left).
pub(crate) fn delete_identity(batch: &mut Batch, data_id: &str) {
    for tag in keys::IDENTITY_TAGS {
        batch.delete_range(KeyRange::prefix(&keys::identity(tag, data_id)));
    }
    if keys::is_minted(data_id) {
        batch.delete(keys::data_id(data_id));
    }
}

/// Deletes identity `data_id` (its session is deleted or reset) in `batch` — or, while
/// sessions not in `done` still read it through their base, everything of it but the
/// ranges they read ([`keys::SHARED_TAGS`]), which stay behind a retirement record
/// (`R · data_id`) until the last reader drops its reference ([`drop_references`]).
/// Nothing is copied: the commit is a few range deletes whatever the history's size.
/// Guarded by every reader's back-reference still being there.
pub(crate) async fn retire(
    io: &Io,
    batch: &mut Batch,
    data_id: &str,
    done: &BTreeSet<String>,
) -> Result<(), Error> {
    let readers = readers(io, batch, data_id, done).await?;
    if readers.is_empty() {
        delete_identity(batch, data_id);
        batch.delete(keys::retired(data_id));
        return Ok(());
    }
    for (reference, _) in readers {
        batch.require_equals(reference, Vec::new());
    }
    for tag in keys::IDENTITY_TAGS {
        if !keys::SHARED_TAGS.contains(&tag) {
            batch.delete_range(KeyRange::prefix(&keys::identity(tag, data_id)));
        }
    }
    let retired = keys::retired(data_id);
    if io.get(retired.clone()).await?.is_none() {
        batch.put(retired, 0u64.to_be_bytes().to_vec());
    }
    Ok(())
}

/// Adds to `batch` the removal of the back-references of session `holder_key` to the
/// identities of `base` (it stops reading them). A retired identity whose last reader
/// this was is deleted with it; one that keeps readers has its retirement record
/// advanced, so that two last-but-one readers leaving at once conflict instead of each
/// leaving the history to the other. Readers in `done` are leaving in the same batch.
pub(crate) async fn drop_references(
    io: &Io,
    batch: &mut Batch,
    holder_key: &str,
    base: &[Layer],
    done: &BTreeSet<String>,
) -> Result<(), Error> {
    for layer in base {
        batch.delete(keys::holder(&layer.data_id, holder_key));
        let retired = keys::retired(&layer.data_id);
        let Some(count) = io.get(retired.clone()).await? else {
            continue;
        };
        let mut leaving = done.clone();
        leaving.insert(holder_key.to_owned());
        let others = readers(io, batch, &layer.data_id, &leaving).await?;
        batch.require_equals(retired.clone(), count.clone());
        if others.is_empty() {
            delete_identity(batch, &layer.data_id);
            batch.delete(retired);
        } else {
            let next = count
                .get(..8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map_or(0, u64::from_be_bytes)
                .wrapping_add(1);
            batch.put(retired, next.to_be_bytes().to_vec());
        }
    }
    Ok(())
}

/// Before the entries of `identity` change other than by an append, gives every session
/// that reads them through its base its own copy ([`materialize`]) and an empty base, in
/// `batch`, guarded by each such record being unchanged. Keys in `done` are skipped
/// (already handled in this batch, or deleted by it); handled keys are added.
pub(crate) async fn release(
    io: &Io,
    batch: &mut Batch,
    identity: Identity<'_>,
    done: &mut BTreeSet<String>,
) -> Result<(), Error> {
    let data_id = identity.data_id;
    // Provider fork snapshots frozen on this identity are copied the same way, once per
    // batch (the marker cannot be a session key: keys have no control characters).
    if done.insert(format!("\u{0}fork-snapshots:{data_id}")) {
        keep_snapshots(io, batch, identity).await?;
    }
    for (_, loaded) in readers(io, batch, data_id, done).await? {
        done.insert(loaded.session.key.clone());
        materialize(io, batch, &loaded, &loaded.base, done).await?;
        // The copy keeps the positions: the clock and the active start stay.
        let tail = Tail {
            base: &[],
            ..Tail::of(&loaded)
        };
        write_record(batch, &loaded, &loaded.session, tail)?;
    }
    Ok(())
}

/// Ends a read through a base: if the session's record changed since `loaded` was read
/// (a release may have moved the shared entries), the read starts over.
pub(crate) async fn confirm(io: &Io, loaded: &Loaded) -> OpResult<()> {
    if loaded.base.is_empty() {
        return Ok(());
    }
    match io.get(keys::session(&loaded.session.key)).await? {
        Some(bytes) if bytes == loaded.bytes => Ok(()),
        _ => Err(Abort::Retry),
    }
}

/// The frozen history as the source holds it now: its canonical view (its own
/// transcript and compaction archive, and what it reads through its shared base)
/// through the boundary, each entry with its position. `None` when the source is no
/// longer the identity the operation froze.
pub(crate) async fn frozen_entries(
    io: &Io,
    op: &ForkOperation,
) -> Result<Option<Vec<(Vec<u8>, Entry)>>, Error> {
    let Some(source) = load(io, &op.source_key).await? else {
        return Ok(None);
    };
    if source.session.session_id != op.source_session_id {
        return Ok(None);
    }
    let Some(boundary) = op.boundary else {
        return Ok(Some(Vec::new()));
    };
    // Exclusive: just past the boundary's position.
    let mut below = keys::position(boundary.created_at, boundary.entry_id);
    below.push(0);
    let items = items(io, &View::of(&source), true, Some(&below)).await?;
    Ok(Some(
        items
            .into_iter()
            .map(|item| (item.position, item.entry))
            .collect(),
    ))
}

/// Copy-on-destroy for fork snapshots, called (by [`release`]) before any write other
/// than an append changes the entries of `identity`: every active
/// operation pinned on it gets its frozen history copied into `Q · operation_id`
/// (guarded by its record, which is marked `snapshot_copied`), so its commit
/// materializes exactly the snapshot whatever the source does meanwhile. Pins of
/// operations that ended are dropped.
pub(crate) async fn keep_snapshots(
    io: &Io,
    batch: &mut Batch,
    identity: Identity<'_>,
) -> Result<(), Error> {
    // Pins name the source by its session id (what the operation records).
    let prefix = keys::fork_pins(identity.session_id);
    for kv in read_all(io, KeyRange::prefix(&prefix)).await? {
        let Some((id, _)) = keys::read_str(&kv.key, prefix.len()) else {
            return Err(Error::Corruption {
                key: keys::display(&kv.key),
                detail: "not a fork pin key".into(),
            });
        };
        let loaded = match load_op(io, &id).await? {
            Some(l) if l.op.state.is_active() && l.op.source_session_id == identity.session_id => l,
            _ => {
                batch.delete(kv.key);
                continue;
            }
        };
        if loaded.op.snapshot_copied {
            continue;
        }
        let copy = keys::fork_snapshot(&id);
        let Some(frozen) = frozen_entries(io, &loaded.op).await? else {
            // The source is not the frozen identity any more: the commit fails anyway.
            continue;
        };
        // Snapshot keys hold canonical positions (`keys::entry_position`).
        for (position, entry) in frozen {
            let mut key = copy.clone();
            key.extend_from_slice(&position);
            batch.put(key, encode_entry(&entry, None)?);
        }
        let mut op = loaded.op.clone();
        op.snapshot_copied = true;
        write_op(batch, &loaded, &op)?;
    }
    Ok(())
}
