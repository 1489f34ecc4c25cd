//! Turns: one user request and everything the agent did for it (ARCHITECTURE.md, "Turns and
//! provider forks").
//!
//! A session identity records its turns in start order (`T · data_id · seq`, with a
//! turn-id index `U · data_id · turn_id`), so "latest turn" is one reverse range read.
//! A turn is `running` until it is `settled` or `interrupted`; at most one turn of a
//! session runs at a time, and that one is the session's **active** turn. Closing a turn
//! records its **boundary**: the position of the newest transcript entry at that moment,
//! which is what a fork through that turn copies up to. A turn also carries what the
//! provider needs to fork it: its provider turn id and an opaque provider binding (JSON).
//!
//! Turn writes are guarded by the session record (an append or a reset in between
//! restarts them), so a boundary is exact and a reset never gains a stray turn. Turns
//! belong to the identity: a reset or a delete removes them with the transcript.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::fence;
use crate::session::require;
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange, RangeQuery};
use crate::types::Order;

/// Where a turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnPhase {
    /// The agent is working on it.
    Running,
    /// Finished normally.
    Settled,
    /// Stopped before it finished.
    Interrupted,
}

pub use crate::types::Position;

/// One turn of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The turn id given by the writer (entries carry it as `turn_id`).
    pub turn_id: String,
    /// Start order within the session identity, from 1.
    pub seq: u64,
    /// The session key.
    pub session_key: String,
    /// The session identity the turn belongs to.
    pub session_id: String,
    /// Where the turn stands.
    pub phase: TurnPhase,
    /// The provider's id of this turn, once known.
    #[serde(default)]
    pub provider_turn_id: Option<String>,
    /// Opaque provider data needed to fork through this turn.
    #[serde(default)]
    pub provider_binding: Option<Value>,
    /// When it started.
    pub started_at: u64,
    /// When it settled or was interrupted.
    #[serde(default)]
    pub ended_at: Option<u64>,
    /// The newest transcript entry when the turn closed (`None`: running, or the
    /// transcript was empty).
    #[serde(default)]
    pub boundary: Option<Position>,
}

/// What to start a turn with. Unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTurn {
    /// The turn id (unique within the session identity).
    pub turn_id: String,
    /// The provider's id of the turn, if already known.
    #[serde(default)]
    pub provider_turn_id: Option<String>,
    /// Opaque provider binding, if already known.
    #[serde(default)]
    pub provider_binding: Option<Value>,
    /// When given, fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub expected_epoch: Option<u64>,
}

/// What to record when a turn closes; absent fields keep their values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseTurn {
    /// The provider's id of the turn.
    #[serde(default)]
    pub provider_turn_id: Option<String>,
    /// Opaque provider binding.
    #[serde(default)]
    pub provider_binding: Option<Value>,
    /// When given, fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub expected_epoch: Option<u64>,
}

/// The turns a session projection shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnSummary {
    /// The newest turn, whatever its phase.
    pub latest: Option<Turn>,
    /// The running turn, if any (then it is also the latest).
    pub active: Option<Turn>,
}

/// Which page of a session's turns [`list_turns`] reads. Every field is optional;
/// unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnPageRequest {
    /// Reading direction: `oldest_first` (start order, the default) or `newest_first`.
    #[serde(default)]
    pub order: Order,
    /// `next_cursor` of the previous page read in the same order.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size, 1 to [`crate::MAX_PAGE`]; [`DEFAULT_TURN_PAGE`] when absent.
    #[serde(default = "default_turn_page")]
    pub limit: u32,
}

/// The page size of a [`TurnPageRequest`] that names none.
pub const DEFAULT_TURN_PAGE: u32 = 100;

fn default_turn_page() -> u32 {
    DEFAULT_TURN_PAGE
}

impl Default for TurnPageRequest {
    fn default() -> Self {
        TurnPageRequest {
            order: Order::default(),
            cursor: None,
            limit: DEFAULT_TURN_PAGE,
        }
    }
}

/// A page of a session's turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnPage {
    /// The turns in the requested order.
    pub turns: Vec<Turn>,
    /// Cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// A turn as read, with its key and bytes (the precondition of a write back).
pub(crate) struct LoadedTurn {
    pub(crate) turn: Turn,
    pub(crate) key: Vec<u8>,
    pub(crate) bytes: Vec<u8>,
}

/// Largest provider binding, in bytes of JSON.
const MAX_BINDING_BYTES: usize = 64 * 1024;

fn check_provider(provider_turn_id: Option<&str>, binding: Option<&Value>) -> Result<(), Error> {
    if let Some(id) = provider_turn_id {
        validate::id("provider_turn_id", id)?;
    }
    if let Some(binding) = binding {
        let size = binding.to_string().len();
        if size > MAX_BINDING_BYTES {
            return Err(Error::invalid(
                "provider_binding",
                format!("is {size} bytes as JSON; the limit is {MAX_BINDING_BYTES}"),
            ));
        }
    }
    Ok(())
}

/// The turn `turn_id` of a session identity.
pub(crate) async fn load_turn(
    io: &Io,
    session_id: &str,
    turn_id: &str,
) -> Result<Option<LoadedTurn>, Error> {
    let index_key = keys::turn_id(session_id, turn_id);
    let Some(seq) = io.get(index_key.clone()).await? else {
        return Ok(None);
    };
    let seq = keys::read_u64(&seq, 0)
        .map(|(seq, _)| seq)
        .ok_or_else(|| Error::Corruption {
            key: keys::display(&index_key),
            detail: "not a turn number".into(),
        })?;
    let key = keys::turn(session_id, seq);
    match io.get(key.clone()).await? {
        Some(bytes) => Ok(Some(LoadedTurn {
            turn: record::decode(&key, &bytes)?,
            key,
            bytes,
        })),
        None => Err(Error::Corruption {
            key: keys::display(&index_key),
            detail: format!("indexes turn {seq}, which is missing"),
        }),
    }
}

/// The newest turn of a session identity.
pub(crate) async fn latest_turn(io: &Io, session_id: &str) -> Result<Option<LoadedTurn>, Error> {
    let newest = io
        .range(RangeQuery {
            range: KeyRange::prefix(&keys::identity(keys::TURN, session_id)),
            limit: 1,
            reverse: true,
        })
        .await?;
    newest
        .into_iter()
        .next()
        .map(|kv| {
            Ok(LoadedTurn {
                turn: record::decode(&kv.key, &kv.value)?,
                key: kv.key,
                bytes: kv.value,
            })
        })
        .transpose()
}

/// The position of the newest entry of a session's canonical view — its own entries,
/// active or archived by compaction (which keeps positions), and those it reads through
/// its shared base — or `None` for an empty transcript.
pub(crate) async fn last_position(
    io: &Io,
    loaded: &crate::session::Loaded,
) -> Result<Option<Position>, Error> {
    let data_id = loaded.data_id();
    let mut last = None;
    for tag in [keys::ENTRY, keys::ARCHIVE] {
        let prefix = keys::identity(tag, data_id);
        let newest = io
            .range(RangeQuery {
                range: KeyRange::prefix(&prefix),
                limit: 1,
                reverse: true,
            })
            .await?;
        if let Some(kv) = newest.first() {
            last = last.max(Some(decode_position(&kv.key, data_id, prefix.len())?));
        }
    }
    if let Some(shared) = crate::branch::history::newest_in_base(io, &loaded.base).await? {
        last = last.max(Some(decode_position(&shared, "", 0)?));
    }
    Ok(last)
}

/// The `created_at · entry_id` position starting at `at` of `key`, in the form of
/// identity `data_id` (`""`: canonical).
fn decode_position(key: &[u8], data_id: &str, at: usize) -> Result<Position, Error> {
    let decoded = key
        .get(at..)
        .and_then(|suffix| keys::read_position(data_id, suffix));
    match decoded {
        Some((created_at, entry_id)) => Ok(Position {
            created_at,
            entry_id,
        }),
        None => Err(Error::Corruption {
            key: keys::display(key),
            detail: "not a transcript position".into(),
        }),
    }
}

/// Starts a turn of the session under `key`. Fails with `conflict` while another turn
/// runs or when the turn id is taken in this identity.
pub fn start_turn(workspace: &str, key: &str, request: NewTurn, now_ms: u64) -> Operation<Turn> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| validate::id("turn_id", &request.turn_id))
            .and_then(|()| {
                check_provider(
                    request.provider_turn_id.as_deref(),
                    request.provider_binding.as_ref(),
                )
            })
    );
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let (key, request) = (key.clone(), request.clone());
        async move { start(&io, &key, request, now_ms).await }
    })
}

async fn start(io: &Io, key: &str, request: NewTurn, now_ms: u64) -> OpResult<Turn> {
    let loaded = require(io, key).await?;
    fence(&loaded, request.expected_epoch)?;
    let data_id = loaded.data_id().to_owned();
    if load_turn(io, &data_id, &request.turn_id).await?.is_some() {
        return Err(Error::Conflict {
            reason: format!(
                "turn `{}` already exists in session `{key}`",
                request.turn_id
            ),
        }
        .into());
    }
    let latest = latest_turn(io, &data_id).await?;
    if let Some(running) = latest
        .as_ref()
        .filter(|l| l.turn.phase == TurnPhase::Running)
    {
        return Err(Error::Conflict {
            reason: format!(
                "turn `{}` of session `{key}` is still running; settle or interrupt it first",
                running.turn.turn_id
            ),
        }
        .into());
    }
    let turn = Turn {
        turn_id: request.turn_id,
        seq: latest.map_or(1, |l| l.turn.seq + 1),
        session_key: key.to_owned(),
        session_id: loaded.session.session_id.clone(),
        phase: TurnPhase::Running,
        provider_turn_id: request.provider_turn_id,
        provider_binding: request.provider_binding,
        started_at: now_ms,
        ended_at: None,
        boundary: None,
    };
    let mut batch = Batch::default();
    batch.require_equals(keys::session(key), loaded.bytes.clone());
    let turn_key = keys::turn(&data_id, turn.seq);
    let index_key = keys::turn_id(&data_id, &turn.turn_id);
    batch.require_absent(turn_key.clone());
    batch.require_absent(index_key.clone());
    batch.put(turn_key, record::encode(&turn)?);
    batch.put(index_key, turn.seq.to_be_bytes().to_vec());
    io.commit(batch).await?;
    Ok(turn)
}

/// Settles the running turn `turn_id`: records its boundary (the newest entry now) and
/// any provider ids given.
pub fn settle_turn(
    workspace: &str,
    key: &str,
    turn_id: &str,
    close: CloseTurn,
    now_ms: u64,
) -> Operation<Turn> {
    check!(workspace, validate::now_ms(now_ms));
    close_turn(workspace, key, turn_id, close, TurnPhase::Settled, now_ms)
}

/// Interrupts the running turn `turn_id` (like [`settle_turn`], phase `interrupted`).
pub fn interrupt_turn(
    workspace: &str,
    key: &str,
    turn_id: &str,
    close: CloseTurn,
    now_ms: u64,
) -> Operation<Turn> {
    check!(workspace, validate::now_ms(now_ms));
    close_turn(
        workspace,
        key,
        turn_id,
        close,
        TurnPhase::Interrupted,
        now_ms,
    )
}

fn close_turn(
    workspace: &str,
    key: &str,
    turn_id: &str,
    close: CloseTurn,
    phase: TurnPhase,
    now_ms: u64,
) -> Operation<Turn> {
    check!(
        workspace,
        validate::keyed(workspace, key)
            .and_then(|()| validate::id("turn_id", turn_id))
            .and_then(|()| {
                check_provider(
                    close.provider_turn_id.as_deref(),
                    close.provider_binding.as_ref(),
                )
            })
    );
    let (key, turn_id) = (key.to_owned(), turn_id.to_owned());
    Operation::new(workspace, move |io| {
        let (key, turn_id, close) = (key.clone(), turn_id.clone(), close.clone());
        async move {
            let loaded = require(&io, &key).await?;
            fence(&loaded, close.expected_epoch)?;
            let data_id = loaded.data_id();
            let Some(current) = load_turn(&io, data_id, &turn_id).await? else {
                return Err(not_found(&key, &turn_id).into());
            };
            if current.turn.phase != TurnPhase::Running {
                return Err(Error::Conflict {
                    reason: format!(
                        "turn `{turn_id}` of session `{key}` is not running (it is {})",
                        phase_name(current.turn.phase)
                    ),
                }
                .into());
            }
            let mut turn = current.turn.clone();
            turn.phase = phase;
            turn.ended_at = Some(now_ms);
            turn.boundary = last_position(&io, &loaded).await?;
            if close.provider_turn_id.is_some() {
                turn.provider_turn_id = close.provider_turn_id;
            }
            if close.provider_binding.is_some() {
                turn.provider_binding = close.provider_binding;
            }
            let mut batch = Batch::default();
            // An append in between would move the boundary: the session record guards it.
            batch.require_equals(keys::session(&key), loaded.bytes.clone());
            batch.require_equals(current.key.clone(), current.bytes.clone());
            batch.put(current.key, record::encode(&turn)?);
            io.commit(batch).await?;
            Ok(turn)
        }
    })
}

/// The name of a phase as stored.
pub(crate) fn phase_name(phase: TurnPhase) -> &'static str {
    match phase {
        TurnPhase::Running => "running",
        TurnPhase::Settled => "settled",
        TurnPhase::Interrupted => "interrupted",
    }
}

pub(crate) fn not_found(key: &str, turn_id: &str) -> Error {
    Error::NotFound {
        what: "turn",
        key: format!("{key}#{turn_id}"),
    }
}

/// The turn `turn_id` of the session under `key`, or `None`.
pub fn get_turn(workspace: &str, key: &str, turn_id: &str) -> Operation<Option<Turn>> {
    check!(
        workspace,
        validate::keyed(workspace, key).and_then(|()| validate::id("turn_id", turn_id))
    );
    let (key, turn_id) = (key.to_owned(), turn_id.to_owned());
    Operation::new(workspace, move |io| {
        let (key, turn_id) = (key.clone(), turn_id.clone());
        async move {
            let loaded = require(&io, &key).await?;
            Ok(load_turn(&io, loaded.data_id(), &turn_id)
                .await?
                .map(|l| l.turn))
        }
    })
}

/// The latest and the active turn of the session under `key`.
pub fn session_turns(workspace: &str, key: &str) -> Operation<TurnSummary> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            Ok(turns_of(&io, loaded.data_id()).await?)
        }
    })
}

/// One page of the turns of the session under `key`, in start order (`seq`) or its
/// reverse: the turns of its current identity, as [`get_turn`] and [`session_turns`]
/// see them. The cursor is the `seq` of the last turn of the previous page.
pub fn list_turns(workspace: &str, key: &str, request: TurnPageRequest) -> Operation<TurnPage> {
    let parsed = validate::page(
        workspace,
        key,
        request.limit,
        request.cursor.as_deref(),
        8,
        "turn-list",
    )
    .map(|cursor| {
        cursor
            .and_then(|c| <[u8; 8]>::try_from(c.as_slice()).ok())
            .map(u64::from_be_bytes)
    });
    let after = match parsed {
        Ok(after) => after,
        Err(e) => return Operation::failed(workspace, e),
    };
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            Ok(turn_page(&io, loaded.data_id(), request.order, after, request.limit).await?)
        }
    })
}

/// The turns of an identity after the turn numbered `after` in `order`, at most `limit`.
async fn turn_page(
    io: &Io,
    session_id: &str,
    order: Order,
    after: Option<u64>,
    limit: u32,
) -> Result<TurnPage, Error> {
    let prefix = keys::identity(keys::TURN, session_id);
    let mut range = KeyRange::prefix(&prefix);
    if let Some(seq) = after {
        let cursor = keys::turn(session_id, seq);
        match order {
            // The smallest key above the cursor's: its key with a zero byte appended.
            Order::OldestFirst => range.start = [cursor.as_slice(), &[0]].concat(),
            Order::NewestFirst => range.end = Some(cursor),
        }
    }
    let mut rows = io
        .range(RangeQuery {
            range,
            limit: limit + 1,
            reverse: order == Order::NewestFirst,
        })
        .await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let turns = rows
        .iter()
        .map(|kv| record::decode::<Turn>(&kv.key, &kv.value))
        .collect::<Result<Vec<_>, _>>()?;
    // The cursor is the last key's `seq` component, the position the next read starts
    // from (whatever the record inside says).
    let next_cursor = match (more, rows.last()) {
        (true, Some(last)) => Some(validate::hex(last.key.get(prefix.len()..).unwrap_or(&[]))),
        _ => None,
    };
    Ok(TurnPage { turns, next_cursor })
}

/// The latest and active turn of a session identity (one range read).
pub(crate) async fn turns_of(io: &Io, session_id: &str) -> Result<TurnSummary, Error> {
    let latest = latest_turn(io, session_id).await?.map(|l| l.turn);
    let active = latest.clone().filter(|t| t.phase == TurnPhase::Running);
    Ok(TurnSummary { latest, active })
}
