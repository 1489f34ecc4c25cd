//! The PostgreSQL server restarted under a host: between two calls, and during one (the
//! call waits for the server to come back, within its reconnect budget), straight to
//! the server and through PgBouncer. These tests stop the shared test server, so they
//! are `#[ignore]`d in the parallel run and run alone (`cargo xtask test` does:
//! `-- --ignored --test-threads=1`).

use std::path::Path;
use std::time::Duration;

use crate::common::postgres::{self as server, Via};
use crate::common::{append_text, create_session, entry_count, instance_on, sh};

const KEY: &str = "agent:a:main";

/// Runs the server's `pg_ctl` with `action` (`stop`, `start`, `restart`).
fn pg_ctl(action: &str) {
    let command = std::env::var("SPOOL_TEST_POSTGRES_CTL")
        .expect("SPOOL_TEST_POSTGRES_CTL is set (cargo xtask test)");
    sh(&format!("{command} {action}"));
}

#[test]
#[ignore = "restarts the server: run alone with --ignored (cargo xtask test does)"]
fn test_the_server_restarted_between_two_calls() {
    for via in [Via::Direct, Via::Pooler] {
        let url = server::url(&server::fresh_database("restart"), via);
        let mut spool = instance_on(Path::new(&url));
        create_session(&mut spool, "w", KEY);
        append_text(&mut spool, "w", KEY, "before").expect("append");
        pg_ctl("restart");
        // The operation's first read finds the connection gone, connects again and
        // carries on: the append works.
        append_text(&mut spool, "w", KEY, "after").expect("the next call works");
        assert_eq!(entry_count(&mut spool, "w", KEY), 2, "{via:?}");
    }
}

#[test]
#[ignore = "stops the server: run alone with --ignored (cargo xtask test does)"]
fn test_a_call_made_while_the_server_is_down_waits_for_it() {
    for via in [Via::Direct, Via::Pooler] {
        let url = server::url(&server::fresh_database("down"), via);
        let mut spool = instance_on(Path::new(&url));
        create_session(&mut spool, "w", KEY);
        append_text(&mut spool, "w", KEY, "before").expect("append");
        pg_ctl("stop");
        let appended = std::thread::scope(|scope| {
            let starting = scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(1500));
                pg_ctl("start");
            });
            // The server is down: the call tries again until it is back.
            let appended = append_text(&mut spool, "w", KEY, "while down");
            starting.join().expect("start the server");
            appended
        });
        appended.expect("the call waited for the server");
        assert_eq!(entry_count(&mut spool, "w", KEY), 2, "{via:?}");
    }
}
