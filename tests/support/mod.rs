//! Storages that misbehave on purpose, and a dump of everything stored, shared by the
//! core's integration tests.
#![allow(dead_code, unreachable_pub)]

pub mod growing;
pub mod imported;
pub mod rich_turn;
pub mod slices;

use spool::{Batch, KeyRange, Kv, MemoryStorage, RangeQuery, Storage, StorageError};

/// Every entry of the session under `key`, oldest first, read page by page: its active
/// transcript, or with `canonical` its canonical one.
pub fn entries(
    storage: &impl Storage,
    workspace: &str,
    key: &str,
    canonical: bool,
) -> Vec<spool::Entry> {
    let (mut out, mut cursor) = (Vec::new(), None);
    loop {
        let request = spool::PageRequest {
            order: spool::Order::OldestFirst,
            cursor,
            limit: 100,
        };
        let page = if canonical {
            spool::run(storage, spool::read_canonical_page(workspace, key, request))
        } else {
            spool::run(storage, spool::read_page(workspace, key, request))
        }
        .expect("page");
        out.extend(page.entries);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return out,
        }
    }
}

/// Every pair of `workspace`, in key order.
pub fn dump(storage: &impl Storage, workspace: &str) -> Vec<Kv> {
    let everything = RangeQuery {
        range: KeyRange::prefix(b""),
        limit: 0,
        reverse: false,
    };
    storage.range(workspace, &everything).expect("dump")
}

/// Reads like the storage it wraps; fails every commit with `cause`, as a full disk would.
pub struct FailingCommits {
    pub inner: MemoryStorage,
    pub cause: &'static str,
}

impl Storage for FailingCommits {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(ws, key)
    }
    fn range(&self, ws: &str, q: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.inner.range(ws, q)
    }
    fn commit(&self, _ws: &str, _batch: Batch) -> Result<(), StorageError> {
        Err(StorageError::Backend(self.cause.into()))
    }
}

/// What one commit wrote: its mutations and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub mutations: usize,
    pub bytes: usize,
}

/// Stores like the storage it wraps, and records every commit's size, the largest
/// range answer (in bytes of values) and the progress reported.
#[derive(Default)]
pub struct Recording {
    pub inner: MemoryStorage,
    pub commits: std::cell::RefCell<Vec<Written>>,
    pub largest_range: std::cell::Cell<usize>,
    pub progress: std::cell::RefCell<Vec<spool::Progress>>,
}

impl Recording {
    /// The commits recorded since the last call.
    pub fn take(&self) -> Vec<Written> {
        std::mem::take(&mut *self.commits.borrow_mut())
    }
}

impl Storage for Recording {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(ws, key)
    }
    fn range(&self, ws: &str, q: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        let pairs = self.inner.range(ws, q)?;
        let bytes = pairs.iter().map(|kv| kv.value.len()).sum::<usize>();
        self.largest_range.set(self.largest_range.get().max(bytes));
        Ok(pairs)
    }
    fn commit(&self, ws: &str, batch: Batch) -> Result<(), StorageError> {
        let written = Written {
            mutations: batch.mutations.len(),
            bytes: batch.written_bytes(),
        };
        self.inner.commit(ws, batch)?;
        self.commits.borrow_mut().push(written);
        Ok(())
    }
    fn progress(&self, _ws: &str, progress: &spool::Progress) {
        self.progress.borrow_mut().push(progress.clone());
    }
}
