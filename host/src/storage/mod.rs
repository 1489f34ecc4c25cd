//! The storage backends the host serves the component from: SQLite
//! ([`sqlite::SqliteStorage`]), PostgreSQL ([`postgres::PostgresStorage`]) and the
//! reset-archive directory ([`archive::ArchiveDir`]).

pub(crate) mod archive;
pub(crate) mod postgres;
pub(crate) mod sqlite;
