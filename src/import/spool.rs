//! Spool's own export (`spool export KEY`, [`crate::export`]) read back: one session
//! with every entry field the export holds (message id, role, content, time, token
//! count, tool calls, tool call id, turn id, usage with cache tokens, tool status,
//! reasoning, attachments, kind), and in [`ImportedSession::exported`] the session record,
//! its lineage and its compaction summaries, each with the entries it archived, which
//! [`super::import_session`] restores.
//!
//! Not carried: an entry's insertion id (the importing database numbers entries itself;
//! the export's ids only tell which entries each summary archived), and what the export
//! does not hold (context states, turn records, run records, reset archives).
//!
//! Lines: the header (`spool_export`), entries (objects with `message_id` and `role`)
//! and `summary` lines. An export without a header (written before it existed) imports
//! as a session whose id is its summaries' identity, or `export@<first message id>`.
//! A header of a later export version, an entry or summary that does not read as one,
//! and any other object are counted in `skipped` by kind; a line that is not JSON in
//! `invalid_lines`.

use crate::storage::record::read;
use serde_json::{Map, Value};

use super::{
    ImportFormat, ImportedEntry, ImportedExport, ImportedLog, ImportedSession, ImportedSummary,
    Unaccounted, json_lines,
};
use crate::compaction::Summary;
use crate::export::{EXPORT_VERSION, ExportHeader};
use crate::types::{BranchLineage, Entry, Session};

/// Parses a Spool export (JSON Lines). Never fails: see the module documentation.
pub fn parse_spool(text: &str) -> ImportedLog {
    let mut log = ImportedLog::new(ImportFormat::Spool);
    let mut header: Option<ExportHeader> = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut summaries: Vec<Summary> = Vec::new();
    for (_, line) in json_lines(text, &mut log) {
        if line.contains_key("spool_export") {
            read_header(line, &mut header, &mut log);
        } else if line.len() == 1 && line.contains_key("summary") {
            // Read by `record::read`, as every JSON value is: one reader per type.
            match line.get("summary").map(read) {
                Some(Ok(summary)) => summaries.push(summary),
                _ => log.skip("summary (unreadable)"),
            }
        } else if line.contains_key("message_id") && line.contains_key("role") {
            match read::<Entry>(&Value::Object(line)) {
                Ok(entry) => entries.push(entry),
                Err(_) => log.skip("entry (unreadable)"),
            }
        } else {
            log.skip("unknown");
        }
    }
    if header.is_none() && entries.is_empty() && summaries.is_empty() {
        return log;
    }
    let session = header.as_ref().map(|h| &h.session);
    let provider_session_id = match (session, summaries.first(), entries.first()) {
        (Some(s), _, _) => s.session_id.clone(),
        (None, Some(summary), _) => summary.session_id.clone(),
        (None, None, Some(entry)) => format!("export@{}", entry.message_id),
        (None, None, None) => String::new(),
    };
    let model = session.and_then(|s| s.model.clone());
    let started_at = session.map_or(0, |s| s.created_at);
    let export = header.map(|h| {
        Box::new(ImportedExport {
            unaccounted: unaccounted(&h.session, &entries),
            summaries: archived_by(&summaries, &entries),
            session: h.session,
            lineage: h.lineage,
        })
    });
    log.attachments = entries.iter().map(|e| e.attachments.len() as u64).sum();
    // The title is in the exported metadata, which the import restores whole.
    log.sessions.push(ImportedSession {
        model,
        started_at,
        entries: entries.into_iter().map(ImportedEntry::from).collect(),
        exported: export,
        ..ImportedSession::new(provider_session_id)
    });
    log
}

fn read_header(line: Map<String, Value>, header: &mut Option<ExportHeader>, log: &mut ImportedLog) {
    let version = line.get("spool_export").and_then(Value::as_u64);
    if header.is_some() {
        log.skip("spool_export (repeated)");
        return;
    }
    match version {
        Some(v) if v <= EXPORT_VERSION => {}
        _ => {
            log.skip("spool_export (unknown version)");
            return;
        }
    }
    let mut line = line;
    // A lineage that does not read is dropped, not the session.
    let lineage = line
        .remove("lineage")
        .and_then(|l| read::<BranchLineage>(&l).ok());
    match read::<ExportHeader>(&Value::Object(line)) {
        Ok(mut h) => {
            h.lineage = lineage.unwrap_or_default();
            *header = Some(h);
        }
        Err(_) => log.skip("spool_export (unreadable)"),
    }
}

/// Each summary with the newest entry it archived (the entry whose insertion id is its
/// `covered_through_id`, the last such in transcript order) and how many entries that
/// is past the previous summary's. A summary whose entry the export lacks archives
/// nothing more.
fn archived_by(summaries: &[Summary], entries: &[Entry]) -> Vec<ImportedSummary> {
    let mut done = 0usize;
    let mut out = Vec::with_capacity(summaries.len());
    for summary in summaries {
        let through = entries
            .iter()
            .rposition(|e| e.id == summary.covered_through_id)
            .filter(|&at| at >= done);
        let archived = through.map_or(0, |at| at + 1 - done);
        done += archived;
        out.push(ImportedSummary {
            summary: summary.clone(),
            through_message_id: through.map(|at| entries[at].message_id.clone()),
            archived: archived as u64,
        });
    }
    out
}

/// The session's usage counters minus what its entries account for (the usage of an
/// entry with `turn_usage`, else its `token_count`), never below zero.
fn unaccounted(session: &Session, entries: &[Entry]) -> Unaccounted {
    let mut sum = Unaccounted::default();
    for e in entries {
        match &e.turn_usage {
            Some(u) => {
                sum.input_tokens = sum.input_tokens.saturating_add(u.input_tokens);
                sum.output_tokens = sum.output_tokens.saturating_add(u.output_tokens);
                sum.cache_read = sum.cache_read.saturating_add(u.cache_read_tokens);
                sum.cache_write = sum.cache_write.saturating_add(u.cache_write_tokens);
            }
            None => sum.total_tokens = sum.total_tokens.saturating_add(e.token_count.unwrap_or(0)),
        }
    }
    Unaccounted {
        input_tokens: session.input_tokens.saturating_sub(sum.input_tokens),
        output_tokens: session.output_tokens.saturating_sub(sum.output_tokens),
        cache_read: session.cache_read.saturating_sub(sum.cache_read),
        cache_write: session.cache_write.saturating_sub(sum.cache_write),
        total_tokens: session.total_tokens.saturating_sub(sum.total_tokens),
    }
}
