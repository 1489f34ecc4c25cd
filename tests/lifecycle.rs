//! Lifecycle behaviours that need more than the vectors can say: what a reset hands the
//! archive store and when, and that failures leave everything as it was.

use crate::support;

use support::FailingCommits;

use std::cell::RefCell;

use spool::{
    AppendRequest, Archiver, Batch, Intent, Kv, MemoryStorage, ResetArchive, Role, Storage, run,
    run_with,
};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

/// Records archives, or refuses them with a reason; sees the storage as it is when asked.
struct Archive<'a> {
    storage: &'a MemoryStorage,
    refuse: Option<&'static str>,
    kept: RefCell<Vec<ResetArchive>>,
    session_id_at_write: RefCell<Option<String>>,
}

impl<'a> Archive<'a> {
    fn new(storage: &'a MemoryStorage, refuse: Option<&'static str>) -> Self {
        Archive {
            storage,
            refuse,
            kept: RefCell::default(),
            session_id_at_write: RefCell::default(),
        }
    }
}

impl Archiver for Archive<'_> {
    fn write_archive(&self, _ws: &str, archive: &ResetArchive) -> Result<(), String> {
        let now = run(self.storage, spool::get_session(WS, KEY)).expect("read during archive");
        *self.session_id_at_write.borrow_mut() = now.map(|s| s.session_id);
        match self.refuse {
            Some(reason) => Err(reason.into()),
            None => {
                self.kept.borrow_mut().push(archive.clone());
                Ok(())
            }
        }
    }
}

fn dump(storage: &impl Storage) -> Vec<Kv> {
    support::dump(storage, WS)
}

fn seeded() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "old", 1)).expect("create");
    let mut hello = AppendRequest::new(Role::User, "hello");
    hello.token_count = Some(5);
    run(&storage, spool::append_entry(WS, KEY, hello, 2)).expect("append");
    run(
        &storage,
        spool::append_entry(WS, KEY, AppendRequest::new(Role::Assistant, "hi there"), 3),
    )
    .expect("append");
    storage
}

#[test]
fn test_reset_hands_the_old_generation_to_the_archive_before_committing() {
    let storage = seeded();
    let archive = Archive::new(&storage, None);
    let outcome = run_with(
        &storage,
        &archive,
        spool::apply_intent(WS, KEY, Intent::ResetSameKey, "new", 10),
    )
    .expect("reset");
    assert!(outcome.rotated && outcome.archive.as_ref().is_some_and(|a| a.written));
    // The archive was written while the old generation was still the live one.
    assert_eq!(archive.session_id_at_write.borrow().as_deref(), Some("old"));
    let kept = archive.kept.borrow();
    let [record] = kept.as_slice() else {
        panic!("exactly one archive, got {}", kept.len())
    };
    assert_eq!(
        (
            record.session_key.as_str(),
            record.session_id.as_str(),
            record.epoch
        ),
        (KEY, "old", 0)
    );
    let contents: Vec<&str> = record
        .transcript_entries
        .iter()
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(contents, ["hello", "hi there"]);
    assert_eq!(record.archived_at, 10);
}

#[test]
fn test_archive_failure_does_not_block_the_reset() {
    let storage = seeded();
    let archive = Archive::new(&storage, Some("archive directory is a file"));
    let outcome = run_with(
        &storage,
        &archive,
        spool::apply_intent(WS, KEY, Intent::ResetSameKey, "new", 10),
    )
    .expect("reset still completes");
    let status = outcome.archive.expect("a reset reports its archive");
    assert!(!status.written);
    assert_eq!(status.error.as_deref(), Some("archive directory is a file"));
    assert_eq!(outcome.session.session_id, "new");
    assert_eq!(
        run(&storage, spool::count_entries(WS, KEY)).expect("count"),
        0
    );
}

#[test]
fn test_failed_writes_leave_everything_as_it_was() {
    let storage = FailingCommits {
        inner: seeded(),
        cause: "disk full",
    };
    let before = dump(&storage);
    let ops: Vec<spool::Error> = vec![
        run(
            &storage,
            spool::apply_intent(WS, KEY, Intent::ResetSameKey, "new", 10),
        )
        .map(|_| ())
        .expect_err("reset"),
        run(&storage, spool::truncate(WS, KEY, 0, None, 10))
            .map(|_| ())
            .expect_err("truncate"),
        run(&storage, spool::delete_session(WS, KEY, None)).expect_err("delete"),
        run(&storage, spool::prune_stale(WS, 1, 100))
            .map(|_| ())
            .expect_err("prune"),
        run(&storage, spool::cap_sessions(WS, 0))
            .map(|_| ())
            .expect_err("cap"),
        run(
            &storage,
            spool::finish(WS, KEY, spool::FinishStatus::Done, None, 10),
        )
        .map(|_| ())
        .expect_err("finish"),
    ];
    for err in ops {
        assert_eq!(
            err,
            spool::Error::Storage {
                cause: "disk full".into()
            }
        );
    }
    assert_eq!(dump(&storage), before);
}

#[test]
fn test_delete_leaves_nothing_behind_and_other_sessions_untouched() {
    let storage = seeded();
    run(
        &storage,
        spool::create_session(WS, "agent:other:1", "keep", 4),
    )
    .expect("create");
    run(
        &storage,
        spool::append_entry(
            WS,
            "agent:other:1",
            AppendRequest::new(Role::User, "mine"),
            5,
        ),
    )
    .expect("append");
    let other_only = dump(&storage).len();
    run(
        &storage,
        spool::save_state(
            WS,
            KEY,
            spool::NewContextState {
                provider: "portable".into(),
                model: None,
                state_kind: "structured_summary_v1".into(),
                payload: serde_json::json!({"goal": "x"}),
                covered_through_id: 1,
                expires_at: None,
                portable: true,
                cacheable: true,
            },
            None,
            6,
        ),
    )
    .expect("save state");
    run(&storage, spool::delete_session(WS, KEY, None)).expect("delete");
    let left = dump(&storage);
    // Only the other session's records remain: its record, recency entry, entry (an
    // entry with its generated message id has no index row) and data-id registry entry.
    // The deleted session's record, recency entry, two entries, state and registry
    // entry are gone.
    assert_eq!(left.len(), other_only - 2 - 2 - 1, "{left:?}");
    assert_eq!(left.len(), 4, "{left:?}");
    let registry = left.iter().filter(|kv| kv.key[0] == spool::keys::DATA_ID);
    assert_eq!(
        registry.map(|kv| kv.value.as_slice()).collect::<Vec<_>>(),
        [b"keep"]
    );
    assert!(
        left.iter()
            .all(|kv| !String::from_utf8_lossy(&kv.key).contains("old"))
    );
    assert!(
        left.iter()
            .all(|kv| !String::from_utf8_lossy(&kv.key).contains(KEY))
    );
}

/// Plants an entry as compaction would archive it (under `x · data id`) into the identity
/// of the session under [`KEY`], whose session id is `session_id`.
fn plant_compacted(
    storage: &MemoryStorage,
    session_id: &str,
    created_at: u64,
    id: u64,
    content: &str,
) {
    let mut entry = spool::Entry::from_request(
        AppendRequest::new(Role::User, content),
        id,
        format!("{session_id}-{id}"),
        created_at,
    );
    entry.token_count = None;
    let data_id = run(storage, spool::session_data_id(WS, KEY))
        .expect("read")
        .expect("session");
    let key = spool::keys::archived(&data_id, &spool::keys::position(created_at, id));
    let mut batch = Batch::default();
    batch.put(key, spool::record::encode(&entry).expect("encode"));
    storage.commit(WS, batch).expect("plant");
}

#[test]
fn test_reset_archive_holds_the_canonical_transcript_and_delete_removes_the_compaction_archive() {
    let storage = seeded();
    // An earlier compaction moved an older message out of the active transcript.
    plant_compacted(&storage, "old", 0, 100, "compacted first");
    let archive = Archive::new(&storage, None);
    run_with(
        &storage,
        &archive,
        spool::apply_intent(WS, KEY, Intent::ResetSameKey, "new", 10),
    )
    .expect("reset");
    let contents: Vec<String> = archive.kept.borrow()[0]
        .transcript_entries
        .iter()
        .map(|e| e.content.clone())
        .collect();
    assert_eq!(contents, ["compacted first", "hello", "hi there"]);
    // The reset removed the old identity's compaction archive with the rest.
    assert!(dump(&storage).iter().all(|kv| kv.key[0] != b'x'));

    plant_compacted(&storage, "new", 11, 1, "compacted later");
    run(&storage, spool::delete_session(WS, KEY, None)).expect("delete");
    // Only the record of the reset's archive is left: archives outlive their session.
    let left = dump(&storage);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].key.starts_with(&spool::keys::reset_archives(KEY)),
        "{left:?}"
    );
}
