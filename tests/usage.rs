//! Token estimates of imported sessions.
#![cfg(not(target_arch = "wasm32"))]

use spool::compaction::entry_tokens;
use spool::import::{self, ImportFormat};
use spool::{MemoryStorage, Session, run};

use crate::support;

const CLAUDE: &str = include_str!(
    "fixtures/import/claude-code/-home-dev-acme/6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f.jsonl"
);
const CLAUDE_SHAPES: [&str; 3] = [
    include_str!("fixtures/import/claude-shapes/parallel-tools.jsonl"),
    include_str!("fixtures/import/claude-shapes/compaction.jsonl"),
    include_str!("fixtures/import/claude-shapes/task-agent.jsonl"),
];
const CODEX: &str = include_str!(
    "fixtures/import/codex/2025/10/17/rollout-2025-10-17T05-50-00-0199f0a1-7c2e-7d40-9b1a-5e6f7a8b9c0d.jsonl"
);
const CODEX_CACHE: &str = include_str!("fixtures/import/codex-shapes/cache-usage.jsonl");

/// A storage holding every fixture above, imported as `spool import` plans it.
fn imported() -> MemoryStorage {
    let storage = MemoryStorage::new();
    for text in std::iter::once(CLAUDE).chain(CLAUDE_SHAPES) {
        let log = import::parse(ImportFormat::ClaudeCode, text);
        support::slices::import_planned(&storage, ImportFormat::ClaudeCode, log.sessions);
    }
    for text in [CODEX, CODEX_CACHE] {
        let log = import::parse(ImportFormat::Codex, text);
        support::slices::import_planned(&storage, ImportFormat::Codex, log.sessions);
    }
    storage
}

fn sessions(storage: &MemoryStorage) -> Vec<Session> {
    run(storage, spool::list_sessions("w", 1000, None))
        .expect("list")
        .sessions
}

#[test]
fn test_imported_sessions_count_each_entry_at_the_compaction_estimate() {
    let storage = imported();
    for s in sessions(&storage) {
        let entries = support::entries(&storage, "w", &s.key, true);
        assert!(entries.iter().all(|e| e.token_count.is_none()), "{}", s.key);
        let estimate: u64 = entries.iter().map(entry_tokens).sum();
        assert!(estimate > 0, "{}", s.key);
        assert_eq!(s.total_tokens, estimate, "{}", s.key);
        assert_eq!(
            s.metadata["import"]["tokens"], "estimated",
            "{}: says the figure is an estimate",
            s.key
        );
    }
}
