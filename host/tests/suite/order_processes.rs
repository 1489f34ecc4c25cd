//! Transcript order under concurrent writer processes: several OS processes append to
//! one session in one SQLite file, each with its own skewed clock (some behind, some
//! ahead), while two reader processes page the transcript with cursors, one oldest
//! first (following the tail) and one newest first (repeated passes). Nothing is lost,
//! every reader sees every entry exactly once, and ids strictly increase in read order.
//! Half the writers append three entries per commit (`append_entries`), whose ids stay
//! consecutive.
//!
//! Each test re-runs its own test binary (`--exact <the test>`) as the writer and reader
//! processes; the environment variable `SPOOL_ORDER_ROLE` says which one a process is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use spool::{AppendRequest, Order, PageRequest, Role};
use spool_host::Instance;

const ROLE: &str = "SPOOL_ORDER_ROLE";
const WS: &str = "default";
const KEY: &str = "agent:order:main";
const PAGE: u32 = 7;

#[test]
fn test_cursor_readers_beside_4_writer_processes_see_every_entry_once_in_insertion_order() {
    scenario(
        "test_cursor_readers_beside_4_writer_processes_see_every_entry_once_in_insertion_order",
        4,
        60,
    );
}

#[test]
fn test_cursor_readers_beside_16_writer_processes_see_every_entry_once_in_insertion_order() {
    scenario(
        "test_cursor_readers_beside_16_writer_processes_see_every_entry_once_in_insertion_order",
        16,
        12,
    );
}

/// What a process of the scenario does, from its environment.
enum Part {
    Writer { index: u64, count: u64 },
    OldestFirst,
    NewestFirst,
}

fn part() -> Option<(Part, PathBuf, PathBuf)> {
    let role = std::env::var(ROLE).ok()?;
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set"));
    let number = |name: &str| var(name).parse::<u64>().expect("a number");
    let part = match role.as_str() {
        "writer" => Part::Writer {
            index: number("SPOOL_ORDER_WRITER"),
            count: number("SPOOL_ORDER_COUNT"),
        },
        "oldest_first" => Part::OldestFirst,
        "newest_first" => Part::NewestFirst,
        other => panic!("unknown role {other}"),
    };
    Some((
        part,
        PathBuf::from(var("SPOOL_ORDER_DIR")),
        PathBuf::from(var("SPOOL_ORDER_OUT")),
    ))
}

fn instance(dir: &Path) -> Instance {
    crate::common::instance_on(&dir.join("shared.db"))
}

/// Waits for the file `name` in `dir` (the start signal, or the writers' end).
fn wait_for(dir: &Path, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join(name).exists() {
        assert!(Instant::now() < deadline, "no {name} signal");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A writer's clock offset: writers are behind and ahead of each other by seconds.
fn skew(index: u64) -> u64 {
    [3_000, 0, 5_000, 1_000, 4_000, 2_000][(index % 6) as usize] + index
}

fn page(spool: &mut Instance, order: Order, cursor: Option<String>) -> spool::Page {
    spool
        .call(
            WS,
            spool::ops::ReadPage {
                key: KEY.to_owned(),
                request: PageRequest {
                    order,
                    cursor,
                    limit: PAGE,
                },
            },
        )
        .expect("read a page")
}

/// The cursor just after `entry`: its position (`created_at · id`), as pages give it.
fn cursor_after(entry: &spool::Entry) -> String {
    spool::validate::hex(&spool::keys::position(entry.created_at, entry.id))
}

fn play(part: Part, dir: &Path, out: &Path) {
    let mut spool = instance(dir);
    wait_for(dir, "go");
    let mut lines = Vec::new();
    match part {
        Part::Writer { index, count } => {
            // Odd writers append a turn of three entries per commit (`append_entries`),
            // even ones one entry per commit: a batch's entries must stay together.
            let batch = if index % 2 == 1 { 3 } else { 1 };
            let mut i = 0;
            while i < count {
                let now_ms = 1_000_000 + 10 * i + skew(index);
                let requests: Vec<AppendRequest> = (i..(i + batch).min(count))
                    .map(|j| {
                        let mut request = AppendRequest::new(Role::User, format!("w{index}-{j}"));
                        request.message_id = Some(format!("w{index}-{j}"));
                        request
                    })
                    .collect();
                i += requests.len() as u64;
                let mut conflicts = 0;
                let entries = loop {
                    let result = if requests.len() == 1 {
                        spool
                            .call(
                                WS,
                                spool::ops::AppendEntry {
                                    key: KEY.to_owned(),
                                    request: requests[0].clone(),
                                    now_ms,
                                },
                            )
                            .map(|entry| vec![entry])
                    } else {
                        spool.call(
                            WS,
                            spool::ops::AppendEntries {
                                key: KEY.to_owned(),
                                requests: requests.clone(),
                                now_ms,
                            },
                        )
                    };
                    match result {
                        Ok(entries) => break entries,
                        // Lost every retry to the other writers: try again.
                        Err(e) if e.code() == "conflict" && conflicts < 100 => conflicts += 1,
                        Err(e) => panic!("append: {e}"),
                    }
                };
                assert!(
                    entries.windows(2).all(|w| w[1].id == w[0].id + 1),
                    "one commit's entries are consecutive: {entries:?}"
                );
                for entry in &entries {
                    lines.push(format!("{} {}", entry.id, entry.message_id));
                }
                // Lets the other writers in between, as separate agents would.
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        Part::OldestFirst => {
            // Follows the tail: at the end of the transcript it continues after the
            // newest entry it has seen, until the writers are done and nothing is new.
            let mut cursor = None;
            let mut ids = Vec::new();
            loop {
                let finished = dir.join("done").exists();
                let got = page(&mut spool, Order::OldestFirst, cursor.clone());
                ids.extend(got.entries.iter().map(|e| e.id.to_string()));
                if let Some(last) = got.entries.last() {
                    cursor = Some(cursor_after(last));
                }
                if got.next_cursor.is_none() {
                    if finished {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            lines.push(ids.join(" "));
        }
        Part::NewestFirst => {
            // Full passes from the newest entry down, while the writers write: each must
            // see every entry committed before it began.
            loop {
                let finished = dir.join("done").exists();
                let before = spool
                    .call(
                        WS,
                        spool::ops::GetSession {
                            key: KEY.to_owned(),
                        },
                    )
                    .expect("get")
                    .expect("session")
                    .last_entry_id;
                let mut ids = vec![before.to_string()];
                let mut cursor = None;
                loop {
                    let got = page(&mut spool, Order::NewestFirst, cursor.take());
                    ids.extend(got.entries.iter().map(|e| e.id.to_string()));
                    match got.next_cursor {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                lines.push(ids.join(" "));
                if finished {
                    break;
                }
            }
        }
    }
    std::fs::write(out, lines.join("\n")).expect("write the result");
}

fn spawn(test: &str, dir: &Path, role: &str, name: &str, extra: &[(&str, String)]) -> Child {
    let mut command = crate::common::test_in_new_process(module_path!(), test);
    command
        .env(ROLE, role)
        .env("SPOOL_ORDER_DIR", dir)
        .env("SPOOL_ORDER_OUT", dir.join(name));
    for (key, value) in extra {
        command.env(key, value);
    }
    // The harness's report of the re-run goes nowhere; a failure still shows on stderr.
    command.stdout(std::process::Stdio::null());
    command.spawn().expect("start a process")
}

fn finish(mut child: Child, what: &str) {
    let status = child.wait().expect("wait");
    assert!(status.success(), "{what} failed: {status}");
}

fn ids(line: &str) -> Vec<u64> {
    line.split_whitespace()
        .map(|id| id.parse().expect("an id"))
        .collect()
}

fn scenario(test: &str, writers: u64, each: u64) {
    if let Some((part, dir, out)) = part() {
        return play(part, &dir, &out);
    }
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let mut setup = instance(dir);
    setup
        .call(
            WS,
            spool::ops::CreateSession {
                key: KEY.to_owned(),
                session_id: "s".to_owned(),
                now_ms: 1,
            },
        )
        .expect("create the session");
    let readers = [
        (
            "oldest_first",
            spawn(test, dir, "oldest_first", "oldest", &[]),
        ),
        (
            "newest_first",
            spawn(test, dir, "newest_first", "newest", &[]),
        ),
    ];
    let writer_processes: Vec<Child> = (0..writers)
        .map(|w| {
            let extra = [
                ("SPOOL_ORDER_WRITER", w.to_string()),
                ("SPOOL_ORDER_COUNT", each.to_string()),
            ];
            spawn(test, dir, "writer", &format!("writer-{w}"), &extra)
        })
        .collect();
    std::fs::write(dir.join("go"), b"").expect("start signal");
    for (w, child) in writer_processes.into_iter().enumerate() {
        finish(child, &format!("writer {w}"));
    }
    std::fs::write(dir.join("done"), b"").expect("end signal");
    for (name, child) in readers {
        finish(child, name);
    }

    let total = writers * each;
    let all: Vec<u64> = (1..=total).collect();
    let mut appended = BTreeSet::new();
    for w in 0..writers {
        let text = std::fs::read_to_string(dir.join(format!("writer-{w}"))).expect("writer");
        for line in text.lines() {
            let (id, message_id) = line.split_once(' ').expect("id and message id");
            assert!(message_id.starts_with(&format!("w{w}-")), "{line}");
            assert!(appended.insert(id.parse::<u64>().expect("id")), "{line}");
        }
    }
    assert_eq!(
        appended.into_iter().collect::<Vec<_>>(),
        all,
        "every append got its own id"
    );

    let oldest = ids(&std::fs::read_to_string(dir.join("oldest")).expect("oldest-first reader"));
    let distinct: BTreeSet<u64> = oldest.iter().copied().collect();
    let descents = oldest.windows(2).filter(|w| w[0] >= w[1]).count();
    assert_eq!(
        oldest,
        all,
        "the oldest-first cursor reader saw every entry once, in insertion order \
         ({} of {total} missed, {} seen twice, {descents} places where ids do not increase)",
        total as usize - distinct.len(),
        oldest.len() - distinct.len(),
    );

    let transcript = setup
        .call(
            WS,
            spool::ops::CanonicalTranscript {
                key: KEY.to_owned(),
            },
        )
        .expect("canonical");
    let read: Vec<u64> = transcript.iter().map(|e| e.id).collect();
    assert_eq!(
        read, all,
        "the transcript is in insertion order, nothing lost"
    );

    let newest = std::fs::read_to_string(dir.join("newest")).expect("newest-first reader");
    let passes: Vec<Vec<u64>> = newest.lines().map(ids).collect();
    assert!(!passes.is_empty());
    for pass in &passes {
        let (before, seen) = pass.split_first().expect("a pass");
        assert!(
            seen.windows(2).all(|w| w[0] > w[1]),
            "ids strictly decrease newest first: {seen:?}"
        );
        // Entries committed while the pass ran are newer than where it started: only
        // its first page may hold some; everything committed before it is there.
        let old: Vec<u64> = seen.iter().copied().filter(|id| id <= before).collect();
        assert_eq!(
            old,
            (1..=*before).rev().collect::<Vec<_>>(),
            "a newest-first pass saw every entry committed before it began, once"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    eprintln!(
        "{writers} writers x {each}: {} newest-first passes, {:?}",
        passes.len(),
        started.elapsed()
    );
}
