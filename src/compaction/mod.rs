//! Compaction: replace the oldest part of a transcript by a summary that provably keeps
//! what matters. Pure functions here; the operations that read and commit live beside
//! them.
//!
//! - [`mod@tokens`]: the deterministic token measure and its trigger;
//! - [`mod@plan`]: where to cut (units never split, half the window kept);
//! - [`mod@calls`]: what tool calls and results say (ids, commands, files, exits);
//! - [`mod@obligations`]: the facts the summary must keep;
//! - [`mod@summarize`]: the built-in `structured_v1` summarizer and its rendering;
//! - [`mod@coverage`]: the check, back-fill and blocking decision.

pub mod calls;
mod contained;
pub mod coverage;
pub mod obligations;
mod ops;
pub mod plan;
mod requests;
mod stored;
pub mod summarize;
pub mod tokens;
pub(crate) mod types;

pub use coverage::{Coverage, check};
pub use obligations::{Facts, FileHistory, Obligation, ObligationKind, extract, facts};
pub use ops::MAX_PREPARED_INPUT_BYTES;
pub(crate) use ops::{Boundary, boundaries_of, repair_key, repairs, summary_key};
pub use ops::{
    commit_compaction, compact, persist_compaction_result, prepare_compaction, render_input,
};
pub use plan::{CompactionConfig, Plan, Shape, plan, plan_shapes};
pub(crate) use stored::summaries_of;
pub use stored::{
    canonical_transcript, compaction_preimage, list_degraded_compactions, list_summaries,
    set_flush_receipt, set_repair_status,
};
pub use summarize::{render, summarize};
pub use tokens::{entry_tokens, estimate};
pub use types::{
    ArchivedEntry, CommitRequest, CompactRequest, CompactionResult, PersistRequest, Prepared,
    Summary,
};

/// `haystack.find(needle)` for the detectors, which look for a few short markers in
/// every line a compaction removes: the first byte's occurrences, each checked. (A
/// `str::find` builds a two-way searcher first, which costs more than scanning a short
/// line.) The same answer: a match of a UTF-8 needle starts on a character boundary.
fn find(haystack: &str, needle: &str) -> Option<usize> {
    let (hay, pattern) = (haystack.as_bytes(), needle.as_bytes());
    let Some((&first, _)) = pattern.split_first() else {
        return Some(0);
    };
    let mut from = 0;
    while let Some(at) = hay.get(from..)?.iter().position(|&b| b == first) {
        let start = from + at;
        if hay[start..].starts_with(pattern) {
            return Some(start);
        }
        from = start + 1;
    }
    None
}

#[cfg(test)]
#[path = "tests/compaction.rs"]
mod tests;
