//! Transcript entries: append (one or several in one commit), paged reads (active and
//! canonical), the entry count, lookups by message id, and the rewrites `truncate`
//! (keep the newest messages) and `rollback` (drop the last turns).

use std::collections::BTreeSet;

use crate::branch::history::View;
use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::{Identity, IdentityBuf, Loaded, require, write_appended, write_update};
use crate::storage::entry_record::{
    decode_entry, encode_entry, generated_message_id, generated_number,
};
use crate::storage::keys;
use crate::storage::{Batch, KeyRange, RangeQuery, prefix_end};
use crate::types::{AppendRequest, Entry, EntryStatus, Order, Page, PageRequest, TruncateOutcome};

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
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| check_append(&request))
    );
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
    if let Some(tokens) = request.token_count {
        validate::count("token_count", tokens)?;
    }
    if let Some(usage) = &request.turn_usage {
        check_usage(usage)?;
    }
    if let Some(reasoning) = &request.reasoning {
        validate::text("reasoning", reasoning, validate::MAX_CONTENT_BYTES)?;
    }
    validate::attachments(&request.attachments)?;
    request
        .tool_calls
        .as_ref()
        .map_or(Ok(()), validate::tool_calls)
}

/// Checks a model usage: its model an id, its figures counts.
pub(crate) fn check_usage(usage: &crate::types::TurnUsage) -> Result<(), Error> {
    validate::id("turn_usage.model", &usage.model)?;
    validate::count("turn_usage.input_tokens", usage.input_tokens)?;
    validate::count("turn_usage.output_tokens", usage.output_tokens)?;
    validate::count("turn_usage.cache_read_tokens", usage.cache_read_tokens)?;
    validate::count("turn_usage.cache_write_tokens", usage.cache_write_tokens)
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

/// Whether a branch's shared history (which its own message-id index cannot see)
/// already holds `message_id`.
pub(crate) async fn in_base(
    io: &Io,
    loaded: &crate::session::Loaded,
    message_id: &str,
) -> Result<bool, Error> {
    if loaded.base.is_empty() {
        return Ok(false);
    }
    Ok(
        crate::branch::history::locate_in_base(io, &loaded.base, message_id)
            .await?
            .is_some(),
    )
}

/// The entry clock of the identity of `loaded`: the `created_at` of the newest entry it
/// holds or reads, the least `created_at` of its next entry. Stored in the session
/// record from format 4 on; for an older record, derived from the stored entries: the
/// newest position of its own transcript and archive (a reverse range read of one each)
/// and the bound of every layer of its shared history.
pub(crate) async fn entry_clock(io: &Io, loaded: &Loaded) -> Result<u64, Error> {
    if let Some(at) = loaded.newest_entry_at {
        return Ok(at);
    }
    let own = newest_position(io, loaded.data_id()).await?;
    let mut at = own.map_or(0, |(at, _)| at);
    for layer in &loaded.base {
        let bound = match layer.before {
            // The layer reads positions strictly below this one.
            Some((before, _)) => before,
            None => newest_position(io, &layer.data_id)
                .await?
                .map_or(0, |(at, _)| at),
        };
        at = at.max(bound);
    }
    Ok(at)
}

/// The newest position `(created_at, id)` of the entries, active or archived, of
/// identity `data_id`; `None` when it has none.
pub(crate) async fn newest_position(io: &Io, data_id: &str) -> Result<Option<(u64, u64)>, Error> {
    let mut newest: Option<(u64, u64)> = None;
    for prefix in [
        keys::entries(data_id),
        keys::identity(keys::ARCHIVE, data_id),
    ] {
        let last = io
            .range(RangeQuery {
                range: KeyRange::prefix(&prefix),
                limit: 1,
                reverse: true,
            })
            .await?;
        if let Some(kv) = last.first() {
            let position = kv
                .key
                .get(prefix.len()..)
                .and_then(|suffix| keys::read_position(data_id, suffix))
                .ok_or_else(|| Error::Corruption {
                    key: keys::display(&kv.key),
                    detail: "not an entry key".into(),
                })?;
            newest = newest.max(Some(position));
        }
    }
    Ok(newest)
}

/// How [`stage_entry`] writes an entry: its streaming status (`None`: complete), and
/// the price table its usage's cost is estimated at (`None`: no estimate).
#[derive(Clone, Copy)]
pub(crate) struct Staging<'a> {
    pub(crate) status: Option<EntryStatus>,
    pub(crate) prices: Option<&'a crate::usage::PriceTable>,
}

/// Makes `request` the next entry of `session` (which is updated: ids, counts, tokens,
/// `updated_at`), whose keys `data_id` names, and adds the entry and its message-id
/// index to `batch`. Returns the
/// entry and the index of the precondition that fails when its message id is taken.
///
/// Transcript order is insertion order: the entry's `created_at` is `now_ms`, raised to
/// the identity's entry `clock` (which it then advances) when the caller's clock is
/// behind, so its position `created_at · id` is above every position the identity holds.
pub(crate) fn stage_entry(
    batch: &mut Batch,
    data_id: &str,
    session: &mut crate::Session,
    clock: &mut u64,
    request: AppendRequest,
    now_ms: u64,
    how: Staging<'_>,
) -> Result<(Entry, u32), Error> {
    let Staging { status, prices } = how;
    let id = session.last_entry_id + 1;
    *clock = now_ms.max(*clock);
    let message_id = request
        .message_id
        .clone()
        .unwrap_or_else(|| generated_message_id(&session.session_id, id));
    let mut entry = Entry::from_request(request, id, message_id, *clock);
    entry.status = status;
    session.last_entry_id = id;
    session.entry_count += 1;
    session.updated_at = now_ms;
    account_at(session, &entry, prices);
    // The message-id index: absent, or the id is taken in this identity (an entry with
    // its own generated id has no row, see `history::index_message`; the row of an entry
    // given that id explicitly still fails this).
    let taken = batch.preconditions.len() as u32;
    let identity = Identity {
        data_id,
        session_id: &session.session_id,
    };
    batch.require_absent(keys::message(data_id, &entry.message_id));
    crate::branch::history::index_message(batch, identity, &entry);
    batch.put(
        keys::entry(data_id, entry.created_at, entry.id),
        encode_entry(&entry, Some(&session.session_id))?,
    );
    Ok((entry, taken))
}

async fn append(io: &Io, key: &str, request: AppendRequest, now_ms: u64) -> OpResult<Entry> {
    let loaded = require(io, key).await?;
    let mut updated = loaded.session.clone();
    let staged = stage_appends(io, key, &loaded, &mut updated, vec![request], now_ms).await?;
    let mut entries = commit_appends(io, key, &loaded, &updated, staged).await?;
    entries
        .pop()
        .ok_or_else(|| Error::internal("an append staged no entry").into())
}

/// The most entries one call may append at once (one batch, one turn).
pub const MAX_APPEND_ENTRIES: usize = 1000;

/// Appends `requests`, in order, to the session under `key` in one commit: all of them
/// or none. One read (the session record) and one commit, whatever their number (at most
/// [`MAX_APPEND_ENTRIES`], with at most `MAX_CONTENT_BYTES` of content in all).
pub fn append_entries(
    workspace: &str,
    key: &str,
    requests: Vec<AppendRequest>,
    now_ms: u64,
) -> Operation<Vec<Entry>> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| {
                if requests.is_empty() {
                    Err(Error::invalid("requests", "appends at least one entry"))
                } else {
                    check_appends("requests", &requests)
                }
            })
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, requests) = (key.clone(), requests.clone());
        async move {
            let loaded = require(&io, &key).await?;
            let mut updated = loaded.session.clone();
            let staged = stage_appends(&io, &key, &loaded, &mut updated, requests, now_ms).await?;
            commit_appends(&io, &key, &loaded, &updated, staged).await
        }
    })
}

/// Checks a list of append requests written together (the argument `field`): each
/// request, their number, their total content and that no message id appears twice.
pub(crate) fn check_appends(field: &'static str, requests: &[AppendRequest]) -> Result<(), Error> {
    if requests.len() > MAX_APPEND_ENTRIES {
        return Err(Error::invalid(
            field,
            format!(
                "holds {} entries; one call appends at most {MAX_APPEND_ENTRIES}",
                requests.len()
            ),
        ));
    }
    requests.iter().try_for_each(check_append)?;
    let mut ids = std::collections::BTreeSet::new();
    for id in requests.iter().filter_map(|e| e.message_id.as_deref()) {
        if !ids.insert(id) {
            return Err(Error::invalid(
                field,
                format!("message id `{id}` appears twice"),
            ));
        }
    }
    let total = requests
        .iter()
        .fold(0usize, |sum, r| sum.saturating_add(r.content.len()));
    if total > validate::MAX_CONTENT_BYTES {
        return Err(Error::invalid(
            field,
            format!(
                "hold {total} bytes of content; one call appends at most {}",
                validate::MAX_CONTENT_BYTES
            ),
        ));
    }
    Ok(())
}

/// Entries staged for one commit by [`stage_appends`].
pub(crate) struct Staged {
    /// The entries and their message-id indexes.
    batch: Batch,
    /// The entries, in order.
    entries: Vec<Entry>,
    /// Per entry, the index in `batch` of the precondition that fails when its message
    /// id is taken, with that id.
    taken: Vec<(u32, String)>,
    /// The identity's entry clock after them.
    clock: u64,
}

impl Staged {
    /// The staged entries, in order.
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The staged records, to add more to the same commit (after them: the indexes of
    /// their preconditions stay as they are).
    pub(crate) fn batch_mut(&mut self) -> &mut Batch {
        &mut self.batch
    }

    /// Adds the staged entries to `batch` (a commit that also writes the session
    /// record); returns the identity's entry clock after them.
    pub(crate) fn put_into(self, batch: &mut Batch) -> u64 {
        batch.extend(self.batch);
        self.clock
    }
}

/// Stages `requests` as the next entries of the session `loaded` (`updated` is its
/// record as the commit will write it, advanced past them), checking each request's
/// epoch fence and that its message id is not in the session's shared history.
pub(crate) async fn stage_appends(
    io: &Io,
    key: &str,
    loaded: &Loaded,
    updated: &mut crate::Session,
    requests: Vec<AppendRequest>,
    now_ms: u64,
) -> Result<Staged, Error> {
    stage_appends_as(io, key, loaded, updated, requests, now_ms, None).await
}

/// [`stage_appends`], each entry with `status` (`None`: complete).
pub(crate) async fn stage_appends_as(
    io: &Io,
    key: &str,
    loaded: &Loaded,
    updated: &mut crate::Session,
    requests: Vec<AppendRequest>,
    now_ms: u64,
    status: Option<EntryStatus>,
) -> Result<Staged, Error> {
    let mut staged = Staged {
        batch: Batch::default(),
        entries: Vec::with_capacity(requests.len()),
        taken: Vec::with_capacity(requests.len()),
        clock: entry_clock(io, loaded).await?,
    };
    for request in requests {
        check_epoch(key, &loaded.session, request.expected_epoch)?;
        let (entry, index) = stage_entry(
            &mut staged.batch,
            loaded.data_id(),
            updated,
            &mut staged.clock,
            request,
            now_ms,
            Staging {
                status,
                prices: Some(crate::usage::PriceTable::builtin()),
            },
        )?;
        // The call's own entries are not stored yet: an id given explicitly that another
        // of them generates is caught here.
        let twice = staged
            .entries
            .iter()
            .any(|e| e.message_id == entry.message_id);
        if twice
            || in_base(io, loaded, &entry.message_id).await?
            || given_as_earlier_generated(io, loaded.identity(), &entry).await?
        {
            return Err(taken_id(&entry.message_id, key));
        }
        staged.taken.push((index, entry.message_id.clone()));
        staged.entries.push(entry);
    }
    // A search index run, in this commit, when these entries complete one
    // (`crate::search::index`).
    crate::search::index::stage_entries(io, &mut staged.batch, loaded.identity(), &staged.entries)
        .await?;
    Ok(staged)
}

/// Commits `staged` with the session record `updated` (replacing `loaded`'s, and its
/// recency row) in one batch; returns the entries as stored. A message id taken
/// meanwhile is a `conflict` naming it.
pub(crate) async fn commit_appends(
    io: &Io,
    key: &str,
    loaded: &Loaded,
    updated: &crate::Session,
    staged: Staged,
) -> OpResult<Vec<Entry>> {
    // The session record's precondition comes first: a lost race restarts the
    // operation before a taken message id is judged.
    let mut batch = Batch::default();
    write_appended(&mut batch, loaded, updated, staged.clock)?;
    let offset = batch.extend(staged.batch);
    let taken = staged.taken;
    io.commit_or(batch, |failed| {
        taken
            .iter()
            .find(|(index, _)| index + offset == failed)
            .map(|(_, id)| taken_id(id, key))
    })
    .await?;
    Ok(staged.entries)
}

/// Whether `entry` was given, explicitly, the generated message id of an earlier entry
/// of its identity that holds it (that entry has no index row for the precondition to
/// see, see `history::index_message`).
async fn given_as_earlier_generated(
    io: &Io,
    identity: Identity<'_>,
    entry: &Entry,
) -> Result<bool, Error> {
    match generated_number(identity.session_id, &entry.message_id) {
        Some(n) if n < entry.id => {
            Ok(
                crate::branch::history::indexed_position(io, identity, &entry.message_id)
                    .await?
                    .is_some(),
            )
        }
        _ => Ok(false),
    }
}

/// The `conflict` of a message id the session already holds.
fn taken_id(message_id: &str, key: &str) -> Error {
    Error::Conflict {
        reason: format!("message id `{message_id}` is already in session `{key}`"),
    }
}

/// Adds an entry's tokens to the session: `turn_usage` goes to input/output (and cache
/// read/write) tokens, a
/// bare `token_count` to `total_tokens`; never both, so nothing is counted twice. Sums
/// saturate at [`validate::MAX_INTEGER`]. A `turn_usage` also adds its cost estimate at
/// the built-in price table ([`crate::usage`]).
pub(crate) fn account(session: &mut crate::Session, entry: &Entry) {
    account_at(session, entry, Some(crate::usage::PriceTable::builtin()));
}

/// [`account`] with the cost estimate at `prices` (`None`: no cost added, for usage
/// whose cost the writer brought along, as a Spool export does).
pub(crate) fn account_at(
    session: &mut crate::Session,
    entry: &Entry,
    prices: Option<&crate::usage::PriceTable>,
) {
    match &entry.turn_usage {
        Some(usage) => {
            session.input_tokens = validate::add(session.input_tokens, usage.input_tokens);
            session.output_tokens = validate::add(session.output_tokens, usage.output_tokens);
            session.cache_read = validate::add(session.cache_read, usage.cache_read_tokens);
            session.cache_write = validate::add(session.cache_write, usage.cache_write_tokens);
            if let Some(prices) = prices {
                crate::usage::charge(session, usage, prices);
            }
        }
        None => {
            session.total_tokens =
                validate::add(session.total_tokens, entry.token_count.unwrap_or(0));
        }
    }
}

/// Reads one page of the transcript of the session under `key`, in insertion order
/// (`(created_at, id)`, the key order) or its reverse. A page holds at most
/// `request.limit` entries and, past its first entry, about 1 MiB of them: a page of
/// large entries is shorter, and `next_cursor` says whether more follow.
pub fn read_page(workspace: &str, key: &str, request: PageRequest) -> Operation<Page> {
    paged(workspace, key, request, false)
}

/// Reads one page of the canonical transcript of the session under `key` (entries
/// archived by compactions and active ones, as appended), like [`read_page`]: the
/// canonical transcript of a session of any size, a bounded page at a time.
pub fn read_canonical_page(workspace: &str, key: &str, request: PageRequest) -> Operation<Page> {
    paged(workspace, key, request, true)
}

fn paged(workspace: &str, key: &str, request: PageRequest, canonical: bool) -> Operation<Page> {
    let parsed = validate::page(
        workspace,
        key,
        request.limit,
        request.cursor.as_deref(),
        16,
        "transcript",
    );
    let cursor = match parsed {
        Ok(cursor) => cursor,
        Err(e) => return Operation::failed(workspace, e),
    };
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, cursor) = (key.clone(), cursor.clone());
        async move { page(&io, &key, request.order, cursor, request.limit, canonical).await }
    })
}

async fn page(
    io: &Io,
    key: &str,
    order: Order,
    cursor: Option<Vec<u8>>,
    limit: u32,
    canonical: bool,
) -> OpResult<Page> {
    let loaded = require(io, key).await?;
    let whole = cursor.is_none();
    let (items, more) = crate::branch::history::page(
        io,
        &View::of(&loaded),
        canonical,
        order,
        cursor.as_deref(),
        limit as usize,
    )
    .await?;
    // A first page that is the whole transcript must hold every entry the record counts.
    if whole && !more {
        let active = items.iter().filter(|i| !i.archived).count();
        crate::branch::history::check_count(io, &loaded, active).await?;
    }
    crate::branch::history::confirm(io, &loaded).await?;
    let next_cursor = match (more, items.last()) {
        (true, Some(last)) => Some(validate::hex(&last.position)),
        _ => None,
    };
    Ok(Page {
        entries: items.into_iter().map(|i| i.entry).collect(),
        next_cursor,
    })
}

/// The number of entries in the transcript of the session under `key`.
pub fn count_entries(workspace: &str, key: &str) -> Operation<u64> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move { Ok(require(&io, &key).await?.session.entry_count) }
    })
}

/// The entry with `message_id` in the transcript of the session under `key`, or `None`.
pub fn get_entry(workspace: &str, key: &str, message_id: &str) -> Operation<Option<Entry>> {
    check!(
        workspace,
        validate::keyed(workspace, key).and_then(|()| validate::id("message_id", message_id))
    );
    let (key, message_id) = (key.to_owned(), message_id.to_owned());
    Operation::new(workspace, move |io| {
        let (key, message_id) = (key.clone(), message_id.clone());
        async move {
            let loaded = require(&io, &key).await?;
            let found =
                crate::branch::history::locate(&io, &View::of(&loaded), &message_id).await?;
            crate::branch::history::confirm(&io, &loaded).await?;
            Ok(found.map(|i| i.entry))
        }
    })
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
    cut(
        workspace,
        key,
        Removal::KeepNewest(max_messages),
        expected_epoch,
        now_ms,
    )
}

/// What [`truncate`] and [`rollback`] remove.
#[derive(Clone, Copy)]
enum Removal {
    /// Everything but the newest `n` entries.
    KeepNewest(u64),
    /// The last `n` turns.
    DropTurns(u64),
}

/// The operation of [`truncate`] and [`rollback`]: the same checks, the same fenced
/// load, then the cut.
fn cut(
    workspace: &str,
    key: &str,
    cut: Removal,
    expected_epoch: Option<u64>,
    now_ms: u64,
) -> Operation<TruncateOutcome> {
    let (field, count) = match cut {
        Removal::KeepNewest(n) => ("max_messages", n),
        Removal::DropTurns(n) => ("turns", n),
    };
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| validate::count(field, count))
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            crate::session::fence(&loaded, expected_epoch)?;
            match cut {
                Removal::KeepNewest(n) => truncate_body(&io, &key, loaded, n, now_ms).await,
                Removal::DropTurns(n) => rollback_body(&io, &key, loaded, n, now_ms).await,
            }
        }
    })
}

async fn truncate_body(
    io: &Io,
    key: &str,
    mut loaded: Loaded,
    max_messages: u64,
    now_ms: u64,
) -> OpResult<TruncateOutcome> {
    let before = loaded.session.entry_count;
    if before <= max_messages {
        return Ok(TruncateOutcome {
            truncated: false,
            before_count: before,
            after_count: before,
        });
    }
    let owned = IdentityBuf::of(&loaded);
    let identity = owned.get();
    let (data_id, session_id) = (identity.data_id, identity.session_id);
    let prefix = keys::entries(data_id);
    // What is archived (below the active start) stays.
    let start = active_start(&loaded);
    let mut batch = Batch::default();
    // Branches that read these entries get their own copy before any goes.
    let mut done = BTreeSet::from([key.to_owned()]);
    crate::branch::history::release(io, &mut batch, identity, &mut done).await?;
    let mut removed = 0u64;
    if loaded.base.is_empty() {
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
        let doomed = KeyRange { start, end };
        for kv in crate::session::read_all(io, doomed.clone()).await? {
            let entry = decode_entry(&kv.key, &kv.value, Some(session_id))?;
            batch.delete(keys::message(data_id, &entry.message_id));
            removed += 1;
        }
        batch.delete_range(doomed);
    } else {
        // A branch truncating its shared history: it takes its own copy, then cuts it
        // like its own transcript.
        let items = crate::branch::history::items(io, &View::of(&loaded), false, None).await?;
        let keep = usize::try_from(max_messages)
            .unwrap_or(usize::MAX)
            .min(items.len());
        let cut = items.len() - keep;
        crate::branch::history::materialize(io, &mut batch, &loaded, &loaded.base, &done).await?;
        loaded.base.clear();
        for item in &items[..cut] {
            batch.delete(keys::message(data_id, &item.entry.message_id));
            removed += 1;
        }
        let end = match items.get(cut) {
            Some(first_kept) => Some(keys::entry_at(data_id, &first_kept.position)),
            None => prefix_end(&prefix),
        };
        batch.delete_range(KeyRange { start, end });
    }
    let mut updated = loaded.session.clone();
    updated.entry_count = before.saturating_sub(removed);
    updated.updated_at = now_ms;
    write_update(&mut batch, &loaded, &updated)?;
    io.commit(batch).await?;
    Ok(TruncateOutcome {
        truncated: removed > 0,
        before_count: before,
        after_count: updated.entry_count,
    })
}

/// Drops the last `turns` turns of the session under `key`: every entry from the
/// earliest of its last `turns` user messages on (like Codex's `thread/rollback`). A
/// transcript with fewer user messages loses every entry from its first user message
/// on; `turns: 0` changes nothing. Entry ids are never reused: the next append still
/// follows the highest id the session ever had.
pub fn rollback(
    workspace: &str,
    key: &str,
    turns: u64,
    expected_epoch: Option<u64>,
    now_ms: u64,
) -> Operation<TruncateOutcome> {
    cut(
        workspace,
        key,
        Removal::DropTurns(turns),
        expected_epoch,
        now_ms,
    )
}

/// Removes the newest entry of the session under `key` in one commit and returns it;
/// `None` (and nothing written) when its transcript has no entry. What the newest entry
/// is: the last of [`read_page`]'s newest-first order, a branch's own or, when it has
/// none, the last it shares (the branch then takes its own copy of the shared history,
/// as [`rollback`] does). Entry ids are never reused.
pub fn pop_entry(
    workspace: &str,
    key: &str,
    expected_epoch: Option<u64>,
    now_ms: u64,
) -> Operation<Option<Entry>> {
    check!(
        workspace,
        validate::now_ms(now_ms).and_then(|()| validate::keyed(workspace, key))
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            crate::session::fence(&loaded, expected_epoch)?;
            let (_, mut removed) = drop_tail(&io, &key, loaded, Tail::Entries(1), now_ms).await?;
            Ok(removed.pop())
        }
    })
}

/// Where [`drop_tail`] stops, counting from the newest entry.
#[derive(Clone, Copy)]
enum Tail {
    /// At the `n`-th user message from the end (the last `n` turns).
    Turns(u64),
    /// After `n` entries.
    Entries(u64),
}

/// The first key of the active entries of the identity of `loaded`: its entries below
/// the active start are archived.
fn active_start(loaded: &Loaded) -> Vec<u8> {
    match loaded.active_from {
        Some((at, id)) => keys::entry(loaded.data_id(), at, id),
        None => keys::entries(loaded.data_id()),
    }
}

async fn rollback_body(
    io: &Io,
    key: &str,
    loaded: Loaded,
    turns: u64,
    now_ms: u64,
) -> OpResult<TruncateOutcome> {
    let (outcome, _) = drop_tail(io, key, loaded, Tail::Turns(turns), now_ms).await?;
    Ok(outcome)
}

/// Deletes the newest entries of the session of `loaded` up to where `tail` stops, in one
/// commit; returns the outcome and the entries removed, newest first. A transcript that
/// ends before the tail's `n`-th stop loses what lies up to its oldest stop (for turns:
/// from the first user message on); one with no stop, nothing.
async fn drop_tail(
    io: &Io,
    key: &str,
    mut loaded: Loaded,
    tail: Tail,
    now_ms: u64,
) -> OpResult<(TruncateOutcome, Vec<Entry>)> {
    let before = loaded.session.entry_count;
    let unchanged = TruncateOutcome {
        truncated: false,
        before_count: before,
        after_count: before,
    };
    let (Tail::Turns(limit) | Tail::Entries(limit)) = tail;
    if limit == 0 {
        return Ok((unchanged, Vec::new()));
    }
    // For each entry, newest first: whether the tail may end after it, and whether this
    // is the `limit`-th place it may end at (where it does).
    let mut stops = 0u64;
    let mut ends_after = |entry: &Entry| {
        let stop = match tail {
            Tail::Turns(_) => entry.role == crate::types::Role::User,
            Tail::Entries(_) => true,
        };
        stops += u64::from(stop);
        (stop, stops == limit)
    };
    let owned = IdentityBuf::of(&loaded);
    let identity = owned.get();
    let (data_id, session_id) = (identity.data_id, identity.session_id);
    let mut batch = Batch::default();
    let mut done = BTreeSet::from([key.to_owned()]);
    // Newest first: entries up to and including the `turns`-th user message from the end.
    let mut doomed: Vec<(Vec<u8>, Entry)> = Vec::new();
    let mut cut = None;
    if loaded.base.is_empty() {
        let mut end = prefix_end(&keys::entries(data_id));
        'pages: loop {
            let page = io
                .range(RangeQuery {
                    range: KeyRange {
                        start: active_start(&loaded),
                        end: end.clone(),
                    },
                    limit: validate::MAX_PAGE,
                    reverse: true,
                })
                .await?;
            let Some(last) = page.last() else { break };
            end = Some(last.key.clone());
            for kv in page {
                let entry = decode_entry(&kv.key, &kv.value, Some(session_id))?;
                let (stop, last) = ends_after(&entry);
                doomed.push((kv.key, entry));
                if stop {
                    cut = Some(doomed.len());
                    if last {
                        break 'pages;
                    }
                }
            }
        }
    } else {
        // A branch rolling back into its shared history takes its own copy first.
        let items = crate::branch::history::items(io, &View::of(&loaded), false, None).await?;
        crate::branch::history::materialize(io, &mut batch, &loaded, &loaded.base, &done).await?;
        loaded.base.clear();
        for item in items.into_iter().rev() {
            let entry_key = keys::entry_at(data_id, &item.position);
            let (stop, last) = ends_after(&item.entry);
            doomed.push((entry_key, item.entry));
            if stop {
                cut = Some(doomed.len());
                if last {
                    break;
                }
            }
        }
    }
    let Some(cut) = cut else {
        return Ok((unchanged, Vec::new()));
    };
    doomed.truncate(cut);
    crate::branch::history::release(io, &mut batch, identity, &mut done).await?;
    for (entry_key, entry) in &doomed {
        batch.delete(keys::message(data_id, &entry.message_id));
        batch.delete(entry_key.clone());
    }
    let removed = u64::try_from(doomed.len()).unwrap_or(u64::MAX);
    let mut updated = loaded.session.clone();
    updated.entry_count = before.saturating_sub(removed);
    updated.updated_at = now_ms;
    write_update(&mut batch, &loaded, &updated)?;
    io.commit(batch).await?;
    let outcome = TruncateOutcome {
        truncated: true,
        before_count: before,
        after_count: updated.entry_count,
    };
    Ok((
        outcome,
        doomed.into_iter().map(|(_, entry)| entry).collect(),
    ))
}
