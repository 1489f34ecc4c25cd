//! The size of a benchmark's SQLite database, shared by the benchmarks that print it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

/// The bytes of the database at `db` once its WAL is checkpointed into it: the file
/// plus what is left of the WAL (nothing, after a `TRUNCATE` checkpoint that was not
/// blocked). Another connection may hold it open, idle.
pub(crate) fn bytes_on_disk(db: &Path) -> u64 {
    let conn = Connection::open(db).expect("open for checkpoint");
    conn.busy_timeout(Duration::from_millis(5000))
        .expect("busy_timeout");
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .expect("checkpoint");
    assert_eq!(busy, 0, "the checkpoint of {} was blocked", db.display());
    drop(conn);
    let size = |path: PathBuf| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    size(db.to_owned()) + size(PathBuf::from(wal))
}
