//! `spool search`: full-text search of the workspace's transcripts.

use clap::Args;
use spool::validate::{escape_invisible, quote};
use spool::{SearchHit, SearchPage};
use spool_host::{Error, Spool};

use crate::cli::parse::{Since, parse_since};
use crate::cli::{RoleArg, print_json, render};

/// `spool search`.
#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    /// The query: words (all must match), `"a phrase"`, `pref*`, and filters such as
    /// `role:user`, `tool:bash`, `has:error`, `session:KEY`, `agent:A`, `since:MS`,
    /// `until:MS` (quote it for the shell).
    #[arg(value_name = "QUERY")]
    pub(crate) query: String,
    /// Only the session under this key (`agent:main:*`: every key with that prefix).
    #[arg(long, value_name = "K")]
    pub(crate) session: Option<String>,
    /// Only the sessions of this agent id.
    #[arg(long, value_name = "A")]
    pub(crate) agent: Option<String>,
    /// Only entries of this role.
    #[arg(long, value_enum, value_name = "R")]
    pub(crate) role: Option<RoleArg>,
    /// Only entries created at or after T: ms since the Unix epoch (`1700000000000`), a
    /// UTC day (`2026-12-01`), or a duration ago (`90s`, `15m`, `2h`, `7d`).
    #[arg(long, value_name = "T", value_parser = parse_since)]
    pub(crate) since: Option<Since>,
    /// Hits per page (1 to 100).
    #[arg(long, default_value_t = spool::ops::DEFAULT_SEARCH_LIMIT, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) limit: u32,
    /// Continue after a previous page (its `next_cursor`), with the same query and flags.
    #[arg(long, value_name = "C")]
    pub(crate) cursor: Option<String>,
    /// Print the page as JSON (`{"hits": […], "next_cursor": …}`).
    #[arg(long)]
    pub(crate) json: bool,
}

/// A flag's value as a query filter: one item, so it holds no space and no quote.
fn filter(flag: &str, name: &str, value: &str) -> Result<String, Error> {
    if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c == '"') {
        return Err(Error::spool(
            spool::ErrorCode::InvalidArgument,
            format!(
                "--{flag} {}: a search filter is one word (no spaces or quotes)",
                quote(value)
            ),
        ));
    }
    Ok(format!("{name}:{value}"))
}

/// The query the core runs: QUERY, then one filter per flag given.
pub(crate) fn query(args: &SearchArgs, now_ms: u64) -> Result<String, Error> {
    let mut items = vec![args.query.clone()];
    if let Some(key) = &args.session {
        items.push(filter("session", "session", key)?);
    }
    if let Some(agent) = &args.agent {
        items.push(filter("agent", "agent", agent)?);
    }
    if let Some(role) = args.role {
        items.push(format!("role:{}", spool::Role::from(role).as_str()));
    }
    if let Some(since) = args.since {
        items.push(format!("since:{}", since.at(now_ms)));
    }
    Ok(items.join(" "))
}

/// `spool search`.
pub(crate) fn run(spool: &mut Spool, args: &SearchArgs, workspace: &str) -> Result<(), Error> {
    let now_ms = spool_host::system_clock();
    let page = spool.search(query(args, now_ms)?, args.limit, args.cursor.clone())?;
    if args.json {
        return print_json(&page);
    }
    // A cursor belongs to its query: a `--since` relative to now is given again as the
    // time it meant, so the next page runs the same query.
    let since = match args.since {
        Some(Since::Ago(ms)) => format!("--since {} ", now_ms.saturating_sub(ms)),
        _ => String::new(),
    };
    print(&page, workspace, &since, render::colour());
    Ok(())
}

fn print(page: &SearchPage, workspace: &str, since: &str, bold: bool) {
    if page.hits.is_empty() && page.next_cursor.is_some() {
        // Every candidate this page checked failed a phrase: later ones may not.
        outln!("no hits on this page");
    } else if page.hits.is_empty() {
        outln!("no hits in workspace `{workspace}`");
    } else {
        out!("{}", table(&page.hits, bold));
    }
    if let Some(next) = &page.next_cursor {
        outln!("(more: the same search with {since}--cursor {next})");
    }
    if page.unindexed > 0 {
        outln!(
            "(not searched: up to {} entries of history written before the search index; `spool index` indexes them)",
            page.unindexed
        );
    }
}

/// `spool index`.
#[derive(Debug, Args)]
pub(crate) struct IndexArgs {
    /// Print the totals as JSON (`{"indexed_entries", "sessions", "calls"}`) instead of
    /// progress lines.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `spool index` did in all.
#[derive(Debug, Default, serde::Serialize)]
struct IndexTotals {
    indexed_entries: u64,
    sessions: u64,
    calls: u64,
}

/// `spool index`: calls the backfill until every session is checked, a line per run.
pub(crate) fn index(spool: &mut Spool, args: &IndexArgs, workspace: &str) -> Result<(), Error> {
    let mut totals = IndexTotals::default();
    let mut cursor: Option<String> = None;
    let mut last_session: Option<String> = None;
    loop {
        let progress = spool.index_backfill(cursor.clone())?;
        totals.calls += 1;
        totals.indexed_entries += u64::from(progress.indexed_entries);
        if let Some(key) = &progress.session_key {
            if last_session.as_ref() != Some(key) {
                totals.sessions += 1;
                last_session = Some(key.clone());
            }
            if !args.json {
                outln!(
                    "{}: indexed {} entries ({} to go)",
                    escape_invisible(key),
                    progress.indexed_entries,
                    progress.pending_entries
                );
            }
        }
        cursor = progress.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    if args.json {
        return print_json(&totals);
    }
    if totals.indexed_entries == 0 {
        outln!("every session of workspace `{workspace}` is indexed: nothing to do");
    } else {
        outln!(
            "indexed {} entries of {} sessions: every session of workspace `{workspace}` is indexed",
            totals.indexed_entries,
            totals.sessions
        );
    }
    Ok(())
}

/// The hits, one row each: session key, entry id, role, time and the snippet, its
/// matches in bold when `bold`.
pub(crate) fn table(hits: &[SearchHit], bold: bool) -> String {
    let rows: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            vec![
                escape_invisible(&h.session_key).into_owned(),
                h.entry_id.to_string(),
                h.role.as_str().to_owned(),
                render::time(h.created_at),
                snippet(&h.snippet, bold),
            ]
        })
        .collect();
    render::grid(
        &["SESSION", "ENTRY", "ROLE", "TIME", "SNIPPET"],
        &rows,
        &[1],
    )
}

/// A snippet on one line (line breaks and other controls as spaces, invisible characters
/// escaped), its highlighted ranges in bold when `bold`.
pub(crate) fn snippet(snippet: &spool::Snippet, bold: bool) -> String {
    let text = &snippet.text;
    let piece = |from: usize, to: usize| {
        let raw = text.get(from..to).unwrap_or_default();
        let flat: String = raw
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        escape_invisible(&flat).into_owned()
    };
    let mut out = String::new();
    let mut at = 0;
    for &(start, end) in &snippet.highlights {
        let (start, end) = (start as usize, end as usize);
        if start < at || end > text.len() || start >= end {
            continue; // not from Spool: shown plain
        }
        out.push_str(&piece(at, start));
        let hit = piece(start, end);
        if bold {
            out.push_str(&format!("\x1b[1m{hit}\x1b[0m"));
        } else {
            out.push_str(&hit);
        }
        at = end;
    }
    out.push_str(&piece(at, text.len()));
    out.trim().to_owned()
}

#[cfg(test)]
#[path = "tests/search.rs"]
mod tests;
