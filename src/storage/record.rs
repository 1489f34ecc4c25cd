//! Versioned record encoding.
//!
//! A stored value is one format-version byte followed by the record: JSON up to format
//! 5, binary for the session and entry records of format 6 (`session/codec.rs`,
//! `storage/entry_record.rs`). Decoding reads any version this build knows and migrates
//! it forward; fields added by a later version read as their documented defaults
//! (`#[serde(default)]`). A value that does not decode is a typed [`Error::Corruption`]
//! naming its key, never a panic.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::engine::error::Error;
use crate::storage::keys;

/// The record format version this build writes for every record but session records
/// (see [`SESSION_FORMAT_VERSION`]). Format 2 added the session accounting fields, entry
/// `turn_usage`, context states and the message-id index; format-1 records read with
/// their documented defaults.
pub const FORMAT_VERSION: u8 = 2;

/// The format of session records that share history, as written by earlier builds: a
/// branch (lineage, shared base) or a session that was branched from. Format 3 is format
/// 2 plus the `lineage` and `base` fields; a build that reads only up to format 2 refuses
/// these records (`corruption`) rather than reading a branch without its history or
/// rewriting a parent without handing its branches their copy.
pub const BRANCHED_FORMAT_VERSION: u8 = 3;

/// The format of every session record this build writes: format 3 plus the identity's
/// entry clock (`newest_entry_at`, the `created_at` of its newest entry), which keeps
/// transcript order insertion order. A record of an earlier format reads without it and
/// the next write of an entry derives it from the stored entries; a build that reads
/// only up to format 3 refuses these records (`corruption`) rather than appending out of
/// order. Format 5 adds `active_from`, where compaction left the active transcript to
/// start (a compaction no longer moves what it removes; see `crate::compaction`); a
/// build that reads only up to format 4 refuses these records rather than reading
/// archived entries as active ones. Format 6 holds the same fields, binary instead of
/// JSON (see `session/codec.rs`): decoding the session record is on every operation's
/// path. A build that reads only up to format 5 refuses it as an unknown version.
pub const SESSION_FORMAT_VERSION: u8 = 6;

/// The format of the session record of an identity whose keys are named by a minted data
/// id (`session::mint`) instead of its session id: format 6 followed by the data id. The
/// keys of such an identity hold positions in fewer bytes (`keys::put_position`); a
/// build that reads only up to format 6 refuses the record as an unknown version rather
/// than reading the session's entries under its session id (where there are none).
/// Records of identities named by their session id stay format 6.
pub const DATA_ID_FORMAT_VERSION: u8 = 7;

/// The newest format of the records that are JSON (session records up to format 5,
/// every other record but entries); [`decode`] reads these.
pub const NEWEST_JSON: u8 = 5;

/// The format of the transcript entry records this build writes (`e`, and a fork's
/// frozen snapshot `Q`): binary, holding only what the key does not (see
/// `storage/entry_record.rs`). Entry records of formats 1 and 2 (JSON) still read; a build
/// that reads only up to format 5 refuses format 6 as an unknown version. [`decode`]
/// reads JSON records only, so it refuses an entry record of this format.
pub const ENTRY_FORMAT_VERSION: u8 = 6;

/// The oldest record format this build reads.
pub const OLDEST_READABLE: u8 = 1;

/// The newest record format this build reads (session and entry records; other kinds
/// are at most [`NEWEST_JSON`]).
pub const NEWEST_READABLE: u8 = DATA_ID_FORMAT_VERSION;

/// Encodes a record at the current format version.
pub fn encode<T: Serialize>(record: &T) -> Result<Vec<u8>, Error> {
    encode_as(FORMAT_VERSION, record)
}

/// Encodes a record at format `version`.
pub(crate) fn encode_as<T: Serialize>(version: u8, record: &T) -> Result<Vec<u8>, Error> {
    let mut out = vec![version];
    serde_json::to_writer(&mut out, record)
        .map_err(|e| Error::internal(format!("record does not encode: {e}")))?;
    Ok(out)
}

/// `T` from JSON text, read through a [`serde_json::Value`]: the one way the core reads
/// JSON into its types. Every type is then read by one deserializer (`&Value`, also how
/// the browser reads JavaScript arguments) instead of one per input kind, which keeps the
/// module small: a type read from text directly costs two to three times the code. A
/// member named twice in one object keeps its last value, as in any `Value`.
pub(crate) fn from_json<T: DeserializeOwned>(text: &[u8]) -> Result<T, serde_json::Error> {
    read(&parse_json(text)?)
}

/// JSON text as a [`serde_json::Value`]: the module's one JSON text parser. Text held as
/// a `&str` is parsed as its bytes (`text.as_bytes()`): `serde_json::from_str` would
/// compile a second parser beside this one.
pub(crate) fn parse_json(text: &[u8]) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::from_slice(text)
}

/// `T` from a JSON value: the one deserializer every type of the core is read with, in
/// the core and in the hosts (`storage/value_de.rs`: objects only for structs).
pub fn read<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, serde_json::Error> {
    T::deserialize(super::value_de::Json(value))
}

/// [`read`], and when the error came from the value of one member of the top-level
/// object, that member's name is left in `at`: a shell can name the argument at fault
/// (the browser's `invalid_argument` errors) without a reader of its own for each member.
pub fn read_naming<'a, T: DeserializeOwned>(
    value: &'a serde_json::Value,
    at: &'a std::cell::Cell<Option<&'a str>>,
) -> Result<T, serde_json::Error> {
    super::value_de::read_naming(value, at)
}

/// A record written flat, an inner record's fields with more of its own beside them (as
/// `#[serde(flatten)]` writes it), read by `read` from its one JSON object: the inner
/// record by its own `&Value` reader, the others by [`member`]. Serde's flatten reader
/// would compile a second reader of the inner record (and of every type inside it).
pub(crate) fn read_flat<'de, D, T>(
    deserializer: D,
    read: impl FnOnce(&serde_json::Value) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize as _;
    use serde::de::Error as _;
    let value = serde_json::Value::deserialize(deserializer)?;
    if !value.is_object() {
        return Err(D::Error::custom("expected a JSON object"));
    }
    read(&value).map_err(D::Error::custom)
}

/// The member `name` of a JSON object, `None` when it is absent.
pub(crate) fn member<T: DeserializeOwned>(
    object: &serde_json::Value,
    name: &str,
) -> Result<Option<T>, serde_json::Error> {
    object.get(name).map(read).transpose()
}

/// Decodes the record stored under `key`.
pub fn decode<T: DeserializeOwned>(key: &[u8], value: &[u8]) -> Result<T, Error> {
    // Only the last step depends on `T`: the rest is compiled once.
    let json = decode_json(key, value)?;
    read(&json).map_err(|e| corrupt(key, e.to_string()))
}

/// The JSON of the record stored under `key`, its version checked.
fn decode_json(key: &[u8], value: &[u8]) -> Result<serde_json::Value, Error> {
    match value.split_first() {
        // Format 1 differs from 2, 2 from 3 and 3 from 4 only by fields the later one
        // added, which have serde defaults.
        Some((&version, body)) if (OLDEST_READABLE..=NEWEST_JSON).contains(&version) => {
            parse_json(body).map_err(|e| corrupt(key, e.to_string()))
        }
        Some((&version, _)) => Err(corrupt(
            key,
            format!(
                "unknown format version {version} (this build reads JSON records up to {NEWEST_JSON})"
            ),
        )),
        None => Err(corrupt(key, "empty value".into())),
    }
}

/// The `corruption` of the record stored under `key`.
fn corrupt(key: &[u8], detail: String) -> Error {
    Error::Corruption {
        key: keys::display(key),
        detail,
    }
}

#[cfg(test)]
#[path = "tests/record.rs"]
mod tests;
