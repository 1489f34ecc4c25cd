//! [`Spool`]: the friendly API. It owns an [`Instance`] over a database, supplies the
//! time and fresh session ids, and remembers the workspace.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use spool::compaction::{
    CommitRequest, CompactRequest, CompactionResult, PersistRequest, Prepared, Summary,
};
use std::collections::BTreeMap;

use serde_json::Value;
use spool::import::{ImportFormat, ImportOutcome, ImportRequest, ImportedLog, ImportedSession};
use spool::resume::rules::{ResumeDecision, RunRecord, TaskOutcomeEffects};
use spool::{
    AppendRequest, ArchivedReset, Archiver, ContextState, Entry, FinishStatus, IndexProgress,
    Intent, IntentOutcome, ListFilter, NewContextState, NewRoleSession, NewRun, NoArchive, Order,
    OutcomeRequest, Page, PageRequest, ResumeRequest, RoleSession, RunFilter, RunList, SearchPage,
    SearchRequest, Session, SessionList, Storage, ThreadPlan, TruncateOutcome, TurnCommit,
    TurnCommitted, UpdateRequest,
};

use spool::provider_fork::capabilities::{ForkProjection, ProbeAnswer, ProjectionMode};
use spool::provider_fork::{
    DispatchPayload, Disposition, ForkLineage, ForkOperationView, ForkRequest,
    ProviderBindingRequest, RecoveryReport,
};
use spool::turns::{CloseTurn, SessionTurns, StartTurn, Turn, TurnPage, TurnPageRequest};
use spool::{Branch, BranchRequest, LineageView};

use crate::error::{CompactWithError, Error};
use crate::provider::ForkProvider;
use crate::runtime::wit::Call;
use crate::runtime::{Instance, ResourceLimits, Runtime};
use crate::storage::archive::ArchiveDir;
use crate::storage::postgres::{PostgresStorage, is_postgres_url, redact};
use crate::storage::postgres_archives::PostgresArchives;
use crate::storage::sqlite::{Durability, SqliteStorage};
use spool::ops;

/// The workspace a [`Spool`] uses unless told otherwise.
pub const DEFAULT_WORKSPACE: &str = "default";

type Clock = Box<dyn FnMut() -> u64 + Send>;
type Ids = Box<dyn FnMut() -> String + Send>;

/// Milliseconds since the Unix epoch, from the system clock.
pub fn system_clock() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A fresh random session id in UUID v4 form (from the operating system's entropy).
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS entropy: fall back to the clock and a counter, still unique per process.
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes[..8].copy_from_slice(&(nanos as u64).to_be_bytes());
        let tail = (u64::from(std::process::id()) << 32) | COUNTER.fetch_add(1, Ordering::Relaxed);
        bytes[8..].copy_from_slice(&tail.to_be_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Sessions and transcripts in one workspace of one database.
///
/// ```
/// use spool::{AppendRequest, Role};
/// use spool_host::Spool;
///
/// let dir = tempfile::tempdir()?;
/// let mut spool = Spool::open(dir.path().join("spool.db"))?;
/// spool.create_session("agent:main:main")?;
/// spool.append("agent:main:main", AppendRequest::new(Role::User, "fix the failing test"))?;
/// let transcript = spool.transcript("agent:main:main")?;
/// assert_eq!(transcript[0].content, "fix the failing test");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Spool {
    instance: Instance,
    workspace: String,
    /// Where reset archives are kept, when Spool reads them back itself.
    archives: Option<Archives>,
    clock: Clock,
    ids: Ids,
}

/// Which transcript [`Spool::pages`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transcript {
    /// The active transcript (what the next model call sees).
    Active,
    /// The canonical transcript: entries compactions archived and active ones, as
    /// appended.
    Canonical,
}

/// The pages of a transcript, oldest first (see [`Spool::pages`]).
pub struct Pages<'a> {
    spool: &'a mut Spool,
    key: String,
    which: Transcript,
    cursor: Option<String>,
    done: bool,
}

impl Iterator for Pages<'_> {
    type Item = Result<Vec<Entry>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let request = PageRequest {
            order: Order::OldestFirst,
            cursor: self.cursor.take(),
            limit: spool::MAX_PAGE,
        };
        let key = self.key.clone();
        let page = match self.which {
            Transcript::Active => self.spool.call(ops::ReadPage { key, request }),
            Transcript::Canonical => self.spool.call(ops::ReadCanonicalPage { key, request }),
        };
        match page {
            Ok(page) => {
                self.cursor = page.next_cursor;
                self.done = self.cursor.is_none();
                Some(Ok(page.entries))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("workspace", &self.workspace)
            .field("archives", &self.archives)
            .finish_non_exhaustive()
    }
}

/// The reset-archive store a [`Spool`] writes to and reads back from.
#[derive(Debug, Clone)]
enum Archives {
    /// Files in a directory.
    Dir(PathBuf),
    /// The PostgreSQL database.
    Postgres(Box<PostgresArchives>),
}

impl Spool {
    /// Opens the database `target` names (see [`SpoolBuilder::database`]: a SQLite
    /// file, created if needed, or a `postgres://` URL), workspace
    /// [`DEFAULT_WORKSPACE`], system clock, random session ids.
    pub fn open(target: impl AsRef<std::ffi::OsStr>) -> Result<Spool, Error> {
        Spool::builder().database(target).open()
    }

    /// A builder for the other settings.
    pub fn builder() -> SpoolBuilder {
        SpoolBuilder::default()
    }

    /// The workspace this handle acts in.
    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    /// Performs one API call (any [`spool::ops`] struct) in this handle's workspace.
    /// The methods below are this with the clock's time and fresh ids filled in.
    pub fn call<O: Call>(&mut self, op: O) -> Result<O::Output, Error> {
        self.instance.call(&self.workspace, op)
    }

    /// Creates a session under `key` with a fresh session id; a key in use is a
    /// `conflict`.
    pub fn create_session(&mut self, key: &str) -> Result<Session, Error> {
        let (id, now) = ((self.ids)(), (self.clock)());
        self.call(ops::CreateSession {
            key: key.to_owned(),
            session_id: id,
            now_ms: now,
        })
    }

    /// The session under `key`, or `None`.
    pub fn get_session(&mut self, key: &str) -> Result<Option<Session>, Error> {
        self.call(ops::GetSession {
            key: key.to_owned(),
        })
    }

    /// Appends one entry to the session under `key`, stamped with the clock's time.
    pub fn append(&mut self, key: &str, request: AppendRequest) -> Result<Entry, Error> {
        let now = (self.clock)();
        self.call(ops::AppendEntry {
            key: key.to_owned(),
            request,
            now_ms: now,
        })
    }

    /// Appends `requests`, in order, to the session under `key` in one commit (all of
    /// them or none), stamped with the clock's time.
    pub fn append_entries(
        &mut self,
        key: &str,
        requests: Vec<AppendRequest>,
    ) -> Result<Vec<Entry>, Error> {
        let now = (self.clock)();
        self.call(ops::AppendEntries {
            key: key.to_owned(),
            requests,
            now_ms: now,
        })
    }

    /// Reads one page of the transcript of the session under `key`.
    pub fn read_page(&mut self, key: &str, request: PageRequest) -> Result<Page, Error> {
        self.call(ops::ReadPage {
            key: key.to_owned(),
            request,
        })
    }

    /// The whole transcript of the session under `key`, oldest entry first (held in
    /// memory: for a session of any size, iterate [`pages`](Self::pages)).
    pub fn transcript(&mut self, key: &str) -> Result<Vec<Entry>, Error> {
        let mut entries = Vec::new();
        for page in self.pages(key, Transcript::Active) {
            entries.extend(page?);
        }
        Ok(entries)
    }

    /// The transcript of the session under `key` (active or canonical), oldest entry
    /// first, a page at a time: each item is one page of entries (up to 1000 and about
    /// a megabyte), so memory does not grow with the session. A failed read ends the
    /// iteration after yielding its error.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), spool_host::Error> {
    /// let mut spool = spool_host::Spool::open("spool.sqlite")?;
    /// for page in spool.pages("agent:main:main", spool_host::Transcript::Canonical) {
    ///     for entry in page? {
    ///         println!("{}", entry.content);
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn pages<'a>(&'a mut self, key: &str, which: Transcript) -> Pages<'a> {
        Pages {
            spool: self,
            key: key.to_owned(),
            which,
            cursor: None,
            done: false,
        }
    }

    /// Lists sessions, most recently updated first, `limit` (1 to 1000) at a time;
    /// `cursor` is the previous page's `next_cursor`.
    pub fn list_sessions(
        &mut self,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<SessionList, Error> {
        self.list_sessions_where(limit, cursor, &ListFilter::default())
    }

    /// Like [`list_sessions`](Self::list_sessions), only the sessions passing `filter`
    /// (agent id, status).
    pub fn list_sessions_where(
        &mut self,
        limit: u32,
        cursor: Option<&str>,
        filter: &ListFilter,
    ) -> Result<SessionList, Error> {
        self.call(ops::ListSessions {
            limit,
            cursor: cursor.map(str::to_owned),
            agent_id: filter.agent_id.clone(),
            status: filter.status,
        })
    }

    /// Full-text search of the workspace's transcripts: one page of hits, best first
    /// (see [`spool::search`](mod@spool::search) for the query language, the ranking and what paging
    /// guarantees). Pass the page's `next_cursor` back in `request.cursor`, with the same
    /// query, for the next page; a bad query, limit or cursor is `invalid_argument`.
    pub fn search(&mut self, request: SearchRequest) -> Result<SearchPage, Error> {
        let SearchRequest {
            query,
            limit,
            cursor,
        } = request;
        self.call(ops::Search {
            query,
            limit,
            cursor,
        })
    }

    /// Indexes one run of history written before the search index (see
    /// [`spool::search::backfill`]): call again with the result's `next_cursor` until it
    /// is `None`. Appends, from this process or others, go on beside it.
    pub fn index_backfill(&mut self, cursor: Option<&str>) -> Result<IndexProgress, Error> {
        self.call(ops::IndexBackfill {
            cursor: cursor.map(str::to_owned),
        })
    }

    /// The directory reset archives are written to, when they go to an
    /// [`ArchiveDir`] (`None` with a custom archiver, none, or the PostgreSQL
    /// database's).
    pub fn archive_dir(&self) -> Option<&Path> {
        match &self.archives {
            Some(Archives::Dir(dir)) => Some(dir),
            _ => None,
        }
    }

    /// Where reset archives are kept, as messages say it: the directory, or
    /// `PostgreSQL host:port/database`; `None` with a custom archiver or none.
    pub fn archive_location(&self) -> Option<String> {
        match &self.archives {
            Some(Archives::Dir(dir)) => Some(dir.display().to_string()),
            Some(Archives::Postgres(archives)) => Some(format!("PostgreSQL {}", archives.target())),
            None => None,
        }
    }

    /// The session under `key`, created with a fresh session id when missing.
    pub fn get_or_create(&mut self, key: &str) -> Result<IntentOutcome, Error> {
        let (id, now) = ((self.ids)(), (self.clock)());
        self.call(ops::GetOrCreate {
            key: key.to_owned(),
            session_id: id,
            now_ms: now,
        })
    }

    /// Applies `intent` to `key`; a created or reset session gets a fresh session id.
    ///
    /// ```
    /// use spool::Intent;
    /// use spool_host::Spool;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut spool = Spool::open(dir.path().join("spool.db"))?;
    /// let first = spool.apply_intent("agent:main:main", Intent::Continue)?;
    /// assert!(first.created);
    /// let err = spool.apply_intent("agent:main:main", Intent::NewChat).unwrap_err();
    /// assert!(err.message().contains("session_key conflict"));
    /// let reset = spool.apply_intent("agent:main:main", Intent::ResetSameKey)?;
    /// assert!(reset.rotated && reset.session.epoch == 1);
    /// // The old generation is in `<db dir>/spool-archives`.
    /// assert!(reset.archive.expect("archived").written);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply_intent(&mut self, key: &str, intent: Intent) -> Result<IntentOutcome, Error> {
        let (id, now) = ((self.ids)(), (self.clock)());
        self.call(ops::ApplyIntent {
            key: key.to_owned(),
            intent,
            session_id: id,
            now_ms: now,
        })
    }

    /// Resets the session under `key` ([`Intent::ResetSameKey`]): the old generation is
    /// archived, then the identity rotates (epoch + 1, counters zeroed, transcript
    /// removed, context states invalidated). A failed archive is reported in the
    /// outcome and does not stop the reset.
    pub fn reset(&mut self, key: &str) -> Result<IntentOutcome, Error> {
        self.apply_intent(key, Intent::ResetSameKey)
    }

    /// Marks the session under `key` as in use now; a missing key is `not_found`.
    pub fn resume(&mut self, key: &str) -> Result<Session, Error> {
        let now = (self.clock)();
        self.call(ops::Resume {
            key: key.to_owned(),
            now_ms: now,
        })
    }

    /// Changes model, channel, model config and metadata of the session under `key`.
    pub fn update(&mut self, key: &str, request: UpdateRequest) -> Result<Session, Error> {
        let now = (self.clock)();
        self.call(ops::Update {
            key: key.to_owned(),
            request,
            now_ms: now,
        })
    }

    /// Finishes the session under `key` now with `status` (fenced by
    /// `expected_epoch` when given).
    pub fn finish(
        &mut self,
        key: &str,
        status: FinishStatus,
        expected_epoch: Option<u64>,
    ) -> Result<Session, Error> {
        let now = (self.clock)();
        self.call(ops::Finish {
            key: key.to_owned(),
            status,
            expected_epoch,
            now_ms: now,
        })
    }

    /// Archives the session under `key`: finishes it as `done`.
    pub fn archive_session(
        &mut self,
        key: &str,
        expected_epoch: Option<u64>,
    ) -> Result<Session, Error> {
        self.finish(key, FinishStatus::Done, expected_epoch)
    }

    /// The records of the archives the committed resets of `key` kept in this
    /// workspace, oldest first. A reset that failed or was killed has none, whatever it
    /// wrote; records outlive the session.
    pub fn archived_resets(&mut self, key: &str) -> Result<Vec<ArchivedReset>, Error> {
        self.call(ops::ListResetArchives {
            key: key.to_owned(),
        })
    }

    /// The reset archives of `key` in this workspace, oldest first: the archive of every
    /// committed reset ([`archived_resets`](Self::archived_resets)), read from the
    /// archive directory and checked against its record. A recorded archive whose file
    /// is missing, damaged or another archive is `corruption` naming the file; so is
    /// any recorded archive when this `Spool` keeps archives with a custom archiver.
    pub fn reset_archives(&mut self, key: &str) -> Result<Vec<spool::ResetArchive>, Error> {
        let records = self.archived_resets(key)?;
        let corrupt = |message: String| Error::spool(spool::ErrorCode::Corruption, message);
        let Some(archives) = &self.archives else {
            return match records.first() {
                None => Ok(Vec::new()),
                Some(_) => Err(corrupt(format!(
                    "{} reset archive(s) of {key} are recorded, but this Spool has no \
                     archive store to read them from",
                    records.len()
                ))),
            };
        };
        records
            .iter()
            .map(|record| {
                let read = match archives {
                    Archives::Dir(dir) => ArchiveDir::new(dir)
                        .read(&self.workspace, record)
                        .map_err(|e| e.to_string()),
                    Archives::Postgres(store) => store.read(&self.workspace, record),
                };
                read.map_err(|e| {
                    corrupt(format!(
                        "the archive of the reset of {key} at {} (session {}) is recorded \
                         but unreadable: {e}",
                        record.archived_at, record.session_id
                    ))
                })
            })
            .collect()
    }

    /// Deletes the session under `key` and everything it owns.
    pub fn delete_session(&mut self, key: &str, expected_epoch: Option<u64>) -> Result<(), Error> {
        self.call(ops::DeleteSession {
            key: key.to_owned(),
            expected_epoch,
        })
    }

    /// Deletes the sessions idle longer than `max_age_ms` (by the clock); returns how
    /// many.
    pub fn prune_stale(&mut self, max_age_ms: u64) -> Result<u64, Error> {
        let now = (self.clock)();
        self.call(ops::PruneStale {
            max_age_ms,
            now_ms: now,
        })
    }

    /// Keeps the `max` most recently updated sessions and deletes the rest; returns how
    /// many were deleted.
    pub fn cap_sessions(&mut self, max: u64) -> Result<u64, Error> {
        self.call(ops::CapSessions { max })
    }

    /// The number of transcript entries of the session under `key`.
    pub fn count_entries(&mut self, key: &str) -> Result<u64, Error> {
        self.call(ops::CountEntries {
            key: key.to_owned(),
        })
    }

    /// The entry with `message_id` in the transcript of the session under `key`.
    pub fn get_entry(&mut self, key: &str, message_id: &str) -> Result<Option<Entry>, Error> {
        self.call(ops::GetEntry {
            key: key.to_owned(),
            message_id: message_id.to_owned(),
        })
    }

    /// Keeps the newest `max_messages` entries of the session under `key`.
    pub fn truncate(
        &mut self,
        key: &str,
        max_messages: u64,
        expected_epoch: Option<u64>,
    ) -> Result<TruncateOutcome, Error> {
        let now = (self.clock)();
        self.call(ops::Truncate {
            key: key.to_owned(),
            max_messages,
            expected_epoch,
            now_ms: now,
        })
    }

    /// Saves a context state for the session under `key`.
    pub fn save_state(
        &mut self,
        key: &str,
        state: NewContextState,
        expected_epoch: Option<u64>,
    ) -> Result<ContextState, Error> {
        let now = (self.clock)();
        self.call(ops::SaveState {
            key: key.to_owned(),
            state,
            expected_epoch,
            now_ms: now,
        })
    }

    /// The context states of the session under `key`; only valid ones unless
    /// `valid_only` is false.
    pub fn list_states(&mut self, key: &str, valid_only: bool) -> Result<Vec<ContextState>, Error> {
        self.call(ops::ListStates {
            key: key.to_owned(),
            valid_only,
        })
    }

    /// Invalidates the valid context states of the session under `key` (of
    /// `state_kind` only, when given) with `reason`; returns how many.
    pub fn invalidate_states(
        &mut self,
        key: &str,
        state_kind: Option<&str>,
        reason: &str,
    ) -> Result<u64, Error> {
        let now = (self.clock)();
        self.call(ops::InvalidateStates {
            key: key.to_owned(),
            state_kind: state_kind.map(str::to_owned),
            reason: reason.to_owned(),
            now_ms: now,
        })
    }
    /// Compacts the session under `key` with the built-in deterministic summarizer when
    /// its transcript exceeds `request.context_window_tokens` (with the safety margin):
    /// the oldest entries move to the canonical archive and a `structured_v1` summary is
    /// stored. Below the trigger nothing is written and `skip_reason` says why.
    ///
    /// ```
    /// use spool::compaction::CompactRequest;
    /// use spool::{AppendRequest, Role};
    /// use spool_host::Spool;
    ///
    /// let mut spool = Spool::builder().open()?;
    /// spool.create_session("agent:main:main")?;
    /// for i in 0..20 {
    ///     let mut entry = AppendRequest::new(Role::User, format!("step {i}: {}", "work ".repeat(50)));
    ///     entry.token_count = Some(200);
    ///     spool.append("agent:main:main", entry)?;
    /// }
    /// let request: CompactRequest = serde_json::from_value(serde_json::json!({
    ///     "context_window_tokens": 1000
    /// }))?;
    /// let result = spool.compact("agent:main:main", request)?;
    /// assert!(result.removed_count > 0);
    /// assert_eq!(result.summary_source, "fallback");
    /// // Nothing is lost: the canonical transcript still has every entry.
    /// assert_eq!(spool.canonical_transcript("agent:main:main")?.len(), 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact(
        &mut self,
        key: &str,
        request: CompactRequest,
    ) -> Result<CompactionResult, Error> {
        let now = (self.clock)();
        self.call(ops::Compact {
            key: key.to_owned(),
            request,
            now_ms: now,
        })
    }

    /// Phase one of a two-phase compaction: what an external summarizer must summarize
    /// ([`Prepared::input`]), the obligations it must keep and the preimage token for
    /// [`commit_compaction`](Self::commit_compaction). Writes nothing.
    pub fn prepare_compaction(
        &mut self,
        key: &str,
        request: CompactRequest,
    ) -> Result<Prepared, Error> {
        self.call(ops::PrepareCompaction {
            key: key.to_owned(),
            request,
        })
    }

    /// Phase two: commits an external summary of the prepared cut. Nothing is written
    /// when the transcript changed since the prepare (`stale_preimage`), the summary is
    /// empty (`empty_summary`) or, in blocking mode, it misses a critical obligation
    /// (`coverage_blocked`); otherwise missing obligations are back-filled.
    pub fn commit_compaction(
        &mut self,
        key: &str,
        commit: CommitRequest,
    ) -> Result<CompactionResult, Error> {
        let now = (self.clock)();
        self.call(ops::CommitCompaction {
            key: key.to_owned(),
            commit,
            now_ms: now,
        })
    }

    /// Compacts the session under `key` with any summarizer: prepares the compaction,
    /// hands the [`Prepared`] plan (its `input` and `obligations`) to `summarize`, and
    /// commits the text it returns. When no summary is needed (`skip_reason` set),
    /// `summarize` is not called and nothing is written. When `summarize` fails, its
    /// error comes back as [`CompactWithError::Summarizer`] and nothing is written.
    ///
    /// ```
    /// use spool::compaction::{CompactRequest, Prepared};
    /// use spool::{AppendRequest, Role};
    /// use spool_host::Spool;
    ///
    /// let mut spool = Spool::builder().open()?;
    /// spool.create_session("agent:main:main")?;
    /// for i in 0..20 {
    ///     let mut entry = AppendRequest::new(Role::User, format!("Goal: ship v{i}. {}", "x ".repeat(100)));
    ///     entry.token_count = Some(200);
    ///     spool.append("agent:main:main", entry)?;
    /// }
    /// let request: CompactRequest =
    ///     serde_json::from_value(serde_json::json!({ "context_window_tokens": 1000 }))?;
    ///
    /// // Any LLM fits here; this one writes one line per obligation.
    /// let llm = |prepared: &Prepared| -> Result<String, std::io::Error> {
    ///     let lines: Vec<&str> = prepared.obligations.iter().map(|o| o.text.as_str()).collect();
    ///     Ok(format!("Summary of {} entries:\n{}", prepared.removed_count, lines.join("\n")))
    /// };
    /// let result = spool.compact_with("agent:main:main", request, llm)?;
    /// assert_eq!(result.summary_source, "llm");
    /// assert!(result.removed_count > 0);
    /// assert!(result.summary.starts_with("Summary of"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact_with<E>(
        &mut self,
        key: &str,
        request: CompactRequest,
        summarize: impl FnOnce(&Prepared) -> Result<String, E>,
    ) -> Result<CompactionResult, CompactWithError<E>> {
        let prepared = self.prepare_compaction(key, request.clone())?;
        let commit = prepared
            .commit_with(request, summarize)
            .map_err(CompactWithError::Summarizer)?;
        Ok(self.commit_compaction(key, commit)?)
    }

    /// Stores a compaction an agent produced itself (an in-turn summary): `kept_entries`
    /// replace the last `kept_entries.len()` active entries, the earlier ones move to the
    /// archive (`summary_source` `external`). An empty summary touches nothing.
    pub fn persist_compaction_result(
        &mut self,
        key: &str,
        persist: PersistRequest,
    ) -> Result<CompactionResult, Error> {
        let now = (self.clock)();
        self.call(ops::PersistCompactionResult {
            key: key.to_owned(),
            persist,
            now_ms: now,
        })
    }

    /// The canonical transcript of the session under `key`: archived and active entries
    /// in original order — after any number of compactions, the transcript as appended.
    pub fn canonical_transcript(&mut self, key: &str) -> Result<Vec<Entry>, Error> {
        self.call(ops::CanonicalTranscript {
            key: key.to_owned(),
        })
    }

    /// The compaction summaries of the session under `key`, oldest first.
    pub fn list_summaries(&mut self, key: &str) -> Result<Vec<Summary>, Error> {
        self.call(ops::ListSummaries {
            key: key.to_owned(),
        })
    }

    /// The degraded compactions waiting for repair in this workspace (of one agent when
    /// `agent_id` is given).
    pub fn list_degraded_compactions(
        &mut self,
        agent_id: Option<&str>,
    ) -> Result<Vec<Summary>, Error> {
        self.call(ops::ListDegradedCompactions {
            agent_id: agent_id.map(str::to_owned),
        })
    }

    /// The entries the compaction `compaction_id` of the session under `key` archived.
    pub fn compaction_preimage(
        &mut self,
        key: &str,
        compaction_id: &str,
    ) -> Result<Vec<Entry>, Error> {
        self.call(ops::CompactionPreimage {
            key: key.to_owned(),
            compaction_id: compaction_id.to_owned(),
        })
    }

    /// Sets the repair status of a compaction (e.g. `repaired`); it leaves the repair
    /// queue.
    pub fn set_repair_status(
        &mut self,
        key: &str,
        compaction_id: &str,
        status: &str,
    ) -> Result<Summary, Error> {
        self.call(ops::SetRepairStatus {
            key: key.to_owned(),
            compaction_id: compaction_id.to_owned(),
            status: status.to_owned(),
        })
    }

    /// Back-fills the flush receipt of a compaction (e.g. `safe`); one no longer
    /// degraded leaves the repair queue.
    pub fn set_flush_receipt(
        &mut self,
        key: &str,
        compaction_id: &str,
        status: &str,
    ) -> Result<Summary, Error> {
        self.call(ops::SetFlushReceipt {
            key: key.to_owned(),
            compaction_id: compaction_id.to_owned(),
            status: status.to_owned(),
        })
    }

    /// Creates or replaces a role session (its whole adapter state is replaced).
    pub fn save_role_session(&mut self, role: NewRoleSession) -> Result<RoleSession, Error> {
        let now = (self.clock)();
        self.call(ops::SaveRoleSession { role, now_ms: now })
    }

    /// The role session `role_session_id`, or `None`.
    pub fn get_role_session(
        &mut self,
        role_session_id: &str,
    ) -> Result<Option<RoleSession>, Error> {
        self.call(ops::GetRoleSession {
            role_session_id: role_session_id.to_owned(),
        })
    }

    /// Sets (latest wins) or, with `None`, clears the adapter state of `agent_type` in a
    /// role session; `false` when the role session does not exist.
    pub fn update_role_adapter_state(
        &mut self,
        role_session_id: &str,
        agent_type: &str,
        state: Option<&BTreeMap<String, Value>>,
    ) -> Result<bool, Error> {
        let now = (self.clock)();
        self.call(ops::UpdateRoleAdapterState {
            role_session_id: role_session_id.to_owned(),
            agent_type: agent_type.to_owned(),
            state: state.cloned(),
            now_ms: now,
        })
    }

    /// The adapter state of `agent_type` in a role session, or `None`.
    pub fn get_role_adapter_state(
        &mut self,
        role_session_id: &str,
        agent_type: &str,
    ) -> Result<Option<BTreeMap<String, Value>>, Error> {
        self.call(ops::GetRoleAdapterState {
            role_session_id: role_session_id.to_owned(),
            agent_type: agent_type.to_owned(),
        })
    }

    /// Records an external agent run, stamped with the clock's time.
    pub fn record_run(&mut self, run: NewRun) -> Result<RunRecord, Error> {
        let now = (self.clock)();
        self.call(ops::RecordRun { run, now_ms: now })
    }

    /// One page of external runs passing `filter` (`limit` 1 to 1000).
    pub fn list_runs(
        &mut self,
        filter: &RunFilter,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<RunList, Error> {
        self.call(ops::ListRuns {
            filter: filter.clone(),
            limit,
            cursor: cursor.map(str::to_owned),
        })
    }

    /// Decides whether a new task resumes a provider session; applies the decision's
    /// role-state clear.
    ///
    /// ```
    /// use spool::{NewRun, ResumeRequest};
    /// use spool_host::Spool;
    ///
    /// let mut spool = Spool::builder().open()?;
    /// spool.record_run(NewRun {
    ///     agent_type: "codex".into(),
    ///     project_id: "p1".into(),
    ///     session_id: "thread-abc".into(),
    ///     task_id: "t1".into(),
    ///     status: "done".into(),
    ///     role_session_id: None,
    ///     workspace_path: None,
    ///     run_mode: None,
    ///     metadata: Default::default(),
    /// })?;
    /// let decision = spool.select_resume(ResumeRequest {
    ///     agent_type: "codex".into(),
    ///     role_session_id: None,
    ///     project_id: Some("p1".into()),
    ///     scope_id: None,
    ///     preconfigured: None,
    ///     surviving_agents: None,
    /// })?;
    /// assert_eq!((decision.mode.as_str(), decision.session_id.as_str()), ("resume", "thread-abc"));
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn select_resume(&mut self, request: ResumeRequest) -> Result<ResumeDecision, Error> {
        self.call(ops::SelectResume { request })
    }

    /// Records a task's outcome (its run row and the change to its role's adapter
    /// state), stamped with the clock's time.
    pub fn record_task_outcome(
        &mut self,
        request: OutcomeRequest,
    ) -> Result<TaskOutcomeEffects, Error> {
        let now = (self.clock)();
        self.call(ops::RecordTaskOutcome {
            request,
            now_ms: now,
        })
    }

    /// Parses an agent log into the core's [`ImportedLog`]; see
    /// [`Instance::parse_import`].
    pub fn parse_import(&mut self, format: ImportFormat, text: &str) -> Result<ImportedLog, Error> {
        self.instance.parse_import(format, text)
    }

    /// Writes one parsed session (or a slice of at most
    /// [`MAX_IMPORT_ENTRIES`](spool::import::MAX_IMPORT_ENTRIES) of its entries, in
    /// order) under `key`, creating it with a fresh session id if it does not exist;
    /// entries the session already holds (by message id) are skipped. See
    /// [`spool::import::import_session`].
    ///
    /// ```
    /// use spool::import::ImportFormat;
    /// use spool_host::Spool;
    ///
    /// let log = concat!(
    ///     r#"{"type":"user","uuid":"u1","sessionId":"s-1","cwd":"/src/app","#,
    ///     r#""timestamp":"2025-10-17T09:00:00Z","message":{"role":"user","content":"hi"}}"#,
    ///     "\n",
    /// );
    /// let mut spool = Spool::builder().open()?;
    /// let parsed = spool.parse_import(ImportFormat::ClaudeCode, log)?;
    /// let session = parsed.sessions.into_iter().next().expect("one session");
    /// let key = "import:claude_code:s-1";
    /// let first = spool.import_session(key, ImportFormat::ClaudeCode, session.clone())?;
    /// assert_eq!((first.created, first.imported), (true, 1));
    /// let again = spool.import_session(key, ImportFormat::ClaudeCode, session)?;
    /// assert_eq!((again.imported, again.already_present), (0, 1));
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn import_session(
        &mut self,
        key: &str,
        format: ImportFormat,
        session: ImportedSession,
    ) -> Result<ImportOutcome, Error> {
        self.import_session_under(key, None, format, session)
    }

    /// [`Spool::import_session`] that links a session it creates to the existing session
    /// under `parent_key` as its parent (a sub-agent's session to the one that spawned
    /// it): `not_found` when there is none.
    pub fn import_session_under(
        &mut self,
        key: &str,
        parent_key: Option<&str>,
        format: ImportFormat,
        session: ImportedSession,
    ) -> Result<ImportOutcome, Error> {
        let request = ImportRequest {
            key: key.to_owned(),
            session_id: (self.ids)(),
            format,
            session,
            parent_key: parent_key.map(str::to_owned),
        };
        let now = (self.clock)();
        self.call(ops::ImportSession {
            request,
            now_ms: now,
        })
    }

    /// Whether a new agent of `agent_type` resumes the thread bound to the session under
    /// `key` or starts one (`dead_thread`: a thread the provider refused to resume).
    pub fn plan_provider_thread(
        &mut self,
        key: &str,
        agent_type: &str,
        dead_thread: Option<&str>,
    ) -> Result<ThreadPlan, Error> {
        self.call(ops::PlanProviderThread {
            key: key.to_owned(),
            agent_type: agent_type.to_owned(),
            dead_thread: dead_thread.map(str::to_owned),
        })
    }

    /// Appends a turn's entries and records its provider thread in one commit, stamped
    /// with the clock's time.
    pub fn commit_turn(&mut self, key: &str, turn: TurnCommit) -> Result<TurnCommitted, Error> {
        let now = (self.clock)();
        self.call(ops::CommitTurn {
            key: key.to_owned(),
            turn,
            now_ms: now,
        })
    }
}

impl Spool {
    /// A fresh id from this handle's id source (what new sessions and operations get).
    pub fn fresh_id(&mut self) -> String {
        (self.ids)()
    }

    /// The time now by this handle's clock, in milliseconds since the Unix epoch.
    pub fn now_ms(&mut self) -> u64 {
        (self.clock)()
    }

    /// The underlying instance (explicit workspace, time and ids).
    pub fn instance(&mut self) -> &mut Instance {
        &mut self.instance
    }

    /// Runs any core call (`spool::Command`) in this handle's workspace and returns its
    /// result as JSON; see [`Instance::execute`].
    pub fn execute(&mut self, command: &spool::Command) -> Result<Value, Error> {
        self.instance.execute(&self.workspace, command)
    }

    /// Branches the session under `parent_key` into a new session under `child_key`
    /// with a fresh session id; `options` say which history it shares (O(1) in the
    /// parent's length). See [`spool::branch`].
    ///
    /// ```
    /// use spool::{AppendRequest, Role};
    /// use spool_host::{BranchOptions, Spool};
    ///
    /// let mut spool = Spool::builder().open()?;
    /// spool.create_session("agent:main:main")?;
    /// for text in ["fix the test", "done: the test passes"] {
    ///     spool.append("agent:main:main", AppendRequest::new(Role::User, text))?;
    /// }
    /// let alt = spool.branch("agent:main:main", "agent:main:alt", BranchOptions::fork())?;
    /// assert_eq!((alt.session.entry_count, alt.lineage.spawn_depth), (2, 1));
    /// assert!(alt.lineage.forked_from_parent);
    /// // The branch's own writes stay its own.
    /// spool.append("agent:main:alt", AppendRequest::new(Role::User, "try another way"))?;
    /// assert_eq!(spool.count_entries("agent:main:main")?, 2);
    /// assert_eq!(spool.list_children("agent:main:main")?.len(), 1);
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn branch(
        &mut self,
        parent_key: &str,
        child_key: &str,
        options: BranchOptions,
    ) -> Result<Branch, Error> {
        let request = BranchRequest {
            child_session_id: (self.ids)(),
            fork_transcript: options.fork_transcript,
            fork_before_message_id: options.fork_before_message_id,
            max_fork_tokens: options.max_fork_tokens,
        };
        let now = (self.clock)();
        self.call(ops::Branch {
            parent_key: parent_key.to_owned(),
            child_key: child_key.to_owned(),
            request,
            now_ms: now,
        })
    }

    /// The session under `key` with its lineage and its direct branches.
    pub fn lineage(&mut self, key: &str) -> Result<LineageView, Error> {
        self.call(ops::Lineage {
            key: key.to_owned(),
        })
    }

    /// The direct branches of the session under `key`, in key order.
    pub fn list_children(&mut self, key: &str) -> Result<Vec<Branch>, Error> {
        self.call(ops::ListChildren {
            key: key.to_owned(),
        })
    }

    /// Starts a turn of the session under `key`, stamped with the clock's time.
    pub fn start_turn(&mut self, key: &str, request: StartTurn) -> Result<Turn, Error> {
        let now = (self.clock)();
        self.call(ops::StartTurn {
            key: key.to_owned(),
            request,
            now_ms: now,
        })
    }

    /// Settles the running turn `turn_id` of the session under `key`.
    pub fn settle_turn(
        &mut self,
        key: &str,
        turn_id: &str,
        close: CloseTurn,
    ) -> Result<Turn, Error> {
        let now = (self.clock)();
        self.call(ops::SettleTurn {
            key: key.to_owned(),
            turn_id: turn_id.to_owned(),
            close,
            now_ms: now,
        })
    }

    /// Interrupts the running turn `turn_id` of the session under `key`.
    pub fn interrupt_turn(
        &mut self,
        key: &str,
        turn_id: &str,
        close: CloseTurn,
    ) -> Result<Turn, Error> {
        let now = (self.clock)();
        self.call(ops::InterruptTurn {
            key: key.to_owned(),
            turn_id: turn_id.to_owned(),
            close,
            now_ms: now,
        })
    }

    /// The turn `turn_id` of the session under `key`, or `None`.
    pub fn get_turn(&mut self, key: &str, turn_id: &str) -> Result<Option<Turn>, Error> {
        self.call(ops::GetTurn {
            key: key.to_owned(),
            turn_id: turn_id.to_owned(),
        })
    }

    /// The latest and the active turn of the session under `key`.
    pub fn session_turns(&mut self, key: &str) -> Result<SessionTurns, Error> {
        self.call(ops::SessionTurns {
            key: key.to_owned(),
        })
    }

    /// A page of the turns of the session under `key`, in start order or its reverse.
    pub fn list_turns(&mut self, key: &str, request: TurnPageRequest) -> Result<TurnPage, Error> {
        self.call(ops::ListTurns {
            key: key.to_owned(),
            request,
        })
    }

    /// Prepares a provider fork of the session under `source_key` (a fresh operation id
    /// if the request is new); see [`spool::fork`] and [`run_fork`](Self::run_fork).
    pub fn fork(
        &mut self,
        source_key: &str,
        request: ForkRequest,
    ) -> Result<ForkOperationView, Error> {
        let (id, now) = ((self.ids)(), (self.clock)());
        self.call(ops::Fork {
            source_key: source_key.to_owned(),
            request,
            operation_id: id,
            now_ms: now,
        })
    }

    /// Records `dispatching` and returns the payload to send to the provider.
    pub fn begin_fork_dispatch(&mut self, operation_id: &str) -> Result<DispatchPayload, Error> {
        let now = (self.clock)();
        self.call(ops::BeginForkDispatch {
            operation_id: operation_id.to_owned(),
            now_ms: now,
        })
    }

    /// Records the provider's answer to a dispatched fork.
    pub fn record_fork_disposition(
        &mut self,
        operation_id: &str,
        disposition: Disposition,
    ) -> Result<ForkOperationView, Error> {
        let now = (self.clock)();
        self.call(ops::RecordForkDisposition {
            operation_id: operation_id.to_owned(),
            disposition,
            now_ms: now,
        })
    }

    /// Materializes the child of a provider-accepted fork, with its lineage.
    pub fn commit_fork(&mut self, operation_id: &str) -> Result<ForkOperationView, Error> {
        let now = (self.clock)();
        self.call(ops::CommitFork {
            operation_id: operation_id.to_owned(),
            now_ms: now,
        })
    }

    /// The fork operation `operation_id`; never acknowledges.
    pub fn get_fork_operation(&mut self, operation_id: &str) -> Result<ForkOperationView, Error> {
        self.call(ops::GetForkOperation {
            operation_id: operation_id.to_owned(),
        })
    }

    /// Acknowledges a committed fork operation (once), releasing its turn barrier.
    pub fn acknowledge_fork_operation(
        &mut self,
        operation_id: &str,
    ) -> Result<ForkOperationView, Error> {
        let now = (self.clock)();
        self.call(ops::AcknowledgeForkOperation {
            operation_id: operation_id.to_owned(),
            now_ms: now,
        })
    }

    /// Restart recovery of provider fork operations (`dispatching` → `unknown`).
    pub fn recover_fork_operations(&mut self) -> Result<RecoveryReport, Error> {
        let now = (self.clock)();
        self.call(ops::RecoverForkOperations { now_ms: now })
    }

    /// Claims the one-time provider state binding of the fork child under `key`.
    pub fn claim_fork_provider_binding(
        &mut self,
        key: &str,
    ) -> Result<Option<ProviderBindingRequest>, Error> {
        let now = (self.clock)();
        self.call(ops::ClaimForkProviderBinding {
            key: key.to_owned(),
            now_ms: now,
        })
    }

    /// Records that the claimed provider state binding of `operation_id` is done.
    pub fn complete_fork_provider_binding(
        &mut self,
        operation_id: &str,
    ) -> Result<ForkOperationView, Error> {
        let now = (self.clock)();
        self.call(ops::CompleteForkProviderBinding {
            operation_id: operation_id.to_owned(),
            now_ms: now,
        })
    }

    /// The provider fork lineage of the session under `key`, if it is a fork's child.
    pub fn get_fork_lineage(&mut self, key: &str) -> Result<Option<ForkLineage>, Error> {
        self.call(ops::GetForkLineage {
            key: key.to_owned(),
        })
    }

    /// The fork capability projection of the sessions under `keys`; see
    /// [`spool::provider_fork::capabilities::fork_projection`].
    pub fn fork_projection(
        &mut self,
        keys: Vec<String>,
        mode: ProjectionMode,
        answers: Vec<ProbeAnswer>,
    ) -> Result<ForkProjection, Error> {
        self.call(ops::ForkProjection {
            keys,
            mode,
            answers,
        })
    }

    /// Runs a whole provider fork operation with a fresh operation id, the clock read at
    /// each step: see [`Instance::run_fork`].
    ///
    /// ```
    /// use spool::provider_fork::{ForkRequest, ForkStatus};
    /// use spool::{AppendRequest, Role};
    /// use spool_host::{Spool, TestProvider};
    ///
    /// let mut spool = Spool::builder().open()?;
    /// spool.create_session("agent:main:src")?;
    /// spool.append("agent:main:src", AppendRequest::new(Role::User, "hello"))?;
    /// let request = ForkRequest {
    ///     request_id: "request-1".into(),
    ///     target_key: "agent:main:child".into(),
    ///     target_session_id: "child-1".into(),
    ///     through_turn_id: None,
    ///     cwd: None,
    /// };
    /// let mut provider = TestProvider::accept_as("thread-child");
    /// let done = spool.run_fork("agent:main:src", request, &mut provider)?;
    /// assert_eq!(done.status, ForkStatus::Committed);
    /// assert_eq!(provider.dispatched().len(), 1);
    /// assert_eq!(spool.count_entries("agent:main:child")?, 1);
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn run_fork<P: ForkProvider + ?Sized>(
        &mut self,
        source_key: &str,
        request: ForkRequest,
        provider: &mut P,
    ) -> Result<ForkOperationView, Error> {
        let id = (self.ids)();
        let Spool {
            instance,
            workspace,
            clock,
            ..
        } = self;
        crate::provider::drive(
            instance,
            workspace,
            source_key,
            request,
            &id,
            provider,
            &mut || clock(),
        )
    }

    /// Continues the fork operation `operation_id` after a restart; see
    /// [`Instance::continue_fork`].
    pub fn continue_fork<P: ForkProvider + ?Sized>(
        &mut self,
        operation_id: &str,
        provider: &mut P,
    ) -> Result<ForkOperationView, Error> {
        let view = self.get_fork_operation(operation_id)?;
        let Spool {
            instance,
            workspace,
            clock,
            ..
        } = self;
        crate::provider::advance(instance, workspace, view, provider, &mut || clock())
    }
}

/// Which history a [`Spool::branch`] shares with its parent (the child's session id is
/// fresh). The default is an empty branch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchOptions {
    /// Share the parent's transcript, summaries, context states and canonical archive.
    pub fork_transcript: bool,
    /// Share only the canonical prefix strictly before this message.
    pub fork_before_message_id: Option<String>,
    /// Over this many transcript plus summary tokens, the branch starts empty.
    pub max_fork_tokens: Option<u64>,
}

impl BranchOptions {
    /// A branch that shares the parent's whole history.
    pub fn fork() -> Self {
        BranchOptions {
            fork_transcript: true,
            ..Self::default()
        }
    }

    /// A branch that shares the canonical prefix strictly before `message_id`.
    pub fn before(message_id: impl Into<String>) -> Self {
        BranchOptions {
            fork_before_message_id: Some(message_id.into()),
            ..Self::default()
        }
    }

    /// The same options with a token budget for the shared history.
    pub fn max_tokens(mut self, max_fork_tokens: u64) -> Self {
        self.max_fork_tokens = Some(max_fork_tokens);
        self
    }
}

/// Settings of a [`Spool`]; see [`Spool::builder`].
///
/// ```
/// use spool_host::Spool;
///
/// let mut spool = Spool::builder()
///     .workspace("project-x")
///     .clock(|| 1_700_000_000_000)
///     .ids(|| "fixed-id".to_owned())
///     .open()?; // no `db_path`: a private in-memory database
/// let session = spool.create_session("agent:main:main")?;
/// assert_eq!((session.session_id.as_str(), session.created_at), ("fixed-id", 1_700_000_000_000));
/// # Ok::<(), spool_host::Error>(())
/// ```
#[derive(Default)]
pub struct SpoolBuilder {
    db: Option<Database>,
    durability: Durability,
    storage: Option<Box<dyn Storage + Send>>,
    archive_dir: Option<PathBuf>,
    archiver: Option<Box<dyn Archiver + Send>>,
    workspace: Option<String>,
    clock: Option<Clock>,
    ids: Option<Ids>,
    memory_limit: Option<usize>,
    fuel_limit: Option<u64>,
}

impl std::fmt::Debug for SpoolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpoolBuilder")
            .field("db", &self.db)
            .field("durability", &self.durability)
            .field("archive_dir", &self.archive_dir)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

/// The database a [`SpoolBuilder`] opens.
#[derive(Clone)]
enum Database {
    /// A SQLite file.
    Path(PathBuf),
    /// A PostgreSQL database: its URL.
    Postgres(String),
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Path(path) => f.debug_tuple("Path").field(path).finish(),
            // Never the password.
            Database::Postgres(url) => f.debug_tuple("Postgres").field(&redact(url)).finish(),
        }
    }
}

impl SpoolBuilder {
    /// The SQLite database file (created with its directories if missing). Without
    /// a database (and without [`storage`](Self::storage)), it is in memory.
    pub fn db_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.db = Some(Database::Path(path.into()));
        self
    }

    /// A PostgreSQL database instead of a SQLite file:
    /// `postgres://user[:password]@host[:port]/database` (or `postgresql://`; libpq's
    /// URL syntax, parameters included). Nothing is created on the local disk; see
    /// [`PostgresStorage`](crate::PostgresStorage) for what the server gets.
    pub fn postgres_url(mut self, url: impl Into<String>) -> Self {
        self.db = Some(Database::Postgres(url.into()));
        self
    }

    /// The database `target` names: a `postgres://` or `postgresql://` URL is a
    /// PostgreSQL database ([`postgres_url`](Self::postgres_url)), anything else the
    /// path of a SQLite file ([`db_path`](Self::db_path)). This is how the CLI reads
    /// `--db` and `SPOOL_DB`.
    pub fn database(self, target: impl AsRef<std::ffi::OsStr>) -> Self {
        let target = target.as_ref();
        match target.to_str().filter(|text| is_postgres_url(text)) {
            Some(url) => self.postgres_url(url),
            None => self.db_path(target),
        }
    }

    /// How durable the SQLite database's commits are (default [`Durability::Full`]:
    /// on disk when they return); [`Durability::Normal`] trades the newest commits on
    /// an operating-system crash or power loss for speed. Only for
    /// [`db_path`](Self::db_path): a PostgreSQL server's commits are as durable as its
    /// `synchronous_commit` setting, and [`open`](Self::open) refuses
    /// [`Durability::Normal`] with a [`postgres_url`](Self::postgres_url).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Any other storage backend instead of SQLite (takes precedence over `db_path`).
    pub fn storage(mut self, storage: impl Storage + Send + 'static) -> Self {
        self.storage = Some(Box::new(storage));
        self
    }

    /// The directory reset archives are written to (see [`ArchiveDir`]). Default:
    /// `<directory of the db>/spool-archives` with a [`db_path`](Self::db_path), the
    /// database itself with a [`postgres_url`](Self::postgres_url)
    /// ([`PostgresArchives`]); in memory, resets keep no archive (and say so) unless
    /// this is set.
    pub fn archive_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.archive_dir = Some(dir.into());
        self
    }

    /// Any other reset-archive store (takes precedence over
    /// [`archive_dir`](Self::archive_dir)); [`spool::NoArchive`] keeps none.
    pub fn archiver(mut self, archiver: impl Archiver + Send + 'static) -> Self {
        self.archiver = Some(Box::new(archiver));
        self
    }

    /// The workspace (default [`DEFAULT_WORKSPACE`]).
    pub fn workspace(mut self, workspace: impl Into<String>) -> Self {
        self.workspace = Some(workspace.into());
        self
    }

    /// The clock: milliseconds since the Unix epoch (default [`system_clock`]).
    pub fn clock(mut self, clock: impl FnMut() -> u64 + Send + 'static) -> Self {
        self.clock = Some(Box::new(clock));
        self
    }

    /// The source of fresh session ids (default [`random_id`]).
    pub fn ids(mut self, ids: impl FnMut() -> String + Send + 'static) -> Self {
        self.ids = Some(Box::new(ids));
        self
    }

    /// The most linear memory the component instance may use (default
    /// [`DEFAULT_MEMORY_LIMIT`](crate::DEFAULT_MEMORY_LIMIT)); a call needing more fails
    /// with [`Error::ResourceLimit`] (code `resource_limit`) and writes nothing. Raise it
    /// for calls that take large inputs, such as [`Spool::parse_import`] of a big log.
    pub fn memory_limit(mut self, max_memory_bytes: usize) -> Self {
        self.memory_limit = Some(max_memory_bytes);
        self
    }

    /// The execution limit each call starts with, in wasmtime fuel (about one unit per
    /// WebAssembly instruction; default [`DEFAULT_FUEL_LIMIT`](crate::DEFAULT_FUEL_LIMIT)).
    /// A call that runs out fails with [`Error::ResourceLimit`] (code `resource_limit`)
    /// and writes nothing; the next call starts with a full tank.
    ///
    /// ```
    /// use spool_host::Spool;
    ///
    /// let mut spool = Spool::builder().fuel_limit(1_000).open()?;
    /// let err = spool.create_session("agent:main:main").unwrap_err();
    /// assert_eq!(err.code(), "resource_limit");
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn fuel_limit(mut self, fuel_per_call: u64) -> Self {
        self.fuel_limit = Some(fuel_per_call);
        self
    }

    /// Opens the storage and instantiates the component.
    pub fn open(self) -> Result<Spool, Error> {
        if let Some(Database::Postgres(url)) = &self.db
            && self.durability != Durability::Full
        {
            return Err(Error::spool(
                spool::ErrorCode::InvalidArgument,
                format!(
                    "durability `normal` is SQLite's `synchronous=NORMAL`; the commits of the \
                     PostgreSQL database {} are as durable as the server's \
                     `synchronous_commit` says",
                    redact(url)
                ),
            ));
        }
        // The database's own archive store, when it has one (PostgreSQL).
        let mut own_archives = None;
        let storage: Box<dyn Storage + Send> = match (self.storage, &self.db) {
            (Some(storage), _) => storage,
            (None, Some(Database::Path(path))) => {
                Box::new(SqliteStorage::open_with(path, self.durability)?)
            }
            (None, Some(Database::Postgres(url))) => {
                let storage = PostgresStorage::connect(url)?;
                own_archives = Some(storage.archives());
                Box::new(storage)
            }
            (None, None) => Box::new(SqliteStorage::open_in_memory()?),
        };
        let archives = match (&self.archiver, self.archive_dir, &self.db) {
            (Some(_), _, _) => None,
            (None, Some(dir), _) => Some(Archives::Dir(dir)),
            (None, None, Some(Database::Path(db))) => {
                Some(Archives::Dir(ArchiveDir::default_for(db).path().to_owned()))
            }
            (None, None, _) => own_archives.map(|store| Archives::Postgres(Box::new(store))),
        };
        let archiver: Box<dyn Archiver + Send> = match (self.archiver, &archives) {
            (Some(archiver), _) => archiver,
            (None, Some(Archives::Dir(dir))) => Box::new(ArchiveDir::new(dir)),
            (None, Some(Archives::Postgres(store))) => Box::new(PostgresArchives::clone(store)),
            (None, None) => Box::new(NoArchive),
        };
        Ok(Spool {
            instance: Runtime::shared()?.instantiate_with_limits(
                BoxedStorage(storage),
                BoxedArchiver(archiver),
                ResourceLimits {
                    max_memory_bytes: self
                        .memory_limit
                        .unwrap_or(crate::runtime::DEFAULT_MEMORY_LIMIT),
                    fuel_per_call: self
                        .fuel_limit
                        .unwrap_or(crate::runtime::DEFAULT_FUEL_LIMIT),
                    ..ResourceLimits::default()
                },
            )?,
            archives,
            workspace: self
                .workspace
                .unwrap_or_else(|| DEFAULT_WORKSPACE.to_owned()),
            clock: self.clock.unwrap_or_else(|| Box::new(system_clock)),
            ids: self.ids.unwrap_or_else(|| Box::new(random_id)),
        })
    }
}

/// A boxed storage as a `Storage` (the box itself is not one).
struct BoxedStorage(Box<dyn Storage + Send>);

impl Storage for BoxedStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, spool::StorageError> {
        self.0.get(workspace, key)
    }
    fn range(
        &self,
        workspace: &str,
        query: &spool::RangeQuery,
    ) -> Result<Vec<spool::Kv>, spool::StorageError> {
        self.0.range(workspace, query)
    }
    fn commit(&self, workspace: &str, batch: spool::Batch) -> Result<(), spool::StorageError> {
        self.0.commit(workspace, batch)
    }
    fn begin_operation(&self) {
        self.0.begin_operation();
    }
    fn end_operation(&self) {
        self.0.end_operation();
    }
}

/// A boxed archiver as an `Archiver`.
struct BoxedArchiver(Box<dyn Archiver + Send>);

impl Archiver for BoxedArchiver {
    fn write_archive(&self, workspace: &str, archive: &spool::ResetArchive) -> Result<(), String> {
        self.0.write_archive(workspace, archive)
    }

    fn archive_writer(
        &self,
        workspace: &str,
        head: &spool::ResetArchive,
    ) -> Option<Result<Box<dyn spool::ArchiveWriter + Send>, String>> {
        self.0.archive_writer(workspace, head)
    }
}
