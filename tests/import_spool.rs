//! Spool's own export read back (`spool export KEY` → `spool import spool FILE`): every
//! entry field, the compaction summaries with the active/archived split, the session's
//! record and its parent link survive the round trip; re-importing adds nothing; a
//! grown export adds only what is new; old header-less exports and damaged lines
//! import forgivingly.
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use serde_json::json;
use spool::compaction::{self, CompactRequest, Summary};
use spool::export::{ExportLine, markdown_entry, markdown_summary, markdown_title};
use spool::import::{self, ImportFormat, ImportRequest, ImportedSession};
use spool::{
    AppendRequest, BranchRequest, Entry, FinishStatus, MemoryStorage, Order, PageRequest, Role,
    Session, UpdateRequest, run,
};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn append(storage: &MemoryStorage, key: &str, request: AppendRequest, now: u64) {
    run(storage, spool::append_entry(WS, key, request, now)).expect("append");
}

fn compact(storage: &MemoryStorage, key: &str, now: u64) -> compaction::CompactionResult {
    let request = CompactRequest {
        trigger_reason: Some("context_overflow".into()),
        ..CompactRequest::new(1200)
    };
    run(storage, compaction::compact(WS, key, request, now)).expect("compact")
}

/// One turn ([`support::rich_turn::rich_turn`]), written from `at` on.
fn turn(storage: &MemoryStorage, key: &str, n: u64, at: u64) {
    for (request, offset) in support::rich_turn::rich_turn(n) {
        append(storage, key, request, at + offset);
    }
}

/// A finished session with configuration, metadata, four turns and two compactions.
fn source() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "sess-src", 1_000)).expect("create");
    let update = UpdateRequest {
        model: Some("claude-sonnet-4-5".into()),
        channel: Some("cli".into()),
        model_config: [("claude_code_thread_id".to_owned(), json!("6f1c2a7e"))].into(),
        metadata: [
            ("title".to_owned(), json!("Fix the parser")),
            ("project".to_owned(), json!("acme")),
        ]
        .into(),
        expected_epoch: None,
    };
    run(&storage, spool::update(WS, KEY, update, 1_001)).expect("update");
    for n in 0..3 {
        turn(&storage, KEY, n, 2_000 + n * 10);
    }
    assert!(
        compact(&storage, KEY, 2_100).skip_reason.is_none(),
        "first compaction"
    );
    turn(&storage, KEY, 3, 2_200);
    turn(&storage, KEY, 4, 2_300);
    assert!(
        compact(&storage, KEY, 2_400).skip_reason.is_none(),
        "second compaction"
    );
    turn(&storage, KEY, 5, 2_500);
    run(
        &storage,
        spool::finish(WS, KEY, FinishStatus::Done, None, 2_600),
    )
    .expect("finish");
    storage
}

fn session(storage: &MemoryStorage, key: &str) -> Session {
    run(storage, spool::get_session(WS, key))
        .expect("get")
        .expect("exists")
}

fn canonical(storage: &MemoryStorage, key: &str) -> Vec<Entry> {
    run(storage, compaction::canonical_transcript(WS, key)).expect("canonical")
}

fn active_ids(storage: &MemoryStorage, key: &str) -> Vec<String> {
    let request = PageRequest {
        order: Order::OldestFirst,
        cursor: None,
        limit: 1000,
    };
    run(storage, spool::read_page(WS, key, request))
        .expect("page")
        .entries
        .into_iter()
        .map(|e| e.message_id)
        .collect()
}

fn summaries(storage: &MemoryStorage, key: &str) -> Vec<Summary> {
    run(storage, compaction::list_summaries(WS, key)).expect("summaries")
}

/// The export `spool export KEY` writes: header, canonical transcript, summaries.
fn export(storage: &MemoryStorage, key: &str) -> String {
    let session = session(storage, key);
    let lineage = run(storage, spool::lineage(WS, key))
        .expect("lineage")
        .node
        .lineage;
    let mut out = vec![
        ExportLine::Header(&session, &lineage)
            .to_json()
            .expect("json"),
    ];
    for entry in &canonical(storage, key) {
        out.push(ExportLine::Entry(entry).to_json().expect("json"));
    }
    for summary in &summaries(storage, key) {
        out.push(ExportLine::Summary(summary).to_json().expect("json"));
    }
    out.join("\n") + "\n"
}

/// Imports every session of `text` under `key` in slices of `slice` entries, as the
/// CLI does in slices of at most `MAX_IMPORT_ENTRIES`.
fn import_into(
    storage: &MemoryStorage,
    key: &str,
    text: &str,
    slice: usize,
) -> Vec<import::ImportOutcome> {
    let log = import::parse(ImportFormat::Spool, text);
    let mut outcomes = Vec::new();
    for mut session in log.sessions {
        let entries = std::mem::take(&mut session.entries);
        let chunks: Vec<&[import::ImportedEntry]> = if entries.is_empty() {
            vec![&[]]
        } else {
            entries.chunks(slice).collect()
        };
        for chunk in chunks {
            let request = ImportRequest {
                key: key.into(),
                session_id: "sess-dst".into(),
                format: ImportFormat::Spool,
                session: ImportedSession {
                    entries: chunk.to_vec(),
                    ..session.clone()
                },
                parent_key: None,
                prices: None,
            };
            outcomes
                .push(run(storage, import::import_session(WS, request, 9_999)).expect("import"));
        }
    }
    outcomes
}

/// Every field of an entry but its insertion id (the importing database numbers its own).
fn fields(e: &Entry) -> serde_json::Value {
    let mut value = serde_json::to_value(e).expect("json");
    value.as_object_mut().expect("object").remove("id");
    value
}

/// A summary as restored: the same but for the identity and the archived entry's id,
/// which are the importing session's.
fn comparable(summaries: &[Summary], entries: &[Entry]) -> Vec<(serde_json::Value, String)> {
    summaries
        .iter()
        .map(|s| {
            let through = entries
                .iter()
                .find(|e| e.id == s.covered_through_id)
                .map(|e| e.message_id.clone())
                .expect("the archived entry is in the transcript");
            let mut value = serde_json::to_value(s).expect("json");
            let map = value.as_object_mut().expect("object");
            for field in ["session_id", "covered_through_id"] {
                map.remove(field);
            }
            (value, through)
        })
        .collect()
}

fn assert_same_session(src: &MemoryStorage, dst: &MemoryStorage, dst_key: &str) {
    let (before, after) = (canonical(src, KEY), canonical(dst, dst_key));
    assert_eq!(
        before.iter().map(fields).collect::<Vec<_>>(),
        after.iter().map(fields).collect::<Vec<_>>(),
        "canonical transcript, every field"
    );
    assert_eq!(
        active_ids(src, KEY),
        active_ids(dst, dst_key),
        "the active part"
    );
    assert_eq!(
        comparable(&summaries(src, KEY), &before),
        comparable(&summaries(dst, dst_key), &after),
        "summaries, and what each archived"
    );
    let (a, b) = (session(src, KEY), session(dst, dst_key));
    let counters = |s: &Session| {
        (
            s.entry_count,
            s.compaction_count,
            s.input_tokens,
            s.output_tokens,
            s.cache_read,
            s.cache_write,
            s.total_tokens,
        )
    };
    assert_eq!(counters(&a), counters(&b), "counters");
    let record = |s: &Session| {
        (
            s.status,
            s.created_at,
            s.updated_at,
            s.ended_at,
            s.runtime_ms,
            s.model.clone(),
            s.channel.clone(),
            s.model_config.clone(),
            s.cost_source.clone(),
        )
    };
    assert_eq!(
        record(&a),
        record(&b),
        "status, times, model, configuration"
    );
    let mut metadata = b.metadata.clone();
    let note = metadata.remove("import").expect("import metadata");
    assert_eq!(a.metadata, metadata, "metadata");
    assert_eq!(note["format"], "spool");
    assert_eq!(note["export"]["key"], KEY);
    assert_eq!(note["export"]["session_id"], a.session_id);
}

#[test]
fn test_spool_export_parses_every_entry_field_and_summary() {
    let src = source();
    let text = export(&src, KEY);
    let log = import::parse_spool(&text);
    assert_eq!((log.invalid_lines.len(), log.truncated_tail), (0, None));
    assert!(log.skipped.is_empty(), "{:?}", log.skipped);
    let [parsed] = log.sessions.as_slice() else {
        panic!("one session: {:?}", log.sessions.len());
    };
    let original = session(&src, KEY);
    assert_eq!(parsed.provider_session_id, original.session_id);
    assert_eq!(parsed.model, original.model);
    assert_eq!(parsed.title, None, "the title is in the exported metadata");
    let entries = canonical(&src, KEY);
    assert_eq!(parsed.entries.len(), entries.len());
    for (imported, entry) in parsed.entries.iter().zip(&entries) {
        let mut as_entry = serde_json::to_value(imported).expect("json");
        let map = as_entry.as_object_mut().expect("object");
        map.remove("parent_message_id");
        map.retain(|_, v| !(v.is_null() || v == &json!([])));
        let mut expected = fields(entry);
        expected
            .as_object_mut()
            .expect("object")
            .retain(|_, v| !v.is_null());
        assert_eq!(as_entry, expected, "entry {}", entry.message_id);
    }
    assert_eq!(
        log.attachments,
        entries
            .iter()
            .map(|e| e.attachments.len() as u64)
            .sum::<u64>()
    );
    let export = parsed.exported.as_ref().expect("the header");
    assert_eq!(export.session, original);
    let stored = summaries(&src, KEY);
    assert_eq!(
        export
            .summaries
            .iter()
            .map(|s| &s.summary)
            .collect::<Vec<_>>(),
        stored.iter().collect::<Vec<_>>()
    );
    // Each summary archived the entries up to the one its `covered_through_id` names.
    let archived: u64 = export.summaries.iter().map(|s| s.archived).sum();
    assert_eq!(
        archived,
        stored.iter().map(|s| s.removed_count).sum::<u64>()
    );
    assert_eq!(
        archived as usize + active_ids(&src, KEY).len(),
        entries.len()
    );
}

#[test]
fn test_export_then_import_restores_entries_summaries_split_and_session() {
    let src = source();
    let text = export(&src, KEY);
    for slice in [1000, 7, 4, 1] {
        let dst = MemoryStorage::new();
        let outcomes = import_into(&dst, KEY, &text, slice);
        assert!(outcomes[0].created);
        let imported: u64 = outcomes.iter().map(|o| o.imported).sum();
        assert_eq!(
            imported as usize,
            canonical(&src, KEY).len(),
            "slices of {slice}"
        );
        assert_same_session(&src, &dst, KEY);
        // The restored compactions are ordinary ones: the next one continues them.
        assert_eq!(
            summaries(&dst, KEY).last().map(|s| s.compaction_index),
            Some(session(&src, KEY).compaction_count - 1)
        );
    }
}

#[test]
fn test_reimporting_an_export_adds_nothing_and_a_grown_export_adds_only_the_new() {
    let src = source();
    let dst = MemoryStorage::new();
    import_into(&dst, KEY, &export(&src, KEY), 1000);
    let again = import_into(&dst, KEY, &export(&src, KEY), 1000);
    assert_eq!(
        (
            again[0].created,
            again[0].imported,
            again[0].already_present as usize
        ),
        (false, 0, canonical(&src, KEY).len())
    );
    assert_same_session(&src, &dst, KEY);
    // The session goes on at the source: more turns, a third compaction.
    let before = canonical(&src, KEY).len();
    turn(&src, KEY, 6, 2_700);
    turn(&src, KEY, 7, 2_800);
    assert!(
        compact(&src, KEY, 2_900).skip_reason.is_none(),
        "third compaction"
    );
    let grown = import_into(&dst, KEY, &export(&src, KEY), 1000);
    assert_eq!(
        (
            grown[0].imported as usize,
            grown[0].already_present as usize
        ),
        (canonical(&src, KEY).len() - before, before)
    );
    assert_same_session(&src, &dst, KEY);
}

#[test]
fn test_an_exported_branch_links_to_its_parent_when_the_database_holds_it() {
    let src = source();
    let child = "agent:main:try";
    run(
        &src,
        spool::branch(WS, KEY, child, BranchRequest::empty("sess-child"), 3_000),
    )
    .expect("branch");
    append(
        &src,
        child,
        AppendRequest::new(Role::User, "try another way"),
        3_001,
    );
    let dst = MemoryStorage::new();
    import_into(&dst, KEY, &export(&src, KEY), 1000);
    import_into(&dst, child, &export(&src, child), 1000);
    let lineage = run(&dst, spool::lineage(WS, child))
        .expect("lineage")
        .node
        .lineage;
    assert_eq!(lineage.parent_session_key.as_deref(), Some(KEY));
    assert_eq!(lineage.spawn_depth, 1);
    let children = run(&dst, spool::list_children(WS, KEY)).expect("children");
    assert_eq!(children.len(), 1);
    // Without its parent it is imported standalone, its lineage kept in the metadata.
    let alone = MemoryStorage::new();
    import_into(&alone, child, &export(&src, child), 1000);
    let lineage = run(&alone, spool::lineage(WS, child))
        .expect("lineage")
        .node
        .lineage;
    assert_eq!(lineage.parent_session_key, None);
    assert_eq!(
        session(&alone, child).metadata["import"]["export"]["lineage"]["parent_session_key"],
        KEY
    );
}

#[test]
fn test_an_export_without_a_header_imports_its_entries_and_summaries() {
    let src = source();
    let text = export(&src, KEY);
    let legacy: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let log = import::parse_spool(&legacy);
    let [parsed] = log.sessions.as_slice() else {
        panic!("one session");
    };
    assert_eq!(
        parsed.provider_session_id, "sess-src",
        "the summaries' identity"
    );
    assert!(parsed.exported.is_none());
    assert_eq!(parsed.entries.len(), canonical(&src, KEY).len());
    let dst = MemoryStorage::new();
    import_into(&dst, "import:spool:sess-src", &legacy, 1000);
    assert_eq!(
        canonical(&dst, "import:spool:sess-src")
            .iter()
            .map(fields)
            .collect::<Vec<_>>(),
        canonical(&src, KEY).iter().map(fields).collect::<Vec<_>>()
    );
}

#[test]
fn test_damaged_and_unknown_lines_are_counted_never_fatal() {
    let src = source();
    let text = export(&src, KEY);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.insert(1, "not json".into());
    lines.insert(2, r#"{"spool_export": 99, "session": {}}"#.into());
    lines.insert(3, r#"{"message_id": "m", "role": "robot"}"#.into());
    lines.insert(4, r#"{"summary": 3}"#.into());
    lines.insert(5, r#"{"something": "else"}"#.into());
    lines.push(r#"{"message_id": "cut"#.into());
    let log = import::parse_spool(&lines.join("\n"));
    assert_eq!(log.invalid_lines, vec![2]);
    assert_eq!(log.truncated_tail, Some(lines.len() as u64));
    let skipped: Vec<(&str, u64)> = log.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        skipped,
        [
            ("entry (unreadable)", 1),
            ("spool_export (repeated)", 1),
            ("summary (unreadable)", 1),
            ("unknown", 1),
        ]
    );
    assert_eq!(log.sessions[0].entries.len(), canonical(&src, KEY).len());
    for garbage in [
        "",
        "\n\n",
        "{}",
        "[1,2]\n",
        r#"{"spool_export": "x"}"#,
        "\u{0}\u{1}",
    ] {
        let log = import::parse_spool(garbage);
        assert!(log.sessions.is_empty(), "{garbage:?}");
    }
}

#[test]
fn test_markdown_collapses_tool_calls_and_marks_errors_reasoning_attachments_summaries() {
    let src = source();
    let entries = canonical(&src, KEY);
    let by_id = |id: &str| entries.iter().find(|e| e.message_id == id).expect(id);
    let reply = markdown_entry(by_id("a1"));
    assert!(reply.contains("<details><summary>tool call <code>Bash</code> (call-1-a)</summary>"));
    assert!(reply.contains("\"command\": \"cargo test -p parser\""));
    let reasoning = by_id("a1").reasoning.as_ref().expect("reasoning").len();
    assert!(reply.contains(&format!("reasoning: {reasoning} bytes")));
    assert!(
        !reply.contains("off by one"),
        "reasoning is a size marker only"
    );
    let failed = markdown_entry(by_id("r1b"));
    assert!(failed.starts_with("## tool · "));
    assert!(failed.lines().next().expect("heading").contains("❌ error"));
    assert!(failed.contains("result of <code>call-1-b</code>: error"));
    assert!(!markdown_entry(by_id("r1a")).contains("❌"));
    let context = markdown_entry(by_id("c1"));
    assert!(context.contains("· context"));
    assert!(
        context.contains("```\n<environment cwd=/home/dev/acme turn=1>\n```"),
        "tag-like context text is shown verbatim: {context}"
    );
    assert!(context.contains("attachment: image, image/png, 4097 bytes"));
    let summary = &summaries(&src, KEY)[0];
    let marked = markdown_summary(summary);
    assert!(marked.starts_with("## 📝 compaction summary 1"));
    assert!(marked.contains(summary.summary_text.trim_end()));
    let title = markdown_title(&session(&src, KEY), &Default::default());
    assert!(title.starts_with("# agent:main:main\n"));
    assert!(title.contains("- Model: claude-sonnet-4-5"));
    assert!(title.contains("- Status: done"));
}
