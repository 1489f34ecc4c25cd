//! A storage failure at any commit of any operation leaves a state that reads
//! consistently — the state before, or the state after the commits that landed — and
//! running the operation again completes it, to exactly what a run without failure
//! writes. (The in-process form of killing the process at every commit; the processes
//! themselves are killed in the host's tests.)

use crate::support;

use std::cell::Cell;

use spool::compaction::{self, CompactRequest, PersistRequest};
use spool::import::{ImportFormat, ImportRequest};
use spool::{
    AppendRequest, Batch, BranchRequest, Intent, Kv, MemoryStorage, RangeQuery, Role, Storage,
    StorageError, run,
};
use support::dump;

const WS: &str = "default";
const PARENT: &str = "agent:main:main";
const CHILD: &str = "agent:main:child";

/// Fails its `fail_at`-th commit (counting from 1) as a full disk would; stores like
/// the storage it wraps otherwise.
struct FailAt {
    inner: MemoryStorage,
    fail_at: usize,
    commits: Cell<usize>,
}

impl Storage for FailAt {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(ws, key)
    }
    fn range(&self, ws: &str, q: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        self.inner.range(ws, q)
    }
    fn commit(&self, ws: &str, batch: Batch) -> Result<(), StorageError> {
        let n = self.commits.get() + 1;
        self.commits.set(n);
        if n == self.fail_at {
            return Err(StorageError::Backend("injected: disk full".into()));
        }
        self.inner.commit(ws, batch)
    }
}

/// A parent of 120 entries (a tool call and its result among them), compacted once,
/// with a branch of its own entries.
fn base() -> MemoryStorage {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, PARENT, "p", 1)).expect("create");
    for i in 0..120u64 {
        let mut request = AppendRequest::new(
            if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            format!("step {i}: {}", "text ".repeat(40)),
        );
        if i == 60 {
            request.tool_calls = Some(serde_json::json!([{"id": "call_1", "type": "function"}]));
        }
        if i == 61 {
            request.role = Role::Tool;
            request.tool_call_id = Some("call_1".into());
        }
        run(&storage, spool::append_entry(WS, PARENT, request, 10 + i)).expect("append");
    }
    run(
        &storage,
        compaction::compact(WS, PARENT, window(3_000), 200),
    )
    .expect("compact");
    run(
        &storage,
        spool::branch(WS, PARENT, CHILD, BranchRequest::fork("c"), 201),
    )
    .expect("branch");
    run(
        &storage,
        spool::append_entry(WS, CHILD, AppendRequest::new(Role::User, "mine"), 202),
    )
    .expect("append to the branch");
    storage
}

fn window(tokens: u64) -> CompactRequest {
    CompactRequest {
        context_window_tokens: tokens,
        config: Default::default(),
        compaction_id: None,
        trigger_reason: None,
        flush_receipt_status: None,
    }
}

/// Three import slices of a fresh session, as `spool import` writes a big log.
fn import_slices() -> Vec<ImportRequest> {
    let mut lines = vec![serde_json::json!({
        "timestamp": "2025-10-17T05:50:00.000Z", "type": "session_meta",
        "payload": {"id": "thread-9", "timestamp": "2025-10-17T05:50:00.000Z", "cwd": "/w"}
    })];
    for i in 0..9 {
        lines.push(serde_json::json!({
            "timestamp": "2025-10-17T05:50:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": format!("line {i}")}]}
        }));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let session = spool::import::parse(ImportFormat::Codex, &text)
        .sessions
        .remove(0);
    session
        .entries
        .chunks(3)
        .map(|part| {
            let mut slice = session.clone();
            slice.entries = part.to_vec();
            ImportRequest {
                key: "import:codex:thread-9".into(),
                session_id: "imported".into(),
                format: ImportFormat::Codex,
                session: slice,
                parent_key: None,
                prices: None,
            }
        })
        .collect()
}

/// One operation, as the calls it makes.
type Calls = Box<dyn Fn(&FailAt) -> Result<(), spool::Error>>;

/// The operations, each as the calls it makes (most are one call with one commit).
fn operations() -> Vec<(&'static str, Calls)> {
    fn ok<T>(r: Result<T, spool::Error>) -> Result<(), spool::Error> {
        r.map(drop)
    }
    vec![
        (
            "compact",
            Box::new(|s: &FailAt| ok(run(s, compaction::compact(WS, PARENT, window(1_000), 300)))),
        ),
        (
            "compact the branch",
            Box::new(|s: &FailAt| ok(run(s, compaction::compact(WS, CHILD, window(1_000), 300)))),
        ),
        (
            "persist",
            Box::new(|s: &FailAt| {
                let persist = PersistRequest {
                    summary_text: "the agent's summary".into(),
                    kept_entries: vec![AppendRequest::new(Role::Assistant, "kept")],
                    compaction_id: None,
                    trigger_reason: None,
                };
                ok(run(
                    s,
                    compaction::persist_compaction_result(WS, PARENT, persist, 300),
                ))
            }),
        ),
        (
            "truncate",
            Box::new(|s: &FailAt| ok(run(s, spool::truncate(WS, PARENT, 3, None, 300)))),
        ),
        (
            "delete the parent",
            Box::new(|s: &FailAt| ok(run(s, spool::delete_session(WS, PARENT, None)))),
        ),
        (
            "reset the parent",
            Box::new(|s: &FailAt| {
                ok(run(
                    s,
                    spool::apply_intent(WS, PARENT, Intent::ResetSameKey, "p2", 300),
                ))
            }),
        ),
        (
            "branch",
            Box::new(|s: &FailAt| {
                ok(run(
                    s,
                    spool::branch(
                        WS,
                        CHILD,
                        "agent:main:grandchild",
                        BranchRequest::fork("g"),
                        300,
                    ),
                ))
            }),
        ),
        (
            "import in three slices",
            Box::new(|s: &FailAt| {
                for request in import_slices() {
                    run(s, spool::import::import_session(WS, request, 300))?;
                }
                Ok(())
            }),
        ),
    ]
}

/// Everything a reader sees: every session's record, pages and canonical transcript.
fn reads(storage: &impl Storage) -> Vec<String> {
    let keys = [
        PARENT,
        CHILD,
        "agent:main:grandchild",
        "import:codex:thread-9",
    ];
    let mut out = Vec::new();
    for key in keys {
        let session = run(storage, spool::get_session(WS, key)).expect("get");
        out.push(format!("{key}: {session:?}"));
        if session.is_none() {
            continue;
        }
        let page = spool::PageRequest {
            order: spool::Order::OldestFirst,
            cursor: None,
            limit: 1000,
        };
        let active = run(storage, spool::read_page(WS, key, page.clone())).expect("page");
        let canonical = run(storage, spool::read_canonical_page(WS, key, page)).expect("canonical");
        let ids = |p: &spool::Page| p.entries.iter().map(|e| e.id).collect::<Vec<_>>();
        out.push(format!(
            "{key}: active {:?} canonical {:?}",
            ids(&active),
            ids(&canonical)
        ));
    }
    out
}

#[test]
fn test_a_failure_at_any_commit_leaves_a_consistent_state_and_the_operation_completes() {
    for (name, operation) in operations() {
        // What a run without failure writes, and how many commits it takes.
        let clean = FailAt {
            inner: base(),
            fail_at: 0,
            commits: Cell::new(0),
        };
        operation(&clean).unwrap_or_else(|e| panic!("{name}: {e}"));
        let commits = clean.commits.get();
        // One commit each, whatever the session's size; an import one per slice.
        let expected = if name.starts_with("import") { 3 } else { 1 };
        assert_eq!(commits, expected, "{name} commits");
        let done = dump(&clean.inner, WS);
        for k in 1..=commits {
            let storage = FailAt {
                inner: base(),
                fail_at: k,
                commits: Cell::new(0),
            };
            let err = operation(&storage).expect_err(name);
            assert_eq!(err.code(), "storage", "{name} at commit {k}: {err}");
            // Every read still works and agrees with itself (no corruption, no
            // half-written state); a single-commit operation left nothing at all.
            let seen = reads(&storage.inner);
            if commits == 1 {
                assert_eq!(dump(&storage.inner, WS), dump(&base(), WS), "{name}");
            }
            // Running it again completes it, to what a clean run writes.
            let retry = FailAt {
                inner: storage.inner.clone(),
                fail_at: 0,
                commits: Cell::new(0),
            };
            operation(&retry).unwrap_or_else(|e| panic!("{name} after commit {k}: {e}"));
            assert_eq!(
                dump(&retry.inner, WS),
                done,
                "{name} after a failure at commit {k}"
            );
            assert_ne!(seen, Vec::<String>::new());
        }
    }
}
