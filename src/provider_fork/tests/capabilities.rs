use super::*;
use crate::turns::TurnPhase;

fn turn(id: &str, phase: TurnPhase) -> Turn {
    Turn {
        turn_id: id.into(),
        seq: 1,
        session_key: "agent:a:source".into(),
        session_id: "source-1".into(),
        phase,
        provider_turn_id: Some(format!("provider-{id}")),
        provider_binding: Some(serde_json::json!({"schema_version": 1})),
        started_at: 1,
        ended_at: None,
        boundary: None,
    }
}

fn input(latest: Option<Turn>, active: Option<Turn>) -> SessionForkInput {
    SessionForkInput {
        key: "agent:a:source".into(),
        session_id: "source-1".into(),
        provider: Some("codex".into()),
        provider_session_id: Some("provider-session-1".into()),
        lineage: None,
        turns: TurnSummary { latest, active },
    }
}

fn answer(turn: Option<&str>, outcome: ProbeOutcome) -> ProbeAnswer {
    ProbeAnswer {
        session_key: "agent:a:source".into(),
        turn_id: turn.map(str::to_owned),
        outcome,
    }
}

#[test]
fn test_session_capability_is_the_providers_exact_capability() {
    let only_through = ProbeOutcome::Capability {
        fork: false,
        through_turn: true,
    };
    assert_eq!(
        session_capabilities(Some(&only_through), true),
        LifecycleCapabilities {
            fork: false,
            fork_through_turn: true
        }
    );
    let both = ProbeOutcome::Capability {
        fork: true,
        through_turn: true,
    };
    assert_eq!(
        session_capabilities(Some(&both), true),
        LifecycleCapabilities {
            fork: true,
            fork_through_turn: true
        }
    );
    // No turn to fork through: through-turn fails closed.
    assert!(!session_capabilities(Some(&both), false).fork_through_turn);
}

#[test]
fn test_session_capability_fails_closed_on_probe_error_or_rejection() {
    for outcome in [
        None,
        Some(ProbeOutcome::Failed {
            error: "probe unavailable".into(),
        }),
        Some(ProbeOutcome::Rejected { reason: None }),
        Some(ProbeOutcome::Forkable { available: true }),
    ] {
        assert_eq!(
            session_capabilities(outcome.as_ref(), true),
            LifecycleCapabilities::default(),
            "{outcome:?}"
        );
    }
}

#[test]
fn test_detail_capability_stays_true_while_busy() {
    let running = turn("turn-7", TurnPhase::Running);
    let inputs = [input(Some(running.clone()), Some(running))];
    let answers = [answer(
        None,
        ProbeOutcome::Capability {
            fork: false,
            through_turn: true,
        },
    )];
    let projected = project(ProjectionMode::Detail, &inputs, &answers);
    let caps = projected.sessions[0]
        .lifecycle_capabilities
        .expect("resolved");
    assert!(caps.fork_through_turn);
    assert!(!caps.fork);
}

#[test]
fn test_list_probes_same_active_and_latest_turn_once() {
    let settled = turn("turn-7", TurnPhase::Settled);
    let inputs = [input(Some(settled.clone()), Some(settled))];
    let probes = plan_probes(ProjectionMode::List, &inputs);
    assert_eq!(probes.len(), 1);
    assert_eq!(probes[0].turn_id.as_deref(), Some("turn-7"));
    assert_eq!(
        probes[0].provider_session_id.as_deref(),
        Some("provider-session-1")
    );

    let answers = [answer(
        Some("turn-7"),
        ProbeOutcome::Forkable { available: true },
    )];
    let projected = project(ProjectionMode::List, &inputs, &answers);
    assert!(projected.probes.is_empty());
    let session = &projected.sessions[0];
    assert_eq!(
        session.lifecycle_capabilities, None,
        "lists never resolve it"
    );
    assert!(
        session
            .latest_turn
            .as_ref()
            .expect("latest")
            .provider_fork_binding_available
    );
    assert!(
        session
            .active_turn
            .as_ref()
            .expect("active")
            .provider_fork_binding_available
    );
}

#[test]
fn test_list_distinct_turns_are_distinct_probes() {
    let inputs = [input(
        Some(turn("turn-latest", TurnPhase::Settled)),
        Some(turn("turn-active", TurnPhase::Settled)),
    )];
    let probes = plan_probes(ProjectionMode::List, &inputs);
    let ids: Vec<_> = probes.iter().filter_map(|p| p.turn_id.as_deref()).collect();
    assert_eq!(ids, ["turn-active", "turn-latest"]);
    let answers = [
        answer(
            Some("turn-active"),
            ProbeOutcome::Forkable { available: true },
        ),
        answer(
            Some("turn-latest"),
            ProbeOutcome::Forkable { available: true },
        ),
    ];
    let projected = project(ProjectionMode::List, &inputs, &answers);
    let s = &projected.sessions[0];
    assert!(
        s.latest_turn
            .as_ref()
            .expect("latest")
            .provider_fork_binding_available
    );
    assert!(
        s.active_turn
            .as_ref()
            .expect("active")
            .provider_fork_binding_available
    );
}

#[test]
fn test_list_turn_availability_fails_closed() {
    let inputs = [input(
        Some(turn("turn-latest", TurnPhase::Settled)),
        Some(turn("turn-active", TurnPhase::Settled)),
    )];
    for outcome in [
        ProbeOutcome::Rejected { reason: None },
        ProbeOutcome::Failed {
            error: "probe unavailable".into(),
        },
        ProbeOutcome::Forkable { available: false },
    ] {
        let answers = [
            answer(Some("turn-active"), outcome.clone()),
            answer(Some("turn-latest"), outcome.clone()),
        ];
        let projected = project(ProjectionMode::List, &inputs, &answers);
        let s = &projected.sessions[0];
        assert!(
            !s.latest_turn
                .as_ref()
                .expect("latest")
                .provider_fork_binding_available
        );
        assert!(
            !s.active_turn
                .as_ref()
                .expect("active")
                .provider_fork_binding_available
        );
    }
    // Unanswered: still pending, and false meanwhile.
    let projected = project(ProjectionMode::List, &inputs, &[]);
    assert_eq!(projected.probes.len(), 2);
    assert!(
        !projected.sessions[0]
            .latest_turn
            .as_ref()
            .expect("latest")
            .provider_fork_binding_available
    );
}

#[test]
fn test_hydration_probes_nothing_and_shows_both_false() {
    let settled = turn("turn-7", TurnPhase::Settled);
    let inputs = [input(Some(settled.clone()), Some(settled))];
    assert!(plan_probes(ProjectionMode::Hydration, &inputs).is_empty());
    let answers = [
        answer(
            None,
            ProbeOutcome::Capability {
                fork: true,
                through_turn: true,
            },
        ),
        answer(Some("turn-7"), ProbeOutcome::Forkable { available: true }),
    ];
    let projected = project(ProjectionMode::Hydration, &inputs, &answers);
    assert!(projected.probes.is_empty());
    let s = &projected.sessions[0];
    assert_eq!(
        s.lifecycle_capabilities,
        Some(LifecycleCapabilities::default())
    );
    assert!(
        !s.latest_turn
            .as_ref()
            .expect("latest")
            .provider_fork_binding_available
    );
}

#[test]
fn test_no_provider_session_means_no_probe_and_false() {
    let mut bare = input(Some(turn("turn-7", TurnPhase::Settled)), None);
    bare.provider_session_id = None;
    assert!(plan_probes(ProjectionMode::Detail, &[bare.clone()]).is_empty());
    let answers = [answer(
        Some("turn-7"),
        ProbeOutcome::Forkable { available: true },
    )];
    let projected = project(ProjectionMode::Detail, &[bare], &answers);
    assert!(
        !projected.sessions[0]
            .latest_turn
            .as_ref()
            .expect("latest")
            .provider_fork_binding_available
    );
}

#[test]
fn test_detail_asks_session_probe_once_per_session() {
    let settled = turn("turn-7", TurnPhase::Settled);
    let a = input(Some(settled.clone()), None);
    let mut b = a.clone();
    b.key = "agent:a:other".into();
    let probes = plan_probes(ProjectionMode::Detail, &[a.clone(), b, a]);
    let keys: Vec<_> = probes
        .iter()
        .map(|p| (p.session_key.as_str(), p.turn_id.as_deref()))
        .collect();
    assert_eq!(
        keys,
        [
            ("agent:a:source", None),
            ("agent:a:source", Some("turn-7")),
            ("agent:a:other", None),
            ("agent:a:other", Some("turn-7")),
        ]
    );
}
