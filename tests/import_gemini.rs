//! The Gemini CLI importer on both forms of its session files (a JSON document, JSON
//! Lines): messages, thoughts, tool calls and results, usage, notices, rewinds, and
//! growing files.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;

use crate::support::growing;
use crate::support::imported::{entry, ids};
use spool::import::{self, ImportFormat};
use spool::{EntryKind, Role, ToolStatus};

const DOCUMENT: &str =
    include_str!("fixtures/import/gemini/session-2025-09-18T10-20-5d1c0b9e.json");
const LINES: &str = include_str!("fixtures/import/gemini/session-2025-09-18T10-20-8a7b6c5d.jsonl");

fn document() -> Value {
    serde_json::from_str(DOCUMENT).expect("json")
}

#[test]
fn test_a_gemini_document_becomes_messages_calls_results_and_notices() {
    let log = import::parse_gemini(DOCUMENT);
    let doc = document();
    assert_eq!(log.sessions.len(), 1);
    let s = &log.sessions[0];
    assert_eq!(s.provider_session_id, doc["sessionId"]);
    assert_eq!(s.title.as_deref(), doc["summary"].as_str());
    assert_eq!(s.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(
        log.lines,
        doc["messages"].as_array().expect("messages").len() as u64
    );
    let calls: Vec<String> = doc["messages"][1]["toolCalls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect();
    let g = "5d1c0b9e-0002";
    assert_eq!(
        ids(&log, 0),
        [
            "5d1c0b9e-0001".to_owned(),
            g.to_owned(),
            format!("{g}.{}", calls[0]),
            format!("{g}.{}.result", calls[0]),
            format!("{g}.{}", calls[1]),
            format!("{g}.{}.result", calls[1]),
            format!("{g}.{}", calls[2]),
            format!("{g}.{}.result", calls[2]),
            "5d1c0b9e-0003".to_owned(),
            "5d1c0b9e-0004".to_owned(),
            "5d1c0b9e-0005".to_owned(),
            "5d1c0b9e-0006".to_owned(),
        ]
    );
    // The prompt's inline image and referenced file.
    let prompt = entry(&log, "5d1c0b9e-0001");
    assert_eq!(prompt.content, "What does this chart show?");
    let data = doc["messages"][0]["content"][1]["inlineData"]["data"]
        .as_str()
        .expect("data");
    let padding = data.bytes().filter(|b| *b == b'=').count();
    assert_eq!(prompt.attachments.len(), 2);
    assert_eq!(
        (
            prompt.attachments[0].kind.as_str(),
            prompt.attachments[0].size
        ),
        ("image", (data.len() / 4 * 3 - padding) as u64)
    );
    assert_eq!(
        prompt.attachments[1].source.as_deref(),
        Some("/home/dev/report/q3.pdf")
    );
    assert_eq!(
        (log.attachments, log.attachment_bytes_not_stored),
        (2, prompt.attachments[0].size)
    );
    // The reply: text, thoughts, usage with the cached tokens apart.
    let reply = entry(&log, g);
    assert_eq!(reply.content, "Let me read the data behind it.");
    assert_eq!(
        reply.reasoning.as_deref(),
        Some("**Finding the data** The chart is generated from data/q3.csv.")
    );
    let t = &doc["messages"][1]["tokens"];
    let n = |k: &str| t[k].as_u64().expect(k);
    let u = reply.turn_usage.as_ref().expect("usage");
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens, u.output_tokens),
        (
            n("input") - n("cached") + n("tool"),
            n("cached"),
            n("output") + n("thoughts")
        )
    );
    assert_eq!(
        u.input_tokens + u.cache_read_tokens + u.output_tokens,
        n("total"),
        "every token once"
    );
    // Each call, then its result with its status.
    let call = entry(&log, &format!("{g}.{}", calls[0]));
    let made = call.tool_calls.as_ref().expect("a call");
    assert_eq!(made[0]["name"], "read_file");
    assert_eq!(
        made[0]["arguments"],
        doc["messages"][1]["toolCalls"][0]["args"]
    );
    let results: Vec<(Option<ToolStatus>, &str)> = calls
        .iter()
        .map(|c| {
            let r = entry(&log, &format!("{g}.{c}.result"));
            assert_eq!(r.tool_call_id.as_deref(), Some(c.as_str()));
            (r.tool_status, r.content.as_str())
        })
        .collect();
    assert_eq!(
        results,
        [
            (
                Some(ToolStatus::Ok),
                "month,revenue\njul,120\naug,135\nsep,151"
            ),
            (
                Some(ToolStatus::Error),
                "Command exited with code 1: ModuleNotFoundError: No module named 'matplotlib'"
            ),
            (Some(ToolStatus::Cancelled), ""),
        ]
    );
    // Thought parts are reasoning, not text; notices are the CLI's own.
    let second = entry(&log, "5d1c0b9e-0005");
    assert_eq!(
        second.content,
        "Revenue grew every month of Q3, from 120 to 151."
    );
    assert_eq!(second.reasoning.as_deref(), Some("Weighing the months."));
    for id in ["5d1c0b9e-0003", "5d1c0b9e-0006"] {
        let notice = entry(&log, id);
        assert_eq!(
            (notice.role, notice.kind),
            (Role::System, Some(EntryKind::Command))
        );
    }
    assert_eq!(log.skipped.get("message:compression"), Some(&1));
}

#[test]
fn test_gemini_json_lines_merge_rewritten_messages_and_branch_at_a_rewind() {
    let log = import::parse_gemini(LINES);
    let id = "8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d";
    assert_eq!(log.sessions.len(), 2);
    assert_eq!(log.sessions[0].provider_session_id, id);
    assert_eq!(log.sessions[0].title.as_deref(), Some("Rename fetchAll"));
    // `g1` written twice: once its entries, its calls added, its usage the newest.
    assert_eq!(
        ids(&log, 0),
        [
            "u1",
            "g1",
            "g1.grep-1",
            "g1.grep-1.result",
            "g2",
            "u2",
            "g3"
        ]
    );
    let g1 = entry(&log, "g1");
    assert_eq!(g1.turn_usage.as_ref().map(|u| u.input_tokens), Some(5000));
    // The rewind to `u2` drops `u2` and `g3` in Gemini: here a branch after `g2`.
    let branch = &log.sessions[1];
    assert_eq!(branch.provider_session_id, format!("{id}@u3"));
    let fork = branch.fork_of.as_ref().expect("a branch");
    assert_eq!(
        (
            fork.provider_session_id.as_str(),
            fork.after_message_id.as_str()
        ),
        (id, "g2")
    );
    assert_eq!(ids(&log, 1), ["u3", "g4"]);
    assert_eq!(branch.entries[0].parent_message_id.as_deref(), Some("g2"));
    let planned = import::plan(ImportFormat::Gemini, log.sessions.clone());
    assert!(matches!(
        &planned[1].link,
        Some(import::PlannedLink::Branch { before_message_id, .. })
            if before_message_id.as_deref() == Some("u2")
    ));
    assert_eq!(log.skipped.get("(unknown record)"), Some(&1));
    assert!(log.invalid_lines.is_empty());
}

#[test]
fn test_a_broken_gemini_document_is_an_invalid_line_never_a_panic() {
    let cut = &DOCUMENT[..DOCUMENT.len() / 2];
    let log = import::parse_gemini(cut);
    assert_eq!(log.invalid_lines, [1]);
    assert!(log.sessions.is_empty());
    for k in (0..LINES.len()).step_by(7) {
        if LINES.is_char_boundary(k) {
            import::parse_gemini(&LINES[..k]);
        }
    }
    let odd = "{\"sessionId\":\"o\",\"projectHash\":\"p\"}\n{\"id\":\"x\",\"type\":\"gemini\",\"content\":5,\"toolCalls\":[7,{\"id\":\"c\"}],\"tokens\":[1]}\n{\"id\":5,\"type\":\"user\"}\n";
    let log = import::parse_gemini(odd);
    assert_eq!(ids(&log, 0), ["x.c"]);
    assert_eq!(log.skipped.get("message (no id)"), Some(&1));
}

#[test]
fn test_a_growing_gemini_session_imports_as_the_whole() {
    // JSON Lines grow a line at a time.
    let versions = growing::line_prefixes(LINES);
    growing::prefixes_are_prefixes(ImportFormat::Gemini, "jsonl", &versions);
    growing::growing_imports_equal_the_whole(ImportFormat::Gemini, "jsonl", &versions);
    // A document is rewritten whole: a message at a time, a reply before its calls.
    let doc = document();
    let messages = doc["messages"].as_array().expect("messages").clone();
    let mut versions = Vec::new();
    for k in 0..=messages.len() {
        let mut early = doc.clone();
        early["messages"] = Value::Array(messages[..k].to_vec());
        if k == 2 {
            let mut calls_later = early.clone();
            let reply = &mut calls_later["messages"][1];
            reply
                .as_object_mut()
                .expect("a message")
                .remove("toolCalls");
            reply.as_object_mut().expect("a message").remove("tokens");
            versions.push(serde_json::to_string_pretty(&calls_later).expect("json"));
        }
        versions.push(serde_json::to_string_pretty(&early).expect("json"));
    }
    growing::prefixes_are_prefixes(ImportFormat::Gemini, "document", &versions);
    growing::growing_imports_equal_the_whole(ImportFormat::Gemini, "document", &versions);
}
