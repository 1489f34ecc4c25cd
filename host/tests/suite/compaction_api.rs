//! Compaction through the Rust API: `Spool::compact_with` plugs any summarizer in
//! between prepare and commit; the other compaction operations of `Spool`.

use std::cell::Cell;

use spool::compaction::{
    CommitRequest, CompactRequest, CompactionConfig, PersistRequest, Prepared,
};
use spool::{AppendRequest, Role};
use spool_host::{CompactWithError, Spool};

const KEY: &str = "agent:main:main";

fn session() -> (Spool, Vec<String>) {
    let mut spool = Spool::builder().open().expect("open");
    spool.create_session(KEY).expect("create");
    let mut contents = Vec::new();
    for i in 0..20 {
        let text = if i == 0 {
            format!("Goal: ship the release. {}", "context ".repeat(80))
        } else {
            format!("step {i}: {}", "context ".repeat(80))
        };
        let mut entry = AppendRequest::new(Role::User, text.clone());
        entry.token_count = Some(200);
        spool.append_entry(KEY, entry).expect("append");
        contents.push(text);
    }
    (spool, contents)
}

fn request(window: u64) -> CompactRequest {
    CompactRequest {
        context_window_tokens: window,
        config: CompactionConfig::default(),
        compaction_id: None,
        trigger_reason: Some("test".into()),
        flush_receipt_status: None,
    }
}

fn texts(entries: &[spool::Entry]) -> Vec<String> {
    entries.iter().map(|e| e.content.clone()).collect()
}

#[test]
fn test_compact_with_commits_the_closures_summary() {
    let (mut spool, appended) = session();
    let seen = Cell::new(0u64);
    let result = spool
        .compact_with(KEY, request(1000), |prepared: &Prepared| {
            seen.set(prepared.removed_count);
            assert!(prepared.input.contains("Goal: ship the release."));
            assert!(
                prepared
                    .obligations
                    .iter()
                    .any(|o| o.text.contains("ship the release")),
                "{:?}",
                prepared.obligations
            );
            let kept: Vec<&str> = prepared
                .obligations
                .iter()
                .map(|o| o.text.as_str())
                .collect();
            Ok::<_, std::convert::Infallible>(format!("My LLM says:\n{}", kept.join("\n")))
        })
        .expect("compacted");
    assert_eq!(result.summary_source, "llm");
    assert_eq!(result.coverage_status, "pass");
    assert!(result.summary.starts_with("My LLM says:"));
    assert_eq!(result.removed_count, seen.get());
    assert!(result.removed_count > 0);

    let summaries = spool.list_summaries(KEY).expect("summaries");
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].summary_source, "llm");
    assert_eq!(summaries[0].trigger_reason.as_deref(), Some("test"));
    assert_eq!(
        texts(&spool.canonical_transcript(KEY).expect("canonical")),
        appended
    );
    let active = spool.transcript(KEY).expect("transcript");
    assert_eq!(active.len() as u64, 20 - result.removed_count);
    let id = result.compaction_id.expect("an id");
    let preimage = spool.compaction_preimage(KEY, &id).expect("preimage");
    assert_eq!(
        texts(&preimage),
        appended[..result.removed_count as usize].to_vec()
    );
}

#[test]
fn test_a_failing_closure_writes_nothing() {
    let (mut spool, appended) = session();
    #[derive(Debug, PartialEq)]
    struct Offline;
    let err = spool
        .compact_with(KEY, request(1000), |_| Err::<String, _>(Offline))
        .expect_err("the summarizer failed");
    assert_eq!(err.code(), "summarizer");
    assert!(matches!(err, CompactWithError::Summarizer(Offline)));
    assert_eq!(texts(&spool.transcript(KEY).expect("transcript")), appended);
    assert!(spool.list_summaries(KEY).expect("summaries").is_empty());
    let session = spool.get_session(KEY).expect("get").expect("exists");
    assert_eq!((session.compaction_count, session.entry_count), (0, 20));

    // A Spool failure comes back as such.
    let err = spool
        .compact_with("agent:no:such", request(1000), |_| {
            Ok::<_, Offline>("s".into())
        })
        .expect_err("no session");
    assert_eq!(err.code(), "not_found");
    assert!(matches!(err, CompactWithError::Spool(_)));
}

#[test]
fn test_no_summary_is_asked_for_below_the_trigger() {
    let (mut spool, _) = session();
    let result = spool
        .compact_with(KEY, request(1_000_000), |_| -> Result<String, String> {
            panic!("the summarizer must not run below the trigger")
        })
        .expect("skipped");
    assert_eq!(result.skip_reason.as_deref(), Some("below_threshold"));
    // A skip hands nothing back, whatever the transcript's size; it is unchanged.
    assert_eq!((result.removed_count, result.kept_entries.len()), (0, 0));
    assert_eq!(spool.count_entries(KEY).expect("count"), 20);
}

#[test]
fn test_two_phase_by_hand_refuses_a_stale_preimage() {
    let (mut spool, _) = session();
    let prepared = spool
        .prepare_compaction(KEY, request(1000))
        .expect("prepare");
    assert!(prepared.skip_reason.is_none());
    spool
        .append_entry(KEY, AppendRequest::new(Role::User, "a late append"))
        .expect("append");
    let result = spool
        .commit_compaction(
            KEY,
            CommitRequest {
                request: request(1000),
                preimage: prepared.preimage,
                summary_text: "Goal: ship the release.".into(),
                summary_payload: Some(serde_json::json!({"schema_version": 1, "note": "x"})),
            },
        )
        .expect("commit");
    assert_eq!(result.skip_reason.as_deref(), Some("stale_preimage"));
    assert_eq!(spool.count_entries(KEY).expect("count"), 21);
}

#[test]
fn test_flush_receipts_repairs_and_external_results() {
    let (mut spool, _) = session();
    let mut unsafe_request = request(1000);
    unsafe_request.flush_receipt_status = Some("unsafe".into());
    unsafe_request.compaction_id = Some("cmp-a".into());
    spool.compact(KEY, unsafe_request).expect("compact");
    let queue = spool.list_degraded_compactions(None).expect("queue");
    assert_eq!(queue.len(), 1);
    assert!(queue[0].degraded());
    assert!(
        spool
            .list_degraded_compactions(Some("other".to_owned()))
            .expect("queue")
            .is_empty()
    );
    let repaired = spool
        .set_repair_status(KEY, "cmp-a", "repaired")
        .expect("repair");
    assert_eq!(repaired.repair_status.as_deref(), Some("repaired"));
    assert!(
        spool
            .list_degraded_compactions(None)
            .expect("queue")
            .is_empty()
    );
    let receipt = spool
        .set_flush_receipt(KEY, "cmp-a", "safe")
        .expect("receipt");
    assert_eq!(receipt.flush_receipt_status, "safe");

    let before = spool.count_entries(KEY).expect("count");
    let result = spool
        .persist_compaction_result(
            KEY,
            PersistRequest {
                summary_text: "external".into(),
                kept_entries: vec![AppendRequest::new(Role::Assistant, "the tail")],
                compaction_id: Some("cmp-b".into()),
                trigger_reason: None,
            },
        )
        .expect("persist");
    assert_eq!(result.summary_source, "external");
    assert_eq!(result.removed_count, before - 1);
    assert_eq!(spool.list_summaries(KEY).expect("summaries").len(), 2);
    assert_eq!(
        spool.canonical_transcript(KEY).expect("canonical").len(),
        20
    );
}

/// The progress a call reports crosses the component to `Spool::on_progress`, page by
/// page, and stops reaching it once the instance's sink is taken away.
#[test]
fn test_on_progress_sees_a_compaction_read_its_pages() {
    use std::sync::{Arc, Mutex};
    let mut spool = Spool::builder().open().expect("open");
    spool.create_session(KEY).expect("create");
    // 300 entries of 8 KiB: pages stop at about a megabyte.
    for i in 0..300 {
        let mut entry = AppendRequest::new(Role::User, format!("{i} {}", "x".repeat(8_000)));
        entry.token_count = Some(2_000);
        spool.append_entry(KEY, entry).expect("append");
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    spool.on_progress(move |p| log.lock().expect("lock").push(p.clone()));
    let result = spool.compact(KEY, request(100_000)).expect("compact");
    assert!(result.removed_count > 0, "{:?}", result.skip_reason);
    let reported = std::mem::take(&mut *seen.lock().expect("lock"));
    for phase in ["compact: plan", "compact: read"] {
        let done: Vec<u64> = reported
            .iter()
            .filter(|p| p.phase == phase && p.total == 300)
            .map(|p| p.done)
            .collect();
        assert!(done.len() >= 2, "{phase}: {reported:?}");
        assert!(done.windows(2).all(|w| w[0] < w[1]), "{phase}: {done:?}");
        assert_eq!(done.last(), Some(&300), "{phase}");
    }
    spool.instance().set_progress(None);
    spool.compact(KEY, request(50_000)).expect("compact again");
    assert!(seen.lock().expect("lock").is_empty());
}
