//! `spool export KEY`: the canonical transcript of a session as JSON Lines, or with
//! `--archive` its reset archives.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use serde_json::json;
use spool_host::{Error, Spool};

use crate::cli::not_found;

/// `spool export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The session key.
    key: String,
    /// Write JSON Lines: one entry per line, then one `{"summary": …}` line per
    /// compaction summary (the default, and today the only format).
    #[arg(long)]
    json_lines: bool,
    /// Export the reset archives of KEY from the archive directory instead (one archive
    /// per line, oldest first, newest last).
    #[arg(long)]
    archive: bool,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `spool export KEY [--archive] [--out FILE]`.
pub(crate) fn run(spool: &mut Spool, args: &ExportArgs) -> Result<(), Error> {
    let lines = if args.archive {
        archive_lines(spool, &args.key)?
    } else {
        transcript_lines(spool, &args.key)?
    };
    let failed = |source| Error::Io {
        context: match &args.out {
            Some(path) => format!("cannot write {}", path.display()),
            None => "cannot write to stdout".to_owned(),
        },
        source,
    };
    match &args.out {
        Some(path) => {
            let mut out = BufWriter::new(File::create(path).map_err(failed)?);
            write_lines(&mut out, &lines).map_err(failed)?;
            out.into_inner()
                .map_err(|e| failed(e.into_error()))?
                .sync_all()
                .map_err(failed)
        }
        None => write_lines(&mut std::io::stdout().lock(), &lines).map_err(failed),
    }
}

fn write_lines(out: &mut impl Write, lines: &[String]) -> std::io::Result<()> {
    for line in lines {
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

fn line(value: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::Spool {
        code: "internal".into(),
        message: format!("cannot write JSON: {e}"),
    })
}

/// The canonical transcript (entries compactions archived, then the active ones, in the
/// order they were appended), then the summaries.
fn transcript_lines(spool: &mut Spool, key: &str) -> Result<Vec<String>, Error> {
    if spool.get_session(key)?.is_none() {
        return Err(not_found(format!("session not found: {key}")));
    }
    let entries = spool.canonical_transcript(key)?;
    let summaries = spool.list_summaries(key)?;
    let mut lines = Vec::with_capacity(entries.len() + summaries.len());
    for entry in &entries {
        lines.push(line(entry)?);
    }
    for summary in &summaries {
        lines.push(line(&json!({ "summary": summary }))?);
    }
    Ok(lines)
}

/// The reset archives of `key` in this workspace, oldest first: those of committed
/// resets only, each checked against its record.
fn archive_lines(spool: &mut Spool, key: &str) -> Result<Vec<String>, Error> {
    let archives = spool.reset_archives(key)?;
    if archives.is_empty() && spool.get_session(key)?.is_none() {
        return Err(not_found(format!(
            "no session and no reset archive under {key}"
        )));
    }
    archives.iter().map(line).collect()
}
