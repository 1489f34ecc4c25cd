//! TypeScript declarations of the records the JS API takes and returns (emitted into the
//! `.d.ts` that wasm-bindgen generates). They mirror the core's `serde` JSON.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Lifecycle state of a session. */
export type SessionStatus = "running" | "done" | "failed";
/** Who wrote a transcript entry. */
export type Role = "user" | "assistant" | "tool" | "system";
/** Reason code of a failed call. */
export type SpoolErrorCode =
  | "not_found" | "conflict" | "invalid_argument" | "stale_epoch"
  | "corruption" | "storage" | "internal";
/** The `Error` every promise rejects with. */
export interface SpoolError extends Error { code: SpoolErrorCode; }

/** A session, addressed by its key. Times are ms since the Unix epoch. Records written
 * by format 1 read the accounting fields as their defaults: counters and costs 0,
 * `cost_source` "none", optional fields null, maps {}, `message_index` false. */
export interface Session {
  key: string; session_id: string; agent_id: string | null; status: SessionStatus;
  epoch: number; created_at: number; updated_at: number; entry_count: number;
  last_entry_id: number; total_tokens: number;
  ended_at: number | null; runtime_ms: number | null;
  input_tokens: number; output_tokens: number; cache_read: number; cache_write: number;
  estimated_cost_usd: number; total_cost_usd: number; billed_cost_usd: number;
  estimated_cost_component_usd: number;
  cost_source: "none" | "billed" | "estimated" | "mixed";
  missing_cost_entries: number; compaction_count: number;
  model: string | null; channel: string | null;
  model_config: Record<string, unknown>; metadata: Record<string, unknown>;
  last_state_id: number; message_index: boolean;
}
/** Model usage reported with a message (accounted in `input_tokens`/`output_tokens`,
 * never also in `total_tokens`). */
export interface TurnUsage { model: string; input_tokens: number; output_tokens: number; }
/** One transcript message. */
export interface Entry {
  id: number; message_id: string; role: Role; content: string; created_at: number;
  token_count: number | null; tool_calls: unknown | null; tool_call_id: string | null;
  turn_id: string | null; turn_usage: TurnUsage | null;
}
/** What `appendEntry` appends. */
export interface AppendRequest {
  role: Role; content: string; token_count?: number | null; message_id?: string | null;
  tool_calls?: unknown; tool_call_id?: string | null; turn_id?: string | null;
  turn_usage?: TurnUsage | null; expected_epoch?: number | null;
}
/** Which transcript page `readPage` reads. */
export interface PageRequest {
  order?: "oldest_first" | "newest_first"; cursor?: string | null; limit: number;
}
/** A transcript page; `next_cursor` is null on the last page. */
export interface Page { entries: Entry[]; next_cursor: string | null; }
/** A page of sessions, most recently updated first. */
export interface SessionList { sessions: Session[]; next_cursor: string | null; }
/** Which sessions `listSessions` lists. */
export interface ListFilter { agent_id?: string | null; status?: SessionStatus | null; }
/** What `applyIntent` does with a key. */
export type Intent = "continue" | "new_chat" | "reset_same_key";
/** How `finish` ends a session. */
export type FinishStatus = "done" | "failed";
/** Whether a reset kept the archive of the generation it replaced. */
export interface ArchiveStatus { written: boolean; error: string | null; }
/** The result of `getOrCreate` and `applyIntent`. */
export interface IntentOutcome {
  session: Session; created: boolean; rotated: boolean; archive: ArchiveStatus | null;
}
/** What `update` changes; absent fields stay. Maps merge key by key; null removes a key. */
export interface UpdateRequest {
  model?: string | null; channel?: string | null;
  model_config?: Record<string, unknown>; metadata?: Record<string, unknown>;
  expected_epoch?: number | null;
}
/** The result of `truncate`. */
export interface TruncateOutcome { truncated: boolean; before_count: number; after_count: number; }
/** A context state saved for a session. */
export interface ContextState {
  id: number; session_id: string; session_key: string; provider: string;
  model: string | null; state_kind: string; payload: unknown; covered_through_id: number;
  created_at: number; expires_at: number | null; portable: boolean; cacheable: boolean;
  valid: boolean; invalid_reason: string | null;
}
/** What `saveState` saves. */
export interface NewContextState {
  provider: string; model?: string | null; state_kind: string; payload: unknown;
  covered_through_id?: number; expires_at?: number | null; portable?: boolean;
  cacheable?: boolean;
}
/** The archive of a session generation a reset replaced (`listArchives`). */
export interface ResetArchive {
  session_key: string; session_id: string; epoch: number; archived_at: number;
  transcript_entries: Entry[]; summaries: unknown[];
}
/** How compaction decides and checks (every field optional). */
export interface CompactionConfig {
  /** Compact when tokens × safety_margin > window (default 1.2). */
  safety_margin?: number;
  /** Refuse a summary that misses a critical obligation (default false: back-fill). */
  coverage_blocking?: boolean;
  /** The newest this-many entries are always kept (default 0). */
  protected_recent?: number;
}
/** A memory-flush receipt (`unsafe` is stored as `degraded_forensic`). */
export type FlushReceiptStatus =
  | "unknown" | "safe" | "unsafe" | "degraded_forensic" | "noop_no_memory" | "archive_only";
/** How to compact (`compact`, `prepareCompaction`, `compactWith`). */
export interface CompactRequest {
  context_window_tokens: number; config?: CompactionConfig; compaction_id?: string | null;
  trigger_reason?: string | null; flush_receipt_status?: FlushReceiptStatus | null;
}
/** What kind of fact an obligation is. */
export type ObligationKind =
  | "goal" | "constraint" | "decision" | "next_action" | "failure" | "tool_call"
  | "pending_tool" | "file" | "command" | "identifier" | "question" | "carry_forward";
/** One fact a summary must keep. */
export interface Obligation { kind: ObligationKind; text: string; critical: boolean; }
/** Phase one of a two-phase compaction (`prepareCompaction`): what to summarize.
 * `skip_reason` (`below_threshold`, `nothing_to_compact`) is null when a summary is needed. */
export interface Prepared {
  skip_reason: string | null; input: string; obligations: Obligation[];
  removed_count: number; kept_count: number; covered_through_id: number;
  tokens_before: number; preimage: string;
}
/** Phase two (`commitCompaction`): the summary, with the prepare's request and preimage. */
export interface CommitRequest {
  request: CompactRequest; preimage: string; summary_text: string; summary_payload?: unknown;
}
/** An externally produced compaction (`persistCompactionResult`). */
export interface PersistRequest {
  summary_text: string; kept_entries: AppendRequest[]; compaction_id?: string | null;
  trigger_reason?: string | null;
}
/** The summarizer `compactWith` calls between prepare and commit. */
export type Summarizer = (prepared: Prepared) => string | Promise<string>;
/** The result of a compaction, or of its refusal (`summary` "" and `skip_reason` set:
 * `below_threshold`, `nothing_to_compact`, `stale_preimage`, `coverage_blocked`,
 * `empty_summary`). */
export interface CompactionResult {
  summary: string; summary_source: "fallback" | "llm" | "external" | "skipped";
  summary_payload: unknown | null; removed_count: number; kept_entries: Entry[];
  tokens_before: number; tokens_after: number; chunks_processed: number;
  coverage_status: "pass" | "pass_with_backfill" | "unknown" | "fail_blocked";
  missing_obligations: string[]; skip_reason: string | null; compaction_id: string | null;
}
/** The stored summary of one compaction (`listSummaries`, `listDegradedCompactions`). */
export interface Summary {
  compaction_id: string; compaction_index: number; session_id: string; session_key: string;
  summary_text: string; summary_payload: unknown | null;
  summary_format: "structured_v1" | "text";
  summary_source: "fallback" | "llm" | "external" | "unknown";
  coverage_status: string; missing_obligations: string[] | null;
  critical_carry_forward: string[] | null; trigger_reason: string | null;
  tokens_before: number | null; tokens_after: number | null; removed_count: number;
  kept_count: number; chunk_count: number; covered_through_id: number; created_at: number;
  flush_receipt_status: string; repair_status: string | null;
}
/** One agent type's entry in a role session's adapter state (e.g. `resume_session_id`,
 * `agent_type`, `last_task_id`, `source`, `status`). */
export type AdapterState = Record<string, unknown>;
/** A role session (`saveRoleSession`, `getRoleSession`): adapter state keyed by agent
 * type, beside any other keys its owner put there. */
export interface RoleSession {
  role_session_id: string; run_id: string | null; role_id: string | null;
  adapter_state: Record<string, unknown>; created_at: number; updated_at: number;
}
/** What `saveRoleSession` stores; `adapter_state` replaces the stored one whole. */
export interface NewRoleSession {
  role_session_id: string; run_id?: string | null; role_id?: string | null;
  adapter_state?: Record<string, unknown>;
}
/** An external run as the host reports it (`recordRun`); `session_id` is the provider
 * token (or a synthetic `agent:project:task` monitor id). */
export interface NewRun {
  agent_type: string; project_id: string; session_id: string; task_id: string;
  status: string; role_session_id?: string | null; workspace_path?: string | null;
  run_mode?: string | null; metadata?: Record<string, unknown>;
}
/** A stored run: one per agent type, token, project and task. */
export interface RunRecord {
  agent_type: string; project_id: string; session_id: string; status: string;
  updated_at: number; task_id: string; role_session_id: string | null;
  workspace_path: string | null; run_mode: string | null; metadata: Record<string, unknown>;
}
/** Which runs `listRuns` lists. */
export interface RunFilter {
  agent_type?: string | null; project_id?: string | null; role_session_id?: string | null;
}
/** A page of runs; `next_cursor` is null on the last page. */
export interface RunList { runs: RunRecord[]; next_cursor: string | null; }
/** What a task asks before it starts (`selectResume`). `surviving_agents` lists the agent
 * types whose tokens survive failed runs (default `["claude_code"]`). */
export interface ResumeRequest {
  agent_type: string; role_session_id?: string | null; project_id?: string | null;
  scope_id?: string | null; preconfigured?: string | null;
  surviving_agents?: string[] | null;
}
/** The result of `selectResume`: `session_id` is "" unless `mode` is "resume". */
export interface ResumeDecision {
  mode: "resume" | "new" | "auto"; session_id: string;
  set_metadata: Record<string, unknown>; remove_metadata: string[];
  clear_role_state: boolean;
}
/** What a task's run ended with. */
export interface TaskOutcome {
  agent_type: string; task_id: string; status: string; token?: string | null;
  resumed_from?: string | null; from_stream?: boolean;
}
/** What `recordTaskOutcome` records. */
export interface OutcomeRequest {
  role_session_id?: string | null; project_id: string; outcome: TaskOutcome;
  workspace_path?: string | null; run_mode?: string | null;
  metadata?: Record<string, unknown>; surviving_agents?: string[] | null;
}
/** The change a task outcome makes to its role's adapter state for the agent type. */
export type RoleStateChange =
  | { action: "keep" } | { action: "set"; entry: AdapterState } | { action: "clear" };
/** The result of `recordTaskOutcome`. */
export interface TaskOutcomeEffects {
  role_state: RoleStateChange; set_metadata: Record<string, unknown>;
  remove_metadata: string[];
}
/** The result of `planProviderThread`: resume `thread_id`, or start a thread (replacing
 * the binding `replaces`, when one is given up, with at most one `notice`). */
export interface ThreadPlan {
  action: "resume" | "start"; thread_id: string | null; replaces: string | null;
  notice: string | null;
}
/** The provider thread a turn ran on: stored as `<agent_type>_thread_id` in the
 * session's `model_config`. */
export interface ThreadBinding { agent_type: string; thread_id: string; replaces?: string | null; }
/** What `commitTurn` commits. */
export interface TurnCommit {
  entries: AppendRequest[]; thread?: ThreadBinding | null; expected_epoch?: number | null;
}
/** The result of `commitTurn`. */
export interface TurnCommitted { entries: Entry[]; session: Session; }
/** Options of calls that may create a session: defaults are `crypto.randomUUID()` and
 * `Date.now()`. */
export interface CreateOptions { sessionId?: string; nowMs?: number; }
/** Options of calls that take the time: `nowMs` defaults to `Date.now()`. */
export interface TimeOptions { nowMs?: number; }
/** Options of `appendEntry`. */
export type AppendOptions = TimeOptions;
/** Options of fenced calls: `nowMs` defaults to `Date.now()`; with `expectedEpoch` the call
 * rejects with `stale_epoch` unless the session is at that epoch. */
export interface FenceOptions { nowMs?: number; expectedEpoch?: number; }
/** Options of `deleteSession`. */
export interface EpochOptions { expectedEpoch?: number; }
"#;
