//! An in-memory [`Storage`]: the reference backend for tests and the native core.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::rc::Rc;

use crate::storage::{
    Batch, KeyRange, Kv, Mutation, Precondition, RangeQuery, Storage, StorageError,
};

type Slot = (String, Vec<u8>);
type Space = BTreeMap<Slot, Vec<u8>>;

/// An ordered in-memory key space. Clones share the same data, so a clone acts as a
/// "reopened" handle on the same store.
#[derive(Debug, Clone, Default)]
pub struct MemoryStorage {
    space: Rc<RefCell<Space>>,
}

impl MemoryStorage {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys stored across all workspaces.
    pub fn len(&self) -> usize {
        self.space.borrow().len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.space.borrow().is_empty()
    }
}

fn bounds(workspace: &str, range: &KeyRange) -> (Bound<Slot>, Bound<Slot>) {
    let start = Bound::Included((workspace.to_owned(), range.start.clone()));
    let end = match &range.end {
        Some(end) => Bound::Excluded((workspace.to_owned(), end.clone())),
        // The first key of the next workspace name: `workspace` followed by NUL sorts
        // right after every (workspace, key) pair.
        None => Bound::Excluded((format!("{workspace}\0"), Vec::new())),
    };
    (start, end)
}

fn valid(range: &KeyRange) -> bool {
    range.end.as_ref().is_none_or(|end| range.start <= *end)
}

impl Storage for MemoryStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self
            .space
            .borrow()
            .get(&(workspace.to_owned(), key.to_vec()))
            .cloned())
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        if !valid(&query.range) {
            return Ok(Vec::new());
        }
        let space = self.space.borrow();
        let iter = space.range(bounds(workspace, &query.range));
        let limit = if query.limit == 0 {
            usize::MAX
        } else {
            query.limit as usize
        };
        let pair = |((_, k), v): (&(String, Vec<u8>), &Vec<u8>)| Kv {
            key: k.clone(),
            value: v.clone(),
        };
        Ok(if query.reverse {
            iter.rev().take(limit).map(pair).collect()
        } else {
            iter.take(limit).map(pair).collect()
        })
    }

    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        let mut space = self.space.borrow_mut();
        for (index, pre) in batch.preconditions.iter().enumerate() {
            let holds = match pre {
                Precondition::Absent(key) => {
                    !space.contains_key(&(workspace.to_owned(), key.clone()))
                }
                Precondition::Equals(kv) => {
                    space.get(&(workspace.to_owned(), kv.key.clone())) == Some(&kv.value)
                }
            };
            if !holds {
                return Err(StorageError::Conflict(index as u32));
            }
        }
        for mutation in batch.mutations {
            match mutation {
                Mutation::Put(kv) => {
                    space.insert((workspace.to_owned(), kv.key), kv.value);
                }
                Mutation::Delete(key) => {
                    space.remove(&(workspace.to_owned(), key));
                }
                Mutation::DeleteRange(range) => {
                    if valid(&range) {
                        let doomed: Vec<_> = space
                            .range(bounds(workspace, &range))
                            .map(|(k, _)| k.clone())
                            .collect();
                        for key in doomed {
                            space.remove(&key);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
