//! Codex rollouts of any size, described by their shape (a generator, not a checked-in
//! file): a `session_meta` and a `turn_context`, then turns of a user prompt, a shell
//! call, its output, an answer and a `token_count`, as Codex CLI writes them. Used by
//! the streamed-import tests and the import benchmark.
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

/// What [`import_file`] did: entries written, `import_session` calls, slices parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamed {
    pub imported: u64,
    pub calls: u64,
    pub slices: u64,
}

/// Imports the Codex rollout at `path` into `workspace` as a host streaming it does: a
/// slice of whole lines of about `slice_bytes` at a time, parsed
/// (`parse_import_slice`) and written (`import_session`, under the planned key) before
/// the next is read.
pub fn import_file(
    spool: &mut spool_host::Instance,
    workspace: &str,
    path: &std::path::Path,
    slice_bytes: usize,
    now_ms: u64,
) -> Result<Streamed, spool_host::Error> {
    use spool::import::{ImportFormat, ImportRequest, ImportedSession};
    let file = std::fs::File::open(path).expect("open the rollout");
    let mut slices = spool_host::LineSlices::new(std::io::BufReader::new(file), slice_bytes);
    let mut done = Streamed {
        imported: 0,
        calls: 0,
        slices: 0,
    };
    let (mut cursor, mut slice) = (String::new(), Vec::new());
    while let Some(last) = slices.next_into(&mut slice).expect("read the rollout") {
        let text = std::str::from_utf8(&slice).expect("UTF-8");
        let (log, next) = spool.parse_import_slice(ImportFormat::Codex, &cursor, text, last)?;
        cursor = next;
        done.slices += 1;
        for planned in spool::import::plan(ImportFormat::Codex, log.sessions) {
            let mut start = 0;
            for end in planned.slice_ends {
                let request = ImportRequest {
                    key: planned.key.clone(),
                    session_id: "streamed".into(),
                    format: ImportFormat::Codex,
                    session: ImportedSession {
                        entries: planned.session.entries[start..end].to_vec(),
                        ..planned.session.clone()
                    },
                    parent_key: None,
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
