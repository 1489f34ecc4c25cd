//! The PostgreSQL server restarted between two calls of a host: the next call connects
//! again and works, straight to the server and through PgBouncer. These tests restart
//! the shared test server, so they are `#[ignore]`d in the parallel run and run alone
//! (`cargo xtask test` does: `-- --ignored --test-threads=1`).

use std::path::Path;

use crate::common::postgres::{self as server, Via};
use crate::common::{append_text, create_session, entry_count, instance_on};

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

#[test]
#[ignore = "restarts the server: run alone with --ignored (cargo xtask test does)"]
fn test_the_server_restarted_between_two_calls() {
    const KEY: &str = "agent:a:main";
    for via in [Via::Direct, Via::Pooler] {
        let url = server::url(&server::fresh_database("restart"), via);
        let mut spool = instance_on(Path::new(&url));
        create_session(&mut spool, "w", KEY);
        append_text(&mut spool, "w", KEY, "before").expect("append");
        restart();
        // The operation's first read finds the connection gone, connects again and
        // carries on: the append works.
        append_text(&mut spool, "w", KEY, "after").expect("the next call works");
        assert_eq!(entry_count(&mut spool, "w", KEY), 2, "{via:?}");
    }
}
