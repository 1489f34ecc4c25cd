//! Human-readable output of the `spool` CLI.

use spool::{Entry, Session, SessionStatus};

/// `ms` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's `civil_from_days` for days since 1970-01-01 (non-negative).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

pub(crate) fn status(status: SessionStatus) -> &'static str {
    match status {
        SessionStatus::Running => "running",
        SessionStatus::Done => "done",
        SessionStatus::Failed => "failed",
    }
}

/// The session header of `show` and `create`.
pub(crate) fn session(s: &Session) -> String {
    let mut out = format!("session {} ({})\n", s.key, status(s.status));
    out.push_str(&format!("  id       {}\n", s.session_id));
    if let Some(agent) = &s.agent_id {
        out.push_str(&format!("  agent    {agent}\n"));
    }
    out.push_str(&format!("  created  {}\n", time(s.created_at)));
    out.push_str(&format!("  updated  {}\n", time(s.updated_at)));
    out.push_str(&format!(
        "  entries  {}    tokens {}    epoch {}\n",
        s.entry_count, s.total_tokens, s.epoch
    ));
    out
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
    let mut out = head + "\n";
    if let Some(call) = &e.tool_call_id {
        out.push_str(&format!("  ↳ result of tool call {call}\n"));
    }
    for line in e.content.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(calls) = &e.tool_calls {
        out.push_str(&format!("  tool calls: {calls}\n"));
    }
    out
}

/// The `list` table.
pub(crate) fn table(sessions: &[Session]) -> String {
    let rows: Vec<[String; 5]> = sessions
        .iter()
        .map(|s| {
            [
                s.key.clone(),
                status(s.status).to_owned(),
                s.entry_count.to_string(),
                s.total_tokens.to_string(),
                time(s.updated_at),
            ]
        })
        .collect();
    let header = ["KEY", "STATUS", "ENTRIES", "TOKENS", "UPDATED"].map(str::to_owned);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                // Numbers right-aligned, text left-aligned.
                if matches!(i, 2 | 3) {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_time_formats_known_instants() {
        assert_eq!(time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(time(1_700_000_000_123), "2023-11-14 22:13:20 UTC");
    }
}
