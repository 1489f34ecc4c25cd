//! PostgreSQL failovers under writer processes: a primary with a synchronous hot
//! standby (`cargo xtask test` starts the pair for this test alone), four writers
//! appending to one session through a URL naming both hosts, and three failovers
//! mid-stream: each time the primary killed with `kill -9`, the standby promoted, the
//! lost server rebuilt as the new standby (`cargo xtask postgres-failover`). The
//! writers carry on through the URL, and afterwards every acknowledged append is there
//! exactly once, in strict order; an append that failed with `storage` is not there;
//! one whose outcome was `unknown` is there once or not at all, and the test reads
//! which.
//!
//! `#[ignore]`d in the parallel run: it needs the pair's variables
//! (`SPOOL_TEST_POSTGRES_FAILOVER`, `SPOOL_TEST_POSTGRES_FAILOVER_NOW`) and kills
//! servers.

use std::collections::BTreeMap;
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

/// A writer: appends until the file `done` is there, each outcome on a line of `out`
/// as it comes (`ack MSG ID`; after `unknown`, read back: `applied MSG ID ERROR` or
/// `absent MSG ERROR`; `storage MSG ERROR`); the message
/// ids are `NAME-0`, `NAME-1`, ….
fn write_entries(url: &str, dir: &Path, name: &str, out: &Path) {
    let mut spool = instance_on(Path::new(url));
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .expect("the output file");
    while !dir.join("go").exists() {
        std::thread::sleep(Duration::from_millis(2));
    }
    for j in 0.. {
        if dir.join("done").exists() {
            return;
        }
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
            Ok(entry) => format!("ack {message_id} {}", entry.id),
            // Resolved by reading: the append is in the session under its message id,
            // or it is not.
            Err(e) if e.code() == "unknown" => match resolve(&mut spool, &message_id) {
                Some(id) => format!("applied {message_id} {id} {e}"),
                None => format!("absent {message_id} {e}"),
            },
            Err(e) if e.code() == "storage" => format!("storage {message_id} {e}"),
            Err(e) => panic!("append {message_id}: {e}"),
        };
        let line = line.replace('\n', " ");
        record_line(&mut out, &line);
    }
}

/// Whether the append of `message_id` applied, read from the session (`get_entry` by
/// message id): its entry's id, or `None`. A read that fails (the server still
/// changing hands) is made again.
fn resolve(spool: &mut spool_host::Instance, message_id: &str) -> Option<u64> {
    for _ in 0..20 {
        match spool.call(
            WS,
            spool::ops::GetEntry {
                key: KEY.to_owned(),
                message_id: message_id.to_owned(),
            },
        ) {
            Ok(entry) => return entry.map(|e| e.id),
            Err(e) if e.code() == "storage" => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("read {message_id} back: {e}"),
        }
    }
    panic!("{message_id} could not be read back")
}

fn spawn(url: &str, dir: &Path, name: &str) -> Child {
    test_in_new_process(module_path!(), TEST)
        // The test is ignored in the parallel run: the writer runs it as such.
        .arg("--ignored")
        .env(ROLE, name)
        .env("SPOOL_FAILOVER_URL", url)
        .env("SPOOL_FAILOVER_DIR", dir)
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
        return write_entries(&var("SPOOL_FAILOVER_URL"), &dir, &name, &dir.join(&name));
    }
    const WRITERS: u64 = 4;
    const FAILOVERS: u64 = 3;
    /// Outcomes between two failovers, and after the last.
    const BETWEEN: u64 = 250;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let admin = url_of("postgres");
    let mut client = postgres::Client::connect(&admin, postgres::NoTls).expect("connect");
    client
        .batch_execute("CREATE DATABASE failover")
        .expect("create the database");
    drop(client);
    let url = url_of("failover");
    let mut setup = instance_on(Path::new(&url));
    create_session(&mut setup, WS, KEY);
    drop(setup);
    let writers: Vec<Child> = (0..WRITERS)
        .map(|w| spawn(&url, dir, &format!("w{w}")))
        .collect();
    std::fs::write(dir.join("go"), b"").expect("start signal");
    let tried = || {
        (0..WRITERS)
            .map(|w| complete_lines(&dir.join(format!("w{w}"))).len() as u64)
            .sum::<u64>()
    };
    // Mid-stream, three times: the primary killed, the standby promoted, the lost one
    // the new standby; each after another `BETWEEN` outcomes, and the writers stopped
    // after `BETWEEN` more.
    let started = Instant::now();
    let deadline = started + Duration::from_secs(240);
    for step in 1..=FAILOVERS + 1 {
        let before = tried();
        while tried() < before + BETWEEN {
            assert!(
                Instant::now() < deadline,
                "the writers stalled before step {step}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        if step <= FAILOVERS {
            eprintln!(
                "failover {step} after {:.1} s, {} outcomes",
                started.elapsed().as_secs_f64(),
                tried()
            );
            sh(&var("SPOOL_TEST_POSTGRES_FAILOVER_NOW"));
        }
    }
    std::fs::write(dir.join("done"), b"").expect("end signal");
    for (w, writer) in writers.into_iter().enumerate() {
        let out = writer.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "writer {w}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!(
        "writers done after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // What the writers were told, by message id.
    let mut told: BTreeMap<String, (String, Option<u64>)> = BTreeMap::new();
    for w in 0..WRITERS {
        for (j, line) in complete_lines(&dir.join(format!("w{w}")))
            .iter()
            .enumerate()
        {
            let mut parts = line.splitn(4, ' ');
            let outcome = parts.next().expect("an outcome").to_owned();
            let message_id = parts.next().expect("a message id").to_owned();
            let id = match outcome.as_str() {
                "ack" | "applied" => Some(parts.next().expect("an id").parse().expect("id")),
                _ => None,
            };
            assert_eq!(
                message_id,
                format!("w{w}-{j}"),
                "writer {w} tried each in turn"
            );
            if outcome != "ack" {
                eprintln!("{line}");
            }
            told.insert(message_id, (outcome, id));
        }
    }
    // What the new primary holds: exactly the appends told `ack` and those read back
    // as applied after `unknown`, each once, under the id its writer was told; ids
    // strictly increasing.
    let mut spool = instance_on(Path::new(&url));
    let stored: BTreeMap<String, u64> = {
        let entries = crate::common::transcript(&mut spool, WS, KEY);
        assert!(
            entries.windows(2).all(|p| p[0].id < p[1].id),
            "ids strictly increase"
        );
        let stored: BTreeMap<String, u64> = entries
            .iter()
            .map(|e| (e.message_id.clone(), e.id))
            .collect();
        assert_eq!(stored.len(), entries.len(), "no append is there twice");
        stored
    };
    let count = |what: &str| told.values().filter(|o| o.0 == what).count();
    let in_session: BTreeMap<String, u64> = told
        .iter()
        .filter_map(|(message_id, (outcome, id))| match outcome.as_str() {
            "ack" | "applied" => Some((message_id.clone(), id.expect("an id"))),
            "absent" | "storage" => None,
            other => panic!("outcome {other}"),
        })
        .collect();
    assert_eq!(
        stored, in_session,
        "the session holds what its writers were told, no more, no less"
    );
    eprintln!(
        "{FAILOVERS} failovers: {} acknowledged, {} unknown ({} applied, {} not: read \
         back), {} failed with storage, {} stored",
        count("ack"),
        count("applied") + count("absent"),
        count("applied"),
        count("absent"),
        count("storage"),
        stored.len()
    );
    assert!(
        count("ack") as u64 > FAILOVERS * BETWEEN,
        "the writers carried on after the last failover"
    );
}
