//! A PostgreSQL failover under writer processes: a primary with a synchronous hot
//! standby (`cargo xtask test` starts the pair for this test alone), writers appending
//! to one session through a URL naming both hosts, the primary killed with `kill -9`
//! mid-stream and the standby promoted. The writers carry on through the URL, and
//! afterwards every acknowledged append is there exactly once, in strict order; an
//! append that failed with `storage` is not there; one whose outcome was `unknown` is
//! there once or not at all.
//!
//! `#[ignore]`d in the parallel run: it needs the pair's variables
//! (`SPOOL_TEST_POSTGRES_FAILOVER`, `SPOOL_TEST_POSTGRES_PID_FILE`,
//! `SPOOL_TEST_POSTGRES_PROMOTE`) and kills the primary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use spool::{AppendRequest, Role};

use crate::common::{
    complete_lines, create_session, instance_on, record_line, sh, test_in_new_process,
};

const ROLE: &str = "SPOOL_FAILOVER_ROLE";
const WS: &str = "default";
const KEY: &str = "agent:failover:main";
const TEST: &str = "test_writers_carry_on_through_a_failover_and_lose_nothing_acknowledged";

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set (cargo xtask test)"))
}

/// The URL of database `name` on the pair (both hosts, `read-write`).
fn url_of(name: &str) -> String {
    let both = var("SPOOL_TEST_POSTGRES_FAILOVER");
    let (base, query) = both.split_once('?').expect("a query");
    let base = base.rsplit_once('/').expect("a database").0;
    format!("{base}/{name}?{query}")
}

/// A writer: `count` appends, each outcome on a line of `out` as it comes
/// (`ack ID MSG`, `unknown MSG`, `storage MSG`).
fn write_entries(url: &str, dir: &Path, name: &str, count: u64, out: &Path) {
    let mut spool = instance_on(Path::new(url));
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .expect("the output file");
    while !dir.join("go").exists() {
        std::thread::sleep(Duration::from_millis(2));
    }
    for j in 0..count {
        let message_id = format!("{name}-{j}");
        let mut request = AppendRequest::new(Role::User, message_id.clone());
        request.message_id = Some(message_id.clone());
        let appended = spool.call(
            WS,
            spool::ops::AppendEntry {
                key: KEY.to_owned(),
                request,
                now_ms: 1_000 + j,
            },
        );
        let line = match appended {
            Ok(entry) => format!("ack {} {message_id}", entry.id),
            Err(e) if matches!(e.code(), "unknown" | "storage") => {
                format!("{} {message_id}", e.code())
            }
            Err(e) => panic!("append {message_id}: {e}"),
        };
        record_line(&mut out, &line);
    }
}

fn spawn(url: &str, dir: &Path, name: &str, count: u64) -> Child {
    test_in_new_process(module_path!(), TEST)
        // The test is ignored in the parallel run: the writer runs it as such.
        .arg("--ignored")
        .env(ROLE, name)
        .env("SPOOL_FAILOVER_URL", url)
        .env("SPOOL_FAILOVER_DIR", dir)
        .env("SPOOL_FAILOVER_COUNT", count.to_string())
        .env("SPOOL_CACHE_DIR", crate::common::cache_dir())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start a writer")
}

#[test]
#[ignore = "kills the primary of its own pair: run alone with --ignored (cargo xtask test does)"]
fn test_writers_carry_on_through_a_failover_and_lose_nothing_acknowledged() {
    if let Ok(name) = std::env::var(ROLE) {
        let dir = PathBuf::from(var("SPOOL_FAILOVER_DIR"));
        let count = var("SPOOL_FAILOVER_COUNT").parse().expect("a count");
        return write_entries(
            &var("SPOOL_FAILOVER_URL"),
            &dir,
            &name,
            count,
            &dir.join(&name),
        );
    }
    const WRITERS: u64 = 3;
    const EACH: u64 = 300;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let admin = url_of("postgres");
    let mut client = postgres::Client::connect(&admin, postgres::NoTls).expect("connect");
    client
        .batch_execute("CREATE DATABASE failover")
        .expect("create the database");
    let url = url_of("failover");
    let mut setup = instance_on(Path::new(&url));
    create_session(&mut setup, WS, KEY);
    drop(setup);
    let writers: Vec<Child> = (0..WRITERS)
        .map(|w| spawn(&url, dir, &format!("w{w}"), EACH))
        .collect();
    std::fs::write(dir.join("go"), b"").expect("start signal");
    // Mid-stream: the primary killed, the standby promoted.
    let deadline = Instant::now() + Duration::from_secs(60);
    while (0..WRITERS)
        .map(|w| complete_lines(&dir.join(format!("w{w}"))).len())
        .sum::<usize>()
        < 150
    {
        assert!(Instant::now() < deadline, "the writers do not write");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = std::fs::read_to_string(var("SPOOL_TEST_POSTGRES_PID_FILE")).expect("the pid");
    let pid = pid.lines().next().expect("the postmaster's pid").trim();
    sh(&format!("kill -9 {pid}"));
    sh(&var("SPOOL_TEST_POSTGRES_PROMOTE"));
    for (w, writer) in writers.into_iter().enumerate() {
        let out = writer.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "writer {w}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // What the writers were told, by message id.
    let mut told: BTreeMap<String, String> = BTreeMap::new();
    for w in 0..WRITERS {
        let outcomes = complete_lines(&dir.join(format!("w{w}")));
        assert_eq!(outcomes.len() as u64, EACH, "writer {w} tried every append");
        for line in outcomes {
            let mut parts = line.split(' ');
            let outcome = parts.next().expect("an outcome").to_owned();
            let message_id = parts.next_back().expect("a message id").to_owned();
            told.insert(message_id, outcome);
        }
    }
    // What the new primary holds.
    let mut spool = instance_on(Path::new(&url));
    let stored: Vec<(u64, String)> = crate::common::transcript(&mut spool, WS, KEY)
        .into_iter()
        .map(|e| (e.id, e.message_id))
        .collect();
    assert!(
        stored.windows(2).all(|p| p[0].0 < p[1].0),
        "ids strictly increase"
    );
    let mut seen = BTreeSet::new();
    for (_, message_id) in &stored {
        assert!(
            seen.insert(message_id.clone()),
            "{message_id} is there twice"
        );
        let outcome = told.get(message_id).map(String::as_str);
        assert!(
            matches!(outcome, Some("ack" | "unknown")),
            "{message_id} is there, but its writer was told {outcome:?}"
        );
    }
    let acknowledged = told.iter().filter(|(_, o)| *o == "ack").count();
    for (message_id, outcome) in &told {
        if outcome == "ack" {
            assert!(
                seen.contains(message_id),
                "acknowledged {message_id} was lost"
            );
        }
    }
    let unknown = told.values().filter(|o| *o == "unknown").count();
    eprintln!(
        "failover: {acknowledged} acknowledged, {unknown} unknown, {} failed with storage, \
         {} stored",
        told.values().filter(|o| *o == "storage").count(),
        stored.len()
    );
    assert!(
        acknowledged > 150,
        "the writers carried on after the failover"
    );
}
