//! [`Spool`]: the friendly API. It owns an [`Instance`] over a database, supplies the
//! time and fresh session ids, and remembers the workspace.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use spool::{AppendRequest, Entry, Order, Page, PageRequest, Session, SessionList, Storage};

use crate::engine::{Instance, Runtime};
use crate::error::Error;
use crate::sqlite::SqliteStorage;

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
    clock: Clock,
    ids: Ids,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl Spool {
    /// Opens (creating it if needed) the SQLite database at `path`, workspace
    /// [`DEFAULT_WORKSPACE`], system clock, random session ids.
    pub fn open(path: impl Into<PathBuf>) -> Result<Spool, Error> {
        Spool::builder().db_path(path).open()
    }

    /// A builder for the other settings.
    pub fn builder() -> SpoolBuilder {
        SpoolBuilder::default()
    }

    /// The workspace this handle acts in.
    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    /// Creates a session under `key` with a fresh session id; a key in use is a
    /// `conflict`.
    pub fn create_session(&mut self, key: &str) -> Result<Session, Error> {
        let (id, now) = ((self.ids)(), (self.clock)());
        self.instance.create_session(&self.workspace, key, &id, now)
    }

    /// The session under `key`, or `None`.
    pub fn get_session(&mut self, key: &str) -> Result<Option<Session>, Error> {
        self.instance.get_session(&self.workspace, key)
    }

    /// Appends one entry to the session under `key`, stamped with the clock's time.
    pub fn append(&mut self, key: &str, request: AppendRequest) -> Result<Entry, Error> {
        let now = (self.clock)();
        self.instance
            .append_entry(&self.workspace, key, request, now)
    }

    /// Reads one page of the transcript of the session under `key`.
    pub fn read_page(&mut self, key: &str, request: PageRequest) -> Result<Page, Error> {
        self.instance.read_page(&self.workspace, key, request)
    }

    /// The whole transcript of the session under `key`, oldest entry first.
    pub fn transcript(&mut self, key: &str) -> Result<Vec<Entry>, Error> {
        let mut entries = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.read_page(
                key,
                PageRequest {
                    order: Order::OldestFirst,
                    cursor,
                    limit: spool::MAX_PAGE,
                },
            )?;
            entries.extend(page.entries);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(entries),
            }
        }
    }

    /// Lists sessions, most recently updated first, `limit` (1 to 1000) at a time;
    /// `cursor` is the previous page's `next_cursor`.
    pub fn list_sessions(
        &mut self,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<SessionList, Error> {
        self.instance.list_sessions(&self.workspace, limit, cursor)
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
    db_path: Option<PathBuf>,
    storage: Option<Box<dyn Storage + Send>>,
    workspace: Option<String>,
    clock: Option<Clock>,
    ids: Option<Ids>,
}

impl std::fmt::Debug for SpoolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpoolBuilder")
            .field("db_path", &self.db_path)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl SpoolBuilder {
    /// The SQLite database file (created with its directories if missing). Without
    /// one (and without [`storage`](Self::storage)), the database is in memory.
    pub fn db_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.db_path = Some(path.into());
        self
    }

    /// Any other storage backend instead of SQLite (takes precedence over `db_path`).
    pub fn storage(mut self, storage: impl Storage + Send + 'static) -> Self {
        self.storage = Some(Box::new(storage));
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

    /// Opens the storage and instantiates the component.
    pub fn open(self) -> Result<Spool, Error> {
        let storage: Box<dyn Storage + Send> = match (self.storage, self.db_path) {
            (Some(storage), _) => storage,
            (None, Some(path)) => Box::new(SqliteStorage::open(path)?),
            (None, None) => Box::new(SqliteStorage::open_in_memory()?),
        };
        Ok(Spool {
            instance: Runtime::shared()?.instantiate(BoxedStorage(storage))?,
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
}
