//! Input validation: every bad argument is a typed `invalid_argument`, never a panic or a
//! silent default.

use crate::engine::error::Error;

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
/// Largest JSON map kept in a session record (`metadata`, `model_config`), in bytes of
/// JSON each. The record is rewritten by every append, so it stays small.
pub const MAX_SESSION_MAP_BYTES: usize = 64 * 1024;
/// Most attachments one entry describes.
pub const MAX_ATTACHMENTS: usize = 64;
/// Largest path (a working directory), in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Largest time, count or token number: 2^53 − 1, the largest integer every host
/// represents exactly (a JavaScript number, an SQLite integer).
pub const MAX_INTEGER: u64 = (1 << 53) - 1;

pub use crate::engine::error::{MAX_MESSAGE_CHARS, MAX_QUOTED_CHARS, quote, shorten_quoted};

/// Whether `c` is invisible or changes how the text around it is displayed: the Unicode
/// format characters (bidi embeddings, overrides and isolates, zero-width spaces and
/// joiners, the byte order mark, invisible operators, tags, …), the line and paragraph
/// separators and the fillers that render as blanks.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{0600}'..='\u{0605}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

fn name(field: &'static str, value: &str, max: usize) -> Result<(), Error> {
    stored_name(field, value, max)?;
    visible(field, value)
}

/// The rules every stored name has always followed: 1 to `max` bytes, no control
/// characters.
fn stored_name(field: &'static str, value: &str, max: usize) -> Result<(), Error> {
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

fn visible(field: &'static str, value: &str) -> Result<(), Error> {
    match value.chars().find(|&c| is_invisible(c)) {
        Some(c) => Err(Error::invalid(
            field,
            format!(
                "must not contain invisible or bidi control characters (holds U+{:04X})",
                u32::from(c)
            ),
        )),
        None => Ok(()),
    }
}

/// `text` with every invisible or bidi control character ([`is_invisible`]) written as
/// `\u{…}`, for human output: what it shows is what it holds.
pub fn escape_invisible(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_invisible) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A workspace name: 1 to [`MAX_WORKSPACE_BYTES`] bytes, no control characters, no
/// invisible or bidi control characters ([`is_invisible`]).
pub fn workspace(value: &str) -> Result<(), Error> {
    name("workspace", value, MAX_WORKSPACE_BYTES)
}

/// The workspace and the key of a call on one session ([`workspace`], [`session_key`]).
pub fn keyed(workspace: &str, key: &str) -> Result<(), Error> {
    self::workspace(workspace).and_then(|()| session_key(key))
}

/// The key of a session that may exist: 1 to [`MAX_KEY_BYTES`] bytes, no control
/// characters. Invisible characters are refused only in a key that names a new session
/// ([`new_session_key`]), so a session stored before that rule stays reachable.
pub fn session_key(value: &str) -> Result<(), Error> {
    stored_name("key", value, MAX_KEY_BYTES)
}

/// The key of a session about to be created: a [`session_key`] with no invisible or bidi
/// control characters ([`is_invisible`]), so no key can pass for another in a listing.
pub fn new_session_key(value: &str) -> Result<(), Error> {
    name("key", value, MAX_KEY_BYTES)
}

/// An id given by the writer (`message_id`, `turn_id`, `tool_call_id`): 1 to
/// [`MAX_ID_BYTES`] bytes, no control characters, no invisible or bidi control
/// characters ([`is_invisible`]).
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
    text("content", value, MAX_CONTENT_BYTES)
}

/// An entry's attachments: at most [`MAX_ATTACHMENTS`], each with an id-like `kind`, a
/// `media_type` of at most [`MAX_ID_BYTES`], a `sha256` of 64 lowercase hex digits, a
/// `source` of at most [`MAX_PATH_BYTES`] and a `size` within [`MAX_INTEGER`].
pub fn attachments(value: &[crate::types::Attachment]) -> Result<(), Error> {
    if value.len() > MAX_ATTACHMENTS {
        return Err(Error::invalid(
            "attachments",
            format!("holds {}; the limit is {MAX_ATTACHMENTS}", value.len()),
        ));
    }
    for a in value {
        id("attachments.kind", &a.kind)?;
        if let Some(media_type) = &a.media_type {
            id("attachments.media_type", media_type)?;
        }
        count("attachments.size", a.size)?;
        if let Some(hash) = &a.sha256
            && !(hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        {
            return Err(Error::invalid(
                "attachments.sha256",
                format!("{} is not 64 lowercase hex digits", quote(hash)),
            ));
        }
        if let Some(source) = &a.source {
            text("attachments.source", source, MAX_PATH_BYTES)?;
        }
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
    let bad = || {
        Error::invalid(
            field,
            format!("{} is not a cursor Spool returned", quote(text)),
        )
    };
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

/// A time, count, duration or token number: at most [`MAX_INTEGER`].
pub fn count(field: &'static str, value: u64) -> Result<(), Error> {
    if value > MAX_INTEGER {
        return Err(Error::invalid(
            field,
            format!("{value} is out of range (at most 2^53 - 1 = {MAX_INTEGER})"),
        ));
    }
    Ok(())
}

/// The caller's clock (`now_ms`, ms since the Unix epoch): at most [`MAX_INTEGER`].
pub fn now_ms(value: u64) -> Result<(), Error> {
    count("now_ms", value)
}

/// `total + n`, saturating at [`MAX_INTEGER`]: how session counters (tokens, usage)
/// add up, so a sum never leaves the range every host represents exactly.
pub fn add(total: u64, n: u64) -> u64 {
    total.saturating_add(n).min(MAX_INTEGER)
}

/// The sum of `counts`, saturating at [`MAX_INTEGER`] (token totals over a transcript).
pub fn total(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, add)
}

/// A JSON value (a map, a payload) of at most `max` bytes once serialized.
pub fn json_size<T: serde::Serialize + ?Sized>(
    field: &'static str,
    value: &T,
    max: usize,
) -> Result<(), Error> {
    let size = serde_json::to_vec(value).map_or(usize::MAX, |v| v.len());
    if size > max {
        return Err(Error::invalid(
            field,
            format!("is {size} bytes as JSON; the limit is {max}"),
        ));
    }
    Ok(())
}

/// A session's `metadata` or `model_config`: at most [`MAX_SESSION_MAP_BYTES`] of JSON.
pub fn session_map(
    field: &'static str,
    map: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<(), Error> {
    json_size(field, map, MAX_SESSION_MAP_BYTES)
}

/// A free-form text (a path, a reason) of at most `max` bytes.
pub fn text(field: &'static str, value: &str, max: usize) -> Result<(), Error> {
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format!("is {} bytes long; the limit is {max}", value.len()),
        ));
    }
    Ok(())
}
