//! Property: whatever the interleaving of forks, dispatches, provider answers, commits,
//! acknowledgements, restarts and source changes, the fork records stay consistent — one
//! operation at most holds a fork point, the barrier, reservation and recovery indexes
//! name exactly the operations that hold them, and committed operations keep consistent
//! identities.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::BTreeSet;

use proptest::prelude::*;
use spool::provider_fork::{Disposition, ForkOperation, ForkRequest, ForkState, holds_barrier};
use spool::turns::{CloseTurn, NewTurn};
use spool::{AppendRequest, Error, MemoryStorage, Role, keys, record, run};

const WS: &str = "default";
const SRC: &str = "agent:main:src";

#[derive(Debug, Clone)]
enum Call {
    Fork {
        request: usize,
        turn: usize,
        target: usize,
    },
    Dispatch(usize),
    Accept(usize, bool),
    Reject(usize),
    Unknown(usize),
    Commit(usize),
    Acknowledge(usize),
    Recover,
    Append,
    DeleteTarget(usize),
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        3 => (0usize..4, 0usize..3, 0usize..3)
            .prop_map(|(request, turn, target)| Call::Fork { request, turn, target }),
        2 => (0usize..8).prop_map(Call::Dispatch),
        2 => (0usize..8, any::<bool>()).prop_map(|(o, b)| Call::Accept(o, b)),
        1 => (0usize..8).prop_map(Call::Reject),
        1 => (0usize..8).prop_map(Call::Unknown),
        2 => (0usize..8).prop_map(Call::Commit),
        2 => (0usize..8).prop_map(Call::Acknowledge),
        1 => Just(Call::Recover),
        1 => Just(Call::Append),
        1 => (0usize..3).prop_map(Call::DeleteTarget),
    ]
}

fn source() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, SRC, "src-1", 1)).expect("create");
    for (i, turn) in ["turn-1", "turn-2"].into_iter().enumerate() {
        let at = 10 * (i as u64 + 1);
        let start = NewTurn {
            turn_id: turn.into(),
            provider_turn_id: None,
            provider_binding: None,
            expected_epoch: None,
        };
        run(&storage, spool::start_turn(WS, SRC, start, at)).expect("start");
        let mut append = AppendRequest::new(Role::User, format!("in {turn}"));
        append.turn_id = Some(turn.into());
        run(&storage, spool::append_entry(WS, SRC, append, at + 1)).expect("append");
        let close = CloseTurn::default();
        run(&storage, spool::settle_turn(WS, SRC, turn, close, at + 2)).expect("settle");
    }
    storage
}

fn target(i: usize) -> String {
    format!("agent:main:child-{i}")
}

/// Expected failures are fine; corruption, internal errors and storage errors are not.
fn expected(outcome: Result<(), Error>) -> Result<(), TestCaseError> {
    match outcome {
        Err(e) if matches!(e.code(), "corruption" | "internal" | "storage") => {
            Err(TestCaseError::fail(format!("unexpected error: {e}")))
        }
        _ => Ok(()),
    }
}

fn perform(
    storage: &MemoryStorage,
    call: &Call,
    ops: &mut Vec<String>,
    now: u64,
) -> Result<(), Error> {
    let op = |i: &usize| {
        ops.get(*i)
            .cloned()
            .unwrap_or_else(|| format!("op-missing-{i}"))
    };
    match call {
        Call::Fork {
            request,
            turn,
            target: t,
        } => {
            let through = ["turn-1", "turn-2"].get(*turn).map(|t| (*t).to_owned());
            let req = ForkRequest {
                request_id: format!("request-{request}"),
                target_key: target(*t),
                target_session_id: format!("child-{now}"),
                through_turn_id: through,
                cwd: None,
            };
            let view = run(
                storage,
                spool::fork(WS, SRC, req, &format!("op-{now}"), now),
            )?;
            if !ops.contains(&view.operation.operation_id) {
                ops.push(view.operation.operation_id);
            }
        }
        Call::Dispatch(i) => {
            run(storage, spool::begin_fork_dispatch(WS, &op(i), now))?;
        }
        Call::Accept(i, bind) => {
            let d = Disposition::Accepted {
                target_provider_session_id: Some(format!("provider-{now}")),
                bind_provider_state: *bind,
            };
            run(storage, spool::record_fork_disposition(WS, &op(i), d, now))?;
        }
        Call::Reject(i) => {
            let d = Disposition::Rejected {
                error: "no".into(),
                reason: Some("attachment_unsupported".into()),
            };
            run(storage, spool::record_fork_disposition(WS, &op(i), d, now))?;
        }
        Call::Unknown(i) => {
            let d = Disposition::Unknown {
                error: "timeout".into(),
            };
            run(storage, spool::record_fork_disposition(WS, &op(i), d, now))?;
        }
        Call::Commit(i) => {
            run(storage, spool::commit_fork(WS, &op(i), now))?;
        }
        Call::Acknowledge(i) => {
            run(storage, spool::acknowledge_fork_operation(WS, &op(i), now))?;
        }
        Call::Recover => {
            run(storage, spool::recover_fork_operations(WS, now))?;
        }
        Call::Append => {
            let append = AppendRequest::new(Role::Assistant, "later");
            run(storage, spool::append_entry(WS, SRC, append, now))?;
        }
        Call::DeleteTarget(t) => {
            run(storage, spool::delete_session(WS, &target(*t), None))?;
        }
    }
    Ok(())
}

fn check(storage: &MemoryStorage) -> Result<(), TestCaseError> {
    let pairs = support::dump(storage, WS);
    let index = |tag: u8| -> BTreeSet<(Vec<u8>, String)> {
        pairs
            .iter()
            .filter(|kv| kv.key.first() == Some(&tag))
            .map(|kv| {
                (
                    kv.key.clone(),
                    String::from_utf8_lossy(&kv.value).into_owned(),
                )
            })
            .collect()
    };
    let ops: Vec<ForkOperation> = pairs
        .iter()
        .filter(|kv| kv.key.first() == Some(&keys::FORK_OPERATION))
        .map(|kv| record::decode(&kv.key, &kv.value))
        .collect::<Result<_, _>>()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;

    let mut barriers = BTreeSet::new();
    let mut reservations = BTreeSet::new();
    let mut active = BTreeSet::new();
    for op in &ops {
        if holds_barrier(op.state, op.acknowledged_at.is_some()) {
            let key = keys::fork_barrier(&op.source_session_id, &op.point.barrier_name());
            prop_assert!(
                barriers.insert((key, op.operation_id.clone())),
                "two operations hold one point"
            );
        }
        if matches!(
            op.state,
            ForkState::Prepared
                | ForkState::Dispatching
                | ForkState::ProviderAccepted
                | ForkState::Unknown
        ) {
            reservations.insert((keys::fork_target(&op.target_key), op.operation_id.clone()));
        }
        if op.state.is_active() {
            active.insert((keys::fork_active(&op.operation_id), String::new()));
        }
        if op.state == ForkState::Committed {
            let view = run(storage, spool::get_fork_operation(WS, &op.operation_id));
            prop_assert!(view.is_ok(), "committed operation unreadable: {view:?}");
            prop_assert!(op.session.is_some() && op.lineage.is_some());
        } else {
            prop_assert!(op.session.is_none() && op.lineage.is_none());
        }
    }
    prop_assert_eq!(index(keys::FORK_BARRIER), barriers);
    prop_assert_eq!(index(keys::FORK_TARGET), reservations);
    prop_assert_eq!(index(keys::FORK_ACTIVE), active);
    for (key, id) in index(keys::FORK_REQUEST) {
        let op = ops.iter().find(|o| o.operation_id == id);
        prop_assert!(
            op.is_some_and(|o| keys::fork_request(&o.request_id) == key),
            "request index names a missing operation"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn test_fork_records_stay_consistent_under_any_interleaving(
        calls in proptest::collection::vec(call(), 1..40)
    ) {
        let storage = source();
        let mut ops = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let now = 100 + i as u64;
            expected(perform(&storage, call, &mut ops, now))?;
            check(&storage)?;
        }
    }
}
