//! Conversions between the core's byte keys and values and IndexedDB's JS values.

use indexed_db_futures::KeyRange as IdbRange;
use js_sys::{Array, ArrayBuffer, Uint8Array};
use serde::Serialize;
use spool::{KeyRange, ResetArchive, StorageError};
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

/// The bytes of the value stored under `key`; anything else IndexedDB holds there (a
/// string, a number: not written by Spool) is [`StorageError::Corrupt`] naming the key.
pub(super) fn stored(key: &[u8], value: &JsValue) -> Result<Vec<u8>, StorageError> {
    bytes(value).map_err(|e| StorageError::Corrupt {
        key: key.to_vec(),
        detail: e.to_string(),
    })
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

/// The IndexedDB key of a reset archive: `[workspace, session_key, session_id,
/// archived_at]`.
pub(super) fn archive_key(workspace: &str, archive: &ResetArchive) -> JsValue {
    archive_key_of(
        workspace,
        &archive.session_key,
        &archive.session_id,
        archive.archived_at,
    )
}

/// The IndexedDB key of the archive of `session_key`'s identity `session_id`, kept at
/// `archived_at`.
pub(super) fn archive_key_of(
    workspace: &str,
    session_key: &str,
    session_id: &str,
    archived_at: u64,
) -> JsValue {
    let key = Array::of4(
        &JsValue::from_str(workspace),
        &JsValue::from_str(session_key),
        &JsValue::from_str(session_id),
        // Times are whole milliseconds far below 2^53: exact as a JS number.
        &JsValue::from_f64(archived_at as f64),
    );
    key.into()
}

/// A reset archive as IndexedDB stores it: a plain, JSON-like object.
pub(super) fn archive_value(archive: &ResetArchive) -> Result<JsValue, StorageError> {
    archive
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| backend("archive (conversion)", e))
}

/// A stored reset archive; `Err` says why it does not decode.
pub(super) fn archive(value: &JsValue) -> Result<ResetArchive, String> {
    // Through JSON, like every other value that crosses from JS: numbers come back as
    // the integers they were.
    let json: serde_json::Value =
        serde_wasm_bindgen::from_value(value.clone()).map_err(|e| e.to_string())?;
    spool::record::read::<ResetArchive>(&json).map_err(|e| e.to_string())
}
