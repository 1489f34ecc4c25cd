//! The friendly `Spool` API: clock and ids are supplied, the workspace is remembered,
//! transcripts are read across pages, data persists in the database file.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use spool::{AppendRequest, Order, PageRequest, Role};
use spool_host::Spool;

fn ticking_clock() -> impl FnMut() -> u64 + Send + 'static {
    let now = Arc::new(AtomicU64::new(1_000));
    move || now.fetch_add(1, Ordering::SeqCst)
}

#[test]
fn test_clock_and_ids_are_supplied_to_the_component() {
    let mut n = 0;
    let mut spool = Spool::builder()
        .clock(ticking_clock())
        .ids(move || {
            n += 1;
            format!("id-{n}")
        })
        .open()
        .expect("open");
    assert_eq!(spool.workspace(), "default");
    let a = spool.create_session("agent:a:main").expect("create a");
    let b = spool.create_session("agent:b:main").expect("create b");
    assert_eq!((a.session_id.as_str(), a.created_at), ("id-1", 1_000));
    assert_eq!((b.session_id.as_str(), b.created_at), ("id-2", 1_001));
    let entry = spool
        .append_entry("agent:a:main", AppendRequest::new(Role::User, "hi"))
        .expect("append");
    assert_eq!(
        (entry.created_at, entry.message_id.as_str()),
        (1_002, "id-1-1")
    );
    // a was updated last, so it is listed first.
    let list = spool.list_sessions(10, None, None, None).expect("list");
    let keys: Vec<_> = list.sessions.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["agent:a:main", "agent:b:main"]);
}

#[test]
fn test_default_ids_are_random_uuids() {
    let mut spool = Spool::builder().open().expect("open");
    let a = spool
        .create_session("agent:a:main")
        .expect("create")
        .session_id;
    let b = spool
        .create_session("agent:b:main")
        .expect("create")
        .session_id;
    assert_ne!(a, b);
    for id in [&a, &b] {
        let groups: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{id}");
        assert_eq!(&id[14..15], "4", "version nibble of {id}");
    }
}

#[test]
fn test_transcript_reads_every_page_in_order() {
    let mut spool = Spool::builder()
        .clock(ticking_clock())
        .open()
        .expect("open");
    spool.create_session("agent:a:main").expect("create");
    let total = spool::MAX_PAGE as usize + 5;
    for i in 0..total {
        spool
            .append_entry(
                "agent:a:main",
                AppendRequest::new(Role::User, format!("m{i}")),
            )
            .expect("append");
    }
    let transcript = spool.transcript("agent:a:main").expect("transcript");
    assert_eq!(transcript.len(), total);
    assert!(
        transcript
            .iter()
            .enumerate()
            .all(|(i, e)| e.content == format!("m{i}"))
    );
    let newest = spool
        .read_page(
            "agent:a:main",
            PageRequest {
                order: Order::NewestFirst,
                cursor: None,
                limit: 2,
            },
        )
        .expect("page");
    assert_eq!(newest.entries[0].content, format!("m{}", total - 1));
    assert!(newest.next_cursor.is_some());
    assert_eq!(
        spool
            .transcript("agent:none:main")
            .expect_err("unknown")
            .code(),
        "not_found"
    );
}

#[test]
fn test_workspaces_are_isolated_and_data_persists() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("spool.db");
    {
        let mut spool = Spool::builder()
            .db_path(&path)
            .workspace("one")
            .open()
            .expect("open");
        spool.create_session("agent:a:main").expect("create");
        spool
            .append_entry("agent:a:main", AppendRequest::new(Role::User, "kept"))
            .expect("append");
    }
    let mut other = Spool::builder()
        .db_path(&path)
        .workspace("two")
        .open()
        .expect("open");
    assert_eq!(other.get_session("agent:a:main").expect("get"), None);
    let mut again = Spool::builder()
        .db_path(&path)
        .workspace("one")
        .open()
        .expect("reopen");
    let transcript = again.transcript("agent:a:main").expect("transcript");
    assert_eq!(transcript.len(), 1);
    assert_eq!(transcript[0].content, "kept");
}

#[test]
fn test_errors_carry_the_components_reason_codes() {
    let mut spool = Spool::builder().open().expect("open");
    assert_eq!(
        spool.get_session("").expect_err("empty key").code(),
        "invalid_argument"
    );
    let err = spool
        .append_entry("agent:none:main", AppendRequest::new(Role::User, "x"))
        .expect_err("no such session");
    assert_eq!(err.code(), "not_found");
    spool.create_session("agent:a:main").expect("create");
    let mut stale = AppendRequest::new(Role::User, "x");
    stale.expected_epoch = Some(7);
    assert_eq!(
        spool
            .append_entry("agent:a:main", stale)
            .expect_err("stale")
            .code(),
        "stale_epoch"
    );
}

#[test]
fn test_handles_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<Spool>();
    assert_send::<spool_host::Instance>();
    assert_send::<spool_host::SqliteStorage>();
    let mut spool = Spool::builder().open().expect("open");
    let session = std::thread::spawn(move || spool.create_session("agent:t:main"))
        .join()
        .expect("thread")
        .expect("create");
    assert_eq!(session.key, "agent:t:main");
}

#[test]
fn test_builder_limits_fail_with_resource_limit_and_the_handle_recovers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("spool.db");
    let mut roomy = Spool::builder().db_path(&db).open().expect("open");
    roomy.create_session("agent:a:main").expect("create");
    drop(roomy);

    // Too little fuel for anything: every call fails the same typed way, none writes.
    let mut starved = Spool::builder()
        .db_path(&db)
        .fuel_limit(1_000)
        .open()
        .expect("instantiating runs no guest code worth metering");
    for _ in 0..2 {
        let err = starved
            .append_entry("agent:a:main", AppendRequest::new(Role::User, "hi"))
            .expect_err("out of fuel");
        assert_eq!(err.code(), "resource_limit", "{err}");
    }
    drop(starved);

    // A memory cap a 4 MiB entry cannot fit under; the next, small call works.
    let mut capped = Spool::builder()
        .db_path(&db)
        .memory_limit(8 * 1024 * 1024)
        .open()
        .expect("open");
    let big = AppendRequest::new(Role::Tool, "x".repeat(4 * 1024 * 1024));
    let err = capped
        .append_entry("agent:a:main", big)
        .expect_err("over memory");
    assert_eq!(err.code(), "resource_limit", "{err}");
    let entry = capped
        .append_entry("agent:a:main", AppendRequest::new(Role::User, "small"))
        .expect("recovers");
    assert_eq!(entry.id, 1, "the failed calls wrote nothing");
}

#[test]
fn test_search_finds_entries_of_every_session_and_pages() {
    let mut spool = Spool::builder()
        .clock(ticking_clock())
        .open()
        .expect("open");
    for (key, text) in [
        ("agent:a:main", "the parser fails on nested lists"),
        ("agent:b:main", "parser fixed"),
        ("agent:b:main", "unrelated"),
    ] {
        if spool.get_session(key).expect("get").is_none() {
            spool.create_session(key).expect("create");
        }
        spool
            .append_entry(key, AppendRequest::new(Role::User, text))
            .expect("append");
    }
    let all = spool.search("parser", 10, None).expect("search");
    let found: Vec<_> = all
        .hits
        .iter()
        .map(|h| (h.session_key.as_str(), h.entry_id))
        .collect();
    assert_eq!(found, [("agent:b:main", 1), ("agent:a:main", 1)]);
    assert_eq!(all.hits[0].snippet.text, "parser fixed");
    assert_eq!(all.hits[0].snippet.highlights, [(0, 6)]);
    assert_eq!(all.next_cursor, None);
    let first = spool.search("parser", 1, None).expect("page 1");
    assert_eq!(first.hits, all.hits[..1]);
    let rest = spool
        .search("parser", 1, first.next_cursor.clone())
        .expect("page 2");
    assert_eq!(rest.hits, all.hits[1..]);
    assert_eq!(rest.next_cursor, None);
    let err = spool.search("\"open", 10, None).expect_err("a bad query");
    assert_eq!(err.code(), "invalid_argument");
}
