//! `spool demo`: a scripted coding-agent session, shown step by step — a failing test
//! fixed with tool calls, compacted with its coverage report, branched, and recorded as
//! a run that the next task resumes.
//!
//! Every run tells the same story: the previous demo sessions are deleted first.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use spool::compaction::{CompactRequest, CompactionResult};
use spool::resume::rules::TaskOutcome;
use spool::{AppendRequest, OutcomeRequest, ResumeRequest, Role};
use spool_host::{BranchOptions, Error, Spool};

use crate::cli::lifecycle::KeyArgs;
use crate::cli::{fork, print_json, render};

/// The demo session's key.
pub(crate) const KEY: &str = "agent:demo:main";
/// The branch the demo makes: a retry from before the fix.
const BRANCH: &str = "agent:demo:retry";
/// The message the branch forks before: the assistant's edit.
const BRANCH_BEFORE: &str = "demo-7";
/// The context window of the demo's compaction: small, so the conversation overflows it.
const WINDOW: u64 = 300;
/// The agent, project, task and provider thread of the recorded run.
const AGENT: &str = "codex";
const PROJECT: &str = "spool-demo";
const TASK: &str = "fix-nested-lists";
const THREAD: &str = "thread-demo-1";

fn entry(n: u32, role: Role, content: &str, tokens: u64) -> AppendRequest {
    let mut request = AppendRequest::new(role, content);
    request.token_count = Some(tokens);
    request.message_id = Some(format!("demo-{n}"));
    request.turn_id = Some("turn-1".to_owned());
    request
}

fn tool_call(
    n: u32,
    content: &str,
    tokens: u64,
    id: &str,
    name: &str,
    args: Value,
) -> AppendRequest {
    let mut request = entry(n, Role::Assistant, content, tokens);
    request.tool_calls = Some(json!([{
        "id": id,
        "type": "function",
        "function": { "name": name, "arguments": args.to_string() },
    }]));
    request
}

fn tool_result(n: u32, content: &str, tokens: u64, id: &str) -> AppendRequest {
    let mut request = entry(n, Role::Tool, content, tokens);
    request.tool_call_id = Some(id.to_owned());
    request
}

/// The conversation: a user goal, a failing `cargo test`, a read, an edit, a passing run.
fn script() -> Vec<AppendRequest> {
    vec![
        entry(
            1,
            Role::User,
            "Goal: make `cargo test` pass again; parser::tests::parses_nested_lists fails since \
             my last change.\nConstraint: do not change the public API of src/parser.rs.",
            38,
        ),
        tool_call(
            2,
            "Running the test suite to see the failure.",
            22,
            "call_1",
            "bash",
            json!({ "cmd": "cargo test" }),
        ),
        tool_result(
            3,
            "test parser::tests::parses_nested_lists ... FAILED\n\
             Error: assertion `left == right` failed at src/parser.rs:88\n  left: [1, [2]]\n right: [1, [2, 3]]\n\
             test result: FAILED. 13 passed; 1 failed\nExit code 101",
            64,
            "call_1",
        ),
        tool_call(
            4,
            "The last element of a nested list is dropped. Reading the list parser.",
            30,
            "call_2",
            "read_file",
            json!({ "path": "src/parser.rs", "lines": [70, 95] }),
        ),
        tool_result(
            5,
            "78:     loop {\n79:         let item = self.parse_value()?;\n\
             80:         if self.peek() == Some(']') { break; }\n81:         items.push(item);",
            96,
            "call_2",
        ),
        entry(
            6,
            Role::Assistant,
            "Found it: the loop checks for `]` before pushing the item it just parsed, so the \
             last element of every list is lost.",
            34,
        ),
        tool_call(
            7,
            "Moving the check after `items.push(item)` in src/parser.rs.",
            41,
            "call_3",
            "edit_file",
            json!({
                "path": "src/parser.rs",
                "old": "if self.peek() == Some(']') { break; }\n        items.push(item);",
                "new": "items.push(item);\n        if self.peek() == Some(']') { break; }",
            }),
        ),
        tool_result(8, "edited src/parser.rs (2 lines)", 9, "call_3"),
        tool_call(
            9,
            "Re-running the tests.",
            16,
            "call_4",
            "bash",
            json!({ "cmd": "cargo test" }),
        ),
        tool_result(
            10,
            "test result: ok. 14 passed; 0 failed\nExit code 0",
            18,
            "call_4",
        ),
        entry(
            11,
            Role::Assistant,
            "Fixed: src/parser.rs pushed the parsed item only after checking for `]`. \
             `cargo test` passes (14 tests); the public API is unchanged.",
            36,
        ),
    ]
}

/// Runs the demo on `spool` (the database at `db`), printing each step, or with `json`
/// one document with every step's result.
pub(crate) fn run(spool: &mut Spool, db: &Path, json: bool) -> Result<(), Error> {
    let say = |text: String| {
        if !json {
            out!("{text}");
        }
    };
    say(format!(
        "{} a coding agent fixes a failing test, recorded in {}\n\n",
        render::bold("spool demo:"),
        spool_host::display_database(db)
    ));

    // A fresh story every time: the branch goes first (a parent keeps its children).
    let mut replaced = false;
    for key in [BRANCH, KEY] {
        if spool.get_session(key)?.is_some() {
            spool.delete_session(key, None)?;
            replaced = true;
        }
    }

    let session = spool.create_session(KEY)?;
    say(step(1, &format!("create the session {KEY}")));
    say(format!(
        "   session id {}{}\n\n",
        session.session_id,
        if replaced {
            " (the previous demo sessions were deleted)"
        } else {
            ""
        }
    ));

    say(step(
        2,
        "the agent works: user goal, tool calls, tool results",
    ));
    let mut entries = Vec::new();
    for request in script() {
        let entry = spool.append_entry(KEY, request)?;
        say(format!("   {}\n", line(&entry)));
        entries.push(entry);
    }
    let session = spool
        .get_session(KEY)?
        .ok_or_else(|| crate::cli::not_found(format!("session not found: {KEY}")))?;
    say(format!(
        "   {} entries, {} tokens\n\n",
        session.entry_count, session.total_tokens
    ));

    say(step(
        3,
        &format!("compact with a {WINDOW}-token window (built-in summarizer)"),
    ));
    let compaction = spool.compact(
        KEY,
        CompactRequest {
            context_window_tokens: WINDOW,
            config: Default::default(),
            compaction_id: None,
            trigger_reason: Some("demo".to_owned()),
            flush_receipt_status: None,
        },
    )?;
    say(coverage(&compaction));

    say(step(
        4,
        &format!("branch {KEY} before the edit ({BRANCH_BEFORE}) into {BRANCH}"),
    ));
    let branch = spool.branch(KEY, BRANCH, BranchOptions::before(BRANCH_BEFORE))?;
    say(format!(
        "   {BRANCH} shares the {} entries before {BRANCH_BEFORE}; the retry writes its own\n",
        branch.session.entry_count
    ));
    if !json {
        out!("\n");
        fork::tree(
            spool,
            &KeyArgs {
                key: BRANCH.to_owned(),
                json: false,
            },
        )?;
        outln!();
    }

    say(step(
        5,
        &format!(
            "record the run ({AGENT}, task {TASK}: done, thread {THREAD}), then pick what the next task resumes"
        ),
    ));
    let effects = spool.record_task_outcome(OutcomeRequest {
        role_session_id: None,
        project_id: PROJECT.to_owned(),
        outcome: TaskOutcome {
            agent_type: AGENT.to_owned(),
            task_id: TASK.to_owned(),
            status: "done".to_owned(),
            token: Some(THREAD.to_owned()),
            resumed_from: None,
            from_stream: false,
        },
        workspace_path: None,
        run_mode: None,
        metadata: BTreeMap::new(),
        surviving_agents: None,
    })?;
    let decision = spool.select_resume(ResumeRequest {
        agent_type: AGENT.to_owned(),
        role_session_id: None,
        project_id: Some(PROJECT.to_owned()),
        scope_id: None,
        preconfigured: None,
        surviving_agents: None,
    })?;
    say(format!(
        "   recorded: {TASK} done with {THREAD}\n   next task in {PROJECT}: {}\n\n",
        match decision.mode.as_str() {
            "resume" => format!("resume {} ({AGENT})", decision.session_id),
            other => other.to_owned(),
        }
    ));

    if json {
        return print_json(&json!({
            "session": session,
            "entries": entries,
            "compaction": compaction,
            "branch": branch,
            "outcome": effects,
            "resume": decision,
        }));
    }
    outln!("{}", render::bold("What next"));
    for (command, what) in [
        (
            format!("spool show {KEY}"),
            "the whole session (--json for machines)",
        ),
        (
            format!("spool canonical {KEY}"),
            "everything appended, including what was compacted",
        ),
        (
            "spool import claude-code ~/.claude/projects/<dir>/".to_owned(),
            "your Claude Code sessions",
        ),
        (
            "spool import codex ~/.codex/sessions/".to_owned(),
            "your Codex sessions",
        ),
        ("spool --help".to_owned(), "every command, with examples"),
    ] {
        outln!("  {command:<50}  {what}");
    }
    Ok(())
}

fn step(n: u32, text: &str) -> String {
    format!("{}\n", render::bold(&format!("{n}. {text}")))
}

/// One entry on one line: role, then its text, tool call or tool result, clipped.
fn line(e: &spool::Entry) -> String {
    let first = e.content.lines().next().unwrap_or("");
    let text = match (&e.tool_calls, &e.tool_call_id) {
        (Some(calls), _) => {
            let call = &calls[0];
            format!(
                "{first}  → {} {}",
                call["function"]["name"].as_str().unwrap_or("?"),
                call["function"]["arguments"].as_str().unwrap_or("")
            )
        }
        (None, Some(id)) => {
            let last = e.content.lines().last().unwrap_or("");
            if last == first {
                format!("← {id}: {first}")
            } else {
                format!("← {id}: {first} … {last}")
            }
        }
        (None, None) => first.to_owned(),
    };
    let text = match text.char_indices().nth(96) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    };
    format!("#{:<2} {:<9} {text}", e.id, e.role.as_str())
}

/// The coverage report of the demo's compaction.
fn coverage(r: &CompactionResult) -> String {
    let mut out = String::new();
    if let Some(reason) = &r.skip_reason {
        out.push_str(&format!("   skipped: {reason}\n\n"));
        return out;
    }
    out.push_str(&format!("   coverage   {}\n", r.coverage_status));
    out.push_str(&format!(
        "   removed    {} entries (kept in the canonical transcript), kept {}\n",
        r.removed_count,
        r.kept_entries.len()
    ));
    out.push_str(&format!(
        "   tokens     {} → {}\n",
        r.tokens_before, r.tokens_after
    ));
    if r.missing_obligations.is_empty() {
        out.push_str(
            "   obligations: every goal, constraint, path, tool id and failure is in the summary\n",
        );
    } else {
        out.push_str(&format!(
            "   back-filled {} obligation{} the summary missed:\n",
            r.missing_obligations.len(),
            if r.missing_obligations.len() == 1 {
                ""
            } else {
                "s"
            }
        ));
        for missing in &r.missing_obligations {
            let missing = missing.lines().next().unwrap_or("");
            let missing = match missing.char_indices().nth(90) {
                Some((cut, _)) => format!("{}…", &missing[..cut]),
                None => missing.to_owned(),
            };
            out.push_str(&format!("     - {missing}\n"));
        }
        if !r.dropped_obligations.is_empty() {
            out.push_str(&format!(
                "   of which {} did not fit in the window: dropped (still in the canonical transcript)\n",
                r.dropped_obligations.len()
            ));
        }
    }
    out.push_str(&format!("   summary ({}):\n", r.summary_source));
    for line in r.summary.lines().take(12) {
        out.push_str(&format!("     {line}\n"));
    }
    if r.summary.lines().count() > 12 {
        out.push_str("     …\n");
    }
    out.push('\n');
    out
}
