//! [`IdbStorage`]: the core's storage contract on IndexedDB.
//!
//! One object store ([`STORE`]) holds every workspace; keys are `[workspace,
//! Uint8Array(key)]`, so IndexedDB itself keeps workspaces apart and orders keys bytewise.
//! Each call is one IndexedDB transaction: reads are `readonly`, a commit is one
//! `readwrite` transaction that checks the preconditions and applies the mutations.
//!
//! A second store ([`ARCHIVES`]) keeps the archives of the session generations that resets
//! replace ([`AsyncStorage::write_archive`], [`IdbStorage::archives`]).

mod codec;
mod schema;

use std::cell::Cell;
use std::rc::Rc;

use indexed_db_futures::cursor::CursorDirection;
use indexed_db_futures::database::Database;
use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::object_store::ObjectStore;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{Transaction, TransactionMode};
use spool::{
    AsyncStorage, Batch, Kv, Mutation, Precondition, RangeQuery, ResetArchive, StorageError,
};
use wasm_bindgen::JsCast;
use wasm_bindgen::JsValue;
use wasm_bindgen::closure::Closure;

pub use schema::{ARCHIVES, SCHEMA_VERSION, STORE};

use codec::backend;

/// An IndexedDB database serving the core's [`AsyncStorage`] contract.
///
/// The connection closes when the value is dropped, when [`IdbStorage::close`] is called,
/// or when another connection asks for a newer schema version (`versionchange`); calls
/// after that fail with [`StorageError::Backend`].
pub struct IdbStorage {
    db: Database,
    name: String,
    closed: Rc<Cell<bool>>,
    /// The `versionchange` handler, kept alive while the database may call it.
    _on_version_change: Closure<dyn FnMut()>,
}

impl std::fmt::Debug for IdbStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdbStorage")
            .field("name", &self.name)
            .field("closed", &self.closed.get())
            .finish_non_exhaustive()
    }
}

impl IdbStorage {
    /// Opens the database `name`, creating it or upgrading it to [`SCHEMA_VERSION`].
    pub async fn open(name: &str) -> Result<Self, StorageError> {
        let db = Database::open(name)
            .with_version(SCHEMA_VERSION)
            .with_on_upgrade_needed(|event, db| schema::upgrade(&event, &db))
            .await
            .map_err(|e| backend(&format!("opening database `{name}`"), e))?;
        let closed = Rc::new(Cell::new(false));
        // Another connection wants a newer schema: step aside instead of blocking it.
        let on_version_change = Closure::<dyn FnMut()>::new({
            let (db, closed) = (db.clone(), closed.clone());
            move || {
                closed.set(true);
                db.clone().close();
            }
        });
        db.as_sys()
            .set_onversionchange(Some(on_version_change.as_ref().unchecked_ref()));
        Ok(IdbStorage {
            db,
            name: name.to_owned(),
            closed,
            _on_version_change: on_version_change,
        })
    }

    /// Deletes the database `name` (open connections are asked to close first).
    pub async fn delete(name: &str) -> Result<(), StorageError> {
        let doing = format!("deleting database `{name}`");
        Database::delete_by_name(name)
            .map_err(|e| backend(&doing, e))?
            .await
            .map_err(|e| backend(&doing, e))
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Closes the connection; later calls fail. Closing twice is harmless.
    pub fn close(&self) {
        if !self.closed.replace(true) {
            self.db.clone().close();
        }
    }

    fn transaction(&self, mode: TransactionMode) -> Result<Transaction<'_>, StorageError> {
        self.transaction_on(STORE, mode)
    }

    fn transaction_on(
        &self,
        store: &str,
        mode: TransactionMode,
    ) -> Result<Transaction<'_>, StorageError> {
        if self.closed.get() {
            return Err(StorageError::Backend(format!(
                "IndexedDB database `{}` is closed",
                self.name
            )));
        }
        self.db
            .transaction(store)
            .with_mode(mode)
            .build()
            .map_err(|e| backend("starting a transaction", e))
    }

    /// The reset archives of the session `key` in `workspace`, oldest first (by
    /// `archived_at`, then `epoch`), read in one `readonly` transaction. A backend failure
    /// is [`spool::Error::Storage`], an undecodable archive [`spool::Error::Corruption`].
    pub async fn archives(
        &self,
        workspace: &str,
        key: &str,
    ) -> Result<Vec<ResetArchive>, spool::Error> {
        let storage = |e: StorageError| spool::Error::Storage {
            cause: e.to_string(),
        };
        let failed = |e| storage(backend("listing archives", e));
        let tx = self
            .transaction_on(ARCHIVES, TransactionMode::Readonly)
            .map_err(storage)?;
        let store = tx.object_store(ARCHIVES).map_err(failed)?;
        let values = store
            .get_all::<JsValue>()
            .with_query::<JsValue, _>(codec::archive_range(workspace, key))
            .primitive()
            .map_err(failed)?
            .await
            .map_err(failed)?;
        let mut archives = Vec::new();
        for value in values {
            let value = value.map_err(failed)?;
            archives.push(
                codec::archive(&value).map_err(|detail| spool::Error::Corruption {
                    key: format!("archive of `{key}` in workspace `{workspace}`"),
                    detail,
                })?,
            );
        }
        archives.sort_by_key(|a| (a.archived_at, a.epoch));
        Ok(archives)
    }

    /// Reads `[start, end)` forwards with at most `limit` pairs (0: all): the keys and the
    /// values are two batch requests in one transaction.
    async fn read_forward(
        &self,
        workspace: &str,
        query: &RangeQuery,
    ) -> Result<Vec<Kv>, StorageError> {
        let Some(range) = codec::range(workspace, &query.range) else {
            return Ok(Vec::new());
        };
        let tx = self.transaction(TransactionMode::Readonly)?;
        let store = tx.object_store(STORE).map_err(|e| backend("range", e))?;
        // IndexedDB reads `count: 0` as "no limit", like the contract.
        let keys = store
            .get_all_keys::<JsValue>()
            .with_query::<JsValue, _>(range.clone())
            .with_limit(query.limit)
            .primitive()
            .map_err(|e| backend("range", e))?;
        let values = store
            .get_all::<JsValue>()
            .with_query::<JsValue, _>(range)
            .with_limit(query.limit)
            .primitive()
            .map_err(|e| backend("range", e))?;
        let keys = keys.await.map_err(|e| backend("range", e))?;
        let values = values.await.map_err(|e| backend("range", e))?;
        keys.zip(values)
            .map(|(key, value)| {
                let key = key.map_err(|e| backend("range", e))?;
                let value = value.map_err(|e| backend("range", e))?;
                Ok(Kv {
                    key: codec::user_key(&key)?,
                    value: codec::bytes(&value)?,
                })
            })
            .collect()
    }

    /// Reads `[start, end)` backwards, stopping after `limit` pairs: a `prev` cursor.
    async fn read_backward(
        &self,
        workspace: &str,
        query: &RangeQuery,
    ) -> Result<Vec<Kv>, StorageError> {
        let Some(range) = codec::range(workspace, &query.range) else {
            return Ok(Vec::new());
        };
        let tx = self.transaction(TransactionMode::Readonly)?;
        let store = tx.object_store(STORE).map_err(|e| backend("range", e))?;
        let cursor = store
            .open_cursor()
            .with_query::<JsValue, _>(range)
            .with_direction(CursorDirection::Prev)
            .primitive()
            .map_err(|e| backend("range", e))?
            .await
            .map_err(|e| backend("range", e))?;
        let mut pairs = Vec::new();
        let Some(mut cursor) = cursor else {
            return Ok(pairs);
        };
        while pairs.len() < query.limit as usize {
            let next = cursor.next_record::<JsValue>().await;
            let Some(value) = next.map_err(|e| backend("range", e))? else {
                break;
            };
            let key = cursor
                .key::<JsValue>()
                .map_err(|e| backend("range", e))?
                .ok_or_else(|| backend("range", "a cursor on a record has no key"))?;
            pairs.push(Kv {
                key: codec::user_key(&key)?,
                value: codec::bytes(&value)?,
            });
        }
        Ok(pairs)
    }
}

impl Drop for IdbStorage {
    fn drop(&mut self) {
        self.db.as_sys().set_onversionchange(None);
        self.close();
    }
}

impl AsyncStorage for IdbStorage {
    async fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let tx = self.transaction(TransactionMode::Readonly)?;
        let store = tx.object_store(STORE).map_err(|e| backend("get", e))?;
        let value = store
            .get::<JsValue, JsValue, _>(codec::key(workspace, key))
            .primitive()
            .map_err(|e| backend("get", e))?
            .await
            .map_err(|e| backend("get", e))?;
        value.as_ref().map(codec::bytes).transpose()
    }

    async fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        if !query.reverse {
            return self.read_forward(workspace, query).await;
        }
        if query.limit == 0 {
            // Everything anyway: one batch read, reversed here.
            let mut pairs = self.read_forward(workspace, query).await?;
            pairs.reverse();
            return Ok(pairs);
        }
        self.read_backward(workspace, query).await
    }

    async fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        let tx = self.transaction(TransactionMode::Readwrite)?;
        {
            let store = tx.object_store(STORE).map_err(|e| backend("commit", e))?;
            // An early return drops the transaction, which aborts it: nothing is written.
            check(&store, workspace, &batch.preconditions).await?;
            write(&store, workspace, &batch.mutations)?;
        }
        tx.commit().await.map_err(|e| backend("commit", e))
    }

    /// Keeps `archive` in the [`ARCHIVES`] store: one `readwrite` transaction, committed
    /// explicitly. A `put`, so writing the same generation again (a retried reset)
    /// replaces it.
    async fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String> {
        let failed = |e: StorageError| format!("keeping the reset archive: {e}");
        let value = codec::archive_value(archive).map_err(failed)?;
        let tx = self
            .transaction_on(ARCHIVES, TransactionMode::Readwrite)
            .map_err(failed)?;
        {
            let store = tx
                .object_store(ARCHIVES)
                .map_err(|e| failed(backend("archive", e)))?;
            // Not awaited: a failing request aborts the transaction, which its commit reports.
            store
                .put(value)
                .with_key(codec::archive_key(workspace, archive))
                .without_key_type()
                .primitive()
                .map_err(|e| failed(backend("archive", e)))?;
        }
        tx.commit().await.map_err(|e| failed(backend("archive", e)))
    }
}

/// Checks the preconditions in order inside the commit's transaction; the first that
/// fails is reported as [`StorageError::Conflict`]. Every read goes out at once and the
/// answers arrive in order.
async fn check(
    store: &ObjectStore<'_>,
    workspace: &str,
    preconditions: &[Precondition],
) -> Result<(), StorageError> {
    let reads = preconditions
        .iter()
        .map(|precondition| {
            let key = match precondition {
                Precondition::Absent(key) => key,
                Precondition::Equals(kv) => &kv.key,
            };
            store
                .get::<JsValue, JsValue, _>(codec::key(workspace, key))
                .primitive()
                .map_err(|e| backend("commit (precondition read)", e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (index, (precondition, read)) in preconditions.iter().zip(reads).enumerate() {
        let current = read
            .await
            .map_err(|e| backend("commit (precondition read)", e))?;
        let holds = match precondition {
            Precondition::Absent(_) => current.is_none(),
            Precondition::Equals(kv) => match &current {
                Some(value) => codec::bytes(value)? == kv.value,
                None => false,
            },
        };
        if !holds {
            return Err(StorageError::Conflict(
                u32::try_from(index).unwrap_or(u32::MAX),
            ));
        }
    }
    Ok(())
}

/// Sends the mutations in order without waiting for each one: a failing request aborts
/// the transaction, which its commit then reports.
fn write(
    store: &ObjectStore<'_>,
    workspace: &str,
    mutations: &[Mutation],
) -> Result<(), StorageError> {
    for mutation in mutations {
        let request = match mutation {
            Mutation::Put(kv) => store
                .put(codec::value(&kv.value))
                .with_key(codec::key(workspace, &kv.key))
                .without_key_type()
                .primitive(),
            Mutation::Delete(key) => store
                .delete::<JsValue, _>(codec::key(workspace, key))
                .primitive(),
            Mutation::DeleteRange(range) => match codec::range(workspace, range) {
                Some(range) => store.delete::<JsValue, _>(range).primitive(),
                None => continue,
            },
        };
        request.map_err(|e| backend("commit (write)", e))?;
    }
    Ok(())
}
