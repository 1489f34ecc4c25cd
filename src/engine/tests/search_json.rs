use super::*;

#[test]
fn test_search_records_round_trip_as_documented() {
    let page = SearchPage {
        hits: vec![SearchHit {
            session_key: "agent:main:main".into(),
            session_id: "s1".into(),
            entry_id: 3,
            message_id: "s1-3".into(),
            role: Role::Assistant,
            created_at: 7,
            score: 1.5,
            snippet: Snippet {
                field: "content".into(),
                text: "the parser".into(),
                highlights: vec![(4, 10)],
            },
        }],
        next_cursor: Some("01ab".into()),
        unindexed: 0,
    };
    let json = serde_json::to_value(&page).expect("serializes");
    assert_eq!(
        json["hits"][0]["snippet"]["highlights"],
        serde_json::json!([[4, 10]])
    );
    assert_eq!(json["hits"][0]["role"], "assistant");
    let back: SearchPage = serde_json::from_value(json).expect("deserializes");
    assert_eq!(back, page);

    let request: SearchRequest =
        serde_json::from_str(r#"{"query":"parser"}"#).expect("a minimal request");
    assert_eq!(request.limit, crate::engine::ops::search_limit());
    assert_eq!(request.cursor, None);
    assert!(serde_json::from_str::<SearchRequest>(r#"{"query":"x","page":2}"#).is_err());
}
