//! The compaction operations: prepare / commit (two-phase, for any LLM), compact (with
//! the built-in summarizer), persist an external result. The reads and repairs of what
//! compaction stored are in `stored.rs`.
//!
//! A compaction writes a boundary, not a copy: the removed entries stay where they are,
//! and the session record's active start (`active_from`) moves past them, so they are
//! canonical and no longer active. Its one commit is small whatever it removes: the
//! summary (`y · session id · index`), the range it archived (`j · session id · index` →
//! `[from, to)`), a portable context state carrying the payload and the compaction id,
//! the session record (active start, `compaction_count`, `entry_count`), and for a
//! degraded compaction its repair-queue entry (`q · key · index`). Nothing shared moves,
//! so branches reading the session's history and pinned fork snapshots are untouched.
//! Entries archived by builds before record format 5 were moved to `x · session id ·
//! position` with their compaction tag, and are read from there.
//!
//! A compaction reads the active transcript twice, a page at a time: once for the
//! plan (a [`Shape`] per entry: its tokens and tool-call links, a few dozen bytes), once
//! for what it removes (obligations, the built-in summary, the two-phase input) and
//! keeps (the result's `kept_entries`). Any change to the transcript between planning
//! and commit refuses it as `stale_preimage`, writing nothing.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::coverage::budget;
use super::obligations::{Extractor, Facts, Obligation};
use super::plan::{Plan, Shape, plan_shapes};
use super::summarize::{fingerprint, render, summarize};
use super::tokens::{entry_tokens, estimate};
use super::types::{
    CommitRequest, CompactRequest, CompactionResult, PersistRequest, Prepared, Summary,
};
use super::{Coverage, check};
use crate::branch::history::{Item, View};
use crate::engine::error::Error;
use crate::engine::op::{Abort, Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::read_all;
use crate::session::{Loaded, Tail, require, write_record};
use crate::storage::entry_record::{encode_entry, generated_message_id};
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange, RangeQuery};
use crate::types::{AppendRequest, ContextState, Entry, Order, Role, Session};

pub(crate) fn summary_key(data_id: &str, index: u64) -> Vec<u8> {
    keys::KeyBuf::new(keys::SUMMARY)
        .str(data_id)
        .u64(index)
        .finish()
}

pub(crate) fn repair_key(session_key: &str, index: u64) -> Vec<u8> {
    keys::KeyBuf::new(keys::REPAIR)
        .str(session_key)
        .u64(index)
        .finish()
}

/// Prefix of the repair-queue entries of a session (removed with the session).
pub(crate) fn repairs(session_key: &str) -> Vec<u8> {
    keys::KeyBuf::new(keys::REPAIR).str(session_key).finish()
}

/// Entries per page of a compaction's passes (a page also stops at about a megabyte,
/// so that a page of large entries stays far below the component's memory).
pub(super) const PASS_PAGE: usize = validate::MAX_PAGE as usize;

/// Most bytes of summarizer input a two-phase prepare hands out: when the removed
/// entries render to more, the input holds the newest of them that fit, after a line
/// saying how many older ones it leaves out (their obligations are listed all the same).
pub const MAX_PREPARED_INPUT_BYTES: usize = 1 << 20;

/// Most bytes of the instructions at the head of a two-phase input (the facts it lists
/// verbatim stop there; every one is in `Prepared::obligations` all the same).
const PROMPT_BYTES: usize = 64 << 10;

/// The instructions a two-phase input starts with: the summary shape the built-in
/// summarizer writes, and the critical facts to copy verbatim.
fn prompt(obligations: &[Obligation]) -> String {
    let mut out = String::from(
        "Summarize the conversation below for an agent that will continue the work from \
         your summary and the messages after it alone. Use these sections: Task (the \
         user's requests in their own words), Constraints, Latest request, Current state, \
         Files (with what happened to each), Commands (last result), Failures \
         unresolved, Rejected by the user, Pending tool calls, Next step. Write every \
         fact whole. Copy each line below exactly as written (after its `kind: `): a \
         summary that leaves one out is back-filled, or refused in blocking mode.\n",
    );
    let critical: Vec<String> = obligations
        .iter()
        .filter(|o| o.critical)
        .map(Obligation::describe)
        .collect();
    let mut listed = 0;
    for fact in &critical {
        if out.len() + fact.len() + 80 > PROMPT_BYTES {
            break;
        }
        out.push_str(&format!("- {fact}\n"));
        listed += 1;
    }
    if listed < critical.len() {
        out.push_str(&format!(
            "- … and {} more critical facts, listed with this input's obligations\n",
            critical.len() - listed
        ));
    }
    out.push_str("\n--- conversation ---\n\n");
    out
}

/// What a compaction's first pass keeps of the session's active transcript: per entry,
/// its [`Shape`], id and summarizer-input size, oldest first.
struct Snapshot {
    loaded: Loaded,
    shapes: Vec<Shape>,
    ids: Vec<u64>,
    rendered: Vec<u32>,
    previous: Option<Summary>,
}

/// One page of the active transcript of `loaded` after `cursor`, oldest first.
async fn active_page(
    io: &Io,
    loaded: &Loaded,
    cursor: Option<&[u8]>,
) -> Result<(Vec<Item>, bool), Error> {
    crate::branch::history::page(
        io,
        &View::of(loaded),
        false,
        Order::OldestFirst,
        cursor,
        PASS_PAGE,
    )
    .await
}

async fn snapshot(io: &Io, key: &str) -> OpResult<Snapshot> {
    let loaded = require(io, key).await?;
    let data_id = loaded.data_id().to_owned();
    let expected = usize::try_from(loaded.session.entry_count).unwrap_or(0);
    let reserve = expected.min(1 << 20);
    let mut shapes = Vec::with_capacity(reserve);
    let mut ids = Vec::with_capacity(reserve);
    let mut rendered = Vec::with_capacity(reserve);
    let mut cursor: Option<Vec<u8>> = None;
    loop {
        let (items, more) = active_page(io, &loaded, cursor.as_deref()).await?;
        for item in &items {
            shapes.push(Shape::of(&item.entry));
            ids.push(item.entry.id);
            rendered.push(u32::try_from(render_entry(&item.entry).len()).unwrap_or(u32::MAX));
        }
        io.progress("compact: plan", shapes.len() as u64, expected as u64);
        cursor = items.last().map(|i| i.position.clone());
        if !more || cursor.is_none() {
            break;
        }
    }
    // A compaction of a damaged transcript would rewrite its count to what is left.
    crate::branch::history::check_count(io, &loaded, shapes.len()).await?;
    let latest = io
        .range(RangeQuery {
            range: KeyRange::prefix(&keys::identity(keys::SUMMARY, &data_id)),
            limit: 1,
            reverse: true,
        })
        .await?;
    let previous = latest
        .first()
        .map(|kv| record::decode::<Summary>(&kv.key, &kv.value))
        .transpose()?;
    crate::branch::history::confirm(io, &loaded).await?;
    Ok(Snapshot {
        loaded,
        shapes,
        ids,
        rendered,
        previous,
    })
}

/// What a compaction's second pass reads of the entries it removes and keeps.
struct Pass {
    facts: Facts,
    /// The two-phase input (empty unless asked for).
    input: String,
    kept: Vec<Entry>,
    /// Where the kept entries start (`None` when nothing is kept).
    kept_from: Option<(u64, u64)>,
}

impl Snapshot {
    fn session(&self) -> &Session {
        &self.loaded.session
    }

    fn tokens(&self) -> u64 {
        validate::total(self.shapes.iter().map(|s| s.tokens))
    }

    /// The newest id among the oldest `removed` entries.
    fn covered_through(&self, removed: usize) -> u64 {
        self.ids[..removed].iter().copied().max().unwrap_or(0)
    }

    /// The first of the oldest `removed` entries the two-phase input shows: the input
    /// holds the newest removed entries whose blocks fit [`MAX_PREPARED_INPUT_BYTES`].
    fn first_shown(&self, removed: usize) -> usize {
        let mut bytes = 0usize;
        let mut first = removed;
        while first > 0 {
            bytes = bytes.saturating_add(self.rendered[first - 1] as usize);
            if bytes > MAX_PREPARED_INPUT_BYTES - PROMPT_BYTES - 256 {
                break;
            }
            first -= 1;
        }
        first
    }

    /// Reads the active transcript again: the facts and (with `input`) the
    /// two-phase input of the oldest `removed` entries, and the entries after them. A
    /// transcript that changed since the first pass starts the operation over.
    async fn pass(&self, io: &Io, removed: usize, input: bool) -> OpResult<Pass> {
        let answered =
            crate::order::set_of(self.shapes.iter().filter_map(|s| s.answers.as_deref()));
        let mut extractor = Extractor::new(&self.carried());
        let first_shown = self.first_shown(removed);
        let mut text = String::new();
        if input && first_shown > 0 {
            let left: u64 = self.rendered[..first_shown]
                .iter()
                .map(|&n| u64::from(n))
                .sum();
            text.push_str(&format!(
                "[{first_shown} older entries ({left} bytes) are left out of this input; their obligations are listed with it]\n\n"
            ));
        }
        let mut kept = Vec::new();
        let mut kept_from = None;
        let mut index = 0usize;
        let mut cursor: Option<Vec<u8>> = None;
        loop {
            let (items, more) = active_page(io, &self.loaded, cursor.as_deref()).await?;
            cursor = items.last().map(|i| i.position.clone());
            for item in items {
                if index < removed {
                    extractor.feed(&item.entry, |id| answered.contains(id));
                    if input && index >= first_shown {
                        text.push_str(&render_entry(&item.entry));
                    }
                } else {
                    if index == removed {
                        kept_from = Some((item.entry.created_at, item.entry.id));
                    }
                    kept.push(item.entry);
                }
                index += 1;
            }
            io.progress("compact: read", index as u64, self.shapes.len() as u64);
            if !more || cursor.is_none() {
                break;
            }
        }
        if index != self.shapes.len() {
            return Err(Abort::Retry);
        }
        crate::branch::history::confirm(io, &self.loaded).await?;
        Ok(Pass {
            facts: extractor.finish(),
            input: text,
            kept,
            kept_from,
        })
    }

    /// Starts the batch of a write that will remove entries: branches reading this
    /// identity get their own copy, and this session's own shared history becomes its
    /// own (then its record is written with an empty base). Returns how many
    /// preconditions (on released branches) the batch starts with.
    async fn prepare_rewrite(&mut self, io: &Io, batch: &mut Batch) -> Result<u32, Error> {
        let mut done = BTreeSet::from([self.loaded.session.key.clone()]);
        crate::branch::history::release(io, batch, self.loaded.identity(), &mut done).await?;
        let released = batch.preconditions.len() as u32;
        if !self.loaded.base.is_empty() {
            let loaded = &self.loaded;
            crate::branch::history::materialize(io, batch, loaded, &loaded.base, &done).await?;
            self.loaded.base.clear();
        }
        Ok(released)
    }

    /// Identifies the transcript and the request: any append, truncation, reset or
    /// compaction changes it.
    fn preimage(&self, request: &CompactRequest) -> String {
        let s = self.session();
        let config = serde_json::to_string(&request.config).unwrap_or_default();
        fingerprint(
            format!(
                "{}|{}|{}|{}|{}|{}|{}",
                s.session_id,
                s.epoch,
                s.compaction_count,
                s.last_entry_id,
                s.entry_count,
                request.context_window_tokens,
                config
            )
            .as_bytes(),
        )
    }

    /// The facts the previous summary holds for the next one: the critical facts it
    /// kept (`continuity` of its payload) and what it carried forward.
    fn carried(&self) -> Vec<String> {
        let Some(previous) = &self.previous else {
            return Vec::new();
        };
        let kept = previous
            .summary_payload
            .as_ref()
            .and_then(|p| p.get(CONTINUITY))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned));
        kept.chain(previous.critical_carry_forward.clone().unwrap_or_default())
            .collect()
    }
}

/// The payload field listing the critical facts a summary holds, as `kind: text`: the
/// next compaction of the session owes them too.
const CONTINUITY: &str = "continuity";

/// Records in `payload` the critical obligations the summary holds (all but those
/// coverage dropped), for the next compaction.
fn carry(payload: &mut Value, obligations: &[Obligation], coverage: &Coverage) {
    let dropped = crate::order::set_of(coverage.dropped.iter().map(String::as_str));
    let held: Vec<Value> = obligations
        .iter()
        .filter(|o| o.critical && o.kind != super::ObligationKind::CarryForward)
        .map(Obligation::describe)
        .filter(|d| !dropped.contains(d.as_str()))
        .map(Value::String)
        .collect();
    if let Some(map) = payload.as_object_mut() {
        map.insert(CONTINUITY.into(), Value::Array(held));
    }
}

/// The block of summarizer input of one entry. Tool payloads over 400 characters appear
/// as size, hash and preview.
fn render_entry(entry: &Entry) -> String {
    let mut head = format!("{} #{}", entry.role.as_str(), entry.id);
    if let Some(kind) = entry.kind {
        head.push_str(&format!(" {}", kind.as_str()));
    }
    if let Some(status) = entry.tool_status {
        head.push_str(&format!(" {}", status.as_str()));
    }
    let mut out = format!("[{head}]\n");
    // Reasoning and attachments are sizes, never words to keep.
    if let Some(reasoning) = &entry.reasoning {
        out.push_str(&format!("(reasoning: {} bytes)\n", reasoning.len()));
    }
    out.push_str(&entry.content);
    out.push('\n');
    for a in &entry.attachments {
        out.push_str(&format!(
            "(attachment: {} {}, {} bytes)\n",
            a.kind,
            a.media_type.as_deref().unwrap_or("of unknown type"),
            a.size
        ));
    }
    if let Some(calls) = &entry.tool_calls {
        let text = calls.to_string();
        if text.len() > 400 {
            let preview: String = text.chars().take(60).collect();
            out.push_str(&format!(
                "tool_calls: ({} bytes, fnv64 {}) {preview}…\n",
                text.len(),
                fingerprint(text.as_bytes())
            ));
        } else {
            out.push_str(&format!("tool_calls: {text}\n"));
        }
    }
    if let Some(id) = &entry.tool_call_id {
        out.push_str(&format!("tool_call_id: {id}\n"));
    }
    out.push('\n');
    out
}

/// The text a summarizer is given: the removed entries, one block each. Tool payloads
/// over 400 characters appear as size, hash and preview.
pub fn render_input(removed: &[Entry]) -> String {
    removed.iter().map(render_entry).collect()
}

/// The result of a compaction that wrote nothing: the transcript is as it was (read it
/// with `read_page`; `kept_entries` is empty, whatever the transcript's size).
fn skipped(reason: &str, tokens_before: u64) -> CompactionResult {
    CompactionResult {
        summary: String::new(),
        summary_source: "skipped".into(),
        summary_payload: None,
        removed_count: 0,
        kept_entries: Vec::new(),
        tokens_before,
        tokens_after: tokens_before,
        chunks_processed: 0,
        coverage_status: "unknown".into(),
        missing_obligations: Vec::new(),
        dropped_obligations: Vec::new(),
        skip_reason: Some(reason.into()),
        compaction_id: None,
    }
}

/// The quality gate of every compaction (built-in, two-phase and external): the kept
/// entries and the summary together must take fewer tokens than the active transcript
/// did, or the compaction is refused (`context_not_reduced`) and nothing is written.
fn shrinks(tokens_before: u64, tokens_kept: u64, summary: &str) -> bool {
    tokens_kept.saturating_add(estimate(summary)) < tokens_before
}

pub(super) fn receipt(status: Option<&str>) -> Result<String, Error> {
    match status.unwrap_or("unknown") {
        "unsafe" | "degraded_forensic" => Ok("degraded_forensic".into()),
        s @ ("unknown" | "safe" | "noop_no_memory" | "archive_only") => Ok(s.into()),
        other => Err(Error::invalid(
            "flush_receipt_status",
            format!(
                "{} is not one of unknown, safe, unsafe, degraded_forensic, noop_no_memory, archive_only",
                validate::quote(other)
            ),
        )),
    }
}

fn check_request(request: &CompactRequest) -> Result<(), Error> {
    receipt(request.flush_receipt_status.as_deref())?;
    if let Some(id) = &request.compaction_id {
        validate::id("compaction_id", id)?;
    }
    if let Some(reason) = &request.trigger_reason {
        validate::id("trigger_reason", reason)?;
    }
    let margin = request.config.safety_margin;
    if !margin.is_finite() || margin <= 0.0 {
        return Err(Error::invalid(
            "safety_margin",
            format!("{margin} is not a positive number"),
        ));
    }
    validate::count("context_window_tokens", request.context_window_tokens)
}

/// A summary given by the caller: text and payload at most
/// [`validate::MAX_CONTENT_BYTES`] each.
fn check_summary(text: &str, payload: Option<&Value>) -> Result<(), Error> {
    validate::text("summary_text", text, validate::MAX_CONTENT_BYTES)?;
    payload.map_or(Ok(()), |p| {
        validate::json_size("summary_payload", p, validate::MAX_CONTENT_BYTES)
    })
}

/// A planned cut.
struct Cut {
    removed: usize,
    tokens_before: u64,
    tokens_kept: u64,
}

fn cut(snap: &Snapshot, request: &CompactRequest) -> Result<Cut, (&'static str, u64)> {
    match plan_shapes(&snap.shapes, request.context_window_tokens, &request.config) {
        Plan::Skip {
            reason,
            tokens_before,
        } => Err((reason, tokens_before)),
        Plan::Cut {
            removed,
            tokens_before,
            tokens_kept,
        } => Ok(Cut {
            removed,
            tokens_before,
            tokens_kept,
        }),
    }
}

/// The summary side of a compaction, as [`write`] stores it.
struct Written {
    /// How many of the active entries it archives (the oldest).
    removed: usize,
    /// The active entries after the compaction.
    kept: Vec<Entry>,
    /// Where they start: the new active start.
    active_from: (u64, u64),
    /// The session's newest entry id after it.
    last_entry_id: u64,
    text: String,
    payload: Option<Value>,
    source: &'static str,
    coverage: Coverage,
    tokens_before: u64,
    tokens_kept: u64,
}

/// The positions a compaction archived: `[from, to)` of its session's view (`from`:
/// `None` for the start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Boundary {
    pub(crate) from: Option<(u64, u64)>,
    pub(crate) to: (u64, u64),
}

impl Boundary {
    pub(super) fn holds(&self, position: &[u8]) -> bool {
        let from = self.from.map(|(at, id)| keys::position(at, id));
        from.is_none_or(|f| position >= f.as_slice())
            && position < keys::position(self.to.0, self.to.1).as_slice()
    }
}

/// The boundary records of identity `data_id`, as stored: `(compaction_index, value)`.
pub(crate) async fn boundaries_of(io: &Io, data_id: &str) -> Result<Vec<(u64, Vec<u8>)>, Error> {
    let prefix = keys::identity(keys::BOUNDARY, data_id);
    read_all(io, KeyRange::prefix(&prefix))
        .await?
        .into_iter()
        .map(|kv| match keys::read_u64(&kv.key, prefix.len()) {
            Some((index, _)) => Ok((index, kv.value)),
            None => Err(Error::Corruption {
                key: keys::display(&kv.key),
                detail: "not a compaction boundary key".into(),
            }),
        })
        .collect()
}

/// The active start past every entry the session under `loaded` holds or reads: where
/// nothing is kept. Later entries sort at or after it (their clock is at least the
/// identity's entry clock and their ids are larger).
async fn past_everything(io: &Io, loaded: &Loaded) -> Result<(u64, u64), Error> {
    let clock = crate::transcript::entry_clock(io, loaded).await?;
    Ok((clock, loaded.session.last_entry_id.saturating_add(1)))
}

/// Everything a compaction writes, in one batch whatever it removes: the summary, the
/// archived range, the portable context state, and the session with its new active
/// start, count and newest id. Returns the result.
fn write(
    batch: &mut Batch,
    snap: &Snapshot,
    written: Written,
    request: &CompactRequest,
    now_ms: u64,
    newest_entry_at: Option<u64>,
) -> Result<CompactionResult, Error> {
    let Written {
        removed,
        kept,
        active_from,
        last_entry_id,
        text,
        payload,
        source,
        coverage,
        tokens_before,
        tokens_kept,
    } = written;
    let session = snap.session();
    let sid = &session.session_id;
    let data_id = snap.loaded.data_id();
    let index = session.compaction_count;
    let compaction_id = request
        .compaction_id
        .clone()
        .unwrap_or_else(|| format!("cmp-{sid}-{index}"));
    let boundary = Boundary {
        from: snap.loaded.active_from,
        to: active_from,
    };
    batch.put(keys::boundary(data_id, index), record::encode(&boundary)?);
    let covered_through_id = snap.covered_through(removed);
    let tokens_after = validate::add(tokens_kept, estimate(&text));
    let structured = payload.is_some();
    let summary = Summary {
        compaction_id: compaction_id.clone(),
        compaction_index: index,
        session_id: sid.clone(),
        session_key: session.key.clone(),
        summary_text: text.clone(),
        summary_payload: payload.clone(),
        summary_format: if structured { "structured_v1" } else { "text" }.into(),
        summary_source: source.into(),
        coverage_status: coverage.status.clone(),
        missing_obligations: Some(coverage.missing.clone()),
        dropped_obligations: Some(coverage.dropped.clone()),
        critical_carry_forward: payload.as_ref().map(|p| {
            p["critical_carry_forward"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        }),
        trigger_reason: request.trigger_reason.clone(),
        tokens_before: Some(tokens_before),
        tokens_after: Some(tokens_after),
        removed_count: removed as u64,
        kept_count: kept.len() as u64,
        chunk_count: 1,
        covered_through_id,
        created_at: now_ms,
        flush_receipt_status: receipt(request.flush_receipt_status.as_deref())?,
        repair_status: None,
    };
    let summary_bytes = record::encode(&summary)?;
    if summary.degraded() {
        batch.put(repair_key(&session.key, index), summary_bytes.clone());
    }
    batch.put(summary_key(data_id, index), summary_bytes);
    let mut updated = session.clone();
    updated.compaction_count += 1;
    updated.entry_count = kept.len() as u64;
    updated.last_entry_id = last_entry_id;
    updated.updated_at = now_ms;
    updated.last_state_id += 1;
    let mut state_payload = payload
        .clone()
        .unwrap_or_else(|| json!({ "summary": text }));
    if let Some(map) = state_payload.as_object_mut() {
        map.insert("compaction_id".into(), Value::String(compaction_id.clone()));
    }
    let state = ContextState {
        id: updated.last_state_id,
        session_id: sid.clone(),
        session_key: session.key.clone(),
        provider: "portable".into(),
        model: None,
        state_kind: "structured_summary_v1".into(),
        payload: state_payload,
        covered_through_id,
        created_at: now_ms,
        expires_at: None,
        portable: true,
        cacheable: true,
        valid: true,
        invalid_reason: None,
    };
    batch.put(keys::state(&session.key, state.id), record::encode(&state)?);
    let tail = Tail {
        newest_entry_at: newest_entry_at.or(snap.loaded.newest_entry_at),
        active_from: Some(active_from),
        ..Tail::of(&snap.loaded)
    };
    write_record(batch, &snap.loaded, &updated, tail)?;
    Ok(CompactionResult {
        summary: text,
        summary_source: source.into(),
        summary_payload: payload,
        removed_count: removed as u64,
        kept_entries: kept,
        tokens_before,
        tokens_after,
        chunks_processed: 1,
        coverage_status: coverage.status,
        missing_obligations: coverage.missing,
        dropped_obligations: coverage.dropped,
        skip_reason: None,
        compaction_id: Some(compaction_id),
    })
}

/// Plans, checks and commits a summary of the removed part of `snap` (shared by
/// `compact` and `commit_compaction`).
async fn summarize_and_commit(
    io: &Io,
    snap: Snapshot,
    request: &CompactRequest,
    summary: Option<(String, Option<Value>)>,
    now_ms: u64,
) -> OpResult<CompactionResult> {
    let cut = match cut(&snap, request) {
        Ok(cut) => cut,
        Err((reason, tokens_before)) => return Ok(skipped(reason, tokens_before)),
    };
    let pass = snap.pass(io, cut.removed, false).await?;
    let budget = budget(
        request.context_window_tokens,
        cut.tokens_before,
        cut.tokens_kept,
    );
    let (source, mut text, mut payload): (&'static str, _, _) = match summary {
        Some((text, payload)) => ("llm", text, payload),
        None => {
            let chars = usize::try_from(budget.saturating_mul(4)).unwrap_or(usize::MAX);
            let payload = summarize(&pass.facts, chars);
            ("fallback", render(&payload), Some(payload))
        }
    };
    if text.trim().is_empty() {
        return Ok(skipped("empty_summary", cut.tokens_before));
    }
    let mut scratch = payload
        .take()
        .unwrap_or_else(|| json!({ "schema_version": 1 }));
    let obligations = &pass.facts.obligations;
    let coverage = check(
        &mut text,
        &mut scratch,
        obligations,
        request.config.coverage_blocking,
        budget,
    );
    if coverage.status == "fail_blocked" {
        let mut result = skipped("coverage_blocked", cut.tokens_before);
        result.coverage_status = coverage.status;
        result.missing_obligations = coverage.missing;
        return Ok(result);
    }
    if !shrinks(cut.tokens_before, cut.tokens_kept, &text) {
        return Ok(skipped("context_not_reduced", cut.tokens_before));
    }
    carry(&mut scratch, obligations, &coverage);
    payload = Some(scratch);
    let active_from = match pass.kept_from {
        Some(at) => at,
        None => past_everything(io, &snap.loaded).await?,
    };
    let written = Written {
        removed: cut.removed,
        kept: pass.kept,
        active_from,
        last_entry_id: snap.session().last_entry_id,
        text,
        payload,
        source,
        coverage,
        tokens_before: cut.tokens_before,
        tokens_kept: cut.tokens_kept,
    };
    let mut batch = Batch::default();
    let result = write(&mut batch, &snap, written, request, now_ms, None)?;
    match io.try_commit(batch).await? {
        Ok(()) => Ok(result),
        // The session record changed after it was read: an append (or another writer)
        // landed. Nothing was written; the late write survives.
        Err(_) => Ok(skipped("stale_preimage", cut.tokens_before)),
    }
}

pub(super) fn op<T: 'static, F, Fut>(
    workspace: &str,
    key: &str,
    checked: Result<(), Error>,
    body: F,
) -> Operation<T>
where
    F: Fn(Io, String) -> Fut + 'static,
    Fut: std::future::Future<Output = OpResult<T>> + 'static,
{
    check!(workspace, validate::keyed(workspace, key).and(checked));
    let key = key.to_owned();
    Operation::new(workspace, move |io| body(io, key.clone()))
}

/// Compacts the session under `key` with the built-in summarizer when its transcript
/// exceeds the window (`summary_source` `fallback`).
pub fn compact(
    workspace: &str,
    key: &str,
    request: CompactRequest,
    now_ms: u64,
) -> Operation<CompactionResult> {
    check!(workspace, validate::now_ms(now_ms));
    let checked = check_request(&request);
    op(workspace, key, checked, move |io, key| {
        let request = request.clone();
        async move {
            let snap = snapshot(&io, &key).await?;
            summarize_and_commit(&io, snap, &request, None, now_ms).await
        }
    })
}

/// Phase one of a two-phase compaction: the exact text to summarize, the obligations,
/// the cut and the preimage token.
pub fn prepare_compaction(
    workspace: &str,
    key: &str,
    request: CompactRequest,
) -> Operation<Prepared> {
    let checked = check_request(&request);
    op(workspace, key, checked, move |io, key| {
        let request = request.clone();
        async move {
            let snap = snapshot(&io, &key).await?;
            let preimage = snap.preimage(&request);
            let count = snap.shapes.len() as u64;
            Ok(match cut(&snap, &request) {
                Err((reason, tokens_before)) => Prepared {
                    skip_reason: Some(reason.into()),
                    input: String::new(),
                    obligations: Vec::new(),
                    removed_count: 0,
                    kept_count: count,
                    covered_through_id: 0,
                    tokens_before,
                    preimage,
                },
                Ok(cut) => {
                    let pass = snap.pass(&io, cut.removed, true).await?;
                    Prepared {
                        skip_reason: None,
                        input: format!("{}{}", prompt(&pass.facts.obligations), pass.input),
                        obligations: pass.facts.obligations,
                        removed_count: cut.removed as u64,
                        kept_count: count - cut.removed as u64,
                        covered_through_id: snap.covered_through(cut.removed),
                        tokens_before: cut.tokens_before,
                        preimage,
                    }
                }
            })
        }
    })
}

/// Phase two: commits an LLM's summary of the prepared cut (`summary_source` `llm`),
/// after checking the preimage and the coverage.
pub fn commit_compaction(
    workspace: &str,
    key: &str,
    commit: CommitRequest,
    now_ms: u64,
) -> Operation<CompactionResult> {
    check!(workspace, validate::now_ms(now_ms));
    let checked = check_request(&commit.request)
        .and_then(|()| check_summary(&commit.summary_text, commit.summary_payload.as_ref()));
    op(workspace, key, checked, move |io, key| {
        let commit = commit.clone();
        async move {
            let snap = snapshot(&io, &key).await?;
            if snap.preimage(&commit.request) != commit.preimage {
                return Ok(skipped("stale_preimage", snap.tokens()));
            }
            let summary = Some((commit.summary_text.clone(), commit.summary_payload.clone()));
            summarize_and_commit(&io, snap, &commit.request, summary, now_ms).await
        }
    })
}

/// The entry a kept entry of an external compaction becomes.
fn appended(request: &AppendRequest, id: u64, message_id: String, now_ms: u64) -> Entry {
    Entry::from_request(request.clone(), id, message_id, now_ms)
}

/// Stores a summary an agent produced itself: the kept entries replace the last
/// `kept_entries.len()` active entries and the earlier ones move to the archive. An empty
/// summary touches nothing; so does one that, with the kept entries, takes as many tokens
/// as the active transcript or more (`context_not_reduced`). A kept tool result must come
/// after the kept call that asked for it (else `invalid_argument`).
pub fn persist_compaction_result(
    workspace: &str,
    key: &str,
    persist: PersistRequest,
    now_ms: u64,
) -> Operation<CompactionResult> {
    check!(workspace, validate::now_ms(now_ms));
    let request = CompactRequest {
        context_window_tokens: 0,
        config: Default::default(),
        compaction_id: persist.compaction_id.clone(),
        trigger_reason: persist.trigger_reason.clone(),
        flush_receipt_status: None,
    };
    let checked = check_request(&request)
        .and_then(|()| check_summary(&persist.summary_text, None))
        .and_then(|()| {
            let mut calls = BTreeSet::new();
            persist.kept_entries.iter().try_for_each(|k| {
                crate::transcript::check_append(k)?;
                if k.expected_epoch.is_some() {
                    return Err(Error::invalid(
                        "kept_entries",
                        "a kept entry takes no expected_epoch",
                    ));
                }
                if let Some(tool_calls) = &k.tool_calls {
                    calls.extend(super::plan::call_ids(tool_calls));
                }
                // The rest is archived: a kept result without its call would open a
                // context no provider accepts.
                match &k.tool_call_id {
                    Some(id) if k.role == Role::Tool && !calls.contains(id) => Err(Error::invalid(
                        "kept_entries",
                        format!(
                            "the tool result for `{id}` is kept without the call that asked for it"
                        ),
                    )),
                    _ => Ok(()),
                }
            })
        });
    op(workspace, key, checked, move |io, key| {
        let (persist, request) = (persist.clone(), request.clone());
        async move {
            let mut snap = snapshot(&io, &key).await?;
            let tokens_before = snap.tokens();
            if persist.summary_text.trim().is_empty() {
                return Ok(skipped("empty_summary", tokens_before));
            }
            let tokens_kept = validate::total(
                persist
                    .kept_entries
                    .iter()
                    .map(|k| entry_tokens(&appended(k, 0, String::new(), 0))),
            );
            if !shrinks(tokens_before, tokens_kept, &persist.summary_text) {
                return Ok(skipped("context_not_reduced", tokens_before));
            }
            // The kept entries are new entries: they sort after everything the identity
            // holds (`write` stores the advanced clock with the session record).
            let mut clock = crate::transcript::entry_clock(&io, &snap.loaded).await?;
            let mut batch = Batch::default();
            let count = snap.shapes.len();
            let split = count.saturating_sub(persist.kept_entries.len());
            // The replaced tail disappears (the agent's version stands in for it): the
            // only entries this compaction deletes, as many as it is given.
            if split < count {
                // Newest first, page by page (a page holds about a megabyte).
                let mut tail = Vec::new();
                let mut cursor: Option<Vec<u8>> = None;
                while tail.len() < count - split {
                    let (items, more) = crate::branch::history::page(
                        &io,
                        &View::of(&snap.loaded),
                        false,
                        Order::NewestFirst,
                        cursor.as_deref(),
                        count - split - tail.len(),
                    )
                    .await?;
                    cursor = items.last().map(|i| i.position.clone());
                    tail.extend(items.into_iter().map(|i| (i.position, i.entry.message_id)));
                    if !more || cursor.is_none() {
                        break;
                    }
                }
                snap.prepare_rewrite(&io, &mut batch).await?;
                let data_id = snap.loaded.data_id();
                for (position, message_id) in tail {
                    batch.delete(keys::entry_at(data_id, &position));
                    batch.delete(keys::message(data_id, &message_id));
                }
            }
            let session = snap.session();
            let sid = session.session_id.clone();
            let identity = snap.loaded.identity();
            let mut kept = Vec::new();
            let mut next_id = session.last_entry_id;
            for request in &persist.kept_entries {
                next_id += 1;
                clock = clock.max(now_ms);
                let message_id = request
                    .message_id
                    .clone()
                    .unwrap_or_else(|| generated_message_id(&sid, next_id));
                let entry = appended(request, next_id, message_id, clock);
                batch.put(
                    keys::entry(identity.data_id, entry.created_at, entry.id),
                    encode_entry(&entry, Some(&sid))?,
                );
                crate::branch::history::index_message(&mut batch, identity, &entry);
                kept.push(entry);
            }
            let active_from = kept
                .first()
                .map_or((clock, next_id.saturating_add(1)), |first| {
                    (first.created_at, first.id)
                });
            let written = Written {
                removed: split,
                tokens_kept,
                kept,
                active_from,
                last_entry_id: next_id,
                text: persist.summary_text.clone(),
                payload: None,
                source: "external",
                coverage: Coverage {
                    status: "unknown".into(),
                    missing: Vec::new(),
                    dropped: Vec::new(),
                },
                tokens_before,
            };
            let mut result = write(&mut batch, &snap, written, &request, now_ms, Some(clock))?;
            io.commit(batch).await?;
            crate::order::sort_by_key(&mut result.kept_entries, |e| (e.created_at, e.id));
            Ok(result)
        }
    })
}
