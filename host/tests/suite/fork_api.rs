//! The typed branch, turn and provider-fork API through `Spool::execute`, and
//! the provider fork driver: error codes survive, `dispatching` is durable before the
//! provider is called, the provider is called once.

use spool::provider_fork::capabilities::ProjectionMode;
use spool::provider_fork::{Disposition, ForkRequest, ForkState, ForkStatus};
use spool::turns::{CloseTurn, NewTurn};
use spool::{AppendRequest, Command, Role};
use spool_host::{BranchOptions, Spool, SqliteStorage, TestProvider};

const SRC: &str = "agent:main:src";

fn request(id: &str, target: &str) -> ForkRequest {
    ForkRequest {
        request_id: id.into(),
        target_key: target.into(),
        target_session_id: format!("{id}-child"),
        through_turn_id: None,
        cwd: None,
    }
}

fn source(spool: &mut Spool) {
    spool.create_session(SRC).expect("create");
    for text in ["fix the test", "it passes"] {
        spool
            .append_entry(SRC, AppendRequest::new(Role::User, text))
            .expect("append");
    }
}

#[test]
fn test_dispatching_is_durable_before_the_provider_is_called() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("spool.db");
    let mut spool = Spool::open(&db).expect("open");
    source(&mut spool);
    let mut calls = 0;
    let mut provider = |payload: &spool::provider_fork::DispatchPayload| {
        calls += 1;
        // Another connection to the same database sees the operation `dispatching`.
        let other = SqliteStorage::open(&db).expect("open again");
        let seen = spool::run(
            &other,
            spool::get_fork_operation("default", &payload.operation_id),
        )
        .expect("read the operation");
        assert_eq!(seen.operation.state, ForkState::Dispatching);
        Disposition::Accepted {
            target_provider_session_id: Some("thread-child".into()),
            bind_provider_state: true,
        }
    };
    let done = spool
        .run_fork(SRC, request("r1", "agent:main:child"), &mut provider)
        .expect("run");
    assert_eq!(calls, 1);
    assert_eq!(done.status, ForkStatus::Committed);
    assert_eq!(spool.count_entries("agent:main:child").expect("count"), 2);
    let lineage = spool
        .get_fork_lineage("agent:main:child")
        .expect("lineage")
        .expect("a fork's child");
    assert_eq!(lineage.operation_id, done.operation.operation_id);

    // The one-time provider state binding: handed out once.
    let claim = spool
        .claim_fork_provider_binding("agent:main:child")
        .expect("claim")
        .expect("pending");
    assert_eq!(
        claim.target_provider_session_id.as_deref(),
        Some("thread-child")
    );
    assert!(
        spool
            .claim_fork_provider_binding("agent:main:child")
            .expect("claim again")
            .is_none()
    );
    spool
        .complete_fork_provider_binding(&claim.operation_id)
        .expect("complete");

    // Dispatching twice is the core's fork conflict, code and reason kept.
    let err = spool
        .begin_fork_dispatch(&done.operation.operation_id)
        .expect_err("stale");
    assert_eq!(err.code(), "conflict");
    assert!(err.message().contains("stale_transition"), "{err}");
    let acked = spool
        .acknowledge_fork_operation(&done.operation.operation_id)
        .expect("ack");
    assert!(acked.acknowledged);
}

#[test]
fn test_rejected_and_undeliverable_forks_and_recovery() {
    let mut spool = Spool::builder().open().expect("open");
    source(&mut spool);
    let mut reject = TestProvider::reject("no attachments", Some("attachment_unsupported"));
    let failed = spool
        .run_fork(SRC, request("r1", "agent:main:a"), &mut reject)
        .expect("run");
    assert_eq!(failed.status, ForkStatus::Failed);
    assert_eq!(
        failed.operation.error_reason.as_deref(),
        Some("attachment_unsupported")
    );
    assert_eq!(reject.dispatched().len(), 1);
    assert!(spool.get_session("agent:main:a").expect("get").is_none());

    let mut lost = TestProvider::undeliverable("connection reset");
    let unknown = spool
        .run_fork(SRC, request("r2", "agent:main:b"), &mut lost)
        .expect("run");
    assert_eq!(unknown.status, ForkStatus::Unknown);
    // It holds the barrier: a new request returns it and calls no provider.
    let mut accept = TestProvider::accept();
    let same = spool
        .run_fork(SRC, request("r3", "agent:main:c"), &mut accept)
        .expect("run");
    assert_eq!(same.operation.operation_id, unknown.operation.operation_id);
    assert!(accept.dispatched().is_empty());

    // A prepared operation (the host crashed before dispatch) is continued after
    // recovery.
    spool.create_session("agent:main:other").expect("create");
    let prepared = spool
        .fork("agent:main:other", request("r4", "agent:main:d"))
        .expect("fork");
    assert_eq!(prepared.operation.state, ForkState::Prepared);
    let report = spool.recover_fork_operations().expect("recover");
    assert_eq!(report.to_dispatch.len(), 1);
    let done = spool
        .continue_fork(&prepared.operation.operation_id, &mut accept)
        .expect("continue");
    assert_eq!(done.status, ForkStatus::Committed);
    assert_eq!(accept.dispatched().len(), 1);
}

#[test]
fn test_execute_keeps_codes_and_typed_branch_turn_calls() {
    let mut spool = Spool::builder().open().expect("open");
    source(&mut spool);
    let err = spool
        .get_fork_operation("operation-missing")
        .expect_err("missing");
    assert_eq!(err.code(), "not_found");
    let err = spool
        .execute(&Command::Lineage {
            key: "agent:main:none".into(),
        })
        .expect_err("missing");
    assert_eq!(err.code(), "not_found");
    let err = spool
        .branch(SRC, "agent:main:x", BranchOptions::before("nope"))
        .expect_err("unknown message");
    assert_eq!(err.code(), "not_found");
    assert!(err.message().contains("Transcript message not found"));

    let child = spool
        .branch(
            SRC,
            "agent:main:alt",
            BranchOptions::fork().max_tokens(1_000),
        )
        .expect("branch");
    assert!(child.lineage.forked_from_parent);
    let value = spool
        .execute(&Command::ListChildren { key: SRC.into() })
        .expect("children");
    assert_eq!(value[0]["key"], "agent:main:alt");
    let err = spool
        .branch(SRC, "agent:main:alt", BranchOptions::default())
        .expect_err("taken");
    assert_eq!(err.code(), "conflict");

    let turn = spool
        .start_turn(
            SRC,
            NewTurn {
                turn_id: "t1".into(),
                provider_turn_id: None,
                provider_binding: None,
                expected_epoch: None,
            },
        )
        .expect("start");
    assert_eq!(turn.seq, 1);
    assert_eq!(
        spool
            .session_turns(SRC)
            .expect("turns")
            .active
            .map(|t| t.turn_id),
        Some("t1".into())
    );
    let settled = spool
        .settle_turn(SRC, "t1", CloseTurn::default())
        .expect("settle");
    assert!(settled.boundary.is_some());
    assert!(spool.get_turn(SRC, "t1").expect("get").is_some());
    let err = spool
        .interrupt_turn(SRC, "t1", CloseTurn::default())
        .expect_err("not running");
    assert_eq!(err.code(), "conflict");

    let projection = spool
        .fork_projection(vec![SRC.into()], ProjectionMode::Hydration, Vec::new())
        .expect("projection");
    assert!(projection.probes.is_empty());
    assert_eq!(projection.sessions.len(), 1);
}

#[test]
fn test_an_edited_message_branches_with_a_fresh_id_through_the_component() {
    let mut n = 0;
    let mut spool = Spool::builder()
        .ids(move || {
            n += 1;
            format!("sid-{n}")
        })
        .open()
        .expect("open");
    source(&mut spool);
    let first = spool.transcript(SRC).expect("read")[1].message_id.clone();
    let edited = AppendRequest::new(Role::User, "it fails");
    let branch = spool
        .edit_message(SRC, "agent:main:edit", &first, edited)
        .expect("edit");
    assert_eq!(branch.session.session_id, "sid-2");
    let texts: Vec<String> = spool
        .transcript("agent:main:edit")
        .expect("read")
        .into_iter()
        .map(|e| e.content)
        .collect();
    assert_eq!(texts, ["fix the test", "it fails"]);
    assert_eq!(spool.count_entries(SRC).expect("count"), 2);
}
