//! A database written by the previous release (record format 1: no accounting fields,
//! no message-id index) opens, reads with the documented defaults, and takes new writes.

use std::path::PathBuf;

use spool::{AppendRequest, Entry, Role, Session, SessionStatus, Storage, TurnUsage};
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

    let list = spool
        .list_sessions(10, None, None, None)
        .expect("list default");
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
    reply.turn_usage = Some(TurnUsage::new("m", 30, 7));
    let appended = spool
        .append_entry(DEMO, reply)
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
        spool
            .append_entry(DEMO, again)
            .expect_err("duplicate")
            .code(),
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

// Format 4 (`tests/fixtures/format-v4/`): the release whose compactions moved what they
// removed to the archive range `x`, and whose compactions, deletes and resets of a
// parent copied its history into the branches that read it.

const V4_MAIN: &str = "agent:demo:main";
const V4_BRANCH: &str = "agent:demo:branch";
const V4_LATE: &str = "agent:demo:late";
const V4_SCRATCH: &str = "agent:demo:scratch";
const V4_REVIEW: &str = "agent:reviewer:pr-9";

/// A private copy of the format-4 fixture, opened through the component, and a second
/// connection to the same file for reading raw records.
struct V4 {
    dir: tempfile::TempDir,
    instance: Instance,
    raw: SqliteStorage,
}

fn open_v4() -> V4 {
    let source =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/format-v4/spool.sqlite");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("spool.sqlite");
    std::fs::copy(&source, &path).expect("copy the format-4 fixture");
    let instance = Instance::new(
        SqliteStorage::open(&path).expect("open the format-4 database"),
        spool_host::ArchiveDir::new(dir.path().join("archives")),
    )
    .expect("instance");
    let raw = SqliteStorage::open(&path).expect("second connection");
    V4 { dir, instance, raw }
}

/// The entry the format-4 generator appended under `message_id` (see its README): ids
/// and clocks in insertion order, 100 tokens each, `m04`/`m05` a tool call and result.
fn written(message_id: &str) -> Entry {
    let (series, number) = message_id.split_at(1);
    let n: u64 = number.parse().expect("numbered message id");
    let (id, created_at, role, content) = match (series, n) {
        ("m", 4) => (
            4,
            104_000,
            Role::Assistant,
            "m04 reading src/lib.rs".to_owned(),
        ),
        ("m", 5) => (5, 105_000, Role::Tool, "m05 fn main() {}".to_owned()),
        ("m", 1..=30) if n % 2 == 1 => (
            n,
            100_000 + n * 1000,
            Role::User,
            format!("m{n:02} user message"),
        ),
        ("m", 1..=30) => (
            n,
            100_000 + n * 1000,
            Role::Assistant,
            format!("m{n:02} assistant message"),
        ),
        ("m", 31..=35) => (
            n,
            101_000 + n * 1000,
            Role::User,
            format!("m{n} after the first compaction"),
        ),
        ("m", 36..=38) => (
            n,
            103_000 + n * 1000,
            Role::User,
            format!("m{n} after the branch"),
        ),
        ("b", 1) => (36, 138_000, Role::User, "b01 the branch's own".to_owned()),
        ("l", 1) => (
            39,
            144_000,
            Role::User,
            "l01 the late branch's own".to_owned(),
        ),
        ("s", 3) => (1, 204_000, Role::User, "s03 after the reset".to_owned()),
        ("r", 1) => (1, 301_000, Role::User, "r01 review".to_owned()),
        ("r", 2) => (2, 302_000, Role::Assistant, "r02 looks good".to_owned()),
        _ => panic!("the generator wrote no {message_id}"),
    };
    let mut request = AppendRequest::new(role, content);
    request.token_count = Some(100);
    request.tool_calls = (message_id == "m04").then(|| {
        serde_json::json!([{"id": "call-1", "name": "read_file", "arguments": {"path": "src/lib.rs"}}])
    });
    request.tool_call_id = (message_id == "m05").then(|| "call-1".to_owned());
    Entry::from_request(request, id, message_id.to_owned(), created_at)
}

/// The entries `m{from}..=m{to}` as the generator wrote them.
fn m(from: u64, to: u64) -> Vec<Entry> {
    (from..=to).map(|n| written(&format!("m{n:02}"))).collect()
}

/// `parts` joined.
fn cat(parts: &[Vec<Entry>]) -> Vec<Entry> {
    parts.concat()
}

/// Every entry of `key`'s active transcript, by pages of 4 in `order`.
fn v4_pages(
    instance: &mut Instance,
    workspace: &str,
    key: &str,
    order: spool::Order,
) -> Vec<Entry> {
    let (mut entries, mut cursor) = (Vec::new(), None);
    loop {
        let request = spool::PageRequest {
            order,
            cursor: cursor.take(),
            limit: 4,
        };
        let page = instance
            .call(
                workspace,
                spool::ops::ReadPage {
                    key: key.to_owned(),
                    request,
                },
            )
            .unwrap_or_else(|e| panic!("page of {key}: {e}"));
        entries.extend(page.entries);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return entries,
        }
    }
}

fn canonical(instance: &mut Instance, workspace: &str, key: &str) -> Vec<Entry> {
    instance
        .call(
            workspace,
            spool::ops::CanonicalTranscript {
                key: key.to_owned(),
            },
        )
        .unwrap_or_else(|e| panic!("canonical transcript of {key}: {e}"))
}

/// Asserts that `key` reads `active` (oldest first, and newest first reversed) and
/// `canonical` exactly, and counts `active`.
fn assert_v4_reads(
    instance: &mut Instance,
    workspace: &str,
    key: &str,
    active: &[Entry],
    whole: &[Entry],
) {
    let ids = |entries: &[Entry]| -> Vec<String> {
        entries.iter().map(|e| e.message_id.clone()).collect()
    };
    let oldest_first = v4_pages(instance, workspace, key, spool::Order::OldestFirst);
    assert_eq!(
        ids(&oldest_first),
        ids(active),
        "{key}: active, oldest first"
    );
    assert_eq!(oldest_first, active, "{key}: active entries");
    let mut newest_first = v4_pages(instance, workspace, key, spool::Order::NewestFirst);
    newest_first.reverse();
    assert_eq!(
        ids(&newest_first),
        ids(active),
        "{key}: active, newest first"
    );
    let read = canonical(instance, workspace, key);
    assert_eq!(ids(&read), ids(whole), "{key}: canonical");
    assert_eq!(read, whole, "{key}: canonical entries");
    let count = instance
        .call(
            workspace,
            spool::ops::CountEntries {
                key: key.to_owned(),
            },
        )
        .expect("count");
    assert_eq!(count, active.len() as u64, "{key}: count");
}

fn preimage(
    instance: &mut Instance,
    key: &str,
    compaction_id: &str,
) -> Result<Vec<Entry>, spool_host::Error> {
    instance.call(
        "default",
        spool::ops::CompactionPreimage {
            key: key.to_owned(),
            compaction_id: compaction_id.to_owned(),
        },
    )
}

/// `(compaction_id, compaction_index, session_id, removed, kept, covered_through_id)`
/// of each summary of `key`, oldest first.
fn summaries(instance: &mut Instance, key: &str) -> Vec<(String, u64, String, u64, u64, u64)> {
    instance
        .call(
            "default",
            spool::ops::ListSummaries {
                key: key.to_owned(),
            },
        )
        .expect("summaries")
        .into_iter()
        .map(|s| {
            (
                s.compaction_id,
                s.compaction_index,
                s.session_id,
                s.removed_count,
                s.kept_count,
                s.covered_through_id,
            )
        })
        .collect()
}

fn summary(
    id: &str,
    index: u64,
    sid: &str,
    removed: u64,
    kept: u64,
    through: u64,
) -> (String, u64, String, u64, u64, u64) {
    (id.to_owned(), index, sid.to_owned(), removed, kept, through)
}

fn compact(
    instance: &mut Instance,
    key: &str,
    window: u64,
    now_ms: u64,
) -> spool::compaction::CompactionResult {
    instance
        .call(
            "default",
            spool::ops::Compact {
                key: key.to_owned(),
                request: spool::compaction::CompactRequest {
                    context_window_tokens: window,
                    config: spool::compaction::CompactionConfig::default(),
                    compaction_id: None,
                    trigger_reason: None,
                    flush_receipt_status: None,
                },
                now_ms,
            },
        )
        .unwrap_or_else(|e| panic!("compact {key}: {e}"))
}

fn append(instance: &mut Instance, key: &str, message_id: &str, now_ms: u64) -> Entry {
    let mut request = AppendRequest::new(Role::User, format!("{message_id} after the upgrade"));
    request.message_id = Some(message_id.to_owned());
    request.token_count = Some(100);
    instance
        .call(
            "default",
            spool::ops::AppendEntry {
                key: key.to_owned(),
                request,
                now_ms,
            },
        )
        .unwrap_or_else(|e| panic!("append to {key}: {e}"))
}

fn reset(
    instance: &mut Instance,
    key: &str,
    session_id: &str,
    now_ms: u64,
) -> spool::IntentOutcome {
    instance
        .call(
            "default",
            spool::ops::ApplyIntent {
                key: key.to_owned(),
                intent: spool::Intent::ResetSameKey,
                session_id: session_id.to_owned(),
                now_ms,
            },
        )
        .unwrap_or_else(|e| panic!("reset {key}: {e}"))
}

fn reset_archives(instance: &mut Instance, key: &str) -> Vec<spool::ArchivedReset> {
    instance
        .call(
            "default",
            spool::ops::ListResetArchives {
                key: key.to_owned(),
            },
        )
        .expect("reset archives")
}

/// The format byte of the session record of `key` as stored.
fn record_format(raw: &SqliteStorage, workspace: &str, key: &str) -> u8 {
    raw.get(workspace, &spool::keys::session(key))
        .expect("raw read")
        .unwrap_or_else(|| panic!("no record of {key}"))[0]
}

/// How many records are stored under `prefix`.
fn stored_under(raw: &SqliteStorage, prefix: &[u8]) -> usize {
    raw.range(
        "default",
        &spool::RangeQuery {
            range: spool::KeyRange::prefix(prefix),
            limit: 0,
            reverse: false,
        },
    )
    .expect("raw range")
    .len()
}

/// What the branches read when the upgrade found them.
fn branch_reads() -> [(&'static str, Vec<Entry>, Vec<Entry>); 2] {
    [
        (
            V4_BRANCH,
            cat(&[m(21, 35), vec![written("b01")]]),
            cat(&[m(1, 35), vec![written("b01")]]),
        ),
        (
            V4_LATE,
            cat(&[m(34, 38), vec![written("l01")]]),
            cat(&[m(1, 38), vec![written("l01")]]),
        ),
    ]
}

#[test]
fn test_format_4_database_lists_and_reads_exactly_what_was_written() {
    let V4 {
        dir: _dir,
        mut instance,
        raw,
    } = open_v4();
    for key in [V4_MAIN, V4_BRANCH, V4_LATE, V4_SCRATCH] {
        assert_eq!(record_format(&raw, "default", key), 4, "{key}");
    }
    assert_eq!(record_format(&raw, "team-b", V4_REVIEW), 4);
    // What the release stored: `x` ranges of the parent and of the branch's own copy.
    assert_eq!(
        stored_under(&raw, &spool::keys::identity(spool::keys::ARCHIVE, "demo-1")),
        33
    );
    assert_eq!(
        stored_under(
            &raw,
            &spool::keys::identity(spool::keys::ARCHIVE, "branch-1")
        ),
        20
    );

    let list = instance
        .call("default", first_ten(None, None))
        .expect("list");
    let listed: Vec<(&str, u64, u64, u64, u64)> = list
        .sessions
        .iter()
        .map(|s| {
            (
                s.key.as_str(),
                s.entry_count,
                s.last_entry_id,
                s.compaction_count,
                s.epoch,
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (V4_SCRATCH, 1, 1, 0, 1),
            (V4_LATE, 6, 39, 2, 0),
            (V4_MAIN, 5, 38, 2, 0),
            (V4_BRANCH, 16, 36, 1, 0),
        ]
    );
    let team = instance
        .call("team-b", first_ten(None, None))
        .expect("list team-b");
    let listed: Vec<(&str, u64)> = team
        .sessions
        .iter()
        .map(|s| (s.key.as_str(), s.entry_count))
        .collect();
    assert_eq!(listed, [(V4_REVIEW, 2)]);
    for key in [V4_MAIN, V4_BRANCH, V4_LATE, V4_SCRATCH] {
        let session = instance
            .call(
                "default",
                spool::ops::GetSession {
                    key: key.to_owned(),
                },
            )
            .expect("get")
            .expect("exists");
        assert_eq!(session.key, key);
    }

    assert_v4_reads(&mut instance, "default", V4_MAIN, &m(34, 38), &m(1, 38));
    for (key, active, whole) in branch_reads() {
        assert_v4_reads(&mut instance, "default", key, &active, &whole);
    }
    let scratch = [written("s03")];
    assert_v4_reads(&mut instance, "default", V4_SCRATCH, &scratch, &scratch);
    let review = [written("r01"), written("r02")];
    assert_v4_reads(&mut instance, "team-b", V4_REVIEW, &review, &review);

    // The entries each old compaction moved, through the session's own archive (the
    // parent, the branch's copy) or through a base (the late branch).
    for key in [V4_MAIN, V4_BRANCH, V4_LATE] {
        assert_eq!(
            preimage(&mut instance, key, "cmp-demo-1-0").expect("preimage"),
            m(1, 20),
            "{key}"
        );
    }
    for key in [V4_MAIN, V4_LATE] {
        assert_eq!(
            preimage(&mut instance, key, "cmp-demo-1-1").expect("preimage"),
            m(21, 33),
            "{key}"
        );
    }
    let error = preimage(&mut instance, V4_BRANCH, "cmp-demo-1-1").expect_err("after the branch");
    assert_eq!(error.code(), "not_found");
    let first = summary("cmp-demo-1-0", 0, "demo-1", 20, 10, 20);
    let second = summary("cmp-demo-1-1", 1, "demo-1", 13, 5, 33);
    assert_eq!(
        summaries(&mut instance, V4_MAIN),
        [first.clone(), second.clone()]
    );
    assert_eq!(
        summaries(&mut instance, V4_BRANCH),
        [summary("cmp-demo-1-0", 0, "branch-1", 20, 10, 20)]
    );
    assert_eq!(
        summaries(&mut instance, V4_LATE),
        [
            summary("cmp-demo-1-0", 0, "late-1", 20, 10, 20),
            summary("cmp-demo-1-1", 1, "late-1", 13, 5, 33),
        ]
    );

    // Archived entries are found by message id, the tool call and its result included.
    for (key, message_id) in [
        (V4_MAIN, "m04"),
        (V4_MAIN, "m05"),
        (V4_MAIN, "m21"),
        (V4_BRANCH, "m01"),
        (V4_BRANCH, "m30"),
        (V4_LATE, "m05"),
        (V4_LATE, "m33"),
        (V4_LATE, "m36"),
    ] {
        let found = instance
            .call(
                "default",
                spool::ops::GetEntry {
                    key: key.to_owned(),
                    message_id: message_id.to_owned(),
                },
            )
            .expect("lookup");
        assert_eq!(found, Some(written(message_id)), "{key}: {message_id}");
    }
    assert_eq!(
        reset_archives(&mut instance, V4_SCRATCH),
        [spool::ArchivedReset {
            session_key: V4_SCRATCH.to_owned(),
            session_id: "scratch-1".to_owned(),
            epoch: 0,
            archived_at: 203_000,
            transcript_entries: 2,
            summaries: 0,
        }]
    );
    // Reads write nothing.
    for key in [V4_MAIN, V4_BRANCH, V4_LATE, V4_SCRATCH] {
        assert_eq!(record_format(&raw, "default", key), 4, "{key}");
    }
}

#[test]
fn test_format_4_compaction_after_the_upgrade_keeps_old_and_new_archives_whole() {
    let V4 {
        dir: _dir,
        mut instance,
        raw,
    } = open_v4();
    // 500 active tokens for a window of 400: the newest 200 stay.
    let result = compact(&mut instance, V4_MAIN, 400, 400_000);
    assert_eq!(result.skip_reason, None, "{result:?}");
    assert_eq!(result.compaction_id.as_deref(), Some("cmp-demo-1-2"));
    assert_eq!(result.removed_count, 3);
    assert_eq!(result.kept_entries, m(37, 38));
    assert_eq!(
        record_format(&raw, "default", V4_MAIN),
        spool::record::SESSION_FORMAT_VERSION
    );
    // Nothing moved: the old archive and the entries stay where they were.
    assert_eq!(
        stored_under(&raw, &spool::keys::identity(spool::keys::ARCHIVE, "demo-1")),
        33
    );
    assert_eq!(stored_under(&raw, &spool::keys::entries("demo-1")), 5);
    assert_eq!(
        stored_under(
            &raw,
            &spool::keys::identity(spool::keys::BOUNDARY, "demo-1")
        ),
        1
    );

    // Canonical: what `x` holds, what the boundary archived, what is active, once each.
    assert_v4_reads(&mut instance, "default", V4_MAIN, &m(37, 38), &m(1, 38));
    assert_eq!(
        preimage(&mut instance, V4_MAIN, "cmp-demo-1-0").expect("old"),
        m(1, 20)
    );
    assert_eq!(
        preimage(&mut instance, V4_MAIN, "cmp-demo-1-1").expect("old"),
        m(21, 33)
    );
    assert_eq!(
        preimage(&mut instance, V4_MAIN, "cmp-demo-1-2").expect("new"),
        m(34, 36)
    );
    assert_eq!(
        summaries(&mut instance, V4_MAIN),
        [
            summary("cmp-demo-1-0", 0, "demo-1", 20, 10, 20),
            summary("cmp-demo-1-1", 1, "demo-1", 13, 5, 33),
            summary("cmp-demo-1-2", 2, "demo-1", 3, 2, 36),
        ]
    );
    // The branches read what they read before, the late one through the same identity.
    for (key, active, whole) in branch_reads() {
        assert_v4_reads(&mut instance, "default", key, &active, &whole);
        let error = preimage(&mut instance, key, "cmp-demo-1-2").expect_err("after the branch");
        assert_eq!(error.code(), "not_found", "{key}");
        assert_eq!(record_format(&raw, "default", key), 4, "{key}: not written");
    }

    // Appends go on after every entry, the old archive's included.
    let entry = append(&mut instance, V4_MAIN, "m39", 400_100);
    assert_eq!((entry.id, entry.created_at), (39, 400_100));
    let mut active = m(37, 38);
    active.push(entry.clone());
    let mut whole = m(1, 38);
    whole.push(entry.clone());
    assert_v4_reads(&mut instance, "default", V4_MAIN, &active, &whole);

    // A branch of the upgraded parent reads the old archive, the new one and the active
    // entries through its base, and its own entries after them.
    let branched = instance
        .call(
            "default",
            spool::ops::Branch {
                parent_key: V4_MAIN.to_owned(),
                child_key: "agent:demo:after".to_owned(),
                request: spool::BranchRequest::fork("after-1"),
                now_ms: 400_200,
            },
        )
        .expect("branch");
    assert_eq!(branched.session.entry_count, 3);
    let own = append(&mut instance, "agent:demo:after", "a01", 400_300);
    assert_eq!(own.id, 40);
    active.push(own.clone());
    whole.push(own);
    assert_v4_reads(
        &mut instance,
        "default",
        "agent:demo:after",
        &active,
        &whole,
    );
    assert_eq!(
        preimage(&mut instance, "agent:demo:after", "cmp-demo-1-1").expect("inherited"),
        m(21, 33)
    );
    assert_eq!(
        preimage(&mut instance, "agent:demo:after", "cmp-demo-1-2").expect("inherited"),
        m(34, 36)
    );

    // A second compaction after the upgrade: m37 and m38 go, m39 stays.
    let result = compact(&mut instance, V4_MAIN, 200, 400_400);
    assert_eq!(result.skip_reason, None, "{result:?}");
    assert_eq!(result.compaction_id.as_deref(), Some("cmp-demo-1-3"));
    let kept = [entry];
    assert_eq!(result.kept_entries, kept);
    assert_v4_reads(&mut instance, "default", V4_MAIN, &kept, &whole[..39]);
    assert_eq!(
        preimage(&mut instance, V4_MAIN, "cmp-demo-1-3").expect("new"),
        m(37, 38)
    );
    assert_v4_reads(
        &mut instance,
        "default",
        "agent:demo:after",
        &active,
        &whole,
    );
}

#[test]
fn test_format_4_deleting_and_resetting_over_old_shared_history_keeps_every_reader_whole() {
    let V4 {
        dir,
        mut instance,
        raw,
    } = open_v4();
    // Both sides compact after the upgrade: the parent, and the late branch over the
    // parent's identity it reads through its base (600 tokens, the newest 100 stay).
    assert_eq!(
        compact(&mut instance, V4_MAIN, 400, 400_000).removed_count,
        3
    );
    let late = compact(&mut instance, V4_LATE, 300, 400_100);
    assert_eq!(late.skip_reason, None, "{late:?}");
    assert_eq!(late.compaction_id.as_deref(), Some("cmp-late-1-2"));
    assert_eq!(late.kept_entries, [written("l01")]);
    let late_whole = cat(&[m(1, 38), vec![written("l01")]]);
    assert_v4_reads(
        &mut instance,
        "default",
        V4_LATE,
        &[written("l01")],
        &late_whole,
    );
    assert_eq!(
        preimage(&mut instance, V4_LATE, "cmp-late-1-2").expect("new"),
        m(34, 38)
    );
    let branch_active = cat(&[m(21, 35), vec![written("b01")]]);
    let branch_whole = cat(&[m(1, 35), vec![written("b01")]]);

    // Deleting the parent retires its identity: the late branch still reads it.
    instance
        .call(
            "default",
            spool::ops::DeleteSession {
                key: V4_MAIN.to_owned(),
                expected_epoch: None,
            },
        )
        .expect("delete the parent");
    assert_eq!(
        instance
            .call(
                "default",
                spool::ops::GetSession {
                    key: V4_MAIN.to_owned()
                }
            )
            .expect("get"),
        None
    );
    assert_v4_reads(
        &mut instance,
        "default",
        V4_BRANCH,
        &branch_active,
        &branch_whole,
    );
    assert_v4_reads(
        &mut instance,
        "default",
        V4_LATE,
        &[written("l01")],
        &late_whole,
    );
    for (key, id, expected) in [
        (V4_BRANCH, "cmp-demo-1-0", m(1, 20)),
        (V4_LATE, "cmp-demo-1-0", m(1, 20)),
        (V4_LATE, "cmp-demo-1-1", m(21, 33)),
        (V4_LATE, "cmp-late-1-2", m(34, 38)),
    ] {
        assert_eq!(
            preimage(&mut instance, key, id).expect("preimage"),
            expected,
            "{key}: {id}"
        );
    }
    let found = instance
        .call(
            "default",
            spool::ops::GetEntry {
                key: V4_LATE.to_owned(),
                message_id: "m05".to_owned(),
            },
        )
        .expect("lookup");
    assert_eq!(found, Some(written("m05")));
    assert_eq!(stored_under(&raw, &spool::keys::retired("demo-1")), 1);
    assert_eq!(stored_under(&raw, &spool::keys::holders("demo-1")), 1);
    assert_eq!(
        stored_under(&raw, &spool::keys::identity(spool::keys::ARCHIVE, "demo-1")),
        33
    );
    assert_eq!(stored_under(&raw, &spool::keys::entries("demo-1")), 5);
    assert_eq!(
        stored_under(&raw, &spool::keys::identity(spool::keys::SUMMARY, "demo-1")),
        0
    );

    // The late branch grows, then resets: its archive is its whole canonical transcript.
    let own = append(&mut instance, V4_LATE, "l02", 400_200);
    assert_eq!(own.id, 40);
    let mut late_whole = late_whole;
    late_whole.push(own.clone());
    assert_v4_reads(
        &mut instance,
        "default",
        V4_LATE,
        &[written("l01"), own],
        &late_whole,
    );
    let outcome = reset(&mut instance, V4_LATE, "late-2", 400_300);
    assert!(outcome.rotated);
    assert_eq!(
        outcome.archive.as_ref().map(|a| a.written),
        Some(true),
        "{outcome:?}"
    );
    assert_eq!(
        (outcome.session.session_id.as_str(), outcome.session.epoch),
        ("late-2", 1)
    );
    assert_eq!(outcome.session.entry_count, 0);
    let records = reset_archives(&mut instance, V4_LATE);
    assert_eq!(
        records,
        [spool::ArchivedReset {
            session_key: V4_LATE.to_owned(),
            session_id: "late-1".to_owned(),
            epoch: 0,
            archived_at: 400_300,
            transcript_entries: 40,
            summaries: 3,
        }]
    );
    let archive = spool_host::ArchiveDir::new(dir.path().join("archives"))
        .read("default", &records[0])
        .expect("the archive");
    assert_eq!(archive.transcript_entries, late_whole);
    assert_v4_reads(&mut instance, "default", V4_LATE, &[], &[]);
    // Its last reader gone, the retired identity goes with everything it kept.
    for tag in [
        spool::keys::ENTRY,
        spool::keys::MESSAGE,
        spool::keys::ARCHIVE,
        spool::keys::BOUNDARY,
        spool::keys::HOLDER,
        spool::keys::RETIRED,
    ] {
        assert_eq!(
            stored_under(&raw, &spool::keys::identity(tag, "demo-1")),
            0,
            "tag {}",
            tag as char
        );
    }
    // The branch with its own copy is untouched by all of it.
    assert_v4_reads(
        &mut instance,
        "default",
        V4_BRANCH,
        &branch_active,
        &branch_whole,
    );

    // A second reset of the session the old release reset once: both archives listed.
    let outcome = reset(&mut instance, V4_SCRATCH, "scratch-3", 400_400);
    assert_eq!(outcome.archive.map(|a| a.written), Some(true));
    assert_eq!(outcome.session.epoch, 2);
    let records = reset_archives(&mut instance, V4_SCRATCH);
    let listed: Vec<(&str, u64, u64, u64)> = records
        .iter()
        .map(|r| {
            (
                r.session_id.as_str(),
                r.epoch,
                r.archived_at,
                r.transcript_entries,
            )
        })
        .collect();
    assert_eq!(
        listed,
        [("scratch-1", 0, 203_000, 2), ("scratch-2", 1, 400_400, 1)]
    );
    let archive = spool_host::ArchiveDir::new(dir.path().join("archives"))
        .read("default", &records[1])
        .expect("the new archive");
    assert_eq!(archive.transcript_entries, [written("s03")]);
    // The two that were reset hold new identities, whose keys carry minted data ids.
    for key in [V4_BRANCH, V4_LATE, V4_SCRATCH] {
        let expected = if key == V4_BRANCH {
            4
        } else {
            spool::record::DATA_ID_FORMAT_VERSION
        };
        assert_eq!(record_format(&raw, "default", key), expected, "{key}");
    }
    let list = instance
        .call("default", first_ten(None, None))
        .expect("list");
    let keys: Vec<&str> = list.sessions.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, [V4_SCRATCH, V4_LATE, V4_BRANCH]);
}
