//! Property: whatever the run history, a selected resume token is never synthetic, never
//! one whose newest run ended in a terminal failure (for agents whose sessions do not
//! survive failures), and never another agent type's.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use spool::resume::{
    ResumePolicy, ResumeQuery, RunRecord, TERMINAL_FAILURES, is_synthetic, select_resume,
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
        let decision = select_resume(&query, &history, &policy);
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
