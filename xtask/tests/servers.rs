//! The throwaway PostgreSQL servers stop on every exit path: here the one a drop cannot
//! cover, `xtask with-postgres` killed with `kill -9` while its command runs. Its
//! watchdog stops the server and the pooler and removes their directory.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn test_servers_of_a_killed_xtask_are_stopped_and_removed() {
    if !std::path::Path::new("/usr/lib/postgresql").exists() {
        // Installing PostgreSQL is `cargo xtask test`'s job, which runs this after it.
        eprintln!("no PostgreSQL installed: not run");
        return;
    }
    let mut xtask = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["with-postgres", "sleep", "300"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xtask");
    // `postgres: PostgreSQL on …, in DIR` once both are up.
    let stderr = BufReader::new(xtask.stderr.take().expect("stderr"));
    let dir = stderr
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            let rest = line.strip_prefix("postgres: PostgreSQL on ")?;
            Some(PathBuf::from(rest.rsplit_once(", in ")?.1))
        })
        .expect("the servers' directory");
    assert!(dir.join("data/postmaster.pid").exists(), "the server runs");
    let running = || {
        let out = Command::new("pgrep")
            .args(["-f", &dir.display().to_string()])
            .output()
            .expect("pgrep");
        !String::from_utf8_lossy(&out.stdout).trim().is_empty()
    };
    assert!(running());
    // The command it runs, to end it after the test.
    let command = Command::new("pgrep")
        .args(["-P", &xtask.id().to_string()])
        .output()
        .expect("pgrep");
    xtask.kill().expect("kill -9");
    xtask.wait().expect("reap");
    let deadline = Instant::now() + Duration::from_secs(30);
    while dir.exists() || running() {
        assert!(
            Instant::now() < deadline,
            "{} or its servers outlived the killed xtask",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for pid in String::from_utf8_lossy(&command.stdout).split_whitespace() {
        let _ = Command::new("kill").arg(pid).status();
    }
}
