//! [`IdbStorage`]: the core's storage contract on IndexedDB.
//!
//! One object store ([`STORE`]) holds every workspace; keys are `[workspace,
//! Uint8Array(key)]`, so IndexedDB itself keeps workspaces apart and orders keys bytewise.
//! Each call on [`IdbStorage`] is one IndexedDB transaction: reads are `readonly`, a
//! commit is one `readwrite` transaction that checks the preconditions and applies the
//! mutations. An [`Attempt`] (what the JS API drives operations with) lets one
//! operation's reads and commit share a transaction.
//!
//! Round trips to IndexedDB bound the speed of every write, so a commit sends all its
//! requests at once and waits once: preconditions on keys read earlier in the same
//! transaction are decided locally, an `absent` precondition on a key the batch puts is
//! sent as an `add` (which fails, aborting the transaction, if the key exists), and only
//! the remaining preconditions are read. An append is then two round trips (read the
//! session, commit) instead of three — one when the caller vouches for what it read and
//! committed before ([`Known`], [`IdbStorage::attempt_knowing`]: the JS API does while
//! its tab holds the workspace's Web Lock).
//!
//! A second store ([`ARCHIVES`]) keeps the archives of the session generations that resets
//! replace ([`AsyncStorage::write_archive`], [`IdbStorage::archives`]).

mod codec;
mod schema;

use std::cell::Cell;
use std::rc::Rc;

use serde::Serialize;

use indexed_db_futures::cursor::CursorDirection;
use indexed_db_futures::database::Database;
use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::object_store::ObjectStore;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{Transaction, TransactionMode};
use spool::{
    ArchivedReset, AsyncStorage, Batch, Kv, Mutation, Precondition, RangeQuery, ResetArchive,
    StorageError,
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
    /// Closed because another connection asked for a schema change (or deletion).
    superseded: Rc<Cell<bool>>,
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
        let superseded = Rc::new(Cell::new(false));
        // Another connection wants a newer schema: step aside instead of blocking it.
        let on_version_change = Closure::<dyn FnMut()>::new({
            let (db, closed, superseded) = (db.clone(), closed.clone(), superseded.clone());
            move || {
                superseded.set(true);
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
            superseded,
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

    /// Whether the connection was closed because another connection changed the schema
    /// or deleted the database (`versionchange`), rather than by [`IdbStorage::close`]:
    /// opening the database again is then the way on.
    pub fn superseded(&self) -> bool {
        self.superseded.get()
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

    /// The reset archives of the session `key` in `workspace`, oldest first: those the
    /// committed resets recorded ([`spool::list_reset_archives`]), read by
    /// [`recorded_archives`](Self::recorded_archives). An archive no record names (a
    /// reset that failed or was interrupted after keeping it) is never listed.
    pub async fn archives(
        &self,
        workspace: &str,
        key: &str,
    ) -> Result<Vec<ResetArchive>, spool::Error> {
        let records = spool::run_async(self, spool::list_reset_archives(workspace, key)).await?;
        self.recorded_archives(workspace, key, &records).await
    }

    /// The archives `records` name, in their order, read in one `readonly` transaction.
    /// A backend failure is [`spool::Error::Storage`]; a recorded archive that is
    /// missing, does not decode or is not the one recorded is
    /// [`spool::Error::Corruption`].
    pub async fn recorded_archives(
        &self,
        workspace: &str,
        key: &str,
        records: &[ArchivedReset],
    ) -> Result<Vec<ResetArchive>, spool::Error> {
        let storage = |e: StorageError| spool::Error::Storage {
            cause: e.to_string(),
        };
        let failed = |e| storage(backend("reading an archive", e));
        let tx = self
            .transaction_on(ARCHIVES, TransactionMode::Readonly)
            .map_err(storage)?;
        let store = tx.object_store(ARCHIVES).map_err(failed)?;
        let mut archives = Vec::with_capacity(records.len());
        for record in records {
            let corrupt = |detail: String| spool::Error::Corruption {
                key: format!(
                    "archive of `{key}` at {} (session `{}`) in workspace `{workspace}`",
                    record.archived_at, record.session_id
                ),
                detail,
            };
            let value = store
                .get::<JsValue, JsValue, _>(codec::archive_key_of(
                    workspace,
                    &record.session_key,
                    &record.session_id,
                    record.archived_at,
                ))
                .primitive()
                .map_err(failed)?
                .await
                .map_err(failed)?
                .ok_or_else(|| corrupt("recorded by its reset, but missing".into()))?;
            let archive = codec::archive(&value).map_err(corrupt)?;
            record.check(&archive).map_err(corrupt)?;
            archives.push(archive);
        }
        Ok(archives)
    }
}

/// Why a request in a transaction failed: it could not even be made (the transaction is
/// no longer active — worth one retry in a fresh transaction), or it failed.
enum TxError {
    Inactive(StorageError),
    Failed(StorageError),
}

impl TxError {
    fn into_inner(self) -> StorageError {
        match self {
            TxError::Inactive(e) | TxError::Failed(e) => e,
        }
    }
}

fn inactive(doing: &'static str) -> impl Fn(indexed_db_futures::error::Error) -> TxError {
    move |e| TxError::Inactive(backend(doing, e))
}

fn failed(doing: &'static str) -> impl Fn(indexed_db_futures::error::Error) -> TxError {
    move |e| TxError::Failed(backend(doing, e))
}

/// Reads one value in `tx`.
async fn get_in(
    tx: &Transaction<'_>,
    workspace: &str,
    key: &[u8],
) -> Result<Option<Vec<u8>>, TxError> {
    let store = tx.object_store(STORE).map_err(inactive("get"))?;
    let value = store
        .get::<JsValue, JsValue, _>(codec::key(workspace, key))
        .primitive()
        .map_err(inactive("get"))?
        .await
        .map_err(failed("get"))?;
    value
        .as_ref()
        .map(|value| codec::stored(key, value))
        .transpose()
        .map_err(TxError::Failed)
}

/// Reads a range in `tx`.
async fn range_in(
    tx: &Transaction<'_>,
    workspace: &str,
    query: &RangeQuery,
) -> Result<Vec<Kv>, TxError> {
    if !query.reverse {
        return read_forward(tx, workspace, query).await;
    }
    if query.limit == 0 {
        // Everything anyway: one batch read, reversed here.
        let mut pairs = read_forward(tx, workspace, query).await?;
        pairs.reverse();
        return Ok(pairs);
    }
    read_backward(tx, workspace, query).await
}

/// Reads `[start, end)` forwards with at most `limit` pairs (0: all): the keys and the
/// values are two batch requests.
async fn read_forward(
    tx: &Transaction<'_>,
    workspace: &str,
    query: &RangeQuery,
) -> Result<Vec<Kv>, TxError> {
    let Some(range) = codec::range(workspace, &query.range) else {
        return Ok(Vec::new());
    };
    let store = tx.object_store(STORE).map_err(inactive("range"))?;
    // IndexedDB reads `count: 0` as "no limit", like the contract.
    let keys = store
        .get_all_keys::<JsValue>()
        .with_query::<JsValue, _>(range.clone())
        .with_limit(query.limit)
        .primitive()
        .map_err(inactive("range"))?;
    let values = store
        .get_all::<JsValue>()
        .with_query::<JsValue, _>(range)
        .with_limit(query.limit)
        .primitive()
        .map_err(inactive("range"))?;
    let keys = keys.await.map_err(failed("range"))?;
    let values = values.await.map_err(failed("range"))?;
    keys.zip(values)
        .map(|(key, value)| {
            let key = key.map_err(|e| backend("range", e))?;
            let value = value.map_err(|e| backend("range", e))?;
            let key = codec::user_key(&key)?;
            let value = codec::stored(&key, &value)?;
            Ok(Kv { key, value })
        })
        .collect::<Result<_, StorageError>>()
        .map_err(TxError::Failed)
}

/// Reads `[start, end)` backwards, stopping after `limit` pairs: a `prev` cursor.
async fn read_backward(
    tx: &Transaction<'_>,
    workspace: &str,
    query: &RangeQuery,
) -> Result<Vec<Kv>, TxError> {
    let Some(range) = codec::range(workspace, &query.range) else {
        return Ok(Vec::new());
    };
    let store = tx.object_store(STORE).map_err(inactive("range"))?;
    let cursor = store
        .open_cursor()
        .with_query::<JsValue, _>(range)
        .with_direction(CursorDirection::Prev)
        .primitive()
        .map_err(inactive("range"))?
        .await
        .map_err(failed("range"))?;
    let mut pairs = Vec::new();
    let Some(mut cursor) = cursor else {
        return Ok(pairs);
    };
    while pairs.len() < query.limit as usize {
        let next = cursor.next_record::<JsValue>().await;
        let Some(value) = next.map_err(failed("range"))? else {
            break;
        };
        let key = cursor
            .key::<JsValue>()
            .map_err(failed("range"))?
            .ok_or_else(|| TxError::Failed(backend("range", "a cursor on a record has no key")))?;
        let key = codec::user_key(&key).map_err(TxError::Failed)?;
        let value = codec::stored(&key, &value).map_err(TxError::Failed)?;
        pairs.push(Kv { key, value });
    }
    Ok(pairs)
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
        get_in(&tx, workspace, key)
            .await
            .map_err(TxError::into_inner)
    }

    async fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        let tx = self.transaction(TransactionMode::Readonly)?;
        range_in(&tx, workspace, query)
            .await
            .map_err(TxError::into_inner)
    }

    async fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        let tx = self.transaction(TransactionMode::Readwrite)?;
        commit_in(tx, workspace, &batch, &Seen::new())
            .await
            .map_err(TxError::into_inner)
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

/// One operation's view of the database: its reads and its commit share one `readwrite`
/// transaction for as long as IndexedDB keeps it active, instead of one transaction per
/// call — an append becomes one transaction instead of two. Correctness does not depend
/// on it: the commit still checks every precondition in the transaction that writes, and
/// when the shared transaction has ended (the operation waited on something else, e.g. a
/// reset archive or a JS summarizer) the next call simply starts a fresh one.
///
/// Use one `Attempt` per operation run ([`IdbStorage::attempt`]); an `Attempt` left
/// with an open transaction aborts it when dropped, which discards nothing (every write
/// is committed explicitly).
pub struct Attempt<'a> {
    storage: &'a IdbStorage,
    tx: std::cell::RefCell<Option<Transaction<'a>>>,
    /// What `get` read in the shared transaction: nobody else can change those keys
    /// while it lasts, so the commit checks preconditions on them without a read.
    seen: std::cell::RefCell<Seen>,
    /// Whether a commit went through.
    wrote: Cell<bool>,
    /// Values known to be current from earlier operations, if the caller vouches for
    /// them ([`IdbStorage::attempt_knowing`]).
    known: Option<Rc<std::cell::RefCell<Known>>>,
    /// The JS function the operation's progress goes to ([`Attempt::report_to`]).
    progress: Option<js_sys::Function>,
}

/// Values read in one transaction, by workspace and key.
type Seen = std::collections::BTreeMap<(String, Vec<u8>), Option<Vec<u8>>>;

/// Values (or absences) of keys as the last reads and commits of this tab left them,
/// kept from one operation to the next while nobody else can write: see
/// [`IdbStorage::attempt_knowing`]. Bounded: past [`Known::MAX_BYTES`] it starts over.
#[derive(Debug, Default)]
pub struct Known {
    values: Seen,
    bytes: usize,
}

impl Known {
    /// How many key and value bytes it keeps at most.
    pub const MAX_BYTES: usize = 4 << 20;

    /// Forgets everything: another writer may have been at work.
    pub fn clear(&mut self) {
        self.values.clear();
        self.bytes = 0;
    }

    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn get(&self, workspace: &str, key: &[u8]) -> Option<Option<Vec<u8>>> {
        // Keyed by owned pairs; a lookup allocates once, far below an IndexedDB request.
        self.values
            .get(&(workspace.to_owned(), key.to_vec()))
            .cloned()
    }

    fn size(workspace: &str, key: &[u8], value: Option<&Vec<u8>>) -> usize {
        workspace.len() + key.len() + value.map_or(0, Vec::len)
    }

    fn set(&mut self, workspace: &str, key: &[u8], value: Option<Vec<u8>>) {
        let added = Self::size(workspace, key, value.as_ref());
        if let Some(old) = self
            .values
            .insert((workspace.to_owned(), key.to_vec()), value)
        {
            self.bytes -= Self::size(workspace, key, old.as_ref());
        }
        self.bytes += added;
        if self.bytes > Self::MAX_BYTES {
            self.clear();
        }
    }

    /// What a committed `batch` left behind.
    fn apply(&mut self, workspace: &str, batch: &Batch) {
        for mutation in &batch.mutations {
            match mutation {
                Mutation::Put(kv) => self.set(workspace, &kv.key, Some(kv.value.clone())),
                Mutation::Delete(key) => self.set(workspace, key, None),
                Mutation::DeleteRange(range) => {
                    let gone: Vec<_> = self
                        .values
                        .keys()
                        .filter(|(w, key)| w == workspace && range.contains(key))
                        .cloned()
                        .collect();
                    for (w, key) in gone {
                        self.set(&w, &key, None);
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for Attempt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attempt")
            .field("storage", &self.storage)
            .field("open", &self.tx.borrow().is_some())
            .finish()
    }
}

impl IdbStorage {
    /// A view of the database for one operation run: see [`Attempt`].
    pub fn attempt(&self) -> Attempt<'_> {
        Attempt {
            storage: self,
            tx: std::cell::RefCell::new(None),
            seen: std::cell::RefCell::new(Seen::new()),
            wrote: Cell::new(false),
            known: None,
            progress: None,
        }
    }

    /// Like [`IdbStorage::attempt`], but reads of keys in `known` are answered from it
    /// without asking IndexedDB, and what the operation reads and commits is added to
    /// it. An append then needs no read before its commit: one round trip.
    ///
    /// Only the caller can tell that `known` is still current: it must clear it whenever
    /// another writer may have written the workspace since — the JS API keeps one per
    /// workspace for as long as the tab holds the workspace's Web Lock. Writes stay safe
    /// even if it is stale: a precondition on a value taken from `known` is checked by a
    /// read in the committing transaction (sent along with the writes, so it adds no
    /// round trip), and a failed commit clears `known`, so the retry reads afresh.
    pub fn attempt_knowing(&self, known: Rc<std::cell::RefCell<Known>>) -> Attempt<'_> {
        Attempt {
            known: Some(known),
            ..self.attempt()
        }
    }
}

impl<'a> Attempt<'a> {
    /// Calls `callback({ workspace, phase, done, total })` with the progress the
    /// operation reports ([`spool::Progress`]); `None`: nothing.
    pub fn report_to(&mut self, callback: Option<js_sys::Function>) {
        self.progress = callback;
    }

    /// Whether a commit through this attempt went through (the operation wrote).
    pub fn wrote(&self) -> bool {
        self.wrote.get()
    }

    /// The shared transaction (`reused` true) or a new one.
    fn take(&self) -> Result<(Transaction<'a>, bool), StorageError> {
        let cached = self.tx.borrow_mut().take();
        match cached {
            Some(tx) => Ok((tx, true)),
            None => {
                // A new transaction: nothing read before it is known to hold.
                self.seen.borrow_mut().clear();
                Ok((self.storage.transaction(TransactionMode::Readwrite)?, false))
            }
        }
    }

    fn keep(&self, tx: Transaction<'a>) {
        *self.tx.borrow_mut() = Some(tx);
    }
}

/// Runs `$body` (an async block over `$tx: &Transaction`) in the shared transaction, or,
/// when that one is no longer active, once more in a fresh one; keeps the transaction for
/// the next call when the body succeeds.
macro_rules! shared {
    ($attempt:expr, |$tx:ident| $body:expr) => {{
        let mut outcome = Err(StorageError::Backend("no transaction".into()));
        for _ in 0..2 {
            let (tx, reused) = $attempt.take()?;
            let result = {
                let $tx = &tx;
                $body.await
            };
            match result {
                Ok(value) => {
                    $attempt.keep(tx);
                    outcome = Ok(value);
                    break;
                }
                Err(TxError::Inactive(_)) if reused => continue,
                Err(e) => {
                    outcome = Err(e.into_inner());
                    break;
                }
            }
        }
        outcome
    }};
}

impl AsyncStorage for Attempt<'_> {
    async fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if let Some(value) = self
            .known
            .as_ref()
            .and_then(|known| known.borrow().get(workspace, key))
        {
            return Ok(value);
        }
        let value = shared!(self, |tx| get_in(tx, workspace, key))?;
        self.seen
            .borrow_mut()
            .insert((workspace.to_owned(), key.to_vec()), value.clone());
        if let Some(known) = &self.known {
            known.borrow_mut().set(workspace, key, value.clone());
        }
        Ok(value)
    }

    async fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        shared!(self, |tx| range_in(tx, workspace, query))
    }

    fn progress(&self, workspace: &str, progress: &spool::Progress) {
        #[derive(Serialize)]
        struct Report<'a> {
            workspace: &'a str,
            #[serde(flatten)]
            progress: &'a spool::Progress,
        }
        if let Some(callback) = &self.progress
            && let Ok(report) = crate::js::to_js(&Report {
                workspace,
                progress,
            })
        {
            let _ = callback.call1(&JsValue::UNDEFINED, &report);
        }
    }

    async fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        for _ in 0..2 {
            let (tx, reused) = self.take()?;
            let seen = std::mem::take(&mut *self.seen.borrow_mut());
            let outcome = commit_in(tx, workspace, &batch, &seen).await;
            if let Some(known) = &self.known {
                match &outcome {
                    Ok(()) => known.borrow_mut().apply(workspace, &batch),
                    // Lost to another writer, or unsure what happened: read afresh.
                    Err(_) => known.borrow_mut().clear(),
                }
            }
            match outcome {
                // The shared transaction had ended; dropping it wrote nothing.
                Err(TxError::Inactive(_)) if reused => continue,
                Ok(()) => {
                    self.wrote.set(true);
                    return Ok(());
                }
                Err(e) => return Err(e.into_inner()),
            }
        }
        Err(StorageError::Backend("no transaction".into()))
    }

    async fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String> {
        self.storage.write_archive(workspace, archive).await
    }
}

/// How one precondition is checked.
enum Plan {
    /// Decided already, from a value read earlier in the same transaction.
    Known(bool),
    /// By a read in the commit's transaction.
    Read,
    /// `absent` on a key the batch then puts: the put becomes an `add`, which fails
    /// (aborting the transaction) if the key exists — no read, no extra round trip.
    Add,
}

/// Commits `batch` in `tx` with as few round trips as the preconditions allow: those on
/// keys already read in this transaction are decided locally, `absent` ones on keys the
/// batch puts become `add`s, and only the rest are read — all requests, reads and writes,
/// go out at once, and the transaction then commits. A failing precondition aborts it:
/// nothing is written, and the first failing one (by index) is reported.
async fn commit_in(
    tx: Transaction<'_>,
    workspace: &str,
    batch: &Batch,
    seen: &Seen,
) -> Result<(), TxError> {
    let mutations = &batch.mutations;
    let mut adds = vec![None; mutations.len()];
    let plans: Vec<Plan> = batch
        .preconditions
        .iter()
        .enumerate()
        .map(|(index, precondition)| {
            let (key, expected) = match precondition {
                Precondition::Absent(key) => (key, None),
                Precondition::Equals(kv) => (&kv.key, Some(&kv.value)),
            };
            if let Some(current) = seen.get(&(workspace.to_owned(), key.clone())) {
                return Plan::Known(current.as_ref() == expected);
            }
            if expected.is_none() {
                // The first mutation that touches the key, if it is a put of that key.
                let first = mutations.iter().position(|m| match m {
                    Mutation::Put(kv) => kv.key == *key,
                    Mutation::Delete(k) => k == key,
                    Mutation::DeleteRange(r) => r.contains(key),
                });
                if let Some(at) = first
                    && matches!(&mutations[at], Mutation::Put(_))
                    && adds[at].is_none()
                {
                    adds[at] = Some(index);
                    return Plan::Add;
                }
            }
            Plan::Read
        })
        .collect();
    if let Some(index) = plans.iter().position(|p| matches!(p, Plan::Known(false))) {
        // Decided before anything is sent; dropping `tx` aborts it.
        return Err(TxError::Failed(StorageError::Conflict(
            u32::try_from(index).unwrap_or(u32::MAX),
        )));
    }
    let add_requests = {
        let store = tx.object_store(STORE).map_err(inactive("commit"))?;
        let reads = batch
            .preconditions
            .iter()
            .zip(&plans)
            .map(|(precondition, plan)| match plan {
                Plan::Read => {
                    let key = match precondition {
                        Precondition::Absent(key) => key,
                        Precondition::Equals(kv) => &kv.key,
                    };
                    store
                        .get::<JsValue, JsValue, _>(codec::key(workspace, key))
                        .primitive()
                        .map(Some)
                        .map_err(inactive("commit (precondition read)"))
                }
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let add_requests = write_pipelined(&store, workspace, mutations, &adds)?;
        for (index, (precondition, read)) in batch.preconditions.iter().zip(reads).enumerate() {
            let Some(read) = read else { continue };
            let current = read.await.map_err(failed("commit (precondition read)"))?;
            let holds = match precondition {
                Precondition::Absent(_) => current.is_none(),
                Precondition::Equals(kv) => match &current {
                    Some(value) => {
                        codec::stored(&kv.key, value).map_err(TxError::Failed)? == kv.value
                    }
                    None => false,
                },
            };
            if !holds {
                return Err(TxError::Failed(StorageError::Conflict(
                    u32::try_from(index).unwrap_or(u32::MAX),
                )));
            }
        }
        add_requests
    };
    match tx.commit().await {
        Ok(()) => Ok(()),
        Err(e) => {
            // An `add` that found its key taken aborted the transaction: that is the
            // conflict of its precondition.
            let taken = add_requests.iter().find(|(_, request)| {
                request
                    .error()
                    .ok()
                    .flatten()
                    .is_some_and(|error| error.name() == "ConstraintError")
            });
            match taken {
                Some((index, _)) => Err(TxError::Failed(StorageError::Conflict(
                    u32::try_from(*index).unwrap_or(u32::MAX),
                ))),
                None => Err(TxError::Failed(backend("commit", e))),
            }
        }
    }
}

/// Sends the mutations in order without waiting; puts marked in `adds` go out as `add`
/// and are returned with the index of the precondition they stand for.
fn write_pipelined(
    store: &ObjectStore<'_>,
    workspace: &str,
    mutations: &[Mutation],
    adds: &[Option<usize>],
) -> Result<Vec<(usize, web_sys::IdbRequest)>, TxError> {
    let mut add_requests = Vec::new();
    for (mutation, add) in mutations.iter().zip(adds) {
        match (mutation, add) {
            (Mutation::Put(kv), Some(index)) => {
                let request = store
                    .as_sys()
                    .add_with_key(&codec::value(&kv.value), &codec::key(workspace, &kv.key))
                    .map_err(|e| TxError::Inactive(backend("commit (add)", js_error(&e))))?;
                add_requests.push((*index, request));
            }
            _ => write_in(store, workspace, std::slice::from_ref(mutation))?,
        }
    }
    Ok(add_requests)
}

fn js_error(value: &JsValue) -> String {
    value
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| value.as_string())
        .unwrap_or_else(|| format!("{value:?}"))
}

/// Sends the mutations in order without waiting for each one: a failing request aborts
/// the transaction, which its commit then reports.
fn write_in(
    store: &ObjectStore<'_>,
    workspace: &str,
    mutations: &[Mutation],
) -> Result<(), TxError> {
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
        request.map_err(inactive("commit (write)"))?;
    }
    Ok(())
}
