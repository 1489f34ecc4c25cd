//! The PostgreSQL server restarted between two calls of a host: the next call connects
//! again and works, straight to the server and through PgBouncer. These tests restart
//! the shared test server, so they are `#[ignore]`d in the parallel run and run alone
//! (`cargo xtask test` does: `-- --ignored --test-threads=1`).

use spool_host::PostgresStorage;

use crate::common::postgres::{self as server, Via};

fn restart() {
    let command = std::env::var("SPOOL_TEST_POSTGRES_RESTART")
        .expect("SPOOL_TEST_POSTGRES_RESTART is set (cargo xtask test)");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .output()
        .expect("run the restart");
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn append(spool: &mut spool_host::Instance, text: &str) -> Result<spool::Entry, spool_host::Error> {
    spool.call(
        "w",
        spool::ops::AppendEntry {
            key: "agent:a:main".into(),
            request: spool::AppendRequest::new(spool::Role::User, text),
            now_ms: 2,
        },
    )
}

#[test]
#[ignore = "restarts the server: run alone with --ignored (cargo xtask test does)"]
fn test_the_server_restarted_between_two_calls() {
    for via in [Via::Direct, Via::Pooler] {
        let url = server::url(&server::fresh_database("restart"), via);
        let mut spool = spool_host::Runtime::shared()
            .expect("runtime")
            .instantiate(
                PostgresStorage::connect(&url).expect("connect"),
                spool::NoArchive,
            )
            .expect("instance");
        spool
            .call(
                "w",
                spool::ops::CreateSession {
                    key: "agent:a:main".into(),
                    session_id: "s-1".into(),
                    now_ms: 1,
                },
            )
            .expect("create");
        append(&mut spool, "before").expect("append");
        restart();
        // The operation's first read finds the connection gone, connects again and
        // carries on: the append works.
        append(&mut spool, "after").expect("the next call works");
        let session = spool
            .call(
                "w",
                spool::ops::GetSession {
                    key: "agent:a:main".into(),
                },
            )
            .expect("get")
            .expect("the session");
        assert_eq!(session.entry_count, 2, "{via:?}");
    }
}
