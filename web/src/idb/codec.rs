//! Conversions between the core's byte keys and values and IndexedDB's JS values.

use indexed_db_futures::KeyRange as IdbRange;
use js_sys::{Array, ArrayBuffer, Uint8Array};
use spool::{KeyRange, StorageError};
use wasm_bindgen::{JsCast, JsValue};

/// The IndexedDB key of `key` in `workspace`: `[workspace, Uint8Array(key)]`.
pub(super) fn key(workspace: &str, key: &[u8]) -> JsValue {
    Array::of2(&JsValue::from_str(workspace), &Uint8Array::from(key)).into()
}

/// A key above every key of `workspace` and below every key of the next workspace:
/// `[workspace, []]` (an array sorts after every binary key).
fn workspace_end(workspace: &str) -> JsValue {
    Array::of2(&JsValue::from_str(workspace), &Array::new()).into()
}

/// The IndexedDB range `[start, end)` of `workspace`, or `None` when the range is empty
/// (IndexedDB rejects a bound range whose end is not above its start).
pub(super) fn range(workspace: &str, range: &KeyRange) -> Option<IdbRange<JsValue>> {
    if range.end.as_ref().is_some_and(|end| *end <= range.start) {
        return None;
    }
    let upper = match &range.end {
        Some(end) => key(workspace, end),
        None => workspace_end(workspace),
    };
    Some(IdbRange::Bound(
        key(workspace, &range.start),
        false,
        upper,
        true,
    ))
}

/// A value as IndexedDB stores it.
pub(super) fn value(bytes: &[u8]) -> JsValue {
    Uint8Array::from(bytes).into()
}

/// The bytes of a stored value (a `Uint8Array`, or an `ArrayBuffer` for binary keys).
pub(super) fn bytes(value: &JsValue) -> Result<Vec<u8>, StorageError> {
    if let Some(array) = value.dyn_ref::<Uint8Array>() {
        Ok(array.to_vec())
    } else if value.is_instance_of::<ArrayBuffer>() {
        Ok(Uint8Array::new(value).to_vec())
    } else {
        Err(StorageError::Backend(format!(
            "IndexedDB returned {value:?} where Spool stores bytes"
        )))
    }
}

/// The core's key from an IndexedDB key `[workspace, binary]`.
pub(super) fn user_key(idb_key: &JsValue) -> Result<Vec<u8>, StorageError> {
    match idb_key.dyn_ref::<Array>() {
        Some(pair) if pair.length() == 2 => bytes(&pair.get(1)),
        _ => Err(StorageError::Backend(format!(
            "IndexedDB returned the key {idb_key:?}, not a [workspace, bytes] pair"
        ))),
    }
}

/// A failed IndexedDB call as a storage error naming what was being done.
pub(super) fn backend(doing: &str, cause: impl std::fmt::Display) -> StorageError {
    StorageError::Backend(format!("IndexedDB {doing} failed: {cause}"))
}
