//! The scenario vectors run through the wasmtime component on SQLite: every
//! `spool::Command` with a typed WIT function mapped to the typed `Instance` API, the
//! rest (branches, turns, provider forks) through `Instance::execute`.

#[path = "../../tests/vectors/mod.rs"]
mod vectors;

use serde_json::Value;
use spool::{Command, ListFilter};
use spool_host::{ArchiveDir, Error, Instance, Runtime, SqliteStorage};

struct Component {
    instance: Instance,
    _dir: tempfile::TempDir,
}

fn json<T: serde::Serialize>(result: Result<T, Error>) -> Result<Value, vectors::Failure> {
    match result {
        Ok(value) => Ok(serde_json::to_value(value).expect("results serialize")),
        Err(e) => Err(vectors::Failure {
            code: e.code().to_owned(),
            message: e.to_string(),
        }),
    }
}

impl vectors::VectorHost for Component {
    async fn exec(&mut self, workspace: &str, command: Command) -> Result<Value, vectors::Failure> {
        let spool = &mut self.instance;
        let ws = workspace;
        match command {
            Command::CreateSession {
                key,
                session_id,
                now_ms,
            } => json(spool.create_session(ws, &key, &session_id, now_ms)),
            Command::GetSession { key } => json(spool.get_session(ws, &key)),
            Command::AppendEntry {
                key,
                request,
                now_ms,
            } => json(spool.append_entry(ws, &key, request, now_ms)),
            Command::ReadPage { key, request } => json(spool.read_page(ws, &key, request)),
            Command::ListSessions {
                limit,
                cursor,
                agent_id,
                status,
            } => json(spool.list_sessions(
                ws,
                limit,
                cursor.as_deref(),
                &ListFilter { agent_id, status },
            )),
            Command::GetOrCreate {
                key,
                session_id,
                now_ms,
            } => json(spool.get_or_create(ws, &key, &session_id, now_ms)),
            Command::ApplyIntent {
                key,
                intent,
                session_id,
                now_ms,
            } => json(spool.apply_intent(ws, &key, intent, &session_id, now_ms)),
            Command::Resume { key, now_ms } => json(spool.resume(ws, &key, now_ms)),
            Command::Update {
                key,
                request,
                now_ms,
            } => json(spool.update(ws, &key, request, now_ms)),
            Command::Finish {
                key,
                status,
                expected_epoch,
                now_ms,
            } => json(spool.finish(ws, &key, status, expected_epoch, now_ms)),
            Command::DeleteSession {
                key,
                expected_epoch,
            } => json(spool.delete_session(ws, &key, expected_epoch)),
            Command::PruneStale { max_age_ms, now_ms } => {
                json(spool.prune_stale(ws, max_age_ms, now_ms))
            }
            Command::CapEntries { max } => json(spool.cap_entries(ws, max)),
            Command::CountEntries { key } => json(spool.count_entries(ws, &key)),
            Command::GetEntry { key, message_id } => json(spool.get_entry(ws, &key, &message_id)),
            Command::Truncate {
                key,
                max_messages,
                expected_epoch,
                now_ms,
            } => json(spool.truncate(ws, &key, max_messages, expected_epoch, now_ms)),
            Command::SaveState {
                key,
                state,
                expected_epoch,
                now_ms,
            } => json(spool.save_state(ws, &key, state, expected_epoch, now_ms)),
            Command::ListStates { key, valid_only } => {
                json(spool.list_states(ws, &key, valid_only))
            }
            Command::InvalidateStates {
                key,
                state_kind,
                reason,
                now_ms,
            } => json(spool.invalidate_states(ws, &key, state_kind.as_deref(), &reason, now_ms)),
            Command::Compact {
                key,
                request,
                now_ms,
            } => json(spool.compact(ws, &key, request, now_ms)),
            Command::PrepareCompaction { key, request } => {
                json(spool.prepare_compaction(ws, &key, request))
            }
            Command::CommitCompaction {
                key,
                commit,
                now_ms,
            } => json(spool.commit_compaction(ws, &key, commit, now_ms)),
            Command::PersistCompactionResult {
                key,
                persist,
                now_ms,
            } => json(spool.persist_compaction_result(ws, &key, persist, now_ms)),
            Command::CanonicalTranscript { key } => json(spool.canonical_transcript(ws, &key)),
            Command::ListSummaries { key } => json(spool.list_summaries(ws, &key)),
            Command::ListDegradedCompactions { agent_id } => {
                json(spool.list_degraded_compactions(ws, agent_id.as_deref()))
            }
            Command::CompactionPreimage { key, compaction_id } => {
                json(spool.compaction_preimage(ws, &key, &compaction_id))
            }
            Command::SetRepairStatus {
                key,
                compaction_id,
                status,
            } => json(spool.set_repair_status(ws, &key, &compaction_id, &status)),
            Command::SetFlushReceipt {
                key,
                compaction_id,
                status,
            } => json(spool.set_flush_receipt(ws, &key, &compaction_id, &status)),
            Command::SaveRoleSession { role, now_ms } => {
                json(spool.save_role_session(ws, role, now_ms))
            }
            Command::GetRoleSession { role_session_id } => {
                json(spool.get_role_session(ws, &role_session_id))
            }
            Command::UpdateRoleAdapterState {
                role_session_id,
                agent_type,
                state,
                now_ms,
            } => json(spool.update_role_adapter_state(
                ws,
                &role_session_id,
                &agent_type,
                state.as_ref(),
                now_ms,
            )),
            Command::GetRoleAdapterState {
                role_session_id,
                agent_type,
            } => json(spool.get_role_adapter_state(ws, &role_session_id, &agent_type)),
            Command::RecordRun { run, now_ms } => json(spool.record_run(ws, run, now_ms)),
            Command::ListRuns {
                filter,
                limit,
                cursor,
            } => json(spool.list_runs(ws, &filter, limit, cursor.as_deref())),
            Command::SelectResume { request } => json(spool.select_resume(ws, request)),
            Command::RecordTaskOutcome { request, now_ms } => {
                json(spool.record_task_outcome(ws, request, now_ms))
            }
            Command::PlanProviderThread {
                key,
                agent_type,
                dead_thread,
            } => json(spool.plan_provider_thread(ws, &key, &agent_type, dead_thread.as_deref())),
            Command::CommitTurn { key, turn, now_ms } => {
                json(spool.commit_turn(ws, &key, turn, now_ms))
            }
            // Branches, turns, provider forks and capabilities have no typed WIT
            // function: they go through the generic `execute` entry point.
            other => json(spool.execute(ws, &other)),
        }
    }

    fn supports(&self, _feature: &str) -> bool {
        true
    }
}

fn fresh() -> Component {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = SqliteStorage::open(dir.path().join("vectors.db")).expect("open the database");
    let archives = ArchiveDir::new(dir.path().join("archives"));
    let runtime = Runtime::shared().expect("load the component");
    Component {
        instance: runtime.instantiate(storage, archives).expect("instantiate"),
        _dir: dir,
    }
}

#[test]
fn test_scenario_vectors_component() {
    let (ran, skipped) = vectors::block_on(vectors::run_all_counted(|| async { fresh() }));
    assert_eq!(skipped, 0, "every vector runs through the component");
    assert_eq!(ran, vectors::FILES.len(), "only {ran} vectors ran");
}
