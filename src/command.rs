//! Every API call as data: what the scenario vectors are written in, and what lets any
//! host replay a call without knowing its Rust signature.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::{ProbeAnswer, ProjectionMode};
use crate::compaction::{self, CommitRequest, CompactRequest, PersistRequest};
use crate::error::Error;
use crate::fork_model::{Disposition, ForkRequest};
use crate::model::{
    AppendRequest, BranchRequest, FinishStatus, Intent, ListFilter, NewContextState, PageRequest,
    SessionStatus, UpdateRequest,
};
use crate::op::Operation;
use crate::roles::{NewRoleSession, NewRun, OutcomeRequest, ResumeRequest, RunFilter};
use crate::threads::TurnCommit;
use crate::turns::{CloseTurn, StartTurn, TurnPageRequest};

/// One API call with its arguments (the workspace travels beside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Command {
    /// [`crate::create_session`].
    CreateSession {
        /// Session key.
        key: String,
        /// Identity of the new session.
        session_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::get_session`].
    GetSession {
        /// Session key.
        key: String,
    },
    /// [`crate::append_entry`].
    AppendEntry {
        /// Session key.
        key: String,
        /// The entry.
        request: AppendRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::read_page`].
    ReadPage {
        /// Session key.
        key: String,
        /// The page.
        request: PageRequest,
    },
    /// [`crate::list_sessions`].
    ListSessions {
        /// Page size.
        limit: u32,
        /// Cursor of the previous page.
        #[serde(default)]
        cursor: Option<String>,
        /// Only sessions of this agent id.
        #[serde(default)]
        agent_id: Option<String>,
        /// Only sessions in this state.
        #[serde(default)]
        status: Option<SessionStatus>,
    },
    /// [`crate::get_or_create`].
    GetOrCreate {
        /// Session key.
        key: String,
        /// Identity if created.
        session_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::apply_intent`].
    ApplyIntent {
        /// Session key.
        key: String,
        /// The intent.
        intent: Intent,
        /// Identity if created or reset.
        session_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::resume()`].
    Resume {
        /// Session key.
        key: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::update`].
    Update {
        /// Session key.
        key: String,
        /// The changes.
        request: UpdateRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::finish`].
    Finish {
        /// Session key.
        key: String,
        /// How it ended.
        status: FinishStatus,
        /// Fence.
        #[serde(default)]
        expected_epoch: Option<u64>,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::delete_session`].
    DeleteSession {
        /// Session key.
        key: String,
        /// Fence.
        #[serde(default)]
        expected_epoch: Option<u64>,
    },
    /// [`crate::prune_stale`].
    PruneStale {
        /// Idle time beyond which a session goes.
        max_age_ms: u64,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::cap_entries`].
    CapEntries {
        /// Sessions to keep.
        max: u64,
    },
    /// [`crate::count_entries`].
    CountEntries {
        /// Session key.
        key: String,
    },
    /// [`crate::get_entry`].
    GetEntry {
        /// Session key.
        key: String,
        /// The message id.
        message_id: String,
    },
    /// [`crate::truncate`].
    Truncate {
        /// Session key.
        key: String,
        /// Entries to keep.
        max_messages: u64,
        /// Fence.
        #[serde(default)]
        expected_epoch: Option<u64>,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::save_state`].
    SaveState {
        /// Session key.
        key: String,
        /// The state.
        state: NewContextState,
        /// Fence.
        #[serde(default)]
        expected_epoch: Option<u64>,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::list_states`].
    ListStates {
        /// Session key.
        key: String,
        /// Only valid states (the default).
        #[serde(default = "yes")]
        valid_only: bool,
    },
    /// [`crate::invalidate_states`].
    InvalidateStates {
        /// Session key.
        key: String,
        /// Only states of this kind.
        #[serde(default)]
        state_kind: Option<String>,
        /// Why.
        reason: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::compaction::compact`].
    Compact {
        /// Session key.
        key: String,
        /// How to compact.
        request: CompactRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::compaction::prepare_compaction`].
    PrepareCompaction {
        /// Session key.
        key: String,
        /// How to compact.
        request: CompactRequest,
    },
    /// [`crate::compaction::commit_compaction`].
    CommitCompaction {
        /// Session key.
        key: String,
        /// The summary and the prepared preimage.
        commit: CommitRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::compaction::persist_compaction_result`].
    PersistCompactionResult {
        /// Session key.
        key: String,
        /// The external summary and kept entries.
        persist: PersistRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::list_reset_archives`].
    ListResetArchives {
        /// Session key.
        key: String,
    },
    /// [`crate::compaction::canonical_transcript`].
    CanonicalTranscript {
        /// Session key.
        key: String,
    },
    /// [`crate::compaction::list_summaries`].
    ListSummaries {
        /// Session key.
        key: String,
    },
    /// [`crate::compaction::list_degraded_compactions`].
    ListDegradedCompactions {
        /// Only this agent's sessions.
        #[serde(default)]
        agent_id: Option<String>,
    },
    /// [`crate::compaction::compaction_preimage`].
    CompactionPreimage {
        /// Session key.
        key: String,
        /// The compaction.
        compaction_id: String,
    },
    /// [`crate::compaction::set_repair_status`].
    SetRepairStatus {
        /// Session key.
        key: String,
        /// The compaction.
        compaction_id: String,
        /// The new status.
        status: String,
    },
    /// [`crate::compaction::set_flush_receipt`].
    SetFlushReceipt {
        /// Session key.
        key: String,
        /// The compaction.
        compaction_id: String,
        /// The receipt.
        status: String,
    },
    /// [`crate::save_role_session`].
    SaveRoleSession {
        /// The role session.
        role: NewRoleSession,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::get_role_session`].
    GetRoleSession {
        /// Its id.
        role_session_id: String,
    },
    /// [`crate::update_role_adapter_state`].
    UpdateRoleAdapterState {
        /// The role session.
        role_session_id: String,
        /// The agent type.
        agent_type: String,
        /// The new entry; `null` clears it.
        state: Option<BTreeMap<String, Value>>,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::get_role_adapter_state`].
    GetRoleAdapterState {
        /// The role session.
        role_session_id: String,
        /// The agent type.
        agent_type: String,
    },
    /// [`crate::record_run`].
    RecordRun {
        /// The run.
        run: NewRun,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::list_runs`].
    ListRuns {
        /// Which runs.
        #[serde(default)]
        filter: RunFilter,
        /// Page size.
        limit: u32,
        /// Cursor of the previous page.
        #[serde(default)]
        cursor: Option<String>,
    },
    /// [`crate::select_resume`].
    SelectResume {
        /// What the task asks.
        request: ResumeRequest,
    },
    /// [`crate::record_task_outcome`].
    RecordTaskOutcome {
        /// What the task left.
        request: OutcomeRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::plan_provider_thread`].
    PlanProviderThread {
        /// Session key.
        key: String,
        /// The agent type.
        agent_type: String,
        /// A thread the provider just refused to resume.
        #[serde(default)]
        dead_thread: Option<String>,
    },
    /// [`crate::commit_turn`].
    CommitTurn {
        /// Session key.
        key: String,
        /// The turn.
        turn: TurnCommit,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::import::import_session`].
    ImportSession {
        /// The parsed session and where it goes.
        request: crate::import::ImportRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::branch`].
    Branch {
        /// The session to branch from.
        parent_key: String,
        /// The key of the new session.
        child_key: String,
        /// Identity, history to inherit, token budget.
        request: BranchRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::lineage()`].
    Lineage {
        /// Session key.
        key: String,
    },
    /// [`crate::list_children`].
    ListChildren {
        /// Session key.
        key: String,
    },
    /// [`crate::start_turn`].
    StartTurn {
        /// Session key.
        key: String,
        /// The turn.
        request: StartTurn,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::settle_turn`].
    SettleTurn {
        /// Session key.
        key: String,
        /// The running turn.
        turn_id: String,
        /// Provider ids learned at the end.
        #[serde(default)]
        close: CloseTurn,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::interrupt_turn`].
    InterruptTurn {
        /// Session key.
        key: String,
        /// The running turn.
        turn_id: String,
        /// Provider ids learned at the end.
        #[serde(default)]
        close: CloseTurn,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::get_turn`].
    GetTurn {
        /// Session key.
        key: String,
        /// The turn.
        turn_id: String,
    },
    /// [`crate::session_turns`].
    SessionTurns {
        /// Session key.
        key: String,
    },
    /// [`crate::list_turns`].
    ListTurns {
        /// Session key.
        key: String,
        /// The page (order, cursor, limit; all optional).
        #[serde(default)]
        request: TurnPageRequest,
    },
    /// [`crate::fork`].
    Fork {
        /// The source session's key.
        source_key: String,
        /// The fork request.
        request: ForkRequest,
        /// Id of the operation if the request is new.
        operation_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::begin_fork_dispatch`].
    BeginForkDispatch {
        /// The operation.
        operation_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::record_fork_disposition`].
    RecordForkDisposition {
        /// The operation.
        operation_id: String,
        /// What the provider said.
        disposition: Disposition,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::commit_fork`].
    CommitFork {
        /// The operation.
        operation_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::get_fork_operation`].
    GetForkOperation {
        /// The operation.
        operation_id: String,
    },
    /// [`crate::acknowledge_fork_operation`].
    AcknowledgeForkOperation {
        /// The operation.
        operation_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::recover_fork_operations`].
    RecoverForkOperations {
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::claim_fork_provider_binding`].
    ClaimForkProviderBinding {
        /// The child session's key.
        key: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::complete_fork_provider_binding`].
    CompleteForkProviderBinding {
        /// The operation.
        operation_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::get_fork_lineage`].
    GetForkLineage {
        /// Session key.
        key: String,
    },
    /// [`crate::capabilities::fork_projection`].
    ForkProjection {
        /// The sessions, in order.
        keys: Vec<String>,
        /// Which projection.
        mode: ProjectionMode,
        /// The provider's answers to earlier probes.
        #[serde(default)]
        answers: Vec<ProbeAnswer>,
    },
}

fn yes() -> bool {
    true
}

fn json<T: Serialize>(value: T) -> Result<serde_json::Value, Error> {
    serde_json::to_value(value)
        .map_err(|e| Error::internal(format!("result does not serialize: {e}")))
}

impl Command {
    /// Parses a call given as JSON text (`spool call`, the WIT `execute`): JSON that is
    /// not a call is `invalid_argument`, its message quoting at most a short prefix of
    /// any input it names ([`crate::validate::shorten_quoted`]).
    pub fn from_json(text: &str) -> Result<Command, Error> {
        serde_json::from_str(text).map_err(|e| Error::unparsed("command", "not a Spool call", &e))
    }

    /// The operation that performs this call in `workspace`, with its result as JSON.
    pub fn into_operation(self, workspace: &str) -> Operation<Result<serde_json::Value, Error>> {
        match self {
            Command::CreateSession {
                key,
                session_id,
                now_ms,
            } => crate::create_session(workspace, &key, &session_id, now_ms).map(json),
            Command::GetSession { key } => crate::get_session(workspace, &key).map(json),
            Command::AppendEntry {
                key,
                request,
                now_ms,
            } => crate::append_entry(workspace, &key, request, now_ms).map(json),
            Command::ReadPage { key, request } => {
                crate::read_page(workspace, &key, request).map(json)
            }
            Command::ListSessions {
                limit,
                cursor,
                agent_id,
                status,
            } => crate::list_sessions_where(
                workspace,
                limit,
                cursor.as_deref(),
                ListFilter { agent_id, status },
            )
            .map(json),
            Command::GetOrCreate {
                key,
                session_id,
                now_ms,
            } => crate::get_or_create(workspace, &key, &session_id, now_ms).map(json),
            Command::ApplyIntent {
                key,
                intent,
                session_id,
                now_ms,
            } => crate::apply_intent(workspace, &key, intent, &session_id, now_ms).map(json),
            Command::Resume { key, now_ms } => crate::resume(workspace, &key, now_ms).map(json),
            Command::Update {
                key,
                request,
                now_ms,
            } => crate::update(workspace, &key, request, now_ms).map(json),
            Command::Finish {
                key,
                status,
                expected_epoch,
                now_ms,
            } => crate::finish(workspace, &key, status, expected_epoch, now_ms).map(json),
            Command::DeleteSession {
                key,
                expected_epoch,
            } => crate::delete_session(workspace, &key, expected_epoch).map(json),
            Command::PruneStale { max_age_ms, now_ms } => {
                crate::prune_stale(workspace, max_age_ms, now_ms).map(json)
            }
            Command::CapEntries { max } => crate::cap_entries(workspace, max).map(json),
            Command::CountEntries { key } => crate::count_entries(workspace, &key).map(json),
            Command::GetEntry { key, message_id } => {
                crate::get_entry(workspace, &key, &message_id).map(json)
            }
            Command::Truncate {
                key,
                max_messages,
                expected_epoch,
                now_ms,
            } => crate::truncate(workspace, &key, max_messages, expected_epoch, now_ms).map(json),
            Command::SaveState {
                key,
                state,
                expected_epoch,
                now_ms,
            } => crate::save_state(workspace, &key, state, expected_epoch, now_ms).map(json),
            Command::ListStates { key, valid_only } => {
                crate::list_states(workspace, &key, valid_only).map(json)
            }
            Command::InvalidateStates {
                key,
                state_kind,
                reason,
                now_ms,
            } => crate::invalidate_states(workspace, &key, state_kind.as_deref(), &reason, now_ms)
                .map(json),
            Command::Compact {
                key,
                request,
                now_ms,
            } => compaction::compact(workspace, &key, request, now_ms).map(json),
            Command::PrepareCompaction { key, request } => {
                compaction::prepare_compaction(workspace, &key, request).map(json)
            }
            Command::CommitCompaction {
                key,
                commit,
                now_ms,
            } => compaction::commit_compaction(workspace, &key, commit, now_ms).map(json),
            Command::PersistCompactionResult {
                key,
                persist,
                now_ms,
            } => compaction::persist_compaction_result(workspace, &key, persist, now_ms).map(json),
            Command::ListResetArchives { key } => {
                crate::list_reset_archives(workspace, &key).map(json)
            }
            Command::CanonicalTranscript { key } => {
                compaction::canonical_transcript(workspace, &key).map(json)
            }
            Command::ListSummaries { key } => compaction::list_summaries(workspace, &key).map(json),
            Command::ListDegradedCompactions { agent_id } => {
                compaction::list_degraded_compactions(workspace, agent_id.as_deref()).map(json)
            }
            Command::CompactionPreimage { key, compaction_id } => {
                compaction::compaction_preimage(workspace, &key, &compaction_id).map(json)
            }
            Command::SetRepairStatus {
                key,
                compaction_id,
                status,
            } => compaction::set_repair_status(workspace, &key, &compaction_id, &status).map(json),
            Command::SetFlushReceipt {
                key,
                compaction_id,
                status,
            } => compaction::set_flush_receipt(workspace, &key, &compaction_id, &status).map(json),
            Command::SaveRoleSession { role, now_ms } => {
                crate::save_role_session(workspace, role, now_ms).map(json)
            }
            Command::GetRoleSession { role_session_id } => {
                crate::get_role_session(workspace, &role_session_id).map(json)
            }
            Command::UpdateRoleAdapterState {
                role_session_id,
                agent_type,
                state,
                now_ms,
            } => crate::update_role_adapter_state(
                workspace,
                &role_session_id,
                &agent_type,
                state,
                now_ms,
            )
            .map(json),
            Command::GetRoleAdapterState {
                role_session_id,
                agent_type,
            } => crate::get_role_adapter_state(workspace, &role_session_id, &agent_type).map(json),
            Command::RecordRun { run, now_ms } => {
                crate::record_run(workspace, run, now_ms).map(json)
            }
            Command::ListRuns {
                filter,
                limit,
                cursor,
            } => crate::list_runs(workspace, filter, limit, cursor).map(json),
            Command::SelectResume { request } => crate::select_resume(workspace, request).map(json),
            Command::RecordTaskOutcome { request, now_ms } => {
                crate::record_task_outcome(workspace, request, now_ms).map(json)
            }
            Command::PlanProviderThread {
                key,
                agent_type,
                dead_thread,
            } => crate::plan_provider_thread(workspace, &key, &agent_type, dead_thread).map(json),
            Command::CommitTurn { key, turn, now_ms } => {
                crate::commit_turn(workspace, &key, turn, now_ms).map(json)
            }
            Command::ImportSession { request, now_ms } => {
                crate::import::import_session(workspace, request, now_ms).map(json)
            }
            Command::Branch {
                parent_key,
                child_key,
                request,
                now_ms,
            } => crate::branch(workspace, &parent_key, &child_key, request, now_ms).map(json),
            Command::Lineage { key } => crate::lineage(workspace, &key).map(json),
            Command::ListChildren { key } => crate::list_children(workspace, &key).map(json),
            Command::StartTurn {
                key,
                request,
                now_ms,
            } => crate::start_turn(workspace, &key, request, now_ms).map(json),
            Command::SettleTurn {
                key,
                turn_id,
                close,
                now_ms,
            } => crate::settle_turn(workspace, &key, &turn_id, close, now_ms).map(json),
            Command::InterruptTurn {
                key,
                turn_id,
                close,
                now_ms,
            } => crate::interrupt_turn(workspace, &key, &turn_id, close, now_ms).map(json),
            Command::GetTurn { key, turn_id } => {
                crate::get_turn(workspace, &key, &turn_id).map(json)
            }
            Command::SessionTurns { key } => crate::session_turns(workspace, &key).map(json),
            Command::ListTurns { key, request } => {
                crate::list_turns(workspace, &key, request).map(json)
            }
            Command::Fork {
                source_key,
                request,
                operation_id,
                now_ms,
            } => crate::fork(workspace, &source_key, request, &operation_id, now_ms).map(json),
            Command::BeginForkDispatch {
                operation_id,
                now_ms,
            } => crate::begin_fork_dispatch(workspace, &operation_id, now_ms).map(json),
            Command::RecordForkDisposition {
                operation_id,
                disposition,
                now_ms,
            } => crate::record_fork_disposition(workspace, &operation_id, disposition, now_ms)
                .map(json),
            Command::CommitFork {
                operation_id,
                now_ms,
            } => crate::commit_fork(workspace, &operation_id, now_ms).map(json),
            Command::GetForkOperation { operation_id } => {
                crate::get_fork_operation(workspace, &operation_id).map(json)
            }
            Command::AcknowledgeForkOperation {
                operation_id,
                now_ms,
            } => crate::acknowledge_fork_operation(workspace, &operation_id, now_ms).map(json),
            Command::RecoverForkOperations { now_ms } => {
                crate::recover_fork_operations(workspace, now_ms).map(json)
            }
            Command::ClaimForkProviderBinding { key, now_ms } => {
                crate::claim_fork_provider_binding(workspace, &key, now_ms).map(json)
            }
            Command::CompleteForkProviderBinding {
                operation_id,
                now_ms,
            } => crate::complete_fork_provider_binding(workspace, &operation_id, now_ms).map(json),
            Command::GetForkLineage { key } => crate::get_fork_lineage(workspace, &key).map(json),
            Command::ForkProjection {
                keys,
                mode,
                answers,
            } => crate::capabilities::fork_projection(workspace, keys, mode, answers).map(json),
        }
    }
}

/// Runs a command against a synchronous storage (no reset archives kept).
pub fn execute<S: crate::Storage + ?Sized>(
    storage: &S,
    workspace: &str,
    command: Command,
) -> Result<serde_json::Value, Error> {
    execute_with(storage, &crate::NoArchive, workspace, command)
}

/// Runs a command against a synchronous storage and archive store.
pub fn execute_with<S: crate::Storage + ?Sized, A: crate::Archiver + ?Sized>(
    storage: &S,
    archiver: &A,
    workspace: &str,
    command: Command,
) -> Result<serde_json::Value, Error> {
    crate::op::run_with(storage, archiver, command.into_operation(workspace))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_unknown_fields_are_rejected_not_ignored() {
        let misspelt = r#"{"op":"append_entry","key":"k","now_ms":1,
            "request":{"role":"user","content":"x","tokenCount":3}}"#;
        assert!(serde_json::from_str::<Command>(misspelt).is_err());
        let extra = r#"{"op":"get_session","key":"k","bogus":1}"#;
        assert!(serde_json::from_str::<Command>(extra).is_err());
        let good = r#"{"op":"append_entry","key":"k","now_ms":1,
            "request":{"role":"user","content":"x","token_count":3}}"#;
        let Ok(Command::AppendEntry { request, .. }) = serde_json::from_str::<Command>(good) else {
            panic!("a well-formed call parses");
        };
        assert_eq!(request.token_count, Some(3));
    }

    #[test]
    fn test_fork_calls_reject_unknown_fields() {
        let misspelt = r#"{"op":"fork","source_key":"s","operation_id":"o","now_ms":1,
            "request":{"request_id":"r","target_key":"t","target_session_id":"t1",
            "throughTurnId":"turn-1"}}"#;
        assert!(serde_json::from_str::<Command>(misspelt).is_err());
        let disposition = r#"{"op":"record_fork_disposition","operation_id":"o","now_ms":1,
            "disposition":{"disposition":"rejected","error":"no","code":"x"}}"#;
        assert!(serde_json::from_str::<Command>(disposition).is_err());
        let good = r#"{"op":"record_fork_disposition","operation_id":"o","now_ms":1,
            "disposition":{"disposition":"rejected","error":"no","reason":"attachment_unsupported"}}"#;
        assert!(serde_json::from_str::<Command>(good).is_ok());
    }
}
