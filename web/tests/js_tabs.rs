//! Several `Spool`s on one database, as several tabs hold them: writes from one reach the
//! others' `onChange`, and concurrent appends lose nothing.
#![cfg(target_arch = "wasm32")]

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use serde_json::json;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const WS: &str = "tabs";
const KEY: &str = "agent:tabs:main";

/// Lets queued messages (BroadcastChannel delivers asynchronously) arrive.
async fn settle() {
    let wait = Promise::new(&mut |resolve, _| {
        let set_timeout: Function = Reflect::get(&js_sys::global(), &"setTimeout".into())
            .expect("setTimeout")
            .dyn_into()
            .expect("a function");
        set_timeout
            .call2(&JsValue::UNDEFINED, &resolve, &JsValue::from(50))
            .expect("setTimeout()");
    });
    JsFuture::from(wait).await.expect("timer");
}

fn on_change(spool: &JsValue, seen: &Rc<RefCell<Vec<String>>>) -> Closure<dyn FnMut(JsValue)> {
    let seen = Rc::clone(seen);
    let callback = Closure::<dyn FnMut(JsValue)>::new(move |change: JsValue| {
        let workspace = Reflect::get(&change, &"workspace".into())
            .ok()
            .and_then(|w| w.as_string())
            .unwrap_or_default();
        seen.borrow_mut().push(workspace);
    });
    let method: Function = Reflect::get(spool, &"onChange".into())
        .expect("onChange")
        .dyn_into()
        .expect("a method");
    method
        .call1(spool, callback.as_ref())
        .expect("onChange(callback)");
    callback
}

#[wasm_bindgen_test]
async fn test_a_write_in_one_tab_notifies_the_others_but_not_itself() {
    let name = common::db_name("tabs", "notify");
    let (a, b) = (common::open(&name).await, common::open(&name).await);
    let (seen_a, seen_b) = (Rc::default(), Rc::default());
    let _keep_a = on_change(&a, &seen_a);
    let _keep_b = on_change(&b, &seen_b);
    let options = common::on(KEY, json!({ "session_id": "s", "now_ms": 1 }));
    common::call(&b, "createSession", &[WS.into(), options])
        .await
        .expect("createSession");
    // A read writes nothing and tells nobody.
    common::call(&b, "getSession", &[WS.into(), common::on(KEY, json!({}))])
        .await
        .expect("getSession");
    settle().await;
    assert_eq!(*seen_a.borrow(), [WS.to_owned()]);
    assert!(
        seen_b.borrow().is_empty(),
        "the writer is not told about its own write"
    );
    // `null` stops the notices.
    let method: Function = Reflect::get(&a, &"onChange".into())
        .expect("onChange")
        .dyn_into()
        .expect("fn");
    method.call1(&a, &JsValue::NULL).expect("onChange(null)");
    let request = json!({ "role": "user", "content": "hi" });
    common::call(
        &b,
        "appendEntry",
        &[WS.into(), common::on(KEY, json!({ "request": request }))],
    )
    .await
    .expect("appendEntry");
    settle().await;
    assert_eq!(seen_a.borrow().len(), 1);
}

#[wasm_bindgen_test]
async fn test_two_tabs_appending_at_once_lose_nothing() {
    let name = common::db_name("tabs", "concurrent");
    let (a, b) = (common::open(&name).await, common::open(&name).await);
    let options = common::on(KEY, json!({ "session_id": "s", "now_ms": 1 }));
    common::call(&a, "createSession", &[WS.into(), options])
        .await
        .expect("createSession");
    // Start every append before awaiting any: the two "tabs" interleave freely.
    let per_tab = 40;
    let mut pending = Vec::new();
    for i in 0..per_tab {
        for (tab, spool) in [("a", &a), ("b", &b)] {
            let request = json!({ "role": "user", "content": format!("{tab} {i}") });
            pending.push(common::start(
                spool,
                "appendEntry",
                &[WS.into(), common::on(KEY, json!({ "request": request }))],
            ));
        }
    }
    for promise in pending {
        JsFuture::from(promise).await.expect("every append lands");
    }
    let count = common::call(&b, "countEntries", &[WS.into(), common::on(KEY, json!({}))])
        .await
        .expect("countEntries");
    assert_eq!(count.as_f64(), Some(f64::from(per_tab * 2)));
}

#[wasm_bindgen_test]
async fn test_tabs_creating_sessions_at_once_each_get_keys_of_their_own() {
    let name = common::db_name("tabs", "data_ids");
    let (a, b) = (common::open(&name).await, common::open(&name).await);
    // 240 sessions, their ids spread like random ones: their two-character data ids
    // collide, and the two tabs race to claim them.
    let per_tab = 120u64;
    let key = |n: u64| format!("agent:tabs:s{n}");
    let mut pending = Vec::new();
    for i in 0..per_tab {
        for (tab, spool) in [(0, &a), (1, &b)] {
            let n = tab * per_tab + i;
            let spread = (n + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let session_id = format!("{spread:016x}-{tab}");
            let options = common::on(&key(n), json!({ "session_id": session_id, "now_ms": 1 }));
            pending.push(common::start(spool, "createSession", &[WS.into(), options]));
        }
    }
    for promise in pending.drain(..) {
        JsFuture::from(promise).await.expect("every create lands");
    }
    for n in 0..2 * per_tab {
        let spool = if n % 2 == 0 { &a } else { &b };
        let request = json!({ "role": "user", "content": format!("only in {n}") });
        pending.push(common::start(
            spool,
            "appendEntry",
            &[
                WS.into(),
                common::on(&key(n), json!({ "request": request })),
            ],
        ));
    }
    for promise in pending {
        JsFuture::from(promise).await.expect("every append lands");
    }
    let storage = spool_web::IdbStorage::open(&name).await.expect("open");
    let mut ids = std::collections::BTreeSet::new();
    for n in 0..2 * per_tab {
        let request = json!({ "request": { "order": "oldest_first", "limit": 10 } });
        let page = common::json(
            common::call(&a, "readPage", &[WS.into(), common::on(&key(n), request)])
                .await
                .expect("readPage"),
        );
        let contents: Vec<&str> = page["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["content"].as_str().expect("content"))
            .collect();
        assert_eq!(contents, [format!("only in {n}")], "{}", key(n));
        let id = spool::run_async(&storage, spool::session_data_id(WS, &key(n)))
            .await
            .expect("read")
            .expect("the session");
        assert!(ids.insert(id.clone()), "{id} names two identities");
    }
    assert!(ids.iter().any(|id| id.len() > 3), "some ids collided");
}

/// One tab streams an answer (`beginEntry`, `updateEntry`, `settleEntry`); the other is
/// told of each write and reads the entry as it grows, then complete.
#[wasm_bindgen_test]
async fn test_a_tab_sees_an_answer_another_tab_streams_grow() {
    let name = common::db_name("tabs", "stream");
    let (writer, reader) = (common::open(&name).await, common::open(&name).await);
    let seen = Rc::default();
    let _keep = on_change(&reader, &seen);
    let options = common::on(KEY, json!({ "session_id": "s", "now_ms": 1 }));
    common::call(&writer, "createSession", &[WS.into(), options])
        .await
        .expect("createSession");
    let request =
        json!({ "role": "assistant", "content": "", "turn_id": "t1", "message_id": "m-1" });
    common::call(
        &writer,
        "beginEntry",
        &[WS.into(), common::on(KEY, json!({ "request": request }))],
    )
    .await
    .expect("beginEntry");
    let read = || async {
        let entry = common::call(
            &reader,
            "getEntry",
            &[WS.into(), common::on(KEY, json!({ "message_id": "m-1" }))],
        )
        .await
        .expect("getEntry");
        common::json(entry)
    };
    let mut so_far = String::new();
    for word in ["Looking ", "at ", "the ", "tests."] {
        so_far.push_str(word);
        let update = json!({ "message_id": "m-1", "content": so_far });
        let before = seen.borrow().len();
        common::call(
            &writer,
            "updateEntry",
            &[WS.into(), common::on(KEY, json!({ "update": update }))],
        )
        .await
        .expect("updateEntry");
        settle().await;
        assert!(
            seen.borrow().len() > before,
            "the reader is told of the update"
        );
        let entry = read().await;
        assert_eq!(
            (&entry["content"], &entry["status"]),
            (&json!(so_far), &json!("in_progress")),
            "{entry}"
        );
    }
    let update = json!({ "message_id": "m-1",
        "turn_usage": { "model": "m", "input_tokens": 7, "output_tokens": 4 } });
    common::call(
        &writer,
        "settleEntry",
        &[WS.into(), common::on(KEY, json!({ "update": update }))],
    )
    .await
    .expect("settleEntry");
    settle().await;
    let entry = read().await;
    assert_eq!(entry["content"], "Looking at the tests.", "{entry}");
    assert!(entry.get("status").is_none(), "{entry}");
    let session = common::json(
        common::call(
            &reader,
            "getSession",
            &[WS.into(), common::on(KEY, json!({}))],
        )
        .await
        .expect("getSession"),
    );
    assert_eq!(
        (&session["input_tokens"], &session["output_tokens"]),
        (&json!(7), &json!(4))
    );
}

#[wasm_bindgen_test]
async fn test_a_tab_reads_what_another_wrote_once_it_let_the_lock_go() {
    let name = common::db_name("tabs", "known");
    let spool = common::open(&name).await;
    let options = common::on(KEY, json!({ "session_id": "s", "now_ms": 1 }));
    common::call(&spool, "createSession", &[WS.into(), options])
        .await
        .expect("createSession");
    let append = |content: &str| {
        let request = json!({ "role": "user", "content": content });
        JsFuture::from(common::start(
            &spool,
            "appendEntry",
            &[WS.into(), common::on(KEY, json!({ "request": request }))],
        ))
    };
    append("ours").await.expect("appendEntry");
    // Idle: the tab lets the Web Lock go, and another tab writes.
    settle().await;
    let other = spool_web::IdbStorage::open(&name).await.expect("open");
    let request = spool::AppendRequest::new(spool::Role::User, "theirs".to_owned());
    spool::run_async(&other, spool::append_entry(WS, KEY, request, 5))
        .await
        .expect("their append");
    // What this tab knew from before is not trusted any more.
    let session = common::json(
        common::call(
            &spool,
            "getSession",
            &[WS.into(), common::on(KEY, json!({}))],
        )
        .await
        .expect("getSession"),
    );
    assert_eq!(session["entry_count"], 2, "{session}");
    let entry = common::json(append("ours again").await.expect("appendEntry"));
    assert_eq!(entry["id"], 3, "{entry}");
}

#[wasm_bindgen_test]
async fn test_a_tab_steps_aside_for_a_schema_change_and_opens_again() {
    let name = common::db_name("tabs", "version_change");
    let spool = common::open(&name).await;
    let options = || common::on(KEY, json!({ "session_id": "s", "now_ms": 1 }));
    common::call(&spool, "createSession", &[WS.into(), options()])
        .await
        .expect("createSession");
    // Another tab deletes the database: the open connection must not block it …
    spool_web::IdbStorage::delete(&name)
        .await
        .expect("the deletion is not blocked");
    // … and the next call opens it again (empty now) instead of failing.
    let gone = common::call(
        &spool,
        "getSession",
        &[WS.into(), common::on(KEY, json!({}))],
    )
    .await
    .expect("getSession after the deletion");
    assert!(gone.is_null());
    common::call(&spool, "createSession", &[WS.into(), options()])
        .await
        .expect("createSession again");

    // A newer build upgrades the schema: this one cannot open it again, and says so.
    let newer = indexed_db_futures::database::Database::open(name.as_str())
        .with_version(spool_web::SCHEMA_VERSION + 1)
        .await
        .expect("the upgrade is not blocked");
    let err = common::call(
        &spool,
        "getSession",
        &[WS.into(), common::on(KEY, json!({}))],
    )
    .await
    .expect_err("a newer schema");
    let code = Reflect::get(&err, &"code".into()).expect("code");
    assert_eq!(code.as_string().as_deref(), Some("storage"));
    let message = Reflect::get(&err, &"message".into()).expect("message");
    assert!(
        message
            .as_string()
            .unwrap_or_default()
            .contains("reload the page"),
        "{message:?}"
    );
    newer.close();
}

/// Pages `order` from `cursor` once: the page's entry ids and cursors.
async fn read_page(
    spool: &JsValue,
    order: &str,
    cursor: Option<String>,
) -> (Vec<serde_json::Value>, Option<String>) {
    let request = common::on(
        KEY,
        json!({ "request": { "order": order, "limit": 7, "cursor": cursor } }),
    );
    let page = common::json(
        common::call(spool, "readPage", &[WS.into(), request])
            .await
            .expect("readPage"),
    );
    let entries = page["entries"].as_array().cloned().expect("entries");
    (entries, page["next_cursor"].as_str().map(str::to_owned))
}

fn id(entry: &serde_json::Value) -> u64 {
    entry["id"].as_u64().expect("an id")
}

#[wasm_bindgen_test]
async fn test_tabs_appending_with_skewed_clocks_keep_insertion_order_for_cursor_readers() {
    let name = common::db_name("tabs", "order");
    let (writers, each) = (4_u64, 25_u64);
    let mut tabs = Vec::new();
    for _ in 0..writers + 1 {
        tabs.push(common::open(&name).await);
    }
    let reader = tabs.pop().expect("the reader's tab");
    let options = common::on(KEY, json!({ "session_id": "s", "now_ms": 1 }));
    common::call(&reader, "createSession", &[WS.into(), options])
        .await
        .expect("createSession");
    // Each tab appends in turn with its own clock, seconds behind or ahead of the others.
    let finished = Rc::new(RefCell::new(0_u64));
    for (w, tab) in (0_u64..).zip(tabs) {
        let finished = Rc::clone(&finished);
        wasm_bindgen_futures::spawn_local(async move {
            let skew = [3_000, 0, 5_000, 1_000][w as usize % 4];
            for i in 0..each {
                let request = json!({ "role": "user", "content": format!("w{w}-{i}") });
                let args = json!({ "request": request, "now_ms": 1_000_000 + 10 * i + skew });
                common::call(&tab, "appendEntry", &[WS.into(), common::on(KEY, args)])
                    .await
                    .expect("appendEntry");
            }
            *finished.borrow_mut() += 1;
        });
    }
    // An oldest-first reader following the tail, and newest-first passes, while the tabs
    // write: each sees every entry once, ids strictly increasing in insertion order.
    let mut oldest: Vec<u64> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut passes = 0;
    loop {
        let done = *finished.borrow() == writers;
        let (entries, next) = read_page(&reader, "oldest_first", cursor.clone()).await;
        oldest.extend(entries.iter().map(id));
        if let Some(last) = entries.last() {
            let position =
                spool::keys::position(last["created_at"].as_u64().expect("created_at"), id(last));
            cursor = Some(spool::validate::hex(&position));
        }
        if next.is_none() {
            let session = common::json(
                common::call(
                    &reader,
                    "getSession",
                    &[WS.into(), common::on(KEY, json!({}))],
                )
                .await
                .expect("getSession"),
            );
            let before = session["last_entry_id"].as_u64().expect("last_entry_id");
            let mut newest = Vec::new();
            let mut back = None;
            loop {
                let (entries, next) = read_page(&reader, "newest_first", back.take()).await;
                newest.extend(entries.iter().map(id));
                match next {
                    Some(next) => back = Some(next),
                    None => break,
                }
            }
            assert!(newest.windows(2).all(|w| w[0] > w[1]), "{newest:?}");
            let old: Vec<u64> = newest.into_iter().filter(|i| *i <= before).collect();
            assert_eq!(old, (1..=before).rev().collect::<Vec<_>>());
            passes += 1;
            if done {
                break;
            }
        }
    }
    assert!(passes > 1, "the readers ran beside the writers");
    assert_eq!(oldest, (1..=writers * each).collect::<Vec<_>>());
    let canonical = common::json(
        common::call(
            &reader,
            "canonicalTranscript",
            &[WS.into(), common::on(KEY, json!({}))],
        )
        .await
        .expect("canonicalTranscript"),
    );
    let ids: Vec<u64> = canonical
        .as_array()
        .expect("entries")
        .iter()
        .map(id)
        .collect();
    assert_eq!(ids, (1..=writers * each).collect::<Vec<_>>());
}
