//! The storage conformance suite against `SqliteStorage`.

use std::sync::OnceLock;

use spool::SyncAdapter;
use spool_host::SqliteStorage;

/// One temporary directory per test process; each case opens its own database file in it.
fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
}

struct Sqlite;

impl crate::conformance::Backend for Sqlite {
    type Store = SyncAdapter<SqliteStorage>;

    async fn open(&self, name: &str) -> Self::Store {
        let path = dir().path().join(format!("{name}.db"));
        SyncAdapter(SqliteStorage::open(&path).expect("open the database"))
    }
}

crate::conformance_tests!(sync, Sqlite);
