//! The JS API's own contract, in a real browser: rejections are `Error`s with a `code`,
//! malformed input is `invalid_argument`, records cross as plain JSON-like objects, and
//! the shell supplies time and ids.
#![cfg(target_arch = "wasm32")]

mod common;

use serde_json::json;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "default";
const KEY: &str = "agent:main:main";

async fn fresh(name: &str) -> JsValue {
    common::open(&common::db_name("js_api", name)).await
}

async fn create(spool: &JsValue, key: &str) -> serde_json::Value {
    let options = common::js(&json!({ "sessionId": "s1", "nowMs": 1000 }));
    let session = common::call(spool, "createSession", &[WS.into(), key.into(), options]).await;
    common::json(session.expect("createSession"))
}

/// Awaits a call that must reject, returning the rejection's code and message.
async fn rejection(spool: &JsValue, method: &str, args: &[JsValue]) -> (String, String) {
    match common::call(spool, method, args).await {
        Ok(value) => panic!("`{method}` resolved to {value:?}, expected a rejection"),
        Err(error) => (common::code(&error), common::message(&error)),
    }
}

#[wasm_bindgen_test]
async fn test_duplicate_create_rejects_with_conflict_code() {
    let spool = fresh("duplicate").await;
    let session = create(&spool, KEY).await;
    assert_eq!(session["key"], KEY);
    assert_eq!(session["session_id"], "s1");
    let options = common::js(&json!({ "sessionId": "s2", "nowMs": 2000 }));
    let error = common::call(&spool, "createSession", &[WS.into(), KEY.into(), options])
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
    let request = common::js(&json!({ "role": 42, "content": "hi" }));
    let (code, message) = rejection(&spool, "appendEntry", &[WS.into(), KEY.into(), request]).await;
    assert_eq!(code, "invalid_argument");
    assert!(message.contains("request"), "{message}");
    let unknown_role = common::js(&json!({ "role": "robot", "content": "hi" }));
    let args = [WS.into(), KEY.into(), unknown_role];
    assert_eq!(
        rejection(&spool, "appendEntry", &args).await.0,
        "invalid_argument"
    );
    let no_content = common::js(&json!({ "role": "user" }));
    let args = [WS.into(), KEY.into(), no_content];
    assert_eq!(
        rejection(&spool, "appendEntry", &args).await.0,
        "invalid_argument"
    );
    let not_an_object = JsValue::from_str("hi");
    let args = [WS.into(), KEY.into(), not_an_object];
    assert_eq!(
        rejection(&spool, "appendEntry", &args).await.0,
        "invalid_argument"
    );
    let page = common::call(&spool, "readPage", &[WS.into(), KEY.into(), limit(10)]).await;
    assert_eq!(common::json(page.expect("readPage"))["entries"], json!([]));
}

#[wasm_bindgen_test]
async fn test_malformed_arguments_are_invalid_argument_not_panics() {
    let spool = fresh("malformed").await;
    let cases: Vec<(&str, Vec<JsValue>)> = vec![
        ("createSession", vec![JsValue::from(42), KEY.into()]),
        ("createSession", vec![WS.into(), JsValue::NULL]),
        ("createSession", vec![]),
        (
            "createSession",
            vec![WS.into(), KEY.into(), common::js(&json!({ "nowMs": -1 }))],
        ),
        (
            "createSession",
            vec![WS.into(), KEY.into(), common::js(&json!({ "nowMs": 1.5 }))],
        ),
        (
            "createSession",
            vec![
                WS.into(),
                KEY.into(),
                common::js(&json!({ "session_id": "x" })),
            ],
        ),
        (
            "createSession",
            vec![WS.into(), KEY.into(), JsValue::from(7)],
        ),
        ("getSession", vec![WS.into(), JsValue::TRUE]),
        ("readPage", vec![WS.into(), KEY.into(), JsValue::UNDEFINED]),
        (
            "readPage",
            vec![
                WS.into(),
                KEY.into(),
                common::js(&json!({ "order": "sideways", "limit": 1 })),
            ],
        ),
        ("listSessions", vec![WS.into(), JsValue::from(2.5)]),
        ("listSessions", vec![WS.into(), JsValue::from_str("10")]),
        ("listSessions", vec![WS.into(), JsValue::from(-1)]),
        (
            "listSessions",
            vec![WS.into(), JsValue::from(10), JsValue::from(5)],
        ),
        (
            "appendEntry",
            vec![
                WS.into(),
                KEY.into(),
                common::js(&json!({ "role": "user", "content": "x", "token_count": -3 })),
            ],
        ),
        (
            "appendEntry",
            vec![
                WS.into(),
                KEY.into(),
                common::js(&json!({ "role": "user", "content": "x" })),
                common::js(&json!({ "now": 1 })),
            ],
        ),
        // A misspelt field is reported, not silently dropped.
        (
            "appendEntry",
            vec![
                WS.into(),
                KEY.into(),
                common::js(&json!({ "role": "user", "content": "x", "tokenCount": 3 })),
            ],
        ),
        (
            "readPage",
            vec![
                WS.into(),
                KEY.into(),
                common::js(&json!({ "limit": 1, "newestFirst": true })),
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
    let session = common::call(&spool, "createSession", &[WS.into(), KEY.into()]).await;
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
    let request = common::js(&json!({ "role": "user", "content": "hi" }));
    let entry = common::call(&spool, "appendEntry", &[WS.into(), KEY.into(), request]).await;
    let entry = common::json(entry.expect("appendEntry without options"));
    assert!(entry["created_at"].as_f64().expect("created_at") >= created);
    assert_eq!(entry["message_id"], format!("{id}-1"));
}

#[wasm_bindgen_test]
async fn test_records_cross_as_plain_objects_with_numbers() {
    let spool = fresh("records").await;
    let missing = common::call(&spool, "getSession", &[WS.into(), KEY.into()]).await;
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
    let options = common::js(&json!({ "nowMs": 1500 }));
    let args = [WS.into(), KEY.into(), common::js(&request), options];
    common::call(&spool, "appendEntry", &args)
        .await
        .expect("appendEntry");
    let page_request = common::js(&json!({ "order": "newest_first", "limit": 5 }));
    let page = common::call(&spool, "readPage", &[WS.into(), KEY.into(), page_request])
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
    let session = common::call(&spool, "getSession", &[WS.into(), KEY.into()]).await;
    let session = common::json(session.expect("getSession"));
    assert_eq!(session["total_tokens"], 7);
    assert_eq!(session["agent_id"], "main");
    let list = common::call(&spool, "listSessions", &[WS.into(), JsValue::from(10)]).await;
    let list = common::json(list.expect("listSessions"));
    assert_eq!(list["sessions"][0]["key"], KEY);
}

#[wasm_bindgen_test]
async fn test_stale_epoch_code_crosses() {
    let spool = fresh("stale").await;
    create(&spool, KEY).await;
    let request = common::js(&json!({ "role": "user", "content": "x", "expected_epoch": 9 }));
    let (code, _) = rejection(&spool, "appendEntry", &[WS.into(), KEY.into(), request]).await;
    assert_eq!(code, "stale_epoch");
    let request = common::js(&json!({ "role": "user", "content": "x" }));
    let (code, _) = rejection(
        &spool,
        "appendEntry",
        &[WS.into(), "agent:none".into(), request],
    )
    .await;
    assert_eq!(code, "not_found");
}

#[wasm_bindgen_test]
async fn test_closed_spool_rejects_with_storage_code() {
    let spool = fresh("closed").await;
    let name = js_sys::Reflect::get(&spool, &"name".into()).expect("name getter");
    assert_eq!(name.as_string(), Some(common::db_name("js_api", "closed")));
    common::call(&spool, "close", &[]).await.expect("close");
    let (code, message) = rejection(&spool, "getSession", &[WS.into(), KEY.into()]).await;
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

fn limit(n: u32) -> JsValue {
    common::js(&json!({ "limit": n }))
}

/// `options` for a call at `now_ms` that may create the session `session_id`.
fn at(session_id: &str, now_ms: u64) -> JsValue {
    common::js(&json!({ "sessionId": session_id, "nowMs": now_ms }))
}

async fn ok(spool: &JsValue, method: &str, args: &[JsValue]) -> serde_json::Value {
    match common::call(spool, method, args).await {
        Ok(value) => common::json(value),
        Err(error) => panic!(
            "`{method}` rejected: {} ({})",
            common::code(&error),
            common::message(&error)
        ),
    }
}

async fn append(spool: &JsValue, content: &str, now_ms: u64) -> serde_json::Value {
    let request = common::js(&json!({ "role": "user", "content": content, "token_count": 3 }));
    let options = common::js(&json!({ "nowMs": now_ms }));
    ok(
        spool,
        "appendEntry",
        &[WS.into(), KEY.into(), request, options],
    )
    .await
}

#[wasm_bindgen_test]
async fn test_reset_writes_an_archive_listed_newest_last() {
    let spool = fresh("reset_archive").await;
    let created = ok(
        &spool,
        "getOrCreate",
        &[WS.into(), KEY.into(), at("s1", 1000)],
    )
    .await;
    assert_eq!(created["created"], true);
    append(&spool, "first", 1100).await;
    append(&spool, "second", 1200).await;
    let state = json!({ "provider": "portable", "state_kind": "structured_summary_v1",
                        "payload": { "goal": "fix" }, "covered_through_id": 2 });
    let state = common::js(&state);
    ok(&spool, "saveState", &[WS.into(), KEY.into(), state]).await;
    assert_eq!(
        ok(&spool, "listArchives", &[WS.into(), KEY.into()]).await,
        json!([])
    );

    let intent = JsValue::from_str("reset_same_key");
    let args = [WS.into(), KEY.into(), intent.clone(), at("s2", 5000)];
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
    let page = ok(&spool, "readPage", &[WS.into(), KEY.into(), limit(10)]).await;
    assert_eq!(page["entries"], json!([]));
    let valid = ok(&spool, "listStates", &[WS.into(), KEY.into()]).await;
    assert_eq!(valid, json!([]));
    let all = ok(
        &spool,
        "listStates",
        &[WS.into(), KEY.into(), JsValue::FALSE],
    )
    .await;
    assert_eq!(all[0]["valid"], false);
    assert_eq!(all[0]["invalid_reason"], "session_reset");

    // A second reset (shell-supplied id and time) adds the newer archive last.
    append(&spool, "third", 6000).await;
    let outcome = ok(&spool, "applyIntent", &[WS.into(), KEY.into(), intent]).await;
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
    let args = [WS.into(), KEY.into(), "new_chat".into(), at("s1", 1000)];
    let outcome = ok(&spool, "applyIntent", &args).await;
    assert_eq!(outcome["created"], true);
    let args = [WS.into(), KEY.into(), "new_chat".into(), at("s2", 2000)];
    let (code, message) = rejection(&spool, "applyIntent", &args).await;
    assert_eq!(code, "conflict");
    assert!(message.contains("session_key conflict"), "{message}");
    let args = [WS.into(), KEY.into(), "continue".into(), at("s3", 3000)];
    let outcome = ok(&spool, "applyIntent", &args).await;
    assert_eq!(outcome["session"]["session_id"], "s1");
    assert_eq!(outcome["rotated"], false);
}

#[wasm_bindgen_test]
async fn test_lifecycle_calls_through_the_js_api() {
    let spool = fresh("lifecycle").await;
    let (ws, key) = (JsValue::from(WS), JsValue::from(KEY));
    ok(
        &spool,
        "getOrCreate",
        &[ws.clone(), key.clone(), at("s1", 1000)],
    )
    .await;
    let entry = append(&spool, "hello", 1100).await;
    let found = ok(
        &spool,
        "getEntry",
        &[ws.clone(), key.clone(), "s1-1".into()],
    )
    .await;
    assert_eq!(found, entry);
    let missing = ok(
        &spool,
        "getEntry",
        &[ws.clone(), key.clone(), "nope".into()],
    )
    .await;
    assert_eq!(missing, serde_json::Value::Null);
    append(&spool, "again", 1200).await;
    assert_eq!(
        ok(&spool, "countEntries", &[ws.clone(), key.clone()]).await,
        2
    );

    let request = common::js(&json!({ "model": "m1", "metadata": { "a": 1 } }));
    let options = common::js(&json!({ "nowMs": 2000 }));
    let session = ok(
        &spool,
        "update",
        &[ws.clone(), key.clone(), request, options],
    )
    .await;
    assert_eq!(session["model"], "m1");
    assert_eq!(session["metadata"], json!({ "a": 1 }));
    let options = common::js(&json!({ "nowMs": 2500 }));
    let session = ok(&spool, "resume", &[ws.clone(), key.clone(), options]).await;
    assert_eq!(session["updated_at"], 2500);

    let options = common::js(&json!({ "nowMs": 2600, "expectedEpoch": 0 }));
    let args = [ws.clone(), key.clone(), JsValue::from(1), options];
    let outcome = ok(&spool, "truncate", &args).await;
    assert_eq!(
        outcome,
        json!({ "truncated": true, "before_count": 2, "after_count": 1 })
    );

    let state = common::js(&json!({ "provider": "portable", "state_kind": "k", "payload": 1 }));
    ok(&spool, "saveState", &[ws.clone(), key.clone(), state]).await;
    let args = [
        ws.clone(),
        key.clone(),
        "manual".into(),
        "k".into(),
        common::js(&json!({ "nowMs": 2700 })),
    ];
    assert_eq!(ok(&spool, "invalidateStates", &args).await, 1);

    let options = common::js(&json!({ "nowMs": 3000, "expectedEpoch": 5 }));
    let args = [ws.clone(), key.clone(), "failed".into(), options];
    assert_eq!(rejection(&spool, "finish", &args).await.0, "stale_epoch");
    let options = common::js(&json!({ "nowMs": 3000 }));
    let args = [ws.clone(), key.clone(), "failed".into(), options];
    let session = ok(&spool, "finish", &args).await;
    assert_eq!(session["status"], "failed");
    assert_eq!(session["ended_at"], 3000);
    assert_eq!(session["runtime_ms"], 2000);

    let other = JsValue::from("agent:helper:x");
    ok(
        &spool,
        "getOrCreate",
        &[ws.clone(), other.clone(), at("s9", 3100)],
    )
    .await;
    let options = common::js(&json!({ "nowMs": 3200 }));
    let session = ok(
        &spool,
        "archiveSession",
        &[ws.clone(), other.clone(), options],
    )
    .await;
    assert_eq!(session["status"], "done");
    let filter = common::js(&json!({ "status": "done" }));
    let args = [ws.clone(), JsValue::from(10), JsValue::NULL, filter];
    let list = ok(&spool, "listSessions", &args).await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!(list["sessions"][0]["key"], "agent:helper:x");
    let filter = common::js(&json!({ "agent_id": "main" }));
    let args = [ws.clone(), JsValue::from(10), JsValue::UNDEFINED, filter];
    let list = ok(&spool, "listSessions", &args).await;
    assert_eq!(list["sessions"][0]["key"], KEY);

    let options = common::js(&json!({ "expectedEpoch": 0 }));
    let deleted = ok(
        &spool,
        "deleteSession",
        &[ws.clone(), other.clone(), options],
    )
    .await;
    assert_eq!(deleted, serde_json::Value::Null);
    let gone = ok(&spool, "getSession", &[ws.clone(), other]).await;
    assert_eq!(gone, serde_json::Value::Null);

    // `KEY` was last touched at 3000: idle 7000 ms at 10000.
    let options = common::js(&json!({ "nowMs": 10_000 }));
    let args = [ws.clone(), JsValue::from(8000), options.clone()];
    assert_eq!(ok(&spool, "pruneStale", &args).await, 0);
    ok(
        &spool,
        "getOrCreate",
        &[ws.clone(), "agent:b:b".into(), at("sb", 9000)],
    )
    .await;
    assert_eq!(
        ok(&spool, "capEntries", &[ws.clone(), JsValue::from(1)]).await,
        1
    );
    let args = [ws.clone(), JsValue::from(500), options];
    assert_eq!(ok(&spool, "pruneStale", &args).await, 1);
    let list = ok(&spool, "listSessions", &[ws, JsValue::from(10)]).await;
    assert_eq!(list["sessions"], json!([]));
}

#[wasm_bindgen_test]
async fn test_bad_numbers_and_choices_are_invalid_argument() {
    let spool = fresh("bad_numbers").await;
    create(&spool, KEY).await;
    let (ws, key) = (JsValue::from(WS), JsValue::from(KEY));
    let two_53 = 9_007_199_254_740_992.0;
    let numbers = [-1.0, 1.5, two_53, 1e300, f64::NAN, f64::INFINITY];
    for n in numbers {
        let n = JsValue::from_f64(n);
        let cases: Vec<(&str, Vec<JsValue>)> = vec![
            ("pruneStale", vec![ws.clone(), n.clone()]),
            ("capEntries", vec![ws.clone(), n.clone()]),
            ("truncate", vec![ws.clone(), key.clone(), n.clone()]),
            ("listSessions", vec![ws.clone(), n.clone()]),
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
                vec![ws.clone(), key.clone(), common::js(&json!({ "nowMs": n }))],
            ),
            (
                "finish",
                vec![
                    ws.clone(),
                    key.clone(),
                    "done".into(),
                    common::js(&json!({ "expectedEpoch": n })),
                ],
            ),
            (
                "deleteSession",
                vec![
                    ws.clone(),
                    key.clone(),
                    common::js(&json!({ "expectedEpoch": n })),
                ],
            ),
            (
                "getOrCreate",
                vec![ws.clone(), key.clone(), common::js(&json!({ "nowMs": n }))],
            ),
            (
                "update",
                vec![
                    ws.clone(),
                    key.clone(),
                    common::js(&json!({ "expected_epoch": n })),
                ],
            ),
            (
                "saveState",
                vec![
                    ws.clone(),
                    key.clone(),
                    common::js(&json!({ "provider": "p", "state_kind": "k",
                                        "payload": null, "covered_through_id": n })),
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
            vec![ws.clone(), key.clone(), "restart".into()],
        ),
        (
            "applyIntent",
            vec![ws.clone(), key.clone(), JsValue::from(1)],
        ),
        ("applyIntent", vec![ws.clone(), key.clone()]),
        ("finish", vec![ws.clone(), key.clone(), "ok".into()]),
        ("listStates", vec![ws.clone(), key.clone(), "yes".into()]),
        ("getEntry", vec![ws.clone(), key.clone(), JsValue::from(1)]),
        (
            "invalidateStates",
            vec![ws.clone(), key.clone(), "r".into(), JsValue::from(3)],
        ),
        (
            "listSessions",
            vec![
                ws.clone(),
                JsValue::from(5),
                JsValue::NULL,
                common::js(&json!({ "agentId": "main" })),
            ],
        ),
        (
            "update",
            vec![
                ws.clone(),
                key.clone(),
                common::js(&json!({ "modelName": "x" })),
            ],
        ),
        (
            "getOrCreate",
            vec![
                ws.clone(),
                key.clone(),
                common::js(&json!({ "expectedEpoch": 0 })),
            ],
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
            vec![ws.clone(), key.clone(), common::js(&json!({ "nowMs": 1 }))],
        ),
        ("listArchives", vec![ws.clone(), JsValue::NULL]),
    ];
    for (method, args) in cases {
        let (code, message) = rejection(&spool, method, &args).await;
        assert_eq!(code, "invalid_argument", "{method}({args:?}): {message}");
    }
    // Nothing above wrote: the session is as created.
    let session = ok(&spool, "getSession", &[ws, key]).await;
    assert_eq!(session["updated_at"], 1000);
    assert_eq!(session["status"], "running");
}
