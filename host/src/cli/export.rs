//! `spool export KEY`: the canonical transcript of a session as JSON Lines, or with
//! `--archive` its reset archives.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use serde_json::json;
use spool_host::{Error, Spool, Transcript};

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

/// `spool export KEY [--archive] [--out FILE]`. The transcript is written page by page
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
        for line in archive_lines(spool, &args.key)? {
            emit(line)?;
        }
    } else {
        transcript_lines(spool, &args.key, &mut emit)?;
    }
    out.flush().map_err(failed)
}

fn line(value: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::Spool {
        code: "internal".into(),
        message: format!("cannot write JSON: {e}"),
    })
}

/// The canonical transcript (entries compactions archived, then the active ones, in the
/// order they were appended), then the summaries, each line to `emit` as it is read.
fn transcript_lines(
    spool: &mut Spool,
    key: &str,
    emit: &mut impl FnMut(String) -> Result<(), Error>,
) -> Result<(), Error> {
    if spool.get_session(key)?.is_none() {
        return Err(not_found(format!("session not found: {key}")));
    }
    for page in crate::cli::pages(spool, key, Transcript::Canonical)? {
        for entry in page? {
            emit(line(&entry)?)?;
        }
    }
    for summary in &spool.list_summaries(key)? {
        emit(line(&json!({ "summary": summary }))?)?;
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
