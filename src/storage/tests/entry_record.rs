use super::*;
use crate::types::AppendRequest;

fn entry(id: u64, message_id: &str) -> Entry {
    let mut request = AppendRequest::new(Role::Assistant, "the parser drops the last element");
    request.token_count = Some(300);
    Entry::from_request(request, id, message_id.to_owned(), 1_700_000_000_123)
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
