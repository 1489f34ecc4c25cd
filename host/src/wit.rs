//! The WIT boundary: the generated bindings, the storage and archive imports served
//! from a [`spool::Storage`] and a [`spool::Archiver`], and the API exports called with
//! core types.
//!
//! This is the only file that sees generated types; everything else speaks core types.

use std::collections::BTreeMap;

use serde_json::Value;
use spool::compaction::{
    CommitRequest, CompactRequest, CompactionConfig, CompactionResult, Obligation, PersistRequest,
    Prepared, Summary,
};
use spool::resume::{ResumeDecision, RoleStateChange, RunRecord, TaskOutcomeEffects};
use spool::{
    AppendRequest, Archiver, Batch, ContextState, Entry, FinishStatus, Intent, IntentOutcome,
    KeyRange, Kv, ListFilter, Mutation, NewContextState, NewRoleSession, NewRun, Order,
    OutcomeRequest, Page, PageRequest, Precondition, RangeQuery, ResetArchive, ResumeRequest, Role,
    RoleSession, RunFilter, RunList, Session, SessionList, SessionStatus, Storage, StorageError,
    ThreadPlan, TruncateOutcome, TurnCommit, TurnCommitted, TurnUsage, UpdateRequest,
};
use wasmtime::Store;
use wasmtime::component::{HasSelf, InstancePre, Linker};

use crate::error::Error;

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod bindings {
    wasmtime::component::bindgen!({
        world: "spool",
        path: "../wit",
        imports: { default: trappable },
    });
}

use bindings::exports::spool::engine::api;
use bindings::spool::engine::{archive as host_archive, storage as host, types};

/// The data of a store: the storage and archive store the component's imports reach,
/// and its limits.
pub(crate) struct HostState {
    pub(crate) storage: Box<dyn Storage + Send>,
    pub(crate) archiver: Box<dyn Archiver + Send>,
    pub(crate) limits: crate::engine::GuestLimits,
}

impl host_archive::Host for HostState {
    fn write_reset_archive(
        &mut self,
        workspace: String,
        archive: host_archive::ResetArchive,
    ) -> wasmtime::Result<Result<(), String>> {
        // The component's JSON is the archive; the record's other fields repeat its
        // header. A JSON that does not decode is reported as an unwritten archive (the
        // reset still completes), never as a trap.
        let decoded = serde_json::from_str::<ResetArchive>(&archive.json).map_err(|e| {
            format!(
                "the reset archive of `{}` ({}) is not valid archive JSON: {e}",
                archive.session_key, archive.session_id
            )
        });
        Ok(decoded.and_then(|decoded| {
            if decoded.session_key != archive.session_key
                || decoded.session_id != archive.session_id
            {
                return Err(format!(
                    "the reset archive of `{}` ({}) names another session in its JSON",
                    archive.session_key, archive.session_id
                ));
            }
            self.archiver.write_archive(&workspace, &decoded)
        }))
    }
}

impl types::Host for HostState {}

impl host::Host for HostState {
    fn get(
        &mut self,
        workspace: String,
        key: Vec<u8>,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, types::StorageError>> {
        Ok(self
            .storage
            .get(&workspace, &key)
            .map_err(to_wit_storage_error))
    }

    fn range(
        &mut self,
        workspace: String,
        query: types::RangeQuery,
    ) -> wasmtime::Result<Result<Vec<types::Kv>, types::StorageError>> {
        let query = RangeQuery {
            range: from_wit_range(query.range),
            limit: query.limit,
            reverse: query.reverse,
        };
        Ok(self
            .storage
            .range(&workspace, &query)
            .map(|pairs| {
                pairs
                    .into_iter()
                    .map(|kv| types::Kv {
                        key: kv.key,
                        value: kv.value,
                    })
                    .collect()
            })
            .map_err(to_wit_storage_error))
    }

    fn commit(
        &mut self,
        workspace: String,
        batch: types::Batch,
    ) -> wasmtime::Result<Result<(), types::StorageError>> {
        Ok(self
            .storage
            .commit(&workspace, from_wit_batch(batch))
            .map_err(to_wit_storage_error))
    }
}

fn to_wit_storage_error(error: StorageError) -> types::StorageError {
    match error {
        StorageError::Conflict(index) => types::StorageError::Conflict(index),
        StorageError::Backend(cause) => types::StorageError::Backend(cause),
        StorageError::Corrupt { key, detail } => {
            types::StorageError::Corrupt(types::CorruptValue { key, detail })
        }
    }
}

fn from_wit_range(range: types::KeyRange) -> KeyRange {
    KeyRange {
        start: range.start,
        end: range.end,
    }
}

fn from_wit_kv(kv: types::Kv) -> Kv {
    Kv {
        key: kv.key,
        value: kv.value,
    }
}

fn from_wit_batch(batch: types::Batch) -> Batch {
    Batch {
        preconditions: batch
            .preconditions
            .into_iter()
            .map(|p| match p {
                types::Precondition::Absent(key) => Precondition::Absent(key),
                types::Precondition::Equals(kv) => Precondition::Equals(from_wit_kv(kv)),
            })
            .collect(),
        mutations: batch
            .mutations
            .into_iter()
            .map(|m| match m {
                types::Mutation::Put(kv) => Mutation::Put(from_wit_kv(kv)),
                types::Mutation::Delete(key) => Mutation::Delete(key),
                types::Mutation::DeleteRange(range) => Mutation::DeleteRange(from_wit_range(range)),
            })
            .collect(),
    }
}

/// The component's imports, served by [`HostState`].
pub(crate) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    bindings::Spool::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)?;
    Ok(linker)
}

/// A component linked against [`HostState`], ready to instantiate cheaply.
#[derive(Clone)]
pub(crate) struct Pre(bindings::SpoolPre<HostState>);

impl Pre {
    pub(crate) fn new(pre: InstancePre<HostState>) -> wasmtime::Result<Self> {
        bindings::SpoolPre::new(pre).map(Pre)
    }

    pub(crate) fn instantiate(&self, store: &mut Store<HostState>) -> wasmtime::Result<Exports> {
        self.0.instantiate(store).map(Exports)
    }
}

/// One instance's exported API, called with core types.
pub(crate) struct Exports(bindings::Spool);

/// What a call returned: the trap/runtime failure is the outer error, the component's
/// refusal the inner one.
type Call<T> = wasmtime::Result<Result<T, api::Error>>;

fn finish<T, U>(
    name: &str,
    call: Call<T>,
    convert: impl FnOnce(T) -> Result<U, Error>,
) -> Result<U, Error> {
    match call {
        Ok(Ok(value)) => convert(value),
        Ok(Err(error)) => Err(from_wit_error(error)),
        Err(trap) => Err(Error::wasm(
            format!("the component failed in `{name}`"),
            &trap,
        )),
    }
}

/// The store a call runs in.
type S<'a> = &'a mut Store<HostState>;

impl Exports {
    fn api(&self) -> &api::Guest {
        self.0.spool_engine_api()
    }

    pub(crate) fn create_session(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        session_id: &str,
        now_ms: u64,
    ) -> Result<Session, Error> {
        let call = self
            .api()
            .call_create_session(store, workspace, key, session_id, now_ms);
        finish("create-session", call, from_wit_session)
    }

    pub(crate) fn get_session(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
    ) -> Result<Option<Session>, Error> {
        let call = self.api().call_get_session(store, workspace, key);
        finish("get-session", call, |s| s.map(from_wit_session).transpose())
    }

    pub(crate) fn append_entry(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        request: AppendRequest,
        now_ms: u64,
    ) -> Result<Entry, Error> {
        let request = to_wit_append(request);
        let call = self
            .api()
            .call_append_entry(store, workspace, key, &request, now_ms);
        finish("append-entry", call, from_wit_entry)
    }

    pub(crate) fn read_page(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        request: PageRequest,
    ) -> Result<Page, Error> {
        let request = api::PageRequest {
            order: match request.order {
                Order::OldestFirst => api::Order::OldestFirst,
                Order::NewestFirst => api::Order::NewestFirst,
            },
            cursor: request.cursor,
            limit: request.limit,
        };
        let call = self.api().call_read_page(store, workspace, key, &request);
        finish("read-page", call, |page| {
            Ok(Page {
                entries: page
                    .entries
                    .into_iter()
                    .map(from_wit_entry)
                    .collect::<Result<_, _>>()?,
                next_cursor: page.next_cursor,
            })
        })
    }

    pub(crate) fn list_sessions(
        &self,
        store: S<'_>,
        workspace: &str,
        limit: u32,
        cursor: Option<&str>,
        filter: &ListFilter,
    ) -> Result<SessionList, Error> {
        let filter = api::ListFilter {
            agent_id: filter.agent_id.clone(),
            status: filter.status.map(to_wit_status),
        };
        let call = self
            .api()
            .call_list_sessions(store, workspace, limit, cursor, &filter);
        finish("list-sessions", call, |list| {
            Ok(SessionList {
                sessions: list
                    .sessions
                    .into_iter()
                    .map(from_wit_session)
                    .collect::<Result<_, _>>()?,
                next_cursor: list.next_cursor,
            })
        })
    }

    pub(crate) fn get_or_create(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        session_id: &str,
        now_ms: u64,
    ) -> Result<IntentOutcome, Error> {
        let call = self
            .api()
            .call_get_or_create(store, workspace, key, session_id, now_ms);
        finish("get-or-create", call, from_wit_outcome)
    }

    pub(crate) fn apply_intent(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        intent: Intent,
        session_id: &str,
        now_ms: u64,
    ) -> Result<IntentOutcome, Error> {
        let intent = match intent {
            Intent::Continue => api::Intent::Continue,
            Intent::NewChat => api::Intent::NewChat,
            Intent::ResetSameKey => api::Intent::ResetSameKey,
        };
        let call = self
            .api()
            .call_apply_intent(store, workspace, key, intent, session_id, now_ms);
        finish("apply-intent", call, from_wit_outcome)
    }

    pub(crate) fn resume(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        now_ms: u64,
    ) -> Result<Session, Error> {
        let call = self.api().call_resume(store, workspace, key, now_ms);
        finish("resume", call, from_wit_session)
    }

    pub(crate) fn update(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        request: UpdateRequest,
        now_ms: u64,
    ) -> Result<Session, Error> {
        let request = api::UpdateRequest {
            model: request.model,
            channel: request.channel,
            model_config: json_object_text(&request.model_config),
            metadata: json_object_text(&request.metadata),
            expected_epoch: request.expected_epoch,
        };
        let call = self
            .api()
            .call_update(store, workspace, key, &request, now_ms);
        finish("update", call, from_wit_session)
    }

    pub(crate) fn finish(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        status: FinishStatus,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<Session, Error> {
        let status = match status {
            FinishStatus::Done => api::FinishStatus::Done,
            FinishStatus::Failed => api::FinishStatus::Failed,
        };
        let call = self
            .api()
            .call_finish(store, workspace, key, status, expected_epoch, now_ms);
        finish("finish", call, from_wit_session)
    }

    pub(crate) fn delete_session(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        expected_epoch: Option<u64>,
    ) -> Result<(), Error> {
        let call = self
            .api()
            .call_delete_session(store, workspace, key, expected_epoch);
        finish("delete-session", call, Ok)
    }

    pub(crate) fn prune_stale(
        &self,
        store: S<'_>,
        workspace: &str,
        max_age_ms: u64,
        now_ms: u64,
    ) -> Result<u64, Error> {
        let call = self
            .api()
            .call_prune_stale(store, workspace, max_age_ms, now_ms);
        finish("prune-stale", call, Ok)
    }

    pub(crate) fn cap_entries(
        &self,
        store: S<'_>,
        workspace: &str,
        max: u64,
    ) -> Result<u64, Error> {
        let call = self.api().call_cap_entries(store, workspace, max);
        finish("cap-entries", call, Ok)
    }

    pub(crate) fn count_entries(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
    ) -> Result<u64, Error> {
        let call = self.api().call_count_entries(store, workspace, key);
        finish("count-entries", call, Ok)
    }

    pub(crate) fn get_entry(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        message_id: &str,
    ) -> Result<Option<Entry>, Error> {
        let call = self.api().call_get_entry(store, workspace, key, message_id);
        finish("get-entry", call, |e| e.map(from_wit_entry).transpose())
    }

    pub(crate) fn truncate(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        max_messages: u64,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<TruncateOutcome, Error> {
        let call =
            self.api()
                .call_truncate(store, workspace, key, max_messages, expected_epoch, now_ms);
        finish("truncate", call, |o| {
            Ok(TruncateOutcome {
                truncated: o.truncated,
                before_count: o.before_count,
                after_count: o.after_count,
            })
        })
    }

    pub(crate) fn save_state(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        state: NewContextState,
        expected_epoch: Option<u64>,
        now_ms: u64,
    ) -> Result<ContextState, Error> {
        let state = api::NewContextState {
            provider: state.provider,
            model: state.model,
            state_kind: state.state_kind,
            payload: state.payload.to_string(),
            covered_through_id: state.covered_through_id,
            expires_at: state.expires_at,
            portable: state.portable,
            cacheable: state.cacheable,
        };
        let call =
            self.api()
                .call_save_state(store, workspace, key, &state, expected_epoch, now_ms);
        finish("save-state", call, from_wit_state)
    }

    pub(crate) fn list_states(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        valid_only: bool,
    ) -> Result<Vec<ContextState>, Error> {
        let call = self
            .api()
            .call_list_states(store, workspace, key, valid_only);
        finish("list-states", call, |states| {
            states.into_iter().map(from_wit_state).collect()
        })
    }

    pub(crate) fn invalidate_states(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        state_kind: Option<&str>,
        reason: &str,
        now_ms: u64,
    ) -> Result<u64, Error> {
        let call = self
            .api()
            .call_invalidate_states(store, workspace, key, state_kind, reason, now_ms);
        finish("invalidate-states", call, Ok)
    }

    pub(crate) fn compact(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        request: &CompactRequest,
        now_ms: u64,
    ) -> Result<CompactionResult, Error> {
        let request = to_wit_compact(request);
        let call = self
            .api()
            .call_compact(store, workspace, key, &request, now_ms);
        finish("compact", call, from_wit_result)
    }

    pub(crate) fn prepare_compaction(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        request: &CompactRequest,
    ) -> Result<Prepared, Error> {
        let request = to_wit_compact(request);
        let call = self
            .api()
            .call_prepare_compaction(store, workspace, key, &request);
        finish("prepare-compaction", call, from_wit_prepared)
    }

    pub(crate) fn commit_compaction(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        commit: &CommitRequest,
        now_ms: u64,
    ) -> Result<CompactionResult, Error> {
        let commit = api::CommitRequest {
            request: to_wit_compact(&commit.request),
            preimage: commit.preimage.clone(),
            summary_text: commit.summary_text.clone(),
            summary_payload: commit.summary_payload.as_ref().map(Value::to_string),
        };
        let call = self
            .api()
            .call_commit_compaction(store, workspace, key, &commit, now_ms);
        finish("commit-compaction", call, from_wit_result)
    }

    pub(crate) fn persist_compaction_result(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        persist: PersistRequest,
        now_ms: u64,
    ) -> Result<CompactionResult, Error> {
        let persist = api::PersistRequest {
            summary_text: persist.summary_text,
            kept_entries: persist
                .kept_entries
                .into_iter()
                .map(to_wit_append)
                .collect(),
            compaction_id: persist.compaction_id,
            trigger_reason: persist.trigger_reason,
        };
        let call = self
            .api()
            .call_persist_compaction_result(store, workspace, key, &persist, now_ms);
        finish("persist-compaction-result", call, from_wit_result)
    }

    pub(crate) fn canonical_transcript(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
    ) -> Result<Vec<Entry>, Error> {
        let call = self.api().call_canonical_transcript(store, workspace, key);
        finish("canonical-transcript", call, from_wit_entries)
    }

    pub(crate) fn list_summaries(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
    ) -> Result<Vec<Summary>, Error> {
        let call = self.api().call_list_summaries(store, workspace, key);
        finish("list-summaries", call, from_summaries)
    }

    pub(crate) fn list_degraded_compactions(
        &self,
        store: S<'_>,
        workspace: &str,
        agent_id: Option<&str>,
    ) -> Result<Vec<Summary>, Error> {
        let call = self
            .api()
            .call_list_degraded_compactions(store, workspace, agent_id);
        finish("list-degraded-compactions", call, from_summaries)
    }

    pub(crate) fn compaction_preimage(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        compaction_id: &str,
    ) -> Result<Vec<Entry>, Error> {
        let call = self
            .api()
            .call_compaction_preimage(store, workspace, key, compaction_id);
        finish("compaction-preimage", call, from_wit_entries)
    }

    pub(crate) fn set_repair_status(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        compaction_id: &str,
        status: &str,
    ) -> Result<Summary, Error> {
        let call = self
            .api()
            .call_set_repair_status(store, workspace, key, compaction_id, status);
        finish("set-repair-status", call, |text| from_summary(&text))
    }

    pub(crate) fn set_flush_receipt(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        compaction_id: &str,
        status: &str,
    ) -> Result<Summary, Error> {
        let call = self
            .api()
            .call_set_flush_receipt(store, workspace, key, compaction_id, status);
        finish("set-flush-receipt", call, |text| from_summary(&text))
    }

    pub(crate) fn save_role_session(
        &self,
        store: S<'_>,
        workspace: &str,
        role: NewRoleSession,
        now_ms: u64,
    ) -> Result<RoleSession, Error> {
        let role = api::NewRoleSession {
            adapter_state: json_object_text(&role.adapter_state),
            role_session_id: role.role_session_id,
            run_id: role.run_id,
            role_id: role.role_id,
        };
        let call = self
            .api()
            .call_save_role_session(store, workspace, &role, now_ms);
        finish("save-role-session", call, |text| from_role_session(&text))
    }

    pub(crate) fn get_role_session(
        &self,
        store: S<'_>,
        workspace: &str,
        role_session_id: &str,
    ) -> Result<Option<RoleSession>, Error> {
        let call = self
            .api()
            .call_get_role_session(store, workspace, role_session_id);
        finish("get-role-session", call, |text| {
            text.as_deref().map(from_role_session).transpose()
        })
    }

    pub(crate) fn update_role_adapter_state(
        &self,
        store: S<'_>,
        workspace: &str,
        role_session_id: &str,
        agent_type: &str,
        state: Option<&BTreeMap<String, Value>>,
        now_ms: u64,
    ) -> Result<bool, Error> {
        // An empty object is a (empty) entry, not a clear: always send the object.
        let state = state.map(|map| Value::Object(map.clone().into_iter().collect()).to_string());
        let call = self.api().call_update_role_adapter_state(
            store,
            workspace,
            role_session_id,
            agent_type,
            state.as_deref(),
            now_ms,
        );
        finish("update-role-adapter-state", call, Ok)
    }

    pub(crate) fn get_role_adapter_state(
        &self,
        store: S<'_>,
        workspace: &str,
        role_session_id: &str,
        agent_type: &str,
    ) -> Result<Option<BTreeMap<String, Value>>, Error> {
        let call =
            self.api()
                .call_get_role_adapter_state(store, workspace, role_session_id, agent_type);
        finish("get-role-adapter-state", call, |text| {
            text.map(|t| from_json_object("adapter state", role_session_id, &t))
                .transpose()
        })
    }

    pub(crate) fn record_run(
        &self,
        store: S<'_>,
        workspace: &str,
        run: NewRun,
        now_ms: u64,
    ) -> Result<RunRecord, Error> {
        let run = api::NewRun {
            metadata: json_object_text(&run.metadata),
            agent_type: run.agent_type,
            project_id: run.project_id,
            session_id: run.session_id,
            task_id: run.task_id,
            status: run.status,
            role_session_id: run.role_session_id,
            workspace_path: run.workspace_path,
            run_mode: run.run_mode,
        };
        let call = self.api().call_record_run(store, workspace, &run, now_ms);
        finish("record-run", call, from_wit_run)
    }

    pub(crate) fn list_runs(
        &self,
        store: S<'_>,
        workspace: &str,
        filter: &RunFilter,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<RunList, Error> {
        let filter = api::RunFilter {
            agent_type: filter.agent_type.clone(),
            project_id: filter.project_id.clone(),
            role_session_id: filter.role_session_id.clone(),
        };
        let call = self
            .api()
            .call_list_runs(store, workspace, &filter, limit, cursor);
        finish("list-runs", call, |list| {
            Ok(RunList {
                runs: list
                    .runs
                    .into_iter()
                    .map(from_wit_run)
                    .collect::<Result<_, _>>()?,
                next_cursor: list.next_cursor,
            })
        })
    }

    pub(crate) fn select_resume(
        &self,
        store: S<'_>,
        workspace: &str,
        request: ResumeRequest,
    ) -> Result<ResumeDecision, Error> {
        let request = api::ResumeRequest {
            agent_type: request.agent_type,
            role_session_id: request.role_session_id,
            project_id: request.project_id,
            scope_id: request.scope_id,
            preconfigured: request.preconfigured,
            surviving_agents: request.surviving_agents,
        };
        let call = self.api().call_select_resume(store, workspace, &request);
        finish("select-resume", call, |d| {
            Ok(ResumeDecision {
                set_metadata: from_json_object(
                    "metadata to set",
                    "a resume decision",
                    &d.set_metadata,
                )?,
                mode: d.mode,
                session_id: d.session_id,
                remove_metadata: d.remove_metadata,
                clear_role_state: d.clear_role_state,
            })
        })
    }

    pub(crate) fn record_task_outcome(
        &self,
        store: S<'_>,
        workspace: &str,
        request: OutcomeRequest,
        now_ms: u64,
    ) -> Result<TaskOutcomeEffects, Error> {
        let o = request.outcome;
        let request = api::OutcomeRequest {
            metadata: json_object_text(&request.metadata),
            role_session_id: request.role_session_id,
            project_id: request.project_id,
            outcome: api::TaskOutcome {
                agent_type: o.agent_type,
                task_id: o.task_id,
                status: o.status,
                token: o.token,
                resumed_from: o.resumed_from,
                from_stream: o.from_stream,
            },
            workspace_path: request.workspace_path,
            run_mode: request.run_mode,
            surviving_agents: request.surviving_agents,
        };
        let call = self
            .api()
            .call_record_task_outcome(store, workspace, &request, now_ms);
        finish("record-task-outcome", call, |e| {
            let role_state: RoleStateChange = serde_json::from_str(&e.role_state)
                .map_err(|err| bad_json("the role-state change of a task outcome".into(), &err))?;
            Ok(TaskOutcomeEffects {
                role_state,
                set_metadata: from_json_object(
                    "metadata to set",
                    "a task outcome",
                    &e.set_metadata,
                )?,
                remove_metadata: e.remove_metadata,
            })
        })
    }

    pub(crate) fn plan_provider_thread(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        agent_type: &str,
        dead_thread: Option<&str>,
    ) -> Result<ThreadPlan, Error> {
        let call =
            self.api()
                .call_plan_provider_thread(store, workspace, key, agent_type, dead_thread);
        finish("plan-provider-thread", call, |p| {
            Ok(ThreadPlan {
                action: p.action,
                thread_id: p.thread_id,
                replaces: p.replaces,
                notice: p.notice,
            })
        })
    }

    /// `parse-import`: the log as the core's `ImportedLog` JSON text.
    pub(crate) fn parse_import(
        &self,
        store: S<'_>,
        format: &str,
        text: &str,
    ) -> Result<String, Error> {
        let call = self.api().call_parse_import(store, format, text);
        finish("parse-import", call, Ok)
    }

    /// `import-session`: `request` is the core's `ImportRequest` as JSON text, the
    /// result its `ImportOutcome` as JSON text.
    pub(crate) fn import_session(
        &self,
        store: S<'_>,
        workspace: &str,
        request: &str,
        now_ms: u64,
    ) -> Result<String, Error> {
        let call = self
            .api()
            .call_import_session(store, workspace, request, now_ms);
        finish("import-session", call, Ok)
    }

    pub(crate) fn commit_turn(
        &self,
        store: S<'_>,
        workspace: &str,
        key: &str,
        turn: TurnCommit,
        now_ms: u64,
    ) -> Result<TurnCommitted, Error> {
        let turn = api::TurnCommit {
            entries: turn.entries.into_iter().map(to_wit_append).collect(),
            thread: turn.thread.map(|t| api::ThreadBinding {
                agent_type: t.agent_type,
                thread_id: t.thread_id,
                replaces: t.replaces,
            }),
            expected_epoch: turn.expected_epoch,
        };
        let call = self
            .api()
            .call_commit_turn(store, workspace, key, &turn, now_ms);
        finish("commit-turn", call, |t| {
            Ok(TurnCommitted {
                entries: from_wit_entries(t.entries)?,
                session: from_wit_session(t.session)?,
            })
        })
    }
}

impl Exports {
    /// The generic entry point: `command` is a `spool::Command` as JSON text, the result
    /// the operation's JSON text.
    pub(crate) fn execute(
        &self,
        store: S<'_>,
        workspace: &str,
        command: &str,
    ) -> Result<String, Error> {
        let call = self.api().call_execute(store, workspace, command);
        finish("execute", call, Ok)
    }
}

/// One `role-session-json` from the component as the core's [`RoleSession`].
fn from_role_session(text: &str) -> Result<RoleSession, Error> {
    serde_json::from_str(text).map_err(|e| bad_json("a role session".into(), &e))
}

fn from_wit_run(r: api::RunRecord) -> Result<RunRecord, Error> {
    let metadata = serde_json::from_str(&r.metadata).map_err(|e| {
        bad_json(
            format!(
                "the metadata of run {}/{}/{}/{}",
                r.agent_type, r.session_id, r.project_id, r.task_id
            ),
            &e,
        )
    })?;
    Ok(RunRecord {
        agent_type: r.agent_type,
        project_id: r.project_id,
        session_id: r.session_id,
        status: r.status,
        updated_at: r.updated_at,
        task_id: r.task_id,
        role_session_id: r.role_session_id,
        workspace_path: r.workspace_path,
        run_mode: r.run_mode,
        metadata,
    })
}

fn from_wit_error(error: api::Error) -> Error {
    let code = match error.code {
        api::ErrorCode::NotFound => "not_found",
        api::ErrorCode::Conflict => "conflict",
        api::ErrorCode::InvalidArgument => "invalid_argument",
        api::ErrorCode::StaleEpoch => "stale_epoch",
        api::ErrorCode::Corruption => "corruption",
        api::ErrorCode::Storage => "storage",
        api::ErrorCode::Internal => "internal",
    };
    Error::Spool {
        code: code.to_owned(),
        message: error.message,
    }
}

/// The component returned JSON text that does not decode: a bug on one side.
fn bad_json(what: String, err: &serde_json::Error) -> Error {
    Error::Spool {
        code: "internal".to_owned(),
        message: format!("the component returned {what} that is not valid JSON: {err}"),
    }
}

/// A JSON object as text for the component; `None` for an empty map (nothing to merge).
fn json_object_text(map: &BTreeMap<String, Value>) -> Option<String> {
    (!map.is_empty()).then(|| Value::Object(map.clone().into_iter().collect()).to_string())
}

/// JSON-object text from the component as a map.
fn from_json_object(what: &str, key: &str, text: &str) -> Result<BTreeMap<String, Value>, Error> {
    serde_json::from_str(text).map_err(|e| bad_json(format!("the {what} of `{key}`"), &e))
}

fn to_wit_status(status: SessionStatus) -> api::SessionStatus {
    match status {
        SessionStatus::Running => api::SessionStatus::Running,
        SessionStatus::Done => api::SessionStatus::Done,
        SessionStatus::Failed => api::SessionStatus::Failed,
    }
}

fn from_wit_session(s: api::Session) -> Result<Session, Error> {
    let model_config = from_json_object("model config", &s.key, &s.model_config)?;
    let metadata = from_json_object("metadata", &s.key, &s.metadata)?;
    Ok(Session {
        status: match s.status {
            api::SessionStatus::Running => SessionStatus::Running,
            api::SessionStatus::Done => SessionStatus::Done,
            api::SessionStatus::Failed => SessionStatus::Failed,
        },
        key: s.key,
        session_id: s.session_id,
        agent_id: s.agent_id,
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
        model_config,
        metadata,
        last_state_id: s.last_state_id,
        message_index: s.message_index,
    })
}

fn from_wit_outcome(o: api::IntentOutcome) -> Result<IntentOutcome, Error> {
    Ok(IntentOutcome {
        session: from_wit_session(o.session)?,
        created: o.created,
        rotated: o.rotated,
        archive: o.archive.map(|a| spool::ArchiveStatus {
            written: a.written,
            error: a.error,
        }),
    })
}

fn from_wit_state(s: api::ContextState) -> Result<ContextState, Error> {
    let payload = serde_json::from_str(&s.payload).map_err(|e| {
        bad_json(
            format!(
                "the payload of context state {} of `{}`",
                s.id, s.session_key
            ),
            &e,
        )
    })?;
    Ok(ContextState {
        id: s.id,
        session_id: s.session_id,
        session_key: s.session_key,
        provider: s.provider,
        model: s.model,
        state_kind: s.state_kind,
        payload,
        covered_through_id: s.covered_through_id,
        created_at: s.created_at,
        expires_at: s.expires_at,
        portable: s.portable,
        cacheable: s.cacheable,
        valid: s.valid,
        invalid_reason: s.invalid_reason,
    })
}

fn to_wit_role(role: Role) -> api::Role {
    match role {
        Role::User => api::Role::User,
        Role::Assistant => api::Role::Assistant,
        Role::Tool => api::Role::Tool,
        Role::System => api::Role::System,
    }
}

fn from_wit_role(role: api::Role) -> Role {
    match role {
        api::Role::User => Role::User,
        api::Role::Assistant => Role::Assistant,
        api::Role::Tool => Role::Tool,
        api::Role::System => Role::System,
    }
}

fn to_wit_append(r: AppendRequest) -> api::AppendRequest {
    api::AppendRequest {
        role: to_wit_role(r.role),
        content: r.content,
        token_count: r.token_count,
        message_id: r.message_id,
        tool_calls: r.tool_calls.map(|v| v.to_string()),
        tool_call_id: r.tool_call_id,
        turn_id: r.turn_id,
        turn_usage: r.turn_usage.map(|u| api::TurnUsage {
            model: u.model,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
        }),
        expected_epoch: r.expected_epoch,
    }
}

fn from_wit_entry(e: api::Entry) -> Result<Entry, Error> {
    let tool_calls = e
        .tool_calls
        .map(|text| {
            serde_json::from_str(&text)
                .map_err(|err| bad_json(format!("tool calls of entry {}", e.id), &err))
        })
        .transpose()?;
    Ok(Entry {
        id: e.id,
        message_id: e.message_id,
        role: from_wit_role(e.role),
        content: e.content,
        created_at: e.created_at,
        token_count: e.token_count,
        tool_calls,
        tool_call_id: e.tool_call_id,
        turn_id: e.turn_id,
        turn_usage: e.turn_usage.map(|u| TurnUsage {
            model: u.model,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
        }),
    })
}

fn to_wit_compact(r: &CompactRequest) -> api::CompactRequest {
    let CompactionConfig {
        safety_margin,
        coverage_blocking,
        protected_recent,
    } = r.config;
    api::CompactRequest {
        context_window_tokens: r.context_window_tokens,
        config: api::CompactionConfig {
            safety_margin,
            coverage_blocking,
            protected_recent,
        },
        compaction_id: r.compaction_id.clone(),
        trigger_reason: r.trigger_reason.clone(),
        flush_receipt_status: r.flush_receipt_status.clone(),
    }
}

fn from_wit_entries(entries: Vec<api::Entry>) -> Result<Vec<Entry>, Error> {
    entries.into_iter().map(from_wit_entry).collect()
}

fn from_wit_result(r: api::CompactionResult) -> Result<CompactionResult, Error> {
    let summary_payload = r
        .summary_payload
        .map(|text| {
            serde_json::from_str(&text)
                .map_err(|e| bad_json("the summary payload of a compaction result".into(), &e))
        })
        .transpose()?;
    Ok(CompactionResult {
        summary: r.summary,
        summary_source: r.summary_source,
        summary_payload,
        removed_count: r.removed_count,
        kept_entries: from_wit_entries(r.kept_entries)?,
        tokens_before: r.tokens_before,
        tokens_after: r.tokens_after,
        chunks_processed: r.chunks_processed,
        coverage_status: r.coverage_status,
        missing_obligations: r.missing_obligations,
        dropped_obligations: r.dropped_obligations,
        skip_reason: r.skip_reason,
        compaction_id: r.compaction_id,
    })
}

fn from_wit_obligation(o: api::Obligation) -> Result<Obligation, Error> {
    // The kind is the core's snake_case enum name; parse it as the enum's JSON string.
    let kind = serde_json::from_value(Value::String(o.kind.clone())).map_err(|e| Error::Spool {
        code: "internal".to_owned(),
        message: format!(
            "the component returned an obligation of unknown kind `{}`: {e}",
            o.kind
        ),
    })?;
    Ok(Obligation {
        kind,
        text: o.text,
        critical: o.critical,
    })
}

fn from_wit_prepared(p: api::Prepared) -> Result<Prepared, Error> {
    Ok(Prepared {
        skip_reason: p.skip_reason,
        input: p.input,
        obligations: p
            .obligations
            .into_iter()
            .map(from_wit_obligation)
            .collect::<Result<_, _>>()?,
        removed_count: p.removed_count,
        kept_count: p.kept_count,
        covered_through_id: p.covered_through_id,
        tokens_before: p.tokens_before,
        preimage: p.preimage,
    })
}

/// One `summary-json` from the component as the core's [`Summary`].
fn from_summary(text: &str) -> Result<Summary, Error> {
    serde_json::from_str(text).map_err(|e| bad_json("a compaction summary".into(), &e))
}

fn from_summaries(texts: Vec<String>) -> Result<Vec<Summary>, Error> {
    texts.iter().map(|t| from_summary(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_undecodable_json_from_the_guest_is_internal_not_a_panic() {
        let err = from_summary("{not json").expect_err("bad JSON is refused");
        assert_eq!(err.code(), "internal");
        let err = from_summaries(vec!["{\"compaction_id\": 3}".into()])
            .expect_err("a wrong shape is refused");
        assert_eq!(err.code(), "internal");
        let err = from_wit_obligation(api::Obligation {
            kind: "no_such_kind".into(),
            text: "x".into(),
            critical: true,
        })
        .expect_err("an unknown kind is refused");
        assert_eq!(err.code(), "internal");
        let ok = from_wit_obligation(api::Obligation {
            kind: "next_action".into(),
            text: "run the tests".into(),
            critical: true,
        })
        .expect("a known kind parses");
        assert_eq!(ok.kind, spool::compaction::ObligationKind::NextAction);
    }

    #[test]
    fn test_an_undecodable_result_payload_is_internal() {
        let result = api::CompactionResult {
            summary: "s".into(),
            summary_source: "llm".into(),
            summary_payload: Some("[".into()),
            removed_count: 0,
            kept_entries: Vec::new(),
            tokens_before: 0,
            tokens_after: 0,
            chunks_processed: 0,
            coverage_status: "unknown".into(),
            missing_obligations: Vec::new(),
            dropped_obligations: Vec::new(),
            skip_reason: None,
            compaction_id: None,
        };
        assert_eq!(
            from_wit_result(result).expect_err("refused").code(),
            "internal"
        );
    }
}
