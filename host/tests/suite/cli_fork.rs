//! `spool branch`, `spool tree`, `spool fork …` and `spool turn …` end to end: the
//! binary on a temporary database, provider forks driven by small shell scripts.

use std::path::Path;

use crate::common::{fails, ok, ok_json, spool, stderr, stdout, temp_db, usage_error, words};

fn append(db: &Path, key: &str, content: &str, message_id: &str) {
    let extra = ["--message-id", message_id, "--token-count", "3"];
    crate::common::append_user(db, key, content, &extra);
}

/// A session of `n` entries with message ids `m-1` … `m-n`.
fn session(db: &Path, key: &str, n: usize) {
    ok(db, &["create", key]);
    for i in 1..=n {
        append(db, key, &format!("step {i}"), &format!("m-{i}"));
    }
}

/// A provider script in `dir` running `body` (it reads the payload from stdin first).
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\ncat > \"$0.payload\"\n{body}\n"))
        .expect("write the script");
    format!("sh {}", path.display())
}

#[test]
fn test_branch_and_tree_human_and_json() {
    let (_dir, db) = temp_db();
    session(&db, "agent:main:main", 12);

    let alt = ok_json(
        &db,
        &words("branch agent:main:main agent:main:alt --before m-5 --json"),
    );
    assert_eq!(alt["key"], "agent:main:alt");
    assert_eq!(alt["parent_session_key"], "agent:main:main");
    assert_eq!(alt["spawn_depth"], 1);
    assert_eq!(alt["forked_from_parent"], true);
    assert_eq!(alt["entry_count"], 4);
    assert_eq!(alt["fork_point"]["before_message_id"], "m-5");
    let main = ok_json(&db, &["show", "agent:main:main", "--json"]);
    assert_ne!(alt["session_id"], main["session"]["session_id"]);

    let text = ok(
        &db,
        &["branch", "agent:main:main", "agent:main:full", "--fork"],
    );
    assert!(
        text.contains("branched agent:main:full from agent:main:main: forked, 12 entries"),
        "{text}"
    );
    ok(
        &db,
        &["branch", "agent:main:alt", "agent:main:deep", "--fork"],
    );
    ok(&db, &["branch", "agent:main:main", "agent:main:empty"]);
    let over = ok_json(
        &db,
        &words("branch agent:main:main agent:main:budget --fork --max-tokens 10 --json"),
    );
    assert_eq!(over["forked_from_parent"], false);
    assert_eq!(over["entry_count"], 0);

    // The branch's writes stay its own.
    append(&db, "agent:main:alt", "another way", "alt-1");
    let shown = ok_json(&db, &["show", "agent:main:main", "--json"]);
    assert_eq!(shown["session"]["entry_count"], 12);

    // From any member, the whole family from its root.
    let tree = ok(&db, &["tree", "agent:main:deep"]);
    let expected = "\
agent:main:main (12 entries)
├─ agent:main:alt (forked before m-5, 5 entries)
│  └─ agent:main:deep (forked, 4 entries)  ◀
├─ agent:main:budget (no history, 0 entries)
├─ agent:main:empty (no history, 0 entries)
└─ agent:main:full (forked, 12 entries)
";
    assert_eq!(tree, expected);

    let json = ok_json(&db, &["tree", "agent:main:alt", "--json"]);
    assert_eq!(json["key"], "agent:main:main");
    assert_eq!(json["spawn_depth"], 0);
    let children = json["children"].as_array().expect("children");
    assert_eq!(children.len(), 4);
    assert_eq!(children[0]["key"], "agent:main:alt");
    assert_eq!(children[0]["children"][0]["key"], "agent:main:deep");
    assert_eq!(children[0]["children"][0]["spawn_depth"], 2);
    assert_eq!(children[3]["entry_count"], 12);
}

#[test]
fn test_branch_before_unknown_message_is_not_found_and_creates_nothing() {
    let (_dir, db) = temp_db();
    session(&db, "agent:main:main", 3);
    let out = spool(
        &db,
        &words("branch agent:main:main agent:main:alt --before no-such-message"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("error[not_found]: "), "{err}");
    assert!(err.contains("Transcript message not found"), "{err}");
    let out = spool(&db, &["show", "agent:main:alt"]);
    assert_eq!(out.status.code(), Some(1), "no child was created");

    let out = spool(&db, &["branch", "agent:main:missing", "agent:main:x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error[not_found]"));
    let out = spool(&db, &["tree", "agent:main:missing"]);
    assert_eq!(out.status.code(), Some(1));
    let out = spool(&db, &["branch", "agent:main:main"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn test_provider_fork_accepted_by_a_command_commits_the_child() {
    let (dir, db) = temp_db();
    session(&db, "agent:main:src", 2);
    ok(
        &db,
        &["update", "agent:main:src", "--meta", r#"cwd="/project""#],
    );
    ok(&db, &["turn", "start", "agent:main:src", "turn-1"]);
    append(&db, "agent:main:src", "question", "m-3");
    let turn = ok_json(
        &db,
        &[
            "turn",
            "settle",
            "agent:main:src",
            "turn-1",
            "--provider-turn-id",
            "pt-1",
            "--binding",
            r#"{"schema_version":1}"#,
            "--json",
        ],
    );
    assert_eq!(turn["phase"], "settled");
    assert_eq!(turn["boundary"]["entry_id"], 3);
    let turns = ok_json(&db, &["turns", "agent:main:src", "--json"]);
    assert_eq!(turns["latest"]["turn_id"], "turn-1");
    assert_eq!(turns["active"], serde_json::Value::Null);

    let accept = script(
        dir.path(),
        "accept.sh",
        r#"echo '{"disposition":"accepted","target_provider_session_id":"thread-child"}'"#,
    );
    let op = ok_json(
        &db,
        &[
            "fork",
            "run",
            "agent:main:src",
            "--target",
            "agent:main:child",
            "--request-id",
            "request-1",
            "--through-turn",
            "turn-1",
            "--provider-cmd",
            &accept,
            "--json",
        ],
    );
    assert_eq!(op["status"], "committed");
    assert_eq!(op["source_turn_id"], "turn-1");
    assert_eq!(op["target_provider_session_id"], "thread-child");
    assert_eq!(op["session"]["entry_count"], 3);
    assert_eq!(op["session"]["metadata"]["cwd"], "/project");
    assert_eq!(op["lineage"]["source_key"], "agent:main:src");
    // The command got the dispatch payload: the turn's provider binding included.
    let payload: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("accept.sh.payload")).expect("payload"),
    )
    .expect("payload JSON");
    assert_eq!(payload["operation_id"], op["operation_id"]);
    assert_eq!(payload["point"]["provider_turn_id"], "pt-1");
    assert_eq!(payload["point"]["provider_binding"]["schema_version"], 1);
    assert_eq!(payload["target_key"], "agent:main:child");

    let child = ok_json(&db, &["show", "agent:main:child", "--json"]);
    assert_eq!(child["entries"].as_array().map(Vec::len), Some(3));

    // The same request again: the same operation, the provider is not called again.
    std::fs::remove_file(dir.path().join("accept.sh.payload")).expect("rm");
    let again = ok_json(
        &db,
        &[
            "fork",
            "run",
            "agent:main:src",
            "--target",
            "agent:main:child",
            "--request-id",
            "request-1",
            "--through-turn",
            "turn-1",
            "--provider-cmd",
            &accept,
            "--json",
        ],
    );
    assert_eq!(again["operation_id"], op["operation_id"]);
    assert!(!dir.path().join("accept.sh.payload").exists());

    // Status never acknowledges; ack does, once.
    let id = op["operation_id"].as_str().expect("id");
    let status = ok_json(&db, &["fork", "status", id, "--json"]);
    assert_eq!(
        (&status["status"], &status["acknowledged"]),
        (&"committed".into(), &false.into())
    );
    let text = ok(&db, &["fork", "status", id]);
    assert!(
        text.contains(&format!("fork operation {id}: committed")),
        "{text}"
    );
    assert!(text.contains("acknowledged no"), "{text}");
    let acked = ok_json(&db, &["fork", "ack", id, "--json"]);
    assert_eq!(acked["acknowledged"], true);
    let text = ok(&db, &["fork", "ack", id]);
    assert!(text.contains("acknowledged yes"), "{text}");

    let out = spool(&db, &["fork", "status", "operation-missing"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[not_found]: fork operation not found"),
        "{}",
        stderr(&out)
    );
    let text = ok(&db, &["fork", "recover"]);
    assert!(text.contains("no fork operations to recover"), "{text}");
}

#[test]
fn test_provider_fork_rejected_and_unknown_outcomes() {
    let (dir, db) = temp_db();
    for key in [
        "agent:main:a",
        "agent:main:b",
        "agent:main:c",
        "agent:main:d",
    ] {
        session(&db, key, 2);
    }
    let reject = script(
        dir.path(),
        "reject.sh",
        r#"echo '{"disposition":"rejected","error":"attachments cannot be forked","reason":"attachment_unsupported"}'"#,
    );
    let run = |source: &str, target: &str, request: &str, provider: &[&str]| {
        let mut args = vec![
            "fork",
            "run",
            source,
            "--target",
            target,
            "--request-id",
            request,
            "--json",
        ];
        args.extend_from_slice(provider);
        ok_json(&db, &args)
    };

    let op = run(
        "agent:main:a",
        "agent:main:a2",
        "r-a",
        &["--provider-cmd", &reject],
    );
    assert_eq!(op["status"], "failed");
    assert_eq!(op["error"], "attachments cannot be forked");
    assert_eq!(op["error_reason"], "attachment_unsupported");
    assert_eq!(op["session"], serde_json::Value::Null);
    let out = spool(&db, &["show", "agent:main:a2"]);
    assert_eq!(out.status.code(), Some(1), "no child");

    // A command that fails: delivery unknown, never retried.
    let fails = script(dir.path(), "fails.sh", "echo oops >&2; exit 7");
    let op = run(
        "agent:main:b",
        "agent:main:b2",
        "r-b",
        &["--provider-cmd", &fails],
    );
    assert_eq!(op["status"], "unknown");
    let error = op["error"].as_str().expect("error text");
    assert!(error.contains("exited with status 7"), "{error}");
    // The operation holds the barrier: another request for the same point returns it
    // without calling the provider.
    let accept = script(
        dir.path(),
        "accept.sh",
        r#"echo '{"disposition":"accepted"}'"#,
    );
    let again = run(
        "agent:main:b",
        "agent:main:b3",
        "r-b2",
        &["--provider-cmd", &accept],
    );
    assert_eq!(again["operation_id"], op["operation_id"]);
    assert!(!dir.path().join("accept.sh.payload").exists());

    // Garbage on stdout, or a timeout: unknown too.
    let garbage = script(dir.path(), "garbage.sh", "echo 'sure, forked it'");
    let op = run(
        "agent:main:c",
        "agent:main:c2",
        "r-c",
        &["--provider-cmd", &garbage],
    );
    assert_eq!(op["status"], "unknown");
    assert!(
        op["error"]
            .as_str()
            .is_some_and(|e| e.contains("no disposition JSON")),
        "{op}"
    );
    let slow = script(dir.path(), "slow.sh", "sleep 5");
    let started = std::time::Instant::now();
    let op = run(
        "agent:main:d",
        "agent:main:d2",
        "r-d",
        &["--provider-cmd", &slow, "--provider-timeout", "300ms"],
    );
    assert_eq!(op["status"], "unknown");
    assert!(started.elapsed() < std::time::Duration::from_secs(4));

    // Without a command: --reject and --accept.
    let text = ok(
        &db,
        &words(
            "fork run agent:main:a --target agent:main:a3 --request-id r-a3 --reject no --reason policy",
        ),
    );
    assert!(text.contains(": failed"), "{text}");
    assert!(text.contains("error    no (policy)"), "{text}");
    let text = ok(
        &db,
        &words("fork run agent:main:a --target agent:main:a4 --request-id r-a4 --accept"),
    );
    assert!(text.contains(": committed"), "{text}");
    assert!(text.contains("child    2 entries"), "{text}");

    // Exactly one provider: usage errors otherwise.
    let out = spool(
        &db,
        &words("fork run agent:main:a --target agent:main:x --request-id r-x"),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let out = spool(
        &db,
        &words("fork run agent:main:a --target agent:main:x --request-id r-x --accept --reject no"),
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn test_turn_commands_and_their_errors() {
    let (_dir, db) = temp_db();
    session(&db, "agent:main:main", 1);
    let text = ok(&db, &["turns", "agent:main:main"]);
    assert!(text.contains("has no turns"), "{text}");
    let text = ok(&db, &["turn", "start", "agent:main:main", "t1"]);
    assert!(
        text.contains("started turn t1 #1 of agent:main:main (running)"),
        "{text}"
    );
    let out = spool(&db, &["turn", "start", "agent:main:main", "t2"]);
    assert_eq!(out.status.code(), Some(1), "one turn runs at a time");
    assert!(stderr(&out).starts_with("error["), "{}", stderr(&out));
    let text = ok(&db, &["turn", "interrupt", "agent:main:main", "t1"]);
    assert!(text.contains("(interrupted), through entry #1"), "{text}");
    let out = spool(&db, &["turn", "settle", "agent:main:main", "t1"]);
    assert_eq!(out.status.code(), Some(1), "not running any more");
    let out = spool(
        &db,
        &["turn", "start", "agent:main:main", "t3", "--binding", "{"],
    );
    assert_eq!(out.status.code(), Some(2), "bad JSON is a usage error");
}

/// The turn ids of a `turn list --json` page, in its order.
fn listed(page: &serde_json::Value) -> Vec<&str> {
    page["turns"]
        .as_array()
        .expect("a turns array")
        .iter()
        .map(|t| t["turn_id"].as_str().expect("a turn id"))
        .collect()
}

#[test]
fn test_turn_list_pages_newest_first_with_a_table_and_cursors() {
    let (_dir, db) = temp_db();
    const KEY: &str = "agent:main:main";
    session(&db, KEY, 1);
    let text = ok(&db, &["turn", "list", KEY]);
    assert!(text.contains("has no turns"), "{text}");
    ok(
        &db,
        &["turn", "start", KEY, "t1", "--provider-turn-id", "p-1"],
    );
    ok(&db, &["turn", "settle", KEY, "t1"]);
    ok(&db, &["turn", "start", KEY, "t2"]);
    ok(&db, &["turn", "interrupt", KEY, "t2"]);
    ok(&db, &["turn", "start", KEY, "t3"]);

    // The table: newest first, one row per turn with its seq, phase, boundary and
    // provider turn id.
    let text = ok(&db, &["turn", "list", KEY]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three turns: {text}");
    for column in ["SEQ", "TURN", "PHASE", "BOUNDARY", "PROVIDER TURN"] {
        assert!(lines[0].contains(column), "{text}");
    }
    let cells = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        cells(lines[1])[..5],
        ["3", "t3", "running", "-", "-"],
        "{text}"
    );
    assert_eq!(
        cells(lines[2])[..5],
        ["2", "t2", "interrupted", "#1", "-"],
        "{text}"
    );
    assert_eq!(
        cells(lines[3])[..5],
        ["1", "t1", "settled", "#1", "p-1"],
        "{text}"
    );
    assert!(!text.contains("(more:"), "one page holds them all: {text}");

    // Pages of two, both orders, continued by the cursor.
    let first = ok_json(&db, &["turn", "list", KEY, "--limit", "2", "--json"]);
    assert_eq!(listed(&first), ["t3", "t2"]);
    let cursor = first["next_cursor"].as_str().expect("a next cursor");
    let rest = ok_json(
        &db,
        &[
            "turn", "list", KEY, "--limit", "2", "--cursor", cursor, "--json",
        ],
    );
    assert_eq!(listed(&rest), ["t1"]);
    assert!(rest["next_cursor"].is_null(), "{rest}");
    let oldest = ok_json(
        &db,
        &words(&format!("turn list {KEY} --limit 2 --oldest-first --json")),
    );
    assert_eq!(listed(&oldest), ["t1", "t2"]);

    // The human page says how to read on, and that command does.
    let text = ok(
        &db,
        &["turn", "list", KEY, "--limit", "2", "--oldest-first"],
    );
    let hint = text
        .lines()
        .find_map(|l| l.strip_prefix("(more: spool "))
        .and_then(|l| l.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no hint to read on: {text}"));
    let args: Vec<&str> = hint.split_whitespace().collect();
    assert!(args.contains(&"--oldest-first"), "{hint}");
    let text = ok(&db, &args);
    assert!(
        text.lines().nth(1).is_some_and(|l| l.contains("t3")),
        "{text}"
    );
    assert!(
        !text.contains("t1"),
        "the second page starts after t2: {text}"
    );

    fails(
        &db,
        &["turn", "list", KEY, "--cursor", "zz"],
        "invalid_argument",
    );
    fails(&db, &["turn", "list", "agent:main:nope"], "not_found");
    usage_error(&db, &["turn", "list", KEY, "--limit", "0"]);
}

#[test]
fn test_a_crash_while_dispatching_is_recovered_as_unknown_and_prepared_ones_continue() {
    let (_dir, db) = temp_db();
    session(&db, "agent:main:src", 2);
    session(&db, "agent:main:other", 1);
    // The provider kills `spool` itself mid-dispatch: the operation stays `dispatching`.
    let out = spool(
        &db,
        &[
            "fork",
            "run",
            "agent:main:src",
            "--target",
            "agent:main:child",
            "--request-id",
            "r1",
            "--provider-cmd",
            "kill -9 $PPID",
        ],
    );
    assert_ne!(out.status.code(), Some(0));
    // A fork prepared by another host that crashed before dispatching it.
    let prepared = {
        let mut api = spool_host::Spool::open(&db).expect("open");
        api.fork(
            "agent:main:other",
            spool::provider_fork::ForkRequest {
                request_id: "r2".into(),
                target_key: "agent:main:other-child".into(),
                target_session_id: "other-child-1".into(),
                through_turn_id: None,
                cwd: None,
            },
        )
        .expect("fork")
    };
    let id = prepared.operation.operation_id.as_str();

    let report = ok_json(&db, &["fork", "recover", "--json"]);
    assert_eq!(
        report["marked_unknown"][0]["target_key"],
        "agent:main:child"
    );
    assert_eq!(report["marked_unknown"][0]["status"], "unknown");
    assert_eq!(report["to_dispatch"][0]["operation_id"], id);
    let text = ok(&db, &["fork", "recover"]);
    assert!(
        text.contains("1 operation prepared, still to dispatch"),
        "{text}"
    );
    assert!(text.contains("spool fork continue"), "{text}");

    let done = ok_json(&db, &["fork", "continue", id, "--accept", "--json"]);
    assert_eq!(done["status"], "committed");
    assert_eq!(done["session"]["key"], "agent:main:other-child");
    // Continuing a finished one shows it; an unknown one is never retried.
    let again = ok_json(&db, &["fork", "continue", id, "--accept", "--json"]);
    assert_eq!(again["status"], "committed");
    let unknown = report["marked_unknown"][0]["operation_id"]
        .as_str()
        .expect("id");
    let still = ok_json(&db, &["fork", "continue", unknown, "--accept", "--json"]);
    assert_eq!(still["status"], "unknown");
    let out = spool(&db, &["fork", "continue", id]);
    assert_eq!(out.status.code(), Some(2), "a provider is required");
}

#[test]
fn test_fork_run_by_another_request_returns_the_held_operation_untouched() {
    let (dir, db) = temp_db();
    session(&db, "agent:main:src", 1);
    ok(&db, &["turn", "start", "agent:main:src", "t1"]);
    append(&db, "agent:main:src", "question", "m-2");
    ok(&db, &["turn", "settle", "agent:main:src", "t1"]);
    // Caller A prepares through t1 and has not dispatched yet.
    let mut api = spool_host::Spool::open(&db).expect("open");
    let a = api
        .fork(
            "agent:main:src",
            spool::provider_fork::ForkRequest {
                request_id: "r1".into(),
                target_key: "agent:main:a".into(),
                target_session_id: "a-1".into(),
                through_turn_id: Some("t1".into()),
                cwd: None,
            },
        )
        .expect("fork");
    let id = a.operation.operation_id.clone();
    // Caller B forks the same turn with its own provider.
    let accept = script(
        dir.path(),
        "accept.sh",
        r#"echo '{"disposition":"accepted"}'"#,
    );
    let b = ok_json(
        &db,
        &[
            "fork",
            "run",
            "agent:main:src",
            "--target",
            "agent:main:b",
            "--request-id",
            "r2",
            "--through-turn",
            "t1",
            "--provider-cmd",
            &accept,
            "--json",
        ],
    );
    assert_eq!(b["operation_id"], id.as_str());
    assert_eq!(b["origin"], "barrier_held");
    assert_eq!(b["state"], "prepared", "{b}");
    assert!(
        !dir.path().join("accept.sh.payload").exists(),
        "B's provider was called with A's payload"
    );
    let text = ok(
        &db,
        &words(
            "fork run agent:main:src --target agent:main:b --request-id r2 --through-turn t1 --accept",
        ),
    );
    assert!(
        text.contains("another request holds this fork point"),
        "{text}"
    );
    // A's own dispatch still works.
    let payload = api.begin_fork_dispatch(&id).expect("A dispatches");
    assert_eq!(payload.target_key, "agent:main:a");
}

#[test]
fn test_fork_commit_materializes_the_snapshot_taken_at_prepare() {
    let (_dir, db) = temp_db();
    session(&db, "agent:main:src", 5);
    let mut api = spool_host::Spool::open(&db).expect("open");
    let op = api
        .fork(
            "agent:main:src",
            spool::provider_fork::ForkRequest {
                request_id: "r1".into(),
                target_key: "agent:main:child".into(),
                target_session_id: "child-1".into(),
                through_turn_id: None,
                cwd: None,
            },
        )
        .expect("fork");
    let id = op.operation.operation_id.clone();
    drop(api);
    ok(&db, &["truncate", "agent:main:src", "--keep", "2"]);
    let done = ok_json(&db, &["fork", "continue", &id, "--accept", "--json"]);
    assert_eq!(done["status"], "committed", "{done}");
    assert_eq!(done["session"]["entry_count"], 5);
    let child = ok_json(&db, &["show", "agent:main:child", "--json"]);
    let contents: Vec<&str> = child["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["content"].as_str().expect("content"))
        .collect();
    assert_eq!(contents, ["step 1", "step 2", "step 3", "step 4", "step 5"]);
    let source = ok_json(&db, &["show", "agent:main:src", "--json"]);
    assert_eq!(source["entries"].as_array().map(Vec::len), Some(2));
}

#[test]
fn test_an_invalid_provider_answer_is_recorded_as_unknown() {
    let (dir, db) = temp_db();
    let answers = [
        r#"{"disposition":"rejected","error":"attachments cannot be forked","reason":""}"#,
        r#"{"disposition":"accepted","target_provider_session_id":""}"#,
    ];
    for (i, answer) in answers.into_iter().enumerate() {
        let key = format!("agent:main:s{i}");
        session(&db, &key, 1);
        let provider = script(dir.path(), &format!("p{i}.sh"), &format!("echo '{answer}'"));
        let op = ok_json(
            &db,
            &[
                "fork",
                "run",
                &key,
                "--target",
                &format!("agent:main:c{i}"),
                "--request-id",
                &format!("r{i}"),
                "--provider-cmd",
                &provider,
                "--json",
            ],
        );
        assert_eq!(op["status"], "unknown", "{answer}: {op}");
        assert_eq!(op["error_reason"], "invalid_disposition");
        let id = op["operation_id"].as_str().expect("id");
        let status = ok_json(&db, &["fork", "status", id, "--json"]);
        assert_eq!(status["state"], "unknown");
    }
    let text = ok(&db, &["fork", "recover"]);
    assert!(text.contains("no fork operations to recover"), "{text}");
}
