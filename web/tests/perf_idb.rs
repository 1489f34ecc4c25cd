//! Throughput and latency of the browser host on IndexedDB, in a real browser. Ignored by
//! default (it takes a while); run it with `-- --include-ignored`, preferably with
//! `--release`. It prints what it measures, including the raw IndexedDB round trips that
//! bound an append, and checks the goals: ≥ 1000 appends/s and the newest page of a
//! 10,000-entry session in ≤ 20 ms.
#![cfg(target_arch = "wasm32")]

mod common;

use js_sys::Reflect;
use serde_json::json;
use spool::{AppendRequest, AsyncStorage, Batch, Order, PageRequest, Role};
use spool_web::IdbStorage;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::{console_log, wasm_bindgen_test};

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "perf";
const KEY: &str = "agent:perf:main";
const ENTRIES: u64 = 10_000;

/// `performance.now()`, in ms.
fn now() -> f64 {
    let performance = Reflect::get(&js_sys::global(), &"performance".into()).expect("performance");
    let now: js_sys::Function = Reflect::get(&performance, &"now".into())
        .expect("performance.now")
        .into();
    now.call0(&performance)
        .expect("now()")
        .as_f64()
        .expect("a number")
}

/// Prints the cost of the storage calls an append is made of.
async fn raw_round_trips(storage: &IdbStorage) {
    let n = 250u8;
    let start = now();
    for _ in 0..n {
        storage.get(WS, b"missing").await.expect("get");
    }
    console_log!("raw get: {:.3} ms", (now() - start) / f64::from(n));
    let start = now();
    for i in 0..n {
        let mut batch = Batch::default();
        batch.put(vec![1, i], vec![0; 200]);
        storage.commit(WS, batch).await.expect("commit");
    }
    console_log!(
        "raw commit of one put: {:.3} ms",
        (now() - start) / f64::from(n)
    );
    let start = now();
    for i in 0..n {
        let mut batch = Batch::default();
        batch.require_absent(vec![9]);
        batch.put(vec![2, i], vec![0; 200]);
        batch.put(vec![3, i], vec![0; 200]);
        storage.commit(WS, batch).await.expect("commit");
    }
    console_log!(
        "raw commit with a precondition: {:.3} ms",
        (now() - start) / f64::from(n)
    );
}

#[wasm_bindgen_test]
#[ignore = "slow; run with --include-ignored"]
async fn test_perf_appends_and_newest_page() {
    let storage = IdbStorage::open(&common::db_name("perf", "core"))
        .await
        .expect("open");
    raw_round_trips(&storage).await;
    spool::run_async(&storage, spool::create_session(WS, KEY, "s", 1))
        .await
        .expect("create");
    let start = now();
    for i in 0..ENTRIES {
        let request = AppendRequest::new(Role::User, format!("message {i} with some text"));
        // As the JS API runs them: reads and commit share one transaction.
        spool::run_async(
            &storage.attempt(),
            spool::append_entry(WS, KEY, request, 2 + i),
        )
        .await
        .expect("append");
    }
    let elapsed = now() - start;
    let rate = ENTRIES as f64 / (elapsed / 1000.0);
    console_log!("core on IndexedDB: {ENTRIES} appends in {elapsed:.0} ms = {rate:.0}/s");

    let mut worst: f64 = 0.0;
    for _ in 0..5 {
        let request = PageRequest {
            order: Order::NewestFirst,
            cursor: None,
            limit: 50,
        };
        let start = now();
        let page = spool::run_async(&storage, spool::read_page(WS, KEY, request))
            .await
            .expect("read");
        worst = worst.max(now() - start);
        assert_eq!(page.entries.len(), 50);
        assert_eq!(page.entries[0].id, ENTRIES);
    }
    console_log!("newest page of 50 out of {ENTRIES}: worst of 5 = {worst:.1} ms");

    let spool = common::open(&common::db_name("perf", "js")).await;
    let options = common::js(&json!({ "sessionId": "s", "nowMs": 1 }));
    common::call(&spool, "createSession", &[WS.into(), KEY.into(), options])
        .await
        .expect("createSession");
    let request = common::js(&json!({ "role": "user", "content": "hello from JS" }));
    let calls = 1000u32;
    let start = now();
    for _ in 0..calls {
        let args = [WS.into(), KEY.into(), request.clone(), JsValue::UNDEFINED];
        common::call(&spool, "appendEntry", &args)
            .await
            .expect("appendEntry");
    }
    let js_elapsed = now() - start;
    let js_rate = f64::from(calls) / (js_elapsed / 1000.0);
    console_log!("JS API: {calls} appendEntry calls in {js_elapsed:.0} ms = {js_rate:.0}/s");

    assert!(
        worst <= 20.0,
        "the newest page took {worst:.1} ms (goal: 20)"
    );
    assert!(rate >= 1000.0, "{rate:.0} appends/s (goal: 1000)");
}

#[wasm_bindgen_test]
async fn test_probe_shared_transaction_reuse() {
    let storage = IdbStorage::open(&common::db_name("perf", "probe"))
        .await
        .expect("open");
    let attempt = storage.attempt();
    let start = now();
    for i in 0..200u8 {
        attempt.get(WS, &[i]).await.expect("get");
    }
    console_log!("200 gets through one attempt: {:.3} ms each", (now() - start) / 200.0);
    let start = now();
    for i in 0..200u8 {
        storage.get(WS, &[i]).await.expect("get");
    }
    console_log!("200 gets, one transaction each: {:.3} ms each", (now() - start) / 200.0);
}
