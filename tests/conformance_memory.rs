//! The storage conformance suite against the in-memory backend.

use crate::conformance;

use std::cell::RefCell;
use std::collections::BTreeMap;

use spool::{MemoryStorage, SyncAdapter};

thread_local! {
    static STORES: RefCell<BTreeMap<String, MemoryStorage>> = const { RefCell::new(BTreeMap::new()) };
}

struct Memory;

impl conformance::Backend for Memory {
    type Store = SyncAdapter<MemoryStorage>;

    async fn open(&self, name: &str) -> Self::Store {
        STORES.with(|stores| {
            SyncAdapter(
                stores
                    .borrow_mut()
                    .entry(name.to_owned())
                    .or_default()
                    .clone(),
            )
        })
    }
}

crate::conformance_tests!(sync, Memory);
