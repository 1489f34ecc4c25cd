//! The opencode importer on session documents (`{info, messages: [{info, parts}]}`, the
//! shape the CLI builds from opencode's database or JSON files): prompts with files and
//! added context, replies part by part, tool states, usage, compaction summaries,
//! errors, sub-agent sessions, and growing sessions.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;

use crate::support::growing;
use crate::support::imported::entry;
use spool::import::{self, ImportFormat};
use spool::{EntryKind, Role, ToolStatus};

const MAIN: &str = include_str!("fixtures/import/opencode/ses_6a1f0c2e3ffeQ1b2c3d4e5f6a7.json");
const CHILD: &str = include_str!("fixtures/import/opencode/ses_6a1f0c2e4000R9z8y7x6w5v4u3.json");

/// The part of the fixture with `id`.
fn part(doc: &Value, id: &str) -> Value {
    doc["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["parts"].as_array().expect("parts"))
        .find(|p| p["id"] == id)
        .expect("a part")
        .clone()
}

#[test]
fn test_an_opencode_session_becomes_prompts_parts_calls_and_results() {
    let log = import::parse_opencode(MAIN);
    let doc: Value = serde_json::from_str(MAIN).expect("json");
    let s = &log.sessions[0];
    assert_eq!(s.provider_session_id, doc["info"]["id"]);
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/shop"));
    assert_eq!(s.title.as_deref(), doc["info"]["title"].as_str());
    assert_eq!(s.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(s.spawned_by, None);
    assert_eq!(log.lines, 7, "a message a line");
    let shape: Vec<(&str, Role, Option<EntryKind>)> = s
        .entries
        .iter()
        .map(|e| (e.message_id.as_str(), e.role, e.kind))
        .collect();
    use Role::{Assistant, System, Tool, User};
    assert_eq!(
        shape,
        [
            ("msg_a00000000001", User, None),
            ("prt_a0000000000103", System, Some(EntryKind::Context)),
            ("prt_a0000000000201", Assistant, None),
            ("prt_a0000000000202", Assistant, None),
            ("prt_a0000000000203", Assistant, None),
            ("prt_a0000000000203.result", Tool, None),
            ("prt_a0000000000204", Assistant, None),
            ("prt_a0000000000204.result", Tool, None),
            ("prt_a0000000000205", Assistant, None),
            ("prt_a0000000000205.result", Tool, None),
            ("prt_a0000000000206", Assistant, None),
            ("msg_a00000000003", User, None),
            ("prt_a0000000000400", Assistant, None),
            ("prt_a0000000000600", System, Some(EntryKind::Summary)),
            ("msg_a00000000007", Assistant, None),
        ]
    );
    let prompt = entry(&log, "msg_a00000000001");
    assert_eq!(
        prompt.content,
        "The checkout total is off by a cent; see the screenshot."
    );
    assert_eq!(prompt.attachments.len(), 2);
    assert_eq!(
        prompt.attachments[0].media_type.as_deref(),
        Some("image/png")
    );
    assert_eq!(prompt.attachments[0].size, 30, "the data URL's bytes");
    assert_eq!(prompt.attachments[1].source.as_deref(), Some("src/cart.ts"));
    assert_eq!((log.attachments, log.attachment_bytes_not_stored), (2, 30));
    assert_eq!(
        entry(&log, "prt_a0000000000201").reasoning.as_deref(),
        part(&doc, "prt_a0000000000201")["text"].as_str()
    );
    // Calls with their input; results with their status.
    let grep = entry(&log, "prt_a0000000000203");
    let call = &grep.tool_calls.as_ref().expect("a call")[0];
    assert_eq!(
        (&call["id"], &call["name"], &call["arguments"]),
        (
            &Value::from("toolu_01A"),
            &Value::from("grep"),
            &part(&doc, "prt_a0000000000203")["state"]["input"]
        )
    );
    let results: Vec<(Option<&str>, Option<ToolStatus>)> = ["203", "204", "205"]
        .iter()
        .map(|n| {
            let r = entry(&log, &format!("prt_a0000000000{n}.result"));
            (r.tool_call_id.as_deref(), r.tool_status)
        })
        .collect();
    assert_eq!(
        results,
        [
            (Some("toolu_01A"), Some(ToolStatus::Ok)),
            (Some("toolu_01B"), Some(ToolStatus::Error)),
            (Some("toolu_01C"), Some(ToolStatus::Cancelled)),
        ]
    );
    assert_eq!(
        entry(&log, "prt_a0000000000203.result").content,
        part(&doc, "prt_a0000000000203")["state"]["output"]
    );
    // Usage once per reply, on its first entry.
    let usage: Vec<(&str, u64, u64, u64, u64)> = s
        .entries
        .iter()
        .filter_map(|e| {
            let u = e.turn_usage.as_ref()?;
            Some((
                e.message_id.as_str(),
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
            ))
        })
        .collect();
    let tokens = |m: usize| {
        let t = &doc["messages"][m]["info"]["tokens"];
        let n = |v: &Value| v.as_u64().expect("n");
        (
            n(&t["input"]),
            n(&t["output"]) + n(&t["reasoning"]),
            n(&t["cache"]["read"]),
            n(&t["cache"]["write"]),
        )
    };
    let expected: Vec<(&str, u64, u64, u64, u64)> = [
        ("prt_a0000000000201", 1),
        ("prt_a0000000000400", 3),
        ("prt_a0000000000600", 5),
        ("msg_a00000000007", 6),
    ]
    .iter()
    .map(|(id, m)| {
        let (i, o, r, w) = tokens(*m);
        (*id, i, o, r, w)
    })
    .collect();
    assert_eq!(usage, expected);
    assert_eq!(
        entry(&log, "msg_a00000000007").content,
        "[error: Overloaded]"
    );
    for kind in [
        "part:step-start",
        "part:step-finish",
        "part:patch",
        "part:compaction",
    ] {
        assert_eq!(log.skipped.get(kind), Some(&1), "{kind}: {:?}", log.skipped);
    }
    // Each entry follows the one before it.
    for pair in s.entries.windows(2) {
        assert_eq!(
            pair[1].parent_message_id.as_deref(),
            Some(pair[0].message_id.as_str())
        );
    }
}

#[test]
fn test_an_opencode_sub_agent_session_is_spawned_by_its_parent() {
    let log = import::parse_opencode(CHILD);
    let s = &log.sessions[0];
    let parent = import::parse_opencode(MAIN).sessions[0]
        .provider_session_id
        .clone();
    assert_eq!(
        s.spawned_by
            .as_ref()
            .map(|p| p.provider_session_id.as_str()),
        Some(parent.as_str())
    );
    let planned = import::plan(ImportFormat::Opencode, log.sessions.clone());
    assert!(matches!(
        &planned[0].link,
        Some(import::PlannedLink::Child { parent_key, .. })
            if parent_key == &format!("import:opencode:{parent}")
    ));
}

#[test]
fn test_a_broken_opencode_document_is_an_invalid_line_never_a_panic() {
    let log = import::parse_opencode(&MAIN[..MAIN.len() / 3]);
    assert_eq!((log.lines, log.invalid_lines.clone()), (1, vec![1]));
    assert!(log.sessions.is_empty());
    let odd = r#"{"info":5,"messages":[7,{"parts":[]},{"info":{"id":"m","role":"robot"}},{"info":{"id":"u","role":"user"},"parts":[{"type":"text","text":"hi"},{"type":"file","mime":"image/png","url":"data:image/png;base64,!!"},5]}]}"#;
    let log = import::parse_opencode(odd);
    assert_eq!(log.sessions[0].provider_session_id, "opencode-session");
    assert_eq!(log.sessions[0].entries.len(), 1);
    for kind in [
        "message (not an object)",
        "message (no info)",
        "message:robot",
        "part:file (unreadable)",
    ] {
        assert!(log.skipped.contains_key(kind), "{kind}: {:?}", log.skipped);
    }
}

#[test]
fn test_a_growing_opencode_session_imports_as_the_whole() {
    let doc: Value = serde_json::from_str(MAIN).expect("json");
    let messages = doc["messages"].as_array().expect("messages").clone();
    let mut versions = Vec::new();
    for k in 0..=messages.len() {
        let mut early = doc.clone();
        early["messages"] = Value::Array(messages[..k].to_vec());
        // A reply read while it streams: its first parts, its tool still running.
        if let Some(last) = messages[..k].last()
            && last["info"]["role"] == "assistant"
            && last["parts"].as_array().is_some_and(|p| p.len() > 3)
        {
            let mut streaming = early.clone();
            let reply = &mut streaming["messages"][k - 1];
            let parts = reply["parts"].as_array().expect("parts")[..4].to_vec();
            reply["parts"] = Value::Array(parts);
            reply["parts"][3]["state"] = serde_json::json!({
                "status": "running", "input": last["parts"][3]["state"]["input"],
                "time": {"start": 1}
            });
            versions.push(streaming.to_string());
        }
        versions.push(early.to_string());
    }
    growing::prefixes_are_prefixes(ImportFormat::Opencode, "opencode", &versions);
    growing::growing_imports_equal_the_whole(ImportFormat::Opencode, "opencode", &versions);
}
