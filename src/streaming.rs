//! Entries written while they stream: a model's answer kept durably as it arrives, so a
//! closed tab, a killed process or a dropped connection loses nothing that arrived.
//!
//! - [`begin_entry`] appends an entry `in_progress` (usually empty). A session has at
//!   most one entry in progress per turn (`turn_id`; entries of no turn count as one
//!   turn): a second one of the same turn is a `conflict`. Beginning an entry of
//!   another turn first marks those left in progress by other turns `incomplete`
//!   (`stop_reason` `interrupted`): their writer went away.
//! - [`update_entry`] replaces what the entry holds so far (`content`, `reasoning`,
//!   `tool_calls`: the accumulated snapshot, never a delta). The host picks the cadence
//!   (every 250 ms or 1 KiB, say): each update is one durable commit that writes the
//!   entry's record only, so its cost is the bytes it writes, not the session's size.
//! - [`settle_entry`] completes it (`status` absent), with its final snapshot and its
//!   usage; [`abort_entry`] stops it, `incomplete` with a `stop_reason`, keeping what
//!   arrived and the usage the provider reported, if any. Usage is counted in the
//!   session's totals once, then: never while the entry is in progress.
//!
//! An entry in progress is read like any other, with its status. Every call takes an
//! optional `expected_epoch`: a writer from before a reset gets `stale_epoch`, and an
//! update racing a reset or another writer of the same entry fails its commit's
//! precondition on the entry record. The entries in progress of an identity are listed
//! under `S · data_id · turn_id` (their message id and position), so the calls find
//! them with one small range read.
//!
//! What a provider is sent ([`replay_safe`]) and what compaction reads treat an entry
//! that is not complete as the live edge of the conversation: see there.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::{Loaded, require, write_update};
use crate::storage::entry_record::{decode_entry, encode_entry};
use crate::storage::keys;
use crate::storage::{Batch, KeyRange, RangeQuery};
use crate::transcript::{account, check_append, check_epoch, check_usage};
use crate::types::{AppendRequest, Entry, EntryStatus, Role, ToolStatus, TurnUsage};

/// What an update, a settle or an abort gives an entry in progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EntryUpdate {
    /// The entry's message id ([`begin_entry`] returned it).
    pub message_id: String,
    /// The whole content so far (absent: unchanged).
    #[serde(default)]
    pub content: Option<String>,
    /// The whole reasoning so far (absent: unchanged).
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The tool calls so far (absent: unchanged).
    #[serde(default)]
    pub tool_calls: Option<Value>,
    /// The model's usage (settle and abort only: counted once, then).
    #[serde(default)]
    pub turn_usage: Option<TurnUsage>,
    /// The writer's token count (settle and abort only).
    #[serde(default)]
    pub token_count: Option<u64>,
    /// Why it stopped (abort only; `aborted` when absent).
    #[serde(default)]
    pub reason: Option<String>,
    /// Fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub expected_epoch: Option<u64>,
}

/// The `stop_reason` of an entry an entry of another turn found in progress.
pub const INTERRUPTED: &str = "interrupted";
/// The `stop_reason` of an abort that gave none.
pub const ABORTED: &str = "aborted";

/// Where an entry in progress is, as its `S` record holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Marker {
    message_id: String,
    turn_id: String,
    created_at: u64,
    id: u64,
}

/// Appends `request` as an entry in progress of the session under `key` (its
/// `turn_usage` must be absent: usage is counted when the entry settles).
pub fn begin_entry(
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
            .and_then(|()| match request.turn_usage {
                Some(_) => Err(Error::invalid(
                    "turn_usage",
                    "is given when the entry settles or aborts (usage is counted once)",
                )),
                None => Ok(()),
            })
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, request) = (key.clone(), request.clone());
        async move { begin(&io, &key, request, now_ms).await }
    })
}

/// Replaces what the entry in progress holds so far.
pub fn update_entry(
    workspace: &str,
    key: &str,
    update: EntryUpdate,
    now_ms: u64,
) -> Operation<Entry> {
    change(workspace, key, update, now_ms, Change::Update)
}

/// Completes the entry in progress with its final snapshot and usage.
pub fn settle_entry(
    workspace: &str,
    key: &str,
    update: EntryUpdate,
    now_ms: u64,
) -> Operation<Entry> {
    change(workspace, key, update, now_ms, Change::Settle)
}

/// Stops the entry in progress: `incomplete`, with its reason, keeping what arrived.
pub fn abort_entry(
    workspace: &str,
    key: &str,
    update: EntryUpdate,
    now_ms: u64,
) -> Operation<Entry> {
    change(workspace, key, update, now_ms, Change::Abort)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Update,
    Settle,
    Abort,
}

fn check_update(update: &EntryUpdate, change: Change) -> Result<(), Error> {
    validate::id("message_id", &update.message_id)?;
    if let Some(content) = &update.content {
        validate::content(content)?;
    }
    if let Some(reasoning) = &update.reasoning {
        validate::text("reasoning", reasoning, validate::MAX_CONTENT_BYTES)?;
    }
    if let Some(calls) = &update.tool_calls {
        validate::tool_calls(calls)?;
    }
    if let Some(usage) = &update.turn_usage {
        check_usage(usage)?;
    }
    if let Some(tokens) = update.token_count {
        validate::count("token_count", tokens)?;
    }
    if let Some(reason) = &update.reason {
        validate::text("reason", reason, validate::MAX_PATH_BYTES)?;
    }
    let refuse = |field: &'static str, when: &str| Err(Error::invalid(field, when.to_owned()));
    match change {
        Change::Update if update.turn_usage.is_some() || update.token_count.is_some() => refuse(
            "turn_usage",
            "is given when the entry settles or aborts (usage is counted once)",
        ),
        Change::Update | Change::Settle if update.reason.is_some() => {
            refuse("reason", "is given only when the entry aborts")
        }
        _ => Ok(()),
    }
}

fn change(
    workspace: &str,
    key: &str,
    update: EntryUpdate,
    now_ms: u64,
    change: Change,
) -> Operation<Entry> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| check_update(&update, change))
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, update) = (key.clone(), update.clone());
        async move { apply(&io, &key, update, now_ms, change).await }
    })
}

/// The entries in progress of `loaded`'s identity: each marker's key and what it holds.
async fn markers(io: &Io, loaded: &Loaded) -> Result<Vec<(Vec<u8>, Marker)>, Error> {
    let kvs = io
        .range(RangeQuery {
            range: KeyRange::prefix(&keys::identity(keys::IN_PROGRESS, loaded.data_id())),
            limit: u32::MAX,
            reverse: false,
        })
        .await?;
    kvs.into_iter()
        .map(|kv| {
            let marker =
                crate::record::from_json::<Marker>(&kv.value).map_err(|e| Error::Corruption {
                    key: keys::display(&kv.key),
                    detail: e.to_string(),
                })?;
            Ok((kv.key, marker))
        })
        .collect()
}

/// The entry a marker points at: its key, its stored bytes and the entry.
async fn marked(
    io: &Io,
    loaded: &Loaded,
    marker: &Marker,
) -> Result<(Vec<u8>, Vec<u8>, Entry), Error> {
    let data_id = loaded.data_id();
    let key = keys::entry(data_id, marker.created_at, marker.id);
    let bytes = io
        .get(key.clone())
        .await?
        .ok_or_else(|| Error::Corruption {
            key: keys::display(&key),
            detail: format!(
                "the entry in progress `{}` is not in the transcript",
                marker.message_id
            ),
        })?;
    let entry = decode_entry(&key, &bytes, Some(loaded.identity().session_id))?;
    Ok((key, bytes, entry))
}

/// Stages `entry` (read as `bytes` under `key`) rewritten, guarded by its record.
fn rewrite(
    batch: &mut Batch,
    loaded: &Loaded,
    key: Vec<u8>,
    bytes: Vec<u8>,
    entry: &Entry,
) -> Result<(), Error> {
    batch.require_equals(key.clone(), bytes);
    batch.put(
        key,
        encode_entry(entry, Some(loaded.identity().session_id))?,
    );
    Ok(())
}

async fn begin(io: &Io, key: &str, request: AppendRequest, now_ms: u64) -> OpResult<Entry> {
    let loaded = require(io, key).await?;
    check_epoch(key, &loaded.session, request.expected_epoch)?;
    let turn = request.turn_id.clone().unwrap_or_default();
    let mut batch = Batch::default();
    for (marker_key, marker) in markers(io, &loaded).await? {
        if marker.turn_id == turn {
            return Err(Error::Conflict {
                reason: format!(
                    "entry `{}` of {} is in progress: settle or abort it first",
                    marker.message_id,
                    if turn.is_empty() {
                        "no turn".to_owned()
                    } else {
                        format!("turn `{turn}`")
                    }
                ),
            }
            .into());
        }
        // Another turn's entry left in progress: its writer went away.
        let (entry_key, bytes, mut entry) = marked(io, &loaded, &marker).await?;
        entry.status = Some(EntryStatus::Incomplete);
        entry.stop_reason = Some(INTERRUPTED.to_owned());
        rewrite(&mut batch, &loaded, entry_key, bytes, &entry)?;
        batch.delete(marker_key);
    }
    let mut updated = loaded.session.clone();
    let mut staged = crate::transcript::stage_appends_as(
        io,
        key,
        &loaded,
        &mut updated,
        vec![request],
        now_ms,
        Some(EntryStatus::InProgress),
    )
    .await?;
    let entry = staged
        .entries()
        .last()
        .cloned()
        .ok_or_else(|| Error::internal("a begin staged no entry"))?;
    let marker = Marker {
        message_id: entry.message_id.clone(),
        turn_id: turn.clone(),
        created_at: entry.created_at,
        id: entry.id,
    };
    let marker_key = keys::in_progress(loaded.data_id(), &turn);
    batch.require_absent(marker_key.clone());
    batch.put(
        marker_key,
        serde_json::to_vec(&marker).map_err(|e| Error::internal(e.to_string()))?,
    );
    // After the staged entry's own records (their preconditions keep their places).
    staged.batch_mut().extend(batch);
    crate::transcript::commit_appends(io, key, &loaded, &updated, staged).await?;
    Ok(entry)
}

async fn apply(
    io: &Io,
    key: &str,
    update: EntryUpdate,
    now_ms: u64,
    change: Change,
) -> OpResult<Entry> {
    let loaded = require(io, key).await?;
    check_epoch(key, &loaded.session, update.expected_epoch)?;
    let found = markers(io, &loaded)
        .await?
        .into_iter()
        .find(|(_, m)| m.message_id == update.message_id);
    let Some((marker_key, marker)) = found else {
        return Err(not_in_progress(io, &loaded, key, &update.message_id)
            .await?
            .into());
    };
    let (entry_key, bytes, mut entry) = marked(io, &loaded, &marker).await?;
    if let Some(content) = update.content {
        entry.content = content;
    }
    if let Some(reasoning) = update.reasoning {
        entry.reasoning = Some(reasoning);
    }
    if let Some(calls) = update.tool_calls {
        entry.tool_calls = Some(calls);
    }
    let mut batch = Batch::default();
    if change == Change::Update {
        rewrite(&mut batch, &loaded, entry_key, bytes, &entry)?;
        io.commit(batch).await?;
        return Ok(entry);
    }
    entry.turn_usage = update.turn_usage;
    entry.token_count = update.token_count.or(entry.token_count);
    (entry.status, entry.stop_reason) = match change {
        Change::Abort => (
            Some(EntryStatus::Incomplete),
            Some(update.reason.unwrap_or_else(|| ABORTED.to_owned())),
        ),
        _ => (None, None),
    };
    let mut session = loaded.session.clone();
    account(&mut session, &entry);
    session.updated_at = session.updated_at.max(now_ms);
    write_update(&mut batch, &loaded, &session)?;
    rewrite(&mut batch, &loaded, entry_key, bytes, &entry)?;
    batch.delete(marker_key);
    io.commit(batch).await?;
    Ok(entry)
}

/// Why `message_id` cannot be changed: it is complete, incomplete, or not there.
async fn not_in_progress(
    io: &Io,
    loaded: &Loaded,
    key: &str,
    message_id: &str,
) -> Result<Error, Error> {
    let position =
        crate::branch::history::indexed_position(io, loaded.identity(), message_id).await?;
    let Some(position) = position else {
        return Ok(Error::NotFound {
            what: "entry",
            key: format!("{key} / {message_id}"),
        });
    };
    let entry_key = keys::entry_at(loaded.data_id(), &position);
    let status = match io.get(entry_key.clone()).await? {
        Some(bytes) => decode_entry(&entry_key, &bytes, Some(loaded.identity().session_id))?.status,
        None => None,
    };
    Ok(Error::Conflict {
        reason: format!(
            "entry `{message_id}` is not in progress: it is {}",
            match status {
                Some(EntryStatus::Incomplete) => "incomplete",
                _ => "complete",
            }
        ),
    })
}

/// What may be sent to a model provider of `entries` (a transcript in order): the rule
/// every view a host replays follows, so an interrupted answer never breaks the next
/// call.
///
/// - An entry that is not complete (in progress or incomplete) keeps what arrived, but
///   a tool call of it without a `tool` entry answering it (by `tool_call_id`) later in
///   `entries` is closed by a synthetic `tool` entry right after it: `cancelled`, its
///   content `[tool call not run: the answer stopped (<stop reason>)]`.
/// - An assistant entry with no content and no tool calls (an answer that stopped
///   before its first token) is left out.
///
/// Everything else passes as it is, in order.
pub fn replay_safe(entries: &[Entry]) -> Vec<Entry> {
    let answered: std::collections::BTreeSet<&str> = entries
        .iter()
        .filter(|e| e.role == Role::Tool)
        .filter_map(|e| e.tool_call_id.as_deref())
        .collect();
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let calls = tool_call_ids(e);
        if e.role == Role::Assistant && e.content.trim().is_empty() && calls.is_empty() {
            continue;
        }
        out.push(e.clone());
        if e.status.is_none() {
            continue;
        }
        let why = e.stop_reason.as_deref().unwrap_or(match e.status {
            Some(EntryStatus::InProgress) => "in progress",
            _ => ABORTED,
        });
        for call in calls.into_iter().filter(|c| !answered.contains(c.as_str())) {
            let mut closed = Entry::from_request(
                AppendRequest {
                    tool_call_id: Some(call.clone()),
                    turn_id: e.turn_id.clone(),
                    tool_status: Some(ToolStatus::Cancelled),
                    ..AppendRequest::new(
                        Role::Tool,
                        format!("[tool call not run: the answer stopped ({why})]"),
                    )
                },
                e.id,
                format!("{}#closed-{call}", e.message_id),
                e.created_at,
            );
            closed.status = None;
            out.push(closed);
        }
    }
    out
}

/// [`replay_safe`] as a call of the operation table (so every host has it): reads and
/// writes nothing.
pub fn replay_safe_call(workspace: &str, entries: Vec<Entry>) -> Operation<Vec<Entry>> {
    check!(workspace, validate::workspace(workspace));
    Operation::new(workspace, move |_io| {
        let safe = replay_safe(&entries);
        async move { Ok(safe) }
    })
}

/// The ids of an entry's tool calls (`id` of each call, in order).
fn tool_call_ids(entry: &Entry) -> Vec<String> {
    match &entry.tool_calls {
        Some(Value::Array(calls)) => calls
            .iter()
            .filter_map(|c| c.get("id").and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}
