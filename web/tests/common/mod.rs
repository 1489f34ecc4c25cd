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

/// A JSON value as a plain JS value, the way a JS caller would write it.
pub(crate) fn js(value: &serde_json::Value) -> JsValue {
    serde::Serialize::serialize(value, &serde_wasm_bindgen::Serializer::json_compatible())
        .expect("JSON converts to JS")
}

/// A JS value as JSON.
pub(crate) fn json(value: JsValue) -> serde_json::Value {
    serde_wasm_bindgen::from_value(value).expect("the result is JSON")
}
