//! Helpers shared by the browser test crates: unique database names and calls to the
//! `Spool` class through its JS-facing (camelCase) methods.
// Each test crate uses a different part of this module.
#![allow(dead_code)]

use std::cell::OnceCell;

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

thread_local! {
    static RUN_ID: OnceCell<String> = const { OnceCell::new() };
}

/// `crypto.randomUUID()`, drawn once per test run.
fn run_id() -> String {
    RUN_ID.with(|id| {
        id.get_or_init(|| {
            let crypto = Reflect::get(&js_sys::global(), &"crypto".into()).expect("crypto");
            let random_uuid: Function = Reflect::get(&crypto, &"randomUUID".into())
                .expect("crypto.randomUUID")
                .dyn_into()
                .expect("a function");
            random_uuid
                .call0(&crypto)
                .expect("randomUUID()")
                .as_string()
                .expect("a string")
        })
        .clone()
    })
}

/// A database name unique to this test run (reruns start empty) and stable within it
/// (opening the same `suite`/`name` again reopens the same database).
pub(crate) fn db_name(suite: &str, name: &str) -> String {
    format!("spool-test-{}-{suite}-{name}", run_id())
}

/// Opens a `Spool` and hands it over to JS: the value JS code would hold.
pub(crate) async fn open(name: &str) -> JsValue {
    spool_web::Spool::open(name.into())
        .await
        .expect("Spool.open")
        .into()
}

/// Calls `spool[method](...args)`, which must return a promise without throwing.
pub(crate) fn start(spool: &JsValue, method: &str, args: &[JsValue]) -> Promise {
    let function: Function = Reflect::get(spool, &method.into())
        .expect("method lookup")
        .dyn_into()
        .unwrap_or_else(|_| panic!("Spool has no method `{method}`"));
    let args: Array = args.iter().collect();
    function
        .apply(spool, &args)
        .unwrap_or_else(|e| panic!("`{method}` threw instead of rejecting: {e:?}"))
        .dyn_into()
        .unwrap_or_else(|_| panic!("`{method}` did not return a promise"))
}

/// Calls `spool[method](...args)` and awaits the promise it returns.
pub(crate) async fn call(
    spool: &JsValue,
    method: &str,
    args: &[JsValue],
) -> Result<JsValue, JsValue> {
    JsFuture::from(start(spool, method, args)).await
}

/// The `code` property of a rejection.
pub(crate) fn code(error: &JsValue) -> String {
    Reflect::get(error, &"code".into())
        .ok()
        .and_then(|code| code.as_string())
        .unwrap_or_else(|| panic!("rejection without a string `code`: {error:?}"))
}

/// The `message` of a rejection, which must be a JS `Error`.
pub(crate) fn message(error: &JsValue) -> String {
    error
        .dyn_ref::<js_sys::Error>()
        .unwrap_or_else(|| panic!("rejection is not an Error: {error:?}"))
        .message()
        .into()
}

/// A JSON value as a plain JS value, the way a JS caller would write it: an integer past
/// `Number.MAX_SAFE_INTEGER` becomes the JS number nearest to it (what such a literal is
/// in JS), so the API's own bound is what refuses it.
pub(crate) fn js(value: &serde_json::Value) -> JsValue {
    serde::Serialize::serialize(
        &as_js_numbers(value),
        &serde_wasm_bindgen::Serializer::json_compatible(),
    )
    .expect("JSON converts to JS")
}

fn as_js_numbers(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
    match value {
        Value::Number(n) if n.as_u64().is_some_and(|n| n > MAX_SAFE_INTEGER) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.iter().map(as_js_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), as_js_numbers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A JS value as JSON.
pub(crate) fn json(value: JsValue) -> serde_json::Value {
    serde_wasm_bindgen::from_value(value).expect("the result is JSON")
}

/// `spool[method](...args)`, which must resolve: its result as JSON.
pub(crate) async fn ok(spool: &JsValue, method: &str, args: &[JsValue]) -> serde_json::Value {
    match call(spool, method, args).await {
        Ok(value) => json(value),
        Err(error) => panic!(
            "`{method}` rejected with {}: {}",
            code(&error),
            message(&error)
        ),
    }
}

/// `spool[method](...args)`, which must reject: the error it rejects with.
pub(crate) async fn rejected(spool: &JsValue, method: &str, args: &[JsValue]) -> JsValue {
    match call(spool, method, args).await {
        Ok(value) => panic!("`{method}` resolved to {value:?}, expected a rejection"),
        Err(error) => error,
    }
}

/// `spool[method](...args)`, which must reject: its code and message.
pub(crate) async fn rejection(spool: &JsValue, method: &str, args: &[JsValue]) -> (String, String) {
    let error = rejected(spool, method, args).await;
    (code(&error), message(&error))
}

/// The arguments of a table call on the session `key`: `{ key, ...more }` as JS.
pub(crate) fn on(key: &str, more: serde_json::Value) -> JsValue {
    let mut args = serde_json::json!({ "key": key });
    for (field, value) in more.as_object().into_iter().flatten() {
        args[field] = value.clone();
    }
    js(&args)
}
