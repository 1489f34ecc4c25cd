//! Human-readable output of the `spool` CLI.

use spool::resume::rules::RunRecord;
use spool::turns::{Turn, TurnPhase};
use spool::validate::escape_invisible;
use spool::{ContextState, Entry, IntentOutcome, Session, SessionStatus};

/// Whether output may use colours: stdout is a terminal and `NO_COLOR` is unset or
/// empty (<https://no-color.org>).
pub(crate) fn colour() -> bool {
    use std::io::IsTerminal;
    static COLOUR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *COLOUR.get_or_init(|| {
        std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    })
}

/// `text` in the SGR style `code` when colours are on, else as it is.
fn paint(text: &str, code: &str) -> String {
    if colour() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// `text` in bold (headings) when colours are on.
pub(crate) fn bold(text: &str) -> String {
    paint(text, "1")
}

/// A session state, green (running), dim (done) or red (failed) when colours are on.
fn status_painted(s: SessionStatus) -> String {
    let code = match s {
        SessionStatus::Running => "32",
        SessionStatus::Done => "2",
        SessionStatus::Failed => "31",
    };
    paint(status(s), code)
}

/// `ms` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn time(ms: u64) -> String {
    let [y, m, d, hour, minute, second] = spool::export::civil(ms);
    format!("{y:04}-{m:02}-{d:02} {hour:02}:{minute:02}:{second:02} UTC")
}

pub(crate) fn status(status: SessionStatus) -> &'static str {
    match status {
        SessionStatus::Running => "running",
        SessionStatus::Done => "done",
        SessionStatus::Failed => "failed",
    }
}

/// The session header of `show`, `create` and `update`.
pub(crate) fn session(s: &Session) -> String {
    let mut out = format!(
        "session {} ({})\n",
        bold(&escape_invisible(&s.key)),
        status_painted(s.status)
    );
    out.push_str(&format!("  id       {}\n", s.session_id));
    if let Some(agent) = &s.agent_id {
        out.push_str(&format!("  agent    {agent}\n"));
    }
    if let Some(model) = &s.model {
        out.push_str(&format!("  model    {model}\n"));
    }
    if let Some(channel) = &s.channel {
        out.push_str(&format!("  channel  {channel}\n"));
    }
    out.push_str(&format!("  created  {}\n", time(s.created_at)));
    out.push_str(&format!("  updated  {}\n", time(s.updated_at)));
    if let Some(ended) = s.ended_at {
        out.push_str(&format!(
            "  ended    {} (ran {})\n",
            time(ended),
            duration(s.runtime_ms.unwrap_or(0))
        ));
    }
    out.push_str(&format!(
        "  entries  {}    tokens {}{}    epoch {}\n",
        s.entry_count,
        s.total_tokens,
        if tokens_estimated(s) {
            " (estimated: 1 per 4 characters)"
        } else {
            ""
        },
        s.epoch
    ));
    out.push_str(&format!(
        "  usage    input {}    output {}    cache read {}    cache write {}\n",
        s.input_tokens, s.output_tokens, s.cache_read, s.cache_write
    ));
    out.push_str(&format!(
        "  cost     ${:.4} total    ${:.4} billed    ${:.4} estimated    source {} (USD)",
        s.total_cost_usd, s.billed_cost_usd, s.estimated_cost_usd, s.cost_source
    ));
    if s.missing_cost_entries > 0 {
        out.push_str(&format!("    {} without cost", s.missing_cost_entries));
    }
    out.push('\n');
    out.push_str(&format!(
        "  history  {} compaction{}    last state #{}\n",
        s.compaction_count,
        if s.compaction_count == 1 { "" } else { "s" },
        s.last_state_id
    ));
    if !s.model_config.is_empty() {
        out.push_str(&format!("  config   {}\n", json_map(&s.model_config)));
    }
    if !s.metadata.is_empty() {
        out.push_str(&format!("  metadata {}\n", json_map(&s.metadata)));
    }
    out
}

fn json_map(map: &std::collections::BTreeMap<String, serde_json::Value>) -> String {
    serde_json::to_string(map).unwrap_or_default()
}

/// `ms` as a short human duration (`1.5 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`).
pub(crate) fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{}.{} s", secs, ms % 1000 / 100),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        3600..86_400 => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        _ => format!("{} d {} h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// The one-line summary of `finish` and `archive`.
pub(crate) fn ending(s: &Session) -> String {
    format!(
        "{}: {} after {}",
        s.key,
        status(s.status),
        duration(s.runtime_ms.unwrap_or(0))
    )
}

/// The result of `reset` and `intent`.
pub(crate) fn outcome(o: &IntentOutcome, archive_location: Option<&str>) -> String {
    let s = &o.session;
    let mut out = match (o.created, o.rotated) {
        (true, _) => format!("created {} (nothing to archive)\n", s.key),
        (false, true) => format!("reset {}\n", s.key),
        (false, false) => format!("continuing {}\n", s.key),
    };
    out.push_str(&format!("  session  {}\n", s.session_id));
    out.push_str(&format!("  epoch    {}\n", s.epoch));
    out.push_str(&format!("  entries  {}\n", s.entry_count));
    if let Some(archive) = &o.archive {
        match (&archive.error, archive.written, archive_location) {
            (_, true, Some(location)) => {
                out.push_str(&format!("  archive  written to {location}\n"));
            }
            (_, true, None) => out.push_str("  archive  written\n"),
            (Some(error), false, _) => {
                out.push_str(&format!("  archive  NOT written: {error}\n"));
            }
            (None, false, _) => out.push_str("  archive  NOT written\n"),
        }
    }
    out
}

/// One context state of `states list`.
pub(crate) fn state(c: &ContextState) -> String {
    let mut head = format!(
        "#{} {} · provider {} · covers through #{} · {}",
        c.id,
        c.state_kind,
        c.provider,
        c.covered_through_id,
        time(c.created_at)
    );
    if let Some(model) = &c.model {
        head.push_str(&format!(" · model {model}"));
    }
    if c.portable {
        head.push_str(" · portable");
    }
    if c.cacheable {
        head.push_str(" · cacheable");
    }
    if let Some(expires) = c.expires_at {
        head.push_str(&format!(" · expires {}", time(expires)));
    }
    if !c.valid {
        head.push_str(&format!(
            " · INVALID ({})",
            c.invalid_reason.as_deref().unwrap_or("no reason")
        ));
    }
    format!("{head}\n  {}\n", c.payload)
}

/// One transcript entry, with its content indented.
pub(crate) fn entry(e: &Entry) -> String {
    let mut head = format!(
        "#{} {} · {} · {}",
        e.id,
        e.role.as_str(),
        time(e.created_at),
        e.message_id
    );
    if let Some(tokens) = e.token_count {
        head.push_str(&format!(" · {tokens} tokens"));
    }
    if let Some(turn) = &e.turn_id {
        head.push_str(&format!(" · turn {turn}"));
    }
    if let Some(usage) = &e.turn_usage {
        head.push_str(&format!(
            " · {} in {} / out {}",
            usage.model, usage.input_tokens, usage.output_tokens
        ));
        if usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0 {
            head.push_str(&format!(
                " / cache read {} / cache write {}",
                usage.cache_read_tokens, usage.cache_write_tokens
            ));
        }
    }
    if let Some(kind) = e.kind {
        head.push_str(&format!(" · {}", kind.as_str()));
    }
    if let Some(status) = e.tool_status
        && status != spool::ToolStatus::Ok
    {
        head.push_str(&format!(" · {}", status.as_str().to_uppercase()));
    }
    match (e.status, e.stop_reason.as_deref()) {
        (Some(spool::EntryStatus::InProgress), _) => head.push_str(" · IN PROGRESS"),
        (Some(spool::EntryStatus::Incomplete), reason) => {
            head.push_str(&format!(" · INCOMPLETE ({})", reason.unwrap_or("stopped")));
        }
        (None, _) => {}
    }
    let mut out = head + "\n";
    if let Some(call) = &e.tool_call_id {
        out.push_str(&format!("  ↳ result of tool call {call}\n"));
    }
    if let Some(reasoning) = &e.reasoning {
        out.push_str(&format!("  [reasoning: {} bytes]\n", reasoning.len()));
    }
    for line in e.content.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    for a in &e.attachments {
        out.push_str(&format!(
            "  [{}{}: {} bytes{}]\n",
            a.kind,
            a.media_type
                .as_deref()
                .map_or_else(String::new, |m| format!(" {m}")),
            a.size,
            a.source
                .as_deref()
                .map_or_else(String::new, |s| format!(" from {s}")),
        ));
    }
    if let Some(calls) = &e.tool_calls {
        out.push_str(&format!("  tool calls: {calls}\n"));
    }
    out
}

/// Whether a session's `total_tokens` holds estimates: an import counts the entries of
/// a log (which reports no size per entry) at the compaction's estimate and says so in
/// its `import` metadata (`"tokens": "estimated"`).
pub(crate) fn tokens_estimated(s: &Session) -> bool {
    s.metadata
        .get("import")
        .and_then(|import| import.get("tokens"))
        .and_then(serde_json::Value::as_str)
        == Some("estimated")
}

/// The `list` table (`~` before an estimated token count).
pub(crate) fn table(sessions: &[Session]) -> String {
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            vec![
                escape_invisible(&s.key).into_owned(),
                status(s.status).to_owned(),
                s.entry_count.to_string(),
                if tokens_estimated(s) {
                    format!("~{}", s.total_tokens)
                } else {
                    s.total_tokens.to_string()
                },
                time(s.updated_at),
            ]
        })
        .collect();
    grid(
        &["KEY", "STATUS", "ENTRIES", "TOKENS", "UPDATED"],
        &rows,
        &[2, 3],
    )
}

/// The runs of `spool runs list`, one row each.
pub(crate) fn run_table(runs: &[RunRecord]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.agent_type.clone(),
                r.project_id.clone(),
                r.session_id.clone(),
                r.task_id.clone(),
                r.status.clone(),
                time(r.updated_at),
            ]
        })
        .collect();
    grid(
        &["AGENT", "PROJECT", "TOKEN", "TASK", "STATUS", "UPDATED"],
        &rows,
        &[],
    )
}

/// The name of a turn's phase as the engine writes it.
pub(crate) fn phase(phase: TurnPhase) -> &'static str {
    match phase {
        TurnPhase::Running => "running",
        TurnPhase::Settled => "settled",
        TurnPhase::Interrupted => "interrupted",
    }
}

/// The turns of `spool turn list`, one row each: the boundary is the entry the turn
/// closed at (`-` while it runs or when the transcript was empty).
pub(crate) fn turn_table(turns: &[Turn]) -> String {
    let rows: Vec<Vec<String>> = turns
        .iter()
        .map(|t| {
            vec![
                t.seq.to_string(),
                t.turn_id.clone(),
                phase(t.phase).to_owned(),
                t.boundary
                    .map_or_else(|| "-".to_owned(), |b| format!("#{}", b.entry_id)),
                t.provider_turn_id.clone().unwrap_or_else(|| "-".to_owned()),
                time(t.started_at),
            ]
        })
        .collect();
    grid(
        &[
            "SEQ",
            "TURN",
            "PHASE",
            "BOUNDARY",
            "PROVIDER TURN",
            "STARTED",
        ],
        &rows,
        &[0],
    )
}

/// Columns padded to their widest cell; those in `numeric` right-aligned.
pub(crate) fn grid(header: &[&str], rows: &[Vec<String>], numeric: &[usize]) -> String {
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for (i, row) in std::iter::once(&header).chain(rows).enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| {
                if numeric.contains(&i) {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        let line = cells.join("  ");
        let line = line.trim_end();
        if i == 0 {
            out.push_str(&bold(line));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "tests/render.rs"]
mod tests;
