use super::*;

#[test]
fn test_decode_garbage_is_corruption_naming_the_key() {
    let err = decode::<serde_json::Value>(b"s\x00k", b"\x01{not json").expect_err("must fail");
    match err {
        Error::Corruption { key, .. } => assert_eq!(key, "s\\x00k"),
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn test_flat_records_read_what_they_write() {
    use crate::compaction::ArchivedEntry;
    use crate::provider_fork::types::{ForkLineage, ForkedSession};
    use crate::types::{AppendRequest, Entry, Role, Session};

    let entry = Entry::from_request(AppendRequest::new(Role::User, "hi"), 7, "m-7".into(), 9);
    let archived = ArchivedEntry {
        entry: entry.clone(),
        compaction_id: "c-1".into(),
        compaction_index: 3,
    };
    let read: ArchivedEntry = decode(b"k", &encode(&archived).unwrap()).unwrap();
    assert_eq!(read, archived);
    // Records written before the compaction fields read them as their defaults.
    let bare: ArchivedEntry = decode(b"k", &encode(&entry).unwrap()).unwrap();
    assert_eq!(
        (bare.entry, bare.compaction_id, bare.compaction_index),
        (entry, String::new(), 0)
    );
    // A field of the wrong type, or a value that is no object, is corruption.
    let mut wrong = serde_json::to_value(&archived).unwrap();
    wrong["compaction_index"] = "three".into();
    let err = decode::<ArchivedEntry>(b"k", &encode(&wrong).unwrap()).unwrap_err();
    assert_eq!(err.code(), "corruption");
    assert_eq!(
        decode::<ArchivedEntry>(b"k", b"\x02[1]")
            .unwrap_err()
            .code(),
        "corruption"
    );

    let forked = ForkedSession {
        session: Session::new("child", "sid-2", 5),
        forked_from: ForkLineage {
            target_key: "child".into(),
            target_session_id: "sid-2".into(),
            source_key: "parent".into(),
            source_session_id: "sid-1".into(),
            source_turn_id: Some("t-1".into()),
            target_turn_id: None,
            operation_id: "op".into(),
            forked_at: 5,
        },
    };
    let read: ForkedSession = decode(b"k", &encode(&forked).unwrap()).unwrap();
    assert_eq!(read, forked);
    // The lineage is not optional.
    let mut missing = serde_json::to_value(&forked).unwrap();
    missing.as_object_mut().unwrap().remove("forked_from");
    let err = decode::<ForkedSession>(b"k", &encode(&missing).unwrap()).unwrap_err();
    assert!(err.to_string().contains("forked_from"), "{err}");
}

#[test]
fn test_decode_future_version_is_corruption() {
    let err = decode::<serde_json::Value>(b"k", b"\x09{}").expect_err("must fail");
    assert_eq!(err.code(), "corruption");
}

#[test]
fn test_json_reads_a_member_named_twice_as_its_last_value() {
    #[derive(serde::Deserialize)]
    struct Pair {
        a: u32,
    }
    let pair: Pair = from_json(br#"{"a":1,"a":2}"#).expect("reads");
    assert_eq!(pair.a, 2);
    // A member of the wrong type is an error, not a default.
    assert!(from_json::<Pair>(br#"{"a":"1"}"#).is_err());
}

#[test]
fn test_decode_wrong_shape_is_corruption_naming_the_key() {
    let err = decode::<Vec<u32>>(b"k\x01", b"\x02{\"a\":1}").expect_err("must fail");
    match err {
        Error::Corruption { key, detail } => {
            assert_eq!(key, "k\\x01");
            assert!(detail.contains("expected a sequence"), "{detail}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn test_round_trip() {
    let bytes = encode(&serde_json::json!({"a": 1})).expect("encodes");
    assert_eq!(bytes[0], FORMAT_VERSION);
    let back: serde_json::Value = decode(b"k", &bytes).expect("decodes");
    assert_eq!(back["a"], 1);
}
