//! Provider fork operations beyond what the vectors can say: stored identities that
//! disagree, transitions that lose a race, and commits that fail in the storage.

use crate::support;

use spool::provider_fork::{
    Disposition, ForkLineage, ForkOperation, ForkRequest, ForkState, ProviderStateBinding,
};
use spool::turns::{CloseTurn, NewTurn};
use spool::{
    AppendRequest, Error, MemoryStorage, Operation, Role, Step, Storage, keys, read_sync, record,
    run,
};
use support::{FailingCommits, dump};

const WS: &str = "default";
const SRC: &str = "agent:main:src";
const CHILD: &str = "agent:main:child";

fn request(id: &str, target: &str, target_sid: &str) -> ForkRequest {
    ForkRequest {
        request_id: id.into(),
        target_key: target.into(),
        target_session_id: target_sid.into(),
        through_turn_id: Some("turn-1".into()),
        cwd: None,
    }
}

/// A source with one settled turn of two entries.
fn source() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, SRC, "src-1", 1)).expect("ok");
    let start = NewTurn {
        turn_id: "turn-1".into(),
        provider_turn_id: Some("provider-turn-1".into()),
        provider_binding: None,
        expected_epoch: None,
    };
    run(&storage, spool::start_turn(WS, SRC, start, 2)).expect("ok");
    for (i, content) in ["question", "answer"].into_iter().enumerate() {
        let mut append = AppendRequest::new(Role::User, content);
        append.turn_id = Some("turn-1".into());
        run(&storage, spool::append_entry(WS, SRC, append, 3 + i as u64)).expect("ok");
    }
    let close = CloseTurn::default();
    run(&storage, spool::settle_turn(WS, SRC, "turn-1", close, 5)).expect("ok");
    storage
}

fn accepted() -> Disposition {
    Disposition::Accepted {
        target_provider_session_id: Some("provider-target".into()),
        bind_provider_state: false,
    }
}

/// A source and a committed fork `operation-1` into `CHILD`.
fn committed() -> MemoryStorage {
    let storage = source();
    let req = request("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("ok");
    run(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11)).expect("ok");
    run(
        &storage,
        spool::record_fork_disposition(WS, "operation-1", accepted(), 12),
    )
    .expect("ok");
    let view = run(&storage, spool::commit_fork(WS, "operation-1", 13)).expect("ok");
    assert_eq!(view.operation.state, ForkState::Committed);
    storage
}

fn stored_op(storage: &MemoryStorage) -> ForkOperation {
    let key = keys::fork_operation("operation-1");
    let bytes = storage
        .get(WS, &key)
        .expect("ok")
        .expect("operation stored");
    record::decode(&key, &bytes).expect("ok")
}

fn overwrite<T: serde::Serialize>(storage: &MemoryStorage, key: Vec<u8>, value: &T) {
    let mut batch = spool::Batch::default();
    batch.put(key, record::encode(value).expect("ok"));
    storage.commit(WS, batch).expect("ok");
}

fn assert_fork_conflict<T: std::fmt::Debug>(outcome: Result<T, Error>, reason: &str) {
    let err = outcome.expect_err("a fork conflict");
    assert_eq!(err.code(), "conflict", "{err}");
    assert_eq!(err.fork_reason(), Some(reason), "{err}");
}

#[test]
fn test_get_rejects_lineage_target_other_than_operation_target() {
    let storage = committed();
    let mut op = stored_op(&storage);
    if let Some(lineage) = op.lineage.as_mut() {
        lineage.target_session_id = "different-target".into();
    }
    overwrite(&storage, keys::fork_operation("operation-1"), &op);

    assert_fork_conflict(
        run(&storage, spool::get_fork_operation(WS, "operation-1")),
        "inconsistent_identity",
    );
    assert_fork_conflict(
        run(
            &storage,
            spool::acknowledge_fork_operation(WS, "operation-1", 20),
        ),
        "inconsistent_identity",
    );
    assert_eq!(stored_op(&storage).acknowledged_at, None, "nothing written");
}

#[test]
fn test_get_rejects_live_lineage_naming_another_operation() {
    let storage = committed();
    let child = run(&storage, spool::session_data_id(WS, CHILD))
        .expect("read")
        .expect("child");
    let key = keys::lineage(&child);
    let mut live: ForkLineage =
        record::decode(&key, &storage.get(WS, &key).expect("ok").expect("ok")).expect("ok");
    live.operation_id = "operation-2".into();
    overwrite(&storage, key, &live);

    assert_fork_conflict(
        run(&storage, spool::get_fork_operation(WS, "operation-1")),
        "inconsistent_identity",
    );
}

/// Drives `op` until it asks to commit, returning it with the batch still unanswered.
fn until_commit<T: 'static>(
    storage: &MemoryStorage,
    mut op: Operation<T>,
) -> (Operation<T>, spool::Batch) {
    loop {
        match op.poll() {
            Step::Read(request) => {
                let result = read_sync(storage, WS, &request);
                op.handle_read(result);
            }
            Step::Commit(batch) => return (op, batch),
            Step::Archive(_) => op.handle_archive(Err("no archive".into())),
            Step::Done(outcome) => panic!("finished before committing: {:?}", outcome.err()),
        }
    }
}

fn finish<T: 'static>(
    storage: &MemoryStorage,
    mut op: Operation<T>,
    batch: spool::Batch,
) -> Result<T, Error> {
    op.handle_commit(storage.commit(WS, batch));
    run_rest(storage, op)
}

fn run_rest<T: 'static>(storage: &MemoryStorage, mut op: Operation<T>) -> Result<T, Error> {
    loop {
        match op.poll() {
            Step::Read(request) => {
                let result = read_sync(storage, WS, &request);
                op.handle_read(result);
            }
            Step::Commit(batch) => op.handle_commit(storage.commit(WS, batch)),
            Step::Archive(_) => op.handle_archive(Err("no archive".into())),
            Step::Done(outcome) => return outcome,
        }
    }
}

#[test]
fn test_dispatching_is_recorded_before_the_payload_is_handed_out() {
    let storage = source();
    let req = request("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("ok");
    let (op, batch) = until_commit(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11));
    assert_eq!(stored_op(&storage).state, ForkState::Prepared);
    let payload = finish(&storage, op, batch).expect("dispatch");
    assert_eq!(stored_op(&storage).state, ForkState::Dispatching);
    assert_eq!(
        payload.point.provider_turn_id.as_deref(),
        Some("provider-turn-1")
    );
}

#[test]
fn test_transition_that_loses_the_race_is_a_stale_transition() {
    let storage = source();
    let req = request("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("ok");
    run(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11)).expect("ok");

    // Two hosts answer the same dispatch: one says accepted, the other unknown.
    let slow = spool::record_fork_disposition(
        WS,
        "operation-1",
        Disposition::Unknown {
            error: "timeout".into(),
        },
        12,
    );
    let (slow, batch) = until_commit(&storage, slow);
    run(
        &storage,
        spool::record_fork_disposition(WS, "operation-1", accepted(), 12),
    )
    .expect("ok");
    // The slow host's compare-and-set fails; its retry sees provider_accepted.
    assert_fork_conflict(finish(&storage, slow, batch), "stale_transition");
    assert_eq!(stored_op(&storage).state, ForkState::ProviderAccepted);
}

#[test]
fn test_concurrent_forks_of_one_turn_make_one_operation() {
    let storage = source();
    let first = spool::fork(WS, SRC, request("request-1", CHILD, "child-1"), "op-a", 10);
    let (first, batch) = until_commit(&storage, first);
    let second = spool::fork(
        WS,
        SRC,
        request("request-2", "agent:main:other", "other-1"),
        "op-b",
        10,
    );
    let winner = run(&storage, second).expect("second fork");
    assert_eq!(winner.operation.operation_id, "op-b");
    // The first one's barrier precondition fails; its retry returns the winner.
    let loser = finish(&storage, first, batch).expect("first fork");
    assert_eq!(loser.operation.operation_id, "op-b");
    assert!(
        storage
            .get(WS, &keys::fork_operation("op-a"))
            .expect("ok")
            .is_none()
    );
}

#[test]
fn test_failed_commit_writes_nothing() {
    let storage = source();
    let req = request("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("ok");
    run(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11)).expect("ok");
    run(
        &storage,
        spool::record_fork_disposition(WS, "operation-1", accepted(), 12),
    )
    .expect("ok");
    let before = dump(&storage, WS);
    let failing = FailingCommits {
        inner: storage,
        cause: "disk full",
    };
    let err = run(&failing, spool::commit_fork(WS, "operation-1", 13)).expect_err("fails");
    assert_eq!(err.code(), "storage");
    assert_eq!(dump(&failing.inner, WS), before);
    // The operation is still provider_accepted: recovery offers it for commit only.
    let report = run(&failing.inner, spool::recover_fork_operations(WS, 14)).expect("ok");
    assert_eq!(report.to_commit.len(), 1);
    assert!(report.marked_unknown.is_empty() && report.to_dispatch.is_empty());
    let view = run(&failing.inner, spool::commit_fork(WS, "operation-1", 15)).expect("ok");
    assert_eq!(view.operation.state, ForkState::Committed);
}

#[test]
fn test_committed_fork_records_survive_as_written() {
    let storage = committed();
    let op = stored_op(&storage);
    assert_eq!(op.provider_state_binding, ProviderStateBinding::NotRequired);
    let lineage = op.lineage.expect("lineage");
    let session = op.session.expect("child");
    assert_eq!(session.forked_from, lineage);
    assert_eq!(session.session.entry_count, 2);
    // The reservation went with the commit; the barrier stays until acknowledged.
    assert!(
        storage
            .get(WS, &keys::fork_target(CHILD))
            .expect("ok")
            .is_none()
    );
    assert!(
        storage
            .get(WS, &keys::fork_barrier("src-1", "turn:turn-1"))
            .expect("ok")
            .is_some()
    );
    run(
        &storage,
        spool::acknowledge_fork_operation(WS, "operation-1", 20),
    )
    .expect("ok");
    assert!(
        storage
            .get(WS, &keys::fork_barrier("src-1", "turn:turn-1"))
            .expect("ok")
            .is_none()
    );
}

/// Counts the reads that touch each key tag.
struct CountingReads {
    inner: MemoryStorage,
    reads: std::cell::RefCell<std::collections::BTreeMap<u8, usize>>,
}

impl CountingReads {
    fn count(&self, tag: u8) -> usize {
        self.reads.borrow().get(&tag).copied().unwrap_or(0)
    }
    fn note(&self, key: &[u8]) {
        if let Some(tag) = key.first() {
            *self.reads.borrow_mut().entry(*tag).or_default() += 1;
        }
    }
}

impl Storage for CountingReads {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, spool::StorageError> {
        self.note(key);
        self.inner.get(ws, key)
    }
    fn range(
        &self,
        ws: &str,
        q: &spool::RangeQuery,
    ) -> Result<Vec<spool::Kv>, spool::StorageError> {
        self.note(&q.range.start);
        self.inner.range(ws, q)
    }
    fn commit(&self, ws: &str, batch: spool::Batch) -> Result<(), spool::StorageError> {
        self.inner.commit(ws, batch)
    }
}

#[test]
fn test_projections_read_lineage_once_per_session_and_write_nothing() {
    use spool::provider_fork::capabilities::{ProjectionMode, fork_projection};
    let storage = CountingReads {
        inner: committed(),
        reads: Default::default(),
    };
    let before = dump(&storage.inner, WS);
    let keys = vec![SRC.to_owned(), CHILD.to_owned()];
    for mode in [
        ProjectionMode::List,
        ProjectionMode::Detail,
        ProjectionMode::Hydration,
    ] {
        storage.reads.borrow_mut().clear();
        let projection = run(
            &storage,
            fork_projection(WS, keys.clone(), mode, Vec::new()),
        )
        .expect("projection");
        assert_eq!(projection.sessions.len(), 2);
        assert_eq!(
            storage.count(keys::LINEAGE),
            2,
            "{mode:?}: one lineage read each"
        );
        assert_eq!(
            storage.count(keys::SESSION),
            2,
            "{mode:?}: one record read each"
        );
        assert_eq!(
            storage.count(keys::TURN),
            2,
            "{mode:?}: one turn range each"
        );
        assert_eq!(storage.count(keys::FORK_OPERATION), 0, "{mode:?}");
        assert!(projection.sessions[1].forked_from.is_some());
    }
    assert_eq!(dump(&storage.inner, WS), before);
}

/// A source of `n` plain entries (no turns), ready for a whole-session fork.
fn plain_source(n: u64) -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, SRC, "src-1", 1)).expect("ok");
    for i in 1..=n {
        let append = AppendRequest::new(Role::User, format!("step {i}"));
        run(&storage, spool::append_entry(WS, SRC, append, 1 + i)).expect("ok");
    }
    storage
}

fn whole_session(id: &str, target: &str, target_sid: &str) -> ForkRequest {
    ForkRequest {
        through_turn_id: None,
        ..request(id, target, target_sid)
    }
}

fn contents(storage: &MemoryStorage, key: &str) -> Vec<(u64, String)> {
    let page = spool::PageRequest {
        order: spool::Order::OldestFirst,
        cursor: None,
        limit: 100,
    };
    run(storage, spool::read_page(WS, key, page))
        .expect("read")
        .entries
        .into_iter()
        .map(|e| (e.id, e.content))
        .collect()
}

fn dispatch_accept_commit(
    storage: &MemoryStorage,
    id: &str,
) -> spool::provider_fork::ForkOperationView {
    run(storage, spool::begin_fork_dispatch(WS, id, 20)).expect("dispatch");
    run(
        storage,
        spool::record_fork_disposition(WS, id, accepted(), 21),
    )
    .expect("accepted");
    run(storage, spool::commit_fork(WS, id, 22)).expect("commit")
}

fn snapshot_keys(storage: &MemoryStorage) -> usize {
    dump(storage, WS)
        .iter()
        .filter(|kv| matches!(kv.key.first(), Some(b'P' | b'Q')))
        .count()
}

#[test]
fn test_commit_materializes_the_frozen_snapshot_after_the_source_is_truncated() {
    let storage = plain_source(5);
    let frozen = contents(&storage, SRC);
    let req = whole_session("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("prepared");
    let cut = run(&storage, spool::truncate(WS, SRC, 2, None, 11)).expect("truncated");
    assert_eq!((cut.before_count, cut.after_count), (5, 2));
    let view = dispatch_accept_commit(&storage, "operation-1");
    assert_eq!(view.operation.state, ForkState::Committed);
    assert_eq!(contents(&storage, CHILD), frozen);
    let child = view.operation.session.expect("child").session;
    assert_eq!((child.entry_count, child.last_entry_id), (5, 5));
    assert_eq!(
        contents(&storage, SRC).len(),
        2,
        "the source keeps its truncation"
    );
    assert_eq!(
        snapshot_keys(&storage),
        0,
        "the pin and the copy go with the commit"
    );
}

#[test]
fn test_commit_materializes_the_frozen_snapshot_after_an_external_compaction_replaced_it() {
    let storage = plain_source(5);
    let frozen = contents(&storage, SRC);
    let req = whole_session("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("prepared");
    // The agent's version of the tail replaces entries 4 and 5 (they are not archived).
    let persist = spool::compaction::PersistRequest {
        summary_text: "the story so far".into(),
        kept_entries: vec![
            AppendRequest::new(Role::User, "rewritten 4"),
            AppendRequest::new(Role::User, "rewritten 5"),
        ],
        compaction_id: Some("cmp-1".into()),
        trigger_reason: None,
    };
    run(
        &storage,
        spool::compaction::persist_compaction_result(WS, SRC, persist, 11),
    )
    .expect("persisted");
    let view = dispatch_accept_commit(&storage, "operation-1");
    assert_eq!(view.operation.state, ForkState::Committed);
    assert_eq!(contents(&storage, CHILD), frozen);
}

#[test]
fn test_commit_after_the_source_was_reset_fails_cleanly_and_leaves_nothing_behind() {
    let storage = plain_source(5);
    let req = whole_session("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("prepared");
    run(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11)).expect("dispatch");
    run(
        &storage,
        spool::record_fork_disposition(WS, "operation-1", accepted(), 12),
    )
    .expect("accepted");
    run(
        &storage,
        spool::apply_intent(WS, SRC, spool::Intent::ResetSameKey, "src-2", 13),
    )
    .expect("reset");
    let view = run(&storage, spool::commit_fork(WS, "operation-1", 14)).expect("failed view");
    assert_eq!(view.operation.state, ForkState::Failed);
    assert_eq!(
        view.operation.error_reason.as_deref(),
        Some("source_changed")
    );
    assert!(
        run(&storage, spool::get_session(WS, CHILD))
            .expect("ok")
            .is_none()
    );
    assert_eq!(snapshot_keys(&storage), 0);
}

#[test]
fn test_a_fork_of_a_reserved_point_by_another_request_says_it_is_not_the_callers() {
    let storage = source();
    let mine = run(
        &storage,
        spool::fork(WS, SRC, request("request-1", CHILD, "child-1"), "op-a", 10),
    )
    .expect("ok");
    assert_eq!(
        mine.origin,
        Some(spool::provider_fork::ForkOrigin::Prepared)
    );
    let again = run(
        &storage,
        spool::fork(WS, SRC, request("request-1", CHILD, "child-1"), "op-x", 11),
    )
    .expect("ok");
    assert_eq!(again.operation.operation_id, "op-a");
    assert_eq!(
        again.origin,
        Some(spool::provider_fork::ForkOrigin::SameRequest)
    );
    let other = run(
        &storage,
        spool::fork(
            WS,
            SRC,
            request("request-2", "agent:main:other", "other-1"),
            "op-b",
            12,
        ),
    )
    .expect("ok");
    assert_eq!(other.operation.operation_id, "op-a");
    assert_eq!(
        other.origin,
        Some(spool::provider_fork::ForkOrigin::BarrierHeld)
    );
    assert_eq!(other.operation.state, ForkState::Prepared, "untouched");
    let read = run(&storage, spool::get_fork_operation(WS, "op-a")).expect("ok");
    assert_eq!(read.origin, None);
}

#[test]
fn test_an_invalid_provider_answer_is_recorded_as_unknown_at_once() {
    let invalid = [
        Disposition::Rejected {
            error: "attachments cannot be forked".into(),
            reason: Some(String::new()),
        },
        Disposition::Accepted {
            target_provider_session_id: Some(String::new()),
            bind_provider_state: false,
        },
        Disposition::Accepted {
            target_provider_session_id: Some("thread\n2".into()),
            bind_provider_state: false,
        },
        Disposition::Unknown {
            error: "x".repeat(spool::validate::MAX_CONTENT_BYTES + 1),
        },
    ];
    for disposition in invalid {
        let storage = source();
        let req = request("request-1", CHILD, "child-1");
        run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("ok");
        run(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11)).expect("ok");
        let view = run(
            &storage,
            spool::record_fork_disposition(WS, "operation-1", disposition.clone(), 12),
        )
        .unwrap_or_else(|e| panic!("{disposition:?} gave {e}"));
        assert_eq!(view.operation.state, ForkState::Unknown, "{disposition:?}");
        assert_eq!(
            view.operation.error_reason.as_deref(),
            Some("invalid_disposition")
        );
        let error = view.operation.error.unwrap_or_default();
        assert!(error.contains("not a valid disposition"), "{error}");
        assert!(
            error.len() < 1000,
            "the error does not carry the answer whole"
        );
        assert_eq!(stored_op(&storage).state, ForkState::Unknown);
    }
}

/// A parent of three entries and a branch sharing them, with one entry of its own.
fn branched_source() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(
        &storage,
        spool::create_session(WS, "agent:main:parent", "p-1", 1),
    )
    .expect("ok");
    for i in 1..=3 {
        let append = AppendRequest::new(Role::User, format!("p{i}"));
        run(
            &storage,
            spool::append_entry(WS, "agent:main:parent", append, 1 + i),
        )
        .expect("ok");
    }
    let mut branch = spool::BranchRequest::empty("src-1");
    branch.fork_transcript = true;
    run(
        &storage,
        spool::branch(WS, "agent:main:parent", SRC, branch, 10),
    )
    .expect("branch");
    let append = AppendRequest::new(Role::User, "own");
    run(&storage, spool::append_entry(WS, SRC, append, 11)).expect("ok");
    storage
}

#[test]
fn test_provider_fork_of_a_branch_gets_the_history_it_shares() {
    // Whole session, then the same with the parent and then the branch itself
    // truncated between prepare and commit.
    for cut in [None, Some("agent:main:parent"), Some(SRC)] {
        let storage = branched_source();
        let frozen = contents(&storage, SRC);
        assert_eq!(frozen.len(), 4);
        let req = whole_session("request-1", CHILD, "child-1");
        run(&storage, spool::fork(WS, SRC, req, "operation-1", 12)).expect("prepared");
        if let Some(key) = cut {
            run(&storage, spool::truncate(WS, key, 1, None, 13)).expect("truncated");
        }
        let view = dispatch_accept_commit(&storage, "operation-1");
        assert_eq!(view.operation.state, ForkState::Committed, "{cut:?}");
        assert_eq!(contents(&storage, CHILD), frozen, "{cut:?}");
    }
}

#[test]
fn test_provider_fork_through_a_turn_of_a_branch_gets_the_history_it_shares() {
    let storage = branched_source();
    let start = NewTurn {
        turn_id: "turn-1".into(),
        provider_turn_id: None,
        provider_binding: None,
        expected_epoch: None,
    };
    run(&storage, spool::start_turn(WS, SRC, start, 12)).expect("ok");
    let mut append = AppendRequest::new(Role::User, "in the turn");
    append.turn_id = Some("turn-1".into());
    run(&storage, spool::append_entry(WS, SRC, append, 13)).expect("ok");
    run(
        &storage,
        spool::settle_turn(WS, SRC, "turn-1", CloseTurn::default(), 14),
    )
    .expect("ok");
    let frozen = contents(&storage, SRC);
    let later = AppendRequest::new(Role::User, "after the turn");
    run(&storage, spool::append_entry(WS, SRC, later, 15)).expect("ok");
    let req = request("request-1", CHILD, "child-1");
    run(&storage, spool::fork(WS, SRC, req, "operation-1", 16)).expect("prepared");
    let view = dispatch_accept_commit(&storage, "operation-1");
    assert_eq!(view.operation.state, ForkState::Committed);
    assert_eq!(contents(&storage, CHILD), frozen);
}

#[test]
fn test_a_truncation_racing_the_commit_never_shrinks_the_child() {
    // The truncation reads first and commits second, then the other way round.
    for truncation_first in [false, true] {
        let storage = plain_source(5);
        let frozen = contents(&storage, SRC);
        let req = whole_session("request-1", CHILD, "child-1");
        run(&storage, spool::fork(WS, SRC, req, "operation-1", 10)).expect("prepared");
        run(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11)).expect("ok");
        run(
            &storage,
            spool::record_fork_disposition(WS, "operation-1", accepted(), 12),
        )
        .expect("ok");
        if truncation_first {
            let (commit, batch) = until_commit(&storage, spool::commit_fork(WS, "operation-1", 14));
            run(&storage, spool::truncate(WS, SRC, 2, None, 13)).expect("truncated");
            let view = finish(&storage, commit, batch).expect("the commit retries");
            assert!(view.operation.snapshot_copied);
        } else {
            let (cut, batch) = until_commit(&storage, spool::truncate(WS, SRC, 2, None, 13));
            run(&storage, spool::commit_fork(WS, "operation-1", 14)).expect("committed");
            let outcome = finish(&storage, cut, batch).expect("the truncation retries");
            assert_eq!(outcome.after_count, 2);
        }
        assert_eq!(contents(&storage, CHILD), frozen, "{truncation_first}");
        assert_eq!(contents(&storage, SRC).len(), 2);
        assert_eq!(snapshot_keys(&storage), 0);
    }
}

#[test]
fn test_next_step_dispatches_only_the_callers_own_prepared_operation() {
    use spool::provider_fork::ForkStep;
    let storage = source();
    let req = request("request-1", CHILD, "child-1");
    let fork = |req: ForkRequest, id: &str| run(&storage, spool::fork(WS, SRC, req, id, 10));
    let prepared = fork(req.clone(), "operation-1").expect("prepared");
    assert_eq!(prepared.next_step(), ForkStep::Dispatch);
    // The same request again is the caller's own, but it was dispatched (or is being)
    // by the first call: never a second dispatch.
    let again = fork(req, "operation-2").expect("the same operation");
    assert_eq!(again.operation.operation_id, "operation-1");
    assert_eq!(again.next_step(), ForkStep::Done);
    // Another request on the same fork point finds the barrier held: never advanced.
    let other = fork(
        request("request-2", "agent:main:other", "other-1"),
        "operation-3",
    );
    assert_eq!(other.expect("barrier held").next_step(), ForkStep::Done);
    // A view read back (no origin) of a prepared operation is dispatched after a restart.
    let read = run(&storage, spool::get_fork_operation(WS, "operation-1")).expect("ok");
    assert_eq!(read.next_step(), ForkStep::Dispatch);
    run(&storage, spool::begin_fork_dispatch(WS, "operation-1", 11)).expect("ok");
    let dispatching = run(&storage, spool::get_fork_operation(WS, "operation-1")).expect("ok");
    assert_eq!(
        dispatching.next_step(),
        ForkStep::Done,
        "in flight elsewhere"
    );
    let answered = spool::record_fork_disposition(WS, "operation-1", accepted(), 12);
    assert_eq!(
        run(&storage, answered).expect("ok").next_step(),
        ForkStep::Commit
    );
    // The caller's own request again after the provider accepted: commit it.
    let accepted_again = fork(request("request-1", CHILD, "child-1"), "operation-4");
    assert_eq!(accepted_again.expect("ok").next_step(), ForkStep::Commit);
    let done = run(&storage, spool::commit_fork(WS, "operation-1", 13)).expect("ok");
    assert_eq!(done.next_step(), ForkStep::Done);
}
