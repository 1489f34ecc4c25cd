//! Compaction operations against storage: races, failures and the canonical transcript.
#![cfg(not(target_arch = "wasm32"))]

mod support;

use support::FailingCommits;

use proptest::prelude::*;
use spool::compaction::{self, CompactRequest, CompactionConfig};
use spool::{AppendRequest, Kv, MemoryStorage, Role, Step, Storage, read_sync, run};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn request(window: u64) -> CompactRequest {
    CompactRequest {
        context_window_tokens: window,
        config: CompactionConfig::default(),
        compaction_id: None,
        trigger_reason: None,
        flush_receipt_status: None,
    }
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
