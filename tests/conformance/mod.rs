//! The storage conformance suite: one set of cases every backend must pass (memory,
//! SQLite, IndexedDB). Included by each backend's test crate with
//! `#[path = ".../tests/conformance/mod.rs"] mod conformance;` and instantiated with
//! [`conformance_tests!`], one test per case.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::future::Future;

use spool::{AsyncStorage, Batch, KeyRange, Kv, RangeQuery, StorageError};

/// A backend under test.
pub trait Backend {
    type Store: AsyncStorage;
    /// Opens the store called `name`, creating it empty the first time; opening the same
    /// name again after the previous handle was dropped sees everything committed to it.
    fn open(&self, name: &str) -> impl Future<Output = Self::Store>;
}

/// Instantiates one test per case: `conformance_tests!(sync, backend_expr)` for a
/// native test crate, `conformance_tests!(wasm, backend_expr)` under wasm-bindgen-test.
#[macro_export]
macro_rules! conformance_tests {
    ($mode:ident, $backend:expr) => {
        $crate::conformance_tests!(@each $mode, $backend;
            test_missing_key_reads_none,
            test_put_then_get,
            test_empty_value_is_not_absent,
            test_overwrite_replaces_value,
            test_delete_removes_key,
            test_keys_order_bytewise_including_prefixes,
            test_range_start_inclusive_end_exclusive,
            test_range_limit_and_reverse,
            test_range_without_end_runs_to_workspace_end,
            test_range_delete_removes_only_the_range,
            test_mutations_apply_in_order,
            test_multi_key_commit_is_all_or_nothing,
            test_failed_precondition_writes_nothing_and_reports_conflict,
            test_preconditions_that_hold_let_the_commit_through,
            test_data_survives_close_and_reopen,
            test_one_mebibyte_value_round_trips,
            test_values_of_every_size_replace_and_delete_each_other,
            test_a_batch_of_the_documented_maximum_commits,
            test_workspace_isolation
        );
    };
    (@each sync, $backend:expr; $($case:ident),*) => {
        $(
            #[test]
            fn $case() {
                $crate::conformance::block_on($crate::conformance::$case(&$backend));
            }
        )*
    };
    (@each wasm, $backend:expr; $($case:ident),*) => {
        $(
            #[wasm_bindgen_test::wasm_bindgen_test]
            async fn $case() {
                $crate::conformance::$case(&$backend).await;
            }
        )*
    };
}

/// Runs a future that never waits (a synchronous backend behind `SyncAdapter`).
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("a synchronous backend returned Pending"),
    }
}

const WS: &str = "conformance";

fn kv(key: &[u8], value: &[u8]) -> Kv {
    Kv {
        key: key.to_vec(),
        value: value.to_vec(),
    }
}

fn all() -> RangeQuery {
    RangeQuery {
        range: KeyRange {
            start: Vec::new(),
            end: None,
        },
        limit: 0,
        reverse: false,
    }
}

async fn put_all<S: AsyncStorage>(store: &S, ws: &str, pairs: &[(&[u8], &[u8])]) {
    let mut batch = Batch::default();
    for (k, v) in pairs {
        batch.put(k.to_vec(), v.to_vec());
    }
    store.commit(ws, batch).await.expect("commit");
}

async fn keys<S: AsyncStorage>(store: &S, ws: &str, query: RangeQuery) -> Vec<Vec<u8>> {
    store
        .range(ws, &query)
        .await
        .expect("range")
        .into_iter()
        .map(|kv| kv.key)
        .collect()
}

pub async fn test_missing_key_reads_none<B: Backend>(backend: &B) {
    let store = backend.open("missing_key").await;
    assert_eq!(store.get(WS, b"nope").await.expect("get"), None);
    assert_eq!(store.range(WS, &all()).await.expect("range"), vec![]);
}

pub async fn test_put_then_get<B: Backend>(backend: &B) {
    let store = backend.open("put_get").await;
    put_all(&store, WS, &[(b"k", b"v")]).await;
    assert_eq!(store.get(WS, b"k").await.expect("get"), Some(b"v".to_vec()));
}

pub async fn test_empty_value_is_not_absent<B: Backend>(backend: &B) {
    let store = backend.open("empty_value").await;
    put_all(&store, WS, &[(b"k", b"")]).await;
    assert_eq!(store.get(WS, b"k").await.expect("get"), Some(Vec::new()));
    let mut batch = Batch::default();
    batch.require_absent(b"k".to_vec());
    assert_eq!(
        store.commit(WS, batch).await,
        Err(StorageError::Conflict(0))
    );
}

pub async fn test_overwrite_replaces_value<B: Backend>(backend: &B) {
    let store = backend.open("overwrite").await;
    put_all(&store, WS, &[(b"k", b"one")]).await;
    put_all(&store, WS, &[(b"k", b"two")]).await;
    assert_eq!(
        store.get(WS, b"k").await.expect("get"),
        Some(b"two".to_vec())
    );
    assert_eq!(store.range(WS, &all()).await.expect("range").len(), 1);
}

pub async fn test_delete_removes_key<B: Backend>(backend: &B) {
    let store = backend.open("delete").await;
    put_all(&store, WS, &[(b"a", b"1"), (b"b", b"2")]).await;
    let mut batch = Batch::default();
    batch.delete(b"a".to_vec());
    batch.delete(b"never-there".to_vec());
    store.commit(WS, batch).await.expect("delete");
    assert_eq!(store.get(WS, b"a").await.expect("get"), None);
    assert_eq!(store.get(WS, b"b").await.expect("get"), Some(b"2".to_vec()));
}

pub async fn test_keys_order_bytewise_including_prefixes<B: Backend>(backend: &B) {
    let store = backend.open("ordering").await;
    let unsorted: Vec<&[u8]> = vec![
        b"b",
        b"\xff",
        b"a",
        b"\x00\x00",
        b"ab",
        b"\x80",
        b"\x00",
        b"\x7f",
        b"\xff\x00",
        b"a\x00",
        b"A",
        b"\x01",
    ];
    let mut batch = Batch::default();
    for k in &unsorted {
        batch.put(k.to_vec(), k.to_vec());
    }
    store.commit(WS, batch).await.expect("commit");
    let mut expected: Vec<Vec<u8>> = unsorted.iter().map(|k| k.to_vec()).collect();
    expected.sort();
    assert_eq!(keys(&store, WS, all()).await, expected);
    let mut reversed = expected.clone();
    reversed.reverse();
    assert_eq!(
        keys(
            &store,
            WS,
            RangeQuery {
                reverse: true,
                ..all()
            }
        )
        .await,
        reversed
    );
}

pub async fn test_range_start_inclusive_end_exclusive<B: Backend>(backend: &B) {
    let store = backend.open("bounds").await;
    put_all(
        &store,
        WS,
        &[(b"a", b""), (b"b", b""), (b"c", b""), (b"d", b"")],
    )
    .await;
    let query = RangeQuery {
        range: KeyRange {
            start: b"b".to_vec(),
            end: Some(b"d".to_vec()),
        },
        limit: 0,
        reverse: false,
    };
    assert_eq!(
        keys(&store, WS, query.clone()).await,
        vec![b"b".to_vec(), b"c".to_vec()]
    );
    assert_eq!(
        keys(
            &store,
            WS,
            RangeQuery {
                reverse: true,
                ..query
            }
        )
        .await,
        vec![b"c".to_vec(), b"b".to_vec()]
    );
    let empty = RangeQuery {
        range: KeyRange {
            start: b"c".to_vec(),
            end: Some(b"c".to_vec()),
        },
        limit: 0,
        reverse: false,
    };
    assert!(keys(&store, WS, empty).await.is_empty());
}

pub async fn test_range_limit_and_reverse<B: Backend>(backend: &B) {
    let store = backend.open("limit").await;
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0u8..10).map(|i| (vec![b'k', i], vec![i])).collect();
    let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    put_all(&store, WS, &refs).await;
    let first3 = store
        .range(WS, &RangeQuery { limit: 3, ..all() })
        .await
        .expect("range");
    assert_eq!(
        first3.iter().map(|kv| kv.value[0]).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    let last3 = store
        .range(
            WS,
            &RangeQuery {
                limit: 3,
                reverse: true,
                ..all()
            },
        )
        .await
        .expect("range");
    assert_eq!(
        last3.iter().map(|kv| kv.value[0]).collect::<Vec<_>>(),
        vec![9, 8, 7]
    );
    assert_eq!(last3[0], kv(&[b'k', 9], &[9]));
    let below5 = RangeQuery {
        range: KeyRange {
            start: vec![b'k'],
            end: Some(vec![b'k', 5]),
        },
        limit: 2,
        reverse: true,
    };
    assert_eq!(
        keys(&store, WS, below5).await,
        vec![vec![b'k', 4], vec![b'k', 3]]
    );
}

pub async fn test_range_without_end_runs_to_workspace_end<B: Backend>(backend: &B) {
    let store = backend.open("open_end").await;
    put_all(&store, WS, &[(b"a", b""), (b"m", b""), (b"\xff\xff", b"")]).await;
    put_all(&store, "conformancf", &[(b"n", b"")]).await;
    let from_m = RangeQuery {
        range: KeyRange {
            start: b"m".to_vec(),
            end: None,
        },
        limit: 0,
        reverse: false,
    };
    assert_eq!(
        keys(&store, WS, from_m.clone()).await,
        vec![b"m".to_vec(), b"\xff\xff".to_vec()]
    );
    assert_eq!(
        keys(
            &store,
            WS,
            RangeQuery {
                reverse: true,
                ..from_m
            }
        )
        .await,
        vec![b"\xff\xff".to_vec(), b"m".to_vec()]
    );
}

pub async fn test_range_delete_removes_only_the_range<B: Backend>(backend: &B) {
    let store = backend.open("range_delete").await;
    put_all(
        &store,
        WS,
        &[(b"a", b""), (b"b1", b""), (b"b2", b""), (b"c", b"")],
    )
    .await;
    let mut batch = Batch::default();
    batch.delete_range(KeyRange {
        start: b"b".to_vec(),
        end: Some(b"c".to_vec()),
    });
    store.commit(WS, batch).await.expect("commit");
    assert_eq!(
        keys(&store, WS, all()).await,
        vec![b"a".to_vec(), b"c".to_vec()]
    );
    let mut batch = Batch::default();
    batch.delete_range(KeyRange {
        start: b"b".to_vec(),
        end: None,
    });
    store.commit(WS, batch).await.expect("commit");
    assert_eq!(keys(&store, WS, all()).await, vec![b"a".to_vec()]);
}

pub async fn test_mutations_apply_in_order<B: Backend>(backend: &B) {
    let store = backend.open("order_of_mutations").await;
    let mut batch = Batch::default();
    batch.put(b"x".to_vec(), b"1".to_vec());
    batch.delete(b"x".to_vec());
    batch.delete_range(KeyRange::prefix(b"y"));
    batch.put(b"y1".to_vec(), b"2".to_vec());
    batch.put(b"z".to_vec(), b"first".to_vec());
    batch.put(b"z".to_vec(), b"second".to_vec());
    store.commit(WS, batch).await.expect("commit");
    assert_eq!(store.get(WS, b"x").await.expect("get"), None);
    assert_eq!(
        store.get(WS, b"y1").await.expect("get"),
        Some(b"2".to_vec())
    );
    assert_eq!(
        store.get(WS, b"z").await.expect("get"),
        Some(b"second".to_vec())
    );
}

pub async fn test_multi_key_commit_is_all_or_nothing<B: Backend>(backend: &B) {
    let store = backend.open("all_or_nothing").await;
    put_all(&store, WS, &[(b"guard", b"v1"), (b"keep", b"old")]).await;
    let mut batch = Batch::default();
    batch.require_absent(b"fresh".to_vec());
    batch.require_equals(b"guard".to_vec(), b"v0".to_vec());
    batch.put(b"keep".to_vec(), b"new".to_vec());
    batch.put(b"fresh".to_vec(), b"x".to_vec());
    batch.delete(b"guard".to_vec());
    batch.delete_range(KeyRange::prefix(b""));
    assert_eq!(
        store.commit(WS, batch).await,
        Err(StorageError::Conflict(1))
    );
    assert_eq!(
        store.range(WS, &all()).await.expect("range"),
        vec![kv(b"guard", b"v1"), kv(b"keep", b"old")]
    );
}

pub async fn test_failed_precondition_writes_nothing_and_reports_conflict<B: Backend>(backend: &B) {
    let store = backend.open("conflict").await;
    put_all(&store, WS, &[(b"taken", b"1")]).await;
    let mut batch = Batch::default();
    batch.require_absent(b"taken".to_vec());
    batch.put(b"other".to_vec(), b"2".to_vec());
    assert_eq!(
        store.commit(WS, batch).await,
        Err(StorageError::Conflict(0))
    );
    assert_eq!(store.get(WS, b"other").await.expect("get"), None);
    let mut batch = Batch::default();
    batch.require_equals(b"missing".to_vec(), b"".to_vec());
    batch.put(b"other".to_vec(), b"2".to_vec());
    assert_eq!(
        store.commit(WS, batch).await,
        Err(StorageError::Conflict(0))
    );
    assert_eq!(store.get(WS, b"other").await.expect("get"), None);
}

pub async fn test_preconditions_that_hold_let_the_commit_through<B: Backend>(backend: &B) {
    let store = backend.open("preconditions_hold").await;
    put_all(&store, WS, &[(b"rec", b"v1")]).await;
    let mut batch = Batch::default();
    batch.require_equals(b"rec".to_vec(), b"v1".to_vec());
    batch.require_absent(b"new".to_vec());
    batch.put(b"rec".to_vec(), b"v2".to_vec());
    batch.put(b"new".to_vec(), b"n".to_vec());
    store.commit(WS, batch).await.expect("commit");
    assert_eq!(
        store.get(WS, b"rec").await.expect("get"),
        Some(b"v2".to_vec())
    );
    assert_eq!(
        store.get(WS, b"new").await.expect("get"),
        Some(b"n".to_vec())
    );
}

pub async fn test_data_survives_close_and_reopen<B: Backend>(backend: &B) {
    {
        let store = backend.open("reopen").await;
        put_all(&store, WS, &[(b"durable", b"yes"), (b"other", b"1")]).await;
        let mut batch = Batch::default();
        batch.delete(b"other".to_vec());
        store.commit(WS, batch).await.expect("commit");
    }
    let store = backend.open("reopen").await;
    assert_eq!(
        store.get(WS, b"durable").await.expect("get"),
        Some(b"yes".to_vec())
    );
    assert_eq!(store.get(WS, b"other").await.expect("get"), None);
}

pub async fn test_one_mebibyte_value_round_trips<B: Backend>(backend: &B) {
    let store = backend.open("large_value").await;
    let value: Vec<u8> = (0..1024 * 1024).map(|i: u32| (i % 251) as u8).collect();
    put_all(&store, WS, &[(b"big", &value)]).await;
    assert_eq!(
        store.get(WS, b"big").await.expect("get"),
        Some(value.clone())
    );
    let pairs = store.range(WS, &all()).await.expect("range");
    assert_eq!(pairs, vec![kv(b"big", &value)]);
}

/// Values around the sizes a backend may store apart from its keys (SQLite keeps those
/// over ~900 bytes out of its key tree) read, replace, guard and delete like any other.
pub async fn test_values_of_every_size_replace_and_delete_each_other<B: Backend>(backend: &B) {
    let store = backend.open("value_sizes").await;
    let value = |size: usize, seed: u8| -> Vec<u8> {
        (0..size).map(|i| (i as u8).wrapping_mul(seed)).collect()
    };
    let sizes = [0, 1, 850, 899, 900, 901, 1000, 5000, 70_000];
    let key = |i: usize| format!("v{i}").into_bytes();
    let mut batch = Batch::default();
    for (i, &size) in sizes.iter().enumerate() {
        batch.put(key(i), value(size, 3));
    }
    store.commit(WS, batch).await.expect("commit");
    let expected: Vec<Kv> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| kv(&key(i), &value(size, 3)))
        .collect();
    assert_eq!(store.range(WS, &all()).await.expect("range"), expected);
    let newest_two = RangeQuery {
        limit: 2,
        reverse: true,
        ..all()
    };
    assert_eq!(
        store.range(WS, &newest_two).await.expect("range"),
        vec![expected[8].clone(), expected[7].clone()]
    );

    // Each value replaced by one of another size (small by large and back, large by
    // large), guarded by a precondition on a large value, twice in one batch for one key.
    let mut batch = Batch::default();
    batch.require_equals(key(7), value(5000, 3));
    let resized = [70_000, 5000, 0, 1, 2000, 3000, 899, 10, 901];
    for (i, &size) in resized.iter().enumerate() {
        batch.put(key(i), value(size, 5));
    }
    batch.put(key(8), value(4000, 7));
    store.commit(WS, batch).await.expect("commit");
    for (i, &size) in resized.iter().enumerate() {
        let want = if i == 8 {
            value(4000, 7)
        } else {
            value(size, 5)
        };
        assert_eq!(
            store.get(WS, &key(i)).await.expect("get"),
            Some(want),
            "{i}"
        );
    }
    let mut stale = Batch::default();
    stale.require_equals(key(0), value(0, 5));
    stale.put(key(0), b"never".to_vec());
    assert_eq!(
        store.commit(WS, stale).await,
        Err(StorageError::Conflict(0))
    );
    assert_eq!(
        store.get(WS, &key(0)).await.expect("get"),
        Some(value(70_000, 5))
    );

    // One deleted, three by a range: the rest are unchanged.
    let mut batch = Batch::default();
    batch.delete(key(1));
    batch.delete_range(KeyRange {
        start: key(4),
        end: Some(key(7)),
    });
    store.commit(WS, batch).await.expect("commit");
    let left: Vec<Vec<u8>> = [0, 2, 3, 7, 8].iter().map(|&i| key(i)).collect();
    assert_eq!(keys(&store, WS, all()).await, left);
    assert_eq!(
        store.get(WS, &key(8)).await.expect("get"),
        Some(value(4000, 7))
    );
    assert_eq!(store.get(WS, &key(5)).await.expect("get"), None);
}

pub async fn test_a_batch_of_the_documented_maximum_commits<B: Backend>(backend: &B) {
    let store = backend.open("max_batch").await;
    let n = spool::MAX_BATCH_MUTATIONS;
    let value = vec![7u8; spool::MAX_BATCH_BYTES / n - 8];
    let mut batch = Batch::default();
    for i in 0..n as u64 {
        batch.put(i.to_be_bytes().to_vec(), value.clone());
    }
    assert!(batch.written_bytes() <= spool::MAX_BATCH_BYTES);
    assert!(batch.written_bytes() > spool::MAX_BATCH_BYTES * 9 / 10);
    store
        .commit(WS, batch)
        .await
        .expect("a batch of the maximum size");
    let pairs = store.range(WS, &all()).await.expect("range");
    assert_eq!(pairs.len(), n);
    assert!(pairs.iter().all(|kv| kv.value == value));
}

pub async fn test_workspace_isolation<B: Backend>(backend: &B) {
    let store = backend.open("isolation").await;
    put_all(&store, "a", &[(b"k", b"in-a"), (b"k2", b"in-a")]).await;
    put_all(&store, "ab", &[(b"k", b"in-ab")]).await;
    put_all(&store, "b", &[(b"k", b"in-b")]).await;
    assert_eq!(
        store.get("a", b"k").await.expect("get"),
        Some(b"in-a".to_vec())
    );
    assert_eq!(
        store.get("ab", b"k").await.expect("get"),
        Some(b"in-ab".to_vec())
    );
    assert_eq!(store.get("c", b"k").await.expect("get"), None);
    assert_eq!(
        keys(&store, "a", all()).await,
        vec![b"k".to_vec(), b"k2".to_vec()]
    );
    assert_eq!(
        keys(
            &store,
            "a",
            RangeQuery {
                reverse: true,
                ..all()
            }
        )
        .await,
        vec![b"k2".to_vec(), b"k".to_vec()]
    );
    // A precondition looks only at its own workspace.
    let mut batch = Batch::default();
    batch.require_absent(b"k".to_vec());
    batch.put(b"k".to_vec(), b"in-c".to_vec());
    store.commit("c", batch).await.expect("k is absent in c");
    // A range delete over everything in one workspace leaves the others alone.
    let mut batch = Batch::default();
    batch.delete_range(KeyRange::prefix(b""));
    store.commit("a", batch).await.expect("commit");
    assert!(keys(&store, "a", all()).await.is_empty());
    assert_eq!(
        store.get("ab", b"k").await.expect("get"),
        Some(b"in-ab".to_vec())
    );
    assert_eq!(
        store.get("b", b"k").await.expect("get"),
        Some(b"in-b".to_vec())
    );
    assert_eq!(
        store.get("c", b"k").await.expect("get"),
        Some(b"in-c".to_vec())
    );
}
