//! The JS boundary: every conversion between JavaScript values and the core's types.
//!
//! Inputs are checked here and malformed ones become [`Error::InvalidArgument`], never a
//! panic. Outputs cross as JSON text that `JSON.parse` turns into plain objects (numbers
//! rather than BigInts, `null` for absent fields), so records keep the same `snake_case`
//! JSON as the CLI and the vectors. Errors become JS `Error`s carrying
//! the core's reason code in `code`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use spool::Error;
use wasm_bindgen::{JsCast, JsValue};

/// The options object the methods outside the operation table (`archiveSession`,
/// `compactWith`) take as their last argument. Each method names the options it accepts
/// ([`options`] rejects the others); absent ones take the shell's defaults.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Options {
    /// Current time; `Date.now()` when absent.
    #[serde(default)]
    pub(crate) now_ms: Option<u64>,
    /// Fence: the call fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub(crate) expected_epoch: Option<u64>,
}

impl Options {
    /// `nowMs`, or `Date.now()`.
    pub(crate) fn now(&self) -> u64 {
        self.now_ms.unwrap_or_else(now_ms)
    }
}

fn is_absent(value: &JsValue) -> bool {
    value.is_undefined() || value.is_null()
}

/// A required string argument.
pub(crate) fn string(value: &JsValue, field: &'static str) -> Result<String, Error> {
    value
        .as_string()
        .ok_or_else(|| Error::invalid(field, format!("expected a string, got {}", describe(value))))
}

/// A required string naming one value of a `snake_case` enum of the core (an intent, a
/// finish status), read with the enum's own `serde` rules.
#[cfg(feature = "import")]
pub(crate) fn choice<T: DeserializeOwned>(
    value: &JsValue,
    field: &'static str,
) -> Result<T, Error> {
    let text = string(value, field)?;
    spool::record::read(&serde_json::Value::String(text))
        .map_err(|e| Error::invalid(field, e.to_string()))
}

/// A required object argument, read with the core type's own `serde` rules.
///
/// It goes through `serde_json::Value` because serde-wasm-bindgen looks up only the
/// fields a struct names, so `deny_unknown_fields` would never see a misspelt one
/// (`tokenCount` for `token_count`); JSON reports it.
pub(crate) fn object<T: DeserializeOwned>(value: JsValue, field: &'static str) -> Result<T, Error> {
    if !value.is_object() {
        return Err(Error::invalid(
            field,
            format!("expected an object, got {}", describe(&value)),
        ));
    }
    let json: serde_json::Value = serde_wasm_bindgen::from_value(value)
        .map_err(|e| Error::unparsed(field, "is not JSON", &e))?;
    // By `record::read`, as every argument of the module is read: `from_value` (an owned
    // `Value`) would compile a second reader of each type (5% of the module's code).
    spool::record::read(&json).map_err(|e| Error::unparsed(field, "does not parse", &e))
}

/// The arguments of a table call: a plain object, read as JSON (`undefined` and `null`
/// mean none). Like [`object`], through `serde_json` so that unknown fields are seen.
pub(crate) fn args(value: JsValue) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
    if is_absent(&value) {
        return Ok(serde_json::Map::new());
    }
    match object(value, "args")? {
        serde_json::Value::Object(map) => Ok(map),
        other => Err(Error::invalid(
            "args",
            format!("expected an object, got {}", describe_json(&other)),
        )),
    }
}

/// What a JSON value is, for error messages.
fn describe_json(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Array(_) => "an array",
        _ => "a value",
    }
}

/// An optional options object (`undefined` and `null` mean all defaults). Options are
/// JS-only and camelCase, so a name outside `known` (say `session_id`) is a mistake worth
/// reporting rather than ignoring.
pub(crate) fn options(
    value: JsValue,
    field: &'static str,
    known: &[&str],
) -> Result<Options, Error> {
    if is_absent(&value) {
        return Ok(Options::default());
    }
    if let Some(object) = value.dyn_ref::<js_sys::Object>() {
        for name in js_sys::Object::keys(object) {
            let name = name.as_string().unwrap_or_default();
            if !known.contains(&name.as_str()) {
                return Err(Error::invalid(
                    field,
                    format!(
                        "unknown option {} (known: {})",
                        spool::validate::quote(&name),
                        known.join(", ")
                    ),
                ));
            }
        }
    }
    object(value, field)
}

/// The message of a thrown JS value: an `Error`'s `message`, a thrown string itself.
pub(crate) fn error_message(error: &JsValue) -> String {
    match error.dyn_ref::<js_sys::Error>() {
        Some(error) => error.message().into(),
        None => error.as_string().unwrap_or_else(|| describe(error)),
    }
}

/// A result as a plain JS value: its JSON text, parsed by `JSON.parse`.
///
/// One string crosses the boundary and the browser's native parser builds the objects:
/// building them field by field from Rust costs a call into JS per field.
pub(crate) fn to_js<T: Serialize>(value: &T) -> Result<JsValue, Error> {
    parse_json(serde_json::to_string(value))
}

/// `JSON.parse` of a result's JSON text, compiled once for every result type.
fn parse_json(text: Result<String, serde_json::Error>) -> Result<JsValue, Error> {
    let fail = |why: String| Error::internal(format!("result does not convert to JS: {why}"));
    let text = text.map_err(|e| fail(e.to_string()))?;
    js_sys::JSON::parse(&text).map_err(|e| fail(error_message(&e)))
}

/// A core error as a JS `Error`: its message is the error's text, its `code` property the
/// reason code, and for a fork conflict (code `conflict`) its `reason` property the fork
/// reason (`stale_transition`, `request_changed`, a provider's `attachment_unsupported`,
/// …), verbatim.
pub(crate) fn error(error: &Error) -> JsValue {
    let js = js_sys::Error::new(&error.to_string());
    js.set_name("SpoolError");
    // Defining a property on a fresh, extensible Error object cannot fail.
    let _ = js_sys::Reflect::set(&js, &"code".into(), &error.code().into());
    if let Some(reason) = error.fork_reason() {
        let _ = js_sys::Reflect::set(&js, &"reason".into(), &reason.into());
    }
    js.into()
}

/// The current time in ms since the Unix epoch (`Date.now()`).
pub(crate) fn now_ms() -> u64 {
    // `Date.now()` is a whole, non-negative number of milliseconds: the cast is exact.
    js_sys::Date::now() as u64
}

/// A fresh id from `crypto.randomUUID()` (windows and workers alike), for the argument
/// `field` the caller left out.
pub(crate) fn random_uuid(field: &'static str) -> Result<String, Error> {
    let unavailable = |why: &str| {
        Error::invalid(
            field,
            format!("none given and crypto.randomUUID() is unavailable ({why})"),
        )
    };
    let crypto = js_sys::Reflect::get(&js_sys::global(), &"crypto".into())
        .map_err(|_| unavailable("no crypto object"))?;
    let random_uuid = js_sys::Reflect::get(&crypto, &"randomUUID".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .ok_or_else(|| unavailable("not a secure context?"))?;
    random_uuid
        .call0(&crypto)
        .ok()
        .and_then(|id| id.as_string())
        .ok_or_else(|| unavailable("the call failed"))
}

/// A short description of a JS value for error messages.
pub(crate) fn describe(value: &JsValue) -> String {
    if let Some(s) = value.as_string() {
        format!("the string {}", spool::validate::quote(&s))
    } else if let Some(n) = value.as_f64() {
        format!("the number {n}")
    } else if value.is_null() {
        "null".into()
    } else {
        value
            .js_typeof()
            .as_string()
            .unwrap_or_else(|| "a value".into())
    }
}
