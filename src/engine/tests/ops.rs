use super::*;

#[test]
fn test_unknown_fields_are_rejected_not_ignored() {
    let misspelt = r#"{"op":"append_entry","key":"k","now_ms":1,
        "request":{"role":"user","content":"x","tokenCount":3}}"#;
    assert!(serde_json::from_str::<Command>(misspelt).is_err());
    let extra = r#"{"op":"get_session","key":"k","bogus":1}"#;
    assert!(serde_json::from_str::<Command>(extra).is_err());
    let good = r#"{"op":"append_entry","key":"k","now_ms":1,
        "request":{"role":"user","content":"x","token_count":3}}"#;
    let Ok(Command::AppendEntry { request, .. }) = serde_json::from_str::<Command>(good) else {
        panic!("a well-formed call parses");
    };
    assert_eq!(request.token_count, Some(3));
}

#[test]
fn test_fork_calls_reject_unknown_fields() {
    let misspelt = r#"{"op":"fork","source_key":"s","operation_id":"o","now_ms":1,
        "request":{"request_id":"r","target_key":"t","target_session_id":"t1",
        "throughTurnId":"turn-1"}}"#;
    assert!(serde_json::from_str::<Command>(misspelt).is_err());
    let disposition = r#"{"op":"record_fork_disposition","operation_id":"o","now_ms":1,
        "disposition":{"disposition":"rejected","error":"no","code":"x"}}"#;
    assert!(serde_json::from_str::<Command>(disposition).is_err());
    let good = r#"{"op":"record_fork_disposition","operation_id":"o","now_ms":1,
        "disposition":{"disposition":"rejected","error":"no","reason":"attachment_unsupported"}}"#;
    assert!(serde_json::from_str::<Command>(good).is_ok());
}

#[test]
fn test_every_command_names_its_table_entry() {
    let call = Command::from_json(r#"{"op":"count_entries","key":"k"}"#);
    assert_eq!(call.map(|c| c.name()).ok(), Some("count_entries"));
    let mut names = NAMES.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), NAMES.len(), "call names are unique");
}
