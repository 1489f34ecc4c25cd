//! Compaction through the JS API, in a real browser: the built-in summarizer, the
//! two-phase protocol with a JS summarizer function (`compactWith`), external summaries,
//! and the degraded-compaction repair calls.
#![cfg(target_arch = "wasm32")]

mod common;

use common::{ok, rejection};

use serde_json::{Value, json};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "default";
const KEY: &str = "agent:main:main";

async fn fresh(name: &str) -> JsValue {
    common::open(&common::db_name("js_compaction", name)).await
}

/// The arguments naming `KEY` alone.
fn key() -> JsValue {
    common::on(KEY, json!({}))
}

fn time(now_ms: u64) -> JsValue {
    common::js(&json!({ "nowMs": now_ms }))
}

/// Creates the session and appends 20 entries of 500 chars with `token_count` 200
/// (4,000 tokens: well over a 1,000-token window). Returns the contents in order.
async fn twenty_long_entries(spool: &JsValue) -> Vec<String> {
    let args = common::on(KEY, json!({ "session_id": "s1", "now_ms": 1000 }));
    ok(spool, "createSession", &[WS.into(), args]).await;
    let mut contents = Vec::new();
    for i in 0..20u64 {
        let head = format!("message {i}: ");
        let content = format!("{head}{}", "x".repeat(500 - head.len()));
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let request = json!({ "role": role, "content": content, "token_count": 200 });
        let args = [
            WS.into(),
            common::on(KEY, json!({ "request": request, "now_ms": 2000 + i })),
        ];
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
    contents(&ok(spool, "canonicalTranscript", &[WS.into(), key()]).await)
}

async fn active(spool: &JsValue) -> Vec<String> {
    let page = common::on(KEY, json!({ "request": { "limit": 100 } }));
    contents(&ok(spool, "readPage", &[WS.into(), page]).await["entries"])
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
        &[
            WS.into(),
            common::on(
                KEY,
                json!({ "request": { "context_window_tokens": 1000 }, "now_ms": 9000 }),
            ),
        ],
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
    let summaries = ok(&spool, "listSummaries", &[WS.into(), key()]).await;
    let summaries = summaries.as_array().expect("summaries");
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0]["summary_format"], "structured_v1");
    assert_eq!(summaries[0]["summary_source"], "fallback");
    assert_eq!(summaries[0]["removed_count"], removed);
    assert_eq!(summaries[0]["created_at"], 9000);
    assert_eq!(summaries[0]["compaction_id"], result["compaction_id"]);
    // The removed entries can be read back by compaction id.
    let id = common::on(KEY, json!({ "compaction_id": result["compaction_id"] }));
    let preimage = ok(&spool, "compactionPreimage", &[WS.into(), id]).await;
    assert_eq!(contents(&preimage), appended[..removed as usize]);
    let session = ok(&spool, "getSession", &[WS.into(), key()]).await;
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
    let summaries = ok(&spool, "listSummaries", &[WS.into(), key()]).await;
    assert_eq!(summaries.as_array().expect("summaries").len(), 1);
    assert_eq!(summaries[0]["summary_source"], "llm");
    assert_eq!(summaries[0]["created_at"], 9000);
    // A summarizer may also return its string directly.
    let plain = summarizer("return 'plain summary';");
    let more = json!({ "role": "user", "content": "y".repeat(4000), "token_count": 2000 });
    ok(
        &spool,
        "appendEntry",
        &[
            WS.into(),
            common::on(KEY, json!({ "request": more, "now_ms": 9100 })),
        ],
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
    let summaries = ok(&spool, "listSummaries", &[WS.into(), key()]).await;
    assert_eq!(summaries, json!([]));
    let session = ok(&spool, "getSession", &[WS.into(), key()]).await;
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
        &[
            WS.into(),
            common::on(KEY, json!({ "request": { "context_window_tokens": 1000 } })),
        ],
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
        &[
            WS.into(),
            common::on(KEY, json!({ "request": late, "now_ms": 5000 })),
        ],
    )
    .await;
    appended.push("late".into());
    let commit = json!({
        "request": { "context_window_tokens": 1000 },
        "preimage": preimage,
        "summary_text": "a summary",
    });
    let args = [
        WS.into(),
        common::on(KEY, json!({ "commit": commit, "now_ms": 6000 })),
    ];
    let result = ok(&spool, "commitCompaction", &args).await;
    assert_eq!(result["skip_reason"], "stale_preimage", "{result}");
    assert_eq!(result["summary_source"], "skipped");
    assert_eq!(active(&spool).await, appended);
    // Prepared afresh, the commit goes through.
    let prepared = ok(
        &spool,
        "prepareCompaction",
        &[
            WS.into(),
            common::on(KEY, json!({ "request": { "context_window_tokens": 1000 } })),
        ],
    )
    .await;
    let commit = json!({
        "request": { "context_window_tokens": 1000 },
        "preimage": prepared["preimage"],
        "summary_text": "a summary",
    });
    let args = [
        WS.into(),
        common::on(KEY, json!({ "commit": commit, "now_ms": 7000 })),
    ];
    let result = ok(&spool, "commitCompaction", &args).await;
    assert_eq!(result["summary_source"], "llm", "{result}");
    assert_eq!(result["removed_count"], prepared["removed_count"]);
    assert_eq!(canonical(&spool).await, appended);
}

#[wasm_bindgen_test]
async fn test_persist_an_external_summary() {
    let spool = fresh("persist").await;
    let args = common::on(KEY, json!({ "session_id": "s1", "now_ms": 1000 }));
    ok(&spool, "createSession", &[WS.into(), args]).await;
    for i in 0..4u64 {
        let request = json!({ "role": "user", "content": format!("msg {i}"), "token_count": 5 });
        let args = [
            WS.into(),
            common::on(KEY, json!({ "request": request, "now_ms": 2000 + i })),
        ];
        ok(&spool, "appendEntry", &args).await;
    }
    let persist = json!({
        "summary_text": "the agent's own summary",
        "kept_entries": [{ "role": "assistant", "content": "latest reply" }],
        "trigger_reason": "agent_compacted",
    });
    let args = [
        WS.into(),
        common::on(KEY, json!({ "persist": persist, "now_ms": 3000 })),
    ];
    let result = ok(&spool, "persistCompactionResult", &args).await;
    assert_eq!(result["summary_source"], "external", "{result}");
    assert_eq!(result["removed_count"], 3);
    assert_eq!(active(&spool).await, ["latest reply"]);
    assert_eq!(
        canonical(&spool).await,
        ["msg 0", "msg 1", "msg 2", "latest reply"]
    );
    let summaries = ok(&spool, "listSummaries", &[WS.into(), key()]).await;
    assert_eq!(summaries[0]["kept_count"], 1);
    assert_eq!(summaries[0]["trigger_reason"], "agent_compacted");
}

#[wasm_bindgen_test]
async fn test_degraded_compactions_are_listed_and_repaired() {
    let spool = fresh("degraded").await;
    twenty_long_entries(&spool).await;
    let unsafe_request = json!({
        "context_window_tokens": 1000,
        "compaction_id": "cmp-a",
        "flush_receipt_status": "unsafe",
    });
    let args = common::on(KEY, json!({ "request": unsafe_request, "now_ms": 9000 }));
    let result = ok(&spool, "compact", &[WS.into(), args]).await;
    assert_eq!(result["compaction_id"], "cmp-a", "{result}");
    let degraded = ok(
        &spool,
        "listDegradedCompactions",
        &[WS.into(), common::js(&json!({}))],
    )
    .await;
    assert_eq!(degraded.as_array().expect("a list").len(), 1, "{degraded}");
    assert_eq!(degraded[0]["compaction_id"], "cmp-a");
    assert_eq!(degraded[0]["flush_receipt_status"], "degraded_forensic");
    let mine = ok(
        &spool,
        "listDegradedCompactions",
        &[WS.into(), common::js(&json!({ "agent_id": "main" }))],
    )
    .await;
    assert_eq!(mine.as_array().expect("a list").len(), 1);
    let others = ok(
        &spool,
        "listDegradedCompactions",
        &[WS.into(), common::js(&json!({ "agent_id": "other" }))],
    )
    .await;
    assert_eq!(others, json!([]));
    let args = [
        WS.into(),
        common::on(KEY, json!({ "compaction_id": "cmp-a", "status": "safe" })),
    ];
    let summary = ok(&spool, "setFlushReceipt", &args).await;
    assert_eq!(summary["flush_receipt_status"], "safe");
    let degraded = ok(
        &spool,
        "listDegradedCompactions",
        &[WS.into(), common::js(&json!({}))],
    )
    .await;
    assert_eq!(degraded, json!([]));
    let args = [
        WS.into(),
        common::on(
            KEY,
            json!({ "compaction_id": "cmp-a", "status": "repaired" }),
        ),
    ];
    let summary = ok(&spool, "setRepairStatus", &args).await;
    assert_eq!(summary["repair_status"], "repaired");
    let args = [
        WS.into(),
        common::on(
            KEY,
            json!({ "compaction_id": "cmp-none", "status": "repaired" }),
        ),
    ];
    let (code, _) = rejection(&spool, "setRepairStatus", &args).await;
    assert_eq!(code, "not_found");
    let args = [
        WS.into(),
        common::on(KEY, json!({ "compaction_id": "cmp-a", "status": "bogus" })),
    ];
    let (code, _) = rejection(&spool, "setFlushReceipt", &args).await;
    assert_eq!(code, "invalid_argument");
}

#[wasm_bindgen_test]
async fn test_malformed_compaction_arguments_are_invalid_argument() {
    let spool = fresh("malformed").await;
    twenty_long_entries(&spool).await;
    let (ws, key) = (JsValue::from(WS), JsValue::from(KEY));
    let cases: Vec<(&str, Vec<JsValue>)> = vec![
        ("compact", vec![ws.clone(), common::on(KEY, json!({}))]),
        (
            "compact",
            vec![
                ws.clone(),
                common::on(KEY, json!({ "request": { "contextWindowTokens": 1000 } })),
            ],
        ),
        (
            "compact",
            vec![
                ws.clone(),
                common::on(
                    KEY,
                    json!({ "request": { "context_window_tokens": 1000, "config": { "margin": 2 } } }),
                ),
            ],
        ),
        (
            "compact",
            vec![
                ws.clone(),
                common::on(
                    KEY,
                    json!({ "request": { "context_window_tokens": 1000 }, "expected_epoch": 0 }),
                ),
            ],
        ),
        (
            "prepareCompaction",
            vec![ws.clone(), common::on(KEY, json!({ "request": 1000 }))],
        ),
        (
            "commitCompaction",
            vec![
                ws.clone(),
                common::on(
                    KEY,
                    json!({ "commit": { "request": { "context_window_tokens": 1000 } } }),
                ),
            ],
        ),
        (
            "persistCompactionResult",
            vec![
                ws.clone(),
                common::on(
                    KEY,
                    json!({ "persist": { "summaryText": "x", "kept_entries": [] } }),
                ),
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
        (
            "canonicalTranscript",
            vec![ws.clone(), common::js(&json!({ "key": null }))],
        ),
        (
            "listSummaries",
            vec![JsValue::from(1), common::on(KEY, json!({}))],
        ),
        (
            "listDegradedCompactions",
            vec![ws.clone(), common::js(&json!({ "agent_id": 1 }))],
        ),
        (
            "compactionPreimage",
            vec![
                ws.clone(),
                common::on(KEY, json!({ "compaction_id": null })),
            ],
        ),
        (
            "setRepairStatus",
            vec![
                ws.clone(),
                common::on(KEY, json!({ "compaction_id": "cmp", "status": 1 })),
            ],
        ),
        (
            "setFlushReceipt",
            vec![
                ws.clone(),
                common::on(KEY, json!({ "compaction_id": "cmp" })),
            ],
        ),
    ];
    for (method, args) in cases {
        let (code, message) = rejection(&spool, method, &args).await;
        assert_eq!(code, "invalid_argument", "{method}({args:?}): {message}");
    }
    // Nothing above wrote.
    let session = ok(&spool, "getSession", &[ws, common::on(KEY, json!({}))]).await;
    assert_eq!(session["compaction_count"], 0);
    assert_eq!(session["entry_count"], 20);
}

/// Calls `spool.onProgress(callback)`, which returns nothing.
fn on_progress(spool: &JsValue, callback: &JsValue) {
    let method: js_sys::Function = js_sys::Reflect::get(spool, &"onProgress".into())
        .expect("lookup")
        .into();
    method.call1(spool, callback).expect("onProgress");
}

#[wasm_bindgen_test]
async fn test_on_progress_sees_the_compaction_read_its_entries() {
    let spool = fresh("progress").await;
    twenty_long_entries(&spool).await;
    let reports = js_sys::Array::new();
    let push = js_sys::Function::new_with_args("p", "this.push(p)").bind0(&reports);
    on_progress(&spool, &push);
    let args = common::on(
        KEY,
        json!({ "request": { "context_window_tokens": 1000 }, "now_ms": 9000 }),
    );
    let result = ok(&spool, "compact", &[WS.into(), args]).await;
    assert!(result["removed_count"].as_u64() > Some(0), "{result}");
    let seen = common::json(reports.clone().into());
    for phase in ["compact: plan", "compact: read"] {
        let last = seen
            .as_array()
            .expect("reports")
            .iter()
            .rfind(|p| p["phase"] == phase)
            .unwrap_or_else(|| panic!("no {phase} in {seen}"));
        assert_eq!(
            (&last["workspace"], &last["done"], &last["total"]),
            (&json!(WS), &json!(20), &json!(20)),
            "{seen}"
        );
    }
    // `null` stops it; a function is required otherwise.
    on_progress(&spool, &JsValue::NULL);
    reports.set_length(0);
    let args = common::on(
        KEY,
        json!({ "request": { "context_window_tokens": 500 }, "now_ms": 9500 }),
    );
    ok(&spool, "compact", &[WS.into(), args]).await;
    assert_eq!(reports.length(), 0);
    let method: js_sys::Function = js_sys::Reflect::get(&spool, &"onProgress".into())
        .expect("lookup")
        .into();
    let thrown = method
        .call1(&spool, &JsValue::from(5))
        .expect_err("a number");
    assert_eq!(common::code(&thrown), "invalid_argument");
}
