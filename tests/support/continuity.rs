//! The continuity benchmark: realistic Claude Code and Codex sessions
//! (`tests/fixtures/continuity/`, each with the facts an agent needs to carry on),
//! imported, compacted to a quarter of their tokens with the built-in summarizer, and
//! scored: a fact is kept when its text is in the context after the compaction (the
//! summary and the entries kept, their tool-call arguments decoded as an agent reads
//! them). Shared by `tests/continuity.rs` (the goals) and `benches/continuity.rs`
//! (the table `cargo xtask bench` prints).
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use spool::compaction::{self, CompactRequest, CompactionResult};
use spool::import::{self, ImportFormat, ImportRequest};
use spool::{Entry, MemoryStorage, run};

const WS: &str = "bench";
const KEY: &str = "continuity:main";

/// One fact a case says an agent needs after the compaction.
#[derive(Debug, Clone)]
pub struct Fact {
    /// `task`, `latest_request`, `constraint`, `file`, `failure`, `rejected`,
    /// `pending_id`.
    pub kind: String,
    /// Text that must be in the context, verbatim.
    pub text: String,
}

/// One session of the set.
#[derive(Debug, Clone)]
pub struct Case {
    /// File name without extension.
    pub name: String,
    /// Its log format.
    pub format: ImportFormat,
    /// The log.
    pub log: String,
    /// The facts.
    pub facts: Vec<Fact>,
}

/// The directory of the set.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/continuity")
}

/// Every case of the set, by name.
pub fn cases() -> Vec<Case> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("the continuity set")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".facts.json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|facts_path| {
            let name = facts_path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".facts.json"))
                .expect("a facts file name")
                .to_owned();
            let meta: Value =
                serde_json::from_str(&std::fs::read_to_string(&facts_path).expect("facts file"))
                    .expect("facts JSON");
            let format = match meta["format"].as_str() {
                Some("claude-code") => ImportFormat::ClaudeCode,
                Some("codex") => ImportFormat::Codex,
                other => panic!("{name}: format {other:?}"),
            };
            let log = std::fs::read_to_string(dir().join(format!("{name}.jsonl"))).expect("log");
            let facts = meta["facts"]
                .as_array()
                .expect("facts")
                .iter()
                .map(|f| Fact {
                    kind: f["kind"].as_str().expect("kind").to_owned(),
                    text: f["text"].as_str().expect("text").to_owned(),
                })
                .collect();
            Case {
                name,
                format,
                log,
                facts,
            }
        })
        .collect()
}

/// What compacting one case gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Entries imported.
    pub entries: usize,
    /// The window: a quarter of the transcript's tokens.
    pub window: u64,
    /// The compaction (back-filling, not blocking).
    pub result: CompactionResult,
    /// The same compaction in blocking mode.
    pub blocking: CompactionResult,
    /// Each fact and whether the context after the compaction holds it.
    pub facts: Vec<(Fact, bool)>,
}

/// Every string inside a value, JSON written as a string read as JSON too: the words
/// of a tool call as an agent reads them.
fn strings(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => {
            match serde_json::from_str::<Value>(text) {
                Ok(inner @ (Value::Object(_) | Value::Array(_))) => strings(&inner, out),
                _ => out.push_str(text),
            }
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The context an agent continues from: the summary, then the kept entries.
pub fn context(result: &CompactionResult) -> String {
    let mut out = result.summary.clone();
    for entry in &result.kept_entries {
        out.push('\n');
        out.push_str(&entry.content);
        out.push('\n');
        if let Some(calls) = &entry.tool_calls {
            strings(calls, &mut out);
        }
        if let Some(id) = &entry.tool_call_id {
            out.push_str(id);
        }
    }
    out
}

fn imported(case: &Case) -> (MemoryStorage, Vec<Entry>) {
    let log = import::parse(case.format, &case.log);
    assert_eq!(log.sessions.len(), 1, "{}: one session", case.name);
    let session = log.sessions.into_iter().next().expect("a session");
    let storage = MemoryStorage::new();
    let request = ImportRequest {
        key: KEY.into(),
        session_id: "continuity".into(),
        format: case.format,
        session,
        parent_key: None,
        prices: None,
    };
    run(
        &storage,
        import::import_session(WS, request, 9_000_000_000_000),
    )
    .expect("import");
    let entries = run(&storage, compaction::canonical_transcript(WS, KEY)).expect("entries");
    (storage, entries)
}

fn compact(storage: MemoryStorage, window: u64, blocking: bool) -> CompactionResult {
    let mut request = CompactRequest::new(window);
    request.config.safety_margin = 1.0;
    request.config.coverage_blocking = blocking;
    run(
        &storage,
        compaction::compact(WS, KEY, request, 9_000_000_000_001),
    )
    .expect("compact")
}

/// Imports and compacts one case, both ways, and scores the facts.
pub fn measure(case: &Case) -> Outcome {
    let (storage, entries) = imported(case);
    let tokens: u64 = entries.iter().map(compaction::entry_tokens).sum();
    let window = tokens / 4;
    let (blocking_storage, _) = imported(case);
    let result = compact(storage, window, false);
    let blocking = compact(blocking_storage, window, true);
    let context = context(&result);
    let facts = case
        .facts
        .iter()
        .map(|f| (f.clone(), context.contains(&f.text)))
        .collect();
    Outcome {
        entries: entries.len(),
        window,
        result,
        blocking,
        facts,
    }
}

/// Kept and total facts per kind, over outcomes.
pub fn by_kind<'a>(
    outcomes: impl IntoIterator<Item = &'a Outcome>,
) -> BTreeMap<String, (u32, u32)> {
    let mut out: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for outcome in outcomes {
        for (fact, kept) in &outcome.facts {
            let slot = out.entry(fact.kind.clone()).or_default();
            slot.0 += u32::from(*kept);
            slot.1 += 1;
        }
    }
    out
}
