//! Compaction: replace the oldest part of a transcript by a summary that provably keeps
//! what matters. Pure functions here; the operations that read and commit live beside
//! them.
//!
//! - [`tokens`]: the deterministic token measure and its trigger;
//! - [`plan`]: where to cut (units never split, half the window kept);
//! - [`obligations`]: the facts the summary must keep;
//! - [`summarize`]: the built-in `structured_v1` summarizer and its rendering;
//! - [`coverage`]: the check, back-fill and blocking decision.

pub mod coverage;
pub mod obligations;
pub mod plan;
pub mod summarize;
pub mod tokens;

pub use coverage::{Coverage, check};
pub use obligations::{Obligation, ObligationKind, extract};
pub use plan::{CompactionConfig, Plan, plan};
pub use summarize::{render, summarize};
pub use tokens::{entry_tokens, estimate};
