//! The operation table: every API call, declared once.
//!
//! [`for_each_op!`](crate::for_each_op) holds one entry per call: its name, the fields
//! of its arguments, its result type and the core function that performs it. Every
//! surface that lists the calls expands the table with a macro of its own instead of
//! spelling them out again:
//!
//! - here: one struct per call (`ops::Truncate`, …) implementing [`Op`], the
//!   [`Command`] enum (the same calls as data, for `execute`, `spool call` and the
//!   scenario vectors) and its dispatch;
//! - the component (`src/engine/component.rs`): one typed WIT export per call;
//! - the native host (`host/src/runtime/wit.rs`): one typed call per struct through
//!   `Instance::call`; `host/src/client.rs`: one `Spool` method per call, taking the
//!   fields but those an entry's `fills(…)` names, which it fills in;
//! - the browser (`web/src/api/calls.rs`): the JavaScript class's methods, which fill
//!   in what an entry's `fills(…)` names;
//! - [`CALLS`]: every entry as data, from which `tests/ts_table.rs` generates the
//!   TypeScript (`Command`, `CallArgs`, `CallResult`, the methods' signatures).
//!
//! Adding a call is its core function, one entry below, its line in `wit/spool.wit`
//! and its tests; `SPOOL_BLESS=1 cargo test -p spool --test suite ts_table` then
//! writes its TypeScript into `web/src/ts.rs`.
//!
//! # Field conventions
//! Arguments are named alike in every call, and documented once here:
//! - `key`: the session key (see the README's key rules);
//! - `now_ms`: the caller's current time in milliseconds since the Unix epoch (the
//!   core reads no clock);
//! - `session_id`, `operation_id`: the identity the call gives what it creates (the
//!   core draws no randomness);
//! - `expected_epoch`: a fence: the call fails with `stale_epoch` unless the session
//!   is still at this epoch (`None`: no fence);
//! - `request`: the call's request record, documented on its type.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::error::Error;
use crate::engine::op::Operation;

/// One API call: its arguments as a struct, its result type, its core operation.
pub trait Op: Serialize + DeserializeOwned + Into<Command> {
    /// What the call returns.
    type Output: Serialize + DeserializeOwned + 'static;
    /// The call's name (`op` in its JSON form, the WIT function in kebab case).
    const NAME: &'static str;
    /// The operation that performs the call in `workspace`.
    fn operation(self, workspace: &str) -> Operation<Self::Output>;
}

/// Hands one owned argument to a core function as the parameter type it takes: a
/// `String` as `&str`, an `Option<String>` as `Option<&str>`, anything else by value.
#[doc(hidden)]
pub struct Slot<T>(pub Option<T>);

/// See [`Slot`].
#[doc(hidden)]
pub trait Pass<'a, T> {
    /// The argument, as the parameter type `T`.
    fn pass(&'a mut self) -> T;
}

impl<'a, T> Pass<'a, T> for Slot<T> {
    fn pass(&'a mut self) -> T {
        // Each slot is filled right before the call and passed exactly once.
        self.0.take().expect("an argument is passed once")
    }
}

impl<'a> Pass<'a, &'a str> for Slot<String> {
    fn pass(&'a mut self) -> &'a str {
        self.0.as_deref().unwrap_or_default()
    }
}

impl<'a> Pass<'a, Option<&'a str>> for Slot<Option<String>> {
    fn pass(&'a mut self) -> Option<&'a str> {
        self.0.as_ref().and_then(|value| value.as_deref())
    }
}

/// The operation table. `for_each_op!(m)` expands `m! { … }` with every entry:
///
/// ```text
/// /// docs
/// #[web = "feature"]
/// name jsName Struct { field: Type, … } fills(field, arg.field, …) -> Output = core_function;
/// ```
///
/// `fills(…)` (optional) names what a host fills in when the caller leaves it out
/// ([`Call::fills`]): `now_ms` from its clock, every other a fresh id.
///
/// `#[web = "feature"]` (optional, after the docs) names the browser package's Cargo
/// feature the call's JS method is built with ([`Call::web_feature`]): an app that
/// leaves the feature out ships without the call's code. Other hosts have every call.
///
/// Types are full paths (`$crate::…`) so that the table expands in any crate.
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_op {
    ($m:ident) => {
        $m! {
            /// Creates a session under `key`; a key in use is a `conflict`.
            create_session createSession CreateSession { key: String, session_id: String, now_ms: u64 }
                fills(session_id, now_ms) -> $crate::Session = $crate::create_session;
            /// The session under `key`, or `None`.
            get_session getSession GetSession { key: String }
                -> Option<$crate::Session> = $crate::get_session;
            /// Appends one entry to the session under `key`.
            append_entry appendEntry AppendEntry { key: String, request: $crate::AppendRequest, now_ms: u64 }
                fills(now_ms) -> $crate::Entry = $crate::append_entry;
            /// Appends entries, in order, to the session under `key` in one commit.
            append_entries appendEntries AppendEntries {
                key: String,
                requests: Vec<$crate::AppendRequest>,
                now_ms: u64,
            } fills(now_ms) -> Vec<$crate::Entry> = $crate::append_entries;
            /// Appends an entry in progress (`spool::streaming`): its writer updates it as
            /// the answer streams in, then settles or aborts it.
            begin_entry beginEntry BeginEntry { key: String, request: $crate::AppendRequest, now_ms: u64 }
                fills(now_ms) -> $crate::Entry = $crate::begin_entry;
            /// Replaces what an entry in progress holds so far.
            update_entry updateEntry UpdateEntry { key: String, update: $crate::EntryUpdate, now_ms: u64 }
                fills(now_ms) -> $crate::Entry = $crate::update_entry;
            /// Completes an entry in progress, with its final snapshot and usage.
            settle_entry settleEntry SettleEntry { key: String, update: $crate::EntryUpdate, now_ms: u64 }
                fills(now_ms) -> $crate::Entry = $crate::settle_entry;
            /// Stops an entry in progress: `incomplete`, keeping what arrived.
            abort_entry abortEntry AbortEntry { key: String, update: $crate::EntryUpdate, now_ms: u64 }
                fills(now_ms) -> $crate::Entry = $crate::abort_entry;
            /// What of `entries` (a transcript, in order) a model provider can be sent:
            /// an answer that did not complete keeps what arrived, each of its tool calls
            /// without a result closed by a cancelled one; an empty stopped answer left
            /// out (`spool::replay_safe`). Reads and writes nothing.
            replay_safe replaySafe ReplaySafe { entries: Vec<$crate::Entry> }
                -> Vec<$crate::Entry> = $crate::streaming::replay_safe_call;
            /// One page of the session's transcript.
            read_page readPage ReadPage { key: String, request: $crate::PageRequest }
                -> $crate::Page = $crate::read_page;
            /// One page of the session's canonical transcript (archived entries too).
            read_canonical_page readCanonicalPage ReadCanonicalPage {
                key: String,
                request: $crate::PageRequest,
            } -> $crate::Page = $crate::read_canonical_page;
            /// Full-text search of the workspace's transcripts: one page of hits, best
            /// first (`limit` 1 to 100, 20 when absent; `cursor` the previous page's
            /// `next_cursor`). The query language: `spool::search::query`.
            search search Search {
                query: String,
                #[serde(default = "crate::engine::ops::search_limit")] limit: u32,
                #[serde(default)] cursor: Option<String>,
            } -> $crate::SearchPage = $crate::ops::search;
            /// Indexes one run of history written before the search index (the first
            /// session from `cursor` that needs one); call again with `next_cursor`
            /// until it is `None` (`spool::search::backfill`).
            index_backfill indexBackfill IndexBackfill {
                #[serde(default)] cursor: Option<String>,
            } -> $crate::IndexProgress = $crate::index_backfill;
            /// Sessions, most recently updated first, `limit` at a time, only those of
            /// `agent_id` and/or in `status` when given.
            list_sessions listSessions ListSessions {
                limit: u32,
                #[serde(default)] cursor: Option<String>,
                #[serde(default)] agent_id: Option<String>,
                #[serde(default)] status: Option<$crate::SessionStatus>,
            } -> $crate::SessionList = $crate::ops::list_sessions;
            /// The session under `key`, created when missing (`created` says which).
            get_or_create getOrCreate GetOrCreate { key: String, session_id: String, now_ms: u64 }
                fills(session_id, now_ms) -> $crate::IntentOutcome = $crate::get_or_create;
            /// Applies an intent (continue, new chat, reset under the same key).
            apply_intent applyIntent ApplyIntent {
                key: String, intent: $crate::Intent, session_id: String, now_ms: u64,
            } fills(session_id, now_ms) -> $crate::IntentOutcome = $crate::apply_intent;
            /// Marks the session as in use now.
            resume resume Resume { key: String, now_ms: u64 } fills(now_ms)
                -> $crate::Session = $crate::resume;
            /// Changes the session's model, channel, model config and metadata.
            update update Update { key: String, request: $crate::UpdateRequest, now_ms: u64 }
                fills(now_ms) -> $crate::Session = $crate::update;
            /// Ends the session with `status`.
            finish finish Finish {
                key: String,
                status: $crate::FinishStatus,
                #[serde(default)] expected_epoch: Option<u64>,
                now_ms: u64,
            } fills(now_ms) -> $crate::Session = $crate::finish;
            /// Deletes the session and everything it owns.
            delete_session deleteSession DeleteSession {
                key: String,
                #[serde(default)] expected_epoch: Option<u64>,
            } -> () = $crate::delete_session;
            /// Deletes every session idle for more than `max_age_ms`; returns how many.
            prune_stale pruneStale PruneStale { max_age_ms: u64, now_ms: u64 } fills(now_ms)
                -> u64 = $crate::prune_stale;
            /// Keeps the `max` most recently updated sessions; returns how many went.
            cap_sessions capSessions CapSessions { max: u64 } -> u64 = $crate::cap_sessions;
            /// The number of entries in the session's transcript.
            count_entries countEntries CountEntries { key: String } -> u64 = $crate::count_entries;
            /// The entry with `message_id`, or `None`.
            get_entry getEntry GetEntry { key: String, message_id: String }
                -> Option<$crate::Entry> = $crate::get_entry;
            /// Keeps the newest `max_messages` entries.
            truncate truncate Truncate {
                key: String,
                max_messages: u64,
                #[serde(default)] expected_epoch: Option<u64>,
                now_ms: u64,
            } fills(now_ms) -> $crate::TruncateOutcome = $crate::truncate;
            /// Drops the last `turns` turns of the session: every entry from the first
            /// user message of the earliest dropped turn on.
            rollback rollback Rollback {
                key: String,
                turns: u64,
                #[serde(default)] expected_epoch: Option<u64>,
                now_ms: u64,
            } fills(now_ms) -> $crate::TruncateOutcome = $crate::rollback;
            /// Removes the session's newest entry in one commit and returns it (`None`
            /// when it has none).
            pop_entry popEntry PopEntry {
                key: String,
                #[serde(default)] expected_epoch: Option<u64>,
                now_ms: u64,
            } fills(now_ms) -> Option<$crate::Entry> = $crate::pop_entry;
            /// Saves a provider context state.
            #[web = "states"]
            save_state saveState SaveState {
                key: String,
                state: $crate::NewContextState,
                #[serde(default)] expected_epoch: Option<u64>,
                now_ms: u64,
            } fills(now_ms) -> $crate::ContextState = $crate::save_state;
            /// The session's context states (only valid ones unless `valid_only` is false).
            #[web = "states"]
            list_states listStates ListStates {
                key: String,
                #[serde(default = "crate::engine::ops::yes")] valid_only: bool,
            } -> Vec<$crate::ContextState> = $crate::list_states;
            /// Marks the session's states (of `state_kind`, or all) invalid for `reason`.
            #[web = "states"]
            invalidate_states invalidateStates InvalidateStates {
                key: String,
                #[serde(default)] state_kind: Option<String>,
                reason: String,
                now_ms: u64,
            } fills(now_ms) -> u64 = $crate::invalidate_states;
            /// Compacts the session with the built-in summarizer.
            #[web = "compaction"]
            compact compact Compact { key: String, request: $crate::compaction::CompactRequest, now_ms: u64 }
                fills(now_ms) -> $crate::compaction::CompactionResult = $crate::compaction::compact;
            /// Plans a compaction and returns what a summarizer needs.
            #[web = "compaction"]
            prepare_compaction prepareCompaction PrepareCompaction {
                key: String, request: $crate::compaction::CompactRequest,
            } -> $crate::compaction::Prepared = $crate::compaction::prepare_compaction;
            /// Commits a prepared compaction with a summary.
            #[web = "compaction"]
            commit_compaction commitCompaction CommitCompaction {
                key: String, commit: $crate::compaction::CommitRequest, now_ms: u64,
            } fills(now_ms)
                -> $crate::compaction::CompactionResult = $crate::compaction::commit_compaction;
            /// Stores a compaction an external agent performed.
            #[web = "compaction"]
            persist_compaction_result persistCompactionResult PersistCompactionResult {
                key: String, persist: $crate::compaction::PersistRequest, now_ms: u64,
            } fills(now_ms) -> $crate::compaction::CompactionResult
                = $crate::compaction::persist_compaction_result;
            /// The recorded reset archives of the session's key.
            list_reset_archives listResetArchives ListResetArchives { key: String }
                -> Vec<$crate::ArchivedReset> = $crate::list_reset_archives;
            /// Every entry of the session as ever written, compacted ones included.
            canonical_transcript canonicalTranscript CanonicalTranscript { key: String }
                -> Vec<$crate::Entry> = $crate::compaction::canonical_transcript;
            /// The session's compaction summaries.
            list_summaries listSummaries ListSummaries { key: String }
                -> Vec<$crate::compaction::Summary> = $crate::compaction::list_summaries;
            /// Compactions whose coverage check failed (of `agent_id`'s sessions, or all).
            #[web = "compaction"]
            list_degraded_compactions listDegradedCompactions ListDegradedCompactions {
                #[serde(default)] agent_id: Option<String>,
            } -> Vec<$crate::compaction::Summary> = $crate::compaction::list_degraded_compactions;
            /// The entries a compaction replaced.
            #[web = "compaction"]
            compaction_preimage compactionPreimage CompactionPreimage { key: String, compaction_id: String }
                -> Vec<$crate::Entry> = $crate::compaction::compaction_preimage;
            /// Records the repair status of a degraded compaction.
            #[web = "compaction"]
            set_repair_status setRepairStatus SetRepairStatus { key: String, compaction_id: String, status: String }
                -> $crate::compaction::Summary = $crate::compaction::set_repair_status;
            /// Records the flush receipt of a compaction.
            #[web = "compaction"]
            set_flush_receipt setFlushReceipt SetFlushReceipt { key: String, compaction_id: String, status: String }
                -> $crate::compaction::Summary = $crate::compaction::set_flush_receipt;
            /// Creates or replaces a role session.
            #[web = "resume"]
            save_role_session saveRoleSession SaveRoleSession { role: $crate::NewRoleSession, now_ms: u64 }
                fills(now_ms) -> $crate::RoleSession = $crate::save_role_session;
            /// The role session, or `None`.
            #[web = "resume"]
            get_role_session getRoleSession GetRoleSession { role_session_id: String }
                -> Option<$crate::RoleSession> = $crate::get_role_session;
            /// Sets (or, with `None`, clears) an agent type's adapter state.
            #[web = "resume"]
            update_role_adapter_state updateRoleAdapterState UpdateRoleAdapterState {
                role_session_id: String,
                agent_type: String,
                state: Option<$crate::ops::AdapterState>,
                now_ms: u64,
            } fills(now_ms) -> bool = $crate::update_role_adapter_state;
            /// An agent type's adapter state, or `None`.
            #[web = "resume"]
            get_role_adapter_state getRoleAdapterState GetRoleAdapterState { role_session_id: String, agent_type: String }
                -> Option<$crate::ops::AdapterState> = $crate::get_role_adapter_state;
            /// Records one run of an external agent.
            #[web = "resume"]
            record_run recordRun RecordRun { run: $crate::NewRun, now_ms: u64 } fills(now_ms)
                -> $crate::resume::rules::RunRecord = $crate::record_run;
            /// Runs passing `filter`, newest first, `limit` at a time.
            #[web = "resume"]
            list_runs listRuns ListRuns {
                #[serde(default)] filter: $crate::RunFilter,
                limit: u32,
                #[serde(default)] cursor: Option<String>,
            } -> $crate::RunList = $crate::list_runs;
            /// Which thread an external agent CLI resumes, if any.
            #[web = "resume"]
            select_resume selectResume SelectResume { request: $crate::ResumeRequest }
                -> $crate::resume::rules::ResumeDecision = $crate::select_resume;
            /// Records what a task left behind and what that invalidates.
            #[web = "resume"]
            record_task_outcome recordTaskOutcome RecordTaskOutcome { request: $crate::OutcomeRequest, now_ms: u64 }
                fills(now_ms)
                -> $crate::resume::rules::TaskOutcomeEffects = $crate::record_task_outcome;
            /// The provider thread the next turn of `agent_type` continues.
            #[web = "turns"]
            plan_provider_thread planProviderThread PlanProviderThread {
                key: String,
                agent_type: String,
                #[serde(default)] dead_thread: Option<String>,
            } -> $crate::ThreadPlan = $crate::plan_provider_thread;
            /// Commits one provider turn: its entries, usage and thread binding.
            #[web = "turns"]
            commit_turn commitTurn CommitTurn { key: String, turn: $crate::TurnCommit, now_ms: u64 }
                fills(now_ms) -> $crate::TurnCommitted = $crate::commit_turn;
            /// Writes a parsed transcript as a new session.
            #[web = "import"]
            import_session importSession ImportSession { request: $crate::import::ImportRequest, now_ms: u64 }
                fills(request.session_id, now_ms)
                -> $crate::import::ImportOutcome = $crate::import::import_session;
            /// The tokens and estimated cost of the workspace's sessions by session, day
            /// and model (`spool::usage::usage_report`). Reads and writes nothing else.
            #[web = "usage"]
            usage_report usageReport UsageReport { request: $crate::usage::UsageRequest }
                -> $crate::usage::UsageReport = $crate::usage::usage_report;
            /// Branches `child_key` off `parent_key`.
            #[web = "branch"]
            branch branch Branch {
                parent_key: String, child_key: String, request: $crate::BranchRequest, now_ms: u64,
            } fills(request.child_session_id, now_ms) -> $crate::BranchInfo = $crate::branch;
            /// Edits a message by branching: `child_key` gets the history of `key`
            /// before `message_id` and then `request`, in one commit.
            #[web = "branch"]
            edit_message editMessage EditMessage {
                key: String,
                child_key: String,
                message_id: String,
                request: $crate::AppendRequest,
                child_session_id: String,
                now_ms: u64,
            } fills(child_session_id, now_ms) -> $crate::BranchInfo = $crate::edit_message;
            /// The session's ancestry and what it inherits.
            lineage lineage Lineage { key: String } -> $crate::LineageView = $crate::lineage;
            /// The branches made from the session.
            list_children listChildren ListChildren { key: String }
                -> Vec<$crate::BranchInfo> = $crate::list_children;
            /// Starts a turn.
            #[web = "turns"]
            start_turn startTurn StartTurn { key: String, request: $crate::turns::NewTurn, now_ms: u64 }
                fills(now_ms) -> $crate::turns::Turn = $crate::start_turn;
            /// Settles a running turn.
            #[web = "turns"]
            settle_turn settleTurn SettleTurn {
                key: String,
                turn_id: String,
                #[serde(default)] close: $crate::turns::CloseTurn,
                now_ms: u64,
            } fills(now_ms) -> $crate::turns::Turn = $crate::settle_turn;
            /// Interrupts a running turn.
            #[web = "turns"]
            interrupt_turn interruptTurn InterruptTurn {
                key: String,
                turn_id: String,
                #[serde(default)] close: $crate::turns::CloseTurn,
                now_ms: u64,
            } fills(now_ms) -> $crate::turns::Turn = $crate::interrupt_turn;
            /// The turn, or `None`.
            #[web = "turns"]
            get_turn getTurn GetTurn { key: String, turn_id: String }
                -> Option<$crate::turns::Turn> = $crate::get_turn;
            /// The session's turns.
            #[web = "turns"]
            session_turns sessionTurns SessionTurns { key: String }
                -> $crate::turns::TurnSummary = $crate::session_turns;
            /// One page of the session's turns.
            #[web = "turns"]
            list_turns listTurns ListTurns {
                key: String,
                #[serde(default)] request: $crate::turns::TurnPageRequest,
            } -> $crate::turns::TurnPage = $crate::list_turns;
            /// Starts (or finds again) a provider fork of `source_key`.
            #[web = "provider-fork"]
            fork fork Fork {
                source_key: String,
                request: $crate::provider_fork::types::ForkRequest,
                operation_id: String,
                now_ms: u64,
            } fills(operation_id, now_ms)
                -> $crate::provider_fork::types::ForkOperationView = $crate::fork;
            /// Marks the fork as being dispatched; returns what to send the provider.
            #[web = "provider-fork"]
            begin_fork_dispatch beginForkDispatch BeginForkDispatch { operation_id: String, now_ms: u64 }
                fills(now_ms)
                -> $crate::provider_fork::types::DispatchPayload = $crate::begin_fork_dispatch;
            /// Records the provider's answer.
            #[web = "provider-fork"]
            record_fork_disposition recordForkDisposition RecordForkDisposition {
                operation_id: String,
                disposition: $crate::provider_fork::types::Disposition,
                now_ms: u64,
            } fills(now_ms)
                -> $crate::provider_fork::types::ForkOperationView = $crate::record_fork_disposition;
            /// Writes the fork's child session.
            #[web = "provider-fork"]
            commit_fork commitFork CommitFork { operation_id: String, now_ms: u64 }
                fills(now_ms)
                -> $crate::provider_fork::types::ForkOperationView = $crate::commit_fork;
            /// The fork operation.
            #[web = "provider-fork"]
            get_fork_operation getForkOperation GetForkOperation { operation_id: String }
                -> $crate::provider_fork::types::ForkOperationView = $crate::get_fork_operation;
            /// Acknowledges a finished fork operation.
            #[web = "provider-fork"]
            acknowledge_fork_operation acknowledgeForkOperation AcknowledgeForkOperation { operation_id: String, now_ms: u64 }
                fills(now_ms)
                -> $crate::provider_fork::types::ForkOperationView = $crate::acknowledge_fork_operation;
            /// Moves every interrupted fork operation on.
            #[web = "provider-fork"]
            recover_fork_operations recoverForkOperations RecoverForkOperations { now_ms: u64 }
                fills(now_ms)
                -> $crate::provider_fork::types::RecoveryReport = $crate::recover_fork_operations;
            /// Claims the provider binding a fork child still needs, if any.
            #[web = "provider-fork"]
            claim_fork_provider_binding claimForkProviderBinding ClaimForkProviderBinding { key: String, now_ms: u64 }
                fills(now_ms) -> Option<$crate::provider_fork::types::ProviderBindingRequest>
                = $crate::claim_fork_provider_binding;
            /// Records that the fork child's provider binding is done.
            #[web = "provider-fork"]
            complete_fork_provider_binding completeForkProviderBinding CompleteForkProviderBinding {
                operation_id: String, now_ms: u64,
            } fills(now_ms)
                -> $crate::provider_fork::types::ForkOperationView = $crate::complete_fork_provider_binding;
            /// Where a fork child came from, or `None`.
            #[web = "provider-fork"]
            get_fork_lineage getForkLineage GetForkLineage { key: String }
                -> Option<$crate::provider_fork::ForkLineage> = $crate::get_fork_lineage;
            /// What sessions look like to a provider that forks them.
            #[web = "provider-fork"]
            fork_projection forkProjection ForkProjection {
                keys: Vec<String>,
                mode: $crate::provider_fork::capabilities::ProjectionMode,
                #[serde(default)] answers: Vec<$crate::provider_fork::capabilities::ProbeAnswer>,
            } -> $crate::provider_fork::capabilities::Projection = $crate::provider_fork::capabilities::fork_projection;
        }
    };
}

/// An adapter state: a free-form JSON object.
pub type AdapterState = std::collections::BTreeMap<String, serde_json::Value>;

/// `serde(default)` of `valid_only`.
#[doc(hidden)]
pub fn yes() -> bool {
    true
}

/// [`crate::list_sessions_where`] with its filter given field by field.
#[doc(hidden)]
pub fn list_sessions(
    workspace: &str,
    limit: u32,
    cursor: Option<&str>,
    agent_id: Option<String>,
    status: Option<crate::SessionStatus>,
) -> Operation<crate::SessionList> {
    crate::list_sessions_where(
        workspace,
        limit,
        cursor,
        crate::ListFilter { agent_id, status },
    )
}

/// The page size of a search that names none.
pub const DEFAULT_SEARCH_LIMIT: u32 = 20;

/// `serde(default)` of a search's `limit`: [`DEFAULT_SEARCH_LIMIT`].
#[doc(hidden)]
pub fn search_limit() -> u32 {
    DEFAULT_SEARCH_LIMIT
}

/// [`crate::search`] with its request given field by field.
#[doc(hidden)]
pub fn search(
    workspace: &str,
    query: &str,
    limit: u32,
    cursor: Option<&str>,
) -> Operation<crate::SearchPage> {
    crate::search(
        workspace,
        crate::SearchRequest {
            query: query.to_owned(),
            limit,
            cursor: cursor.map(str::to_owned),
        },
    )
}

/// One call of the table as data ([`CALLS`]): what a shell fills in and what the
/// other surfaces' declarations (the TypeScript ones) are checked against.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// The call's name (`append_entry`).
    pub name: &'static str,
    /// Its JavaScript method's name (`appendEntry`).
    pub js_name: &'static str,
    /// Its documentation, one line per line.
    pub doc: &'static str,
    /// Its arguments, in order.
    pub fields: &'static [Field],
    /// What a host fills in when the caller leaves it out: `now_ms` from its clock,
    /// every other a fresh id (a UUID); `request.child_session_id` is a field of the
    /// `request` argument. The core itself reads no clock and draws no ids.
    pub fills: &'static [&'static str],
    /// The result type as written in the table.
    pub output: &'static str,
    /// The browser package's Cargo feature the call is built with (`branch`,
    /// `compaction`, `import`, …: the features of `web/Cargo.toml`); `None`: every
    /// build has it.
    pub web_feature: Option<&'static str>,
}

/// One argument of a [`Call`].
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Its name (`now_ms`).
    pub name: &'static str,
    /// Its Rust type as written in the table (`Option < String >`).
    pub ty: &'static str,
    /// Its attributes as written in the table (`#[serde(default)]`).
    pub attrs: &'static str,
}

impl Field {
    /// Whether the core defaults the field when it is absent.
    pub fn defaulted(&self) -> bool {
        self.attrs.contains("default")
    }
}

impl Call {
    /// The call named `name`.
    pub fn named(name: &str) -> Option<&'static Call> {
        CALLS.iter().find(|call| call.name == name)
    }

    /// Whether a host fills in the argument `field` (a path: `request.session_id`).
    pub fn fills(&self, field: &str) -> bool {
        self.fills.contains(&field)
    }

    /// Fills in, in the call's arguments `args` (its `Command` JSON without `op`), what
    /// the table says a host fills in ([`Call::fills`]) where the caller left it out
    /// (absent or `null`): each with `value(field)`, which a host answers from its clock
    /// for `now_ms` and with a fresh id otherwise. For an id inside an object argument
    /// (`request.child_session_id`), the object defaults to `{}`; an argument there that
    /// is not an object is left for the call's own parsing to reject.
    pub fn fill_in<E>(
        &self,
        args: &mut serde_json::Map<String, serde_json::Value>,
        mut value: impl FnMut(&'static str) -> Result<serde_json::Value, E>,
    ) -> Result<(), E> {
        use serde_json::{Map, Value};
        let absent =
            |args: &Map<String, Value>, field: &str| args.get(field).is_none_or(Value::is_null);
        for fill in self.fills {
            let (object, field) = match fill.split_once('.') {
                Some((outer, inner)) => {
                    if absent(args, outer) {
                        args.insert(outer.to_owned(), Value::Object(Map::new()));
                    }
                    match args.get_mut(outer).and_then(Value::as_object_mut) {
                        Some(object) => (object, inner),
                        None => continue,
                    }
                }
                None => (&mut *args, *fill),
            };
            if absent(object, field) {
                object.insert(field.to_owned(), value(field)?);
            }
        }
        Ok(())
    }
}

macro_rules! define_ops {
    // One entry of the table (see `for_each_op!`).
    ($( $(#[doc = $doc:literal])* $(#[web = $web:literal])? $name:ident $js:ident $Op:ident {
        $( $(#[$attr:meta])* $field:ident : $ty:ty ),* $(,)? }
        $(fills($($fill:ident $(. $sub:ident)?),* $(,)?))? -> $out:ty = $f:path; )*) => {
        $(
            $(#[doc = $doc])*
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            #[serde(deny_unknown_fields)]
            #[allow(missing_docs)] // fields are documented by the conventions above
            pub struct $Op {
                $( $(#[$attr])* pub $field: $ty, )*
            }

            impl Op for $Op {
                type Output = $out;
                const NAME: &'static str = stringify!($name);
                fn operation(self, workspace: &str) -> Operation<$out> {
                    let $Op { $($field),* } = self;
                    $( let mut $field = Slot(Some($field)); )*
                    $f(workspace, $( Pass::pass(&mut $field) ),*)
                }
            }

            impl From<$Op> for Command {
                fn from(op: $Op) -> Command {
                    let $Op { $($field),* } = op;
                    Command::$Op { $($field),* }
                }
            }
        )*

        /// Every API call with its arguments, as data: what the scenario vectors are
        /// written in, and what lets any host replay a call without knowing its Rust
        /// signature (the workspace travels beside it). One variant per [`Op`].
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
        #[non_exhaustive]
        #[allow(missing_docs)] // fields are documented by the conventions above
        pub enum Command {
            $( $(#[doc = $doc])* $Op { $( $(#[$attr])* $field: $ty, )* }, )*
        }

        /// The names of every call, in table order.
        pub const NAMES: &[&str] = &[$(stringify!($name)),*];

        /// Every call's name with its result type as written in the table (for checks
        /// of the other surfaces' declarations, e.g. the TypeScript one).
        pub const OUTPUTS: &[(&str, &str)] = &[$((stringify!($name), stringify!($out))),*];

        /// Every call as data, in table order.
        pub const CALLS: &[Call] = &[$(Call {
            name: stringify!($name),
            js_name: stringify!($js),
            doc: concat!($($doc, "\n"),*),
            fields: &[$(Field {
                name: stringify!($field),
                ty: stringify!($ty),
                attrs: stringify!($(#[$attr])*),
            }),*],
            fills: &[$($(concat!(stringify!($fill) $(, ".", stringify!($sub))?)),*)?],
            output: stringify!($out),
            web_feature: match &[$($web)?] as &[&str] {
                [feature] => Some(*feature),
                _ => None,
            },
        }),*];

        impl Command {
            /// The call's name.
            pub fn name(&self) -> &'static str {
                match self { $( Command::$Op { .. } => stringify!($name), )* }
            }

            /// The operation that performs this call in `workspace`, with its result
            /// as JSON.
            pub fn into_operation(
                self,
                workspace: &str,
            ) -> Operation<Result<serde_json::Value, Error>> {
                match self {
                    $( Command::$Op { $($field),* } => {
                        $Op { $($field),* }.operation(workspace).map(json)
                    } )*
                }
            }
        }
    };
}

for_each_op!(define_ops);

fn json<T: Serialize>(value: T) -> Result<serde_json::Value, Error> {
    serde_json::to_value(value)
        .map_err(|e| Error::internal(format!("result does not serialize: {e}")))
}

impl Command {
    /// Parses a call given as JSON text (`spool call`, the scenario vectors, the JS `execute`): JSON that is
    /// not a call is `invalid_argument`, its message quoting at most a short prefix of
    /// any input it names ([`crate::engine::validate::shorten_quoted`]).
    pub fn from_json(text: &str) -> Result<Command, Error> {
        crate::record::from_json(text.as_bytes())
            .map_err(|e| Error::unparsed("command", "not a Spool call", &e))
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
    crate::engine::op::run_with(storage, archiver, command.into_operation(workspace))?
}

#[cfg(test)]
#[path = "tests/ops.rs"]
mod tests;
