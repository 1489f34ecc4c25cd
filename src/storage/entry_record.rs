//! The stored form of transcript entries.
//!
//! An entry record of format 6 (what this build writes) is binary, and holds only what
//! its key does not: the id and `created_at` are the key's position (`created_at ·
//! entry_id`, see [`keys::entry`](crate::keys::entry)), and a message id of the
//! generated form `{session_id}-{id}` of the session the record belongs to is left out.
//!
//! | bytes | what |
//! |-------|------|
//! | 1 | format version, 6 |
//! | 1 | role: 0 user, 1 assistant, 2 tool, 3 system |
//! | 1 | flags: which optional parts follow |
//! | varint length + UTF-8 | message id ([`MESSAGE_ID`]: not the generated one) |
//! | varint | token count ([`TOKENS`]) |
//! | varint length + UTF-8 | tool call id ([`TOOL_CALL_ID`]) |
//! | varint length + UTF-8 | turn id ([`TURN_ID`]) |
//! | varint length + JSON | the rarer fields, absent ones left out ([`EXTRA`]) |
//! | the rest, UTF-8 | the content |
//!
//! Records of formats 1 and 2 are the entry as JSON (`Entry`'s serde form) and still
//! read; a build that reads only up to format 5 refuses format 6 as an unknown version
//! (`corruption`). Every decoding failure is a typed [`Error::Corruption`] naming the key.

use serde::{Deserialize, Serialize};

use crate::engine::error::Error;
use crate::storage::binary::{Reader, put_bytes, put_varint};
use crate::storage::keys;
use crate::storage::record;
use crate::types::{Attachment, Entry, EntryKind, EntryStatus, Role, ToolStatus, TurnUsage};

use crate::storage::record::ENTRY_FORMAT_VERSION;

/// Flag: the message id is stored (it is not the generated one).
pub(crate) const MESSAGE_ID: u8 = 1;
/// Flag: a token count is stored.
pub(crate) const TOKENS: u8 = 1 << 1;
/// Flag: a tool call id is stored.
pub(crate) const TOOL_CALL_ID: u8 = 1 << 2;
/// Flag: a turn id is stored.
pub(crate) const TURN_ID: u8 = 1 << 3;
/// Flag: the rarer fields follow as JSON.
pub(crate) const EXTRA: u8 = 1 << 4;
const KNOWN_FLAGS: u8 = MESSAGE_ID | TOKENS | TOOL_CALL_ID | TURN_ID | EXTRA;

const ROLES: [Role; 4] = [Role::User, Role::Assistant, Role::Tool, Role::System];

/// The message id an entry of identity `session_id` gets when its writer gives none.
pub(crate) fn generated_message_id(session_id: &str, id: u64) -> String {
    // Written out by hand: every entry read or appended without a message id of its
    // own makes one, and the formatting machinery costs more than the copy.
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = id;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut out = String::with_capacity(session_id.len() + 1 + digits.len() - at);
    out.push_str(session_id);
    out.push('-');
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
    out
}

/// The entry number `n` when `message_id` has the generated form `{session_id}-{n}` of
/// identity `session_id` (`n` in canonical decimal: no sign, no leading zero).
pub(crate) fn generated_number(session_id: &str, message_id: &str) -> Option<u64> {
    let digits = message_id
        .strip_prefix(session_id)?
        .strip_prefix('-')
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))?;
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

/// The fields of an entry that most entries leave out, stored as JSON when any is set.
#[derive(Serialize)]
struct ExtraRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_usage: Option<&'a TurnUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_status: Option<ToolStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(skip_serializing_if = "<[Attachment]>::is_empty")]
    attachments: &'a [Attachment],
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<EntryKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<EntryStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_reason: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Extra {
    #[serde(default)]
    tool_calls: Option<serde_json::Value>,
    #[serde(default)]
    turn_usage: Option<TurnUsage>,
    #[serde(default)]
    tool_status: Option<ToolStatus>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    attachments: Vec<Attachment>,
    #[serde(default)]
    kind: Option<EntryKind>,
    #[serde(default)]
    status: Option<EntryStatus>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Encodes `entry` as a record of identity `session_id` (format
/// [`ENTRY_FORMAT_VERSION`]); with `None` the message id is always stored (a record
/// kept outside its identity's range, e.g. a fork's frozen snapshot).
pub(crate) fn encode_entry(entry: &Entry, session_id: Option<&str>) -> Result<Vec<u8>, Error> {
    let role = ROLES
        .iter()
        .position(|r| *r == entry.role)
        .ok_or_else(|| Error::internal("a role without a code"))? as u8;
    let generated =
        session_id.is_some_and(|sid| generated_number(sid, &entry.message_id) == Some(entry.id));
    let has_extra = entry.tool_calls.is_some()
        || entry.turn_usage.is_some()
        || entry.tool_status.is_some()
        || entry.reasoning.is_some()
        || !entry.attachments.is_empty()
        || entry.kind.is_some()
        || entry.status.is_some()
        || entry.stop_reason.is_some();
    let flags = [
        (!generated, MESSAGE_ID),
        (entry.token_count.is_some(), TOKENS),
        (entry.tool_call_id.is_some(), TOOL_CALL_ID),
        (entry.turn_id.is_some(), TURN_ID),
        (has_extra, EXTRA),
    ]
    .iter()
    .filter(|(set, _)| *set)
    .fold(0u8, |flags, (_, flag)| flags | flag);
    let extra = if has_extra {
        serde_json::to_vec(&ExtraRef {
            tool_calls: entry.tool_calls.as_ref(),
            turn_usage: entry.turn_usage.as_ref(),
            tool_status: entry.tool_status,
            reasoning: entry.reasoning.as_deref(),
            attachments: &entry.attachments,
            kind: entry.kind,
            status: entry.status,
            stop_reason: entry.stop_reason.as_deref(),
        })
        .map_err(|e| Error::internal(format!("entry does not encode: {e}")))?
    } else {
        Vec::new()
    };
    let texts = [&entry.tool_call_id, &entry.turn_id];
    // Allocated once, at its size (at most 10 bytes per varint): a batch of large
    // entries holds every record at once.
    let message_id = if generated { 0 } else { entry.message_id.len() };
    let size = 3
        + 10 * 5
        + message_id
        + texts
            .iter()
            .flat_map(|t| t.as_ref())
            .map(String::len)
            .sum::<usize>()
        + extra.len()
        + entry.content.len();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&[ENTRY_FORMAT_VERSION, role, flags]);
    if !generated {
        put_bytes(&mut out, entry.message_id.as_bytes());
    }
    if let Some(tokens) = entry.token_count {
        put_varint(&mut out, tokens);
    }
    for text in texts.into_iter().flatten() {
        put_bytes(&mut out, text.as_bytes());
    }
    if has_extra {
        put_bytes(&mut out, &extra);
    }
    out.extend_from_slice(entry.content.as_bytes());
    Ok(out)
}

/// Decodes the entry record stored under `key` (an entry, archive or fork snapshot key:
/// tag, name, then the entry's position, see [`keys::entry_position`]) of the session
/// `session_id` (`None`: a record that always stores its message id). Reads every format this build knows.
pub(crate) fn decode_entry(
    key: &[u8],
    value: &[u8],
    session_id: Option<&str>,
) -> Result<Entry, Error> {
    let corrupt = |detail: &str| Error::Corruption {
        key: keys::display(key),
        detail: detail.to_owned(),
    };
    match value.first() {
        Some(&ENTRY_FORMAT_VERSION) => {}
        _ => return record::decode(key, value),
    }
    let (created_at, id) =
        keys::entry_position(key).ok_or_else(|| corrupt("an entry key without a position"))?;
    let mut reader = Reader::new(key, &value[1..]);
    let role = *ROLES
        .get(usize::from(reader.byte()?))
        .ok_or_else(|| corrupt("unknown role code"))?;
    let flags = reader.byte()?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(corrupt("unknown entry flags"));
    }
    let message_id = if flags & MESSAGE_ID != 0 {
        reader.text()?
    } else {
        let sid = session_id.ok_or_else(|| corrupt("an entry record without its message id"))?;
        generated_message_id(sid, id)
    };
    let token_count = (flags & TOKENS != 0).then(|| reader.varint()).transpose()?;
    let tool_call_id = (flags & TOOL_CALL_ID != 0)
        .then(|| reader.text())
        .transpose()?;
    let turn_id = (flags & TURN_ID != 0).then(|| reader.text()).transpose()?;
    let extra = if flags & EXTRA != 0 {
        let bytes = reader.bytes()?;
        crate::record::from_json::<Extra>(bytes).map_err(|e| corrupt(&e.to_string()))?
    } else {
        Extra {
            tool_calls: None,
            turn_usage: None,
            tool_status: None,
            reasoning: None,
            attachments: Vec::new(),
            kind: None,
            status: None,
            stop_reason: None,
        }
    };
    let content = String::from_utf8(reader.rest.to_vec())
        .map_err(|_| corrupt("entry content is not UTF-8"))?;
    Ok(Entry {
        id,
        message_id,
        role,
        content,
        created_at,
        token_count,
        tool_calls: extra.tool_calls,
        tool_call_id,
        turn_id,
        turn_usage: extra.turn_usage,
        tool_status: extra.tool_status,
        reasoning: extra.reasoning,
        attachments: extra.attachments,
        kind: extra.kind,
        status: extra.status,
        stop_reason: extra.stop_reason,
    })
}

#[cfg(test)]
#[path = "tests/entry_record.rs"]
mod tests;
