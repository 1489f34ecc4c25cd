//! How each core type crosses the WIT boundary, declared once for both sides.
//!
//! [`wit_map!`](crate::engine::wit_map) expands, in the crate that invokes it, a trait `Wit`
//! (core type ⇄ the generated WIT type, as `wit::…` at the call site) with one
//! implementation per type listed here. The component (`src/engine/component.rs`) and the
//! native host (`host/src/runtime/wit.rs`) each invoke it over their own generated bindings,
//! so neither writes a conversion by hand.
//!
//! A record lists its fields; each field converts by its own type, so the list is all
//! a record needs. Each type is one invocation of its kind (none recurses, so the
//! list may grow without meeting the compiler's recursion limit):
//! - `wit_map!(@record Core => Wit { field, … })`: a struct, field by field; `field as
//!   json` marks an `Option<serde_json::Value>` read as the core's JSON reads it (a
//!   JSON `null` is `None`), for the records that crossed as that JSON before they
//!   were typed;
//! - `wit_map!(@enum Core => Wit { Case, … })`: a unit-only enum, case by case;
//! - `wit_map!(@variant Core => Wit { Case, Case(field, …) => Record, … })`: an enum
//!   with data, a WIT variant: a unit case as a unit case, a struct case `Core::Case {
//!   field, … }` as `Wit::Case(Record { field, … })`;
//! - `wit_map!(@record_in module, …)`, `wit_map!(@newtypes_in module, Core => Wit {
//!   Case, … })`: a record, or an enum whose every case holds one value, of another
//!   WIT interface than `api` (the storage contract's `types`);
//! - `wit_map!(@text Core)`: a unit-only enum the WIT carries as its name
//!   (`"running"`);
//! - `wit_map!(@json Core)`: a value the WIT carries as JSON text.
//!
//! Free-form JSON (`serde_json::Value`, string-keyed maps) always travels as JSON text.

/// See the [module documentation](crate::engine::wit_map).
#[doc(hidden)]
#[macro_export]
macro_rules! wit_map {
    () => {
        /// A core type and the generated WIT type it crosses the boundary as.
        pub(crate) trait Wit: Sized {
            /// The generated type.
            type W;
            /// The core value as the generated type.
            fn into_wit(self) -> Self::W;
            /// The generated value as the core type; `field` names it in an error.
            fn from_wit(w: Self::W, field: &'static str) -> Result<Self, $crate::Error>;
        }

        $crate::wit_map!(@same String, u64, u32, u8, bool, f64, ());

        impl<T: Wit> Wit for Option<T> {
            type W = Option<T::W>;
            fn into_wit(self) -> Self::W {
                self.map(Wit::into_wit)
            }
            fn from_wit(w: Self::W, field: &'static str) -> Result<Self, $crate::Error> {
                w.map(|w| T::from_wit(w, field)).transpose()
            }
        }

        impl<T: Wit> Wit for Vec<T> {
            type W = Vec<T::W>;
            fn into_wit(self) -> Self::W {
                self.into_iter().map(Wit::into_wit).collect()
            }
            fn from_wit(w: Self::W, field: &'static str) -> Result<Self, $crate::Error> {
                w.into_iter().map(|w| T::from_wit(w, field)).collect()
            }
        }

        impl<A: Wit, B: Wit> Wit for (A, B) {
            type W = (A::W, B::W);
            fn into_wit(self) -> Self::W {
                (self.0.into_wit(), self.1.into_wit())
            }
            fn from_wit(w: Self::W, field: &'static str) -> Result<Self, $crate::Error> {
                Ok((A::from_wit(w.0, field)?, B::from_wit(w.1, field)?))
            }
        }

        impl<V: serde::Serialize + serde::de::DeserializeOwned> Wit
            for std::collections::BTreeMap<String, V>
        {
            type W = String;
            fn into_wit(self) -> String {
                $crate::wit_map::to_json(&self)
            }
            fn from_wit(w: String, field: &'static str) -> Result<Self, $crate::Error> {
                $crate::wit_map::from_json(&w, field)
            }
        }

        $crate::wit_map!(@json serde_json::Value);

        // The storage contract (the WIT interface `types`, in scope at the call site as
        // `types`): what the component sends its host and what the host answers.
        $crate::wit_map!(@record_in types, $crate::Kv => Kv { key, value });
        $crate::wit_map!(@record_in types, $crate::KeyRange => KeyRange { start, end });
        $crate::wit_map!(@record_in types, $crate::RangeQuery => RangeQuery {
            range, limit, reverse,
        });
        $crate::wit_map!(@newtypes_in types, $crate::Precondition => Precondition {
            Absent, Equals,
        });
        $crate::wit_map!(@newtypes_in types, $crate::Mutation => Mutation {
            Put, Delete, DeleteRange,
        });
        $crate::wit_map!(@record_in types, $crate::Batch => Batch { preconditions, mutations });

        impl Wit for $crate::StorageError {
            type W = types::StorageError;
            fn into_wit(self) -> types::StorageError {
                match self {
                    Self::Conflict(index) => types::StorageError::Conflict(index),
                    Self::Backend(cause) => types::StorageError::Backend(cause),
                    Self::Unknown(cause) => types::StorageError::Unknown(cause),
                    Self::Corrupt { key, detail } => {
                        types::StorageError::Corrupt(types::CorruptValue { key, detail })
                    }
                }
            }
            fn from_wit(w: types::StorageError, _: &'static str) -> Result<Self, $crate::Error> {
                Ok(match w {
                    types::StorageError::Conflict(index) => Self::Conflict(index),
                    types::StorageError::Backend(cause) => Self::Backend(cause),
                    types::StorageError::Unknown(cause) => Self::Unknown(cause),
                    types::StorageError::Corrupt(c) => Self::Corrupt {
                        key: c.key,
                        detail: c.detail,
                    },
                })
            }
        }

        $crate::wit_map!(@enum $crate::ErrorCode => ErrorCode {
            NotFound, Conflict, InvalidArgument, StaleEpoch, Corruption, Storage, Unknown,
            Internal,
        });
        $crate::wit_map!(@record $crate::Session => Session {
            key, session_id, agent_id, status, epoch, created_at, updated_at,
            entry_count, last_entry_id, total_tokens, ended_at, runtime_ms,
            input_tokens, output_tokens, cache_read, cache_write, estimated_cost_usd,
            total_cost_usd, billed_cost_usd, estimated_cost_component_usd, cost_source,
            missing_cost_entries, compaction_count, model, channel, model_config,
            metadata, last_state_id, message_index,
        });
        $crate::wit_map!(@enum $crate::SessionStatus => SessionStatus { Running, Done, Failed });
        $crate::wit_map!(@record $crate::TurnUsage => TurnUsage {
            model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
        });
        $crate::wit_map!(@enum $crate::ToolStatus => ToolStatus { Ok, Error, Cancelled });
        $crate::wit_map!(@enum $crate::EntryKind => EntryKind { Context, Summary, Command });
        $crate::wit_map!(@record $crate::Attachment => Attachment { kind, media_type, size, sha256, source });
        $crate::wit_map!(@enum $crate::Role => Role { User, Assistant, Tool, System });
        $crate::wit_map!(@enum $crate::EntryStatus => EntryStatus { InProgress, Incomplete });
        $crate::wit_map!(@record $crate::Entry => Entry {
            id, message_id, role, content, created_at, token_count, tool_calls,
            tool_call_id, turn_id, turn_usage, tool_status, reasoning, attachments, kind,
            status, stop_reason,
        });
        $crate::wit_map!(@record $crate::EntryUpdate => EntryUpdate {
            message_id, content, reasoning, tool_calls, turn_usage, token_count, reason,
            expected_epoch,
        });
        $crate::wit_map!(@record $crate::AppendRequest => AppendRequest {
            role, content, token_count, message_id, tool_calls, tool_call_id, turn_id,
            turn_usage, tool_status, reasoning, attachments, kind, expected_epoch,
        });
        $crate::wit_map!(@enum $crate::Order => Order { OldestFirst, NewestFirst });
        $crate::wit_map!(@record $crate::PageRequest => PageRequest { order, cursor, limit });
        $crate::wit_map!(@record $crate::Page => Page { entries, next_cursor });
        $crate::wit_map!(@record $crate::SessionList => SessionList { sessions, next_cursor });
        $crate::wit_map!(@record $crate::Snippet => Snippet { field, text, highlights });
        $crate::wit_map!(@record $crate::SearchHit => SearchHit {
            session_key, session_id, entry_id, message_id, role, created_at, score, snippet,
        });
        $crate::wit_map!(@record $crate::SearchPage => SearchPage { hits, next_cursor, unindexed });
        $crate::wit_map!(@record $crate::IndexProgress => IndexProgress {
            session_key, indexed_entries, pending_entries, sessions_checked, next_cursor,
        });
        $crate::wit_map!(@enum $crate::Intent => Intent { Continue, NewChat, ResetSameKey });
        $crate::wit_map!(@record $crate::ArchiveStatus => ArchiveStatus { written, error });
        $crate::wit_map!(@record $crate::IntentOutcome => IntentOutcome { session, created, rotated, archive });
        $crate::wit_map!(@record $crate::UpdateRequest => UpdateRequest {
            model, channel, model_config, metadata, expected_epoch,
        });
        $crate::wit_map!(@enum $crate::FinishStatus => FinishStatus { Done, Failed });
        $crate::wit_map!(@record $crate::TruncateOutcome => TruncateOutcome {
            truncated, before_count, after_count,
        });
        $crate::wit_map!(@record $crate::ContextState => ContextState {
            id, session_id, session_key, provider, model, state_kind, payload,
            covered_through_id, created_at, expires_at, portable, cacheable, valid,
            invalid_reason,
        });
        $crate::wit_map!(@record $crate::NewContextState => NewContextState {
            provider, model, state_kind, payload, covered_through_id, expires_at,
            portable, cacheable,
        });
        $crate::wit_map!(@record $crate::compaction::CompactionConfig => CompactionConfig {
            safety_margin, coverage_blocking, protected_recent,
        });
        $crate::wit_map!(@record $crate::compaction::CompactRequest => CompactRequest {
            context_window_tokens, config, compaction_id, trigger_reason,
            flush_receipt_status,
        });
        $crate::wit_map!(@record $crate::compaction::Obligation => Obligation { kind, text, critical });
        $crate::wit_map!(@text $crate::compaction::ObligationKind);
        $crate::wit_map!(@record $crate::compaction::Prepared => Prepared {
            skip_reason, input, obligations, removed_count, kept_count,
            covered_through_id, tokens_before, preimage,
        });
        $crate::wit_map!(@record $crate::compaction::CommitRequest => CommitRequest {
            request, preimage, summary_text, summary_payload,
        });
        $crate::wit_map!(@record $crate::compaction::PersistRequest => PersistRequest {
            summary_text, kept_entries, compaction_id, trigger_reason,
        });
        $crate::wit_map!(@record $crate::compaction::CompactionResult => CompactionResult {
            summary, summary_source, summary_payload, removed_count, kept_entries,
            tokens_before, tokens_after, chunks_processed, coverage_status,
            missing_obligations, dropped_obligations, skip_reason, compaction_id,
        });
        $crate::wit_map!(@record $crate::ArchivedReset => ArchivedReset {
            session_key, session_id, epoch, archived_at, transcript_entries, summaries,
        });
        $crate::wit_map!(@variant $crate::resume::rules::RoleStateChange => RoleStateChange {
            Keep, Set(entry) => RoleStateSet, Clear,
        });
        $crate::wit_map!(@record $crate::compaction::Summary => Summary {
            compaction_id, compaction_index, session_id, session_key, summary_text,
            summary_payload as json, summary_format, summary_source, coverage_status,
            missing_obligations, dropped_obligations, critical_carry_forward,
            trigger_reason, tokens_before, tokens_after, removed_count, kept_count,
            chunk_count, covered_through_id, created_at, flush_receipt_status,
            repair_status,
        });
        $crate::wit_map!(@record $crate::RoleSession => RoleSession {
            role_session_id, run_id, role_id, adapter_state, created_at, updated_at,
        });
        $crate::wit_map!(@record $crate::ForkPoint => BranchForkPoint {
            parent_session_id, parent_last_entry_id, before_message_id, before_position,
            inherited_entries, inherited_summaries,
        });
        $crate::wit_map!(@record $crate::BranchLineage => BranchLineage {
            parent_session_key, spawn_depth, forked_from_parent, fork_point, fork_count,
        });
        $crate::wit_map!(@record $crate::BranchInfo => BranchInfo { session, lineage });
        $crate::wit_map!(@record $crate::BranchRequest => BranchRequest {
            child_session_id, fork_transcript, fork_before_message_id, max_fork_tokens,
        });
        $crate::wit_map!(@record $crate::LineageView => LineageView { node, children });
        $crate::wit_map!(@enum $crate::turns::TurnPhase => TurnPhase { Running, Settled, Interrupted });
        $crate::wit_map!(@record $crate::turns::Position => TurnPosition { created_at, entry_id });
        $crate::wit_map!(@record $crate::turns::Turn => Turn {
            turn_id, seq, session_key, session_id, phase, provider_turn_id,
            provider_binding as json, started_at, ended_at, boundary,
        });
        $crate::wit_map!(@record $crate::turns::NewTurn => NewTurn {
            turn_id, provider_turn_id, provider_binding as json, expected_epoch,
        });
        $crate::wit_map!(@record $crate::turns::CloseTurn => CloseTurn {
            provider_turn_id, provider_binding as json, expected_epoch,
        });
        $crate::wit_map!(@record $crate::turns::TurnSummary => TurnSummary { latest, active });
        $crate::wit_map!(@record $crate::turns::TurnPageRequest => TurnPageRequest { order, cursor, limit });
        $crate::wit_map!(@record $crate::turns::TurnPage => TurnPage { turns, next_cursor });
        $crate::wit_map!(@record $crate::provider_fork::types::ForkRequest => ForkRequest {
            request_id, target_key, target_session_id, through_turn_id, cwd,
        });
        $crate::wit_map!(@enum $crate::provider_fork::types::ForkState => ForkState {
            Prepared, Dispatching, ProviderAccepted, Committed, Failed, Unknown,
        });
        $crate::wit_map!(@enum $crate::provider_fork::types::ForkStatus => ForkStatus {
            Accepted, Committed, Failed, Unknown,
        });
        $crate::wit_map!(@enum $crate::provider_fork::types::ForkPhase => ForkPhase { Frozen, Dispatching, Materializing });
        $crate::wit_map!(@enum $crate::provider_fork::types::ForkOrigin => ForkOrigin {
            Prepared, SameRequest, BarrierHeld,
        });
        $crate::wit_map!(@enum $crate::provider_fork::types::ForkPointKind => ForkPointKind { ThroughTurn, Session });
        $crate::wit_map!(@record $crate::provider_fork::types::ForkPoint => ForkPoint {
            kind, turn_id, turn_seq, provider_turn_id, provider_binding as json,
        });
        $crate::wit_map!(@record $crate::provider_fork::types::TargetContext => ForkTargetContext {
            cwd, model, channel, model_config, metadata,
        });
        $crate::wit_map!(@record $crate::provider_fork::ForkLineage => ForkLineage {
            target_key, target_session_id, source_key, source_session_id, source_turn_id,
            target_turn_id, operation_id, forked_at,
        });
        $crate::wit_map!(@record $crate::provider_fork::types::ForkedSession => ForkedSession { session, forked_from });
        $crate::wit_map!(@enum $crate::provider_fork::types::ProviderStateBinding => ProviderStateBinding {
            NotRequired, Pending, Claimed, Bound,
        });
        $crate::wit_map!(@record $crate::provider_fork::types::ForkOperation => ForkOperation {
            operation_id, request_id, request_hash, request, state, source_key,
            source_session_id, source_provider, source_provider_session_id, point,
            boundary, snapshot_copied, target_key, target_session_id, target_context,
            target_provider_session_id, error, error_reason, session, lineage,
            provider_state_binding, acknowledged_at, created_at, updated_at,
        });
        $crate::wit_map!(@record $crate::provider_fork::types::ForkOperationView => ForkOperationView {
            status, phase, source_turn_id, target_turn_id, acknowledged, origin, operation,
        });
        $crate::wit_map!(@record $crate::provider_fork::types::DispatchPayload => DispatchPayload {
            operation_id, source_key, source_session_id, source_provider,
            source_provider_session_id, target_key, target_session_id, point,
            target_context,
        });
        $crate::wit_map!(@variant $crate::provider_fork::types::Disposition => Disposition {
            Accepted(target_provider_session_id, bind_provider_state) => DispositionAccepted,
            Rejected(error, reason) => DispositionRejected,
            Unknown(error) => DispositionUnknown,
        });
        $crate::wit_map!(@record $crate::provider_fork::types::RecoveryReport => RecoveryReport {
            marked_unknown, to_dispatch, to_commit,
        });
        $crate::wit_map!(@record $crate::provider_fork::types::ProviderBindingRequest => ProviderBindingRequest {
            operation_id, provider, source_key, source_session_id, target_key,
            target_session_id, source_provider_session_id, target_provider_session_id,
        });
        $crate::wit_map!(@enum $crate::provider_fork::capabilities::ProjectionMode => ProjectionMode { Detail, List, Hydration });
        $crate::wit_map!(@record $crate::provider_fork::capabilities::LifecycleCapabilities => LifecycleCapabilities {
            fork, fork_through_turn,
        });
        $crate::wit_map!(@variant $crate::provider_fork::capabilities::ProbeOutcome => ProbeOutcome {
            Capability(fork, through_turn) => ProbeCapability,
            Forkable(available) => ProbeForkable,
            Rejected(reason) => ProbeRejected,
            Failed(error) => ProbeFailed,
        });
        $crate::wit_map!(@record $crate::provider_fork::capabilities::ProbeRequest => ProbeRequest {
            session_key, session_id, provider, provider_session_id, turn_id,
            provider_turn_id, provider_binding as json,
        });
        $crate::wit_map!(@record $crate::provider_fork::capabilities::ProbeAnswer => ProbeAnswer {
            session_key, turn_id, outcome,
        });
        $crate::wit_map!(@record $crate::provider_fork::capabilities::ProjectedTurn => ProjectedTurn {
            turn, provider_fork_binding_available,
        });
        $crate::wit_map!(@record $crate::provider_fork::capabilities::ProjectedSession => ProjectedSession {
            key, session_id, forked_from, lifecycle_capabilities, latest_turn, active_turn,
        });
        $crate::wit_map!(@record $crate::provider_fork::capabilities::Projection => Projection { sessions, probes });
        $crate::wit_map!(@enum $crate::import::ImportFormat => ImportFormat { ClaudeCode, Codex, Spool, Pi, Gemini, Opencode });
        $crate::wit_map!(@record $crate::import::ImportedEntry => ImportedEntry {
            message_id, parent_message_id, role, content, created_at, tool_calls as json,
            tool_call_id, turn_usage, tool_status, reasoning, attachments, kind,
            token_count, turn_id, usage_only,
        });
        $crate::wit_map!(@json Box<$crate::import::ImportedExport>);
        $crate::wit_map!(@record $crate::import::ImportedSpawn => ImportedSpawn { provider_session_id, tool_call_id });
        $crate::wit_map!(@record $crate::import::ImportedFork => ImportedFork {
            provider_session_id, after_message_id,
        });
        $crate::wit_map!(@record $crate::import::ImportedSession => ImportedSession {
            provider_session_id, cwd, model, version, git_branch, started_at, fork_of,
            spawned_by, title, exported, entries,
        });
        $crate::wit_map!(@record $crate::import::ImportRequest => ImportRequest {
            key, session_id, format, session, parent_key, prices,
        });
        $crate::wit_map!(@json $crate::usage::PriceTable);
        $crate::wit_map!(@record $crate::usage::UsageRequest => UsageRequest { since_ms, prices });
        $crate::wit_map!(@record $crate::usage::UsageRow => UsageRow {
            name, responses, input_tokens, output_tokens, cache_read, cache_write, cost_usd,
            unpriced,
        });
        $crate::wit_map!(@record $crate::usage::UsageReport => UsageSummary {
            since_ms, sessions, days, models, total,
        });
        $crate::wit_map!(@record $crate::import::AdjustedEntry => AdjustedEntry { message_id, action, reason });
        $crate::wit_map!(@record $crate::import::ImportOutcome => ImportOutcome {
            created, imported, already_present, usage_updated, adjusted,
            sanitized_provider_session_id, session,
        });
        $crate::wit_map!(@record $crate::NewRoleSession => NewRoleSession {
            role_session_id, run_id, role_id, adapter_state,
        });
        $crate::wit_map!(@record $crate::NewRun => NewRun {
            agent_type, project_id, session_id, task_id, status, role_session_id,
            workspace_path, run_mode, metadata,
        });
        $crate::wit_map!(@record $crate::resume::rules::RunRecord => RunRecord {
            agent_type, project_id, session_id, status, updated_at, task_id,
            role_session_id, workspace_path, run_mode, metadata,
        });
        $crate::wit_map!(@record $crate::RunFilter => RunFilter { agent_type, project_id, role_session_id });
        $crate::wit_map!(@record $crate::RunList => RunList { runs, next_cursor });
        $crate::wit_map!(@record $crate::ResumeRequest => ResumeRequest {
            agent_type, role_session_id, project_id, scope_id, preconfigured,
            surviving_agents,
        });
        $crate::wit_map!(@record $crate::resume::rules::ResumeDecision => ResumeDecision {
            mode, session_id, set_metadata, remove_metadata, clear_role_state, rejected_token,
        });
        $crate::wit_map!(@record $crate::resume::rules::TaskOutcome => TaskOutcome {
            agent_type, task_id, status, token, resumed_from, from_stream,
        });
        $crate::wit_map!(@record $crate::OutcomeRequest => OutcomeRequest {
            role_session_id, project_id, outcome, workspace_path, run_mode, metadata,
            surviving_agents,
        });
        $crate::wit_map!(@record $crate::resume::rules::TaskOutcomeEffects => TaskOutcomeEffects {
            role_state, set_metadata, remove_metadata,
        });
        $crate::wit_map!(@record $crate::ThreadPlan => ThreadPlan { action, thread_id, replaces, notice });
        $crate::wit_map!(@record $crate::ThreadBinding => ThreadBinding { agent_type, thread_id, replaces });
        $crate::wit_map!(@record $crate::TurnCommit => TurnCommit { entries, thread, expected_epoch });
        $crate::wit_map!(@record $crate::TurnCommitted => TurnCommitted { entries, session });
    };

    (@same $($t:ty),*) => {$(
        impl Wit for $t {
            type W = $t;
            fn into_wit(self) -> $t {
                self
            }
            fn from_wit(w: $t, _: &'static str) -> Result<$t, $crate::Error> {
                Ok(w)
            }
        }
    )*};

    (@json $t:ty) => {
        impl Wit for $t {
            type W = String;
            fn into_wit(self) -> String {
                $crate::wit_map::to_json(&self)
            }
            fn from_wit(w: String, field: &'static str) -> Result<$t, $crate::Error> {
                $crate::wit_map::from_json(&w, field)
            }
        }
    };

    (@record $core:path => $w:ident { $($fields:tt)* }) => {
        $crate::wit_map!(@record_in wit, $core => $w { $($fields)* });
    };

    (@record_in $m:ident, $core:path => $w:ident {
        $($field:ident $(as $json:ident)?),* $(,)?
    }) => {
        impl Wit for $core {
            type W = $m::$w;
            fn into_wit(self) -> $m::$w {
                let Self { $($field),* } = self;
                $m::$w { $($field: Wit::into_wit($field)),* }
            }
            fn from_wit(w: $m::$w, _: &'static str) -> Result<$core, $crate::Error> {
                Ok(Self { $($field: $crate::wit_map!(
                    @field $($json)? Wit::from_wit(w.$field, stringify!($field))?
                )),* })
            }
        }
    };

    (@newtypes_in $m:ident, $core:path => $w:ident { $($case:ident),* $(,)? }) => {
        impl Wit for $core {
            type W = $m::$w;
            fn into_wit(self) -> $m::$w {
                match self { $(Self::$case(value) => $m::$w::$case(value.into_wit())),* }
            }
            fn from_wit(w: $m::$w, field: &'static str) -> Result<$core, $crate::Error> {
                Ok(match w { $($m::$w::$case(value) => Self::$case(Wit::from_wit(value, field)?)),* })
            }
        }
    };

    (@field json $value:expr) => {
        $crate::wit_map::null_is_none($value)
    };

    (@field $value:expr) => {
        $value
    };

    (@enum $core:path => $w:ident { $($case:ident),* $(,)? }) => {
        impl Wit for $core {
            type W = wit::$w;
            fn into_wit(self) -> wit::$w {
                match self { $(Self::$case => wit::$w::$case),* }
            }
            fn from_wit(w: wit::$w, _: &'static str) -> Result<$core, $crate::Error> {
                Ok(match w { $(wit::$w::$case => Self::$case),* })
            }
        }
    };

    (@variant $core:path => $w:ident {
        $($case:ident $(($($field:ident),* $(,)?) => $record:ident)?),* $(,)?
    }) => {
        impl Wit for $core {
            type W = wit::$w;
            fn into_wit(self) -> wit::$w {
                match self {
                    $(Self::$case $({ $($field),* })? => wit::$w::$case$((wit::$record {
                        $($field: Wit::into_wit($field)),*
                    }))?),*
                }
            }
            fn from_wit(w: wit::$w, _: &'static str) -> Result<$core, $crate::Error> {
                Ok(match w {
                    $(wit::$w::$case$((wit::$record { $($field),* }))? => Self::$case $({
                        $($field: Wit::from_wit($field, stringify!($field))?),*
                    })?),*
                })
            }
        }
    };

    (@text $core:path) => {
        impl Wit for $core {
            type W = String;
            fn into_wit(self) -> String {
                $crate::wit_map::to_name(&self)
            }
            fn from_wit(w: String, field: &'static str) -> Result<$core, $crate::Error> {
                $crate::wit_map::from_name(w, field)
            }
        }
    };

}

/// A value as JSON text (a value that does not serialize, which the core's types
/// never are, as `null`).
#[doc(hidden)]
pub fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// JSON text as a value; text that is not one is `invalid_argument` naming `field`.
#[doc(hidden)]
pub fn from_json<T: serde::de::DeserializeOwned>(
    text: &str,
    field: &'static str,
) -> Result<T, crate::Error> {
    crate::record::from_json(text.as_bytes())
        .map_err(|e| crate::Error::unparsed(field, "is not JSON", &e))
}

/// An optional JSON value as the core's JSON reads it: `null` is absent.
#[doc(hidden)]
pub fn null_is_none(value: Option<serde_json::Value>) -> Option<serde_json::Value> {
    value.filter(|value| !value.is_null())
}

/// A unit variant's serialized name.
#[doc(hidden)]
pub fn to_name(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

/// A unit variant from its serialized name; an unknown name is `invalid_argument`.
#[doc(hidden)]
pub fn from_name<T: serde::de::DeserializeOwned>(
    name: String,
    field: &'static str,
) -> Result<T, crate::Error> {
    crate::storage::record::read(&serde_json::Value::String(name))
        .map_err(|e| crate::Error::unparsed(field, "is not a known name", &e))
}
