//! The lifecycle subcommands of the `spool` binary: JSON shapes, human output, archive
//! files, error codes and exit codes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::{
    fails, ok, ok_json, on_postgres, spool_with, stderr, stdout, temp_db, usage_error, words,
};

use serde_json::Value;

const KEY: &str = "agent:main:main";

fn append(db: &Path, key: &str, content: &str, extra: &[&str]) -> Value {
    crate::common::append_user(db, key, content, extra)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn test_reset_archives_to_a_private_file_and_rotates() {
    let (dir, db) = temp_db();
    let created = ok_json(&db, &["create", KEY, "--json"]);
    append(&db, KEY, "fix the parser", &[]);
    append(&db, KEY, "done", &[]);

    let outcome = ok_json(&db, &["reset", KEY, "--json"]);
    assert_eq!(outcome["created"], false);
    assert_eq!(outcome["rotated"], true);
    assert_eq!(outcome["archive"]["written"], true);
    assert_eq!(outcome["archive"]["error"], Value::Null);
    assert_eq!(outcome["session"]["epoch"], 1);
    assert_eq!(outcome["session"]["entry_count"], 0);
    assert_ne!(outcome["session"]["session_id"], created["session_id"]);

    // Where the archive went: private files beside a SQLite database, the database
    // itself on PostgreSQL; read back either way by `export --archive`.
    let archives = dir.path().join("spool-archives");
    let location = if on_postgres() {
        assert!(!archives.exists());
        let url = db.to_str().expect("a URL");
        format!("PostgreSQL {}", url.split_once('@').expect("user").1)
    } else {
        archive_file_is_private(&archives, &created);
        archives.display().to_string()
    };
    let exported: Value = serde_json::from_str(ok(&db, &["export", KEY, "--archive"]).trim())
        .expect("one archive, as a JSON line");
    assert_eq!(exported["session_id"], created["session_id"]);
    assert_eq!(
        exported["transcript_entries"][0]["content"],
        "fix the parser"
    );

    let shown = ok_json(&db, &["show", KEY, "--json"]);
    assert_eq!(shown["entries"].as_array().map(Vec::len), Some(0));

    let human = ok(&db, &["reset", KEY]);
    assert!(human.starts_with(&format!("reset {KEY}")), "{human}");
    assert!(human.contains("epoch    2"), "{human}");
    assert!(
        human.contains(&format!("archive  written to {location}")),
        "{human}"
    );
    let new_id = ok_json(&db, &["show", KEY, "--json"])["session"]["session_id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(
        human.contains(&new_id),
        "prints the new session id: {human}"
    );

    // Resetting a missing key creates it: nothing to archive.
    let fresh = ok_json(&db, &["reset", "agent:new:main", "--json"]);
    assert_eq!(fresh["created"], true);
    assert_eq!(fresh["rotated"], true);
    assert_eq!(fresh["archive"], Value::Null);
}

/// The one archive file under `archives` (the default directory, beside the
/// database): a 0600 JSON file in a 0700 directory of its workspace, holding the
/// generation `created` was.
fn archive_file_is_private(archives: &std::path::Path, created: &Value) {
    // One private directory per workspace.
    let workspaces: Vec<PathBuf> = std::fs::read_dir(archives)
        .expect("the default archive dir is beside the db")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(workspaces.len(), 1, "{workspaces:?}");
    assert_eq!(mode(&workspaces[0]), 0o700);
    let files: Vec<PathBuf> = std::fs::read_dir(&workspaces[0])
        .expect("the workspace's archive dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].extension().and_then(|e| e.to_str()), Some("json"));
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(archives), 0o700);
    let archive: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).expect("read"))
        .expect("the archive is JSON");
    assert_eq!(archive["session_key"], KEY);
    assert_eq!(archive["session_id"], created["session_id"]);
    assert_eq!(
        archive["transcript_entries"][0]["content"],
        "fix the parser"
    );
}

#[test]
fn test_reset_with_an_unusable_archive_dir_still_resets() {
    let (dir, db) = temp_db();
    let occupied = dir.path().join("occupied");
    std::fs::write(&occupied, b"not a directory").expect("write");
    let occupied_arg = occupied.to_str().expect("utf-8");
    let before = ok_json(&db, &["create", KEY, "--json"]);
    append(&db, KEY, "hello", &[]);

    let outcome = ok_json(
        &db,
        &["--archive-dir", occupied_arg, "reset", KEY, "--json"],
    );
    assert_eq!(outcome["rotated"], true);
    assert_eq!(outcome["archive"]["written"], false);
    let error = outcome["archive"]["error"].as_str().expect("a reason");
    assert!(error.contains("occupied"), "{error}");
    assert_ne!(outcome["session"]["session_id"], before["session_id"]);
    let shown = ok_json(&db, &["show", KEY, "--json"]);
    assert_eq!(shown["entries"].as_array().map(Vec::len), Some(0));

    // The same through the environment, with human output.
    let out = spool_with(&db, &["reset", KEY], &[("SPOOL_ARCHIVE_DIR", &occupied)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("archive  NOT written: "),
        "{}",
        stdout(&out)
    );
    assert!(!dir.path().join("spool-archives").exists());
}

#[test]
fn test_intent_subcommand() {
    let (_dir, db) = temp_db();
    let first = ok_json(&db, &["intent", KEY, "continue", "--json"]);
    assert_eq!(first["created"], true);
    assert_eq!(first["rotated"], false);
    let again = ok_json(&db, &["intent", KEY, "continue", "--json"]);
    assert_eq!(again["created"], false);
    assert_eq!(
        again["session"]["session_id"],
        first["session"]["session_id"]
    );

    let err = fails(&db, &["intent", KEY, "new-chat"], "conflict");
    assert!(err.contains("session_key conflict"), "{err}");
    let chat = ok_json(&db, &["intent", "agent:chat:main", "new-chat", "--json"]);
    assert_eq!(chat["created"], true);

    let reset = ok_json(
        &db,
        &[
            "--archive-dir",
            _dir.path().join("a").to_str().expect("utf-8"),
            "intent",
            KEY,
            "reset-same-key",
            "--json",
        ],
    );
    assert_eq!(reset["rotated"], true);
    assert_eq!(reset["session"]["epoch"], 1);
    assert_eq!(reset["archive"]["written"], true);
    let human = ok(&db, &["intent", KEY, "continue"]);
    assert!(human.starts_with(&format!("continuing {KEY}")), "{human}");
    usage_error(&db, &["intent", KEY, "restart"]);
    usage_error(&db, &["intent", KEY]);
}

#[test]
fn test_resume_update_finish_archive_delete_and_list_filters() {
    let (_dir, db) = temp_db();
    let created = ok_json(&db, &["create", KEY, "--json"]);
    ok(&db, &["create", "agent:helper:main"]);
    let resumed = ok_json(&db, &["resume", KEY, "--json"]);
    assert!(resumed["updated_at"].as_u64() >= created["updated_at"].as_u64());
    assert!(ok(&db, &["resume", KEY]).starts_with(&format!("resumed {KEY}")));

    let updated = ok_json(
        &db,
        &[
            "update",
            KEY,
            "--model",
            "claude-opus-4-6",
            "--channel",
            "cli",
            "--config",
            "temperature=0.2",
            "--config",
            "top_p=0.9",
            "--meta",
            r#"team="core""#,
            "--json",
        ],
    );
    assert_eq!(updated["model"], "claude-opus-4-6");
    assert_eq!(updated["channel"], "cli");
    assert_eq!(updated["model_config"]["temperature"], 0.2);
    assert_eq!(updated["metadata"]["team"], "core");
    let removed = ok_json(&db, &["update", KEY, "--config", "top_p=null", "--json"]);
    assert_eq!(removed["model_config"].get("top_p"), None);
    assert_eq!(removed["model"], "claude-opus-4-6");
    usage_error(&db, &["update", KEY, "--config", "temperature=warm"]);
    usage_error(&db, &["update", KEY, "--meta", "no-equals-sign"]);
    fails(
        &db,
        &["update", KEY, "--model", "m", "--expected-epoch", "4"],
        "stale_epoch",
    );

    let shown = ok(&db, &["show", KEY]);
    for needle in [
        "model    claude-opus-4-6",
        "channel  cli",
        "usage    input 0",
        "cost     $0.0000 total",
        "source none",
        "0 compactions",
        "config   {\"temperature\":0.2}",
        "metadata {\"team\":\"core\"}",
    ] {
        assert!(shown.contains(needle), "missing {needle:?} in:\n{shown}");
    }

    let failed = ok_json(&db, &["finish", KEY, "--failed", "--json"]);
    assert_eq!(failed["status"], "failed");
    assert!(failed["ended_at"].is_u64());
    assert!(failed["runtime_ms"].is_u64());
    let text = ok(&db, &["finish", KEY]);
    assert!(
        text.starts_with(&format!("finished {KEY}: done after ")),
        "{text}"
    );
    let archived = ok_json(&db, &["archive", "agent:helper:main", "--json"]);
    assert_eq!(archived["status"], "done");
    assert!(archived["ended_at"].is_u64());
    assert!(ok(&db, &["show", KEY]).contains("ended "));

    let done = ok_json(&db, &["list", "--status", "done", "--json"]);
    assert_eq!(done["sessions"].as_array().map(Vec::len), Some(2));
    let running = ok_json(&db, &["list", "--status", "running", "--json"]);
    assert_eq!(running["sessions"].as_array().map(Vec::len), Some(0));
    let helper = ok_json(&db, &["list", "--agent", "helper", "--json"]);
    let keys: Vec<&str> = helper["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["key"].as_str().expect("key"))
        .collect();
    assert_eq!(keys, ["agent:helper:main"]);
    usage_error(&db, &["list", "--status", "paused"]);

    let deleted = ok_json(&db, &["delete", KEY, "--json"]);
    assert_eq!(deleted, serde_json::json!({"key": KEY, "deleted": true}));
    fails(&db, &["show", KEY], "not_found");
    assert!(ok(&db, &["delete", "agent:helper:main"]).starts_with("deleted agent:helper:main"));
}

#[test]
fn test_unknown_key_is_not_found_exit_1_for_every_subcommand() {
    let (_dir, db) = temp_db();
    let k = "agent:nobody:main";
    let cases: &[&[&str]] = &[
        &["resume", k],
        &["update", k, "--model", "m"],
        &["finish", k],
        &["finish", k, "--failed"],
        &["archive", k],
        &["delete", k],
        &["count", k],
        &["entry", k, "m-1"],
        &["truncate", k, "--keep", "1"],
        &["states", "list", k],
        &[
            "states",
            "save",
            k,
            "--provider",
            "portable",
            "--kind",
            "s",
            "--payload",
            "{}",
        ],
        &["states", "invalidate", k, "--reason", "r"],
        &["resume", k, "--json"],
    ];
    for args in cases {
        let err = fails(&db, args, "not_found");
        assert!(err.contains(k), "{args:?}: {err}");
    }
}

#[test]
fn test_count_entry_truncate_and_turn_usage() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    append(
        &db,
        KEY,
        "one",
        &["--message-id", "m-1", "--token-count", "4"],
    );
    let with_usage = ok_json(
        &db,
        &words(&format!(
            "append {KEY} --role assistant --content two --message-id m-2 --token-count 9 --usage-model gpt-5 --input-tokens 120 --output-tokens 30 --json"
        )),
    );
    assert_eq!(
        with_usage["turn_usage"],
        serde_json::json!({"model": "gpt-5", "input_tokens": 120, "output_tokens": 30})
    );
    append(&db, KEY, "three", &["--message-id", "m-3"]);
    let session = &ok_json(&db, &["show", KEY, "--json"])["session"];
    assert_eq!(
        session["total_tokens"], 4,
        "usage-bearing entries are not double counted"
    );
    assert_eq!(session["input_tokens"], 120);
    assert_eq!(session["output_tokens"], 30);
    let header = ok(&db, &["show", KEY]);
    assert!(
        header.contains("usage    input 120    output 30"),
        "{header}"
    );
    assert!(header.contains("gpt-5 in 120 / out 30"), "{header}");
    usage_error(
        &db,
        &words(&format!(
            "append {KEY} --role user --content x --usage-model m"
        )),
    );
    usage_error(
        &db,
        &words(&format!(
            "append {KEY} --role user --content x --input-tokens 3"
        )),
    );

    assert_eq!(ok(&db, &["count", KEY]).trim(), "3");
    assert_eq!(
        ok_json(&db, &["count", KEY, "--json"]),
        serde_json::json!({"key": KEY, "entry_count": 3})
    );
    let entry = ok_json(&db, &["entry", KEY, "m-2", "--json"]);
    assert_eq!(
        (entry["id"].as_u64(), entry["content"].as_str()),
        (Some(2), Some("two"))
    );
    assert!(ok(&db, &["entry", KEY, "m-1"]).contains("one"));
    let err = fails(&db, &["entry", KEY, "m-404"], "not_found");
    assert!(err.contains("m-404"), "{err}");

    let outcome = ok_json(&db, &["truncate", KEY, "--keep", "1", "--json"]);
    assert_eq!(
        outcome,
        serde_json::json!({"truncated": true, "before_count": 3, "after_count": 1})
    );
    assert!(ok(&db, &["truncate", KEY, "--keep", "5"]).starts_with("nothing to truncate"));
    assert_eq!(ok(&db, &["count", KEY]).trim(), "1");
    fails(&db, &["entry", KEY, "m-1"], "not_found");
    usage_error(&db, &["truncate", KEY]);
    usage_error(&db, &["truncate", KEY, "--keep", "-1"]);
}

#[test]
fn test_rollback_drops_the_last_turns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("spool.db");
    ok(&db, &["create", KEY]);
    for (role, content) in [
        ("user", "u1"),
        ("assistant", "a1"),
        ("user", "u2"),
        ("assistant", "a2"),
    ] {
        ok(&db, &["append", KEY, "--role", role, "--content", content]);
    }
    let outcome = ok_json(&db, &["rollback", KEY, "--turns", "1", "--json"]);
    assert_eq!(
        outcome,
        serde_json::json!({"truncated": true, "before_count": 4, "after_count": 2})
    );
    assert_eq!(ok(&db, &["count", KEY]).trim(), "2");
    let text = ok(&db, &["rollback", KEY, "--turns", "0"]);
    assert!(text.starts_with("nothing to roll back"), "{text}");
    assert!(ok(&db, &["rollback", KEY, "--turns", "9"]).contains("2 → 0 entries"));
    fails(
        &db,
        &["rollback", "agent:main:none", "--turns", "1"],
        "not_found",
    );
    usage_error(&db, &["rollback", KEY]);
}

#[test]
fn test_pop_removes_and_prints_the_newest_entry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("spool.db");
    ok(&db, &["create", KEY]);
    let text = ok(&db, &["pop", KEY]);
    assert!(text.starts_with("nothing to pop"), "{text}");
    for (role, content) in [("user", "u1"), ("assistant", "a1")] {
        ok(&db, &["append", KEY, "--role", role, "--content", content]);
    }
    let popped = ok_json(&db, &["pop", KEY, "--json"]);
    assert_eq!(
        (popped["role"].as_str(), popped["content"].as_str()),
        (Some("assistant"), Some("a1"))
    );
    assert_eq!(ok(&db, &["count", KEY]).trim(), "1");
    let text = ok(&db, &["pop", KEY]);
    assert!(
        text.starts_with(&format!("removed from {KEY}:")) && text.contains("u1"),
        "{text}"
    );
    assert_eq!(
        ok_json(&db, &["pop", KEY, "--json"]),
        serde_json::Value::Null
    );
    fails(&db, &["pop", KEY, "--expected-epoch", "9"], "stale_epoch");
    fails(&db, &["pop", "agent:main:none"], "not_found");
    usage_error(&db, &["pop"]);
}

#[test]
fn test_states_subcommands() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    let saved = ok_json(
        &db,
        &[
            "states",
            "save",
            KEY,
            "--provider",
            "portable",
            "--kind",
            "structured_summary_v1",
            "--payload",
            r#"{"summary":"fixed the parser"}"#,
            "--covered-through",
            "4",
            "--portable",
            "--cacheable",
            "--json",
        ],
    );
    assert_eq!(saved["id"], 1);
    assert_eq!(saved["payload"]["summary"], "fixed the parser");
    assert_eq!(saved["covered_through_id"], 4);
    assert_eq!(
        (saved["portable"].as_bool(), saved["cacheable"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(saved["valid"], true);
    let text = ok(
        &db,
        &words(&format!(
            "states save {KEY} --provider openai --kind resp --payload 42"
        )),
    );
    assert!(text.starts_with("saved context state #2"), "{text}");
    usage_error(
        &db,
        &[
            "states",
            "save",
            KEY,
            "--provider",
            "p",
            "--kind",
            "k",
            "--payload",
            "{oops",
        ],
    );
    usage_error(
        &db,
        &["states", "save", KEY, "--kind", "k", "--payload", "1"],
    );

    let listed = ok_json(&db, &["states", "list", KEY, "--json"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(2));
    let count = ok_json(
        &db,
        &words(&format!(
            "states invalidate {KEY} --reason manual --kind resp --json"
        )),
    );
    assert_eq!(count, serde_json::json!({"invalidated": 1}));
    let valid = ok_json(&db, &["states", "list", KEY, "--json"]);
    assert_eq!(valid.as_array().map(Vec::len), Some(1));
    let all = ok_json(&db, &["states", "list", KEY, "--all", "--json"]);
    assert_eq!(all[1]["valid"], false);
    assert_eq!(all[1]["invalid_reason"], "manual");
    let human = ok(&db, &["states", "list", KEY, "--all"]);
    assert!(human.contains("#1 structured_summary_v1"), "{human}");
    assert!(human.contains("INVALID (manual)"), "{human}");
    let text = ok(&db, &["states", "invalidate", KEY, "--reason", "cleanup"]);
    assert!(text.starts_with("invalidated 1 context state "), "{text}");
    assert!(ok(&db, &["states", "list", KEY]).starts_with("no valid context states"));
    usage_error(&db, &["states", "invalidate", KEY]);
    usage_error(&db, &["states"]);
}

#[test]
fn test_prune_and_cap() {
    let (_dir, db) = temp_db();
    for key in ["agent:a:main", "agent:b:main", "agent:c:main"] {
        ok(&db, &["create", key]);
    }
    assert_eq!(
        ok_json(&db, &["prune", "--max-age", "30d", "--json"]),
        serde_json::json!({"deleted": 0})
    );
    assert!(ok(&db, &["prune", "--max-age", "12h"]).starts_with("pruned 0 sessions"));
    assert_eq!(
        ok_json(&db, &["cap", "2", "--json"]),
        serde_json::json!({"deleted": 1})
    );
    let left = ok_json(&db, &["list", "--json"]);
    let keys: Vec<&str> = left["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["key"].as_str().expect("key"))
        .collect();
    assert_eq!(keys, ["agent:c:main", "agent:b:main"], "the oldest went");
    assert!(ok(&db, &["cap", "5"]).starts_with("deleted 0 sessions"));

    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        ok_json(&db, &["prune", "--max-age", "10ms", "--json"]),
        serde_json::json!({"deleted": 2})
    );
    assert_eq!(
        ok_json(&db, &["list", "--json"])["sessions"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );

    for absurd in [
        "99999999999999999999",
        "999999999999999d",
        "3w",
        "-5",
        "1.5h",
        "",
        "d",
    ] {
        usage_error(&db, &["prune", "--max-age", absurd]);
    }
    usage_error(&db, &["prune"]);
    // A bare number names the units instead of guessing one.
    let bare = crate::common::spool(&db, &["prune", "--max-age", "10"]);
    let said = crate::common::stderr(&bare);
    assert_eq!(bare.status.code(), Some(2), "{said}");
    assert!(said.contains("10s") && said.contains("10ms"), "{said}");
    fails(
        &db,
        &["prune", "--max-age", "18446744073709551615ms"],
        "invalid_argument",
    );
    usage_error(&db, &["cap", "-1"]);
    usage_error(&db, &["cap"]);
    fails(&db, &["cap", "18446744073709551615"], "invalid_argument");
}

#[test]
fn test_help_lists_the_lifecycle_subcommands() {
    let (_dir, db) = temp_db();
    let help = ok(&db, &["--help"]);
    for command in [
        "reset", "intent", "resume", "update", "finish", "archive", "delete", "prune", "cap",
        "count", "entry", "truncate", "rollback", "pop", "states",
    ] {
        assert!(help.contains(command), "{command} missing from:\n{help}");
    }
    assert!(ok(&db, &["reset", "--help"]).contains("--archive-dir"));
}
