//! The resume-selection methods of [`Spool`] (ARCHITECTURE.md, "Resume selection"): role sessions and their adapter
//! state, external run records, the resume decision before a task and the effects of its
//! outcome, and the provider thread a session's turns run on. Like the rest of the class,
//! each method only converts its arguments and drives the core's operation.

use std::collections::BTreeMap;

use js_sys::Promise;
use serde_json::Value;
use spool::resume::rules::{ResumeDecision, RunRecord, TaskOutcomeEffects};
use spool::{
    Error, NewRoleSession, NewRun, Operation, OutcomeRequest, ResumeRequest, RoleSession,
    RunFilter, RunList, ThreadPlan, TurnCommit, TurnCommitted,
};
use wasm_bindgen::prelude::*;

use super::{Spool, TIME, workspace_and_key};
use crate::js;

#[wasm_bindgen]
impl Spool {
    /// Creates or replaces the role session `role` (the core's `NewRoleSession`:
    /// `role_session_id`, optional `run_id`, `role_id` and `adapter_state`, which replaces
    /// the stored one whole). `options.nowMs` defaults to `Date.now()`. Resolves to the
    /// stored role session.
    #[wasm_bindgen(js_name = saveRoleSession, unchecked_return_type = "Promise<RoleSession>")]
    pub fn save_role_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "NewRoleSession")] role: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(save_role_session(&workspace, role, options))
    }

    /// Resolves to the role session `roleSessionId`, or `null` when there is none.
    #[wasm_bindgen(
        js_name = getRoleSession,
        unchecked_return_type = "Promise<RoleSession | null>"
    )]
    pub fn get_role_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "roleSessionId", unchecked_param_type = "string")]
        role_session_id: JsValue,
    ) -> Promise {
        self.run(get_role_session(&workspace, &role_session_id))
    }

    /// Sets the adapter state of `agentType` in the role session `roleSessionId` to
    /// `state` (latest wins: nothing is merged from the previous entry), or with `null`
    /// clears it together with the legacy flat resume keys. Other agents' entries and
    /// unrelated keys stay. `options.nowMs` defaults to `Date.now()`. Resolves to `false`
    /// when the role session does not exist, `true` otherwise.
    #[wasm_bindgen(js_name = updateRoleAdapterState, unchecked_return_type = "Promise<boolean>")]
    pub fn update_role_adapter_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "roleSessionId", unchecked_param_type = "string")]
        role_session_id: JsValue,
        #[wasm_bindgen(js_name = "agentType", unchecked_param_type = "string")] agent_type: JsValue,
        #[wasm_bindgen(unchecked_param_type = "AdapterState | null")] state: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(update_role_adapter_state(
            &workspace,
            &role_session_id,
            &agent_type,
            state,
            options,
        ))
    }

    /// Resolves to the adapter state of `agentType` in the role session `roleSessionId`,
    /// or `null` when the role session or the entry is missing.
    #[wasm_bindgen(
        js_name = getRoleAdapterState,
        unchecked_return_type = "Promise<AdapterState | null>"
    )]
    pub fn get_role_adapter_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "roleSessionId", unchecked_param_type = "string")]
        role_session_id: JsValue,
        #[wasm_bindgen(js_name = "agentType", unchecked_param_type = "string")] agent_type: JsValue,
    ) -> Promise {
        self.run(get_role_adapter_state(
            &workspace,
            &role_session_id,
            &agent_type,
        ))
    }

    /// Records an external run of an agent CLI (`run` is the core's `NewRun`): one row per
    /// agent type, token (`session_id`), project and task; recording it again replaces
    /// the row. `options.nowMs` (default `Date.now()`) stamps `updated_at`. Resolves to
    /// the stored run record.
    #[wasm_bindgen(js_name = recordRun, unchecked_return_type = "Promise<RunRecord>")]
    pub fn record_run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "NewRun")] run: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(record_run(&workspace, run, options))
    }

    /// Lists up to `limit` run records of `workspace`, ordered by agent type, token,
    /// project and task; `cursor` is the `next_cursor` of the previous page; `filter`
    /// (`{ agent_type?, project_id?, role_session_id? }`) keeps only the matching runs.
    #[wasm_bindgen(js_name = listRuns, unchecked_return_type = "Promise<RunList>")]
    pub fn list_runs(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] cursor: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunFilter | null")] filter: JsValue,
    ) -> Promise {
        self.run(list_runs(&workspace, &limit, &cursor, filter))
    }

    /// Decides, before a task starts, whether it resumes a provider session (`request` is
    /// the core's `ResumeRequest`): the role's adapter state first, the run history
    /// second, with every veto. A rejected role token is cleared from the role session in
    /// the same call. Resolves to the `ResumeDecision` (`mode` `resume` with
    /// `session_id`, `new` or `auto`, and the task metadata to set and remove).
    #[wasm_bindgen(js_name = selectResume, unchecked_return_type = "Promise<ResumeDecision>")]
    pub fn select_resume(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ResumeRequest")] request: JsValue,
    ) -> Promise {
        self.run(select_resume(&workspace, request))
    }

    /// Records what a finished (or streaming) task left behind (`request` is the core's
    /// `OutcomeRequest`): its run row, when it reported a token, and the change to its
    /// role's adapter state, in one commit. `options.nowMs` defaults to `Date.now()`.
    /// Resolves to the `TaskOutcomeEffects` (the role-state change and the task metadata
    /// to set and remove).
    #[wasm_bindgen(
        js_name = recordTaskOutcome,
        unchecked_return_type = "Promise<TaskOutcomeEffects>"
    )]
    pub fn record_task_outcome(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "OutcomeRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(record_task_outcome(&workspace, request, options))
    }

    /// Plans the provider thread of a new `agentType` agent for the session `key`: resume
    /// the bound thread (`<agentType>_thread_id` in its `model_config`) or start one.
    /// `deadThread` is a thread the provider just refused to resume: when it is the bound
    /// one the plan starts fresh, names it in `replaces` (pass that to `commitTurn`) and
    /// carries one `notice`. Resolves to the `ThreadPlan`.
    #[wasm_bindgen(js_name = planProviderThread, unchecked_return_type = "Promise<ThreadPlan>")]
    pub fn plan_provider_thread(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "agentType", unchecked_param_type = "string")] agent_type: JsValue,
        #[wasm_bindgen(
            js_name = "deadThread",
            unchecked_optional_param_type = "string | null"
        )]
        dead_thread: JsValue,
    ) -> Promise {
        self.run(plan_provider_thread(
            &workspace,
            &key,
            &agent_type,
            &dead_thread,
        ))
    }

    /// Appends a turn's entries to the session `key` and records the thread they ran on,
    /// in one atomic commit (`turn` is the core's `TurnCommit`: `entries`, optional
    /// `thread` and `expected_epoch`). A binding that no longer matches `thread.replaces`
    /// rejects with `conflict` and writes nothing. `options.nowMs` defaults to
    /// `Date.now()`. Resolves to `{ entries, session }`.
    #[wasm_bindgen(js_name = commitTurn, unchecked_return_type = "Promise<TurnCommitted>")]
    pub fn commit_turn(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "TurnCommit")] turn: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(commit_turn(&workspace, &key, turn, options))
    }
}

fn save_role_session(
    workspace: &JsValue,
    role: JsValue,
    options: JsValue,
) -> Result<Operation<RoleSession>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let role: NewRoleSession = js::object(role, "role")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::save_role_session(&workspace, role, options.now()))
}

fn get_role_session(
    workspace: &JsValue,
    role_session_id: &JsValue,
) -> Result<Operation<Option<RoleSession>>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let role_session_id = js::string(role_session_id, "roleSessionId")?;
    Ok(spool::get_role_session(&workspace, &role_session_id))
}

fn update_role_adapter_state(
    workspace: &JsValue,
    role_session_id: &JsValue,
    agent_type: &JsValue,
    state: JsValue,
    options: JsValue,
) -> Result<Operation<bool>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let role_session_id = js::string(role_session_id, "roleSessionId")?;
    let agent_type = js::string(agent_type, "agentType")?;
    let state: Option<BTreeMap<String, Value>> = js::object_or_null(state, "state")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::update_role_adapter_state(
        &workspace,
        &role_session_id,
        &agent_type,
        state,
        options.now(),
    ))
}

fn get_role_adapter_state(
    workspace: &JsValue,
    role_session_id: &JsValue,
    agent_type: &JsValue,
) -> Result<Operation<Option<BTreeMap<String, Value>>>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let role_session_id = js::string(role_session_id, "roleSessionId")?;
    let agent_type = js::string(agent_type, "agentType")?;
    Ok(spool::get_role_adapter_state(
        &workspace,
        &role_session_id,
        &agent_type,
    ))
}

fn record_run(
    workspace: &JsValue,
    run: JsValue,
    options: JsValue,
) -> Result<Operation<RunRecord>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let run: NewRun = js::object(run, "run")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::record_run(&workspace, run, options.now()))
}

fn list_runs(
    workspace: &JsValue,
    limit: &JsValue,
    cursor: &JsValue,
    filter: JsValue,
) -> Result<Operation<RunList>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let limit = js::limit(limit, "limit")?;
    let cursor = js::optional_string(cursor, "cursor")?;
    let filter: RunFilter = js::optional_object(filter, "filter")?;
    Ok(spool::list_runs(&workspace, filter, limit, cursor))
}

fn select_resume(
    workspace: &JsValue,
    request: JsValue,
) -> Result<Operation<ResumeDecision>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let request: ResumeRequest = js::object(request, "request")?;
    Ok(spool::select_resume(&workspace, request))
}

fn record_task_outcome(
    workspace: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<TaskOutcomeEffects>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let request: OutcomeRequest = js::object(request, "request")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::record_task_outcome(
        &workspace,
        request,
        options.now(),
    ))
}

fn plan_provider_thread(
    workspace: &JsValue,
    key: &JsValue,
    agent_type: &JsValue,
    dead_thread: &JsValue,
) -> Result<Operation<ThreadPlan>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let agent_type = js::string(agent_type, "agentType")?;
    let dead_thread = js::optional_string(dead_thread, "deadThread")?;
    Ok(spool::plan_provider_thread(
        &workspace,
        &key,
        &agent_type,
        dead_thread,
    ))
}

fn commit_turn(
    workspace: &JsValue,
    key: &JsValue,
    turn: JsValue,
    options: JsValue,
) -> Result<Operation<TurnCommitted>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let turn: TurnCommit = js::object(turn, "turn")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::commit_turn(&workspace, &key, turn, options.now()))
}
