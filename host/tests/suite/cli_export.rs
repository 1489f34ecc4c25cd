//! `spool export KEY` → `spool import spool FILE` moves a session to another database
//! whole: every entry field, the summaries and the active/archived split, the session's
//! record; `spool export KEY --format markdown` is a readable transcript with tool calls
//! collapsed and failures marked.

#[path = "../../../tests/support/rich_turn.rs"]
mod rich_turn;

use std::path::Path;

use crate::common::{ok, ok_json, temp_db};
use serde_json::{Value, json};
use spool::compaction::{CompactRequest, Summary};
use spool::{Entry, FinishStatus, Order, PageRequest, Session, UpdateRequest};
use spool_host::Spool;

const KEY: &str = "agent:main:main";

fn open(db: &Path) -> Spool {
    Spool::builder().database(db).open().expect("open")
}

/// One turn ([`rich_turn::rich_turn`]).
fn turn(spool: &mut Spool, n: u64) {
    for (request, _) in rich_turn::rich_turn(n) {
        spool.append_entry(KEY, request).expect("append");
    }
}

fn compact(spool: &mut Spool) {
    let request = CompactRequest {
        trigger_reason: Some("context_overflow".into()),
        ..CompactRequest::new(1200)
    };
    let result = spool.compact(KEY, request).expect("compact");
    assert!(result.skip_reason.is_none(), "{:?}", result.skip_reason);
}

/// A finished session with configuration, metadata, turns and two compactions.
fn build(db: &Path) {
    let mut spool = open(db);
    spool.create_session(KEY).expect("create");
    let update = UpdateRequest {
        model: Some("claude-sonnet-4-5".into()),
        channel: Some("cli".into()),
        model_config: [("claude_code_thread_id".to_owned(), json!("6f1c2a7e"))].into(),
        metadata: [("title".to_owned(), json!("Fix the parser"))].into(),
        expected_epoch: None,
    };
    spool.update(KEY, update).expect("update");
    for n in 0..3 {
        turn(&mut spool, n);
    }
    compact(&mut spool);
    turn(&mut spool, 3);
    turn(&mut spool, 4);
    compact(&mut spool);
    turn(&mut spool, 5);
    spool.finish(KEY, FinishStatus::Done, None).expect("finish");
}

struct Snapshot {
    session: Session,
    canonical: Vec<Entry>,
    active: Vec<String>,
    summaries: Vec<Summary>,
}

fn snapshot(db: &Path) -> Snapshot {
    let mut spool = open(db);
    let page = PageRequest {
        order: Order::OldestFirst,
        cursor: None,
        limit: 1000,
    };
    Snapshot {
        session: spool.get_session(KEY).expect("get").expect("exists"),
        canonical: spool.canonical_transcript(KEY).expect("canonical"),
        active: spool
            .read_page(KEY, page)
            .expect("page")
            .entries
            .into_iter()
            .map(|e| e.message_id)
            .collect(),
        summaries: spool.list_summaries(KEY).expect("summaries"),
    }
}

/// Every field of an entry but its insertion id (each database numbers its own).
fn fields(e: &Entry) -> Value {
    let mut value = serde_json::to_value(e).expect("json");
    value.as_object_mut().expect("object").remove("id");
    value
}

/// A summary without its identity and archived entry id (the importing session's), with
/// the message id of that entry instead.
fn summaries(s: &Snapshot) -> Vec<(Value, String)> {
    s.summaries
        .iter()
        .map(|summary| {
            let through = s
                .canonical
                .iter()
                .find(|e| e.id == summary.covered_through_id)
                .map(|e| e.message_id.clone())
                .expect("archived entry");
            let mut value = serde_json::to_value(summary).expect("json");
            let map = value.as_object_mut().expect("object");
            map.remove("session_id");
            map.remove("covered_through_id");
            (value, through)
        })
        .collect()
}

#[test]
fn test_export_then_import_spool_moves_the_whole_session() {
    let (src_dir, src) = temp_db();
    build(&src);
    let before = snapshot(&src);
    assert_eq!(before.summaries.len(), 2, "two compactions");
    assert!(
        before.active.len() < before.canonical.len(),
        "some entries archived"
    );
    let file = src_dir.path().join("session.jsonl");
    ok(&src, &["export", KEY, "--out", &file.display().to_string()]);
    let text = std::fs::read_to_string(&file).expect("export file");
    let header: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("json");
    assert_eq!(header["spool_export"], 1);
    assert_eq!(header["session"]["key"], KEY);

    let (_dst_dir, dst) = temp_db();
    let report = ok_json(
        &dst,
        &["import", "spool", &file.display().to_string(), "--json"],
    );
    assert_eq!(report["files"][0]["sessions"][0]["key"], KEY, "{report}");
    let after = snapshot(&dst);
    assert_eq!(
        before.canonical.iter().map(fields).collect::<Vec<_>>(),
        after.canonical.iter().map(fields).collect::<Vec<_>>(),
        "every entry field"
    );
    assert_eq!(before.active, after.active, "the active part");
    assert_eq!(summaries(&before), summaries(&after), "the summaries");
    let (a, b) = (&before.session, &after.session);
    assert_eq!(
        (
            a.status,
            a.created_at,
            a.updated_at,
            a.ended_at,
            &a.model,
            &a.model_config
        ),
        (
            b.status,
            b.created_at,
            b.updated_at,
            b.ended_at,
            &b.model,
            &b.model_config
        )
    );
    assert_eq!(
        (
            a.entry_count,
            a.compaction_count,
            a.input_tokens,
            a.output_tokens
        ),
        (
            b.entry_count,
            b.compaction_count,
            b.input_tokens,
            b.output_tokens
        )
    );
    assert_eq!(
        (a.cache_read, a.cache_write, a.total_tokens),
        (b.cache_read, b.cache_write, b.total_tokens)
    );
    assert_eq!(b.metadata["title"], "Fix the parser");
    assert_eq!(
        b.metadata["import"]["export"]["session_id"],
        a.session_id.as_str()
    );

    // Importing the same file again adds nothing.
    let again = ok_json(
        &dst,
        &["import", "spool", &file.display().to_string(), "--json"],
    );
    let session = &again["files"][0]["sessions"][0];
    assert_eq!(session["imported"], 0, "{again}");
    assert_eq!(session["already_present"], before.canonical.len());
    assert_eq!(snapshot(&dst).summaries.len(), 2);
}

#[test]
fn test_markdown_export_collapses_tool_calls_and_marks_errors() {
    let (dir, db) = temp_db();
    build(&db);
    let out = ok(&db, &["export", KEY, "--format", "markdown"]);
    assert!(out.starts_with("# agent:main:main\n"), "{out}");
    assert!(out.contains("<details><summary>tool call <code>Bash</code> (call-1-a)</summary>"));
    assert!(out.contains("result of <code>call-1-b</code>: error"));
    assert!(
        out.lines()
            .any(|l| l.starts_with("## tool · ") && l.contains("❌ error")),
        "a failed result is marked in its heading"
    );
    assert!(out.contains("reasoning: "), "reasoning as a size marker");
    assert!(!out.contains("off by one"), "not its text");
    assert!(out.contains("attachment: image, image/png, 4097 bytes"));
    assert!(out.contains("## 📝 compaction summary 1"));
    // The default stays JSON Lines, and --json-lines still works.
    for args in [&["export", KEY][..], &["export", KEY, "--json-lines"][..]] {
        let first = ok(&db, args)
            .lines()
            .next()
            .map(str::to_owned)
            .expect("a line");
        let header: Value = serde_json::from_str(&first).expect("json");
        assert_eq!(header["spool_export"], 1);
    }
    // --out is written whole or not at all, Markdown too.
    let file = dir.path().join("t.md");
    ok(
        &db,
        &[
            "export",
            KEY,
            "--format",
            "markdown",
            "--out",
            &file.display().to_string(),
        ],
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), out);
}

/// On a terminal, `spool export --out FILE` counts the entries it writes on stderr (a
/// bar drawn through a pseudo-terminal by `script`), and writes the same file as
/// without one; with stdout a pipe and no terminal it draws nothing.
#[test]
fn test_an_export_on_a_terminal_counts_its_entries_on_stderr() {
    let (dir, db) = temp_db();
    build(&db);
    let file = dir.path().join("on-a-terminal.jsonl");
    let command = format!(
        "{} --db {} export {KEY} --out {}",
        env!("CARGO_BIN_EXE_spool"),
        db.display(),
        file.display()
    );
    let shown = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .expect("run script (util-linux)");
    assert!(shown.status.success(), "{shown:?}");
    let terminal = String::from_utf8_lossy(&shown.stdout);
    assert!(
        terminal.contains(&format!("export {KEY}")) && terminal.contains("entries"),
        "{terminal:?}"
    );
    let piped = dir.path().join("piped.jsonl");
    let quiet = crate::common::spool(&db, &["export", KEY, "--out", &piped.display().to_string()]);
    assert!(quiet.status.success());
    assert_eq!(crate::common::stderr(&quiet), "");
    assert_eq!(
        std::fs::read(&file).expect("read"),
        std::fs::read(&piped).expect("read")
    );
}
