//! The Claude Code importer on the shapes real logs have: parallel tool calls, rewinds,
//! compaction, streamed usage, tool failures, thinking, images, sub-agents, noise and
//! titles; and the prefix property (a log imported while it grows ends as a fresh import).
#![cfg(not(target_arch = "wasm32"))]

use crate::support::imported::entry;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use spool::import::{self, ImportFormat, ImportRequest, ImportedLog, ImportedSession};
use spool::{EntryKind, MemoryStorage, Role, Storage, ToolStatus, run};

use crate::support;

macro_rules! shape {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("fixtures/import/claude-shapes/", $name)),
        )
    };
}

const SHAPES: [(&str, &str); 8] = [
    shape!("parallel-tools.jsonl"),
    shape!("rewind.jsonl"),
    shape!("compaction.jsonl"),
    shape!("sidechain-inline.jsonl"),
    shape!("task-agent.jsonl"),
    shape!("agent-a7f3e91.jsonl"),
    shape!("images.jsonl"),
    shape!("noise-title.jsonl"),
];

/// Every Claude Code fixture: the shapes and the older general ones.
fn all_fixtures() -> Vec<(&'static str, &'static str)> {
    let mut all = SHAPES.to_vec();
    all.push((
        "claude-code",
        include_str!(
            "fixtures/import/claude-code/-home-dev-acme/6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f.jsonl"
        ),
    ));
    all.push((
        "claude-code-truncated",
        include_str!("fixtures/import/claude-code-truncated.jsonl"),
    ));
    all
}

fn shape(name: &str) -> &'static str {
    SHAPES.iter().find(|(n, _)| *n == name).expect(name).1
}

/// The fixture's JSON lines (a cut-off last line left out).
fn raw_lines(text: &str) -> Vec<serde_json::Map<String, Value>> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.as_object().cloned())
        .collect()
}

fn ids(session: &ImportedSession) -> Vec<&str> {
    session
        .entries
        .iter()
        .map(|e| e.message_id.as_str())
        .collect()
}

#[test]
fn test_every_tool_call_and_its_result_are_in_the_same_session() {
    for (name, text) in all_fixtures() {
        let log = import::parse_claude_code(text);
        // Calls and results as the fixture holds them.
        let mut results = BTreeSet::new();
        let mut calls = BTreeSet::new();
        for line in raw_lines(text) {
            let blocks = line
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array);
            for b in blocks.into_iter().flatten() {
                match b.get("type").and_then(Value::as_str) {
                    Some("tool_use") => calls.insert(b["id"].as_str().unwrap().to_owned()),
                    Some("tool_result") => {
                        results.insert(b["tool_use_id"].as_str().unwrap().to_owned())
                    }
                    _ => false,
                };
            }
        }
        for call in calls.intersection(&results) {
            let holding_call: Vec<&str> = log
                .sessions
                .iter()
                .filter(|s| {
                    s.entries.iter().any(|e| {
                        e.tool_calls
                            .as_ref()
                            .and_then(Value::as_array)
                            .is_some_and(|c| c.iter().any(|c| c["id"] == call.as_str()))
                    })
                })
                .map(|s| s.provider_session_id.as_str())
                .collect();
            let holding_result: Vec<&str> = log
                .sessions
                .iter()
                .filter(|s| {
                    s.entries
                        .iter()
                        .any(|e| e.tool_call_id.as_deref() == Some(call.as_str()))
                })
                .map(|s| s.provider_session_id.as_str())
                .collect();
            assert_eq!(holding_call.len(), 1, "{name}: {call} in {holding_call:?}");
            assert_eq!(holding_call, holding_result, "{name}: call {call}");
        }
    }
}

#[test]
fn test_a_parallel_tool_fan_out_makes_no_branch() {
    let log = import::parse_claude_code(shape("parallel-tools.jsonl"));
    assert_eq!(log.sessions.len(), 1, "{:?}", log.sessions);
    let s = &log.sessions[0];
    assert_eq!(
        s.provider_session_id,
        "1b7e0c2a-5d4f-4c3b-8a9e-0f1e2d3c4b5a"
    );
    assert!(s.fork_of.is_none());
    assert_eq!(
        ids(s),
        [
            "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p15",
            "p16", "p17", "p18", "p19", "p20"
        ]
    );
    // A sub-agent's own fan-out does not branch either.
    let inline = import::parse_claude_code(shape("sidechain-inline.jsonl"));
    assert!(inline.sessions.iter().all(|s| s.fork_of.is_none()));
}

#[test]
fn test_a_rewound_prompt_still_makes_a_branch_and_slash_commands_do_not() {
    let log = import::parse_claude_code(shape("rewind.jsonl"));
    let id = "2c8f1d3b-6e5a-4d4c-9baf-1a2b3c4d5e6f";
    assert_eq!(log.sessions.len(), 3, "{:?}", log.sessions);
    let (main, branch) = (&log.sessions[0], &log.sessions[1]);
    assert_eq!(main.provider_session_id, id);
    assert_eq!(
        ids(main),
        [
            "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"
        ],
        "the first path is the session; sibling /cost and /status stay in it"
    );
    assert_eq!(branch.provider_session_id, format!("{id}@r12"));
    assert_eq!(ids(branch), ["r12", "r13", "r14", "r15", "r16"]);
    let fork = branch.fork_of.as_ref().expect("a fork");
    assert_eq!(
        (
            fork.provider_session_id.as_str(),
            fork.after_message_id.as_str()
        ),
        (id, "r5")
    );
    assert_eq!(branch.entries[0].parent_message_id.as_deref(), Some("r5"));
    assert_eq!(
        branch.started_at, branch.entries[0].created_at,
        "a branch starts at its first entry"
    );
    // A rewind inside the branch forks the branch.
    let inner = &log.sessions[2];
    assert_eq!(inner.provider_session_id, format!("{id}@r17"));
    assert_eq!(ids(inner), ["r17", "r18"]);
    let fork = inner.fork_of.as_ref().expect("a fork");
    assert_eq!(
        (
            fork.provider_session_id.as_str(),
            fork.after_message_id.as_str()
        ),
        (branch.provider_session_id.as_str(), "r14")
    );
    assert_eq!(entry(&log, "r6").kind, Some(EntryKind::Command));
    assert_eq!(
        entry(&log, "r7").content,
        "<local-command-stdout>Total cost: $0.04</local-command-stdout>",
        "ANSI escapes stripped from command output"
    );
}

#[test]
fn test_compaction_continues_the_session_and_keeps_the_summary_as_a_summary() {
    let log = import::parse_claude_code(shape("compaction.jsonl"));
    assert_eq!(
        log.sessions.len(),
        1,
        "no parentless branch: {:?}",
        log.sessions
    );
    let s = &log.sessions[0];
    assert_eq!(ids(s), ["c1", "c2", "c3", "c4", "c5", "c7", "c8", "c9"]);
    let summary = entry(&log, "c7");
    assert_eq!(
        (summary.role, summary.kind),
        (Role::System, Some(EntryKind::Summary))
    );
    assert_eq!(summary.parent_message_id.as_deref(), Some("c5"));
    assert_eq!(log.skipped.get("system:compact_boundary"), Some(&1));
}

/// The usage of each response (`message.id`) as the fixture's last line of it says:
/// (input, output, cache read, cache write).
fn final_usage(text: &str) -> BTreeMap<String, [u64; 4]> {
    let mut out = BTreeMap::new();
    for line in raw_lines(text) {
        let Some(m) = line.get("message") else {
            continue;
        };
        if let (Some(id), Some(u)) = (m.get("id").and_then(Value::as_str), m.get("usage")) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            out.insert(
                id.to_owned(),
                [
                    n("input_tokens"),
                    n("output_tokens"),
                    n("cache_read_input_tokens"),
                    n("cache_creation_input_tokens"),
                ],
            );
        }
    }
    out
}

fn sum(figures: impl IntoIterator<Item = [u64; 4]>) -> [u64; 4] {
    figures.into_iter().fold([0; 4], |mut acc, f| {
        for (a, f) in acc.iter_mut().zip(f) {
            *a += f;
        }
        acc
    })
}

#[test]
fn test_usage_totals_are_the_sums_of_the_final_per_response_figures() {
    for (name, text) in all_fixtures() {
        let expected = sum(final_usage(text).into_values());
        let log = import::parse_claude_code(text);
        let carried: Vec<[u64; 4]> = log
            .sessions
            .iter()
            .flat_map(|s| &s.entries)
            .filter_map(|e| e.turn_usage.as_ref())
            .map(|u| {
                [
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_tokens,
                    u.cache_write_tokens,
                ]
            })
            .collect();
        assert_eq!(sum(carried.clone()), expected, "{name}: parsed");
        // Only responses whose lines the log holds whole carry usage; the cut fixture's
        // last response is cut off.
        assert!(carried.len() <= final_usage(text).len(), "{name}");
        let storage = MemoryStorage::new();
        let sessions = import_all(&storage, &log);
        let stored = sum(sessions
            .iter()
            .map(|s| [s.input_tokens, s.output_tokens, s.cache_read, s.cache_write]));
        assert_eq!(stored, expected, "{name}: session counters");
    }
}

#[test]
fn test_a_streamed_response_reimported_when_complete_gets_its_final_usage() {
    let text = shape("parallel-tools.jsonl");
    // Cut after the response's third line: usage so far is 9 output tokens.
    let prefix: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
    let storage = MemoryStorage::new();
    import_all(&storage, &import::parse_claude_code(&prefix));
    let outcomes = import_outcomes(&storage, &import::parse_claude_code(text));
    assert_eq!(outcomes[0].usage_updated, 1);
    let expected = sum(final_usage(text).into_values());
    let s = &outcomes[0].session;
    assert_eq!(
        [s.input_tokens, s.output_tokens, s.cache_read, s.cache_write],
        expected
    );
}

#[test]
fn test_tool_failures_and_interruptions_keep_their_status() {
    let log = import::parse_claude_code(shape("parallel-tools.jsonl"));
    let status = |id: &str| entry(&log, id).tool_status;
    assert_eq!(status("p6"), Some(ToolStatus::Ok));
    assert_eq!(status("p7"), Some(ToolStatus::Error), "is_error: true");
    assert_eq!(status("p8"), Some(ToolStatus::Ok));
    assert_eq!(status("p11"), Some(ToolStatus::Cancelled), "interrupted");
    assert_eq!(status("p1"), None, "not a tool result");
}

#[test]
fn test_thinking_images_and_documents_are_kept() {
    let text = shape("images.jsonl");
    let log = import::parse_claude_code(text);
    let prompt = entry(&log, "m1");
    let kinds: Vec<(&str, Option<&str>)> = prompt
        .attachments
        .iter()
        .map(|a| (a.kind.as_str(), a.media_type.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("image", Some("image/png")),
            ("document", Some("application/pdf"))
        ]
    );
    // Sizes are the decoded sizes of the fixture's base64 data.
    let decoded =
        |b64: &str| b64.len() / 4 * 3 - b64.bytes().rev().take_while(|&b| b == b'=').count();
    let line = &raw_lines(text)[0];
    let blocks = line["message"]["content"].as_array().unwrap();
    let sizes: Vec<u64> = blocks[1..]
        .iter()
        .map(|b| decoded(b["source"]["data"].as_str().unwrap()) as u64)
        .collect();
    assert_eq!(
        prompt
            .attachments
            .iter()
            .map(|a| a.size)
            .collect::<Vec<_>>(),
        sizes
    );
    assert!(
        prompt
            .attachments
            .iter()
            .all(|a| a.sha256.as_ref().is_some_and(|h| h.len() == 64))
    );
    let tool = entry(&log, "m4");
    assert_eq!(tool.attachments.len(), 1, "the Read tool's image result");
    assert_eq!(tool.attachments[0].sha256, prompt.attachments[0].sha256);
    let by_url = entry(&log, "m6");
    assert_eq!(
        by_url.attachments[0].source.as_deref(),
        Some("https://example.invalid/after.png")
    );
    assert_eq!(log.attachments, 4);
    assert_eq!(
        log.attachment_bytes_not_stored,
        2 * sizes[0] + sizes[1],
        "inlined bytes, counted, not stored"
    );
    let redacted = entry(&log, "m2");
    assert_eq!(
        (redacted.content.as_str(), redacted.reasoning.as_deref()),
        ("", Some("[redacted thinking: 24 bytes]"))
    );
    let answer = entry(&log, "m5");
    assert_eq!(
        answer.reasoning.as_deref(),
        Some("Both screenshots show the same overflow.")
    );
    assert!(answer.content.contains("min-width: 0"));
    let thinking_only = import::parse_claude_code(shape("parallel-tools.jsonl"));
    let p2 = entry(&thinking_only, "p2");
    assert_eq!(p2.content, "");
    assert!(p2.reasoning.is_some());
    assert!(!thinking_only.skipped.contains_key("assistant (empty)"));
}

#[test]
fn test_inline_sidechains_become_sessions_spawned_by_their_task_call() {
    let log = import::parse_claude_code(shape("sidechain-inline.jsonl"));
    let id = "4e0b3f5d-8a7c-4f6e-9d1c-3c4d5e6f7081";
    assert_eq!(log.sessions.len(), 2, "{:?}", log.sessions);
    assert_eq!(ids(&log.sessions[0]), ["i1", "i2", "i8", "i9"]);
    let agent = &log.sessions[1];
    assert_eq!(agent.provider_session_id, format!("{id}@i3"));
    assert_eq!(ids(agent), ["i3", "i4", "i5", "i6", "i7"]);
    let spawn = agent.spawned_by.as_ref().expect("spawned");
    assert_eq!(spawn.provider_session_id, id);
    assert_eq!(spawn.tool_call_id.as_deref(), Some("toolu_in_task"));
    assert!(!log.skipped.contains_key("sidechain"));
}

#[test]
fn test_sub_agent_files_become_sessions_linked_to_the_spawning_call() {
    let id = "5f1c4a6e-9b8d-4a7f-8e2d-4d5e6f708192";
    let alone = import::parse_claude_code(shape("agent-a7f3e91.jsonl"));
    assert_eq!(alone.sessions.len(), 1);
    let s = &alone.sessions[0];
    assert_eq!(s.provider_session_id, format!("{id}@agent-a7f3e91"));
    assert_eq!(ids(s), ["x1", "x2", "x3", "x4"]);
    let spawn = s.spawned_by.as_ref().expect("spawned");
    assert_eq!(
        (
            spawn.provider_session_id.as_str(),
            spawn.tool_call_id.as_deref()
        ),
        (id, None)
    );
    // A directory's files: the agent file listed first is still parsed after the main
    // log, and linked to the Task call whose result names the agent.
    let files = [
        (
            "p/5f1c4a6e/subagents/agent-a7f3e91.jsonl",
            shape("agent-a7f3e91.jsonl"),
        ),
        ("p/5f1c4a6e.jsonl", shape("task-agent.jsonl")),
    ];
    let parsed = import::parse_claude_code_files(&files);
    let paths: Vec<&str> = parsed.iter().map(|(p, _)| *p).collect();
    assert_eq!(paths, [files[1].0, files[0].0]);
    let agent = &parsed[1].1.sessions[0];
    assert_eq!(
        agent
            .spawned_by
            .as_ref()
            .and_then(|s| s.tool_call_id.as_deref()),
        Some("toolu_ta_task")
    );
    // Imported with its parent's key, the sub-agent is the parent's child.
    let storage = MemoryStorage::new();
    let main = parsed[0].1.sessions[0].clone();
    write(&storage, main, None);
    let child = write(&storage, agent.clone(), Some(key_of(id)));
    assert!(child.created);
    let lineage = run(&storage, spool::lineage("w", &child.session.key)).expect("lineage");
    assert_eq!(
        lineage.node.lineage.parent_session_key.as_deref(),
        Some(key_of(id).as_str())
    );
}

#[test]
fn test_noise_is_counted_by_kind_and_never_imported() {
    let log = import::parse_claude_code(shape("noise-title.jsonl"));
    assert_eq!(log.sessions.len(), 1, "{:?}", log.sessions);
    let s = &log.sessions[0];
    assert_eq!(
        ids(s),
        [
            "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n11", "n12", "n13"
        ]
    );
    for (kind, n) in [
        ("system:stop_hook_summary", 1),
        ("system:turn_duration", 1),
        ("file-history-snapshot", 1),
    ] {
        assert_eq!(log.skipped.get(kind), Some(&n), "{kind}: {:?}", log.skipped);
    }
    assert!(s.entries.iter().all(|e| !e.content.contains('\u{1b}')));
    assert!(
        s.entries
            .iter()
            .all(|e| !(e.role == Role::System && e.content.is_empty()))
    );
    assert_eq!(
        entry(&log, "n7").content,
        "PostToolUse:Edit hook: formatted 1 file"
    );
    assert_eq!(entry(&log, "n1").kind, Some(EntryKind::Context));
    assert_eq!(entry(&log, "n2").kind, Some(EntryKind::Command));
    assert_eq!(entry(&log, "n12").kind, Some(EntryKind::Command));
    assert_eq!(entry(&log, "n4").kind, None);
    let parallel = import::parse_claude_code(shape("parallel-tools.jsonl"));
    for kind in [
        "system:stop_hook_summary",
        "system:turn_duration",
        "progress",
        "queue-operation",
    ] {
        assert_eq!(parallel.skipped.get(kind), Some(&1), "{kind}");
    }
}

#[test]
fn test_the_title_is_the_summary_whose_leaf_is_in_the_session() {
    let log = import::parse_claude_code(shape("noise-title.jsonl"));
    assert_eq!(log.sessions[0].title.as_deref(), Some("Release 0.3.0"));
    // Without a summary naming one of its messages, the log's last summary.
    let older = shape("noise-title.jsonl")
        .lines()
        .filter(|l| !l.contains("Release 0.3.0"))
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    let log = import::parse_claude_code(&older);
    assert_eq!(
        log.sessions[0].title.as_deref(),
        Some("An older conversation")
    );
    let storage = MemoryStorage::new();
    let sessions = import_all(
        &storage,
        &import::parse_claude_code(shape("noise-title.jsonl")),
    );
    assert_eq!(sessions[0].metadata["title"], "Release 0.3.0");
}

#[test]
fn test_a_log_imported_at_every_prefix_then_whole_equals_a_fresh_import() {
    for (name, text) in all_fixtures() {
        let whole = import::parse_claude_code(text);
        let fresh = MemoryStorage::new();
        import_all(&fresh, &whole);
        let expected = state(&fresh);
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for k in 0..lines.len() {
            let prefix: String = lines[..k].concat();
            let storage = MemoryStorage::new();
            import_all(&storage, &import::parse_claude_code(&prefix));
            import_all(&storage, &whole);
            let got = state(&storage);
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{name}: sessions after a prefix of {k} lines"
            );
            for (key, want) in &expected {
                assert_eq!(
                    &got[key], want,
                    "{name}: session {key} after a prefix of {k} lines"
                );
            }
        }
    }
}

#[test]
fn test_odd_lines_are_counted_never_a_panic() {
    let lines = [
        r#"{"type":"user","uuid":"o1","parentUuid":"o1","message":{"content":5}}"#,
        r#"{"type":"assistant","uuid":"o2","parentUuid":"o9","message":"not an object"}"#,
        r#"{"type":"assistant","uuid":"o3","parentUuid":"o1","message":{"id":"m","content":[7,{"type":"tool_use"},{"type":"mystery"}],"usage":[1]}}"#,
        r#"{"type":"user","uuid":"o4","parentUuid":"o3","message":{"content":[{"type":"tool_result"},{"type":"image","source":{"type":"base64","data":"!!!"}},{"type":"image"}]}}"#,
        r#"{"type":"system","uuid":"o5","parentUuid":"o4","subtype":"turn_duration"}"#,
        r#"{"type":"system","uuid":"o6"}"#,
        r#"{"type":"user","uuid":"o4","message":{"content":"a duplicate uuid"}}"#,
        r#"{"type":"user","isSidechain":true,"uuid":"o7","parentUuid":"o8","message":{"content":"a parent later in the log"}}"#,
        r#"{"type":"user","uuid":"o8","parentUuid":"o7","message":{"content":"a cycle"}}"#,
        r#"{"type":"summary"}"#,
        r#"[1,2]"#,
        r#"{"type":"user","uuid":"o10","parentUuid":null,"timestamp":"not a time","message":{"content":[{"type":"text","text":"late root"}]}}"#,
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let log = import::parse_claude_code(&text);
    assert_eq!(log.invalid_lines, [11]);
    for kind in [
        "assistant (no message)",
        "block:mystery",
        "image (unreadable source)",
        "system:turn_duration",
        "system (empty)",
        "duplicate uuid",
        "summary (empty)",
    ] {
        assert!(log.skipped.contains_key(kind), "{kind}: {:?}", log.skipped);
    }
    let all: Vec<&str> = log.sessions.iter().flat_map(|s| ids(s)).collect();
    assert!(
        ["o1", "o3", "o4", "o7", "o8", "o10"]
            .iter()
            .all(|id| all.contains(id)),
        "{all:?}"
    );
    // Every prefix, too.
    for k in 0..text.len() {
        if text.is_char_boundary(k) {
            import::parse_claude_code(&text[..k]);
        }
    }
}

#[test]
fn test_importing_an_unchanged_log_again_writes_nothing() {
    for (name, text) in all_fixtures() {
        let storage = support::Recording::default();
        let log = import::parse_claude_code(text);
        import_outcomes(&storage, &log);
        storage.take();
        let again = import_outcomes(&storage, &log);
        assert!(storage.take().is_empty(), "{name}: a commit");
        assert!(
            again
                .iter()
                .all(|o| (o.imported, o.usage_updated) == (0, 0)),
            "{name}"
        );
    }
}

type SessionState = ([u64; 5], Vec<spool::Entry>);

/// Every session: its counters (entries, input, output, cache read, cache write) and
/// its canonical transcript.
fn state(storage: &MemoryStorage) -> BTreeMap<String, SessionState> {
    let sessions = run(storage, spool::list_sessions("w", 1000, None)).expect("list");
    sessions
        .sessions
        .into_iter()
        .map(|s| {
            let counters = [
                s.entry_count,
                s.input_tokens,
                s.output_tokens,
                s.cache_read,
                s.cache_write,
            ];
            (s.key.clone(), (counters, canonical(storage, &s.key)))
        })
        .collect()
}

fn canonical(storage: &MemoryStorage, key: &str) -> Vec<spool::Entry> {
    support::entries(storage, "w", key, true)
}

fn key_of(provider_session_id: &str) -> String {
    format!(
        "import:claude_code:{}",
        import::sanitize_id(provider_session_id)
    )
}

fn write(
    storage: &impl Storage,
    session: ImportedSession,
    parent_key: Option<String>,
) -> import::ImportOutcome {
    let key = key_of(&session.provider_session_id);
    let request = ImportRequest {
        session_id: import::sanitize_id(&session.provider_session_id).replace(['@', '~'], "-"),
        key,
        format: ImportFormat::ClaudeCode,
        session,
        parent_key,
        prices: None,
    };
    run(
        storage,
        import::import_session("w", request, 9_999_999_999_999),
    )
    .expect("imported")
}

/// Imports every session of `log` standalone under a key named after its provider id.
fn import_outcomes(storage: &impl Storage, log: &ImportedLog) -> Vec<import::ImportOutcome> {
    log.sessions
        .iter()
        .map(|s| write(storage, s.clone(), None))
        .collect()
}

fn import_all(storage: &MemoryStorage, log: &ImportedLog) -> Vec<spool::Session> {
    import_outcomes(storage, log)
        .into_iter()
        .map(|o| o.session)
        .collect()
}

#[test]
fn test_an_imported_session_is_done_at_its_newest_entry_and_ends_later_as_the_log_grows() {
    let text = shape("parallel-tools.jsonl");
    let newest = |log: &ImportedLog| {
        log.sessions[0]
            .entries
            .iter()
            .map(|e| e.created_at)
            .max()
            .expect("entries")
    };
    let prefix: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
    let storage = MemoryStorage::new();
    let early = import::parse_claude_code(&prefix);
    let first = &import_all(&storage, &early)[0];
    assert_eq!(first.status, spool::SessionStatus::Done);
    assert_eq!(first.ended_at, Some(newest(&early)));
    let whole = import::parse_claude_code(text);
    let later = &import_all(&storage, &whole)[0];
    assert_eq!(later.status, spool::SessionStatus::Done);
    assert_eq!(later.ended_at, Some(newest(&whole)));
    assert!(newest(&whole) > newest(&early), "the fixture grows in time");
    assert_eq!(
        later.runtime_ms,
        Some(newest(&whole) - later.created_at),
        "runtime spans the log"
    );
}

#[test]
fn test_every_parsed_log_crosses_as_json_unchanged() {
    // Hosts receive the parse as JSON (the component's `parse-import`, the browser).
    for (name, text) in all_fixtures() {
        let log = import::parse_claude_code(text);
        let json = serde_json::to_string(&log).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back: ImportedLog = serde_json::from_str(&json).expect(name);
        assert_eq!(back, log, "{name}");
    }
}

#[test]
fn test_a_sub_agent_file_parsed_alone_links_to_the_task_call_an_earlier_log_named() {
    let mut known = import::SpawnCalls::default();
    let mut main = import::parse_claude_code(shape("task-agent.jsonl"));
    import::link_sub_agents(&mut known, &mut main);
    let mut agent = import::parse_claude_code(shape("agent-a7f3e91.jsonl"));
    let alone = agent.sessions[0].spawned_by.clone().expect("a sub-agent");
    assert_eq!(
        alone.tool_call_id, None,
        "its own file does not name the call"
    );
    import::link_sub_agents(&mut known, &mut agent);
    // The call whose result names the agent, read from the fixture.
    let call = raw_lines(shape("task-agent.jsonl"))
        .iter()
        .find(|l| l.get("toolUseResult").and_then(|r| r.get("agentId")) == Some(&"a7f3e91".into()))
        .and_then(|l| {
            l["message"]["content"][0]["tool_use_id"]
                .as_str()
                .map(str::to_owned)
        })
        .expect("the Task result");
    let linked = agent.sessions[0].spawned_by.clone().expect("a sub-agent");
    assert_eq!(linked.tool_call_id, Some(call));
    assert_eq!(linked.provider_session_id, alone.provider_session_id);
}

/// A log read a slice at a time, each slice imported as it comes, makes what the whole
/// log makes: the same sessions (rewinds, parallel calls, sub-agents, titles) with the
/// same entries, usage included (a response's later lines in a later slice update its
/// first entry), the same counts and line numbers.
#[test]
fn test_a_log_imported_slice_by_slice_equals_the_whole() {
    for (name, text) in all_fixtures() {
        support::slices::check(ImportFormat::ClaudeCode, name, text);
    }
    // The check above covers a response's usage reported after its first entry's slice.
    let logs = support::slices::parse_in_slices(
        ImportFormat::ClaudeCode,
        shape("parallel-tools.jsonl"),
        1,
    );
    let updates = logs
        .iter()
        .flat_map(|l| &l.sessions)
        .flat_map(|s| &s.entries);
    assert!(updates.filter(|e| e.usage_only).count() > 0);
    assert!(logs.iter().map(|l| l.repeated).sum::<u64>() > 0);
}

/// A sub-agent file read a slice at a time is linked to its Task call once, and keeps
/// that call in every slice that lists it (the next unclaimed call with the same prompt
/// is not taken).
#[test]
fn test_a_sub_agent_file_read_in_slices_keeps_one_task_call() {
    let whole = {
        let mut known = import::SpawnCalls::default();
        let mut main = import::parse_claude_code(shape("task-agent.jsonl"));
        import::link_sub_agents(&mut known, &mut main);
        let mut agent = import::parse_claude_code(shape("agent-a7f3e91.jsonl"));
        import::link_sub_agents(&mut known, &mut agent);
        agent.sessions[0].spawned_by.clone().expect("a sub-agent")
    };
    assert!(whole.tool_call_id.is_some());
    let mut known = import::SpawnCalls::default();
    let mut main = import::parse_claude_code(shape("task-agent.jsonl"));
    import::link_sub_agents(&mut known, &mut main);
    let mut listed = 0;
    for mut log in
        support::slices::parse_in_slices(ImportFormat::ClaudeCode, shape("agent-a7f3e91.jsonl"), 1)
    {
        import::link_sub_agents(&mut known, &mut log);
        for s in &log.sessions {
            assert_eq!(
                s.spawned_by.as_ref(),
                Some(&whole),
                "{}",
                s.provider_session_id
            );
            listed += 1;
        }
    }
    assert!(listed > 1, "the session is listed in several slices");
}
