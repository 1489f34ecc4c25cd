//! The compaction pipeline as plain functions (plan → obligations → summary → coverage)
//! on the seed conversations, without storage.

use spool::compaction::{self, CompactionConfig, Plan};
use spool::{Entry, Role};

fn e(role: Role, content: &str, tokens: u64) -> Entry {
    Entry {
        id: 0,
        message_id: String::new(),
        role,
        content: content.into(),
        created_at: 0,
        token_count: Some(tokens),
        tool_calls: None,
        tool_call_id: None,
        turn_id: None,
        turn_usage: None,
    }
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
    let Plan::Cut { removed, .. } = compaction::plan(entries, window, config) else {
        panic!("expected a cut");
    };
    let obligations = compaction::extract(&entries[..removed], entries, &[]);
    let mut payload = compaction::summarize(&entries[..removed], &obligations);
    let mut text = compaction::render(&payload);
    let coverage = compaction::check(
        &mut text,
        &mut payload,
        &obligations,
        config.coverage_blocking,
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
    let (removed, text, payload, coverage) = pipeline(&entries, 500, &exact(false));
    assert_eq!(removed, 3);
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
    assert!(
        payload
            .to_string()
            .contains("src/opensquilla/session/models.py")
    );
    assert_eq!(payload["schema_version"], 1);
    // After the back-fill the text names every obligation.
    for obligation in compaction::extract(&entries[..removed], &entries, &[]) {
        assert!(
            text.contains(&obligation.text),
            "{} missing from\n{text}",
            obligation.text
        );
    }
}

#[test]
fn test_blocking_refuses_a_summary_that_loses_a_critical_fact() {
    let path = "src/opensquilla/session/critical_continuity.py";
    let mut entries = vec![e(
        Role::User,
        &format!(
            "Goal: preserve strict continuity. {}{path}",
            "padding ".repeat(40)
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
    let (removed, text, payload, _) = pipeline(&[entry], 50, &exact(false));
    assert_eq!(removed, 1);
    assert!(!text.contains(&large) && !payload.to_string().contains(&large));
    let reference = &payload["tool_payloads"][0];
    assert!(reference["size"].as_u64().is_some_and(|s| s > 5000));
    assert_eq!(reference["hash"].as_str().map(str::len), Some(16));
    // The pending write is carried forward by id.
    assert!(text.contains("write-stale"));
}

#[test]
fn test_the_built_in_summary_is_deterministic() {
    let entries = continuity_conversation();
    let first = pipeline(&entries, 500, &exact(false));
    let second = pipeline(&entries, 500, &exact(false));
    assert_eq!((first.1, first.2), (second.1, second.2));
}
