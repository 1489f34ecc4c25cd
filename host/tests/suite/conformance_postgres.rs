//! The storage conformance suite against `PostgresStorage`, straight to the server and
//! through PgBouncer in transaction pooling mode; and what is PostgreSQL's own: the
//! schema's migrations, connection failures, a connection the server ends.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use spool::{Batch, RangeQuery, Storage, SyncAdapter};
use spool_host::{POSTGRES_SCHEMA_VERSION, PostgresStorage};

use crate::common::postgres::{self as server, Via};
use crate::common::{append_text, create_session, entry_count, instance_on};

/// One database per case and way in, created at its first open.
fn open(name: &str, via: Via) -> SyncAdapter<PostgresStorage> {
    static DATABASES: Mutex<Option<HashMap<(String, bool), String>>> = Mutex::new(None);
    let database = DATABASES
        .lock()
        .expect("lock")
        .get_or_insert_with(HashMap::new)
        .entry((name.to_owned(), via == Via::Pooler))
        .or_insert_with(|| server::fresh_database(name))
        .clone();
    SyncAdapter(PostgresStorage::connect(&server::url(&database, via)).expect("connect"))
}

/// The server, reached one way.
struct OnServer(Via);

impl crate::conformance::Backend for OnServer {
    type Store = SyncAdapter<PostgresStorage>;

    async fn open(&self, name: &str) -> Self::Store {
        open(name, self.0)
    }
}

mod direct {
    crate::conformance_tests!(sync, super::OnServer(super::Via::Direct));
}

mod pooled {
    crate::conformance_tests!(sync, super::OnServer(super::Via::Pooler));
}

fn put(storage: &PostgresStorage, key: &[u8], value: &[u8]) {
    let mut batch = Batch::default();
    batch.put(key.to_vec(), value.to_vec());
    storage.commit("w", batch).expect("commit");
}

#[test]
fn test_ten_hosts_starting_at_once_migrate_once() {
    let database = server::fresh_database("migrate_once");
    let url = server::url(&database, Via::Direct);
    let barrier = std::sync::Barrier::new(10);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..10)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    PostgresStorage::connect(&url).map(drop)
                })
            })
            .collect();
        for handle in handles {
            handle.join().expect("thread").expect("connect and migrate");
        }
    });
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let versions: Vec<i32> = client
        .query(
            "SELECT version FROM spool_schema_version ORDER BY version",
            &[],
        )
        .expect("versions")
        .iter()
        .map(|row| row.get(0))
        .collect();
    let expected: Vec<i32> = (1..=POSTGRES_SCHEMA_VERSION as i32).collect();
    assert_eq!(versions, expected);
}

#[test]
fn test_a_database_of_another_application_keeps_its_tables() {
    let database = server::fresh_database("foreign_tables");
    let url = server::url(&database, Via::Direct);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute("CREATE TABLE kv (k text); INSERT INTO kv VALUES ('theirs');")
        .expect("their table");
    let storage = PostgresStorage::connect(&url).expect("connect");
    put(&storage, b"k", b"v");
    let theirs: String = client
        .query_one("SELECT k FROM kv", &[])
        .expect("their row")
        .get(0);
    assert_eq!(theirs, "theirs");
}

/// Connecting fails with a `storage` error naming the host and database, never the
/// password, and writes nothing.
fn refused(url: &str, expect: &str) -> String {
    let err = PostgresStorage::connect(url).expect_err("the connection must fail");
    let text = err.to_string();
    assert_eq!(err.code(), "storage", "{text}");
    assert!(text.contains(expect), "{text} should say {expect:?}");
    assert!(!text.contains("the-right-password"), "{text}");
    assert!(!text.contains("wrong-password"), "{text}");
    text
}

#[test]
fn test_connection_failures_are_storage_errors_naming_host_and_database() {
    let host = server::host_port();
    let (user, password) = server::password_role();
    // A missing database: not created.
    let missing = format!("spool_missing_{}", std::process::id());
    let text = refused(&format!("postgres://postgres@{host}/{missing}"), &missing);
    assert!(text.contains(&host), "{text}");
    assert!(!server::database_exists(&missing));
    // A failed authentication.
    let text = refused(
        &format!("postgres://{user}:wrong-password@{host}/postgres"),
        &format!("{host}/postgres"),
    );
    assert!(text.contains("password authentication failed"), "{text}");
    // The right password works (on a database the role owns: it creates Spool's tables).
    let owned = server::fresh_database("password_role");
    server::admin()
        .batch_execute(&format!("ALTER DATABASE \"{owned}\" OWNER TO {user}"))
        .expect("give the role a database");
    PostgresStorage::connect(&format!("postgres://{user}:{password}@{host}/{owned}"))
        .expect("the right password");
    // A refused connection: nobody listens on this port.
    let port = server::closed_port();
    refused(
        &format!("postgres://postgres:the-right-password@127.0.0.1:{port}/db"),
        &format!("127.0.0.1:{port}/db"),
    );
    // A malformed URL: its password is not repeated.
    let text = refused(
        "postgres://postgres:the-right-password@127.0.0.1:notaport/db",
        "not a PostgreSQL URL",
    );
    assert!(
        text.contains("postgres://postgres@127.0.0.1:notaport/db"),
        "{text}"
    );
}

#[test]
fn test_a_connection_the_server_ends_is_replaced_by_the_next_call() {
    for via in [Via::Direct, Via::Pooler] {
        let database = server::fresh_database("terminated");
        let storage = PostgresStorage::connect(&server::url(&database, via)).expect("connect");
        put(&storage, b"a", b"1");
        assert!(server::terminate_connections(&database) >= 1);
        // A read on the ended connection is retried on a new one.
        assert_eq!(storage.get("w", b"a").expect("get"), Some(b"1".to_vec()));
        server::terminate_connections(&database);
        let all = RangeQuery {
            range: spool::KeyRange::prefix(b""),
            limit: 0,
            reverse: false,
        };
        assert_eq!(storage.range("w", &all).expect("range").len(), 1);
        // A commit sent on the ended connection is not retried: its reply is lost, so
        // its outcome is `unknown` (never a plain `storage` error, which says nothing
        // was written), and it applied whole or not at all. The next call connects.
        server::terminate_connections(&database);
        let first = {
            let mut batch = Batch::default();
            batch.put(b"b".to_vec(), b"2".to_vec());
            batch.put(b"b2".to_vec(), b"2".to_vec());
            storage.commit("w", batch)
        };
        let b = storage.get("w", b"b").expect("get");
        assert_eq!(
            b,
            storage.get("w", b"b2").expect("get"),
            "whole or not at all"
        );
        match &first {
            Ok(()) => assert_eq!(b, Some(b"2".to_vec())),
            Err(spool::StorageError::Unknown(cause)) => assert!(!cause.is_empty()),
            Err(e) => panic!("{via:?}: a lost reply must be `unknown`, not {e:?}"),
        }
        put(&storage, b"c", b"3");
        assert_eq!(storage.get("w", b"c").expect("get"), Some(b"3".to_vec()));
    }
}

/// The server ends connections idle for longer than `idle_session_timeout` (as
/// managed servers and firewalls do): each call after such a pause connects again and
/// no call, a commit included, surfaces an error.
#[test]
fn test_connections_the_server_ends_when_idle_are_replaced_without_an_error() {
    for via in [Via::Direct, Via::Pooler] {
        let database = server::fresh_database("idle");
        server::admin()
            .batch_execute(&format!(
                "ALTER DATABASE {database} SET idle_session_timeout = '100ms'"
            ))
            .expect("set the timeout");
        let mut spool = instance_on(Path::new(&server::url(&database, via)));
        create_session(&mut spool, "default", "agent:idle:main");
        for i in 0..4 {
            std::thread::sleep(std::time::Duration::from_millis(400));
            append_text(
                &mut spool,
                "default",
                "agent:idle:main",
                &format!("after idle {i}"),
            )
            .unwrap_or_else(|e| panic!("{via:?}: append {i} after an idle pause: {e}"));
        }
        assert_eq!(entry_count(&mut spool, "default", "agent:idle:main"), 4);
        // The server did end them: one session stays open without the timeout; with
        // it, the sessions it ended have counted themselves on their way out.
        let sessions: i64 = server::admin()
            .query_one(
                "SELECT sessions FROM pg_stat_database WHERE datname = $1",
                &[&database],
            )
            .expect("stats")
            .get(0);
        assert!(sessions >= 4, "{via:?}: {sessions} sessions");
    }
}

/// Writers on one session, each with its own connection: every commit contends, the
/// losers' operations run again under the workspace's lock, and no append fails.
#[test]
fn test_writers_on_one_session_see_no_conflict() {
    const WRITERS: usize = 4;
    const EACH: usize = 40;
    const KEY: &str = "agent:a:main";
    for via in [Via::Direct, Via::Pooler] {
        let url = server::url(&server::fresh_database("one_session_writers"), via);
        let mut setup = instance_on(Path::new(&url));
        create_session(&mut setup, "w", KEY);
        let barrier = std::sync::Barrier::new(WRITERS);
        std::thread::scope(|scope| {
            for writer in 0..WRITERS {
                let (barrier, url) = (&barrier, &url);
                scope.spawn(move || {
                    let mut spool = instance_on(Path::new(url));
                    barrier.wait();
                    for i in 0..EACH {
                        append_text(&mut spool, "w", KEY, &format!("writer {writer} entry {i}"))
                            .expect("an append never fails with a conflict");
                    }
                });
            }
        });
        assert_eq!(
            entry_count(&mut setup, "w", KEY),
            (WRITERS * EACH) as u64,
            "{via:?}"
        );
    }
}

/// The connection ended by the server while a commit waits in the server (here on the
/// workspace's lock, held by another connection): the commit's reply is lost, so the
/// storage reads back what it writes on a new connection, finds its preconditions still
/// holding (it did not apply), and commits it again: the append succeeds, once.
#[test]
fn test_a_commit_whose_connection_is_ended_mid_flight_is_read_back_and_made_again() {
    const KEY: &str = "agent:a:main";
    for via in [Via::Direct, Via::Pooler] {
        let database = server::fresh_database("lost_reply");
        let mut spool = instance_on(Path::new(&server::url(&database, via)));
        create_session(&mut spool, "w", KEY);
        append_text(&mut spool, "w", KEY, "before").expect("append");
        // Another connection holds the workspace's commit lock.
        let mut holder = postgres::Client::connect(&server::admin_url(&database), postgres::NoTls)
            .expect("connect");
        holder
            .execute("SELECT pg_advisory_lock(1397772108, hashtext('w'))", &[])
            .expect("hold the lock");
        // The commits waiting on the lock, ended when `end` says so.
        let waiting = |end: bool| -> i64 {
            let what = if end {
                "count(pg_terminate_backend(pid))"
            } else {
                "count(*)"
            };
            server::admin()
                .query_one(
                    &format!(
                        "SELECT {what} FROM pg_stat_activity WHERE datname = $1 \
                         AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
                    ),
                    &[&database],
                )
                .expect("pg_stat_activity")
                .get(0)
        };
        let until = |what: &str, done: &dyn Fn() -> bool| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !done() {
                assert!(std::time::Instant::now() < deadline, "{what}");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        let result = std::thread::scope(|scope| {
            let appending = scope.spawn(|| append_text(&mut spool, "w", KEY, "in flight"));
            until("the commit never waited", &|| waiting(true) > 0);
            // Made again on a new connection, it waits for the lock once more.
            until("the commit was not made again", &|| waiting(false) > 0);
            holder
                .execute("SELECT pg_advisory_unlock_all()", &[])
                .expect("let go");
            appending.join().expect("the appending thread")
        });
        result.expect("the commit was read back and made again");
        append_text(&mut spool, "w", KEY, "after").expect("the next append works");
        let texts: Vec<String> = crate::common::transcript(&mut spool, "w", KEY)
            .into_iter()
            .map(|e| e.content)
            .collect();
        assert_eq!(texts, ["before", "in flight", "after"], "{via:?}");
        assert_eq!(entry_count(&mut spool, "w", KEY), 3);
    }
}

#[test]
fn test_a_database_of_a_newer_spool_is_refused_unchanged() {
    let database = server::fresh_database("newer_schema");
    let url = server::url(&database, Via::Direct);
    PostgresStorage::connect(&url).expect("connect");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let newer = POSTGRES_SCHEMA_VERSION as i32 + 1;
    client
        .execute(
            "INSERT INTO spool_schema_version (version) VALUES ($1)",
            &[&newer],
        )
        .expect("a newer Spool's version");
    let err = PostgresStorage::connect(&url).expect_err("refused");
    assert_eq!(err.code(), "storage");
    assert!(
        err.to_string().contains(&format!("version {newer}, newer")),
        "{err}"
    );
    let versions: i64 = client
        .query_one("SELECT count(*) FROM spool_schema_version", &[])
        .expect("count")
        .get(0);
    assert_eq!(versions, i64::from(newer));
}

/// A URL naming several hosts (libpq's syntax): the first does not answer, the second
/// is the server; with `target_session_attrs=read-write` the storage connects to the
/// one that takes writes, and messages name every host.
#[test]
fn test_a_url_of_several_hosts_reaches_the_one_that_takes_writes() {
    let database = server::fresh_database("several_hosts");
    let url = format!(
        "postgres://postgres@127.0.0.1:{},{}/{database}?target_session_attrs=read-write",
        server::closed_port(),
        server::host_port()
    );
    let storage = PostgresStorage::connect(&url).expect("connect to the second host");
    assert!(storage.target().contains(','), "{}", storage.target());
    put(&storage, b"k", b"v");
    assert_eq!(storage.get("w", b"k").expect("get"), Some(b"v".to_vec()));
}

/// The server stalls (its process serving the connection stopped with `SIGSTOP`, as a
/// network that stops carrying packets would): the call waits, and completes once it
/// carries on (`SIGCONT`), nothing lost.
#[test]
fn test_a_call_during_a_stall_completes_when_the_server_carries_on() {
    const KEY: &str = "agent:a:main";
    let database = server::fresh_database("stall");
    let mut spool = instance_on(Path::new(&server::url(&database, Via::Direct)));
    create_session(&mut spool, "w", KEY);
    append_text(&mut spool, "w", KEY, "before").expect("append");
    let pid: i32 = server::admin()
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'spool'",
            &[&database],
        )
        .expect("the storage's connection")
        .get(0);
    crate::common::sh(&format!("kill -STOP {pid}"));
    let started = std::time::Instant::now();
    let appended = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(800));
            crate::common::sh(&format!("kill -CONT {pid}"));
        });
        append_text(&mut spool, "w", KEY, "during the stall")
    });
    appended.expect("the call completes after the stall");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(700),
        "it waited"
    );
    assert_eq!(entry_count(&mut spool, "w", KEY), 2);
}
