//! [`SqliteStorage`]: the Spool storage contract on one SQLite database file.
//!
//! One table holds every workspace's key space:
//! `kv(workspace, key, value)` with primary key `(workspace, key)`, where `workspace` is
//! the workspace's number in `workspaces(id, name)` (given by the first commit that
//! writes to it; a database of schema version 1, from before the numbers, holds the
//! name in every row and is read and written as it is). SQLite compares BLOBs
//! with `memcmp` (a shorter key that is a prefix sorts first), which is exactly the
//! bytewise key order the contract asks for. The database runs in WAL mode with
//! `synchronous=FULL`, so a commit that returned is on disk.
//!
//! Spool changes no file that is not its own. Before any write or writing pragma, an
//! existing file is inspected read-only: an empty file, an empty database, or one whose
//! `application_id` is Spool's ([`APPLICATION_ID`]) or whose only table is Spool's `kv`
//! (a database from before the id was set, which then gets it) is Spool's; anything
//! else is refused and left byte-identical. A database Spool may not write (the file or
//! its directory is not writable) is opened read-only — `immutable=1` when SQLite
//! cannot open it otherwise — and every commit is refused saying why.
//!
//! Every value must be a BLOB: a value SQLite holds as another type (TEXT, a number) is
//! [`StorageError::Corrupt`] naming its key, and so is a read SQLite finds damaged.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::{Value, ValueRef};
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, PrepFlags, Statement, Transaction,
    TransactionBehavior, params,
};
use spool::{Batch, Kv, Mutation, Precondition, RangeQuery, Storage, StorageError};

use crate::error::Error;

/// How long a writer waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

/// The `application_id` of a Spool database (`PRAGMA application_id`): "SPOL".
pub const APPLICATION_ID: i32 = 0x5350_4f4c;

/// The schema of a database Spool creates (`user_version` [`SCHEMA_VERSION`]): each
/// workspace's name is written once, in `workspaces`, and every row of `kv` holds its
/// number (SQLite stores the numbers 0 and 1 in no bytes at all, where the name `default`
/// took 8 and a type byte).
const SCHEMA: &str = "CREATE TABLE workspaces (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE
    );
    CREATE TABLE kv (
        workspace INTEGER NOT NULL,
        key BLOB NOT NULL,
        value BLOB NOT NULL,
        PRIMARY KEY (workspace, key)
    ) WITHOUT ROWID;";

/// The schema version of the databases Spool creates.
const SCHEMA_VERSION: u32 = 2;

/// The first schema version that numbers workspaces. A database of version 1 (`kv`
/// alone, its `workspace` the name: [`SCHEMA_1`]) is read and written as it is laid
/// out: converting it would copy every row in one transaction, which for a 1.17 GB
/// database took 19 s and 3.5 GB of disk at its peak (the copy, and the WAL holding it),
/// and left a file of twice the size.
const NUMBERED_WORKSPACES: u32 = 2;

/// The schema of version 1, which Spool created before [`SCHEMA`].
#[cfg(test)]
const SCHEMA_1: &str = "CREATE TABLE kv (
        workspace TEXT NOT NULL,
        key BLOB NOT NULL,
        value BLOB NOT NULL,
        PRIMARY KEY (workspace, key)
    ) WITHOUT ROWID;";

/// Keeps the connection's statements ([`Statements`], every statement of [`sql`],
/// prepared when it opens) from ever being prepared again. Without the query planner
/// stability guarantee, SQLite marks a statement to be re-prepared whenever a new value
/// is bound to a parameter it could plan with (the bounds and the LIMIT of a range
/// read), and then re-prepares it at nearly every read: a third of the time a large
/// range read took.
fn statements(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// The SQL of every statement, kept together so the prepared-statement cache sees the
/// same text every time.
mod sql {
    pub(super) const GET: &str = "SELECT value FROM kv WHERE workspace = ?1 AND key = ?2";
    pub(super) const PUT: &str =
        "INSERT OR REPLACE INTO kv (workspace, key, value) VALUES (?1, ?2, ?3)";
    pub(super) const DELETE: &str = "DELETE FROM kv WHERE workspace = ?1 AND key = ?2";
    pub(super) const DELETE_RANGE: &str =
        "DELETE FROM kv WHERE workspace = ?1 AND key >= ?2 AND key < ?3";
    pub(super) const DELETE_FROM: &str = "DELETE FROM kv WHERE workspace = ?1 AND key >= ?2";
    pub(super) const WORKSPACE: &str = "SELECT id FROM workspaces WHERE name = ?1";
    pub(super) const NEW_WORKSPACE: &str = "INSERT INTO workspaces (name) VALUES (?1)";
    pub(super) const BEGIN: &str = "BEGIN";
    pub(super) const COMMIT: &str = "COMMIT";
    pub(super) const ROLLBACK: &str = "ROLLBACK";
    // `LIMIT -1` is SQLite for "no limit".
    pub(super) const RANGE_ASC: &str = "SELECT key, value FROM kv \
        WHERE workspace = ?1 AND key >= ?2 AND key < ?3 ORDER BY key ASC LIMIT ?4";
    pub(super) const RANGE_DESC: &str = "SELECT key, value FROM kv \
        WHERE workspace = ?1 AND key >= ?2 AND key < ?3 ORDER BY key DESC LIMIT ?4";
    pub(super) const RANGE_FROM_ASC: &str = "SELECT key, value FROM kv \
        WHERE workspace = ?1 AND key >= ?2 ORDER BY key ASC LIMIT ?3";
    pub(super) const RANGE_FROM_DESC: &str = "SELECT key, value FROM kv \
        WHERE workspace = ?1 AND key >= ?2 ORDER BY key DESC LIMIT ?3";
}

/// A statement prepared once, when the connection opens, and run again and again.
type Prepared<'conn> = RefCell<Statement<'conn>>;

/// Every statement of [`sql`], prepared on the connection. Running one is a step and a
/// reset; taking it from rusqlite's statement cache instead hashed its SQL and copied
/// it into a new allocation each time (about 150 ns, seven times an append).
#[derive(Debug)]
struct Statements<'conn> {
    get: Prepared<'conn>,
    put: Prepared<'conn>,
    delete: Prepared<'conn>,
    delete_range: Prepared<'conn>,
    delete_from: Prepared<'conn>,
    begin: Prepared<'conn>,
    commit: Prepared<'conn>,
    rollback: Prepared<'conn>,
    range_asc: Prepared<'conn>,
    range_desc: Prepared<'conn>,
    range_from_asc: Prepared<'conn>,
    range_from_desc: Prepared<'conn>,
    /// The statements on `workspaces`: `None` in a database of schema version 1.
    workspace: Option<(Prepared<'conn>, Prepared<'conn>)>,
}

impl<'conn> Statements<'conn> {
    /// Prepares the statements a database of schema `version` runs.
    fn prepare(conn: &'conn Connection, version: u32) -> rusqlite::Result<Self> {
        let one = |text: &str| -> rusqlite::Result<Prepared<'conn>> {
            conn.prepare_with_flags(text, PrepFlags::SQLITE_PREPARE_PERSISTENT)
                .map(RefCell::new)
        };
        Ok(Statements {
            get: one(sql::GET)?,
            put: one(sql::PUT)?,
            delete: one(sql::DELETE)?,
            delete_range: one(sql::DELETE_RANGE)?,
            delete_from: one(sql::DELETE_FROM)?,
            begin: one(sql::BEGIN)?,
            commit: one(sql::COMMIT)?,
            rollback: one(sql::ROLLBACK)?,
            range_asc: one(sql::RANGE_ASC)?,
            range_desc: one(sql::RANGE_DESC)?,
            range_from_asc: one(sql::RANGE_FROM_ASC)?,
            range_from_desc: one(sql::RANGE_FROM_DESC)?,
            workspace: if version < NUMBERED_WORKSPACES {
                None
            } else {
                Some((one(sql::WORKSPACE)?, one(sql::NEW_WORKSPACE)?))
            },
        })
    }
}

self_cell::self_cell!(
    /// The connection, and the statements prepared on it (dropped before it closes).
    struct Db {
        owner: Connection,
        #[not_covariant]
        dependent: Statements,
    }
    impl {Debug}
);

// SAFETY: a `Db` may move to another thread (as a `Connection` may): it takes the
// connection and every statement prepared on it along, and nothing else refers to
// them: the statements borrow only this connection, and no reference to either leaves
// a call on the `Db` (`with_dependent` lends them to a closure). `Db` is not `Sync`
// (the connection and the `RefCell`s are not), so one thread at a time uses them,
// which SQLite allows from any thread (rusqlite builds it thread-safe). Only the
// statements' borrow of the connection keeps the compiler from seeing this.
#[allow(unsafe_code)]
unsafe impl Send for Db {}

/// A statement that ends or begins a transaction.
#[derive(Debug, Clone, Copy)]
enum Control {
    Begin,
    Commit,
    Rollback,
}

/// Spool's storage on SQLite: every workspace in one `kv` table of one database.
///
/// ```
/// use spool::{Batch, Storage};
/// use spool_host::SqliteStorage;
///
/// let storage = SqliteStorage::open_in_memory()?;
/// let mut batch = Batch::default();
/// batch.require_absent(b"k".to_vec());
/// batch.put(b"k".to_vec(), b"v".to_vec());
/// storage.commit("default", batch)?;
/// assert_eq!(storage.get("default", b"k")?, Some(b"v".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SqliteStorage {
    db: Db,
    /// Why the database is open read-only (every commit is refused with it), if it is.
    read_only: Option<String>,
    /// Where the connection is in the operation it was told of.
    scope: Cell<Scope>,
    /// The newest point reads of the operation's read transaction ([`Scope::Reading`]):
    /// a commit carried on in that transaction checks its preconditions on these keys
    /// against what was read, not by reading again (nothing can have changed them: the
    /// commit happens only if no other connection wrote since the snapshot).
    seen: RefCell<Seen>,
    /// How `kv` names a workspace.
    workspaces: Workspaces,
}

/// How the rows of `kv` name their workspace.
#[derive(Debug)]
enum Workspaces {
    /// By its number in `workspaces` (schema version [`NUMBERED_WORKSPACES`] on). Kept
    /// here: the numbers of workspaces this connection saw committed, by name (a
    /// workspace's number never changes, and its row is never deleted).
    Numbered(RefCell<HashMap<String, i64>>),
    /// By its name: a database of schema version 1.
    Named,
}

/// Whether this build reads and writes a database of schema `version` as it is.
fn known_schema(version: u32) -> bool {
    version == 1 || version == SCHEMA_VERSION
}

impl Workspaces {
    /// How a database of schema `version` names workspaces.
    fn of(version: u32) -> Self {
        if version < NUMBERED_WORKSPACES {
            Workspaces::Named
        } else {
            Workspaces::Numbered(RefCell::default())
        }
    }
}

/// Point reads of one read transaction: `(workspace, key, value)`, the newest last, at
/// most [`Seen::KEEP`] of them (an operation that reads many keys keeps its last few).
#[derive(Debug, Default)]
struct Seen(Vec<(String, Vec<u8>, Option<Vec<u8>>)>);

impl Seen {
    /// Reads kept; an append's precondition is on the first key it read.
    const KEEP: usize = 8;
    /// Values kept whole up to this size; a larger one is read again.
    const MAX_VALUE: usize = 4096;

    fn note(&mut self, workspace: &str, key: &[u8], value: &Option<Vec<u8>>) {
        if value.as_ref().is_some_and(|v| v.len() > Self::MAX_VALUE) {
            return;
        }
        if self.0.len() == Self::KEEP {
            self.0.remove(0);
        }
        self.0
            .push((workspace.to_owned(), key.to_owned(), value.clone()));
    }

    /// What the transaction read at `key`, if it is kept (`Some(None)`: it was absent).
    fn get(&self, workspace: &str, key: &[u8]) -> Option<Option<&[u8]>> {
        self.0
            .iter()
            .rev()
            .find(|(w, k, _)| w == workspace && k == key)
            .map(|(_, _, v)| v.as_deref())
    }
}

/// Where a connection is in the operation its storage was told of
/// ([`Storage::begin_operation`]). An operation's reads share one read transaction (one
/// snapshot, and one taking of SQLite's shared-memory locks instead of one a read), and
/// its commit carries on in that transaction when no other connection wrote since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Scope {
    /// No operation: every read is its own transaction.
    #[default]
    Outside,
    /// In an operation that holds no read transaction (it has not read since it began
    /// or committed).
    Inside,
    /// In an operation whose reads hold a read transaction.
    Reading,
}

/// When a commit is on disk: SQLite's `synchronous` setting of the connection (its
/// journal is always a WAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=FULL` (the default): a commit has reached the disk when it returns,
    /// so it survives a crash of the process, of the operating system, and a power
    /// loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: a commit has reached the operating system when it returns
    /// (the WAL is synced at checkpoints, not at every commit). It survives the
    /// process being killed; a crash of the operating system or a power loss may undo
    /// the newest commits, whole ones only: the database stays consistent. Four to
    /// five times the appends per second on disk (the append benchmark prints both).
    Normal,
}

impl Durability {
    /// The value of SQLite's `synchronous` pragma.
    fn pragma(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

impl SqliteStorage {
    /// Opens (creating it and its parent directories if needed) the database at `path`
    /// and brings its schema up to date. A file that is not a Spool database is refused
    /// and left as it is; a database Spool may not write is opened read-only (reads
    /// work, commits are refused saying why). Commits are [`Durability::Full`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with(path, Durability::Full)
    }

    /// Like [`SqliteStorage::open`], with commits as durable as `durability` says.
    pub fn open_with(path: impl AsRef<Path>, durability: Durability) -> Result<Self, Error> {
        let path = path.as_ref();
        let at = |message: String| Error::Sqlite {
            path: path.display().to_string(),
            message,
        };
        let exists = match std::fs::metadata(path) {
            Ok(meta) => meta.len() > 0,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(at(format!("cannot inspect the file: {e}"))),
        };
        let mut read_only = None;
        if exists {
            inspect(path).map_err(at)?;
            read_only = not_writable(path);
        } else if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::Io {
                context: format!("cannot create the directory {}", parent.display()),
                source: e,
            })?;
        }
        let relabel = |e: Error| match e {
            Error::Sqlite { message, .. } => at(message),
            other => other,
        };
        match read_only {
            None => {
                let conn = Connection::open(path).map_err(|e| open_error(path, e))?;
                Self::setup(conn, durability).map_err(relabel)
            }
            Some(reason) => Self::open_read_only(path, reason).map_err(relabel),
        }
    }

    /// Opens a private in-memory database (gone when dropped).
    pub fn open_in_memory() -> Result<Self, Error> {
        let conn =
            Connection::open_in_memory().map_err(|e| open_error(Path::new(":memory:"), e))?;
        Self::setup(conn, Durability::Full)
    }

    fn setup(conn: Connection, durability: Durability) -> Result<Self, Error> {
        let fail = |e: rusqlite::Error| Error::Sqlite {
            path: String::new(),
            message: e.to_string(),
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // An in-memory database answers `memory`; that is fine.
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", durability.pragma())
            .map_err(fail)?;
        statements(&conn).map_err(fail)?;
        let version = set_up_schema(&conn)?;
        let db = Db::try_new(conn, |conn| Statements::prepare(conn, version)).map_err(fail)?;
        Ok(SqliteStorage {
            db,
            read_only: None,
            scope: Cell::default(),
            seen: RefCell::default(),
            workspaces: Workspaces::of(version),
        })
    }

    /// Opens an existing Spool database Spool may not write: `mode=ro`, or, when SQLite
    /// cannot read it that way (a WAL database in a directory where it cannot create its
    /// shared-memory file), `immutable=1`. Its schema must be one this build reads
    /// (version 1 or [`SCHEMA_VERSION`]): it cannot be created here.
    fn open_read_only(path: &Path, reason: String) -> Result<Self, Error> {
        let fail = |e: rusqlite::Error| Error::Sqlite {
            path: String::new(),
            message: e.to_string(),
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let try_open = |query: &str| -> rusqlite::Result<(Connection, u32)> {
            let conn = Connection::open_with_flags(uri(path, query), flags)?;
            conn.busy_timeout(BUSY_TIMEOUT)?;
            let version = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
            Ok((conn, version))
        };
        let (conn, version) = try_open("mode=ro")
            .or_else(|_| try_open("mode=ro&immutable=1"))
            .map_err(fail)?;
        let known = Self::schema_version();
        if !known_schema(version) {
            return Err(Error::Sqlite {
                path: String::new(),
                message: format!(
                    "the database has schema version {version}, this build of Spool reads \
                     versions 1 and {known}, and it cannot set the database up: {reason}"
                ),
            });
        }
        statements(&conn).map_err(fail)?;
        let db = Db::try_new(conn, |conn| Statements::prepare(conn, version)).map_err(fail)?;
        Ok(SqliteStorage {
            db,
            read_only: Some(reason),
            scope: Cell::default(),
            seen: RefCell::default(),
            workspaces: Workspaces::of(version),
        })
    }

    /// The connection.
    fn conn(&self) -> &Connection {
        self.db.borrow_owner()
    }

    /// Why the database is open read-only, if it is: every commit fails with this.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// How durable this connection's commits are (what SQLite says its `synchronous`
    /// setting is).
    pub fn durability(&self) -> Result<Durability, Error> {
        let level: i64 = self
            .conn()
            .pragma_query_value(None, "synchronous", |row| row.get(0))
            .map_err(|e| Error::Sqlite {
                path: String::new(),
                message: e.to_string(),
            })?;
        // 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA: Spool sets only the middle two; EXTRA is at
        // least FULL, and OFF is not durable at all.
        match level {
            1 => Ok(Durability::Normal),
            2 | 3 => Ok(Durability::Full),
            other => Err(Error::Sqlite {
                path: String::new(),
                message: format!(
                    "the connection's synchronous setting is {other}, not one Spool sets"
                ),
            }),
        }
    }

    /// The schema version this build creates (`PRAGMA user_version`); it reads and
    /// writes version 1 too, as it is.
    pub fn schema_version() -> u32 {
        SCHEMA_VERSION
    }

    /// What the rows of `workspace` hold in `kv.workspace`, or `None` when no row can
    /// be in it (it has no number: nothing was ever written to it).
    fn workspace(&self, workspace: &str) -> Result<Option<Value>, StorageError> {
        let Workspaces::Numbered(known) = &self.workspaces else {
            return Ok(Some(Value::Text(workspace.to_owned())));
        };
        if let Some(&id) = known.borrow().get(workspace) {
            return Ok(Some(Value::Integer(id)));
        }
        let id: Option<i64> = self
            .db
            .with_dependent(|_, s| {
                let (find, _) = s.workspace.as_ref().ok_or(rusqlite::Error::InvalidQuery)?;
                find.borrow_mut()
                    .query_row([workspace], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| backend(&[], e))?;
        // Found before this connection numbered it (it does so only in a commit, after
        // this read), so committed by someone: it stays.
        if let Some(id) = id {
            known.borrow_mut().insert(workspace.to_owned(), id);
        }
        Ok(id.map(Value::Integer))
    }

    /// [`SqliteStorage::workspace`] for a commit of `batch`, in its write transaction:
    /// a workspace the batch puts the first row in is numbered there. Also returns the
    /// number given, which is kept only once the transaction has committed.
    fn workspace_to_write(
        &self,
        workspace: &str,
        batch: &Batch,
    ) -> Result<(Option<Value>, Option<i64>), StorageError> {
        let found = self.workspace(workspace)?;
        if found.is_some() || !puts(batch) {
            return Ok((found, None));
        }
        self.db
            .with_dependent(|_, s| {
                let (_, add) = s.workspace.as_ref().ok_or(rusqlite::Error::InvalidQuery)?;
                add.borrow_mut().execute([workspace])
            })
            .map_err(|e| backend(&[], e))?;
        let id = self.conn().last_insert_rowid();
        Ok((Some(Value::Integer(id)), Some(id)))
    }

    /// Keeps the number a committed transaction gave `workspace`.
    fn numbered(&self, workspace: &str, given: Option<i64>) {
        if let (Workspaces::Numbered(known), Some(id)) = (&self.workspaces, given) {
            known.borrow_mut().insert(workspace.to_owned(), id);
        }
    }

    /// Writes `batch` in the transaction `tx` is in, if its preconditions hold there
    /// (`Some(index)` of the first that fails, nothing written). A precondition on a
    /// key in `seen` is checked against its value there: reads of this transaction.
    /// `ws` is what `kv.workspace` holds for `workspace` ([`SqliteStorage::workspace`]);
    /// `None` only for a batch that puts nothing.
    fn apply(
        s: &Statements<'_>,
        workspace: &str,
        ws: Option<&Value>,
        batch: &Batch,
        seen: &Seen,
    ) -> Result<Option<u32>, StorageError> {
        for (index, precondition) in batch.preconditions.iter().enumerate() {
            let key = match precondition {
                Precondition::Absent(key) => key,
                Precondition::Equals(kv) => &kv.key,
            };
            let read_again;
            let value = match seen.get(workspace, key) {
                Some(value) => value,
                None => {
                    read_again = read(s, ws, key)?;
                    read_again.as_deref()
                }
            };
            let holds = match precondition {
                Precondition::Absent(_) => value.is_none(),
                Precondition::Equals(kv) => value == Some(kv.value.as_slice()),
            };
            if !holds {
                return Ok(Some(u32::try_from(index).unwrap_or(u32::MAX)));
            }
        }
        let sql = |e| backend(&[], e);
        // A workspace with no number holds no row: there is nothing to delete.
        let Some(workspace) = ws else {
            if puts(batch) {
                return Err(StorageError::Backend(
                    "sqlite: a put to a workspace with no number".into(),
                ));
            }
            return Ok(None);
        };
        for mutation in &batch.mutations {
            match mutation {
                Mutation::Put(kv) => {
                    s.put
                        .borrow_mut()
                        .execute(params![workspace, kv.key, kv.value])
                        .map_err(sql)?;
                }
                Mutation::Delete(key) => {
                    s.delete
                        .borrow_mut()
                        .execute(params![workspace, key])
                        .map_err(sql)?;
                }
                Mutation::DeleteRange(range) => match &range.end {
                    Some(end) => {
                        s.delete_range
                            .borrow_mut()
                            .execute(params![workspace, range.start, end])
                            .map_err(sql)?;
                    }
                    None => {
                        s.delete_from
                            .borrow_mut()
                            .execute(params![workspace, range.start])
                            .map_err(sql)?;
                    }
                },
            }
        }
        Ok(None)
    }
}

/// Gives a new database the schema ([`SCHEMA`]) and any database from before Spool set
/// it Spool's `application_id`, in one transaction; returns the schema version.
fn set_up_schema(conn: &Connection) -> Result<u32, Error> {
    let fail = |e: rusqlite::Error| Error::Sqlite {
        path: String::new(),
        message: format!("schema set-up failed: {e}"),
    };
    let current = |conn: &Connection| -> rusqlite::Result<Option<u32>> {
        let version: u32 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
        let id: i32 = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
        Ok((known_schema(version) && id == APPLICATION_ID).then_some(version))
    };
    // A database that is set up is only read: opening it never waits for a writer.
    if let Some(version) = current(conn).map_err(fail)? {
        return Ok(version);
    }
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(fail)?;
    let mut version: u32 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(fail)?;
    if version > SCHEMA_VERSION {
        return Err(Error::Sqlite {
            path: String::new(),
            message: format!(
                "the database has schema version {version}, but this build of Spool knows only \
                 up to version {SCHEMA_VERSION}; use a newer Spool"
            ),
        });
    }
    if version == 0 {
        tx.execute_batch(SCHEMA).map_err(fail)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(fail)?;
        version = SCHEMA_VERSION;
    }
    // New databases, and those from before Spool set it, get Spool's id.
    let id: i32 = tx
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(fail)?;
    if id != APPLICATION_ID {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(fail)?;
    }
    tx.commit().map_err(fail)?;
    Ok(version)
}

/// What a database says about itself: `application_id`, `user_version`, and the
/// `(type, name)` of every schema object.
struct Identity {
    id: i32,
    version: u32,
    objects: Vec<(String, String)>,
}

/// Decides, reading only, whether the existing non-empty file at `path` is Spool's:
/// `Err` says why not (the file is left untouched).
fn inspect(path: &Path) -> Result<(), String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let look = |query: &str| -> rusqlite::Result<Identity> {
        let conn = Connection::open_with_flags(uri(path, query), flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let id = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
        let version = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
        let mut stmt = conn.prepare("SELECT type, name FROM sqlite_schema ORDER BY name")?;
        let objects = stmt
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Identity {
            id,
            version,
            objects,
        })
    };
    // A WAL database in a directory SQLite cannot write is readable only as immutable.
    let Identity {
        id,
        version,
        objects,
    } = look("mode=ro")
        .or_else(|_| look("mode=ro&immutable=1"))
        .map_err(|e| {
            format!("it is not a database Spool can read ({e}); Spool leaves it as it is")
        })?;
    let spool_schema = objects.len() == 1 && objects[0] == ("table".into(), "kv".into());
    let empty = objects.is_empty() && version == 0 && id == 0;
    let ours = match id {
        APPLICATION_ID => true,
        0 => empty || (spool_schema && version >= 1),
        _ => false,
    };
    if ours {
        return Ok(());
    }
    let names: Vec<&str> = objects
        .iter()
        .map(|(_, name)| name.as_str())
        .take(5)
        .collect();
    Err(format!(
        "it is not a Spool database (application_id {id:#x}, user_version {version}, \
         objects [{}]{}); Spool changes no file that is not its own and left it as it is",
        names.join(", "),
        if objects.len() > names.len() {
            ", …"
        } else {
            ""
        }
    ))
}

/// Why Spool may not write the database at `path` (the file, or its directory where
/// SQLite keeps its journal), or `None` when it may. Checked by opening for appending
/// and by creating (and removing) a probe file: nothing of the database changes.
fn not_writable(path: &Path) -> Option<String> {
    if let Err(e) = std::fs::OpenOptions::new().append(true).open(path) {
        return Some(format!(
            "the file {} is not writable ({e}); opened read-only",
            path.display()
        ));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe: PathBuf = dir.join(format!(
        ".spool-probe-{}-{}",
        std::process::id(),
        crate::random_id()
    ));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) => Some(format!(
            "the directory {} is not writable ({e}); opened read-only",
            dir.display()
        )),
    }
}

/// The `file:` URI of `path` with `query`, for SQLite's URI filenames.
fn uri(path: &Path, query: &str) -> String {
    let mut out = String::from("file:");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'?' | b'#' | b'%' => out.push_str(&format!("%{b:02X}")),
            _ => out.push(char::from(b)),
        }
    }
    out.push('?');
    out.push_str(query);
    out
}

fn open_error(path: &Path, e: rusqlite::Error) -> Error {
    Error::Sqlite {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Whether `batch` puts a value (and so needs its workspace numbered).
fn puts(batch: &Batch) -> bool {
    batch
        .mutations
        .iter()
        .any(|m| matches!(m, Mutation::Put(_)))
}

/// The value at `key` in the workspace `kv.workspace` holds as `ws` (`None`: a
/// workspace with no row).
fn read(
    s: &Statements<'_>,
    ws: Option<&Value>,
    key: &[u8],
) -> Result<Option<Vec<u8>>, StorageError> {
    let Some(workspace) = ws else {
        return Ok(None);
    };
    let value: Option<Stored> = s
        .get
        .borrow_mut()
        .query_row(params![workspace, key], |row| stored(row, 0))
        .optional()
        .map_err(|e| backend(key, e))?;
    value.map(|v| blob(key, v)).transpose()
}

/// A stored value as SQLite holds it: the bytes of a BLOB, or the name of the other
/// type it has (read without converting it: a TEXT need not be UTF-8).
type Stored = Result<Vec<u8>, &'static str>;

fn stored(row: &rusqlite::Row<'_>, column: usize) -> rusqlite::Result<Stored> {
    Ok(match row.get_ref(column)? {
        ValueRef::Blob(bytes) => Ok(bytes.to_vec()),
        ValueRef::Text(_) => Err("TEXT"),
        ValueRef::Integer(_) => Err("INTEGER"),
        ValueRef::Real(_) => Err("REAL"),
        ValueRef::Null => Err("NULL"),
    })
}

/// The bytes of a stored value; a value of any other SQLite type is damaged data.
fn blob(key: &[u8], value: Stored) -> Result<Vec<u8>, StorageError> {
    value.map_err(|kind| StorageError::Corrupt {
        key: key.to_vec(),
        detail: format!("SQLite holds it as {kind}, not as the BLOB Spool writes"),
    })
}

/// A SQLite failure while reading or writing at `key`: damage SQLite detected is
/// [`StorageError::Corrupt`], anything else a backend failure.
fn backend(key: &[u8], e: rusqlite::Error) -> StorageError {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    match e.sqlite_error_code() {
        Some(DatabaseCorrupt | NotADatabase) => StorageError::Corrupt {
            key: key.to_vec(),
            detail: format!("the database file is damaged (sqlite: {e})"),
        },
        _ => StorageError::Backend(format!("sqlite: {e}")),
    }
}

impl SqliteStorage {
    /// Begins, commits or rolls back the connection's transaction.
    fn run(&self, control: Control) -> rusqlite::Result<()> {
        self.db.with_dependent(|_, s| {
            let statement = match control {
                Control::Begin => &s.begin,
                Control::Commit => &s.commit,
                Control::Rollback => &s.rollback,
            };
            statement.borrow_mut().execute([]).map(|_| ())
        })
    }

    /// Before a read: an operation's first read begins the read transaction its later
    /// reads share.
    fn snapshot(&self) -> Result<(), StorageError> {
        if self.scope.get() == Scope::Inside {
            self.run(Control::Begin).map_err(|e| backend(&[], e))?;
            self.scope.set(Scope::Reading);
        }
        Ok(())
    }

    /// Ends the read transaction the operation's reads hold, if they hold one, and
    /// moves to `then`. A read transaction holds nothing to lose; should ending it fail,
    /// the connection is still in it and the next transaction it begins fails, saying
    /// so.
    fn release(&self, then: Scope) {
        if self.scope.get() == Scope::Reading && !self.conn().is_autocommit() {
            let _ended = self.run(Control::Rollback);
        }
        self.seen.borrow_mut().0.clear();
        self.scope.set(then);
    }

    /// Commits `batch` in the transaction the operation's reads hold: SQLite makes it
    /// the write transaction unless another connection wrote since its snapshot (it
    /// then refuses at the first write). `false` when it did not commit, having left
    /// nothing written (or when that transaction is gone).
    fn commit_in_snapshot(&self, workspace: &str, batch: &Batch) -> bool {
        self.scope.set(Scope::Inside);
        let seen = std::mem::take(&mut *self.seen.borrow_mut());
        // SQLite may have ended the transaction itself (some errors roll it back): then
        // each statement would be a transaction of its own, and what it read may have
        // changed since.
        if self.conn().is_autocommit() {
            return false;
        }
        let applied = self
            .workspace_to_write(workspace, batch)
            .and_then(|(ws, given)| {
                self.db
                    .with_dependent(|_, s| Self::apply(s, workspace, ws.as_ref(), batch, &seen))
                    .map(|r| (r, given))
            });
        if let Ok((None, given)) = applied
            && self.run(Control::Commit).is_ok()
        {
            self.numbered(workspace, given);
            return true;
        }
        if !self.conn().is_autocommit() {
            let _ended = self.run(Control::Rollback);
        }
        false
    }
}

impl Storage for SqliteStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.snapshot()?;
        let ws = self.workspace(workspace)?;
        let value = self.db.with_dependent(|_, s| read(s, ws.as_ref(), key))?;
        if self.scope.get() == Scope::Reading {
            self.seen.borrow_mut().note(workspace, key, &value);
        }
        Ok(value)
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.snapshot()?;
        let Some(ws) = self.workspace(workspace)? else {
            return Ok(Vec::new());
        };
        let limit: i64 = if query.limit == 0 {
            -1
        } else {
            i64::from(query.limit)
        };
        let start = &query.range.start;
        // Keys compare as BLOBs, so only BLOB keys are in a range (SQLite orders every
        // other type below them); values are type-checked below.
        let to_kv = |row: &rusqlite::Row<'_>| Ok((row.get::<_, Vec<u8>>(0)?, stored(row, 1)?));
        let run = |s: &Statements<'_>| -> rusqlite::Result<Vec<(Vec<u8>, Stored)>> {
            match &query.range.end {
                Some(end) => {
                    let statement = if query.reverse {
                        &s.range_desc
                    } else {
                        &s.range_asc
                    };
                    let mut stmt = statement.borrow_mut();
                    let rows = stmt.query_map(params![ws, start, end, limit], to_kv)?;
                    rows.collect()
                }
                None => {
                    let statement = if query.reverse {
                        &s.range_from_desc
                    } else {
                        &s.range_from_asc
                    };
                    let mut stmt = statement.borrow_mut();
                    let rows = stmt.query_map(params![ws, start, limit], to_kv)?;
                    rows.collect()
                }
            }
        };
        let rows = self
            .db
            .with_dependent(|_, s| run(s))
            .map_err(|e| backend(start, e))?;
        rows.into_iter()
            .map(|(key, value)| {
                let value = blob(&key, value)?;
                Ok(Kv { key, value })
            })
            .collect()
    }

    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        if let Some(reason) = &self.read_only {
            return Err(StorageError::Backend(format!(
                "sqlite: cannot write: {reason}"
            )));
        }
        // Anything short of a commit there (another writer came between, a
        // precondition that fails in the snapshot, an error) is done again below, from
        // the start, as if the operation's reads held nothing.
        if self.scope.get() == Scope::Reading {
            // A batch of preconditions alone is checked against the newest state: with
            // no write, the snapshot's transaction would not find out it was stale.
            if batch.mutations.is_empty() {
                self.release(Scope::Inside);
            } else if self.commit_in_snapshot(workspace, &batch) {
                return Ok(());
            }
        }
        let tx = Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
            .map_err(|e| backend(&[], e))?;
        // Dropping `tx` without committing rolls it back: a failed precondition or a
        // failed statement leaves nothing written.
        let (ws, given) = self.workspace_to_write(workspace, &batch)?;
        let applied = self.db.with_dependent(|_, s| {
            Self::apply(s, workspace, ws.as_ref(), &batch, &Seen::default())
        })?;
        match applied {
            Some(index) => Err(StorageError::Conflict(index)),
            None => {
                tx.commit().map_err(|e| backend(&[], e))?;
                self.numbered(workspace, given);
                Ok(())
            }
        }
    }

    fn begin_operation(&self) {
        self.release(Scope::Inside);
    }

    fn end_operation(&self) {
        self.release(Scope::Outside);
    }
}

#[cfg(test)]
#[path = "tests/sqlite.rs"]
mod tests;
