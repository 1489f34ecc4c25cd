//! The pi coding agent importer: messages by role, tool results, usage, compaction,
//! the session tree's branches, version 1 files, and growing files.
#![cfg(not(target_arch = "wasm32"))]

use crate::support::growing;
use crate::support::imported::{entry, ids};
use spool::import::{self, ImportFormat};
use spool::{EntryKind, Role, ToolStatus};

const SESSION: &str = include_str!(
    "fixtures/import/pi/2026-01-14T10-00-00-000Z_2f6b7c1e-8d4a-4e5b-9c3f-7a1b2c3d4e5f.jsonl"
);
const V1: &str = include_str!("fixtures/import/pi-v1.jsonl");
const ID: &str = "2f6b7c1e-8d4a-4e5b-9c3f-7a1b2c3d4e5f";

fn lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

#[test]
fn test_pi_messages_become_entries_by_role() {
    let log = import::parse_pi(SESSION);
    let main = &log.sessions[0];
    assert_eq!(main.provider_session_id, ID);
    assert_eq!(main.cwd.as_deref(), Some("/home/dev/tiles"));
    assert_eq!(main.version.as_deref(), Some("3"));
    assert_eq!(main.title.as_deref(), Some("Cold tile cache"));
    assert_eq!(
        main.model.as_deref(),
        Some("claude-sonnet-4-5"),
        "the first model named"
    );
    assert_eq!(
        ids(&log, 0),
        [
            "a0000003", "a0000004", "a0000005", "a0000006", "a0000007", "a0000008", "a0000009",
            "a000000c", "a000000d", "a000000f"
        ]
    );
    let kinds: Vec<(Role, Option<EntryKind>)> =
        main.entries.iter().map(|e| (e.role, e.kind)).collect();
    assert_eq!(
        kinds,
        [
            (Role::User, None),
            (Role::Assistant, None),
            (Role::Tool, None),
            (Role::Tool, None),
            (Role::Assistant, None),
            (Role::User, Some(EntryKind::Command)),
            (Role::User, Some(EntryKind::Context)),
            (Role::System, Some(EntryKind::Summary)),
            (Role::User, None),
            (Role::Assistant, None),
        ]
    );
    // Each entry follows the one before it in the tree.
    for pair in main.entries.windows(2) {
        assert_eq!(
            pair[1].parent_message_id.as_deref(),
            Some(pair[0].message_id.as_str())
        );
    }
    let source = lines(SESSION);
    let line = |id: &str| {
        source
            .iter()
            .find(|l| l["id"] == id)
            .expect("a line")
            .clone()
    };
    // The prompt's image: described, not stored.
    let prompt = entry(&log, "a0000003");
    assert_eq!(
        prompt.content,
        "Why is the tile cache cold after a restart?"
    );
    let data = line("a0000003")["message"]["content"][1]["data"]
        .as_str()
        .expect("data")
        .to_owned();
    assert_eq!(prompt.attachments.len(), 1);
    assert_eq!(
        prompt.attachments[0].media_type.as_deref(),
        Some("image/png")
    );
    let padding = data.bytes().filter(|b| *b == b'=').count();
    assert_eq!(
        prompt.attachments[0].size,
        (data.len() / 4 * 3 - padding) as u64
    );
    assert_eq!(log.attachments, 1);
    assert_eq!(log.attachment_bytes_not_stored, prompt.attachments[0].size);
    // The assistant's thinking, text, calls and usage.
    let reply = entry(&log, "a0000004");
    assert_eq!(reply.content, "Let me look at how the cache is stored.");
    assert_eq!(
        reply.reasoning.as_deref(),
        Some("The cache is probably only in memory.")
    );
    let calls = reply.tool_calls.as_ref().expect("calls");
    assert_eq!(calls[0]["id"], "toolu_01");
    assert_eq!(calls[1]["name"], "bash");
    assert_eq!(calls[1]["arguments"]["command"], "ls /var/cache/tiles");
    let usage = line("a0000004")["message"]["usage"].clone();
    let u = reply.turn_usage.as_ref().expect("usage");
    assert_eq!(u.model, "claude-sonnet-4-5");
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (
            usage["input"].as_u64().expect("n"),
            usage["output"].as_u64().expect("n"),
            usage["cacheRead"].as_u64().expect("n"),
            usage["cacheWrite"].as_u64().expect("n"),
        )
    );
    // Tool results answer their calls, with their status.
    let read = entry(&log, "a0000005");
    assert_eq!(
        (read.tool_call_id.as_deref(), read.tool_status),
        (Some("toolu_01"), Some(ToolStatus::Ok))
    );
    let failed = entry(&log, "a0000006");
    assert_eq!(
        (failed.tool_call_id.as_deref(), failed.tool_status),
        (Some("toolu_02"), Some(ToolStatus::Error))
    );
    let bash = entry(&log, "a0000008");
    assert!(bash.content.starts_with("! cargo test cache\n"), "{bash:?}");
    assert!(bash.content.ends_with("[exit code 101]"), "{bash:?}");
    assert_eq!(
        entry(&log, "a000000c").content,
        "The tile cache is memory-only; a restart empties it."
    );
    assert_eq!(entry(&log, "a000000f").content, "[error: 429 rate limited]");
    for kind in [
        "model_change",
        "thinking_level_change",
        "label",
        "mystery_line",
    ] {
        assert!(log.skipped.contains_key(kind), "{kind}: {:?}", log.skipped);
    }
    assert_eq!(log.skipped.get("model_change"), Some(&2));
}

#[test]
fn test_going_back_in_the_pi_tree_makes_branch_sessions() {
    let log = import::parse_pi(SESSION);
    assert_eq!(log.sessions.len(), 3);
    let branch = &log.sessions[1];
    assert_eq!(branch.provider_session_id, format!("{ID}@b0000001"));
    let fork = branch.fork_of.as_ref().expect("a branch");
    assert_eq!(
        (
            fork.provider_session_id.as_str(),
            fork.after_message_id.as_str()
        ),
        (ID, "a000000c")
    );
    assert_eq!(ids(&log, 1), ["b0000001", "b0000002"]);
    assert_eq!(branch.model.as_deref(), Some("claude-sonnet-4-5"));
    // A branch of the branch forks the branch, after the prompt they share.
    let nested = &log.sessions[2];
    assert_eq!(nested.provider_session_id, format!("{ID}@c0000001"));
    let fork = nested.fork_of.as_ref().expect("a branch");
    assert_eq!(
        (
            fork.provider_session_id.as_str(),
            fork.after_message_id.as_str()
        ),
        (branch.provider_session_id.as_str(), "b0000001")
    );
    // Planned: each joins its parent.
    let planned = import::plan(ImportFormat::Pi, log.sessions.clone());
    assert!(planned.iter().all(|p| p.link_note.is_none()), "{planned:?}");
    assert!(matches!(
        &planned[2].link,
        Some(import::PlannedLink::Branch { parent_key, before_message_id })
            if parent_key == &planned[1].key && before_message_id.as_deref() == Some("b0000002")
    ));
    assert_eq!(planned[0].key, format!("import:pi:{ID}"));
}

#[test]
fn test_a_version_1_pi_file_chains_its_lines() {
    let log = import::parse_pi(V1);
    let id = "0e1d2c3b-4a59-4867-9756-a4b3c2d1e0f9";
    assert_eq!(log.sessions.len(), 1);
    assert_eq!(
        ids(&log, 0),
        [format!("{id}:2"), format!("{id}:3"), format!("{id}:4")]
    );
    assert_eq!(log.sessions[0].entries[2].kind, Some(EntryKind::Summary));
    assert_eq!(
        log.sessions[0].entries[1].parent_message_id,
        Some(format!("{id}:2"))
    );
    assert_eq!(log.skipped.get("message:hookMessage"), Some(&1));
}

#[test]
fn test_odd_pi_lines_are_counted_never_a_panic() {
    let text = concat!(
        "{\"type\":\"session\",\"id\":\"odd\"}\n",
        "{\"type\":\"message\",\"id\":\"x1\",\"parentId\":null}\n",
        "{\"type\":\"message\",\"id\":\"x2\",\"parentId\":\"x1\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"data\":\"!!\"}]}}\n",
        "{\"type\":\"message\",\"id\":\"x3\",\"parentId\":\"nowhere\",\"message\":{\"role\":\"assistant\",\"content\":7,\"usage\":[1]}}\n",
        "[1]\n",
        "{\"type\":\"message\",\"id\":\"x4\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"a second root\"}}\n",
        "{\"type\":\"message\",\"id\":\"x5\",\"parentId\":\"x4\",\"message\":{\"role\":\"user\",\"content\":\"cut"
    );
    let log = import::parse_pi(text);
    assert_eq!(log.invalid_lines, [5]);
    assert_eq!(log.truncated_tail, Some(7));
    assert_eq!(log.skipped.get("message:(none)"), Some(&1));
    assert_eq!(log.skipped.get("image (undecodable)"), Some(&1));
    assert_eq!(ids(&log, 0), ["x2", "x3"], "an unknown parent goes on");
    assert_eq!(log.sessions[1].provider_session_id, "odd@x4");
    assert_eq!(log.sessions[1].fork_of, None, "a second root stands alone");
    for k in 0..text.len() {
        if text.is_char_boundary(k) {
            import::parse_pi(&text[..k]);
        }
    }
}

#[test]
fn test_a_growing_pi_file_imports_as_the_whole() {
    for (name, text) in [("session", SESSION), ("v1", V1)] {
        let versions = growing::line_prefixes(text);
        growing::prefixes_are_prefixes(ImportFormat::Pi, name, &versions);
        growing::growing_imports_equal_the_whole(ImportFormat::Pi, name, &versions);
    }
}
