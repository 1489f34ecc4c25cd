//! Input bounds: times and counters up to 2^53 − 1, every stored field limited, error
//! messages that never echo a large input, keys that show what they are.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use spool::validate::{self, MAX_INTEGER};
use spool::{
    AppendRequest, Batch, BranchRequest, Command, Error, Intent, MemoryStorage, Role, Storage,
    TurnUsage, UpdateRequest, execute, keys, run,
};

const KEY: &str = "agent:main:main";

/// Every op name of [`Command`], as serde lists them when it meets an unknown one.
fn op_names() -> Vec<String> {
    let err = serde_json::from_value::<Command>(json!({"op": "no_such_op"}))
        .expect_err("an unknown op")
        .to_string();
    let list = err.split("expected one of").nth(1).expect("the variants");
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Whether the op takes `now_ms`: only those that do not reject it as an unknown field.
fn takes_now_ms(op: &str) -> bool {
    match serde_json::from_value::<Command>(json!({"op": op, "now_ms": 1})) {
        Ok(_) => true,
        Err(e) => !e.to_string().contains("unknown field `now_ms`"),
    }
}

/// One well-formed call of every op that takes `now_ms`, without it.
fn calls_with_now_ms() -> BTreeMap<&'static str, Value> {
    let append = json!({"role": "user", "content": "hi"});
    let compact = json!({"context_window_tokens": 1000});
    BTreeMap::from([
        ("create_session", json!({"key": KEY, "session_id": "s2"})),
        ("append_entry", json!({"key": KEY, "request": append})),
        ("begin_entry", json!({"key": KEY, "request": append})),
        (
            "update_entry",
            json!({"key": KEY, "update": {"message_id": "m"}}),
        ),
        (
            "settle_entry",
            json!({"key": KEY, "update": {"message_id": "m"}}),
        ),
        (
            "abort_entry",
            json!({"key": KEY, "update": {"message_id": "m"}}),
        ),
        (
            "append_entries",
            json!({"key": KEY, "requests": [append.clone(), append.clone()]}),
        ),
        ("get_or_create", json!({"key": KEY, "session_id": "s2"})),
        (
            "apply_intent",
            json!({"key": KEY, "intent": "reset_same_key", "session_id": "s2"}),
        ),
        ("resume", json!({"key": KEY})),
        ("update", json!({"key": KEY, "request": {"model": "m"}})),
        ("finish", json!({"key": KEY, "status": "done"})),
        ("prune_stale", json!({"max_age_ms": 1})),
        ("truncate", json!({"key": KEY, "max_messages": 0})),
        ("rollback", json!({"key": KEY, "turns": 1})),
        ("pop_entry", json!({"key": KEY})),
        (
            "save_state",
            json!({"key": KEY, "state": {"provider": "portable", "state_kind": "k", "payload": {}}}),
        ),
        ("invalidate_states", json!({"key": KEY, "reason": "r"})),
        ("compact", json!({"key": KEY, "request": compact})),
        (
            "commit_compaction",
            json!({"key": KEY, "commit": {"request": compact, "preimage": "p", "summary_text": "s"}}),
        ),
        (
            "persist_compaction_result",
            json!({"key": KEY, "persist": {"summary_text": "s", "kept_entries": []}}),
        ),
        (
            "save_role_session",
            json!({"role": {"role_session_id": "r"}}),
        ),
        (
            "update_role_adapter_state",
            json!({"role_session_id": "r", "agent_type": "codex", "state": {"a": 1}}),
        ),
        (
            "record_run",
            json!({"run": {"agent_type": "codex", "project_id": "p", "session_id": "t",
                           "task_id": "x", "status": "done"}}),
        ),
        (
            "record_task_outcome",
            json!({"request": {"project_id": "p",
                               "outcome": {"agent_type": "codex", "task_id": "x", "status": "done"}}}),
        ),
        (
            "commit_turn",
            json!({"key": KEY, "turn": {"entries": [append]}}),
        ),
        (
            "import_session",
            json!({"request": {"key": "import:codex:t", "session_id": "i1", "format": "codex",
                               "session": {"provider_session_id": "t", "started_at": 1, "entries": []}}}),
        ),
        (
            "branch",
            json!({"parent_key": KEY, "child_key": "agent:main:child",
                   "request": {"child_session_id": "c1"}}),
        ),
        (
            "edit_message",
            json!({"key": KEY, "child_key": "agent:main:edit", "message_id": "m1",
                   "request": {"role": "user", "content": "x"}, "child_session_id": "c2"}),
        ),
        (
            "start_turn",
            json!({"key": KEY, "request": {"turn_id": "t1"}}),
        ),
        ("settle_turn", json!({"key": KEY, "turn_id": "t1"})),
        ("interrupt_turn", json!({"key": KEY, "turn_id": "t1"})),
        (
            "fork",
            json!({"source_key": KEY, "operation_id": "o1",
                   "request": {"request_id": "r1", "target_key": "agent:main:fork",
                               "target_session_id": "f1"}}),
        ),
        ("begin_fork_dispatch", json!({"operation_id": "o1"})),
        (
            "record_fork_disposition",
            json!({"operation_id": "o1", "disposition": {"disposition": "unknown", "error": "e"}}),
        ),
        ("commit_fork", json!({"operation_id": "o1"})),
        ("acknowledge_fork_operation", json!({"operation_id": "o1"})),
        ("recover_fork_operations", json!({})),
        ("claim_fork_provider_binding", json!({"key": KEY})),
        (
            "complete_fork_provider_binding",
            json!({"operation_id": "o1"}),
        ),
    ])
}

fn command(op: &str, args: &Value, now_ms: u64) -> Command {
    let mut call = args.as_object().expect("an object").clone();
    call.insert("op".into(), json!(op));
    call.insert("now_ms".into(), json!(now_ms));
    serde_json::from_value(Value::Object(call)).unwrap_or_else(|e| panic!("{op} parses: {e}"))
}

/// A storage with one session under [`KEY`] (id `s1`, created at 1).
fn with_session() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session("w", KEY, "s1", 1)).expect("created");
    storage
}

fn is_now_ms_error(result: &Result<Value, Error>) -> bool {
    matches!(
        result,
        Err(Error::InvalidArgument {
            field: "now_ms",
            ..
        })
    )
}

#[test]
fn test_every_call_that_takes_now_ms_refuses_a_time_past_2_pow_53() {
    let names = op_names();
    assert!(names.len() > 50, "serde lists every op: {names:?}");
    let taking: BTreeSet<String> = names
        .iter()
        .filter(|op| takes_now_ms(op))
        .cloned()
        .collect();
    let calls = calls_with_now_ms();
    let covered: BTreeSet<String> = calls.keys().map(|op| (*op).to_owned()).collect();
    assert_eq!(taking, covered, "every op with now_ms is walked here");
    for (op, args) in &calls {
        for too_late in [MAX_INTEGER + 1, u64::MAX] {
            let storage = with_session();
            let before = storage.len();
            let result = execute(&storage, "w", command(op, args, too_late));
            assert!(
                is_now_ms_error(&result),
                "{op} with now_ms = {too_late}: {result:?}"
            );
            assert_eq!(storage.len(), before, "{op} wrote nothing");
            assert_eq!(
                run(&storage, spool::get_session("w", KEY))
                    .expect("read")
                    .map(|s| s.updated_at),
                Some(1),
                "{op} left the session as it was"
            );
        }
        let storage = with_session();
        let result = execute(&storage, "w", command(op, args, MAX_INTEGER));
        assert!(
            !is_now_ms_error(&result),
            "{op} takes now_ms = 2^53 - 1: {result:?}"
        );
    }
}

#[test]
fn test_token_counts_and_usage_past_2_pow_53_are_invalid_argument() {
    let storage = with_session();
    let usage = |input_tokens, output_tokens| TurnUsage::new("m", input_tokens, output_tokens);
    let mut counted = AppendRequest::new(Role::User, "x");
    counted.token_count = Some(MAX_INTEGER + 1);
    let mut input = AppendRequest::new(Role::Assistant, "x");
    input.turn_usage = Some(usage(MAX_INTEGER + 1, 0));
    let mut output = AppendRequest::new(Role::Assistant, "x");
    output.turn_usage = Some(usage(0, u64::MAX));
    let mut cache_read = AppendRequest::new(Role::Assistant, "x");
    cache_read.turn_usage = Some(TurnUsage {
        cache_read_tokens: MAX_INTEGER + 1,
        ..usage(0, 0)
    });
    let mut cache_write = AppendRequest::new(Role::Assistant, "x");
    cache_write.turn_usage = Some(TurnUsage {
        cache_write_tokens: u64::MAX,
        ..usage(0, 0)
    });
    for (field, request) in [
        ("token_count", counted),
        ("turn_usage.input_tokens", input),
        ("turn_usage.output_tokens", output),
        ("turn_usage.cache_read_tokens", cache_read),
        ("turn_usage.cache_write_tokens", cache_write),
    ] {
        let err = run(&storage, spool::append_entry("w", KEY, request, 2)).expect_err(field);
        assert!(
            matches!(&err, Error::InvalidArgument { field: f, .. } if *f == field),
            "{err:?}"
        );
    }
    let session = run(&storage, spool::get_session("w", KEY))
        .expect("read")
        .expect("there");
    assert_eq!(session.entry_count, 0, "nothing written");
}

#[test]
fn test_session_totals_saturate_at_2_pow_53_minus_1() {
    let storage = with_session();
    for now in 2..5 {
        let mut counted = AppendRequest::new(Role::User, "x");
        counted.token_count = Some(MAX_INTEGER);
        let mut used = AppendRequest::new(Role::Assistant, "y");
        used.turn_usage = Some(TurnUsage {
            cache_read_tokens: MAX_INTEGER,
            cache_write_tokens: MAX_INTEGER - 2,
            ..TurnUsage::new("m", MAX_INTEGER, MAX_INTEGER - 1)
        });
        run(&storage, spool::append_entry("w", KEY, counted, now)).expect("the largest count");
        run(&storage, spool::append_entry("w", KEY, used, now)).expect("the largest usage");
    }
    let session = run(&storage, spool::get_session("w", KEY))
        .expect("read")
        .expect("there");
    assert_eq!(
        (
            session.total_tokens,
            session.input_tokens,
            session.output_tokens,
            session.cache_read,
            session.cache_write
        ),
        (
            MAX_INTEGER,
            MAX_INTEGER,
            MAX_INTEGER,
            MAX_INTEGER,
            MAX_INTEGER
        )
    );
}

#[test]
fn test_token_totals_over_a_transcript_saturate_at_2_pow_53_minus_1() {
    let storage = with_session();
    for now in 2..6 {
        let mut counted = AppendRequest::new(Role::User, "x");
        counted.token_count = Some(MAX_INTEGER);
        run(&storage, spool::append_entry("w", KEY, counted, now)).expect("appended");
    }
    let request: spool::compaction::CompactRequest =
        serde_json::from_value(json!({"context_window_tokens": 1000})).expect("a request");
    let result = run(&storage, spool::compaction::compact("w", KEY, request, 9)).expect("ran");
    assert_eq!(result.tokens_before, MAX_INTEGER, "{result:?}");
    assert!(result.tokens_after <= MAX_INTEGER, "{result:?}");
}

#[test]
fn test_context_state_numbers_past_2_pow_53_are_invalid_argument() {
    let storage = with_session();
    let state = |covered, expires| spool::NewContextState {
        provider: "portable".into(),
        model: None,
        state_kind: "k".into(),
        payload: json!({}),
        covered_through_id: covered,
        expires_at: expires,
        portable: true,
        cacheable: false,
    };
    for (field, s) in [
        ("covered_through_id", state(MAX_INTEGER + 1, None)),
        ("expires_at", state(0, Some(u64::MAX))),
    ] {
        let err = run(&storage, spool::save_state("w", KEY, s, None, 2)).expect_err(field);
        assert!(
            matches!(&err, Error::InvalidArgument { field: f, .. } if *f == field),
            "{err:?}"
        );
    }
}

fn big_map(bytes: usize) -> BTreeMap<String, Value> {
    BTreeMap::from([("blob".to_owned(), json!("x".repeat(bytes)))])
}

#[test]
fn test_update_refuses_session_maps_over_64_kib_and_writes_nothing() {
    let storage = with_session();
    let limit = validate::MAX_SESSION_MAP_BYTES;
    for field in ["metadata", "model_config"] {
        let mut request = UpdateRequest::default();
        let map = big_map(limit);
        if field == "metadata" {
            request.metadata = map;
        } else {
            request.model_config = map;
        }
        let err = run(&storage, spool::update("w", KEY, request, 2)).expect_err(field);
        assert!(
            matches!(&err, Error::InvalidArgument { field: f, .. } if *f == field),
            "{err:?}"
        );
    }
    // Two updates that fit alone but not merged: the second is refused.
    let half = |name: &str| UpdateRequest {
        metadata: BTreeMap::from([(name.to_owned(), json!("x".repeat(limit / 2)))]),
        ..UpdateRequest::default()
    };
    run(&storage, spool::update("w", KEY, half("a"), 3)).expect("half the limit");
    let err = run(&storage, spool::update("w", KEY, half("b"), 4)).expect_err("merged over");
    assert_eq!(err.code(), "invalid_argument");
    let session = run(&storage, spool::get_session("w", KEY))
        .expect("read")
        .expect("there");
    assert_eq!(session.updated_at, 3, "the refused update wrote nothing");
    assert!(!session.metadata.contains_key("b"));
    assert!(session.model_config.is_empty());
}

#[test]
fn test_stored_payloads_paths_and_lists_have_limits() {
    let storage = with_session();
    let huge = json!("x".repeat(validate::MAX_CONTENT_BYTES + 1));
    let state = spool::NewContextState {
        provider: "portable".into(),
        model: None,
        state_kind: "k".into(),
        payload: huge.clone(),
        covered_through_id: 0,
        expires_at: None,
        portable: true,
        cacheable: false,
    };
    let over = |result: Result<Value, Error>, field: &str| {
        assert!(
            matches!(&result, Err(Error::InvalidArgument { field: f, .. }) if *f == field),
            "{field}: {result:?}"
        );
    };
    over(
        run(&storage, spool::save_state("w", KEY, state, None, 2)).map(|_| Value::Null),
        "payload",
    );
    let calls = [
        (
            "summary_text",
            json!({"op": "commit_compaction", "key": KEY, "now_ms": 2,
                   "commit": {"request": {"context_window_tokens": 10}, "preimage": "p",
                              "summary_text": huge}}),
        ),
        (
            "summary_text",
            json!({"op": "persist_compaction_result", "key": KEY, "now_ms": 2,
                   "persist": {"summary_text": huge, "kept_entries": []}}),
        ),
        (
            "workspace_path",
            json!({"op": "record_run", "now_ms": 2,
                   "run": {"agent_type": "codex", "project_id": "p", "session_id": "t",
                           "task_id": "x", "status": "done",
                           "workspace_path": "/".repeat(validate::MAX_PATH_BYTES + 1)}}),
        ),
        (
            "surviving_agents",
            json!({"op": "select_resume",
                   "request": {"agent_type": "codex",
                               "surviving_agents": vec!["codex"; 1001]}}),
        ),
        (
            "model_config",
            json!({"op": "commit_turn", "key": KEY, "now_ms": 2,
                   "turn": {"entries": [], "thread": {"agent_type": "codex",
                                                       "thread_id": "t"}}}),
        ),
    ];
    // The last call binds a thread on a session whose model config is nearly full.
    let nearly = UpdateRequest {
        model_config: big_map(validate::MAX_SESSION_MAP_BYTES - 20),
        ..UpdateRequest::default()
    };
    run(&storage, spool::update("w", KEY, nearly, 2)).expect("just fits");
    for (field, call) in calls {
        let command: Command = serde_json::from_value(call).expect("parses");
        over(execute(&storage, "w", command), field);
    }
}

#[test]
fn test_an_unknown_op_of_a_megabyte_is_quoted_by_a_short_prefix() {
    let op = "x".repeat(1 << 20);
    let mut unknown_field = serde_json::Map::new();
    unknown_field.insert("op".into(), json!("get_session"));
    unknown_field.insert("key".into(), json!(KEY));
    unknown_field.insert(op.clone(), json!(1));
    for text in [
        json!({"op": op}).to_string(),
        Value::Object(unknown_field).to_string(),
        json!({"op": "append_entry", "key": KEY, "now_ms": 1,
               "request": {"role": op, "content": "x"}})
        .to_string(),
        json!({"op": "append_entry", "key": KEY, "now_ms": op,
               "request": {"role": "user", "content": "x"}})
        .to_string(),
    ] {
        let err = Command::from_json(&text).expect_err("not a call");
        let message = err.to_string();
        assert_eq!(err.code(), "invalid_argument");
        assert!(message.len() < 8 * 1024, "a {} byte message", message.len());
        assert!(
            message.contains("xxxx"),
            "it still names the input: {message}"
        );
    }
    // The list of ops serde offers is kept, so the message stays useful.
    let message = Command::from_json(&json!({"op": op}).to_string())
        .expect_err("unknown")
        .to_string();
    assert!(message.contains("`create_session`"), "{message}");
}

#[test]
fn test_quote_and_shorten_quoted_keep_short_input_and_cut_long_input() {
    assert_eq!(validate::quote("short"), "`short`");
    let long = "é".repeat(10_000);
    let quoted = validate::quote(&long);
    assert!(
        quoted.len() < 200 && quoted.contains("20000 bytes"),
        "{quoted}"
    );
    let message = format!("unknown variant `{long}`, expected `a` or `b`");
    let short = validate::shorten_quoted(&message);
    assert!(short.len() < 300, "{short}");
    assert!(short.ends_with("expected `a` or `b`"), "{short}");
    assert!(
        short.contains(&format!("… ({} more bytes)`", 20_000 - 64 * 2)),
        "{short}"
    );
    assert_eq!(
        validate::shorten_quoted(&short),
        short,
        "shortening twice changes nothing"
    );
    let plain = "the session's key is `agent:main:main` and 'x' is fine";
    assert_eq!(validate::shorten_quoted(plain), plain);
    let unpaired = format!("error: '{long}");
    assert!(validate::shorten_quoted(&unpaired).len() < 300);
    let no_quotes = "y".repeat(1 << 20);
    assert!(validate::shorten_quoted(&no_quotes).len() < 8 * 1024);
}

#[test]
fn test_a_bad_cursor_or_role_is_quoted_by_a_short_prefix() {
    let storage = with_session();
    let cursor = "z".repeat(1 << 20);
    let err = run(
        &storage,
        spool::read_page(
            "w",
            KEY,
            spool::PageRequest {
                order: spool::Order::OldestFirst,
                cursor: Some(cursor),
                limit: 10,
            },
        ),
    )
    .expect_err("not a cursor");
    assert!(
        err.to_string().len() < 1024,
        "{} bytes",
        err.to_string().len()
    );
    let err = "q".repeat(1 << 20).parse::<Role>().expect_err("not a role");
    assert!(
        err.to_string().len() < 1024,
        "{} bytes",
        err.to_string().len()
    );
}

#[test]
fn test_a_huge_search_query_or_cursor_is_refused_by_a_short_message() {
    let storage = with_session();
    let search = |query: String, cursor: Option<String>| {
        run(
            &storage,
            spool::search(
                "w",
                spool::SearchRequest {
                    query,
                    limit: 10,
                    cursor,
                },
            ),
        )
    };
    for (query, cursor) in [
        ("q".repeat(1 << 20), None),
        ("\"".repeat(1 << 20), None),
        ("word".to_owned(), Some("z".repeat(1 << 20))),
        ("word".to_owned(), Some("00".repeat(1 << 19))),
    ] {
        let err = search(query, cursor).expect_err("refused");
        assert_eq!(err.code(), "invalid_argument", "{err}");
        assert!(
            err.to_string().len() < 1024,
            "{} bytes",
            err.to_string().len()
        );
    }
}

/// Characters that are invisible or reorder text on display.
const INVISIBLE: [char; 16] = [
    '\u{202E}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200B}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{200F}', '\u{FEFF}', '\u{061C}',
];

#[test]
fn test_keys_workspaces_and_ids_with_bidi_or_invisible_characters_are_refused() {
    let extra = [
        '\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}', '\u{2064}', '\u{00AD}',
    ];
    for c in INVISIBLE.into_iter().chain(extra) {
        let storage = MemoryStorage::new();
        let spoof = format!("agent:main:{c}niam");
        let err =
            run(&storage, spool::create_session("w", &spoof, "s1", 1)).expect_err("a spoofing key");
        assert!(
            matches!(&err, Error::InvalidArgument { field: "key", .. }),
            "U+{:04X}: {err:?}",
            u32::from(c)
        );
        let err = run(
            &storage,
            spool::create_session(&format!("w{c}"), KEY, "s1", 1),
        )
        .expect_err("a spoofing workspace");
        assert!(
            matches!(
                &err,
                Error::InvalidArgument {
                    field: "workspace",
                    ..
                }
            ),
            "{err:?}"
        );
        run(&storage, spool::create_session("w", KEY, "s1", 1)).expect("a plain key");
        let mut request = AppendRequest::new(Role::User, format!("content may hold {c}"));
        request.message_id = Some(format!("m{c}1"));
        let err = run(&storage, spool::append_entry("w", KEY, request.clone(), 2))
            .expect_err("a spoofing id");
        assert!(
            matches!(
                &err,
                Error::InvalidArgument {
                    field: "message_id",
                    ..
                }
            ),
            "{err:?}"
        );
        request.message_id = None;
        run(&storage, spool::append_entry("w", KEY, request, 2)).expect("content is free");
        assert!(
            run(&storage, spool::list_sessions("w", 10, None))
                .expect("list")
                .sessions
                .len()
                == 1
        );
    }
    // Keys that were valid stay valid: letters of any script, emoji, punctuation.
    let storage = MemoryStorage::new();
    for key in [
        "agent:main:main",
        "agent:日本:é-ü",
        "agent:x:🚀 launch",
        "a b/c#d@e",
    ] {
        run(&storage, spool::create_session("w", key, "s1", 1)).expect(key);
    }
}

#[test]
fn test_a_session_stored_before_the_visible_key_rule_stays_reachable_and_no_new_one_is_made() {
    let storage = MemoryStorage::new();
    let plain = "agent:main:plain";
    let stored = "agent:main:\u{202E}niam";
    run(&storage, spool::create_session("w", plain, "s1", 1)).expect("create");
    // The record as a build before the rule stored it (JSON, format 5), under a key it
    // then accepted.
    let mut session = run(&storage, spool::get_session("w", plain))
        .expect("get")
        .expect("created");
    session.key = stored.to_owned();
    let mut value = vec![5];
    value.extend_from_slice(&serde_json::to_vec(&session).expect("JSON"));
    let mut batch = Batch::default();
    for kv in support::dump(&storage, "w") {
        if kv.key == keys::session(plain) || kv.key == keys::recency(1, plain) {
            let moved = if kv.key == keys::session(plain) {
                keys::session(stored)
            } else {
                keys::recency(1, stored)
            };
            batch.delete(kv.key);
            batch.put(moved, value.clone());
        }
    }
    storage.commit("w", batch).expect("stored");

    let found = run(&storage, spool::get_session("w", stored)).expect("get");
    assert_eq!(found.map(|s| s.key).as_deref(), Some(stored));
    run(
        &storage,
        spool::append_entry("w", stored, AppendRequest::new(Role::User, "still here"), 2),
    )
    .expect("append to the stored session");
    let outcome = run(&storage, spool::get_or_create("w", stored, "s9", 3)).expect("continue");
    assert!(!outcome.created);
    let child = BranchRequest {
        child_session_id: "c1".into(),
        fork_transcript: true,
        fork_before_message_id: None,
        max_fork_tokens: None,
    };
    run(
        &storage,
        spool::branch("w", stored, "agent:main:child", child.clone(), 4),
    )
    .expect("branch from the stored session");

    let refused = |err: Error| matches!(err, Error::InvalidArgument { field: "key", .. });
    let fresh = "agent:main:\u{200B}new";
    let err = run(&storage, spool::create_session("w", fresh, "s2", 5)).expect_err("create");
    assert!(refused(err));
    let err = run(&storage, spool::get_or_create("w", fresh, "s3", 5)).expect_err("new one");
    assert!(refused(err));
    let err = run(
        &storage,
        spool::apply_intent("w", fresh, Intent::NewChat, "s4", 5),
    )
    .expect_err("new chat");
    assert!(refused(err));
    let err = run(&storage, spool::branch("w", stored, fresh, child, 5)).expect_err("branch");
    assert!(refused(err));
    assert!(
        run(&storage, spool::get_session("w", fresh))
            .expect("get")
            .is_none()
    );

    run(&storage, spool::delete_session("w", stored, None)).expect("delete the stored one");
    assert!(
        run(&storage, spool::get_session("w", stored))
            .expect("get")
            .is_none()
    );
}

#[test]
fn test_escape_invisible_shows_every_hidden_character() {
    assert_eq!(
        validate::escape_invisible("agent:main:main"),
        "agent:main:main"
    );
    assert_eq!(
        validate::escape_invisible("agent:\u{202E}niam\u{200B}"),
        "agent:\\u{202e}niam\\u{200b}"
    );
    for c in INVISIBLE {
        let text = format!("a{c}b");
        let shown = validate::escape_invisible(&text);
        assert!(!shown.chars().any(validate::is_invisible), "{shown}");
    }
}
