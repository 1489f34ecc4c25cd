//! The message-id index holds a row for every entry whose message id is not its own
//! generated one (`{session_id}-{id}`); entries with their generated id are found by
//! position. Every lookup answers as if every entry had a row, and a message id stays
//! unique in its identity however it was given.

use crate::support;

use spool::{AppendRequest, BranchRequest, Entry, MemoryStorage, Role, run};

const WS: &str = "default";
const KEY: &str = "agent:main:main";
const SID: &str = "s1";

fn append_at(
    storage: &MemoryStorage,
    message_id: Option<&str>,
    now_ms: u64,
) -> Result<Entry, spool::Error> {
    let mut request = AppendRequest::new(Role::User, format!("at {now_ms}"));
    request.message_id = message_id.map(str::to_owned);
    run(storage, spool::append_entry(WS, KEY, request, now_ms))
}

fn lookup(storage: &MemoryStorage, key: &str, message_id: &str) -> Option<Entry> {
    run(storage, spool::get_entry(WS, key, message_id)).expect("get_entry")
}

fn index_rows(storage: &MemoryStorage) -> usize {
    support::dump(storage, WS)
        .iter()
        .filter(|kv| kv.key[0] == spool::keys::MESSAGE)
        .count()
}

/// A session whose clock runs forward, stalls, jumps years ahead and falls behind (the
/// entry clock then holds `created_at` up), with batches sharing one time: 400 entries.
fn skewed() -> (MemoryStorage, Vec<Entry>) {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, SID, 1)).expect("create");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut now = 1_700_000_000_000u64;
    let mut written = Vec::new();
    while written.len() < 400 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        match state % 10 {
            0 => now += 400 * 24 * 3_600_000,
            1 => now = now.saturating_sub(90_000),
            2 | 3 => {}
            _ => now += state % 5_000,
        }
        if state.is_multiple_of(7) {
            let batch = (0..1 + state % 6)
                .map(|i| AppendRequest::new(Role::Assistant, format!("batch {i}")))
                .collect();
            written
                .extend(run(&storage, spool::append_entries(WS, KEY, batch, now)).expect("batch"));
        } else {
            written.push(append_at(&storage, None, now).expect("append"));
        }
    }
    (storage, written)
}

#[test]
fn test_every_generated_id_is_found_without_a_row() {
    let (storage, written) = skewed();
    assert_eq!(index_rows(&storage), 0, "generated ids have no index row");
    for entry in &written {
        assert_eq!(
            lookup(&storage, KEY, &entry.message_id).as_ref(),
            Some(entry)
        );
    }
    let last = written.last().expect("entries").id;
    for missing in [
        "s1-0".to_owned(),
        format!("s1-{}", last + 1),
        "s1-01".into(),
        "s1-".into(),
        "s1-x".into(),
        "s2-1".into(),
        format!("s1-{}", u64::MAX),
    ] {
        assert_eq!(lookup(&storage, KEY, &missing), None, "{missing}");
    }
}

#[test]
fn test_truncated_generated_ids_are_gone_and_later_ones_found() {
    let (storage, written) = skewed();
    run(
        &storage,
        spool::truncate(WS, KEY, 150, None, 2_000_000_000_000),
    )
    .expect("truncate");
    let (gone, kept) = written.split_at(written.len() - 150);
    for entry in gone {
        assert_eq!(
            lookup(&storage, KEY, &entry.message_id),
            None,
            "{}",
            entry.message_id
        );
    }
    for entry in kept {
        assert_eq!(
            lookup(&storage, KEY, &entry.message_id).as_ref(),
            Some(entry)
        );
    }
    let later = append_at(&storage, None, 5).expect("append");
    assert_eq!(later.id, written.len() as u64 + 1);
    assert_eq!(lookup(&storage, KEY, &later.message_id), Some(later));
}

#[test]
fn test_a_generated_id_given_explicitly_stays_unique() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, SID, 1)).expect("create");
    for now in 2..5 {
        append_at(&storage, None, now).expect("append");
    }
    // Entry 2 holds `s1-2` (no row): giving it again is the same conflict as ever.
    let err = append_at(&storage, Some("s1-2"), 10).expect_err("taken");
    assert_eq!(err.code(), "conflict", "{err}");
    // A batch that gives it is refused whole.
    let batch = vec![
        AppendRequest::new(Role::User, "fine"),
        AppendRequest {
            message_id: Some("s1-3".into()),
            ..AppendRequest::new(Role::User, "taken")
        },
    ];
    let err = run(&storage, spool::append_entries(WS, KEY, batch, 11)).expect_err("taken");
    assert_eq!(err.code(), "conflict");
    // One call that generates an id and gives it explicitly too: refused whole.
    let batch = vec![
        AppendRequest::new(Role::User, "generates s1-4"),
        AppendRequest {
            message_id: Some("s1-4".into()),
            ..AppendRequest::new(Role::User, "gives it")
        },
    ];
    let err = run(&storage, spool::append_entries(WS, KEY, batch, 11)).expect_err("twice");
    assert_eq!(err.code(), "conflict");
    // A future generated id given now has a row; the entry that would generate it later
    // conflicts, as it always did.
    let early = append_at(&storage, Some("s1-6"), 12).expect("free");
    assert_eq!((early.id, index_rows(&storage)), (4, 1));
    assert_eq!(lookup(&storage, KEY, "s1-6"), Some(early.clone()));
    assert_eq!(append_at(&storage, None, 13).expect("5").message_id, "s1-5");
    assert_eq!(
        append_at(&storage, None, 14).expect_err("6").code(),
        "conflict"
    );
    // Entry 4 was given another id, so its generated one is free to give.
    assert_eq!(lookup(&storage, KEY, "s1-4"), None);
    let four = append_at(&storage, Some("s1-4"), 15).expect("free");
    assert_eq!(lookup(&storage, KEY, "s1-4"), Some(four));
    assert_eq!(lookup(&storage, KEY, "s1-6"), Some(early));
}

#[test]
fn test_branches_find_their_parents_generated_ids() {
    let (storage, written) = skewed();
    let child = "agent:main:child";
    run(
        &storage,
        spool::branch(WS, KEY, child, BranchRequest::fork("c1"), 3_000_000_000_000),
    )
    .expect("branch");
    for entry in written.iter().step_by(7) {
        assert_eq!(
            lookup(&storage, child, &entry.message_id).as_ref(),
            Some(entry)
        );
    }
    let target = &written[123];
    let before = BranchRequest {
        fork_before_message_id: Some(target.message_id.clone()),
        ..BranchRequest::fork("c2")
    };
    run(
        &storage,
        spool::branch(WS, KEY, "agent:main:before", before, 3_000_000_000_001),
    )
    .expect("branch before a generated id");
    let inherited = support::entries(&storage, WS, "agent:main:before", true);
    assert_eq!(inherited.len(), 123);
    assert_eq!(inherited.last(), Some(&written[122]));
    // The parent's generated ids are taken in the child too.
    let mut again = AppendRequest::new(Role::User, "again");
    again.message_id = Some(target.message_id.clone());
    let err = run(
        &storage,
        spool::append_entry(WS, child, again, 3_000_000_000_002),
    )
    .expect_err("in the shared history");
    assert_eq!(err.code(), "conflict");
}
