//! Transcript subcommands: `count`, `entry`, `truncate`.

use std::io::{BufRead, BufReader, Read};

use clap::Args;
use serde_json::json;
use spool::{AppendRequest, Entry};
use spool_host::{Error, Spool};

use crate::cli::lifecycle::KeyArgs;
use crate::cli::{not_found, print_json, render};

/// The append requests of a JSON Lines file (`-`: stdin), one per non-blank line. A line
/// that is not an append request is `invalid_argument` naming its number; nothing is
/// appended then.
pub(crate) fn read_jsonl(path: &str) -> Result<Vec<AppendRequest>, Error> {
    let io = |context: String| move |source| Error::Io { context, source };
    let reader: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(io(format!("cannot open {path}")))?)
    };
    let mut requests = Vec::new();
    for (index, line) in BufReader::new(reader).lines().enumerate() {
        let line = line.map_err(io(format!("cannot read {path}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let request = serde_json::from_str(&line).map_err(|e| {
            Error::spool(
                spool::ErrorCode::InvalidArgument,
                format!("{path} line {}: not an append request: {e}", index + 1),
            )
        })?;
        requests.push(request);
    }
    if requests.is_empty() {
        return Err(Error::spool(
            spool::ErrorCode::InvalidArgument,
            format!("{path} holds no append request"),
        ));
    }
    Ok(requests)
}

/// How often `spool append --stream` writes what arrived: after `every` at most, or
/// once `bytes` new bytes arrived.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cadence {
    pub(crate) every: std::time::Duration,
    pub(crate) bytes: usize,
}

/// `spool append --stream`: begins `request` (its content the first text, its usage kept
/// for the settle) in progress, writes the whole text read from `input` so far at the
/// `cadence`, and settles the entry when `input` ends. Returns the entry and the updates
/// written. Bytes that are not UTF-8 are replaced; a character cut between two reads
/// waits for its end.
pub(crate) fn stream(
    spool: &mut Spool,
    key: &str,
    mut request: AppendRequest,
    cadence: Cadence,
    input: impl Read + Send + 'static,
) -> Result<(Entry, u64), Error> {
    let usage = request.turn_usage.take();
    let token_count = request.token_count.take();
    let entry = spool.begin_entry(key, request)?;
    // A reader thread, so the cadence's clock runs while stdin is quiet.
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<Vec<u8>>>();
    std::thread::spawn(move || {
        let mut input = input;
        let mut buf = vec![0u8; 8192];
        loop {
            match input.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if tx.send(Ok(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
    });
    let mut bytes = entry.content.clone().into_bytes();
    let (mut written, mut updates) = (bytes.len(), 0u64);
    let mut due = std::time::Instant::now() + cadence.every;
    let update = |spool: &mut Spool, bytes: &[u8]| {
        // Up to the last whole character: the rest waits for its next bytes.
        let whole = match std::str::from_utf8(bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        let content = String::from_utf8_lossy(&bytes[..whole]).into_owned();
        let change = spool::EntryUpdate {
            message_id: entry.message_id.clone(),
            content: Some(content),
            ..spool::EntryUpdate::default()
        };
        spool.update_entry(key, change).map(|_| whole)
    };
    loop {
        let wait = due.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Ok(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(Err(e)) => {
                return Err(Error::Io {
                    context: "cannot read the streamed content from stdin".into(),
                    source: e,
                });
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = std::time::Instant::now();
        if bytes.len() > written && (bytes.len() - written >= cadence.bytes || now >= due) {
            written = update(spool, &bytes)?;
            updates += 1;
            due = now + cadence.every;
        } else if now >= due {
            due = now + cadence.every;
        }
    }
    let settle = spool::EntryUpdate {
        message_id: entry.message_id.clone(),
        content: Some(String::from_utf8_lossy(&bytes).into_owned()),
        turn_usage: usage,
        token_count,
        ..spool::EntryUpdate::default()
    };
    Ok((spool.settle_entry(key, settle)?, updates))
}

/// Prints entries appended together: a line naming them, or (`json`) a JSON array.
pub(crate) fn appended(entries: &[Entry], key: &str, json: bool) -> Result<(), Error> {
    if json {
        return print_json(&entries);
    }
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Ok(());
    };
    if entries.len() == 1 {
        outln!("appended #{} ({}) to {key}", first.id, first.message_id);
    } else {
        outln!(
            "appended #{}–#{} ({} entries, one commit) to {key}",
            first.id,
            last.id,
            entries.len()
        );
    }
    Ok(())
}

/// `spool entry`.
#[derive(Debug, Args)]
pub(crate) struct EntryArgs {
    /// The session key.
    pub(crate) key: String,
    /// The entry's message id.
    pub(crate) message_id: String,
    /// Print the entry as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool truncate`.
#[derive(Debug, Args)]
pub(crate) struct TruncateArgs {
    /// The session key.
    pub(crate) key: String,
    /// How many of the newest entries to keep.
    #[arg(long, value_name = "N")]
    pub(crate) keep: u64,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    pub(crate) expected_epoch: Option<u64>,
    /// Print `{"truncated", "before_count", "after_count"}` as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool rollback`.
#[derive(Debug, Args)]
pub(crate) struct RollbackArgs {
    /// The session key.
    pub(crate) key: String,
    /// How many of the last turns to drop.
    #[arg(long, value_name = "N")]
    pub(crate) turns: u64,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    pub(crate) expected_epoch: Option<u64>,
    /// Print `{"truncated", "before_count", "after_count"}` as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool pop`.
#[derive(Debug, Args)]
pub(crate) struct PopArgs {
    /// The session key.
    pub(crate) key: String,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    pub(crate) expected_epoch: Option<u64>,
    /// Print the removed entry as JSON (`null` when there was none).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool count KEY`.
pub(crate) fn count(spool: &mut Spool, args: &KeyArgs) -> Result<(), Error> {
    let count = spool.count_entries(&args.key)?;
    if args.json {
        return print_json(&json!({ "key": args.key, "entry_count": count }));
    }
    outln!("{count}");
    Ok(())
}

/// `spool entry KEY MESSAGE_ID`: a missing entry is `not_found`.
pub(crate) fn entry(spool: &mut Spool, args: &EntryArgs) -> Result<(), Error> {
    let entry = spool
        .get_entry(&args.key, &args.message_id)?
        .ok_or_else(|| {
            not_found(format!(
                "no entry with message id `{}` in session {}",
                args.message_id, args.key
            ))
        })?;
    if args.json {
        return print_json(&entry);
    }
    out!("{}", render::entry(&entry));
    Ok(())
}

/// `spool truncate KEY --keep N`.
pub(crate) fn truncate(spool: &mut Spool, args: &TruncateArgs) -> Result<(), Error> {
    let outcome = spool.truncate(&args.key, args.keep, args.expected_epoch)?;
    if args.json {
        return print_json(&outcome);
    }
    if outcome.truncated {
        outln!(
            "truncated {}: {} → {} entries",
            args.key,
            outcome.before_count,
            outcome.after_count
        );
    } else {
        outln!(
            "nothing to truncate: {} has {} entries (keeping up to {})",
            args.key,
            outcome.before_count,
            args.keep
        );
    }
    Ok(())
}

/// `spool pop KEY`: removes the newest entry in one commit and prints it.
pub(crate) fn pop(spool: &mut Spool, args: &PopArgs) -> Result<(), Error> {
    let now_ms = spool.now_ms();
    let entry = spool.call(spool::ops::PopEntry {
        key: args.key.clone(),
        expected_epoch: args.expected_epoch,
        now_ms,
    })?;
    if args.json {
        return print_json(&entry);
    }
    match entry {
        Some(entry) => {
            outln!("removed from {}:", args.key);
            out!("{}", render::entry(&entry));
        }
        None => outln!("nothing to pop: {} has no entries", args.key),
    }
    Ok(())
}

/// `spool rollback KEY --turns N`.
pub(crate) fn rollback(spool: &mut Spool, args: &RollbackArgs) -> Result<(), Error> {
    let now_ms = spool.now_ms();
    let outcome = spool.call(spool::ops::Rollback {
        key: args.key.clone(),
        turns: args.turns,
        expected_epoch: args.expected_epoch,
        now_ms,
    })?;
    if args.json {
        return print_json(&outcome);
    }
    if outcome.truncated {
        outln!(
            "rolled back {}: {} → {} entries",
            args.key,
            outcome.before_count,
            outcome.after_count
        );
    } else {
        outln!(
            "nothing to roll back: {} keeps its {} entries",
            args.key,
            outcome.before_count
        );
    }
    Ok(())
}
