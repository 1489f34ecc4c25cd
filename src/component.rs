//! The component shell: wit-bindgen exports over the core, storage over the WIT imports.
//!
//! This is the only file that sees generated types; everything else speaks core types.

use std::collections::BTreeMap;

use crate::compaction::{
    self, CommitRequest, CompactRequest, CompactionConfig, CompactionResult, PersistRequest,
    Prepared, Summary,
};
use crate::import::ImportFormat;
use crate::model::{
    AppendRequest, ArchiveStatus, ContextState, Entry, FinishStatus, Intent, IntentOutcome,
    ListFilter, NewContextState, Order, Page, PageRequest, ResetArchive, Role, Session,
    SessionList, SessionStatus, TruncateOutcome, TurnUsage, UpdateRequest,
};
use crate::op::{Archiver, Operation};
use crate::resume::{RunRecord, TaskOutcome};
use crate::roles::{NewRoleSession, NewRun, OutcomeRequest, ResumeRequest, RunFilter};
use crate::storage::{
    Batch, KeyRange, Kv, Mutation, Precondition, RangeQuery, Storage, StorageError,
};
use crate::threads::{ThreadBinding, TurnCommit};

wit_bindgen::generate!({
    world: "spool",
    path: "wit",
});

use exports::spool::engine::api as wit;
use spool::engine::{archive as host_archive, storage as host, types};

/// The host's reset-archive store, reached through the WIT import.
struct HostArchive;

impl Archiver for HostArchive {
    fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String> {
        let json =
            serde_json::to_string(archive).map_err(|e| format!("archive does not encode: {e}"))?;
        host_archive::write_reset_archive(
            workspace,
            &host_archive::ResetArchive {
                session_key: archive.session_key.clone(),
                session_id: archive.session_id.clone(),
                epoch: archive.epoch,
                archived_at: archive.archived_at,
                json,
            },
        )
    }
}

/// Drives `op` against the host's storage and archive store.
fn run<T>(op: Operation<T>) -> Result<T, wit::Error> {
    crate::run_with(&HostStorage, &HostArchive, op).map_err(to_wit_error)
}

fn json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

fn json_object(
    field: &'static str,
    text: Option<String>,
) -> Result<BTreeMap<String, serde_json::Value>, wit::Error> {
    text.map(|t| {
        serde_json::from_str(&t)
            .map_err(|e| to_wit_error(crate::Error::unparsed(field, "is not a JSON object", &e)))
    })
    .transpose()
    .map(Option::unwrap_or_default)
}

fn json_value(field: &'static str, text: &str) -> Result<serde_json::Value, wit::Error> {
    serde_json::from_str(text)
        .map_err(|e| to_wit_error(crate::Error::unparsed(field, "is not JSON", &e)))
}

/// The host's storage, reached through the WIT imports.
struct HostStorage;

fn from_wit_error(error: types::StorageError) -> StorageError {
    match error {
        types::StorageError::Conflict(index) => StorageError::Conflict(index),
        types::StorageError::Backend(cause) => StorageError::Backend(cause),
        types::StorageError::Corrupt(c) => StorageError::Corrupt {
            key: c.key,
            detail: c.detail,
        },
    }
}

fn to_wit_range(range: KeyRange) -> types::KeyRange {
    types::KeyRange {
        start: range.start,
        end: range.end,
    }
}

fn to_wit_kv(kv: Kv) -> types::Kv {
    types::Kv {
        key: kv.key,
        value: kv.value,
    }
}

impl Storage for HostStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        host::get(workspace, key).map_err(from_wit_error)
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        let query = types::RangeQuery {
            range: to_wit_range(query.range.clone()),
            limit: query.limit,
            reverse: query.reverse,
        };
        host::range(workspace, &query)
            .map(|pairs| {
                pairs
                    .into_iter()
                    .map(|kv| Kv {
                        key: kv.key,
                        value: kv.value,
                    })
                    .collect()
            })
            .map_err(from_wit_error)
    }

    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        let batch = types::Batch {
            preconditions: batch
                .preconditions
                .into_iter()
                .map(|p| match p {
                    Precondition::Absent(key) => types::Precondition::Absent(key),
                    Precondition::Equals(kv) => types::Precondition::Equals(to_wit_kv(kv)),
                })
                .collect(),
            mutations: batch
                .mutations
                .into_iter()
                .map(|m| match m {
                    Mutation::Put(kv) => types::Mutation::Put(to_wit_kv(kv)),
                    Mutation::Delete(key) => types::Mutation::Delete(key),
                    Mutation::DeleteRange(range) => {
                        types::Mutation::DeleteRange(to_wit_range(range))
                    }
                })
                .collect(),
        };
        host::commit(workspace, &batch).map_err(from_wit_error)
    }
}

fn to_wit_error(error: crate::Error) -> wit::Error {
    // By reason code, so that every error variant, present and future, keeps its code.
    let code = match error.code() {
        "not_found" => wit::ErrorCode::NotFound,
        "conflict" => wit::ErrorCode::Conflict,
        "invalid_argument" => wit::ErrorCode::InvalidArgument,
        "stale_epoch" => wit::ErrorCode::StaleEpoch,
        "corruption" => wit::ErrorCode::Corruption,
        "storage" => wit::ErrorCode::Storage,
        _ => wit::ErrorCode::Internal,
    };
    wit::Error {
        code,
        message: error.to_string(),
    }
}

fn to_wit_session(s: Session) -> wit::Session {
    wit::Session {
        key: s.key,
        session_id: s.session_id,
        agent_id: s.agent_id,
        status: match s.status {
            SessionStatus::Running => wit::SessionStatus::Running,
            SessionStatus::Done => wit::SessionStatus::Done,
            SessionStatus::Failed => wit::SessionStatus::Failed,
        },
        epoch: s.epoch,
        created_at: s.created_at,
        updated_at: s.updated_at,
        entry_count: s.entry_count,
        last_entry_id: s.last_entry_id,
        total_tokens: s.total_tokens,
        ended_at: s.ended_at,
        runtime_ms: s.runtime_ms,
        input_tokens: s.input_tokens,
        output_tokens: s.output_tokens,
        cache_read: s.cache_read,
        cache_write: s.cache_write,
        estimated_cost_usd: s.estimated_cost_usd,
        total_cost_usd: s.total_cost_usd,
        billed_cost_usd: s.billed_cost_usd,
        estimated_cost_component_usd: s.estimated_cost_component_usd,
        cost_source: s.cost_source,
        missing_cost_entries: s.missing_cost_entries,
        compaction_count: s.compaction_count,
        model: s.model,
        channel: s.channel,
        model_config: json_text(&s.model_config),
        metadata: json_text(&s.metadata),
        last_state_id: s.last_state_id,
        message_index: s.message_index,
    }
}

fn to_wit_usage(u: TurnUsage) -> wit::TurnUsage {
    wit::TurnUsage {
        model: u.model,
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
    }
}

fn from_wit_usage(u: wit::TurnUsage) -> TurnUsage {
    TurnUsage {
        model: u.model,
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
    }
}

fn to_wit_outcome(o: IntentOutcome) -> wit::IntentOutcome {
    wit::IntentOutcome {
        session: to_wit_session(o.session),
        created: o.created,
        rotated: o.rotated,
        archive: o.archive.map(|a: ArchiveStatus| wit::ArchiveStatus {
            written: a.written,
            error: a.error,
        }),
    }
}

fn to_wit_state(s: ContextState) -> wit::ContextState {
    wit::ContextState {
        id: s.id,
        session_id: s.session_id,
        session_key: s.session_key,
        provider: s.provider,
        model: s.model,
        state_kind: s.state_kind,
        payload: json_text(&s.payload),
        covered_through_id: s.covered_through_id,
        created_at: s.created_at,
        expires_at: s.expires_at,
        portable: s.portable,
        cacheable: s.cacheable,
        valid: s.valid,
        invalid_reason: s.invalid_reason,
    }
}

fn from_wit_status(s: wit::SessionStatus) -> SessionStatus {
    match s {
        wit::SessionStatus::Running => SessionStatus::Running,
        wit::SessionStatus::Done => SessionStatus::Done,
        wit::SessionStatus::Failed => SessionStatus::Failed,
    }
}

fn to_wit_role(role: Role) -> wit::Role {
    match role {
        Role::User => wit::Role::User,
        Role::Assistant => wit::Role::Assistant,
        Role::Tool => wit::Role::Tool,
        Role::System => wit::Role::System,
    }
}

fn from_wit_role(role: wit::Role) -> Role {
    match role {
        wit::Role::User => Role::User,
        wit::Role::Assistant => Role::Assistant,
        wit::Role::Tool => Role::Tool,
        wit::Role::System => Role::System,
    }
}

fn to_wit_entry(e: Entry) -> wit::Entry {
    wit::Entry {
        id: e.id,
        message_id: e.message_id,
        role: to_wit_role(e.role),
        content: e.content,
        created_at: e.created_at,
        token_count: e.token_count,
        tool_calls: e.tool_calls.map(|v| v.to_string()),
        tool_call_id: e.tool_call_id,
        turn_id: e.turn_id,
        turn_usage: e.turn_usage.map(to_wit_usage),
    }
}

fn from_wit_append(r: wit::AppendRequest) -> Result<AppendRequest, crate::Error> {
    let tool_calls = r
        .tool_calls
        .map(|text| {
            serde_json::from_str(&text)
                .map_err(|e| crate::Error::unparsed("tool_calls", "is not JSON", &e))
        })
        .transpose()?;
    Ok(AppendRequest {
        role: from_wit_role(r.role),
        content: r.content,
        token_count: r.token_count,
        message_id: r.message_id,
        tool_calls,
        tool_call_id: r.tool_call_id,
        turn_id: r.turn_id,
        turn_usage: r.turn_usage.map(from_wit_usage),
        expected_epoch: r.expected_epoch,
    })
}

fn to_wit_page(p: Page) -> wit::Page {
    wit::Page {
        entries: p.entries.into_iter().map(to_wit_entry).collect(),
        next_cursor: p.next_cursor,
    }
}

fn to_wit_list(l: SessionList) -> wit::SessionList {
    wit::SessionList {
        sessions: l.sessions.into_iter().map(to_wit_session).collect(),
        next_cursor: l.next_cursor,
    }
}

fn from_wit_compact(r: wit::CompactRequest) -> CompactRequest {
    CompactRequest {
        context_window_tokens: r.context_window_tokens,
        config: CompactionConfig {
            safety_margin: r.config.safety_margin,
            coverage_blocking: r.config.coverage_blocking,
            protected_recent: r.config.protected_recent,
        },
        compaction_id: r.compaction_id,
        trigger_reason: r.trigger_reason,
        flush_receipt_status: r.flush_receipt_status,
    }
}

fn to_wit_result(r: CompactionResult) -> wit::CompactionResult {
    wit::CompactionResult {
        summary: r.summary,
        summary_source: r.summary_source,
        summary_payload: r.summary_payload.map(|p| json_text(&p)),
        removed_count: r.removed_count,
        kept_entries: r.kept_entries.into_iter().map(to_wit_entry).collect(),
        tokens_before: r.tokens_before,
        tokens_after: r.tokens_after,
        chunks_processed: r.chunks_processed,
        coverage_status: r.coverage_status,
        missing_obligations: r.missing_obligations,
        dropped_obligations: r.dropped_obligations,
        skip_reason: r.skip_reason,
        compaction_id: r.compaction_id,
    }
}

fn to_wit_prepared(p: Prepared) -> wit::Prepared {
    wit::Prepared {
        skip_reason: p.skip_reason,
        input: p.input,
        obligations: p
            .obligations
            .into_iter()
            .map(|o| wit::Obligation {
                kind: serde_json::to_value(o.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                text: o.text,
                critical: o.critical,
            })
            .collect(),
        removed_count: p.removed_count,
        kept_count: p.kept_count,
        covered_through_id: p.covered_through_id,
        tokens_before: p.tokens_before,
        preimage: p.preimage,
    }
}

fn entries(list: Vec<Entry>) -> Vec<wit::Entry> {
    list.into_iter().map(to_wit_entry).collect()
}

fn summaries(list: Vec<Summary>) -> Vec<String> {
    list.iter().map(json_text).collect()
}

struct Component;

impl wit::Guest for Component {
    fn create_session(
        workspace: String,
        key: String,
        session_id: String,
        now_ms: u64,
    ) -> Result<wit::Session, wit::Error> {
        run(crate::create_session(&workspace, &key, &session_id, now_ms)).map(to_wit_session)
    }

    fn get_session(workspace: String, key: String) -> Result<Option<wit::Session>, wit::Error> {
        run(crate::get_session(&workspace, &key)).map(|s| s.map(to_wit_session))
    }

    fn append_entry(
        workspace: String,
        key: String,
        request: wit::AppendRequest,
        now_ms: u64,
    ) -> Result<wit::Entry, wit::Error> {
        let request = from_wit_append(request).map_err(to_wit_error)?;
        run(crate::append_entry(&workspace, &key, request, now_ms)).map(to_wit_entry)
    }

    fn read_page(
        workspace: String,
        key: String,
        request: wit::PageRequest,
    ) -> Result<wit::Page, wit::Error> {
        let request = PageRequest {
            order: match request.order {
                wit::Order::OldestFirst => Order::OldestFirst,
                wit::Order::NewestFirst => Order::NewestFirst,
            },
            cursor: request.cursor,
            limit: request.limit,
        };
        run(crate::read_page(&workspace, &key, request)).map(to_wit_page)
    }

    fn list_sessions(
        workspace: String,
        limit: u32,
        cursor: Option<String>,
        filter: wit::ListFilter,
    ) -> Result<wit::SessionList, wit::Error> {
        let filter = ListFilter {
            agent_id: filter.agent_id,
            status: filter.status.map(from_wit_status),
        };
        run(crate::list_sessions_where(
            &workspace,
            limit,
            cursor.as_deref(),
            filter,
        ))
        .map(to_wit_list)
    }

    fn get_or_create(
        workspace: String,
        key: String,
        session_id: String,
        now_ms: u64,
    ) -> Result<wit::IntentOutcome, wit::Error> {
        run(crate::get_or_create(&workspace, &key, &session_id, now_ms)).map(to_wit_outcome)
    }

    fn apply_intent(
        workspace: String,
        key: String,
        intent: wit::Intent,
        session_id: String,
        now_ms: u64,
    ) -> Result<wit::IntentOutcome, wit::Error> {
        let intent = match intent {
            wit::Intent::Continue => Intent::Continue,
            wit::Intent::NewChat => Intent::NewChat,
            wit::Intent::ResetSameKey => Intent::ResetSameKey,
        };
        run(crate::apply_intent(
            &workspace,
            &key,
            intent,
            &session_id,
            now_ms,
        ))
        .map(to_wit_outcome)
    }

    fn resume(workspace: String, key: String, now_ms: u64) -> Result<wit::Session, wit::Error> {
        run(crate::resume(&workspace, &key, now_ms)).map(to_wit_session)
    }

    fn update(
        workspace: String,
        key: String,
        request: wit::UpdateRequest,
        now_ms: u64,
    ) -> Result<wit::Session, wit::Error> {
        let request = UpdateRequest {
            model: request.model,
            channel: request.channel,
            model_config: json_object("model_config", request.model_config)?,
            metadata: json_object("metadata", request.metadata)?,
            expected_epoch: request.expected_epoch,
        };
        run(crate::update(&workspace, &key, request, now_ms)).map(to_wit_session)
    }

    fn finish(
        workspace: String,
        key: String,
        status: wit::FinishStatus,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<wit::Session, wit::Error> {
        let status = match status {
            wit::FinishStatus::Done => FinishStatus::Done,
            wit::FinishStatus::Failed => FinishStatus::Failed,
        };
        run(crate::finish(
            &workspace,
            &key,
            status,
            expected_epoch,
            now_ms,
        ))
        .map(to_wit_session)
    }

    fn delete_session(
        workspace: String,
        key: String,
        expected_epoch: Option<u64>,
    ) -> Result<(), wit::Error> {
        run(crate::delete_session(&workspace, &key, expected_epoch))
    }

    fn prune_stale(workspace: String, max_age_ms: u64, now_ms: u64) -> Result<u64, wit::Error> {
        run(crate::prune_stale(&workspace, max_age_ms, now_ms))
    }

    fn cap_entries(workspace: String, max: u64) -> Result<u64, wit::Error> {
        run(crate::cap_entries(&workspace, max))
    }

    fn count_entries(workspace: String, key: String) -> Result<u64, wit::Error> {
        run(crate::count_entries(&workspace, &key))
    }

    fn get_entry(
        workspace: String,
        key: String,
        message_id: String,
    ) -> Result<Option<wit::Entry>, wit::Error> {
        run(crate::get_entry(&workspace, &key, &message_id)).map(|e| e.map(to_wit_entry))
    }

    fn truncate(
        workspace: String,
        key: String,
        max_messages: u64,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<wit::TruncateOutcome, wit::Error> {
        run(crate::truncate(
            &workspace,
            &key,
            max_messages,
            expected_epoch,
            now_ms,
        ))
        .map(|o: TruncateOutcome| wit::TruncateOutcome {
            truncated: o.truncated,
            before_count: o.before_count,
            after_count: o.after_count,
        })
    }

    fn save_state(
        workspace: String,
        key: String,
        state: wit::NewContextState,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<wit::ContextState, wit::Error> {
        let state = NewContextState {
            payload: json_value("payload", &state.payload)?,
            provider: state.provider,
            model: state.model,
            state_kind: state.state_kind,
            covered_through_id: state.covered_through_id,
            expires_at: state.expires_at,
            portable: state.portable,
            cacheable: state.cacheable,
        };
        run(crate::save_state(
            &workspace,
            &key,
            state,
            expected_epoch,
            now_ms,
        ))
        .map(to_wit_state)
    }

    fn list_states(
        workspace: String,
        key: String,
        valid_only: bool,
    ) -> Result<Vec<wit::ContextState>, wit::Error> {
        run(crate::list_states(&workspace, &key, valid_only))
            .map(|states| states.into_iter().map(to_wit_state).collect())
    }

    fn invalidate_states(
        workspace: String,
        key: String,
        state_kind: Option<String>,
        reason: String,
        now_ms: u64,
    ) -> Result<u64, wit::Error> {
        run(crate::invalidate_states(
            &workspace,
            &key,
            state_kind.as_deref(),
            &reason,
            now_ms,
        ))
    }

    fn compact(
        workspace: String,
        key: String,
        request: wit::CompactRequest,
        now_ms: u64,
    ) -> Result<wit::CompactionResult, wit::Error> {
        run(compaction::compact(
            &workspace,
            &key,
            from_wit_compact(request),
            now_ms,
        ))
        .map(to_wit_result)
    }

    fn prepare_compaction(
        workspace: String,
        key: String,
        request: wit::CompactRequest,
    ) -> Result<wit::Prepared, wit::Error> {
        run(compaction::prepare_compaction(
            &workspace,
            &key,
            from_wit_compact(request),
        ))
        .map(to_wit_prepared)
    }

    fn commit_compaction(
        workspace: String,
        key: String,
        commit: wit::CommitRequest,
        now_ms: u64,
    ) -> Result<wit::CompactionResult, wit::Error> {
        let summary_payload = commit
            .summary_payload
            .map(|text| json_value("summary_payload", &text))
            .transpose()?;
        let commit = CommitRequest {
            request: from_wit_compact(commit.request),
            preimage: commit.preimage,
            summary_text: commit.summary_text,
            summary_payload,
        };
        run(compaction::commit_compaction(
            &workspace, &key, commit, now_ms,
        ))
        .map(to_wit_result)
    }

    fn persist_compaction_result(
        workspace: String,
        key: String,
        persist: wit::PersistRequest,
        now_ms: u64,
    ) -> Result<wit::CompactionResult, wit::Error> {
        let kept_entries = persist
            .kept_entries
            .into_iter()
            .map(from_wit_append)
            .collect::<Result<Vec<_>, _>>()
            .map_err(to_wit_error)?;
        let persist = PersistRequest {
            summary_text: persist.summary_text,
            kept_entries,
            compaction_id: persist.compaction_id,
            trigger_reason: persist.trigger_reason,
        };
        run(compaction::persist_compaction_result(
            &workspace, &key, persist, now_ms,
        ))
        .map(to_wit_result)
    }

    fn canonical_transcript(workspace: String, key: String) -> Result<Vec<wit::Entry>, wit::Error> {
        run(compaction::canonical_transcript(&workspace, &key)).map(entries)
    }

    fn list_summaries(workspace: String, key: String) -> Result<Vec<String>, wit::Error> {
        run(compaction::list_summaries(&workspace, &key)).map(summaries)
    }

    fn list_degraded_compactions(
        workspace: String,
        agent_id: Option<String>,
    ) -> Result<Vec<String>, wit::Error> {
        run(compaction::list_degraded_compactions(
            &workspace,
            agent_id.as_deref(),
        ))
        .map(summaries)
    }

    fn compaction_preimage(
        workspace: String,
        key: String,
        compaction_id: String,
    ) -> Result<Vec<wit::Entry>, wit::Error> {
        run(compaction::compaction_preimage(
            &workspace,
            &key,
            &compaction_id,
        ))
        .map(entries)
    }

    fn set_repair_status(
        workspace: String,
        key: String,
        compaction_id: String,
        status: String,
    ) -> Result<String, wit::Error> {
        run(compaction::set_repair_status(
            &workspace,
            &key,
            &compaction_id,
            &status,
        ))
        .map(|s| json_text(&s))
    }

    fn set_flush_receipt(
        workspace: String,
        key: String,
        compaction_id: String,
        status: String,
    ) -> Result<String, wit::Error> {
        run(compaction::set_flush_receipt(
            &workspace,
            &key,
            &compaction_id,
            &status,
        ))
        .map(|s| json_text(&s))
    }
    fn save_role_session(
        workspace: String,
        role: wit::NewRoleSession,
        now_ms: u64,
    ) -> Result<String, wit::Error> {
        let role = NewRoleSession {
            role_session_id: role.role_session_id,
            run_id: role.run_id,
            role_id: role.role_id,
            adapter_state: json_object("adapter_state", role.adapter_state)?,
        };
        run(crate::save_role_session(&workspace, role, now_ms)).map(|r| json_text(&r))
    }

    fn get_role_session(
        workspace: String,
        role_session_id: String,
    ) -> Result<Option<String>, wit::Error> {
        run(crate::get_role_session(&workspace, &role_session_id)).map(|r| r.map(|r| json_text(&r)))
    }

    fn update_role_adapter_state(
        workspace: String,
        role_session_id: String,
        agent_type: String,
        state: Option<String>,
        now_ms: u64,
    ) -> Result<bool, wit::Error> {
        let state = state
            .map(|text| json_object("state", Some(text)))
            .transpose()?;
        run(crate::update_role_adapter_state(
            &workspace,
            &role_session_id,
            &agent_type,
            state,
            now_ms,
        ))
    }

    fn get_role_adapter_state(
        workspace: String,
        role_session_id: String,
        agent_type: String,
    ) -> Result<Option<String>, wit::Error> {
        run(crate::get_role_adapter_state(
            &workspace,
            &role_session_id,
            &agent_type,
        ))
        .map(|s| s.map(|s| json_text(&s)))
    }

    fn record_run(
        workspace: String,
        new_run: wit::NewRun,
        now_ms: u64,
    ) -> Result<wit::RunRecord, wit::Error> {
        let new = NewRun {
            agent_type: new_run.agent_type,
            project_id: new_run.project_id,
            session_id: new_run.session_id,
            task_id: new_run.task_id,
            status: new_run.status,
            role_session_id: new_run.role_session_id,
            workspace_path: new_run.workspace_path,
            run_mode: new_run.run_mode,
            metadata: json_object("metadata", new_run.metadata)?,
        };
        run(crate::record_run(&workspace, new, now_ms)).map(to_wit_run)
    }

    fn list_runs(
        workspace: String,
        filter: wit::RunFilter,
        limit: u32,
        cursor: Option<String>,
    ) -> Result<wit::RunList, wit::Error> {
        let filter = RunFilter {
            agent_type: filter.agent_type,
            project_id: filter.project_id,
            role_session_id: filter.role_session_id,
        };
        run(crate::list_runs(&workspace, filter, limit, cursor)).map(|l| wit::RunList {
            runs: l.runs.into_iter().map(to_wit_run).collect(),
            next_cursor: l.next_cursor,
        })
    }

    fn select_resume(
        workspace: String,
        request: wit::ResumeRequest,
    ) -> Result<wit::ResumeDecision, wit::Error> {
        let request = ResumeRequest {
            agent_type: request.agent_type,
            role_session_id: request.role_session_id,
            project_id: request.project_id,
            scope_id: request.scope_id,
            preconfigured: request.preconfigured,
            surviving_agents: request.surviving_agents,
        };
        run(crate::select_resume(&workspace, request)).map(|d| wit::ResumeDecision {
            set_metadata: json_text(&d.set_metadata),
            mode: d.mode,
            session_id: d.session_id,
            remove_metadata: d.remove_metadata,
            clear_role_state: d.clear_role_state,
        })
    }

    fn record_task_outcome(
        workspace: String,
        request: wit::OutcomeRequest,
        now_ms: u64,
    ) -> Result<wit::OutcomeEffects, wit::Error> {
        let o = request.outcome;
        let request = OutcomeRequest {
            role_session_id: request.role_session_id,
            project_id: request.project_id,
            outcome: TaskOutcome {
                agent_type: o.agent_type,
                task_id: o.task_id,
                status: o.status,
                token: o.token,
                resumed_from: o.resumed_from,
                from_stream: o.from_stream,
            },
            workspace_path: request.workspace_path,
            run_mode: request.run_mode,
            metadata: json_object("metadata", request.metadata)?,
            surviving_agents: request.surviving_agents,
        };
        run(crate::record_task_outcome(&workspace, request, now_ms)).map(|e| wit::OutcomeEffects {
            role_state: json_text(&e.role_state),
            set_metadata: json_text(&e.set_metadata),
            remove_metadata: e.remove_metadata,
        })
    }

    fn plan_provider_thread(
        workspace: String,
        key: String,
        agent_type: String,
        dead_thread: Option<String>,
    ) -> Result<wit::ThreadPlan, wit::Error> {
        run(crate::plan_provider_thread(
            &workspace,
            &key,
            &agent_type,
            dead_thread,
        ))
        .map(|p| wit::ThreadPlan {
            action: p.action,
            thread_id: p.thread_id,
            replaces: p.replaces,
            notice: p.notice,
        })
    }

    fn commit_turn(
        workspace: String,
        key: String,
        turn: wit::TurnCommit,
        now_ms: u64,
    ) -> Result<wit::TurnCommitted, wit::Error> {
        let requests = turn
            .entries
            .into_iter()
            .map(from_wit_append)
            .collect::<Result<Vec<_>, _>>()
            .map_err(to_wit_error)?;
        let turn = TurnCommit {
            entries: requests,
            thread: turn.thread.map(|t| ThreadBinding {
                agent_type: t.agent_type,
                thread_id: t.thread_id,
                replaces: t.replaces,
            }),
            expected_epoch: turn.expected_epoch,
        };
        run(crate::commit_turn(&workspace, &key, turn, now_ms)).map(|t| wit::TurnCommitted {
            entries: entries(t.entries),
            session: to_wit_session(t.session),
        })
    }

    fn execute(workspace: String, command: String) -> Result<String, wit::Error> {
        let command = crate::Command::from_json(&command).map_err(to_wit_error)?;
        run(command.into_operation(&workspace))
            .and_then(|value| value.map_err(to_wit_error))
            .map(|value| json_text(&value))
    }

    fn parse_import(format: String, text: String) -> Result<String, wit::Error> {
        let format: ImportFormat = parse_json("format", &json_text(&format))?;
        Ok(json_text(&crate::import::parse(format, &text)))
    }

    fn import_session(
        workspace: String,
        request: String,
        now_ms: u64,
    ) -> Result<String, wit::Error> {
        let request = parse_json("request", &request)?;
        run(crate::import::import_session(&workspace, request, now_ms)).map(|o| json_text(&o))
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(
    field: &'static str,
    text: &str,
) -> Result<T, wit::Error> {
    serde_json::from_str(text)
        .map_err(|e| to_wit_error(crate::Error::unparsed(field, "does not parse", &e)))
}

fn to_wit_run(r: RunRecord) -> wit::RunRecord {
    wit::RunRecord {
        metadata: json_text(&r.metadata),
        agent_type: r.agent_type,
        project_id: r.project_id,
        session_id: r.session_id,
        status: r.status,
        updated_at: r.updated_at,
        task_id: r.task_id,
        role_session_id: r.role_session_id,
        workspace_path: r.workspace_path,
        run_mode: r.run_mode,
    }
}

export!(Component);
