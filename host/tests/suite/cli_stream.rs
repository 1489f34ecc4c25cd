//! `spool append --stream`: an answer written as it arrives on stdin, read by another
//! process while it grows, settled at the end; and a writer killed (`SIGKILL`) midway,
//! whose entry keeps what arrived and is marked incomplete by the next turn.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{ok, ok_json, spool, temp_db};

const KEY: &str = "agent:main:main";

/// `spool append KEY --role assistant --stream …` reading its stdin from a pipe.
fn writer(db: &Path, turn: &str, message_id: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_spool"))
        .args([
            "--db",
            &db.display().to_string(),
            "append",
            KEY,
            "--role",
            "assistant",
        ])
        .args(["--stream", "--every-ms", "20", "--every-bytes", "8"])
        .args(["--turn-id", turn, "--message-id", message_id, "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the writer")
}

/// The entry `message_id` as another process reads it (`Value::Null` before it exists).
fn read(db: &Path, message_id: &str) -> Value {
    let out = spool(db, &["entry", KEY, message_id, "--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// Waits until another process reads `message_id` holding `content`.
fn wait_for(db: &Path, message_id: &str, content: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let entry = read(db, message_id);
        if entry["content"] == content {
            return entry;
        }
        assert!(Instant::now() < deadline, "never read {content:?}: {entry}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn test_a_streamed_answer_grows_for_readers_and_settles_at_the_end_of_stdin() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    let mut child = writer(&db, "t1", "m-1");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"Looking at ").expect("write");
    stdin.flush().expect("flush");
    let seen = wait_for(&db, "m-1", "Looking at ");
    assert_eq!(seen["status"], "in_progress", "{seen}");
    // A character cut between two writes waits for its end.
    stdin
        .write_all("the tests \u{2014}".as_bytes()[..12].as_ref())
        .expect("write");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(100));
    let partial = read(&db, "m-1");
    assert!(
        partial["content"]
            .as_str()
            .is_some_and(|c| !c.contains('\u{fffd}')),
        "{partial}"
    );
    stdin.write_all(&"\u{2014}".as_bytes()[2..]).expect("write");
    stdin.write_all(b" all pass.").expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settled: Value = serde_json::from_slice(&out.stdout).expect("the entry as JSON");
    assert_eq!(
        settled["content"],
        "Looking at the tests \u{2014} all pass."
    );
    assert!(settled.get("status").is_none(), "{settled}");
    let stored = read(&db, "m-1");
    assert_eq!(stored["content"], settled["content"]);
    assert!(stored.get("status").is_none(), "{stored}");
}

#[test]
fn test_a_writer_killed_mid_answer_leaves_what_arrived_and_the_next_turn_marks_it() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    let mut child = writer(&db, "t1", "m-1");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"The first half of an ans").expect("write");
    stdin.flush().expect("flush");
    wait_for(&db, "m-1", "The first half of an ans");
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    drop(stdin);
    let left = read(&db, "m-1");
    assert_eq!(left["status"], "in_progress", "{left}");
    // The next turn's answer finds it.
    let mut next = writer(&db, "t2", "m-2");
    let mut stdin = next.stdin.take().expect("stdin");
    stdin.write_all(b"Starting over.").expect("write");
    drop(stdin);
    let out = next.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let interrupted = read(&db, "m-1");
    assert_eq!(
        (
            &interrupted["status"],
            &interrupted["stop_reason"],
            &interrupted["content"]
        ),
        (
            &Value::from("incomplete"),
            &Value::from("interrupted"),
            &Value::from("The first half of an ans")
        ),
        "{interrupted}"
    );
    let shown = ok_json(&db, &["show", KEY, "--json"]);
    assert_eq!(shown["session"]["entry_count"], 2, "{shown}");
}
