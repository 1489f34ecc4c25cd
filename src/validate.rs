//! Input validation: every bad argument is a typed `invalid_argument`, never a panic or a
//! silent default.

use crate::error::Error;

/// Longest workspace name, in bytes.
pub const MAX_WORKSPACE_BYTES: usize = 128;
/// Longest session key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// Longest session id or message id, in bytes.
pub const MAX_ID_BYTES: usize = 128;
/// Largest entry content, in bytes.
pub const MAX_CONTENT_BYTES: usize = 4 * 1024 * 1024;
/// Largest page of entries or sessions.
pub const MAX_PAGE: u32 = 1000;

fn name(field: &'static str, value: &str, max: usize) -> Result<(), Error> {
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format!("is {} bytes long; the limit is {max}", value.len()),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(field, "must not contain control characters"));
    }
    Ok(())
}

/// A workspace name: 1 to [`MAX_WORKSPACE_BYTES`] bytes, no control characters.
pub fn workspace(value: &str) -> Result<(), Error> {
    name("workspace", value, MAX_WORKSPACE_BYTES)
}

/// A session key: 1 to [`MAX_KEY_BYTES`] bytes, no control characters.
pub fn session_key(value: &str) -> Result<(), Error> {
    name("key", value, MAX_KEY_BYTES)
}

/// An id given by the writer (`message_id`, `turn_id`, `tool_call_id`): 1 to
/// [`MAX_ID_BYTES`] bytes, no control characters.
pub fn id(field: &'static str, value: &str) -> Result<(), Error> {
    name(field, value, MAX_ID_BYTES)
}

/// Tool calls: at most [`MAX_CONTENT_BYTES`] once serialized.
pub fn tool_calls(value: &serde_json::Value) -> Result<(), Error> {
    let size = value.to_string().len();
    if size > MAX_CONTENT_BYTES {
        return Err(Error::invalid(
            "tool_calls",
            format!("is {size} bytes as JSON; the limit is {MAX_CONTENT_BYTES}"),
        ));
    }
    Ok(())
}

/// A session id: 1 to [`MAX_ID_BYTES`] of ASCII letters, digits, `-`, `_`, `.`.
pub fn session_id(value: &str) -> Result<(), Error> {
    name("session_id", value, MAX_ID_BYTES)?;
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(Error::invalid(
            "session_id",
            "may hold only ASCII letters, digits, `-`, `_` and `.`",
        ));
    }
    Ok(())
}

/// Entry content: at most [`MAX_CONTENT_BYTES`].
pub fn content(value: &str) -> Result<(), Error> {
    if value.len() > MAX_CONTENT_BYTES {
        return Err(Error::invalid(
            "content",
            format!(
                "is {} bytes long; the limit is {MAX_CONTENT_BYTES}",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// A page size: 1 to [`MAX_PAGE`].
pub fn limit(value: u32) -> Result<(), Error> {
    if value == 0 || value > MAX_PAGE {
        return Err(Error::invalid(
            "limit",
            format!("is {value}; it must be 1 to {MAX_PAGE}"),
        ));
    }
    Ok(())
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Decodes a cursor written by [`hex`].
pub fn unhex(field: &'static str, text: &str) -> Result<Vec<u8>, Error> {
    let bad = || Error::invalid(field, format!("`{text}` is not a cursor Spool returned"));
    if !text.len().is_multiple_of(2) || text.is_empty() {
        return Err(bad());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(bad)
        })
        .collect()
}

/// Checks a paged read of the session `key` in `workspace`: the page size and the
/// cursor, which must decode to exactly `cursor_len` bytes (`what` names the kind of
/// cursor in the error). Returns the decoded cursor.
pub fn page(
    workspace: &str,
    key: &str,
    limit: u32,
    cursor: Option<&str>,
    cursor_len: usize,
    what: &str,
) -> Result<Option<Vec<u8>>, Error> {
    self::workspace(workspace)?;
    session_key(key)?;
    self::limit(limit)?;
    match cursor.map(|c| unhex("cursor", c)).transpose()? {
        Some(c) if c.len() != cursor_len => Err(Error::invalid(
            "cursor",
            format!("not a {what} cursor Spool returned"),
        )),
        other => Ok(other),
    }
}

/// A count or duration: at most `i64::MAX`, the largest every host (JavaScript, SQLite)
/// represents exactly.
pub fn count(field: &'static str, value: u64) -> Result<(), Error> {
    if value > i64::MAX as u64 {
        return Err(Error::invalid(
            field,
            format!("{value} is out of range (at most {})", i64::MAX),
        ));
    }
    Ok(())
}
