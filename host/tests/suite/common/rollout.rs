//! Agent logs of any size, described by their shape (generators, not checked-in files).
//! A Codex rollout: a `session_meta` and a `turn_context`, then turns of a user prompt,
//! a shell call, its output, an answer and a `token_count`, as Codex CLI writes them. A
//! Claude Code log ([`claude`]): turns of a prompt, a response written as two lines
//! (a tool call, then text, each with the usage so far), a progress line, the tool's
//! result and an answer, with a rewound prompt every 50 turns. Used by the
//! streamed-import tests and the import benchmark.
#![allow(dead_code, unreachable_pub)]

use std::io::Write;

/// The thread id of a generated rollout.
pub const THREAD: &str = "0199ffff-0000-7000-8000-00000000b16a";

/// The lines of turn `i`, each ended by a newline, with an output of `output_bytes`.
pub fn turn(i: u64, output_bytes: usize) -> String {
    let at = "2025-10-17T05:50:00.000Z";
    let output = format!("test t{i} ... ok\n{}", "x".repeat(output_bytes));
    let output = serde_json::json!({ "output": output, "metadata": { "exit_code": 0 } });
    let lines = [
        serde_json::json!({ "timestamp": at, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{ "type": "input_text", "text": format!("Step {i}: run the tests of module {}.", i % 17) }] } }),
        serde_json::json!({ "timestamp": at, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": format!("call_{i}"),
            "arguments": format!("{{\"command\":[\"cargo\",\"test\",\"-p\",\"m{}\"]}}", i % 17) } }),
        serde_json::json!({ "timestamp": at, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": format!("call_{i}"),
            "output": output.to_string() } }),
        serde_json::json!({ "timestamp": at, "type": "response_item", "payload": {
            "type": "message", "role": "assistant",
            "content": [{ "type": "output_text", "text": format!("Module {} passes; step {i} is done.", i % 17) }] } }),
        serde_json::json!({ "timestamp": at, "type": "event_msg", "payload": {
            "type": "token_count", "info": {
                "last_token_usage": { "input_tokens": 1000 + i % 7, "cached_input_tokens": 200, "output_tokens": 50 },
                "total_token_usage": { "input_tokens": 1000 * (i + 1), "output_tokens": 50 * (i + 1) } } } }),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The head of a rollout: its session and its model.
pub fn head() -> String {
    let meta = serde_json::json!({ "timestamp": "2025-10-17T05:50:00.000Z", "type": "session_meta",
        "payload": { "id": THREAD, "timestamp": "2025-10-17T05:50:00.000Z", "cwd": "/home/dev/big",
                     "cli_version": "0.58.0" } });
    let context = serde_json::json!({ "timestamp": "2025-10-17T05:50:00.000Z", "type": "turn_context",
        "payload": { "model": "gpt-5-codex" } });
    format!("{meta}\n{context}\n")
}

/// Writes a rollout of at least `bytes` to `out` (turns with outputs of `output_bytes`);
/// returns the turns written (four entries each).
pub fn write(out: &mut impl Write, bytes: u64, output_bytes: usize) -> std::io::Result<u64> {
    let mut written = 0u64;
    let head = head();
    out.write_all(head.as_bytes())?;
    written += head.len() as u64;
    let mut turns = 0;
    while written < bytes {
        let lines = turn(turns, output_bytes);
        out.write_all(lines.as_bytes())?;
        written += lines.len() as u64;
        turns += 1;
    }
    Ok(turns)
}

/// Claude Code logs.
pub mod claude {
    use std::io::Write;

    /// The session id of a generated log.
    pub const SESSION: &str = "7c1d9e2a-0000-4000-8000-00000000b16a";

    fn uuid(n: u64) -> String {
        format!("00000000-0000-4000-8000-{n:012x}")
    }

    /// The lines of turn `i` (its prompt's parent: `parent`), each ended by a newline,
    /// with a tool result of `output_bytes`; the uuid of its last line. Five entries.
    pub fn turn(i: u64, parent: Option<&str>, output_bytes: usize) -> (String, String) {
        let at = "2025-11-02T09:00:00.000Z";
        let id = |k: u64| uuid(i * 8 + k);
        let line = |k: u64, parent: Option<String>, rest: serde_json::Value| {
            let mut l = serde_json::json!({
                "uuid": id(k), "parentUuid": parent, "sessionId": SESSION, "timestamp": at,
                "cwd": "/home/dev/big", "version": "2.0.31", "gitBranch": "main",
                "isSidechain": false,
            });
            l.as_object_mut()
                .expect("an object")
                .extend(rest.as_object().expect("an object").clone());
            format!("{l}\n")
        };
        let usage = |out: u64| {
            serde_json::json!({
            "input_tokens": 900 + i % 7, "output_tokens": out,
            "cache_read_input_tokens": 4000, "cache_creation_input_tokens": 120 })
        };
        let model = "claude-sonnet-4-5-20250929";
        let call = format!("toolu_{i:08}");
        let text = [
            line(
                0,
                parent.map(str::to_owned),
                serde_json::json!({ "type": "user",
                "message": { "role": "user", "content": format!("Step {i}: run the tests of module {}.", i % 17) } }),
            ),
            line(
                1,
                Some(id(0)),
                serde_json::json!({ "type": "assistant", "message": {
                "id": format!("msg_{i:08}a"), "role": "assistant", "model": model,
                "content": [{ "type": "tool_use", "id": call, "name": "Bash",
                              "input": { "command": format!("cargo test -p m{}", i % 17) } }],
                "usage": usage(5) } }),
            ),
            line(
                2,
                Some(id(1)),
                serde_json::json!({ "type": "assistant", "message": {
                "id": format!("msg_{i:08}a"), "role": "assistant", "model": model,
                "content": [{ "type": "text", "text": format!("Running module {}.", i % 17) }],
                "usage": usage(40 + i % 5) } }),
            ),
            line(
                3,
                Some(id(2)),
                serde_json::json!({ "type": "progress",
                "data": { "type": "bash_progress", "output": "running" } }),
            ),
            line(
                4,
                Some(id(3)),
                serde_json::json!({ "type": "user", "message": { "role": "user",
                "content": [{ "type": "tool_result", "tool_use_id": call,
                              "content": format!("test t{i} ... ok\n{}", "x".repeat(output_bytes)) }] } }),
            ),
            line(
                5,
                Some(id(4)),
                serde_json::json!({ "type": "assistant", "message": {
                "id": format!("msg_{i:08}b"), "role": "assistant", "model": model,
                "content": [{ "type": "text", "text": format!("Module {} passes; step {i} is done.", i % 17) }],
                "usage": usage(30) } }),
            ),
        ];
        (text.concat(), id(5))
    }

    /// Writes a log of at least `bytes` to `out` (tool results of `output_bytes`);
    /// returns the turns written (five entries each). Every 50th turn's prompt rewinds:
    /// it follows the answer the turn before it followed, so it opens a branch.
    pub fn write(out: &mut impl Write, bytes: u64, output_bytes: usize) -> std::io::Result<u64> {
        let (mut written, mut turns) = (0u64, 0u64);
        let (mut last, mut before): (Option<String>, Option<String>) = (None, None);
        while written < bytes {
            let parent = if turns % 50 == 49 {
                before.clone()
            } else {
                last.clone()
            };
            let (lines, end) = turn(turns, parent.as_deref(), output_bytes);
            out.write_all(lines.as_bytes())?;
            written += lines.len() as u64;
            before = last.replace(end);
            turns += 1;
        }
        Ok(turns)
    }
}

/// What [`import_file`] did: entries written, `import_session` calls, slices parsed,
/// and the largest cursor carried from one slice to the next (bytes of JSON text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamed {
    pub imported: u64,
    pub calls: u64,
    pub slices: u64,
    pub cursor_bytes: usize,
}

/// Imports the log of `format` at `path` into `workspace` as a host streaming it does:
/// a slice of whole lines of about `slice_bytes` at a time, parsed
/// (`parse_import_slice`) and written (`import_session`, under the planned key; a
/// branch standalone) before the next is read.
pub fn import_file(
    spool: &mut spool_host::Instance,
    workspace: &str,
    format: spool::import::ImportFormat,
    path: &std::path::Path,
    slice_bytes: usize,
    now_ms: u64,
) -> Result<Streamed, spool_host::Error> {
    use spool::import::{ImportRequest, ImportedSession};
    let file = std::fs::File::open(path).expect("open the log");
    let mut slices = spool_host::LineSlices::new(std::io::BufReader::new(file), slice_bytes);
    let mut done = Streamed {
        imported: 0,
        calls: 0,
        slices: 0,
        cursor_bytes: 0,
    };
    let (mut cursor, mut slice) = (String::new(), Vec::new());
    while let Some(last) = slices.next_into(&mut slice).expect("read the log") {
        let text = std::str::from_utf8(&slice).expect("UTF-8");
        let (log, next) = spool.parse_import_slice(format, &cursor, text, last)?;
        cursor = next;
        done.cursor_bytes = done.cursor_bytes.max(cursor.len());
        done.slices += 1;
        for planned in spool::import::plan(format, log.sessions) {
            let mut start = 0;
            for end in planned.slice_ends {
                let request = ImportRequest {
                    key: planned.key.clone(),
                    // A session id of its own per key (ids hold no `:` or `@`).
                    session_id: format!(
                        "s{}",
                        spool::import::sanitize_id(&planned.key)
                            .rsplit('~')
                            .next()
                            .unwrap_or_default()
                    ),
                    format,
                    session: ImportedSession {
                        entries: planned.session.entries[start..end].to_vec(),
                        ..planned.session.clone()
                    },
                    parent_key: None,
                    prices: None,
                };
                let outcome =
                    spool.call(workspace, spool::ops::ImportSession { request, now_ms })?;
                done.imported += outcome.imported;
                done.calls += 1;
                start = end;
            }
        }
    }
    Ok(done)
}
