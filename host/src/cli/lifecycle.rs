//! Session lifecycle subcommands: `reset`, `intent`, `resume`, `update`, `finish`,
//! `archive`, `delete`, `prune`, `cap`.

use std::collections::BTreeMap;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use spool::{FinishStatus, Intent, UpdateRequest};
use spool_host::{Error, Spool};

use crate::cli::parse::{parse_duration_ms, parse_key_json};
use crate::cli::{print_json, render};

/// A session key and the output format.
#[derive(Debug, Args)]
pub(crate) struct KeyArgs {
    /// The session key.
    pub(crate) key: String,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A session key, an optional epoch fence and the output format.
#[derive(Debug, Args)]
pub(crate) struct FencedKeyArgs {
    /// The session key.
    pub(crate) key: String,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    pub(crate) expected_epoch: Option<u64>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What to do with a key before starting work on it.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum IntentArg {
    /// Keep the session; create it when missing.
    Continue,
    /// The key must be free (`conflict` otherwise).
    NewChat,
    /// Archive the old generation, then rotate the identity.
    ResetSameKey,
}

/// `spool intent`.
#[derive(Debug, Args)]
pub(crate) struct IntentArgs {
    /// The session key.
    pub(crate) key: String,
    /// The intent.
    #[arg(value_enum)]
    pub(crate) intent: IntentArg,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool update`.
#[derive(Debug, Args)]
pub(crate) struct UpdateArgs {
    /// The session key.
    pub(crate) key: String,
    /// The model in use.
    #[arg(long, value_name = "M")]
    pub(crate) model: Option<String>,
    /// The channel.
    #[arg(long, value_name = "C")]
    pub(crate) channel: Option<String>,
    /// Set a model-config key to a JSON value (`null` removes it); repeatable.
    #[arg(long = "config", value_name = "KEY=JSON", value_parser = parse_key_json)]
    pub(crate) config: Vec<(String, Value)>,
    /// Set a metadata key to a JSON value (`null` removes it); repeatable.
    #[arg(long = "meta", value_name = "KEY=JSON", value_parser = parse_key_json)]
    pub(crate) meta: Vec<(String, Value)>,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    pub(crate) expected_epoch: Option<u64>,
    /// Print the session as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool finish`.
#[derive(Debug, Args)]
pub(crate) struct FinishArgs {
    /// The session key.
    pub(crate) key: String,
    /// Finish with a failure instead of `done`.
    #[arg(long)]
    pub(crate) failed: bool,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    pub(crate) expected_epoch: Option<u64>,
    /// Print the session as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool prune`.
#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    /// Idle time beyond which a session is deleted: a number with its unit, `d`, `h`,
    /// `m`, `s` or `ms` (e.g. `30d`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ms)]
    pub(crate) max_age: u64,
    /// Print `{"deleted": N}`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool cap`.
#[derive(Debug, Args)]
pub(crate) struct CapArgs {
    /// How many sessions to keep (the most recently updated).
    #[arg(value_name = "MAX")]
    pub(crate) max: u64,
    /// Print `{"deleted": N}`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool reset KEY`.
pub(crate) fn reset(spool: &mut Spool, args: &KeyArgs) -> Result<(), Error> {
    let bar = crate::cli::progress::follow(spool);
    let outcome = spool.reset(&args.key);
    bar.finish_and_clear();
    let outcome = outcome?;
    if args.json {
        return print_json(&outcome);
    }
    out!(
        "{}",
        render::outcome(&outcome, spool.archive_location().as_deref())
    );
    Ok(())
}

/// `spool intent KEY INTENT`.
pub(crate) fn intent(spool: &mut Spool, args: &IntentArgs) -> Result<(), Error> {
    let intent = match args.intent {
        IntentArg::Continue => Intent::Continue,
        IntentArg::NewChat => Intent::NewChat,
        IntentArg::ResetSameKey => Intent::ResetSameKey,
    };
    let outcome = spool.apply_intent(&args.key, intent)?;
    if args.json {
        return print_json(&outcome);
    }
    out!(
        "{}",
        render::outcome(&outcome, spool.archive_location().as_deref())
    );
    Ok(())
}

/// `spool resume KEY`.
pub(crate) fn resume(spool: &mut Spool, args: &KeyArgs) -> Result<(), Error> {
    let session = spool.resume(&args.key)?;
    if args.json {
        return print_json(&session);
    }
    outln!(
        "resumed {} (session {}, epoch {}, updated {})",
        session.key,
        session.session_id,
        session.epoch,
        render::time(session.updated_at)
    );
    Ok(())
}

/// `spool update KEY …`.
pub(crate) fn update(spool: &mut Spool, args: &UpdateArgs) -> Result<(), Error> {
    let request = UpdateRequest {
        model: args.model.clone(),
        channel: args.channel.clone(),
        model_config: args.config.iter().cloned().collect::<BTreeMap<_, _>>(),
        metadata: args.meta.iter().cloned().collect::<BTreeMap<_, _>>(),
        expected_epoch: args.expected_epoch,
    };
    let session = spool.update(&args.key, request)?;
    if args.json {
        return print_json(&session);
    }
    out!("updated {}", render::session(&session));
    Ok(())
}

/// `spool finish KEY [--failed]`.
pub(crate) fn finish(spool: &mut Spool, args: &FinishArgs) -> Result<(), Error> {
    let status = if args.failed {
        FinishStatus::Failed
    } else {
        FinishStatus::Done
    };
    let session = spool.finish(&args.key, status, args.expected_epoch)?;
    if args.json {
        return print_json(&session);
    }
    outln!("finished {}", render::ending(&session));
    Ok(())
}

/// `spool archive KEY`: finish as `done`.
pub(crate) fn archive(spool: &mut Spool, args: &FencedKeyArgs) -> Result<(), Error> {
    let session = spool.archive_session(&args.key, args.expected_epoch)?;
    if args.json {
        return print_json(&session);
    }
    outln!("archived {}", render::ending(&session));
    Ok(())
}

/// `spool delete KEY`.
pub(crate) fn delete(spool: &mut Spool, args: &FencedKeyArgs) -> Result<(), Error> {
    spool.delete_session(&args.key, args.expected_epoch)?;
    if args.json {
        return print_json(&json!({ "key": args.key, "deleted": true }));
    }
    outln!("deleted {} and everything it owned", args.key);
    Ok(())
}

/// `spool prune --max-age DURATION`.
pub(crate) fn prune(spool: &mut Spool, args: &PruneArgs) -> Result<(), Error> {
    let deleted = spool.prune_stale(args.max_age)?;
    if args.json {
        return print_json(&json!({ "deleted": deleted }));
    }
    outln!(
        "pruned {deleted} session{} idle longer than {} ms",
        plural(deleted),
        args.max_age
    );
    Ok(())
}

/// `spool cap MAX`.
pub(crate) fn cap(spool: &mut Spool, args: &CapArgs) -> Result<(), Error> {
    let deleted = spool.cap_sessions(args.max)?;
    if args.json {
        return print_json(&json!({ "deleted": deleted }));
    }
    outln!(
        "deleted {deleted} session{}; at most {} remain",
        plural(deleted),
        args.max
    );
    Ok(())
}

pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
