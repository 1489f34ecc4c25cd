//! One agent turn that uses every entry field, shared by the core's and the CLI's
//! export round-trip tests.
#![allow(dead_code, unreachable_pub)]

use serde_json::json;
use spool::{AppendRequest, Attachment, EntryKind, Role, ToolStatus, TurnUsage};

/// Turn `n`, each entry with its time offset from the turn's start: a prompt with a
/// token count and a turn; a reply with reasoning, usage (cache tokens too) and two tool
/// calls; their results, the second a failure; a context entry with an image.
pub fn rich_turn(n: u64) -> Vec<(AppendRequest, u64)> {
    let padding = "x".repeat(600);
    let mut prompt =
        AppendRequest::new(Role::User, format!("prompt {n}: fix the parser {padding}"));
    prompt.token_count = Some(150 + n);
    prompt.turn_id = Some(format!("turn-{n}"));
    prompt.message_id = Some(format!("u{n}"));
    let mut reply = AppendRequest::new(Role::Assistant, format!("Running the tests ({n})."));
    reply.message_id = Some(format!("a{n}"));
    reply.turn_id = Some(format!("turn-{n}"));
    reply.reasoning = Some(format!("The depth counter is off by one in case {n}."));
    reply.tool_calls = Some(json!([
        {"id": format!("call-{n}-a"), "name": "Bash", "input": {"command": "cargo test -p parser"}},
        {"id": format!("call-{n}-b"), "name": "Read", "input": {"path": "src/lib.rs"}},
    ]));
    reply.turn_usage = Some(TurnUsage {
        cache_read_tokens: 9000 + n,
        cache_write_tokens: 300 + n,
        ..TurnUsage::new("claude-sonnet-4-5", 1200 + n, 80 + n)
    });
    let mut ok = AppendRequest::new(Role::Tool, format!("test result: ok. {n} passed {padding}"));
    ok.message_id = Some(format!("r{n}a"));
    ok.tool_call_id = Some(format!("call-{n}-a"));
    ok.tool_status = Some(ToolStatus::Ok);
    let mut failed = AppendRequest::new(Role::Tool, "error: no such file src/lib.rs");
    failed.message_id = Some(format!("r{n}b"));
    failed.tool_call_id = Some(format!("call-{n}-b"));
    failed.tool_status = Some(ToolStatus::Error);
    let mut context = AppendRequest::new(
        Role::System,
        format!("<environment cwd=/home/dev/acme turn={n}>"),
    );
    context.message_id = Some(format!("c{n}"));
    context.kind = Some(EntryKind::Context);
    context.attachments = vec![Attachment {
        kind: "image".into(),
        media_type: Some("image/png".into()),
        size: 4096 + n,
        sha256: Some(format!("{n:064x}")),
        source: Some("screenshot.png".into()),
    }];
    vec![(prompt, 0), (reply, 1), (ok, 2), (failed, 2), (context, 3)]
}
