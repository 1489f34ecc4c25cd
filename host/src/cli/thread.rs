//! Provider thread bindings (ARCHITECTURE.md, "Resume selection"): `spool thread plan` and
//! `spool thread commit-turn`. The plan and the binding rules come from the component.

use std::io::Read;

use clap::Subcommand;
use spool::{AppendRequest, ThreadBinding, TurnCommit};
use spool_host::{Error, Spool};

use crate::cli::print_json;

/// The `thread` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ThreadCommand {
    /// Whether a new agent resumes the provider thread bound to the session under KEY
    /// or starts one (with `--dead`: the provider refused to resume that thread).
    Plan {
        /// The session key.
        key: String,
        /// The agent type (`codex`, …): the binding is `<agent>_thread_id` in the
        /// session's model config.
        #[arg(long, value_name = "A")]
        agent: String,
        /// A thread the provider just refused to resume.
        #[arg(long, value_name = "THREAD")]
        dead: Option<String>,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Append a turn's entries to KEY and bind the session to the provider thread it
    /// ran on, in one commit (a crash never leaves a binding without its turn).
    CommitTurn {
        /// The session key.
        key: String,
        /// The agent type.
        #[arg(long, value_name = "A")]
        agent: String,
        /// The provider thread the turn ran on.
        #[arg(long, value_name = "T")]
        thread: String,
        /// The binding this one replaces (the plan's `replaces`); `conflict` unless the
        /// session is still bound to it.
        #[arg(long, value_name = "OLD")]
        replaces: Option<String>,
        /// The turn's entries: a file holding a JSON array of append requests
        /// (`[{"role":"user","content":"…"}]`), or `-` for stdin.
        #[arg(long, value_name = "FILE|-", value_parser = parse_entries)]
        entries: Entries,
        /// Fail with `stale_epoch` unless the session is at this epoch.
        #[arg(long, value_name = "N")]
        expected_epoch: Option<u64>,
        /// Print the entries written and the session as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The entries of `--entries`.
#[derive(Debug, Clone)]
pub(crate) struct Entries(Vec<AppendRequest>);

/// `--entries FILE|-`: read and parse at argument time, so an unreadable file or bad
/// JSON is a usage error (exit 2), like `--kept-json`.
fn parse_entries(path: &str) -> Result<Entries, String> {
    let text = if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        text
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?
    };
    serde_json::from_str(&text)
        .map(Entries)
        .map_err(|e| format!("not a JSON array of append requests: {e}"))
}

/// Runs a `thread` subcommand.
pub(crate) fn run(spool: &mut Spool, command: &ThreadCommand) -> Result<(), Error> {
    match command {
        ThreadCommand::Plan {
            key,
            agent,
            dead,
            json,
        } => {
            let plan = spool.plan_provider_thread(key, agent, dead.clone())?;
            if *json {
                return print_json(&plan);
            }
            if let Some(notice) = &plan.notice {
                outln!("{notice}");
            }
            match (&plan.thread_id, &plan.replaces) {
                (Some(thread), _) if plan.action == "resume" => {
                    outln!("resume thread {thread} ({agent})");
                }
                (_, Some(old)) => outln!(
                    "start a new {agent} thread (commit its first turn with --replaces {old})"
                ),
                _ => outln!("start a new {agent} thread"),
            }
            Ok(())
        }
        ThreadCommand::CommitTurn {
            key,
            agent,
            thread,
            replaces,
            entries,
            expected_epoch,
            json,
        } => {
            let committed = spool.commit_turn(
                key,
                TurnCommit {
                    entries: entries.0.clone(),
                    thread: Some(ThreadBinding {
                        agent_type: agent.clone(),
                        thread_id: thread.clone(),
                        replaces: replaces.clone(),
                    }),
                    expected_epoch: *expected_epoch,
                },
            )?;
            if *json {
                return print_json(&committed);
            }
            let ids = match (committed.entries.first(), committed.entries.last()) {
                (Some(first), Some(last)) if first.id != last.id => {
                    format!(" (#{}–#{})", first.id, last.id)
                }
                (Some(only), _) => format!(" (#{})", only.id),
                _ => String::new(),
            };
            let n = committed.entries.len();
            out!(
                "committed {n} entr{}{ids} to {key}; bound to {agent} thread {thread}",
                if n == 1 { "y" } else { "ies" }
            );
            match replaces {
                Some(old) => outln!(" (replaced {old})"),
                None => outln!(),
            }
            Ok(())
        }
    }
}
