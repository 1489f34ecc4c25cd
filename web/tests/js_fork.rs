//! Branches, provider forks and imports through the public JS API, in a real browser on
//! IndexedDB: local branches (whole history, before a message, an unknown message),
//! lineage and children, isolation of parent and child, a provider fork operation accepted
//! end to end and one rejected, parsing and importing a Claude Code log (idempotently),
//! and the generic `execute`.
#![cfg(target_arch = "wasm32")]

mod common;

use common::ok;

use js_sys::{Array, Function, Reflect};
use serde_json::{Value, json};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "default";
const PARENT: &str = "agent:main:main";
const SOURCE: &str = "agent:main:src";

async fn fresh(name: &str) -> JsValue {
    common::open(&common::db_name("js_fork", name)).await
}

/// The arguments naming the fork operation `id`, at `now_ms` when given.
fn by_op(id: &str, now_ms: Option<u64>) -> JsValue {
    let mut args = json!({ "operation_id": id });
    if let Some(now_ms) = now_ms {
        args["now_ms"] = now_ms.into();
    }
    common::js(&args)
}

/// The fork reason a rejection carries (`reason`), if any.
fn reason(error: &JsValue) -> Option<String> {
    Reflect::get(error, &"reason".into())
        .ok()
        .and_then(|r| r.as_string())
}

/// Calls the synchronous `spool[method](...args)`: its value, or what it threw.
fn call_sync(spool: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let function: Function = Reflect::get(spool, &method.into())
        .expect("method lookup")
        .dyn_into()
        .unwrap_or_else(|_| panic!("Spool has no method `{method}`"));
    let args: Array = args.iter().collect();
    function.apply(spool, &args)
}

/// The session id the tests give the session `key`.
fn id_of(key: &str) -> String {
    format!("{}-id", key.replace(':', "-"))
}

/// A session `key` (identity [`id_of`]) with the messages `m1`… (one per content), 10
/// tokens each.
async fn session_with(spool: &JsValue, key: &str, contents: &[&str]) {
    let args = common::on(key, json!({ "session_id": id_of(key), "now_ms": 1 }));
    ok(spool, "createSession", &[WS.into(), args]).await;
    for (i, content) in contents.iter().enumerate() {
        let request = json!({
            "role": if i % 2 == 0 { "user" } else { "assistant" },
            "content": content, "message_id": format!("m{}", i + 1), "token_count": 10,
        });
        let args = [
            WS.into(),
            common::on(key, json!({ "request": request, "now_ms": 10 + i as u64 })),
        ];
        ok(spool, "appendEntry", &args).await;
    }
}

/// The contents of the whole transcript of `key`, oldest first.
async fn contents(spool: &JsValue, key: &str) -> Vec<String> {
    let request = json!({ "order": "oldest_first", "limit": 100 });
    let page = ok(
        spool,
        "readPage",
        &[WS.into(), common::on(key, json!({ "request": request }))],
    )
    .await;
    page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["content"].as_str().expect("content").to_owned())
        .collect()
}

async fn branch(spool: &JsValue, child: &str, request: Value, now_ms: u64) -> Value {
    let args = json!({ "parent_key": PARENT, "child_key": child, "request": request,
        "now_ms": now_ms });
    ok(spool, "branch", &[WS.into(), common::js(&args)]).await
}

#[wasm_bindgen_test]
async fn test_branch_whole_history_and_before_message() {
    let spool = fresh("branch").await;
    session_with(&spool, PARENT, &["q1", "a1", "q2", "a2"]).await;

    let full = branch(
        &spool,
        "agent:main:full",
        json!({ "child_session_id": "full-1", "fork_transcript": true }),
        100,
    )
    .await;
    assert_eq!(full["key"], "agent:main:full");
    assert_eq!(full["session_id"], "full-1");
    assert_eq!(full["parent_session_key"], PARENT);
    assert_eq!(full["spawn_depth"], 1);
    assert_eq!(full["forked_from_parent"], true);
    assert_eq!(full["entry_count"], 4);
    assert_eq!(full["fork_point"]["parent_session_id"], id_of(PARENT));
    assert_eq!(full["fork_point"]["inherited_entries"], 4);
    assert_eq!(
        contents(&spool, "agent:main:full").await,
        ["q1", "a1", "q2", "a2"]
    );

    let before = branch(
        &spool,
        "agent:main:before",
        json!({ "child_session_id": "before-1", "fork_before_message_id": "m3" }),
        101,
    )
    .await;
    assert_eq!(before["forked_from_parent"], true);
    assert_eq!(before["entry_count"], 2);
    assert_eq!(before["fork_point"]["before_message_id"], "m3");
    assert_eq!(contents(&spool, "agent:main:before").await, ["q1", "a1"]);
    // The parent is unchanged, its forks counted.
    assert_eq!(contents(&spool, PARENT).await, ["q1", "a1", "q2", "a2"]);
    let parent = ok(
        &spool,
        "lineage",
        &[WS.into(), common::on(PARENT, json!({}))],
    )
    .await;
    assert_eq!(parent["fork_count"], 2);

    // No request: an empty branch with a fresh identity from crypto.randomUUID().
    let args = json!({ "parent_key": PARENT, "child_key": "agent:main:empty" });
    let args = [WS.into(), common::js(&args)];
    let empty = ok(&spool, "branch", &args).await;
    assert_eq!(empty["forked_from_parent"], false);
    assert_eq!(empty["entry_count"], 0);
    assert_eq!(empty["fork_point"], Value::Null);
    assert_eq!(empty["session_id"].as_str().expect("an id").len(), 36);
}

#[wasm_bindgen_test]
async fn test_branch_before_unknown_message_writes_nothing() {
    let spool = fresh("branch-unknown").await;
    session_with(&spool, PARENT, &["q1", "a1"]).await;
    let request = json!({ "child_session_id": "c-1", "fork_before_message_id": "nope" });
    let args = json!({ "parent_key": PARENT, "child_key": "agent:main:child",
        "request": request, "now_ms": 50 });
    let args = [WS.into(), common::js(&args)];
    let error = common::rejected(&spool, "branch", &args).await;
    assert_eq!(common::code(&error), "not_found");
    assert!(
        common::message(&error).contains("Transcript message not found"),
        "{}",
        common::message(&error)
    );
    let child = ok(
        &spool,
        "getSession",
        &[WS.into(), common::on("agent:main:child", json!({}))],
    )
    .await;
    assert_eq!(child, Value::Null, "no child written");
    let children = ok(
        &spool,
        "listChildren",
        &[WS.into(), common::on(PARENT, json!({}))],
    )
    .await;
    assert_eq!(children, json!([]));
    let parent = ok(
        &spool,
        "lineage",
        &[WS.into(), common::on(PARENT, json!({}))],
    )
    .await;
    assert_eq!(parent["fork_count"], 0);

    // The other refusals keep their codes: a missing parent, a taken child key, a
    // misspelt field.
    let args = json!({ "parent_key": "agent:main:missing", "child_key": "agent:main:c2" });
    let args = [WS.into(), common::js(&args)];
    let error = common::rejected(&spool, "branch", &args).await;
    assert_eq!(common::code(&error), "not_found");
    let args = [
        WS.into(),
        common::js(&json!({ "parent_key": PARENT, "child_key": PARENT })),
    ];
    let error = common::rejected(&spool, "branch", &args).await;
    assert_eq!(common::code(&error), "conflict");
    let misspelt = json!({ "parent_key": PARENT, "child_key": "agent:main:c3",
        "request": { "forkTranscript": true } });
    let args = [WS.into(), common::js(&misspelt)];
    let error = common::rejected(&spool, "branch", &args).await;
    assert_eq!(common::code(&error), "invalid_argument");
}

#[wasm_bindgen_test]
async fn test_lineage_and_children() {
    let spool = fresh("lineage").await;
    session_with(&spool, PARENT, &["q1", "a1"]).await;
    // Created out of key order: children come back in key order.
    for (child, now) in [("agent:main:b", 20), ("agent:main:a", 21)] {
        let request = json!({ "child_session_id": id_of(child), "fork_transcript": true });
        branch(&spool, child, request, now).await;
    }
    let args = json!({ "parent_key": "agent:main:a", "child_key": "agent:main:a1",
        "request": { "child_session_id": "a1-id", "fork_transcript": true }, "now_ms": 22 });
    let args = [WS.into(), common::js(&args)];
    ok(&spool, "branch", &args).await;

    let root = ok(
        &spool,
        "lineage",
        &[WS.into(), common::on(PARENT, json!({}))],
    )
    .await;
    assert_eq!(root["key"], PARENT);
    assert_eq!(root["parent_session_key"], Value::Null);
    assert_eq!(root["spawn_depth"], 0);
    let keys: Vec<&Value> = root["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| &c["key"])
        .collect();
    assert_eq!(keys, [&json!("agent:main:a"), &json!("agent:main:b")]);

    let grandchild = ok(
        &spool,
        "lineage",
        &[WS.into(), common::on("agent:main:a1", json!({}))],
    )
    .await;
    assert_eq!(grandchild["parent_session_key"], "agent:main:a");
    assert_eq!(grandchild["spawn_depth"], 2);
    assert_eq!(grandchild["children"], json!([]));
    assert_eq!(contents(&spool, "agent:main:a1").await, ["q1", "a1"]);

    let children = ok(
        &spool,
        "listChildren",
        &[WS.into(), common::on("agent:main:a", json!({}))],
    )
    .await;
    assert_eq!(children.as_array().expect("a list").len(), 1);
    assert_eq!(children[0]["key"], "agent:main:a1");
    assert_eq!(children[0]["session_id"], "a1-id");

    for method in ["lineage", "listChildren"] {
        let args = [WS.into(), common::on("agent:main:none", json!({}))];
        let error = common::rejected(&spool, method, &args).await;
        assert_eq!(common::code(&error), "not_found", "{method}");
    }
}

#[wasm_bindgen_test]
async fn test_branch_isolation_both_ways() {
    let spool = fresh("isolation").await;
    session_with(&spool, PARENT, &["q1", "a1"]).await;
    let child = "agent:main:child";
    branch(
        &spool,
        child,
        json!({ "child_session_id": "child-1", "fork_transcript": true }),
        30,
    )
    .await;

    let request = json!({ "role": "user", "content": "parent later" });
    let args = common::on(PARENT, json!({ "request": request, "now_ms": 31 }));
    ok(&spool, "appendEntry", &[WS.into(), args]).await;
    let request = json!({ "role": "user", "content": "child later" });
    let args = common::on(child, json!({ "request": request, "now_ms": 32 }));
    ok(&spool, "appendEntry", &[WS.into(), args]).await;

    assert_eq!(contents(&spool, PARENT).await, ["q1", "a1", "parent later"]);
    assert_eq!(contents(&spool, child).await, ["q1", "a1", "child later"]);
    // Newest first, the child's first page does not see the parent's append either.
    let request = json!({ "order": "newest_first", "limit": 2 });
    let args = common::on(child, json!({ "request": request }));
    let page = ok(&spool, "readPage", &[WS.into(), args]).await;
    assert_eq!(page["entries"][0]["content"], "child later");
    assert_eq!(page["entries"][1]["content"], "a1");
    let count = ok(
        &spool,
        "countEntries",
        &[WS.into(), common::on(child, json!({}))],
    )
    .await;
    assert_eq!(count, 3);
}

/// A source session on a provider with one settled turn (two entries).
async fn source(spool: &JsValue) {
    let args = common::on(SOURCE, json!({ "session_id": "src-1", "now_ms": 1 }));
    ok(spool, "createSession", &[WS.into(), args]).await;
    let update = json!({
        "model": "gpt-5-codex",
        "model_config": { "provider": "codex", "provider_session_id": "provider-1" },
        "metadata": { "cwd": "/project" },
    });
    let args = [
        WS.into(),
        common::on(SOURCE, json!({ "request": update, "now_ms": 2 })),
    ];
    ok(spool, "update", &args).await;
    let start = json!({ "turn_id": "turn-1" });
    let args = common::on(SOURCE, json!({ "request": start, "now_ms": 3 }));
    let turn = ok(spool, "startTurn", &[WS.into(), args]).await;
    assert_eq!(turn["phase"], "running");
    assert_eq!(turn["seq"], 1);
    // One turn at a time.
    let again = json!({ "turn_id": "turn-x" });
    let args = common::on(SOURCE, json!({ "request": again, "now_ms": 3 }));
    let error = common::rejected(spool, "startTurn", &[WS.into(), args]).await;
    assert_eq!(common::code(&error), "conflict");
    for (i, (role, content)) in [("user", "question"), ("assistant", "answer")]
        .into_iter()
        .enumerate()
    {
        let request = json!({ "role": role, "content": content, "turn_id": "turn-1" });
        let args = [
            WS.into(),
            common::on(
                SOURCE,
                json!({ "request": request, "now_ms": 4 + i as u64 }),
            ),
        ];
        ok(spool, "appendEntry", &args).await;
    }
    let close = json!({
        "provider_turn_id": "provider-turn-1", "provider_binding": { "schema_version": 1 },
    });
    let args = common::on(
        SOURCE,
        json!({ "turn_id": "turn-1", "close": close, "now_ms": 6 }),
    );
    let args = [WS.into(), args];
    let settled = ok(spool, "settleTurn", &args).await;
    assert_eq!(settled["phase"], "settled");
    assert_eq!(
        settled["boundary"],
        json!({ "created_at": 5, "entry_id": 2 })
    );
    let turns = ok(
        spool,
        "sessionTurns",
        &[WS.into(), common::on(SOURCE, json!({}))],
    )
    .await;
    assert_eq!(turns["latest"]["turn_id"], "turn-1");
    assert_eq!(turns["active"], Value::Null);
    let args = common::on(SOURCE, json!({ "turn_id": "turn-1" }));
    let turn = ok(spool, "getTurn", &[WS.into(), args]).await;
    assert_eq!(turn["provider_turn_id"], "provider-turn-1");
    // Every turn: the request may be left out, and must be an object when given.
    let listed = ok(
        spool,
        "listTurns",
        &[WS.into(), common::on(SOURCE, json!({}))],
    )
    .await;
    assert_eq!(listed["turns"][0]["turn_id"], "turn-1");
    assert_eq!(listed["turns"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed["next_cursor"], Value::Null);
    let args = common::on(SOURCE, json!({ "request": "newest_first" }));
    let error = common::rejected(spool, "listTurns", &[WS.into(), args]).await;
    assert_eq!(common::code(&error), "invalid_argument");
}

/// The arguments of a `fork` of `SOURCE` into `target`, with `more` fields.
fn fork_request(request_id: &str, target: &str, more: Value) -> JsValue {
    let mut args = json!({ "source_key": SOURCE, "request": {
        "request_id": request_id, "target_key": target,
        "target_session_id": id_of(target), "through_turn_id": "turn-1",
    } });
    for (field, value) in more.as_object().into_iter().flatten() {
        args[field] = value.clone();
    }
    common::js(&args)
}

#[wasm_bindgen_test]
async fn test_provider_fork_accepted_end_to_end() {
    let spool = fresh("fork-accepted").await;
    source(&spool).await;
    let child = "agent:main:child";
    let args = [
        WS.into(),
        fork_request(
            "request-1",
            child,
            json!({ "operation_id": "op-1", "now_ms": 10 }),
        ),
    ];
    let fork = ok(&spool, "fork", &args).await;
    assert_eq!(fork["status"], "accepted");
    assert_eq!(fork["phase"], "frozen");
    assert_eq!(fork["operation_id"], "op-1");
    assert_eq!(fork["source_turn_id"], "turn-1");
    // The same request again is the same operation (whatever operation id is offered).
    let request = fork_request("request-1", child, json!({}));
    let again = ok(&spool, "fork", &[WS.into(), request]).await;
    assert_eq!(again["operation_id"], "op-1");
    let none = ok(
        &spool,
        "getSession",
        &[WS.into(), common::on(child, json!({}))],
    )
    .await;
    assert_eq!(
        none,
        Value::Null,
        "nothing materialized before the provider answers"
    );

    let payload = ok(
        &spool,
        "beginForkDispatch",
        &[WS.into(), by_op("op-1", Some(11))],
    )
    .await;
    assert_eq!(payload["source_provider_session_id"], "provider-1");
    assert_eq!(payload["point"]["provider_turn_id"], "provider-turn-1");
    assert_eq!(
        payload["point"]["provider_binding"],
        json!({ "schema_version": 1 })
    );
    assert_eq!(payload["target_context"]["cwd"], "/project");
    // Never dispatched twice.
    let error = common::rejected(
        &spool,
        "beginForkDispatch",
        &[WS.into(), by_op("op-1", Some(11))],
    )
    .await;
    assert_eq!(common::code(&error), "conflict");
    assert_eq!(reason(&error).as_deref(), Some("stale_transition"));

    let accepted = json!({
        "disposition": "accepted", "target_provider_session_id": "provider-child",
        "bind_provider_state": true,
    });
    let args = json!({ "operation_id": "op-1", "disposition": accepted, "now_ms": 12 });
    let args = [WS.into(), common::js(&args)];
    let op = ok(&spool, "recordForkDisposition", &args).await;
    assert_eq!(op["status"], "accepted");
    assert_eq!(op["phase"], "materializing");

    let op = ok(&spool, "commitFork", &[WS.into(), by_op("op-1", Some(13))]).await;
    assert_eq!(op["status"], "committed");
    assert_eq!(op["session"]["key"], child);
    assert_eq!(op["session"]["forked_from"]["operation_id"], "op-1");
    assert_eq!(op["lineage"]["source_turn_id"], "turn-1");
    assert_eq!(contents(&spool, child).await, ["question", "answer"]);
    // The child's own identity holds the turn it was forked through.
    let request = json!({ "order": "newest_first", "limit": 5 });
    let args = common::on(child, json!({ "request": request }));
    let listed = ok(&spool, "listTurns", &[WS.into(), args]).await;
    assert_eq!(listed["turns"][0]["turn_id"], "turn-1");
    assert_eq!(listed["turns"][0]["session_id"], id_of(child));

    let op = ok(
        &spool,
        "getForkOperation",
        &[WS.into(), by_op("op-1", None)],
    )
    .await;
    assert_eq!(op["status"], "committed");
    assert_eq!(op["acknowledged"], false, "reading never acknowledges");
    let lineage = ok(
        &spool,
        "getForkLineage",
        &[WS.into(), common::on(child, json!({}))],
    )
    .await;
    assert_eq!(lineage["source_key"], SOURCE);
    assert_eq!(lineage["target_session_id"], id_of(child));

    // The provider keeps state: the binding is handed out once.
    let claim = ok(
        &spool,
        "claimForkProviderBinding",
        &[WS.into(), common::on(child, json!({ "now_ms": 14 }))],
    )
    .await;
    assert_eq!(claim["operation_id"], "op-1");
    assert_eq!(claim["target_provider_session_id"], "provider-child");
    let claim = ok(
        &spool,
        "claimForkProviderBinding",
        &[WS.into(), common::on(child, json!({ "now_ms": 15 }))],
    )
    .await;
    assert_eq!(claim, Value::Null);
    let args = [WS.into(), by_op("op-1", Some(16))];
    let op = ok(&spool, "completeForkProviderBinding", &args).await;
    assert_eq!(op["provider_state_binding"], "bound");

    let op = ok(
        &spool,
        "acknowledgeForkOperation",
        &[WS.into(), by_op("op-1", Some(17))],
    )
    .await;
    assert_eq!(op["acknowledged"], true);
    assert_eq!(op["acknowledged_at"], 17);

    // A new fork without an operation id gets one from crypto.randomUUID().
    let request = fork_request("request-2", "agent:main:child2", json!({}));
    let fork = ok(&spool, "fork", &[WS.into(), request]).await;
    assert_eq!(fork["operation_id"].as_str().expect("an id").len(), 36);
    // Nothing to recover but that prepared operation.
    let args = common::js(&json!({ "now_ms": 18 }));
    let report = ok(&spool, "recoverForkOperations", &[WS.into(), args]).await;
    assert_eq!(
        report["to_dispatch"][0]["operation_id"],
        fork["operation_id"]
    );
    assert_eq!(report["marked_unknown"], json!([]));
}

#[wasm_bindgen_test]
async fn test_provider_fork_rejected_keeps_error_text() {
    let spool = fresh("fork-rejected").await;
    source(&spool).await;
    let child = "agent:main:child";
    let options = json!({ "operation_id": "op-r", "now_ms": 10 });
    let args = [WS.into(), fork_request("request-r", child, options)];
    ok(&spool, "fork", &args).await;
    ok(
        &spool,
        "beginForkDispatch",
        &[WS.into(), by_op("op-r", Some(11))],
    )
    .await;
    let text = "Attachments in this thread cannot be forked (file_42.pdf)";
    let rejected = json!({
        "disposition": "rejected", "error": text, "reason": "attachment_unsupported",
    });
    let args = json!({ "operation_id": "op-r", "disposition": rejected, "now_ms": 12 });
    let args = [WS.into(), common::js(&args)];
    let op = ok(&spool, "recordForkDisposition", &args).await;
    assert_eq!(op["status"], "failed");
    assert_eq!(op["error"], text);
    assert_eq!(op["error_reason"], "attachment_unsupported");

    let op = ok(
        &spool,
        "getForkOperation",
        &[WS.into(), by_op("op-r", None)],
    )
    .await;
    assert_eq!(op["status"], "failed");
    assert_eq!(op["error"], text, "the provider's text, verbatim");
    let none = ok(
        &spool,
        "getSession",
        &[WS.into(), common::on(child, json!({}))],
    )
    .await;
    assert_eq!(none, Value::Null, "no child");

    // Committing a failed operation is a fork conflict that keeps the provider's reason.
    let error = common::rejected(&spool, "commitFork", &[WS.into(), by_op("op-r", Some(13))]).await;
    assert_eq!(common::code(&error), "conflict");
    assert_eq!(reason(&error).as_deref(), Some("attachment_unsupported"));
    assert!(
        common::message(&error).contains("attachment_unsupported"),
        "{}",
        common::message(&error)
    );
    // A changed request under the same id is `request_changed`.
    let args = [
        WS.into(),
        fork_request("request-r", "agent:main:other", json!({})),
    ];
    let error = common::rejected(&spool, "fork", &args).await;
    assert_eq!(common::code(&error), "conflict");
    assert_eq!(reason(&error).as_deref(), Some("request_changed"));
    // Unknown operations are `not_found`, with no fork reason.
    let error = common::rejected(
        &spool,
        "getForkOperation",
        &[WS.into(), by_op("op-none", None)],
    )
    .await;
    assert_eq!(common::code(&error), "not_found");
    assert_eq!(reason(&error), None);
}

/// A Claude Code session log: a question, an answer with a tool call, and a summary line
/// (the session's title).
const CLAUDE_LOG: &str = concat!(
    r#"{"type":"user","uuid":"u-1","parentUuid":null,"sessionId":"cc-1","timestamp":"2026-11-29T10:00:00.000Z","cwd":"/home/dev/shop","version":"2.0.1","gitBranch":"main","isSidechain":false,"message":{"role":"user","content":"Which files changed?"}}"#,
    "\n",
    r#"{"type":"assistant","uuid":"a-1","parentUuid":"u-1","sessionId":"cc-1","timestamp":"2026-11-29T10:00:03.000Z","cwd":"/home/dev/shop","isSidechain":false,"message":{"id":"msg-1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"tool-1","name":"Bash","input":{"command":"git status"}}],"usage":{"input_tokens":20,"output_tokens":7}}}"#,
    "\n",
    r#"{"type":"summary","summary":"Changed files","leafUuid":"a-1"}"#,
    "\n",
);

#[wasm_bindgen_test]
async fn test_parse_and_import_claude_code_log_idempotently() {
    let spool = fresh("import").await;
    let log = call_sync(
        &spool,
        "parseImport",
        &["claude_code".into(), CLAUDE_LOG.into()],
    )
    .expect("parseImport returns the log");
    let log = common::json(log);
    assert_eq!(log["format"], "claude_code");
    assert_eq!(log["lines"], 3);
    assert_eq!(log["skipped"], json!({}), "the summary line is the title");
    let session = &log["sessions"][0];
    assert_eq!(session["provider_session_id"], "cc-1");
    assert_eq!(session["cwd"], "/home/dev/shop");
    assert_eq!(session["title"], "Changed files");
    let entries = session["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["role"], "assistant");
    assert_eq!(entries[1]["tool_calls"][0]["name"], "Bash");

    let key = "agent:claude:cc-1";
    let request = json!({
        "key": key, "session_id": "imported-1", "format": "claude_code", "session": session,
    });
    let args = [
        WS.into(),
        common::js(&json!({ "request": request, "now_ms": 100 })),
    ];
    let first = ok(&spool, "importSession", &args).await;
    assert_eq!(first["created"], true);
    assert_eq!(first["imported"], 2);
    assert_eq!(first["session"]["session_id"], "imported-1");
    assert_eq!(first["session"]["entry_count"], 2);
    assert_eq!(
        contents(&spool, key).await,
        ["Which files changed?", "Let me look."]
    );

    // The same log again adds nothing; the identity may be left to crypto.randomUUID()
    // (unused: the session exists).
    let request = json!({ "key": key, "format": "claude_code", "session": session });
    let args = [
        WS.into(),
        common::js(&json!({ "request": request, "now_ms": 101 })),
    ];
    let second = ok(&spool, "importSession", &args).await;
    assert_eq!(second["created"], false);
    assert_eq!(second["imported"], 0);
    assert_eq!(second["already_present"], 2);
    assert_eq!(second["session"]["session_id"], "imported-1");
    let count = ok(
        &spool,
        "countEntries",
        &[WS.into(), common::on(key, json!({}))],
    )
    .await;
    assert_eq!(count, 2);

    // A bad format throws (synchronously) an invalid_argument SpoolError.
    let error = call_sync(&spool, "parseImport", &["cursor".into(), "".into()])
        .expect_err("an unknown format throws");
    assert_eq!(common::code(&error), "invalid_argument");
}

#[wasm_bindgen_test]
async fn test_execute_runs_any_command() {
    let spool = fresh("execute").await;
    session_with(&spool, PARENT, &["q1", "a1"]).await;
    let command = common::js(&json!({
        "op": "branch", "parent_key": PARENT, "child_key": "agent:main:x",
        "request": { "child_session_id": "x-1", "fork_transcript": true }, "now_ms": 40,
    }));
    let child = ok(&spool, "execute", &[WS.into(), command]).await;
    assert_eq!(child["parent_session_key"], PARENT);
    let command = common::js(&json!({ "op": "get_session", "key": "agent:main:x" }));
    let via_execute = ok(&spool, "execute", &[WS.into(), command]).await;
    let via_method = ok(
        &spool,
        "getSession",
        &[WS.into(), common::on("agent:main:x", json!({}))],
    )
    .await;
    assert_eq!(via_execute, via_method);

    // Errors keep their codes; a malformed command is invalid_argument.
    let command = common::js(&json!({ "op": "lineage", "key": "agent:main:none" }));
    let error = common::rejected(&spool, "execute", &[WS.into(), command]).await;
    assert_eq!(common::code(&error), "not_found");
    let command = common::js(&json!({ "op": "get_session", "key": "k", "bogus": 1 }));
    let error = common::rejected(&spool, "execute", &[WS.into(), command]).await;
    assert_eq!(common::code(&error), "invalid_argument");
    let error = common::rejected(&spool, "execute", &[WS.into(), "get_session".into()]).await;
    assert_eq!(common::code(&error), "invalid_argument");
}
