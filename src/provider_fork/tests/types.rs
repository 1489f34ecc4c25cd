use super::*;

#[test]
fn test_public_status_collapses_active_internal_states() {
    for (state, phase) in [
        (ForkState::Prepared, ForkPhase::Frozen),
        (ForkState::Dispatching, ForkPhase::Dispatching),
        (ForkState::ProviderAccepted, ForkPhase::Materializing),
    ] {
        assert_eq!(state.status(), ForkStatus::Accepted);
        assert_eq!(state.phase(), Some(phase));
    }
    assert_eq!(ForkState::Committed.status(), ForkStatus::Committed);
    assert_eq!(ForkState::Failed.status(), ForkStatus::Failed);
    assert_eq!(ForkState::Unknown.status(), ForkStatus::Unknown);
    assert_eq!(ForkState::Committed.phase(), None);
}

#[test]
fn test_transitions_follow_the_state_machine() {
    use ForkEvent as E;
    use ForkState as S;
    assert_eq!(transition(S::Prepared, E::Dispatch), Ok(S::Dispatching));
    assert_eq!(
        transition(S::Dispatching, E::ProviderAccepted),
        Ok(S::ProviderAccepted)
    );
    assert_eq!(
        transition(S::Dispatching, E::ProviderRejected),
        Ok(S::Failed)
    );
    assert_eq!(
        transition(S::Dispatching, E::DeliveryUnknown),
        Ok(S::Unknown)
    );
    assert_eq!(transition(S::ProviderAccepted, E::Commit), Ok(S::Committed));
    assert_eq!(transition(S::Dispatching, E::Restart), Ok(S::Unknown));
    assert_eq!(transition(S::Prepared, E::Restart), Ok(S::Prepared));
    assert_eq!(
        transition(S::ProviderAccepted, E::Restart),
        Ok(S::ProviderAccepted)
    );
}

#[test]
fn test_stale_transition_is_a_typed_fork_conflict() {
    use ForkEvent as E;
    use ForkState as S;
    for (from, event) in [
        (S::Prepared, E::Commit),
        (S::Dispatching, E::Dispatch),
        (S::Committed, E::Commit),
        (S::Failed, E::ProviderAccepted),
        (S::Unknown, E::Restart),
        (S::Prepared, E::ProviderAccepted),
    ] {
        let err = transition(from, event).expect_err("stale");
        assert_eq!(err.code(), "conflict");
        assert_eq!(
            err.fork_reason(),
            Some("stale_transition"),
            "{from:?} {event:?}"
        );
    }
}

#[test]
fn test_barrier_holds_until_failed_or_acknowledged() {
    assert!(holds_barrier(ForkState::Prepared, false));
    assert!(holds_barrier(ForkState::Dispatching, false));
    assert!(holds_barrier(ForkState::ProviderAccepted, false));
    assert!(holds_barrier(ForkState::Unknown, false));
    assert!(holds_barrier(ForkState::Committed, false));
    assert!(!holds_barrier(ForkState::Committed, true));
    assert!(!holds_barrier(ForkState::Failed, false));
}

#[test]
fn test_target_context_keeps_worktree_facts_and_prefers_prepared_cwd() {
    let mut source = Session::new("agent:a:src", "s1", 1);
    source
        .metadata
        .insert(CWD_KEY.into(), "/tmp/source-worktree".into());
    source.metadata.insert(
        "worktree_isolation".into(),
        serde_json::json!({"mode": "worktree", "worktree_id": "worktree-1"}),
    );
    source
        .model_config
        .insert(PROVIDER_KEY.into(), "codex".into());
    source
        .model_config
        .insert(PROVIDER_SESSION_ID_KEY.into(), "thread-source".into());
    source
        .model_config
        .insert("codex_thread_id".into(), "thread-source".into());
    source
        .model_config
        .insert("runtime_snapshot".into(), serde_json::json!({"version": 1}));

    let kept = target_context(&source, None);
    assert_eq!(kept.cwd.as_deref(), Some("/tmp/source-worktree"));
    assert_eq!(
        kept.metadata["worktree_isolation"]["worktree_id"],
        "worktree-1"
    );
    assert_eq!(kept.model_config[PROVIDER_KEY], "codex");
    assert_eq!(kept.model_config["runtime_snapshot"]["version"], 1);
    assert!(!kept.model_config.contains_key(PROVIDER_SESSION_ID_KEY));
    assert!(!kept.model_config.contains_key("codex_thread_id"));

    let prepared = target_context(&source, Some("/prepared-project"));
    assert_eq!(prepared.cwd.as_deref(), Some("/prepared-project"));
    assert_eq!(prepared.metadata[CWD_KEY], "/prepared-project");
    assert!(prepared.metadata.contains_key("worktree_isolation"));
}

#[test]
fn test_request_hash_changes_with_any_field() {
    let base = ForkRequest {
        request_id: "r".into(),
        target_key: "t".into(),
        target_session_id: "ts".into(),
        through_turn_id: Some("turn-7".into()),
        cwd: None,
    };
    let same = request_hash("src", &base);
    assert_eq!(same, request_hash("src", &base.clone()));
    assert_ne!(same, request_hash("other", &base));
    let mut changed = base.clone();
    changed.through_turn_id = Some("turn-8".into());
    assert_ne!(same, request_hash("src", &changed));
}

fn committed() -> ForkOperation {
    let lineage = ForkLineage {
        target_key: "t".into(),
        target_session_id: "target-1".into(),
        source_key: "s".into(),
        source_session_id: "source-1".into(),
        source_turn_id: Some("turn-7".into()),
        target_turn_id: Some("turn-7".into()),
        operation_id: "op-1".into(),
        forked_at: 200,
    };
    ForkOperation {
        operation_id: "op-1".into(),
        request_id: "r".into(),
        request_hash: "h".into(),
        request: ForkRequest {
            request_id: "r".into(),
            target_key: "t".into(),
            target_session_id: "target-1".into(),
            through_turn_id: Some("turn-7".into()),
            cwd: None,
        },
        state: ForkState::Committed,
        source_key: "s".into(),
        source_session_id: "source-1".into(),
        source_provider: None,
        source_provider_session_id: None,
        point: ForkPoint {
            kind: ForkPointKind::ThroughTurn,
            turn_id: Some("turn-7".into()),
            turn_seq: Some(1),
            provider_turn_id: None,
            provider_binding: None,
        },
        boundary: None,
        snapshot_copied: false,
        target_key: "t".into(),
        target_session_id: "target-1".into(),
        target_context: TargetContext::default(),
        target_provider_session_id: None,
        error: None,
        error_reason: None,
        session: Some(ForkedSession {
            session: Session::new("t", "target-1", 200),
            forked_from: lineage.clone(),
        }),
        lineage: Some(lineage),
        provider_state_binding: ProviderStateBinding::NotRequired,
        acknowledged_at: None,
        created_at: 100,
        updated_at: 200,
    }
}

#[test]
fn test_consistent_committed_identity_passes() {
    let op = committed();
    assert_eq!(check_committed_identity(&op, op.lineage.as_ref()), Ok(()));
    assert_eq!(check_committed_identity(&op, None), Ok(()));
}

#[test]
fn test_lineage_target_other_than_operation_target_is_fork_conflict() {
    let mut op = committed();
    if let Some(l) = op.lineage.as_mut() {
        l.target_session_id = "different-target".into();
    }
    let err = check_committed_identity(&op, None).expect_err("inconsistent");
    assert_eq!(err.fork_reason(), Some("inconsistent_identity"));
    assert!(err.to_string().contains("different-target"), "{err}");

    let op = committed();
    let mut live = op.lineage.clone().expect("lineage");
    live.operation_id = "op-2".into();
    let err = check_committed_identity(&op, Some(&live)).expect_err("inconsistent");
    assert_eq!(err.fork_reason(), Some("inconsistent_identity"));
}
