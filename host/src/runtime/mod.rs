//! The wasmtime embedding: one engine per process, the compiled component (cached on
//! disk), and instances of it bound to a storage.

pub(crate) mod cache;
pub(crate) mod wit;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use spool::import::{ImportFormat, ImportedLog};
use spool::{Archiver, NoArchive, Storage, StorageError};
use wasmtime::{CallHook, Config, Engine, ResourceLimiter, Store, StoreContextMut};

use crate::error::Error;
use cache::CacheStatus;
use wit::{Call, Exports, HostState, Pre, ProgressSink};

/// The default cap on an instance's linear memory: a runaway guest fails with an
/// error instead of eating the machine.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// The default execution limit of one call, in wasmtime fuel units (about one per
/// WebAssembly instruction): far above what any real call needs (compacting a
/// 100,000-entry session takes a few hundred million), yet it stops a guest stuck in a
/// loop within seconds to minutes instead of never.
pub const DEFAULT_FUEL_LIMIT: u64 = 50_000_000_000;

/// The fuel a call gains per byte (of keys and values) its storage reads hand the guest,
/// by default: a call's work grows with the data it reads (compacting a session reads
/// it twice and takes about 400 fuel per byte of it), which a constant limit does not.
pub const DEFAULT_FUEL_PER_BYTE_READ: u64 = 1_000;

/// The most fuel one call may have in all, its start and what its reads added, by
/// default: twenty times [`DEFAULT_FUEL_LIMIT`], enough to compact a 1 GiB session, and
/// a bound on a guest that loops over reads (about a minute and a half of execution).
pub const DEFAULT_MAX_FUEL_PER_CALL: u64 = 20 * DEFAULT_FUEL_LIMIT;

/// The resources one [`Instance`] may use: linear memory in total, and fuel per call.
/// A call over either fails with [`Error::ResourceLimit`] (code `resource_limit`), and
/// the instance stays usable for the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    /// The most linear memory the instance may grow to, in bytes
    /// (default [`DEFAULT_MEMORY_LIMIT`]).
    pub max_memory_bytes: usize,
    /// The fuel each call starts with (default [`DEFAULT_FUEL_LIMIT`]).
    pub fuel_per_call: u64,
    /// The fuel a call gains per byte its storage reads return
    /// (default [`DEFAULT_FUEL_PER_BYTE_READ`]; 0: the start is all it gets).
    pub fuel_per_byte_read: u64,
    /// The most fuel a call has in all, its start included
    /// (default [`DEFAULT_MAX_FUEL_PER_CALL`]).
    pub max_fuel_per_call: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            max_memory_bytes: DEFAULT_MEMORY_LIMIT,
            fuel_per_call: DEFAULT_FUEL_LIMIT,
            fuel_per_byte_read: DEFAULT_FUEL_PER_BYTE_READ,
            max_fuel_per_call: DEFAULT_MAX_FUEL_PER_CALL,
        }
    }
}

/// The process's wasmtime engine (created once; creating one is expensive). Fuel is on
/// for every instance: it is how a call's execution is bounded (deterministic, and no
/// timer thread, unlike epoch interruption; see the README for its measured cost).
fn engine() -> Result<&'static Engine, Error> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.consume_fuel(true);
            Engine::new(&config).map_err(|e| format!("{e:#}"))
        })
        .as_ref()
        .map_err(|message| Error::Wasm {
            context: "cannot create the WebAssembly engine".into(),
            message: message.clone(),
            backtrace: None,
        })
}

/// The compiled Spool component, linked against the host's storage and ready to
/// instantiate (instantiation takes microseconds).
///
/// Most programs use [`Runtime::shared`]; [`Runtime::load`] picks the cache directory.
#[derive(Clone)]
pub struct Runtime {
    pre: Pre,
    status: CacheStatus,
    cache_file: Option<PathBuf>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("status", &self.status)
            .field("cache_file", &self.cache_file)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// The process-wide runtime, loaded on first use with the default cache directory
    /// ([`crate::default_cache_dir`]).
    pub fn shared() -> Result<&'static Runtime, Error> {
        static SHARED: OnceLock<Result<Runtime, (String, String)>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                Runtime::load(cache::default_cache_dir().as_deref()).map_err(|e| match e {
                    Error::Wasm {
                        context, message, ..
                    } => (context, message),
                    other => ("cannot load the component".into(), other.to_string()),
                })
            })
            .as_ref()
            .map_err(|(context, message)| Error::Wasm {
                context: context.clone(),
                message: message.clone(),
                backtrace: None,
            })
    }

    /// Compiles the component, or loads its compilation from `cache_dir` (`None`: no
    /// cache). An unusable cache file is replaced; an unwritable directory only costs
    /// the compilation time.
    pub fn load(cache_dir: Option<&Path>) -> Result<Runtime, Error> {
        let engine = engine()?;
        let (component, status, cache_file) = cache::load(engine, cache_dir)
            .map_err(|e| Error::wasm("cannot compile the Spool component", &e))?;
        let pre = crate::runtime::wit::linker(engine)
            .and_then(|linker| linker.instantiate_pre(&component))
            .map_err(|e| Error::wasm("cannot link the Spool component", &e))
            .and_then(Pre::new)?;
        Ok(Runtime {
            pre,
            status,
            cache_file,
        })
    }

    /// How the compiled component was obtained.
    pub fn cache_status(&self) -> &CacheStatus {
        &self.status
    }

    /// The cache file used, if there is a cache directory.
    pub fn cache_file(&self) -> Option<&Path> {
        self.cache_file.as_deref()
    }

    /// An instance whose storage imports are served by `storage` and whose reset
    /// archives go to `archiver` (e.g. an [`ArchiveDir`](crate::ArchiveDir), or
    /// [`spool::NoArchive`] to keep none), with the default [`ResourceLimits`].
    pub fn instantiate(
        &self,
        storage: impl Storage + Send + 'static,
        archiver: impl Archiver + Send + 'static,
    ) -> Result<Instance, Error> {
        self.instantiate_with_limits(storage, archiver, ResourceLimits::default())
    }

    /// Like [`instantiate`](Self::instantiate), but the instance's linear memory may
    /// grow to at most `max_memory_bytes`; a call needing more fails with
    /// [`Error::ResourceLimit`].
    pub fn instantiate_with_memory_limit(
        &self,
        storage: impl Storage + Send + 'static,
        archiver: impl Archiver + Send + 'static,
        max_memory_bytes: usize,
    ) -> Result<Instance, Error> {
        let limits = ResourceLimits {
            max_memory_bytes,
            ..ResourceLimits::default()
        };
        self.instantiate_with_limits(storage, archiver, limits)
    }

    /// Like [`instantiate`](Self::instantiate), with explicit memory and execution
    /// limits; a call over either fails with [`Error::ResourceLimit`].
    ///
    /// ```
    /// use spool_host::{ResourceLimits, Runtime, SqliteStorage};
    ///
    /// let limits = ResourceLimits { fuel_per_call: 1_000, ..ResourceLimits::default() };
    /// let mut spool = Runtime::shared()?.instantiate_with_limits(
    ///     SqliteStorage::open_in_memory()?,
    ///     spool::NoArchive,
    ///     limits,
    /// )?;
    /// let create = spool::ops::CreateSession {
    ///     key: "agent:main:main".into(),
    ///     session_id: "s1".into(),
    ///     now_ms: 1,
    /// };
    /// let err = spool.call("default", create).unwrap_err();
    /// assert_eq!(err.code(), "resource_limit");
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn instantiate_with_limits(
        &self,
        storage: impl Storage + Send + 'static,
        archiver: impl Archiver + Send + 'static,
        limits: ResourceLimits,
    ) -> Result<Instance, Error> {
        let mut store = new_store(Box::new(storage), Box::new(archiver), limits)?;
        let exports = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| Error::wasm("cannot instantiate the Spool component", &e))?;
        Ok(Instance {
            pre: self.pre.clone(),
            store,
            exports: Some(exports),
            limits,
            retired_peak: 0,
        })
    }
}

/// The store's memory limiter: refuses (as a trap) growth past the limit and remembers
/// that it did, so the failed call can be reported as a resource limit. It sees every
/// growth (the initial size of a memory included), so it also keeps the store's linear
/// memory in total: its peak, since linear memory never shrinks.
pub(crate) struct GuestLimits {
    max_memory_bytes: usize,
    /// Bytes the storage handed the guest since the call was last refuelled.
    pub(crate) read_bytes: u64,
    /// The fuel the current call may still gain from its reads.
    fuel_left_to_grant: u64,
    /// The size a refused growth asked for, since the last call began.
    refused: Option<usize>,
    /// The bytes of linear memory the store's memories have grown to, together.
    grown: usize,
}

impl ResourceLimiter for GuestLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory_bytes || maximum.is_some_and(|max| desired > max) {
            self.refused = Some(desired);
            wasmtime::bail!(
                "the memory limit of {} bytes refused growing to {desired} bytes",
                self.max_memory_bytes
            );
        }
        self.grown = self.grown.saturating_add(desired.saturating_sub(current));
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(maximum.is_none_or(|max| desired <= max))
    }
}

fn new_store(
    storage: Box<dyn Storage + Send>,
    archiver: Box<dyn Archiver + Send>,
    limits: ResourceLimits,
) -> Result<Store<HostState>, Error> {
    let mut store = Store::new(
        engine()?,
        HostState {
            storage,
            archiver,
            archive: spool::ArchiveInProgress::default(),
            limits: GuestLimits {
                max_memory_bytes: limits.max_memory_bytes,
                read_bytes: 0,
                fuel_left_to_grant: 0,
                refused: None,
                grown: 0,
            },
            progress: None,
        },
    );
    store.limiter(|state| &mut state.limits);
    // Each return from a storage read adds the fuel its bytes earn.
    let per_byte = limits.fuel_per_byte_read;
    store.call_hook(move |mut store, hook| {
        if matches!(hook, CallHook::ReturningFromHost) {
            refuel(&mut store, per_byte)?;
        }
        Ok(())
    });
    // What the guest hands the host in one call (a commit's batch) is copied out of its
    // linear memory, so it is bounded by the memory limit already; wasmtime's own
    // default cap (128 MiB) would refuse a large compaction's batch that fits in it.
    store.set_hostcall_fuel(limits.max_memory_bytes);
    // Instantiation runs guest code too (start functions, initializers).
    store
        .set_fuel(limits.fuel_per_call)
        .map_err(|e| Error::wasm("cannot set the execution limit", &e))?;
    Ok(store)
}

/// Adds to the call's fuel what the bytes read since the last refuel earn (`per_byte`
/// each), within what the call may still gain.
fn refuel(store: &mut StoreContextMut<'_, HostState>, per_byte: u64) -> wasmtime::Result<()> {
    let limits = &mut store.data_mut().limits;
    let read = std::mem::take(&mut limits.read_bytes);
    let grant = read.saturating_mul(per_byte).min(limits.fuel_left_to_grant);
    if grant == 0 {
        return Ok(());
    }
    limits.fuel_left_to_grant -= grant;
    let fuel = store.get_fuel()?;
    store.set_fuel(fuel.saturating_add(grant))
}

/// A storage that refuses everything: holds the place of the real one while an
/// instance is being replaced.
struct Detached;

impl Storage for Detached {
    fn get(&self, _: &str, _: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Err(StorageError::Backend("storage detached".into()))
    }
    fn range(&self, _: &str, _: &spool::RangeQuery) -> Result<Vec<spool::Kv>, StorageError> {
        Err(StorageError::Backend("storage detached".into()))
    }
    fn commit(&self, _: &str, _: spool::Batch) -> Result<(), StorageError> {
        Err(StorageError::Backend("storage detached".into()))
    }
}

/// An instance of the Spool component bound to one storage and one reset-archive store:
/// exactly the WIT `api`, with core types.
///
/// Every call takes the workspace it acts in; time (`now_ms`, milliseconds since the
/// Unix epoch) and fresh session ids are arguments ([`crate::Spool`] supplies them).
///
/// A call that traps returns [`Error::Wasm`] (a bug) or [`Error::ResourceLimit`] (over
/// the memory or execution limit, see [`ResourceLimits`]); the next call runs on a
/// fresh instance over the same storage.
///
/// ```
/// use spool::{AppendRequest, Intent, Role, ops};
/// use spool_host::{ArchiveDir, Runtime, SqliteStorage};
///
/// let dir = tempfile::tempdir()?;
/// let archives = ArchiveDir::new(dir.path().join("archives"));
/// let mut spool = Runtime::shared()?.instantiate(SqliteStorage::open_in_memory()?, archives)?;
/// let key = "agent:main:main".to_owned();
/// spool.call("default", ops::CreateSession { key: key.clone(), session_id: "s1".into(), now_ms: 1_000 })?;
/// let request = AppendRequest::new(Role::User, "hello");
/// let entry = spool.call("default", ops::AppendEntry { key: key.clone(), request, now_ms: 1_001 })?;
/// assert_eq!(entry.id, 1);
///
/// let intent = Intent::ResetSameKey;
/// let reset = spool.call("default", ops::ApplyIntent { key, intent, session_id: "s2".into(), now_ms: 1_002 })?;
/// assert_eq!((reset.session.session_id.as_str(), reset.session.epoch), ("s2", 1));
/// assert!(reset.archive.expect("an existing session was archived").written);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Instance {
    pre: Pre,
    store: Store<HostState>,
    exports: Option<Exports>,
    limits: ResourceLimits,
    /// The peak linear memory of the stores this instance replaced (after a trap).
    retired_peak: usize,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("live", &self.exports.is_some())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Instance {
    /// An instance of the [shared runtime](Runtime::shared) over `storage`, keeping
    /// reset archives with `archiver` ([`spool::NoArchive`] keeps none).
    pub fn new(
        storage: impl Storage + Send + 'static,
        archiver: impl Archiver + Send + 'static,
    ) -> Result<Instance, Error> {
        Runtime::shared()?.instantiate(storage, archiver)
    }

    /// The most linear memory this instance's guest has held, in bytes: its initial
    /// memory plus every growth, up to now (a growth the limit refused is not counted).
    /// Linear memory never shrinks, so this is also what the guest holds now; to measure
    /// one call, make it on a fresh instance. After a trap the instance continues on a
    /// fresh store, and this is the larger of the two peaks.
    ///
    /// ```
    /// use spool::{NoArchive, ops};
    /// use spool_host::{Runtime, SqliteStorage};
    ///
    /// let mut spool = Runtime::shared()?.instantiate(SqliteStorage::open_in_memory()?, NoArchive)?;
    /// let at_start = spool.peak_memory_bytes();
    /// assert!(at_start > 0);
    /// spool.call("default", ops::GetSession { key: "agent:main:main".into() })?;
    /// assert!(spool.peak_memory_bytes() >= at_start);
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn peak_memory_bytes(&self) -> usize {
        self.retired_peak.max(self.store.data().limits.grown)
    }

    /// Sends the progress of this instance's long calls (a compaction's passes, a
    /// reset's archive: [`spool::Progress`]) to `sink`, with the call's workspace, while
    /// they run; `None` stops it. A sink runs inside the call: keep it quick.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use spool::{NoArchive, ops};
    /// use spool_host::{Runtime, SqliteStorage};
    ///
    /// let mut spool = Runtime::shared()?.instantiate(SqliteStorage::open_in_memory()?, NoArchive)?;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// spool.set_progress(Some(Box::new(move |_workspace: &str, p: &spool::Progress| {
    ///     log.lock().unwrap().push(p.phase.clone());
    /// })));
    /// spool.call("default", ops::GetSession { key: "agent:main:main".into() })?;
    /// assert!(seen.lock().unwrap().is_empty()); // a short call reports nothing
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn set_progress(&mut self, sink: Option<ProgressSink>) {
        self.store.data_mut().progress = sink;
    }

    /// Replaces a retired instance by a fresh one over the same storage and archiver.
    fn revive(&mut self) -> Result<(), Error> {
        self.retired_peak = self.peak_memory_bytes();
        let data = self.store.data_mut();
        let storage = std::mem::replace(&mut data.storage, Box::new(Detached));
        let archiver = std::mem::replace(&mut data.archiver, Box::new(NoArchive));
        let progress = data.progress.take();
        self.store = new_store(storage, archiver, self.limits)?;
        self.store.data_mut().progress = progress;
        let exports = self
            .pre
            .instantiate(&mut self.store)
            .map_err(|e| Error::wasm("cannot instantiate the Spool component", &e))?;
        self.exports = Some(exports);
        Ok(())
    }

    /// Runs one export; a runtime failure (trap) retires the instance, since a trapped
    /// component instance cannot be entered again.
    fn enter<T>(
        &mut self,
        f: impl FnOnce(&Exports, &mut Store<HostState>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        if self.exports.is_none() {
            self.revive()?;
        }
        let Instance {
            store,
            exports,
            limits,
            ..
        } = self;
        let Some(live) = exports.as_ref() else {
            return Err(Error::Wasm {
                context: "cannot instantiate the Spool component".into(),
                message: "no live instance".into(),
                backtrace: None,
            });
        };
        store
            .set_fuel(limits.fuel_per_call)
            .map_err(|e| Error::wasm("cannot set the execution limit", &e))?;
        let guest = &mut store.data_mut().limits;
        guest.refused = None;
        guest.read_bytes = 0;
        guest.fuel_left_to_grant = limits
            .max_fuel_per_call
            .saturating_sub(limits.fuel_per_call);
        // The export is one operation for the storage: its reads may share a snapshot
        // that carries on into its commit (see `Storage::begin_operation`).
        store.data().storage.begin_operation();
        let result = f(live, store);
        store.data().storage.end_operation();
        // A reset archive the call began and did not finish (the reset failed) is
        // abandoned now, its temporary file removed, not at the next reset.
        store.data_mut().archive = spool::ArchiveInProgress::default();
        match result {
            Err(error @ Error::Wasm { .. }) => {
                *exports = None;
                Err(over_limit(store, *limits, error))
            }
            other => other,
        }
    }

    /// Performs one API call (any [`spool::ops`] struct) in `workspace` through the
    /// component's typed export for it.
    ///
    /// ```
    /// use spool::{AppendRequest, NoArchive, Role, ops};
    /// use spool_host::{Runtime, SqliteStorage};
    ///
    /// let mut spool = Runtime::shared()?.instantiate(SqliteStorage::open_in_memory()?, NoArchive)?;
    /// let key = "agent:main:main".to_owned();
    /// spool.call("default", ops::CreateSession { key: key.clone(), session_id: "s1".into(), now_ms: 1_000 })?;
    /// let request = AppendRequest::new(Role::User, "hi");
    /// let entry = spool.call("default", ops::AppendEntry { key, request, now_ms: 1_001 })?;
    /// assert_eq!(entry.id, 1);
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn call<O: Call>(&mut self, workspace: &str, op: O) -> Result<O::Output, Error> {
        self.enter(|e, s| op.call(e, s, workspace))
    }

    /// Parses an agent log (`text`: Claude Code session JSONL or a Codex rollout) into
    /// the core's [`ImportedLog`]: its sessions with their entries, the line types it
    /// skipped (counted), invalid line numbers and a cut-off last line. Pure: reads and
    /// writes nothing. The whole text crosses into the component, so it must fit in the
    /// instance's memory with room for the result (the CLI caps files at 64 MiB).
    pub fn parse_import(&mut self, format: ImportFormat, text: &str) -> Result<ImportedLog, Error> {
        let format = format.agent_type();
        let json = self.enter(|e, s| e.parse_import(s, format, text))?;
        decode("parse-import", &json)
    }

    /// Parses the next slice of a log that can be read a slice at a time
    /// ([`spool::import::streams`]: Codex rollouts), so a log of any size is imported in
    /// memory bounded by its slices: `text` is whole lines, each ended by a newline,
    /// unless `last` (the end of the file, which may be a line cut short). `cursor` is
    /// what the previous slice returned (`""` for the first); the answer is the slice's
    /// [`ImportedLog`] (see [`spool::import::parse_slice`]) and the next cursor.
    pub fn parse_import_slice(
        &mut self,
        format: ImportFormat,
        cursor: &str,
        text: &str,
        last: bool,
    ) -> Result<(ImportedLog, String), Error> {
        let format = format.agent_type();
        let (json, next) =
            self.enter(|e, s| e.parse_import_slice(s, format, cursor, text, last))?;
        Ok((decode("parse-import-slice", &json)?, next))
    }
}

/// The error of a call that trapped: [`Error::ResourceLimit`] when it ran out of fuel
/// or was refused memory, else the trap as it was.
fn over_limit(store: &mut Store<HostState>, limits: ResourceLimits, trap: Error) -> Error {
    let context = match &trap {
        Error::Wasm { context, .. } => context.as_str(),
        _ => "the call failed",
    };
    if let Some(desired) = store.data_mut().limits.refused.take() {
        return Error::ResourceLimit {
            limit: "memory",
            message: format!(
                "{context}: the call needed {desired} bytes of memory, over the limit of {} bytes",
                limits.max_memory_bytes
            ),
        };
    }
    if store.get_fuel().is_ok_and(|fuel| fuel == 0) {
        return Error::ResourceLimit {
            limit: "fuel",
            message: format!(
                "{context}: the call ran out of its execution limit ({} fuel, and {} per \
                 byte it read, at most {} in all)",
                limits.fuel_per_call, limits.fuel_per_byte_read, limits.max_fuel_per_call
            ),
        };
    }
    trap
}

/// The JSON text the component returned from `call`, as the core's type.
fn decode<T: serde::de::DeserializeOwned>(call: &str, json: &str) -> Result<T, Error> {
    serde_json::from_str(json).map_err(|e| {
        Error::spool(
            spool::ErrorCode::Internal,
            format!("the component returned a result of `{call}` that does not decode: {e}"),
        )
    })
}
