//! What of an entry the index holds, as terms: its text fields and the filter terms.

use std::borrow::Cow;

use crate::types::Entry;

use super::*;
use crate::search::tokenize::fold;

/// The filter term of a role: `FILTER` then `r:` and the role's name.
pub(crate) fn role_term(role: crate::types::Role) -> &'static str {
    use crate::types::Role;
    match role {
        Role::User => "\u{1}r:user",
        Role::Assistant => "\u{1}r:assistant",
        Role::Tool => "\u{1}r:tool",
        Role::System => "\u{1}r:system",
    }
}

/// The filter term of a called tool (name folded like text).
pub(crate) fn tool_term(name: &str) -> String {
    format!("{FILTER}t:{}", fold(name))
}

/// The filter term of a tool result with status `error`.
pub(crate) fn error_term() -> String {
    format!("{FILTER}e")
}

/// The text fields of an entry that are indexed, by name: `content`, `reasoning`,
/// `tool_calls` (its string values, one a line), each whole (callers cap them).
pub(crate) fn fields(entry: &Entry) -> Vec<(&'static str, Cow<'_, str>)> {
    let mut out = vec![("content", Cow::Borrowed(entry.content.as_str()))];
    if let Some(reasoning) = &entry.reasoning {
        out.push(("reasoning", Cow::Borrowed(reasoning.as_str())));
    }
    if let Some(calls) = &entry.tool_calls {
        let mut text = String::new();
        strings(calls, &mut text);
        out.push(("tool_calls", Cow::Owned(text)));
    }
    out
}

pub(crate) fn strings(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Number(n) => {
            out.push_str(&n.to_string());
            out.push('\n');
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The first `MAX_FIELD_BYTES` of `text`, cut at a character boundary.
pub(crate) fn capped(text: &str) -> &str {
    if text.len() <= MAX_FIELD_BYTES {
        return text;
    }
    let mut at = MAX_FIELD_BYTES;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

/// The names of the tools an entry's `tool_calls` call (`name` or `function.name` of
/// each call).
pub(crate) fn tool_names(entry: &Entry) -> Vec<String> {
    let Some(serde_json::Value::Array(calls)) = &entry.tool_calls else {
        return Vec::new();
    };
    calls
        .iter()
        .filter_map(|call| {
            call.get("name")
                .or_else(|| call.get("function").and_then(|f| f.get("name")))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}
