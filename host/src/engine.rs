//! The wasmtime embedding: one engine per process, the compiled component (cached on
//! disk), and instances of it bound to a storage.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use spool::compaction::{
    CommitRequest, CompactRequest, CompactionResult, PersistRequest, Prepared, Summary,
};
use std::collections::BTreeMap;

use serde_json::Value;
use spool::import::{ImportFormat, ImportOutcome, ImportRequest, ImportedLog};
use spool::resume::{ResumeDecision, RunRecord, TaskOutcomeEffects};
use spool::{
    AppendRequest, Archiver, ContextState, Entry, FinishStatus, Intent, IntentOutcome, ListFilter,
    NewContextState, NewRoleSession, NewRun, NoArchive, OutcomeRequest, Page, PageRequest,
    ResumeRequest, RoleSession, RunFilter, RunList, Session, SessionList, Storage, StorageError,
    ThreadPlan, TruncateOutcome, TurnCommit, TurnCommitted, UpdateRequest,
};
use wasmtime::{Config, Engine, ResourceLimiter, Store};

use crate::cache::{self, CacheStatus};
use crate::error::Error;
use crate::wit::{Exports, HostState, Pre};

/// The default cap on an instance's linear memory: a runaway guest fails with an
/// error instead of eating the machine.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// The default execution limit of one call, in wasmtime fuel units (about one per
/// WebAssembly instruction): far above what any real call needs (compacting a
/// 100,000-entry session takes a few hundred million), yet it stops a guest stuck in a
/// loop within seconds to minutes instead of never.
pub const DEFAULT_FUEL_LIMIT: u64 = 50_000_000_000;

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
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            max_memory_bytes: DEFAULT_MEMORY_LIMIT,
            fuel_per_call: DEFAULT_FUEL_LIMIT,
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
    /// let err = spool.create_session("default", "agent:main:main", "s1", 1).unwrap_err();
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
        })
    }
}

/// The store's memory limiter: refuses (as a trap) growth past the limit and remembers
/// that it did, so the failed call can be reported as a resource limit.
pub(crate) struct GuestLimits {
    max_memory_bytes: usize,
    /// The size a refused growth asked for, since the last call began.
    refused: Option<usize>,
}

impl ResourceLimiter for GuestLimits {
    fn memory_growing(
        &mut self,
        _current: usize,
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
            limits: GuestLimits {
                max_memory_bytes: limits.max_memory_bytes,
                refused: None,
            },
        },
    );
    store.limiter(|state| &mut state.limits);
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
/// use spool::{AppendRequest, Intent, Role};
/// use spool_host::{ArchiveDir, Runtime, SqliteStorage};
///
/// let dir = tempfile::tempdir()?;
/// let archives = ArchiveDir::new(dir.path().join("archives"));
/// let mut spool = Runtime::shared()?.instantiate(SqliteStorage::open_in_memory()?, archives)?;
/// spool.create_session("default", "agent:main:main", "s1", 1_000)?;
/// let entry = spool.append_entry(
///     "default",
///     "agent:main:main",
///     AppendRequest::new(Role::User, "hello"),
///     1_001,
/// )?;
/// assert_eq!(entry.id, 1);
///
/// let reset = spool.apply_intent("default", "agent:main:main", Intent::ResetSameKey, "s2", 1_002)?;
/// assert_eq!((reset.session.session_id.as_str(), reset.session.epoch), ("s2", 1));
/// assert!(reset.archive.expect("an existing session was archived").written);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Instance {
    pre: Pre,
    store: Store<HostState>,
    exports: Option<Exports>,
    limits: ResourceLimits,
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

    /// Replaces a retired instance by a fresh one over the same storage and archiver.
    fn revive(&mut self) -> Result<(), Error> {
        let data = self.store.data_mut();
        let storage = std::mem::replace(&mut data.storage, Box::new(Detached));
        let archiver = std::mem::replace(&mut data.archiver, Box::new(NoArchive));
        self.store = new_store(storage, archiver, self.limits)?;
        let exports = self
            .pre
            .instantiate(&mut self.store)
            .map_err(|e| Error::wasm("cannot instantiate the Spool component", &e))?;
        self.exports = Some(exports);
        Ok(())
    }

    /// Runs one export; a runtime failure (trap) retires the instance, since a trapped
    /// component instance cannot be entered again.
    pub(crate) fn call<T>(
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
        store.data_mut().limits.refused = None;
        let result = f(live, store);
        match result {
            Err(error @ Error::Wasm { .. }) => {
                *exports = None;
                Err(over_limit(store, *limits, error))
            }
            other => other,
        }
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

    /// Lists sessions, most recently updated first, `limit` (1 to 1000) at a time,
    /// only those passing `filter`; `cursor` is the previous page's `next_cursor`.
    pub fn list_sessions(
        &mut self,
        workspace: &str,
        limit: u32,
        cursor: Option<&str>,
        filter: &ListFilter,
    ) -> Result<SessionList, Error> {
        self.call(|e, s| e.list_sessions(s, workspace, limit, cursor, filter))
    }

    /// The session under `key`, created with identity `session_id` when missing
    /// (`created` says which).
    pub fn get_or_create(
        &mut self,
        workspace: &str,
        key: &str,
        session_id: &str,
        now_ms: u64,
    ) -> Result<IntentOutcome, Error> {
        self.call(|e, s| e.get_or_create(s, workspace, key, session_id, now_ms))
    }

    /// Applies `intent` to `key`: `session_id` is the identity of a created or reset
    /// session. A reset first hands the old generation to the archiver; its outcome is
    /// in [`IntentOutcome::archive`] (a failed archive never fails the reset).
    pub fn apply_intent(
        &mut self,
        workspace: &str,
        key: &str,
        intent: Intent,
        session_id: &str,
        now_ms: u64,
    ) -> Result<IntentOutcome, Error> {
        self.call(|e, s| e.apply_intent(s, workspace, key, intent, session_id, now_ms))
    }

    /// Touches `updated_at` of the session under `key`; a missing key is `not_found`.
    pub fn resume(&mut self, workspace: &str, key: &str, now_ms: u64) -> Result<Session, Error> {
        self.call(|e, s| e.resume(s, workspace, key, now_ms))
    }

    /// Changes model, channel, model config and metadata (maps merge key by key, a
    /// `null` value removes a key).
    pub fn update(
        &mut self,
        workspace: &str,
        key: &str,
        request: UpdateRequest,
        now_ms: u64,
    ) -> Result<Session, Error> {
        self.call(|e, s| e.update(s, workspace, key, request, now_ms))
    }

    /// Finishes the session: its status, `ended_at` and `runtime_ms`.
    pub fn finish(
        &mut self,
        workspace: &str,
        key: &str,
        status: FinishStatus,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<Session, Error> {
        self.call(|e, s| e.finish(s, workspace, key, status, expected_epoch, now_ms))
    }

    /// Deletes the session under `key` and everything it owns.
    pub fn delete_session(
        &mut self,
        workspace: &str,
        key: &str,
        expected_epoch: Option<u64>,
    ) -> Result<(), Error> {
        self.call(|e, s| e.delete_session(s, workspace, key, expected_epoch))
    }

    /// Deletes the sessions idle longer than `max_age_ms` with everything they own;
    /// returns how many.
    pub fn prune_stale(
        &mut self,
        workspace: &str,
        max_age_ms: u64,
        now_ms: u64,
    ) -> Result<u64, Error> {
        self.call(|e, s| e.prune_stale(s, workspace, max_age_ms, now_ms))
    }

    /// Keeps the `max` most recently updated sessions and deletes the rest; returns how
    /// many were deleted.
    pub fn cap_entries(&mut self, workspace: &str, max: u64) -> Result<u64, Error> {
        self.call(|e, s| e.cap_entries(s, workspace, max))
    }

    /// The number of transcript entries of the session under `key`.
    pub fn count_entries(&mut self, workspace: &str, key: &str) -> Result<u64, Error> {
        self.call(|e, s| e.count_entries(s, workspace, key))
    }

    /// The entry with `message_id` in the transcript of the session under `key`, or
    /// `None`.
    pub fn get_entry(
        &mut self,
        workspace: &str,
        key: &str,
        message_id: &str,
    ) -> Result<Option<Entry>, Error> {
        self.call(|e, s| e.get_entry(s, workspace, key, message_id))
    }

    /// Keeps the newest `max_messages` entries of the session under `key`.
    pub fn truncate(
        &mut self,
        workspace: &str,
        key: &str,
        max_messages: u64,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<TruncateOutcome, Error> {
        self.call(|e, s| e.truncate(s, workspace, key, max_messages, expected_epoch, now_ms))
    }

    /// Saves a context state for the session under `key`; returns it with its id.
    pub fn save_state(
        &mut self,
        workspace: &str,
        key: &str,
        state: NewContextState,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<ContextState, Error> {
        self.call(|e, s| e.save_state(s, workspace, key, state, expected_epoch, now_ms))
    }

    /// The context states of the session under `key`, oldest first; only valid ones
    /// unless `valid_only` is false.
    pub fn list_states(
        &mut self,
        workspace: &str,
        key: &str,
        valid_only: bool,
    ) -> Result<Vec<ContextState>, Error> {
        self.call(|e, s| e.list_states(s, workspace, key, valid_only))
    }

    /// Invalidates the valid context states of the session under `key` (only those of
    /// `state_kind` when given) with `reason`; returns how many.
    pub fn invalidate_states(
        &mut self,
        workspace: &str,
        key: &str,
        state_kind: Option<&str>,
        reason: &str,
        now_ms: u64,
    ) -> Result<u64, Error> {
        self.call(|e, s| e.invalidate_states(s, workspace, key, state_kind, reason, now_ms))
    }

    /// Compacts the session under `key` with the built-in deterministic summarizer
    /// (`summary_source` `fallback`) when its transcript exceeds the window
    /// (`tokens × safety_margin > context_window_tokens`); otherwise nothing is written
    /// and the result says why (`skip_reason`).
    pub fn compact(
        &mut self,
        workspace: &str,
        key: &str,
        request: CompactRequest,
        now_ms: u64,
    ) -> Result<CompactionResult, Error> {
        self.call(|e, s| e.compact(s, workspace, key, &request, now_ms))
    }

    /// Phase one of a two-phase compaction: the exact text to summarize, the obligations
    /// the summary must keep, the cut and the preimage token. Writes nothing.
    pub fn prepare_compaction(
        &mut self,
        workspace: &str,
        key: &str,
        request: CompactRequest,
    ) -> Result<Prepared, Error> {
        self.call(|e, s| e.prepare_compaction(s, workspace, key, &request))
    }

    /// Phase two: commits an external summary (`summary_source` `llm`) of the prepared
    /// cut after checking the preimage (a changed transcript → `skip_reason`
    /// `stale_preimage`) and the coverage (blocking mode → `coverage_blocked`).
    pub fn commit_compaction(
        &mut self,
        workspace: &str,
        key: &str,
        commit: CommitRequest,
        now_ms: u64,
    ) -> Result<CompactionResult, Error> {
        self.call(|e, s| e.commit_compaction(s, workspace, key, &commit, now_ms))
    }

    /// Stores a summary an agent produced itself: `kept_entries` replace the last
    /// `kept_entries.len()` active entries and the earlier ones move to the archive. An
    /// empty summary touches nothing.
    pub fn persist_compaction_result(
        &mut self,
        workspace: &str,
        key: &str,
        persist: PersistRequest,
        now_ms: u64,
    ) -> Result<CompactionResult, Error> {
        self.call(|e, s| e.persist_compaction_result(s, workspace, key, persist, now_ms))
    }

    /// The canonical transcript of the session under `key`: the entries compactions
    /// archived and the active ones, in original order (the transcript as appended).
    pub fn canonical_transcript(
        &mut self,
        workspace: &str,
        key: &str,
    ) -> Result<Vec<Entry>, Error> {
        self.call(|e, s| e.canonical_transcript(s, workspace, key))
    }

    /// The compaction summaries of the session under `key`, oldest first.
    pub fn list_summaries(&mut self, workspace: &str, key: &str) -> Result<Vec<Summary>, Error> {
        self.call(|e, s| e.list_summaries(s, workspace, key))
    }

    /// The degraded compactions (flush receipt `degraded_forensic`, no repair status)
    /// waiting for repair in `workspace`, of one agent when `agent_id` is given.
    pub fn list_degraded_compactions(
        &mut self,
        workspace: &str,
        agent_id: Option<&str>,
    ) -> Result<Vec<Summary>, Error> {
        self.call(|e, s| e.list_degraded_compactions(s, workspace, agent_id))
    }

    /// The entries the compaction `compaction_id` archived (its pre-image), in original
    /// order; an unknown compaction is `not_found`.
    pub fn compaction_preimage(
        &mut self,
        workspace: &str,
        key: &str,
        compaction_id: &str,
    ) -> Result<Vec<Entry>, Error> {
        self.call(|e, s| e.compaction_preimage(s, workspace, key, compaction_id))
    }

    /// Sets the repair status of a compaction (e.g. `repaired`); it leaves the repair
    /// queue. Returns the updated summary.
    pub fn set_repair_status(
        &mut self,
        workspace: &str,
        key: &str,
        compaction_id: &str,
        status: &str,
    ) -> Result<Summary, Error> {
        self.call(|e, s| e.set_repair_status(s, workspace, key, compaction_id, status))
    }

    /// Back-fills the flush receipt of a compaction (e.g. `safe`); one no longer
    /// degraded leaves the repair queue. Returns the updated summary.
    pub fn set_flush_receipt(
        &mut self,
        workspace: &str,
        key: &str,
        compaction_id: &str,
        status: &str,
    ) -> Result<Summary, Error> {
        self.call(|e, s| e.set_flush_receipt(s, workspace, key, compaction_id, status))
    }

    /// Creates or replaces the role session `role.role_session_id` (its whole adapter
    /// state is replaced; `created_at` survives a replacement).
    pub fn save_role_session(
        &mut self,
        workspace: &str,
        role: NewRoleSession,
        now_ms: u64,
    ) -> Result<RoleSession, Error> {
        self.call(|e, s| e.save_role_session(s, workspace, role, now_ms))
    }

    /// The role session `role_session_id`, or `None`.
    pub fn get_role_session(
        &mut self,
        workspace: &str,
        role_session_id: &str,
    ) -> Result<Option<RoleSession>, Error> {
        self.call(|e, s| e.get_role_session(s, workspace, role_session_id))
    }

    /// Sets (latest wins) or, with `None`, clears the adapter state of `agent_type` in a
    /// role session; clearing also drops the legacy flat resume keys. `false` when the
    /// role session does not exist.
    pub fn update_role_adapter_state(
        &mut self,
        workspace: &str,
        role_session_id: &str,
        agent_type: &str,
        state: Option<&BTreeMap<String, Value>>,
        now_ms: u64,
    ) -> Result<bool, Error> {
        self.call(|e, s| {
            e.update_role_adapter_state(s, workspace, role_session_id, agent_type, state, now_ms)
        })
    }

    /// The adapter state of `agent_type` in a role session; `None` when the role session
    /// or its entry is missing.
    pub fn get_role_adapter_state(
        &mut self,
        workspace: &str,
        role_session_id: &str,
        agent_type: &str,
    ) -> Result<Option<BTreeMap<String, Value>>, Error> {
        self.call(|e, s| e.get_role_adapter_state(s, workspace, role_session_id, agent_type))
    }

    /// Records an external agent run: one row per agent type, token, project and task
    /// (recording it again replaces the row). Returns the stored row.
    pub fn record_run(
        &mut self,
        workspace: &str,
        run: NewRun,
        now_ms: u64,
    ) -> Result<RunRecord, Error> {
        self.call(|e, s| e.record_run(s, workspace, run, now_ms))
    }

    /// One page of external runs passing `filter`, ordered by agent type, token, project
    /// and task, `limit` (1 to 1000) at a time; `cursor` is the previous page's
    /// `next_cursor`.
    pub fn list_runs(
        &mut self,
        workspace: &str,
        filter: &RunFilter,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<RunList, Error> {
        self.call(|e, s| e.list_runs(s, workspace, filter, limit, cursor))
    }

    /// Decides whether a new task resumes a provider session (role state first, run
    /// history second) and applies the decision's role-state clear.
    pub fn select_resume(
        &mut self,
        workspace: &str,
        request: ResumeRequest,
    ) -> Result<ResumeDecision, Error> {
        self.call(|e, s| e.select_resume(s, workspace, request))
    }

    /// Records a task's outcome: its run row and the change to its role's adapter state,
    /// in one commit. Returns what changed.
    pub fn record_task_outcome(
        &mut self,
        workspace: &str,
        request: OutcomeRequest,
        now_ms: u64,
    ) -> Result<TaskOutcomeEffects, Error> {
        self.call(|e, s| e.record_task_outcome(s, workspace, request, now_ms))
    }

    /// Whether a new agent of `agent_type` resumes the provider thread bound to the
    /// session under `key` or starts one; `dead_thread` is a thread the provider just
    /// refused to resume.
    pub fn plan_provider_thread(
        &mut self,
        workspace: &str,
        key: &str,
        agent_type: &str,
        dead_thread: Option<&str>,
    ) -> Result<ThreadPlan, Error> {
        self.call(|e, s| e.plan_provider_thread(s, workspace, key, agent_type, dead_thread))
    }

    /// Parses an agent log (`text`: Claude Code session JSONL or a Codex rollout) into
    /// the core's [`ImportedLog`]: its sessions with their entries, the line types it
    /// skipped (counted), invalid line numbers and a cut-off last line. Pure: reads and
    /// writes nothing. The whole text crosses into the component, so it must fit in the
    /// instance's memory with room for the result (the CLI caps files at 64 MiB).
    pub fn parse_import(&mut self, format: ImportFormat, text: &str) -> Result<ImportedLog, Error> {
        let format = format.agent_type();
        let json = self.call(|e, s| e.parse_import(s, format, text))?;
        decode("parse-import", &json)
    }

    /// Writes one parsed session (or a slice of at most
    /// [`MAX_IMPORT_ENTRIES`](spool::import::MAX_IMPORT_ENTRIES) of its entries, in log
    /// order) under `request.key` in one commit: creates the session (identity
    /// `request.session_id`) if needed and appends every entry whose message id it does
    /// not hold yet, so importing the same log again writes nothing. A main session is
    /// also recorded as a `done` run of its agent and bound as the session's provider
    /// thread, so resume selection can pick it.
    pub fn import_session(
        &mut self,
        workspace: &str,
        request: &ImportRequest,
        now_ms: u64,
    ) -> Result<ImportOutcome, Error> {
        let request = encode("an import request", request)?;
        let json = self.call(|e, s| e.import_session(s, workspace, &request, now_ms))?;
        decode("import-session", &json)
    }

    /// Appends a turn's entries to the session under `key` and records the provider
    /// thread it ran on, in one atomic commit.
    pub fn commit_turn(
        &mut self,
        workspace: &str,
        key: &str,
        turn: TurnCommit,
        now_ms: u64,
    ) -> Result<TurnCommitted, Error> {
        self.call(|e, s| e.commit_turn(s, workspace, key, turn, now_ms))
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
                "{context}: the call ran out of its execution limit ({} fuel)",
                limits.fuel_per_call
            ),
        };
    }
    trap
}

/// The JSON text of a request for the component.
fn encode(what: &str, value: &impl serde::Serialize) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::Spool {
        code: "internal".to_owned(),
        message: format!("cannot encode {what}: {e}"),
    })
}

/// The JSON text the component returned from `call`, as the core's type.
fn decode<T: serde::de::DeserializeOwned>(call: &str, json: &str) -> Result<T, Error> {
    serde_json::from_str(json).map_err(|e| Error::Spool {
        code: "internal".to_owned(),
        message: format!("the component returned a result of `{call}` that does not decode: {e}"),
    })
}
