//! [`PostgresStorage`]: the Spool storage contract on a PostgreSQL server.
//!
//! One table holds every workspace's key space, `spool_kv(workspace, key, value)` with
//! primary key `(workspace, key)`; keys and values are `bytea`, which PostgreSQL
//! compares bytewise (a shorter key that is a prefix sorts first): exactly the order the
//! contract asks for. A `range` is a scan of the primary key's index with a `LIMIT` and
//! a direction; a `delete-range` is one `DELETE`.
//!
//! **A commit is one statement.** `spool_commit(…)`, a PL/pgSQL function the schema
//! defines, takes the whole batch as arrays (binary parameters, no text to escape) and
//! runs as one transaction: it takes a transaction-scoped advisory lock on the
//! workspace (so that the commits of one workspace are serial), checks the
//! preconditions in order (it returns the index of the first that does not hold, having
//! written nothing), then applies the writes in order. PostgreSQL keeps the plans of a
//! function's statements for the connection's life, so the statements inside are
//! planned once per server connection, as prepared statements would be. Why a lock and
//! not `SERIALIZABLE`: ARCHITECTURE.md, "PostgreSQL".
//!
//! **Contention.** An operation's reads are plain autocommit reads and its commit checks
//! its preconditions; when the commit loses to another writer, the core tries the
//! operation again. That second attempt (and every later one of that operation) takes
//! the workspace's lock at its first read, in a transaction that its commit ends: no
//! other writer can change what it read, so a busy session costs its writers a wait,
//! never a surfaced `conflict`. An uncontended operation pays nothing for this.
//!
//! **Behind a pooler.** Nothing outlives a transaction: statements are unnamed
//! (`query_typed`: parse, bind and execute in one message, no named prepared statement),
//! locks are transaction-scoped, and no session setting is relied on. So PgBouncer in
//! transaction pooling mode may hand every call to another server connection.
//!
//! **Schema** (`spool_schema_version`): numbered migrations, each applied once, in one
//! transaction that first takes a transaction-scoped advisory lock ([`MIGRATION_LOCK`]):
//! hosts that start at once wait for each other, and all but the first find nothing to
//! do. A migration is transactional DDL only (no `CREATE INDEX CONCURRENTLY`, which
//! cannot run in a transaction); a session-level lock would outlive its transaction
//! behind a pooler, held by a server connection that another client gets next. A
//! database whose schema is newer than this build's is refused, unchanged.
//!
//! **Connections.** One connection per storage; a URL may name several hosts (libpq's
//! `postgres://u@h1:p1,h2:p2/db?target_session_attrs=read-write`: the connection goes
//! to whichever accepts writes). When the server closed it (a restart,
//! `pg_terminate_backend`, an idle timeout), the connection is dropped and the next
//! call connects again, trying for up to [`RECONNECT_BUDGET`] while the server
//! restarts or a standby is promoted; a read (outside the operation's locked transaction) is retried
//! once on the new connection, as a read changes nothing. A commit whose connection
//! breaks after it was sent may or may not have applied: the storage reads back the
//! keys it writes on a new connection ([`decide`]): all of them as the batch leaves
//! them, it applied (success); its preconditions all still holding, one of them on a
//! key it changes, it did not (it is committed again, once: its preconditions are
//! checked again in its own transaction, so it cannot apply twice); otherwise
//! [`StorageError::Unknown`]. Inside the operation's locked transaction a connection
//! lost before `COMMIT` means nothing applied (`Backend`).

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use postgres::config::Host;
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, Config, NoTls};
use spool::{Batch, Kv, Mutation, Precondition, RangeQuery, Storage, StorageError};

use crate::error::Error;
use crate::storage::postgres_archives::PostgresArchives;

/// The advisory lock class of Spool's locks: "SPOL" (`pg_advisory_xact_lock(int, int)`,
/// the two-key form, so that another application's single-key locks never collide).
/// The second key is `hashtext(workspace)`; two workspaces whose names hash alike
/// share a lock, which only makes their commits wait for each other.
const LOCK_CLASS: i32 = 0x5350_4f4c;

/// The advisory lock class of migrations: one lock for the whole database.
const MIGRATION_LOCK: i32 = 0x5350_4f4d;

/// How long connecting may take before it fails (when the URL sets no
/// `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a call keeps trying to connect again after its connection was lost (a
/// restart or a failover takes seconds), and the pauses between its attempts.
const RECONNECT_BUDGET: Duration = Duration::from_secs(20);
const RECONNECT_FIRST_PAUSE: Duration = Duration::from_millis(50);
const RECONNECT_MAX_PAUSE: Duration = Duration::from_secs(1);

/// The schema migrations, in order: migration `n` (1-based) brings the schema to
/// version `n`. Transactional DDL only.
const MIGRATIONS: &[&str] = &[
    // 1: the key space, and the commit of one batch.
    r#"CREATE TABLE spool_kv (
        workspace text COLLATE "C" NOT NULL,
        key bytea NOT NULL,
        value bytea NOT NULL,
        PRIMARY KEY (workspace, key)
    );
    -- Checks the preconditions in order: the index of the first that does not hold,
    -- with nothing written; else applies the mutations in order and returns -1.
    -- kinds: 0 put (keys, vals), 1 delete (keys), 2 delete-range (keys, ends; no end
    -- when NULL). `lock`: take the workspace's commit lock first.
    CREATE FUNCTION spool_commit(
        ws text, lock boolean,
        pre_keys bytea[], pre_values bytea[],
        kinds smallint[], keys bytea[], vals bytea[], ends bytea[]
    ) RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
        i integer;
        held bytea;
    BEGIN
        IF lock THEN
            PERFORM pg_advisory_xact_lock(1397772108, hashtext(ws));
        END IF;
        FOR i IN 1 .. coalesce(array_length(pre_keys, 1), 0) LOOP
            SELECT value INTO held FROM spool_kv WHERE workspace = ws AND key = pre_keys[i];
            IF pre_values[i] IS NULL THEN
                IF FOUND THEN RETURN i - 1; END IF;
            ELSIF NOT FOUND OR held <> pre_values[i] THEN
                RETURN i - 1;
            END IF;
        END LOOP;
        FOR i IN 1 .. coalesce(array_length(kinds, 1), 0) LOOP
            IF kinds[i] = 0 THEN
                INSERT INTO spool_kv (workspace, key, value) VALUES (ws, keys[i], vals[i])
                    ON CONFLICT (workspace, key) DO UPDATE SET value = EXCLUDED.value;
            ELSIF kinds[i] = 1 THEN
                DELETE FROM spool_kv WHERE workspace = ws AND key = keys[i];
            ELSIF ends[i] IS NULL THEN
                DELETE FROM spool_kv WHERE workspace = ws AND key >= keys[i];
            ELSE
                DELETE FROM spool_kv WHERE workspace = ws AND key >= keys[i] AND key < ends[i];
            END IF;
        END LOOP;
        RETURN -1;
    END
    $$;"#,
    // 2: reset archives, each the parts of its JSON (the same bytes as an archive
    // file) written in one transaction: complete or absent.
    r#"CREATE TABLE spool_reset_archives (
        workspace text COLLATE "C" NOT NULL,
        session_key text COLLATE "C" NOT NULL,
        session_id text COLLATE "C" NOT NULL,
        archived_at bigint NOT NULL,
        part integer NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (workspace, session_key, session_id, archived_at, part)
    );"#,
];

/// The schema version this build writes.
pub const POSTGRES_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Whether `text` names a PostgreSQL server (`postgres://…` or `postgresql://…`)
/// rather than a database file.
pub fn is_postgres_url(text: &str) -> bool {
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Spool's storage on a PostgreSQL server: every workspace in one `spool_kv` table of
/// one database.
///
/// ```no_run
/// use spool::{Batch, Storage};
/// use spool_host::PostgresStorage;
///
/// let storage = PostgresStorage::connect("postgres://spool@127.0.0.1:5432/spool")?;
/// let mut batch = Batch::default();
/// batch.require_absent(b"k".to_vec());
/// batch.put(b"k".to_vec(), b"v".to_vec());
/// storage.commit("default", batch)?;
/// assert_eq!(storage.get("default", b"k")?, Some(b"v".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PostgresStorage {
    config: Config,
    /// How the commits of a workspace are made serial.
    isolation: Isolation,
    /// The server and database, for messages: `host:port[,host:port…]/database`, never
    /// the password.
    target: String,
    /// The connection; `None` after the server closed it, until the next call.
    client: RefCell<Option<Client>>,
    /// Whether an operation is under way ([`Storage::begin_operation`]).
    in_operation: Cell<bool>,
    /// Where the connection is in that operation.
    scope: Cell<Scope>,
}

/// Where a connection is in the operation its storage was told of
/// ([`Storage::begin_operation`]); see "Contention" in the module's documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Scope {
    /// No operation, or one whose commits have not lost: reads are autocommit.
    #[default]
    Optimistic,
    /// In an operation whose commit lost to another writer: its next read opens a
    /// transaction holding the workspace's lock.
    Locking,
    /// In that transaction: reads and the commit run in it, under the lock.
    Locked,
}

impl std::fmt::Debug for PostgresStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStorage")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl PostgresStorage {
    /// Connects to the database `url` names (`postgres://user[:password]@host[:port]/db`
    /// or `postgresql://…`, libpq's URL syntax, parameters included) and brings its
    /// schema up to date. Every failure (a malformed URL, a refused connection, a failed
    /// authentication, a missing database) is [`Error::Postgres`] naming the host and the
    /// database, never the password; nothing is written.
    pub fn connect(url: &str) -> Result<Self, Error> {
        let mut config: Config = url.parse().map_err(|e: postgres::Error| Error::Postgres {
            target: redact(url),
            message: format!("not a PostgreSQL URL: {}", cause(&e)),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("spool");
        let target = describe(&config);
        let storage = PostgresStorage {
            config,
            isolation: Isolation::AdvisoryLock,
            target,
            client: RefCell::new(None),
            in_operation: Cell::new(false),
            scope: Cell::default(),
        };
        let mut client = storage.open_connection()?;
        migrate(&mut client).map_err(|message| Error::Postgres {
            target: storage.target.clone(),
            message,
        })?;
        *storage.client.borrow_mut() = Some(client);
        Ok(storage)
    }

    /// Makes the commits of a workspace serial by `isolation` instead of the default
    /// [`Isolation::AdvisoryLock`]: the other way is here for the benchmark that
    /// measures the choice (`cargo xtask bench postgres`).
    #[doc(hidden)]
    pub fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        *self.client.get_mut() = None;
        self
    }

    /// The server and database this storage is on, as messages name them
    /// (`host:port/database`; never the password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The reset-archive store in this storage's database (its own connections).
    pub fn archives(&self) -> PostgresArchives {
        PostgresArchives::new(self.config.clone(), self.target.clone())
    }

    fn open_connection(&self) -> Result<Client, Error> {
        let mut client = self.config.connect(NoTls).map_err(|e| self.error(&e))?;
        if self.isolation == Isolation::Serializable {
            // A session setting: not for a pooler (the measured alternative only).
            client
                .batch_execute(
                    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
                )
                .map_err(|e| self.error(&e))?;
        }
        Ok(client)
    }

    /// A new connection after the last one was lost: tried again with a growing pause
    /// (from [`RECONNECT_FIRST_PAUSE`], doubling, at most [`RECONNECT_MAX_PAUSE`]) while
    /// the server restarts or a standby is promoted, for at most [`RECONNECT_BUDGET`];
    /// then a `storage` error naming the hosts tried and the last cause. Nothing was
    /// sent on a connection that did not open.
    fn reconnect(&self) -> Result<Client, StorageError> {
        let started = Instant::now();
        let mut pause = RECONNECT_FIRST_PAUSE;
        loop {
            match self.open_connection() {
                Ok(client) => return Ok(client),
                Err(e) => {
                    if started.elapsed() + pause > RECONNECT_BUDGET {
                        return Err(StorageError::Backend(format!(
                            "{e} (no connection to {} within {} s)",
                            self.target,
                            RECONNECT_BUDGET.as_secs()
                        )));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(RECONNECT_MAX_PAUSE);
                }
            }
        }
    }

    fn error(&self, e: &postgres::Error) -> Error {
        Error::Postgres {
            target: self.target.clone(),
            message: cause(e),
        }
    }

    fn backend(&self, e: &postgres::Error) -> StorageError {
        StorageError::Backend(format!("PostgreSQL {}: {}", self.target, cause(e)))
    }

    /// Runs `f` on the connection, connecting first when there is none. When the
    /// connection turns out broken, it is dropped (the next call connects again); a
    /// `retry`able call (a read outside a transaction) is then run once more on a new
    /// connection. Inside the operation's transaction nothing is retried: the
    /// transaction, and its lock, are gone with the connection.
    fn with_client<T>(
        &self,
        retry: bool,
        f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StorageError> {
        self.with_client_or(retry, f, StorageError::Backend)
    }

    /// [`with_client`](Self::with_client), with the error a broken connection gives
    /// made by `lost` (a commit's: its outcome may be unknown).
    fn with_client_or<T>(
        &self,
        retry: bool,
        mut f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
        lost: impl Fn(String) -> StorageError,
    ) -> Result<T, StorageError> {
        let mut slot = self.client.borrow_mut();
        let mut attempts = if retry { 2 } else { 1 };
        loop {
            attempts -= 1;
            // A connection known to be closed is replaced before anything is sent on it.
            if slot.as_ref().is_some_and(Client::is_closed) {
                *slot = None;
            }
            let client = match &mut *slot {
                Some(client) => client,
                None => slot.insert(self.reconnect()?),
            };
            match f(client) {
                Ok(value) => return Ok(value),
                Err(e) => {
                    if broken(&e) || client.is_closed() {
                        *slot = None;
                        if self.scope.get() == Scope::Locked {
                            self.scope.set(Scope::Locking);
                        } else if attempts > 0 {
                            continue;
                        }
                        return Err(lost(format!("PostgreSQL {}: {}", self.target, cause(&e))));
                    }
                    return Err(self.backend(&e));
                }
            }
        }
    }

    /// Before a read of `workspace`: in an operation whose commit lost, opens the
    /// transaction that holds the workspace's lock.
    fn before_read(&self, workspace: &str) -> Result<(), StorageError> {
        if self.scope.get() != Scope::Locking {
            return Ok(());
        }
        self.with_client(false, |client| {
            client.batch_execute("BEGIN")?;
            let locked = client.query_typed(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[(&LOCK_CLASS, Type::INT4), (&workspace, Type::TEXT)],
            );
            if locked.is_err() {
                let _ = client.batch_execute("ROLLBACK");
            }
            locked
        })?;
        self.scope.set(Scope::Locked);
        Ok(())
    }

    /// Ends the operation's transaction, if one is open: `COMMIT` (which PostgreSQL
    /// turns into a rollback when a statement in it failed). When its reply is lost,
    /// whether the transaction's writes applied is unknown.
    fn end_transaction(&self) -> Result<(), StorageError> {
        if self.scope.get() != Scope::Locked {
            return Ok(());
        }
        let result = self.with_client_or(
            false,
            |client| client.batch_execute("COMMIT"),
            StorageError::Unknown,
        );
        self.scope.set(Scope::Optimistic);
        result
    }

    fn read<T>(
        &self,
        workspace: &str,
        f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StorageError> {
        self.before_read(workspace)?;
        let retry = self.scope.get() != Scope::Locked;
        self.with_client(retry, f)
    }
}

impl PostgresStorage {
    /// One attempt at committing `arrays` (a batch) to `workspace`.
    fn commit_once(&self, workspace: &str, arrays: &Arrays<'_>) -> Result<(), StorageError> {
        // Outside the operation's transaction, the function takes the lock itself.
        let lock = self.isolation == Isolation::AdvisoryLock && self.scope.get() != Scope::Locked;
        let params: [(&(dyn ToSql + Sync), Type); 8] = [
            (&workspace, Type::TEXT),
            (&lock, Type::BOOL),
            (&arrays.pre_keys, Type::BYTEA_ARRAY),
            (&arrays.pre_values, Type::BYTEA_ARRAY),
            (&arrays.kinds, Type::INT2_ARRAY),
            (&arrays.keys, Type::BYTEA_ARRAY),
            (&arrays.vals, Type::BYTEA_ARRAY),
            (&arrays.ends, Type::BYTEA_ARRAY),
        ];
        let mut retries = 0;
        // Outside the operation's transaction the statement is its own transaction,
        // so a lost reply leaves its outcome unknown; inside it, nothing applies
        // before `COMMIT`, so a connection lost before that wrote nothing.
        let lost = if self.scope.get() == Scope::Locked {
            StorageError::Backend
        } else {
            StorageError::Unknown
        };
        let outcome = self.with_client_or(
            false,
            |client| {
                loop {
                    match client.query_typed_one(
                        "SELECT spool_commit($1, $2, $3, $4, $5, $6, $7, $8)",
                        &params,
                    ) {
                        // Under `SERIALIZABLE`, a commit that lost to a concurrent one
                        // wrote nothing and is tried again.
                        Err(e)
                            if self.isolation == Isolation::Serializable
                                && e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE)
                                && retries < SERIALIZATION_RETRIES =>
                        {
                            retries += 1;
                        }
                        result => return result.map(|row| row.get::<_, i32>(0)),
                    }
                }
            },
            lost,
        );
        // The operation's transaction ends with its commit, whatever its outcome.
        let ended = self.end_transaction();
        let failed = outcome?;
        ended?;
        if failed < 0 {
            return Ok(());
        }
        if self.isolation == Isolation::AdvisoryLock && self.in_operation.get() {
            // The core tries the operation again: this time under the lock.
            self.scope.set(Scope::Locking);
        }
        Err(StorageError::Conflict(failed as u32))
    }

    /// After a commit's reply was lost: the batch's keys as they are now, read on a
    /// new connection, and what they say ([`decide`]); `None` when they cannot be read.
    fn read_back(&self, workspace: &str, batch: &Batch) -> Option<Lost> {
        if batch
            .mutations
            .iter()
            .any(|m| matches!(m, Mutation::DeleteRange(_)))
        {
            return Some(Lost::Undecided);
        }
        let keys: std::collections::BTreeSet<&[u8]> = batch
            .preconditions
            .iter()
            .map(|p| match p {
                Precondition::Absent(key) => key.as_slice(),
                Precondition::Equals(kv) => kv.key.as_slice(),
            })
            .chain(batch.mutations.iter().filter_map(|m| match m {
                Mutation::Put(kv) => Some(kv.key.as_slice()),
                Mutation::Delete(key) => Some(key.as_slice()),
                Mutation::DeleteRange(_) => None,
            }))
            .collect();
        let keys: Vec<&[u8]> = keys.into_iter().collect();
        let rows = self
            .with_client(true, |client| {
                client.query_typed(
                    "SELECT key, value FROM spool_kv WHERE workspace = $1 AND key = ANY($2)",
                    &[(&workspace, Type::TEXT), (&keys, Type::BYTEA_ARRAY)],
                )
            })
            .ok()?;
        let now: std::collections::HashMap<Vec<u8>, Vec<u8>> = rows
            .into_iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        Some(decide(batch, |key| now.get(key).map(Vec::as_slice)))
    }
}

impl Storage for PostgresStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.read(workspace, |client| {
            let row = client.query_typed_opt(
                "SELECT value FROM spool_kv WHERE workspace = $1 AND key = $2",
                &[(&workspace, Type::TEXT), (&key, Type::BYTEA)],
            )?;
            Ok(row.map(|row| row.get::<_, Vec<u8>>(0)))
        })
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        let order = if query.reverse { "DESC" } else { "ASC" };
        let end = if query.range.end.is_some() {
            "AND key < $4"
        } else {
            ""
        };
        // `LIMIT NULL` is no limit.
        let limit = (query.limit > 0).then_some(i64::from(query.limit));
        let sql = format!(
            "SELECT key, value FROM spool_kv WHERE workspace = $1 AND key >= $2 {end} \
             ORDER BY key {order} LIMIT $3"
        );
        let start = query.range.start.as_slice();
        self.read(workspace, |client| {
            let rows = match &query.range.end {
                Some(end) => client.query_typed(
                    &sql,
                    &[
                        (&workspace, Type::TEXT),
                        (&start, Type::BYTEA),
                        (&limit, Type::INT8),
                        (&end.as_slice(), Type::BYTEA),
                    ],
                )?,
                None => client.query_typed(
                    &sql,
                    &[
                        (&workspace, Type::TEXT),
                        (&start, Type::BYTEA),
                        (&limit, Type::INT8),
                    ],
                )?,
            };
            Ok(rows
                .into_iter()
                .map(|row| Kv {
                    key: row.get(0),
                    value: row.get(1),
                })
                .collect())
        })
    }

    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        let arrays = Arrays::of(&batch);
        match self.commit_once(workspace, &arrays) {
            // The reply was lost: read back what the batch writes and decide.
            Err(StorageError::Unknown(cause)) => match self.read_back(workspace, &batch) {
                Some(Lost::Applied) => Ok(()),
                // Nothing applied: tried once more (its preconditions are checked
                // again in its own transaction, so it cannot apply twice).
                Some(Lost::NotApplied) => self.commit_once(workspace, &arrays),
                Some(Lost::Undecided) | None => Err(StorageError::Unknown(cause)),
            },
            other => other,
        }
    }

    fn begin_operation(&self) {
        self.in_operation.set(true);
        self.scope.set(Scope::Optimistic);
    }

    fn end_operation(&self) {
        // A read-only operation's transaction: nothing to keep, only the lock to let go.
        let _ = self.end_transaction();
        self.in_operation.set(false);
        self.scope.set(Scope::Optimistic);
    }
}

/// What a commit whose reply was lost did, told by the keys it writes as they are now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lost {
    /// Every key the batch writes holds what the batch leaves there: it applied (or the
    /// same writes were made, which no caller can tell apart).
    Applied,
    /// Every precondition still holds, and one of them is on a key the batch changes:
    /// had it applied, that precondition would not hold.
    NotApplied,
    /// Neither (another writer came after it): only the caller can tell.
    Undecided,
}

/// [`Lost`] of `batch` (no range deletes), given each key's value now.
fn decide<'a>(batch: &Batch, now: impl Fn(&[u8]) -> Option<&'a [u8]>) -> Lost {
    // What the batch leaves under each key it writes, the later write winning.
    let mut leaves: std::collections::HashMap<&[u8], Option<&[u8]>> =
        std::collections::HashMap::new();
    for mutation in &batch.mutations {
        match mutation {
            Mutation::Put(kv) => {
                leaves.insert(&kv.key, Some(&kv.value));
            }
            Mutation::Delete(key) => {
                leaves.insert(key, None);
            }
            Mutation::DeleteRange(_) => return Lost::Undecided,
        }
    }
    if leaves.iter().all(|(key, value)| now(key) == *value) {
        return Lost::Applied;
    }
    let mut changes_a_checked_key = false;
    for precondition in &batch.preconditions {
        let (key, wanted) = match precondition {
            Precondition::Absent(key) => (key.as_slice(), None),
            Precondition::Equals(kv) => (kv.key.as_slice(), Some(kv.value.as_slice())),
        };
        if now(key) != wanted {
            return Lost::Undecided;
        }
        if leaves.get(key).is_some_and(|left| *left != wanted) {
            changes_a_checked_key = true;
        }
    }
    if changes_a_checked_key {
        Lost::NotApplied
    } else {
        Lost::Undecided
    }
}

/// How the commits of one workspace are made serial.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A transaction-scoped advisory lock on the workspace, then `READ COMMITTED`
    /// checks and writes: commits of a workspace wait for each other (the default).
    AdvisoryLock,
    /// `SERIALIZABLE` transactions (a session setting: not behind a pooler), a commit
    /// that loses a conflict tried again, no lock.
    Serializable,
}

/// How often a `SERIALIZABLE` commit is tried again after a serialization failure.
const SERIALIZATION_RETRIES: u32 = 20;

/// A batch as the arrays `spool_commit` takes.
struct Arrays<'a> {
    pre_keys: Vec<&'a [u8]>,
    /// `None`: the key must be absent.
    pre_values: Vec<Option<&'a [u8]>>,
    kinds: Vec<i16>,
    keys: Vec<&'a [u8]>,
    vals: Vec<Option<&'a [u8]>>,
    ends: Vec<Option<&'a [u8]>>,
}

impl<'a> Arrays<'a> {
    fn of(batch: &'a Batch) -> Self {
        let mut arrays = Arrays {
            pre_keys: Vec::with_capacity(batch.preconditions.len()),
            pre_values: Vec::with_capacity(batch.preconditions.len()),
            kinds: Vec::with_capacity(batch.mutations.len()),
            keys: Vec::with_capacity(batch.mutations.len()),
            vals: Vec::with_capacity(batch.mutations.len()),
            ends: Vec::with_capacity(batch.mutations.len()),
        };
        for precondition in &batch.preconditions {
            let (key, value) = match precondition {
                Precondition::Absent(key) => (key.as_slice(), None),
                Precondition::Equals(kv) => (kv.key.as_slice(), Some(kv.value.as_slice())),
            };
            arrays.pre_keys.push(key);
            arrays.pre_values.push(value);
        }
        for mutation in &batch.mutations {
            let (kind, key, value, end) = match mutation {
                Mutation::Put(kv) => (0, kv.key.as_slice(), Some(kv.value.as_slice()), None),
                Mutation::Delete(key) => (1, key.as_slice(), None, None),
                Mutation::DeleteRange(range) => {
                    (2, range.start.as_slice(), None, range.end.as_deref())
                }
            };
            arrays.kinds.push(kind);
            arrays.keys.push(key);
            arrays.vals.push(value);
            arrays.ends.push(end);
        }
        arrays
    }
}

/// Brings the schema of the database `client` is connected to up to date, in one
/// transaction under the migration lock.
fn migrate(client: &mut Client) -> Result<(), String> {
    let newer = |version: i32| {
        format!(
            "its Spool schema is version {version}, newer than this build's \
             {POSTGRES_SCHEMA_VERSION}: upgrade Spool to use it"
        )
    };
    migrate_to(client).map_err(|e| match e {
        Migration::Newer(version) => newer(version),
        Migration::Failed(e) => cause(&e),
    })
}

/// Why [`migrate`] stopped.
enum Migration {
    /// The database's schema is of this newer version.
    Newer(i32),
    /// A statement failed.
    Failed(postgres::Error),
}

impl From<postgres::Error> for Migration {
    fn from(e: postgres::Error) -> Self {
        Migration::Failed(e)
    }
}

fn migrate_to(client: &mut Client) -> Result<(), Migration> {
    let mut tx = client.transaction()?;
    tx.batch_execute(&format!(
        "SELECT pg_advisory_xact_lock({MIGRATION_LOCK}, 0);
         CREATE TABLE IF NOT EXISTS spool_schema_version (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))?;
    let row = tx.query_typed_one(
        "SELECT COALESCE(max(version), 0) FROM spool_schema_version",
        &[],
    )?;
    let current: i32 = row.get(0);
    if current > POSTGRES_SCHEMA_VERSION as i32 {
        // Not this build's to write: nothing is changed (the transaction rolls back).
        return Err(Migration::Newer(current));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
        tx.batch_execute(migration)?;
        let version = index as i32 + 1;
        tx.query_typed(
            "INSERT INTO spool_schema_version (version) VALUES ($1)",
            &[(&version, Type::INT4)],
        )?;
    }
    Ok(tx.commit()?)
}

/// `host:port[,host:port…]/database` of `config`: what messages name.
fn describe(config: &Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "localhost:5432".to_owned()
    } else {
        hosts.join(",")
    };
    let database = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{hosts}/{database}")
}

/// How messages show the database `target` that [`SpoolBuilder::database`] takes: a
/// file path as it is, a PostgreSQL URL without its password.
///
/// [`SpoolBuilder::database`]: crate::SpoolBuilder::database
pub fn display_database(target: impl AsRef<std::ffi::OsStr>) -> String {
    let target = std::path::Path::new(target.as_ref());
    match target.to_str().filter(|text| is_postgres_url(text)) {
        Some(url) => redact(url),
        None => target.display().to_string(),
    }
}

/// The URL `url` with any password taken out: how messages and debug output show it.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(not a URL)".to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, hosts)) => {
            let user = user.split_once(':').map_or(user, |(name, _)| name);
            format!("{user}@{hosts}")
        }
        None => authority.to_owned(),
    };
    // A password can also be a query parameter.
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| !p.to_ascii_lowercase().starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The cause of `e` in one line: the server's message when it sent one, else the
/// client's (a refused connection, a timeout).
pub(crate) fn cause(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                let inner = inner.to_string();
                if !text.contains(&inner) {
                    text.push_str(": ");
                    text.push_str(&inner);
                }
                source = inner_source(source);
            }
            text
        }
    }
}

fn inner_source<'a>(
    e: Option<&'a (dyn std::error::Error + 'static)>,
) -> Option<&'a (dyn std::error::Error + 'static)> {
    e.and_then(std::error::Error::source)
}

/// Whether `e` leaves the connection unusable: it was closed, it failed below SQL (a
/// reset, a timeout), or the server ended the session (a `FATAL` error, as
/// `pg_terminate_backend` and a shutdown send).
fn broken(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => e.is_closed() || matches!(db.severity(), "FATAL" | "PANIC"),
    }
}

#[cfg(test)]
#[path = "tests/postgres.rs"]
mod tests;
