//! The JS boundary: every conversion between JavaScript values and the core's types.
//!
//! Inputs are checked here and malformed ones become [`Error::InvalidArgument`], never a
//! panic. Outputs cross with `serde-wasm-bindgen`'s JSON-compatible serializer (plain
//! objects, numbers rather than BigInts, `null` for absent fields), so records keep the
//! same `snake_case` JSON as the CLI and the vectors. Errors become JS `Error`s carrying
//! the core's reason code in `code`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use spool::Error;
use wasm_bindgen::{JsCast, JsValue};

/// The options object every method takes as its last argument. Each method names the
/// options it accepts ([`options`] rejects the others); absent ones take the shell's
/// defaults.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Options {
    /// Identity of a session the call creates; `crypto.randomUUID()` when absent.
    #[serde(default)]
    pub(crate) session_id: Option<String>,
    /// Current time; `Date.now()` when absent.
    #[serde(default)]
    pub(crate) now_ms: Option<u64>,
    /// Fence: the call fails with `stale_epoch` unless the session is at this epoch.
    #[serde(default)]
    pub(crate) expected_epoch: Option<u64>,
    /// Id of the fork operation a new `fork` request gets; `crypto.randomUUID()` when
    /// absent.
    #[serde(default)]
    pub(crate) operation_id: Option<String>,
}

impl Options {
    /// `nowMs`, or `Date.now()`.
    pub(crate) fn now(&self) -> u64 {
        self.now_ms.unwrap_or_else(now_ms)
    }

    /// `sessionId`, or `crypto.randomUUID()`.
    pub(crate) fn session_id(&self) -> Result<String, Error> {
        match &self.session_id {
            Some(id) => Ok(id.clone()),
            None => random_uuid("options.sessionId"),
        }
    }

    /// `operationId`, or `crypto.randomUUID()`.
    pub(crate) fn operation_id(&self) -> Result<String, Error> {
        match &self.operation_id {
            Some(id) => Ok(id.clone()),
            None => random_uuid("options.operationId"),
        }
    }
}

/// The largest integer a JS number holds exactly (2^53 - 1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

fn is_absent(value: &JsValue) -> bool {
    value.is_undefined() || value.is_null()
}

/// A required string argument.
pub(crate) fn string(value: &JsValue, field: &'static str) -> Result<String, Error> {
    value
        .as_string()
        .ok_or_else(|| Error::invalid(field, format!("expected a string, got {}", describe(value))))
}

/// An optional string argument (`undefined` and `null` mean absent).
pub(crate) fn optional_string(
    value: &JsValue,
    field: &'static str,
) -> Result<Option<String>, Error> {
    if is_absent(value) {
        Ok(None)
    } else {
        string(value, field).map(Some)
    }
}

/// A required page size: a whole number from 0 to 2³²−1 (the core checks the range).
pub(crate) fn limit(value: &JsValue, field: &'static str) -> Result<u32, Error> {
    match value.as_f64() {
        // A whole number in range: the cast is exact.
        Some(n) if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) => Ok(n as u32),
        _ => Err(Error::invalid(
            field,
            format!(
                "expected a whole number from 0 to {}, got {}",
                u32::MAX,
                describe(value)
            ),
        )),
    }
}

/// A required count or duration: a whole number from 0 to 2^53 - 1 (a JS number is exact
/// only that far; the core checks its own, wider range).
pub(crate) fn count(value: &JsValue, field: &'static str) -> Result<u64, Error> {
    match value.as_f64() {
        // A whole number in range: the cast is exact.
        Some(n) if n.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&n) => Ok(n as u64),
        _ => Err(Error::invalid(
            field,
            format!(
                "expected a whole number from 0 to 2^53 - 1, got {}",
                describe(value)
            ),
        )),
    }
}

/// An optional boolean argument (`undefined` and `null` mean `default`).
pub(crate) fn flag(value: &JsValue, field: &'static str, default: bool) -> Result<bool, Error> {
    if is_absent(value) {
        return Ok(default);
    }
    value.as_bool().ok_or_else(|| {
        Error::invalid(
            field,
            format!("expected a boolean, got {}", describe(value)),
        )
    })
}

/// A required string naming one value of a `snake_case` enum of the core (an intent, a
/// finish status), read with the enum's own `serde` rules.
pub(crate) fn choice<T: DeserializeOwned>(
    value: &JsValue,
    field: &'static str,
) -> Result<T, Error> {
    let text = string(value, field)?;
    serde_json::from_value(serde_json::Value::String(text))
        .map_err(|e| Error::invalid(field, e.to_string()))
}

/// An optional object argument (`undefined` and `null` mean `T::default()`).
pub(crate) fn optional_object<T: DeserializeOwned + Default>(
    value: JsValue,
    field: &'static str,
) -> Result<T, Error> {
    if is_absent(&value) {
        Ok(T::default())
    } else {
        object(value, field)
    }
}

/// An object argument where `null` means none (`updateRoleAdapterState`'s `state`, whose
/// `null` clears). `undefined` is not taken for `null`: a forgotten argument must not
/// clear anything.
pub(crate) fn object_or_null<T: DeserializeOwned>(
    value: JsValue,
    field: &'static str,
) -> Result<Option<T>, Error> {
    if value.is_null() {
        Ok(None)
    } else {
        object(value, field).map(Some)
    }
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
    serde_json::from_value(json).map_err(|e| Error::unparsed(field, "does not parse", &e))
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

/// A required function argument.
pub(crate) fn function(value: JsValue, field: &'static str) -> Result<js_sys::Function, Error> {
    value.dyn_into::<js_sys::Function>().map_err(|value| {
        Error::invalid(
            field,
            format!("expected a function, got {}", describe(&value)),
        )
    })
}

/// Calls the summarizer `summarize(prepared)` and awaits the string it returns (directly
/// or through a promise). A throw, a rejection or anything but a string is an
/// [`Error::InvalidArgument`] of `summarize` carrying the JS error's message.
pub(crate) async fn summarize(
    summarize: &js_sys::Function,
    prepared: &JsValue,
) -> Result<String, Error> {
    let failed = |error: JsValue| {
        Error::invalid(
            "summarize",
            format!("the summarizer failed: {}", error_message(&error)),
        )
    };
    let returned = summarize
        .call1(&JsValue::UNDEFINED, prepared)
        .map_err(failed)?;
    let settled = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&returned))
        .await
        .map_err(failed)?;
    settled.as_string().ok_or_else(|| {
        Error::invalid(
            "summarize",
            format!(
                "expected the summarizer to resolve to a string, got {}",
                describe(&settled)
            ),
        )
    })
}

/// The message of a thrown JS value: an `Error`'s `message`, a thrown string itself.
fn error_message(error: &JsValue) -> String {
    match error.dyn_ref::<js_sys::Error>() {
        Some(error) => error.message().into(),
        None => error.as_string().unwrap_or_else(|| describe(error)),
    }
}

/// A result as a plain JS value.
pub(crate) fn to_js<T: Serialize>(value: &T) -> Result<JsValue, Error> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| Error::internal(format!("result does not convert to JS: {e}")))
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

/// An object argument of a core type with an identity field the caller may leave out
/// (`undefined` or `null`): the shell then fills in `crypto.randomUUID()`, since the core
/// never draws ids itself. When `optional` is true an absent argument is an empty object.
pub(crate) fn object_with_fresh_id<T: DeserializeOwned>(
    value: JsValue,
    field: &'static str,
    id_field: &'static str,
    optional: bool,
) -> Result<T, Error> {
    let mut json = if optional && is_absent(&value) {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        object::<serde_json::Value>(value, field)?
    };
    if let Some(map) = json.as_object_mut()
        && map.get(id_field).is_none_or(serde_json::Value::is_null)
    {
        map.insert(id_field.to_owned(), random_uuid(field)?.into());
    }
    serde_json::from_value(json).map_err(|e| Error::invalid(field, e.to_string()))
}

/// A required array argument, each element read with the core type's own `serde` rules.
pub(crate) fn array<T: DeserializeOwned>(value: JsValue, field: &'static str) -> Result<T, Error> {
    if !js_sys::Array::is_array(&value) {
        return Err(Error::invalid(
            field,
            format!("expected an array, got {}", describe(&value)),
        ));
    }
    let json: serde_json::Value = serde_wasm_bindgen::from_value(value)
        .map_err(|e| Error::unparsed(field, "is not JSON", &e))?;
    serde_json::from_value(json).map_err(|e| Error::unparsed(field, "does not parse", &e))
}

/// An optional array argument (`undefined` and `null` mean an empty list).
pub(crate) fn optional_array<T: DeserializeOwned + Default>(
    value: JsValue,
    field: &'static str,
) -> Result<T, Error> {
    if is_absent(&value) {
        Ok(T::default())
    } else {
        array(value, field)
    }
}
