//! The scenario vectors run through the JS API in a real browser: every call goes through
//! the `Spool` class's method for it (the table's `jsName`, called as
//! `jsName(workspace, args)`), so the JS boundary is part of what is tested,
//! and once more through the generic `execute`. Every vector runs, including those that
//! require the branch API.
#![cfg(target_arch = "wasm32")]

mod common;
#[path = "../../tests/vectors/mod.rs"]
mod vectors;

use serde_json::{Value, json};
use spool::{Command, FinishStatus};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// One fresh database behind the JS API.
struct Browser {
    spool: JsValue,
    /// Every call through `execute` (the generic entry point) instead of its typed method.
    generic: bool,
}

impl vectors::VectorHost for Browser {
    async fn exec(&mut self, workspace: &str, command: Command) -> Result<Value, vectors::Failure> {
        let ws = JsValue::from_str(workspace);
        let spool = &self.spool;
        let retype = retype(&command);
        let outcome = match command {
            command if self.generic => {
                let command = serde_json::to_value(&command).expect("command as JSON");
                common::call(spool, "execute", &[ws, common::js(&command)]).await
            }
            Command::Finish {
                key,
                status: FinishStatus::Done,
                expected_epoch,
                now_ms,
            } => {
                // `archiveSession` is `finish(…, "done", …)`: the vectors cover both.
                let options = fence(now_ms, expected_epoch);
                common::call(spool, "archiveSession", &[ws, key.into(), options]).await
            }
            // Every other call through its table method: `jsName(workspace, args)`, `args`
            // being the command's JSON without `op`.
            command => {
                let method = js_name(command.name());
                let mut args = serde_json::to_value(&command).expect("command as JSON");
                args.as_object_mut()
                    .expect("a command is an object")
                    .remove("op");
                common::call(spool, method, &[ws, common::js(&args)]).await
            }
        };
        outcome
            .map(|value| retype(common::json(value)))
            .map_err(|error| vectors::Failure {
                code: common::code(&error),
                message: common::message(&error),
            })
    }
}

/// The JS method of the table call `name`.
fn js_name(name: &str) -> &'static str {
    spool_web::js_names()
        .find(|(call, _)| *call == name)
        .map(|(_, js)| js)
        .unwrap_or_else(|| panic!("no JS method for the call {name}"))
}

/// Reads a JS result back as the core type `T` and writes it as JSON again.
///
/// JavaScript has one number type, so a cost of `0.0` reaches JSON from JS as the integer
/// `0`; the vectors (written against the core's own JSON) say `0.0`. Going through the
/// result's Rust type restores the core's spelling, and checks on the way that what the
/// JS API returned is a well-formed value of that type.
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(value: Value) -> Value {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| {
        panic!(
            "the JS API returned {value}, not a {}: {e}",
            std::any::type_name::<T>()
        )
    });
    serde_json::to_value(typed).expect("a core value serializes")
}

/// The [`typed`] conversion for the result of `command`: its table entry's output type.
fn retype(command: &Command) -> fn(Value) -> Value {
    macro_rules! retype {
        ($( $(#[$doc:meta])* $name:ident $js:ident $Op:ident {
            $( $(#[$attr:meta])* $field:ident : $ty:ty ),* $(,)? }
            $(fills($($fill:ident $(. $sub:ident)?),* $(,)?))? -> $out:ty = $f:path; )*) => {
            match command {
                $( Command::$Op { .. } => typed::<$out>, )*
                // `Command` is non-exhaustive; the table names every variant.
                _ => std::convert::identity,
            }
        };
    }
    spool::for_each_op!(retype)
}

/// The options of a fenced call.
fn fence(now_ms: u64, expected_epoch: Option<u64>) -> JsValue {
    let mut options = json!({ "nowMs": now_ms });
    if let Some(epoch) = expected_epoch {
        options["expectedEpoch"] = epoch.into();
    }
    common::js(&options)
}

impl Drop for Browser {
    fn drop(&mut self) {
        // `close` takes effect at once; its promise only reports that.
        drop(common::start(&self.spool, "close", &[]));
    }
}

/// Runs every vector on fresh databases; `generic` sends every call through `execute`.
async fn run_vectors(suite: &str, generic: bool) {
    let mut run = 0;
    let ran = vectors::run_all(|| {
        run += 1;
        let name = common::db_name(suite, &run.to_string());
        async move {
            Browser {
                spool: common::open(&name).await,
                generic,
            }
        }
    })
    .await;
    assert_eq!(ran, vectors::FILES.len(), "every vector file ran");
}

#[wasm_bindgen_test]
async fn test_scenario_vectors_browser() {
    run_vectors("vectors", false).await;
}

/// The same vectors through the generic `execute(workspace, command)`: every `Command`
/// the core knows runs from JS as plain data.
#[wasm_bindgen_test]
async fn test_scenario_vectors_browser_execute() {
    run_vectors("vectors-execute", true).await;
}
