//! Provider fork operations beyond what the vectors can say: stored identities that
//! disagree, transitions that lose a race, and commits that fail in the storage.

mod support;

use spool::fork_model::{
    Disposition, ForkOperation, ForkRequest, ForkState, Lineage, ProviderStateBinding,
};
use spool::turns::{CloseTurn, StartTurn};
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
    let start = StartTurn {
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
    let key = keys::lineage("child-1");
    let mut live: Lineage =
        record::decode(&key, &storage.get(WS, &key).expect("ok").expect("ok")).expect("ok");
    live.operation_id = "operation-2".into();
    overwrite(&storage, key, &live);

    assert_fork_conflict(
        run(&storage, spool::get_fork_operation(WS, "operation-1")),
        "inconsistent_identity",
    );
}

/// Drives `op` until it asks to commit, returning it with the batch still unanswered.
fn until_commit<T>(storage: &MemoryStorage, mut op: Operation<T>) -> (Operation<T>, spool::Batch) {
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

fn finish<T>(
    storage: &MemoryStorage,
    mut op: Operation<T>,
    batch: spool::Batch,
) -> Result<T, Error> {
    op.handle_commit(storage.commit(WS, batch));
    run_rest(storage, op)
}

fn run_rest<T>(storage: &MemoryStorage, mut op: Operation<T>) -> Result<T, Error> {
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
    use spool::capabilities::{ProjectionMode, fork_projection};
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
