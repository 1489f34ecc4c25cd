//! The scenario vectors run through the JS API in a real browser: every call goes through
//! the `Spool` class's camelCase methods, so the JS boundary is part of what is tested,
//! and once more through the generic `execute`. Every vector runs, including those that
//! require the branch API.
#![cfg(target_arch = "wasm32")]

mod common;
#[path = "../../tests/vectors/mod.rs"]
mod vectors;

use serde_json::{Value, json};
use spool::{Command, FinishStatus};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// One fresh database behind the JS API.
struct Browser {
    spool: JsValue,
    /// Every call through `execute` (the generic entry point) instead of its typed method.
    generic: bool,
}

impl vectors::VectorHost for Browser {
    async fn exec(&mut self, workspace: &str, command: Command) -> Result<Value, vectors::Failure> {
        let ws = JsValue::from_str(workspace);
        let spool = &self.spool;
        let retype = retype(&command);
        let outcome = match command {
            command if self.generic => {
                let command = lossy(serde_json::to_value(&command).expect("command as JSON"));
                common::call(spool, "execute", &[ws, common::js(&command)]).await
            }
            Command::CreateSession {
                key,
                session_id,
                now_ms,
            } => {
                let options = json!({ "sessionId": session_id, "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&options)];
                common::call(spool, "createSession", &args).await
            }
            Command::GetSession { key } => {
                common::call(spool, "getSession", &[ws, key.into()]).await
            }
            Command::AppendEntry {
                key,
                request,
                now_ms,
            } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let options = json!({ "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&request), common::js(&options)];
                common::call(spool, "appendEntry", &args).await
            }
            Command::ReadPage { key, request } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let args = [ws, key.into(), common::js(&request)];
                common::call(spool, "readPage", &args).await
            }
            Command::ListSessions {
                limit,
                cursor,
                agent_id,
                status,
            } => {
                let cursor = cursor.map_or(JsValue::UNDEFINED, JsValue::from);
                let filter = common::js(&json!({ "agent_id": agent_id, "status": status }));
                let args = [ws, limit.into(), cursor, filter];
                common::call(spool, "listSessions", &args).await
            }
            Command::GetOrCreate {
                key,
                session_id,
                now_ms,
            } => {
                let options = json!({ "sessionId": session_id, "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&options)];
                common::call(spool, "getOrCreate", &args).await
            }
            Command::ApplyIntent {
                key,
                intent,
                session_id,
                now_ms,
            } => {
                let intent = serde_json::to_value(intent).expect("intent as JSON");
                let options = json!({ "sessionId": session_id, "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&intent), common::js(&options)];
                common::call(spool, "applyIntent", &args).await
            }
            Command::Resume { key, now_ms } => {
                let options = json!({ "nowMs": now_ms });
                common::call(spool, "resume", &[ws, key.into(), common::js(&options)]).await
            }
            Command::Update {
                key,
                request,
                now_ms,
            } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let options = json!({ "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&request), common::js(&options)];
                common::call(spool, "update", &args).await
            }
            Command::Finish {
                key,
                status,
                expected_epoch,
                now_ms,
            } => {
                let options = fence(now_ms, expected_epoch);
                if status == FinishStatus::Done {
                    // `archiveSession` is `finish(…, "done", …)`: the vectors cover both.
                    common::call(spool, "archiveSession", &[ws, key.into(), options]).await
                } else {
                    let status = serde_json::to_value(status).expect("status as JSON");
                    let args = [ws, key.into(), common::js(&status), options];
                    common::call(spool, "finish", &args).await
                }
            }
            Command::DeleteSession {
                key,
                expected_epoch,
            } => {
                let options = match expected_epoch {
                    Some(epoch) => common::js(&json!({ "expectedEpoch": epoch })),
                    None => JsValue::UNDEFINED,
                };
                common::call(spool, "deleteSession", &[ws, key.into(), options]).await
            }
            Command::PruneStale { max_age_ms, now_ms } => {
                let options = json!({ "nowMs": now_ms });
                let args = [ws, number(max_age_ms), common::js(&options)];
                common::call(spool, "pruneStale", &args).await
            }
            Command::CapEntries { max } => {
                common::call(spool, "capEntries", &[ws, number(max)]).await
            }
            Command::CountEntries { key } => {
                common::call(spool, "countEntries", &[ws, key.into()]).await
            }
            Command::GetEntry { key, message_id } => {
                let args = [ws, key.into(), message_id.into()];
                common::call(spool, "getEntry", &args).await
            }
            Command::Truncate {
                key,
                max_messages,
                expected_epoch,
                now_ms,
            } => {
                let args = [
                    ws,
                    key.into(),
                    number(max_messages),
                    fence(now_ms, expected_epoch),
                ];
                common::call(spool, "truncate", &args).await
            }
            Command::SaveState {
                key,
                state,
                expected_epoch,
                now_ms,
            } => {
                let state = serde_json::to_value(&state).expect("state as JSON");
                let args = [
                    ws,
                    key.into(),
                    common::js(&state),
                    fence(now_ms, expected_epoch),
                ];
                common::call(spool, "saveState", &args).await
            }
            Command::ListStates { key, valid_only } => {
                // The default (`true`) is left to the JS API.
                let valid_only = if valid_only {
                    JsValue::UNDEFINED
                } else {
                    JsValue::FALSE
                };
                common::call(spool, "listStates", &[ws, key.into(), valid_only]).await
            }
            Command::InvalidateStates {
                key,
                state_kind,
                reason,
                now_ms,
            } => {
                let state_kind = state_kind.map_or(JsValue::UNDEFINED, JsValue::from);
                let options = json!({ "nowMs": now_ms });
                let args = [
                    ws,
                    key.into(),
                    reason.into(),
                    state_kind,
                    common::js(&options),
                ];
                common::call(spool, "invalidateStates", &args).await
            }
            Command::Compact {
                key,
                request,
                now_ms,
            } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let options = json!({ "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&request), common::js(&options)];
                common::call(spool, "compact", &args).await
            }
            Command::PrepareCompaction { key, request } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let args = [ws, key.into(), common::js(&request)];
                common::call(spool, "prepareCompaction", &args).await
            }
            Command::CommitCompaction {
                key,
                commit,
                now_ms,
            } => {
                let commit = serde_json::to_value(&commit).expect("commit as JSON");
                let options = json!({ "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&commit), common::js(&options)];
                common::call(spool, "commitCompaction", &args).await
            }
            Command::PersistCompactionResult {
                key,
                persist,
                now_ms,
            } => {
                let persist = serde_json::to_value(&persist).expect("persist as JSON");
                let options = json!({ "nowMs": now_ms });
                let args = [ws, key.into(), common::js(&persist), common::js(&options)];
                common::call(spool, "persistCompactionResult", &args).await
            }
            Command::CanonicalTranscript { key } => {
                common::call(spool, "canonicalTranscript", &[ws, key.into()]).await
            }
            Command::ListSummaries { key } => {
                common::call(spool, "listSummaries", &[ws, key.into()]).await
            }
            Command::ListDegradedCompactions { agent_id } => {
                let agent_id = agent_id.map_or(JsValue::UNDEFINED, JsValue::from);
                common::call(spool, "listDegradedCompactions", &[ws, agent_id]).await
            }
            Command::CompactionPreimage { key, compaction_id } => {
                let args = [ws, key.into(), compaction_id.into()];
                common::call(spool, "compactionPreimage", &args).await
            }
            Command::SetRepairStatus {
                key,
                compaction_id,
                status,
            } => {
                let args = [ws, key.into(), compaction_id.into(), status.into()];
                common::call(spool, "setRepairStatus", &args).await
            }
            Command::SetFlushReceipt {
                key,
                compaction_id,
                status,
            } => {
                let args = [ws, key.into(), compaction_id.into(), status.into()];
                common::call(spool, "setFlushReceipt", &args).await
            }
            Command::SaveRoleSession { role, now_ms } => {
                let role = serde_json::to_value(&role).expect("role as JSON");
                let args = [ws, common::js(&role), time(now_ms)];
                common::call(spool, "saveRoleSession", &args).await
            }
            Command::GetRoleSession { role_session_id } => {
                common::call(spool, "getRoleSession", &[ws, role_session_id.into()]).await
            }
            Command::UpdateRoleAdapterState {
                role_session_id,
                agent_type,
                state,
                now_ms,
            } => {
                // `null` clears: the JS API takes it as given, never `undefined`.
                let state = state.map_or(JsValue::NULL, |state| common::js(&json!(state)));
                let args = [
                    ws,
                    role_session_id.into(),
                    agent_type.into(),
                    state,
                    time(now_ms),
                ];
                common::call(spool, "updateRoleAdapterState", &args).await
            }
            Command::GetRoleAdapterState {
                role_session_id,
                agent_type,
            } => {
                let args = [ws, role_session_id.into(), agent_type.into()];
                common::call(spool, "getRoleAdapterState", &args).await
            }
            Command::RecordRun { run, now_ms } => {
                let run = serde_json::to_value(&run).expect("run as JSON");
                common::call(spool, "recordRun", &[ws, common::js(&run), time(now_ms)]).await
            }
            Command::ListRuns {
                filter,
                limit,
                cursor,
            } => {
                let cursor = cursor.map_or(JsValue::UNDEFINED, JsValue::from);
                let filter = serde_json::to_value(&filter).expect("filter as JSON");
                let args = [ws, limit.into(), cursor, common::js(&filter)];
                common::call(spool, "listRuns", &args).await
            }
            Command::SelectResume { request } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                common::call(spool, "selectResume", &[ws, common::js(&request)]).await
            }
            Command::RecordTaskOutcome { request, now_ms } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let args = [ws, common::js(&request), time(now_ms)];
                common::call(spool, "recordTaskOutcome", &args).await
            }
            Command::PlanProviderThread {
                key,
                agent_type,
                dead_thread,
            } => {
                let dead_thread = dead_thread.map_or(JsValue::UNDEFINED, JsValue::from);
                let args = [ws, key.into(), agent_type.into(), dead_thread];
                common::call(spool, "planProviderThread", &args).await
            }
            Command::CommitTurn { key, turn, now_ms } => {
                let turn = serde_json::to_value(&turn).expect("turn as JSON");
                let args = [ws, key.into(), common::js(&turn), time(now_ms)];
                common::call(spool, "commitTurn", &args).await
            }
            Command::ImportSession { request, now_ms } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let args = [ws, common::js(&request), time(now_ms)];
                common::call(spool, "importSession", &args).await
            }
            Command::Branch {
                parent_key,
                child_key,
                request,
                now_ms,
            } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let args = [
                    ws,
                    parent_key.into(),
                    child_key.into(),
                    common::js(&request),
                    time(now_ms),
                ];
                common::call(spool, "branch", &args).await
            }
            Command::Lineage { key } => common::call(spool, "lineage", &[ws, key.into()]).await,
            Command::ListChildren { key } => {
                common::call(spool, "listChildren", &[ws, key.into()]).await
            }
            Command::StartTurn {
                key,
                request,
                now_ms,
            } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let args = [ws, key.into(), common::js(&request), time(now_ms)];
                common::call(spool, "startTurn", &args).await
            }
            Command::SettleTurn {
                key,
                turn_id,
                close,
                now_ms,
            } => {
                let args = [
                    ws,
                    key.into(),
                    turn_id.into(),
                    close_turn(&close),
                    time(now_ms),
                ];
                common::call(spool, "settleTurn", &args).await
            }
            Command::InterruptTurn {
                key,
                turn_id,
                close,
                now_ms,
            } => {
                let args = [
                    ws,
                    key.into(),
                    turn_id.into(),
                    close_turn(&close),
                    time(now_ms),
                ];
                common::call(spool, "interruptTurn", &args).await
            }
            Command::GetTurn { key, turn_id } => {
                common::call(spool, "getTurn", &[ws, key.into(), turn_id.into()]).await
            }
            Command::SessionTurns { key } => {
                common::call(spool, "sessionTurns", &[ws, key.into()]).await
            }
            Command::ListTurns { key, request } => {
                // The default request is what a JS caller gets by leaving it out.
                let request = if request == spool::turns::TurnPageRequest::default() {
                    JsValue::UNDEFINED
                } else {
                    common::js(&serde_json::to_value(&request).expect("request as JSON"))
                };
                common::call(spool, "listTurns", &[ws, key.into(), request]).await
            }
            Command::Fork {
                source_key,
                request,
                operation_id,
                now_ms,
            } => {
                let request = serde_json::to_value(&request).expect("request as JSON");
                let options = json!({ "operationId": operation_id, "nowMs": now_ms });
                let args = [
                    ws,
                    source_key.into(),
                    common::js(&request),
                    common::js(&options),
                ];
                common::call(spool, "fork", &args).await
            }
            Command::BeginForkDispatch {
                operation_id,
                now_ms,
            } => {
                let args = [ws, operation_id.into(), time(now_ms)];
                common::call(spool, "beginForkDispatch", &args).await
            }
            Command::RecordForkDisposition {
                operation_id,
                disposition,
                now_ms,
            } => {
                let disposition = serde_json::to_value(&disposition).expect("disposition as JSON");
                let args = [
                    ws,
                    operation_id.into(),
                    common::js(&disposition),
                    time(now_ms),
                ];
                common::call(spool, "recordForkDisposition", &args).await
            }
            Command::CommitFork {
                operation_id,
                now_ms,
            } => {
                let args = [ws, operation_id.into(), time(now_ms)];
                common::call(spool, "commitFork", &args).await
            }
            Command::GetForkOperation { operation_id } => {
                common::call(spool, "getForkOperation", &[ws, operation_id.into()]).await
            }
            Command::AcknowledgeForkOperation {
                operation_id,
                now_ms,
            } => {
                let args = [ws, operation_id.into(), time(now_ms)];
                common::call(spool, "acknowledgeForkOperation", &args).await
            }
            Command::RecoverForkOperations { now_ms } => {
                common::call(spool, "recoverForkOperations", &[ws, time(now_ms)]).await
            }
            Command::ClaimForkProviderBinding { key, now_ms } => {
                let args = [ws, key.into(), time(now_ms)];
                common::call(spool, "claimForkProviderBinding", &args).await
            }
            Command::CompleteForkProviderBinding {
                operation_id,
                now_ms,
            } => {
                let args = [ws, operation_id.into(), time(now_ms)];
                common::call(spool, "completeForkProviderBinding", &args).await
            }
            Command::GetForkLineage { key } => {
                common::call(spool, "getForkLineage", &[ws, key.into()]).await
            }
            Command::ForkProjection {
                keys,
                mode,
                answers,
            } => {
                let mode = serde_json::to_value(mode).expect("mode as JSON");
                // No answers is the first step of the two-step: the JS caller leaves
                // them out.
                let answers = if answers.is_empty() {
                    JsValue::UNDEFINED
                } else {
                    common::js(&serde_json::to_value(&answers).expect("answers as JSON"))
                };
                let args = [ws, common::js(&json!(keys)), common::js(&mode), answers];
                common::call(spool, "forkProjection", &args).await
            }
            // A call this harness has no typed method for yet still runs, through the
            // generic `execute`, so a new core call never skips a vector.
            other => {
                let command = serde_json::to_value(&other).expect("command as JSON");
                common::call(spool, "execute", &[ws, common::js(&command)]).await
            }
        };
        outcome
            .map(|value| retype(common::json(value)))
            .map_err(|error| vectors::Failure {
                code: common::code(&error),
                message: common::message(&error),
            })
    }

    /// Every call is mapped (and any other would run through `execute`).
    fn supports(&self, _feature: &str) -> bool {
        true
    }
}

/// Reads a JS result back as the core type `T` and writes it as JSON again.
///
/// JavaScript has one number type, so a cost of `0.0` reaches JSON from JS as the integer
/// `0`; the vectors (written against the core's own JSON) say `0.0`. Going through the
/// result's Rust type restores the core's spelling, and checks on the way that what the
/// JS API returned is a well-formed value of that type.
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(value: Value) -> Value {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| {
        panic!(
            "the JS API returned {value}, not a {}: {e}",
            std::any::type_name::<T>()
        )
    });
    serde_json::to_value(typed).expect("a core value serializes")
}

/// The [`typed`] conversion for the result of `command`.
fn retype(command: &Command) -> fn(Value) -> Value {
    use spool::compaction::{CompactionResult, Prepared, Summary};
    use spool::import::ImportOutcome;
    use spool::provider_fork::capabilities::ForkProjection;
    use spool::provider_fork::{
        DispatchPayload, ForkLineage, ForkOperationView, ProviderBindingRequest, RecoveryReport,
    };
    use spool::resume::rules::{ResumeDecision, RunRecord, TaskOutcomeEffects};
    use spool::turns::{SessionTurns, Turn, TurnPage};
    use spool::{Branch, LineageView, RoleSession, RunList, ThreadPlan, TurnCommitted};
    use spool::{ContextState, Entry, IntentOutcome, Page, Session, SessionList, TruncateOutcome};
    use std::collections::BTreeMap;
    match command {
        Command::CreateSession { .. }
        | Command::Resume { .. }
        | Command::Update { .. }
        | Command::Finish { .. } => typed::<Session>,
        Command::GetSession { .. } => typed::<Option<Session>>,
        Command::AppendEntry { .. } => typed::<Entry>,
        Command::GetEntry { .. } => typed::<Option<Entry>>,
        Command::ReadPage { .. } => typed::<Page>,
        Command::ListSessions { .. } => typed::<SessionList>,
        Command::GetOrCreate { .. } | Command::ApplyIntent { .. } => typed::<IntentOutcome>,
        Command::Truncate { .. } => typed::<TruncateOutcome>,
        Command::SaveState { .. } => typed::<ContextState>,
        Command::ListStates { .. } => typed::<Vec<ContextState>>,
        Command::DeleteSession { .. } => typed::<()>,
        Command::PruneStale { .. }
        | Command::CapEntries { .. }
        | Command::CountEntries { .. }
        | Command::InvalidateStates { .. } => typed::<u64>,
        Command::Compact { .. }
        | Command::CommitCompaction { .. }
        | Command::PersistCompactionResult { .. } => typed::<CompactionResult>,
        Command::PrepareCompaction { .. } => typed::<Prepared>,
        Command::CanonicalTranscript { .. } | Command::CompactionPreimage { .. } => {
            typed::<Vec<Entry>>
        }
        Command::ListSummaries { .. } | Command::ListDegradedCompactions { .. } => {
            typed::<Vec<Summary>>
        }
        Command::SetRepairStatus { .. } | Command::SetFlushReceipt { .. } => typed::<Summary>,
        Command::SaveRoleSession { .. } => typed::<RoleSession>,
        Command::GetRoleSession { .. } => typed::<Option<RoleSession>>,
        Command::UpdateRoleAdapterState { .. } => typed::<bool>,
        Command::GetRoleAdapterState { .. } => typed::<Option<BTreeMap<String, Value>>>,
        Command::RecordRun { .. } => typed::<RunRecord>,
        Command::ListRuns { .. } => typed::<RunList>,
        Command::SelectResume { .. } => typed::<ResumeDecision>,
        Command::RecordTaskOutcome { .. } => typed::<TaskOutcomeEffects>,
        Command::PlanProviderThread { .. } => typed::<ThreadPlan>,
        Command::CommitTurn { .. } => typed::<TurnCommitted>,
        Command::ImportSession { .. } => typed::<ImportOutcome>,
        Command::Branch { .. } => typed::<Branch>,
        Command::Lineage { .. } => typed::<LineageView>,
        Command::ListChildren { .. } => typed::<Vec<Branch>>,
        Command::StartTurn { .. } | Command::SettleTurn { .. } | Command::InterruptTurn { .. } => {
            typed::<Turn>
        }
        Command::GetTurn { .. } => typed::<Option<Turn>>,
        Command::SessionTurns { .. } => typed::<SessionTurns>,
        Command::ListTurns { .. } => typed::<TurnPage>,
        Command::Fork { .. }
        | Command::RecordForkDisposition { .. }
        | Command::CommitFork { .. }
        | Command::GetForkOperation { .. }
        | Command::AcknowledgeForkOperation { .. }
        | Command::CompleteForkProviderBinding { .. } => typed::<ForkOperationView>,
        Command::BeginForkDispatch { .. } => typed::<DispatchPayload>,
        Command::RecoverForkOperations { .. } => typed::<RecoveryReport>,
        Command::ClaimForkProviderBinding { .. } => typed::<Option<ProviderBindingRequest>>,
        Command::GetForkLineage { .. } => typed::<Option<ForkLineage>>,
        Command::ForkProjection { .. } => typed::<ForkProjection>,
        // A call routed through `execute` comes back as the core's own JSON.
        _ => std::convert::identity,
    }
}

/// A count as the JS number a caller would pass (beyond 2^53 a JS number is inexact, and
/// the JS API rejects it as `invalid_argument`).
fn number(n: u64) -> JsValue {
    // Deliberately lossy beyond 2^53: that is what JS would hand over.
    JsValue::from_f64(n as f64)
}

/// `value` as a JS caller would write it: whole numbers beyond 2^53 become the nearest
/// (inexact) JS number, which the JS API rejects as `invalid_argument` (see [`number`]).
fn lossy(value: Value) -> Value {
    match value {
        Value::Number(n) if n.as_u64().is_some_and(|n| n > (1 << 53)) => {
            json!(n.as_f64().expect("a number"))
        }
        Value::Array(items) => items.into_iter().map(lossy).collect(),
        Value::Object(map) => map.into_iter().map(|(k, v)| (k, lossy(v))).collect(),
        other => other,
    }
}

/// The options of a call that takes the time.
fn time(now_ms: u64) -> JsValue {
    common::js(&json!({ "nowMs": now_ms }))
}

/// What `settleTurn` / `interruptTurn` record: left out when there is nothing, as a JS
/// caller would.
fn close_turn(close: &spool::turns::CloseTurn) -> JsValue {
    if *close == spool::turns::CloseTurn::default() {
        JsValue::UNDEFINED
    } else {
        common::js(&serde_json::to_value(close).expect("close as JSON"))
    }
}

/// The options of a fenced call.
fn fence(now_ms: u64, expected_epoch: Option<u64>) -> JsValue {
    let mut options = json!({ "nowMs": now_ms });
    if let Some(epoch) = expected_epoch {
        options["expectedEpoch"] = epoch.into();
    }
    common::js(&options)
}

impl Drop for Browser {
    fn drop(&mut self) {
        // `close` takes effect at once; its promise only reports that.
        drop(common::start(&self.spool, "close", &[]));
    }
}

/// Runs every vector on fresh databases; `generic` sends every call through `execute`.
async fn run_vectors(suite: &str, generic: bool) {
    let mut run = 0;
    let (ran, skipped) = vectors::run_all_counted(|| {
        run += 1;
        let name = common::db_name(suite, &run.to_string());
        async move {
            Browser {
                spool: common::open(&name).await,
                generic,
            }
        }
    })
    .await;
    assert_eq!(skipped, 0, "no vector is skipped in the browser");
    assert_eq!(ran, vectors::FILES.len(), "every vector file ran");
}

#[wasm_bindgen_test]
async fn test_scenario_vectors_browser() {
    run_vectors("vectors", false).await;
}

/// The same vectors through the generic `execute(workspace, command)`: every `Command`
/// the core knows runs from JS as plain data.
#[wasm_bindgen_test]
async fn test_scenario_vectors_browser_execute() {
    run_vectors("vectors-execute", true).await;
}
