//! Property: whatever the run history, a selected resume token is never synthetic, never
//! one whose newest run ended in a terminal failure (for agents whose sessions do not
//! survive failures), and never another agent type's.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use spool::resume::rules::{
    ResumePolicy, ResumeQuery, RunRecord, TERMINAL_FAILURES, choose_resume, is_synthetic,
};

const AGENTS: [&str; 3] = ["codex", "claude_code", "opencode"];

fn record() -> impl Strategy<Value = RunRecord> {
    (0usize..3, 0u8..6, 0usize..10, 0u64..50, any::<bool>()).prop_map(
        |(agent, token, status, at, synthetic)| {
            let statuses = [
                "done",
                "working",
                "failed",
                "cancelled",
                "hard_timeout",
                "done",
                "idle_timeout",
                "done",
                "denied",
                "done",
            ];
            let agent = AGENTS[agent];
            RunRecord {
                agent_type: agent.into(),
                project_id: "proj1".into(),
                session_id: if synthetic {
                    format!("{agent}:proj1:task-{token}")
                } else {
                    format!("tok-{token}")
                },
                status: statuses[status].into(),
                updated_at: at,
                ..RunRecord::default()
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn test_selected_tokens_are_never_vetoed(history in proptest::collection::vec(record(), 0..30), agent in 0usize..3) {
        let agent = AGENTS[agent];
        let policy = ResumePolicy::default();
        let query = ResumeQuery {
            agent_type: agent.into(),
            project_id: Some("proj1".into()),
            scope_id: None,
            role_state: None,
            preconfigured: None,
        };
        let decision = choose_resume(&query, &history, &policy);
        if decision.mode == "resume" {
            let token = decision.session_id.as_str();
            prop_assert!(!is_synthetic(token, agent));
            let mine: Vec<&RunRecord> = history.iter().filter(|r| r.agent_type == agent && r.session_id == token).collect();
            prop_assert!(!mine.is_empty(), "the token must be this agent's");
            let newest = mine.iter().max_by_key(|r| r.updated_at).map(|r| r.status.as_str());
            if !policy.surviving_agents.iter().any(|a| a == agent) {
                prop_assert!(!newest.is_some_and(|s| TERMINAL_FAILURES.contains(&s)), "newest row of {token} is {newest:?}");
            }
        }
    }
}

/// The history walk as first written: the decisive row of each `done` row's token
/// found by [`spool::resume::rules::newest`] over the whole history (quadratic; the reference).
fn reference_walk(
    query: &ResumeQuery,
    history: &[RunRecord],
    policy: &ResumePolicy,
) -> Option<String> {
    let agent = query.agent_type.as_str();
    let project = query.project_id.as_deref();
    let mut done: Vec<&RunRecord> = history
        .iter()
        .filter(|r| r.agent_type == agent && project.is_none_or(|p| r.project_id == p))
        .filter(|r| r.status == "done" && !is_synthetic(&r.session_id, agent))
        .collect();
    done.sort_by(|a, b| {
        spool::resume::rules::done_order(b).cmp(&spool::resume::rules::done_order(a))
    });
    done.into_iter()
        .find(|row| {
            spool::resume::rules::newest(history, agent, project, &row.session_id, policy)
                .is_some_and(|d| !policy.kills(agent, &d.status))
        })
        .map(|row| row.session_id.clone())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn test_history_walk_matches_the_per_token_reference(
        history in proptest::collection::vec(record(), 0..40),
        agent in 0usize..3,
        any_project in any::<bool>(),
    ) {
        let policy = ResumePolicy::default();
        let query = ResumeQuery {
            agent_type: AGENTS[agent].into(),
            project_id: (!any_project).then(|| "proj1".into()),
            scope_id: None,
            role_state: None,
            preconfigured: None,
        };
        let decision = choose_resume(&query, &history, &policy);
        let expected = reference_walk(&query, &history, &policy);
        prop_assert_eq!(decision.mode == "resume", expected.is_some());
        if let Some(token) = expected {
            prop_assert_eq!(decision.session_id, token);
        }
    }
}

/// One stored run: agent, token, project, task, status, time.
type Row = (usize, u8, bool, u8, usize, u64, bool);

fn stored_row() -> impl Strategy<Value = Row> {
    (
        0usize..3,
        0u8..5,
        any::<bool>(),
        0u8..3,
        0usize..6,
        0u64..40,
        prop::bool::weighted(0.15),
    )
}

const STATUSES: [&str; 6] = ["done", "working", "failed", "done", "idle_timeout", "done"];

fn run_of((agent, token, other_project, task, status, _, synthetic): Row) -> spool::NewRun {
    let agent = AGENTS[agent];
    let project = if other_project { "proj2" } else { "proj1" };
    spool::NewRun {
        agent_type: agent.into(),
        project_id: project.into(),
        session_id: if synthetic {
            format!("{agent}:{project}:task-{task}")
        } else {
            format!("tok-{token}")
        },
        task_id: format!("task-{task}"),
        status: STATUSES[status].into(),
        role_session_id: None,
        workspace_path: None,
        run_mode: None,
        metadata: Default::default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The stored selection (indexes, partial reads) decides exactly what the plain
    /// function decides over the whole stored history, and applies its role-state clear.
    #[test]
    fn test_stored_selection_equals_the_rule_over_the_whole_history(
        rows in proptest::collection::vec(stored_row(), 0..40),
        agent in 0usize..3,
        project in prop::option::of(any::<bool>()),
        role_token in prop::option::of((0u8..6, any::<bool>())),
        preconfigured in prop::option::of(0u8..6),
        survive in any::<bool>(),
    ) {
        let storage = spool::MemoryStorage::new();
        let ws = "w";
        for row in &rows {
            spool::run(&storage, spool::record_run(ws, run_of(*row), row.5)).expect("recorded");
        }
        let stored = spool::run(&storage, spool::list_runs(ws, spool::RunFilter::default(), 1000, None))
            .expect("listed")
            .runs;
        let agent = AGENTS[agent];
        let role_id = "role-runtime::r::cto";
        let role_state = role_token.map(|(t, streamed)| {
            let mut state = serde_json::Map::new();
            state.insert("resume_session_id".into(), format!("tok-{t}").into());
            if streamed {
                state.insert("source".into(), "provider_stream".into());
                state.insert("status".into(), "working".into());
            }
            state
        });
        let mut adapter_state = std::collections::BTreeMap::new();
        if let Some(state) = &role_state {
            adapter_state.insert(agent.to_owned(), serde_json::Value::Object(state.clone()));
        }
        spool::run(&storage, spool::save_role_session(ws, spool::NewRoleSession {
            role_session_id: role_id.into(),
            run_id: None,
            role_id: None,
            adapter_state,
        }, 1)).expect("saved");
        let surviving = if survive { None } else { Some(Vec::new()) };
        let request = spool::ResumeRequest {
            agent_type: agent.into(),
            role_session_id: Some(role_id.into()),
            project_id: project.map(|p| if p { "proj2".into() } else { "proj1".into() }),
            scope_id: None,
            preconfigured: preconfigured.map(|t| format!("tok-{t}")),
            surviving_agents: surviving.clone(),
        };
        let policy = surviving.map_or_else(ResumePolicy::default, |surviving_agents| ResumePolicy { surviving_agents });
        let query = ResumeQuery {
            agent_type: agent.into(),
            project_id: request.project_id.clone(),
            scope_id: None,
            role_state: role_state.map(|s| s.into_iter().collect()),
            preconfigured: request.preconfigured.clone(),
        };
        let expected = choose_resume(&query, &stored, &policy);
        let decided = spool::run(&storage, spool::select_resume(ws, request)).expect("selected");
        prop_assert_eq!(&decided, &expected);
        let after = spool::run(&storage, spool::get_role_adapter_state(ws, role_id, agent)).expect("read");
        if expected.clear_role_state {
            prop_assert_eq!(after, None);
        } else {
            prop_assert_eq!(after, query.role_state);
        }
    }
}

/// One recorded task outcome: agent, reported token, resumed token, status, time.
type Outcome = (usize, Option<u8>, Option<u8>, usize, u64);

const OUTCOME_STATUSES: [&str; 6] = [
    "done",
    "failed",
    "hard_timeout",
    "done",
    "cancelled",
    "working",
];

fn outcome() -> impl Strategy<Value = Outcome> {
    (
        0usize..3,
        prop::option::of(0u8..4),
        prop::option::weighted(0.5, 0u8..4),
        0usize..6,
        0u64..30,
    )
}

fn record_outcome(storage: &spool::MemoryStorage, task: usize, o: Outcome) {
    let (agent, token, resumed, status, at) = o;
    let request = spool::OutcomeRequest {
        role_session_id: None,
        project_id: "proj1".into(),
        outcome: spool::resume::rules::TaskOutcome {
            agent_type: AGENTS[agent].into(),
            task_id: format!("task-{task}"),
            status: OUTCOME_STATUSES[status].into(),
            token: token.map(|t| format!("tok-{t}")),
            resumed_from: resumed.map(|t| format!("tok-{t}")),
            from_stream: false,
        },
        workspace_path: None,
        run_mode: None,
        metadata: Default::default(),
        surviving_agents: None,
    };
    spool::run(storage, spool::record_task_outcome("w", request, at)).expect("recorded");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever tasks reported, a token is never selected when the newest task that ran
    /// it — reporting it, or only resuming it — ended in a terminal failure; and the
    /// stored selection still equals the rule over the stored history.
    #[test]
    fn test_a_token_whose_newest_run_failed_is_never_selected_even_if_that_run_only_resumed_it(
        outcomes in proptest::collection::vec(outcome(), 0..30),
        agent in 0usize..3,
    ) {
        let storage = spool::MemoryStorage::new();
        for (task, o) in outcomes.iter().enumerate() {
            record_outcome(&storage, task, *o);
        }
        let agent = AGENTS[agent];
        let request = spool::ResumeRequest {
            agent_type: agent.into(),
            role_session_id: None,
            project_id: Some("proj1".into()),
            scope_id: None,
            preconfigured: None,
            surviving_agents: None,
        };
        let decided = spool::run(&storage, spool::select_resume("w", request)).expect("selected");
        let policy = ResumePolicy::default();
        if decided.mode == "resume" && policy.kills(agent, "failed") {
            let token = decided.session_id.as_str();
            let newest = outcomes
                .iter()
                .filter(|(a, t, r, _, _)| {
                    AGENTS[*a] == agent
                        && (t.map(|t| format!("tok-{t}")).as_deref() == Some(token)
                            || r.map(|r| format!("tok-{r}")).as_deref() == Some(token))
                })
                .map(|(_, _, _, s, at)| (*at, TERMINAL_FAILURES.contains(&OUTCOME_STATUSES[*s])))
                .max();
            prop_assert!(
                !newest.is_some_and(|(_, failed)| failed),
                "{token} was selected although its newest run failed"
            );
        }
        let stored = spool::run(&storage, spool::list_runs("w", spool::RunFilter::default(), 1000, None))
            .expect("listed")
            .runs;
        let query = ResumeQuery {
            agent_type: agent.into(),
            project_id: Some("proj1".into()),
            scope_id: None,
            role_state: None,
            preconfigured: None,
        };
        prop_assert_eq!(decided, choose_resume(&query, &stored, &policy));
    }
}

#[test]
fn test_a_failed_resume_without_a_token_of_its_own_ends_the_token_it_resumed() {
    // The failed run reports no token, a new token, or times out.
    for (token, status) in [
        (None, "failed"),
        (Some(9), "failed"),
        (None, "hard_timeout"),
        (Some(9), "hard_timeout"),
    ] {
        let storage = spool::MemoryStorage::new();
        record_outcome(&storage, 0, (0, Some(1), None, 0, 5));
        let status = OUTCOME_STATUSES
            .iter()
            .position(|s| *s == status)
            .expect("a status");
        record_outcome(&storage, 1, (0, token, Some(1), status, 6));
        let request = spool::ResumeRequest {
            agent_type: "codex".into(),
            role_session_id: None,
            project_id: Some("proj1".into()),
            scope_id: None,
            preconfigured: Some("tok-1".into()),
            surviving_agents: None,
        };
        let decided =
            spool::run(&storage, spool::select_resume("w", request.clone())).expect("selected");
        assert_eq!(decided.mode, "new", "{token:?} {status}");
        assert_eq!(
            decided.set_metadata["external_resume_fallback"],
            "provider_terminal_failure"
        );
        let plain = spool::ResumeRequest {
            preconfigured: None,
            ..request
        };
        let decided = spool::run(&storage, spool::select_resume("w", plain)).expect("selected");
        assert_ne!(decided.session_id, "tok-1", "{token:?} {status}");
    }
}
