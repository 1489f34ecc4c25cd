//! A database written by the previous release (record format 1: no accounting fields,
//! no message-id index) opens, reads with the documented defaults, and takes new writes.

use std::path::PathBuf;

use spool::{AppendRequest, Role, Session, SessionStatus, TurnUsage};
use spool_host::{Instance, Spool, SqliteStorage};

const DEMO: &str = "agent:demo:main";
const REVIEWER: &str = "agent:reviewer:pr-42";

/// A private copy of the checked-in fixture (the original is never opened for writing).
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let source =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/format-v1/spool.sqlite");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("spool.sqlite");
    std::fs::copy(&source, &path).expect("copy the format-1 fixture");
    (dir, path)
}

fn assert_format_1_defaults(session: &Session) {
    assert_eq!(session.cost_source, "none", "{session:?}");
    let counters = [
        session.input_tokens,
        session.output_tokens,
        session.cache_read,
        session.cache_write,
        session.missing_cost_entries,
        session.compaction_count,
        session.last_state_id,
    ];
    assert_eq!(counters, [0; 7], "{session:?}");
    let costs = [
        session.estimated_cost_usd,
        session.total_cost_usd,
        session.billed_cost_usd,
        session.estimated_cost_component_usd,
    ];
    assert_eq!(costs, [0.0; 4], "{session:?}");
    assert!(session.model_config.is_empty() && session.metadata.is_empty());
    assert_eq!((&session.model, &session.channel), (&None, &None));
    assert_eq!((session.ended_at, session.runtime_ms), (None, None));
    assert!(
        !session.message_index,
        "format-1 identities predate the index"
    );
    assert_eq!(session.status, SessionStatus::Running);
}

#[test]
fn test_format_1_database_opens_with_defaults_and_takes_new_writes() {
    let (dir, path) = fixture_copy();
    let mut spool = Spool::builder()
        .db_path(&path)
        .clock(|| 1_900_000_000_000)
        .open()
        .expect("open the format-1 database");

    let list = spool.list_sessions(10, None).expect("list default");
    let keys: Vec<&str> = list.sessions.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, [DEMO]);
    let demo = &list.sessions[0];
    assert_format_1_defaults(demo);
    assert_eq!(
        (demo.entry_count, demo.last_entry_id, demo.epoch),
        (6, 6, 0)
    );
    assert_eq!(demo.agent_id.as_deref(), Some("demo"));

    let transcript = spool.transcript(DEMO).expect("transcript");
    assert_eq!(transcript.len(), 6);
    assert!(transcript.iter().all(|e| e.turn_usage.is_none()));
    assert!(transcript[0].content.contains("parses_nested_lists"));
    assert!(transcript[1].tool_calls.is_some());

    // The identity predates the message-id index: the lookup scans the transcript.
    let old = &transcript[2];
    let found = spool
        .get_entry(DEMO, &old.message_id)
        .expect("get entry")
        .expect("an old entry is found by its message id");
    assert_eq!(found, *old);
    assert_eq!(spool.get_entry(DEMO, "no-such-id").expect("get"), None);
    assert_eq!(spool.count_entries(DEMO).expect("count"), 6);

    let mut reply = AppendRequest::new(Role::Assistant, "Back after the upgrade.");
    reply.message_id = Some("after-upgrade".into());
    reply.turn_usage = Some(TurnUsage {
        model: "m".into(),
        input_tokens: 30,
        output_tokens: 7,
    });
    let appended = spool
        .append(DEMO, reply)
        .expect("append to a format-1 session");
    assert_eq!(appended.id, 7);
    assert_eq!(spool.count_entries(DEMO).expect("count"), 7);
    let demo = spool.get_session(DEMO).expect("get").expect("exists");
    assert_eq!((demo.input_tokens, demo.output_tokens), (30, 7));
    assert_eq!(
        spool
            .get_entry(DEMO, "after-upgrade")
            .expect("get")
            .map(|e| e.id),
        Some(7)
    );
    // A duplicate message id is refused even though the old identity has no full index.
    let mut again = AppendRequest::new(Role::User, "dup");
    again.message_id = Some("after-upgrade".into());
    assert_eq!(
        spool.append(DEMO, again).expect_err("duplicate").code(),
        "conflict"
    );

    // The other workspace, through the exact API.
    let mut instance = Instance::new(
        SqliteStorage::open(&path).expect("reopen"),
        spool_host::ArchiveDir::new(dir.path().join("archives")),
    )
    .expect("instance");
    let team = instance
        .call("team-b", first_ten(None, None))
        .expect("list team-b");
    let keys: Vec<&str> = team.sessions.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, [REVIEWER]);
    assert_format_1_defaults(&team.sessions[0]);
    let filtered = instance
        .call(
            "team-b",
            first_ten(Some("reviewer".into()), Some(SessionStatus::Running)),
        )
        .expect("filtered list");
    assert_eq!(filtered.sessions.len(), 1);

    // A reset of a format-1 identity archives its transcript and starts an indexed one.
    let reset = spool.reset(DEMO).expect("reset");
    assert!(reset.archive.expect("archived").written);
    assert!(reset.session.message_index);
    assert_eq!(reset.session.epoch, 1);
}

/// Every id of `key`'s transcript, by pages of 2 in `order` (cursor to cursor).
fn read_ids(instance: &mut Instance, key: &str, order: spool::Order) -> Vec<u64> {
    let (mut ids, mut cursor) = (Vec::new(), None);
    loop {
        let request = spool::PageRequest {
            order,
            cursor: cursor.take(),
            limit: 2,
        };
        let page = instance
            .call(
                "default",
                spool::ops::ReadPage {
                    key: key.to_owned(),
                    request,
                },
            )
            .expect("page");
        ids.extend(page.entries.iter().map(|e| e.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
}

/// Asserts `key` reads `expected` oldest first and its reverse newest first.
fn assert_reads(instance: &mut Instance, key: &str, expected: &[u64]) {
    assert_eq!(read_ids(instance, key, spool::Order::OldestFirst), expected);
    let mut newest_first = read_ids(instance, key, spool::Order::NewestFirst);
    newest_first.reverse();
    assert_eq!(newest_first, expected, "{key}, newest first");
}

/// The release before the entry clock stored entries at the caller's time, so its
/// transcripts can hold positions out of insertion order (`tests/fixtures/format-v3/`).
/// They read as they were stored, and every entry written from now on goes after all of
/// them, whatever the writer's clock.
#[test]
fn test_format_3_database_reads_in_stored_order_and_appends_after_every_entry() {
    let source =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/format-v3/spool.sqlite");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("spool.sqlite");
    std::fs::copy(&source, &path).expect("copy the format-3 fixture");
    let mut instance = Instance::new(
        SqliteStorage::open(&path).expect("open the format-3 database"),
        spool_host::ArchiveDir::new(dir.path().join("archives")),
    )
    .expect("instance");
    let (main, branch) = ("agent:demo:main", "agent:demo:branch");
    assert_reads(&mut instance, main, &[6, 2, 4, 1, 5, 3]);
    assert_reads(&mut instance, branch, &[2, 4, 1, 5, 6, 3]);

    // A writer whose clock is behind every stored entry.
    let late = instance
        .call(
            "default",
            spool::ops::AppendEntry {
                key: main.to_owned(),
                request: AppendRequest::new(Role::User, "late"),
                now_ms: 1_500,
            },
        )
        .expect("append");
    assert_eq!((late.id, late.created_at), (7, 7_000));
    let ahead = instance
        .call(
            "default",
            spool::ops::AppendEntry {
                key: main.to_owned(),
                request: AppendRequest::new(Role::User, "ahead"),
                now_ms: 7_500,
            },
        )
        .expect("append");
    assert_eq!((ahead.id, ahead.created_at), (8, 7_500));
    assert_reads(&mut instance, main, &[6, 2, 4, 1, 5, 3, 7, 8]);
    let found = instance
        .call(
            "default",
            spool::ops::GetEntry {
                key: main.to_owned(),
                message_id: late.message_id.to_owned(),
            },
        )
        .expect("lookup")
        .expect("found");
    assert_eq!(found, late);

    // The branch's own entries go after what it inherited and what it wrote before.
    let own = instance
        .call(
            "default",
            spool::ops::AppendEntry {
                key: branch.to_owned(),
                request: AppendRequest::new(Role::User, "own"),
                now_ms: 1_000,
            },
        )
        .expect("append to the branch");
    assert_eq!((own.id, own.created_at), (7, 7_000));
    assert_reads(&mut instance, branch, &[2, 4, 1, 5, 6, 3, 7]);
    let canonical = instance
        .call(
            "default",
            spool::ops::CanonicalTranscript {
                key: branch.to_owned(),
            },
        )
        .expect("canonical");
    assert_eq!(canonical.last().map(|e| e.content.as_str()), Some("own"));
}

/// The first page of ten sessions, of `agent_id` and in `status` when given.
fn first_ten(agent_id: Option<String>, status: Option<SessionStatus>) -> spool::ops::ListSessions {
    spool::ops::ListSessions {
        limit: 10,
        cursor: None,
        agent_id,
        status,
    }
}
