use super::*;
use crate::types::AppendRequest;

fn e(role: Role, content: &str, tokens: u64) -> Entry {
    let mut entry = Entry::from_request(AppendRequest::new(role, content), 0, String::new(), 0);
    entry.token_count = Some(tokens);
    entry
}

fn exact() -> CompactionConfig {
    CompactionConfig {
        safety_margin: 1.0,
        ..CompactionConfig::default()
    }
}

#[test]
fn test_below_the_trigger_nothing_happens() {
    let entries = vec![e(Role::User, "hi", 5)];
    assert!(matches!(
        plan(&entries, 100_000, &CompactionConfig::default()),
        Plan::Skip {
            reason: "below_threshold",
            tokens_before: 5
        }
    ));
    // The safety margin counts: 90 × 1.2 > 100.
    let entries = vec![e(Role::User, "a", 45), e(Role::User, "b", 45)];
    assert!(matches!(
        plan(&entries, 100, &CompactionConfig::default()),
        Plan::Cut { .. }
    ));
    assert!(matches!(plan(&entries, 100, &exact()), Plan::Skip { .. }));
}

#[test]
fn test_tool_call_and_result_are_never_split() {
    let mut call = e(Role::Assistant, "calling tool", 4);
    call.tool_calls = Some(serde_json::json!([{"id": "call_1", "type": "function"}]));
    let mut result = e(Role::Tool, "tool result", 4);
    result.tool_call_id = Some("call_1".into());
    let entries = vec![
        e(Role::User, "old context", 300),
        call,
        result,
        e(Role::User, "next question", 3),
        e(Role::Assistant, "answer", 3),
    ];
    match plan(&entries, 100, &exact()) {
        Plan::Cut { removed, .. } => assert_eq!(removed, 1),
        other => panic!("expected a cut, got {other:?}"),
    }
    // With room for only the newest two, the pair goes together, not half of it.
    match plan(&entries, 14, &exact()) {
        Plan::Cut { removed, .. } => assert_eq!(removed, 3),
        other => panic!("expected a cut, got {other:?}"),
    }
}

#[test]
fn test_an_oversized_newest_entry_is_compacted_too() {
    let entries = vec![e(Role::Assistant, "huge", 5000)];
    match plan(&entries, 50, &exact()) {
        Plan::Cut {
            removed,
            tokens_kept,
            ..
        } => assert_eq!((removed, tokens_kept), (1, 0)),
        other => panic!("expected a cut, got {other:?}"),
    }
}

#[test]
fn test_protected_recent_entries_stay_even_over_budget() {
    let entries: Vec<Entry> = (0..6)
        .map(|i| e(Role::User, &format!("m{i}"), 100))
        .collect();
    let config = CompactionConfig {
        protected_recent: 3,
        ..exact()
    };
    match plan(&entries, 200, &config) {
        Plan::Cut { removed, .. } => assert_eq!(removed, 3),
        other => panic!("expected a cut, got {other:?}"),
    }
    let all = CompactionConfig {
        protected_recent: 6,
        ..exact()
    };
    assert!(matches!(
        plan(&entries, 200, &all),
        Plan::Skip {
            reason: "nothing_to_compact",
            ..
        }
    ));
}

fn calling(id: Option<&str>, calls: serde_json::Value) -> Entry {
    let mut entry = e(Role::Assistant, &format!("calling {id:?}"), 1);
    entry.tool_calls = Some(calls);
    entry
}

fn answering(id: Option<&str>) -> Entry {
    let mut entry = e(Role::Tool, "ok", 1);
    entry.tool_call_id = id.map(str::to_owned);
    entry
}

#[test]
fn test_units_follow_call_ids_across_other_entries() {
    let entries = [
        calling(Some("a"), serde_json::json!([{"id": "a"}])),
        e(Role::User, "meanwhile", 1),
        calling(Some("b"), serde_json::json!([{"id": "b"}])),
        answering(Some("a")),
        e(Role::User, "after", 1),
        answering(Some("b")),
        e(Role::User, "last", 1),
    ];
    let shapes: Vec<Shape> = entries.iter().map(Shape::of).collect();
    let units = units(&shapes);
    assert_eq!(units.spans, [(0, 6), (6, 1)]);
    assert_eq!(units.newest_pending, None);
}

#[test]
fn test_a_result_without_an_id_joins_the_call_before_it() {
    let entries = [
        calling(None, serde_json::json!([{"type": "function"}])),
        answering(None),
        answering(None),
        e(Role::User, "next", 1),
        answering(None),
    ];
    let shapes: Vec<Shape> = entries.iter().map(Shape::of).collect();
    let units = units(&shapes);
    assert_eq!(units.spans, [(0, 3), (3, 1), (4, 1)]);
    assert_eq!(units.newest_pending, None);
}

#[test]
fn test_pending_calls_are_found_by_id_and_reused_ids_are_answered_in_order() {
    let entries = vec![
        calling(Some("x"), serde_json::json!([{"id": "x"}])),
        answering(Some("x")),
        calling(Some("x"), serde_json::json!([{"id": "x"}, {"id": "y"}])),
        answering(Some("x")),
        calling(None, serde_json::json!([])),
    ];
    let shapes: Vec<Shape> = entries.iter().map(Shape::of).collect();
    let units = units(&shapes);
    // `y` of entry 2 has no result; an empty `tool_calls` calls nothing.
    assert_eq!(units.newest_pending, Some(2));
    assert_eq!(units.spans, [(0, 2), (2, 2), (4, 1)]);
    assert_eq!(units.live_from(&shapes), Some(2));
    // A user message after it: the call was abandoned, nothing is live.
    let mut later = entries.clone();
    later.push(e(Role::User, "never mind", 1));
    assert_eq!(
        {
            let later: Vec<Shape> = later.iter().map(Shape::of).collect();
            super::units(&later).live_from(&later)
        },
        None
    );
}
