//! Many hosts, one PostgreSQL database: OS processes (this test binary run again, its
//! role in `SPOOL_PG_ROLE`) append to one session and to sessions of their own,
//! straight to the server and through PgBouncer, while a reader follows the transcript
//! with cursors; and a writer killed with `kill -9` mid-stream. Nothing acknowledged is
//! lost, nothing is there twice, order is strict, no caller ever sees a `conflict`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use spool::{AppendRequest, Order, PageRequest, Role};
use spool_host::Instance;

use crate::common::postgres::{self as server, Via};
use crate::common::{complete_lines, instance_on, record_line, test_in_new_process};

const ROLE: &str = "SPOOL_PG_ROLE";
const WS: &str = "default";

/// What a process of a scenario does, from its environment.
struct Part {
    role: String,
    url: String,
    dir: PathBuf,
    key: String,
    count: u64,
    out: PathBuf,
}

fn part() -> Option<Part> {
    let role = std::env::var(ROLE).ok()?;
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set"));
    Some(Part {
        role,
        url: var("SPOOL_PG_URL"),
        dir: PathBuf::from(var("SPOOL_PG_DIR")),
        key: var("SPOOL_PG_KEY"),
        count: var("SPOOL_PG_COUNT").parse().expect("a number"),
        out: PathBuf::from(var("SPOOL_PG_OUT")),
    })
}

fn instance(url: &str) -> Instance {
    instance_on(Path::new(url))
}

fn create(spool: &mut Instance, key: &str) {
    crate::common::create_session(spool, WS, key);
}

/// Waits for the file `name` in `dir`.
fn wait_for(dir: &Path, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join(name).exists() {
        assert!(Instant::now() < deadline, "no {name} signal");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Plays a writer or the reader.
fn play(part: &Part) {
    let mut spool = instance(&part.url);
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&part.out)
        .expect("the output file");
    wait_for(&part.dir, "go");
    match part.role.as_str() {
        "writer" => {
            let name = part
                .out
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            for j in 0..part.count {
                let mut request = AppendRequest::new(Role::User, format!("{name}-{j}"));
                request.message_id = Some(format!("{name}-{j}"));
                let entry = spool
                    .call(
                        WS,
                        spool::ops::AppendEntry {
                            key: part.key.clone(),
                            request,
                            now_ms: 1_000 + j,
                        },
                    )
                    .unwrap_or_else(|e| panic!("append {name}-{j}: {e}"));
                // Acknowledged: recorded before the next append begins.
                record_line(&mut out, &format!("{} {}", entry.id, entry.message_id));
            }
        }
        "reader" => {
            // Follows the tail oldest first until the writers are done and nothing is new.
            let mut cursor: Option<String> = None;
            let mut ids = Vec::new();
            loop {
                let finished = part.dir.join("done").exists();
                let page = spool
                    .call(
                        WS,
                        spool::ops::ReadPage {
                            key: part.key.clone(),
                            request: PageRequest {
                                order: Order::OldestFirst,
                                cursor: cursor.clone(),
                                limit: 13,
                            },
                        },
                    )
                    .expect("read a page");
                ids.extend(page.entries.iter().map(|e| e.id));
                if let Some(last) = page.entries.last() {
                    cursor = Some(spool::validate::hex(&spool::keys::position(
                        last.created_at,
                        last.id,
                    )));
                }
                if page.next_cursor.is_none() {
                    if finished {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let text: Vec<String> = ids.iter().map(u64::to_string).collect();
            record_line(&mut out, &text.join(" "));
        }
        other => panic!("unknown role {other}"),
    }
}

/// Starts this test again as `role`, writing to `dir/out`.
fn spawn(test: &str, url: &str, dir: &Path, role: &str, key: &str, count: u64, out: &str) -> Child {
    test_in_new_process(module_path!(), test)
        .env(ROLE, role)
        .env("SPOOL_PG_URL", url)
        .env("SPOOL_PG_DIR", dir)
        .env("SPOOL_PG_KEY", key)
        .env("SPOOL_PG_COUNT", count.to_string())
        .env("SPOOL_PG_OUT", dir.join(out))
        .env("SPOOL_CACHE_DIR", crate::common::cache_dir())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start a process")
}

fn finish(child: Child, what: &str) {
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every entry of `key`, oldest first: `(id, message id)`.
fn transcript(spool: &mut Instance, key: &str) -> Vec<(u64, String)> {
    crate::common::transcript(spool, WS, key)
        .into_iter()
        .map(|e| (e.id, e.message_id))
        .collect()
}

/// The acknowledged `(id, message id)` lines of an output file.
fn acknowledged(path: &Path) -> Vec<(u64, String)> {
    complete_lines(path)
        .iter()
        .map(|line| {
            let (id, message_id) = line.split_once(' ').expect("id and message id");
            (id.parse().expect("id"), message_id.to_owned())
        })
        .collect()
}

/// `writers` processes append `each` entries each to one session (or to a session
/// each) while, on one session, a reader follows it.
fn scenario(test: &str, via: Via, writers: u64, each: u64, one_session: bool) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let url = server::url(&server::fresh_database(test), via);
    let key = |w: u64| {
        if one_session {
            "agent:pg:main".to_owned()
        } else {
            format!("agent:pg:w{w}")
        }
    };
    let mut setup = instance(&url);
    for w in 0..if one_session { 1 } else { writers } {
        create(&mut setup, &key(w));
    }
    let reader = one_session.then(|| spawn(test, &url, dir, "reader", &key(0), 0, "reader"));
    let processes: Vec<Child> = (0..writers)
        .map(|w| spawn(test, &url, dir, "writer", &key(w), each, &format!("w{w}")))
        .collect();
    std::fs::write(dir.join("go"), b"").expect("start signal");
    for (w, child) in processes.into_iter().enumerate() {
        finish(child, &format!("writer {w}"));
    }
    std::fs::write(dir.join("done"), b"").expect("end signal");
    if let Some(reader) = reader {
        finish(reader, "reader");
    }

    for w in 0..if one_session { 1 } else { writers } {
        let stored = transcript(&mut setup, &key(w));
        let ids: Vec<u64> = stored.iter().map(|(id, _)| *id).collect();
        assert!(ids.windows(2).all(|p| p[0] < p[1]), "ids strictly increase");
        let expected = if one_session { writers * each } else { each };
        assert_eq!(
            stored.len() as u64,
            expected,
            "{via:?}: every append is there"
        );
        let session = setup
            .call(WS, spool::ops::GetSession { key: key(w) })
            .expect("get")
            .expect("the session");
        assert_eq!(session.entry_count, expected);
    }
    // Each writer's acknowledged appends are there once, in its own order.
    let mut every: BTreeSet<String> = BTreeSet::new();
    for w in 0..writers {
        let acked = acknowledged(&dir.join(format!("w{w}")));
        assert_eq!(acked.len() as u64, each, "writer {w}");
        assert!(
            acked.windows(2).all(|p| p[0].0 < p[1].0),
            "writer {w}'s ids increase"
        );
        for (_, message_id) in acked {
            assert!(every.insert(message_id.clone()), "{message_id} twice");
        }
    }
    if one_session {
        let stored: BTreeSet<String> = transcript(&mut setup, &key(0))
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        assert_eq!(stored, every);
        // The reader saw every entry once, in id order.
        let seen: Vec<u64> = std::fs::read_to_string(dir.join("reader"))
            .expect("the reader's ids")
            .split_whitespace()
            .map(|id| id.parse().expect("id"))
            .collect();
        let ids: Vec<u64> = transcript(&mut setup, &key(0))
            .iter()
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(
            seen, ids,
            "the cursor reader saw every entry once, in order"
        );
    }
}

#[test]
fn test_4_writer_processes_on_one_session_and_a_cursor_reader() {
    const TEST: &str = "test_4_writer_processes_on_one_session_and_a_cursor_reader";
    if let Some(part) = part() {
        return play(&part);
    }
    for via in [Via::Direct, Via::Pooler] {
        scenario(TEST, via, 4, 250, true);
    }
}

#[test]
fn test_16_writer_processes_on_16_sessions() {
    const TEST: &str = "test_16_writer_processes_on_16_sessions";
    if let Some(part) = part() {
        return play(&part);
    }
    for via in [Via::Direct, Via::Pooler] {
        scenario(TEST, via, 16, 40, false);
    }
}

#[test]
fn test_a_writer_killed_mid_stream_loses_no_acknowledged_append() {
    const TEST: &str = "test_a_writer_killed_mid_stream_loses_no_acknowledged_append";
    if let Some(part) = part() {
        return play(&part);
    }
    for via in [Via::Direct, Via::Pooler] {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path();
        let url = server::url(&server::fresh_database("killed"), via);
        let mut setup = instance(&url);
        create(&mut setup, "agent:pg:main");
        let mut writer = spawn(TEST, &url, dir, "writer", "agent:pg:main", 1_000_000, "w0");
        std::fs::write(dir.join("go"), b"").expect("start signal");
        // Killed (SIGKILL) at some point after 150 acknowledged appends: mid-commit or
        // between two, wherever it is.
        let deadline = Instant::now() + Duration::from_secs(60);
        while acknowledged(&dir.join("w0")).len() < 150 {
            assert!(Instant::now() < deadline, "the writer does not write");
            std::thread::sleep(Duration::from_millis(5));
        }
        writer.kill().expect("kill -9");
        writer.wait().expect("reap");
        let acked = acknowledged(&dir.join("w0"));
        let stored = transcript(&mut setup, "agent:pg:main");
        // Everything acknowledged is there, once; at most the one append in flight
        // is there unacknowledged; the stored appends are a prefix, in order.
        assert!(
            stored.len() >= acked.len() && stored.len() <= acked.len() + 1,
            "{via:?}"
        );
        assert_eq!(&stored[..acked.len()], &acked[..], "{via:?}");
        for (j, (_, message_id)) in stored.iter().enumerate() {
            assert_eq!(message_id, &format!("w0-{j}"));
        }
        // And the session goes on: the next writer appends after them.
        let entry = setup
            .call(
                WS,
                spool::ops::AppendEntry {
                    key: "agent:pg:main".into(),
                    request: AppendRequest::new(Role::User, "after the kill"),
                    now_ms: 10_000_000,
                },
            )
            .expect("append after the kill");
        assert!(entry.id > stored.last().map_or(0, |(id, _)| *id));
    }
}
