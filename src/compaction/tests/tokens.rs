use super::*;
use crate::types::{AppendRequest, Role};

fn entry(content: &str, token_count: Option<u64>) -> Entry {
    let request = AppendRequest::new(Role::Assistant, content);
    let mut entry = Entry::from_request(request, 1, "m".into(), 0);
    entry.token_count = token_count;
    entry
}

#[test]
fn test_estimate_rounds_up_per_four_chars() {
    assert_eq!(estimate(""), 0);
    assert_eq!(estimate("abcd"), 1);
    assert_eq!(estimate("abcde"), 2);
    assert_eq!(estimate("ééééé"), 2, "characters, not bytes");
}

#[test]
fn test_given_count_wins_only_when_larger() {
    assert_eq!(entry_tokens(&entry(&"x".repeat(400), Some(10))), 100);
    assert_eq!(entry_tokens(&entry("hi", Some(250))), 250);
}

#[test]
fn test_tool_call_arguments_count_even_when_under_reported() {
    let mut e = entry("small visible answer", Some(1));
    e.tool_calls = Some(serde_json::json!([{
        "type": "tool_use", "id": "write-stale", "name": "write_file",
        "input": {"path": "index.html", "content": "x".repeat(5000)}
    }]));
    assert!(entry_tokens(&e) > 1250, "{}", entry_tokens(&e));
}
