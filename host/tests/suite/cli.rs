//! The `spool` binary: round trips, JSON shapes, error codes and exit codes.

use std::process::Command;

use crate::common::{
    cache_dir, fails, ok, ok_json, spool, spool_with, stderr, stdout, temp_db, usage_error, words,
};

use serde_json::Value;

#[test]
fn test_create_append_show_list_round_trip() {
    let (_dir, db) = temp_db();
    let session = ok_json(&db, &["create", "agent:main:main", "--json"]);
    assert_eq!(session["key"], "agent:main:main");
    assert_eq!(session["agent_id"], "main");
    assert_eq!(session["status"], "running");
    assert_eq!(session["entry_count"], 0);

    let entry = ok_json(
        &db,
        &[
            "append",
            "agent:main:main",
            "--role",
            "user",
            "--content",
            "fix the test",
            "--token-count",
            "5",
            "--json",
        ],
    );
    assert_eq!(entry["id"], 1);
    assert_eq!(entry["role"], "user");
    assert_eq!(entry["token_count"], 5);
    let text = ok(
        &db,
        &[
            "append",
            "agent:main:main",
            "--role",
            "assistant",
            "--content",
            "running it",
            "--tool-calls",
            r#"[{"id":"c1","function":{"name":"run_tests"}}]"#,
            "--turn-id",
            "t1",
            "--message-id",
            "msg-2",
            "--token-count",
            "7",
        ],
    );
    assert!(text.contains("appended #2 (msg-2)"), "{text}");
    ok(
        &db,
        &[
            "append",
            "agent:main:main",
            "--role",
            "tool",
            "--content",
            "1 failed",
            "--tool-call-id",
            "c1",
        ],
    );

    let shown = ok_json(&db, &["show", "agent:main:main", "--json"]);
    assert_eq!(shown["session"]["entry_count"], 3);
    assert_eq!(shown["session"]["total_tokens"], 12);
    let entries = shown["entries"].as_array().expect("entries array");
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[1]["tool_calls"][0]["function"]["name"], "run_tests");
    assert_eq!(entries[1]["turn_id"], "t1");
    assert_eq!(entries[2]["tool_call_id"], "c1");

    let human = ok(&db, &["show", "agent:main:main"]);
    assert!(
        human.contains("session agent:main:main (running)"),
        "{human}"
    );
    assert!(
        human.contains("fix the test") && human.contains("1 failed"),
        "{human}"
    );

    ok(&db, &["create", "agent:other:main"]);
    let list = ok_json(&db, &["list", "--json"]);
    let keys: Vec<&str> = list["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["key"].as_str().expect("key"))
        .collect();
    assert_eq!(keys, ["agent:other:main", "agent:main:main"]);
    let table = ok(&db, &["list"]);
    let header = table.lines().next().expect("header");
    for column in ["KEY", "STATUS", "ENTRIES", "TOKENS", "UPDATED"] {
        assert!(header.contains(column), "{table}");
    }
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("agent:main:main") && l.contains("running"))
    );
    let first_page = ok_json(&db, &["list", "--limit", "1", "--json"]);
    assert_eq!(
        first_page["sessions"].as_array().expect("sessions").len(),
        1
    );
    assert!(first_page["next_cursor"].is_string());
}

#[test]
fn test_duplicate_create_is_conflict_exit_1() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", "agent:a:main"]);
    let out = spool(&db, &["create", "agent:a:main"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error[conflict]: "),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn test_show_unknown_key_is_not_found_exit_1() {
    let (_dir, db) = temp_db();
    let out = spool(&db, &["show", "agent:nobody:main"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error[not_found]: ") && err.contains("agent:nobody:main"),
        "{err}"
    );
    let out = spool(
        &db,
        &words("append agent:nobody:main --role user --content x"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error[not_found]: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn test_usage_errors_exit_2() {
    let (_dir, db) = temp_db();
    let cases: &[&[&str]] = &[
        &words("append agent:a:main --role robot --content x"),
        &["append", "agent:a:main", "--content", "x"],
        &["append", "agent:a:main", "--role", "user"],
        &[
            "append",
            "agent:a:main",
            "--role",
            "user",
            "--content",
            "x",
            "--tool-calls",
            "{not json",
        ],
        &["create"],
        &["--durability", "sometimes", "create", "agent:a:main"],
        &["list", "--limit", "0"],
        &["frobnicate"],
        &[],
    ];
    for args in cases {
        let out = spool(&db, args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "spool {args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!db.exists(), "a usage error must not touch the database");
    let help = ok(&db, &["--help"]);
    for command in ["create", "append", "show", "list", "demo", "component"] {
        assert!(help.contains(command), "{help}");
    }
}

#[test]
fn test_durability_normal_by_flag_or_environment_writes_like_full() {
    let (_dir, db) = temp_db();
    if crate::common::on_postgres() {
        // SQLite's setting: refused on a server, whose own setting decides.
        let err = fails(
            &db,
            &["--durability", "normal", "create", "agent:a:main"],
            "invalid_argument",
        );
        assert!(err.contains("synchronous_commit"), "{err}");
        return;
    }
    ok(&db, &["--durability", "normal", "create", "agent:a:main"]);
    ok(
        &db,
        &words("--durability normal append agent:a:main --role user --content one"),
    );
    let normal = std::ffi::OsString::from("normal");
    let out = spool_with(
        &db,
        &words("append agent:a:main --role user --content two"),
        &[("SPOOL_DURABILITY", std::path::Path::new(&normal))],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = ok_json(
        &db,
        &["--durability", "full", "show", "agent:a:main", "--json"],
    );
    assert_eq!(shown["session"]["entry_count"], 2, "{shown}");
}

#[test]
fn test_invalid_argument_from_the_component_exits_1() {
    let (_dir, db) = temp_db();
    let out = spool(&db, &["create", &"k".repeat(300)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error[invalid_argument]: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn test_spool_db_and_workspace_env_are_respected() {
    let (dir, _) = temp_db();
    let db = dir.path().join("env.db");
    let run = |workspace: Option<&str>, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_spool"));
        cmd.args(args)
            .env("SPOOL_DB", &db)
            .env("SPOOL_CACHE_DIR", cache_dir())
            .env_remove("SPOOL_WORKSPACE")
            .current_dir(dir.path());
        if let Some(w) = workspace {
            cmd.env("SPOOL_WORKSPACE", w);
        }
        cmd.output().expect("run spool")
    };
    let out = run(Some("team"), &["create", "agent:env:main"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(db.exists(), "SPOOL_DB names the database");
    assert!(
        !dir.path().join("spool.db").exists(),
        "the default ./spool.db is not used"
    );
    let in_team = run(Some("team"), &["show", "agent:env:main"]);
    assert_eq!(in_team.status.code(), Some(0), "{}", stderr(&in_team));
    let in_default = run(None, &["show", "agent:env:main"]);
    assert_eq!(in_default.status.code(), Some(1), "workspaces are isolated");
    // The flag overrides the environment.
    let flagged = run(
        Some("team"),
        &["--workspace", "default", "show", "agent:env:main"],
    );
    assert_eq!(flagged.status.code(), Some(1));
}

#[test]
fn test_component_subcommand_writes_the_embedded_wasm() {
    let (dir, db) = temp_db();
    let out = spool(&db, &["component"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, spool_host::COMPONENT);
    let path = dir.path().join("spool.wasm");
    ok(&db, &["component", path.to_str().expect("utf-8 path")]);
    assert_eq!(
        std::fs::read(&path).expect("written"),
        spool_host::COMPONENT
    );
    assert_eq!(&spool_host::COMPONENT[..4], b"\0asm");
}

#[test]
fn test_append_content_from_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let (_dir, db) = temp_db();
    ok(&db, &["create", "agent:a:main"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_spool"))
        .arg("--db")
        .arg(&db)
        .args([
            "append",
            "agent:a:main",
            "--role",
            "tool",
            "--content",
            "-",
            "--json",
        ])
        .env("SPOOL_CACHE_DIR", cache_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let text = "line one\nline two\n";
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let entry: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(entry["content"], text);
}

/// Runs `spool --db DB ARGS…` with `input` on stdin.
fn spool_stdin(db: &std::path::Path, args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_spool"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("SPOOL_CACHE_DIR", cache_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

#[test]
fn test_errors_quote_a_short_prefix_of_a_huge_input() {
    let (_dir, db) = temp_db();
    let bounded = |out: &std::process::Output, what: &str| {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.len() < 8 * 1024,
            "{what}: a {} byte error message",
            err.len()
        );
        assert!(
            err.contains("xxxxxxxx"),
            "{what} still names the input: {err}"
        );
    };
    // An unknown op of a megabyte on stdin, and of 100 KB as the argument.
    let op = "x".repeat(1 << 20);
    let call = serde_json::json!({ "op": op }).to_string();
    let out = spool_stdin(&db, &["call", "-"], call.as_bytes());
    bounded(&out, "call on stdin");
    let cut = format!("({} more bytes)", (1 << 20) - 64);
    assert!(
        stderr(&out).contains(&cut),
        "the size cut: {}",
        stderr(&out)
    );
    let call = serde_json::json!({ "op": &op[..100_000] }).to_string();
    bounded(&spool(&db, &["call", &call]), "call as an argument");
    // Arguments clap refuses: a bad value, an unknown subcommand.
    let arg = "x".repeat(60_000);
    bounded(&spool(&db, &["list", "--limit", &arg]), "a bad --limit");
    bounded(&spool(&db, &[&arg]), "an unknown subcommand");
    bounded(&spool(&db, &["list", &arg]), "an unexpected argument");
    // Short errors are clap's own, unchanged.
    let out = spool(&db, &["list", "--limit", "many"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'many'"), "{}", stderr(&out));
}

#[test]
fn test_append_several_contents_and_jsonl_write_one_commit_each() {
    let (dir, db) = temp_db();
    ok(&db, &["create", "agent:a:main"]);
    let text = ok(
        &db,
        &words("append agent:a:main --role user --turn-id t1 --content first --content second"),
    );
    assert!(
        text.contains("appended #1–#2 (2 entries, one commit)"),
        "{text}"
    );
    let jsonl = dir.path().join("turn.jsonl");
    std::fs::write(
        &jsonl,
        concat!(
            r#"{"role":"assistant","content":"running","tool_calls":[{"id":"c1","function":{"name":"bash"}}]}"#,
            "\n\n",
            r#"{"role":"tool","content":"ok","tool_call_id":"c1","message_id":"r1","token_count":3}"#,
            "\n"
        ),
    )
    .expect("write jsonl");
    let path = jsonl.to_str().expect("utf-8 path");
    let entries = ok_json(&db, &["append", "agent:a:main", "--jsonl", path, "--json"]);
    let ids: Vec<&Value> = entries
        .as_array()
        .expect("an array")
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert_eq!(ids, [3, 4]);
    assert_eq!(entries[1]["tool_call_id"], "c1");
    let shown = ok_json(&db, &["show", "agent:a:main", "--json"]);
    let contents: Vec<&str> = shown["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(contents, ["first", "second", "running", "ok"]);
    assert_eq!(shown["entries"][0]["turn_id"], "t1");
    assert_eq!(shown["entries"][1]["turn_id"], "t1");
    assert_eq!(shown["session"]["total_tokens"], 3);

    // The same file again: `r1` is taken, so none of its lines is written.
    let message = fails(
        &db,
        &["append", "agent:a:main", "--jsonl", path],
        "conflict",
    );
    assert!(message.contains("r1"), "{message}");
    // A bad line names its number; nothing is written.
    std::fs::write(
        &jsonl,
        "{\"role\":\"user\",\"content\":\"x\"}\n{\"role\":\"robot\"}\n",
    )
    .expect("write jsonl");
    let message = fails(
        &db,
        &["append", "agent:a:main", "--jsonl", path],
        "invalid_argument",
    );
    assert!(message.contains("line 2"), "{message}");
    // Options of one entry with several contents are refused, not applied to each.
    let message = fails(
        &db,
        &words("append agent:a:main --role tool --tool-call-id c9 --content a --content b"),
        "invalid_argument",
    );
    assert!(message.contains("--jsonl"), "{message}");
    usage_error(
        &db,
        &["append", "agent:a:main", "--jsonl", path, "--content", "x"],
    );
    let session = ok_json(&db, &["show", "agent:a:main", "--json"]);
    assert_eq!(session["session"]["entry_count"], 4);
}

/// Appends one entry of `role` with `content` to `key` (created when missing).
fn say(db: &std::path::Path, key: &str, role: &str, content: &str) {
    let out = spool(db, &["create", key]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    ok(db, &["append", key, "--role", role, "--content", content]);
}

#[test]
fn test_search_finds_hits_across_sessions_with_filters_and_pages() {
    let (_dir, db) = temp_db();
    say(
        &db,
        "agent:main:main",
        "user",
        "fix the failing parser test",
    );
    say(
        &db,
        "agent:main:main",
        "tool",
        "error: parser panicked at line 3",
    );
    say(&db, "agent:other:main", "user", "the parser is fine here");
    say(&db, "agent:main:side", "assistant", "nothing to see");

    let page = ok_json(&db, &["search", "parser", "--json"]);
    let hits = page["hits"].as_array().expect("hits");
    assert_eq!(hits.len(), 3, "{page}");
    let keys: Vec<&str> = hits
        .iter()
        .filter_map(|h| h["session_key"].as_str())
        .collect();
    assert!(keys.contains(&"agent:other:main") && keys.contains(&"agent:main:main"));
    for hit in hits {
        let snippet = &hit["snippet"];
        let text = snippet["text"].as_str().expect("snippet text");
        let [start, end] = [0, 1].map(|i| snippet["highlights"][0][i].as_u64().expect("range"));
        assert_eq!(&text[start as usize..end as usize], "parser", "{hit}");
        assert!(hit["entry_id"].as_u64().is_some() && hit["created_at"].as_u64().is_some());
    }
    assert!(page["next_cursor"].is_null());

    // Each flag is a filter.
    let only = |args: &[&str]| {
        let mut all = vec!["search", "parser", "--json"];
        all.extend_from_slice(args);
        ok_json(&db, &all)["hits"].as_array().expect("hits").clone()
    };
    let by_agent = only(&["--agent", "other"]);
    assert_eq!(by_agent.len(), 1);
    assert_eq!(by_agent[0]["session_key"], "agent:other:main");
    let by_role = only(&["--role", "tool"]);
    assert_eq!(by_role.len(), 1);
    assert_eq!(by_role[0]["role"], "tool");
    let by_session = only(&["--session", "agent:main:main"]);
    assert_eq!(by_session.len(), 2);
    assert_eq!(only(&["--session", "agent:main:*"]).len(), 2);
    assert_eq!(only(&["--since", "1h"]).len(), 3);
    assert_eq!(only(&["--since", "4102444800000"]).len(), 0, "after 2100");
    let phrase = ok_json(&db, &["search", "\"parser panicked\"", "--json"]);
    assert_eq!(phrase["hits"].as_array().map(Vec::len), Some(1));
    let prefix = ok_json(&db, &["search", "pars* fail*", "--json"]);
    assert_eq!(prefix["hits"].as_array().map(Vec::len), Some(1));

    // Paging: one hit a page, each hit once, the last page without a cursor.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let mut args = vec!["search", "parser", "--limit", "1", "--json"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = ok_json(&db, &args);
        for hit in page["hits"].as_array().expect("hits") {
            seen.push((hit["session_key"].clone(), hit["entry_id"].clone()));
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let whole: Vec<_> = hits
        .iter()
        .map(|h| (h["session_key"].clone(), h["entry_id"].clone()))
        .collect();
    assert_eq!(
        seen, whole,
        "pages return the hits of one search, in order, once"
    );
}

#[test]
fn test_search_table_bolds_hits_only_on_a_terminal() {
    let (_dir, db) = temp_db();
    say(
        &db,
        "agent:main:main",
        "user",
        "fix the failing\nparser test",
    );
    let table = ok(&db, &["search", "parser"]);
    let mut lines = table.lines();
    let header = lines.next().expect("a header");
    for column in ["SESSION", "ENTRY", "ROLE", "TIME", "SNIPPET"] {
        assert!(header.contains(column), "{table}");
    }
    let row = lines.next().expect("a row");
    assert!(row.starts_with("agent:main:main"), "{table}");
    assert!(row.contains(" user ") && row.contains(" UTC "), "{table}");
    assert!(
        row.contains("fix the failing parser test"),
        "one line: {table}"
    );
    assert!(
        !table.contains('\x1b'),
        "no escape codes into a pipe: {table:?}"
    );

    let none = ok(&db, &["search", "absent"]);
    assert!(none.contains("no hits"), "{none}");

    // On a terminal (script(1) gives the binary a pseudo-terminal) the match is bold.
    if Command::new("script").arg("--version").output().is_ok() {
        let line = format!(
            "{} --db {} search parser",
            env!("CARGO_BIN_EXE_spool"),
            db.display()
        );
        let out = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env("SPOOL_CACHE_DIR", cache_dir())
            .env_remove("NO_COLOR")
            .output()
            .expect("run script");
        let text = stdout(&out);
        assert!(text.contains("\x1b[1mparser\x1b[0m"), "{text:?}");
    }
}

#[test]
fn test_search_errors_are_typed() {
    let (_dir, db) = temp_db();
    say(&db, "agent:main:main", "user", "hello");
    // A bad query, cursor or filter value is the component's invalid_argument: exit 1.
    let err = fails(&db, &["search", "\"open quote"], "invalid_argument");
    assert!(err.contains("query"), "{err}");
    fails(&db, &["search", "a*"], "invalid_argument");
    fails(
        &db,
        &["search", "hello role:user", "--role", "user"],
        "invalid_argument",
    );
    let err = fails(
        &db,
        &["search", "hello", "--cursor", "00ff"],
        "invalid_argument",
    );
    assert!(err.contains("cursor"), "{err}");
    fails(
        &db,
        &["search", "hello", "--agent", "two words"],
        "invalid_argument",
    );
    // A cursor of another query is refused.
    say(&db, "agent:main:main", "user", "hello again");
    let page = ok_json(&db, &["search", "hello", "--limit", "1", "--json"]);
    let cursor = page["next_cursor"].as_str().expect("a second page");
    fails(
        &db,
        &["search", "again", "--cursor", cursor],
        "invalid_argument",
    );
    // Flags clap refuses are usage errors: exit 2.
    usage_error(&db, &["search"]);
    usage_error(&db, &["search", "x", "--limit", "0"]);
    usage_error(&db, &["search", "x", "--limit", "101"]);
    usage_error(&db, &["search", "x", "--role", "robot"]);
    usage_error(&db, &["search", "x", "--since", "soon"]);
}

#[test]
fn test_search_pages_with_a_relative_since_by_the_command_it_prints() {
    let (_dir, db) = temp_db();
    say(&db, "agent:main:main", "user", "hello one");
    say(&db, "agent:main:main", "user", "hello two");
    let first = ok(&db, &["search", "hello", "--since", "1h", "--limit", "1"]);
    let hint = first
        .lines()
        .find_map(|l| l.strip_prefix("(more: the same search with "))
        .and_then(|l| l.strip_suffix(')'))
        .unwrap_or_else(|| panic!("a hint to the next page: {first}"));
    // `--since 1h` came back as the time it meant: the printed flags page on.
    let flags: Vec<&str> = hint.split(' ').collect();
    assert_eq!((flags[0], flags[2]), ("--since", "--cursor"), "{hint}");
    assert!(flags[1].parse::<u64>().is_ok(), "{hint}");
    let mut args = vec!["search", "hello", "--limit", "1"];
    args.extend(&flags);
    let second = ok(&db, &args);
    assert!(second.contains("hello"), "{second}");
    assert_ne!(first.lines().nth(1), second.lines().nth(1), "another hit");
}
