//! Data written by older releases opens and reads forward, in a real browser: a database
//! at IndexedDB schema version 1 upgrades in place, and a dump of record format 1 (the
//! checked-in fixture of the previous release) reads through the JS API with the new
//! fields at their documented defaults.
#![cfg(target_arch = "wasm32")]

mod common;

use common::ok;

use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use js_sys::{Array, Uint8Array};
use serde::Deserialize;
use serde_json::json;
use spool::{AsyncStorage, Batch, ResetArchive};
use spool_web::IdbStorage;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// The previous release's database, as `spool` dumped it: every pair of every workspace.
const KV_DUMP: &str = include_str!("../../tests/fixtures/format-v1/kv-dump.json");

#[derive(Deserialize)]
struct Dump {
    format_version: u32,
    pairs: Vec<Pair>,
}

#[derive(Deserialize)]
struct Pair {
    workspace: String,
    key: String,
    value: String,
}

fn unhex(text: &str) -> Vec<u8> {
    if text.is_empty() {
        // An empty value (an index entry).
        return Vec::new();
    }
    spool::validate::unhex("fixture", text).expect("the fixture is hex")
}

/// The database of the release before the entry clock (record formats 2 and 3), with
/// transcripts out of insertion order.
const KV_DUMP_V3: &str = include_str!("../../tests/fixtures/format-v3/kv-dump.json");

/// Writes the dump into the database `name` through `IdbStorage::commit`, one batch of
/// puts per workspace.
async fn restore(name: &str) {
    restore_dump(name, KV_DUMP, 1).await;
}

async fn restore_dump(name: &str, text: &str, format_version: u32) {
    let dump: Dump = serde_json::from_str(text).expect("the fixture parses");
    assert_eq!(dump.format_version, format_version);
    let storage = IdbStorage::open(name).await.expect("open");
    let mut batches: Vec<(String, Batch)> = Vec::new();
    for pair in dump.pairs {
        if batches.last().is_none_or(|(ws, _)| *ws != pair.workspace) {
            batches.push((pair.workspace.clone(), Batch::default()));
        }
        if let Some((_, batch)) = batches.last_mut() {
            batch.put(unhex(&pair.key), unhex(&pair.value));
        }
    }
    for (workspace, batch) in batches {
        storage.commit(&workspace, batch).await.expect("restore");
    }
    storage.close();
}

#[wasm_bindgen_test]
async fn test_format_v1_fixture_reads_forward_through_the_js_api() {
    let name = common::db_name("migration", "fixture");
    restore(&name).await;
    let spool = common::open(&name).await;
    let key = "agent:demo:main";

    let list = ok(
        &spool,
        "listSessions",
        &["default".into(), common::js(&json!({ "limit": 10 }))],
    )
    .await;
    let sessions = list["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{list}");
    let session = &sessions[0];
    assert_eq!(session["key"], key);
    assert_eq!(session["entry_count"], 6);
    assert_eq!(session["total_tokens"], 345);
    // Fields format 1 did not have read as their documented defaults.
    assert_eq!(session["cost_source"], "none");
    for counter in [
        "input_tokens",
        "output_tokens",
        "cache_read",
        "cache_write",
        "estimated_cost_usd",
        "total_cost_usd",
        "billed_cost_usd",
        "estimated_cost_component_usd",
        "missing_cost_entries",
        "compaction_count",
        "last_state_id",
    ] {
        assert_eq!(session[counter], 0, "{counter}");
    }
    assert_eq!(session["model_config"], json!({}));
    assert_eq!(session["metadata"], json!({}));
    assert_eq!(session["model"], serde_json::Value::Null);
    assert_eq!(session["ended_at"], serde_json::Value::Null);
    assert_eq!(session["message_index"], false);

    let list = ok(
        &spool,
        "listSessions",
        &["team-b".into(), common::js(&json!({ "limit": 10 }))],
    )
    .await;
    assert_eq!(list["sessions"][0]["key"], "agent:reviewer:pr-42");
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1));

    let request = common::on(key, json!({ "request": { "limit": 100 } }));
    let page = ok(&spool, "readPage", &["default".into(), request]).await;
    let entries = page["entries"].as_array().expect("entries");
    let ids: Vec<_> = entries.iter().map(|e| e["id"].clone()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6].map(|i| json!(i)));
    assert_eq!(entries[0]["role"], "user");
    assert_eq!(entries[0]["turn_usage"], serde_json::Value::Null);
    assert!(
        entries[1]["tool_calls"].is_array(),
        "{}",
        entries[1]["tool_calls"]
    );

    let old = &entries[2];
    let message_id = old["message_id"].as_str().expect("a message id");
    let args = [
        "default".into(),
        common::on(key, json!({ "message_id": message_id })),
    ];
    let found = ok(&spool, "getEntry", &args).await;
    assert_eq!(&found, old);
    assert_eq!(
        ok(
            &spool,
            "countEntries",
            &["default".into(), common::on(key, json!({}))]
        )
        .await,
        6
    );

    let request = json!({ "role": "user", "content": "and now?", "token_count": 5 });
    let args = json!({ "request": request, "now_ms": 1_795_966_600_000_u64 });
    let args = ["default".into(), common::on(key, args)];
    let entry = ok(&spool, "appendEntry", &args).await;
    assert_eq!(entry["id"], 7);
    let args = [
        "default".into(),
        common::on(key, json!({ "message_id": entry["message_id"] })),
    ];
    assert_eq!(ok(&spool, "getEntry", &args).await, entry);
    let session = ok(
        &spool,
        "getSession",
        &["default".into(), common::on(key, json!({}))],
    )
    .await;
    assert_eq!(session["entry_count"], 7);
    assert_eq!(session["total_tokens"], 350);
    drop(common::start(&spool, "close", &[]));
}

/// Every id of `key`'s transcript in `order`, by pages of 2.
async fn read_ids(spool: &JsValue, key: &str, order: &str) -> Vec<u64> {
    read_ids_with(spool, "readPage", key, order).await
}

/// Every id `method` (`readPage` or `readCanonicalPage`) reads of `key` in `order`, by
/// pages of 2.
async fn read_ids_with(spool: &JsValue, method: &str, key: &str, order: &str) -> Vec<u64> {
    let (mut ids, mut cursor) = (Vec::new(), serde_json::Value::Null);
    loop {
        let request = json!({ "order": order, "limit": 2, "cursor": cursor });
        let args = common::on(key, json!({ "request": request }));
        let page = ok(spool, method, &["default".into(), args]).await;
        let entries = page["entries"].as_array().expect("entries");
        ids.extend(entries.iter().map(|e| e["id"].as_u64().expect("id")));
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            return ids;
        }
    }
}

async fn assert_reads(spool: &JsValue, key: &str, expected: &[u64]) {
    assert_eq!(
        read_ids(spool, key, "oldest_first").await,
        expected,
        "{key}"
    );
    let mut newest_first = read_ids(spool, key, "newest_first").await;
    newest_first.reverse();
    assert_eq!(newest_first, expected, "{key}, newest first");
}

#[wasm_bindgen_test]
async fn test_format_v3_fixture_reads_in_stored_order_and_appends_after_every_entry() {
    let name = common::db_name("migration", "fixture-v3");
    restore_dump(&name, KV_DUMP_V3, 3).await;
    let spool = common::open(&name).await;
    let (main, branch) = ("agent:demo:main", "agent:demo:branch");
    assert_reads(&spool, main, &[6, 2, 4, 1, 5, 3]).await;
    assert_reads(&spool, branch, &[2, 4, 1, 5, 6, 3]).await;
    // A clock behind every stored entry: the entry goes last, its time raised.
    for (key, expected) in [
        (main, vec![6, 2, 4, 1, 5, 3, 7]),
        (branch, vec![2, 4, 1, 5, 6, 3, 7]),
    ] {
        let request = json!({ "role": "user", "content": "late" });
        let args = [
            "default".into(),
            common::on(key, json!({ "request": request, "now_ms": 1_500 })),
        ];
        let entry = ok(&spool, "appendEntry", &args).await;
        assert_eq!(
            (&entry["id"], &entry["created_at"]),
            (&json!(7), &json!(7_000))
        );
        assert_reads(&spool, key, &expected).await;
    }
    drop(common::start(&spool, "close", &[]));
}

/// The database of the release before compaction boundaries (session record format 4:
/// compacted entries moved to the archive range, a branch holding its own copy, a late
/// branch reading its parent's history).
const KV_DUMP_V4: &str = include_str!("../../tests/fixtures/format-v4/kv-dump.json");

#[wasm_bindgen_test]
async fn test_format_v4_fixture_reads_compacts_and_deletes_over_moved_archives() {
    let name = common::db_name("migration", "fixture-v4");
    restore_dump(&name, KV_DUMP_V4, 4).await;
    let spool = common::open(&name).await;
    let (main, late) = ("agent:demo:main", "agent:demo:late");
    let every: Vec<u64> = (1..=38).collect();
    assert_reads(&spool, main, &[34, 35, 36, 37, 38]).await;
    assert_eq!(
        read_ids_with(&spool, "readCanonicalPage", main, "oldest_first").await,
        every
    );
    let late_canonical = read_ids_with(&spool, "readCanonicalPage", late, "oldest_first").await;
    assert_eq!(late_canonical.len(), 39);
    // A compaction of this build archives by moving the active start.
    let args = common::on(
        main,
        json!({ "request": { "context_window_tokens": 400 }, "now_ms": 9_000_000 }),
    );
    let result = ok(&spool, "compact", &["default".into(), args]).await;
    assert_eq!(result["removed_count"], 3, "{result}");
    assert_reads(&spool, main, &[37, 38]).await;
    let mut canonical = read_ids_with(&spool, "readCanonicalPage", main, "newest_first").await;
    canonical.reverse();
    assert_eq!(canonical, every);
    // Deleting the parent leaves the late branch reading exactly what it read.
    let args = common::on(main, json!({}));
    ok(&spool, "deleteSession", &["default".into(), args]).await;
    assert_eq!(
        read_ids_with(&spool, "readCanonicalPage", late, "oldest_first").await,
        late_canonical
    );
    assert_reads(&spool, late, &[34, 35, 36, 37, 38, late_canonical[38]]).await;
    drop(common::start(&spool, "close", &[]));
}

/// A key of the v1 `kv` store, encoded by hand the way schema version 1 stored it.
fn v1_key(workspace: &str, key: &[u8]) -> JsValue {
    Array::of2(&workspace.into(), &Uint8Array::from(key)).into()
}

#[wasm_bindgen_test]
async fn test_schema_v1_database_upgrades_to_v2_keeping_its_data() {
    let name = common::db_name("migration", "schema_v1");
    // What a previous release created: schema version 1, the `kv` store only.
    let db = Database::open(name.as_str())
        .with_version(1_u32)
        .with_on_upgrade_needed(|_, db| db.create_object_store("kv").build().map(drop))
        .await
        .expect("open at version 1");
    assert_eq!(db.version(), 1.0);
    {
        let tx = db
            .transaction("kv")
            .with_mode(TransactionMode::Readwrite)
            .build()
            .expect("transaction");
        let store = tx.object_store("kv").expect("kv store");
        store
            .put(JsValue::from(Uint8Array::from(&b"v1 value"[..])))
            .with_key(v1_key("ws", b"k"))
            .without_key_type()
            .primitive()
            .expect("put");
        tx.commit().await.expect("commit");
    }
    db.close();

    let storage = IdbStorage::open(&name)
        .await
        .expect("reopen with this build");
    assert_eq!(
        storage.get("ws", b"k").await.expect("get"),
        Some(b"v1 value".to_vec())
    );
    let archive = ResetArchive {
        session_key: "agent:a:a".into(),
        session_id: "s1".into(),
        epoch: 0,
        archived_at: 42,
        transcript_entries: Vec::new(),
        summaries: vec![json!({ "compaction_id": "c1" })],
    };
    storage
        .write_archive("ws", &archive)
        .await
        .expect("the archive store exists after the upgrade");
    // Writing the same generation again (a retried reset) replaces it.
    storage.write_archive("ws", &archive).await.expect("again");
    let record = spool::ArchivedReset {
        session_key: "agent:a:a".into(),
        session_id: "s1".into(),
        epoch: 0,
        archived_at: 42,
        transcript_entries: 0,
        summaries: 1,
    };
    assert_eq!(
        storage
            .recorded_archives("ws", "agent:a:a", &[record])
            .await
            .expect("archives"),
        vec![archive]
    );
    storage.close();

    let db = Database::open(name.as_str()).await.expect("open as is");
    assert_eq!(db.version(), f64::from(spool_web::SCHEMA_VERSION));
    let stores: Vec<String> = db.object_store_names().collect();
    assert_eq!(stores, ["archives", "kv"]);
    db.close();
}

#[wasm_bindgen_test]
async fn test_archive_write_failure_is_reported_not_thrown() {
    let storage = IdbStorage::open(&common::db_name("migration", "archive_closed"))
        .await
        .expect("open");
    storage.close();
    let archive = ResetArchive {
        session_key: "agent:a:a".into(),
        session_id: "s1".into(),
        epoch: 0,
        archived_at: 1,
        transcript_entries: Vec::new(),
        summaries: Vec::new(),
    };
    let error = storage
        .write_archive("ws", &archive)
        .await
        .expect_err("a closed database keeps nothing");
    assert!(error.contains("archive"), "{error}");
}
