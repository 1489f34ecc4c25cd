//! The storage conformance suite against IndexedDB, in a real browser; plus the parts
//! of `IdbStorage` the suite does not reach (schema version, `versionchange`).
#![cfg(target_arch = "wasm32")]

mod common;
#[path = "../../tests/conformance/mod.rs"]
mod conformance;

use spool::{AsyncStorage, Batch, StorageError};
use spool_web::IdbStorage;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

struct IndexedDb;

impl conformance::Backend for IndexedDb {
    type Store = IdbStorage;

    async fn open(&self, name: &str) -> IdbStorage {
        IdbStorage::open(&common::db_name("conformance", name))
            .await
            .expect("open IndexedDB")
    }
}

conformance_tests!(wasm, IndexedDb);

#[wasm_bindgen_test]
async fn test_schema_version_is_the_number_of_upgrade_steps() {
    assert_eq!(spool_web::SCHEMA_VERSION, 1);
    assert_eq!(spool_web::STORE, "kv");
}

#[wasm_bindgen_test]
async fn test_version_change_closes_the_connection_instead_of_blocking() {
    let name = common::db_name("idb", "version_change");
    let store = IdbStorage::open(&name).await.expect("open");
    let mut batch = Batch::default();
    batch.put(b"k".to_vec(), b"v".to_vec());
    store.commit("ws", batch).await.expect("commit");
    // Deleting needs every connection closed: the open one must step aside.
    IdbStorage::delete(&name)
        .await
        .expect("delete is not blocked");
    match store.get("ws", b"k").await {
        Err(StorageError::Backend(cause)) => assert!(cause.contains("closed"), "{cause}"),
        other => panic!("a closed connection answered {other:?}"),
    }
    let reopened = IdbStorage::open(&name).await.expect("reopen");
    assert_eq!(reopened.get("ws", b"k").await.expect("get"), None);
}

#[wasm_bindgen_test]
async fn test_closed_storage_fails_with_backend_error() {
    let store = IdbStorage::open(&common::db_name("idb", "closed"))
        .await
        .expect("open");
    store.close();
    store.close();
    assert!(matches!(
        store.commit("ws", Batch::default()).await,
        Err(StorageError::Backend(_))
    ));
}
