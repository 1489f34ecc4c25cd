//! The token measure: deterministic, identical in every host.
//!
//! `estimate(text)` is one token per four characters (Unicode scalar values), rounded up:
//! the usual rule of thumb for English and code under BPE tokenizers, and something every
//! host computes the same way. An entry counts
//! `max(token_count, estimate(content)) + estimate(tool_calls as JSON + tool_call_id)`,
//! so a writer that under-reports (`token_count: 1` on 5,000 characters of tool-call
//! arguments) cannot hide a large entry from the trigger.

use crate::types::Entry;

/// Estimated tokens of `text`: `ceil(chars / 4)`.
pub fn estimate(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The tokens an entry is counted as (see the module docs).
pub fn entry_tokens(entry: &Entry) -> u64 {
    let given = entry.token_count.unwrap_or(0);
    let body = given.max(estimate(&entry.content));
    // serde_json writes object keys in sorted order (no `preserve_order`), so the
    // serialization, and the count, is the same in every host.
    let calls = entry
        .tool_calls
        .as_ref()
        .map_or(0, |calls| estimate(&calls.to_string()));
    let call_id = entry.tool_call_id.as_deref().map_or(0, estimate);
    crate::engine::validate::total([body, calls, call_id])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Role;

    fn entry(content: &str, token_count: Option<u64>) -> Entry {
        Entry {
            id: 1,
            message_id: "m".into(),
            role: Role::Assistant,
            content: content.into(),
            created_at: 0,
            token_count,
            tool_calls: None,
            tool_call_id: None,
            turn_id: None,
            turn_usage: None,
            tool_status: None,
            reasoning: None,
            attachments: Vec::new(),
            kind: None,
        }
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
}
