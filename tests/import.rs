//! The Claude Code and Codex importers on small, realistic fixtures: what is parsed,
//! what is skipped and counted, cut-off tails, branches, and idempotent re-import.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use spool::import::{self, ImportFormat, ImportRequest, ImportedLog};
use spool::{MemoryStorage, PageRequest, Role, run};

const CLAUDE: &str = include_str!(
    "fixtures/import/claude-code/-home-dev-acme/6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f.jsonl"
);
const CLAUDE_CUT: &str = include_str!("fixtures/import/claude-code-truncated.jsonl");
const CODEX: &str = include_str!(
    "fixtures/import/codex/2025/10/17/rollout-2025-10-17T05-50-00-0199f0a1-7c2e-7d40-9b1a-5e6f7a8b9c0d.jsonl"
);
const CODEX_LEGACY: &str = include_str!("fixtures/import/codex-legacy.jsonl");
const CLAUDE_ID: &str = "6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f";
const CODEX_ID: &str = "0199f0a1-7c2e-7d40-9b1a-5e6f7a8b9c0d";

fn roles(log: &ImportedLog, session: usize) -> Vec<(Role, String)> {
    log.sessions[session]
        .entries
        .iter()
        .map(|e| (e.role, e.message_id.clone()))
        .collect()
}

#[test]
fn test_claude_code_main_path_tools_usage_and_skips() {
    let log = import::parse_claude_code(CLAUDE);
    assert_eq!(
        log.sessions.len(),
        3,
        "the main path, one branch and a sub-agent"
    );
    let main = &log.sessions[0];
    assert_eq!(main.provider_session_id, CLAUDE_ID);
    assert_eq!(main.cwd.as_deref(), Some("/home/dev/acme"));
    assert_eq!(main.git_branch.as_deref(), Some("main"));
    assert_eq!(main.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    let ids: Vec<&str> = main.entries.iter().map(|e| e.message_id.as_str()).collect();
    // The main session is the log's first path: u4 answers u3 first, u5 is the rewind.
    // a1 holds only thinking: an entry with reasoning and no text.
    assert_eq!(ids, ["u1", "a1", "a2", "a3", "u2", "a4", "u3", "u4", "a5"]);
    let by_id = |id: &str| main.entries.iter().find(|e| e.message_id == id).expect(id);
    assert_eq!(by_id("u1").role, Role::User);
    assert_eq!(by_id("u2").role, Role::Tool);
    assert_eq!(by_id("u2").tool_call_id.as_deref(), Some("toolu_01XyZ"));
    assert!(by_id("u2").content.contains("Exit code 101"));
    assert_eq!(by_id("a1").content, "");
    assert_eq!(
        by_id("a1").reasoning.as_deref(),
        Some("Let me run the tests first.")
    );
    let call = by_id("a3").tool_calls.as_ref().expect("tool call");
    assert_eq!(call[0]["id"], "toolu_01XyZ");
    assert_eq!(call[0]["input"]["command"], "cargo test -p parser");
    let a4 = by_id("a4");
    assert!(a4.content.contains("Next I will fix the depth counter"));
    assert_eq!(a4.tool_calls.as_ref().expect("edit")[0]["name"], "Edit");
    // One response written as three lines carries its usage once, on its first line.
    let usage: Vec<&str> = main
        .entries
        .iter()
        .filter(|e| e.turn_usage.is_some())
        .map(|e| e.message_id.as_str())
        .collect();
    assert_eq!(usage, ["a1", "a4", "a5"]);
    let u = by_id("a1").turn_usage.as_ref().expect("usage");
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cache_write_tokens),
        (12, 40, 1500)
    );
    assert_eq!(by_id("u1").created_at, 1_760_691_600_000);
    // The summary line is the title (its leaf a4 is on the main path).
    assert_eq!(main.title.as_deref(), Some("Fix flaky parser test"));
    assert_eq!(log.skipped.get("file-history-snapshot"), Some(&1));
    assert_eq!(log.skipped.len(), 1, "{:?}", log.skipped);
    assert_eq!((log.truncated_tail, log.invalid_lines.len()), (None, 0));
}

#[test]
fn test_claude_code_rewound_turn_becomes_a_branch_session() {
    let log = import::parse_claude_code(CLAUDE);
    let branch = &log.sessions[1];
    assert_eq!(branch.provider_session_id, format!("{CLAUDE_ID}@u5"));
    let fork = branch.fork_of.as_ref().expect("a fork");
    assert_eq!(
        (
            fork.provider_session_id.as_str(),
            fork.after_message_id.as_str()
        ),
        (CLAUDE_ID, "u3")
    );
    assert_eq!(
        roles(&log, 1),
        [
            (Role::User, "u5".into()),
            (Role::System, "y1".into()),
            (Role::Assistant, "a6".into())
        ]
    );
    assert_eq!(branch.entries[0].parent_message_id.as_deref(), Some("u3"));
}

#[test]
fn test_cut_off_last_line_keeps_everything_before_it() {
    let log = import::parse_claude_code(CLAUDE_CUT);
    assert_eq!(log.truncated_tail, Some(15));
    assert!(log.invalid_lines.is_empty());
    let ids: Vec<&str> = log.sessions[0]
        .entries
        .iter()
        .map(|e| e.message_id.as_str())
        .collect();
    assert_eq!(ids, ["u1", "a1", "a2", "a3", "u2", "a4", "u3", "u4", "a5"]);
}

#[test]
fn test_codex_rollout_messages_calls_outputs_and_usage() {
    let log = import::parse_codex(CODEX);
    assert_eq!(log.sessions.len(), 1);
    let s = &log.sessions[0];
    assert_eq!(s.provider_session_id, CODEX_ID);
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/webshop"));
    assert_eq!(s.version.as_deref(), Some("0.46.0"));
    assert_eq!(s.git_branch.as_deref(), Some("feature/cart"));
    assert_eq!(s.model.as_deref(), Some("gpt-5-codex"));
    let kinds: Vec<Role> = s.entries.iter().map(|e| e.role).collect();
    // The reasoning item (line 6) is kept as its own assistant entry.
    assert_eq!(
        kinds,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(s.entries[0].kind, Some(spool::EntryKind::Context));
    assert_eq!(s.entries[1].message_id, format!("{CODEX_ID}:4"));
    assert_eq!(
        s.entries[2].reasoning,
        Some(format!(
            "Looking at coupon code\n\n[encrypted reasoning: {} bytes]",
            "gAAAAB...".len()
        ))
    );
    let shell = &s.entries[3].tool_calls.as_ref().expect("call")[0];
    assert_eq!(
        (shell["id"].as_str(), shell["name"].as_str()),
        (Some("call_Q1w2E3r4"), Some("shell"))
    );
    assert_eq!(s.entries[4].tool_call_id.as_deref(), Some("call_Q1w2E3r4"));
    assert_eq!(s.entries[4].tool_status, Some(spool::ToolStatus::Ok));
    assert_eq!(
        s.entries[5].tool_calls.as_ref().expect("patch")[0]["name"],
        "apply_patch"
    );
    // Cached prompt tokens are cache reads, not input (OpenAI counts them in input).
    let usage = |i: usize| {
        s.entries[i]
            .turn_usage
            .as_ref()
            .map(|u| (u.input_tokens, u.cache_read_tokens, u.output_tokens))
    };
    assert_eq!(usage(3), Some((5120 - 3072, 3072, 210)));
    assert_eq!(usage(7), Some((6080 - 5120, 5120, 210)));
    assert_eq!(
        s.entries[7].turn_usage.as_ref().map(|u| u.model.as_str()),
        Some("gpt-5-codex")
    );
    assert_eq!(log.skipped.get("response_item:reasoning"), None);
    assert_eq!(log.skipped.get("event_msg:user_message"), Some(&1));
    assert_eq!(log.skipped.get("event_msg:agent_message"), Some(&1));
    assert_eq!(log.skipped.get("ghost_snapshot"), Some(&1));
}

#[test]
fn test_codex_legacy_rollout_and_an_invalid_middle_line() {
    let log = import::parse_codex(CODEX_LEGACY);
    let s = &log.sessions[0];
    assert_eq!(
        s.provider_session_id,
        "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    );
    assert_eq!(s.entries.len(), 5);
    assert_eq!(log.invalid_lines, [7]);
    assert_eq!(log.truncated_tail, None);
    assert_eq!(log.skipped.get("state"), Some(&1));
}

fn import_into(
    storage: &MemoryStorage,
    format: ImportFormat,
    text: &str,
) -> Vec<spool::import::ImportOutcome> {
    let log = import::parse(format, text);
    log.sessions
        .into_iter()
        .enumerate()
        .map(|(i, session)| {
            let request = ImportRequest {
                key: format!("import:{}:{}", format.agent_type(), i),
                session_id: format!("imp-{i}"),
                format,
                session,
                parent_key: None,
                prices: None,
            };
            run(
                storage,
                import::import_session("w", request, 9_999_999_999_999),
            )
            .expect("imported")
        })
        .collect()
}

#[test]
fn test_reimport_is_idempotent_and_a_grown_log_adds_only_the_new_entries() {
    let storage = MemoryStorage::new();
    let first = import_into(&storage, ImportFormat::ClaudeCode, CLAUDE_CUT);
    assert_eq!((first[0].created, first[0].imported), (true, 9));
    let again = import_into(&storage, ImportFormat::ClaudeCode, CLAUDE_CUT);
    assert_eq!(
        (
            again[0].created,
            again[0].imported,
            again[0].already_present
        ),
        (false, 0, 9)
    );
    let grown = import_into(&storage, ImportFormat::ClaudeCode, CLAUDE);
    assert_eq!((grown[0].imported, grown[0].already_present), (0, 9));
    assert_eq!((grown[1].imported, grown[1].already_present), (1, 2));
    let page = run(
        &storage,
        spool::read_page(
            "w",
            "import:claude_code:0",
            PageRequest {
                order: spool::Order::OldestFirst,
                cursor: None,
                limit: 100,
            },
        ),
    )
    .expect("page");
    let ids: Vec<&str> = page.entries.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids, ["u1", "a1", "a2", "a3", "u2", "a4", "u3", "u4", "a5"]);
    let session = &grown[0].session;
    assert_eq!(session.entry_count, 9);
    assert_eq!(session.input_tokens, 12 + 8 + 5);
    assert_eq!(session.cache_read, 1500 + 1700);
    assert_eq!(session.cache_write, 1500 + 200);
    assert_eq!(session.created_at, 1_760_691_600_000);
    assert_eq!(
        session.updated_at, 1_760_691_665_000,
        "the last entry's time"
    );
    assert_eq!(session.model_config["claude_code_thread_id"], CLAUDE_ID);
    assert_eq!(session.metadata["import"]["cwd"], "/home/dev/acme");
}

#[test]
fn test_imported_provider_session_is_resumable() {
    let storage = MemoryStorage::new();
    import_into(&storage, ImportFormat::Codex, CODEX);
    let decision = run(
        &storage,
        spool::select_resume(
            "w",
            spool::ResumeRequest {
                agent_type: "codex".into(),
                role_session_id: None,
                project_id: Some("webshop".into()),
                scope_id: None,
                preconfigured: None,
                surviving_agents: None,
            },
        ),
    )
    .expect("selected");
    assert_eq!(
        (decision.mode.as_str(), decision.session_id.as_str()),
        ("resume", CODEX_ID)
    );
    let plan = run(
        &storage,
        spool::plan_provider_thread("w", "import:codex:0", "codex", None),
    )
    .expect("plan");
    assert_eq!(plan.thread_id.as_deref(), Some(CODEX_ID));
}

#[test]
fn test_import_rejects_oversized_slices_and_bad_keys_without_writing() {
    let storage = MemoryStorage::new();
    let mut session = import::parse_codex(CODEX).sessions.remove(0);
    let one = session.entries[0].clone();
    session.entries = vec![one; import::MAX_IMPORT_ENTRIES + 1];
    let request = ImportRequest {
        key: "import:codex:big".into(),
        session_id: "big".into(),
        format: ImportFormat::Codex,
        session,
        parent_key: None,
        prices: None,
    };
    let err = run(&storage, import::import_session("w", request.clone(), 1)).expect_err("too many");
    assert_eq!(err.code(), "invalid_argument");
    let bad = ImportRequest {
        key: String::new(),
        ..request
    };
    assert_eq!(
        run(&storage, import::import_session("w", bad, 1))
            .expect_err("bad key")
            .code(),
        "invalid_argument"
    );
    assert_eq!(
        run(&storage, spool::get_session("w", "import:codex:big")).expect("read"),
        None
    );
}

/// A Codex rollout of user messages, built in memory.
fn codex_log(provider_id: &str, texts: &[&str]) -> String {
    let mut lines = vec![serde_json::json!({
        "timestamp": "2025-10-17T05:50:00.000Z", "type": "session_meta",
        "payload": {"id": provider_id, "timestamp": "2025-10-17T05:50:00.000Z",
                    "cwd": "/home/dev/big"}
    })];
    for text in texts {
        lines.push(serde_json::json!({
            "timestamp": "2025-10-17T05:50:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": text}]}
        }));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The whole transcript, page by page (a page holds about a megabyte).
fn transcript(storage: &MemoryStorage, key: &str) -> Vec<spool::Entry> {
    support::entries(storage, "w", key, false)
}

#[test]
fn test_an_entry_over_the_content_limit_is_cut_with_a_marker_and_the_rest_imported() {
    let storage = MemoryStorage::new();
    let huge = "y".repeat(spool::validate::MAX_CONTENT_BYTES + 1000);
    let log = codex_log("thread-big", &["before", &huge, "after"]);
    let outcome = import_into(&storage, ImportFormat::Codex, &log).remove(0);
    assert_eq!(
        outcome.imported, 3,
        "one large entry does not drop the session"
    );
    assert_eq!(outcome.adjusted.len(), 1, "{:?}", outcome.adjusted);
    let adjusted = &outcome.adjusted[0];
    assert_eq!(adjusted.action, "truncated");
    assert!(
        adjusted.reason.contains(&huge.len().to_string()),
        "{adjusted:?}"
    );
    let entries = transcript(&storage, "import:codex:0");
    let contents: Vec<usize> = entries.iter().map(|e| e.content.len()).collect();
    assert_eq!(entries[0].content, "before");
    assert_eq!(entries[2].content, "after");
    let cut = &entries[1];
    assert_eq!(cut.message_id, adjusted.message_id);
    assert!(
        cut.content.len() <= spool::validate::MAX_CONTENT_BYTES,
        "{contents:?}"
    );
    assert!(cut.content.starts_with("yyyy"));
    assert!(
        cut.content
            .ends_with(&format!("the original was {} bytes]", huge.len())),
        "the cut is marked"
    );
    // Importing the same log again finds the cut entry present.
    let again = import_into(&storage, ImportFormat::Codex, &log).remove(0);
    assert_eq!((again.imported, again.already_present), (0, 3));
}

#[test]
fn test_an_entry_that_cannot_be_written_is_left_out_and_reported() {
    let storage = MemoryStorage::new();
    let mut session = import::parse_codex(&codex_log("thread-odd", &["one", "two", "three"]))
        .sessions
        .remove(0);
    let bad_id = "m".repeat(300);
    session.entries[1].message_id = bad_id.clone();
    let request = ImportRequest {
        key: "import:codex:odd".into(),
        session_id: "odd".into(),
        format: ImportFormat::Codex,
        session,
        parent_key: None,
        prices: None,
    };
    let outcome = run(&storage, import::import_session("w", request, 1)).expect("imported");
    assert_eq!(outcome.imported, 2);
    assert_eq!(outcome.adjusted.len(), 1);
    let skipped = &outcome.adjusted[0];
    assert_eq!(skipped.action, "skipped");
    assert!(skipped.reason.contains("message_id"), "{skipped:?}");
    assert!(skipped.message_id.len() < 100, "quoted short: {skipped:?}");
    let contents: Vec<String> = transcript(&storage, "import:codex:odd")
        .into_iter()
        .map(|e| e.content)
        .collect();
    assert_eq!(contents, ["one", "three"]);
}

#[test]
fn test_a_provider_id_over_128_bytes_is_sanitized_not_refused() {
    let storage = MemoryStorage::new();
    let long_id = format!("thread-{}", "7".repeat(200));
    let log = codex_log(&long_id, &["hello", "world"]);
    let outcome = import_into(&storage, ImportFormat::Codex, &log).remove(0);
    let recorded = import::sanitize_id(&long_id);
    assert!(
        recorded.len() <= spool::validate::MAX_ID_BYTES,
        "{recorded}"
    );
    assert_eq!(outcome.imported, 2, "{:?}", outcome.adjusted);
    assert!(outcome.adjusted.is_empty(), "{:?}", outcome.adjusted);
    assert_eq!(
        outcome.sanitized_provider_session_id.as_deref(),
        Some(recorded.as_str())
    );
    let session = &outcome.session;
    assert_eq!(session.metadata["import"]["provider_session_id"], recorded);
    assert!(
        !session.model_config.contains_key("codex_thread_id"),
        "no provider resumes the sanitized id: no binding"
    );
    let decision = run(
        &storage,
        spool::select_resume(
            "w",
            spool::ResumeRequest {
                agent_type: "codex".into(),
                role_session_id: None,
                project_id: Some("big".into()),
                scope_id: None,
                preconfigured: None,
                surviving_agents: None,
            },
        ),
    )
    .expect("selected");
    assert_ne!(decision.mode, "resume", "{decision:?}");
    // The same id sanitizes the same way every time.
    assert_eq!(import::sanitize_id(&long_id), recorded);
    assert_ne!(import::sanitize_id(&format!("{long_id}8")), recorded);
}

#[test]
fn test_import_slices_hold_at_most_a_thousand_entries_and_about_eight_megabytes() {
    let entry = |size: usize| -> spool::import::ImportedEntry {
        serde_json::from_value(serde_json::json!({
            "message_id": format!("m{size}"), "role": "user",
            "content": "x".repeat(size), "created_at": 1
        }))
        .expect("an entry")
    };
    let small: Vec<_> = (0..2_500).map(|_| entry(10)).collect();
    let sizes: Vec<usize> = spool::import::slices(&small)
        .iter()
        .map(|s| s.len())
        .collect();
    assert_eq!(sizes, [1000, 1000, 500]);
    let large: Vec<_> = (0..7).map(|_| entry(3 << 20)).collect();
    let sizes: Vec<usize> = spool::import::slices(&large)
        .iter()
        .map(|s| s.len())
        .collect();
    assert_eq!(sizes, [2, 2, 2, 1]);
    assert_eq!(
        spool::import::slices(&[]).len(),
        1,
        "an empty session is one empty slice"
    );
    let whole: usize = spool::import::slices(&large).iter().map(|s| s.len()).sum();
    assert_eq!(whole, 7);
}
