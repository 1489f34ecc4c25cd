use super::*;
use spool::KeyRange;

/// Two connections to one new database file (kept while the directory lives).
fn two_connections() -> (tempfile::TempDir, SqliteStorage, SqliteStorage) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("spool.db");
    let ours = SqliteStorage::open(&path).expect("open");
    let theirs = SqliteStorage::open(&path).expect("open");
    (dir, ours, theirs)
}

/// The value of `k` in workspace `w`, as text.
fn k(storage: &SqliteStorage) -> Option<String> {
    let value = storage.get("w", b"k").expect("get")?;
    Some(String::from_utf8(value).expect("text"))
}

fn put(key: &[u8], value: &[u8]) -> Batch {
    let mut batch = Batch::default();
    batch.put(key.to_vec(), value.to_vec());
    batch
}

#[test]
fn test_an_operation_reads_one_snapshot_and_commits_only_what_still_holds() {
    let (_dir, ours, theirs) = two_connections();
    ours.commit("w", put(b"k", b"1")).expect("commit");

    // Outside an operation every read sees the newest commit.
    theirs.commit("w", put(b"k", b"2")).expect("commit");
    assert_eq!(k(&ours).as_deref(), Some("2"));

    // Inside one, its reads share the snapshot of the first.
    ours.begin_operation();
    assert_eq!(k(&ours).as_deref(), Some("2"));
    theirs.commit("w", put(b"k", b"3")).expect("commit");
    assert_eq!(k(&ours).as_deref(), Some("2"));
    let listed = ours
        .range(
            "w",
            &RangeQuery {
                range: KeyRange::prefix(b"k"),
                limit: 0,
                reverse: false,
            },
        )
        .expect("range");
    assert_eq!(listed[0].value, b"2");
    // Its commit is checked against the newest state, not the snapshot: a
    // precondition on what it read fails, and nothing is written.
    let mut stale = put(b"k", b"4");
    stale.require_equals(b"k".to_vec(), b"2".to_vec());
    assert!(matches!(
        ours.commit("w", stale),
        Err(StorageError::Conflict(0))
    ));
    assert_eq!(k(&theirs).as_deref(), Some("3"));
    // One that holds commits, for every reader.
    let mut fresh = put(b"k", b"5");
    fresh.require_equals(b"k".to_vec(), b"3".to_vec());
    ours.commit("w", fresh).expect("commit");
    assert_eq!(k(&theirs).as_deref(), Some("5"));
    ours.end_operation();

    // A commit that carries on the snapshot of the reads before it.
    ours.begin_operation();
    let mut same = put(b"k", b"6");
    same.require_equals(b"k".to_vec(), ours.get("w", b"k").expect("get").expect("k"));
    ours.commit("w", same).expect("commit");
    // After a commit, reads see other writers again (a new snapshot).
    theirs.commit("w", put(b"k", b"7")).expect("commit");
    assert_eq!(k(&ours).as_deref(), Some("7"));
    ours.end_operation();

    // The operation over, its snapshot is let go: others' commits are seen, and a
    // writer is never kept waiting on it.
    ours.begin_operation();
    assert_eq!(k(&ours).as_deref(), Some("7"));
    ours.end_operation();
    theirs.commit("w", put(b"k", b"8")).expect("commit");
    assert_eq!(k(&ours).as_deref(), Some("8"));
    assert!(ours.conn().is_autocommit(), "no transaction left open");
}

/// How many times the point-read statement has run on `storage`'s connection.
fn point_reads(storage: &SqliteStorage) -> i32 {
    storage
        .db
        .with_dependent(|_, s| s.get.borrow().get_status(rusqlite::StatementStatus::Run))
}

#[test]
fn test_a_commit_in_the_snapshot_reads_again_only_keys_it_did_not_read() {
    let (_dir, ours, theirs) = two_connections();
    ours.commit("w", put(b"k", b"1")).expect("commit");

    ours.begin_operation();
    let read = ours.get("w", b"k").expect("get").expect("k");
    assert_eq!(ours.get("w", b"absent").expect("get"), None);
    let before = point_reads(&ours);
    let mut batch = put(b"k", b"2");
    batch.require_equals(b"k".to_vec(), read);
    batch.require_absent(b"absent".to_vec());
    batch.require_absent(b"never-read".to_vec());
    ours.commit("w", batch).expect("commit");
    assert_eq!(point_reads(&ours) - before, 1, "only the key not read");
    ours.end_operation();
    assert_eq!(k(&theirs).as_deref(), Some("2"));

    // What the snapshot read decides only in the snapshot: a precondition it says
    // fails is checked again against the newest state (here it holds there).
    ours.begin_operation();
    assert_eq!(k(&ours).as_deref(), Some("2"));
    theirs.commit("w", put(b"k", b"3")).expect("commit");
    let mut newest = put(b"k", b"4");
    newest.require_equals(b"k".to_vec(), b"3".to_vec());
    ours.commit("w", newest).expect("commit");
    ours.end_operation();

    // Only the last reads are kept: one read before many others is read again.
    ours.begin_operation();
    let first = ours.get("w", b"k").expect("get").expect("k");
    for n in 0..Seen::KEEP {
        ours.get("w", format!("other-{n}").as_bytes()).expect("get");
    }
    let before = point_reads(&ours);
    let mut batch = put(b"k", b"5");
    batch.require_equals(b"k".to_vec(), first);
    ours.commit("w", batch).expect("commit");
    assert_eq!(point_reads(&ours) - before, 1, "the first read was let go");
    ours.end_operation();

    // A commit of preconditions alone is checked against the newest state.
    ours.begin_operation();
    let stale = ours.get("w", b"k").expect("get").expect("k");
    theirs.commit("w", put(b"k", b"6")).expect("commit");
    let mut check = Batch::default();
    check.require_equals(b"k".to_vec(), stale);
    assert!(matches!(
        ours.commit("w", check),
        Err(StorageError::Conflict(0))
    ));
    ours.end_operation();
}

#[test]
fn test_commits_are_full_durability_unless_normal_is_asked_for() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("spool.db");
    let full = SqliteStorage::open(&path).expect("open");
    assert_eq!(full.durability().expect("durability"), Durability::Full);
    let normal = SqliteStorage::open_with(&path, Durability::Normal).expect("open");
    assert_eq!(normal.durability().expect("durability"), Durability::Normal);
    // The setting is the connection's: each sees the other's commits all the same.
    normal.commit("w", put(b"k", b"1")).expect("commit");
    assert_eq!(k(&full).as_deref(), Some("1"));
    let memory = SqliteStorage::open_in_memory().expect("open");
    assert_eq!(memory.durability().expect("durability"), Durability::Full);
}

#[test]
fn test_an_operation_left_open_is_ended_by_the_next() {
    let (_dir, ours, theirs) = two_connections();
    ours.begin_operation();
    assert_eq!(ours.get("w", b"k").expect("get"), None);
    theirs.commit("w", put(b"k", b"1")).expect("commit");
    // A host that never said the operation ended: the next one starts afresh.
    ours.begin_operation();
    assert_eq!(k(&ours).as_deref(), Some("1"));
    ours.end_operation();
    ours.end_operation();
    assert!(ours.conn().is_autocommit());

    // A read transaction SQLite ended by itself: the commit is one transaction
    // still (were its statements run one by one, the put would land before the
    // commit failed, and the commit made anew would find its key taken).
    ours.begin_operation();
    assert_eq!(ours.get("w", b"k2").expect("get"), None);
    ours.run(Control::Rollback).expect("end it");
    let mut batch = put(b"k2", b"1");
    batch.require_absent(b"k2".to_vec());
    ours.commit("w", batch).expect("commit");
    ours.end_operation();
    assert!(ours.conn().is_autocommit());
}

#[test]
fn test_range_reads_of_other_bounds_and_limits_are_not_prepared_again() {
    let storage = SqliteStorage::open_in_memory().expect("open");
    let mut batch = Batch::default();
    for i in 0..50u8 {
        batch.put(vec![b'k', i], vec![i; 40]);
    }
    storage.commit("w", batch).expect("commit");
    for (i, limit) in [1u32, 8, 0, 3, 1, 50, 2].into_iter().enumerate() {
        for reverse in [false, true] {
            let start = vec![b'k', i as u8];
            let query = RangeQuery {
                range: KeyRange {
                    start: start.clone(),
                    end: Some(vec![b'k', 40 - i as u8]),
                },
                limit,
                reverse,
            };
            let kvs = storage.range("w", &query).expect("range");
            let all = 40 - 2 * i;
            assert_eq!(
                kvs.len(),
                if limit == 0 {
                    all
                } else {
                    all.min(limit as usize)
                }
            );
            let open = RangeQuery {
                range: KeyRange { start, end: None },
                ..query
            };
            storage.range("w", &open).expect("range");
        }
    }
    storage.db.with_dependent(|_, s| {
        for statement in [
            &s.range_asc,
            &s.range_desc,
            &s.range_from_asc,
            &s.range_from_desc,
        ] {
            let statement = statement.borrow();
            // Each was run: the status counts its runs, and none re-prepared it.
            assert!(statement.get_status(rusqlite::StatementStatus::Run) > 0);
            assert_eq!(
                statement.get_status(rusqlite::StatementStatus::RePrepare),
                0,
                "{statement:?}"
            );
        }
    });
}

/// A database of schema version 1 (`kv.workspace` holds the name) with rows in two
/// workspaces, one of them a TEXT value SQLite keeps as it is.
fn version_1(path: &Path) {
    let conn = Connection::open(path).expect("open");
    conn.execute_batch(SCHEMA_1).expect("version 1 schema");
    conn.pragma_update(None, "user_version", 1)
        .expect("version");
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .expect("id");
    let mut put = conn
        .prepare("INSERT INTO kv (workspace, key, value) VALUES (?1, ?2, ?3)")
        .expect("insert");
    for (workspace, key, value) in [
        ("team-b", &b"k1"[..], &b"b1"[..]),
        ("default", b"k2", b"d2"),
        ("default", b"k1", b"d1"),
        ("team-b", b"k3", b"b3"),
    ] {
        put.execute(params![workspace, key, value]).expect("row");
    }
    conn.execute(
        "INSERT INTO kv (workspace, key, value) VALUES ('default', x'ff', 'text')",
        [],
    )
    .expect("text row");
}

/// The pairs under the prefix `k` in `workspace`, in key order.
fn keys(storage: &SqliteStorage, workspace: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let all = RangeQuery {
        range: KeyRange::prefix(b"k"),
        limit: 0,
        reverse: false,
    };
    let kvs = storage.range(workspace, &all).expect("range");
    kvs.into_iter().map(|kv| (kv.key, kv.value)).collect()
}

/// The distinct SQLite types of `kv.workspace`.
fn workspace_types(storage: &SqliteStorage) -> Vec<String> {
    storage
        .conn()
        .prepare("SELECT DISTINCT typeof(workspace) FROM kv")
        .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
        .expect("types")
}

fn user_version(storage: &SqliteStorage) -> u32 {
    storage
        .conn()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version")
}

#[test]
fn test_a_version_1_database_is_read_and_written_as_it_is() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("spool.db");
    version_1(&path);
    let storage = SqliteStorage::open(&path).expect("open");
    assert_eq!(user_version(&storage), 1, "left at version 1");

    let pairs = |list: &[(&[u8], &[u8])]| -> Vec<(Vec<u8>, Vec<u8>)> {
        list.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
    };
    assert_eq!(
        keys(&storage, "default"),
        pairs(&[(b"k1", b"d1"), (b"k2", b"d2")])
    );
    assert_eq!(
        keys(&storage, "team-b"),
        pairs(&[(b"k1", b"b1"), (b"k3", b"b3")])
    );
    assert_eq!(keys(&storage, "never-written"), pairs(&[]));
    // A value of another type is still refused as damaged, naming its key.
    assert!(matches!(
        storage.get("default", &[0xff]),
        Err(StorageError::Corrupt { key, .. }) if key == [0xff]
    ));

    // Writes go in by name, to a new workspace and to an old one.
    storage.commit("new", put(b"k9", b"n9")).expect("commit");
    let mut batch = put(b"k3", b"b3'");
    batch.require_equals(b"k3".to_vec(), b"b3".to_vec());
    storage.commit("team-b", batch).expect("commit");
    assert_eq!(keys(&storage, "new"), pairs(&[(b"k9", b"n9")]));
    assert_eq!(workspace_types(&storage), ["text"]);
    drop(storage);
    let again = SqliteStorage::open(&path).expect("reopen");
    assert_eq!(user_version(&again), 1);
    assert_eq!(keys(&again, "new"), pairs(&[(b"k9", b"n9")]));
    assert_eq!(
        keys(&again, "team-b"),
        pairs(&[(b"k1", b"b1"), (b"k3", b"b3'")])
    );
}

#[test]
fn test_a_version_1_database_opened_read_only_is_read_by_name() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("spool.db");
    version_1(&path);
    let storage = SqliteStorage::open_read_only(&path, "a test".into()).expect("open read-only");
    assert_eq!(keys(&storage, "team-b").len(), 2);
    assert_eq!(
        storage.get("default", b"k2").expect("get"),
        Some(b"d2".to_vec())
    );
    assert!(storage.commit("default", put(b"k", b"v")).is_err());
    assert_eq!(user_version(&storage), 1);
}

#[test]
fn test_a_workspace_is_numbered_only_by_a_commit_that_lands() {
    let (dir, ours, theirs) = two_connections();
    let numbered = |name: &str| -> i64 {
        let conn = Connection::open(dir.path().join("spool.db")).expect("open");
        conn.query_row(
            "SELECT count(*) FROM workspaces WHERE name = ?1",
            [name],
            |row| row.get(0),
        )
        .expect("count")
    };
    // A put whose precondition fails numbers nothing.
    let mut failing = put(b"k", b"1");
    failing.require_equals(b"k".to_vec(), b"0".to_vec());
    assert!(matches!(
        ours.commit("n", failing),
        Err(StorageError::Conflict(0))
    ));
    assert_eq!(numbered("n"), 0);
    // Nor do preconditions alone, or deletes of what cannot be there.
    let mut check = Batch::default();
    check.require_absent(b"k".to_vec());
    ours.commit("n", check).expect("holds");
    let mut delete = Batch::default();
    delete.delete(b"k".to_vec());
    delete.delete_range(KeyRange::prefix(b"k"));
    ours.commit("n", delete).expect("nothing to delete");
    assert_eq!(numbered("n"), 0);
    assert_eq!(ours.get("n", b"k").expect("get"), None);

    // The failed commit left no number behind in this connection either: its next
    // put numbers the workspace, and the other connection finds that number.
    ours.commit("n", put(b"k", b"2")).expect("commit");
    assert_eq!(numbered("n"), 1);
    assert_eq!(theirs.get("n", b"k").expect("get"), Some(b"2".to_vec()));
    theirs.commit("n", put(b"k", b"3")).expect("commit");
    assert_eq!(ours.get("n", b"k").expect("get"), Some(b"3".to_vec()));
    assert_eq!(numbered("n"), 1);
    // Workspaces stay apart, each row holding its workspace's number.
    assert_eq!(ours.get("w", b"k").expect("get"), None);
    assert_eq!(user_version(&ours), SCHEMA_VERSION);
    assert_eq!(workspace_types(&ours), ["integer"]);

    // A put in an operation's snapshot that another connection got ahead of (it
    // numbered the workspace first) is made again on the newest state.
    ours.begin_operation();
    assert_eq!(ours.get("late", b"k").expect("get"), None);
    theirs.commit("late", put(b"other", b"1")).expect("commit");
    ours.commit("late", put(b"k", b"1")).expect("commit");
    ours.end_operation();
    assert_eq!(numbered("late"), 1);
    assert_eq!(keys(&theirs, "late"), vec![(b"k".to_vec(), b"1".to_vec())]);
}
