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
use crate::types::{Attachment, Entry, EntryKind, Role, ToolStatus, TurnUsage};

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
        || entry.kind.is_some();
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, message_id: &str) -> Entry {
        Entry {
            id,
            message_id: message_id.to_owned(),
            role: Role::Assistant,
            content: "the parser drops the last element".into(),
            created_at: 1_700_000_000_123,
            token_count: Some(300),
            tool_calls: None,
            tool_call_id: None,
            turn_id: None,
            turn_usage: None,
            tool_status: None,
            reasoning: None,
            attachments: Vec::new(),
            kind: None,
        }
    }

    fn key(e: &Entry) -> Vec<u8> {
        keys::entry("s1", e.created_at, e.id)
    }

    #[test]
    fn test_plain_entry_round_trips_in_few_bytes() {
        let e = entry(7, "s1-7");
        let bytes = encode_entry(&e, Some("s1")).expect("encodes");
        // version, role, flags, the token count (2 bytes), the content: nothing else.
        assert_eq!(bytes.len(), 3 + 2 + e.content.len());
        assert_eq!(
            decode_entry(&key(&e), &bytes, Some("s1")).expect("decodes"),
            e
        );
    }

    #[test]
    fn test_every_field_round_trips() {
        let mut e = entry(9, "msg-é");
        e.role = Role::Tool;
        e.token_count = Some(u64::MAX);
        e.tool_call_id = Some("call_1".into());
        e.turn_id = Some("turn-2".into());
        e.tool_calls = Some(serde_json::json!([{"id": "c", "name": "bash"}]));
        e.tool_status = Some(ToolStatus::Error);
        e.reasoning = Some("because".into());
        e.kind = Some(EntryKind::Summary);
        e.content = String::new();
        let bytes = encode_entry(&e, Some("s1")).expect("encodes");
        assert_eq!(
            decode_entry(&key(&e), &bytes, Some("s1")).expect("decodes"),
            e
        );
        assert_eq!(decode_entry(&key(&e), &bytes, None).expect("decodes"), e);
    }

    #[test]
    fn test_a_record_is_allocated_once_at_its_size() {
        let mut e = entry(9, "explicit");
        e.content = "x".repeat(4096);
        e.tool_call_id = Some("call_123".into());
        e.turn_id = Some("turn".into());
        e.tool_calls = Some(serde_json::json!([{"name": "bash", "input": {"cmd": "make"}}]));
        let bytes = encode_entry(&e, Some("s1")).expect("encodes");
        assert!(
            bytes.capacity() <= bytes.len() + 64,
            "{} for {}",
            bytes.capacity(),
            bytes.len()
        );
    }

    #[test]
    fn test_generated_id_is_left_out_only_for_its_own_identity_and_number() {
        let own = encode_entry(&entry(7, "s1-7"), Some("s1")).expect("encodes");
        assert_eq!(own[2] & MESSAGE_ID, 0);
        for (id, message_id, sid) in [
            (7, "s1-8", Some("s1")),
            (7, "s1-07", Some("s1")),
            (7, "s2-7", Some("s1")),
            (7, "s1-7", None),
        ] {
            let e = entry(id, message_id);
            let bytes = encode_entry(&e, sid).expect("encodes");
            assert_ne!(bytes[2] & MESSAGE_ID, 0, "{message_id}");
            assert_eq!(decode_entry(&key(&e), &bytes, sid).expect("decodes"), e);
        }
        assert_eq!(generated_number("s1", "s1-0"), Some(0));
        assert_eq!(generated_number("s1", "s1-"), None);
        assert_eq!(generated_number("s1", "s1-+1"), None);
        assert_eq!(generated_number("s1", "s1-99999999999999999999"), None);
    }

    #[test]
    fn test_a_generated_message_id_is_the_id_in_decimal() {
        let mut ids = vec![0, 1, 9, 10, 99, 100, 12_345, u64::MAX - 1, u64::MAX];
        ids.extend((0..64).map(|shift| 1u64 << shift));
        ids.extend((0..20).map(|p| 10u64.pow(p) - 1));
        for id in ids {
            let made = generated_message_id("s-1", id);
            assert_eq!(made, format!("s-1-{id}"));
            assert_eq!(generated_number("s-1", &made), Some(id));
        }
    }

    #[test]
    fn test_json_records_of_earlier_formats_still_read() {
        let e = entry(3, "m-3");
        let old = record::encode_as(2, &e).expect("encodes");
        assert_eq!(
            decode_entry(&key(&e), &old, Some("s1")).expect("decodes"),
            e
        );
    }

    #[test]
    fn test_damaged_records_are_corruption_never_a_panic() {
        let e = entry(7, "x");
        let mut full = encode_entry(&e, Some("s1")).expect("encodes");
        full[2] |= EXTRA | TOOL_CALL_ID;
        let cases: Vec<Vec<u8>> = vec![
            vec![6],
            vec![6, 9, 0],
            vec![6, 0, 0x80],
            vec![6, 0, MESSAGE_ID, 50, b'a'],
            vec![
                6, 0, TOKENS, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
            ],
            vec![6, 0, 0, 0xff, 0xfe],
            vec![6, 0, EXTRA, 2, b'{', b'x'],
            full,
        ];
        for value in cases {
            let err = decode_entry(&key(&e), &value, Some("s1")).expect_err("damaged");
            assert_eq!(err.code(), "corruption", "{value:?}");
        }
        let short_key = decode_entry(b"e", &[6, 0, 0], Some("s1")).expect_err("no position");
        assert_eq!(short_key.code(), "corruption");
        let no_id = encode_entry(&entry(7, "s1-7"), Some("s1")).expect("encodes");
        assert_eq!(
            decode_entry(&key(&entry(7, "")), &no_id, None)
                .expect_err("needs its identity")
                .code(),
            "corruption"
        );
    }
}
