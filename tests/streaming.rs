//! Entries written while they stream, beyond the vector (`vectors/streamed_entries.json`):
//! search sees an entry in progress as it grows and indexes it once it settles, a
//! compaction beside it keeps it live and writable, an update writes only the entry, and
//! what a provider is sent never holds a dangling tool call or an empty answer.

use serde_json::json;
use spool::compaction::{self, CompactRequest};
use spool::search::SearchRequest;
use spool::{AppendRequest, EntryStatus, EntryUpdate, MemoryStorage, Role, ToolStatus, run};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn begin(storage: &MemoryStorage, turn: &str, message_id: &str, at: u64) -> spool::Entry {
    let request = AppendRequest {
        turn_id: Some(turn.to_owned()),
        message_id: Some(message_id.to_owned()),
        ..AppendRequest::new(Role::Assistant, "")
    };
    run(storage, spool::begin_entry(WS, KEY, request, at)).expect("begin")
}

fn update(message_id: &str, content: &str) -> EntryUpdate {
    EntryUpdate {
        message_id: message_id.to_owned(),
        content: Some(content.to_owned()),
        ..EntryUpdate::default()
    }
}

fn hits(storage: &MemoryStorage, query: &str) -> Vec<String> {
    let request = SearchRequest {
        query: query.to_owned(),
        limit: 20,
        cursor: None,
    };
    run(storage, spool::search(WS, request))
        .expect("search")
        .hits
        .into_iter()
        .map(|h| h.message_id)
        .collect()
}

fn append(storage: &MemoryStorage, role: Role, content: &str, at: u64) {
    run(
        storage,
        spool::append_entry(WS, KEY, AppendRequest::new(role, content), at),
    )
    .expect("append");
}

/// A store with the session under [`KEY`].
fn session() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    storage
}

/// The words an entry in progress holds are found as they arrive, also when a hundred
/// appends after it cross index runs (a run stops before it), and after it settles.
#[test]
fn test_search_finds_an_entry_in_progress_as_it_grows_and_once_it_settles() {
    let storage = session();
    append(&storage, Role::User, "start", 2);
    begin(&storage, "t1", "m-live", 3);
    let mut at = 4;
    for word in ["zebra", "zebra quokka"] {
        run(
            &storage,
            spool::update_entry(WS, KEY, update("m-live", word), at),
        )
        .expect("update");
        at += 1;
    }
    assert_eq!(hits(&storage, "quokka"), ["m-live"]);
    // Tool results of other turns appended while it streams: past a run boundary.
    for i in 0..100 {
        append(&storage, Role::Tool, &format!("output {i} wombat"), at);
        at += 1;
    }
    run(
        &storage,
        spool::update_entry(WS, KEY, update("m-live", "zebra quokka platypus"), at),
    )
    .expect("update");
    assert_eq!(hits(&storage, "platypus"), ["m-live"]);
    assert_eq!(hits(&storage, "wombat").len(), 20, "a page of the others");
    let settled = EntryUpdate {
        content: Some("zebra quokka platypus echidna".into()),
        ..update("m-live", "")
    };
    run(&storage, spool::settle_entry(WS, KEY, settled, at + 1)).expect("settle");
    for i in 0..70 {
        append(&storage, Role::Tool, &format!("more {i}"), at + 2 + i);
    }
    assert_eq!(hits(&storage, "echidna"), ["m-live"]);
    assert!(hits(&storage, "quokka").contains(&"m-live".to_owned()));
}

/// A compaction beside an entry in progress keeps it (and what follows) active, and the
/// entry can still be updated and settled afterwards.
#[test]
fn test_compaction_keeps_an_entry_in_progress_live_and_writable() {
    let storage = session();
    let mut at = 2;
    for i in 0..40 {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        append(
            &storage,
            role,
            &format!("message {i} {}", "words ".repeat(60)),
            at,
        );
        at += 1;
    }
    begin(&storage, "t9", "m-live", at);
    run(
        &storage,
        spool::update_entry(WS, KEY, update("m-live", &"streaming ".repeat(30)), at + 1),
    )
    .expect("update");
    // Other work after it: more than the half window a compaction keeps.
    for i in 0..8 {
        append(
            &storage,
            Role::Tool,
            &format!("log {i} {}", "lines ".repeat(120)),
            at + 1,
        );
    }
    let request = CompactRequest::new(2_000);
    let result = run(&storage, compaction::compact(WS, KEY, request, at + 2)).expect("compact");
    assert!(result.removed_count > 0, "{result:?}");
    let entry = run(&storage, spool::get_entry(WS, KEY, "m-live"))
        .expect("get")
        .expect("the entry");
    assert_eq!(entry.status, Some(EntryStatus::InProgress));
    let active = crate::support::entries(&storage, WS, KEY, false);
    assert_eq!(active.len(), 9, "the entry and what follows it stay active");
    assert_eq!(active[0].message_id, "m-live");
    let done = run(
        &storage,
        spool::settle_entry(WS, KEY, update("m-live", "the answer"), at + 3),
    )
    .expect("settle after the compaction");
    assert_eq!((done.content.as_str(), done.status), ("the answer", None));
}

/// An update rewrites the entry's record and nothing else: no session record, no index.
#[test]
fn test_an_update_writes_only_the_entry() {
    let storage = session();
    append(&storage, Role::User, "hello", 2);
    begin(&storage, "t1", "m-live", 3);
    let before = crate::support::dump(&storage, WS);
    run(
        &storage,
        spool::update_entry(WS, KEY, update("m-live", "a longer answer"), 4),
    )
    .expect("update");
    let after = crate::support::dump(&storage, WS);
    let changed: Vec<_> = after
        .iter()
        .filter(|kv| !before.contains(kv))
        .map(|kv| spool::keys::display(&kv.key))
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(before.len(), after.len());
}

/// What a provider is sent: a tool call of an answer that stopped without its result is
/// closed by a cancelled result, an empty stopped answer is left out, the rest passes.
#[test]
fn test_replay_safe_closes_dangling_calls_and_drops_empty_answers() {
    let storage = session();
    append(&storage, Role::User, "look around", 2);
    begin(&storage, "t1", "m-a", 3);
    let calls = EntryUpdate {
        content: Some("Checking.".into()),
        tool_calls: Some(json!([
            {"id": "c1", "name": "bash", "input": {"command": "ls"}},
            {"id": "c2", "name": "bash", "input": {"command": "pwd"}}
        ])),
        ..update("m-a", "")
    };
    run(&storage, spool::update_entry(WS, KEY, calls, 4)).expect("update");
    let result = AppendRequest {
        tool_call_id: Some("c1".into()),
        turn_id: Some("t1".into()),
        tool_status: Some(ToolStatus::Ok),
        ..AppendRequest::new(Role::Tool, "a.txt")
    };
    run(&storage, spool::append_entry(WS, KEY, result, 5)).expect("result");
    // The next turn finds the answer in progress: interrupted.
    append(&storage, Role::User, "again", 6);
    begin(&storage, "t2", "m-b", 7);
    let abort = EntryUpdate {
        reason: Some("stopped by the user".into()),
        ..EntryUpdate {
            message_id: "m-b".into(),
            ..EntryUpdate::default()
        }
    };
    run(&storage, spool::abort_entry(WS, KEY, abort, 8)).expect("abort");
    let entries = crate::support::entries(&storage, WS, KEY, false);
    let sent = spool::replay_safe(&entries);
    let shape: Vec<(Role, String, Option<String>)> = sent
        .iter()
        .map(|e| (e.role, e.content.clone(), e.tool_call_id.clone()))
        .collect();
    assert_eq!(
        shape,
        [
            (Role::User, "look around".to_owned(), None),
            (Role::Assistant, "Checking.".to_owned(), None),
            (
                Role::Tool,
                "[tool call not run: the answer stopped (interrupted)]".to_owned(),
                Some("c2".to_owned())
            ),
            (Role::Tool, "a.txt".to_owned(), Some("c1".to_owned())),
            (Role::User, "again".to_owned(), None),
        ]
    );
    assert_eq!(sent[2].tool_status, Some(ToolStatus::Cancelled));
    // Complete entries pass unchanged.
    let plain = vec![entries[0].clone(), entries[2].clone()];
    assert_eq!(spool::replay_safe(&plain), plain);
}
