//! The record layer (ARCHITECTURE.md, "Layers"): the session record (`Stored`, its
//! `Tail`, the `Layer`s a branch reads through), loading and writing it, reading a whole
//! range (`read_all`, `CHUNK` at a time) and the epoch fence; and the calls on records
//! alone: create, get, list by recency.

mod codec;
pub(crate) mod lifecycle;
pub(crate) mod states;

use serde::{Deserialize, Serialize};

use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange, Kv, RangeQuery, prefix_end};
use crate::types::{BranchLineage, ListFilter, Session, SessionList};

/// How many records one range read asks for when an operation walks a whole range.
pub(crate) const CHUNK: u32 = 1000;

/// Fails with `stale_epoch` when the writer read an older (or other) epoch.
pub(crate) fn fence(loaded: &Loaded, expected: Option<u64>) -> Result<(), Error> {
    match expected {
        Some(expected) if expected != loaded.session.epoch => Err(Error::StaleEpoch {
            key: loaded.session.key.clone(),
            expected,
            actual: loaded.session.epoch,
        }),
        _ => Ok(()),
    }
}

/// Every pair in `range`, read `CHUNK` at a time.
pub(crate) async fn read_all(io: &Io, range: KeyRange) -> Result<Vec<Kv>, Error> {
    let mut out: Vec<Kv> = Vec::new();
    let mut start = range.start.clone();
    loop {
        let chunk = io
            .range(RangeQuery {
                range: KeyRange {
                    start: start.clone(),
                    end: range.end.clone(),
                },
                limit: CHUNK,
                reverse: false,
            })
            .await?;
        let full = chunk.len() == CHUNK as usize;
        if let Some(last) = chunk.last() {
            start = last.key.clone();
            start.push(0);
        }
        out.extend(chunk);
        if !full {
            return Ok(out);
        }
    }
}

/// One identity a branched session reads, with the filter that gives its fork-time view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Layer {
    /// The identity whose entries (`e`, `x`, `m`) are read: the name of its keys, a
    /// minted data id or (identities created before record format 7) its session id.
    pub(crate) data_id: String,
    /// The session id of a minted identity (absent when `data_id` is the session id):
    /// its entries' generated message ids carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session_id: Option<String>,
    /// Only entries with ids up to this one.
    pub(crate) last_entry_id: u64,
    /// Only archive entries of compactions with an index below this.
    pub(crate) compactions: u64,
    /// Only positions strictly below this `(created_at, id)` (a fork before a message).
    #[serde(default)]
    pub(crate) before: Option<(u64, u64)>,
    /// Archived entries read as active ones (the canonical prefix of a fork before a
    /// message is the branch's transcript).
    #[serde(default)]
    pub(crate) flatten: bool,
    /// Whether the identity has a message-id index (format 2); otherwise lookups scan.
    #[serde(default)]
    pub(crate) indexed: bool,
}

impl Layer {
    /// The layer that reads identity `identity`, up to entry `last_entry_id` and
    /// compaction `compactions`, with no other filter.
    pub(crate) fn of(identity: Identity<'_>, last_entry_id: u64, compactions: u64) -> Layer {
        Layer {
            data_id: identity.data_id.to_owned(),
            session_id: (identity.data_id != identity.session_id)
                .then(|| identity.session_id.to_owned()),
            last_entry_id,
            compactions,
            before: None,
            flatten: false,
            indexed: false,
        }
    }

    /// The identity it reads.
    pub(crate) fn identity(&self) -> Identity<'_> {
        Identity {
            data_id: &self.data_id,
            session_id: self.session_id.as_deref().unwrap_or(&self.data_id),
        }
    }
}

/// What a session record stores besides the [`Session`]: for a branched session its
/// lineage and the shared history it reads (both omitted when empty), the identity's
/// entry clock and the active start. This build writes them binary (format 6, see
/// [`codec`]); this struct reads them from a JSON record of formats 1 to 5, one object
/// that holds the session's fields beside these (older records read with no lineage, no
/// base and no clock).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Stored {
    #[serde(default)]
    pub(crate) lineage: Option<BranchLineage>,
    #[serde(default)]
    pub(crate) base: Vec<Layer>,
    /// The entry clock: the `created_at` of the newest entry the identity ever held (0
    /// before its first), the least `created_at` of its next entry. Absent in records of
    /// formats before 4, and kept absent until the identity's next entry write derives it
    /// ([`crate::transcript::entry_clock`]).
    #[serde(default)]
    pub(crate) newest_entry_at: Option<u64>,
    /// Where the active transcript starts, from format 5 on: the position
    /// `(created_at, id)` of the first entry a compaction kept. Entries of the session's
    /// view below it (its own and those read through its base) are archived: canonical,
    /// not active. `None`: every entry of the view is active (entries archived by builds
    /// before format 5 live in the archive range `x` instead).
    #[serde(default)]
    pub(crate) active_from: Option<(u64, u64)>,
}

/// What a session record stores besides the [`Session`]: the parts a write keeps or
/// changes on purpose (see [`Stored`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tail<'a> {
    /// The minted data id that names the identity's keys (`None`: its session id).
    pub(crate) data_id: Option<&'a str>,
    pub(crate) lineage: &'a BranchLineage,
    pub(crate) base: &'a [Layer],
    pub(crate) newest_entry_at: Option<u64>,
    pub(crate) active_from: Option<(u64, u64)>,
}

impl<'a> Tail<'a> {
    /// The tail of a session with no lineage, no base and no history, whose next entry
    /// may take any time from `newest_entry_at` on, its keys named by `data_id`.
    pub(crate) fn fresh(data_id: Option<&'a str>, newest_entry_at: u64) -> Tail<'a> {
        const NONE: &BranchLineage = &BranchLineage {
            parent_session_key: None,
            spawn_depth: 0,
            forked_from_parent: false,
            fork_point: None,
            fork_count: 0,
        };
        Tail {
            data_id,
            lineage: NONE,
            base: &[],
            newest_entry_at: Some(newest_entry_at),
            active_from: None,
        }
    }

    /// The tail of `loaded` as read.
    pub(crate) fn of(loaded: &'a Loaded) -> Tail<'a> {
        Tail {
            data_id: loaded.data_id.as_deref(),
            lineage: &loaded.lineage,
            base: &loaded.base,
            newest_entry_at: loaded.newest_entry_at,
            active_from: loaded.active_from,
        }
    }
}

impl Stored {
    /// Encodes the record (format [`record::SESSION_FORMAT_VERSION`], see
    /// [`codec`]).
    pub(crate) fn encode(session: &Session, tail: Tail<'_>) -> Result<Vec<u8>, Error> {
        codec::encode(
            session,
            tail.data_id,
            (tail.lineage != &BranchLineage::default()).then_some(tail.lineage),
            tail.base,
            tail.newest_entry_at,
            tail.active_from,
        )
    }

    /// Encodes the record of a session that has no lineage, no base and no entries yet,
    /// its keys named by `data_id`.
    pub(crate) fn encode_fresh(session: &Session, data_id: Option<&str>) -> Result<Vec<u8>, Error> {
        Stored::encode(session, Tail::fresh(data_id, 0))
    }
}

/// A session record as read, with the exact bytes it was read from (the commit's
/// precondition: nobody changed it in between).
pub(crate) struct Loaded {
    pub(crate) session: Session,
    /// The minted data id that names its identity's keys (`None`: its session id, as for
    /// every identity created before record format 7).
    pub(crate) data_id: Option<String>,
    /// Its lineage (default for a session that was never branched).
    pub(crate) lineage: BranchLineage,
    /// The shared history it reads (empty unless branched and not yet materialized).
    pub(crate) base: Vec<Layer>,
    /// The entry clock, `None` in a record of a format before 4 (see [`Stored`]).
    pub(crate) newest_entry_at: Option<u64>,
    /// Where its active transcript starts (see [`Stored`]).
    pub(crate) active_from: Option<(u64, u64)>,
    pub(crate) bytes: Vec<u8>,
}

impl Loaded {
    /// The name of its identity's keys: its minted data id, or its session id.
    pub(crate) fn data_id(&self) -> &str {
        self.data_id.as_deref().unwrap_or(&self.session.session_id)
    }

    /// Its own identity: the data id naming its keys and its session id.
    pub(crate) fn identity(&self) -> Identity<'_> {
        Identity {
            data_id: self.data_id(),
            session_id: &self.session.session_id,
        }
    }

    /// The newest entry id it reads through its base (0 without one): its own
    /// identity's entries have the ids after it.
    pub(crate) fn inherited(&self) -> u64 {
        self.base.iter().map(|l| l.last_entry_id).max().unwrap_or(0)
    }
}

/// One identity's two names: `data_id` names its keys, `session_id` is the session it was
/// created for, which its entries' generated message ids (`{session_id}-{n}`) carry. The
/// two are the same for every identity created before record format 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity<'a> {
    pub(crate) data_id: &'a str,
    pub(crate) session_id: &'a str,
}

/// An [`Identity`] that owns its names: for a write that changes the [`Loaded`] it was
/// taken from.
pub(crate) struct IdentityBuf {
    data_id: String,
    session_id: String,
}

impl IdentityBuf {
    /// The identity of `loaded`.
    pub(crate) fn of(loaded: &Loaded) -> IdentityBuf {
        IdentityBuf {
            data_id: loaded.data_id().to_owned(),
            session_id: loaded.session.session_id.clone(),
        }
    }

    pub(crate) fn get(&self) -> Identity<'_> {
        Identity {
            data_id: &self.data_id,
            session_id: &self.session_id,
        }
    }
}

/// The shortest data id [`mint`] tries: a `~` and this many base-62 digits of the hash.
const MINTED_DIGITS: usize = 2;

/// The data-id registry entry for `session_id`: the first candidate id (`~` and the
/// first base-62 digits of a 64-bit FNV-1a hash of the session id, from
/// [`MINTED_DIGITS`] digits on) whose entry is absent or names this session id, with its
/// key and what it holds. With `live`, an entry of this session id whose identity is
/// retired (kept only for the branches that read it, `R · data_id`) counts as taken: a
/// new identity must not write into history its branches share. `None` when every
/// length is taken (the last, 11 digits, is the whole hash: only a session id with the
/// same 64-bit hash takes it). One read in the common case, one more per collision.
async fn registry_slot(
    io: &Io,
    session_id: &str,
    live: bool,
) -> Result<Option<(String, Vec<u8>, Option<Vec<u8>>)>, Error> {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let hash = session_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut id = String::from(keys::MINTED);
    let mut rest = hash;
    for len in 1..=11 {
        id.push(char::from(DIGITS[(rest % 62) as usize]));
        rest /= 62;
        if len < MINTED_DIGITS {
            continue;
        }
        let key = keys::data_id(&id);
        match io.get(key.clone()).await? {
            Some(owner) if owner != session_id.as_bytes() => {}
            Some(_) if live && io.get(keys::retired(&id)).await?.is_some() => {}
            held => return Ok(Some((id, key, held))),
        }
    }
    Ok(None)
}

/// Names the keys of a new identity for `session_id`: adds to `batch` its entry in the
/// data-id registry `D` ([`registry_slot`]) and returns the data id, or `None` to name
/// them by the session id (when every candidate is taken). An entry that already names
/// this session id for a live identity is kept (guarded): identities of one session id
/// share their keys, as identities named by their session id always did; a retired one
/// is passed over (a reset back to an earlier session id, while branches still read
/// that generation, starts empty). An entry goes only with the last of
/// its identity's keys (`branch::history::delete_identity`), so an id never names two
/// identities at once.
pub(crate) async fn mint(
    io: &Io,
    batch: &mut Batch,
    session_id: &str,
) -> Result<Option<String>, Error> {
    let Some((id, key, held)) = registry_slot(io, session_id, true).await? else {
        return Ok(None);
    };
    match held {
        None => {
            batch.require_absent(key.clone());
            batch.put(key, session_id.as_bytes().to_vec());
        }
        Some(owner) => {
            // Still that session id's, and still live when this commits.
            batch.require_equals(key, owner);
            batch.require_absent(keys::retired(&id));
        }
    }
    Ok(Some(id))
}

/// The name of the keys of identity `session_id` when no session record holds it (a
/// committed fork's child that may be gone): its minted data id when the registry has
/// one, else the session id (an identity created before record format 7, or one that is
/// gone).
pub(crate) async fn data_id_of(io: &Io, session_id: &str) -> Result<String, Error> {
    Ok(match registry_slot(io, session_id, false).await? {
        Some((id, _, Some(_))) => id,
        _ => session_id.to_owned(),
    })
}

/// The name of the keys of identity `session_id` in `workspace` of `storage`, for tests
/// that read raw keys ([`data_id_of`]).
#[cfg(test)]
pub(crate) fn data_id_in(
    storage: &impl crate::storage::Storage,
    workspace: &str,
    session_id: &str,
) -> String {
    let session_id = session_id.to_owned();
    let op = Operation::new(workspace, move |io| {
        let session_id = session_id.clone();
        async move { Ok(data_id_of(&io, &session_id).await?) }
    });
    crate::run(storage, op).expect("reads the data-id registry")
}

/// Decodes a session record (also a recency index value): binary from format 6 on,
/// JSON before.
pub(crate) fn decode(record_key: &[u8], bytes: Vec<u8>) -> Result<Loaded, Error> {
    let binary = [
        record::SESSION_FORMAT_VERSION,
        record::DATA_ID_FORMAT_VERSION,
    ];
    let (session, tail) = if bytes.first().is_some_and(|v| binary.contains(v)) {
        codec::decode(record_key, &bytes)?
    } else {
        let session: Session = record::decode(record_key, &bytes)?;
        let stored: Stored = record::decode(record_key, &bytes)?;
        let tail = codec::TailParts {
            data_id: None,
            lineage: stored.lineage,
            base: stored.base,
            newest_entry_at: stored.newest_entry_at,
            active_from: stored.active_from,
        };
        (session, tail)
    };
    Ok(Loaded {
        session,
        data_id: tail.data_id,
        lineage: tail.lineage.unwrap_or_default(),
        base: tail.base,
        newest_entry_at: tail.newest_entry_at,
        active_from: tail.active_from,
        bytes,
    })
}

/// Reads the session under `key`.
pub(crate) async fn load(io: &Io, key: &str) -> Result<Option<Loaded>, Error> {
    let record_key = keys::session(key);
    match io.get(record_key.clone()).await? {
        None => Ok(None),
        Some(bytes) => decode(&record_key, bytes).map(Some),
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
/// The lineage, shared base, active start and entry clock of `old` are kept as they are
/// in `old` (a caller that materialized the base clears `old.base` first). A write that
/// changes them uses [`write_record`].
pub(crate) fn write_update(batch: &mut Batch, old: &Loaded, new: &Session) -> Result<(), Error> {
    write_record(batch, old, new, Tail::of(old))
}

/// Like [`write_update`] for a write that added entries: `newest_entry_at` is the
/// identity's entry clock after them.
pub(crate) fn write_appended(
    batch: &mut Batch,
    old: &Loaded,
    new: &Session,
    newest_entry_at: u64,
) -> Result<(), Error> {
    let tail = Tail {
        newest_entry_at: Some(newest_entry_at),
        ..Tail::of(old)
    };
    write_record(batch, old, new, tail)
}

/// Like [`write_update`], with the stored tail given.
pub(crate) fn write_record(
    batch: &mut Batch,
    old: &Loaded,
    new: &Session,
    tail: Tail<'_>,
) -> Result<(), Error> {
    let record_key = keys::session(&new.key);
    let bytes = Stored::encode(new, tail)?;
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
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::keyed(workspace, key))
            .and_then(|()| validate::session_id(session_id))
    );
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
    validate::new_session_key(&key)?;
    let session = Session::new(&key, &session_id, now_ms);
    let record_key = keys::session(&session.key);
    let mut batch = Batch::default();
    let data_id = mint(io, &mut batch, &session_id).await?;
    let bytes = Stored::encode_fresh(&session, data_id.as_deref())?;
    batch.require_absent(record_key.clone());
    batch.put(record_key, bytes.clone());
    batch.put(keys::recency(session.updated_at, &session.key), bytes);
    io.commit(batch).await?;
    Ok(session)
}

/// The session under `key`, or `None`. Reads only.
pub fn get_session(workspace: &str, key: &str) -> Operation<Option<Session>> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move { Ok(load(&io, &key).await?.map(|l| l.session)) }
    })
}

/// The name the keys of the session under `key` carry (`None`: no session there): its
/// minted data id (record format 7), or its session id (an identity created before). One
/// read. For tools and tests that read raw storage.
pub fn session_data_id(workspace: &str, key: &str) -> Operation<Option<String>> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move { Ok(load(&io, &key).await?.map(|l| l.data_id().to_owned())) }
    })
}

/// Lists sessions, most recently updated first.
pub fn list_sessions(workspace: &str, limit: u32, cursor: Option<&str>) -> Operation<SessionList> {
    list_sessions_where(workspace, limit, cursor, ListFilter::default())
}

/// Lists the sessions that pass `filter`, most recently updated first. Walks the recency
/// index (whose entries carry the records) in chunks until the page is full.
pub fn list_sessions_where(
    workspace: &str,
    limit: u32,
    cursor: Option<&str>,
    filter: ListFilter,
) -> Operation<SessionList> {
    let parsed = validate::workspace(workspace)
        .and_then(|()| validate::limit(limit))
        .and_then(|()| cursor.map(|c| validate::unhex("cursor", c)).transpose());
    let cursor = match parsed {
        Ok(cursor) => cursor,
        Err(e) => return Operation::failed(workspace, e),
    };
    Operation::new(workspace, move |io| {
        let (cursor, filter) = (cursor.clone(), filter.clone());
        async move { list(&io, limit, cursor, &filter).await }
    })
}

async fn list(
    io: &Io,
    limit: u32,
    cursor: Option<Vec<u8>>,
    filter: &ListFilter,
) -> OpResult<SessionList> {
    let prefix = [keys::RECENCY];
    if let Some(c) = &cursor
        && !c.starts_with(&prefix)
    {
        return Err(Error::invalid("cursor", "not a session-list cursor").into());
    }
    let mut end = cursor.or_else(|| prefix_end(&prefix));
    let mut sessions = Vec::new();
    let mut last_key = None;
    loop {
        let chunk = io
            .range(RangeQuery {
                range: KeyRange {
                    start: prefix.to_vec(),
                    end: end.clone(),
                },
                limit: limit + 1,
                reverse: true,
            })
            .await?;
        let exhausted = chunk.len() <= limit as usize;
        for kv in chunk {
            let session = decode(&kv.key, kv.value)?.session;
            let wanted = filter
                .agent_id
                .as_ref()
                .is_none_or(|a| session.agent_id.as_ref() == Some(a))
                && filter.status.is_none_or(|s| s == session.status);
            end = Some(kv.key.clone());
            if !wanted {
                continue;
            }
            if sessions.len() == limit as usize {
                // One more match exists: the page is full and has a successor.
                return Ok(SessionList {
                    sessions,
                    next_cursor: last_key.map(|k: Vec<u8>| validate::hex(&k)),
                });
            }
            sessions.push(session);
            last_key = Some(kv.key);
        }
        if exhausted {
            return Ok(SessionList {
                sessions,
                next_cursor: None,
            });
        }
    }
}
