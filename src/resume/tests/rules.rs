use super::*;

fn row(token: &str, status: &str, at: u64) -> RunRecord {
    RunRecord {
        agent_type: "codex".into(),
        project_id: "proj1".into(),
        session_id: token.into(),
        status: status.into(),
        updated_at: at,
        ..RunRecord::default()
    }
}

fn query(role: Option<&[(&str, &str)]>) -> ResumeQuery {
    ResumeQuery {
        agent_type: "codex".into(),
        project_id: Some("proj1".into()),
        scope_id: Some("sess-a".into()),
        role_state: role.map(|pairs| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::String((*v).into())))
                .collect()
        }),
        preconfigured: None,
    }
}

#[test]
fn test_role_state_comes_first_and_sets_task_metadata() {
    let d = choose_resume(
        &query(Some(&[("resume_session_id", "thread-role")])),
        &[],
        &ResumePolicy::default(),
    );
    assert_eq!(
        (d.mode.as_str(), d.session_id.as_str()),
        ("resume", "thread-role")
    );
    assert_eq!(d.set_metadata["external_resume_session_id"], "thread-role");
    assert_eq!(d.set_metadata["external_resume_agent_type"], "codex");
    assert_eq!(d.set_metadata["external_resume_session_scope_id"], "sess-a");
}

#[test]
fn test_nothing_to_resume_stays_auto() {
    let d = choose_resume(&query(None), &[], &ResumePolicy::default());
    assert_eq!((d.mode.as_str(), d.session_id.as_str()), ("auto", ""));
}

#[test]
fn test_newer_failed_row_vetoes_older_done_row() {
    let history = [
        row("thread-full", "done", 1),
        row("thread-full", "failed", 2),
    ];
    let d = choose_resume(&query(None), &history, &ResumePolicy::default());
    assert_eq!((d.mode.as_str(), d.session_id.as_str()), ("auto", ""));
    let history = [
        row("thread-full", "failed", 1),
        row("thread-full", "done", 2),
    ];
    assert_eq!(
        choose_resume(&query(None), &history, &ResumePolicy::default()).session_id,
        "thread-full"
    );
}

#[test]
fn test_synthetic_monitor_ids_are_never_resumed() {
    let synthetic = "codex:proj1:task-new";
    let d = choose_resume(
        &query(Some(&[("resume_session_id", synthetic)])),
        &[row(synthetic, "working", 1)],
        &ResumePolicy::default(),
    );
    assert_eq!((d.mode.as_str(), d.session_id.as_str()), ("auto", ""));
    assert!(!d.set_metadata.contains_key("external_resume_session_id"));
    assert!(
        !choose_resume(
            &query(None),
            &[row(synthetic, "done", 1)],
            &ResumePolicy::default()
        )
        .mode
        .eq("resume")
    );
}

#[test]
fn test_failed_stream_token_is_rejected_and_cleared() {
    let role = [
        ("resume_session_id", "thread-failed"),
        ("source", "provider_stream"),
        ("status", "working"),
    ];
    let d = choose_resume(
        &query(Some(&role)),
        &[row("thread-failed", "failed", 1)],
        &ResumePolicy::default(),
    );
    assert_eq!((d.mode.as_str(), d.session_id.as_str()), ("new", ""));
    assert!(d.clear_role_state);
    // Unconfirmed (still working): not resumed, not cleared.
    let d = choose_resume(
        &query(Some(&role)),
        &[row("thread-failed", "working", 1)],
        &ResumePolicy::default(),
    );
    assert_eq!((d.mode.as_str(), d.clear_role_state), ("auto", false));
    // Confirmed by a finished run: resumed.
    let d = choose_resume(
        &query(Some(&role)),
        &[row("thread-failed", "done", 1)],
        &ResumePolicy::default(),
    );
    assert_eq!(d.session_id, "thread-failed");
}

#[test]
fn test_terminal_role_token_is_rejected_even_when_preconfigured() {
    let mut q = query(Some(&[("resume_session_id", "thread-terminal")]));
    q.preconfigured = Some("thread-terminal".into());
    let d = choose_resume(
        &q,
        &[row("thread-terminal", "failed", 1)],
        &ResumePolicy::default(),
    );
    assert_eq!(
        (d.mode.as_str(), d.session_id.as_str(), d.clear_role_state),
        ("new", "", true)
    );
    assert_eq!(
        d.set_metadata["external_resume_fallback"],
        "provider_terminal_failure"
    );
    assert!(
        d.remove_metadata
            .contains(&"external_resume_session_id".to_owned())
    );
    // Claude Code sessions survive failed runs.
    let mut cc = q.clone();
    cc.agent_type = "claude_code".into();
    let mut cc_row = row("thread-terminal", "failed", 1);
    cc_row.agent_type = "claude_code".into();
    assert_eq!(
        choose_resume(&cc, &[cc_row], &ResumePolicy::default()).mode,
        "resume"
    );
}

#[test]
fn test_agent_types_never_share_tokens() {
    let mut q = query(None);
    q.agent_type = "claude_code".into();
    let d = choose_resume(
        &q,
        &[row("thread-codex-only", "done", 1)],
        &ResumePolicy::default(),
    );
    assert_ne!(d.session_id, "thread-codex-only");
}

fn outcome(status: &str, token: Option<&str>, resumed_from: Option<&str>) -> TaskOutcome {
    TaskOutcome {
        agent_type: "codex".into(),
        task_id: "task-1".into(),
        status: status.into(),
        token: token.map(str::to_owned),
        resumed_from: resumed_from.map(str::to_owned),
        from_stream: false,
    }
}

#[test]
fn test_done_pins_and_failed_never_pins() {
    let policy = ResumePolicy::default();
    match outcome_effects(&outcome("done", Some("thread-pr6"), None), None, &policy).role_state {
        RoleStateChange::Set { entry } => {
            assert_eq!(entry["resume_session_id"], "thread-pr6");
            assert_eq!(entry["agent_type"], "codex");
            assert_eq!(entry["last_task_id"], "task-1");
        }
        other => panic!("expected a pin, got {other:?}"),
    }
    let failed = outcome_effects(
        &outcome("failed", Some("thread-broken"), None),
        None,
        &policy,
    );
    assert_eq!(failed.role_state, RoleStateChange::Keep);
    assert!(failed.set_metadata.is_empty());
}

#[test]
fn test_failed_resume_clears_the_token_it_was_resuming() {
    let effects = outcome_effects(
        &outcome("failed", Some("thread-full"), Some("thread-full")),
        Some("thread-full"),
        &ResumePolicy::default(),
    );
    assert_eq!(effects.role_state, RoleStateChange::Clear);
    assert!(
        effects
            .remove_metadata
            .contains(&"external_resume_session_id".to_owned())
    );
    assert_eq!(
        effects.set_metadata["external_resume_fallback"],
        "provider_terminal_failure"
    );
}

#[test]
fn test_stream_capture_is_recorded_as_unconfirmed() {
    let mut o = outcome("working", Some("thread-live"), None);
    o.from_stream = true;
    match outcome_effects(&o, None, &ResumePolicy::default()).role_state {
        RoleStateChange::Set { entry } => {
            assert_eq!(entry["source"], "provider_stream");
            assert_eq!(entry["status"], "working");
        }
        other => panic!("expected the stream token recorded, got {other:?}"),
    }
}
