//! Branches, turns and provider forks (ARCHITECTURE.md, "Branches" and "Turns and provider
//! forks"): `spool branch`, `spool tree`,
//! `spool fork run|status|ack|continue|recover`, `spool turn start|settle|interrupt|list`
//! and `spool turns`. Every decision is the component's; this file parses and prints.

use std::collections::BTreeSet;
use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};
use serde::Serialize;
use serde_json::Value;
use spool::Order;
use spool::provider_fork::{
    ForkOperationView, ForkOrigin, ForkRequest, ForkStatus, RecoveryReport,
};
use spool::turns::{CloseTurn, NewTurn, Turn, TurnPageRequest, TurnSummary};
use spool::{BranchInfo, Session};
use spool_host::{BranchOptions, CommandProvider, Error, ForkProvider, Spool, TestProvider};

use crate::cli::lifecycle::{KeyArgs, plural};
use crate::cli::parse::{parse_duration_ms, parse_json};
use crate::cli::print_json;
use crate::cli::render;

/// `spool branch PARENT CHILD`.
#[derive(Debug, Args)]
pub(crate) struct BranchArgs {
    /// The session to branch from.
    pub(crate) parent: String,
    /// The key of the new session (it gets a fresh session id).
    pub(crate) child: String,
    /// Share the parent's history: transcript, summaries, context states, archive.
    #[arg(long)]
    pub(crate) fork: bool,
    /// Share only the transcript strictly before this message id.
    #[arg(long, value_name = "MESSAGE_ID")]
    pub(crate) before: Option<String>,
    /// Start empty when the shared transcript and summary tokens exceed N.
    #[arg(long, value_name = "N")]
    pub(crate) max_tokens: Option<u64>,
    /// Print the new session with its lineage as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The `fork` subcommands: provider fork operations.
#[derive(Debug, Subcommand)]
pub(crate) enum ForkCommand {
    /// Fork the session under KEY through its provider: prepare, record `dispatching`,
    /// ask the provider once, record its answer and, if it accepted, write the child.
    ///
    /// Prints the operation as it ended: `committed`, `failed` (the provider's error is
    /// kept) or `unknown` (delivery unknown; never retried).
    Run(Box<ForkRunArgs>),
    /// Show a fork operation (never acknowledges it).
    Status {
        /// The operation id.
        operation_id: String,
        /// Print the operation as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Acknowledge a committed fork operation: releases its turn barrier.
    Ack {
        /// The operation id.
        operation_id: String,
        /// Print the operation as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Continue an operation left behind (see `recover`): a prepared one is dispatched
    /// to the provider once and committed if it accepts; a provider-accepted one is
    /// committed; any other is shown as it is.
    Continue(Box<ForkContinueArgs>),
    /// After a crash: operations caught `dispatching` become `unknown`; lists the ones
    /// still to dispatch and to commit (`spool fork continue`).
    Recover {
        /// Print the recovery report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `spool fork run KEY …`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("provider").required(true).args(["provider_cmd", "accept", "reject"])))]
pub(crate) struct ForkRunArgs {
    /// The source session.
    pub(crate) key: String,
    /// The key of the child session (must be free).
    #[arg(long, value_name = "TARGET_KEY")]
    pub(crate) target: String,
    /// The idempotency id: running the same request again returns its operation.
    #[arg(long, value_name = "ID")]
    pub(crate) request_id: String,
    /// Fork through this settled turn (default: the whole session, no turn running).
    #[arg(long, value_name = "TURN_ID")]
    pub(crate) through_turn: Option<String>,
    /// The working directory prepared for the child (wins over the source's).
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<String>,
    /// The child's session id (default: derived from the workspace and request id, so a
    /// retry is the same request).
    #[arg(long, value_name = "ID")]
    pub(crate) target_session_id: Option<String>,
    /// Who answers for the provider.
    #[command(flatten)]
    pub(crate) provider: ProviderArgs,
    /// Print the operation as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The provider of `fork run` and `fork continue`: a command, or a fixed answer.
#[derive(Debug, Args)]
pub(crate) struct ProviderArgs {
    /// The provider: `sh -c CMD` gets the dispatch payload JSON on stdin and prints a
    /// disposition JSON (`{"disposition":"accepted"}`,
    /// `{"disposition":"rejected","error":"…","reason":"…"}`); failing, timing out or
    /// printing anything else counts as `unknown`.
    #[arg(long, value_name = "CMD")]
    pub(crate) provider_cmd: Option<String>,
    /// How long the provider command may run: a number with its unit, `d`, `h`, `m`,
    /// `s` or `ms` (e.g. `90s`).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration_ms)]
    pub(crate) provider_timeout: u64,
    /// No provider call: accept the fork.
    #[arg(long)]
    pub(crate) accept: bool,
    /// No provider call: reject the fork with this error text.
    #[arg(long, value_name = "ERROR")]
    pub(crate) reject: Option<String>,
    /// The reason code of `--reject` (e.g. `attachment_unsupported`).
    #[arg(long, value_name = "CODE", requires = "reject")]
    pub(crate) reason: Option<String>,
}

impl ProviderArgs {
    fn provider(&self) -> Box<dyn ForkProvider> {
        match (&self.provider_cmd, &self.reject) {
            (Some(cmd), _) => Box::new(
                CommandProvider::new(cmd)
                    .with_timeout(Duration::from_millis(self.provider_timeout)),
            ),
            (None, Some(error)) => Box::new(TestProvider::reject(error, self.reason.as_deref())),
            (None, None) => Box::new(TestProvider::accept()),
        }
    }
}

/// `spool fork continue OP_ID …`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("provider").required(true).args(["provider_cmd", "accept", "reject"])))]
pub(crate) struct ForkContinueArgs {
    /// The operation id.
    pub(crate) operation_id: String,
    /// Who answers for the provider.
    #[command(flatten)]
    pub(crate) provider: ProviderArgs,
    /// Print the operation as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The `turn` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum TurnCommand {
    /// Start turn TURN_ID of the session under KEY (one runs at a time).
    Start(TurnArgs),
    /// Settle the running turn TURN_ID: records its boundary (the newest entry).
    Settle(TurnArgs),
    /// Interrupt the running turn TURN_ID: records its boundary.
    Interrupt(TurnArgs),
    /// List the turns of the session under KEY, newest first: seq, turn id, phase,
    /// boundary (the entry it closed at) and provider turn id.
    List(TurnListArgs),
}

/// `spool turn list KEY …`.
#[derive(Debug, Args)]
pub(crate) struct TurnListArgs {
    /// The session key.
    pub(crate) key: String,
    /// How many turns to list (1 to 1000).
    #[arg(long, default_value_t = 20, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) limit: u32,
    /// List in start order (oldest first) instead.
    #[arg(long)]
    pub(crate) oldest_first: bool,
    /// Continue after a previous page (its `next_cursor`), read in the same order.
    #[arg(long)]
    pub(crate) cursor: Option<String>,
    /// Print the page as JSON (`{"turns": […], "next_cursor": …}`).
    #[arg(long)]
    pub(crate) json: bool,
}

/// A turn and what the provider knows about it.
#[derive(Debug, Args)]
pub(crate) struct TurnArgs {
    /// The session key.
    pub(crate) key: String,
    /// The turn id.
    pub(crate) turn_id: String,
    /// The provider's id of the turn.
    #[arg(long, value_name = "ID")]
    pub(crate) provider_turn_id: Option<String>,
    /// The provider's opaque binding of the turn (JSON), needed to fork through it.
    #[arg(long, value_name = "JSON", value_parser = parse_json)]
    pub(crate) binding: Option<Value>,
    /// Fail with `stale_epoch` unless the session is at this epoch.
    #[arg(long, value_name = "N")]
    pub(crate) expected_epoch: Option<u64>,
    /// Print the turn as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `spool branch PARENT CHILD …`.
pub(crate) fn branch(spool: &mut Spool, args: &BranchArgs) -> Result<(), Error> {
    let options = BranchOptions {
        fork_transcript: args.fork,
        fork_before_message_id: args.before.clone(),
        max_fork_tokens: args.max_tokens,
    };
    let child = spool.branch(&args.parent, &args.child, options)?;
    if args.json {
        return print_json(&child);
    }
    outln!(
        "branched {} from {}: {}",
        child.session.key,
        args.parent,
        describe(&child)
    );
    outln!("  id       {}", child.session.session_id);
    Ok(())
}

/// How a session came to be, in a few words: `12 entries`, `forked before m-5, 4
/// entries`, `branch without history, 0 entries`.
fn describe(b: &BranchInfo) -> String {
    let n = b.session.entry_count;
    let entries = format!("{n} entr{}", if n == 1 { "y" } else { "ies" });
    if b.lineage.parent_session_key.is_none() {
        return entries;
    }
    let how = match (&b.lineage.fork_point, b.lineage.forked_from_parent) {
        (Some(point), true) => match &point.before_message_id {
            Some(id) => format!("forked before {id}"),
            None => "forked".to_owned(),
        },
        _ => "no history".to_owned(),
    };
    format!("{how}, {entries}")
}

/// A node of `spool tree`.
#[derive(Debug, Serialize)]
struct Node {
    #[serde(flatten)]
    branch: BranchInfo,
    children: Vec<Node>,
}

/// The longest parent chain `tree` follows up (a guard against a corrupt cycle).
const MAX_DEPTH: usize = 10_000;

/// `spool tree KEY`: the family of KEY from its root.
pub(crate) fn tree(spool: &mut Spool, args: &KeyArgs) -> Result<(), Error> {
    // Up: follow `parent_session_key` while the parent still exists.
    let mut root = spool.lineage(&args.key)?;
    let mut seen = BTreeSet::from([root.node.session.key.clone()]);
    while let Some(parent) = root.node.lineage.parent_session_key.clone() {
        if seen.len() > MAX_DEPTH || !seen.insert(parent.clone()) {
            break;
        }
        match spool.lineage(&parent) {
            Ok(view) => root = view,
            Err(e) if e.code() == "not_found" => break,
            Err(e) => return Err(e),
        }
    }
    // Down: every branch, recursively, each session once.
    let mut seen = BTreeSet::from([root.node.session.key.clone()]);
    let children = root.children;
    let tree = Node {
        branch: root.node,
        children: grow(spool, children, &mut seen)?,
    };
    if args.json {
        return print_json(&tree);
    }
    let mut out = String::new();
    draw(&tree, &args.key, "", None, &mut out);
    out!("{out}");
    Ok(())
}

fn grow(
    spool: &mut Spool,
    children: Vec<BranchInfo>,
    seen: &mut BTreeSet<String>,
) -> Result<Vec<Node>, Error> {
    let mut nodes = Vec::with_capacity(children.len());
    for child in children {
        if !seen.insert(child.session.key.clone()) {
            continue;
        }
        let below = spool.lineage(&child.session.key)?.children;
        nodes.push(Node {
            branch: child,
            children: grow(spool, below, seen)?,
        });
    }
    Ok(nodes)
}

/// Draws `node` (the last of its siblings when `last` is `Some(true)`; the root when
/// `None`), marking the session asked for.
fn draw(node: &Node, asked: &str, prefix: &str, last: Option<bool>, out: &mut String) {
    let key = &node.branch.session.key;
    let mark = if key == asked && last.is_some() {
        "  ◀"
    } else {
        ""
    };
    let (head, next) = match last {
        None => (String::new(), String::new()),
        Some(true) => (format!("{prefix}└─ "), format!("{prefix}   ")),
        Some(false) => (format!("{prefix}├─ "), format!("{prefix}│  ")),
    };
    out.push_str(&format!(
        "{head}{} ({}){mark}\n",
        spool::validate::escape_invisible(key),
        describe(&node.branch)
    ));
    for (i, child) in node.children.iter().enumerate() {
        draw(child, asked, &next, Some(i + 1 == node.children.len()), out);
    }
}

/// FNV-1a 64 of `text` from `seed`, then mixed (splitmix64's finalizer) so that close
/// inputs give unrelated-looking ids.
fn fnv(seed: u64, text: &str) -> u64 {
    let hash = text.bytes().fold(seed, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let z = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A session id in UUID form derived from `workspace` and `request_id`: a retried
/// `fork run` sends the same request.
fn derived_id(workspace: &str, request_id: &str) -> String {
    let text = format!("spool-fork\u{0}{workspace}\u{0}{request_id}");
    let (a, b) = (
        fnv(0xcbf2_9ce4_8422_2325, &text),
        fnv(0x8422_2325_cbf2_9ce4, &text),
    );
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_8000;
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    spool_host::uuid_text(bytes)
}

/// Runs a `fork` subcommand.
pub(crate) fn run(spool: &mut Spool, command: &ForkCommand) -> Result<(), Error> {
    match command {
        ForkCommand::Run(args) => fork_run(spool, args),
        ForkCommand::Continue(args) => {
            let mut provider = args.provider.provider();
            let view = spool.continue_fork(&args.operation_id, provider.as_mut())?;
            show_operation(&view, args.json)
        }
        ForkCommand::Status { operation_id, json } => {
            let view = spool.get_fork_operation(operation_id)?;
            show_operation(&view, *json)
        }
        ForkCommand::Ack { operation_id, json } => {
            let view = spool.acknowledge_fork_operation(operation_id)?;
            show_operation(&view, *json)
        }
        ForkCommand::Recover { json } => {
            let report = spool.recover_fork_operations()?;
            if *json {
                return print_json(&report);
            }
            out!("{}", recovery(&report));
            Ok(())
        }
    }
}

fn fork_run(spool: &mut Spool, args: &ForkRunArgs) -> Result<(), Error> {
    let mut provider = args.provider.provider();
    let target_session_id = args
        .target_session_id
        .clone()
        .unwrap_or_else(|| derived_id(spool.workspace(), &args.request_id));
    let request = ForkRequest {
        request_id: args.request_id.clone(),
        target_key: args.target.clone(),
        target_session_id,
        through_turn_id: args.through_turn.clone(),
        cwd: args.cwd.clone(),
    };
    let view = spool.run_fork(&args.key, request, provider.as_mut())?;
    show_operation(&view, args.json)
}

fn status_name(status: ForkStatus) -> &'static str {
    match status {
        ForkStatus::Accepted => "accepted",
        ForkStatus::Committed => "committed",
        ForkStatus::Failed => "failed",
        ForkStatus::Unknown => "unknown",
    }
}

fn show_operation(view: &ForkOperationView, json: bool) -> Result<(), Error> {
    if json {
        return print_json(view);
    }
    out!("{}", operation(view));
    Ok(())
}

/// An operation in a few lines.
fn operation(view: &ForkOperationView) -> String {
    let op = &view.operation;
    let mut state = status_name(view.status).to_owned();
    if let Some(phase) = view.phase {
        let phase = serde_json::to_value(phase)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        state.push_str(&format!(" ({phase})"));
    }
    let mut out = format!("fork operation {}: {state}\n", op.operation_id);
    let through = match &view.source_turn_id {
        Some(turn) => format!(" through turn {turn}"),
        None => String::new(),
    };
    out.push_str(&format!(
        "  source   {} ({}){through}\n",
        op.source_key, op.source_session_id
    ));
    out.push_str(&format!(
        "  target   {} ({})\n",
        op.target_key, op.target_session_id
    ));
    if let Some(child) = &op.session {
        out.push_str(&format!("  child    {}\n", entries_line(&child.session)));
    }
    if let Some(id) = &op.target_provider_session_id {
        out.push_str(&format!("  provider session {id}\n"));
    }
    if let Some(error) = &op.error {
        match &op.error_reason {
            Some(reason) => out.push_str(&format!("  error    {error} ({reason})\n")),
            None => out.push_str(&format!("  error    {error}\n")),
        }
    }
    out.push_str(&format!("  request  {}\n", op.request_id));
    if view.origin == Some(ForkOrigin::BarrierHeld) {
        out.push_str("  note     another request holds this fork point; returned untouched\n");
    }
    if view.status == ForkStatus::Committed {
        out.push_str(&format!(
            "  acknowledged {}\n",
            if view.acknowledged { "yes" } else { "no" }
        ));
    }
    out
}

fn entries_line(s: &Session) -> String {
    format!(
        "{} entr{}, {} tokens",
        s.entry_count,
        if s.entry_count == 1 { "y" } else { "ies" },
        s.total_tokens
    )
}

fn recovery(report: &RecoveryReport) -> String {
    let mut out = String::new();
    let groups = [
        (
            &report.marked_unknown,
            "marked unknown (were dispatching; never retried)",
        ),
        (&report.to_dispatch, "prepared, still to dispatch"),
        (
            &report.to_commit,
            "accepted by the provider, still to commit",
        ),
    ];
    let total: usize = groups.iter().map(|(ops, _)| ops.len()).sum();
    if total == 0 {
        out.push_str("no fork operations to recover\n");
        return out;
    }
    for (ops, what) in groups {
        if ops.is_empty() {
            continue;
        }
        let n = ops.len() as u64;
        out.push_str(&format!("{n} operation{} {what}:\n", plural(n)));
        for view in ops {
            let op = &view.operation;
            out.push_str(&format!(
                "  {}  {} → {}\n",
                op.operation_id, op.source_key, op.target_key
            ));
        }
    }
    if !report.to_dispatch.is_empty() || !report.to_commit.is_empty() {
        out.push_str("continue each with: spool fork continue OP_ID (--provider-cmd CMD | --accept | --reject ERROR)\n");
    }
    out
}

/// Runs a `turn` subcommand.
pub(crate) fn turn(spool: &mut Spool, command: &TurnCommand) -> Result<(), Error> {
    let (turn, verb, json) = match command {
        TurnCommand::Start(args) => {
            let close = close_of(args);
            let request = NewTurn {
                turn_id: args.turn_id.clone(),
                provider_turn_id: close.provider_turn_id,
                provider_binding: close.provider_binding,
                expected_epoch: close.expected_epoch,
            };
            (spool.start_turn(&args.key, request)?, "started", args.json)
        }
        TurnCommand::Settle(args) => (
            spool.settle_turn(&args.key, &args.turn_id, close_of(args))?,
            "settled",
            args.json,
        ),
        TurnCommand::Interrupt(args) => (
            spool.interrupt_turn(&args.key, &args.turn_id, close_of(args))?,
            "interrupted",
            args.json,
        ),
        TurnCommand::List(args) => return turn_list(spool, args),
    };
    if json {
        return print_json(&turn);
    }
    outln!("{verb} {}", turn_line(&turn));
    Ok(())
}

/// What `turn start|settle|interrupt` records about the provider, and the epoch fence.
fn close_of(args: &TurnArgs) -> CloseTurn {
    CloseTurn {
        provider_turn_id: args.provider_turn_id.clone(),
        provider_binding: args.binding.clone(),
        expected_epoch: args.expected_epoch,
    }
}

/// `spool turn list KEY`: one page of the session's turns.
fn turn_list(spool: &mut Spool, args: &TurnListArgs) -> Result<(), Error> {
    let order = if args.oldest_first {
        Order::OldestFirst
    } else {
        Order::NewestFirst
    };
    let request = TurnPageRequest {
        order,
        cursor: args.cursor.clone(),
        limit: args.limit,
    };
    let page = spool.list_turns(&args.key, request)?;
    if args.json {
        return print_json(&page);
    }
    if page.turns.is_empty() {
        match args.cursor {
            Some(_) => outln!("no more turns"),
            None => outln!("{} has no turns", args.key),
        }
        return Ok(());
    }
    out!("{}", render::turn_table(&page.turns));
    if let Some(next) = page.next_cursor {
        let oldest = if args.oldest_first {
            " --oldest-first"
        } else {
            ""
        };
        outln!(
            "(more: spool turn list {} --limit {}{oldest} --cursor {next})",
            args.key,
            args.limit
        );
    }
    Ok(())
}

fn turn_line(t: &Turn) -> String {
    let phase = render::phase(t.phase);
    let mut line = format!(
        "turn {} #{} of {} ({phase})",
        t.turn_id, t.seq, t.session_key
    );
    if let Some(b) = &t.boundary {
        line.push_str(&format!(", through entry #{}", b.entry_id));
    }
    if let Some(id) = &t.provider_turn_id {
        line.push_str(&format!(", provider turn {id}"));
    }
    line
}

/// `spool turns KEY`: the latest and the active turn.
pub(crate) fn turns(spool: &mut Spool, args: &KeyArgs) -> Result<(), Error> {
    let turns: TurnSummary = spool.session_turns(&args.key)?;
    if args.json {
        return print_json(&turns);
    }
    match (&turns.latest, &turns.active) {
        (None, _) => outln!("{} has no turns", args.key),
        (Some(latest), active) => {
            outln!("latest {}", turn_line(latest));
            match active {
                Some(_) => outln!("(it is running: the active turn)"),
                None => outln!("no turn running"),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "tests/fork.rs"]
mod tests;
