//! The provider-fork methods of [`Spool`] (ARCHITECTURE.md, "Turns and provider forks"): a durable fork operation per request
//! (`fork` → `beginForkDispatch` → the provider call → `recordForkDisposition` →
//! `commitFork` → `acknowledgeForkOperation`), restart recovery, the one-time provider
//! state binding of a committed child, and the fork-capability projection. The state
//! machine, the barrier and every check are the core's; each method only converts its
//! arguments and drives the core's operation. A fork conflict rejects with code
//! `conflict` and the fork reason in the error's `reason`.

use js_sys::Promise;
use spool::provider_fork::capabilities::{ForkProjection, ProbeAnswer, ProjectionMode};
use spool::provider_fork::{
    Disposition, ForkLineage, ForkOperationView, ForkRequest, ProviderBindingRequest,
    RecoveryReport,
};
use spool::{Error, Operation};
use wasm_bindgen::prelude::*;

use super::{Spool, TIME, workspace_and_key};
use crate::js;

/// Options of `fork`: the operation id a new request gets, and the time.
const FORK: &[&str] = &["operationId", "nowMs"];

#[wasm_bindgen]
impl Spool {
    /// Prepares a provider fork of the session `sourceKey` (`request` is the core's
    /// `ForkRequest`: `request_id`, `target_key`, `target_session_id`, optional
    /// `through_turn_id` and `cwd`) and resolves at once to the operation: status
    /// `accepted`, phase `frozen`. The same request under the same `request_id` resolves to
    /// the existing operation; a changed one rejects with `conflict` (reason
    /// `request_changed`); a second fork of the same point while one holds it resolves to
    /// that one. `options.operationId` (the id of a new operation) defaults to
    /// `crypto.randomUUID()`, `options.nowMs` to `Date.now()`.
    #[wasm_bindgen(unchecked_return_type = "Promise<ForkOperation>")]
    pub fn fork(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "sourceKey", unchecked_param_type = "string")] source_key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ForkRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ForkOptions")] options: JsValue,
    ) -> Promise {
        self.run(fork(&workspace, &source_key, request, options))
    }

    /// Records that the host is about to call the provider for the operation
    /// `operationId` (`prepared` → `dispatching`) and resolves to what to send
    /// (`DispatchPayload`). A second call rejects with `conflict` (reason
    /// `stale_transition`): a fork is never dispatched twice. `options.nowMs` defaults to
    /// `Date.now()`.
    #[wasm_bindgen(
        js_name = beginForkDispatch,
        unchecked_return_type = "Promise<DispatchPayload>"
    )]
    pub fn begin_fork_dispatch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "operationId", unchecked_param_type = "string")]
        operation_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(by_operation(
            &workspace,
            &operation_id,
            options,
            spool::begin_fork_dispatch,
        ))
    }

    /// Records the provider's answer for the dispatched operation `operationId`
    /// (`disposition` is the core's `Disposition`: `{ disposition: "accepted",
    /// target_provider_session_id?, bind_provider_state? }`, `{ disposition: "rejected",
    /// error, reason? }` or `{ disposition: "unknown", error }`; texts are kept verbatim).
    /// `options.nowMs` defaults to `Date.now()`. Resolves to the operation.
    #[wasm_bindgen(
        js_name = recordForkDisposition,
        unchecked_return_type = "Promise<ForkOperation>"
    )]
    pub fn record_fork_disposition(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "operationId", unchecked_param_type = "string")]
        operation_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Disposition")] disposition: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(record_fork_disposition(
            &workspace,
            &operation_id,
            disposition,
            options,
        ))
    }

    /// Materializes the child of the provider-accepted operation `operationId` from the
    /// snapshot frozen at `fork`, with its lineage, in one commit (→ `committed`).
    /// Committing again resolves to the committed operation; a failed one rejects with
    /// `conflict`. `options.nowMs` defaults to `Date.now()`. Resolves to the operation.
    #[wasm_bindgen(js_name = commitFork, unchecked_return_type = "Promise<ForkOperation>")]
    pub fn commit_fork(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "operationId", unchecked_param_type = "string")]
        operation_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(by_operation(
            &workspace,
            &operation_id,
            options,
            spool::commit_fork,
        ))
    }

    /// Resolves to the operation `operationId` (unknown: `not_found`). A committed one
    /// carries its immutable child and lineage, even after the child was deleted. Never
    /// acknowledges.
    #[wasm_bindgen(js_name = getForkOperation, unchecked_return_type = "Promise<ForkOperation>")]
    pub fn get_fork_operation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "operationId", unchecked_param_type = "string")]
        operation_id: JsValue,
    ) -> Promise {
        self.run(get_fork_operation(&workspace, &operation_id))
    }

    /// Acknowledges the committed operation `operationId`: the first call records it and
    /// releases the fork point for a new fork; later calls resolve to it unchanged. Any
    /// other state rejects with `conflict` (reason `stale_transition`). `options.nowMs`
    /// defaults to `Date.now()`. Resolves to the operation.
    #[wasm_bindgen(
        js_name = acknowledgeForkOperation,
        unchecked_return_type = "Promise<ForkOperation>"
    )]
    pub fn acknowledge_fork_operation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "operationId", unchecked_param_type = "string")]
        operation_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(by_operation(
            &workspace,
            &operation_id,
            options,
            spool::acknowledge_fork_operation,
        ))
    }

    /// Restart recovery of `workspace`'s fork operations, in one commit: `dispatching`
    /// ones become `unknown` (never retried), `prepared` ones are returned for dispatch
    /// and `provider_accepted` ones for commit only. `options.nowMs` defaults to
    /// `Date.now()`. Resolves to `{ marked_unknown, to_dispatch, to_commit }`.
    #[wasm_bindgen(
        js_name = recoverForkOperations,
        unchecked_return_type = "Promise<RecoveryReport>"
    )]
    pub fn recover_fork_operations(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(recover_fork_operations(&workspace, options))
    }

    /// Before the session `key` first runs: when it is the child of a committed fork whose
    /// provider keeps provider-side state, claims the one-time binding and resolves to
    /// what to bind (`ProviderBindingRequest`); every other call resolves to `null`, so
    /// the host is asked exactly once. `options.nowMs` defaults to `Date.now()`.
    #[wasm_bindgen(
        js_name = claimForkProviderBinding,
        unchecked_return_type = "Promise<ProviderBindingRequest | null>"
    )]
    pub fn claim_fork_provider_binding(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(claim_fork_provider_binding(&workspace, &key, options))
    }

    /// Records that the host bound the provider state it claimed for the operation
    /// `operationId` (`claimed` → `bound`; `bound` again resolves unchanged; anything else
    /// rejects with `conflict`, reason `stale_transition`). `options.nowMs` defaults to
    /// `Date.now()`. Resolves to the operation.
    #[wasm_bindgen(
        js_name = completeForkProviderBinding,
        unchecked_return_type = "Promise<ForkOperation>"
    )]
    pub fn complete_fork_provider_binding(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "operationId", unchecked_param_type = "string")]
        operation_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(by_operation(
            &workspace,
            &operation_id,
            options,
            spool::complete_fork_provider_binding,
        ))
    }

    /// Resolves to the fork lineage of the session `key` (where the provider fork that
    /// made it came from), or `null` when it is not the child of a fork.
    #[wasm_bindgen(
        js_name = getForkLineage,
        unchecked_return_type = "Promise<ForkLineage | null>"
    )]
    pub fn get_fork_lineage(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(get_fork_lineage(&workspace, &key))
    }

    /// Projects the fork capabilities of the sessions `keys` for `mode` (`"detail"`,
    /// `"list"` or `"hydration"`), in two steps: without `answers` it resolves to the
    /// projection so far (failing closed) and the `probes` to ask the provider; called
    /// again with the provider's `answers` (`ProbeAnswer[]`) it resolves to the
    /// projection. A missing key is `not_found`.
    #[wasm_bindgen(js_name = forkProjection, unchecked_return_type = "Promise<ForkProjection>")]
    pub fn fork_projection(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[]")] keys: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ProjectionMode")] mode: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ProbeAnswer[] | null")] answers: JsValue,
    ) -> Promise {
        self.run(fork_projection(&workspace, keys, &mode, answers))
    }
}

fn fork(
    workspace: &JsValue,
    source_key: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<ForkOperationView>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let source_key = js::string(source_key, "sourceKey")?;
    let request: ForkRequest = js::object(request, "request")?;
    let options = js::options(options, "options", FORK)?;
    let operation_id = options.operation_id()?;
    Ok(spool::fork(
        &workspace,
        &source_key,
        request,
        &operation_id,
        options.now(),
    ))
}

/// The calls that take an operation id and the time: `op` is the core operation.
fn by_operation<T>(
    workspace: &JsValue,
    operation_id: &JsValue,
    options: JsValue,
    op: fn(&str, &str, u64) -> Operation<T>,
) -> Result<Operation<T>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let operation_id = js::string(operation_id, "operationId")?;
    let options = js::options(options, "options", TIME)?;
    Ok(op(&workspace, &operation_id, options.now()))
}

fn record_fork_disposition(
    workspace: &JsValue,
    operation_id: &JsValue,
    disposition: JsValue,
    options: JsValue,
) -> Result<Operation<ForkOperationView>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let operation_id = js::string(operation_id, "operationId")?;
    let disposition: Disposition = js::object(disposition, "disposition")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::record_fork_disposition(
        &workspace,
        &operation_id,
        disposition,
        options.now(),
    ))
}

fn get_fork_operation(
    workspace: &JsValue,
    operation_id: &JsValue,
) -> Result<Operation<ForkOperationView>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let operation_id = js::string(operation_id, "operationId")?;
    Ok(spool::get_fork_operation(&workspace, &operation_id))
}

fn recover_fork_operations(
    workspace: &JsValue,
    options: JsValue,
) -> Result<Operation<RecoveryReport>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::recover_fork_operations(&workspace, options.now()))
}

fn claim_fork_provider_binding(
    workspace: &JsValue,
    key: &JsValue,
    options: JsValue,
) -> Result<Operation<Option<ProviderBindingRequest>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::claim_fork_provider_binding(
        &workspace,
        &key,
        options.now(),
    ))
}

fn get_fork_lineage(
    workspace: &JsValue,
    key: &JsValue,
) -> Result<Operation<Option<ForkLineage>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    Ok(spool::get_fork_lineage(&workspace, &key))
}

fn fork_projection(
    workspace: &JsValue,
    keys: JsValue,
    mode: &JsValue,
    answers: JsValue,
) -> Result<Operation<ForkProjection>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let keys: Vec<String> = js::array(keys, "keys")?;
    let mode: ProjectionMode = js::choice(mode, "mode")?;
    let answers: Vec<ProbeAnswer> = js::optional_array(answers, "answers")?;
    Ok(spool::provider_fork::capabilities::fork_projection(
        &workspace, keys, mode, answers,
    ))
}
