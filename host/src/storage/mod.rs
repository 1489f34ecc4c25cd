//! The storage backends the host serves the component from: SQLite
//! ([`sqlite::SqliteStorage`]) and the reset-archive directory ([`archive::ArchiveDir`]).

pub(crate) mod archive;
pub(crate) mod sqlite;
