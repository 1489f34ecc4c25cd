//! The storage contract, mirroring the WIT `storage` interface.
//!
//! An ordered key space of byte keys and byte values per workspace with `get`, an
//! ordered `range` and an atomic `commit` with preconditions. Backends are dumb: they
//! never interpret keys or values. Consistency: read-your-writes; commits are atomic,
//! durable on return and serializable per workspace; nothing crosses workspaces.
//!
//! Size: a backend accepts any batch of up to [`MAX_BATCH_MUTATIONS`] mutations and
//! [`MAX_BATCH_BYTES`] written bytes ([`Batch::written_bytes`]); the conformance suite
//! checks it. The core's commits stay within these whatever a session's size — appends,
//! compactions (a boundary, not a copy), resets, deletes and branches write a few
//! records — except these, which grow with what they are given or remove:
//! `persist_compaction_result` with many kept entries, `truncate` and `rollback` (a
//! delete per removed entry's message index), `prune_stale` and `cap_sessions` (every
//! doomed session in one commit), an import slice of large entries, and any write that
//! must first copy shared history into its branches (`persist_compaction_result`,
//! truncation and rollback of a session that branches read).

pub(crate) mod binary;
pub(crate) mod entry_record;
pub mod keys;
pub(crate) mod memory;
pub mod record;
mod value_de;

use serde::{Deserialize, Serialize};
use std::future::Future;

/// The most mutations a backend must accept in one batch.
pub const MAX_BATCH_MUTATIONS: usize = 4096;

/// The most written bytes ([`Batch::written_bytes`]) a backend must accept in one
/// batch: four entries of the largest content with room to spare.
pub const MAX_BATCH_BYTES: usize = 24 * 1024 * 1024;

/// A key with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kv {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
}

/// A half-open key range `[start, end)`; `end: None` runs to the end of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    /// First key (inclusive).
    pub start: Vec<u8>,
    /// End (exclusive), or `None` for no upper bound.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &[u8]) -> Self {
        KeyRange {
            start: prefix.to_vec(),
            end: prefix_end(prefix),
        }
    }

    /// Whether `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }
}

/// The smallest key greater than every key starting with `prefix`, or `None` when
/// no such key exists (the prefix is empty or all `0xff`).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// An ordered read of a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeQuery {
    /// The keys to read.
    pub range: KeyRange,
    /// At most this many pairs; 0 means no limit.
    pub limit: u32,
    /// Descending order when true.
    pub reverse: bool,
}

/// A condition checked in the commit's transaction before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// The key holds no value.
    Absent(Vec<u8>),
    /// The key holds exactly these bytes.
    Equals(Kv),
}

/// One write of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// Store a value, replacing any previous one.
    Put(Kv),
    /// Remove a key (absent is fine).
    Delete(Vec<u8>),
    /// Remove every key in the range.
    DeleteRange(KeyRange),
}

/// An atomic write: all preconditions hold and all mutations apply, or nothing does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// Checked first, in order.
    pub preconditions: Vec<Precondition>,
    /// Applied in order.
    pub mutations: Vec<Mutation>,
}

impl Batch {
    /// The bytes the batch writes: keys and values put, keys deleted, and the bounds of
    /// range deletes (what a benchmark counts per commit).
    pub fn written_bytes(&self) -> usize {
        self.mutations
            .iter()
            .map(|m| match m {
                Mutation::Put(kv) => kv.key.len() + kv.value.len(),
                Mutation::Delete(key) => key.len(),
                Mutation::DeleteRange(r) => r.start.len() + r.end.as_ref().map_or(0, Vec::len),
            })
            .sum()
    }

    /// Adds a precondition that `key` is absent.
    pub fn require_absent(&mut self, key: Vec<u8>) {
        self.preconditions.push(Precondition::Absent(key));
    }

    /// Adds a precondition that `key` holds `value`.
    pub fn require_equals(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.preconditions
            .push(Precondition::Equals(Kv { key, value }));
    }

    /// Adds a put.
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.mutations.push(Mutation::Put(Kv { key, value }));
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: Vec<u8>) {
        self.mutations.push(Mutation::Delete(key));
    }

    /// Adds `other`'s preconditions and mutations after this batch's; returns the index
    /// `other`'s first precondition now has.
    pub fn extend(&mut self, other: Batch) -> u32 {
        let offset = self.preconditions.len() as u32;
        self.preconditions.extend(other.preconditions);
        self.mutations.extend(other.mutations);
        offset
    }

    /// Adds a range delete.
    pub fn delete_range(&mut self, range: KeyRange) {
        self.mutations.push(Mutation::DeleteRange(range));
    }
}

/// Why a storage call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// Precondition number `.0` did not hold; nothing was written.
    Conflict(u32),
    /// The backend failed; the text is its cause. A failed commit wrote nothing.
    Backend(String),
    /// The value stored under `key` is not one the backend can hand back as bytes (a
    /// SQLite value of another type than BLOB): the stored data is damaged. A failed
    /// commit wrote nothing.
    Corrupt {
        /// The key whose value is damaged.
        key: Vec<u8>,
        /// What is wrong with it.
        detail: String,
    },
    /// A commit was sent and its reply was lost (a server connection dropped): it was
    /// applied whole or not at all, and the backend cannot tell which. The text is the
    /// cause.
    Unknown(String),
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageError::Conflict(i) => write!(f, "precondition {i} failed"),
            StorageError::Backend(cause) => f.write_str(cause),
            StorageError::Unknown(cause) => write!(
                f,
                "the commit was sent but its reply was lost, so whether it applied is unknown: {cause}"
            ),
            StorageError::Corrupt { key, detail } => write!(
                f,
                "the value under {} is damaged: {detail}",
                crate::storage::keys::display(key)
            ),
        }
    }
}

impl std::error::Error for StorageError {}

/// A synchronous storage backend (SQLite, memory, the component's WIT imports).
pub trait Storage {
    /// The value under `key`, or `None`.
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError>;
    /// The pairs in `query.range`, ordered, at most `query.limit` (0: all).
    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError>;
    /// Checks the preconditions and applies the mutations atomically.
    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError>;

    /// Says that an operation begins: its reads, up to its commit or to
    /// [`Storage::end_operation`], may be served from one snapshot of the store, and
    /// that snapshot may carry on into the commit when nothing was written meanwhile.
    /// A hint: the contract of each call is unchanged (a commit still checks its
    /// preconditions). By default nothing.
    fn begin_operation(&self) {}

    /// Says that the operation [`Storage::begin_operation`] announced is over (a
    /// snapshot its reads hold is let go). By default nothing.
    fn end_operation(&self) {}

    /// Says how far a long operation has got, for a host to show (a compaction's
    /// passes, a reset's archive): nothing depends on it. By default nothing.
    fn progress(&self, _workspace: &str, _progress: &Progress) {}
}

/// How far a long operation has got: `done` of `total` units of its `phase` (entries
/// read, for every phase the core reports), reported as the operation goes, at most
/// once a page. `total` is what the session's record says there is: a damaged record
/// may make `done` pass it, so show `done` whole and the ratio capped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// What the operation is doing: `compact: plan`, `compact: read` (the obligations,
    /// the summary input, the kept entries), `reset: archive`.
    pub phase: String,
    /// Units done so far in this phase.
    pub done: u64,
    /// Units the phase has in all (0: not known).
    pub total: u64,
}

/// An asynchronous storage backend (IndexedDB). Same contract as [`Storage`].
pub trait AsyncStorage {
    /// The value under `key`, or `None`.
    fn get(
        &self,
        workspace: &str,
        key: &[u8],
    ) -> impl Future<Output = Result<Option<Vec<u8>>, StorageError>>;
    /// The pairs in `query.range`, ordered, at most `query.limit` (0: all).
    fn range(
        &self,
        workspace: &str,
        query: &RangeQuery,
    ) -> impl Future<Output = Result<Vec<Kv>, StorageError>>;
    /// Checks the preconditions and applies the mutations atomically.
    fn commit(
        &self,
        workspace: &str,
        batch: Batch,
    ) -> impl Future<Output = Result<(), StorageError>>;

    /// Keeps the archive of a session generation a reset replaces (see
    /// [`crate::Archiver`]). By default the backend keeps none and says so.
    fn write_archive(
        &self,
        _workspace: &str,
        _archive: &crate::ResetArchive,
    ) -> impl Future<Output = Result<(), String>> {
        std::future::ready(Err("this host keeps no reset archives".to_owned()))
    }

    /// Says how far a long operation has got (see [`Storage::progress`]). By default
    /// nothing.
    fn progress(&self, _workspace: &str, _progress: &Progress) {}
}

/// Serves a synchronous [`Storage`] through the [`AsyncStorage`] interface, so one
/// async conformance suite and one async driver cover every backend.
#[derive(Debug, Clone)]
pub struct SyncAdapter<S>(pub S);

impl<S: Storage> AsyncStorage for SyncAdapter<S> {
    async fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.0.get(workspace, key)
    }

    async fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.0.range(workspace, query)
    }

    async fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        self.0.commit(workspace, batch)
    }

    fn progress(&self, workspace: &str, progress: &Progress) {
        self.0.progress(workspace, progress);
    }
}

impl<S: Storage + ?Sized> Storage for &S {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        (**self).get(workspace, key)
    }
    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        (**self).range(workspace, query)
    }
    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        (**self).commit(workspace, batch)
    }
    fn begin_operation(&self) {
        (**self).begin_operation();
    }
    fn end_operation(&self) {
        (**self).end_operation();
    }
    fn progress(&self, workspace: &str, progress: &Progress) {
        (**self).progress(workspace, progress);
    }
}

#[cfg(test)]
#[path = "tests/storage.rs"]
mod tests;
