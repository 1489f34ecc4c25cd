//! `spool demo`: a short scripted coding-agent session.

use serde_json::json;
use spool::{AppendRequest, Role};
use spool_host::{Error, Spool};

/// The demo session's key.
pub(crate) const KEY: &str = "agent:demo:main";

fn entry(role: Role, content: &str, tokens: u64, turn: &str) -> AppendRequest {
    let mut request = AppendRequest::new(role, content);
    request.token_count = Some(tokens);
    request.turn_id = Some(turn.to_owned());
    request
}

fn tool_call(content: &str, tokens: u64, turn: &str, calls: serde_json::Value) -> AppendRequest {
    let mut request = entry(Role::Assistant, content, tokens, turn);
    request.tool_calls = Some(calls);
    request
}

fn tool_result(content: &str, tokens: u64, turn: &str, call_id: &str) -> AppendRequest {
    let mut request = entry(Role::Tool, content, tokens, turn);
    request.tool_call_id = Some(call_id.to_owned());
    request
}

fn script() -> Vec<AppendRequest> {
    vec![
        entry(
            Role::User,
            "`cargo test` fails since my last change: parser::tests::parses_nested_lists. Can you fix it?",
            27,
            "turn-1",
        ),
        tool_call(
            "Let me run that test to see the failure.",
            41,
            "turn-1",
            json!([{
                "id": "call_1",
                "type": "function",
                "function": {"name": "run_tests", "arguments": "{\"filter\":\"parses_nested_lists\"}"}
            }]),
        ),
        tool_result(
            "test parser::tests::parses_nested_lists ... FAILED\n\
             assertion `left == right` failed at src/parser.rs:88\n  left: [1, [2]]\n right: [1, [2, 3]]",
            58,
            "turn-1",
            "call_1",
        ),
        tool_call(
            "The last element of the nested list is dropped. Reading the list parser.",
            35,
            "turn-1",
            json!([{
                "id": "call_2",
                "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\":\"src/parser.rs\",\"lines\":[70,95]}"}
            }]),
        ),
        tool_result(
            "78:     loop {\n79:         let item = self.parse_value()?;\n\
             80:         if self.peek() == Some(']') { break; }\n81:         items.push(item);",
            120,
            "turn-1",
            "call_2",
        ),
        entry(
            Role::Assistant,
            "Fixed: the loop checked for `]` before pushing the item it had just parsed, so the last \
             element of every list was lost. I moved the check after `items.push(item)`; \
             `cargo test parser` now passes (14 tests).",
            64,
            "turn-1",
        ),
    ]
}

/// Runs the demo: creates and fills the session unless it exists, then returns `true`
/// when it was created now.
pub(crate) fn run(spool: &mut Spool) -> Result<bool, Error> {
    if spool.get_session(KEY)?.is_some() {
        return Ok(false);
    }
    match spool.create_session(KEY) {
        Ok(_) => {}
        // Another process created it a moment ago: show theirs.
        Err(e) if e.code() == "conflict" => return Ok(false),
        Err(e) => return Err(e),
    }
    for request in script() {
        spool.append(KEY, request)?;
    }
    Ok(true)
}
