//! Resume selection (ARCHITECTURE.md, "Resume selection") through the public JS API, in a
//! real browser: role adapter state, the decision before a task and what a finished task
//! leaves behind, and the provider thread binding a session's turns run on.
#![cfg(target_arch = "wasm32")]

mod common;

use common::{ok, rejection};

use serde_json::{Value, json};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "default";
const ROLE: &str = "role-runtime::run-1::cto";
const KEY: &str = "agent:main:main";
const NOTICE: &str = "Codex thread could not be resumed; starting a new one.";

async fn fresh(name: &str) -> JsValue {
    common::open(&common::db_name("js_resume", name)).await
}

/// The arguments object of a table call.
fn a(args: Value) -> JsValue {
    common::js(&args)
}

/// The arguments naming the role session `role` and the agent type `agent`, with `more`.
fn role_and(role: &str, agent: &str, more: Value) -> JsValue {
    let mut args = json!({ "role_session_id": role, "agent_type": agent });
    for (field, value) in more.as_object().into_iter().flatten() {
        args[field] = value.clone();
    }
    a(args)
}

async fn save_role(spool: &JsValue, adapter_state: Value) -> Value {
    let role = json!({
        "role_session_id": ROLE, "run_id": "run-1", "role_id": "cto",
        "adapter_state": adapter_state,
    });
    let args = a(json!({ "role": role, "now_ms": 1000 }));
    ok(spool, "saveRoleSession", &[WS.into(), args]).await
}

async fn adapter_state(spool: &JsValue, agent: &str) -> Value {
    let args = role_and(ROLE, agent, json!({}));
    ok(spool, "getRoleAdapterState", &[WS.into(), args]).await
}

async fn set_state(spool: &JsValue, agent: &str, state: Value, now_ms: u64) -> Value {
    let args = [
        WS.into(),
        role_and(ROLE, agent, json!({ "state": state, "now_ms": now_ms })),
    ];
    ok(spool, "updateRoleAdapterState", &args).await
}

async fn outcome(spool: &JsValue, outcome: Value, now_ms: u64) -> Value {
    let request = json!({ "role_session_id": ROLE, "project_id": "proj1", "outcome": outcome });
    let args = [
        WS.into(),
        a(json!({ "request": request, "now_ms": now_ms })),
    ];
    ok(spool, "recordTaskOutcome", &args).await
}

async fn select(spool: &JsValue, request: Value) -> Value {
    ok(
        spool,
        "selectResume",
        &[WS.into(), a(json!({ "request": request }))],
    )
    .await
}

async fn plan(spool: &JsValue, dead_thread: Option<&str>) -> Value {
    let mut args = json!({ "key": KEY, "agent_type": "codex" });
    if let Some(dead) = dead_thread {
        args["dead_thread"] = dead.into();
    }
    let args = [WS.into(), a(args)];
    ok(spool, "planProviderThread", &args).await
}

/// `commitTurn`'s arguments: a turn of `text` and its echo on `thread`, at `now_ms`.
fn turn(text: &str, thread: Value, now_ms: u64) -> JsValue {
    common::on(
        KEY,
        json!({ "turn": {
            "entries": [
                { "role": "user", "content": text },
                { "role": "assistant", "content": format!("echo {text}") },
            ],
            "thread": thread,
        }, "now_ms": now_ms }),
    )
}

#[wasm_bindgen_test]
async fn test_role_state_set_get_and_clear_drops_legacy_keys_and_keeps_the_rest() {
    let spool = fresh("role_state").await;
    let saved = save_role(
        &spool,
        json!({
            "selected_execution_agent": "codex",
            "external_resume_session_id": "thread-abc",
            "external_resume_session_scope_id": "sess-a",
            "external_resume_agent_type": "codex",
            "resume_source_session": "thread-abc",
        }),
    )
    .await;
    assert_eq!(saved["role_session_id"], ROLE);
    assert_eq!(saved["created_at"], 1000);
    let codex = json!({ "resume_session_id": "thread-abc", "last_task_id": "t1" });
    assert_eq!(set_state(&spool, "codex", codex.clone(), 1100).await, true);
    let claude = json!({ "resume_session_id": "sess-cc" });
    assert_eq!(
        set_state(&spool, "claude_code", claude.clone(), 1200).await,
        true
    );
    assert_eq!(adapter_state(&spool, "codex").await, codex);
    assert_eq!(adapter_state(&spool, "opencode").await, Value::Null);
    // Latest wins for one agent: nothing is kept from the earlier entry.
    let newer = json!({ "resume_session_id": "thread-new" });
    set_state(&spool, "codex", newer.clone(), 1300).await;
    assert_eq!(adapter_state(&spool, "codex").await, newer);

    assert_eq!(set_state(&spool, "codex", Value::Null, 1400).await, true);
    assert_eq!(adapter_state(&spool, "codex").await, Value::Null);
    let role = ok(
        &spool,
        "getRoleSession",
        &[WS.into(), a(json!({ "role_session_id": ROLE }))],
    )
    .await;
    assert_eq!(
        role["adapter_state"],
        json!({ "selected_execution_agent": "codex", "claude_code": claude }),
        "the clear drops the codex entry and the legacy keys, nothing else"
    );
    assert_eq!(role["created_at"], 1000);
    assert_eq!(role["updated_at"], 1400);

    let args = [
        WS.into(),
        role_and(
            "no::such::session",
            "codex",
            json!({ "state": newer, "now_ms": 1500 }),
        ),
    ];
    assert_eq!(ok(&spool, "updateRoleAdapterState", &args).await, false);
    let args = [
        WS.into(),
        a(json!({ "role_session_id": "no::such::session" })),
    ];
    assert_eq!(ok(&spool, "getRoleSession", &args).await, Value::Null);
}

#[wasm_bindgen_test]
async fn test_done_task_pins_its_token_and_the_next_task_resumes_it() {
    let spool = fresh("done_then_resume").await;
    save_role(&spool, json!({})).await;
    let effects = outcome(
        &spool,
        json!({ "agent_type": "codex", "task_id": "task-1", "status": "done", "token": "thread-1" }),
        2000,
    )
    .await;
    let entry = json!({
        "resume_session_id": "thread-1", "agent_type": "codex", "last_task_id": "task-1",
    });
    assert_eq!(
        effects,
        json!({
            "role_state": { "action": "set", "entry": entry },
            "set_metadata": {}, "remove_metadata": [],
        })
    );
    assert_eq!(adapter_state(&spool, "codex").await, entry);
    let runs = ok(&spool, "listRuns", &[WS.into(), a(json!({ "limit": 10 }))]).await;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(runs["runs"][0]["session_id"], "thread-1");
    assert_eq!(runs["runs"][0]["status"], "done");
    assert_eq!(runs["runs"][0]["updated_at"], 2000);

    let decision = select(
        &spool,
        json!({
            "agent_type": "codex", "role_session_id": ROLE, "project_id": "proj1",
            "scope_id": "sess-a",
        }),
    )
    .await;
    assert_eq!(decision["mode"], "resume");
    assert_eq!(decision["session_id"], "thread-1");
    assert_eq!(
        decision["set_metadata"],
        json!({
            "external_resume_session_id": "thread-1",
            "external_resume_agent_type": "codex",
            "external_resume_session_scope_id": "sess-a",
        })
    );
    assert_eq!(decision["clear_role_state"], false);
    // Another agent type never gets codex's token.
    let claude = select(
        &spool,
        json!({ "agent_type": "claude_code", "role_session_id": ROLE, "project_id": "proj1" }),
    )
    .await;
    assert_eq!(claude["mode"], "auto");
    assert_eq!(claude["session_id"], "");
}

#[wasm_bindgen_test]
async fn test_failed_resume_clears_the_role_token_and_a_later_task_starts_new() {
    let spool = fresh("failed_resume").await;
    save_role(&spool, json!({})).await;
    let done = json!({ "agent_type": "codex", "task_id": "task-old", "status": "done",
        "token": "thread-full" });
    outcome(&spool, done, 2000).await;
    let failed = json!({ "agent_type": "codex", "task_id": "task-retry", "status": "failed",
        "token": "thread-full", "resumed_from": "thread-full" });
    let effects = outcome(&spool, failed, 3000).await;
    assert_eq!(effects["role_state"], json!({ "action": "clear" }));
    assert_eq!(
        effects["set_metadata"],
        json!({ "external_resume_fallback": "provider_terminal_failure" })
    );
    assert_eq!(
        effects["remove_metadata"],
        json!([
            "external_resume_session_id",
            "external_resume_session_scope_id",
            "external_resume_agent_type",
        ])
    );
    assert_eq!(adapter_state(&spool, "codex").await, Value::Null);

    // Even preconfigured, the dead token is refused.
    let decision = select(
        &spool,
        json!({
            "agent_type": "codex", "role_session_id": ROLE, "project_id": "proj1",
            "preconfigured": "thread-full",
        }),
    )
    .await;
    assert_eq!(decision["mode"], "new");
    assert_eq!(decision["session_id"], "");
    assert_eq!(
        decision["set_metadata"]["external_resume_fallback"],
        "provider_terminal_failure"
    );
}

#[wasm_bindgen_test]
async fn test_role_token_whose_newest_run_failed_is_rejected_and_cleared() {
    let spool = fresh("terminal_role_token").await;
    save_role(&spool, json!({ "selected_execution_agent": "codex" })).await;
    let state = json!({ "resume_session_id": "thread-terminal", "last_task_id": "task-old" });
    set_state(&spool, "codex", state, 1100).await;
    let run = json!({
        "agent_type": "codex", "project_id": "proj1", "session_id": "thread-terminal",
        "task_id": "task-failed", "status": "failed", "role_session_id": ROLE,
        "workspace_path": "/tmp/ws", "run_mode": "exec",
    });
    let args = a(json!({ "run": run, "now_ms": 1200 }));
    let recorded = ok(&spool, "recordRun", &[WS.into(), args]).await;
    assert_eq!(recorded["updated_at"], 1200);
    assert_eq!(recorded["metadata"], json!({}));

    let decision = select(
        &spool,
        json!({
            "agent_type": "codex", "role_session_id": ROLE, "project_id": "proj1",
            "scope_id": "sess-a", "preconfigured": "thread-terminal",
        }),
    )
    .await;
    assert_eq!(decision["mode"], "new");
    assert_eq!(decision["session_id"], "");
    assert_eq!(decision["clear_role_state"], true);
    assert_eq!(
        decision["set_metadata"],
        json!({ "external_resume_fallback": "provider_terminal_failure" })
    );
    // The decision's clear is applied in the same call.
    assert_eq!(adapter_state(&spool, "codex").await, Value::Null);
    let role = ok(
        &spool,
        "getRoleSession",
        &[WS.into(), a(json!({ "role_session_id": ROLE }))],
    )
    .await;
    assert_eq!(
        role["adapter_state"],
        json!({ "selected_execution_agent": "codex" })
    );
}

#[wasm_bindgen_test]
async fn test_list_runs_pages_with_cursor_and_filter() {
    let spool = fresh("list_runs").await;
    for (i, (agent, token)) in [("codex", "t-1"), ("codex", "t-2"), ("opencode", "t-3")]
        .into_iter()
        .enumerate()
    {
        let run = json!({ "agent_type": agent, "project_id": "proj1", "session_id": token,
            "task_id": format!("task-{i}"), "status": "done" });
        let args = a(json!({ "run": run, "now_ms": 100 }));
        ok(&spool, "recordRun", &[WS.into(), args]).await;
    }
    let first = ok(&spool, "listRuns", &[WS.into(), a(json!({ "limit": 2 }))]).await;
    let tokens = |page: &Value| -> Vec<String> {
        page["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| r["session_id"].as_str().expect("token").to_owned())
            .collect()
    };
    assert_eq!(tokens(&first), ["t-1", "t-2"]);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let args = a(json!({ "limit": 2, "cursor": cursor }));
    let second = ok(&spool, "listRuns", &[WS.into(), args]).await;
    assert_eq!(tokens(&second), ["t-3"]);
    assert_eq!(second["next_cursor"], Value::Null);
    let args = json!({ "limit": 10, "cursor": null, "filter": { "agent_type": "opencode" } });
    let args = [WS.into(), a(args)];
    assert_eq!(tokens(&ok(&spool, "listRuns", &args).await), ["t-3"]);
}

#[wasm_bindgen_test]
async fn test_thread_binding_resumes_then_rotates_with_one_notice() {
    let spool = fresh("thread_binding").await;
    let args = common::on(KEY, json!({ "session_id": "s1", "now_ms": 1000 }));
    ok(&spool, "createSession", &[WS.into(), args]).await;
    let first = plan(&spool, None).await;
    assert_eq!(
        first,
        json!({ "action": "start", "thread_id": null, "replaces": null, "notice": null })
    );

    let binding = json!({ "agent_type": "codex", "thread_id": "thread-1" });
    let args = [WS.into(), turn("amber", binding, 1100)];
    let committed = ok(&spool, "commitTurn", &args).await;
    assert_eq!(committed["entries"].as_array().map(Vec::len), Some(2));
    assert_eq!(committed["entries"][1]["content"], "echo amber");
    assert_eq!(
        committed["session"]["model_config"]["codex_thread_id"],
        "thread-1"
    );
    assert_eq!(committed["session"]["entry_count"], 2);

    // A rebuilt agent resumes the bound thread, with nothing to say.
    let resumed = plan(&spool, None).await;
    assert_eq!(resumed["action"], "resume");
    assert_eq!(resumed["thread_id"], "thread-1");
    assert_eq!(resumed["notice"], Value::Null);

    // The provider cannot resume it: start fresh, one notice, then rotate on commit.
    let dead = plan(&spool, Some("thread-1")).await;
    assert_eq!(
        dead,
        json!({ "action": "start", "thread_id": null, "replaces": "thread-1", "notice": NOTICE })
    );
    let rotation = json!({ "agent_type": "codex", "thread_id": "thread-2",
        "replaces": dead["replaces"] });
    let args = [WS.into(), turn("and now?", rotation, 1200)];
    let rotated = ok(&spool, "commitTurn", &args).await;
    assert_eq!(
        rotated["session"]["model_config"]["codex_thread_id"],
        "thread-2"
    );
    assert_eq!(rotated["session"]["entry_count"], 4);

    // A second agent that also saw thread-1 die must not undo the rotation.
    let stale = json!({ "agent_type": "codex", "thread_id": "thread-3", "replaces": "thread-1" });
    let args = [WS.into(), turn("late", stale, 1300)];
    assert_eq!(rejection(&spool, "commitTurn", &args).await.0, "conflict");
    let count = ok(
        &spool,
        "countEntries",
        &[WS.into(), common::on(KEY, json!({}))],
    )
    .await;
    assert_eq!(count, 4, "the refused turn wrote nothing");
    let after = plan(&spool, Some("thread-1")).await;
    assert_eq!(after["action"], "resume");
    assert_eq!(after["thread_id"], "thread-2");
    assert_eq!(after["notice"], Value::Null);
}

#[wasm_bindgen_test]
async fn test_bad_resume_input_rejects_with_typed_codes() {
    let spool = fresh("bad_input").await;
    save_role(&spool, json!({})).await;
    let cases: Vec<(&str, Vec<JsValue>)> = vec![
        (
            "selectResume",
            vec![WS.into(), a(json!({ "request": { "agent_type": "" } }))],
        ),
        // Records take the core's snake_case fields; a camelCase one is a mistake.
        (
            "selectResume",
            vec![WS.into(), a(json!({ "request": { "agentType": "codex" } }))],
        ),
        (
            "selectResume",
            vec![WS.into(), a(json!({ "request": "codex" }))],
        ),
        (
            "updateRoleAdapterState",
            vec![WS.into(), role_and(ROLE, "", json!({ "state": null }))],
        ),
        // A left-out state is not `null`: a forgotten state must not clear anything.
        (
            "updateRoleAdapterState",
            vec![WS.into(), role_and(ROLE, "codex", json!({}))],
        ),
        (
            "updateRoleAdapterState",
            vec![
                WS.into(),
                role_and(ROLE, "codex", json!({ "state": ["not", "a", "map"] })),
            ],
        ),
        (
            "getRoleAdapterState",
            vec![
                WS.into(),
                a(json!({ "role_session_id": ROLE, "agent_type": 7 })),
            ],
        ),
        (
            "getRoleSession",
            vec![WS.into(), a(json!({ "role_session_id": "" }))],
        ),
        (
            "saveRoleSession",
            vec![WS.into(), a(json!({ "role": { "run_id": "run-1" } }))],
        ),
        (
            "saveRoleSession",
            vec![
                WS.into(),
                a(json!({ "role": { "role_session_id": ROLE }, "nowMs": 5 })),
            ],
        ),
        (
            "recordRun",
            vec![
                WS.into(),
                a(json!({ "run": { "agent_type": "codex", "project_id": "p",
                    "session_id": "t", "task_id": "", "status": "done" } })),
            ],
        ),
        ("listRuns", vec![WS.into(), a(json!({ "limit": 1.5 }))]),
        (
            "listRuns",
            vec![
                WS.into(),
                a(json!({ "limit": 10, "cursor": null, "filter": { "agent": "x" } })),
            ],
        ),
        (
            "recordTaskOutcome",
            vec![
                WS.into(),
                a(json!({ "request": { "project_id": "proj1",
                    "outcome": { "agent_type": "", "task_id": "t", "status": "done" } } })),
            ],
        ),
        (
            "planProviderThread",
            vec![WS.into(), common::on(KEY, json!({ "agent_type": "" }))],
        ),
        (
            "commitTurn",
            vec![
                WS.into(),
                common::on(KEY, json!({ "turn": { "entries": [] } })),
            ],
        ),
    ];
    for (method, args) in cases {
        let (code, message) = rejection(&spool, method, &args).await;
        assert_eq!(code, "invalid_argument", "{method}: {message}");
    }
    let args = [WS.into(), a(json!({ "request": { "agent_type": "" } }))];
    let (code, message) = rejection(&spool, "selectResume", &args).await;
    assert_eq!(code, "invalid_argument");
    assert!(message.contains("agent_type"), "{message}");
    // Well-formed, but about a session that does not exist.
    let args = [WS.into(), common::on(KEY, json!({ "agent_type": "codex" }))];
    let (code, _) = rejection(&spool, "planProviderThread", &args).await;
    assert_eq!(code, "not_found");
    // Nothing above changed the role session.
    let role = ok(
        &spool,
        "getRoleSession",
        &[WS.into(), a(json!({ "role_session_id": ROLE }))],
    )
    .await;
    assert_eq!(role["adapter_state"], json!({}));
    assert_eq!(role["updated_at"], 1000);
}
