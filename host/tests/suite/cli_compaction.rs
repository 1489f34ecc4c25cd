//! The compaction subcommands of the `spool` binary: `compact` (built-in and with a
//! summarizer command), `canonical`, `summaries`, `repairs`, `repair`, `receipt`,
//! `preimage` and `compact-result`.

use std::path::Path;

use crate::common::{fails, ok, ok_json, spool, stderr, stdout, temp_db, words};
use serde_json::Value;

const KEY: &str = "agent:main:main";

fn append(db: &Path, content: &str, tokens: u64) {
    crate::common::append_user(db, KEY, content, &["--token-count", &tokens.to_string()]);
}

/// A session of 20 entries of 200 tokens each (4,000 tokens, far over a 1,000 window).
fn big_session(db: &Path) -> Vec<String> {
    ok(db, &["create", KEY]);
    let contents: Vec<String> = (0..20)
        .map(|i| {
            let role_text = if i == 0 {
                "Goal: make the parser handle nested lists. ".to_owned()
            } else {
                format!("Step {i}: edited src/parser/step{i}.rs and reran the tests. ")
            };
            format!("{role_text}{}", "details ".repeat(60))
        })
        .collect();
    for content in &contents {
        append(db, content, 200);
    }
    contents
}

fn contents(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .expect("an array of entries")
        .iter()
        .map(|e| e["content"].as_str().expect("content").to_owned())
        .collect()
}

fn active(db: &Path) -> Vec<String> {
    contents(&ok_json(db, &["show", KEY, "--json"])["entries"])
}

#[test]
fn test_compact_archives_the_oldest_and_keeps_the_canonical_transcript() {
    let (_dir, db) = temp_db();
    let appended = big_session(&db);

    let result = ok_json(&db, &["compact", KEY, "--window", "1000", "--json"]);
    let removed = result["removed_count"].as_u64().expect("removed_count");
    assert!(removed > 0, "{result}");
    assert_eq!(result["summary_source"], "fallback");
    assert_eq!(result["skip_reason"], Value::Null);
    let kept = result["kept_entries"].as_array().expect("kept").len();
    assert_eq!(removed as usize + kept, 20);
    assert!(result["tokens_before"].as_u64() >= Some(4000), "{result}");
    let compaction_id = result["compaction_id"].as_str().expect("an id").to_owned();

    // Only the kept entries stay active; the canonical transcript has them all, in order.
    assert_eq!(active(&db), appended[removed as usize..].to_vec());
    let canonical = ok_json(&db, &["canonical", KEY, "--json"]);
    assert_eq!(contents(&canonical), appended);
    let ids: Vec<u64> = canonical
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["id"].as_u64().expect("id"))
        .collect();
    assert_eq!(ids, (1..=20).collect::<Vec<u64>>());
    let human = ok(&db, &["canonical", KEY]);
    assert!(
        human.contains(&format!(
            "20 entries ({removed} archived by compactions, {kept} active)"
        )),
        "{human}"
    );

    let summaries = ok_json(&db, &["summaries", KEY, "--json"]);
    let summaries = summaries.as_array().expect("array");
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0]["summary_format"], "structured_v1");
    assert_eq!(summaries[0]["summary_source"], "fallback");
    assert_eq!(summaries[0]["compaction_id"], compaction_id.as_str());
    assert_eq!(summaries[0]["removed_count"], removed);
    assert_eq!(summaries[0]["summary_payload"]["schema_version"], 1);
    let human = ok(&db, &["summaries", KEY]);
    assert!(human.contains(&compaction_id), "{human}");

    // The pre-image is exactly what was archived.
    let preimage = ok_json(&db, &["preimage", KEY, &compaction_id, "--json"]);
    assert_eq!(contents(&preimage), appended[..removed as usize].to_vec());
    fails(&db, &["preimage", KEY, "cmp-unknown"], "not_found");

    let session = ok_json(&db, &["show", KEY, "--json"])["session"].clone();
    assert_eq!(session["compaction_count"], 1);
    assert_eq!(session["entry_count"], kept);
}

#[test]
fn test_compact_human_output_reports_counts_tokens_coverage_and_summary() {
    let (_dir, db) = temp_db();
    big_session(&db);
    let text = ok(
        &db,
        &words(&format!(
            "compact {KEY} --window 1000 --compaction-id cmp-first --trigger-reason context_overflow"
        )),
    );
    assert!(
        text.starts_with("compacted agent:main:main (compaction cmp-first)"),
        "{text}"
    );
    assert!(text.contains("  removed   "), "{text}");
    assert!(text.contains("    kept "), "{text}");
    assert!(text.contains("  tokens    "), "{text}");
    assert!(text.contains(" → "), "{text}");
    // Facts that are not critical may be left out of a small window: reported, not lost.
    assert!(
        text.contains("  coverage  pass") || text.contains("  coverage  partial_backfill"),
        "{text}"
    );
    assert!(text.contains("  summary (fallback):"), "{text}");
    assert!(
        text.contains("make the parser handle nested lists"),
        "{text}"
    );

    // Again, below the trigger now: skipped, and why.
    let again = ok(&db, &["compact", KEY, "--window", "100000"]);
    assert!(
        again.starts_with("skipped agent:main:main: below_threshold"),
        "{again}"
    );
    assert!(again.contains("nothing was written"), "{again}");
    let summaries = ok_json(&db, &["summaries", KEY, "--json"]);
    assert_eq!(summaries[0]["trigger_reason"], "context_overflow");
    assert_eq!(summaries.as_array().map(Vec::len), Some(1));
}

#[test]
fn test_compact_with_a_summarizer_command() {
    let (dir, db) = temp_db();
    let appended = big_session(&db);
    let input = dir.path().join("input.txt");
    let obligations = dir.path().join("obligations.json");
    let file = dir.path().join("file.txt");
    let cmd = format!(
        "cat > '{}'; cp \"$SPOOL_OBLIGATIONS_FILE\" '{}'; printf '%s' \"$SPOOL_OBLIGATIONS_FILE\" > '{}'; \
         echo 'Goal: make the parser handle nested lists. LLM summary text'",
        input.display(),
        obligations.display(),
        file.display()
    );
    let result = ok_json(
        &db,
        &[
            "compact",
            KEY,
            "--window",
            "1000",
            "--summarizer-cmd",
            &cmd,
            "--json",
        ],
    );
    assert_eq!(result["summary_source"], "llm", "{result}");
    assert!(result["removed_count"].as_u64() > Some(0));
    assert!(
        result["summary"].as_str().is_some_and(
            |s| s.starts_with("Goal: make the parser handle nested lists. LLM summary text")
        ),
        "{result}"
    );
    // The LLM missed the file paths: they are reported and back-filled.
    assert_eq!(result["coverage_status"], "pass_with_backfill", "{result}");
    let missing = result["missing_obligations"].as_array().expect("missing");
    assert!(
        missing.iter().any(|m| m
            .as_str()
            .is_some_and(|m| m.contains("src/parser/step1.rs"))),
        "{result}"
    );

    // The command got the removed entries on stdin and the obligations as JSON.
    let given = std::fs::read_to_string(&input).expect("the command read its input");
    assert!(given.contains(&appended[0]), "{given}");
    let given: Value = serde_json::from_str(
        &std::fs::read_to_string(&obligations).expect("the command saw the obligations"),
    )
    .expect("obligations are JSON");
    assert!(
        given
            .as_array()
            .expect("an array")
            .iter()
            .any(|o| o["kind"] == "goal" && o["critical"] == true),
        "{given}"
    );

    // The obligations file is private to the command's run.
    let file = std::fs::read_to_string(&file).expect("the command saw the file's path");
    assert!(!Path::new(&file).exists(), "{file} was left behind");

    let summaries = ok_json(&db, &["summaries", KEY, "--json"]);
    assert_eq!(summaries[0]["summary_source"], "llm");
    assert_eq!(
        contents(&ok_json(&db, &["canonical", KEY, "--json"])),
        appended
    );
}

#[test]
fn test_compact_with_a_summarizer_command_human_output() {
    let (_dir, db) = temp_db();
    big_session(&db);
    let text = ok(
        &db,
        &[
            "compact",
            KEY,
            "--window",
            "1000",
            "--summarizer-cmd",
            "cat > /dev/null; echo 'Goal: make the parser handle nested lists.'",
        ],
    );
    assert!(text.contains("  coverage  pass_with_backfill"), "{text}");
    assert!(
        text.contains("missing from the summary, back-filled into it:"),
        "{text}"
    );
    assert!(text.contains("    - file: src/parser/step1.rs"), "{text}");
    assert!(text.contains("  back-filled "), "{text}");
    assert!(text.contains("  summary (llm):"), "{text}");
}

#[test]
fn test_a_failing_summarizer_command_writes_nothing() {
    let (_dir, db) = temp_db();
    let appended = big_session(&db);
    for (cmd, needle) in [
        (
            "cat > /dev/null; echo 'half a summary'; exit 3",
            "exited with status 3",
        ),
        ("cat > /dev/null", "printed no summary"),
        ("echo '   '", "printed no summary"),
        ("exec /nonexistent/llm", "exited with status"),
    ] {
        let out = spool(
            &db,
            &["compact", KEY, "--window", "1000", "--summarizer-cmd", cmd],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("error[summarizer]: "), "{cmd}: {err}");
        assert!(err.contains(needle), "{cmd}: {err}");
        assert!(err.contains("nothing was written"), "{cmd}: {err}");
        assert!(stdout(&out).is_empty(), "{cmd}: {}", stdout(&out));
    }
    assert_eq!(active(&db), appended);
    assert_eq!(
        contents(&ok_json(&db, &["canonical", KEY, "--json"])),
        appended
    );
    assert_eq!(
        ok_json(&db, &["summaries", KEY, "--json"]),
        serde_json::json!([])
    );
    let session = ok_json(&db, &["show", KEY, "--json"])["session"].clone();
    assert_eq!(session["compaction_count"], 0);
}

#[test]
fn test_a_summarizer_is_not_run_below_the_trigger() {
    let (dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    append(&db, "hello", 5);
    let marker = dir.path().join("ran");
    let cmd = format!("touch '{}'; echo summary", marker.display());
    let result = ok_json(
        &db,
        &[
            "compact",
            KEY,
            "--window",
            "1000",
            "--summarizer-cmd",
            &cmd,
            "--json",
        ],
    );
    assert_eq!(result["skip_reason"], "below_threshold");
    assert_eq!(result["removed_count"], 0);
    assert!(!marker.exists(), "the summarizer ran for nothing");
}

#[test]
fn test_blocking_refuses_a_summary_that_drops_a_critical_obligation() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    let first = format!(
        "Goal: preserve strict continuity. {}src/opensquilla/session/critical_continuity.py",
        "padding ".repeat(300)
    );
    append(&db, &first, 650);
    for i in 0..4 {
        append(&db, &format!("short {i}"), 20);
    }
    let before = active(&db);
    let result = ok_json(
        &db,
        &words(&format!(
            "compact {KEY} --window 300 --safety-margin 1.0 --blocking --json"
        )),
    );
    assert_eq!(result["skip_reason"], "coverage_blocked", "{result}");
    assert_eq!(result["coverage_status"], "fail_blocked", "{result}");
    assert_eq!(result["removed_count"], 0);
    assert_eq!(result["summary"], "");
    assert!(
        !result["missing_obligations"]
            .as_array()
            .expect("missing")
            .is_empty(),
        "{result}"
    );
    assert_eq!(active(&db), before);
    assert_eq!(
        ok_json(&db, &["summaries", KEY, "--json"]),
        serde_json::json!([])
    );

    let text = ok(
        &db,
        &words(&format!(
            "compact {KEY} --window 300 --safety-margin 1.0 --blocking"
        )),
    );
    assert!(
        text.starts_with("skipped agent:main:main: coverage_blocked"),
        "{text}"
    );
    assert!(
        text.contains("missing from the summary (blocking):"),
        "{text}"
    );
    assert_eq!(active(&db), before);
}

#[test]
fn test_degraded_compactions_are_queued_until_their_receipt_or_repair() {
    let (_dir, db) = temp_db();
    big_session(&db);
    ok(&db, &["create", "agent:other:main"]);
    let result = ok_json(
        &db,
        &words(&format!(
            "compact {KEY} --window 1000 --flush-receipt unsafe --compaction-id cmp-unsafe --json"
        )),
    );
    assert_eq!(result["compaction_id"], "cmp-unsafe");

    let queue = ok_json(&db, &["repairs", "--json"]);
    let queue = queue.as_array().expect("array");
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0]["compaction_id"], "cmp-unsafe");
    assert_eq!(queue[0]["flush_receipt_status"], "degraded_forensic");
    assert_eq!(
        ok_json(&db, &["repairs", "--agent", "main", "--json"])
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        ok_json(&db, &["repairs", "--agent", "other", "--json"]),
        serde_json::json!([])
    );
    let human = ok(&db, &["repairs"]);
    assert!(
        human.contains("1 degraded compaction waiting for repair"),
        "{human}"
    );
    assert!(human.contains("cmp-unsafe"), "{human}");

    // The archived pre-image can be read back for the repair.
    assert!(
        !ok_json(&db, &["preimage", KEY, "cmp-unsafe", "--json"])
            .as_array()
            .expect("array")
            .is_empty()
    );

    let text = ok(&db, &["receipt", KEY, "cmp-unsafe", "--status", "safe"]);
    assert!(text.contains("flush receipt safe"), "{text}");
    assert!(text.contains("not in the repair queue"), "{text}");
    assert_eq!(ok_json(&db, &["repairs", "--json"]), serde_json::json!([]));
    assert_eq!(
        ok(&db, &["repairs"]),
        "no degraded compactions waiting for repair\n"
    );
    fails(
        &db,
        &["receipt", KEY, "cmp-unsafe", "--status", "bogus"],
        "invalid_argument",
    );
    fails(
        &db,
        &["receipt", KEY, "cmp-nope", "--status", "safe"],
        "not_found",
    );

    // Degrade it again, then repair it instead.
    let summary = ok_json(
        &db,
        &["receipt", KEY, "cmp-unsafe", "--status", "unsafe", "--json"],
    );
    assert_eq!(summary["flush_receipt_status"], "degraded_forensic");
    assert_eq!(
        ok_json(&db, &["repairs", "--json"])
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let summary = ok_json(
        &db,
        &words(&format!("repair {KEY} cmp-unsafe --status repaired --json")),
    );
    assert_eq!(summary["repair_status"], "repaired");
    assert_eq!(ok_json(&db, &["repairs", "--json"]), serde_json::json!([]));
}

#[test]
fn test_compact_result_persists_an_external_compaction() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", KEY]);
    for i in 0..4 {
        append(&db, &format!("msg {i}"), 5);
    }
    let result = ok_json(
        &db,
        &[
            "compact-result",
            KEY,
            "--summary",
            "the agent's own summary",
            "--kept-json",
            r#"[{"role":"assistant","content":"latest reply"}]"#,
            "--compaction-id",
            "cmp-ext",
            "--trigger-reason",
            "agent_turn",
            "--json",
        ],
    );
    assert_eq!(result["summary_source"], "external");
    assert_eq!(result["removed_count"], 3);
    assert_eq!(active(&db), vec!["latest reply".to_owned()]);
    assert_eq!(
        contents(&ok_json(&db, &["canonical", KEY, "--json"])),
        vec!["msg 0", "msg 1", "msg 2", "latest reply"]
    );
    let summaries = ok_json(&db, &["summaries", KEY, "--json"]);
    assert_eq!(summaries[0]["kept_count"], 1);
    assert_eq!(summaries[0]["trigger_reason"], "agent_turn");
    assert_eq!(summaries[0]["compaction_id"], "cmp-ext");

    // An empty summary touches nothing.
    let text = ok(
        &db,
        &["compact-result", KEY, "--summary", "", "--kept-json", "[]"],
    );
    assert!(
        text.contains("skipped agent:main:main: empty_summary"),
        "{text}"
    );
    assert_eq!(active(&db), vec!["latest reply".to_owned()]);

    // A malformed --kept-json is a usage error.
    let out = spool(
        &db,
        &[
            "compact-result",
            KEY,
            "--summary",
            "s",
            "--kept-json",
            r#"[{"role":"user"}]"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn test_compaction_subcommands_on_a_missing_session() {
    let (_dir, db) = temp_db();
    fails(
        &db,
        &["compact", "agent:x:y", "--window", "10"],
        "not_found",
    );
    fails(&db, &["canonical", "agent:x:y"], "not_found");
    fails(&db, &["summaries", "agent:x:y"], "not_found");
    fails(
        &db,
        &["compact", KEY, "--window", "10", "--flush-receipt", "maybe"],
        "invalid_argument",
    );
}

/// A session whose first entry states a goal of `goal_bytes` bytes, then four short ones.
fn session_with_a_long_goal(db: &Path, goal_bytes: usize) -> String {
    let goal = format!("Goal: {}", "keep every promise ".repeat(goal_bytes / 19));
    let mut spool = spool_host::Spool::builder()
        .database(db)
        .open()
        .expect("open");
    spool.create_session(KEY).expect("create");
    let mut first = spool::AppendRequest::new(spool::Role::User, goal.clone());
    first.token_count = Some(200);
    spool.append_entry(KEY, first).expect("append");
    for i in 0..4 {
        let mut entry = spool::AppendRequest::new(spool::Role::User, format!("step {i}"));
        entry.token_count = Some(200);
        spool.append_entry(KEY, entry).expect("append");
    }
    goal
}

#[test]
fn test_a_144_kb_goal_reaches_the_summarizer_command() {
    let (dir, db) = temp_db();
    let goal = session_with_a_long_goal(&db, 144 * 1024);
    let obligations = dir.path().join("obligations.json");
    let cmd = format!(
        "cat > /dev/null; cp \"$SPOOL_OBLIGATIONS_FILE\" '{}'; echo 'Summary of the early steps.'",
        obligations.display()
    );
    let result = ok_json(
        &db,
        &[
            "compact",
            KEY,
            "--window",
            "1000",
            "--summarizer-cmd",
            &cmd,
            "--json",
        ],
    );
    assert_eq!(result["summary_source"], "llm", "{result}");
    let given: Value = serde_json::from_str(
        &std::fs::read_to_string(&obligations).expect("the command saw the obligations"),
    )
    .expect("obligations are JSON");
    let wanted = goal.trim_start_matches("Goal: ").trim();
    assert!(
        given
            .as_array()
            .expect("an array")
            .iter()
            .any(|o| o["kind"] == "goal" && o["text"] == wanted),
        "the goal was not passed whole"
    );
    // The goal does not fit in a 1,000-token window: it is reported, not lost silently.
    assert_eq!(result["coverage_status"], "partial_backfill", "{result}");
    assert!(
        result["dropped_obligations"]
            .as_array()
            .expect("dropped")
            .iter()
            .any(|d| d.as_str() == Some(&format!("goal: {wanted}"))),
        "the goal is not reported as dropped"
    );
}

#[test]
fn test_a_hung_summarizer_is_killed_at_its_timeout_and_writes_nothing() {
    let (_dir, db) = temp_db();
    let appended = big_session(&db);
    let started = std::time::Instant::now();
    let err = fails(
        &db,
        &[
            "compact",
            KEY,
            "--window",
            "1000",
            "--summarizer-cmd",
            "sleep 30; echo 'too late'",
            "--summarizer-timeout",
            "300ms",
        ],
        "summarizer",
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "waited {:?}",
        started.elapsed()
    );
    assert!(err.contains("did not finish within 300 ms"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(active(&db), appended);
    assert_eq!(
        ok_json(&db, &["summaries", KEY, "--json"]),
        serde_json::json!([])
    );
}

#[test]
fn test_blocking_compaction_passes_on_an_imported_coding_session() {
    // A real-shaped Codex session of the continuity set, compacted to a quarter of its
    // tokens: the built-in summary holds every critical fact, so --blocking writes it.
    let (_dir, db) = temp_db();
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/continuity/codex-go-webhook-retries.jsonl");
    let report = ok_json(
        &db,
        &["import", "codex", &log.display().to_string(), "--json"],
    );
    let key = report["files"][0]["sessions"][0]["key"]
        .as_str()
        .expect("the imported session's key")
        .to_owned();
    let probe = ok_json(&db, &["compact", &key, "--window", "100000000", "--json"]);
    assert_eq!(probe["skip_reason"], "below_threshold", "{probe}");
    let window = probe["tokens_before"].as_u64().expect("tokens") / 4;
    let result = ok_json(
        &db,
        &[
            "compact",
            &key,
            "--window",
            &window.to_string(),
            "--safety-margin",
            "1.0",
            "--blocking",
            "--json",
        ],
    );
    assert_eq!(result["skip_reason"], Value::Null, "{result}");
    assert!(result["removed_count"].as_u64() > Some(0), "{result}");
    assert!(result["tokens_after"].as_u64() <= Some(window), "{result}");
    let summary = result["summary"].as_str().expect("summary");
    for section in ["Task", "Constraints", "Latest request", "Files"] {
        assert!(
            summary.contains(&format!("{section}:")),
            "{section}:\n{summary}"
        );
    }
}
