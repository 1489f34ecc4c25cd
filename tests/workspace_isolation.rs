//! Workspace isolation in the core: after a session family is written in workspace `a`
//! (transcript, state, compaction, branch, turn, run record, role session, reset with an
//! archive), every read operation in workspace `b` answers as if `a` did not exist —
//! `not_found` or an empty answer, never a trace of `a`.

use std::cell::RefCell;

use serde_json::{Value, json};
use spool::{Archiver, Command, MemoryStorage, ResetArchive, execute_with};

const KEY: &str = "agent:main:main";
/// Text only workspace `a` holds; every id of `a` starts with it too.
const SECRET: &str = "secret-a";

/// Keeps every archive.
#[derive(Default)]
struct Keep(RefCell<Vec<ResetArchive>>);

impl Archiver for Keep {
    fn write_archive(&self, _ws: &str, archive: &ResetArchive) -> Result<(), String> {
        self.0.borrow_mut().push(archive.clone());
        Ok(())
    }
}

fn command(value: Value) -> Command {
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{value}: {e}"))
}

fn exec(storage: &MemoryStorage, archive: &Keep, ws: &str, value: Value) -> Result<Value, String> {
    execute_with(storage, archive, ws, command(value)).map_err(|e| format!("{}: {e}", e.code()))
}

fn write_a(storage: &MemoryStorage, archive: &Keep) {
    let mut n = 0;
    let mut run = |value: Value| {
        n += 1;
        exec(storage, archive, "a", value.clone())
            .unwrap_or_else(|e| panic!("step {n} in a: {value}: {e}"))
    };
    run(
        json!({"op": "create_session", "key": KEY, "session_id": format!("{SECRET}-s1"), "now_ms": 1}),
    );
    for i in 1..=6 {
        run(json!({"op": "append_entry", "key": KEY, "now_ms": 1 + i,
            "request": {"role": "user", "content": format!("{SECRET} {i} {}", "w ".repeat(80)),
                        "message_id": format!("{SECRET}-m{i}")}}));
    }
    run(json!({"op": "save_state", "key": KEY, "now_ms": 10,
        "state": {"provider": "portable", "state_kind": "k", "payload": SECRET}}));
    let compacted = run(json!({"op": "compact", "key": KEY, "now_ms": 11,
        "request": {"context_window_tokens": 200, "compaction_id": format!("{SECRET}-c1")}}));
    assert!(compacted["skip_reason"].is_null(), "{compacted}");
    run(
        json!({"op": "branch", "parent_key": KEY, "child_key": "agent:main:alt", "now_ms": 12,
        "request": {"child_session_id": format!("{SECRET}-s2"), "fork_transcript": true}}),
    );
    run(json!({"op": "start_turn", "key": KEY, "now_ms": 13,
        "request": {"turn_id": format!("{SECRET}-t1")}}));
    run(json!({"op": "save_role_session", "now_ms": 14,
        "role": {"role_session_id": format!("{SECRET}-role")}}));
    run(json!({"op": "record_run", "now_ms": 15,
        "run": {"agent_type": "codex", "project_id": "p1", "session_id": format!("{SECRET}-token"),
                "task_id": "t1", "status": "done", "role_session_id": format!("{SECRET}-role")}}));
    run(
        json!({"op": "create_session", "key": "agent:main:reset", "session_id": format!("{SECRET}-s3"), "now_ms": 16}),
    );
    run(
        json!({"op": "append_entry", "key": "agent:main:reset", "now_ms": 17,
        "request": {"role": "user", "content": SECRET}}),
    );
    run(
        json!({"op": "apply_intent", "key": "agent:main:reset", "intent": "reset_same_key",
        "session_id": format!("{SECRET}-s4"), "now_ms": 18}),
    );
}

/// Whether `value` is empty: null, false, 0, "", [], or an object of empty values.
fn empty(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Number(n) => n.as_u64() == Some(0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(empty),
        Value::Bool(true) => false,
    }
}

#[test]
fn test_every_read_operation_in_another_workspace_sees_nothing() {
    let storage = MemoryStorage::new();
    let archive = Keep::default();
    write_a(&storage, &archive);
    let id = |suffix: &str| format!("{SECRET}-{suffix}");
    let reads = [
        json!({"op": "get_session", "key": KEY}),
        json!({"op": "read_page", "key": KEY, "request": {"limit": 100}}),
        json!({"op": "read_page", "key": "agent:main:alt", "request": {"limit": 100, "order": "newest_first"}}),
        json!({"op": "list_sessions", "limit": 100}),
        json!({"op": "list_sessions", "limit": 100, "agent_id": "main"}),
        json!({"op": "count_entries", "key": KEY}),
        json!({"op": "get_entry", "key": KEY, "message_id": id("m6")}),
        json!({"op": "get_entry", "key": "agent:main:alt", "message_id": id("m1")}),
        json!({"op": "list_states", "key": KEY, "valid_only": false}),
        json!({"op": "list_reset_archives", "key": "agent:main:reset"}),
        json!({"op": "canonical_transcript", "key": KEY}),
        json!({"op": "list_summaries", "key": KEY}),
        json!({"op": "list_degraded_compactions"}),
        json!({"op": "compaction_preimage", "key": KEY, "compaction_id": id("c1")}),
        json!({"op": "get_role_session", "role_session_id": id("role")}),
        json!({"op": "get_role_adapter_state", "role_session_id": id("role"), "agent_type": "codex"}),
        json!({"op": "list_runs", "filter": {}, "limit": 100}),
        json!({"op": "select_resume", "request": {"agent_type": "codex", "project_id": "p1"}}),
        json!({"op": "select_resume", "request": {"agent_type": "codex", "role_session_id": id("role")}}),
        json!({"op": "plan_provider_thread", "key": KEY, "agent_type": "codex"}),
        json!({"op": "lineage", "key": "agent:main:alt"}),
        json!({"op": "list_children", "key": KEY}),
        json!({"op": "get_turn", "key": KEY, "turn_id": id("t1")}),
        json!({"op": "session_turns", "key": KEY}),
        json!({"op": "list_turns", "key": KEY, "request": {}}),
        json!({"op": "get_fork_lineage", "key": "agent:main:alt"}),
    ];
    let mut shown_in_a = 0;
    for read in &reads {
        if let Ok(answer) = exec(&storage, &archive, "a", read.clone())
            && answer.to_string().contains(SECRET)
        {
            shown_in_a += 1;
        }
        match exec(&storage, &archive, "b", read.clone()) {
            Ok(answer) => {
                assert!(
                    !answer.to_string().contains(SECRET),
                    "{read} in b shows workspace a: {answer}"
                );
                // What `b` answers is what an empty workspace answers.
                let fresh = MemoryStorage::new();
                let blank = exec(&fresh, &archive, "b", read.clone()).expect("empty workspace");
                assert_eq!(answer, blank, "{read}");
                assert!(
                    empty(&answer) || read["op"] == "select_resume",
                    "{read}: {answer}"
                );
            }
            Err(e) => assert!(e.starts_with("not_found: "), "{read} in b: {e}"),
        }
    }
    // The walk is meaningful: most reads show `a`'s data in `a`.
    assert!(
        shown_in_a >= 20,
        "only {shown_in_a} reads showed anything in a"
    );
    assert_eq!(
        archive.0.borrow().len(),
        1,
        "the reset in a kept its archive"
    );
}
