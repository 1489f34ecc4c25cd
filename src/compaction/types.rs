//! Records and results of compaction.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::obligations::Obligation;
use super::plan::CompactionConfig;
use crate::types::{AppendRequest, Entry};

fn text() -> String {
    "text".into()
}

fn unknown() -> String {
    "unknown".into()
}

/// The stored summary of one compaction. Fields absent from older records read as:
/// format `text`, source `unknown`, coverage `unknown`, flush receipt `unknown`, counts 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Id of the compaction (given, or `cmp-<session id>-<index>`).
    pub compaction_id: String,
    /// 0 for the first compaction of an identity, then 1, 2, …
    pub compaction_index: u64,
    /// The identity compacted.
    pub session_id: String,
    /// The session key.
    pub session_key: String,
    /// The summary text.
    pub summary_text: String,
    /// The structured payload (`structured_v1`).
    #[serde(default)]
    pub summary_payload: Option<Value>,
    /// `structured_v1` or `text`.
    #[serde(default = "text")]
    pub summary_format: String,
    /// `fallback` (built-in), `llm` (two-phase commit), `external` (persisted).
    #[serde(default = "unknown")]
    pub summary_source: String,
    /// `pass`, `pass_with_backfill`, `partial_backfill` or `unknown`.
    #[serde(default = "unknown")]
    pub coverage_status: String,
    /// Obligations the summary missed (back-filled, or dropped).
    #[serde(default)]
    pub missing_obligations: Option<Vec<String>>,
    /// Missing obligations the size budget could not hold (in the archive only).
    #[serde(default)]
    pub dropped_obligations: Option<Vec<String>>,
    /// Facts carried forward verbatim.
    #[serde(default)]
    pub critical_carry_forward: Option<Vec<String>>,
    /// Why the compaction ran.
    #[serde(default)]
    pub trigger_reason: Option<String>,
    /// Active-transcript tokens before.
    #[serde(default)]
    pub tokens_before: Option<u64>,
    /// Tokens after (kept entries + summary).
    #[serde(default)]
    pub tokens_after: Option<u64>,
    /// Entries moved to the archive.
    #[serde(default)]
    pub removed_count: u64,
    /// Entries kept active.
    #[serde(default)]
    pub kept_count: u64,
    /// Chunks summarized.
    #[serde(default)]
    pub chunk_count: u64,
    /// Id of the newest archived entry.
    #[serde(default)]
    pub covered_through_id: u64,
    /// When the compaction committed.
    #[serde(default)]
    pub created_at: u64,
    /// Memory-flush receipt: `unknown`, `safe`, `degraded_forensic`, `noop_no_memory`,
    /// `archive_only` (`unsafe` is stored as `degraded_forensic`).
    #[serde(default = "unknown")]
    pub flush_receipt_status: String,
    /// Repair state of a degraded compaction (e.g. `repaired`).
    #[serde(default)]
    pub repair_status: Option<String>,
}

impl Summary {
    /// Whether the compaction waits in the repair queue.
    pub fn degraded(&self) -> bool {
        self.flush_receipt_status == "degraded_forensic" && self.repair_status.is_none()
    }
}

/// An entry moved to the canonical archive by a compaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchivedEntry {
    /// The entry as it was.
    #[serde(flatten)]
    pub entry: Entry,
    /// The compaction that archived it (empty if the record does not say).
    #[serde(default)]
    pub compaction_id: String,
    /// That compaction's index.
    #[serde(default)]
    pub compaction_index: u64,
}

impl<'de> Deserialize<'de> for ArchivedEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use crate::storage::record::member;
        crate::storage::record::read_flat(deserializer, |object| {
            Ok(ArchivedEntry {
                entry: crate::storage::record::read(object)?,
                compaction_id: member(object, "compaction_id")?.unwrap_or_default(),
                compaction_index: member(object, "compaction_index")?.unwrap_or_default(),
            })
        })
    }
}

/// How to compact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactRequest {
    /// The model's context window.
    pub context_window_tokens: u64,
    /// Trigger, blocking, protected messages.
    #[serde(default)]
    pub config: CompactionConfig,
    /// Id of the compaction (derived when absent).
    #[serde(default)]
    pub compaction_id: Option<String>,
    /// Why it runs (e.g. `context_overflow`).
    #[serde(default)]
    pub trigger_reason: Option<String>,
    /// Memory-flush receipt of this compaction.
    #[serde(default)]
    pub flush_receipt_status: Option<String>,
}

impl CompactRequest {
    /// A compaction for a context window of `context_window_tokens`, with the default
    /// configuration, a derived id and no trigger reason or flush receipt.
    pub fn new(context_window_tokens: u64) -> Self {
        CompactRequest {
            context_window_tokens,
            config: CompactionConfig::default(),
            compaction_id: None,
            trigger_reason: None,
            flush_receipt_status: None,
        }
    }
}

/// The first phase of a two-phase compaction: what to summarize.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prepared {
    /// `None` when a summary is needed; otherwise why not (`below_threshold`,
    /// `nothing_to_compact`, `protected_tail_exhausts_compaction_window`).
    pub skip_reason: Option<String>,
    /// The exact text to summarize (the removed entries, rendered).
    pub input: String,
    /// What the summary must keep.
    pub obligations: Vec<Obligation>,
    /// Entries the cut removes.
    pub removed_count: u64,
    /// Entries it keeps.
    pub kept_count: u64,
    /// Id of the newest removed entry.
    pub covered_through_id: u64,
    /// Active-transcript tokens.
    pub tokens_before: u64,
    /// Identifies the transcript this plan was made from; the commit refuses
    /// (`stale_preimage`) if it changed.
    pub preimage: String,
}

impl Prepared {
    /// Whether a summarizer is to be asked: not for a skipped plan.
    pub fn needs_summary(&self) -> bool {
        self.skip_reason.is_none()
    }

    /// The second phase of this plan for `request`, with the summary `summarize` gives
    /// — or, for a skipped plan, with no summary and without calling it: that commit
    /// re-plans, finds the same skip (or a stale preimage) and reports it without
    /// writing.
    pub fn commit_with<E>(
        self,
        request: CompactRequest,
        summarize: impl FnOnce(&Prepared) -> Result<String, E>,
    ) -> Result<CommitRequest, E> {
        let summary_text = if self.needs_summary() {
            summarize(&self)?
        } else {
            String::new()
        };
        Ok(self.commit(request, summary_text))
    }

    /// The second phase of this plan for `request` with `summary_text` (empty for a
    /// skipped plan, see [`Prepared::commit_with`]).
    pub fn commit(self, request: CompactRequest, summary_text: String) -> CommitRequest {
        CommitRequest {
            request,
            preimage: self.preimage,
            summary_text,
            summary_payload: None,
        }
    }
}

/// The second phase: a summary to commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitRequest {
    /// The same compaction request as the prepare.
    pub request: CompactRequest,
    /// `Prepared::preimage`.
    pub preimage: String,
    /// The summary text (must not be empty).
    pub summary_text: String,
    /// An optional structured payload.
    #[serde(default)]
    pub summary_payload: Option<Value>,
}

/// An externally produced compaction: summary and the agent's version of the tail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersistRequest {
    /// The summary text; empty → nothing is touched.
    pub summary_text: String,
    /// Replace the last `kept_entries.len()` active entries. A tool result among them
    /// needs its call before it among them.
    pub kept_entries: Vec<AppendRequest>,
    /// Id of the compaction.
    #[serde(default)]
    pub compaction_id: Option<String>,
    /// Why it ran.
    #[serde(default)]
    pub trigger_reason: Option<String>,
}

/// The result of a compaction (or of its refusal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionResult {
    /// The summary written; `""` when skipped.
    pub summary: String,
    /// `fallback`, `llm`, `external` or `skipped`.
    pub summary_source: String,
    /// The structured payload written.
    pub summary_payload: Option<Value>,
    /// Entries archived (no longer active; still canonical).
    pub removed_count: u64,
    /// The active entries after the compaction; empty when it was skipped (it wrote
    /// nothing: the transcript is as it was, whatever its size).
    pub kept_entries: Vec<Entry>,
    /// Active-transcript tokens before.
    pub tokens_before: u64,
    /// Tokens after (kept entries + summary).
    pub tokens_after: u64,
    /// Chunks summarized.
    pub chunks_processed: u64,
    /// `pass`, `pass_with_backfill`, `partial_backfill`, `unknown`, `fail_blocked`.
    pub coverage_status: String,
    /// Obligations the summary missed, as `kind: text`: back-filled into it, or dropped.
    pub missing_obligations: Vec<String>,
    /// The missing obligations that did not fit in the summary's size budget (kept
    /// entries + summary within the window): reported here, kept only in the archive.
    #[serde(default)]
    pub dropped_obligations: Vec<String>,
    /// Why nothing was written (`below_threshold`, `nothing_to_compact`,
    /// `protected_tail_exhausts_compaction_window`, `stale_preimage`, `coverage_blocked`,
    /// `empty_summary`, `context_not_reduced`).
    pub skip_reason: Option<String>,
    /// The compaction's id when one was written.
    pub compaction_id: Option<String>,
}
