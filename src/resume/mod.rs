//! Role sessions and external run records: the storage side of resume selection
//! (ARCHITECTURE.md, "Resume selection"). The rules themselves are the plain functions of
//! [`rules`](mod@crate::resume::rules); the operations here read what they need, apply the
//! decision and write it in one commit.
//!
//! A **role session** (e.g. `role-runtime::run-1::cto`) keeps adapter state keyed by
//! agent type in `adapter_state`, beside any other keys its owner put there (legacy flat
//! resume keys, `selected_execution_agent`, …). A **run record** is one external run of
//! an agent CLI. Selection reads only the rows it needs, through indexes of `done` runs
//! with real (non-synthetic) tokens that are kept in step with every run written:
//!
//! | tag | key | value |
//! |-----|-----|-------|
//! | `o` | `o · role_session_id` | role session record |
//! | `u` | `u · agent_type · token · project_id · task_id` | run record |
//! | `v` | `v · agent_type · token` | the token's write counter: writes to one token serialize on it |
//! | `d` | `d · agent_type · updated_at · token · project_id · task_id` | empty: every `done` run |
//! | `p` | `p · agent_type · project_id · updated_at · token · task_id` | empty: the same, by project |
//! | `w` | `w · agent_type · updated_at · token · project_id · task_id` | empty: `done` runs of tokens whose newest run is not a terminal failure |
//! | `z` | `z · agent_type · project_id · updated_at · token · task_id` | empty: `done` runs of tokens whose newest run in that project is not a terminal failure |
//!
//! With role state (or a preconfigured token), selection reads the role record and the
//! rows of one token. Without it, the newest key of one index answers: `w`/`z` for agents
//! whose tokens die with a failed run, `d`/`p` for agents whose tokens survive failures,
//! the by-project ones when the task names a project. Either way selection reads a
//! constant number of records, and its answer is what [`crate::resume::rules::choose_resume`]
//! gives over the whole history (`tests/resume_props.rs` checks this). Writing a run
//! reads the rows of its token and rewrites that token's index keys.

pub mod rules;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::resume::rules::{
    LEGACY_RESUME_KEYS, ResumeDecision, ResumePolicy, ResumeQuery, RoleStateChange, RunRecord,
    TaskOutcome, TaskOutcomeEffects,
};
use crate::storage::keys::{self, KeyBuf};
use crate::storage::keys::{
    ROLE, RUN, RUN_DONE, RUN_DONE_IN_PROJECT, RUN_LIVE, RUN_LIVE_IN_PROJECT, RUN_TOKEN,
};
use crate::storage::record;
use crate::storage::{Batch, KeyRange, RangeQuery};

/// A role session: the adapter state its agents leave for the next task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleSession {
    /// Its id, e.g. `role-runtime::run-1::cto`.
    pub role_session_id: String,
    /// The run it belongs to.
    #[serde(default)]
    pub run_id: Option<String>,
    /// The role it plays.
    #[serde(default)]
    pub role_id: Option<String>,
    /// Adapter state: one object per agent type, beside the owner's other keys.
    #[serde(default)]
    pub adapter_state: BTreeMap<String, Value>,
    /// Creation time.
    pub created_at: u64,
    /// Time of the last write.
    pub updated_at: u64,
}

/// What [`save_role_session`] stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRoleSession {
    /// Its id.
    pub role_session_id: String,
    /// The run it belongs to.
    #[serde(default)]
    pub run_id: Option<String>,
    /// The role it plays.
    #[serde(default)]
    pub role_id: Option<String>,
    /// The whole adapter state (replaces what was stored).
    #[serde(default)]
    pub adapter_state: BTreeMap<String, Value>,
}

/// A run as the host reports it; the core stamps `updated_at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRun {
    /// `codex`, `claude_code`, `opencode`, …
    pub agent_type: String,
    /// The project.
    pub project_id: String,
    /// The provider token, or a synthetic monitor id.
    pub session_id: String,
    /// The task.
    pub task_id: String,
    /// `working`, `done`, `failed`, …
    pub status: String,
    /// The role session, if any.
    #[serde(default)]
    pub role_session_id: Option<String>,
    /// Where the agent worked.
    #[serde(default)]
    pub workspace_path: Option<String>,
    /// How the agent was run.
    #[serde(default)]
    pub run_mode: Option<String>,
    /// Anything else.
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
}

/// Which runs [`list_runs`] returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFilter {
    /// Only this agent type's runs.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Only this project's runs.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Only this role session's runs.
    #[serde(default)]
    pub role_session_id: Option<String>,
}

/// One page of runs, ordered by agent type, token, project, task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunList {
    /// The runs.
    pub runs: Vec<RunRecord>,
    /// Pass back to read the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// What a task asks before it starts ([`select_resume`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// The adapter's agent type.
    pub agent_type: String,
    /// The task's role session, if any: its adapter state is the first source.
    #[serde(default)]
    pub role_session_id: Option<String>,
    /// The task's project: history rows of other projects are ignored.
    #[serde(default)]
    pub project_id: Option<String>,
    /// The task's session scope.
    #[serde(default)]
    pub scope_id: Option<String>,
    /// A token the adapter was configured to resume.
    #[serde(default)]
    pub preconfigured: Option<String>,
    /// Agent types whose tokens survive failed runs (default: `claude_code`).
    #[serde(default)]
    pub surviving_agents: Option<Vec<String>>,
}

/// A finished (or streaming) task to record ([`record_task_outcome`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRequest {
    /// The task's role session, if any.
    #[serde(default)]
    pub role_session_id: Option<String>,
    /// The task's project.
    pub project_id: String,
    /// What happened.
    pub outcome: TaskOutcome,
    /// Where the agent worked.
    #[serde(default)]
    pub workspace_path: Option<String>,
    /// How the agent was run.
    #[serde(default)]
    pub run_mode: Option<String>,
    /// Anything else to keep on the run row.
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
    /// Agent types whose tokens survive failed runs (default: `claude_code`).
    #[serde(default)]
    pub surviving_agents: Option<Vec<String>>,
}

fn role_key(id: &str) -> Vec<u8> {
    KeyBuf::new(ROLE).str(id).finish()
}

fn token_prefix(agent: &str, token: &str) -> Vec<u8> {
    KeyBuf::new(RUN).str(agent).str(token).finish()
}

fn run_key(run: &RunRecord) -> Vec<u8> {
    KeyBuf::new(RUN)
        .str(&run.agent_type)
        .str(&run.session_id)
        .str(&run.project_id)
        .str(&run.task_id)
        .finish()
}

/// Whether `run` can be resumed from history at all: `done`, with a real token.
fn indexed(run: &RunRecord) -> bool {
    run.status == "done" && !rules::is_synthetic(&run.session_id, &run.agent_type)
}

fn terminal(run: &RunRecord) -> bool {
    rules::TERMINAL_FAILURES.contains(&run.status.as_str())
}

/// Whether the newest of `rows` (ties: a terminal failure wins, as in
/// [`rules::newest`]) is not a terminal failure.
fn live<'a>(rows: impl Iterator<Item = &'a RunRecord>) -> bool {
    rows.max_by_key(|r| (r.updated_at, terminal(r)))
        .is_some_and(|r| !terminal(r))
}

/// Every index key of the runs of one agent's token.
fn index_keys(rows: &[RunRecord]) -> BTreeSet<Vec<u8>> {
    let live_overall = live(rows.iter());
    let mut out = BTreeSet::new();
    for r in rows.iter().filter(|r| indexed(r)) {
        let (a, t, p, k) = (&r.agent_type, &r.session_id, &r.project_id, &r.task_id);
        let at = r.updated_at;
        let flat = |tag| {
            KeyBuf::new(tag)
                .str(a)
                .u64(at)
                .str(t)
                .str(p)
                .str(k)
                .finish()
        };
        let by_project = |tag| {
            KeyBuf::new(tag)
                .str(a)
                .str(p)
                .u64(at)
                .str(t)
                .str(k)
                .finish()
        };
        out.insert(flat(RUN_DONE));
        out.insert(by_project(RUN_DONE_IN_PROJECT));
        if live_overall {
            out.insert(flat(RUN_LIVE));
        }
        if live(rows.iter().filter(|o| o.project_id == *p)) {
            out.insert(by_project(RUN_LIVE_IN_PROJECT));
        }
    }
    out
}

fn policy(surviving: &Option<Vec<String>>) -> ResumePolicy {
    surviving
        .clone()
        .map_or_else(ResumePolicy::default, |surviving_agents| ResumePolicy {
            surviving_agents,
        })
}

fn check_map(field: &'static str, map: &BTreeMap<String, Value>) -> Result<(), Error> {
    let size = serde_json::to_vec(map).map_or(usize::MAX, |v| v.len());
    if size > validate::MAX_CONTENT_BYTES {
        return Err(Error::invalid(
            field,
            format!(
                "is {size} bytes of JSON; the limit is {}",
                validate::MAX_CONTENT_BYTES
            ),
        ));
    }
    Ok(())
}

/// A list of agent types: at most [`validate::MAX_PAGE`] ids.
fn check_agents(agents: Option<&[String]>) -> Result<(), Error> {
    let agents = agents.unwrap_or_default();
    if agents.len() > validate::MAX_PAGE as usize {
        return Err(Error::invalid(
            "surviving_agents",
            format!(
                "holds {} agents; at most {}",
                agents.len(),
                validate::MAX_PAGE
            ),
        ));
    }
    agents
        .iter()
        .try_for_each(|a| validate::id("surviving_agents", a))
}

fn check_ids(pairs: &[(&'static str, Option<&str>)]) -> Result<(), Error> {
    pairs
        .iter()
        .filter_map(|(field, value)| value.map(|v| (*field, v)))
        .try_for_each(|(field, value)| validate::id(field, value))
}

/// A role session as read, with its bytes (the commit's precondition).
struct LoadedRole {
    role: RoleSession,
    bytes: Vec<u8>,
}

async fn load_role(io: &Io, id: &str) -> Result<Option<LoadedRole>, Error> {
    let key = role_key(id);
    match io.get(key.clone()).await? {
        None => Ok(None),
        Some(bytes) => Ok(Some(LoadedRole {
            role: record::decode(&key, &bytes)?,
            bytes,
        })),
    }
}

/// The adapter-state entry of `agent` when it is an object.
fn entry_of(role: &RoleSession, agent: &str) -> Option<BTreeMap<String, Value>> {
    match role.adapter_state.get(agent) {
        Some(Value::Object(map)) => Some(crate::order::map_of(map.clone())),
        _ => None,
    }
}

/// Applies `change` to `role`'s entry for `agent`; `Clear` also drops the legacy flat
/// resume keys and leaves every other key alone.
fn apply_change(role: &mut RoleSession, agent: &str, change: &RoleStateChange) {
    match change {
        RoleStateChange::Keep => {}
        RoleStateChange::Set { entry } => {
            let mut object = serde_json::Map::new();
            object.extend(entry.clone());
            role.adapter_state
                .insert(agent.to_owned(), Value::Object(object));
        }
        RoleStateChange::Clear => {
            role.adapter_state.remove(agent);
            for legacy in LEGACY_RESUME_KEYS {
                role.adapter_state.remove(legacy);
            }
        }
    }
}

fn put_role(batch: &mut Batch, old: Option<&LoadedRole>, role: &RoleSession) -> Result<(), Error> {
    // Per-agent entries are checked as they come; their sum is bounded too.
    check_map("adapter_state", &role.adapter_state)?;
    let key = role_key(&role.role_session_id);
    match old {
        Some(old) => batch.require_equals(key.clone(), old.bytes.clone()),
        None => batch.require_absent(key.clone()),
    }
    batch.put(key, record::encode(role)?);
    Ok(())
}

/// Creates or replaces a role session (the whole adapter state is replaced).
pub fn save_role_session(
    workspace: &str,
    role: NewRoleSession,
    now_ms: u64,
) -> Operation<RoleSession> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::workspace(workspace))
            .and_then(|()| validate::id("role_session_id", &role.role_session_id))
            .and_then(|()| {
                check_ids(&[
                    ("run_id", role.run_id.as_deref()),
                    ("role_id", role.role_id.as_deref()),
                ])
            })
            .and_then(|()| check_map("adapter_state", &role.adapter_state))
    );
    Operation::new(workspace, move |io| {
        let role = role.clone();
        async move {
            let old = load_role(&io, &role.role_session_id).await?;
            let saved = RoleSession {
                created_at: old.as_ref().map_or(now_ms, |o| o.role.created_at),
                updated_at: now_ms,
                role_session_id: role.role_session_id,
                run_id: role.run_id,
                role_id: role.role_id,
                adapter_state: role.adapter_state,
            };
            let mut batch = Batch::default();
            put_role(&mut batch, old.as_ref(), &saved)?;
            io.commit(batch).await?;
            Ok(saved)
        }
    })
}

/// The role session, or none.
pub fn get_role_session(workspace: &str, role_session_id: &str) -> Operation<Option<RoleSession>> {
    check!(
        workspace,
        validate::workspace(workspace)
            .and_then(|()| validate::id("role_session_id", role_session_id))
    );
    let id = role_session_id.to_owned();
    Operation::new(workspace, move |io| {
        let id = id.clone();
        async move { Ok(load_role(&io, &id).await?.map(|l| l.role)) }
    })
}

/// Sets (latest wins, nothing merged from the previous entry) or, with `None`, clears the
/// adapter state of `agent_type` in a role session; clearing also drops the legacy flat
/// resume keys. Other agents' entries and unrelated keys stay. False when the role
/// session does not exist.
pub fn update_role_adapter_state(
    workspace: &str,
    role_session_id: &str,
    agent_type: &str,
    state: Option<BTreeMap<String, Value>>,
    now_ms: u64,
) -> Operation<bool> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::workspace(workspace))
            .and_then(|()| validate::id("role_session_id", role_session_id))
            .and_then(|()| validate::id("agent_type", agent_type))
            .and_then(|()| {
                state
                    .as_ref()
                    .map_or(Ok(()), |s| check_map("adapter_state", s))
            })
    );
    let (id, agent) = (role_session_id.to_owned(), agent_type.to_owned());
    Operation::new(workspace, move |io| {
        let (id, agent, state) = (id.clone(), agent.clone(), state.clone());
        async move {
            let Some(old) = load_role(&io, &id).await? else {
                return Ok(false);
            };
            let mut role = old.role.clone();
            let change = match state {
                Some(entry) => RoleStateChange::Set { entry },
                None => RoleStateChange::Clear,
            };
            apply_change(&mut role, &agent, &change);
            role.updated_at = now_ms;
            let mut batch = Batch::default();
            put_role(&mut batch, Some(&old), &role)?;
            io.commit(batch).await?;
            Ok(true)
        }
    })
}

/// The adapter state of `agent_type` in a role session; none when the role session or
/// the entry is missing.
pub fn get_role_adapter_state(
    workspace: &str,
    role_session_id: &str,
    agent_type: &str,
) -> Operation<Option<BTreeMap<String, Value>>> {
    check!(
        workspace,
        validate::workspace(workspace)
            .and_then(|()| validate::id("agent_type", agent_type))
            .and_then(|()| validate::id("role_session_id", role_session_id))
    );
    let agent = agent_type.to_owned();
    get_role_session(workspace, role_session_id)
        .map(move |role| role.and_then(|r| entry_of(&r, &agent)))
}

fn check_run(run: &NewRun) -> Result<(), Error> {
    check_ids(&[
        ("agent_type", Some(&run.agent_type)),
        ("project_id", Some(&run.project_id)),
        ("session_id", Some(&run.session_id)),
        ("task_id", Some(&run.task_id)),
        ("status", Some(&run.status)),
        ("role_session_id", run.role_session_id.as_deref()),
        ("run_mode", run.run_mode.as_deref()),
    ])?;
    if let Some(path) = &run.workspace_path {
        validate::text("workspace_path", path, validate::MAX_PATH_BYTES)?;
    }
    check_map("metadata", &run.metadata)
}

/// Adds to `batch` the writes that store `run` (replacing the row with the same agent,
/// token, project and task) and bring its token's index keys in step. Reads the token's
/// rows and write counter; the commit is guarded by the counter.
pub(crate) async fn stage_run(io: &Io, batch: &mut Batch, run: &RunRecord) -> Result<(), Error> {
    let counter_key = KeyBuf::new(RUN_TOKEN)
        .str(&run.agent_type)
        .str(&run.session_id)
        .finish();
    let next = match io.get(counter_key.clone()).await? {
        Some(bytes) => {
            let count: u64 = record::decode(&counter_key, &bytes)?;
            batch.require_equals(counter_key.clone(), bytes);
            count.saturating_add(1)
        }
        None => {
            batch.require_absent(counter_key.clone());
            1
        }
    };
    batch.put(counter_key, record::encode(&next)?);
    let before = rows_of(io, &run.agent_type, &run.session_id).await?;
    let mut after: Vec<RunRecord> = before
        .iter()
        .filter(|r| (&r.project_id, &r.task_id) != (&run.project_id, &run.task_id))
        .cloned()
        .collect();
    after.push(run.clone());
    let (old, new) = (index_keys(&before), index_keys(&after));
    for gone in old.difference(&new) {
        batch.delete(gone.clone());
    }
    for added in new.difference(&old) {
        batch.put(added.clone(), Vec::new());
    }
    batch.put(run_key(run), record::encode(run)?);
    Ok(())
}

fn stamp(run: NewRun, now_ms: u64) -> RunRecord {
    RunRecord {
        agent_type: run.agent_type,
        project_id: run.project_id,
        session_id: run.session_id,
        status: run.status,
        updated_at: now_ms,
        task_id: run.task_id,
        role_session_id: run.role_session_id,
        workspace_path: run.workspace_path,
        run_mode: run.run_mode,
        metadata: run.metadata,
    }
}

/// Records an external run (one row per agent type, token, project and task; recording
/// it again replaces the row), stamped `now_ms`.
pub fn record_run(workspace: &str, run: NewRun, now_ms: u64) -> Operation<RunRecord> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::workspace(workspace))
            .and_then(|()| check_run(&run))
    );
    Operation::new(workspace, move |io| {
        let run = stamp(run.clone(), now_ms);
        async move {
            let mut batch = Batch::default();
            stage_run(&io, &mut batch, &run).await?;
            io.commit(batch).await?;
            Ok(run)
        }
    })
}

/// One page of run records matching `filter`, ordered by agent type, token, project and
/// task.
pub fn list_runs(
    workspace: &str,
    filter: RunFilter,
    limit: u32,
    cursor: Option<String>,
) -> Operation<RunList> {
    let checked = validate::workspace(workspace)
        .and_then(|()| validate::limit(limit))
        .and_then(|()| {
            check_ids(&[
                ("agent_type", filter.agent_type.as_deref()),
                ("project_id", filter.project_id.as_deref()),
                ("role_session_id", filter.role_session_id.as_deref()),
            ])
        })
        .and_then(|()| {
            cursor
                .as_deref()
                .map(|c| validate::unhex("cursor", c))
                .transpose()
        });
    let after = match checked {
        Ok(after) => after,
        Err(e) => return Operation::failed(workspace, e),
    };
    let prefix = match &filter.agent_type {
        Some(agent) => KeyBuf::new(RUN).str(agent).finish(),
        None => vec![RUN],
    };
    let range = KeyRange::prefix(&prefix);
    if after.as_ref().is_some_and(|a| !range.contains(a)) {
        return Operation::failed(
            workspace,
            Error::invalid("cursor", "does not belong to this listing"),
        );
    }
    Operation::new(workspace, move |io| {
        let (filter, range, after) = (filter.clone(), range.clone(), after.clone());
        async move {
            let mut runs = Vec::new();
            let mut start = after.map_or(range.start.clone(), |mut a| {
                a.push(0);
                a
            });
            let mut last_key = None;
            loop {
                let chunk = io
                    .range(RangeQuery {
                        range: KeyRange {
                            start: start.clone(),
                            end: range.end.clone(),
                        },
                        limit,
                        reverse: false,
                    })
                    .await?;
                let exhausted = chunk.len() < limit as usize;
                for kv in chunk {
                    let run: RunRecord = record::decode(&kv.key, &kv.value)?;
                    start = kv.key.clone();
                    start.push(0);
                    let wanted = filter
                        .project_id
                        .as_ref()
                        .is_none_or(|p| *p == run.project_id)
                        && filter
                            .role_session_id
                            .as_ref()
                            .is_none_or(|r| run.role_session_id.as_ref() == Some(r));
                    if wanted {
                        runs.push(run);
                        if runs.len() == limit as usize {
                            last_key = Some(kv.key);
                            break;
                        }
                    }
                }
                if last_key.is_some() || exhausted {
                    break;
                }
            }
            Ok(RunList {
                runs,
                next_cursor: last_key.map(|k| validate::hex(&k)),
            })
        }
    })
}

/// Every run row of `token` for `agent`.
async fn rows_of(io: &Io, agent: &str, token: &str) -> Result<Vec<RunRecord>, Error> {
    let pairs = crate::session::read_all(io, KeyRange::prefix(&token_prefix(agent, token))).await?;
    pairs
        .iter()
        .map(|kv| record::decode(&kv.key, &kv.value))
        .collect()
}

/// The history rows selection needs: the candidate token's rows, or, without one, the
/// rows of the token of the newest key of the index that answers this query.
async fn history_for(
    io: &Io,
    query: &ResumeQuery,
    candidate: Option<&str>,
    policy: &ResumePolicy,
) -> Result<Vec<RunRecord>, Error> {
    let agent = query.agent_type.as_str();
    if let Some(token) = candidate {
        return rows_of(io, agent, token).await;
    }
    // Whether a failed run kills this agent's tokens under this policy.
    let dies = policy.kills(agent, "failed");
    let prefix = match (&query.project_id, dies) {
        (None, false) => KeyBuf::new(RUN_DONE).str(agent).finish(),
        (None, true) => KeyBuf::new(RUN_LIVE).str(agent).finish(),
        (Some(p), false) => KeyBuf::new(RUN_DONE_IN_PROJECT).str(agent).str(p).finish(),
        (Some(p), true) => KeyBuf::new(RUN_LIVE_IN_PROJECT).str(agent).str(p).finish(),
    };
    let newest = io
        .range(RangeQuery {
            range: KeyRange::prefix(&prefix),
            limit: 1,
            reverse: true,
        })
        .await?;
    let Some(kv) = newest.first() else {
        return Ok(Vec::new());
    };
    let Some((token, _)) =
        keys::read_u64(&kv.key, prefix.len()).and_then(|(_, at)| keys::read_str(&kv.key, at))
    else {
        return Err(Error::Corruption {
            key: keys::display(&kv.key),
            detail: "not a run index key".into(),
        });
    };
    rows_of(io, agent, &token).await
}

/// Decides whether a new task resumes a provider session ([`rules::choose_resume`]
/// over the stored role state and run history) and applies the decision's role-state
/// clear in one commit.
pub fn select_resume(workspace: &str, request: ResumeRequest) -> Operation<ResumeDecision> {
    check!(
        workspace,
        validate::workspace(workspace).and_then(|()| {
            check_ids(&[
                ("agent_type", Some(&request.agent_type)),
                ("role_session_id", request.role_session_id.as_deref()),
                ("project_id", request.project_id.as_deref()),
                ("scope_id", request.scope_id.as_deref()),
                ("preconfigured", request.preconfigured.as_deref()),
            ])
            .and_then(|()| check_agents(request.surviving_agents.as_deref()))
        })
    );
    Operation::new(workspace, move |io| {
        let request = request.clone();
        async move { select(&io, request).await }
    })
}

async fn select(io: &Io, request: ResumeRequest) -> OpResult<ResumeDecision> {
    let policy = policy(&request.surviving_agents);
    let role = match &request.role_session_id {
        Some(id) => load_role(io, id).await?,
        None => None,
    };
    let agent = request.agent_type.clone();
    let query = ResumeQuery {
        role_state: role.as_ref().and_then(|r| entry_of(&r.role, &agent)),
        agent_type: request.agent_type,
        project_id: request.project_id,
        scope_id: request.scope_id,
        preconfigured: request.preconfigured,
    };
    let candidate = query
        .role_state
        .as_ref()
        .and_then(|s| s.get("resume_session_id"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .or(query.preconfigured.as_deref().filter(|t| !t.is_empty()))
        .map(str::to_owned);
    let history = history_for(io, &query, candidate.as_deref(), &policy).await?;
    let decision = rules::choose_resume(&query, &history, &policy);
    if decision.clear_role_state
        && let Some(old) = role
    {
        let mut cleared = old.role.clone();
        apply_change(&mut cleared, &agent, &RoleStateChange::Clear);
        if cleared != old.role {
            let mut batch = Batch::default();
            put_role(&mut batch, Some(&old), &cleared)?;
            io.commit(batch).await?;
        }
    }
    Ok(decision)
}

/// Records what a task left behind ([`rules::outcome_effects`]): its run rows (one
/// per token of [`rules::outcome_tokens`]: the token it reported and, for a terminal
/// failure, the token it was resuming) and the change to its role's adapter state, in
/// one commit.
pub fn record_task_outcome(
    workspace: &str,
    request: OutcomeRequest,
    now_ms: u64,
) -> Operation<TaskOutcomeEffects> {
    check!(workspace, validate::now_ms(now_ms));
    let outcome = &request.outcome;
    check!(
        workspace,
        validate::workspace(workspace)
            .and_then(|()| {
                check_ids(&[
                    ("agent_type", Some(&outcome.agent_type)),
                    ("task_id", Some(&outcome.task_id)),
                    ("status", Some(&outcome.status)),
                    ("token", outcome.token.as_deref()),
                    ("resumed_from", outcome.resumed_from.as_deref()),
                    ("role_session_id", request.role_session_id.as_deref()),
                ])
            })
            .and_then(|()| check_agents(request.surviving_agents.as_deref()))
            .and_then(|()| {
                rules::outcome_tokens(outcome)
                    .into_iter()
                    .try_for_each(|token| check_run(&run_of(&request, token)))
            })
    );
    Operation::new(workspace, move |io| {
        let request = request.clone();
        async move { record_outcome(&io, request, now_ms).await }
    })
}

fn run_of(request: &OutcomeRequest, token: &str) -> NewRun {
    NewRun {
        agent_type: request.outcome.agent_type.clone(),
        project_id: request.project_id.clone(),
        session_id: token.to_owned(),
        task_id: request.outcome.task_id.clone(),
        status: request.outcome.status.clone(),
        role_session_id: request.role_session_id.clone(),
        workspace_path: request.workspace_path.clone(),
        run_mode: request.run_mode.clone(),
        metadata: request.metadata.clone(),
    }
}

async fn record_outcome(
    io: &Io,
    request: OutcomeRequest,
    now_ms: u64,
) -> OpResult<TaskOutcomeEffects> {
    let policy = policy(&request.surviving_agents);
    let agent = request.outcome.agent_type.clone();
    let role = match &request.role_session_id {
        Some(id) => load_role(io, id).await?,
        None => None,
    };
    let current = role
        .as_ref()
        .and_then(|r| entry_of(&r.role, &agent))
        .and_then(|e| {
            e.get("resume_session_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let effects = rules::outcome_effects(&request.outcome, current.as_deref(), &policy);
    let mut batch = Batch::default();
    for token in rules::outcome_tokens(&request.outcome) {
        let run = stamp(run_of(&request, token), now_ms);
        stage_run(io, &mut batch, &run).await?;
    }
    if let Some(old) = &role {
        let mut changed = old.role.clone();
        apply_change(&mut changed, &agent, &effects.role_state);
        if changed != old.role {
            changed.updated_at = now_ms;
            put_role(&mut batch, Some(old), &changed)?;
        }
    }
    if !batch.mutations.is_empty() {
        io.commit(batch).await?;
    }
    Ok(effects)
}

#[cfg(test)]
#[path = "tests/resume.rs"]
mod tests;
