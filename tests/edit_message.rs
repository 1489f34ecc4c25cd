//! `edit_message`: a branch before a message plus the edited message, in one commit.

use crate::support;

use spool::{AppendRequest, MemoryStorage, Role, run};
use support::{FailingCommits, dump, entries};

const WS: &str = "default";
const KEY: &str = "agent:main:main";
const CHILD: &str = "agent:main:edit";

/// A session of three user messages, `m1` to `m3`.
fn seeded() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "parent-sid", 1)).expect("create");
    for (n, text) in [(1, "fix the test"), (2, "use the old parser"), (3, "done")] {
        let mut request = AppendRequest::new(Role::User, text);
        request.message_id = Some(format!("m{n}"));
        run(&storage, spool::append_entry(WS, KEY, request, 10 + n)).expect("append");
    }
    storage
}

fn edit(message_id: &str, text: &str) -> spool::Operation<spool::BranchInfo> {
    let request = AppendRequest::new(Role::User, text);
    spool::edit_message(WS, KEY, CHILD, message_id, request, "child-sid", 20)
}

fn contents(storage: &impl spool::Storage, key: &str) -> Vec<String> {
    entries(storage, WS, key, false)
        .into_iter()
        .map(|e| e.content)
        .collect()
}

#[test]
fn test_the_branch_holds_the_history_before_the_message_then_the_edit() {
    let storage = seeded();
    let branch = run(&storage, edit("m2", "use the new parser")).expect("edit");
    assert_eq!(branch.session.key, CHILD);
    assert_eq!(branch.session.session_id, "child-sid");
    assert_eq!(branch.session.entry_count, 2);
    assert_eq!(branch.lineage.parent_session_key.as_deref(), Some(KEY));
    assert!(branch.lineage.forked_from_parent);
    assert_eq!(
        contents(&storage, CHILD),
        ["fix the test", "use the new parser"]
    );
    // The record as stored says what the call returned.
    let stored = run(&storage, spool::get_session(WS, CHILD))
        .expect("get")
        .expect("the branch");
    assert_eq!(stored, branch.session);
    assert_eq!(
        contents(&storage, KEY),
        ["fix the test", "use the old parser", "done"]
    );
    // The branch goes on like any session.
    let next = AppendRequest::new(Role::Assistant, "switched");
    run(&storage, spool::append_entry(WS, CHILD, next, 30)).expect("append");
    assert_eq!(
        contents(&storage, CHILD),
        ["fix the test", "use the new parser", "switched"]
    );
    assert_eq!(contents(&storage, KEY).len(), 3);
}

#[test]
fn test_an_edit_of_the_first_message_starts_from_nothing() {
    let storage = seeded();
    let branch = run(&storage, edit("m1", "fix the flaky test")).expect("edit");
    assert_eq!(branch.session.entry_count, 1);
    assert_eq!(contents(&storage, CHILD), ["fix the flaky test"]);
}

#[test]
fn test_a_failed_edit_writes_nothing() {
    let storage = seeded();
    let before = dump(&storage, WS);
    let unknown = run(&storage, edit("m9", "x")).expect_err("unknown message");
    assert_eq!(unknown.code(), "not_found");
    // The edit reuses a message id the branch inherits: the append fails after the
    // branch is staged, and the branch must not exist either.
    let mut taken = AppendRequest::new(Role::User, "again");
    taken.message_id = Some("m1".into());
    let conflict = run(
        &storage,
        spool::edit_message(WS, KEY, CHILD, "m2", taken, "child-sid", 20),
    )
    .expect_err("a taken message id");
    assert_eq!(conflict.code(), "conflict");
    let mut fenced = AppendRequest::new(Role::User, "x");
    fenced.expected_epoch = Some(1);
    let stale = run(
        &storage,
        spool::edit_message(WS, KEY, CHILD, "m2", fenced, "child-sid", 20),
    )
    .expect_err("the branch is at epoch 0");
    assert_eq!(stale.code(), "stale_epoch");
    assert_eq!(dump(&storage, WS), before);

    let failing = FailingCommits {
        inner: seeded(),
        cause: "disk full",
    };
    let before = dump(&failing, WS);
    let refused = run(&failing, edit("m2", "use the new parser")).expect_err("disk full");
    assert_eq!(refused.code(), "storage");
    assert_eq!(dump(&failing, WS), before);
}

#[test]
fn test_an_edit_into_a_key_in_use_is_a_conflict() {
    let storage = seeded();
    run(&storage, spool::create_session(WS, CHILD, "other-sid", 5)).expect("create");
    let before = dump(&storage, WS);
    let err = run(&storage, edit("m2", "x")).expect_err("key in use");
    assert_eq!(err.code(), "conflict");
    assert_eq!(dump(&storage, WS), before);
}

/// An append to the parent between the edit's first read and its commit: the edit
/// starts again on the parent as it now is, and still writes the whole branch once.
#[test]
fn test_an_edit_that_races_an_append_to_its_parent_starts_again() {
    let storage = seeded();
    let mut op = edit("m2", "use the new parser");
    match op.poll() {
        spool::Step::Read(request) => {
            let answer = spool::read_sync(&storage, WS, &request);
            op.handle_read(answer);
        }
        other => panic!("expected a read, got {other:?}"),
    }
    let late = AppendRequest::new(Role::User, "a late message");
    run(&storage, spool::append_entry(WS, KEY, late, 40)).expect("append");
    let (mut reads, mut commits) = (0, 0);
    let branch = loop {
        match op.poll() {
            spool::Step::Read(request) => {
                reads += 1;
                op.handle_read(spool::read_sync(&storage, WS, &request));
            }
            spool::Step::Commit(batch) => {
                commits += 1;
                op.handle_commit(spool::Storage::commit(&storage, WS, batch));
            }
            spool::Step::Archive(_) => op.handle_archive(Err("none".into())),
            spool::Step::Done(outcome) => break outcome.expect("the edit"),
        }
    };
    // The first commit is refused (the parent record changed) and the edit runs again.
    assert_eq!(commits, 2, "reads {reads}");
    assert_eq!(
        contents(&storage, CHILD),
        ["fix the test", "use the new parser"]
    );
    assert_eq!(branch.session.entry_count, 2);
    assert_eq!(contents(&storage, KEY).len(), 4);
    let parent = run(&storage, spool::lineage(WS, KEY)).expect("lineage");
    assert_eq!(parent.children.len(), 1);
}
