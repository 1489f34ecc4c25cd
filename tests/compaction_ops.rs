//! Compaction operations against storage: races, failures and the canonical transcript.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use support::FailingCommits;

use proptest::prelude::*;
use spool::compaction::{self, CompactRequest};
use spool::{AppendRequest, Kv, MemoryStorage, Role, Step, Storage, read_sync, run};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn request(window: u64) -> CompactRequest {
    CompactRequest::new(window)
}

fn append(storage: &impl Storage, content: &str, tokens: u64, now: u64) {
    let mut r = AppendRequest::new(Role::User, content);
    r.token_count = Some(tokens);
    run(storage, spool::append_entry(WS, KEY, r, now)).expect("append");
}

fn dump(storage: &impl Storage) -> Vec<Kv> {
    support::dump(storage, WS)
}

fn long_session() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    for i in 0..20 {
        append(
            &storage,
            &format!("msg {i} {}", "x".repeat(500)),
            200,
            2 + i,
        );
    }
    storage
}

#[test]
fn test_an_append_racing_the_compaction_survives_and_nothing_is_written() {
    let storage = long_session();
    let mut op = compaction::compact(WS, KEY, request(1000), 100);
    let mut raced = false;
    let result = loop {
        match op.poll() {
            Step::Read(r) => op.handle_read(read_sync(&storage, WS, &r)),
            Step::Commit(batch) => {
                // A late message lands after the compaction read the transcript.
                append(&storage, "late queued followup", 3, 99);
                raced = true;
                let before = dump(&storage);
                op.handle_commit(storage.commit(WS, batch));
                assert_eq!(dump(&storage), before, "a refused commit writes nothing");
            }
            Step::Archive(_) => panic!("compaction archives nothing to the host"),
            Step::Done(result) => break result.expect("compact"),
        }
    };
    assert!(raced);
    assert_eq!(result.skip_reason.as_deref(), Some("stale_preimage"));
    assert_eq!(
        (result.summary.as_str(), result.summary_source.as_str()),
        ("", "skipped")
    );
    let session = run(&storage, spool::get_session(WS, KEY))
        .expect("get")
        .expect("exists");
    assert_eq!((session.compaction_count, session.entry_count), (0, 21));
    assert!(
        run(&storage, compaction::list_summaries(WS, KEY))
            .expect("summaries")
            .is_empty()
    );
}

#[test]
fn test_a_failed_commit_leaves_every_record_as_it_was() {
    let storage = FailingCommits {
        inner: long_session(),
        cause: "rewrite insert failed",
    };
    let before = dump(&storage);
    let err = run(&storage, compaction::compact(WS, KEY, request(1000), 100)).expect_err("compact");
    assert_eq!(
        err,
        spool::Error::Storage {
            cause: "rewrite insert failed".into()
        }
    );
    let persist = compaction::PersistRequest {
        summary_text: "short summary".into(),
        kept_entries: vec![AppendRequest::new(Role::Assistant, "latest reply")],
        compaction_id: None,
        trigger_reason: None,
    };
    let err = run(
        &storage,
        compaction::persist_compaction_result(WS, KEY, persist, 100),
    )
    .expect_err("persist");
    assert_eq!(err.code(), "storage");
    assert_eq!(dump(&storage), before);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// After any number of compactions, the canonical transcript is the transcript as
    /// appended, and the active one is a suffix of it.
    #[test]
    fn test_canonical_transcript_equals_everything_appended(
        plan in proptest::collection::vec((1u64..400, any::<bool>()), 1..60),
        window in 200u64..2000,
    ) {
        let storage = MemoryStorage::new();
        run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
        let mut appended = Vec::new();
        for (i, (tokens, compact_now)) in plan.into_iter().enumerate() {
            let content = format!("entry {i}");
            append(&storage, &content, tokens, 10 + i as u64);
            appended.push(content);
            if compact_now {
                run(&storage, compaction::compact(WS, KEY, request(window), 10 + i as u64)).expect("compact");
            }
        }
        let canonical: Vec<String> = run(&storage, compaction::canonical_transcript(WS, KEY))
            .expect("canonical").into_iter().map(|e| e.content).collect();
        prop_assert_eq!(&canonical, &appended);
        let page = run(&storage, spool::read_page(WS, KEY, spool::PageRequest { order: spool::Order::OldestFirst, cursor: None, limit: 1000 }))
            .expect("page");
        let active: Vec<String> = page.entries.into_iter().map(|e| e.content).collect();
        prop_assert!(appended.ends_with(&active));
        let session = run(&storage, spool::get_session(WS, KEY)).expect("get").expect("exists");
        prop_assert_eq!(session.entry_count as usize, active.len());
        let summaries = run(&storage, compaction::list_summaries(WS, KEY)).expect("summaries");
        prop_assert_eq!(summaries.len() as u64, session.compaction_count);
        let archived: u64 = summaries.iter().map(|s| s.removed_count).sum();
        prop_assert_eq!(archived as usize + active.len(), appended.len());
    }
}

#[test]
fn test_the_portable_context_state_is_the_result_payload_plus_the_compaction_id() {
    let storage = long_session();
    let result = run(&storage, compaction::compact(WS, KEY, request(1000), 100)).expect("compact");
    assert!(result.removed_count > 0);
    let states = run(&storage, spool::list_states(WS, KEY, true)).expect("states");
    let [state] = states.as_slice() else {
        panic!("one state: {states:?}")
    };
    assert_eq!(
        (state.provider.as_str(), state.state_kind.as_str()),
        ("portable", "structured_summary_v1")
    );
    assert!(state.portable && state.cacheable && state.valid && state.model.is_none());
    let mut payload = state.payload.clone();
    let id = payload
        .as_object_mut()
        .and_then(|m| m.remove("compaction_id"));
    assert_eq!(
        id.as_ref().and_then(|v| v.as_str()),
        result.compaction_id.as_deref()
    );
    assert_eq!(Some(payload), result.summary_payload);
    let summaries = run(&storage, compaction::list_summaries(WS, KEY)).expect("summaries");
    assert_eq!(summaries[0].summary_text, result.summary);
    assert!(
        state.covered_through_id > 0 && state.covered_through_id == summaries[0].covered_through_id
    );
}

fn append_entry(storage: &impl Storage, request: AppendRequest, now: u64) {
    run(storage, spool::append_entry(WS, KEY, request, now)).expect("append");
}

fn active(storage: &impl Storage) -> Vec<spool::Entry> {
    let request = spool::PageRequest {
        order: spool::Order::OldestFirst,
        cursor: None,
        limit: 1000,
    };
    run(storage, spool::read_page(WS, KEY, request))
        .expect("page")
        .entries
}

fn session_with_history() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    for i in 0..3 {
        append(&storage, &format!("old message {i}"), 400, 2 + i);
    }
    storage
}

#[test]
fn test_pending_tool_call_stays_active_after_compaction() {
    let storage = session_with_history();
    let mut call = AppendRequest::new(Role::Assistant, "running the whole test suite");
    call.tool_calls = Some(serde_json::json!([{"id": "call_suite", "type": "function"}]));
    call.token_count = Some(600);
    append_entry(&storage, call, 10);
    let result = run(&storage, compaction::compact(WS, KEY, request(1000), 11)).expect("compact");
    assert_eq!(result.skip_reason, None);
    assert_eq!(result.removed_count, 3);
    // The result that arrives next follows its call.
    let mut answer = AppendRequest::new(Role::Tool, "all 412 tests passed");
    answer.tool_call_id = Some("call_suite".into());
    append_entry(&storage, answer, 12);
    let entries = active(&storage);
    assert_eq!(entries.len(), 2);
    assert!(entries[0].tool_calls.is_some(), "{:?}", entries[0]);
    assert_eq!(entries[1].tool_call_id.as_deref(), Some("call_suite"));
}

#[test]
fn test_compaction_that_does_not_shrink_the_context_is_refused() {
    // A 1-token and a 5-token session: any summary is at least as large.
    for (content, tokens, window) in [("a", 1, 0), ("hello", 5, 4)] {
        let storage = MemoryStorage::new();
        run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
        append(&storage, content, tokens, 2);
        let before = dump(&storage);
        let result =
            run(&storage, compaction::compact(WS, KEY, request(window), 3)).expect("compact");
        assert_eq!(
            result.skip_reason.as_deref(),
            Some("context_not_reduced"),
            "{tokens}-token session: {result:?}"
        );
        assert_eq!(
            (result.removed_count, result.summary.as_str()),
            (0, ""),
            "nothing removed"
        );
        assert_eq!(dump(&storage), before, "nothing written");
    }
}

/// 24 entries of 700 tokens in all, then an 800-token one the agent keeps.
fn session_for_an_external_summary() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    for i in 0..24 {
        append(
            &storage,
            &format!("step {i}"),
            if i < 4 { 25 } else { 30 },
            2 + i,
        );
    }
    append(&storage, "latest reply", 800, 30);
    storage
}

#[test]
fn test_external_summary_larger_than_what_it_replaces_is_refused() {
    let storage = session_for_an_external_summary();
    let before = dump(&storage);
    let huge = "the agent summarized at length. ".repeat(1500); // 48,000 chars: 12,000 tokens
    let mut kept = AppendRequest::new(Role::User, "latest reply");
    kept.token_count = Some(800);
    let persist = compaction::PersistRequest {
        summary_text: huge.clone(),
        kept_entries: vec![kept.clone()],
        compaction_id: None,
        trigger_reason: None,
    };
    let result = run(
        &storage,
        compaction::persist_compaction_result(WS, KEY, persist, 40),
    )
    .expect("persist");
    assert_eq!(result.tokens_before, 1500);
    assert_eq!(result.skip_reason.as_deref(), Some("context_not_reduced"));
    assert_eq!(dump(&storage), before, "nothing written");
    // A summary that does shrink it is stored.
    let persist = compaction::PersistRequest {
        summary_text: "the agent summarized briefly".into(),
        kept_entries: vec![kept],
        compaction_id: None,
        trigger_reason: None,
    };
    let result = run(
        &storage,
        compaction::persist_compaction_result(WS, KEY, persist, 41),
    )
    .expect("persist");
    assert_eq!((result.skip_reason, result.removed_count), (None, 24));
}

#[test]
fn test_two_phase_summary_larger_than_what_it_replaces_is_refused() {
    let storage = session_for_an_external_summary();
    let prepared = run(
        &storage,
        compaction::prepare_compaction(WS, KEY, request(1000)),
    )
    .expect("prepare");
    assert_eq!(prepared.skip_reason, None);
    let before = dump(&storage);
    let commit = compaction::CommitRequest {
        request: request(1000),
        preimage: prepared.preimage,
        summary_text: "the model summarized at length. ".repeat(1500),
        summary_payload: None,
    };
    let result = run(&storage, compaction::commit_compaction(WS, KEY, commit, 40)).expect("commit");
    assert_eq!(result.skip_reason.as_deref(), Some("context_not_reduced"));
    assert_eq!(result.removed_count, 0);
    assert_eq!(dump(&storage), before, "nothing written");
}

/// 1,475 entries, each with its own goal, and a short tail.
fn session_with_many_goals() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    for i in 0..1475 {
        append(
            &storage,
            &format!("Goal: ship part {i} of the release"),
            200,
            2 + i,
        );
    }
    storage
}

fn goals_of(storage: &impl Storage, removed: u64) -> Vec<String> {
    let canonical = run(storage, compaction::canonical_transcript(WS, KEY)).expect("canonical");
    canonical[..removed as usize]
        .iter()
        .map(|e| e.content.trim_start_matches("Goal: ").to_owned())
        .collect()
}

#[test]
fn test_every_goal_of_a_long_session_is_carried_forward() {
    let storage = session_with_many_goals();
    // A window with room for every goal: 80 entries kept, 1,395 compacted.
    let result = run(
        &storage,
        compaction::compact(WS, KEY, request(32_000), 5000),
    )
    .expect("compact");
    assert_eq!(result.removed_count, 1395);
    for goal in goals_of(&storage, result.removed_count) {
        assert!(result.summary.contains(&goal), "goal `{goal}` was lost");
    }
    // The built-in summary holds them itself: nothing to back-fill.
    assert_eq!(result.coverage_status, "pass");
    assert!(result.dropped_obligations.is_empty());
}

#[test]
fn test_goals_that_do_not_fit_are_reported_one_by_one() {
    let storage = session_with_many_goals();
    let result =
        run(&storage, compaction::compact(WS, KEY, request(4_000), 5000)).expect("compact");
    assert_eq!(result.skip_reason, None);
    assert_eq!(result.coverage_status, "partial_backfill");
    assert!(result.tokens_after <= 4_000, "{}", result.tokens_after);
    let goals = goals_of(&storage, result.removed_count);
    let mut dropped = 0;
    for goal in &goals {
        let reported = format!("goal: {goal}");
        if result.dropped_obligations.contains(&reported) {
            dropped += 1;
            assert!(result.missing_obligations.contains(&reported));
        } else {
            assert!(
                result.summary.contains(goal.as_str()),
                "`{goal}` lost silently"
            );
        }
    }
    assert!(
        dropped > 0 && dropped < goals.len(),
        "{dropped} of {}",
        goals.len()
    );
    // The stored summary says the same.
    let summaries = run(&storage, compaction::list_summaries(WS, KEY)).expect("summaries");
    assert_eq!(
        summaries[0].dropped_obligations.as_ref(),
        Some(&result.dropped_obligations)
    );
}

#[test]
fn test_blocking_refuses_when_goals_would_be_lost() {
    let storage = session_with_many_goals();
    let before = dump(&storage);
    let mut blocking = request(4_000);
    blocking.config.coverage_blocking = true;
    let result = run(&storage, compaction::compact(WS, KEY, blocking, 5000)).expect("compact");
    assert_eq!(result.skip_reason.as_deref(), Some("coverage_blocked"));
    assert_eq!(result.coverage_status, "fail_blocked");
    assert!(
        result
            .missing_obligations
            .contains(&"goal: ship part 1 of the release".to_owned()),
        "{} missing",
        result.missing_obligations.len()
    );
    assert_eq!(dump(&storage), before, "nothing written");
}

#[test]
fn test_a_carried_fact_keeps_its_text_through_many_compactions() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    // A call that never got its result: the process died, the user went on.
    let mut call = AppendRequest::new(Role::Assistant, "looking it up");
    call.tool_calls = Some(serde_json::json!([{"id": "call_lookup", "type": "function"}]));
    call.token_count = Some(300);
    append_entry(&storage, call, 2);
    for round in 0..3u64 {
        for i in 0..4 {
            append(
                &storage,
                &format!("round {round} message {i}"),
                300,
                10 + round * 10 + i,
            );
        }
        let result = run(
            &storage,
            compaction::compact(WS, KEY, request(1000), 9 + round * 10 + 9),
        )
        .expect("compact");
        assert_eq!(result.skip_reason, None, "round {round}");
        assert!(result.summary.contains("call_lookup"), "round {round}");
        // The next compaction owes it too, under the same words.
        let continuity = &result.summary_payload.as_ref().expect("payload")["continuity"];
        let about: Vec<&serde_json::Value> = continuity
            .as_array()
            .expect("continuity")
            .iter()
            .filter(|fact| fact.as_str().is_some_and(|f| f.contains("call_lookup")))
            .collect();
        assert_eq!(about, ["pending_tool: call_lookup"], "round {round}");
    }
}

#[test]
fn test_an_external_compaction_cannot_keep_a_result_without_its_call() {
    let storage = session_for_an_external_summary();
    let before = dump(&storage);
    let mut result = AppendRequest::new(Role::Tool, "42 files changed");
    result.tool_call_id = Some("call_diff".into());
    let persist = compaction::PersistRequest {
        summary_text: "the agent summarized briefly".into(),
        kept_entries: vec![result.clone()],
        compaction_id: None,
        trigger_reason: None,
    };
    let err = run(
        &storage,
        compaction::persist_compaction_result(WS, KEY, persist, 40),
    )
    .expect_err("an orphan result");
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().contains("call_diff"), "{err}");
    assert_eq!(dump(&storage), before, "nothing written");
    // With its call kept before it, the pair is accepted.
    let mut call = AppendRequest::new(Role::Assistant, "diffing");
    call.tool_calls = Some(serde_json::json!([{"id": "call_diff", "type": "function"}]));
    let persist = compaction::PersistRequest {
        summary_text: "the agent summarized briefly".into(),
        kept_entries: vec![call, result],
        compaction_id: None,
        trigger_reason: None,
    };
    let done = run(
        &storage,
        compaction::persist_compaction_result(WS, KEY, persist, 41),
    )
    .expect("persist");
    assert_eq!((done.skip_reason, done.removed_count), (None, 23));
}

#[test]
fn test_a_skipped_plan_asks_no_summarizer_and_its_commit_writes_nothing() {
    let storage = long_session();
    let before = dump(&storage);
    // A window this large needs no compaction.
    let prepared = run(
        &storage,
        compaction::prepare_compaction(WS, KEY, request(1_000_000)),
    )
    .expect("prepare");
    assert!(!prepared.needs_summary(), "{prepared:?}");
    let mut asked = 0;
    let commit = prepared
        .commit_with(request(1_000_000), |_| {
            asked += 1;
            Ok::<_, String>("never used".into())
        })
        .expect("commit request");
    assert_eq!(asked, 0);
    assert_eq!(commit.summary_text, "");
    let result = run(
        &storage,
        compaction::commit_compaction(WS, KEY, commit, 100),
    )
    .expect("commit");
    assert_eq!(result.skip_reason.as_deref(), Some("below_threshold"));
    assert_eq!(dump(&storage), before);

    let prepared = run(
        &storage,
        compaction::prepare_compaction(WS, KEY, request(1000)),
    )
    .expect("prepare");
    assert!(prepared.needs_summary(), "{prepared:?}");
    let commit = prepared
        .commit_with(request(1000), |p| {
            asked += 1;
            Ok::<_, String>(format!("Summary of {} entries.", p.removed_count))
        })
        .expect("commit request");
    assert_eq!(asked, 1);
    assert!(commit.summary_text.starts_with("Summary of"), "{commit:?}");
}
