//! The JS API's own contract, in a real browser: rejections are `Error`s with a `code`,
//! malformed input is `invalid_argument`, records cross as plain JSON-like objects, and
//! the shell supplies time and ids.
#![cfg(target_arch = "wasm32")]

mod common;

use common::{ok, rejection};

use serde_json::json;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "default";
const KEY: &str = "agent:main:main";

async fn fresh(name: &str) -> JsValue {
    common::open(&common::db_name("js_api", name)).await
}

/// The arguments object of a table call.
fn a(args: serde_json::Value) -> JsValue {
    common::js(&args)
}

async fn create(spool: &JsValue, key: &str) -> serde_json::Value {
    let args = a(json!({ "key": key, "session_id": "s1", "now_ms": 1000 }));
    let session = common::call(spool, "createSession", &[WS.into(), args]).await;
    common::json(session.expect("createSession"))
}

#[wasm_bindgen_test]
async fn test_duplicate_create_rejects_with_conflict_code() {
    let spool = fresh("duplicate").await;
    let session = create(&spool, KEY).await;
    assert_eq!(session["key"], KEY);
    assert_eq!(session["session_id"], "s1");
    let args = a(json!({ "key": KEY, "session_id": "s2", "now_ms": 2000 }));
    let error = common::call(&spool, "createSession", &[WS.into(), args])
        .await
        .expect_err("a second create must reject");
    assert_eq!(common::code(&error), "conflict");
    // The message is the core's own text for the same failure.
    let memory = spool::MemoryStorage::new();
    spool::run(&memory, spool::create_session(WS, KEY, "s1", 1000)).expect("create");
    let core_error =
        spool::run(&memory, spool::create_session(WS, KEY, "s2", 2000)).expect_err("duplicate");
    assert_eq!(common::message(&error), core_error.to_string());
    let name = js_sys::Reflect::get(&error, &"name".into()).expect("name");
    assert_eq!(name.as_string().as_deref(), Some("SpoolError"));
}

#[wasm_bindgen_test]
async fn test_bad_role_is_invalid_argument() {
    let spool = fresh("bad_role").await;
    create(&spool, KEY).await;
    let request = a(json!({ "key": KEY, "request": { "role": 42, "content": "hi" } }));
    let (code, message) = rejection(&spool, "appendEntry", &[WS.into(), request]).await;
    assert_eq!(code, "invalid_argument");
    assert!(message.contains("request"), "{message}");
    // A failure inside an argument's value, at any depth, names that argument; one that
    // is not inside any (an unknown or a missing argument) names `args`.
    let cases = [
        (
            json!({ "role": "robot", "content": "hi" }),
            "request",
            "unknown variant",
        ),
        (
            json!({ "role": "user" }),
            "request",
            "missing field `content`",
        ),
        (json!("hi"), "request", "invalid type: string"),
        (
            json!({ "role": "user", "content": "hi", "token_count": -1 }),
            "request",
            "invalid value",
        ),
    ];
    for (request, field, why) in cases {
        let args = [WS.into(), a(json!({ "key": KEY, "request": request }))];
        let (code, message) = rejection(&spool, "appendEntry", &args).await;
        assert_eq!(code, "invalid_argument", "{message}");
        let named = format!("invalid argument `{field}`: does not parse: ");
        assert!(message.starts_with(&named), "{message}");
        assert!(message.contains(why), "{message}");
    }
    let hi = json!({ "role": "user", "content": "hi" });
    let unknown = a(json!({ "key": KEY, "request": hi, "requests": [] }));
    let (code, message) = rejection(&spool, "appendEntry", &[WS.into(), unknown]).await;
    assert_eq!(code, "invalid_argument", "{message}");
    assert!(message.starts_with("invalid argument `args`"), "{message}");
    assert!(message.contains("unknown field `requests`"), "{message}");
    let bad_key = a(json!({ "key": 7, "request": hi }));
    let (_, message) = rejection(&spool, "appendEntry", &[WS.into(), bad_key]).await;
    assert!(message.starts_with("invalid argument `key`"), "{message}");
    let page = common::call(&spool, "readPage", &[WS.into(), limit(10)]).await;
    assert_eq!(common::json(page.expect("readPage"))["entries"], json!([]));
}

#[wasm_bindgen_test]
async fn test_malformed_arguments_are_invalid_argument_not_panics() {
    let spool = fresh("malformed").await;
    let cases: Vec<(&str, Vec<JsValue>)> = vec![
        (
            "createSession",
            vec![JsValue::from(42), a(json!({ "key": KEY }))],
        ),
        ("createSession", vec![WS.into(), a(json!({ "key": null }))]),
        ("createSession", vec![]),
        (
            "createSession",
            vec![WS.into(), a(json!({ "key": KEY, "now_ms": -1 }))],
        ),
        (
            "createSession",
            vec![WS.into(), a(json!({ "key": KEY, "now_ms": 1.5 }))],
        ),
        (
            "createSession",
            vec![WS.into(), a(json!({ "key": KEY, "sessionId": "x" }))],
        ),
        ("createSession", vec![WS.into(), JsValue::from(7)]),
        ("getSession", vec![WS.into(), a(json!({ "key": true }))]),
        ("readPage", vec![WS.into(), a(json!({ "key": KEY }))]),
        (
            "readPage",
            vec![
                WS.into(),
                a(json!({ "key": KEY, "request": { "order": "sideways", "limit": 1 } })),
            ],
        ),
        ("listSessions", vec![WS.into(), a(json!({ "limit": 2.5 }))]),
        ("listSessions", vec![WS.into(), a(json!({ "limit": "10" }))]),
        ("listSessions", vec![WS.into(), a(json!({ "limit": -1 }))]),
        (
            "listSessions",
            vec![WS.into(), a(json!({ "limit": 10, "cursor": 5 }))],
        ),
        (
            "appendEntry",
            vec![
                WS.into(),
                a(json!({ "key": KEY,
                    "request": { "role": "user", "content": "x", "token_count": -3 } })),
            ],
        ),
        (
            "appendEntry",
            vec![
                WS.into(),
                a(json!({ "key": KEY, "request": { "role": "user", "content": "x" }, "now": 1 })),
            ],
        ),
        // A misspelt field is reported, not silently dropped.
        (
            "appendEntry",
            vec![
                WS.into(),
                a(json!({ "key": KEY,
                    "request": { "role": "user", "content": "x", "tokenCount": 3 } })),
            ],
        ),
        (
            "readPage",
            vec![
                WS.into(),
                a(json!({ "key": KEY, "request": { "limit": 1, "newestFirst": true } })),
            ],
        ),
    ];
    for (method, args) in cases {
        let error = common::call(&spool, method, &args)
            .await
            .expect_err(&format!("{method}({args:?}) must reject"));
        let (code, message) = (common::code(&error), common::message(&error));
        assert_eq!(code, "invalid_argument", "{method}({args:?}): {message}");
    }
}

#[wasm_bindgen_test]
async fn test_shell_supplies_time_and_session_id() {
    let spool = fresh("defaults").await;
    let before = js_sys::Date::now();
    let session = common::call(
        &spool,
        "createSession",
        &[WS.into(), a(json!({ "key": KEY }))],
    )
    .await;
    let after = js_sys::Date::now();
    let session = common::json(session.expect("createSession without options"));
    let id = session["session_id"].as_str().expect("a session id");
    assert_eq!(id.len(), 36, "{id} is not a UUID");
    assert_eq!(id.matches('-').count(), 4, "{id} is not a UUID");
    let created = session["created_at"].as_f64().expect("created_at");
    assert!(
        (before.floor()..=after).contains(&created),
        "{before} <= {created} <= {after}"
    );
    let request = a(json!({ "key": KEY, "request": { "role": "user", "content": "hi" } }));
    let entry = common::call(&spool, "appendEntry", &[WS.into(), request]).await;
    let entry = common::json(entry.expect("appendEntry without options"));
    assert!(entry["created_at"].as_f64().expect("created_at") >= created);
    assert_eq!(entry["message_id"], format!("{id}-1"));
    // An id inside an object argument: the branch's `request.child_session_id`, with
    // the `request` itself left out.
    let args = a(json!({ "parent_key": KEY, "child_key": "agent:shell:child" }));
    let branch = common::call(&spool, "branch", &[WS.into(), args]).await;
    let branch = common::json(branch.expect("branch without a request"));
    let child = branch["session_id"].as_str().expect("a child id");
    assert_eq!(child.len(), 36, "{child} is not a UUID");
    assert_ne!(child, id);
}

#[wasm_bindgen_test]
async fn test_records_cross_as_plain_objects_with_numbers() {
    let spool = fresh("records").await;
    let missing = common::call(&spool, "getSession", &[WS.into(), key()]).await;
    assert!(missing.expect("getSession").is_null());
    create(&spool, KEY).await;
    let request = json!({
        "role": "assistant",
        "content": "calling",
        "token_count": 7,
        "tool_calls": [{ "id": "t1", "name": "grep", "args": { "pattern": "x", "n": 3 } }],
        "turn_id": "turn-1",
        "expected_epoch": 0,
    });
    let args = [
        WS.into(),
        a(json!({ "key": KEY, "request": request, "now_ms": 1500 })),
    ];
    common::call(&spool, "appendEntry", &args)
        .await
        .expect("appendEntry");
    let page_request = a(json!({ "key": KEY, "request": { "order": "newest_first", "limit": 5 } }));
    let page = common::call(&spool, "readPage", &[WS.into(), page_request])
        .await
        .expect("readPage");
    let entries = js_sys::Reflect::get(&page, &"entries".into()).expect("entries");
    assert!(
        js_sys::Array::is_array(&entries),
        "entries is a plain array"
    );
    let entry = js_sys::Array::from(&entries).get(0);
    let id = js_sys::Reflect::get(&entry, &"id".into()).expect("id");
    assert_eq!(id.js_typeof().as_string().as_deref(), Some("number"));
    let tool_calls = js_sys::Reflect::get(&entry, &"tool_calls".into()).expect("tool_calls");
    assert!(
        js_sys::Array::is_array(&tool_calls),
        "tool_calls is a plain array"
    );
    let first = js_sys::Array::from(&tool_calls).get(0);
    let proto = js_sys::Object::get_prototype_of(&first);
    assert_eq!(
        JsValue::from(proto),
        JsValue::from(js_sys::Object::get_prototype_of(&js_sys::Object::new()))
    );
    let page = common::json(page);
    assert_eq!(page["next_cursor"], serde_json::Value::Null);
    assert_eq!(page["entries"][0]["tool_calls"], request["tool_calls"]);
    assert_eq!(page["entries"][0]["token_count"], 7);
    assert_eq!(page["entries"][0]["tool_call_id"], serde_json::Value::Null);
    let session = common::call(&spool, "getSession", &[WS.into(), key()]).await;
    let session = common::json(session.expect("getSession"));
    assert_eq!(session["total_tokens"], 7);
    assert_eq!(session["agent_id"], "main");
    let list = common::call(
        &spool,
        "listSessions",
        &[WS.into(), a(json!({ "limit": 10 }))],
    )
    .await;
    let list = common::json(list.expect("listSessions"));
    assert_eq!(list["sessions"][0]["key"], KEY);
}

#[wasm_bindgen_test]
async fn test_stale_epoch_code_crosses() {
    let spool = fresh("stale").await;
    create(&spool, KEY).await;
    let request = json!({ "role": "user", "content": "x", "expected_epoch": 9 });
    let args = a(json!({ "key": KEY, "request": request }));
    let (code, _) = rejection(&spool, "appendEntry", &[WS.into(), args]).await;
    assert_eq!(code, "stale_epoch");
    let request = json!({ "role": "user", "content": "x" });
    let args = a(json!({ "key": "agent:none", "request": request }));
    let (code, _) = rejection(&spool, "appendEntry", &[WS.into(), args]).await;
    assert_eq!(code, "not_found");
}

#[wasm_bindgen_test]
async fn test_closed_spool_rejects_with_storage_code() {
    let spool = fresh("closed").await;
    let name = js_sys::Reflect::get(&spool, &"name".into()).expect("name getter");
    assert_eq!(name.as_string(), Some(common::db_name("js_api", "closed")));
    common::call(&spool, "close", &[]).await.expect("close");
    let (code, message) = rejection(&spool, "getSession", &[WS.into(), key()]).await;
    assert_eq!(code, "storage");
    assert!(message.contains("closed"), "{message}");
}

#[wasm_bindgen_test]
async fn test_open_rejects_a_non_string_name() {
    let error = spool_web::Spool::open(JsValue::from(3))
        .await
        .expect_err("a number is no name");
    assert_eq!(common::code(&error), "invalid_argument");
}

/// `readPage`'s arguments for the first `n` entries of `KEY`.
fn limit(n: u32) -> JsValue {
    a(json!({ "key": KEY, "request": { "limit": n } }))
}

/// The arguments naming `KEY` alone.
fn key() -> JsValue {
    a(json!({ "key": KEY }))
}

/// The arguments of a call on `key` at `now_ms` that may create the session `session_id`,
/// with `more` fields.
fn at(key: &str, session_id: &str, now_ms: u64, more: serde_json::Value) -> JsValue {
    let mut args = json!({ "key": key, "session_id": session_id, "now_ms": now_ms });
    for (field, value) in more.as_object().into_iter().flatten() {
        args[field] = value.clone();
    }
    a(args)
}

async fn append(spool: &JsValue, content: &str, now_ms: u64) -> serde_json::Value {
    let request = json!({ "role": "user", "content": content, "token_count": 3 });
    let args = a(json!({ "key": KEY, "request": request, "now_ms": now_ms }));
    ok(spool, "appendEntry", &[WS.into(), args]).await
}

#[wasm_bindgen_test]
async fn test_reset_writes_an_archive_listed_newest_last() {
    let spool = fresh("reset_archive").await;
    let created = ok(
        &spool,
        "getOrCreate",
        &[WS.into(), at(KEY, "s1", 1000, json!({}))],
    )
    .await;
    assert_eq!(created["created"], true);
    append(&spool, "first", 1100).await;
    append(&spool, "second", 1200).await;
    let state = json!({ "provider": "portable", "state_kind": "structured_summary_v1",
                        "payload": { "goal": "fix" }, "covered_through_id": 2 });
    let state = a(json!({ "key": KEY, "state": state }));
    ok(&spool, "saveState", &[WS.into(), state]).await;
    assert_eq!(
        ok(&spool, "listArchives", &[WS.into(), KEY.into()]).await,
        json!([])
    );

    let intent = json!({ "intent": "reset_same_key" });
    let args = [WS.into(), at(KEY, "s2", 5000, intent.clone())];
    let outcome = ok(&spool, "applyIntent", &args).await;
    assert_eq!(outcome["rotated"], true);
    assert_eq!(outcome["created"], false);
    assert_eq!(
        outcome["archive"],
        json!({ "written": true, "error": null })
    );
    assert_eq!(outcome["session"]["session_id"], "s2");
    assert_eq!(outcome["session"]["epoch"], 1);
    assert_eq!(outcome["session"]["total_tokens"], 0);

    let archives = ok(&spool, "listArchives", &[WS.into(), KEY.into()]).await;
    assert_eq!(archives.as_array().map(Vec::len), Some(1), "{archives}");
    let archive = &archives[0];
    assert_eq!(archive["session_key"], KEY);
    assert_eq!(archive["session_id"], "s1");
    assert_eq!(archive["epoch"], 0);
    assert_eq!(archive["archived_at"], 5000);
    let contents: Vec<_> = archive["transcript_entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["content"].clone())
        .collect();
    assert_eq!(contents, [json!("first"), json!("second")]);
    assert_eq!(archive["transcript_entries"][0]["message_id"], "s1-1");

    // The new generation starts empty; the state survives, invalidated.
    let page = ok(&spool, "readPage", &[WS.into(), limit(10)]).await;
    assert_eq!(page["entries"], json!([]));
    let valid = ok(&spool, "listStates", &[WS.into(), key()]).await;
    assert_eq!(valid, json!([]));
    let args = a(json!({ "key": KEY, "valid_only": false }));
    let all = ok(&spool, "listStates", &[WS.into(), args]).await;
    assert_eq!(all[0]["valid"], false);
    assert_eq!(all[0]["invalid_reason"], "session_reset");

    // A second reset (shell-supplied id and time) adds the newer archive last.
    append(&spool, "third", 6000).await;
    let args = a(json!({ "key": KEY, "intent": "reset_same_key" }));
    let outcome = ok(&spool, "applyIntent", &[WS.into(), args]).await;
    let fresh_id = outcome["session"]["session_id"].as_str().expect("an id");
    assert_eq!(fresh_id.len(), 36, "{fresh_id} is not a UUID");
    let archives = ok(&spool, "listArchives", &[WS.into(), KEY.into()]).await;
    assert_eq!(archives.as_array().map(Vec::len), Some(2), "{archives}");
    assert_eq!(archives[0]["session_id"], "s1");
    assert_eq!(archives[1]["session_id"], "s2");
    assert_eq!(archives[1]["epoch"], 1);
    assert_eq!(archives[1]["transcript_entries"][0]["content"], "third");
    // Archives are per key and per workspace.
    let other = ok(
        &spool,
        "listArchives",
        &[WS.into(), "agent:main:other".into()],
    )
    .await;
    assert_eq!(other, json!([]));
    let other = ok(&spool, "listArchives", &["elsewhere".into(), KEY.into()]).await;
    assert_eq!(other, json!([]));
}

#[wasm_bindgen_test]
async fn test_new_chat_on_an_existing_key_is_a_session_key_conflict() {
    let spool = fresh("new_chat").await;
    let new_chat = json!({ "intent": "new_chat" });
    let args = [WS.into(), at(KEY, "s1", 1000, new_chat.clone())];
    let outcome = ok(&spool, "applyIntent", &args).await;
    assert_eq!(outcome["created"], true);
    let args = [WS.into(), at(KEY, "s2", 2000, new_chat)];
    let (code, message) = rejection(&spool, "applyIntent", &args).await;
    assert_eq!(code, "conflict");
    assert!(message.contains("session_key conflict"), "{message}");
    let args = [
        WS.into(),
        at(KEY, "s3", 3000, json!({ "intent": "continue" })),
    ];
    let outcome = ok(&spool, "applyIntent", &args).await;
    assert_eq!(outcome["session"]["session_id"], "s1");
    assert_eq!(outcome["rotated"], false);
}

#[wasm_bindgen_test]
async fn test_lifecycle_calls_through_the_js_api() {
    let spool = fresh("lifecycle").await;
    let ws = JsValue::from(WS);
    let on = |more: serde_json::Value| {
        let mut args = json!({ "key": KEY });
        for (field, value) in more.as_object().into_iter().flatten() {
            args[field] = value.clone();
        }
        a(args)
    };
    ok(
        &spool,
        "getOrCreate",
        &[ws.clone(), at(KEY, "s1", 1000, json!({}))],
    )
    .await;
    let entry = append(&spool, "hello", 1100).await;
    let args = on(json!({ "message_id": "s1-1" }));
    let found = ok(&spool, "getEntry", &[ws.clone(), args]).await;
    assert_eq!(found, entry);
    let args = on(json!({ "message_id": "nope" }));
    let missing = ok(&spool, "getEntry", &[ws.clone(), args]).await;
    assert_eq!(missing, serde_json::Value::Null);
    append(&spool, "again", 1200).await;
    assert_eq!(ok(&spool, "countEntries", &[ws.clone(), key()]).await, 2);

    let args = on(json!({ "request": { "model": "m1", "metadata": { "a": 1 } }, "now_ms": 2000 }));
    let session = ok(&spool, "update", &[ws.clone(), args]).await;
    assert_eq!(session["model"], "m1");
    assert_eq!(session["metadata"], json!({ "a": 1 }));
    let args = on(json!({ "now_ms": 2500 }));
    let session = ok(&spool, "resume", &[ws.clone(), args]).await;
    assert_eq!(session["updated_at"], 2500);

    let args = on(json!({ "max_messages": 1, "now_ms": 2600, "expected_epoch": 0 }));
    let outcome = ok(&spool, "truncate", &[ws.clone(), args]).await;
    assert_eq!(
        outcome,
        json!({ "truncated": true, "before_count": 2, "after_count": 1 })
    );

    let state = json!({ "provider": "portable", "state_kind": "k", "payload": 1 });
    ok(
        &spool,
        "saveState",
        &[ws.clone(), on(json!({ "state": state }))],
    )
    .await;
    let args = on(json!({ "reason": "manual", "state_kind": "k", "now_ms": 2700 }));
    assert_eq!(ok(&spool, "invalidateStates", &[ws.clone(), args]).await, 1);

    let args = on(json!({ "status": "failed", "now_ms": 3000, "expected_epoch": 5 }));
    assert_eq!(
        rejection(&spool, "finish", &[ws.clone(), args]).await.0,
        "stale_epoch"
    );
    let args = on(json!({ "status": "failed", "now_ms": 3000 }));
    let session = ok(&spool, "finish", &[ws.clone(), args]).await;
    assert_eq!(session["status"], "failed");
    assert_eq!(session["ended_at"], 3000);
    assert_eq!(session["runtime_ms"], 2000);

    let other = "agent:helper:x";
    ok(
        &spool,
        "getOrCreate",
        &[ws.clone(), at(other, "s9", 3100, json!({}))],
    )
    .await;
    let options = a(json!({ "nowMs": 3200 }));
    let session = ok(
        &spool,
        "archiveSession",
        &[ws.clone(), other.into(), options],
    )
    .await;
    assert_eq!(session["status"], "done");
    let args = a(json!({ "limit": 10, "cursor": null, "status": "done" }));
    let list = ok(&spool, "listSessions", &[ws.clone(), args]).await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!(list["sessions"][0]["key"], "agent:helper:x");
    let args = a(json!({ "limit": 10, "agent_id": "main" }));
    let list = ok(&spool, "listSessions", &[ws.clone(), args]).await;
    assert_eq!(list["sessions"][0]["key"], KEY);

    let args = a(json!({ "key": other, "expected_epoch": 0 }));
    let deleted = ok(&spool, "deleteSession", &[ws.clone(), args]).await;
    assert_eq!(deleted, serde_json::Value::Null);
    let gone = ok(
        &spool,
        "getSession",
        &[ws.clone(), a(json!({ "key": other }))],
    )
    .await;
    assert_eq!(gone, serde_json::Value::Null);

    // `KEY` was last touched at 3000: idle 7000 ms at 10000.
    let args = a(json!({ "max_age_ms": 8000, "now_ms": 10_000 }));
    assert_eq!(ok(&spool, "pruneStale", &[ws.clone(), args]).await, 0);
    ok(
        &spool,
        "getOrCreate",
        &[ws.clone(), at("agent:b:b", "sb", 9000, json!({}))],
    )
    .await;
    assert_eq!(
        ok(&spool, "capSessions", &[ws.clone(), a(json!({ "max": 1 }))]).await,
        1
    );
    let args = a(json!({ "max_age_ms": 500, "now_ms": 10_000 }));
    assert_eq!(ok(&spool, "pruneStale", &[ws.clone(), args]).await, 1);
    let list = ok(&spool, "listSessions", &[ws, a(json!({ "limit": 10 }))]).await;
    assert_eq!(list["sessions"], json!([]));
}

#[wasm_bindgen_test]
async fn test_bad_numbers_and_choices_are_invalid_argument() {
    let spool = fresh("bad_numbers").await;
    create(&spool, KEY).await;
    let (ws, key) = (JsValue::from(WS), JsValue::from(KEY));
    let two_53 = 9_007_199_254_740_992.0;
    let numbers = [-1.0, 1.5, two_53, 1e300, f64::NAN, f64::INFINITY];
    // `{ key?, [field]: n }` with `n` a JS number as JS has it (NaN and Infinity too).
    let with_number = |key: Option<&str>, field: &str, n: f64| {
        let args = js_sys::Object::new();
        if let Some(key) = key {
            js_sys::Reflect::set(&args, &"key".into(), &key.into()).expect("set key");
        }
        js_sys::Reflect::set(&args, &field.into(), &JsValue::from_f64(n)).expect("set number");
        JsValue::from(args)
    };
    for n in numbers {
        let cases: Vec<(&str, Vec<JsValue>)> = vec![
            (
                "pruneStale",
                vec![ws.clone(), with_number(None, "max_age_ms", n)],
            ),
            ("capSessions", vec![ws.clone(), with_number(None, "max", n)]),
            (
                "truncate",
                vec![ws.clone(), with_number(Some(KEY), "max_messages", n)],
            ),
            (
                "listSessions",
                vec![ws.clone(), with_number(None, "limit", n)],
            ),
        ];
        for (method, args) in cases {
            let (code, message) = rejection(&spool, method, &args).await;
            assert_eq!(code, "invalid_argument", "{method}({n:?}): {message}");
        }
    }
    let option_numbers = [json!(-1), json!(1.5), json!(two_53), json!(1e300)];
    for n in option_numbers {
        let cases: Vec<(&str, Vec<JsValue>)> = vec![
            (
                "resume",
                vec![ws.clone(), a(json!({ "key": KEY, "now_ms": n }))],
            ),
            (
                "finish",
                vec![
                    ws.clone(),
                    a(json!({ "key": KEY, "status": "done", "expected_epoch": n })),
                ],
            ),
            (
                "deleteSession",
                vec![ws.clone(), a(json!({ "key": KEY, "expected_epoch": n }))],
            ),
            (
                "getOrCreate",
                vec![ws.clone(), a(json!({ "key": KEY, "now_ms": n }))],
            ),
            (
                "update",
                vec![
                    ws.clone(),
                    a(json!({ "key": KEY, "request": { "expected_epoch": n } })),
                ],
            ),
            (
                "saveState",
                vec![
                    ws.clone(),
                    a(
                        json!({ "key": KEY, "state": { "provider": "p", "state_kind": "k",
                                        "payload": null, "covered_through_id": n } }),
                    ),
                ],
            ),
        ];
        for (method, args) in cases {
            let (code, message) = rejection(&spool, method, &args).await;
            assert_eq!(code, "invalid_argument", "{method}({n}): {message}");
        }
    }
    let cases: Vec<(&str, Vec<JsValue>)> = vec![
        (
            "applyIntent",
            vec![ws.clone(), a(json!({ "key": KEY, "intent": "restart" }))],
        ),
        (
            "applyIntent",
            vec![ws.clone(), a(json!({ "key": KEY, "intent": 1 }))],
        ),
        ("applyIntent", vec![ws.clone(), a(json!({ "key": KEY }))]),
        (
            "finish",
            vec![ws.clone(), a(json!({ "key": KEY, "status": "ok" }))],
        ),
        (
            "listStates",
            vec![ws.clone(), a(json!({ "key": KEY, "valid_only": "yes" }))],
        ),
        (
            "getEntry",
            vec![ws.clone(), a(json!({ "key": KEY, "message_id": 1 }))],
        ),
        (
            "invalidateStates",
            vec![
                ws.clone(),
                a(json!({ "key": KEY, "reason": "r", "state_kind": 3 })),
            ],
        ),
        (
            "listSessions",
            vec![ws.clone(), a(json!({ "limit": 5, "agentId": "main" }))],
        ),
        (
            "update",
            vec![
                ws.clone(),
                a(json!({ "key": KEY, "request": { "modelName": "x" } })),
            ],
        ),
        (
            "getOrCreate",
            vec![ws.clone(), a(json!({ "key": KEY, "expected_epoch": 0 }))],
        ),
        (
            "archiveSession",
            vec![
                ws.clone(),
                key.clone(),
                common::js(&json!({ "sessionId": "x" })),
            ],
        ),
        (
            "deleteSession",
            vec![ws.clone(), a(json!({ "key": KEY, "now_ms": 1 }))],
        ),
        ("listArchives", vec![ws.clone(), JsValue::NULL]),
    ];
    for (method, args) in cases {
        let (code, message) = rejection(&spool, method, &args).await;
        assert_eq!(code, "invalid_argument", "{method}({args:?}): {message}");
    }
    // Nothing above wrote: the session is as created.
    let session = ok(
        &spool,
        "getSession",
        &[ws, a(json!({ "key": key.as_string() }))],
    )
    .await;
    assert_eq!(session["updated_at"], 1000);
    assert_eq!(session["status"], "running");
}
