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
#[path = "tests/tokens.rs"]
mod tests;
