//! Spool's export of a session, as `spool export KEY` writes it (and the browser could):
//! pure functions from what the session holds to text, one line or section at a time,
//! so a host streams a session of any size page by page.
//!
//! **JSON Lines** ([`ExportLine`]), read back by [`crate::import::parse_spool`]:
//! 1. a header `{"spool_export": 1, "session": {…}, "lineage": {…}}`: the session
//!    record (key, identity, status, model, configuration, metadata, counters, costs)
//!    and its lineage (parent key, fork point);
//! 2. one line per entry of the canonical transcript (entries compactions archived,
//!    then the active ones, in the order they were appended), each an [`Entry`] as the
//!    API returns it;
//! 3. one `{"summary": {…}}` line per compaction summary, oldest first.
//!
//! Exports written before the header existed (entries, then summaries) still import.
//!
//! **Markdown** ([`markdown_title`], [`markdown_entry`], [`markdown_summary`]): a
//! readable transcript: a title (key, model, status, times), one section per entry
//! (role, time, kind), user and assistant text as Markdown, system, context and command
//! entries verbatim in a code block, tool calls and tool results collapsed in
//! `<details>`, failed and cancelled tool results marked in their heading, reasoning and
//! attachments as size markers (their text and bytes are not written), then the
//! compaction summaries, marked.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compaction::Summary;
use crate::types::{BranchLineage, Entry, Role, Session, ToolStatus};

/// The version of the JSON Lines export written by this build.
pub const EXPORT_VERSION: u64 = 1;

/// The first line of a JSON Lines export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportHeader {
    /// [`EXPORT_VERSION`] of the build that wrote it.
    pub spool_export: u64,
    /// The session record.
    pub session: Session,
    /// The session's lineage.
    #[serde(default)]
    pub lineage: BranchLineage,
}

/// One line of a JSON Lines export.
#[derive(Debug, Clone, Copy)]
pub enum ExportLine<'a> {
    /// The header: the session and its lineage.
    Header(&'a Session, &'a BranchLineage),
    /// An entry of the canonical transcript.
    Entry(&'a Entry),
    /// A compaction summary.
    Summary(&'a Summary),
}

impl ExportLine<'_> {
    /// The line's JSON text (without the newline).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        match self {
            ExportLine::Header(session, lineage) => serde_json::to_string(&serde_json::json!({
                "spool_export": EXPORT_VERSION,
                "session": session,
                "lineage": lineage,
            })),
            ExportLine::Entry(entry) => serde_json::to_string(entry),
            ExportLine::Summary(summary) => {
                serde_json::to_string(&serde_json::json!({ "summary": summary }))
            }
        }
    }
}

/// `ms` since the Unix epoch as an RFC 3339 UTC time to the second
/// (`2025-10-17T09:00:00Z`).
pub fn format_time(ms: u64) -> String {
    let [year, month, day, hour, minute, second] = civil(ms);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// The UTC calendar fields of `ms` since the Unix epoch: year, month, day, hour, minute,
/// second (Howard Hinnant's `civil_from_days`).
pub fn civil(ms: u64) -> [u64; 6] {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    [year, month, day, rem / 3600, rem % 3600 / 60, rem % 60]
}

/// A fenced code block holding `text` as is: the fence is longer than any run of
/// backticks in it.
fn fenced(info: &str, text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{info}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// Text for inside an HTML `<summary>` line: `<`, `>` and `&` escaped, on one line.
fn inline(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

/// The title of a Markdown export: the session's key, then its model, status, times,
/// entry counts and lineage.
pub fn markdown_title(session: &Session, lineage: &BranchLineage) -> String {
    let mut out = format!("# {}\n\n", inline(&session.key));
    if let Some(Value::String(title)) = session.metadata.get("title") {
        out.push_str(&format!("*{}*\n\n", inline(title)));
    }
    let mut facts = vec![
        format!("- Model: {}", session.model.as_deref().unwrap_or("unknown")),
        format!(
            "- Status: {}",
            format!("{:?}", session.status).to_lowercase()
        ),
        format!("- Created: {}", format_time(session.created_at)),
        format!("- Updated: {}", format_time(session.updated_at)),
    ];
    if let Some(ended) = session.ended_at {
        facts.push(format!("- Ended: {}", format_time(ended)));
    }
    facts.push(format!(
        "- Tokens: {} in, {} out, {} cache read, {} cache write",
        session.input_tokens, session.output_tokens, session.cache_read, session.cache_write
    ));
    if session.compaction_count > 0 {
        facts.push(format!("- Compactions: {}", session.compaction_count));
    }
    if let Some(parent) = &lineage.parent_session_key {
        facts.push(format!("- Branched from: {}", inline(parent)));
    }
    out.push_str(&facts.join("\n"));
    out.push_str("\n\n");
    out
}

/// The marker a tool result's status puts in its heading (none for `ok` or unknown).
pub fn status_marker(status: Option<ToolStatus>) -> Option<&'static str> {
    match status {
        Some(ToolStatus::Error) => Some("❌ error"),
        Some(ToolStatus::Cancelled) => Some("⏹ cancelled"),
        Some(ToolStatus::Ok) | None => None,
    }
}

/// One entry of a Markdown export: a `##` heading (role, time, kind, status), its text,
/// then its tool calls or its tool result collapsed, and size markers for its
/// reasoning and attachments.
pub fn markdown_entry(entry: &Entry) -> String {
    let mut heading = vec![
        entry.role.as_str().to_owned(),
        format_time(entry.created_at),
    ];
    if let Some(kind) = entry.kind {
        heading.push(kind.as_str().to_owned());
    }
    if let Some(marker) = status_marker(entry.tool_status) {
        heading.push(format!("**{marker}**"));
    }
    let mut out = format!("## {}\n\n", heading.join(" · "));
    if let Some(reasoning) = &entry.reasoning {
        out.push_str(&format!("> *reasoning: {} bytes*\n\n", reasoning.len()));
    }
    if entry.role == Role::Tool {
        let call = entry.tool_call_id.as_deref().unwrap_or("unknown call");
        let status = entry.tool_status.map_or("", |s| s.as_str());
        out.push_str(&format!(
            "<details><summary>result of <code>{}</code>{}{} ({} bytes)</summary>\n\n",
            inline(call),
            if status.is_empty() { "" } else { ": " },
            status,
            entry.content.len()
        ));
        out.push_str(&fenced("", &entry.content));
        out.push_str("\n</details>\n\n");
    } else if entry.role == Role::System || entry.kind.is_some() {
        // Instructions, environment blocks and command output are often tag-like text a
        // Markdown viewer would hide: shown as is.
        if !entry.content.is_empty() {
            out.push_str(&fenced("", &entry.content));
            out.push('\n');
        }
    } else if !entry.content.is_empty() {
        out.push_str(entry.content.trim_end_matches('\n'));
        out.push_str("\n\n");
    }
    for call in tool_calls(entry.tool_calls.as_ref()) {
        out.push_str(&call);
    }
    for a in &entry.attachments {
        let mut what = vec![a.kind.clone()];
        what.extend(a.media_type.clone());
        what.push(format!("{} bytes", a.size));
        if let Some(sha) = &a.sha256 {
            what.push(format!("sha256 {}", sha.get(..12).unwrap_or(sha)));
        }
        if let Some(source) = &a.source {
            what.push(source.clone());
        }
        out.push_str(&format!("> *attachment: {}*\n\n", inline(&what.join(", "))));
    }
    out
}

/// Each tool call of `calls` collapsed: its name and id on the summary line, its
/// arguments inside.
fn tool_calls(calls: Option<&Value>) -> Vec<String> {
    let items = match calls {
        Some(Value::Array(items)) => items.as_slice(),
        Some(other) => std::slice::from_ref(other),
        None => &[],
    };
    items
        .iter()
        .map(|call| {
            let field = |names: &[&str]| {
                names
                    .iter()
                    .find_map(|n| call.get(*n).and_then(Value::as_str))
                    .map(str::to_owned)
            };
            let name = field(&["name"])
                .or_else(|| {
                    call.get("function")
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "tool".to_owned());
            let id = field(&["id", "call_id"]);
            let args = ["input", "arguments", "args"]
                .iter()
                .find_map(|n| call.get(*n))
                .or_else(|| call.get("function").and_then(|f| f.get("arguments")))
                .unwrap_or(call);
            let args = match args {
                Value::String(text) => text.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            format!(
                "<details><summary>tool call <code>{}</code>{}</summary>\n\n{}\n</details>\n\n",
                inline(&name),
                id.map(|id| format!(" ({})", inline(&id)))
                    .unwrap_or_default(),
                fenced("json", &args)
            )
        })
        .collect()
}

/// One compaction summary of a Markdown export, marked as such.
pub fn markdown_summary(summary: &Summary) -> String {
    let mut out = format!(
        "## 📝 compaction summary {} · {}\n\n",
        summary.compaction_index + 1,
        format_time(summary.created_at)
    );
    out.push_str(&format!(
        "> *{} entries archived, {} kept; source {}, coverage {}*\n\n",
        summary.removed_count,
        summary.kept_count,
        inline(&summary.summary_source),
        inline(&summary.coverage_status)
    ));
    out.push_str(summary.summary_text.trim_end_matches('\n'));
    out.push_str("\n\n");
    out
}

#[cfg(test)]
#[path = "tests/export.rs"]
mod tests;
