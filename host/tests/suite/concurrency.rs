//! Several connections (as several processes would have) appending to one session in
//! one database file: SQLite serializes the commits, the preconditions catch every lost
//! race, and the component retries, so no append is lost or duplicated.

use spool::{AppendRequest, Role};
use spool_host::{Runtime, SqliteStorage};

#[test]
fn test_concurrent_writers_on_one_file_lose_nothing() {
    const WRITERS: usize = 3;
    const EACH: usize = 40;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    let runtime = Runtime::shared().expect("runtime");
    let mut first = runtime
        .instantiate(SqliteStorage::open(&path).expect("open"), spool::NoArchive)
        .expect("instance");
    first
        .call(
            "default",
            spool::ops::CreateSession {
                key: "agent:a:main".to_owned(),
                session_id: "s1".to_owned(),
                now_ms: 1,
            },
        )
        .expect("create");

    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let storage = SqliteStorage::open(&path).expect("open");
                let mut spool = runtime
                    .instantiate(storage, spool::NoArchive)
                    .expect("instance");
                (0..EACH)
                    .map(|i| {
                        let request = AppendRequest::new(Role::User, format!("w{w}-{i}"));
                        spool
                            .call(
                                "default",
                                spool::ops::AppendEntry {
                                    key: "agent:a:main".to_owned(),
                                    request,
                                    now_ms: 2 + i as u64,
                                },
                            )
                            .expect("append")
                            .id
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut ids: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("writer thread"))
        .collect();
    ids.sort_unstable();
    let expected: Vec<u64> = (1..=(WRITERS * EACH) as u64).collect();
    assert_eq!(ids, expected, "every append got its own id");
    let session = first
        .call(
            "default",
            spool::ops::GetSession {
                key: "agent:a:main".to_owned(),
            },
        )
        .expect("get")
        .expect("exists");
    assert_eq!(session.entry_count, (WRITERS * EACH) as u64);
}
