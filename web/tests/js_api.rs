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
