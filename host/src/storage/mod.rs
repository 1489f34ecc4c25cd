//! The storage backends the host serves the component from: SQLite
//! ([`sqlite::SqliteStorage`]), PostgreSQL ([`postgres::PostgresStorage`]), and the
//! reset-archive stores: a directory ([`archive::ArchiveDir`]) or the PostgreSQL
//! database ([`postgres_archives::PostgresArchives`]).

pub(crate) mod archive;
pub(crate) mod postgres;
pub(crate) mod postgres_archives;
pub(crate) mod sqlite;
