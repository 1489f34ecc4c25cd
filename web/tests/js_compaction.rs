//! Compaction through the JS API, in a real browser: the built-in summarizer, the
//! two-phase protocol with a JS summarizer function (`compactWith`), external summaries,
//! and the degraded-compaction repair calls.
#![cfg(target_arch = "wasm32")]

mod common;

use serde_json::{Value, json};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "default";
const KEY: &str = "agent:main:main";

async fn fresh(name: &str) -> JsValue {
    common::open(&common::db_name("js_compaction", name)).await
}

async fn ok(spool: &JsValue, method: &str, args: &[JsValue]) -> Value {
    match common::call(spool, method, args).await {
        Ok(value) => common::json(value),
        Err(error) => panic!(
            "`{method}` rejected: {} ({})",
            common::code(&error),
            common::message(&error)
        ),
    }
}

/// Awaits a call that must reject, returning the rejection's code and message.
async fn rejection(spool: &JsValue, method: &str, args: &[JsValue]) -> (String, String) {
    match common::call(spool, method, args).await {
        Ok(value) => panic!("`{method}` resolved to {value:?}, expected a rejection"),
        Err(error) => (common::code(&error), common::message(&error)),
    }
}

fn time(now_ms: u64) -> JsValue {
    common::js(&json!({ "nowMs": now_ms }))
}

/// Creates the session and appends 20 entries of 500 chars with `token_count` 200
/// (4,000 tokens: well over a 1,000-token window). Returns the contents in order.
async fn twenty_long_entries(spool: &JsValue) -> Vec<String> {
    let options = common::js(&json!({ "sessionId": "s1", "nowMs": 1000 }));
    ok(spool, "createSession", &[WS.into(), KEY.into(), options]).await;
    let mut contents = Vec::new();
    for i in 0..20u64 {
        let head = format!("message {i}: ");
        let content = format!("{head}{}", "x".repeat(500 - head.len()));
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let request = json!({ "role": role, "content": content, "token_count": 200 });
        let args = [WS.into(), KEY.into(), common::js(&request), time(2000 + i)];
        ok(spool, "appendEntry", &args).await;
        contents.push(content);
    }
    contents
}

fn request() -> JsValue {
    common::js(&json!({ "context_window_tokens": 1000 }))
}

fn contents(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .expect("an array of entries")
        .iter()
        .map(|e| e["content"].as_str().expect("content").to_owned())
        .collect()
}

async fn canonical(spool: &JsValue) -> Vec<String> {
    contents(&ok(spool, "canonicalTranscript", &[WS.into(), KEY.into()]).await)
}

async fn active(spool: &JsValue) -> Vec<String> {
    let page = common::js(&json!({ "limit": 100 }));
    contents(&ok(spool, "readPage", &[WS.into(), KEY.into(), page]).await["entries"])
}

/// A JS function `(prepared) => …` with `body` as its source.
fn summarizer(body: &str) -> JsValue {
    js_sys::Function::new_with_args("prepared", body).into()
}

#[wasm_bindgen_test]
async fn test_compact_with_the_builtin_summarizer() {
    let spool = fresh("builtin").await;
    let appended = twenty_long_entries(&spool).await;
    let result = ok(
        &spool,
        "compact",
        &[WS.into(), KEY.into(), request(), time(9000)],
    )
    .await;
    let removed = result["removed_count"].as_u64().expect("removed_count");
    assert!(removed > 0, "{result}");
    assert!(!result["summary"].as_str().expect("summary").is_empty());
    assert_eq!(result["summary_source"], "fallback");
    assert_eq!(result["skip_reason"], Value::Null);
    let kept = result["kept_entries"]
        .as_array()
        .expect("kept_entries")
        .len();
    assert_eq!(kept as u64 + removed, 20);
    assert_eq!(canonical(&spool).await, appended);
    assert_eq!(active(&spool).await, appended[removed as usize..]);
    let summaries = ok(&spool, "listSummaries", &[WS.into(), KEY.into()]).await;
    let summaries = summaries.as_array().expect("summaries");
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0]["summary_format"], "structured_v1");
    assert_eq!(summaries[0]["summary_source"], "fallback");
    assert_eq!(summaries[0]["removed_count"], removed);
    assert_eq!(summaries[0]["created_at"], 9000);
    assert_eq!(summaries[0]["compaction_id"], result["compaction_id"]);
    // The removed entries can be read back by compaction id.
    let id: JsValue = result["compaction_id"].as_str().expect("an id").into();
    let preimage = ok(&spool, "compactionPreimage", &[WS.into(), KEY.into(), id]).await;
    assert_eq!(contents(&preimage), appended[..removed as usize]);
    let session = ok(&spool, "getSession", &[WS.into(), KEY.into()]).await;
    assert_eq!(session["compaction_count"], 1);
}

#[wasm_bindgen_test]
async fn test_compact_with_a_js_summarizer_is_llm_sourced() {
    let spool = fresh("llm").await;
    let appended = twenty_long_entries(&spool).await;
    // The summarizer sees the prepared input; an async function, as an LLM call would be.
    let summarize = summarizer(
        "if (typeof prepared.input !== 'string' || !prepared.input.includes('message 0:')) \
           throw new Error('no input');
         if (!Array.isArray(prepared.obligations)) throw new Error('no obligations');
         return (async () => 'The user and assistant exchanged ' + prepared.removed_count \
           + ' long messages.')();",
    );
    let args = [WS.into(), KEY.into(), request(), summarize, time(9000)];
    let result = ok(&spool, "compactWith", &args).await;
    assert_eq!(result["summary_source"], "llm", "{result}");
    let removed = result["removed_count"].as_u64().expect("removed_count");
    assert!(removed > 0);
    let summary = result["summary"].as_str().expect("summary");
    assert!(
        summary.contains(&format!("exchanged {removed} long messages")),
        "{summary}"
    );
    assert_eq!(canonical(&spool).await, appended);
    let summaries = ok(&spool, "listSummaries", &[WS.into(), KEY.into()]).await;
    assert_eq!(summaries.as_array().expect("summaries").len(), 1);
    assert_eq!(summaries[0]["summary_source"], "llm");
    assert_eq!(summaries[0]["created_at"], 9000);
    // A summarizer may also return its string directly.
    let plain = summarizer("return 'plain summary';");
    let more = json!({ "role": "user", "content": "y".repeat(4000), "token_count": 2000 });
    ok(
        &spool,
        "appendEntry",
        &[WS.into(), KEY.into(), common::js(&more), time(9100)],
    )
    .await;
    let result = ok(
        &spool,
        "compactWith",
        &[WS.into(), KEY.into(), request(), plain],
    )
    .await;
    assert_eq!(result["summary_source"], "llm", "{result}");
}

#[wasm_bindgen_test]
async fn test_a_failing_summarizer_rejects_and_writes_nothing() {
    let spool = fresh("failing").await;
    let appended = twenty_long_entries(&spool).await;
    let failing = [
        (
            "return Promise.reject(new Error('model overloaded'));",
            "model overloaded",
        ),
        ("throw new Error('no network');", "no network"),
        ("return (async () => { throw 'quota'; })();", "quota"),
        ("return Promise.resolve(42);", "string"),
        ("return undefined;", "string"),
    ];
    for (body, needle) in failing {
        let args = [
            WS.into(),
            KEY.into(),
            request(),
            summarizer(body),
            time(9000),
        ];
        let (code, message) = rejection(&spool, "compactWith", &args).await;
        assert_eq!(code, "invalid_argument", "{body}: {message}");
        assert!(message.contains(needle), "{body}: {message}");
    }
    let not_a_function = [WS.into(), KEY.into(), request(), "summarize".into()];
    let (code, _) = rejection(&spool, "compactWith", &not_a_function).await;
    assert_eq!(code, "invalid_argument");
    assert_eq!(canonical(&spool).await, appended);
    assert_eq!(active(&spool).await, appended);
    let summaries = ok(&spool, "listSummaries", &[WS.into(), KEY.into()]).await;
    assert_eq!(summaries, json!([]));
    let session = ok(&spool, "getSession", &[WS.into(), KEY.into()]).await;
    assert_eq!(session["compaction_count"], 0);
    assert_eq!(session["entry_count"], 20);
    assert_eq!(session["updated_at"], 2019);
}

#[wasm_bindgen_test]
async fn test_compact_with_below_the_threshold_does_not_call_the_summarizer() {
    let spool = fresh("below").await;
    twenty_long_entries(&spool).await;
    let big_window = common::js(&json!({ "context_window_tokens": 100000 }));
    let never = summarizer("throw new Error('called');");
    let result = ok(
        &spool,
        "compactWith",
        &[WS.into(), KEY.into(), big_window, never],
    )
    .await;
    assert_eq!(result["skip_reason"], "below_threshold", "{result}");
    assert_eq!(result["summary"], "");
    assert_eq!(result["removed_count"], 0);
    assert_eq!(active(&spool).await.len(), 20);
}

#[wasm_bindgen_test]
async fn test_two_phase_commit_refuses_a_stale_preimage() {
    let spool = fresh("two_phase").await;
    let mut appended = twenty_long_entries(&spool).await;
    let prepared = ok(
        &spool,
        "prepareCompaction",
        &[WS.into(), KEY.into(), request()],
    )
    .await;
    assert_eq!(prepared["skip_reason"], Value::Null, "{prepared}");
    assert!(prepared["removed_count"].as_u64().expect("removed_count") > 0);
    let preimage = prepared["preimage"].clone();
    // An append lands between prepare and commit.
    let late = json!({ "role": "user", "content": "late", "token_count": 1 });
    ok(
        &spool,
        "appendEntry",
        &[WS.into(), KEY.into(), common::js(&late), time(5000)],
    )
    .await;
    appended.push("late".into());
    let commit = json!({
        "request": { "context_window_tokens": 1000 },
        "preimage": preimage,
        "summary_text": "a summary",
    });
    let args = [WS.into(), KEY.into(), common::js(&commit), time(6000)];
    let result = ok(&spool, "commitCompaction", &args).await;
    assert_eq!(result["skip_reason"], "stale_preimage", "{result}");
    assert_eq!(result["summary_source"], "skipped");
    assert_eq!(active(&spool).await, appended);
    // Prepared afresh, the commit goes through.
    let prepared = ok(
        &spool,
        "prepareCompaction",
        &[WS.into(), KEY.into(), request()],
    )
    .await;
    let commit = json!({
        "request": { "context_window_tokens": 1000 },
        "preimage": prepared["preimage"],
        "summary_text": "a summary",
    });
    let args = [WS.into(), KEY.into(), common::js(&commit), time(7000)];
    let result = ok(&spool, "commitCompaction", &args).await;
    assert_eq!(result["summary_source"], "llm", "{result}");
    assert_eq!(result["removed_count"], prepared["removed_count"]);
    assert_eq!(canonical(&spool).await, appended);
}

#[wasm_bindgen_test]
async fn test_persist_an_external_summary() {
    let spool = fresh("persist").await;
    let options = common::js(&json!({ "sessionId": "s1", "nowMs": 1000 }));
    ok(&spool, "createSession", &[WS.into(), KEY.into(), options]).await;
    for i in 0..4u64 {
        let request = json!({ "role": "user", "content": format!("msg {i}"), "token_count": 5 });
        let args = [WS.into(), KEY.into(), common::js(&request), time(2000 + i)];
        ok(&spool, "appendEntry", &args).await;
    }
    let persist = json!({
        "summary_text": "the agent's own summary",
        "kept_entries": [{ "role": "assistant", "content": "latest reply" }],
        "trigger_reason": "agent_compacted",
    });
    let args = [WS.into(), KEY.into(), common::js(&persist), time(3000)];
    let result = ok(&spool, "persistCompactionResult", &args).await;
    assert_eq!(result["summary_source"], "external", "{result}");
    assert_eq!(result["removed_count"], 3);
    assert_eq!(active(&spool).await, ["latest reply"]);
    assert_eq!(
        canonical(&spool).await,
        ["msg 0", "msg 1", "msg 2", "latest reply"]
    );
    let summaries = ok(&spool, "listSummaries", &[WS.into(), KEY.into()]).await;
    assert_eq!(summaries[0]["kept_count"], 1);
    assert_eq!(summaries[0]["trigger_reason"], "agent_compacted");
}

#[wasm_bindgen_test]
async fn test_degraded_compactions_are_listed_and_repaired() {
    let spool = fresh("degraded").await;
    twenty_long_entries(&spool).await;
    let unsafe_request = common::js(&json!({
        "context_window_tokens": 1000,
        "compaction_id": "cmp-a",
        "flush_receipt_status": "unsafe",
    }));
    let result = ok(
        &spool,
        "compact",
        &[WS.into(), KEY.into(), unsafe_request, time(9000)],
    )
    .await;
    assert_eq!(result["compaction_id"], "cmp-a", "{result}");
    let degraded = ok(&spool, "listDegradedCompactions", &[WS.into()]).await;
    assert_eq!(degraded.as_array().expect("a list").len(), 1, "{degraded}");
    assert_eq!(degraded[0]["compaction_id"], "cmp-a");
    assert_eq!(degraded[0]["flush_receipt_status"], "degraded_forensic");
    let mine = ok(
        &spool,
        "listDegradedCompactions",
        &[WS.into(), "main".into()],
    )
    .await;
    assert_eq!(mine.as_array().expect("a list").len(), 1);
    let others = ok(
        &spool,
        "listDegradedCompactions",
        &[WS.into(), "other".into()],
    )
    .await;
    assert_eq!(others, json!([]));
    let args = [WS.into(), KEY.into(), "cmp-a".into(), "safe".into()];
    let summary = ok(&spool, "setFlushReceipt", &args).await;
    assert_eq!(summary["flush_receipt_status"], "safe");
    let degraded = ok(&spool, "listDegradedCompactions", &[WS.into()]).await;
    assert_eq!(degraded, json!([]));
    let args = [WS.into(), KEY.into(), "cmp-a".into(), "repaired".into()];
    let summary = ok(&spool, "setRepairStatus", &args).await;
    assert_eq!(summary["repair_status"], "repaired");
    let args = [WS.into(), KEY.into(), "cmp-none".into(), "repaired".into()];
    let (code, _) = rejection(&spool, "setRepairStatus", &args).await;
    assert_eq!(code, "not_found");
    let args = [WS.into(), KEY.into(), "cmp-a".into(), "bogus".into()];
    let (code, _) = rejection(&spool, "setFlushReceipt", &args).await;
    assert_eq!(code, "invalid_argument");
}

#[wasm_bindgen_test]
async fn test_malformed_compaction_arguments_are_invalid_argument() {
    let spool = fresh("malformed").await;
    twenty_long_entries(&spool).await;
    let (ws, key) = (JsValue::from(WS), JsValue::from(KEY));
    let cases: Vec<(&str, Vec<JsValue>)> = vec![
        ("compact", vec![ws.clone(), key.clone()]),
        (
            "compact",
            vec![
                ws.clone(),
                key.clone(),
                common::js(&json!({ "contextWindowTokens": 1000 })),
            ],
        ),
        (
            "compact",
            vec![
                ws.clone(),
                key.clone(),
                common::js(&json!({ "context_window_tokens": 1000, "config": { "margin": 2 } })),
            ],
        ),
        (
            "compact",
            vec![
                ws.clone(),
                key.clone(),
                request(),
                common::js(&json!({ "expectedEpoch": 0 })),
            ],
        ),
        (
            "prepareCompaction",
            vec![ws.clone(), key.clone(), JsValue::from(1000)],
        ),
        (
            "commitCompaction",
            vec![
                ws.clone(),
                key.clone(),
                common::js(&json!({ "request": { "context_window_tokens": 1000 } })),
            ],
        ),
        (
            "persistCompactionResult",
            vec![
                ws.clone(),
                key.clone(),
                common::js(&json!({ "summaryText": "x", "kept_entries": [] })),
            ],
        ),
        ("compactWith", vec![ws.clone(), key.clone(), request()]),
        (
            "compactWith",
            vec![
                ws.clone(),
                key.clone(),
                request(),
                summarizer("return 'x';"),
                common::js(&json!({ "now": 1 })),
            ],
        ),
        ("canonicalTranscript", vec![ws.clone(), JsValue::NULL]),
        ("listSummaries", vec![JsValue::from(1), key.clone()]),
        (
            "listDegradedCompactions",
            vec![ws.clone(), JsValue::from(1)],
        ),
        (
            "compactionPreimage",
            vec![ws.clone(), key.clone(), JsValue::NULL],
        ),
        (
            "setRepairStatus",
            vec![ws.clone(), key.clone(), "cmp".into(), JsValue::from(1)],
        ),
        (
            "setFlushReceipt",
            vec![ws.clone(), key.clone(), "cmp".into()],
        ),
    ];
    for (method, args) in cases {
        let (code, message) = rejection(&spool, method, &args).await;
        assert_eq!(code, "invalid_argument", "{method}({args:?}): {message}");
    }
    // Nothing above wrote.
    let session = ok(&spool, "getSession", &[ws, key]).await;
    assert_eq!(session["compaction_count"], 0);
    assert_eq!(session["entry_count"], 20);
}
