//! [`Spool`]: the friendly API. It owns an [`Instance`] over a database, supplies the
//! time and fresh session ids, and remembers the workspace. This file holds the handle,
//! its builder and its one method per call of the table; the drivers of longer work sit
//! beside what they drive (`provider.rs`: `run_fork`, `continue_fork`).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use spool::compaction::{CompactRequest, CompactionResult, Prepared};
use spool::import::{ImportFormat, ImportedLog};
use spool::{
    Archiver, BranchRequest, Entry, FinishStatus, Intent, IntentOutcome, NoArchive, Order,
    PageRequest, Session, Storage,
};

use crate::error::{CompactWithError, Error};
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
    uuid_text(bytes)
}

/// 16 bytes in UUID text form (`8-4-4-4-12` lower-case hex digits).
#[doc(hidden)]
pub fn uuid_text(bytes: [u8; 16]) -> String {
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
/// Every call of the operation table is a method named after it (generated from the
/// table: see [`spool::ops`] for each call's fields), taking the call's fields but those
/// a host fills in: the time comes from the clock, and what a call creates (a session,
/// a branch, a fork operation) gets a fresh id. [`call`](Self::call) takes any call as
/// given. A few methods go beyond the table: [`transcript`](Self::transcript),
/// [`pages`](Self::pages), [`reset`](Self::reset), [`compact_with`](Self::compact_with),
/// [`run_fork`](Self::run_fork), [`reset_archives`](Self::reset_archives).
///
/// ```
/// use spool::{AppendRequest, Role};
/// use spool_host::Spool;
///
/// let dir = tempfile::tempdir()?;
/// let mut spool = Spool::open(dir.path().join("spool.db"))?;
/// spool.create_session("agent:main:main")?;
/// spool.append_entry("agent:main:main", AppendRequest::new(Role::User, "fix the failing test"))?;
/// let transcript = spool.transcript("agent:main:main")?;
/// assert_eq!(transcript[0].content, "fix the failing test");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Intents: a created or reset session gets a fresh session id, and a reset archives
/// the old generation (here in `<db dir>/spool-archives`).
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
/// assert!(reset.archive.expect("archived").written);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Branches share their parent's history without copying it; the child's session id is
/// fresh:
///
/// ```
/// use spool::{AppendRequest, Role};
/// use spool_host::{BranchOptions, Spool};
///
/// let mut spool = Spool::builder().open()?;
/// spool.create_session("agent:main:main")?;
/// for text in ["fix the test", "done: the test passes"] {
///     spool.append_entry("agent:main:main", AppendRequest::new(Role::User, text))?;
/// }
/// let alt = spool.branch("agent:main:main", "agent:main:alt", BranchOptions::fork())?;
/// assert_eq!((alt.session.entry_count, alt.lineage.spawn_depth), (2, 1));
/// assert!(alt.lineage.forked_from_parent);
/// // The branch's own writes stay its own.
/// spool.append_entry("agent:main:alt", AppendRequest::new(Role::User, "try another way"))?;
/// assert_eq!(spool.count_entries("agent:main:main")?, 2);
/// assert_eq!(spool.list_children("agent:main:main")?.len(), 1);
/// # Ok::<(), spool_host::Error>(())
/// ```
///
/// Imports: a parsed session is written under a key, created with a fresh session id
/// when missing; entries already held (by message id) are skipped.
///
/// ```
/// use spool::import::{ImportFormat, ImportRequest};
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
/// let request = ImportRequest {
///     key: "import:claude_code:s-1".into(),
///     session_id: String::new(), // filled in
///     format: ImportFormat::ClaudeCode,
///     session,
///     parent_key: None,
///     prices: None,
/// };
/// let first = spool.import_session(request.clone())?;
/// assert_eq!((first.created, first.imported), (true, 1));
/// let again = spool.import_session(request)?;
/// assert_eq!((again.imported, again.already_present), (0, 1));
/// # Ok::<(), spool_host::Error>(())
/// ```
pub struct Spool {
    pub(crate) instance: Instance,
    pub(crate) workspace: String,
    /// Where reset archives are kept, when Spool reads them back itself.
    archives: Option<Archives>,
    pub(crate) clock: Clock,
    pub(crate) ids: Ids,
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

    /// Performs one API call (any [`spool::ops`] struct) in this handle's workspace,
    /// as given. The methods named after the calls are this with the clock's time and
    /// fresh ids filled in.
    pub fn call<O: Call>(&mut self, op: O) -> Result<O::Output, Error> {
        self.instance.call(&self.workspace, op)
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

    /// Resets the session under `key` ([`Intent::ResetSameKey`]): the old generation is
    /// archived, then the identity rotates (epoch + 1, counters zeroed, transcript
    /// removed, context states invalidated). A failed archive is reported in the
    /// outcome and does not stop the reset.
    pub fn reset(&mut self, key: &str) -> Result<IntentOutcome, Error> {
        self.apply_intent(key, Intent::ResetSameKey)
    }

    /// Archives the session under `key`: finishes it as `done`.
    pub fn archive_session(
        &mut self,
        key: &str,
        expected_epoch: Option<u64>,
    ) -> Result<Session, Error> {
        self.finish(key, FinishStatus::Done, expected_epoch)
    }

    /// The reset archives of `key` in this workspace, oldest first: the archive of every
    /// committed reset ([`list_reset_archives`](Self::list_reset_archives)), read from the
    /// archive directory and checked against its record. A recorded archive whose file
    /// is missing, damaged or another archive is `corruption` naming the file; so is
    /// any recorded archive when this `Spool` keeps archives with a custom archiver.
    pub fn reset_archives(&mut self, key: &str) -> Result<Vec<spool::ResetArchive>, Error> {
        let records = self.list_reset_archives(key)?;
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
    ///     spool.append_entry("agent:main:main", entry)?;
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

    /// Parses an agent log into the core's [`ImportedLog`]; see
    /// [`Instance::parse_import`].
    pub fn parse_import(&mut self, format: ImportFormat, text: &str) -> Result<ImportedLog, Error> {
        self.instance.parse_import(format, text)
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

    /// Calls `report` with the progress of this handle's long calls while they run (a
    /// compaction's passes, a reset's archive: [`spool::Progress`]), replacing any
    /// earlier one; see [`Instance::set_progress`].
    pub fn on_progress(&mut self, mut report: impl FnMut(&spool::Progress) + Send + 'static) {
        self.instance.set_progress(Some(Box::new(
            move |_workspace: &str, p: &spool::Progress| report(p),
        )));
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

/// The request of a branch with these options; its child session id is left empty
/// for [`Spool::branch`] to fill in.
impl Arg<BranchRequest> for BranchOptions {
    fn arg(self) -> BranchRequest {
        BranchRequest {
            child_session_id: String::new(),
            fork_transcript: self.fork_transcript,
            fork_before_message_id: self.fork_before_message_id,
            max_fork_tokens: self.max_fork_tokens,
        }
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

/// What a [`Spool`] method takes for an argument of type `T`: a `T`, a reference to
/// one (cloned), or a `&str` for a `String`. Unlike `Into`, a number literal or a `None`
/// is taken as the argument's own type.
pub trait Arg<T> {
    /// The argument.
    fn arg(self) -> T;
}

impl<T> Arg<T> for T {
    fn arg(self) -> T {
        self
    }
}

impl<T: Clone> Arg<T> for &T {
    fn arg(self) -> T {
        self.clone()
    }
}

impl Arg<String> for &str {
    fn arg(self) -> String {
        self.to_owned()
    }
}

/// One method of [`Spool`] per call of the operation table (`spool::for_each_op!`),
/// named after the call. Its arguments are the call's fields but those the table's
/// `fills(…)` names: `now_ms` comes from the clock and a created id from the id source;
/// an id filled inside an argument (`request.child_session_id`) is filled when empty.
macro_rules! methods {
    // One entry of the table (see `for_each_op!`).
    ($( $(#[doc = $doc:literal])* $(#[web = $web:literal])? $name:ident $js:ident $Op:ident {
        $( $(#[$attr:meta])* $field:ident : $ty:ty ),* $(,)? }
        $(fills($($fill:ident $(. $sub:ident)?),* $(,)?))? -> $out:ty = $f:path; )*) => {
        impl Spool {$(
            method! {
                [$(#[doc = $doc])*] $name $Op -> $out;
                fills [$($($fill $(. $sub)?),*)?];
                args [];
                fields [$($field)*];
                rest [$($field: $ty,)*]
            }
        )*}
    };
}

/// Sorts one call's fields into arguments and filled fields, then writes its method.
macro_rules! method {
    ([$($doc:tt)*] $name:ident $Op:ident -> $out:ty; fills [$($fill:ident $(. $sub:ident)?),*];
        args [$($arg:ident: $aty:ty,)*]; fields [$($field:ident)*]; rest []) => {
        $($doc)*
        pub fn $name(&mut self, $($arg: impl Arg<$aty>),*) -> Result<$out, Error> {
            $( #[allow(unused_mut)] let mut $arg: $aty = $arg.arg(); )*
            #[allow(unused_variables)]
            let (clock, ids) = (&mut self.clock, &mut self.ids);
            $( fill!(clock ids; $fill $(. $sub)?); )*
            self.call(ops::$Op { $($field),* })
        }
    };
    ($head:tt $name:ident $Op:ident -> $out:ty; fills [$($fills:tt)*]; args [$($args:tt)*];
        fields $fields:tt; rest [$field:ident: $ty:ty, $($rest:tt)*]) => {
        filled! { $field [$($fills)*]
            yes { method! { $head $name $Op -> $out; fills [$($fills)*]; args [$($args)*];
                fields $fields; rest [$($rest)*] } }
            no { method! { $head $name $Op -> $out; fills [$($fills)*];
                args [$($args)* $field: $ty,]; fields $fields; rest [$($rest)*] } }
        }
    };
}

/// Expands `yes` when a fills list names the field itself, `no` otherwise. A field the
/// table fills at the top level needs an arm here (macros compare names only so).
macro_rules! filled {
    (now_ms [now_ms $($r:tt)*] yes {$($y:tt)*} no $n:tt) => { $($y)* };
    (session_id [session_id $($r:tt)*] yes {$($y:tt)*} no $n:tt) => { $($y)* };
    (child_session_id [child_session_id $($r:tt)*] yes {$($y:tt)*} no $n:tt) => { $($y)* };
    (operation_id [operation_id $($r:tt)*] yes {$($y:tt)*} no $n:tt) => { $($y)* };
    ($f:ident [] yes $y:tt no {$($n:tt)*}) => { $($n)* };
    ($f:ident [$a:ident . $b:ident $($r:tt)*] yes $y:tt no $n:tt) => {
        filled! { $f [$($r)*] yes $y no $n }
    };
    ($f:ident [$a:tt $($r:tt)*] yes $y:tt no $n:tt) => { filled! { $f [$($r)*] yes $y no $n } };
}

/// Fills in one field the table names: the time, or a fresh id (inside an argument, only
/// when left empty).
macro_rules! fill {
    (@value $clock:ident $ids:ident now_ms) => { $clock() };
    (@value $clock:ident $ids:ident $id:ident) => { $ids() };
    ($clock:ident $ids:ident; $arg:ident . $field:ident) => {
        if $arg.$field.is_empty() {
            $arg.$field = $ids();
        }
    };
    ($clock:ident $ids:ident; $field:ident) => { let $field = fill!(@value $clock $ids $field); };
}

spool::for_each_op!(methods);
