//! `spool export KEY`: a session as JSON Lines (a header with the session record and
//! its lineage, the canonical transcript, the summaries: what `spool import spool FILE`
//! reads back) or as a readable Markdown transcript, or with `--archive` its reset
//! archives. The lines and sections are the core's ([`spool::export`]).

use std::fs::File;
use std::io::IsTerminal;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;
use spool::export::{ExportLine, markdown_entry, markdown_summary, markdown_title};
use spool_host::{Error, Spool, Transcript};

use crate::cli::not_found;

/// `spool export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The session key.
    key: String,
    /// Write JSON Lines (the same as `--format json-lines`, the default).
    #[arg(long, conflicts_with = "format")]
    json_lines: bool,
    /// `json-lines`: a `{"spool_export": 1, "session": …, "lineage": …}` header, one
    /// entry per line, then one `{"summary": …}` line per compaction summary (what
    /// `spool import spool FILE` reads back). `markdown`: a readable transcript, tool
    /// calls collapsed, failed tool results marked.
    #[arg(long, value_enum, default_value_t = Format::JsonLines)]
    format: Format,
    /// Export the reset archives of KEY from the archive directory instead (one archive
    /// per line, oldest first, newest last).
    #[arg(long)]
    archive: bool,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// The format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// JSON Lines.
    JsonLines,
    /// Markdown.
    Markdown,
}

/// `spool export KEY [--format F] [--archive] [--out FILE]`. The transcript is written page by page
/// (a session of any size in bounded memory); a file is written beside its place,
/// synced, then renamed into place, so it is complete or absent.
pub(crate) fn run(spool: &mut Spool, args: &ExportArgs) -> Result<(), Error> {
    let failed = |source| Error::Io {
        context: match &args.out {
            Some(path) => format!("cannot write {}", path.display()),
            None => "cannot write to stdout".to_owned(),
        },
        source,
    };
    match &args.out {
        Some(path) => {
            let mut partial = path.clone().into_os_string();
            partial.push(".partial");
            let partial = PathBuf::from(partial);
            let mut out = BufWriter::new(File::create(&partial).map_err(failed)?);
            let written = write(spool, args, &mut out, failed).and_then(|()| {
                out.into_inner()
                    .map_err(|e| failed(e.into_error()))?
                    .sync_all()
                    .map_err(failed)
            });
            match written {
                Ok(()) => std::fs::rename(&partial, path).map_err(failed),
                Err(e) => {
                    let _ = std::fs::remove_file(&partial);
                    Err(e)
                }
            }
        }
        None => write(spool, args, &mut std::io::stdout().lock(), failed),
    }
}

/// Writes the export's lines to `out` as they are read.
fn write(
    spool: &mut Spool,
    args: &ExportArgs,
    out: &mut impl Write,
    failed: impl Fn(std::io::Error) -> Error,
) -> Result<(), Error> {
    let mut emit = |line: String| -> Result<(), Error> {
        out.write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(&failed)
    };
    if args.archive {
        if args.format == Format::Markdown {
            return Err(Error::spool(
                spool::ErrorCode::InvalidArgument,
                "--archive exports JSON Lines only".into(),
            ));
        }
        for line in archive_lines(spool, &args.key)? {
            emit(line)?;
        }
    } else {
        // A count of the entries written, on stderr when it is a terminal and the
        // export does not go to it too.
        let show = std::io::stderr().is_terminal()
            && (args.out.is_some() || !std::io::stdout().is_terminal());
        let bar = crate::cli::progress::bar(show, format!("export {}", args.key), 0);
        let written = transcript_lines(spool, &args.key, args.format, &bar, &mut emit);
        bar.finish_and_clear();
        written?;
    }
    out.flush().map_err(failed)
}

fn json_error(e: &serde_json::Error) -> Error {
    Error::spool(
        spool::ErrorCode::Internal,
        format!("cannot write JSON: {e}"),
    )
}

fn line(value: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| json_error(&e))
}

/// The header (the session and its lineage) or title, the canonical transcript
/// (entries compactions archived, then the active ones, in the order they were
/// appended), then the summaries, each line or section to `emit` as it is read.
fn transcript_lines(
    spool: &mut Spool,
    key: &str,
    format: Format,
    bar: &indicatif::ProgressBar,
    emit: &mut impl FnMut(String) -> Result<(), Error>,
) -> Result<(), Error> {
    let Some(session) = spool.get_session(key)? else {
        return Err(not_found(format!("session not found: {key}")));
    };
    let lineage = spool.lineage(key)?.node.lineage;
    let render = |line: ExportLine<'_>| -> Result<String, Error> {
        match (format, line) {
            (Format::JsonLines, line) => line.to_json().map_err(|e| json_error(&e)),
            (Format::Markdown, ExportLine::Header(session, lineage)) => {
                Ok(markdown_title(session, lineage))
            }
            (Format::Markdown, ExportLine::Entry(entry)) => Ok(markdown_entry(entry)),
            (Format::Markdown, ExportLine::Summary(summary)) => Ok(markdown_summary(summary)),
        }
    };
    // The first page is read before anything is written: a transcript that cannot be
    // read writes nothing.
    let pages = crate::cli::pages(spool, key, Transcript::Canonical)?;
    emit(render(ExportLine::Header(&session, &lineage))?)?;
    for page in pages {
        for entry in page? {
            emit(render(ExportLine::Entry(&entry))?)?;
            bar.inc(1);
        }
    }
    for summary in &spool.list_summaries(key)? {
        emit(render(ExportLine::Summary(summary))?)?;
    }
    Ok(())
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
