//! The key layout: every record's place in the ordered key space.
//!
//! Keys are tuples encoded so that bytewise order equals tuple order: a one-byte tag,
//! then components. A string is its UTF-8 bytes with `0x00` escaped as `0x00 0xff`,
//! ended by `0x00`; an integer is 8 bytes big-endian.
//!
//! An identity's records (the tags of [`IDENTITY_TAGS`]) are keyed by its `data_id`: for
//! an identity created from record format 7 on, a short id minted for it (`~` and two
//! or more base-62 characters, registered under `D`, see `session::mint`), and for one
//! created before, its session id. The position `created_at · entry_id` in an entry or
//! archive key of a minted identity takes each integer as its length then its
//! big-endian bytes without leading zeros ([`put_position`]). An entry key of a minted
//! identity with a two-digit id takes 1 + 4 + 10 bytes (tag, id and its terminator,
//! position) where one named by a 36-character session id takes 1 + 37 + 16.
//!
//! | tag | key | value |
//! |-----|-----|-------|
//! | `s` | `s · key` | session record |
//! | `r` | `r · updated_at · key` | copy of the session record (recency index) |
//! | `e` | `e · data_id · created_at · entry_id` | entry record |
//! | `m` | `m · data_id · message_id` | `created_at · entry_id` of the entry (message-id index; none for an entry holding its own generated id, see `branch::history::indexed_position`) |
//! | `c` | `c · key · state_id` | context state record (kept across resets, so keyed by key) |
//! | `x`, `y` | `x · data_id · …`, `y · data_id · …` | compaction archive (written before record format 5) and summaries |
//! | `j` | `j · data_id · compaction_index` | the positions `[from, to)` a compaction archived by moving the active start (`crate::compaction`) |
//! | `o`, `u`, `v` | role sessions, run records, per-token write counters | see [`crate::resume`](mod@crate::resume) |
//! | `d`, `p`, `w`, `z` | empty: indexes of `done` runs (all, by project, of live tokens, of tokens live in their project) | see [`crate::resume`](mod@crate::resume) |
//! | `q` | `q · key · index` | a degraded compaction waiting for repair (`crate::compaction`) |
//! | `b` | `b · data_id · holder_key` | empty: the session `holder_key` reads the entries of identity `data_id` through its shared base (see `branch/history.rs`) |
//! | `R` | `R · data_id` | a counter: identity `data_id` was deleted or reset while branches read it; its shared ranges stay until the last reader goes |
//! | `k` | `k · parent_key · child_key` | empty: lineage index, the sessions branched from `parent_key` |
//! | `T` | `T · data_id · seq` | turn record, in start order (`crate::turns`) |
//! | `U` | `U · data_id · turn_id` | `seq` of the turn (turn-id index) |
//! | `L` | `L · data_id` | fork lineage of a session created by a provider fork |
//! | `F` | `F · operation_id` | provider fork operation record (`crate::provider_fork`) |
//! | `G` | `G · request_id` | operation id (idempotency index) |
//! | `B` | `B · source_session_id · point` | operation id (turn barrier) |
//! | `K` | `K · target_key` | operation id (target reservation) |
//! | `A` | `A · operation_id` | empty (active operations, for restart recovery) |
//! | `P` | `P · source_session_id · operation_id` | empty: an active fork operation's frozen snapshot reads that identity (copy-on-destroy, see `crate::provider_fork`) |
//! | `Q` | `Q · operation_id · created_at · entry_id` | entry record: the frozen snapshot, copied before a write destroyed it in the source |
//! | `a` | `a · key · archived_at · session_id` | record of a committed reset's archive (kept after the session is deleted) |
//! | `D` | `D · data_id` | the session id a minted data id names (the data-id registry; removed with the identity's last records) |
//! | `I` | `I · data_id · bucket · run_first_id` | search index: a run of entries' terms of one bucket with their postings, or (bucket `0xff`) the run's doc table (`crate::search::index`) |
//! | `i` | `i · data_id · bucket · run_first_id` | the search index as builds before `I` wrote it: read by nothing, removed with its identity or its first `I` run |

/// Tag of session records.
pub const SESSION: u8 = b's';
/// Tag of the recency index.
pub const RECENCY: u8 = b'r';
/// Tag of transcript entries.
pub const ENTRY: u8 = b'e';
/// Tag of the message-id index.
pub const MESSAGE: u8 = b'm';
/// Tag of context states.
pub const STATE: u8 = b'c';
/// Tag of the canonical archive (entries moved out of the transcript by compaction).
pub const ARCHIVE: u8 = b'x';
/// Tag of compaction summaries.
pub const SUMMARY: u8 = b'y';
/// Tag of compaction boundaries (`j · data_id · compaction_index` → `from · to`).
pub const BOUNDARY: u8 = b'j';
/// Tag of shared-history back-references (who reads an identity's entries).
pub const HOLDER: u8 = b'b';
/// Tag of retired identities kept for their readers (`R · data_id` → counter).
pub const RETIRED: u8 = b'R';
/// Tag of the lineage index (children by parent key).
pub const CHILD: u8 = b'k';
/// Tag of turn records (`T · data_id · seq`).
pub const TURN: u8 = b'T';
/// Tag of the turn-id index (`U · data_id · turn_id` → seq).
pub const TURN_ID: u8 = b'U';
/// Tag of fork lineage records (`L · data_id`).
pub const LINEAGE: u8 = b'L';
/// Tag of provider fork operation records (`F · operation_id`).
pub const FORK_OPERATION: u8 = b'F';
/// Tag of the fork idempotency index (`G · request_id` → operation id).
pub const FORK_REQUEST: u8 = b'G';
/// Tag of the fork turn barrier (`B · source_session_id · point` → operation id).
pub const FORK_BARRIER: u8 = b'B';
/// Tag of fork target reservations (`K · target_key` → operation id).
pub const FORK_TARGET: u8 = b'K';
/// Tag of the active fork operations (`A · operation_id`), walked by restart recovery.
pub const FORK_ACTIVE: u8 = b'A';
/// Tag of fork snapshot pins (`P · source_session_id · operation_id`).
pub const FORK_PIN: u8 = b'P';
/// Tag of copied fork snapshots (`Q · operation_id · position` → entry).
pub const FORK_SNAPSHOT: u8 = b'Q';
/// Tag of the records of committed resets' archives (`a · key · archived_at · session_id`).
pub const RESET_ARCHIVE: u8 = b'a';
/// Tag of the repair queue of degraded compactions (`q · key · index`).
pub const REPAIR: u8 = b'q';
/// Tag of role sessions (`o · role_session_id`).
pub const ROLE: u8 = b'o';
/// Tag of external run records (`u · agent_type · token · project_id · task_id`).
pub const RUN: u8 = b'u';
/// Tag of the index of `done` runs (`d · agent_type · …`).
pub const RUN_DONE: u8 = b'd';
/// Tag of the index of `done` runs by project (`p · agent_type · project_id · …`).
pub const RUN_DONE_IN_PROJECT: u8 = b'p';
/// Tag of the index of `done` runs of live tokens (`w · agent_type · …`).
pub const RUN_LIVE: u8 = b'w';
/// Tag of the index of `done` runs of tokens live in their project (`z · …`).
pub const RUN_LIVE_IN_PROJECT: u8 = b'z';
/// Tag of per-token write counters (`v · agent_type · token`).
pub const RUN_TOKEN: u8 = b'v';
/// Tag of the search index (`I · data_id · bucket · run_first_id`). It sorts before
/// the entries (`e`): an identity's index records, values of up to a few KiB, are
/// never the neighbours of the keys appends add at the end of its entries, where
/// SQLite's page splits would move them (and their overflow pages) along.
pub const SEARCH_POSTINGS: u8 = b'I';
/// Tag of the data-id registry (`D · data_id` → the session id it was minted for).
pub const DATA_ID: u8 = b'D';
/// Tag of the search index as builds before it moved to [`SEARCH_POSTINGS`] wrote it
/// (`i`, same records): nothing reads it; it goes with its identity, and with the
/// first run written under the new tag (that identity's entries read as unindexed
/// until then, see `search::backfill`).
pub const SEARCH_POSTINGS_V1: u8 = b'i';

/// Tag of the entries in progress of a session identity (`S · data_id · turn_id` → the
/// entry's message id; the empty turn id for entries of no turn).
pub const IN_PROGRESS: u8 = b'S';

/// Every tag of the key space, each once: a new kind of record takes a tag not listed
/// here (the tests check no two kinds share one, and that no tag is declared elsewhere).
pub const TAGS: [u8; 34] = [
    SESSION,
    RECENCY,
    ENTRY,
    MESSAGE,
    STATE,
    ARCHIVE,
    SUMMARY,
    BOUNDARY,
    HOLDER,
    RETIRED,
    CHILD,
    TURN,
    TURN_ID,
    LINEAGE,
    FORK_OPERATION,
    FORK_REQUEST,
    FORK_BARRIER,
    FORK_TARGET,
    FORK_ACTIVE,
    FORK_PIN,
    FORK_SNAPSHOT,
    RESET_ARCHIVE,
    REPAIR,
    ROLE,
    RUN,
    RUN_DONE,
    RUN_DONE_IN_PROJECT,
    RUN_LIVE,
    RUN_LIVE_IN_PROJECT,
    RUN_TOKEN,
    SEARCH_POSTINGS,
    SEARCH_POSTINGS_V1,
    DATA_ID,
    IN_PROGRESS,
];
/// Tags of every record owned by one session identity (entries, message index, the
/// compaction summaries `y`, boundaries `j` and archive `x`, turns and their index, fork
/// lineage, the search index, the entries in progress): deleting an identity deletes
/// these ranges.
pub const IDENTITY_TAGS: [u8; 11] = [
    ENTRY,
    MESSAGE,
    ARCHIVE,
    SUMMARY,
    BOUNDARY,
    TURN,
    TURN_ID,
    LINEAGE,
    SEARCH_POSTINGS,
    SEARCH_POSTINGS_V1,
    IN_PROGRESS,
];

/// The ranges of an identity that sessions reading it through their base read (entries,
/// message index, archive, search index): a retired identity keeps these while it has
/// readers.
pub const SHARED_TAGS: [u8; 4] = [ENTRY, MESSAGE, ARCHIVE, SEARCH_POSTINGS];

/// Builds a tuple key.
#[derive(Debug, Clone)]
pub struct KeyBuf(Vec<u8>);

impl KeyBuf {
    /// Starts a key with `tag`.
    pub fn new(tag: u8) -> Self {
        KeyBuf(vec![tag])
    }

    /// Appends a string component.
    pub fn str(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        self.0.reserve(bytes.len() + 1);
        if bytes.contains(&0) {
            for &b in bytes {
                self.0.push(b);
                if b == 0 {
                    self.0.push(0xff);
                }
            }
        } else {
            self.0.extend_from_slice(bytes);
        }
        self.0.push(0);
        self
    }

    /// Appends an integer component.
    pub fn u64(mut self, n: u64) -> Self {
        self.0.extend_from_slice(&n.to_be_bytes());
        self
    }

    /// The encoded key.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Key of the session record under `key`.
pub fn session(key: &str) -> Vec<u8> {
    KeyBuf::new(SESSION).str(key).finish()
}

/// Key of the recency index entry of a session.
pub fn recency(updated_at: u64, key: &str) -> Vec<u8> {
    KeyBuf::new(RECENCY).u64(updated_at).str(key).finish()
}

/// Key of the record of the archive a committed reset of `key` kept.
pub fn reset_archive(key: &str, archived_at: u64, session_id: &str) -> Vec<u8> {
    KeyBuf::new(RESET_ARCHIVE)
        .str(key)
        .u64(archived_at)
        .str(session_id)
        .finish()
}

/// Prefix of the reset-archive records of `key`.
pub fn reset_archives(key: &str) -> Vec<u8> {
    KeyBuf::new(RESET_ARCHIVE).str(key).finish()
}

/// Prefix of every entry of a session identity.
pub fn entries(data_id: &str) -> Vec<u8> {
    KeyBuf::new(ENTRY).str(data_id).finish()
}

/// Key of one entry.
pub fn entry(data_id: &str, created_at: u64, id: u64) -> Vec<u8> {
    let mut key = entries(data_id);
    put_position(&mut key, data_id, created_at, id);
    key
}

/// An entry's position in its transcript, `created_at · entry_id`, in its canonical form:
/// the two integers as 8 bytes big-endian each. This is what positions are in memory,
/// what transcript cursors and the message-id index hold, and the key suffix of an entry
/// of an identity named by its session id. A minted identity ([`is_minted`]) stores the
/// same order in fewer bytes ([`put_position`]).
pub fn position(created_at: u64, id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    out.extend_from_slice(&created_at.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out
}

/// The first byte of every minted data id. Session ids are made of `[A-Za-z0-9._-]`
/// (`engine::validate`), so no minted id is ever a session id, and an identity named by
/// its session id (every identity created before record format 7) keeps its keys.
pub const MINTED: &str = "~";

/// Whether `data_id` is a minted data id (see `session::mint`) rather than a session id.
pub fn is_minted(data_id: &str) -> bool {
    data_id.starts_with(MINTED)
}

/// Appends the key suffix of position `(created_at, id)` in identity `data_id`: the
/// canonical 16 bytes ([`position`]) for an identity named by its session id; for a
/// minted one each integer as its length in bytes then its big-endian bytes without
/// leading zeros (0: the length 0 alone). Both keep bytewise order equal to position
/// order; the second takes 3 bytes for an id below 65,536 and 7 for a time in
/// milliseconds, where the first takes 16.
pub fn put_position(key: &mut Vec<u8>, data_id: &str, created_at: u64, id: u64) {
    if !is_minted(data_id) {
        key.extend_from_slice(&created_at.to_be_bytes());
        key.extend_from_slice(&id.to_be_bytes());
        return;
    }
    for n in [created_at, id] {
        let len = 8 - (n.leading_zeros() / 8) as usize;
        key.push(len as u8);
        key.extend_from_slice(&n.to_be_bytes()[8 - len..]);
    }
}

/// The key suffix, in identity `data_id`, of a position in canonical form: its first 16
/// bytes are the position, and bytes after them (a bound just past it, `· 0x00`) are kept
/// after its encoding, where they order the same way. Shorter bytes are returned as they
/// are.
pub fn suffix(data_id: &str, position: &[u8]) -> Vec<u8> {
    match position.split_at_checked(16) {
        Some((head, rest)) if is_minted(data_id) => {
            let (at, id) = split_position(head).unwrap_or_default();
            let mut out = Vec::with_capacity(10 + rest.len());
            put_position(&mut out, data_id, at, id);
            out.extend_from_slice(rest);
            out
        }
        _ => position.to_vec(),
    }
}

/// `(created_at, id)` of a position in canonical form, or `None` when it is not 16 bytes.
pub fn split_position(position: &[u8]) -> Option<(u64, u64)> {
    let (at, id) = position.split_first_chunk::<8>()?;
    let id: [u8; 8] = id.try_into().ok()?;
    Some((u64::from_be_bytes(*at), u64::from_be_bytes(id)))
}

/// `(created_at, id)` of the key suffix `suffix` of an entry of identity `data_id`, or
/// `None` when it is not one (a damaged key).
pub fn read_position(data_id: &str, suffix: &[u8]) -> Option<(u64, u64)> {
    parse_position(is_minted(data_id), suffix)
}

/// `(created_at, id)` of a key suffix in the compact form of a minted identity, or (not
/// `minted`) the canonical one.
fn parse_position(minted: bool, suffix: &[u8]) -> Option<(u64, u64)> {
    if !minted {
        return split_position(suffix);
    }
    let mut rest = suffix;
    let mut out = [0u64; 2];
    for n in &mut out {
        let (&len, tail) = rest.split_first()?;
        let len = usize::from(len);
        if len > 8 || tail.len() < len || tail.first() == Some(&0) && len > 0 {
            return None;
        }
        let mut be = [0u8; 8];
        be[8 - len..].copy_from_slice(&tail[..len]);
        *n = u64::from_be_bytes(be);
        rest = &tail[len..];
    }
    rest.is_empty().then_some((out[0], out[1]))
}

/// `(created_at, id)` of an entry record's key: `tag · name · position`, the position in
/// the form of identity `name` (an entry `e` or archive `x` key; a fork snapshot's `Q`,
/// named by its operation, holds canonical positions).
/// Reads no more than it must: every entry read decodes its key this way.
pub fn entry_position(key: &[u8]) -> Option<(u64, u64)> {
    let (&tag, name) = key.split_first()?;
    // The name's end: its `0x00` that is not an escaped one (`0x00 0xff`).
    let mut end = 0;
    loop {
        let at = end + name.get(end..)?.iter().position(|&b| b == 0)?;
        if name.get(at + 1) != Some(&0xff) {
            end = at + 1;
            break;
        }
        end = at + 2;
    }
    let minted = tag != FORK_SNAPSHOT && name.starts_with(MINTED.as_bytes());
    parse_position(minted, &name[end..])
}

/// Key of the data-id registry record of `data_id` (value: the session id it was minted
/// for).
pub fn data_id(data_id: &str) -> Vec<u8> {
    KeyBuf::new(DATA_ID).str(data_id).finish()
}

/// Key of the message-id index entry of `message_id` in an identity.
pub fn message(data_id: &str, message_id: &str) -> Vec<u8> {
    KeyBuf::new(MESSAGE).str(data_id).str(message_id).finish()
}

/// Prefix of every record with `tag` of a session identity.
pub fn identity(tag: u8, data_id: &str) -> Vec<u8> {
    KeyBuf::new(tag).str(data_id).finish()
}

/// Key of the boundary record of compaction `index` of an identity.
pub fn boundary(data_id: &str, index: u64) -> Vec<u8> {
    KeyBuf::new(BOUNDARY).str(data_id).u64(index).finish()
}

/// Key of the entry at `position` (canonical) of identity `data_id`.
pub fn entry_at(data_id: &str, position: &[u8]) -> Vec<u8> {
    let mut key = entries(data_id);
    key.extend_from_slice(&suffix(data_id, position));
    key
}

/// Key of an archived entry: the same position (canonical) as it had in the transcript.
pub fn archived(data_id: &str, position: &[u8]) -> Vec<u8> {
    let mut key = identity(ARCHIVE, data_id);
    key.extend_from_slice(&suffix(data_id, position));
    key
}

/// Key of the record of a retired identity kept for its readers.
pub fn retired(data_id: &str) -> Vec<u8> {
    KeyBuf::new(RETIRED).str(data_id).finish()
}

/// Prefix of the back-references to the entries of identity `data_id`.
pub fn holders(data_id: &str) -> Vec<u8> {
    KeyBuf::new(HOLDER).str(data_id).finish()
}

/// Key of the back-reference saying that `holder_key` reads the entries of `data_id`.
pub fn holder(data_id: &str, holder_key: &str) -> Vec<u8> {
    KeyBuf::new(HOLDER).str(data_id).str(holder_key).finish()
}

/// Prefix of the lineage index entries of the children of `parent_key`.
pub fn children(parent_key: &str) -> Vec<u8> {
    KeyBuf::new(CHILD).str(parent_key).finish()
}

/// Key of the lineage index entry of `child_key` under `parent_key`.
pub fn child(parent_key: &str, child_key: &str) -> Vec<u8> {
    KeyBuf::new(CHILD).str(parent_key).str(child_key).finish()
}

/// Prefix of the context states of the session under `key`.
pub fn states(key: &str) -> Vec<u8> {
    KeyBuf::new(STATE).str(key).finish()
}

/// Key of one context state.
pub fn state(key: &str, id: u64) -> Vec<u8> {
    KeyBuf::new(STATE).str(key).u64(id).finish()
}

/// Key of the turn numbered `seq` of a session identity.
pub fn turn(data_id: &str, seq: u64) -> Vec<u8> {
    KeyBuf::new(TURN).str(data_id).u64(seq).finish()
}

/// Key of the turn-id index entry of `turn_id` in a session identity.
pub fn turn_id(data_id: &str, turn_id: &str) -> Vec<u8> {
    KeyBuf::new(TURN_ID).str(data_id).str(turn_id).finish()
}

/// Key of the entry in progress of turn `turn_id` (`""` for no turn) in a session
/// identity.
pub fn in_progress(data_id: &str, turn_id: &str) -> Vec<u8> {
    KeyBuf::new(IN_PROGRESS).str(data_id).str(turn_id).finish()
}

/// Key of the fork lineage of a session identity.
pub fn lineage(data_id: &str) -> Vec<u8> {
    KeyBuf::new(LINEAGE).str(data_id).finish()
}

/// Key of a provider fork operation.
pub fn fork_operation(operation_id: &str) -> Vec<u8> {
    KeyBuf::new(FORK_OPERATION).str(operation_id).finish()
}

/// Key of the idempotency index entry of a fork request id.
pub fn fork_request(request_id: &str) -> Vec<u8> {
    KeyBuf::new(FORK_REQUEST).str(request_id).finish()
}

/// Key of the turn barrier of a fork point (`point` names the turn, see `crate::provider_fork`).
pub fn fork_barrier(source_session_id: &str, point: &str) -> Vec<u8> {
    KeyBuf::new(FORK_BARRIER)
        .str(source_session_id)
        .str(point)
        .finish()
}

/// Key of the reservation of a fork target key.
pub fn fork_target(target_key: &str) -> Vec<u8> {
    KeyBuf::new(FORK_TARGET).str(target_key).finish()
}

/// Key of an active fork operation's entry in the recovery index.
pub fn fork_active(operation_id: &str) -> Vec<u8> {
    KeyBuf::new(FORK_ACTIVE).str(operation_id).finish()
}

/// Key of the pin of a fork operation's snapshot on the identity it reads.
pub fn fork_pin(source_session_id: &str, operation_id: &str) -> Vec<u8> {
    KeyBuf::new(FORK_PIN)
        .str(source_session_id)
        .str(operation_id)
        .finish()
}

/// Prefix of the pins on the identity `source_session_id`.
pub fn fork_pins(source_session_id: &str) -> Vec<u8> {
    KeyBuf::new(FORK_PIN).str(source_session_id).finish()
}

/// Prefix of a fork operation's copied snapshot (entries follow at their positions).
pub fn fork_snapshot(operation_id: &str) -> Vec<u8> {
    KeyBuf::new(FORK_SNAPSHOT).str(operation_id).finish()
}

/// Decodes a string component starting at `at`; returns it and the offset after it.
pub fn read_str(key: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut out = Vec::new();
    loop {
        let b = *key.get(at)?;
        at += 1;
        if b == 0 {
            if key.get(at) == Some(&0xff) {
                out.push(0);
                at += 1;
            } else {
                return String::from_utf8(out).ok().map(|s| (s, at));
            }
        } else {
            out.push(b);
        }
    }
}

/// Decodes an integer component starting at `at`.
pub fn read_u64(key: &[u8], at: usize) -> Option<(u64, usize)> {
    let bytes: [u8; 8] = key.get(at..at + 8)?.try_into().ok()?;
    Some((u64::from_be_bytes(bytes), at + 8))
}

/// Renders a key for error messages: printable ASCII as is, other bytes as `\xNN`.
pub fn display(key: &[u8]) -> String {
    let mut out = String::with_capacity(key.len());
    for &b in key {
        if b.is_ascii_graphic() || b == b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
#[path = "tests/keys.rs"]
mod tests;
