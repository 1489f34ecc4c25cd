//! `spool import claude-code|codex|pi|gemini|opencode` and `spool export` on the
//! importer fixtures: human and JSON reports, idempotent re-import, a cut-off log,
//! unreadable paths, branch sessions linked to their parent, resume selection of an
//! imported Codex thread, opencode's database and JSON files, and the export of a
//! compacted session.

use std::path::{Path, PathBuf};

use crate::common::{fails, ok, ok_json, spool, stderr, stdout, temp_db, usage_error, words};
use serde_json::Value;

const CLAUDE_ID: &str = "6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f";
const CODEX_ID: &str = "0199f0a1-7c2e-7d40-9b1a-5e6f7a8b9c0d";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/import")
}

fn fixture(rel: &str) -> String {
    fixtures().join(rel).display().to_string()
}

fn claude_key() -> String {
    format!("import:claude_code:{CLAUDE_ID}")
}

fn branch_key() -> String {
    format!("import:claude_code:{CLAUDE_ID}@u5")
}

fn sub_agent_key() -> String {
    format!("import:claude_code:{CLAUDE_ID}@s1")
}

/// The lines of `spool export KEY` after its header (the session under KEY), as JSON
/// values.
fn export(db: &Path, key: &str) -> Vec<Value> {
    let mut lines: Vec<Value> = ok(db, &["export", key])
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let header = lines.remove(0);
    assert_eq!(header["session"]["key"], key, "{header}");
    lines
}

fn message_ids(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l["message_id"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn test_import_claude_code_project_dir_links_the_branch_and_reimport_adds_nothing() {
    let (_dir, db) = temp_db();
    let dir = fixture("claude-code");
    let out = ok(&db, &["import", "claude-code", &dir]);
    assert!(
        out.contains(&format!("created   {}: 9 entries imported", claude_key())),
        "{out}"
    );
    assert!(
        out.contains(&format!("created   {}: 3 entries imported", branch_key())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "branch of {}, sharing its transcript through u3",
            claude_key()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "created   {}: 1 entry imported, 0 already present\n            sub-agent of {}\n",
            sub_agent_key(),
            claude_key()
        )),
        "{out}"
    );
    assert!(out.contains("skipped   file-history-snapshot 1"), "{out}");
    assert!(
        out.ends_with(
            "imported 1 file: 3 sessions created, 0 updated, 0 unchanged; 13 entries imported, \
             0 already present; 1 line skipped, 0 invalid\n"
        ),
        "{out}"
    );

    // Roles, tool calls and tool results survive into `show`.
    let shown = ok_json(&db, &["show", &claude_key(), "--json"]);
    let entries = shown["entries"].as_array().expect("entries");
    let roles: Vec<&str> = entries
        .iter()
        .map(|e| e["role"].as_str().expect("role"))
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "assistant",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "user",
            "assistant"
        ]
    );
    assert_eq!(entries[1]["content"], "", "a thinking-only line");
    assert!(entries[1]["reasoning"].is_string(), "{}", entries[1]);
    assert_eq!(entries[3]["tool_calls"][0]["id"], "toolu_01XyZ");
    assert_eq!(entries[4]["tool_call_id"], "toolu_01XyZ");
    assert_eq!(entries[4]["tool_status"], "error", "the failing test run");
    assert_eq!(entries[6]["tool_status"], "ok");
    assert_eq!(
        shown["session"]["status"], "done",
        "an imported log is a finished run"
    );
    assert_eq!(shown["session"]["agent_id"], "claude_code");
    assert_eq!(
        shown["session"]["model_config"]["claude_code_thread_id"],
        CLAUDE_ID
    );
    let human = ok(&db, &["show", &claude_key()]);
    assert!(human.contains("cargo test -p parser"), "{human}");

    // The branch shares its parent's transcript through u3, then has its own turn.
    let branch = export(&db, &branch_key());
    assert_eq!(
        message_ids(&branch),
        ["u1", "a1", "a2", "a3", "u2", "a4", "u3", "u5", "y1", "a6"]
    );
    let meta = ok_json(&db, &["show", &branch_key(), "--json"]);
    // Made by `branch` at the import's clock, it still takes the log's times: from its
    // first own message (u5) to its newest (a6).
    let at = |id: &str| {
        branch
            .iter()
            .find(|l| l["message_id"] == id)
            .map(|l| l["created_at"].clone())
            .expect(id)
    };
    assert_eq!(meta["session"]["created_at"], at("u5"));
    assert_eq!(meta["session"]["updated_at"], at("a6"));
    assert_eq!(meta["session"]["ended_at"], at("a6"));
    assert_eq!(
        meta["session"]["metadata"]["import"]["fork_of"]["after_message_id"],
        "u3"
    );
    let storage = crate::common::storage_on(&db);
    let lineage = spool::run(&*storage, spool::lineage("default", &branch_key())).expect("lineage");
    assert_eq!(
        lineage.node.lineage.parent_session_key.as_deref(),
        Some(claude_key().as_str())
    );
    assert!(lineage.node.lineage.forked_from_parent);
    // The sub-agent is a child of the session that spawned it, with no history of it.
    let child =
        spool::run(&*storage, spool::lineage("default", &sub_agent_key())).expect("lineage");
    assert_eq!(
        child.node.lineage.parent_session_key.as_deref(),
        Some(claude_key().as_str())
    );
    assert!(!child.node.lineage.forked_from_parent);
    assert_eq!(child.node.session.entry_count, 1);
    drop(storage);

    // Importing the same directory again writes nothing.
    let again = ok_json(&db, &["import", "claude-code", &dir, "--json"]);
    assert_eq!(again["summary"]["entries_imported"], 0);
    assert_eq!(again["summary"]["already_present"], 13);
    assert_eq!(again["summary"]["sessions_unchanged"], 3);
    assert_eq!(again["files"][0]["sessions"][1]["link"], "existing");
    assert_eq!(message_ids(&export(&db, &claude_key())).len(), 9);
}

#[test]
fn test_import_codex_json_report_and_resume_selects_the_imported_thread() {
    let (_dir, db) = temp_db();
    let report = ok_json(
        &db,
        &[
            "import",
            "codex",
            &fixture("codex"),
            &fixture("codex-legacy.jsonl"),
            "--json",
        ],
    );
    assert_eq!(report["format"], "codex");
    let files = report["files"].as_array().expect("files");
    assert_eq!(files.len(), 2);
    assert!(
        files[0]["path"]
            .as_str()
            .expect("path")
            .ends_with(&format!("rollout-2025-10-17T05-50-00-{CODEX_ID}.jsonl"))
    );
    let session = &files[0]["sessions"][0];
    assert_eq!(session["key"], format!("import:codex:{CODEX_ID}"));
    assert_eq!(session["provider_session_id"], CODEX_ID);
    assert_eq!(
        (
            &session["created"],
            &session["entries"],
            &session["imported"]
        ),
        (&Value::Bool(true), &Value::from(8), &Value::from(8))
    );
    assert!(
        session["session_id"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    // The reasoning item is an entry now; the echo of the prompt is not.
    assert_eq!(files[0]["skipped"]["response_item:reasoning"], Value::Null);
    assert_eq!(files[0]["skipped"]["event_msg:user_message"], 1);
    assert_eq!(files[0]["truncated_tail"], Value::Null);
    assert_eq!(files[1]["invalid_lines"], serde_json::json!([7]));
    assert_eq!(files[1]["skipped"]["state"], 1);
    let summary = &report["summary"];
    assert_eq!(summary["files"], 2);
    assert_eq!(summary["failed_files"], 0);
    assert_eq!(summary["sessions_created"], 2);
    assert_eq!(summary["entries_imported"], 13);
    assert_eq!(summary["invalid_lines"], 1);

    let decision = ok_json(
        &db,
        &words("resume select --agent codex --project webshop --json"),
    );
    assert_eq!(decision["mode"], "resume");
    assert_eq!(decision["session_id"], CODEX_ID);

    let lines = export(&db, &format!("import:codex:{CODEX_ID}"));
    let roles: Vec<&str> = lines
        .iter()
        .map(|l| l["role"].as_str().expect("role"))
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(
        lines[0]["kind"], "context",
        "the environment block is context"
    );
    assert!(lines[2]["reasoning"].is_string(), "{}", lines[2]);
    assert_eq!(lines[3]["tool_calls"][0]["name"], "shell");
    assert_eq!(lines[4]["tool_call_id"], "call_Q1w2E3r4");

    // The human report of a re-import: nothing new.
    let again = ok(&db, &["import", "codex", &fixture("codex")]);
    assert!(again.contains("unchanged import:codex:"), "{again}");
    assert!(
        again.contains("0 entries imported, 8 already present"),
        "{again}"
    );
}

#[test]
fn test_a_cut_off_log_is_a_warning_with_the_recovered_entries() {
    let (_dir, db) = temp_db();
    let out = ok(
        &db,
        &[
            "import",
            "claude-code",
            &fixture("claude-code-truncated.jsonl"),
        ],
    );
    assert!(
        out.contains(
            "warning: the last line was cut off: recovered 12 entries before the cut-off line 15"
        ),
        "{out}"
    );
    assert!(out.contains("1 cut off"), "{out}");
    // The complete log later adds only the entry that was cut off.
    let grown = ok_json(
        &db,
        &["import", "claude-code", &fixture("claude-code"), "--json"],
    );
    // The cut-off line was the rewound branch's last; the main session is complete.
    let sessions = &grown["files"][0]["sessions"];
    assert_eq!(
        (&sessions[0]["imported"], &sessions[0]["already_present"]),
        (&Value::from(0), &Value::from(9))
    );
    assert_eq!(
        (&sessions[1]["imported"], &sessions[1]["already_present"]),
        (&Value::from(1), &Value::from(2))
    );
    let json = ok_json(
        &db,
        &[
            "import",
            "claude-code",
            &fixture("claude-code-truncated.jsonl"),
            "--json",
        ],
    );
    assert_eq!(
        json["files"][0]["truncated_tail"],
        serde_json::json!({ "line": 15, "recovered_entries": 12 })
    );
}

#[test]
fn test_an_unreadable_path_fails_with_exit_1_and_the_rest_is_still_imported() {
    let (dir, db) = temp_db();
    let missing = dir.path().join("no-such-dir");
    let out = spool(
        &db,
        &[
            "import",
            "codex",
            &missing.display().to_string(),
            &fixture("codex"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("error[io]: cannot read"), "{text}");
    assert!(text.contains("created   import:codex:"), "{text}");
    assert!(
        stderr(&out).starts_with("error[import_failed]: 1 of 2 files not fully imported"),
        "{}",
        stderr(&out)
    );
    // Not a log at all: one invalid line, no session, exit 0; a directory without
    // logs imports nothing.
    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, "not json\n").expect("write");
    let report = ok_json(
        &db,
        &["import", "codex", &junk.display().to_string(), "--json"],
    );
    assert_eq!(report["files"][0]["invalid_lines"], serde_json::json!([1]));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("dir");
    let report = ok_json(
        &db,
        &["import", "codex", &empty.display().to_string(), "--json"],
    );
    assert_eq!(report["summary"]["files"], 0);
    usage_error(&db, &["import", "codex"]);
    usage_error(&db, &["import", "aider", "x.jsonl"]);
}

#[test]
fn test_export_of_a_compacted_session_is_the_original_transcript() {
    let (dir, db) = temp_db();
    const KEY: &str = "agent:main:main";
    ok(&db, &["create", KEY]);
    let n = 20;
    for i in 0..n {
        let content = format!("step {i}: {}", "details ".repeat(40));
        ok(
            &db,
            &[
                "append",
                KEY,
                "--role",
                if i % 2 == 0 { "user" } else { "assistant" },
                "--content",
                &content,
                "--message-id",
                &format!("m{i}"),
            ],
        );
    }
    let compacted = ok_json(&db, &["compact", KEY, "--window", "1000", "--json"]);
    assert!(compacted["removed_count"].as_u64().expect("removed") > 0);
    let lines = export(&db, KEY);
    let expected: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    assert_eq!(message_ids(&lines), expected);
    assert_eq!(lines.len(), n + 1, "the entries, then one summary");
    assert!(lines[n]["summary"].is_object(), "{}", lines[n]);

    // --out writes the same lines to a file.
    let file = dir.path().join("out.jsonl");
    let printed = ok(
        &db,
        &[
            "export",
            KEY,
            "--json-lines",
            "--out",
            &file.display().to_string(),
        ],
    );
    assert!(printed.is_empty());
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        ok(&db, &["export", KEY])
    );

    // --archive: the reset archives of KEY, oldest first.
    assert_eq!(ok(&db, &["export", KEY, "--archive"]), "");
    ok(&db, &["reset", KEY]);
    ok(
        &db,
        &["append", KEY, "--role", "user", "--content", "after"],
    );
    ok(&db, &["reset", KEY]);
    let archives: Vec<Value> = ok(&db, &["export", KEY, "--archive"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(archives.len(), 2);
    assert_eq!(
        (&archives[0]["epoch"], &archives[1]["epoch"]),
        (&Value::from(0), &Value::from(1))
    );
    assert_eq!(archives[0]["session_key"], KEY);
    assert_eq!(
        archives[0]["transcript_entries"]
            .as_array()
            .expect("entries")
            .len(),
        n
    );

    fails(&db, &["export", "agent:main:nope"], "not_found");
    fails(
        &db,
        &["export", "agent:main:nope", "--archive"],
        "not_found",
    );
}

#[test]
fn test_a_provider_id_with_odd_characters_gets_a_stable_sanitized_key() {
    let (dir, db) = temp_db();
    let log = dir.path().join("rollout-odd.jsonl");
    let lines = [
        r#"{"timestamp":"2025-10-17T05:50:00.000Z","type":"session_meta","payload":{"id":"team/thread 42:x","timestamp":"2025-10-17T05:50:00.000Z","cwd":"/home/dev/odd"}}"#,
        r#"{"timestamp":"2025-10-17T05:50:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}"#,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").expect("write");
    let path = log.display().to_string();
    let first = ok_json(&db, &["import", "codex", &path, "--json"]);
    let session = &first["files"][0]["sessions"][0];
    let key = session["key"].as_str().expect("key").to_owned();
    assert!(key.starts_with("import:codex:team_thread_42_x~"), "{key}");
    assert!(
        session["key_note"]
            .as_str()
            .expect("a note")
            .contains("sanitized key"),
        "{session}"
    );
    assert_eq!(session["provider_session_id"], "team/thread 42:x");
    let again = ok_json(&db, &["import", "codex", &path, "--json"]);
    assert_eq!(again["files"][0]["sessions"][0]["key"], key.as_str());
    assert_eq!(again["files"][0]["sessions"][0]["already_present"], 1);
    let human = ok(&db, &["import", "codex", &path]);
    assert!(
        human.contains("warning: the provider session id holds characters"),
        "{human}"
    );
}

#[test]
fn test_an_oversized_entry_is_cut_and_reported_and_a_long_provider_id_is_sanitized() {
    let (dir, db) = temp_db();
    let log = dir.path().join("rollout-big.jsonl");
    let long_id = format!("thread-{}", "7".repeat(200));
    let huge = "y".repeat(5 * 1024 * 1024);
    let message = |text: &str| {
        serde_json::json!({
            "timestamp": "2025-10-17T05:50:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": text}]}
        })
        .to_string()
    };
    let meta = serde_json::json!({
        "timestamp": "2025-10-17T05:50:00.000Z", "type": "session_meta",
        "payload": {"id": long_id, "timestamp": "2025-10-17T05:50:00.000Z", "cwd": "/home/dev/big"}
    });
    let lines = [
        meta.to_string(),
        message("before"),
        message(&huge),
        message("after"),
    ];
    std::fs::write(&log, lines.join("\n") + "\n").expect("write");
    let path = log.display().to_string();
    let report = ok_json(&db, &["import", "codex", &path, "--json"]);
    let session = &report["files"][0]["sessions"][0];
    assert!(session.get("error").is_none(), "{session}");
    assert_eq!(session["imported"], 3, "{session}");
    let adjusted = session["adjusted"].as_array().expect("adjusted entries");
    assert_eq!(adjusted.len(), 1, "{session}");
    assert_eq!(adjusted[0]["action"], "truncated");
    assert_eq!(report["summary"]["entries_truncated"], 1);
    let key = session["key"].as_str().expect("key");
    assert!(key.starts_with("import:codex:thread-777"), "{key}");
    let recorded = session["sanitized_provider_session_id"]
        .as_str()
        .expect("the id is recorded sanitized");
    assert!(
        recorded.len() <= 128 && recorded.contains('~'),
        "{recorded}"
    );
    let entries = export(&db, key);
    let contents: Vec<usize> = entries
        .iter()
        .filter_map(|e| e["content"].as_str().map(str::len))
        .collect();
    assert!(
        contents.iter().all(|&n| n <= 4 * 1024 * 1024) && contents.len() == 3,
        "{contents:?}"
    );
    // The human report names the cut entry and the sanitized id.
    let (_other, db2) = temp_db();
    let human = ok(&db2, &["import", "codex", &path]);
    assert!(human.contains("truncated: content of"), "{human}");
    assert!(human.contains("recorded as"), "{human}");
    assert!(human.contains("1 entry cut to fit the limits"), "{human}");
}

#[test]
fn test_a_directory_imports_sub_agent_files_after_their_parent_linked_to_the_task_call() {
    let (_dir, db) = temp_db();
    let report = ok_json(
        &db,
        &["import", "claude-code", &fixture("claude-shapes"), "--json"],
    );
    let files = report["files"].as_array().expect("files");
    let last = files.last().expect("files");
    assert!(
        last["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("agent-a7f3e91.jsonl")),
        "sub-agent files come last: {}",
        last["path"]
    );
    let agent = &last["sessions"][0];
    assert_eq!(agent["link"], "child", "{agent}");
    // The Task call whose result names agent a7f3e91, as the parent's log writes it.
    let parent_log = std::fs::read_to_string(fixtures().join("claude-shapes/task-agent.jsonl"))
        .expect("fixture");
    let call = parent_log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["toolUseResult"]["agentId"] == "a7f3e91")
        .and_then(|l| {
            l["message"]["content"][0]["tool_use_id"]
                .as_str()
                .map(str::to_owned)
        })
        .expect("the Task result");
    assert_eq!(agent["spawned_by"]["tool_call_id"], call.as_str());
    let storage = crate::common::storage_on(&db);
    let key = agent["key"].as_str().expect("key");
    let lineage = spool::run(&*storage, spool::lineage("default", key)).expect("lineage");
    assert_eq!(
        lineage.node.lineage.parent_session_key.as_deref(),
        agent["parent_key"].as_str()
    );
    assert_eq!(report["summary"]["failed_files"], 0);
}

/// A Codex rollout past several slices is read a slice at a time: the CLI writes every
/// entry with its usage (a `token_count` whose entry came in the slice before updates
/// it), counts each entry once, and reports the line a writer had not finished.
#[test]
fn test_a_rollout_of_several_slices_streams_in_as_the_whole_file_would() {
    use crate::common::rollout;
    let (dir, db) = temp_db();
    let path = dir.path().join("rollout-big.jsonl");
    let mut file = std::fs::File::create(&path).expect("create");
    // About 10 MiB: three slices of 4 MiB.
    let turns = rollout::write(&mut file, 10 << 20, 6_000).expect("write");
    // The agent is still writing its next line.
    std::io::Write::write_all(&mut file, b"{\"timestamp\":\"2025-10-17T05:5").expect("write");
    drop(file);
    let text = std::fs::read_to_string(&path).expect("read");
    let lines = text.lines().count() as u64;
    let whole = spool::import::parse_codex(&text);
    let parsed = &whole.sessions[0].entries;
    assert_eq!(parsed.len() as u64, 4 * turns);

    let path = path.display().to_string();
    let report = ok_json(&db, &["import", "codex", &path, "--json"]);
    let file = &report["files"][0];
    let session = &file["sessions"][0];
    let key = format!("import:codex:{}", rollout::THREAD);
    assert_eq!(session["key"], key.as_str(), "{report}");
    assert_eq!(
        (
            &session["entries"],
            &session["imported"],
            &session["already_present"]
        ),
        (
            &Value::from(4 * turns),
            &Value::from(4 * turns),
            &Value::from(0)
        ),
        "{session}"
    );
    assert_eq!(file["lines"], lines, "every line, the cut one too");
    assert_eq!(file["truncated_tail"]["line"], lines, "{file}");
    assert_eq!(file["skipped"]["turn_context"], 1, "{file}");
    let stored = export(&db, &key);
    assert_eq!(stored.len(), parsed.len());
    for (stored, parsed) in stored.iter().zip(parsed) {
        assert_eq!(stored["message_id"], parsed.message_id.as_str());
        let usage = serde_json::to_value(&parsed.turn_usage).expect("usage");
        assert_eq!(stored["turn_usage"], usage, "{}", parsed.message_id);
    }
    // Again: nothing new.
    let again = ok_json(&db, &["import", "codex", &path, "--json"]);
    let session = &again["files"][0]["sessions"][0];
    assert_eq!(
        (&session["imported"], &session["already_present"]),
        (&Value::from(0), &Value::from(4 * turns)),
        "{session}"
    );
}

/// A Claude Code log past several slices is read a slice at a time: every session (the
/// main one and a branch per rewind, linked to it) gets every entry with its usage (a
/// response whose later line came in the next slice updates its first entry), each
/// entry is counted once, and the line a writer had not finished is reported.
#[test]
fn test_a_claude_code_log_of_several_slices_streams_in_as_the_whole_file_would() {
    use crate::common::rollout::claude;
    let (dir, db) = temp_db();
    let path = dir.path().join("big.jsonl");
    let mut file = std::fs::File::create(&path).expect("create");
    // About 10 MiB: three slices of 4 MiB, and rewinds.
    let turns = claude::write(&mut file, 10 << 20, 6_000).expect("write");
    std::io::Write::write_all(&mut file, b"{\"type\":\"assistant\",\"uuid\":\"0").expect("write");
    drop(file);
    let text = std::fs::read_to_string(&path).expect("read");
    let lines = text.lines().count() as u64;
    let whole = spool::import::parse_claude_code(&text);
    assert!(whole.sessions.len() > 2, "rewinds make branches");
    assert_eq!(
        whole
            .sessions
            .iter()
            .map(|s| s.entries.len() as u64)
            .sum::<u64>(),
        5 * turns
    );

    let path = path.display().to_string();
    let report = ok_json(&db, &["import", "claude-code", &path, "--json"]);
    let file = &report["files"][0];
    assert_eq!(file["lines"], lines, "every line, the cut one too");
    assert_eq!(file["truncated_tail"]["line"], lines, "{file}");
    assert_eq!(file["skipped"]["progress"], turns, "{file}");
    let sessions = file["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), whole.sessions.len(), "{file}");
    for parsed in &whole.sessions {
        let key = format!("import:claude_code:{}", parsed.provider_session_id);
        let session = sessions
            .iter()
            .find(|s| s["key"] == key.as_str())
            .unwrap_or_else(|| panic!("{key} in {file}"));
        let n = Value::from(parsed.entries.len());
        assert_eq!(
            (&session["entries"], &session["imported"]),
            (&n, &n),
            "{session}"
        );
        if parsed.fork_of.is_some() {
            assert_eq!(session["link"], "branch", "{session}");
        }
    }
    assert_stored_as_parsed(&db, &whole);
    // Again: nothing new.
    let again = ok_json(&db, &["import", "claude-code", &path, "--json"]);
    for session in again["files"][0]["sessions"].as_array().expect("sessions") {
        assert_eq!(session["imported"], 0, "{session}");
    }
}

/// Every session of `whole` is stored under its key with its own entries (after a
/// branch's fork point), each with its usage.
fn assert_stored_as_parsed(db: &Path, whole: &spool::import::ImportedLog) {
    for parsed in &whole.sessions {
        let key = format!("import:claude_code:{}", parsed.provider_session_id);
        let stored = export(db, &key);
        assert!(stored.len() >= parsed.entries.len(), "{key}");
        let own = &stored[stored.len() - parsed.entries.len()..];
        for (stored, parsed) in own.iter().zip(&parsed.entries) {
            assert_eq!(stored["message_id"], parsed.message_id.as_str());
            let usage = serde_json::to_value(&parsed.turn_usage).expect("usage");
            assert_eq!(stored["turn_usage"], usage, "{}", parsed.message_id);
        }
        let listed = ok_json(db, &["show", &key, "--json"]);
        assert_eq!(
            listed["session"]["entry_count"],
            stored.len() as u64,
            "{key}: no entry twice"
        );
    }
}

/// `spool import claude-code` killed (`SIGKILL`) in the middle of a streamed log, then
/// run again, ends with what one uninterrupted import stores: every session, every
/// entry once, with its usage. Another process reads the database while it is written.
#[test]
fn test_a_streamed_import_killed_mid_file_then_run_again_completes_it() {
    use crate::common::rollout::claude;
    let (dir, db) = temp_db();
    let path = dir.path().join("killed.jsonl");
    let mut file = std::fs::File::create(&path).expect("create");
    let turns = claude::write(&mut file, 6 << 20, 2_000).expect("write");
    drop(file);
    let text = std::fs::read_to_string(&path).expect("read");
    let whole = spool::import::parse_claude_code(&text);
    let main = format!("import:claude_code:{}", claude::SESSION);
    let path = path.display().to_string();
    let mut importer = std::process::Command::new(env!("CARGO_BIN_EXE_spool"))
        .args([
            "--db",
            &db.display().to_string(),
            "import",
            "claude-code",
            &path,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the import");
    // Kill it once a reader sees some of the log written, not all of it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let out = spool(&db, &["show", &main, "--json"]);
        let count = serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v["session"]["entry_count"].as_u64())
            .unwrap_or(0);
        if count > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "nothing was written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    importer.kill().expect("SIGKILL");
    importer.wait().expect("reap");
    let again = ok_json(&db, &["import", "claude-code", &path, "--json"]);
    let sessions = again["files"][0]["sessions"].as_array().expect("sessions");
    let total: u64 = sessions
        .iter()
        .map(|s| s["imported"].as_u64().unwrap_or(0) + s["already_present"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(total, 5 * turns, "{again}");
    let resumed: u64 = sessions
        .iter()
        .map(|s| s["already_present"].as_u64().unwrap_or(0))
        .sum();
    assert!(resumed > 0, "the killed import had written some: {again}");
    assert_stored_as_parsed(&db, &whole);
}

/// `(key, entries imported)` of every session a `--json` report lists.
fn imported(report: &Value) -> Vec<(String, u64)> {
    report["files"]
        .as_array()
        .expect("files")
        .iter()
        .flat_map(|f| f["sessions"].as_array().expect("sessions"))
        .map(|s| {
            (
                s["key"].as_str().expect("key").to_owned(),
                s["imported"].as_u64().expect("imported"),
            )
        })
        .collect()
}

#[test]
fn test_import_pi_and_gemini_directories_link_their_branches() {
    let (_dir, db) = temp_db();
    let help = ok(&db, &["import", "--help"]);
    for part in [
        "pi coding agent sessions",
        "Gemini CLI sessions",
        "opencode sessions: its database",
    ] {
        assert!(help.contains(part), "missing {part:?} in:\n{help}");
    }
    let pi = ok_json(&db, &["import", "pi", &fixture("pi"), "--json"]);
    assert_eq!(pi["format"], "pi");
    let id = "2f6b7c1e-8d4a-4e5b-9c3f-7a1b2c3d4e5f";
    assert_eq!(
        imported(&pi),
        [
            (format!("import:pi:{id}"), 10),
            (format!("import:pi:{id}@b0000001"), 2),
            (format!("import:pi:{id}@c0000001"), 1),
        ]
    );
    let sessions = pi["files"][0]["sessions"].as_array().expect("sessions");
    assert_eq!(sessions[1]["link"], "branch");
    assert_eq!(sessions[2]["link"], "branch");
    // The nested branch shares its parents' history up to its fork point.
    let nested = message_ids(&export(&db, &format!("import:pi:{id}@c0000001")));
    assert_eq!(nested.last().map(String::as_str), Some("c0000001"));
    assert!(nested.contains(&"a000000c".to_owned()), "{nested:?}");
    assert!(nested.contains(&"b0000001".to_owned()), "{nested:?}");
    assert!(!nested.contains(&"b0000002".to_owned()), "{nested:?}");
    let again = ok(&db, &["import", "pi", &fixture("pi")]);
    assert!(
        again.contains("0 entries imported, 10 already present"),
        "{again}"
    );

    // Gemini CLI: a directory holds both forms; other JSON files are not logs.
    let dir = tempfile::tempdir().expect("tempdir");
    let chats = dir.path().join("3f9a0c4e1b2d").join("chats");
    std::fs::create_dir_all(&chats).expect("mkdir");
    for name in [
        "session-2025-09-18T10-20-5d1c0b9e.json",
        "session-2025-09-18T10-20-8a7b6c5d.jsonl",
    ] {
        std::fs::copy(fixtures().join("gemini").join(name), chats.join(name)).expect("copy");
    }
    std::fs::write(dir.path().join("3f9a0c4e1b2d").join("logs.json"), "[]").expect("write");
    let path = dir.path().display().to_string();
    let gemini = ok_json(&db, &["import", "gemini", &path, "--json"]);
    assert_eq!(gemini["summary"]["files"], 2, "{gemini}");
    let rewound = "8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d";
    assert_eq!(
        imported(&gemini),
        [
            (
                "import:gemini:5d1c0b9e-7f3a-4c21-9e8d-2b6a4f1c0e77".to_owned(),
                12
            ),
            (format!("import:gemini:{rewound}"), 7),
            (format!("import:gemini:{rewound}@u3"), 2),
        ]
    );
    let branch = message_ids(&export(&db, &format!("import:gemini:{rewound}@u3")));
    assert_eq!(
        branch,
        [
            "u1",
            "g1",
            "g1.grep-1",
            "g1.grep-1.result",
            "g2",
            "u3",
            "g4"
        ]
    );
}

/// An opencode database, written the way opencode 1.2 lays it out, from the session
/// documents of the fixtures.
fn opencode_db(path: &Path, documents: &[Value]) {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT,
           slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
           time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
           time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
           time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);",
    )
    .expect("schema");
    // Children first, as a database may hold them: the import still takes parents first.
    for doc in documents.iter().rev() {
        let info = &doc["info"];
        let created = info["time"]["created"].as_i64().expect("created");
        conn.execute(
            "INSERT INTO session VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![
                info["id"].as_str(),
                info["projectID"].as_str(),
                info["parentID"].as_str(),
                info["slug"].as_str(),
                info["directory"].as_str(),
                info["title"].as_str(),
                info["version"].as_str(),
                created,
                info["time"]["updated"].as_i64(),
            ],
        )
        .expect("session");
        for message in doc["messages"].as_array().expect("messages") {
            let mut data = message["info"].clone();
            let id = data["id"].as_str().expect("id").to_owned();
            let at = data["time"]["created"].as_i64().expect("time");
            let object = data.as_object_mut().expect("an object");
            object.remove("id");
            object.remove("sessionID");
            conn.execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                rusqlite::params![id, info["id"].as_str(), at, data.to_string()],
            )
            .expect("message");
            for part in message["parts"].as_array().expect("parts") {
                let mut data = part.clone();
                let part_id = data["id"].as_str().expect("id").to_owned();
                let object = data.as_object_mut().expect("an object");
                for key in ["id", "sessionID", "messageID"] {
                    object.remove(key);
                }
                conn.execute(
                    "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    rusqlite::params![part_id, id, info["id"].as_str(), at, data.to_string()],
                )
                .expect("part");
            }
        }
    }
}

/// The same sessions as opencode's older JSON files under `storage`.
fn opencode_storage(storage: &Path, documents: &[Value]) {
    let write = |path: PathBuf, value: &Value| {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, value.to_string()).expect("write");
    };
    for doc in documents {
        let info = &doc["info"];
        let id = info["id"].as_str().expect("id");
        let project = info["projectID"].as_str().expect("project");
        write(
            storage
                .join("session")
                .join(project)
                .join(format!("{id}.json")),
            info,
        );
        for message in doc["messages"].as_array().expect("messages") {
            let mid = message["info"]["id"].as_str().expect("id");
            write(
                storage.join("message").join(id).join(format!("{mid}.json")),
                &message["info"],
            );
            for part in message["parts"].as_array().expect("parts") {
                let pid = part["id"].as_str().expect("id");
                write(
                    storage.join("part").join(mid).join(format!("{pid}.json")),
                    part,
                );
            }
        }
    }
}

#[test]
fn test_import_opencode_from_its_database_json_files_or_exports_alike() {
    let names = [
        "ses_6a1f0c2e3ffeQ1b2c3d4e5f6a7.json",
        "ses_6a1f0c2e4000R9z8y7x6w5v4u3.json",
    ];
    let documents: Vec<Value> = names
        .iter()
        .map(|n| {
            let text = std::fs::read_to_string(fixtures().join("opencode").join(n)).expect("read");
            serde_json::from_str(&text).expect("json")
        })
        .collect();
    let parent = "import:opencode:ses_6a1f0c2e3ffeQ1b2c3d4e5f6a7";
    let child = "import:opencode:ses_6a1f0c2e4000R9z8y7x6w5v4u3";
    let expected = [(parent.to_owned(), 15), (child.to_owned(), 2)];

    // The exported documents.
    let (_a, exported_db) = temp_db();
    let exported = ok_json(
        &exported_db,
        &["import", "opencode", &fixture("opencode"), "--json"],
    );
    assert_eq!(exported["format"], "opencode");
    assert_eq!(imported(&exported), expected);

    // The database, given as its data directory.
    let data = tempfile::tempdir().expect("tempdir");
    opencode_db(&data.path().join("opencode.db"), &documents);
    let (_b, db) = temp_db();
    let report = ok_json(
        &db,
        &[
            "import",
            "opencode",
            &data.path().display().to_string(),
            "--json",
        ],
    );
    assert_eq!(imported(&report), expected, "{report}");
    let files = report["files"].as_array().expect("files");
    assert!(
        files[0]["path"]
            .as_str()
            .expect("path")
            .ends_with("opencode.db#ses_6a1f0c2e3ffeQ1b2c3d4e5f6a7")
    );
    assert_eq!(files[1]["sessions"][0]["link"], "child");
    assert_eq!(files[1]["sessions"][0]["parent_key"], parent);
    // What it stores is what the exported documents store.
    for key in [parent, child] {
        assert_eq!(
            export(&db, key)[1..],
            export(&exported_db, key)[1..],
            "{key}"
        );
    }
    let again = ok(
        &db,
        &["import", "opencode", &data.path().display().to_string()],
    );
    assert!(
        again.contains("0 entries imported, 15 already present"),
        "{again}"
    );

    // The JSON files.
    let files_dir = tempfile::tempdir().expect("tempdir");
    let storage = files_dir.path().join("storage");
    opencode_storage(&storage, &documents);
    let (_c, files_db) = temp_db();
    let report = ok_json(
        &files_db,
        &[
            "import",
            "opencode",
            &storage.display().to_string(),
            "--json",
        ],
    );
    assert_eq!(imported(&report), expected, "{report}");
    for key in [parent, child] {
        assert_eq!(
            export(&files_db, key)[1..],
            export(&exported_db, key)[1..],
            "{key}"
        );
    }

    // A directory with no opencode data fails with exit status 1.
    let empty = tempfile::tempdir().expect("tempdir");
    let out = spool(
        &db,
        &["import", "opencode", &empty.path().display().to_string()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("holds no opencode.db"),
        "{}",
        stdout(&out)
    );
}
