//! Workspace isolation of the `spool` binary: after a session family is written in
//! workspace `a` (transcript, compaction, states, branches, turns, a provider fork, run
//! records, a role session, a thread binding, a reset archive), every read command in
//! workspace `b` sees none of it.

use std::path::Path;

use crate::common::{ok, ok_json, spool, stderr, stdout, temp_db, words};
use serde_json::Value;

const KEY: &str = "agent:main:main";
const RESET: &str = "agent:main:reset";
/// Text only workspace `a` holds.
const SECRET: &str = "secret-of-workspace-a";

fn in_a(db: &Path, args: &[&str]) -> String {
    let mut all = vec!["--workspace", "a"];
    all.extend_from_slice(args);
    ok(db, &all)
}

fn in_a_json(db: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--workspace", "a"];
    all.extend_from_slice(args);
    ok_json(db, &all)
}

fn append(db: &Path, key: &str, message_id: &str) {
    in_a(
        db,
        &[
            "append",
            key,
            "--role",
            "user",
            "--content",
            &format!("{SECRET} {message_id} {}", "words ".repeat(40)),
            "--message-id",
            message_id,
            "--token-count",
            "60",
        ],
    );
}

/// Writes a whole session family in workspace `a`; returns the strings that identify
/// it (session ids, operation id, tokens, the secret text).
fn write_workspace_a(dir: &Path, db: &Path) -> (Vec<String>, String, String) {
    let created = in_a_json(db, &["create", KEY, "--json"]);
    for i in 1..=8 {
        append(db, KEY, &format!("m-{i}"));
    }
    in_a(
        db,
        &[
            "states",
            "save",
            KEY,
            "--provider",
            "portable",
            "--kind",
            "structured_summary_v1",
            "--payload",
            &format!("\"{SECRET} state\""),
        ],
    );
    let compaction = in_a_json(db, &["compact", KEY, "--window", "300", "--json"]);
    let compaction_id = compaction["compaction_id"]
        .as_str()
        .unwrap_or_else(|| panic!("compacted: {compaction}"))
        .to_owned();
    in_a(db, &["branch", KEY, "agent:main:alt", "--fork"]);
    in_a(db, &["turn", "start", KEY, "turn-1"]);
    append(db, KEY, "m-9");
    in_a(
        db,
        &words(&format!("turn settle {KEY} turn-1 --provider-turn-id pt-1")),
    );
    let accept = dir.join("accept.sh");
    std::fs::write(
        &accept,
        "#!/bin/sh\ncat > /dev/null\necho '{\"disposition\":\"accepted\",\"target_provider_session_id\":\"thread-child-a\"}'\n",
    )
    .expect("script");
    let accept = format!("sh {}", accept.display());
    let fork = in_a_json(
        db,
        &[
            "fork",
            "run",
            KEY,
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
    assert_eq!(fork["status"], "committed", "{fork}");
    let operation_id = fork["operation_id"].as_str().expect("id").to_owned();
    in_a(db, &["resume", "role", "create", "role-a"]);
    in_a(
        db,
        &words(
            "resume record --agent codex --task t1 --status done --token thread-token-a --project p1 --role role-a",
        ),
    );
    let turn = dir.join("turn.json");
    std::fs::write(
        &turn,
        format!(r#"[{{"role": "user", "content": "{SECRET} turn"}}]"#),
    )
    .expect("turn file");
    in_a(
        db,
        &[
            "thread",
            "commit-turn",
            KEY,
            "--agent",
            "codex",
            "--thread",
            "thread-binding-a",
            "--entries",
            turn.to_str().expect("utf-8"),
        ],
    );
    in_a(db, &["create", RESET]);
    append(db, RESET, "r-1");
    let reset = in_a_json(db, &["reset", RESET, "--json"]);
    assert_eq!(reset["archive"]["written"], true, "{reset}");

    let mut markers = vec![
        SECRET.to_owned(),
        operation_id.clone(),
        "thread-token-a".to_owned(),
        "thread-binding-a".to_owned(),
        "thread-child-a".to_owned(),
        "pt-1".to_owned(),
        created["session_id"].as_str().expect("id").to_owned(),
    ];
    let list = in_a_json(db, &["list", "--json"]);
    for session in list["sessions"].as_array().expect("sessions") {
        markers.push(session["session_id"].as_str().expect("id").to_owned());
    }
    (markers, operation_id, compaction_id)
}

#[test]
fn test_every_read_command_in_another_workspace_sees_nothing() {
    let (dir, db) = temp_db();
    let (markers, operation_id, compaction_id) = write_workspace_a(dir.path(), &db);
    let reads: Vec<Vec<&str>> = vec![
        vec!["list", "--json"],
        vec!["list", "--agent", "main", "--json"],
        vec!["show", KEY, "--json"],
        vec!["show", "agent:main:alt", "--json"],
        vec!["show", "agent:main:child", "--json"],
        vec!["entry", KEY, "m-9", "--json"],
        vec!["entry", "agent:main:alt", "m-1", "--json"],
        vec!["states", "list", KEY, "--all", "--json"],
        vec!["canonical", KEY, "--json"],
        vec!["summaries", KEY, "--json"],
        vec!["preimage", KEY, &compaction_id, "--json"],
        vec!["tree", "agent:main:alt", "--json"],
        vec!["turns", KEY, "--json"],
        vec!["turn", "list", KEY, "--json"],
        vec!["fork", "status", &operation_id, "--json"],
        vec!["runs", "list", "--json"],
        vec![
            "resume",
            "select",
            "--agent",
            "codex",
            "--project",
            "p1",
            "--json",
        ],
        vec![
            "resume",
            "select",
            "--agent",
            "codex",
            "--project",
            "p1",
            "--role",
            "role-a",
            "--json",
        ],
        vec!["resume", "role", "get", "role-a", "--json"],
        vec!["thread", "plan", KEY, "--agent", "codex", "--json"],
        vec!["export", KEY],
        vec!["export", "agent:main:alt"],
        vec!["export", RESET, "--archive"],
    ];
    for args in &reads {
        // In `a` the command shows something of `a` (else this walk would prove nothing)…
        let mut in_a_args = vec!["--workspace", "a"];
        in_a_args.extend_from_slice(args);
        let out_a = spool(&db, &in_a_args);
        let text_a = format!("{}{}", stdout(&out_a), stderr(&out_a));
        assert!(
            markers.iter().any(|m| text_a.contains(m.as_str())),
            "spool {args:?} in workspace a shows nothing of a: {text_a}"
        );
        // …and in `b` nothing: a refusal (`not_found`) or an empty answer.
        let mut in_b = vec!["--workspace", "b"];
        in_b.extend_from_slice(args);
        let out = spool(&db, &in_b);
        // (Only stdout: a refusal may quote the arguments, and they hold ids of `a`.)
        let text = stdout(&out);
        for marker in &markers {
            assert!(
                !text.contains(marker.as_str()),
                "spool {args:?} in workspace b shows {marker} of workspace a: {text}"
            );
        }
        match out.status.code() {
            Some(0) => {}
            Some(1) => assert!(
                stderr(&out).starts_with("error[not_found]: "),
                "spool {args:?} in workspace b: {text}"
            ),
            other => panic!("spool {args:?} in workspace b exited {other:?}: {text}"),
        }
    }
    // Commands whose answer names nothing of `a`: in `b` the session is simply missing.
    for args in [
        vec!["count", KEY, "--json"],
        vec!["count", "agent:main:child"],
    ] {
        let mut in_b = vec!["--workspace", "b"];
        in_b.extend_from_slice(&args);
        crate::common::fails(&db, &in_b, "not_found");
    }
    let list = ok_json(&db, &["--workspace", "b", "list", "--json"]);
    assert_eq!(list["sessions"], Value::Array(Vec::new()), "{list}");
    let runs = ok_json(&db, &["--workspace", "b", "runs", "list", "--json"]);
    assert_eq!(runs["runs"], Value::Array(Vec::new()), "{runs}");
}

#[test]
fn test_the_same_reset_in_two_workspaces_keeps_two_archives() {
    // Same key, same session id, same clock: the archives must not overwrite each other.
    let (dir, db) = temp_db();
    let mut spools: Vec<spool_host::Spool> = ["a", "b"]
        .iter()
        .map(|w| {
            spool_host::Spool::builder()
                .db_path(&db)
                .workspace(*w)
                .clock(|| 1_000)
                .ids({
                    let mut n = 0;
                    move || {
                        n += 1;
                        format!("s{n}")
                    }
                })
                .open()
                .expect("open")
        })
        .collect();
    for (spool, text) in spools.iter_mut().zip(["only in a", "only in b"]) {
        spool.create_session(KEY).expect("create");
        spool
            .append_entry(KEY, spool::AppendRequest::new(spool::Role::User, text))
            .expect("append");
        let reset = spool.reset(KEY).expect("reset");
        assert!(reset.archive.expect("archived").written);
    }
    for (workspace, text, other) in [
        ("a", "only in a", "only in b"),
        ("b", "only in b", "only in a"),
    ] {
        let out = ok(&db, &["--workspace", workspace, "export", KEY, "--archive"]);
        assert!(out.contains(text), "{workspace}: {out}");
        assert!(!out.contains(other), "{workspace}: {out}");
    }
    drop(dir);
}
