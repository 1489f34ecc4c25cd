//! Minting data ids under concurrent creator processes: several OS processes create
//! sessions in one SQLite file at once, so many that their ids collide in the data-id
//! registry, and write to each right after creating it. Every identity ends up with
//! keys of its own: each session reads exactly what was written to it, no two share a
//! data id, and the registry holds one entry per identity.
//!
//! The test re-runs its own test binary (`--exact <the test>`) as the creator
//! processes; the environment variable `SPOOL_MINT_ROLE` says which one a process is.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use spool::{AppendRequest, Order, PageRequest, Role};
use spool_host::{Instance, SqliteStorage};

const ROLE: &str = "SPOOL_MINT_ROLE";
const WS: &str = "default";
const PROCESSES: u64 = 4;
/// Sessions per process: 300 in all, in 3,844 two-character ids, collide many times.
const EACH: u64 = 75;

fn instance(dir: &Path) -> Instance {
    crate::common::instance_on(&dir.join("shared.db"))
}

fn key(process: u64, n: u64) -> String {
    format!("agent:p{process}:s{n}")
}

/// A session id spread like a random one: ids that differ only in a counter get first
/// digits from FNV-1a that collide less often than chance (300 such ids did not collide
/// at all), which would leave the registry's collision path untested.
fn session_id(process: u64, n: u64) -> String {
    let spread = (process * EACH + n + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!("{spread:016x}-{process}")
}

/// Retries `call` while it loses races (`conflict`), as a caller would.
fn settled<T>(mut call: impl FnMut() -> Result<T, spool_host::Error>) -> T {
    for _ in 0..100 {
        match call() {
            Ok(value) => return value,
            Err(e) if e.code() == "conflict" => std::thread::sleep(Duration::from_micros(200)),
            Err(e) => panic!("{e}"),
        }
    }
    panic!("lost 100 races in a row")
}

fn create_all(dir: &Path, process: u64) {
    let mut spool = instance(dir);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("go").exists() {
        assert!(Instant::now() < deadline, "no start signal");
        std::thread::sleep(Duration::from_millis(2));
    }
    for n in 0..EACH {
        settled(|| {
            spool.call(
                WS,
                spool::ops::CreateSession {
                    key: key(process, n),
                    session_id: session_id(process, n),
                    now_ms: 1,
                },
            )
        });
        settled(|| {
            spool.call(
                WS,
                spool::ops::AppendEntry {
                    key: key(process, n),
                    request: AppendRequest::new(Role::User, format!("from {process}/{n}")),
                    now_ms: 2,
                },
            )
        });
    }
}

#[test]
fn test_creator_processes_racing_for_data_ids_each_get_keys_of_their_own() {
    if std::env::var(ROLE).is_ok() {
        let dir = std::env::var("SPOOL_MINT_DIR").expect("SPOOL_MINT_DIR");
        let process = std::env::var("SPOOL_MINT_PROCESS").expect("SPOOL_MINT_PROCESS");
        return create_all(Path::new(&dir), process.parse().expect("a number"));
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    drop(instance(dir));
    let children: Vec<std::process::Child> = (0..PROCESSES)
        .map(|process| {
            let mut command = crate::common::test_in_new_process(
                module_path!(),
                "test_creator_processes_racing_for_data_ids_each_get_keys_of_their_own",
            );
            command
                .env(ROLE, "creator")
                .env("SPOOL_MINT_DIR", dir)
                .env("SPOOL_MINT_PROCESS", process.to_string())
                .stdout(std::process::Stdio::null());
            command.spawn().expect("start a creator")
        })
        .collect();
    std::fs::write(dir.join("go"), b"").expect("start signal");
    for (process, mut child) in children.into_iter().enumerate() {
        let status = child.wait().expect("wait");
        assert!(status.success(), "creator {process} failed: {status}");
    }

    let storage = SqliteStorage::open(dir.join("shared.db")).expect("open");
    let mut spool = instance(dir);
    let mut ids = BTreeSet::new();
    for process in 0..PROCESSES {
        for n in 0..EACH {
            let page = spool
                .call(
                    WS,
                    spool::ops::ReadPage {
                        key: key(process, n),
                        request: PageRequest {
                            order: Order::OldestFirst,
                            cursor: None,
                            limit: 10,
                        },
                    },
                )
                .expect("read");
            let contents: Vec<&str> = page.entries.iter().map(|e| e.content.as_str()).collect();
            assert_eq!(
                contents,
                [format!("from {process}/{n}")],
                "{}",
                key(process, n)
            );
            let id = spool::run(&storage, spool::session_data_id(WS, &key(process, n)))
                .expect("read")
                .expect("the session");
            assert!(spool::keys::is_minted(&id), "{id}");
            assert!(ids.insert(id.clone()), "{id} names two identities");
        }
    }
    let total = (PROCESSES * EACH) as usize;
    assert!(
        ids.iter().any(|id| id.len() > 3),
        "some ids collided and took a longer one"
    );
    let registry = rusqlite::Connection::open(dir.join("shared.db"))
        .expect("open")
        .query_row(
            "SELECT count(*) FROM kv WHERE substr(key, 1, 1) = x'44'",
            [],
            |row| row.get::<_, i64>(0),
        )
        .expect("count");
    assert_eq!(registry as usize, total, "one registry entry per identity");
}
