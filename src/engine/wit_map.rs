//! How each core type crosses the WIT boundary, declared once for both sides.
//!
//! [`wit_map!`](crate::engine::wit_map) expands, in the crate that invokes it, a trait `Wit`
//! (core type ⇄ the generated WIT type, as `wit::…` at the call site) with one
//! implementation per type listed here. The component (`src/engine/component.rs`) and the
//! native host (`host/src/runtime/wit.rs`) each invoke it over their own generated bindings,
//! so neither writes a conversion by hand.
//!
//! A record lists its fields; each field converts by its own type, so the list is all
//! a record needs. The kinds:
//! - `record Core => Wit { field, … }`: a struct, field by field;
//! - `enum Core => Wit { Case, … }`: a unit-only enum, case by case;
//! - `variant Core => Wit { Case, Case(payload), Case { field, … } => Record, … }`;
//! - `text Core`: a unit-only enum the WIT carries as its name (`"running"`);
//! - `json Core`: a value the WIT carries as JSON text (free-form maps).
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

        $crate::wit_map! {
            @entries
            record $crate::Session => Session {
                key, session_id, agent_id, status, epoch, created_at, updated_at,
                entry_count, last_entry_id, total_tokens, ended_at, runtime_ms,
                input_tokens, output_tokens, cache_read, cache_write, estimated_cost_usd,
                total_cost_usd, billed_cost_usd, estimated_cost_component_usd, cost_source,
                missing_cost_entries, compaction_count, model, channel, model_config,
                metadata, last_state_id, message_index,
            };
            enum $crate::SessionStatus => SessionStatus { Running, Done, Failed };
            record $crate::TurnUsage => TurnUsage { model, input_tokens, output_tokens };
            enum $crate::Role => Role { User, Assistant, Tool, System };
            record $crate::Entry => Entry {
                id, message_id, role, content, created_at, token_count, tool_calls,
                tool_call_id, turn_id, turn_usage,
            };
            record $crate::AppendRequest => AppendRequest {
                role, content, token_count, message_id, tool_calls, tool_call_id, turn_id,
                turn_usage, expected_epoch,
            };
            enum $crate::Order => Order { OldestFirst, NewestFirst };
            record $crate::PageRequest => PageRequest { order, cursor, limit };
            record $crate::Page => Page { entries, next_cursor };
            record $crate::SessionList => SessionList { sessions, next_cursor };
            enum $crate::Intent => Intent { Continue, NewChat, ResetSameKey };
            record $crate::ArchiveStatus => ArchiveStatus { written, error };
            record $crate::IntentOutcome => IntentOutcome { session, created, rotated, archive };
            record $crate::UpdateRequest => UpdateRequest {
                model, channel, model_config, metadata, expected_epoch,
            };
            enum $crate::FinishStatus => FinishStatus { Done, Failed };
            record $crate::TruncateOutcome => TruncateOutcome {
                truncated, before_count, after_count,
            };
            record $crate::ContextState => ContextState {
                id, session_id, session_key, provider, model, state_kind, payload,
                covered_through_id, created_at, expires_at, portable, cacheable, valid,
                invalid_reason,
            };
            record $crate::NewContextState => NewContextState {
                provider, model, state_kind, payload, covered_through_id, expires_at,
                portable, cacheable,
            };
            record $crate::compaction::CompactionConfig => CompactionConfig {
                safety_margin, coverage_blocking, protected_recent,
            };
            record $crate::compaction::CompactRequest => CompactRequest {
                context_window_tokens, config, compaction_id, trigger_reason,
                flush_receipt_status,
            };
            record $crate::compaction::Obligation => Obligation { kind, text, critical };
            text $crate::compaction::ObligationKind;
            record $crate::compaction::Prepared => Prepared {
                skip_reason, input, obligations, removed_count, kept_count,
                covered_through_id, tokens_before, preimage,
            };
            record $crate::compaction::CommitRequest => CommitRequest {
                request, preimage, summary_text, summary_payload,
            };
            record $crate::compaction::PersistRequest => PersistRequest {
                summary_text, kept_entries, compaction_id, trigger_reason,
            };
            record $crate::compaction::CompactionResult => CompactionResult {
                summary, summary_source, summary_payload, removed_count, kept_entries,
                tokens_before, tokens_after, chunks_processed, coverage_status,
                missing_obligations, dropped_obligations, skip_reason, compaction_id,
            };
            record $crate::ArchivedReset => ArchivedReset {
                session_key, session_id, epoch, archived_at, transcript_entries, summaries,
            };
            json $crate::resume::rules::RoleStateChange;
            json $crate::compaction::Summary;
            json $crate::RoleSession;
            json $crate::Branch;
            json $crate::BranchRequest;
            json $crate::LineageView;
            json $crate::turns::StartTurn;
            json $crate::turns::CloseTurn;
            json $crate::turns::Turn;
            json $crate::turns::SessionTurns;
            json $crate::turns::TurnPage;
            json $crate::turns::TurnPageRequest;
            json $crate::provider_fork::types::ForkRequest;
            json $crate::provider_fork::types::ForkOperationView;
            json $crate::provider_fork::types::DispatchPayload;
            json $crate::provider_fork::types::Disposition;
            json $crate::provider_fork::types::RecoveryReport;
            json $crate::provider_fork::types::ProviderBindingRequest;
            json $crate::provider_fork::ForkLineage;
            json $crate::provider_fork::capabilities::ProjectionMode;
            json $crate::provider_fork::capabilities::ProbeAnswer;
            json $crate::provider_fork::capabilities::ForkProjection;
            json $crate::import::ImportRequest;
            json $crate::import::ImportOutcome;
            record $crate::NewRoleSession => NewRoleSession {
                role_session_id, run_id, role_id, adapter_state,
            };
            record $crate::NewRun => NewRun {
                agent_type, project_id, session_id, task_id, status, role_session_id,
                workspace_path, run_mode, metadata,
            };
            record $crate::resume::rules::RunRecord => RunRecord {
                agent_type, project_id, session_id, status, updated_at, task_id,
                role_session_id, workspace_path, run_mode, metadata,
            };
            record $crate::RunFilter => RunFilter { agent_type, project_id, role_session_id };
            record $crate::RunList => RunList { runs, next_cursor };
            record $crate::ResumeRequest => ResumeRequest {
                agent_type, role_session_id, project_id, scope_id, preconfigured,
                surviving_agents,
            };
            record $crate::resume::rules::ResumeDecision => ResumeDecision {
                mode, session_id, set_metadata, remove_metadata, clear_role_state, rejected_token,
            };
            record $crate::resume::rules::TaskOutcome => TaskOutcome {
                agent_type, task_id, status, token, resumed_from, from_stream,
            };
            record $crate::OutcomeRequest => OutcomeRequest {
                role_session_id, project_id, outcome, workspace_path, run_mode, metadata,
                surviving_agents,
            };
            record $crate::resume::rules::TaskOutcomeEffects => TaskOutcomeEffects {
                role_state, set_metadata, remove_metadata,
            };
            record $crate::ThreadPlan => ThreadPlan { action, thread_id, replaces, notice };
            record $crate::ThreadBinding => ThreadBinding { agent_type, thread_id, replaces };
            record $crate::TurnCommit => TurnCommit { entries, thread, expected_epoch };
            record $crate::TurnCommitted => TurnCommitted { entries, session };
        }
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

    (@entries) => {};

    (@entries record $core:path => $w:ident { $($field:ident),* $(,)? }; $($rest:tt)*) => {
        impl Wit for $core {
            type W = wit::$w;
            fn into_wit(self) -> wit::$w {
                let Self { $($field),* } = self;
                wit::$w { $($field: Wit::into_wit($field)),* }
            }
            fn from_wit(w: wit::$w, _: &'static str) -> Result<$core, $crate::Error> {
                Ok(Self { $($field: Wit::from_wit(w.$field, stringify!($field))?),* })
            }
        }
        $crate::wit_map!(@entries $($rest)*);
    };

    (@entries enum $core:path => $w:ident { $($case:ident),* $(,)? }; $($rest:tt)*) => {
        impl Wit for $core {
            type W = wit::$w;
            fn into_wit(self) -> wit::$w {
                match self { $(Self::$case => wit::$w::$case),* }
            }
            fn from_wit(w: wit::$w, _: &'static str) -> Result<$core, $crate::Error> {
                Ok(match w { $(wit::$w::$case => Self::$case),* })
            }
        }
        $crate::wit_map!(@entries $($rest)*);
    };

    (@entries text $core:path; $($rest:tt)*) => {
        impl Wit for $core {
            type W = String;
            fn into_wit(self) -> String {
                $crate::wit_map::to_name(&self)
            }
            fn from_wit(w: String, field: &'static str) -> Result<$core, $crate::Error> {
                $crate::wit_map::from_name(w, field)
            }
        }
        $crate::wit_map!(@entries $($rest)*);
    };

    (@entries json $core:path; $($rest:tt)*) => {
        $crate::wit_map!(@json $core);
        $crate::wit_map!(@entries $($rest)*);
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
    serde_json::from_str(text).map_err(|e| crate::Error::unparsed(field, "is not JSON", &e))
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
    serde_json::from_value(serde_json::Value::String(name))
        .map_err(|e| crate::Error::unparsed(field, "is not a known name", &e))
}
