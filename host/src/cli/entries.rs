//! Transcript subcommands: `count`, `entry`, `truncate`.

use clap::Args;
use serde_json::json;
use spool_host::{Error, Spool};

use crate::cli::lifecycle::KeyArgs;
use crate::cli::{not_found, print_json, render};

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
