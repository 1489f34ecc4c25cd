use super::*;
use crate::import::{ImportedEntry, ImportedFork, ImportedSpawn};
use crate::types::Role;

fn session(id: &str, entries: &[&str]) -> ImportedSession {
    ImportedSession {
        entries: entries
            .iter()
            .map(|m| ImportedEntry::new(*m, Role::User, String::new(), 0))
            .collect(),
        ..ImportedSession::new(id)
    }
}

#[test]
fn test_plan_puts_parents_first_and_links_branches_and_sub_agents() {
    let mut agent = session("s@agent-1", &["a1"]);
    agent.spawned_by = Some(ImportedSpawn {
        provider_session_id: "s".into(),
        tool_call_id: Some("toolu_1".into()),
    });
    let mut rewind = session("s@u9", &["u9"]);
    rewind.fork_of = Some(ImportedFork {
        provider_session_id: "s".into(),
        after_message_id: "m1".into(),
    });
    let mut orphan = session("s@u7", &["u7"]);
    orphan.fork_of = Some(ImportedFork {
        provider_session_id: "s".into(),
        after_message_id: "gone".into(),
    });
    let main = session("s", &["m1", "m2"]);
    let planned = plan(ImportFormat::ClaudeCode, vec![agent, rewind, orphan, main]);
    let keys: Vec<&str> = planned.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "import:claude_code:s@u7",
            "import:claude_code:s",
            "import:claude_code:s@agent-1",
            "import:claude_code:s@u9",
        ],
        "log order, each linked session after its parent"
    );
    assert_eq!(
        planned[2].link,
        Some(PlannedLink::Child {
            parent_key: "import:claude_code:s".into(),
            tool_call_id: Some("toolu_1".into())
        })
    );
    assert_eq!(
        planned[3].link,
        Some(PlannedLink::Branch {
            parent_key: "import:claude_code:s".into(),
            before_message_id: Some("m2".into())
        })
    );
    assert_eq!(planned[0].link, None);
    assert!(
        planned[0]
            .link_note
            .as_deref()
            .is_some_and(|n| n.contains("gone"))
    );
    assert_eq!(planned[1].slice_ends, [2]);
}

#[test]
fn test_keys_of_unusable_ids_are_sanitized_with_a_reason() {
    let (key, note) = session_key(ImportFormat::Codex, "thread 1");
    assert!(key.starts_with("import:codex:thread_1~"), "{key}");
    assert!(note.is_some());
    assert_eq!(
        session_key(ImportFormat::Codex, "t-1"),
        ("import:codex:t-1".to_owned(), None)
    );
}
