//! Resume selection for external agent CLIs (ARCHITECTURE.md, "Resume selection"): `spool
//! resume select|record|role` and `spool runs list`. The decisions come from the component;
//! this file converts the arguments and prints the results.

use std::collections::BTreeMap;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use spool::resume::rules::{ResumeDecision, RoleStateChange, TaskOutcome, TaskOutcomeEffects};
use spool::{NewRoleSession, OutcomeRequest, ResumeRequest, RoleSession, RunFilter};
use spool_host::{Error, Spool};

use crate::cli::lifecycle::{self, KeyArgs};
use crate::cli::parse::parse_json_object;
use crate::cli::{not_found, print_json, render};

/// `spool resume`: either `spool resume KEY` (mark a session as in use) or one of the
/// resume-selection subcommands.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct ResumeArgs {
    #[command(subcommand)]
    command: Option<ResumeCommand>,
    /// The session key to mark as in use now (`spool resume -- KEY` for a key named
    /// like a subcommand).
    #[arg(required = true)]
    key: Option<String>,
    /// Print the session as JSON.
    #[arg(long)]
    json: bool,
}

/// The resume-selection subcommands.
#[derive(Debug, Subcommand)]
enum ResumeCommand {
    /// Decide whether a new task of agent `--agent` resumes a provider session: from the
    /// role's adapter state first, the run history second. A token whose newest run
    /// failed terminally is rejected (mode `new`) and cleared from the role state.
    Select(SelectArgs),
    /// Record a task's outcome: its run row (when it reported `--token`) and the change
    /// to its role's adapter state (a `done` task pins its token; a failed resume of a
    /// token clears it).
    Record(RecordArgs),
    /// Role sessions and their per-agent adapter state: `create`, `get`, `set`, `clear`.
    #[command(subcommand)]
    Role(RoleCommand),
}

/// `spool resume select`.
#[derive(Debug, Args)]
struct SelectArgs {
    /// The adapter's agent type (`codex`, `claude_code`, `opencode`, …).
    #[arg(long, value_name = "A")]
    agent: String,
    /// The task's role session (its adapter state is the first source).
    #[arg(long, value_name = "ROLE_SESSION_ID")]
    role: Option<String>,
    /// The task's project: history rows of other projects are ignored.
    #[arg(long, value_name = "P")]
    project: Option<String>,
    /// The task's session scope (recorded in the metadata to set).
    #[arg(long, value_name = "S")]
    scope: Option<String>,
    /// A token the adapter was configured to resume.
    #[arg(long, value_name = "TOKEN")]
    preconfigured: Option<String>,
    /// An agent type whose tokens survive failed runs; repeatable (default:
    /// `claude_code`).
    #[arg(long, value_name = "AGENT")]
    surviving: Vec<String>,
    /// Print the decision as JSON.
    #[arg(long)]
    json: bool,
}

/// `spool resume record`.
#[derive(Debug, Args)]
struct RecordArgs {
    /// The adapter's agent type.
    #[arg(long, value_name = "A")]
    agent: String,
    /// The task.
    #[arg(long, value_name = "T")]
    task: String,
    /// How it ended: `done`, `failed`, `working`, `cancelled`, …
    #[arg(long, value_name = "S")]
    status: String,
    /// The provider token the run reported (it gets a run row).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// The token the run was resuming (a terminal failure gets a run row for it too).
    #[arg(long, value_name = "TOKEN")]
    resumed_from: Option<String>,
    /// The token was captured from the provider's stream before the run ended.
    #[arg(long)]
    from_stream: bool,
    /// The task's role session.
    #[arg(long, value_name = "ROLE_SESSION_ID")]
    role: Option<String>,
    /// The task's project.
    #[arg(long, value_name = "P", default_value = "default")]
    project: String,
    /// Where the agent worked.
    #[arg(long, value_name = "PATH")]
    workspace_path: Option<String>,
    /// How the agent was run (`exec`, `interactive`, …).
    #[arg(long, value_name = "M")]
    run_mode: Option<String>,
    /// An agent type whose tokens survive failed runs; repeatable (default:
    /// `claude_code`).
    #[arg(long, value_name = "AGENT")]
    surviving: Vec<String>,
    /// Print what changed as JSON.
    #[arg(long)]
    json: bool,
}

/// `spool resume role …`.
#[derive(Debug, Subcommand)]
enum RoleCommand {
    /// Create a role session (e.g. `role-runtime::run-1::cto`) with no adapter state; one
    /// that exists is a `conflict`.
    Create {
        /// The role session id.
        role_session_id: String,
        /// The run it belongs to.
        #[arg(long, value_name = "ID")]
        run_id: Option<String>,
        /// The role it plays.
        #[arg(long, value_name = "ID")]
        role_id: Option<String>,
        /// Print the role session as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a role session, or with `--agent` only that agent's adapter state.
    Get {
        /// The role session id.
        role_session_id: String,
        /// Only this agent type's adapter state (`null` with `--json` when it has none).
        #[arg(long, value_name = "A")]
        agent: Option<String>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set an agent's adapter state (latest wins: the whole entry is replaced).
    Set {
        /// The role session id.
        role_session_id: String,
        /// The agent type.
        #[arg(long, value_name = "A")]
        agent: String,
        /// The entry, a JSON object (e.g. `{"resume_session_id":"thread-abc"}`).
        #[arg(long, value_name = "JSON", value_parser = parse_json_object)]
        state: BTreeMap<String, Value>,
        /// Print `{"updated": true}`.
        #[arg(long)]
        json: bool,
    },
    /// Clear an agent's adapter state (and the legacy flat resume keys).
    Clear {
        /// The role session id.
        role_session_id: String,
        /// The agent type.
        #[arg(long, value_name = "A")]
        agent: String,
        /// Print `{"cleared": true}`.
        #[arg(long)]
        json: bool,
    },
}

/// `spool runs …`.
#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// List recorded external runs, ordered by agent type, token, project and task.
    List {
        /// Only runs of this agent type.
        #[arg(long, value_name = "A")]
        agent: Option<String>,
        /// Only runs of this project.
        #[arg(long, value_name = "P")]
        project: Option<String>,
        /// Only runs of this role session.
        #[arg(long, value_name = "ROLE_SESSION_ID")]
        role: Option<String>,
        /// How many runs to list (1 to 1000).
        #[arg(long, default_value_t = 20, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Continue after a previous page (its `next_cursor`).
        #[arg(long)]
        cursor: Option<String>,
        /// Print the page as JSON (`{"runs": […], "next_cursor": …}`).
        #[arg(long)]
        json: bool,
    },
}

fn surviving(agents: &[String]) -> Option<Vec<String>> {
    (!agents.is_empty()).then(|| agents.to_vec())
}

/// Runs `spool resume …`.
pub(crate) fn run(spool: &mut Spool, args: &ResumeArgs) -> Result<(), Error> {
    match (&args.command, &args.key) {
        (Some(ResumeCommand::Select(select)), _) => self::select(spool, select),
        (Some(ResumeCommand::Record(record)), _) => self::record(spool, record),
        (Some(ResumeCommand::Role(role)), _) => self::role(spool, role),
        (None, Some(key)) => lifecycle::resume(
            spool,
            &KeyArgs {
                key: key.clone(),
                json: args.json,
            },
        ),
        // clap requires KEY when there is no subcommand.
        (None, None) => Err(Error::spool(
            spool::ErrorCode::InvalidArgument,
            "`spool resume` needs a KEY or a subcommand".into(),
        )),
    }
}

fn select(spool: &mut Spool, args: &SelectArgs) -> Result<(), Error> {
    let decision = spool.select_resume(ResumeRequest {
        agent_type: args.agent.clone(),
        role_session_id: args.role.clone(),
        project_id: args.project.clone(),
        scope_id: args.scope.clone(),
        preconfigured: args.preconfigured.clone(),
        surviving_agents: surviving(&args.surviving),
    })?;
    if args.json {
        return print_json(&decision);
    }
    out!("{}", decision_text(&decision, &args.agent));
    if decision.clear_role_state
        && let Some(role) = &args.role
    {
        outln!("  cleared the {} adapter state of {role}", args.agent);
    }
    Ok(())
}

/// `resume thread-abc (codex)`, `start new: … failed terminally (…)`, `auto: …`.
fn decision_text(d: &ResumeDecision, agent: &str) -> String {
    match d.mode.as_str() {
        "resume" => format!("resume {} ({agent})\n", d.session_id),
        "new" => format!(
            "start new: {} failed terminally ({})\n",
            d.rejected_token.as_deref().unwrap_or("the resume token"),
            pairs(&d.set_metadata)
        ),
        "auto" => "auto: nothing to resume\n".to_owned(),
        other => format!("{other}\n"),
    }
}

/// `k=v, k2=v2` with strings unquoted.
fn pairs(map: &BTreeMap<String, Value>) -> String {
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn record(spool: &mut Spool, args: &RecordArgs) -> Result<(), Error> {
    let outcome = TaskOutcome {
        agent_type: args.agent.clone(),
        task_id: args.task.clone(),
        status: args.status.clone(),
        token: args.token.clone(),
        resumed_from: args.resumed_from.clone(),
        from_stream: args.from_stream,
    };
    let rows: Vec<String> = spool::resume::rules::outcome_tokens(&outcome)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let effects = spool.record_task_outcome(OutcomeRequest {
        role_session_id: args.role.clone(),
        project_id: args.project.clone(),
        outcome,
        workspace_path: args.workspace_path.clone(),
        run_mode: args.run_mode.clone(),
        metadata: BTreeMap::new(),
        surviving_agents: surviving(&args.surviving),
    })?;
    if args.json {
        return print_json(&effects);
    }
    match rows.as_slice() {
        [] => outln!(
            "recorded task {} of {} ({}, no token: no run row)",
            args.task,
            args.agent,
            args.status
        ),
        tokens => outln!(
            "recorded {} run of task {} ({}, token {})",
            args.agent,
            args.task,
            args.status,
            tokens.join(", token ")
        ),
    }
    out!("{}", effects_text(&effects, args.role.as_deref()));
    Ok(())
}

fn effects_text(e: &TaskOutcomeEffects, role: Option<&str>) -> String {
    let mut out = String::new();
    let state = match &e.role_state {
        RoleStateChange::Keep => "kept".to_owned(),
        RoleStateChange::Set { entry } => format!("set ({})", pairs(entry)),
        RoleStateChange::Clear => "cleared".to_owned(),
    };
    match role {
        Some(role) => out.push_str(&format!("  role state  {state} in {role}\n")),
        None => out.push_str(&format!("  role state  {state} (no role session)\n")),
    }
    if !e.set_metadata.is_empty() {
        out.push_str(&format!("  task set    {}\n", pairs(&e.set_metadata)));
    }
    if !e.remove_metadata.is_empty() {
        out.push_str(&format!("  task unset  {}\n", e.remove_metadata.join(", ")));
    }
    out
}

fn role(spool: &mut Spool, command: &RoleCommand) -> Result<(), Error> {
    match command {
        RoleCommand::Create {
            role_session_id,
            run_id,
            role_id,
            json,
        } => {
            // `save` replaces; `create` must not wipe an existing role's state.
            if spool.get_role_session(role_session_id)?.is_some() {
                return Err(Error::spool(
                    spool::ErrorCode::Conflict,
                    format!("role session already exists: {role_session_id}"),
                ));
            }
            let role = spool.save_role_session(NewRoleSession {
                role_session_id: role_session_id.clone(),
                run_id: run_id.clone(),
                role_id: role_id.clone(),
                adapter_state: BTreeMap::new(),
            })?;
            if *json {
                return print_json(&role);
            }
            out!("created {}", role_text(&role));
            Ok(())
        }
        RoleCommand::Get {
            role_session_id,
            agent,
            json,
        } => {
            let role = spool
                .get_role_session(role_session_id)?
                .ok_or_else(|| not_found(format!("role session not found: {role_session_id}")))?;
            let Some(agent) = agent else {
                if *json {
                    return print_json(&role);
                }
                out!("{}", role_text(&role));
                return Ok(());
            };
            let state = spool.get_role_adapter_state(role_session_id, agent)?;
            if *json {
                return print_json(&state);
            }
            match state {
                Some(state) => outln!("{agent}: {}", Value::Object(state.into_iter().collect())),
                None => outln!("no {agent} adapter state in {role_session_id}"),
            }
            Ok(())
        }
        RoleCommand::Set {
            role_session_id,
            agent,
            state,
            json,
        } => {
            if !spool.update_role_adapter_state(role_session_id, agent, Some(state.clone()))? {
                return Err(not_found(format!(
                    "role session not found: {role_session_id}"
                )));
            }
            if *json {
                return print_json(&json!({ "updated": true }));
            }
            outln!("set the {agent} adapter state of {role_session_id}");
            Ok(())
        }
        RoleCommand::Clear {
            role_session_id,
            agent,
            json,
        } => {
            if !spool.update_role_adapter_state(role_session_id, agent, None)? {
                return Err(not_found(format!(
                    "role session not found: {role_session_id}"
                )));
            }
            if *json {
                return print_json(&json!({ "cleared": true }));
            }
            outln!("cleared the {agent} adapter state of {role_session_id}");
            Ok(())
        }
    }
}

fn role_text(r: &RoleSession) -> String {
    let mut out = format!("role session {}\n", r.role_session_id);
    if let Some(run) = &r.run_id {
        out.push_str(&format!("  run      {run}\n"));
    }
    if let Some(role) = &r.role_id {
        out.push_str(&format!("  role     {role}\n"));
    }
    out.push_str(&format!("  created  {}\n", render::time(r.created_at)));
    out.push_str(&format!("  updated  {}\n", render::time(r.updated_at)));
    if r.adapter_state.is_empty() {
        out.push_str("  no adapter state\n");
    }
    for (key, value) in &r.adapter_state {
        out.push_str(&format!("  {key}: {value}\n"));
    }
    out
}

/// Runs `spool runs …`.
pub(crate) fn runs(spool: &mut Spool, command: &RunsCommand) -> Result<(), Error> {
    let RunsCommand::List {
        agent,
        project,
        role,
        limit,
        cursor,
        json,
    } = command;
    let filter = RunFilter {
        agent_type: agent.clone(),
        project_id: project.clone(),
        role_session_id: role.clone(),
    };
    let list = spool.list_runs(filter, *limit, cursor.clone())?;
    if *json {
        return print_json(&list);
    }
    if list.runs.is_empty() {
        outln!("no runs recorded in workspace `{}`", spool.workspace());
        return Ok(());
    }
    out!("{}", render::run_table(&list.runs));
    if let Some(next) = list.next_cursor {
        outln!("(more: spool runs list --limit {limit} --cursor {next})");
    }
    Ok(())
}
