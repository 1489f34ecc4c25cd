//! `spool import claude-code|codex|pi|gemini|opencode|spool PATH…`: import real agent
//! transcripts, or Spool's own exports (each under its exported key, see
//! [`spool::import::parse_spool`]).
//!
//! The host only finds, reads and slices files and prints what happened; parsing (which
//! lines become which entries, branches, cut-off tails) and writing (idempotence by
//! message id, run rows, thread bindings) are the core's, through the component's
//! `parse-import` and `import-session`.
//!
//! - A PATH is a file, or a directory searched recursively for `*.jsonl` (Gemini CLI:
//!   `*.json` and `*.jsonl` under a `chats` directory or named `session-*`; symlinked
//!   directories are not followed); files are imported in PATH order, each directory's
//!   files in path order and then its subdirectories, sub-agent logs (`agent-*.jsonl`,
//!   `subagents/`) last, each file once. For opencode a PATH is its database, its
//!   JSON files' `storage` directory, its data directory holding either, or a document
//!   `opencode export` printed ([`super::import_opencode`]); each session is reported
//!   as a file (`<database>#<session id>` for the database).
//! - Which key each parsed session goes under and how it joins another is the core's
//!   plan ([`spool::import::plan`]), the same in the browser.
//! - A Spool export is written under its exported key (one without a header, written
//!   before exports had one, under `import:spool:<its identity>`).
//! - Each parsed session is written under `import:<agent type>:<provider session id>`
//!   (a provider id that is too long or holds characters other than ASCII letters,
//!   digits, `-`, `_`, `.` and `@` is reduced to those, cut, and suffixed with a hash
//!   of the original; the report says so), with a fresh session id, in slices of at
//!   most [`MAX_IMPORT_ENTRIES`](spool::import::MAX_IMPORT_ENTRIES) entries and about 8 MiB ([`spool::import::slices`]), in
//!   order.
//! - A branch session (a rewound Claude Code turn: `fork_of` set) is attached to its
//!   parent when it is first imported and the parent is in the database: it is created
//!   with the core's `branch`, sharing the parent's canonical transcript up to and
//!   including the message it forks after, and then its own entries are imported. When
//!   that is not possible (the parent failed or lacks that message) it is imported
//!   standalone; either way the core keeps `fork_of` in its `import` metadata.
//! - A sub-agent's session (`spawned_by` set) is created as a child of the session that
//!   spawned it (its lineage names it) when that session is in the database, else
//!   standalone; the core keeps `spawned_by` in its `import` metadata.
//! - Tokens and cost: each session counts its entries' tokens at the compaction's
//!   estimate and prices each response's usage (`--prices FILE`, or the built-in
//!   table): the core's `import-session` does both (see [`spool::usage`]).
//! - Exit status: 0 when every file was read and imported (skipped line types, invalid
//!   lines and a cut-off last line are warnings), 1 when a file could not be read or
//!   parsed or a write failed (the report says which; the other files are still
//!   imported).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use serde::Serialize;
use spool::import::{
    AdjustedEntry, ImportFormat, ImportRequest, ImportedFork, ImportedLog, ImportedSession,
    ImportedSpawn, PlannedLink, PlannedSession, SpawnCalls,
};
use spool::usage::PriceTable;
use spool_host::{BranchOptions, Durability, Error, Spool};

use crate::cli::lifecycle::plural;
use crate::cli::print_json;

/// The largest log file read whole (a Spool export, a pi, Gemini CLI or opencode
/// session): its whole text crosses into the component, which holds it, the parsed
/// lines and the resulting JSON at once (about five times the file). Codex rollouts and
/// Claude Code logs are read a slice at a time and have no limit.
pub(crate) const MAX_FILE_BYTES: u64 = 128 * 1024 * 1024;

/// The bytes of whole lines one slice of a streamed log holds (a longer line is read
/// whole, alone): the component holds a slice, its parsed lines and their JSON at once.
const SLICE_BYTES: usize = 4 * 1024 * 1024;

/// The component's memory limit while importing (the default, 256 MiB, parses logs of
/// up to about 48 MiB).
const IMPORT_MEMORY_LIMIT: usize = 1024 * 1024 * 1024;

/// `spool import`.
#[derive(Debug, Subcommand)]
pub(crate) enum ImportCommand {
    /// Import Claude Code session logs (`~/.claude/projects/<project>/*.jsonl`).
    ClaudeCode(ImportArgs),
    /// Import Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex(ImportArgs),
    /// Import pi coding agent sessions (`~/.pi/agent/sessions/--<cwd>--/*.jsonl`); a
    /// return to an earlier point of a session's tree is a branch session.
    Pi(ImportArgs),
    /// Import Gemini CLI sessions (`~/.gemini/tmp/<project hash>/chats/session-*.json`
    /// or `.jsonl`); a rewind is a branch session.
    Gemini(ImportArgs),
    /// Import opencode sessions: its database (`~/.local/share/opencode/opencode.db`,
    /// opencode 1.2 and later, read-only), its older JSON files
    /// (`~/.local/share/opencode/storage/`), its data directory holding either, or
    /// documents `opencode export SESSION` printed. A sub-agent's session is a child of
    /// the session that spawned it.
    Opencode(ImportArgs),
    /// Import Spool's own exports (`spool export KEY --out FILE`), each under its
    /// exported key.
    Spool(ImportArgs),
}

/// The files to import and the output format.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// A log file, or a directory searched recursively for logs (`*.jsonl`; Gemini CLI
    /// `session-*.json` too; for opencode, its database or data directory).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Estimate the cost of each response's usage with this price table (JSON of the
    /// shape of the repository's `data/prices.json`: US dollars per million tokens per
    /// model) instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
}

/// A failure, as reported.
#[derive(Debug, Serialize)]
struct Failure {
    code: String,
    message: String,
}

impl From<&Error> for Failure {
    fn from(e: &Error) -> Self {
        Failure {
            code: e.code().to_owned(),
            message: e.message(),
        }
    }
}

/// What happened to one session of a file.
#[derive(Debug, Default, Serialize)]
struct SessionReport {
    key: String,
    provider_session_id: String,
    /// Why the key is not `import:<agent>:<provider id>` verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    key_note: Option<String>,
    session_id: Option<String>,
    created: bool,
    entries: u64,
    imported: u64,
    already_present: u64,
    /// Entries already held whose usage the log now reports with its final figures.
    #[serde(skip_serializing_if = "is_zero")]
    usage_updated: u64,
    /// Entries written cut to fit the limits, or left out, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    adjusted: Vec<AdjustedEntry>,
    /// The provider id as recorded, when it had to be sanitized (no run row or thread
    /// binding then).
    #[serde(skip_serializing_if = "Option::is_none")]
    sanitized_provider_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fork_of: Option<ImportedFork>,
    /// For a sub-agent's session: the session that spawned it.
    #[serde(skip_serializing_if = "Option::is_none")]
    spawned_by: Option<ImportedSpawn>,
    /// For a branch or sub-agent session: `branch` (created sharing its parent's
    /// prefix), `child` (created as a child of the sub-agent's parent), `existing` (it
    /// was already in the database) or `standalone` (see `link_note`).
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    link_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Failure>,
}

/// A cut-off last line.
#[derive(Debug, Serialize)]
struct Truncated {
    line: u64,
    recovered_entries: u64,
}

/// What happened to one file.
#[derive(Debug, Default, Serialize)]
struct FileReport {
    path: PathBuf,
    lines: u64,
    sessions: Vec<SessionReport>,
    skipped: BTreeMap<String, u64>,
    invalid_lines: Vec<u64>,
    truncated_tail: Option<Truncated>,
    /// Attachments described on the imported entries (Spool keeps no bytes).
    attachments: u64,
    /// Bytes of attachments the log inlined that were not stored.
    attachment_bytes_not_stored: u64,
    /// Bytes that were not UTF-8 were replaced (U+FFFD) before parsing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    lossy_utf8: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Failure>,
}

impl FileReport {
    fn failed(&self) -> bool {
        self.error.is_some() || self.sessions.iter().any(|s| s.error.is_some())
    }
}

/// Totals over every file.
#[derive(Debug, Default, Serialize)]
struct Summary {
    files: u64,
    failed_files: u64,
    sessions_created: u64,
    sessions_updated: u64,
    sessions_unchanged: u64,
    entries_imported: u64,
    already_present: u64,
    /// Entries written cut to fit the limits.
    entries_truncated: u64,
    /// Entries left out because they could not be written even cut.
    entries_skipped: u64,
    skipped: BTreeMap<String, u64>,
    invalid_lines: u64,
    truncated_files: u64,
    /// Attachments described, and the inlined bytes of them not stored.
    attachments: u64,
    attachment_bytes_not_stored: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    format: ImportFormat,
    files: Vec<FileReport>,
    summary: Summary,
}

/// Opens the database for an import: like every other subcommand, with a memory limit
/// large enough for [`MAX_FILE_BYTES`] of log (imports write no reset archive).
pub(crate) fn open(db: &Path, workspace: &str, durability: Durability) -> Result<Spool, Error> {
    Spool::builder()
        .database(db)
        .durability(durability)
        .workspace(workspace)
        .memory_limit(IMPORT_MEMORY_LIMIT)
        .open()
}

/// `spool import FORMAT PATH…`.
pub(crate) fn run(spool: &mut Spool, command: &ImportCommand) -> Result<(), Error> {
    let (format, args) = match command {
        ImportCommand::ClaudeCode(args) => (ImportFormat::ClaudeCode, args),
        ImportCommand::Codex(args) => (ImportFormat::Codex, args),
        ImportCommand::Pi(args) => (ImportFormat::Pi, args),
        ImportCommand::Gemini(args) => (ImportFormat::Gemini, args),
        ImportCommand::Opencode(args) => (ImportFormat::Opencode, args),
        ImportCommand::Spool(args) => (ImportFormat::Spool, args),
    };
    // A bad table stops the import before any file is read.
    let prices = args
        .prices
        .as_deref()
        .map(crate::cli::usage::load_prices)
        .transpose()?;
    let prices = prices.as_ref();
    let progress = std::io::stderr().is_terminal();
    // The Task calls the logs read so far started sub-agents with, for the sub-agent
    // files read after them.
    let mut spawn_calls = SpawnCalls::default();
    let mut files = Vec::new();
    let found: Vec<(PathBuf, Result<Option<String>, Error>)> = if format == ImportFormat::Opencode {
        args.paths
            .iter()
            .flat_map(|p| crate::cli::import_opencode::find(p))
            .map(|f| (f.path, f.document.map(Some)))
            .collect()
    } else {
        find_files(format, &args.paths)
            .into_iter()
            .map(|(path, found)| (path, found.map(|()| None)))
            .collect()
    };
    for (path, found) in found {
        let report = match found {
            Ok(None) => import_file(spool, format, prices, &path, progress, &mut spawn_calls),
            Ok(Some(document)) => {
                let mut report = FileReport {
                    path: path.clone(),
                    ..FileReport::default()
                };
                import_text(
                    spool,
                    format,
                    prices,
                    &path,
                    &document,
                    progress,
                    &mut spawn_calls,
                    &mut report,
                );
                report
            }
            Err(e) => FileReport {
                path,
                error: Some(Failure::from(&e)),
                ..FileReport::default()
            },
        };
        if !args.json {
            out!("{}", render_file(&report));
        }
        files.push(report);
    }
    let summary = summarize(&files);
    let failed: Vec<String> = files
        .iter()
        .filter(|f| f.failed())
        .map(|f| f.path.display().to_string())
        .collect();
    let considered = files.len();
    if args.json {
        print_json(&Report {
            format,
            files,
            summary,
        })?;
    } else {
        out!("{}", render_summary(&summary));
    }
    if failed.is_empty() {
        return Ok(());
    }
    Err(Error::Spool {
        code: "import_failed".into(),
        message: format!(
            "{} of {considered} file{} not fully imported: {}",
            failed.len(),
            plural(considered as u64),
            failed.join(", ")
        ),
    })
}

/// The files under `paths`, in a deterministic order, each once; a path that cannot be
/// read comes with its error.
fn find_files(format: ImportFormat, paths: &[PathBuf]) -> Vec<(PathBuf, Result<(), Error>)> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk(format, path, &mut out, &mut seen),
            Ok(_) => {
                if seen.insert(path.clone()) {
                    out.push((path.clone(), Ok(())));
                }
            }
            Err(source) => out.push((path.clone(), Err(io_error(path, source)))),
        }
    }
    out
}

/// Whether a file found under a directory is a log of `format`: `*.jsonl`, and for
/// Gemini CLI `*.json` or `*.jsonl` under a `chats` directory or named `session-*`.
fn is_log(format: ImportFormat, path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str());
    if format != ImportFormat::Gemini {
        return ext == Some("jsonl");
    }
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("session-"));
    let in_chats = path.components().any(|c| c.as_os_str() == "chats");
    matches!(ext, Some("json" | "jsonl")) && (named || in_chats)
}

/// Appends the log files under `dir` ([`is_log`]), sorted by path, recursively.
fn walk(
    format: ImportFormat,
    dir: &Path,
    out: &mut Vec<(PathBuf, Result<(), Error>)>,
    seen: &mut BTreeSet<PathBuf>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            out.push((dir.to_owned(), Err(io_error(dir, source))));
            return;
        }
    };
    let mut found: Vec<(PathBuf, bool)> = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                // A symlink is followed to a file, never into a directory.
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir || (is_log(format, &path) && path.is_file()) {
                    found.push((path, is_dir));
                }
            }
            Err(source) => out.push((dir.to_owned(), Err(io_error(dir, source)))),
        }
    }
    // Files before directories, and a sub-agent's log (`agent-*.jsonl`, or under
    // `subagents/`) after the others: the session that spawned a sub-agent is imported
    // first (Claude Code keeps `<session>.jsonl` beside `<session>/subagents/`).
    found.sort_by_key(|(path, is_dir)| (is_sub_agent_log(path), *is_dir, path.clone()));
    for (path, is_dir) in found {
        if is_dir {
            walk(format, &path, out, seen);
        } else if seen.insert(path.clone()) {
            out.push((path, Ok(())));
        }
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether `path` is a Claude Code sub-agent's log or a directory of them.
fn is_sub_agent_log(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("agent-") || n == "subagents")
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        context: format!("cannot read {}", path.display()),
        source,
    }
}

/// Reads `path` (at most [`MAX_FILE_BYTES`]); bytes that are not UTF-8 (e.g. a
/// character cut by an interrupted write) are replaced. Returns the text and whether
/// anything was replaced.
pub(crate) fn read_log(path: &Path) -> Result<(String, bool), Error> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::Io {
            context: format!(
                "cannot import {}: it is larger than {} MiB, the most one file may be",
                path.display(),
                MAX_FILE_BYTES / (1024 * 1024)
            ),
            source: std::io::Error::new(std::io::ErrorKind::FileTooLarge, "file too large"),
        });
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, false)),
        Err(e) => Ok((String::from_utf8_lossy(e.as_bytes()).into_owned(), true)),
    }
}

fn import_file(
    spool: &mut Spool,
    format: ImportFormat,
    prices: Option<&PriceTable>,
    path: &Path,
    progress: bool,
    spawn_calls: &mut SpawnCalls,
) -> FileReport {
    let mut report = FileReport {
        path: path.to_owned(),
        ..FileReport::default()
    };
    if spool::import::streams(format) {
        if let Err(e) = import_streamed(
            spool,
            format,
            prices,
            path,
            progress,
            spawn_calls,
            &mut report,
        ) {
            report.error = Some(Failure::from(&e));
        }
        return report;
    }
    match read_log(path) {
        Ok((text, lossy)) => {
            report.lossy_utf8 = lossy;
            import_text(
                spool,
                format,
                prices,
                path,
                &text,
                progress,
                spawn_calls,
                &mut report,
            );
        }
        Err(e) => report.error = Some(Failure::from(&e)),
    }
    report
}

/// Parses `text`, a whole log of `format` read from `path`, and imports its sessions,
/// reporting in `report`.
#[allow(clippy::too_many_arguments)] // the import's settings, then the file's
fn import_text(
    spool: &mut Spool,
    format: ImportFormat,
    prices: Option<&PriceTable>,
    path: &Path,
    text: &str,
    progress: bool,
    spawn_calls: &mut SpawnCalls,
    report: &mut FileReport,
) {
    let mut log = match spool.parse_import(format, text) {
        Ok(log) => log,
        Err(e) => {
            report.error = Some(Failure::from(&e));
            return;
        }
    };
    if format == ImportFormat::ClaudeCode {
        spool::import::link_sub_agents(spawn_calls, &mut log);
    }
    let ImportedLog {
        sessions,
        lines,
        skipped,
        invalid_lines,
        truncated_tail,
        attachments,
        attachment_bytes_not_stored,
        ..
    } = log;
    let total: u64 = sessions.iter().map(|s| s.entries.len() as u64).sum();
    report.lines = lines;
    report.skipped = skipped;
    report.invalid_lines = invalid_lines;
    report.truncated_tail = truncated_tail.map(|line| Truncated {
        line,
        recovered_entries: total,
    });
    report.attachments = attachments;
    report.attachment_bytes_not_stored = attachment_bytes_not_stored;
    let bar = progress_bar(progress, path, total);
    for planned in spool::import::plan(format, sessions) {
        report
            .sessions
            .push(import_one(spool, format, prices, planned, &bar));
    }
    bar.finish_and_clear();
}

/// Imports a log that [`streams`](spool::import::streams) a slice of whole lines at a
/// time: each slice is parsed and its entries written before the next is read, so the
/// memory it takes is that of a slice (or of its longest line), whatever the file's
/// size. A file still being written is read to its end as it is then: a line cut short
/// there is its `truncated_tail`. A failed write stops the file (what was written
/// stays; importing it again adds only the rest).
fn import_streamed(
    spool: &mut Spool,
    format: ImportFormat,
    prices: Option<&PriceTable>,
    path: &Path,
    show: bool,
    spawn_calls: &mut SpawnCalls,
    report: &mut FileReport,
) -> Result<(), Error> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let size = file.metadata().map_err(|e| io_error(path, e))?.len();
    let mut slices = spool_host::LineSlices::new(std::io::BufReader::new(file), SLICE_BYTES);
    let bar = crate::cli::progress::bytes(show, name_of(path), size);
    let hidden = ProgressBar::hidden();
    let (mut cursor, mut entries) = (String::new(), 0u64);
    let mut slice = Vec::new();
    while let Some(last) = slices
        .next_into(&mut slice)
        .map_err(|e| io_error(path, e))?
    {
        let text = match std::str::from_utf8(&slice) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => {
                report.lossy_utf8 = true;
                String::from_utf8_lossy(&slice)
            }
        };
        let (mut log, next) = spool
            .instance()
            .parse_import_slice(format, &cursor, &text, last)?;
        if format == ImportFormat::ClaudeCode {
            spool::import::link_sub_agents(spawn_calls, &mut log);
        }
        cursor = next;
        report.lines += log.lines;
        for (kind, n) in log.skipped {
            *report.skipped.entry(kind).or_default() += n;
        }
        report.invalid_lines.extend(log.invalid_lines);
        report.attachments += log.attachments;
        report.attachment_bytes_not_stored += log.attachment_bytes_not_stored;
        let mut repeated = log.repeated;
        for planned in spool::import::plan(format, log.sessions) {
            let mut one = import_one(spool, format, prices, planned, &hidden);
            // An entry given again for its usage is not one more entry.
            let again = repeated.min(one.entries).min(one.already_present);
            (one.entries, one.already_present) = (one.entries - again, one.already_present - again);
            repeated -= again;
            entries += one.entries;
            let failed = one.error.is_some();
            merge(&mut report.sessions, one);
            if failed {
                bar.finish_and_clear();
                return Ok(());
            }
        }
        report.truncated_tail = log.truncated_tail.map(|line| Truncated {
            line,
            recovered_entries: entries,
        });
        bar.set_position(slices.read());
    }
    bar.finish_and_clear();
    Ok(())
}

/// Adds what one slice did to a session to its report (a new one when it is the first).
fn merge(reports: &mut Vec<SessionReport>, slice: SessionReport) {
    let Some(report) = reports.iter_mut().find(|r| r.key == slice.key) else {
        reports.push(slice);
        return;
    };
    report.created |= slice.created;
    report.entries += slice.entries;
    report.imported += slice.imported;
    report.already_present += slice.already_present;
    report.usage_updated += slice.usage_updated;
    report.adjusted.extend(slice.adjusted);
    if slice.session_id.is_some() {
        report.session_id = slice.session_id;
    }
    if slice.sanitized_provider_session_id.is_some() {
        report.sanitized_provider_session_id = slice.sanitized_provider_session_id;
    }
    if report.error.is_none() {
        report.error = slice.error;
    }
}

/// The file name of `path`, as the bars show it.
fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A progress bar on stderr, advancing per entry written; hidden unless stderr is a
/// terminal.
fn progress_bar(show: bool, path: &Path, total: u64) -> ProgressBar {
    crate::cli::progress::bar(show, name_of(path), total)
}

/// Writes one planned session in its slices, linking it first as the plan says.
fn import_one(
    spool: &mut Spool,
    format: ImportFormat,
    prices: Option<&PriceTable>,
    planned: PlannedSession,
    bar: &ProgressBar,
) -> SessionReport {
    let PlannedSession {
        key,
        key_note,
        link,
        link_note,
        slice_ends,
        mut session,
    } = planned;
    let entries = std::mem::take(&mut session.entries);
    let mut report = SessionReport {
        key: key.clone(),
        provider_session_id: session.provider_session_id.clone(),
        key_note,
        entries: entries.len() as u64,
        fork_of: session.fork_of.clone(),
        spawned_by: session.spawned_by.clone(),
        link_note,
        ..SessionReport::default()
    };
    if session.fork_of.is_some() && link.is_none() {
        report.link = Some("standalone");
    }
    let result = (|| -> Result<(), Error> {
        let exists = spool.get_session(&key)?.is_some();
        let mut parent = None;
        match &link {
            _ if exists => report.link = link.as_ref().map(|_| "existing"),
            Some(PlannedLink::Branch {
                parent_key,
                before_message_id,
            }) => link_branch(spool, &key, parent_key, before_message_id, &mut report)?,
            Some(PlannedLink::Child { parent_key, .. }) => {
                report.parent_key = Some(parent_key.clone());
                if spool.get_session(parent_key)?.is_some() {
                    report.link = Some("child");
                    parent = Some(parent_key.clone());
                } else {
                    report.link = Some("standalone");
                    report.link_note = Some(format!(
                        "its parent session {parent_key} is not in the database"
                    ));
                }
            }
            None => {}
        }
        // One call per slice, in order; an empty session is still created.
        let mut start = 0;
        for end in slice_ends {
            let part = ImportedSession {
                entries: entries[start..end].to_vec(),
                ..session.clone()
            };
            let outcome = spool.import_session(ImportRequest {
                key: key.clone(),
                session_id: String::new(),
                format,
                session: part,
                parent_key: parent.take(),
                prices: prices.cloned(),
            })?;
            report.created |= outcome.created;
            report.imported += outcome.imported;
            report.already_present += outcome.already_present;
            report.usage_updated += outcome.usage_updated;
            report.adjusted.extend(outcome.adjusted);
            report.sanitized_provider_session_id = outcome.sanitized_provider_session_id;
            report.session_id = Some(outcome.session.session_id);
            bar.inc((end - start) as u64);
            start = end;
        }
        Ok(())
    })();
    if let Err(e) = result {
        report.error = Some(Failure::from(&e));
    }
    report
}

/// Attaches a branch session to its parent when it is first imported: creates it with
/// the core's `branch`, sharing the parent's canonical transcript strictly before
/// `before` (all of it when `None`). Falls back to a standalone import (saying why) when
/// the branch is refused; fails only when the database cannot be read.
fn link_branch(
    spool: &mut Spool,
    key: &str,
    parent_key: &str,
    before: &Option<String>,
    report: &mut SessionReport,
) -> Result<(), Error> {
    report.parent_key = Some(parent_key.to_owned());
    let options = match before {
        Some(next) => BranchOptions::before(next.clone()),
        None => BranchOptions::fork(),
    };
    match spool.branch(parent_key, key, options) {
        Ok(branch) => {
            report.link = Some("branch");
            report.created = true;
            report.session_id = Some(branch.session.session_id);
        }
        Err(e) if matches!(e.code(), "not_found" | "invalid_argument" | "conflict") => {
            report.link = Some("standalone");
            report.link_note = Some(format!("branching refused: {}", e.message()));
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

fn summarize(files: &[FileReport]) -> Summary {
    let mut s = Summary {
        files: files.len() as u64,
        ..Summary::default()
    };
    for f in files {
        s.failed_files += u64::from(f.failed());
        s.invalid_lines += f.invalid_lines.len() as u64;
        s.truncated_files += u64::from(f.truncated_tail.is_some());
        s.attachments += f.attachments;
        s.attachment_bytes_not_stored += f.attachment_bytes_not_stored;
        for (kind, n) in &f.skipped {
            *s.skipped.entry(kind.clone()).or_insert(0) += n;
        }
        for session in f.sessions.iter().filter(|s| s.error.is_none()) {
            if session.created {
                s.sessions_created += 1;
            } else if session.imported + session.usage_updated > 0 {
                s.sessions_updated += 1;
            } else {
                s.sessions_unchanged += 1;
            }
            s.entries_imported += session.imported;
            for a in &session.adjusted {
                match a.action.as_str() {
                    "truncated" => s.entries_truncated += 1,
                    _ => s.entries_skipped += 1,
                }
            }
            s.already_present += session.already_present;
        }
    }
    s
}

fn render_file(f: &FileReport) -> String {
    let mut out = format!("{}\n", f.path.display());
    if let Some(e) = &f.error {
        out.push_str(&format!("  error[{}]: {}\n", e.code, e.message));
        return out;
    }
    if f.sessions.is_empty() {
        out.push_str("  no messages to import\n");
    }
    for s in &f.sessions {
        let state = if s.error.is_some() {
            "failed"
        } else if s.created {
            "created"
        } else if s.imported + s.usage_updated > 0 {
            "updated"
        } else {
            "unchanged"
        };
        out.push_str(&format!(
            "  {state:<9} {}: {} entr{} imported, {} already present\n",
            s.key,
            s.imported,
            if s.imported == 1 { "y" } else { "ies" },
            s.already_present
        ));
        if s.usage_updated > 0 {
            out.push_str(&format!(
                "            {} entr{} got {} final usage\n",
                s.usage_updated,
                if s.usage_updated == 1 { "y" } else { "ies" },
                if s.usage_updated == 1 { "its" } else { "their" }
            ));
        }
        if let Some(note) = &s.key_note {
            out.push_str(&format!("            warning: {note}\n"));
        }
        if let Some(id) = &s.sanitized_provider_session_id {
            out.push_str(&format!(
                "            warning: the provider session id is recorded as {id} (no run or thread binding)\n"
            ));
        }
        for a in &s.adjusted {
            out.push_str(&format!(
                "            warning: entry {} {}: {}\n",
                a.message_id, a.action, a.reason
            ));
        }
        match (s.link, &s.parent_key, &s.fork_of) {
            (Some("branch"), Some(parent), Some(fork)) => out.push_str(&format!(
                "            branch of {parent}, sharing its transcript through {}\n",
                fork.after_message_id
            )),
            (Some("standalone"), _, Some(fork)) => out.push_str(&format!(
                "            branch of {} after {}, imported standalone: {}\n",
                fork.provider_session_id,
                fork.after_message_id,
                s.link_note.as_deref().unwrap_or("")
            )),
            (Some("child"), Some(parent), _) => out.push_str(&format!(
                "            sub-agent of {parent}{}\n",
                s.spawned_by
                    .as_ref()
                    .and_then(|p| p.tool_call_id.as_deref())
                    .map_or_else(String::new, |call| format!(", spawned by tool call {call}"))
            )),
            (Some("standalone"), _, None) => out.push_str(&format!(
                "            sub-agent imported standalone: {}\n",
                s.link_note.as_deref().unwrap_or("")
            )),
            _ => {}
        }
        if let Some(e) = &s.error {
            out.push_str(&format!("            error[{}]: {}\n", e.code, e.message));
        }
    }
    if !f.skipped.is_empty() {
        out.push_str(&format!("  skipped   {}\n", render_counts(&f.skipped)));
    }
    if f.attachments > 0 {
        out.push_str(&format!(
            "  {} attachment{} described; {} bytes of them not stored\n",
            f.attachments,
            plural(f.attachments),
            f.attachment_bytes_not_stored
        ));
    }
    if !f.invalid_lines.is_empty() {
        let lines: Vec<String> = f.invalid_lines.iter().map(u64::to_string).collect();
        out.push_str(&format!(
            "  warning: {} invalid line{} skipped (line {})\n",
            lines.len(),
            plural(lines.len() as u64),
            lines.join(", ")
        ));
    }
    if let Some(t) = &f.truncated_tail {
        out.push_str(&format!(
            "  warning: the last line was cut off: recovered {} entr{} before the cut-off line {}\n",
            t.recovered_entries,
            if t.recovered_entries == 1 { "y" } else { "ies" },
            t.line
        ));
    }
    if f.lossy_utf8 {
        out.push_str("  warning: bytes that were not UTF-8 were replaced\n");
    }
    out
}

fn render_counts(counts: &BTreeMap<String, u64>) -> String {
    counts
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn render_summary(s: &Summary) -> String {
    let skipped: u64 = s.skipped.values().sum();
    let mut out = format!(
        "imported {} file{}: {} session{} created, {} updated, {} unchanged; {} entr{} imported, {} already present",
        s.files,
        plural(s.files),
        s.sessions_created,
        plural(s.sessions_created),
        s.sessions_updated,
        s.sessions_unchanged,
        s.entries_imported,
        if s.entries_imported == 1 { "y" } else { "ies" },
        s.already_present
    );
    out.push_str(&format!(
        "; {skipped} line{} skipped, {} invalid",
        plural(skipped),
        s.invalid_lines
    ));
    if s.truncated_files > 0 {
        out.push_str(&format!(", {} cut off", s.truncated_files));
    }
    if s.entries_truncated + s.entries_skipped > 0 {
        out.push_str(&format!(
            "; {} entr{} cut to fit the limits, {} left out",
            s.entries_truncated,
            if s.entries_truncated == 1 { "y" } else { "ies" },
            s.entries_skipped
        ));
    }
    if s.failed_files > 0 {
        out.push_str(&format!("; {} failed", s.failed_files));
    }
    out.push('\n');
    out
}
