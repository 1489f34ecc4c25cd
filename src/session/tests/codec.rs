use super::*;

fn rich() -> Session {
    let mut s = Session::new("agent:main:main", "sid-1", 5);
    s.agent_id = None;
    s.status = SessionStatus::Failed;
    s.epoch = 3;
    s.updated_at = u64::MAX;
    s.entry_count = 300;
    s.last_entry_id = 301;
    s.total_tokens = 1 << 40;
    s.ended_at = Some(9);
    s.runtime_ms = Some(0);
    s.input_tokens = 1;
    s.output_tokens = 2;
    s.cache_read = 3;
    s.cache_write = 4;
    s.estimated_cost_usd = 0.1;
    s.total_cost_usd = 1e-12;
    s.billed_cost_usd = 12345.678;
    s.estimated_cost_component_usd = -0.0;
    s.cost_source = "mixed".into();
    s.missing_cost_entries = 7;
    s.compaction_count = 2;
    s.model = Some("claude-é".into());
    s.channel = Some(String::new());
    s.model_config
        .insert("temperature".into(), serde_json::json!(0.2));
    s.metadata.insert("k".into(), serde_json::json!({"a": [1]}));
    s.last_state_id = 11;
    s.message_index = false;
    s
}

fn layer() -> Layer {
    Layer {
        data_id: "~p1".into(),
        session_id: Some("parent-1".into()),
        last_entry_id: 4,
        compactions: 1,
        before: Some((10, 3)),
        flatten: true,
        indexed: true,
    }
}

#[test]
fn test_every_field_and_the_tail_round_trip() {
    let session = rich();
    let lineage = BranchLineage {
        parent_session_key: Some("agent:main:parent".into()),
        spawn_depth: 2,
        forked_from_parent: true,
        fork_point: None,
        fork_count: 5,
    };
    let base = [layer()];
    let bytes = encode(
        &session,
        Some("~Xy"),
        Some(&lineage),
        &base,
        Some(77),
        Some((70, 9)),
    )
    .expect("enc");
    assert_eq!(bytes[0], record::DATA_ID_FORMAT_VERSION);
    let (back, tail) = decode(b"s", &bytes).expect("decodes");
    assert_eq!(tail.data_id.as_deref(), Some("~Xy"));
    assert_eq!(back, session);
    assert_eq!(
        back.estimated_cost_component_usd.to_bits(),
        (-0.0f64).to_bits()
    );
    assert_eq!(tail.lineage, Some(lineage));
    assert_eq!(tail.base, base);
    assert_eq!(tail.newest_entry_at, Some(77));
    assert_eq!(tail.active_from, Some((70, 9)));

    let plain = Session::new("k", "s", 1);
    let bytes = encode(&plain, None, None, &[], None, None).expect("enc");
    assert_eq!(bytes[0], record::SESSION_FORMAT_VERSION);
    let (back, tail) = decode(b"s", &bytes).expect("decodes");
    assert_eq!(back, plain);
    assert!(tail.data_id.is_none());
    assert!(tail.lineage.is_none() && tail.base.is_empty());
    assert_eq!((tail.newest_entry_at, tail.active_from), (None, None));
}

#[test]
fn test_every_cut_and_damage_is_corruption() {
    let bytes = encode(&rich(), None, None, &[layer()], Some(1), None).expect("enc");
    for len in 0..bytes.len() {
        let err = decode(b"s", &bytes[..len]).expect_err("cut short");
        assert_eq!(err.code(), "corruption", "cut at {len}");
    }
    let minted = encode(&rich(), Some("~ab"), None, &[], Some(1), None).expect("enc");
    for len in 0..minted.len() {
        let err = decode(b"s", &minted[..len]).expect_err("cut short");
        assert_eq!(err.code(), "corruption", "cut at {len}");
    }
    // A format-7 record naming its keys by anything but a minted id would read
    // another identity's entries.
    let foreign = encode(&rich(), Some("sid-2"), None, &[], Some(1), None).expect("enc");
    assert_eq!(
        decode(b"s", &foreign).expect_err("not minted").code(),
        "corruption"
    );
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert_eq!(
        decode(b"s", &trailing).expect_err("trailing").code(),
        "corruption"
    );
    // The status byte follows the key, the id and the absent agent id.
    let mut status = encode(&Session::new("k", "s", 1), None, None, &[], None, None).expect("e");
    let at = 1 + 2 + 2 + 1;
    assert_eq!(status[at], 0);
    status[at] = 3;
    assert_eq!(
        decode(b"s", &status).expect_err("status").code(),
        "corruption"
    );
}
