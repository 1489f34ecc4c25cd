//! Storages that misbehave on purpose, and a dump of everything stored, shared by the
//! core's integration tests.
#![allow(dead_code, unreachable_pub)]

use spool::{Batch, KeyRange, Kv, MemoryStorage, RangeQuery, Storage, StorageError};

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
