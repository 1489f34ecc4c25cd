//! The compaction pipeline as plain functions (plan → obligations → summary → coverage)
//! on the seed conversations, without storage.

use spool::compaction::ObligationKind;
use spool::compaction::{self, CompactionConfig, Plan};
use spool::{Entry, Role, ToolStatus};

fn e(role: Role, content: &str, tokens: u64) -> Entry {
    let mut request = spool::AppendRequest::new(role, content);
    request.token_count = Some(tokens);
    Entry::from_request(request, 0, String::new(), 0)
}

fn exact(blocking: bool) -> CompactionConfig {
    CompactionConfig {
        safety_margin: 1.0,
        coverage_blocking: blocking,
        ..CompactionConfig::default()
    }
}

/// Runs the pipeline with the built-in summarizer: (text, payload, coverage).
fn pipeline(
    entries: &[Entry],
    window: u64,
    config: &CompactionConfig,
) -> (usize, String, serde_json::Value, compaction::Coverage) {
    let Plan::Cut {
        removed,
        tokens_before,
        tokens_kept,
    } = compaction::plan(entries, window, config)
    else {
        panic!("expected a cut");
    };
    let facts = compaction::facts(&entries[..removed], entries, &[]);
    let obligations = facts.obligations.clone();
    let budget = compaction::coverage::budget(window, tokens_before, tokens_kept);
    let mut payload = compaction::summarize(&facts, budget as usize * 4);
    let mut text = compaction::render(&payload);
    let coverage = compaction::check(
        &mut text,
        &mut payload,
        &obligations,
        config.coverage_blocking,
        budget,
    );
    (removed, text, payload, coverage)
}

fn continuity_conversation() -> Vec<Entry> {
    let mut call = e(
        Role::Assistant,
        "Next I will run uv run pytest tests/test_session/test_manager.py.",
        250,
    );
    call.tool_calls = Some(serde_json::json!([{"id": "call_exec_1", "type": "function"}]));
    let mut result = e(
        Role::Tool,
        "Command failed: uv run pytest tests/test_session/test_manager.py\nExit code 1\nError: missing summary_payload column",
        250,
    );
    result.tool_call_id = Some("call_exec_1".into());
    let mut entries = vec![
        e(
            Role::User,
            "Goal: finish continuity work.\nConstraint: do not enable coverage blocking by default.\nKeep src/opensquilla/session/models.py and docs/Long Task Report.md.",
            250,
        ),
        call,
        result,
    ];
    entries.extend((0..8).map(|i| e(Role::Assistant, &format!("recent tail {i}"), 20)));
    entries
}

#[test]
fn test_missing_obligations_are_back_filled_and_reported() {
    let entries = continuity_conversation();
    // The built-in summary holds every fact itself, answered call ids included.
    let (removed, text, payload, coverage) = pipeline(&entries, 500, &exact(true));
    assert_eq!(removed, 3);
    assert_eq!(coverage.status, "pass", "{:?}\n{text}", coverage.missing);
    assert!(text.contains("call_exec_1"), "{text}");
    assert!(
        payload
            .to_string()
            .contains("src/opensquilla/session/models.py")
    );
    assert_eq!(payload["schema_version"], 1);
    // A summary that misses facts gets them back-filled, each one reported.
    let obligations = compaction::extract(&entries[..removed], &entries, &[]);
    let mut text = "The agent worked on continuity.".to_owned();
    let mut payload = serde_json::json!({});
    let coverage = compaction::check(&mut text, &mut payload, &obligations, false, 10_000);
    assert_eq!(coverage.status, "pass_with_backfill");
    assert!(
        coverage.missing.iter().any(|m| m.contains("call_exec_1")),
        "{:?}",
        coverage.missing
    );
    let carried = payload["critical_carry_forward"]
        .as_array()
        .expect("carry-forward");
    assert!(
        carried
            .iter()
            .any(|c| c.as_str().is_some_and(|c| c.contains("call_exec_1")))
    );
    // After the back-fill the text names every obligation.
    for obligation in &obligations {
        assert!(
            text.contains(&obligation.text),
            "{} missing from\n{text}",
            obligation.text
        );
    }
}

#[test]
fn test_blocking_refuses_a_summary_that_loses_a_critical_fact() {
    // The task alone is larger than the room the summary has: it is never cut, so it
    // cannot be kept.
    let path = "src/opensquilla/session/critical_continuity.py";
    let mut entries = vec![e(
        Role::User,
        &format!(
            "Goal: preserve strict continuity. {}{path}",
            "padding ".repeat(300)
        ),
        650,
    )];
    entries.extend((0..4).map(|i| e(Role::Assistant, &format!("recent tail {i}"), 20)));
    let (_, text, payload, coverage) = pipeline(&entries, 300, &exact(true));
    assert_eq!(coverage.status, "fail_blocked");
    assert!(
        coverage.missing.iter().any(|m| m.contains(path)),
        "{:?}",
        coverage.missing
    );
    assert_eq!(payload["critical_carry_forward"], serde_json::json!([]));
    assert!(!text.contains("back-filled"));
}

#[test]
fn test_large_tool_payloads_are_referenced_not_copied() {
    let large = "x".repeat(5000);
    let mut entry = e(Role::Assistant, "small visible answer", 1);
    entry.tool_calls = Some(serde_json::json!([{
        "type": "tool_use", "tool_use_id": "write-stale", "name": "write_file",
        "input": {"path": "index.html", "content": large}
    }]));
    let mut written = e(Role::Tool, "wrote index.html", 4);
    written.tool_call_id = Some("write-stale".into());
    let (removed, text, payload, _) = pipeline(&[entry, written], 200, &exact(false));
    assert_eq!(removed, 2);
    assert!(!text.contains(&large) && !payload.to_string().contains(&large));
    let reference = &payload["tool_payloads"][0];
    assert!(reference["size"].as_u64().is_some_and(|s| s > 5000));
    assert_eq!(reference["hash"].as_str().map(str::len), Some(16));
    // The write is carried forward by its id.
    assert!(text.contains("write-stale"));
}

#[test]
fn test_the_built_in_summary_is_deterministic() {
    let entries = continuity_conversation();
    let first = pipeline(&entries, 500, &exact(false));
    let second = pipeline(&entries, 500, &exact(false));
    assert_eq!((first.1, first.2), (second.1, second.2));
}

fn call(id: &str, tokens: u64) -> Entry {
    let mut entry = e(Role::Assistant, &format!("calling {id}"), tokens);
    entry.tool_calls = Some(serde_json::json!([{"id": id, "type": "function"}]));
    entry
}

fn result(id: &str, content: &str, tokens: u64) -> Entry {
    let mut entry = e(Role::Tool, content, tokens);
    entry.tool_call_id = Some(id.into());
    entry
}

/// History that must be compacted: three 400-token user messages.
fn history() -> Vec<Entry> {
    (0..3)
        .map(|i| e(Role::User, &format!("old message {i}"), 400))
        .collect()
}

fn removed(entries: &[Entry], window: u64) -> usize {
    match compaction::plan(entries, window, &exact(false)) {
        Plan::Cut { removed, .. } => removed,
        other => panic!("expected a cut, got {other:?}"),
    }
}

#[test]
fn test_pending_tool_call_stays_active_over_half_the_window() {
    // A 600-token call with no result yet does not fit in half of a 1,000-token window.
    let mut entries = history();
    entries.push(call("call_big", 600));
    assert_eq!(removed(&entries, 1000), 3, "only the history goes");
}

#[test]
fn test_failing_tool_result_stays_with_its_call() {
    let mut entries = history();
    entries.push(call("call_test", 5));
    entries.push(result(
        "call_test",
        "error[E0308]: mismatched types\nerror: could not compile `spool`\nExit code 101",
        900,
    ));
    assert_eq!(
        removed(&entries, 1000),
        3,
        "the error and its call stay raw"
    );
    // Once the agent has moved on (a later tool call succeeded), the failure is history:
    // it goes, with its call, and is carried by the summary.
    entries.push(call("call_fix", 5));
    entries.push(result("call_fix", "patched src/lib.rs", 5));
    assert_eq!(removed(&entries, 1000), 5);
}

#[test]
fn test_parallel_tool_results_stay_with_their_calls_by_id() {
    // Four parallel calls, then their four results, then a user message.
    let mut entries = history();
    let ids = ["call_a", "call_b", "call_c", "call_d"];
    entries.extend(ids.iter().map(|id| call(id, 60)));
    entries.extend(ids.iter().map(|id| result(id, "ok", 60)));
    entries.push(e(Role::User, "thanks, go on", 100));
    let cut = removed(&entries, 1000);
    let kept = &entries[cut..];
    let kept_calls: Vec<String> = kept
        .iter()
        .filter_map(|k| k.tool_calls.as_ref())
        .flat_map(compaction::plan::call_ids)
        .collect();
    let kept_results: Vec<&str> = kept
        .iter()
        .filter_map(|k| k.tool_call_id.as_deref())
        .collect();
    for id in ids {
        assert_eq!(
            kept_calls.iter().any(|c| c == id),
            kept_results.contains(&id),
            "call and result of {id} are kept or archived together (kept from #{cut})"
        );
    }
}

#[test]
fn test_live_tail_that_fills_the_window_is_skipped_not_archived() {
    let mut entries = history();
    entries.push(call("call_huge", 1200));
    let plan = compaction::plan(&entries, 1000, &exact(false));
    assert!(
        matches!(
            plan,
            Plan::Skip {
                reason: "protected_tail_exhausts_compaction_window",
                ..
            }
        ),
        "{plan:?}"
    );
}

#[test]
fn test_a_result_marked_error_is_a_failure_whatever_its_text() {
    // The text reads like a success; the status says it failed.
    let mut failed = result("call_deploy", "deploying build 41", 900);
    failed.tool_status = Some(ToolStatus::Error);
    let mut entries = history();
    entries.push(call("call_deploy", 5));
    entries.push(failed.clone());
    assert_eq!(removed(&entries, 1000), 3, "a live failure stays raw");
    let obligations = compaction::extract(&[call("call_deploy", 5), failed], &[], &[]);
    assert!(
        obligations.iter().any(|o| o.kind == ObligationKind::Failure
            && o.text == "tool call call_deploy failed: deploying build 41"),
        "{obligations:?}"
    );
}

#[test]
fn test_a_result_marked_ok_is_no_failure_whatever_it_quotes() {
    let mut quoted = result(
        "call_grep",
        "src/a.rs: Error: not found is a message we print",
        900,
    );
    quoted.tool_status = Some(ToolStatus::Ok);
    let mut entries = history();
    entries.push(call("call_grep", 5));
    entries.push(quoted.clone());
    assert_eq!(removed(&entries, 1000), 5, "a successful result is history");
    let obligations = compaction::extract(&[quoted.clone()], &[], &[]);
    assert!(
        !obligations
            .iter()
            .any(|o| o.kind == ObligationKind::Failure),
        "{obligations:?}"
    );
    // Without a status, a line that quotes `Error:` is no failure either; a result
    // that starts with an error, or ends in a non-zero exit, is one.
    quoted.tool_status = None;
    let obligations = compaction::extract(&[quoted.clone()], &[], &[]);
    assert!(
        !obligations
            .iter()
            .any(|o| o.kind == ObligationKind::Failure),
        "{obligations:?}"
    );
    for text in [
        "Error: not found\nsrc/a.rs",
        "src/a.rs\nProcess exited with code 2",
    ] {
        quoted.content = text.into();
        let obligations = compaction::extract(&[quoted.clone()], &[], &[]);
        assert!(
            obligations
                .iter()
                .any(|o| o.kind == ObligationKind::Failure),
            "{text}: {obligations:?}"
        );
    }
}

#[test]
fn test_summarizer_input_shows_reasoning_and_attachments_as_sizes() {
    let mut reply = e(Role::Assistant, "The button is fixed.", 5);
    reply.reasoning = Some("secret chain of thought ".repeat(10));
    reply.attachments = vec![spool::Attachment {
        kind: "image".into(),
        media_type: Some("image/png".into()),
        size: 2048,
        sha256: None,
        source: None,
    }];
    let input = compaction::render_input(&[reply]);
    assert!(!input.contains("secret chain of thought"), "{input}");
    assert!(input.contains("(reasoning: 240 bytes)"), "{input}");
    assert!(
        input.contains("(attachment: image image/png, 2048 bytes)"),
        "{input}"
    );
    assert!(input.contains("The button is fixed."), "{input}");
}
