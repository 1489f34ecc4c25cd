//! [`SqliteStorage`]: the Spool storage contract on one SQLite database file.
//!
//! One table holds every workspace's key space:
//! `kv(workspace, key, value)` with primary key `(workspace, key)`. SQLite compares BLOBs
//! with `memcmp` (a shorter key that is a prefix sorts first), which is exactly the
//! bytewise key order the contract asks for. The database runs in WAL mode with
//! `synchronous=FULL`, so a commit that returned is on disk.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use spool::{Batch, Kv, Mutation, Precondition, RangeQuery, Storage, StorageError};

use crate::error::Error;

/// How long a writer waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

/// The schema, one migration per version: entry `i` takes `user_version` from `i` to
/// `i + 1`. Append new migrations; never edit an applied one.
const MIGRATIONS: &[&str] = &["CREATE TABLE kv (
        workspace TEXT NOT NULL,
        key BLOB NOT NULL,
        value BLOB NOT NULL,
        PRIMARY KEY (workspace, key)
    ) WITHOUT ROWID;"];

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
    conn: Connection,
}

impl SqliteStorage {
    /// Opens (creating it and its parent directories if needed) the database at `path`
    /// and brings its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::Io {
                context: format!("cannot create the directory {}", parent.display()),
                source: e,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| open_error(path, e))?;
        Self::setup(conn).map_err(|e| match e {
            Error::Sqlite { message, .. } => Error::Sqlite {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// Opens a private in-memory database (gone when dropped).
    pub fn open_in_memory() -> Result<Self, Error> {
        let conn =
            Connection::open_in_memory().map_err(|e| open_error(Path::new(":memory:"), e))?;
        Self::setup(conn)
    }

    fn setup(conn: Connection) -> Result<Self, Error> {
        let fail = |e: rusqlite::Error| Error::Sqlite {
            path: String::new(),
            message: e.to_string(),
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // An in-memory database answers `memory`; that is fine.
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        conn.set_prepared_statement_cache_capacity(32);
        migrate(&conn)?;
        Ok(SqliteStorage { conn })
    }

    /// The schema version this build creates and reads (`PRAGMA user_version`).
    pub fn schema_version() -> u32 {
        MIGRATIONS.len() as u32
    }

    fn apply(
        tx: &Transaction<'_>,
        workspace: &str,
        batch: &Batch,
    ) -> rusqlite::Result<Option<u32>> {
        for (index, precondition) in batch.preconditions.iter().enumerate() {
            let holds = match precondition {
                Precondition::Absent(key) => read(tx, workspace, key)?.is_none(),
                Precondition::Equals(kv) => {
                    read(tx, workspace, &kv.key)?.as_deref() == Some(kv.value.as_slice())
                }
            };
            if !holds {
                return Ok(Some(u32::try_from(index).unwrap_or(u32::MAX)));
            }
        }
        for mutation in &batch.mutations {
            match mutation {
                Mutation::Put(kv) => {
                    tx.prepare_cached(sql::PUT)?
                        .execute(params![workspace, kv.key, kv.value])?;
                }
                Mutation::Delete(key) => {
                    tx.prepare_cached(sql::DELETE)?
                        .execute(params![workspace, key])?;
                }
                Mutation::DeleteRange(range) => match &range.end {
                    Some(end) => {
                        tx.prepare_cached(sql::DELETE_RANGE)?.execute(params![
                            workspace,
                            range.start,
                            end
                        ])?;
                    }
                    None => {
                        tx.prepare_cached(sql::DELETE_FROM)?
                            .execute(params![workspace, range.start])?;
                    }
                },
            }
        }
        Ok(None)
    }
}

/// Brings the schema to [`SqliteStorage::schema_version`] in one transaction.
fn migrate(conn: &Connection) -> Result<(), Error> {
    let fail = |e: rusqlite::Error| Error::Sqlite {
        path: String::new(),
        message: format!("schema migration failed: {e}"),
    };
    let known = MIGRATIONS.len() as u32;
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(fail)?;
    let version: u32 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(fail)?;
    if version > known {
        return Err(Error::Sqlite {
            path: String::new(),
            message: format!(
                "the database has schema version {version}, but this build of Spool knows only \
                 up to version {known}; use a newer Spool"
            ),
        });
    }
    for migration in &MIGRATIONS[version as usize..] {
        tx.execute_batch(migration).map_err(fail)?;
    }
    if version < known {
        tx.pragma_update(None, "user_version", known)
            .map_err(fail)?;
    }
    tx.commit().map_err(fail)
}

fn open_error(path: &Path, e: rusqlite::Error) -> Error {
    Error::Sqlite {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn read(conn: &Connection, workspace: &str, key: &[u8]) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached(sql::GET)?
        .query_row(params![workspace, key], |row| row.get(0))
        .optional()
}

fn backend(e: rusqlite::Error) -> StorageError {
    StorageError::Backend(format!("sqlite: {e}"))
}

impl Storage for SqliteStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        read(&self.conn, workspace, key).map_err(backend)
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        let limit: i64 = if query.limit == 0 {
            -1
        } else {
            i64::from(query.limit)
        };
        let start = &query.range.start;
        let to_kv = |row: &rusqlite::Row<'_>| {
            Ok(Kv {
                key: row.get(0)?,
                value: row.get(1)?,
            })
        };
        let run = || -> rusqlite::Result<Vec<Kv>> {
            match &query.range.end {
                Some(end) => {
                    let text = if query.reverse {
                        sql::RANGE_DESC
                    } else {
                        sql::RANGE_ASC
                    };
                    let mut stmt = self.conn.prepare_cached(text)?;
                    let rows = stmt.query_map(params![workspace, start, end, limit], to_kv)?;
                    rows.collect()
                }
                None => {
                    let text = if query.reverse {
                        sql::RANGE_FROM_DESC
                    } else {
                        sql::RANGE_FROM_ASC
                    };
                    let mut stmt = self.conn.prepare_cached(text)?;
                    let rows = stmt.query_map(params![workspace, start, limit], to_kv)?;
                    rows.collect()
                }
            }
        };
        run().map_err(backend)
    }

    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(backend)?;
        // Dropping `tx` without committing rolls it back: a failed precondition or a
        // failed statement leaves nothing written.
        match Self::apply(&tx, workspace, &batch).map_err(backend)? {
            Some(index) => Err(StorageError::Conflict(index)),
            None => tx.commit().map_err(backend),
        }
    }
}
