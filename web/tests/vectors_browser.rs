//! The scenario vectors run through the JS API in a real browser: every call goes through
//! the `Spool` class's camelCase methods, so the JS boundary is part of what is tested.
#![cfg(target_arch = "wasm32")]

mod common;
#[path = "../../tests/vectors/mod.rs"]
mod vectors;

use serde_json::{Value, json};
use spool::Command;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// One fresh database behind the JS API.
struct Browser {
    spool: JsValue,
}

impl vectors::VectorHost for Browser {
    async fn exec(&mut self, workspace: &str, command: Command) -> Result<Value, vectors::Failure> {
        let ws = JsValue::from_str(workspace);
        let spool = &self.spool;
        let outcome = match command {
            Command::CreateSession {
                key,
                session_id,
                now_ms,
            } => {
                let options = json!({ "sessionId": session_id, "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&options)];
                common::call(spool, "createSession", &args).await
            }
            Command::GetSession { key } => {
                common::call(spool, "getSession", &[ws, key.into()]).await
            }
            Command::AppendEntry {
                key,
                request,
                now_ms,
            } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let options = json!({ "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&request), common::js(&options)];
                common::call(spool, "appendEntry", &args).await
            }
            Command::ReadPage { key, request } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let args = [ws, key.into(), common::js(&request)];
                common::call(spool, "readPage", &args).await
            }
            Command::ListSessions { limit, cursor } => {
                let cursor = cursor.map_or(JsValue::UNDEFINED, JsValue::from);
                common::call(spool, "listSessions", &[ws, limit.into(), cursor]).await
            }
            other => {
                return Err(vectors::Failure {
                    code: "unsupported".into(),
                    message: format!("the browser host does not map {other:?}"),
                });
            }
        };
        outcome.map(common::json).map_err(|error| vectors::Failure {
            code: common::code(&error),
            message: common::message(&error),
        })
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // `close` takes effect at once; its promise only reports that.
        drop(common::start(&self.spool, "close", &[]));
    }
}

#[wasm_bindgen_test]
async fn test_scenario_vectors_browser() {
    let mut run = 0;
    let ran = vectors::run_all(|| {
        run += 1;
        let name = common::db_name("vectors", &run.to_string());
        async move {
            Browser {
                spool: common::open(&name).await,
            }
        }
    })
    .await;
    assert!(ran >= 8, "only {ran} vectors ran");
}
