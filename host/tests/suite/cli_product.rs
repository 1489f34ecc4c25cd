//! The CLI as a product: the demo (twice on one database), completions, `--json` on the
//! commands that gained it, output to a closed pipe, the help text.

use std::process::{Command, Stdio};

use crate::common::{cache_dir, ok, ok_json, spool, stderr, temp_db};

#[test]
fn test_demo_twice_tells_the_same_story() {
    let (_dir, db) = temp_db();
    let first = ok(&db, &["demo"]);
    for step in [
        "1. create the session agent:demo:main",
        "Goal: make `cargo test` pass again",
        "→ bash {\"cmd\":\"cargo test\"}",
        "Exit code 101",
        "→ edit_file",
        "coverage   pass",
        "removed    8 entries",
        "tokens     ",
        "agent:demo:main (3 entries)",
        "└─ agent:demo:retry (forked before demo-7, 6 entries)",
        "resume thread-demo-1 (codex)",
        "spool import claude-code",
        "spool --help",
    ] {
        assert!(first.contains(step), "missing {step:?} in:\n{first}");
    }
    let second = ok(&db, &["demo"]);
    assert!(second.contains("the previous demo sessions were deleted"));
    // Apart from the session ids and that note, the story is the same.
    let story = |text: &str| {
        text.lines()
            .filter(|l| !l.contains("session id"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(story(&first), story(&second));
    let list = ok_json(&db, &["list", "--json"]);
    assert_eq!(list["sessions"].as_array().expect("sessions").len(), 2);
    let runs = ok_json(&db, &["runs", "list", "--json"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1), "{runs}");
}

#[test]
fn test_demo_json_has_every_step() {
    let (_dir, db) = temp_db();
    let demo = ok_json(&db, &["demo", "--json"]);
    assert_eq!(demo["session"]["key"], "agent:demo:main");
    assert_eq!(demo["entries"].as_array().map(Vec::len), Some(11));
    assert_eq!(demo["compaction"]["removed_count"], 8);
    assert!(
        demo["compaction"]["coverage_status"]
            .as_str()
            .is_some_and(|s| s.starts_with("pass")),
        "{demo}"
    );
    assert_eq!(demo["branch"]["key"], "agent:demo:retry");
    assert_eq!(demo["resume"]["mode"], "resume");
    assert_eq!(demo["resume"]["session_id"], "thread-demo-1");
    assert!(demo["outcome"].is_object());
}

#[test]
fn test_demo_respects_the_workspace() {
    let (_dir, db) = temp_db();
    ok(&db, &["--workspace", "team", "demo"]);
    let default = ok_json(&db, &["list", "--json"]);
    assert_eq!(default["sessions"].as_array().map(Vec::len), Some(0));
    let team = ok_json(&db, &["--workspace", "team", "list", "--json"]);
    assert_eq!(team["sessions"].as_array().map(Vec::len), Some(2));
}

#[test]
fn test_completions_for_every_shell() {
    let (_dir, db) = temp_db();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef spool"),
        ("fish", "complete -c spool"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[spool]"),
    ] {
        let script = ok(&db, &["completions", shell]);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("compact-result"),
            "{shell} knows the subcommands"
        );
    }
    let out = spool(&db, &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!db.exists(), "completions never open the database");
}

#[test]
fn test_component_json_names_the_file() {
    let (dir, db) = temp_db();
    let path = dir.path().join("spool.wasm");
    let path = path.to_str().expect("utf-8 path");
    let written = ok_json(&db, &["component", path, "--json"]);
    assert_eq!(written["path"], path);
    assert_eq!(written["bytes"], spool_host::COMPONENT.len());
    let out = spool(&db, &["component", "--json"]);
    assert_eq!(out.status.code(), Some(2), "--json needs a PATH");
}

/// Runs `spool --db DB ARGS… | head -c 1` and returns the exit status and stderr of
/// `spool` (the pipe's first command).
fn into_closed_pipe(db: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spool"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("SPOOL_CACHE_DIR", cache_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    // `head -c 1`: read one byte, then close the pipe; the rest (far more than a pipe
    // holds) can only be written into a closed pipe.
    let head = Command::new("head")
        .args(["-c", "1"])
        .stdin(stdout)
        .stdout(Stdio::null())
        .status()
        .expect("head");
    assert!(head.success());
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn test_output_to_a_closed_pipe_exits_quietly() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", "agent:a:main"]);
    let big = "x".repeat(100_000);
    ok(
        &db,
        &[
            "append",
            "agent:a:main",
            "--role",
            "tool",
            "--content",
            &big,
        ],
    );
    for args in [
        &["show", "agent:a:main", "--json"][..],
        &["show", "agent:a:main"],
        &["export", "agent:a:main"],
        &["component"],
    ] {
        let (code, err) = into_closed_pipe(&db, args);
        assert_eq!(code, Some(0), "spool {args:?}: {err}");
        assert!(err.is_empty(), "spool {args:?} said: {err}");
    }
}

#[test]
fn test_help_groups_commands_with_examples_and_exit_codes() {
    let (_dir, db) = temp_db();
    let help = ok(&db, &["--help"]);
    for part in [
        "durable sessions and transcripts for AI coding agents",
        "Sessions:",
        "Compaction:",
        "Branches and provider forks:",
        "Examples:",
        "spool import claude-code",
        "spool import pi",
        "spool export agent:main:main",
        "spool branch agent:main:main agent:main:alt --fork",
        "spool fork run",
        "spool resume select",
        "Exit status:",
        "0  success",
        "1  the operation failed",
        "2  usage error",
        "SPOOL_DB",
    ] {
        assert!(help.contains(part), "missing {part:?} in:\n{help}");
    }
}

#[test]
fn test_call_runs_any_command_as_json() {
    let (_dir, db) = temp_db();
    let created = ok_json(
        &db,
        &[
            "call",
            r#"{"op":"create_session","key":"agent:main:main","session_id":"s1","now_ms":5}"#,
        ],
    );
    assert_eq!(created["session_id"], "s1");
    assert_eq!(created["created_at"], 5);
    let none = ok_json(
        &db,
        &["call", r#"{"op":"get_session","key":"agent:main:nope"}"#],
    );
    assert!(none.is_null());
    // Operations without a subcommand of their own are reachable too.
    let turns = ok_json(
        &db,
        &["call", r#"{"op":"session_turns","key":"agent:main:main"}"#],
    );
    assert!(turns.is_object(), "{turns}");
    // A failing call is an operation failure; a malformed one a usage error.
    crate::common::fails(
        &db,
        &["call", r#"{"op":"count_entries","key":"agent:main:nope"}"#],
        "not_found",
    );
    crate::common::usage_error(&db, &["call", r#"{"op":"no_such_op"}"#]);
    crate::common::usage_error(&db, &["call", "not json"]);
}
