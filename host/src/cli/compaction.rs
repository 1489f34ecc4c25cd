//! Compaction subcommands: `compact`, `canonical`, `summaries`, `repairs`, `repair`,
//! `receipt`, `preimage`, `compact-result`.

use std::time::Duration;

use clap::Args;
use spool::AppendRequest;
use spool::compaction::{
    CompactRequest, CompactionConfig, CompactionResult, PersistRequest, Summary,
};
use spool_host::{CommandSummarizer, CompactWithError, Error, Spool, Transcript};

use crate::cli::lifecycle::{KeyArgs, plural};
use crate::cli::parse::parse_duration_ms;
use crate::cli::{pages, print_entries, print_json, render};

/// `spool compact`.
#[derive(Debug, Args)]
pub(crate) struct CompactArgs {
    /// The session key.
    pub(crate) key: String,
    /// The model's context window in tokens: compaction runs when
    /// `tokens × safety margin > N`, and keeps about half of it.
    #[arg(long, value_name = "N")]
    pub(crate) window: u64,
    /// The trigger's safety margin.
    #[arg(long, value_name = "F", default_value_t = 1.2)]
    pub(crate) safety_margin: f64,
    /// Refuse (write nothing) when the summary misses a critical obligation, instead of
    /// back-filling it.
    #[arg(long)]
    pub(crate) blocking: bool,
    /// Always keep the newest N entries.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) protect: u32,
    /// The compaction's id (default `cmp-<session id>-<index>`).
    #[arg(long, value_name = "ID")]
    pub(crate) compaction_id: Option<String>,
    /// Why the compaction runs (stored with its summary), e.g. `context_overflow`.
    #[arg(long, value_name = "R")]
    pub(crate) trigger_reason: Option<String>,
    /// The memory-flush receipt: `unknown`, `safe`, `unsafe`, `degraded_forensic`,
    /// `noop_no_memory`, `archive_only` (`unsafe` queues the compaction for repair).
    #[arg(long, value_name = "S")]
    pub(crate) flush_receipt: Option<String>,
    /// Summarize with this shell command instead of the built-in summarizer: it runs as
    /// `sh -c CMD` with the text to summarize on stdin and the path of a file holding
    /// the obligations (a JSON array) in `$SPOOL_OBLIGATIONS_FILE`; its stdout is the
    /// summary. A failure or a timeout writes nothing.
    #[arg(long, value_name = "CMD")]
    pub(crate) summarizer_cmd: Option<String>,
    /// How long the summarizer command may run before it is killed: a number with its
    /// unit, `d`, `h`, `m`, `s` or `ms` (e.g. `90s`).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration_ms, requires = "summarizer_cmd")]
    pub(crate) summarizer_timeout: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A session key, a compaction id and the output format.
#[derive(Debug, Args)]
pub(crate) struct CompactionIdArgs {
    /// The session key.
    pub(crate) key: String,
    /// The compaction id.
    pub(crate) compaction_id: String,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool repair` and `spool receipt`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The session key.
    pub(crate) key: String,
    /// The compaction id.
    pub(crate) compaction_id: String,
    /// The new status.
    #[arg(long, value_name = "S")]
    pub(crate) status: String,
    /// Print the updated summary as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool repairs`.
#[derive(Debug, Args)]
pub(crate) struct RepairsArgs {
    /// Only compactions of this agent id.
    #[arg(long, value_name = "A")]
    pub(crate) agent: Option<String>,
    /// Print the queue as a JSON array of summaries.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool compact-result`.
#[derive(Debug, Args)]
pub(crate) struct PersistArgs {
    /// The session key.
    pub(crate) key: String,
    /// The summary the agent produced (empty: nothing is touched).
    #[arg(long, value_name = "TEXT")]
    pub(crate) summary: String,
    /// The agent's version of the tail, as a JSON array of append requests
    /// (`[{"role":"assistant","content":"…"}]`); they replace as many newest entries.
    #[arg(long, value_name = "JSON", value_parser = parse_kept)]
    pub(crate) kept_json: Kept,
    /// The compaction's id.
    #[arg(long, value_name = "ID")]
    pub(crate) compaction_id: Option<String>,
    /// Why it ran.
    #[arg(long, value_name = "R")]
    pub(crate) trigger_reason: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The entries of `--kept-json` (one argument holding the whole array).
#[derive(Debug, Clone)]
pub(crate) struct Kept(Vec<AppendRequest>);

/// `--kept-json`: a JSON array of append requests.
fn parse_kept(text: &str) -> Result<Kept, String> {
    serde_json::from_str(text)
        .map(Kept)
        .map_err(|e| format!("not a JSON array of append requests: {e}"))
}

/// A failure of the summarizer command (the CLI's own reason code).
fn summarizer_failed(message: String) -> Error {
    Error::Spool {
        code: "summarizer".into(),
        message,
    }
}

/// `spool compact KEY --window N …`.
pub(crate) fn compact(spool: &mut Spool, args: &CompactArgs) -> Result<(), Error> {
    let request = CompactRequest {
        context_window_tokens: args.window,
        config: CompactionConfig {
            safety_margin: args.safety_margin,
            coverage_blocking: args.blocking,
            protected_recent: args.protect,
        },
        compaction_id: args.compaction_id.clone(),
        trigger_reason: args.trigger_reason.clone(),
        flush_receipt_status: args.flush_receipt.clone(),
    };
    let bar = crate::cli::progress::follow(spool);
    let result = match &args.summarizer_cmd {
        None => spool.compact(&args.key, request),
        Some(cmd) => spool
            .compact_with(&args.key, request, |prepared| {
                CommandSummarizer::new(cmd)
                    .with_timeout(Duration::from_millis(args.summarizer_timeout))
                    .summarize(&args.key, prepared)
            })
            .map_err(|e| match e {
                CompactWithError::Summarizer(message) => summarizer_failed(message),
                CompactWithError::Spool(e) => e,
            }),
    };
    bar.finish_and_clear();
    let result = result?;
    if args.json {
        return print_json(&result);
    }
    out!("{}", outcome(&args.key, args, &result));
    Ok(())
}

/// One line of at most 120 characters (the JSON output has the full text).
fn clip(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None if line.len() < text.len() => format!("{line}…"),
        None => line.to_owned(),
    }
}

/// Why a compaction was skipped, in words.
fn skip_explanation(reason: &str, args: &CompactArgs, result: &CompactionResult) -> String {
    match reason {
        "below_threshold" => format!(
            "below the trigger: {} tokens × {} ≤ window {}",
            result.tokens_before, args.safety_margin, args.window
        ),
        "nothing_to_compact" => {
            "every entry stays (protected, or the newest round fills half the window)".into()
        }
        "stale_preimage" => {
            "the transcript changed while the summary was being written; run again".into()
        }
        "coverage_blocked" => {
            "the summary misses critical obligations and --blocking refuses it".into()
        }
        "empty_summary" => "the summary was empty".into(),
        "protected_tail_exhausts_compaction_window" => format!(
            "the live tail (a pending tool call, or a failing tool result, and what follows) alone fills the window {}",
            args.window
        ),
        "context_not_reduced" => {
            "the summary with the kept entries would take as many tokens as the transcript, or more"
                .into()
        }
        other => other.to_owned(),
    }
}

/// The human-readable report of `compact`.
fn outcome(key: &str, args: &CompactArgs, r: &CompactionResult) -> String {
    let mut out = String::new();
    match &r.skip_reason {
        Some(reason) => {
            out.push_str(&format!(
                "skipped {key}: {reason} ({}); nothing was written\n",
                skip_explanation(reason, args, r)
            ));
        }
        None => {
            out.push_str(&format!(
                "compacted {key} (compaction {})\n",
                r.compaction_id.as_deref().unwrap_or("?")
            ));
        }
    }
    out.push_str(&format!(
        "  removed   {} entr{}    kept {}\n",
        r.removed_count,
        if r.removed_count == 1 { "y" } else { "ies" },
        r.kept_entries.len()
    ));
    out.push_str(&format!(
        "  tokens    {} → {}\n",
        r.tokens_before, r.tokens_after
    ));
    out.push_str(&format!("  coverage  {}\n", r.coverage_status));
    if !r.missing_obligations.is_empty() {
        let head = match r.coverage_status.as_str() {
            "pass_with_backfill" => "missing from the summary, back-filled into it",
            "partial_backfill" => "missing from the summary (back-filled unless dropped below)",
            "fail_blocked" => "missing from the summary (blocking)",
            _ => "missing from the summary",
        };
        out.push_str(&format!("  {head}:\n"));
        for missing in &r.missing_obligations {
            out.push_str(&format!("    - {}\n", clip(missing)));
        }
    }
    let carried = r
        .missing_obligations
        .len()
        .saturating_sub(r.dropped_obligations.len());
    if matches!(
        r.coverage_status.as_str(),
        "pass_with_backfill" | "partial_backfill"
    ) {
        out.push_str(&format!(
            "  back-filled {carried} obligation{} (critical_carry_forward)\n",
            plural(carried as u64)
        ));
    }
    if !r.dropped_obligations.is_empty() {
        out.push_str(&format!(
            "  dropped {} obligation{} that did not fit in the window (still in the archive):\n",
            r.dropped_obligations.len(),
            plural(r.dropped_obligations.len() as u64)
        ));
        for dropped in &r.dropped_obligations {
            out.push_str(&format!("    - {}\n", clip(dropped)));
        }
    }
    if r.skip_reason.is_none() {
        out.push_str(&format!("  summary ({}):\n", r.summary_source));
        for line in r.summary.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

/// `spool canonical KEY`: archived and active entries, as appended.
/// Streams, page by page (a session of any size in bounded memory): the text form
/// reads the pages twice, to count before it lists.
pub(crate) fn canonical(spool: &mut Spool, args: &KeyArgs) -> Result<(), Error> {
    if args.json {
        print_entries(pages(spool, &args.key, Transcript::Canonical)?, 0)?;
        outln!();
        return Ok(());
    }
    let mut count = 0u64;
    for page in spool.pages(&args.key, Transcript::Canonical) {
        count += page?.len() as u64;
    }
    let active = spool
        .get_session(&args.key)?
        .map_or(0, |s| s.entry_count)
        .min(count);
    outln!(
        "canonical transcript of {}: {count} entr{} ({} archived by compactions, {active} active)",
        args.key,
        if count == 1 { "y" } else { "ies" },
        count - active
    );
    for page in spool.pages(&args.key, Transcript::Canonical) {
        for entry in page? {
            outln!();
            out!("{}", render::entry(&entry));
        }
    }
    Ok(())
}

/// One stored summary, as `summaries` and `repairs` show it.
fn summary(s: &Summary, with_text: bool) -> String {
    let mut out = format!(
        "{} · #{} of {} · {} · {} · {}\n",
        s.compaction_id,
        s.compaction_index,
        s.session_key,
        render::time(s.created_at),
        s.summary_source,
        s.summary_format
    );
    out.push_str(&format!(
        "  removed {} · kept {} · tokens {} → {} · covers through #{}\n",
        s.removed_count,
        s.kept_count,
        s.tokens_before.map_or("?".into(), |t| t.to_string()),
        s.tokens_after.map_or("?".into(), |t| t.to_string()),
        s.covered_through_id
    ));
    out.push_str(&format!("  coverage {}", s.coverage_status));
    let missing = s.missing_obligations.as_ref().map_or(0, Vec::len);
    let dropped = s.dropped_obligations.as_ref().map_or(0, Vec::len);
    if missing > 0 {
        out.push_str(&format!(
            " ({} back-filled",
            missing.saturating_sub(dropped)
        ));
        if dropped > 0 {
            out.push_str(&format!(", {dropped} dropped"));
        }
        out.push(')');
    }
    out.push_str(&format!(" · flush receipt {}", s.flush_receipt_status));
    if let Some(repair) = &s.repair_status {
        out.push_str(&format!(" · repair {repair}"));
    }
    if let Some(reason) = &s.trigger_reason {
        out.push_str(&format!(" · trigger {reason}"));
    }
    out.push('\n');
    if with_text {
        for line in s.summary_text.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

/// `spool summaries KEY`.
pub(crate) fn summaries(spool: &mut Spool, args: &KeyArgs) -> Result<(), Error> {
    let list = spool.list_summaries(&args.key)?;
    if args.json {
        return print_json(&list);
    }
    if list.is_empty() {
        outln!("no compactions of {}", args.key);
    }
    for (i, s) in list.iter().enumerate() {
        if i > 0 {
            outln!();
        }
        out!("{}", summary(s, true));
    }
    Ok(())
}

/// `spool repairs`: the degraded compactions waiting for repair.
pub(crate) fn repairs(spool: &mut Spool, args: &RepairsArgs) -> Result<(), Error> {
    let list = spool.list_degraded_compactions(args.agent.clone())?;
    if args.json {
        return print_json(&list);
    }
    if list.is_empty() {
        outln!("no degraded compactions waiting for repair");
        return Ok(());
    }
    outln!(
        "{} degraded compaction{} waiting for repair:",
        list.len(),
        plural(list.len() as u64)
    );
    for s in &list {
        out!("{}", summary(s, false));
    }
    Ok(())
}

/// `spool repair KEY COMPACTION_ID --status S`.
pub(crate) fn repair(spool: &mut Spool, args: &StatusArgs) -> Result<(), Error> {
    let updated = spool.set_repair_status(&args.key, &args.compaction_id, &args.status)?;
    if args.json {
        return print_json(&updated);
    }
    outln!(
        "compaction {} of {}: repair status {} (out of the repair queue)",
        updated.compaction_id,
        args.key,
        args.status
    );
    Ok(())
}

/// `spool receipt KEY COMPACTION_ID --status S`.
pub(crate) fn receipt(spool: &mut Spool, args: &StatusArgs) -> Result<(), Error> {
    let updated = spool.set_flush_receipt(&args.key, &args.compaction_id, &args.status)?;
    if args.json {
        return print_json(&updated);
    }
    let queue = if updated.degraded() {
        "still waiting for repair"
    } else {
        "not in the repair queue"
    };
    outln!(
        "compaction {} of {}: flush receipt {} ({queue})",
        updated.compaction_id,
        args.key,
        updated.flush_receipt_status
    );
    Ok(())
}

/// `spool preimage KEY COMPACTION_ID`: what a compaction archived.
pub(crate) fn preimage(spool: &mut Spool, args: &CompactionIdArgs) -> Result<(), Error> {
    let entries = spool.compaction_preimage(&args.key, &args.compaction_id)?;
    if args.json {
        return print_json(&entries);
    }
    outln!(
        "compaction {} of {} archived {} entr{}",
        args.compaction_id,
        args.key,
        entries.len(),
        if entries.len() == 1 { "y" } else { "ies" }
    );
    for entry in &entries {
        outln!();
        out!("{}", render::entry(entry));
    }
    Ok(())
}

/// `spool compact-result KEY --summary TEXT --kept-json JSON`.
pub(crate) fn persist(spool: &mut Spool, args: &PersistArgs) -> Result<(), Error> {
    let persist = PersistRequest {
        summary_text: args.summary.clone(),
        kept_entries: args.kept_json.0.clone(),
        compaction_id: args.compaction_id.clone(),
        trigger_reason: args.trigger_reason.clone(),
    };
    let result = spool.persist_compaction_result(&args.key, persist)?;
    if args.json {
        return print_json(&result);
    }
    match &result.skip_reason {
        Some(reason) => outln!("skipped {}: {reason}; nothing was written", args.key),
        None => outln!(
            "stored the external compaction {} of {}: archived {}, kept {}, tokens {} → {}",
            result.compaction_id.as_deref().unwrap_or("?"),
            args.key,
            result.removed_count,
            result.kept_entries.len(),
            result.tokens_before,
            result.tokens_after
        ),
    }
    Ok(())
}
