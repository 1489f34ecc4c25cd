//! [`PostgresArchives`]: reset archives kept in the PostgreSQL database itself, so a
//! host with no local disk loses nothing on a reset.
//!
//! An archive is the same JSON as an archive file ([`ArchiveJson`]), kept as numbered
//! parts in `spool_reset_archives(workspace, session_key, session_id, archived_at,
//! part, body)`: the head, one part per page of the transcript the reset hands over,
//! and the summaries that close it. Every part of one archive is written in one
//! transaction on a connection of its own, committed by the last: an archive is
//! complete or absent (a writer dropped before it finished, or a process killed, leaves
//! nothing). Memory stays bounded by a part. As with files, an archive is only listed
//! through the record the reset's commit wrote ([`spool::ArchivedReset`]), and read
//! back checked against it.

use postgres::types::Type;
use postgres::{Client, Config, NoTls};
use spool::{ArchiveWriter, ArchivedReset, Archiver, Entry, ResetArchive};

use crate::storage::archive::{ArchiveJson, parse_archive};
use crate::storage::postgres::cause;

/// The reset-archive store in a PostgreSQL database (see the module's documentation);
/// made by [`PostgresStorage::archives`](crate::PostgresStorage::archives).
#[derive(Clone)]
pub struct PostgresArchives {
    config: Config,
    target: String,
}

impl std::fmt::Debug for PostgresArchives {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresArchives")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The columns that name one archive.
#[derive(Debug, Clone)]
struct Identity {
    workspace: String,
    session_key: String,
    session_id: String,
    archived_at: i64,
}

impl Identity {
    fn of(workspace: &str, session_key: &str, session_id: &str, archived_at: u64) -> Self {
        Identity {
            workspace: workspace.to_owned(),
            session_key: session_key.to_owned(),
            session_id: session_id.to_owned(),
            archived_at: i64::try_from(archived_at).unwrap_or(i64::MAX),
        }
    }
}

impl PostgresArchives {
    pub(crate) fn new(config: Config, target: String) -> Self {
        PostgresArchives { config, target }
    }

    /// The server and database (`host:port/database`, never the password).
    pub fn target(&self) -> &str {
        &self.target
    }

    fn connect(&self) -> Result<Client, String> {
        self.config
            .connect(NoTls)
            .map_err(|e| format!("PostgreSQL {}: {}", self.target, cause(&e)))
    }

    fn failed(&self, session_key: &str, e: &postgres::Error) -> String {
        format!(
            "cannot write the reset archive of `{session_key}` to PostgreSQL {}: {}",
            self.target,
            cause(e)
        )
    }

    /// Starts the archive of `workspace` whose head is `head`: a transaction that the
    /// parts go to, committed by [`ArchiveWriter::finish`].
    fn begin(&self, workspace: &str, head: &ResetArchive) -> Result<Writing, String> {
        let mut client = self.connect().map_err(|e| {
            format!(
                "cannot write the reset archive of `{}`: {e}",
                head.session_key
            )
        })?;
        let identity = Identity::of(
            workspace,
            &head.session_key,
            &head.session_id,
            head.archived_at,
        );
        let json = ArchiveJson::head(workspace, head).map_err(|e| e.to_string())?;
        let started = client.batch_execute("BEGIN").and_then(|()| {
            // An archive of the same identity (a reset that wrote its archive, then
            // failed to commit, and was made again at the same time) is replaced.
            client.query_typed(
                "DELETE FROM spool_reset_archives WHERE workspace = $1 AND session_key = $2 \
                 AND session_id = $3 AND archived_at = $4",
                &[
                    (&identity.workspace, Type::TEXT),
                    (&identity.session_key, Type::TEXT),
                    (&identity.session_id, Type::TEXT),
                    (&identity.archived_at, Type::INT8),
                ],
            )
        });
        started.map_err(|e| self.failed(&head.session_key, &e))?;
        let mut writing = Writing {
            store: self.clone(),
            client,
            identity,
            part: 0,
            json: ArchiveJson::default(),
        };
        writing.put(&json)?;
        Ok(writing)
    }

    /// Reads back the archive `record` names in `workspace` and checks that it is that
    /// archive, whole.
    pub fn read(&self, workspace: &str, record: &ArchivedReset) -> Result<ResetArchive, String> {
        let mut client = self.connect()?;
        let identity = Identity::of(
            workspace,
            &record.session_key,
            &record.session_id,
            record.archived_at,
        );
        let rows = client
            .query_typed(
                "SELECT body FROM spool_reset_archives WHERE workspace = $1 AND session_key = $2 \
                 AND session_id = $3 AND archived_at = $4 ORDER BY part",
                &[
                    (&identity.workspace, Type::TEXT),
                    (&identity.session_key, Type::TEXT),
                    (&identity.session_id, Type::TEXT),
                    (&identity.archived_at, Type::INT8),
                ],
            )
            .map_err(|e| format!("PostgreSQL {}: {}", self.target, cause(&e)))?;
        if rows.is_empty() {
            return Err(format!("PostgreSQL {} holds no such archive", self.target));
        }
        let mut bytes = Vec::new();
        for row in rows {
            bytes.extend_from_slice(row.get::<_, &[u8]>(0));
        }
        parse_archive(&bytes, workspace, record)
    }
}

/// One archive being written ([`PostgresArchives::begin`]).
struct Writing {
    store: PostgresArchives,
    client: Client,
    identity: Identity,
    part: i32,
    json: ArchiveJson,
}

impl Writing {
    /// Writes the next part.
    fn put(&mut self, body: &[u8]) -> Result<(), String> {
        let inserted = self.client.query_typed(
            "INSERT INTO spool_reset_archives \
             (workspace, session_key, session_id, archived_at, part, body) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                (&self.identity.workspace, Type::TEXT),
                (&self.identity.session_key, Type::TEXT),
                (&self.identity.session_id, Type::TEXT),
                (&self.identity.archived_at, Type::INT8),
                (&self.part, Type::INT4),
                (&body, Type::BYTEA),
            ],
        );
        inserted.map_err(|e| self.store.failed(&self.identity.session_key, &e))?;
        self.part += 1;
        Ok(())
    }
}

impl ArchiveWriter for Writing {
    fn append(&mut self, entries: &[Entry]) -> Result<(), String> {
        let json = self.json.entries(entries).map_err(|e| e.to_string())?;
        self.put(&json)
    }

    fn finish(mut self: Box<Self>, summaries: &[serde_json::Value]) -> Result<(), String> {
        let json = ArchiveJson::tail(summaries).map_err(|e| e.to_string())?;
        self.put(&json)?;
        self.client
            .batch_execute("COMMIT")
            .map_err(|e| self.store.failed(&self.identity.session_key, &e))
    }
}

impl Archiver for PostgresArchives {
    fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String> {
        let mut writing = Box::new(self.begin(workspace, archive)?);
        writing.append(&archive.transcript_entries)?;
        writing.finish(&archive.summaries)
    }

    fn archive_writer(
        &self,
        workspace: &str,
        head: &ResetArchive,
    ) -> Option<Result<Box<dyn ArchiveWriter + Send>, String>> {
        Some(
            self.begin(workspace, head)
                .map(|writing| Box::new(writing) as Box<dyn ArchiveWriter + Send>),
        )
    }
}
