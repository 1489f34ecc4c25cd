//! The wasmtime embedding: one engine per process, the compiled component (cached on
//! disk), and instances of it bound to a storage.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use spool::{AppendRequest, Entry, Page, PageRequest, Session, SessionList, Storage, StorageError};
use wasmtime::{Config, Engine, Store, StoreLimitsBuilder};

use crate::cache::{self, CacheStatus};
use crate::error::Error;
use crate::wit::{Exports, HostState, Pre};

/// The default cap on an instance's linear memory: a runaway guest fails with an
/// error instead of eating the machine.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// The process's wasmtime engine (created once; creating one is expensive).
fn engine() -> Result<&'static Engine, Error> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| Engine::new(&Config::new()).map_err(|e| format!("{e:#}")))
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
        let pre = crate::wit::linker(engine)
            .and_then(|linker| linker.instantiate_pre(&component))
            .and_then(Pre::new)
            .map_err(|e| Error::wasm("cannot link the Spool component", &e))?;
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

    /// An instance whose storage imports are served by `storage`, with the
    /// [`DEFAULT_MEMORY_LIMIT`].
    pub fn instantiate(&self, storage: impl Storage + Send + 'static) -> Result<Instance, Error> {
        self.instantiate_with_memory_limit(storage, DEFAULT_MEMORY_LIMIT)
    }

    /// An instance whose linear memory may grow to at most `max_memory_bytes`; a call
    /// needing more fails with an [`Error::Wasm`].
    pub fn instantiate_with_memory_limit(
        &self,
        storage: impl Storage + Send + 'static,
        max_memory_bytes: usize,
    ) -> Result<Instance, Error> {
        let mut store = new_store(Box::new(storage), max_memory_bytes)?;
        let exports = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| Error::wasm("cannot instantiate the Spool component", &e))?;
        Ok(Instance {
            pre: self.pre.clone(),
            store,
            exports: Some(exports),
            max_memory_bytes,
        })
    }
}

fn new_store(
    storage: Box<dyn Storage + Send>,
    max_memory_bytes: usize,
) -> Result<Store<HostState>, Error> {
    let limits = StoreLimitsBuilder::new()
        .memory_size(max_memory_bytes)
        .trap_on_grow_failure(true)
        .build();
    let mut store = Store::new(engine()?, HostState { storage, limits });
    store.limiter(|state| &mut state.limits);
    Ok(store)
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

/// An instance of the Spool component bound to one storage: exactly the WIT `api`,
/// with core types.
///
/// A call that traps (a bug, or the memory limit) returns [`Error::Wasm`]; the next call
/// runs on a fresh instance over the same storage.
///
/// ```
/// use spool::{AppendRequest, Role};
/// use spool_host::{Runtime, SqliteStorage};
///
/// let mut spool = Runtime::shared()?.instantiate(SqliteStorage::open_in_memory()?)?;
/// spool.create_session("default", "agent:main:main", "s1", 1_000)?;
/// let entry = spool.append_entry(
///     "default",
///     "agent:main:main",
///     AppendRequest::new(Role::User, "hello"),
///     1_001,
/// )?;
/// assert_eq!(entry.id, 1);
/// # Ok::<(), spool_host::Error>(())
/// ```
pub struct Instance {
    pre: Pre,
    store: Store<HostState>,
    exports: Option<Exports>,
    max_memory_bytes: usize,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("live", &self.exports.is_some())
            .field("max_memory_bytes", &self.max_memory_bytes)
            .finish_non_exhaustive()
    }
}

impl Instance {
    /// An instance of the [shared runtime](Runtime::shared) over `storage`.
    pub fn new(storage: impl Storage + Send + 'static) -> Result<Instance, Error> {
        Runtime::shared()?.instantiate(storage)
    }

    /// Replaces a retired instance by a fresh one over the same storage.
    fn revive(&mut self) -> Result<(), Error> {
        let storage = std::mem::replace(&mut self.store.data_mut().storage, Box::new(Detached));
        self.store = new_store(storage, self.max_memory_bytes)?;
        let exports = self
            .pre
            .instantiate(&mut self.store)
            .map_err(|e| Error::wasm("cannot instantiate the Spool component", &e))?;
        self.exports = Some(exports);
        Ok(())
    }

    /// Runs one export; a runtime failure (trap) retires the instance, since a trapped
    /// component instance cannot be entered again.
    fn call<T>(
        &mut self,
        f: impl FnOnce(&Exports, &mut Store<HostState>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        if self.exports.is_none() {
            self.revive()?;
        }
        let Instance { store, exports, .. } = self;
        let Some(live) = exports.as_ref() else {
            return Err(Error::Wasm {
                context: "cannot instantiate the Spool component".into(),
                message: "no live instance".into(),
                backtrace: None,
            });
        };
        let result = f(live, store);
        if matches!(result, Err(Error::Wasm { .. })) {
            *exports = None;
        }
        result
    }

    /// Creates a session under `key` with identity `session_id`; a key in use is a
    /// `conflict`.
    pub fn create_session(
        &mut self,
        workspace: &str,
        key: &str,
        session_id: &str,
        now_ms: u64,
    ) -> Result<Session, Error> {
        self.call(|e, s| e.create_session(s, workspace, key, session_id, now_ms))
    }

    /// The session under `key`, or `None`.
    pub fn get_session(&mut self, workspace: &str, key: &str) -> Result<Option<Session>, Error> {
        self.call(|e, s| e.get_session(s, workspace, key))
    }

    /// Appends one entry to the session under `key`.
    pub fn append_entry(
        &mut self,
        workspace: &str,
        key: &str,
        request: AppendRequest,
        now_ms: u64,
    ) -> Result<Entry, Error> {
        self.call(|e, s| e.append_entry(s, workspace, key, request, now_ms))
    }

    /// Reads one page of the transcript of the session under `key`.
    pub fn read_page(
        &mut self,
        workspace: &str,
        key: &str,
        request: PageRequest,
    ) -> Result<Page, Error> {
        self.call(|e, s| e.read_page(s, workspace, key, request))
    }

    /// Lists sessions, most recently updated first, `limit` (1 to 1000) at a time.
    pub fn list_sessions(
        &mut self,
        workspace: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<SessionList, Error> {
        self.call(|e, s| e.list_sessions(s, workspace, limit, cursor))
    }
}
