//! `spool states …`: context states saved for a session.

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use spool::NewContextState;
use spool_host::{Error, Spool};

use crate::cli::lifecycle::plural;
use crate::cli::parse::parse_json;
use crate::cli::{print_json, render};

/// The `states` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum StatesCommand {
    /// List the context states of the session under KEY (valid ones unless `--all`).
    List {
        /// The session key.
        key: String,
        /// Include invalidated states.
        #[arg(long)]
        all: bool,
        /// Print the states as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Save a context state for the session under KEY.
    Save(SaveArgs),
    /// Invalidate the valid context states of the session under KEY.
    Invalidate {
        /// The session key.
        key: String,
        /// Why (stored as `invalid_reason`).
        #[arg(long, value_name = "R")]
        reason: String,
        /// Only states of this kind.
        #[arg(long, value_name = "K")]
        kind: Option<String>,
        /// Print `{"invalidated": N}`.
        #[arg(long)]
        json: bool,
    },
}

/// `spool states save`.
#[derive(Debug, Args)]
pub(crate) struct SaveArgs {
    /// The session key.
    key: String,
    /// Who can use the state (`portable` for any provider).
    #[arg(long, value_name = "P")]
    provider: String,
    /// What it is, e.g. `structured_summary_v1`.
    #[arg(long, value_name = "K")]
    kind: String,
    /// The state as JSON.
    #[arg(long, value_name = "JSON", value_parser = parse_json)]
    payload: Value,
    /// The model it belongs to.
    #[arg(long, value_name = "M")]
    model: Option<String>,
    /// The last entry id it covers.
    #[arg(long, value_name = "N", default_value_t = 0)]
    covered_through: u64,
    /// When it expires (ms since the Unix epoch).
    #[arg(long, value_name = "MS")]
    expires_at: Option<u64>,
    /// Usable with any provider.
    #[arg(long)]
    portable: bool,
    /// May be cached by a provider.
    #[arg(long)]
    cacheable: bool,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    expected_epoch: Option<u64>,
    /// Print the saved state as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs a `states` subcommand.
pub(crate) fn run(spool: &mut Spool, command: &StatesCommand) -> Result<(), Error> {
    match command {
        StatesCommand::List { key, all, json } => {
            let states = spool.list_states(key, !*all)?;
            if *json {
                return print_json(&states);
            }
            if states.is_empty() {
                let which = if *all { "" } else { "valid " };
                outln!("no {which}context states for {key}");
            }
            for state in &states {
                out!("{}", render::state(state));
            }
            Ok(())
        }
        StatesCommand::Save(args) => {
            let state = NewContextState {
                provider: args.provider.clone(),
                model: args.model.clone(),
                state_kind: args.kind.clone(),
                payload: args.payload.clone(),
                covered_through_id: args.covered_through,
                expires_at: args.expires_at,
                portable: args.portable,
                cacheable: args.cacheable,
            };
            let saved = spool.save_state(&args.key, state, args.expected_epoch)?;
            if args.json {
                return print_json(&saved);
            }
            outln!(
                "saved context state #{} ({}, provider {}) for {}",
                saved.id,
                saved.state_kind,
                saved.provider,
                args.key
            );
            Ok(())
        }
        StatesCommand::Invalidate {
            key,
            reason,
            kind,
            json,
        } => {
            let count = spool.invalidate_states(key, kind.clone(), reason)?;
            if *json {
                return print_json(&json!({ "invalidated": count }));
            }
            outln!(
                "invalidated {count} context state{} of {key} ({reason})",
                plural(count)
            );
            Ok(())
        }
    }
}
