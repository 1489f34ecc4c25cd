//! The resume-selection and provider-thread subcommands of the `spool` binary
//! (ARCHITECTURE.md, "Resume selection"):
//! `resume select|record|role`, `runs list`, `thread plan|commit-turn` — decisions,
//! human output, JSON shapes and exit codes.

use std::path::Path;

use crate::common::{fails, ok, ok_json, spool, stderr, stdout, temp_db, usage_error, words};

use serde_json::{Value, json};

const ROLE: &str = "role-runtime::run-1::cto";
const KEY: &str = "agent:main:main";

fn record(db: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["resume", "record", "--project", "p1", "--json"];
    args.extend_from_slice(extra);
    ok_json(db, &args)
}

fn select(db: &Path, extra: &[&str]) -> String {
    let mut args = vec!["resume", "select", "--project", "p1"];
    args.extend_from_slice(extra);
    ok(db, &args)
}

#[test]
fn test_done_pins_the_token_and_a_failed_run_does_not() {
    let (_dir, db) = temp_db();
    let created = ok_json(
        &db,
        &words(&format!(
            "resume role create {ROLE} --run-id run-1 --role-id cto --json"
        )),
    );
    assert_eq!(created["role_session_id"], ROLE);
    assert_eq!(created["run_id"], "run-1");
    assert_eq!(created["adapter_state"], json!({}));
    assert_eq!(
        select(&db, &["--agent", "codex", "--role", ROLE]),
        "auto: nothing to resume\n"
    );

    // A done task with a usable token pins it for the role and agent.
    let effects = record(
        &db,
        &words(&format!(
            "--agent codex --task t1 --status done --token thread-abc --role {ROLE}"
        )),
    );
    assert_eq!(effects["role_state"]["action"], "set");
    assert_eq!(
        effects["role_state"]["entry"]["resume_session_id"],
        "thread-abc"
    );
    let state = ok_json(
        &db,
        &["resume", "role", "get", ROLE, "--agent", "codex", "--json"],
    );
    assert_eq!(state["resume_session_id"], "thread-abc");
    assert_eq!(state["last_task_id"], "t1");
    assert_eq!(
        select(&db, &["--agent", "codex", "--role", ROLE]),
        "resume thread-abc (codex)\n"
    );

    // A failed run with another token never pins it (human output says so).
    let human = ok(
        &db,
        &words(&format!(
            "resume record --project p1 --agent codex --task t2 --status failed --token thread-b --role {ROLE}"
        )),
    );
    assert!(
        human.starts_with("recorded codex run of task t2 (failed, token thread-b)\n"),
        "{human}"
    );
    assert!(human.contains("role state  kept in"), "{human}");
    assert_eq!(
        select(&db, &["--agent", "codex", "--role", ROLE]),
        "resume thread-abc (codex)\n"
    );

    // The decision as JSON: the task metadata to set.
    let decision = ok_json(
        &db,
        &words(&format!(
            "resume select --agent codex --role {ROLE} --project p1 --scope scope-1 --json"
        )),
    );
    assert_eq!(decision["mode"], "resume");
    assert_eq!(decision["session_id"], "thread-abc");
    assert_eq!(
        decision["set_metadata"],
        json!({
            "external_resume_session_id": "thread-abc",
            "external_resume_agent_type": "codex",
            "external_resume_session_scope_id": "scope-1",
        })
    );
    assert_eq!(decision["clear_role_state"], false);

    // Another agent's state is separate.
    assert_eq!(
        select(&db, &["--agent", "opencode", "--role", ROLE]),
        "auto: nothing to resume\n"
    );
}

#[test]
fn test_a_terminally_failed_token_is_rejected_and_cleared() {
    let (_dir, db) = temp_db();
    ok(&db, &["resume", "role", "create", ROLE]);
    ok(
        &db,
        &[
            "resume",
            "role",
            "set",
            ROLE,
            "--agent",
            "codex",
            "--state",
            r#"{"resume_session_id":"thread-x","last_task_id":"t1"}"#,
        ],
    );
    record(
        &db,
        &[
            "--agent", "codex", "--task", "t1", "--status", "done", "--token", "thread-x",
        ],
    );
    record(
        &db,
        &words("--agent codex --task t2 --status hard_timeout --token thread-x"),
    );

    let human = select(&db, &["--agent", "codex", "--role", ROLE]);
    let mut lines = human.lines();
    assert_eq!(
        lines.next(),
        Some(
            "start new: thread-x failed terminally \
             (external_resume_fallback=provider_terminal_failure)"
        ),
        "{human}"
    );
    assert_eq!(
        lines.next(),
        Some(format!("  cleared the codex adapter state of {ROLE}").as_str())
    );
    // The selection cleared the role's entry.
    assert_eq!(
        ok_json(
            &db,
            &["resume", "role", "get", ROLE, "--agent", "codex", "--json"]
        ),
        Value::Null
    );

    // Even when resume was preconfigured: mode `new`.
    let decision = ok_json(
        &db,
        &words("resume select --agent codex --project p1 --preconfigured thread-x --json"),
    );
    assert_eq!(decision["mode"], "new");
    assert_eq!(decision["session_id"], "");
    assert_eq!(
        decision["set_metadata"]["external_resume_fallback"],
        "provider_terminal_failure"
    );
    assert!(
        decision["remove_metadata"]
            .as_array()
            .expect("a list")
            .contains(&json!("external_resume_session_id"))
    );

    // Unless the agent's sessions survive failures.
    assert_eq!(
        select(
            &db,
            &words("--agent codex --preconfigured thread-x --surviving codex")
        ),
        "resume thread-x (codex)\n"
    );
}

#[test]
fn test_a_failed_resume_clears_the_pinned_token() {
    let (_dir, db) = temp_db();
    ok(&db, &["resume", "role", "create", ROLE]);
    record(
        &db,
        &words(&format!(
            "--agent codex --task t1 --status done --token thread-abc --role {ROLE}"
        )),
    );
    let effects = record(
        &db,
        &words(&format!(
            "--agent codex --task t2 --status failed --token thread-abc --resumed-from thread-abc --role {ROLE}"
        )),
    );
    assert_eq!(effects["role_state"], json!({"action": "clear"}));
    assert_eq!(
        effects["set_metadata"]["external_resume_fallback"],
        "provider_terminal_failure"
    );
    let role = ok_json(&db, &["resume", "role", "get", ROLE, "--json"]);
    assert_eq!(role["adapter_state"], json!({}));
    assert_eq!(
        select(&db, &["--agent", "codex", "--role", ROLE]),
        "auto: nothing to resume\n"
    );
}

#[test]
fn test_a_failed_resume_that_reported_no_token_of_its_own_ends_the_resumed_token() {
    // The failing run reports no token, a new token, or times out.
    let cases: [&[&str]; 3] = [
        &["--status", "failed"],
        &["--status", "failed", "--token", "thread-new"],
        &["--status", "hard_timeout"],
    ];
    for failure in cases {
        let (_dir, db) = temp_db();
        record(
            &db,
            &words("--agent codex --task t1 --status done --token thread-old"),
        );
        assert_eq!(
            select(&db, &["--agent", "codex"]),
            "resume thread-old (codex)\n"
        );
        let mut args = vec![
            "--agent",
            "codex",
            "--task",
            "t2",
            "--resumed-from",
            "thread-old",
        ];
        args.extend_from_slice(failure);
        record(&db, &args);
        let decision = ok_json(
            &db,
            &words("resume select --project p1 --agent codex --json"),
        );
        assert_ne!(
            decision["session_id"], "thread-old",
            "{failure:?}: {decision}"
        );
        assert_ne!(decision["mode"], "resume", "{failure:?}: {decision}");
        let preconfigured = ok_json(
            &db,
            &words("resume select --project p1 --agent codex --preconfigured thread-old --json"),
        );
        assert_eq!(preconfigured["mode"], "new", "{failure:?}");
    }
}

#[test]
fn test_runs_list_table_json_and_pages() {
    let (_dir, db) = temp_db();
    assert_eq!(
        ok(&db, &["runs", "list"]),
        "no runs recorded in workspace `default`\n"
    );
    for (agent, task, status, token) in [
        ("codex", "t1", "done", "thread-a"),
        ("codex", "t2", "failed", "thread-b"),
        ("claude_code", "t3", "done", "sess-c"),
    ] {
        record(
            &db,
            &words(&format!(
                "--agent {agent} --task {task} --status {status} --token {token} --run-mode exec --workspace-path /src/p1"
            )),
        );
    }

    let table = ok(&db, &["runs", "list", "--agent", "codex"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["AGENT", "PROJECT", "TOKEN", "TASK", "STATUS", "UPDATED"]
    );
    let first: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&first[..5], ["codex", "p1", "thread-a", "t1", "done"]);
    assert!(lines[1].ends_with(" UTC"), "{table}");
    assert!(lines[2].contains("thread-b"), "{table}");

    let page = ok_json(&db, &["runs", "list", "--limit", "2", "--json"]);
    let runs = page["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    let run = &runs[0];
    for field in [
        "agent_type",
        "project_id",
        "session_id",
        "status",
        "updated_at",
        "task_id",
        "role_session_id",
        "workspace_path",
        "run_mode",
        "metadata",
    ] {
        assert!(run.get(field).is_some(), "{field} missing: {run}");
    }
    assert_eq!(run["agent_type"], "claude_code");
    assert_eq!(run["run_mode"], "exec");
    assert_eq!(run["workspace_path"], "/src/p1");
    assert_eq!(run["metadata"], json!({}));
    let cursor = page["next_cursor"].as_str().expect("a next page");
    let rest = ok_json(
        &db,
        &["runs", "list", "--limit", "2", "--cursor", cursor, "--json"],
    );
    assert_eq!(rest["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(rest["next_cursor"], Value::Null);

    let human = ok(&db, &["runs", "list", "--limit", "1"]);
    assert!(
        human.contains("(more: spool runs list --limit 1 --cursor "),
        "{human}"
    );
    let other = ok_json(&db, &["runs", "list", "--project", "p2", "--json"]);
    assert_eq!(other["runs"], json!([]));
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).expect("write");
    path.to_str().expect("utf-8").to_owned()
}

#[test]
fn test_thread_plan_and_commit_turn_rotate_with_one_notice() {
    let (dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    assert_eq!(
        ok(&db, &["thread", "plan", KEY, "--agent", "codex"]),
        "start a new codex thread\n"
    );

    let turn1 = write(
        dir.path(),
        "turn1.json",
        &json!([
            {"role": "user", "content": "fix the parser"},
            {"role": "assistant", "content": "done", "token_count": 3}
        ]),
    );
    let human = ok(
        &db,
        &[
            "thread",
            "commit-turn",
            KEY,
            "--agent",
            "codex",
            "--thread",
            "thread-old",
            "--entries",
            &turn1,
        ],
    );
    assert_eq!(
        human,
        format!("committed 2 entries (#1–#2) to {KEY}; bound to codex thread thread-old\n")
    );
    assert_eq!(
        ok(&db, &["thread", "plan", KEY, "--agent", "codex"]),
        "resume thread thread-old (codex)\n"
    );

    // The provider refuses the bound thread: start fresh, with exactly one notice.
    let human = ok(
        &db,
        &words(&format!(
            "thread plan {KEY} --agent codex --dead thread-old"
        )),
    );
    assert_eq!(
        human,
        "Codex thread could not be resumed; starting a new one.\n\
         start a new codex thread (commit its first turn with --replaces thread-old)\n"
    );
    let plan = ok_json(
        &db,
        &words(&format!(
            "thread plan {KEY} --agent codex --dead thread-old --json"
        )),
    );
    // The refusal is remembered: the binding is gone, so the same report again and a
    // plain plan both start a new thread, with no second notice.
    assert_eq!(
        plan,
        json!({
            "action": "start",
            "thread_id": null,
            "replaces": null,
            "notice": null,
        })
    );
    assert_eq!(
        ok(&db, &["thread", "plan", KEY, "--agent", "codex"]),
        "start a new codex thread\n"
    );
    let shown = ok_json(&db, &["show", KEY, "--json"]);
    assert_eq!(
        shown["session"]["model_config"]["codex_thread_id"],
        Value::Null
    );

    let turn2 = write(
        dir.path(),
        "turn2.json",
        &json!([{"role": "user", "content": "again"}]),
    );
    let committed = ok_json(
        &db,
        &[
            "thread",
            "commit-turn",
            KEY,
            "--agent",
            "codex",
            "--thread",
            "thread-new",
            "--replaces",
            "thread-old",
            "--entries",
            &turn2,
            "--json",
        ],
    );
    assert_eq!(committed["entries"][0]["id"], 3);
    assert_eq!(committed["session"]["entry_count"], 3);
    assert_eq!(
        committed["session"]["model_config"]["codex_thread_id"],
        "thread-new"
    );
    // After the rotation: resume the new thread, no notice.
    let plan = ok_json(&db, &["thread", "plan", KEY, "--agent", "codex", "--json"]);
    assert_eq!(plan["action"], "resume");
    assert_eq!(plan["thread_id"], "thread-new");
    assert_eq!(plan["notice"], Value::Null);

    // A second rotation from the dead thread lost the race: conflict, nothing written.
    fails(
        &db,
        &[
            "thread",
            "commit-turn",
            KEY,
            "--agent",
            "codex",
            "--thread",
            "thread-other",
            "--replaces",
            "thread-old",
            "--entries",
            &turn2,
        ],
        "conflict",
    );
    let shown = ok_json(&db, &["show", KEY, "--json"]);
    assert_eq!(shown["entries"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        shown["session"]["model_config"]["codex_thread_id"],
        "thread-new"
    );
}

#[test]
fn test_commit_turn_reads_entries_from_stdin() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("printf '%s' \"$1\" | \"$0\" --db \"$2\" thread commit-turn agent:main:main --agent codex --thread t-1 --entries - --json")
        .arg(env!("CARGO_BIN_EXE_spool"))
        .arg(r#"[{"role":"user","content":"from stdin"}]"#)
        .arg(&db)
        .env("SPOOL_CACHE_DIR", crate::common::cache_dir())
        .output()
        .expect("run spool");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let committed: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(committed["entries"][0]["content"], "from stdin");
}

#[test]
fn test_bad_input_is_a_usage_error_and_a_failed_operation_exits_1() {
    let (dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    // Usage errors (exit 2): missing or malformed arguments, unreadable input.
    usage_error(&db, &["resume"]);
    usage_error(&db, &["resume", "select"]);
    usage_error(
        &db,
        &["resume", "record", "--agent", "codex", "--task", "t1"],
    );
    usage_error(
        &db,
        &[
            "resume", "role", "set", ROLE, "--agent", "codex", "--state", "[1]",
        ],
    );
    usage_error(
        &db,
        &[
            "resume", "role", "set", ROLE, "--agent", "codex", "--state", "{",
        ],
    );
    usage_error(&db, &["runs", "list", "--limit", "0"]);
    usage_error(&db, &["thread", "plan", KEY]);
    let missing = dir.path().join("missing.json");
    usage_error(
        &db,
        &[
            "thread",
            "commit-turn",
            KEY,
            "--agent",
            "codex",
            "--thread",
            "t",
            "--entries",
            missing.to_str().expect("utf-8"),
        ],
    );
    let bad = write(dir.path(), "bad.json", &json!({"role": "user"}));
    usage_error(
        &db,
        &[
            "thread",
            "commit-turn",
            KEY,
            "--agent",
            "codex",
            "--thread",
            "t",
            "--entries",
            &bad,
        ],
    );

    // Failed operations (exit 1, `error[code]`).
    fails(&db, &["resume", "role", "get", ROLE], "not_found");
    fails(
        &db,
        &[
            "resume", "role", "set", ROLE, "--agent", "codex", "--state", "{}",
        ],
        "not_found",
    );
    fails(
        &db,
        &["resume", "role", "clear", ROLE, "--agent", "codex"],
        "not_found",
    );
    ok(&db, &["resume", "role", "create", ROLE]);
    fails(&db, &["resume", "role", "create", ROLE], "conflict");
    fails(
        &db,
        &["resume", "select", "--agent", ""],
        "invalid_argument",
    );
    fails(
        &db,
        &["runs", "list", "--cursor", "not-hex"],
        "invalid_argument",
    );
    fails(
        &db,
        &["thread", "plan", "agent:none:none", "--agent", "codex"],
        "not_found",
    );
    let empty = write(dir.path(), "empty.json", &json!([]));
    fails(
        &db,
        &[
            "thread",
            "commit-turn",
            "agent:none:none",
            "--agent",
            "codex",
            "--thread",
            "t",
            "--entries",
            &empty,
        ],
        "not_found",
    );
    // `spool resume KEY` still marks a session as in use.
    let out = spool(&db, &["resume", KEY]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!("resumed {KEY} ")));
    fails(&db, &["resume", "agent:none:none"], "not_found");
}

#[test]
fn test_role_get_set_clear_human_output() {
    let (_dir, db) = temp_db();
    let created = ok(
        &db,
        &["resume", "role", "create", ROLE, "--run-id", "run-1"],
    );
    assert!(
        created.starts_with(&format!("created role session {ROLE}\n  run      run-1\n")),
        "{created}"
    );
    assert!(created.contains("  no adapter state\n"), "{created}");
    assert_eq!(
        ok(
            &db,
            &[
                "resume",
                "role",
                "set",
                ROLE,
                "--agent",
                "claude_code",
                "--state",
                r#"{"resume_session_id":"sess-1"}"#,
            ],
        ),
        format!("set the claude_code adapter state of {ROLE}\n")
    );
    assert_eq!(
        ok(
            &db,
            &["resume", "role", "get", ROLE, "--agent", "claude_code"]
        ),
        "claude_code: {\"resume_session_id\":\"sess-1\"}\n"
    );
    let shown = ok(&db, &["resume", "role", "get", ROLE]);
    assert!(
        shown.contains("  claude_code: {\"resume_session_id\":\"sess-1\"}\n"),
        "{shown}"
    );
    assert_eq!(
        ok_json(
            &db,
            &words(&format!(
                "resume role clear {ROLE} --agent claude_code --json"
            ))
        ),
        json!({"cleared": true})
    );
    assert_eq!(
        ok(
            &db,
            &["resume", "role", "get", ROLE, "--agent", "claude_code"]
        ),
        format!("no claude_code adapter state in {ROLE}\n")
    );
}
