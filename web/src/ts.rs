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
  | "not_found" | "conflict" | "invalid_argument" | "stale_epoch" | "unknown"
  | "corruption" | "storage" | "internal";
/** The `Error` every promise rejects with. A fork conflict (code `conflict`) also carries
 * its fork reason in `reason` (`request_changed`, `stale_transition`, `turn_running`,
 * `target_exists`, a provider's `attachment_unsupported`, …), verbatim. */
export interface SpoolError extends Error { code: SpoolErrorCode; reason?: string; }

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
/** Model usage reported with a message (accounted in `input_tokens`/`output_tokens`
 * and the cache counters, never also in `total_tokens`); cache figures absent are 0. */
export interface TurnUsage {
  model: string; input_tokens: number; output_tokens: number;
  cache_read_tokens?: number; cache_write_tokens?: number;
}
/** How a tool call ended. */
export type ToolStatus = "ok" | "error" | "cancelled";
/** What an entry is when it is not a plain message of its role. */
export type EntryKind = "context" | "summary" | "command";
/** A file that came with a message, described (no bytes are kept). */
export interface Attachment {
  kind: string; media_type: string | null; size: number; sha256: string | null;
  source: string | null;
}
/** One transcript message; the last four fields are absent when empty. */
export interface Entry {
  id: number; message_id: string; role: Role; content: string; created_at: number;
  token_count: number | null; tool_calls: unknown | null; tool_call_id: string | null;
  turn_id: string | null; turn_usage: TurnUsage | null; tool_status?: ToolStatus;
  reasoning?: string; attachments?: Attachment[]; kind?: EntryKind;
  status?: EntryStatus; stop_reason?: string;
}
/** Where an entry written while it streams stands (absent once complete). */
export type EntryStatus = "in_progress" | "incomplete";
/** What `updateEntry`, `settleEntry` and `abortEntry` give an entry in progress. */
export interface EntryUpdate {
  message_id: string; content?: string | null; reasoning?: string | null;
  tool_calls?: unknown | null; turn_usage?: TurnUsage | null; token_count?: number | null;
  reason?: string | null; expected_epoch?: number | null;
}
/** What `appendEntry` appends. */
export interface AppendRequest {
  role: Role; content: string; token_count?: number | null; message_id?: string | null;
  tool_calls?: unknown; tool_call_id?: string | null; turn_id?: string | null;
  turn_usage?: TurnUsage | null; tool_status?: ToolStatus | null;
  reasoning?: string | null; attachments?: Attachment[]; kind?: EntryKind | null;
  expected_epoch?: number | null;
}
/** Which transcript page `readPage` reads. */
export interface PageRequest {
  order?: "oldest_first" | "newest_first"; cursor?: string | null; limit: number;
}
/** A transcript page; `next_cursor` is null on the last page. */
export interface Page { entries: Entry[]; next_cursor: string | null; }
/** Where a search hit matched: a piece of the entry's `content`, `reasoning` or
 * `tool_calls` (its string values, one a line), at most 200 bytes; `highlights` are the
 * `[start, end)` byte ranges of `text` (UTF-8) that matched. */
export interface Snippet { field: string; text: string; highlights: [number, number][]; }
/** One entry that matched `search`. `session_id` is the identity the entry belongs to
 * (a branch's shared history is found once, under the session that owns it, or, once
 * that session is deleted or reset, under the first branch by key that reads it); `score` is
 * BM25 rounded to micro-units, the same on every host. */
export interface SearchHit {
  session_key: string; session_id: string; entry_id: number; message_id: string;
  role: Role; created_at: number; score: number; snippet: Snippet;
}
/** A page of search hits, best first; `next_cursor` is null when no candidate follows;
 * `unindexed` counts entries not searched because the history holding them was written
 * before the search index and `indexBackfill` has not indexed it yet (an upper bound). */
export interface SearchPage { hits: SearchHit[]; next_cursor: string | null; unindexed: number; }
/** What one `indexBackfill` call did; call again with `next_cursor` until it is null. */
export interface IndexProgress {
  session_key: string | null; indexed_entries: number; pending_entries: number;
  sessions_checked: number; next_cursor: string | null;
}
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
/** The record of a committed reset's archive (`list_reset_archives`). */
export interface ArchivedReset {
  session_key: string; session_id: string; epoch: number; archived_at: number;
  transcript_entries: number; summaries: number;
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
  | "task" | "latest_request" | "goal" | "constraint" | "decision" | "next_action"
  | "failure" | "rejected" | "tool_call" | "pending_tool" | "file" | "command"
  | "identifier" | "question" | "carry_forward";
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
 * `below_threshold`, `nothing_to_compact`, `protected_tail_exhausts_compaction_window`,
 * `stale_preimage`, `coverage_blocked`, `empty_summary`, `context_not_reduced`). */
export interface CompactionResult {
  summary: string; summary_source: "fallback" | "llm" | "external" | "skipped";
  summary_payload: unknown | null; removed_count: number; kept_entries: Entry[];
  tokens_before: number; tokens_after: number; chunks_processed: number;
  coverage_status: "pass" | "pass_with_backfill" | "partial_backfill" | "unknown" | "fail_blocked";
  missing_obligations: string[]; dropped_obligations: string[];
  skip_reason: string | null; compaction_id: string | null;
}
/** The stored summary of one compaction (`listSummaries`, `listDegradedCompactions`). */
export interface Summary {
  compaction_id: string; compaction_index: number; session_id: string; session_key: string;
  summary_text: string; summary_payload: unknown | null;
  summary_format: "structured_v1" | "text";
  summary_source: "fallback" | "llm" | "external" | "unknown";
  coverage_status: string; missing_obligations: string[] | null;
  dropped_obligations: string[] | null;
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
  clear_role_state: boolean; rejected_token?: string;
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
/** How `branch` branches a session; absent, an empty branch. `child_session_id` defaults to
 * `crypto.randomUUID()`; `fork_before_message_id` implies a fork of the transcript. */
export interface BranchRequest {
  child_session_id?: string | null; fork_transcript?: boolean;
  fork_before_message_id?: string | null; max_fork_tokens?: number | null;
}
/** Where a branch was forked from its parent (`before_*` only for a fork before a
 * message; `before_position` is its `[created_at, entry id]`). */
export interface BranchForkPoint {
  parent_session_id: string; parent_last_entry_id: number;
  before_message_id: string | null; before_position: [number, number] | null;
  inherited_entries: number; inherited_summaries: number;
}
/** How a session relates to the session it was branched from (a root: no parent, depth 0). */
export interface BranchLineage {
  parent_session_key: string | null; spawn_depth: number; forked_from_parent: boolean;
  fork_point: BranchForkPoint | null; fork_count: number;
}
/** A session with its lineage, flat (`branch`, `listChildren`). */
export type BranchInfo = Session & BranchLineage;
/** A session with its lineage and its direct branches in key order (`lineage`). */
export type LineageView = BranchInfo & { children: BranchInfo[]; };
/** Where a turn stands. */
export type TurnPhase = "running" | "settled" | "interrupted";
/** A transcript position: the `(created_at, entry id)` of an entry. */
export interface TurnPosition { created_at: number; entry_id: number; }
/** One turn of a session; `boundary` is the newest entry when it closed. */
export interface Turn {
  turn_id: string; seq: number; session_key: string; session_id: string; phase: TurnPhase;
  provider_turn_id: string | null; provider_binding: unknown | null; started_at: number;
  ended_at: number | null; boundary: TurnPosition | null;
}
/** What `startTurn` starts. */
export interface NewTurn {
  turn_id: string; provider_turn_id?: string | null; provider_binding?: unknown;
  expected_epoch?: number | null;
}
/** What `settleTurn` and `interruptTurn` record; absent fields keep their values. */
export interface CloseTurn {
  provider_turn_id?: string | null; provider_binding?: unknown; expected_epoch?: number | null;
}
/** The newest turn and the running one (`sessionTurns`). */
export interface TurnSummary { latest: Turn | null; active: Turn | null; }
/** Which page of a session's turns `listTurns` reads: `order` defaults to
 * "oldest_first" (start order), `limit` (1 to 1000) to 100. */
export interface TurnPageRequest {
  order?: "oldest_first" | "newest_first"; cursor?: string | null; limit?: number;
}
/** A page of a session's turns; `next_cursor` is null on the last page. */
export interface TurnPage { turns: Turn[]; next_cursor: string | null; }
/** A provider fork request (`fork`); `request_id` is the caller's idempotency id. */
export interface ForkRequest {
  request_id: string; target_key: string; target_session_id: string;
  through_turn_id?: string | null; cwd?: string | null;
}
/** Internal state of a fork operation. */
export type ForkState =
  | "prepared" | "dispatching" | "provider_accepted" | "committed" | "failed" | "unknown";
/** Public status of a fork operation. */
export type ForkStatus = "accepted" | "committed" | "failed" | "unknown";
/** Public phase of an `accepted` fork operation. */
export type ForkPhase = "frozen" | "dispatching" | "materializing";
/** The frozen point a provider fork copies: through a turn or the whole session. */
export interface ForkPoint {
  kind: "through_turn" | "session"; turn_id: string | null; turn_seq: number | null;
  provider_turn_id: string | null; provider_binding: unknown | null;
}
/** What a fork's child starts with besides its history. */
export interface TargetContext {
  cwd: string | null; model: string | null; channel: string | null;
  model_config: Record<string, unknown>; metadata: Record<string, unknown>;
}
/** Where a provider-forked session comes from (`getForkLineage`). */
export interface ForkLineage {
  target_key: string; target_session_id: string; source_key: string;
  source_session_id: string; source_turn_id: string | null; target_turn_id: string | null;
  operation_id: string; forked_at: number;
}
/** A committed fork's child, with where it was forked from. */
export type ForkedSession = Session & { forked_from: ForkLineage; };
/** The one-time provider state binding of a committed fork's child. */
export type ProviderStateBinding = "not_required" | "pending" | "claimed" | "bound";
/** What the provider answered a dispatched fork (`recordForkDisposition`). */
export type Disposition =
  | { disposition: "accepted"; target_provider_session_id?: string | null;
      bind_provider_state?: boolean; }
  | { disposition: "rejected"; error: string; reason?: string | null; }
  | { disposition: "unknown"; error: string; };
/** How `fork` came to return an operation: only a `prepared` one is the caller's to
 * dispatch; `barrier_held` is another request's, to be left as it is. */
export type ForkOrigin = "prepared" | "same_request" | "barrier_held";
/** A provider fork operation: its public `status` and `phase` with the stored record.
 * `error` and `error_reason` of a failed or unknown one are kept verbatim. */
export interface ForkOperation {
  status: ForkStatus; phase: ForkPhase | null; source_turn_id: string | null;
  target_turn_id: string | null; acknowledged: boolean; origin: ForkOrigin | null;
  operation_id: string; request_id: string; request_hash: string; request: ForkRequest;
  state: ForkState; source_key: string; source_session_id: string;
  source_provider: string | null; source_provider_session_id: string | null;
  point: ForkPoint; boundary: TurnPosition | null; snapshot_copied: boolean; target_key: string;
  target_session_id: string; target_context: TargetContext;
  target_provider_session_id: string | null; error: string | null;
  error_reason: string | null; session: ForkedSession | null; lineage: ForkLineage | null;
  provider_state_binding: ProviderStateBinding; acknowledged_at: number | null;
  created_at: number; updated_at: number;
}
/** What the fork calls return: the operation (`ForkOperationView` in the core). */
export type ForkOperationView = ForkOperation;
/** What to send the provider for a fork (`beginForkDispatch`). */
export interface DispatchPayload {
  operation_id: string; source_key: string; source_session_id: string;
  source_provider: string | null; source_provider_session_id: string | null;
  target_key: string; target_session_id: string; point: ForkPoint;
  target_context: TargetContext;
}
/** What to bind, once, before a committed fork's child first runs
 * (`claimForkProviderBinding`). */
export interface ProviderBindingRequest {
  operation_id: string; provider: string | null; source_key: string;
  source_session_id: string; target_key: string; target_session_id: string;
  source_provider_session_id: string | null; target_provider_session_id: string | null;
}
/** What restart recovery did and left to the host (`recoverForkOperations`). */
export interface RecoveryReport {
  marked_unknown: ForkOperation[]; to_dispatch: ForkOperation[]; to_commit: ForkOperation[];
}
/** Which projection `forkProjection` builds. */
export type ProjectionMode = "detail" | "list" | "hydration";
/** What a session's lifecycle allows. */
export interface LifecycleCapabilities { fork: boolean; fork_through_turn: boolean; }
/** The provider's answer to a probe. */
export type ProbeOutcome =
  | { outcome: "capability"; fork: boolean; through_turn: boolean; }
  | { outcome: "forkable"; available: boolean; }
  | { outcome: "rejected"; reason?: string | null; }
  | { outcome: "failed"; error: string; };
/** A probe to ask the provider: session-level when `turn_id` is null. */
export interface ProbeRequest {
  session_key: string; session_id: string; provider: string | null;
  provider_session_id: string | null; turn_id: string | null;
  provider_turn_id: string | null; provider_binding: unknown | null;
}
/** The host's answer to a probe, matched by session key and turn id. */
export interface ProbeAnswer {
  session_key: string; turn_id?: string | null; outcome: ProbeOutcome;
}
/** A turn with whether the provider can fork through it. */
export type ProjectedTurn = Turn & { provider_fork_binding_available: boolean; };
/** One session's fork projection (`lifecycle_capabilities` is null in lists). */
export interface ProjectedSession {
  key: string; session_id: string; forked_from: ForkLineage | null;
  lifecycle_capabilities: LifecycleCapabilities | null;
  latest_turn: ProjectedTurn | null; active_turn: ProjectedTurn | null;
}
/** A fork projection and the probes it still needs. */
export interface Projection { sessions: ProjectedSession[]; probes: ProbeRequest[]; }
/** Which agent wrote a log. */
export type ImportFormat = "claude_code" | "codex" | "spool" | "pi" | "gemini" | "opencode";
/** One transcript entry read from a log. */
export interface ImportedEntry {
  message_id: string; parent_message_id: string | null; role: Role; content: string;
  created_at: number; tool_calls: unknown | null; tool_call_id: string | null;
  turn_usage: TurnUsage | null; tool_status: ToolStatus | null; reasoning: string | null;
  attachments: Attachment[]; kind: EntryKind | null; token_count: number | null;
  turn_id: string | null;
  /** Only the usage of an entry an earlier slice gave (absent: false). */
  usage_only?: boolean;
}
/** The session that spawned a sub-agent's session. */
export interface ImportedSpawn { provider_session_id: string; tool_call_id: string | null; }
/** Where a branch in a log leaves the session it forks. */
export interface ImportedFork { provider_session_id: string; after_message_id: string; }
/** One session read from a log. */
export interface ImportedSession {
  provider_session_id: string; cwd: string | null; model: string | null;
  version: string | null; git_branch: string | null; started_at: number;
  fork_of: ImportedFork | null; spawned_by: ImportedSpawn | null; title: string | null;
  /** For a Spool export: the exported session record, lineage and compactions. */
  exported: unknown | null; entries: ImportedEntry[];
}
/** What `parseImport` read from a log. */
export interface ImportedLog {
  format: ImportFormat; sessions: ImportedSession[]; lines: number;
  skipped: Record<string, number>; invalid_lines: number[]; truncated_tail: number | null;
  attachments: number; attachment_bytes_not_stored: number;
  /** The tool calls that started sub-agents, for sub-agent files parsed after this log. */
  spawn_calls: unknown;
  /** Entries of an earlier slice repeated to carry their usage (a slice-by-slice parse;
   * 0 for a whole log). */
  repeated: number;
}
/** How a planned session joins another: `branch` it from `parent_key` first (sharing
 * the history before `before_message_id`, all of it when null), or import it as a
 * `child` of `parent_key`. */
export type PlannedLink =
  | { kind: "branch"; parent_key: string; before_message_id: string | null; }
  | { kind: "child"; parent_key: string; tool_call_id: string | null; };
/** One session of a log, ready to import (`planImport`). */
export interface PlannedSession {
  key: string; key_note: string | null; link: PlannedLink | null; link_note: string | null;
  slice_ends: number[]; session: ImportedSession;
}
/** What `planImport` returns: the parsed log (its sessions moved to `sessions`) and its
 * sessions in the order to import them. */
export interface ImportPlan { log: ImportedLog; sessions: PlannedSession[]; }
/** What `importSession` writes; `session_id` (the identity if the import creates the
 * session) defaults to `crypto.randomUUID()`. */
export interface ImportRequest {
  key: string; session_id?: string | null; format: ImportFormat; session: ImportedSession;
  parent_key?: string | null;
  /** The prices the entries' usage is estimated at; absent: the built-in table. */
  prices?: PriceTable | null;
}
/** An imported entry that did not fit the limits as it was: written cut (`truncated`,
 * with a marker) or left out (`skipped`). */
export interface AdjustedEntry { message_id: string; action: string; reason: string; }
/** The result of `importSession`. */
export interface ImportOutcome {
  created: boolean; imported: number; already_present: number; usage_updated: number;
  adjusted: AdjustedEntry[];
  sanitized_provider_session_id: string | null; session: Session;
}
/** The price of one model (or of several ids priced alike): US dollars per million
 * tokens, with the day it was read (`YYYY-MM-DD`) and where (a URL). */
export interface ModelPrice {
  models: string[]; input: number; output: number; cache_read: number;
  cache_write: number; date: string; source: string;
}
/** A price table, the shape of the repository's `data/prices.json`. */
export interface PriceTable { about?: string | null; prices: ModelPrice[]; }
/** What `usageReport` counts: entries from `since_ms` on (all when absent), costs
 * estimated at `prices` (the built-in table when absent). */
export interface UsageRequest { since_ms?: number | null; prices?: PriceTable | null; }
/** The usage of a group of responses: a session (its key), a day (`YYYY-MM-DD`, UTC),
 * a model or `total`. Tokens as reported; `cost_usd` an estimate in US dollars;
 * `unpriced` the responses of models without a price (no cost counted). */
export interface UsageRow {
  name: string; responses: number; input_tokens: number; output_tokens: number;
  cache_read: number; cache_write: number; cost_usd: number; unpriced: number;
}
/** The result of `usageReport`: sessions most recently updated first, days oldest
 * first, models by id. */
export interface UsageReport {
  since_ms: number | null; sessions: UsageRow[]; days: UsageRow[]; models: UsageRow[];
  total: UsageRow;
}
/* BEGIN generated from the operation table by tests/ts_table.rs */
/** Any core call as data (`execute`): the shape of the scenario vectors. Nothing is
 * defaulted: `now_ms` and ids are given. */
export type Command =
  | { op: "create_session"; key: string; session_id: string; now_ms: number; }
  | { op: "get_session"; key: string; }
  | { op: "append_entry"; key: string; request: AppendRequest; now_ms: number; }
  | { op: "append_entries"; key: string; requests: AppendRequest[]; now_ms: number; }
  | { op: "begin_entry"; key: string; request: AppendRequest; now_ms: number; }
  | { op: "update_entry"; key: string; update: EntryUpdate; now_ms: number; }
  | { op: "settle_entry"; key: string; update: EntryUpdate; now_ms: number; }
  | { op: "abort_entry"; key: string; update: EntryUpdate; now_ms: number; }
  | { op: "replay_safe"; entries: Entry[]; }
  | { op: "read_page"; key: string; request: PageRequest; }
  | { op: "read_canonical_page"; key: string; request: PageRequest; }
  | { op: "search"; query: string; limit?: number; cursor?: string | null; }
  | { op: "index_backfill"; cursor?: string | null; }
  | { op: "list_sessions"; limit: number; cursor?: string | null; agent_id?: string | null;
      status?: SessionStatus | null; }
  | { op: "get_or_create"; key: string; session_id: string; now_ms: number; }
  | { op: "apply_intent"; key: string; intent: Intent; session_id: string; now_ms: number; }
  | { op: "resume"; key: string; now_ms: number; }
  | { op: "update"; key: string; request: UpdateRequest; now_ms: number; }
  | { op: "finish"; key: string; status: FinishStatus; expected_epoch?: number | null;
      now_ms: number; }
  | { op: "delete_session"; key: string; expected_epoch?: number | null; }
  | { op: "prune_stale"; max_age_ms: number; now_ms: number; }
  | { op: "cap_sessions"; max: number; }
  | { op: "count_entries"; key: string; }
  | { op: "get_entry"; key: string; message_id: string; }
  | { op: "truncate"; key: string; max_messages: number; expected_epoch?: number | null;
      now_ms: number; }
  | { op: "rollback"; key: string; turns: number; expected_epoch?: number | null;
      now_ms: number; }
  | { op: "pop_entry"; key: string; expected_epoch?: number | null; now_ms: number; }
  | { op: "save_state"; key: string; state: NewContextState; expected_epoch?: number | null;
      now_ms: number; }
  | { op: "list_states"; key: string; valid_only?: boolean; }
  | { op: "invalidate_states"; key: string; state_kind?: string | null; reason: string;
      now_ms: number; }
  | { op: "compact"; key: string; request: CompactRequest; now_ms: number; }
  | { op: "prepare_compaction"; key: string; request: CompactRequest; }
  | { op: "commit_compaction"; key: string; commit: CommitRequest; now_ms: number; }
  | { op: "persist_compaction_result"; key: string; persist: PersistRequest;
      now_ms: number; }
  | { op: "list_reset_archives"; key: string; }
  | { op: "canonical_transcript"; key: string; }
  | { op: "list_summaries"; key: string; }
  | { op: "list_degraded_compactions"; agent_id?: string | null; }
  | { op: "compaction_preimage"; key: string; compaction_id: string; }
  | { op: "set_repair_status"; key: string; compaction_id: string; status: string; }
  | { op: "set_flush_receipt"; key: string; compaction_id: string; status: string; }
  | { op: "save_role_session"; role: NewRoleSession; now_ms: number; }
  | { op: "get_role_session"; role_session_id: string; }
  | { op: "update_role_adapter_state"; role_session_id: string; agent_type: string;
      state: AdapterState | null; now_ms: number; }
  | { op: "get_role_adapter_state"; role_session_id: string; agent_type: string; }
  | { op: "record_run"; run: NewRun; now_ms: number; }
  | { op: "list_runs"; filter?: RunFilter; limit: number; cursor?: string | null; }
  | { op: "select_resume"; request: ResumeRequest; }
  | { op: "record_task_outcome"; request: OutcomeRequest; now_ms: number; }
  | { op: "plan_provider_thread"; key: string; agent_type: string;
      dead_thread?: string | null; }
  | { op: "commit_turn"; key: string; turn: TurnCommit; now_ms: number; }
  | { op: "import_session"; request: ImportRequest & { session_id: string; };
      now_ms: number; }
  | { op: "usage_report"; request: UsageRequest; }
  | { op: "branch"; parent_key: string; child_key: string;
      request: BranchRequest & { child_session_id: string; }; now_ms: number; }
  | { op: "edit_message"; key: string; child_key: string; message_id: string;
      request: AppendRequest; child_session_id: string; now_ms: number; }
  | { op: "lineage"; key: string; }
  | { op: "list_children"; key: string; }
  | { op: "start_turn"; key: string; request: NewTurn; now_ms: number; }
  | { op: "settle_turn"; key: string; turn_id: string; close?: CloseTurn; now_ms: number; }
  | { op: "interrupt_turn"; key: string; turn_id: string; close?: CloseTurn;
      now_ms: number; }
  | { op: "get_turn"; key: string; turn_id: string; }
  | { op: "session_turns"; key: string; }
  | { op: "list_turns"; key: string; request?: TurnPageRequest; }
  | { op: "fork"; source_key: string; request: ForkRequest; operation_id: string;
      now_ms: number; }
  | { op: "begin_fork_dispatch"; operation_id: string; now_ms: number; }
  | { op: "record_fork_disposition"; operation_id: string; disposition: Disposition;
      now_ms: number; }
  | { op: "commit_fork"; operation_id: string; now_ms: number; }
  | { op: "get_fork_operation"; operation_id: string; }
  | { op: "acknowledge_fork_operation"; operation_id: string; now_ms: number; }
  | { op: "recover_fork_operations"; now_ms: number; }
  | { op: "claim_fork_provider_binding"; key: string; now_ms: number; }
  | { op: "complete_fork_provider_binding"; operation_id: string; now_ms: number; }
  | { op: "get_fork_lineage"; key: string; }
  | { op: "fork_projection"; keys: string[]; mode: ProjectionMode;
      answers?: ProbeAnswer[]; };
/** The `args` of each table method (`spool.appendEntry(workspace, args)`): the
 * call's `Command` without `op`; what the shell fills in when absent is optional
 * (`now_ms`: `Date.now()`; created ids: `crypto.randomUUID()`). */
export interface CallArgsOf {
  create_session: { key: string; session_id?: string; now_ms?: number; };
  get_session: { key: string; };
  append_entry: { key: string; request: AppendRequest; now_ms?: number; };
  append_entries: { key: string; requests: AppendRequest[]; now_ms?: number; };
  begin_entry: { key: string; request: AppendRequest; now_ms?: number; };
  update_entry: { key: string; update: EntryUpdate; now_ms?: number; };
  settle_entry: { key: string; update: EntryUpdate; now_ms?: number; };
  abort_entry: { key: string; update: EntryUpdate; now_ms?: number; };
  replay_safe: { entries: Entry[]; };
  read_page: { key: string; request: PageRequest; };
  read_canonical_page: { key: string; request: PageRequest; };
  search: { query: string; limit?: number; cursor?: string | null; };
  index_backfill: { cursor?: string | null; };
  list_sessions: { limit: number; cursor?: string | null; agent_id?: string | null;
    status?: SessionStatus | null; };
  get_or_create: { key: string; session_id?: string; now_ms?: number; };
  apply_intent: { key: string; intent: Intent; session_id?: string; now_ms?: number; };
  resume: { key: string; now_ms?: number; };
  update: { key: string; request: UpdateRequest; now_ms?: number; };
  finish: { key: string; status: FinishStatus; expected_epoch?: number | null;
    now_ms?: number; };
  delete_session: { key: string; expected_epoch?: number | null; };
  prune_stale: { max_age_ms: number; now_ms?: number; };
  cap_sessions: { max: number; };
  count_entries: { key: string; };
  get_entry: { key: string; message_id: string; };
  truncate: { key: string; max_messages: number; expected_epoch?: number | null;
    now_ms?: number; };
  rollback: { key: string; turns: number; expected_epoch?: number | null;
    now_ms?: number; };
  pop_entry: { key: string; expected_epoch?: number | null; now_ms?: number; };
  save_state: { key: string; state: NewContextState; expected_epoch?: number | null;
    now_ms?: number; };
  list_states: { key: string; valid_only?: boolean; };
  invalidate_states: { key: string; state_kind?: string | null; reason: string;
    now_ms?: number; };
  compact: { key: string; request: CompactRequest; now_ms?: number; };
  prepare_compaction: { key: string; request: CompactRequest; };
  commit_compaction: { key: string; commit: CommitRequest; now_ms?: number; };
  persist_compaction_result: { key: string; persist: PersistRequest; now_ms?: number; };
  list_reset_archives: { key: string; };
  canonical_transcript: { key: string; };
  list_summaries: { key: string; };
  list_degraded_compactions: { agent_id?: string | null; };
  compaction_preimage: { key: string; compaction_id: string; };
  set_repair_status: { key: string; compaction_id: string; status: string; };
  set_flush_receipt: { key: string; compaction_id: string; status: string; };
  save_role_session: { role: NewRoleSession; now_ms?: number; };
  get_role_session: { role_session_id: string; };
  update_role_adapter_state: { role_session_id: string; agent_type: string;
    state: AdapterState | null; now_ms?: number; };
  get_role_adapter_state: { role_session_id: string; agent_type: string; };
  record_run: { run: NewRun; now_ms?: number; };
  list_runs: { filter?: RunFilter; limit: number; cursor?: string | null; };
  select_resume: { request: ResumeRequest; };
  record_task_outcome: { request: OutcomeRequest; now_ms?: number; };
  plan_provider_thread: { key: string; agent_type: string; dead_thread?: string | null; };
  commit_turn: { key: string; turn: TurnCommit; now_ms?: number; };
  import_session: { request?: ImportRequest; now_ms?: number; };
  usage_report: { request: UsageRequest; };
  branch: { parent_key: string; child_key: string; request?: BranchRequest;
    now_ms?: number; };
  edit_message: { key: string; child_key: string; message_id: string;
    request: AppendRequest; child_session_id?: string; now_ms?: number; };
  lineage: { key: string; };
  list_children: { key: string; };
  start_turn: { key: string; request: NewTurn; now_ms?: number; };
  settle_turn: { key: string; turn_id: string; close?: CloseTurn; now_ms?: number; };
  interrupt_turn: { key: string; turn_id: string; close?: CloseTurn; now_ms?: number; };
  get_turn: { key: string; turn_id: string; };
  session_turns: { key: string; };
  list_turns: { key: string; request?: TurnPageRequest; };
  fork: { source_key: string; request: ForkRequest; operation_id?: string;
    now_ms?: number; };
  begin_fork_dispatch: { operation_id: string; now_ms?: number; };
  record_fork_disposition: { operation_id: string; disposition: Disposition;
    now_ms?: number; };
  commit_fork: { operation_id: string; now_ms?: number; };
  get_fork_operation: { operation_id: string; };
  acknowledge_fork_operation: { operation_id: string; now_ms?: number; };
  recover_fork_operations: { now_ms?: number; };
  claim_fork_provider_binding: { key: string; now_ms?: number; };
  complete_fork_provider_binding: { operation_id: string; now_ms?: number; };
  get_fork_lineage: { key: string; };
  fork_projection: { keys: string[]; mode: ProjectionMode; answers?: ProbeAnswer[]; };
}
/** The arguments of the call `Op`. */
export type CallArgs<Op extends Command["op"]> = CallArgsOf[Op];
/** What each call resolves to. */
export interface CallResults {
  create_session: Session;
  get_session: Session | null;
  append_entry: Entry;
  append_entries: Entry[];
  begin_entry: Entry;
  update_entry: Entry;
  settle_entry: Entry;
  abort_entry: Entry;
  replay_safe: Entry[];
  read_page: Page;
  read_canonical_page: Page;
  search: SearchPage;
  index_backfill: IndexProgress;
  list_sessions: SessionList;
  get_or_create: IntentOutcome;
  apply_intent: IntentOutcome;
  resume: Session;
  update: Session;
  finish: Session;
  delete_session: void;
  prune_stale: number;
  cap_sessions: number;
  count_entries: number;
  get_entry: Entry | null;
  truncate: TruncateOutcome;
  rollback: TruncateOutcome;
  pop_entry: Entry | null;
  save_state: ContextState;
  list_states: ContextState[];
  invalidate_states: number;
  compact: CompactionResult;
  prepare_compaction: Prepared;
  commit_compaction: CompactionResult;
  persist_compaction_result: CompactionResult;
  list_reset_archives: ArchivedReset[];
  canonical_transcript: Entry[];
  list_summaries: Summary[];
  list_degraded_compactions: Summary[];
  compaction_preimage: Entry[];
  set_repair_status: Summary;
  set_flush_receipt: Summary;
  save_role_session: RoleSession;
  get_role_session: RoleSession | null;
  update_role_adapter_state: boolean;
  get_role_adapter_state: AdapterState | null;
  record_run: RunRecord;
  list_runs: RunList;
  select_resume: ResumeDecision;
  record_task_outcome: TaskOutcomeEffects;
  plan_provider_thread: ThreadPlan;
  commit_turn: TurnCommitted;
  import_session: ImportOutcome;
  usage_report: UsageReport;
  branch: BranchInfo;
  edit_message: BranchInfo;
  lineage: LineageView;
  list_children: BranchInfo[];
  start_turn: Turn;
  settle_turn: Turn;
  interrupt_turn: Turn;
  get_turn: Turn | null;
  session_turns: TurnSummary;
  list_turns: TurnPage;
  fork: ForkOperationView;
  begin_fork_dispatch: DispatchPayload;
  record_fork_disposition: ForkOperationView;
  commit_fork: ForkOperationView;
  get_fork_operation: ForkOperationView;
  acknowledge_fork_operation: ForkOperationView;
  recover_fork_operations: RecoveryReport;
  claim_fork_provider_binding: ProviderBindingRequest | null;
  complete_fork_provider_binding: ForkOperationView;
  get_fork_lineage: ForkLineage | null;
  fork_projection: Projection;
}
/** What the call `Op` resolves to. */
export type CallResult<Op extends Command["op"]> = CallResults[Op];
/** The table methods of `Spool`, one per call: `args` is the call's `CallArgs`
 * (those of the optional features are declared with them, below). */
export interface Spool {
  /** Creates a session under `key`; a key in use is a `conflict`. */
  createSession(workspace: string, args: CallArgs<"create_session">): Promise<Session>;
  /** The session under `key`, or `None`. */
  getSession(workspace: string, args: CallArgs<"get_session">): Promise<Session | null>;
  /** Appends one entry to the session under `key`. */
  appendEntry(workspace: string, args: CallArgs<"append_entry">): Promise<Entry>;
  /** Appends entries, in order, to the session under `key` in one commit. */
  appendEntries(workspace: string, args: CallArgs<"append_entries">): Promise<Entry[]>;
  /** Appends an entry in progress (`spool::streaming`): its writer updates it as
   * the answer streams in, then settles or aborts it.
   */
  beginEntry(workspace: string, args: CallArgs<"begin_entry">): Promise<Entry>;
  /** Replaces what an entry in progress holds so far. */
  updateEntry(workspace: string, args: CallArgs<"update_entry">): Promise<Entry>;
  /** Completes an entry in progress, with its final snapshot and usage. */
  settleEntry(workspace: string, args: CallArgs<"settle_entry">): Promise<Entry>;
  /** Stops an entry in progress: `incomplete`, keeping what arrived. */
  abortEntry(workspace: string, args: CallArgs<"abort_entry">): Promise<Entry>;
  /** What of `entries` (a transcript, in order) a model provider can be sent:
   * an answer that did not complete keeps what arrived, each of its tool calls
   * without a result closed by a cancelled one; an empty stopped answer left
   * out (`spool::replay_safe`). Reads and writes nothing.
   */
  replaySafe(workspace: string, args: CallArgs<"replay_safe">): Promise<Entry[]>;
  /** One page of the session's transcript. */
  readPage(workspace: string, args: CallArgs<"read_page">): Promise<Page>;
  /** One page of the session's canonical transcript (archived entries too). */
  readCanonicalPage(workspace: string, args: CallArgs<"read_canonical_page">):
    Promise<Page>;
  /** Full-text search of the workspace's transcripts: one page of hits, best
   * first (`limit` 1 to 100, 20 when absent; `cursor` the previous page's
   * `next_cursor`). The query language: `spool::search::query`.
   */
  search(workspace: string, args: CallArgs<"search">): Promise<SearchPage>;
  /** Indexes one run of history written before the search index (the first
   * session from `cursor` that needs one); call again with `next_cursor`
   * until it is `None` (`spool::search::backfill`).
   */
  indexBackfill(workspace: string, args?: CallArgs<"index_backfill">):
    Promise<IndexProgress>;
  /** Sessions, most recently updated first, `limit` at a time, only those of
   * `agent_id` and/or in `status` when given.
   */
  listSessions(workspace: string, args: CallArgs<"list_sessions">): Promise<SessionList>;
  /** The session under `key`, created when missing (`created` says which). */
  getOrCreate(workspace: string, args: CallArgs<"get_or_create">): Promise<IntentOutcome>;
  /** Applies an intent (continue, new chat, reset under the same key). */
  applyIntent(workspace: string, args: CallArgs<"apply_intent">): Promise<IntentOutcome>;
  /** Marks the session as in use now. */
  resume(workspace: string, args: CallArgs<"resume">): Promise<Session>;
  /** Changes the session's model, channel, model config and metadata. */
  update(workspace: string, args: CallArgs<"update">): Promise<Session>;
  /** Ends the session with `status`. */
  finish(workspace: string, args: CallArgs<"finish">): Promise<Session>;
  /** Deletes the session and everything it owns. */
  deleteSession(workspace: string, args: CallArgs<"delete_session">): Promise<void>;
  /** Deletes every session idle for more than `max_age_ms`; returns how many. */
  pruneStale(workspace: string, args: CallArgs<"prune_stale">): Promise<number>;
  /** Keeps the `max` most recently updated sessions; returns how many went. */
  capSessions(workspace: string, args: CallArgs<"cap_sessions">): Promise<number>;
  /** The number of entries in the session's transcript. */
  countEntries(workspace: string, args: CallArgs<"count_entries">): Promise<number>;
  /** The entry with `message_id`, or `None`. */
  getEntry(workspace: string, args: CallArgs<"get_entry">): Promise<Entry | null>;
  /** Keeps the newest `max_messages` entries. */
  truncate(workspace: string, args: CallArgs<"truncate">): Promise<TruncateOutcome>;
  /** Drops the last `turns` turns of the session: every entry from the first
   * user message of the earliest dropped turn on.
   */
  rollback(workspace: string, args: CallArgs<"rollback">): Promise<TruncateOutcome>;
  /** Removes the session's newest entry in one commit and returns it (`None`
   * when it has none).
   */
  popEntry(workspace: string, args: CallArgs<"pop_entry">): Promise<Entry | null>;
  /** The recorded reset archives of the session's key. */
  listResetArchives(workspace: string, args: CallArgs<"list_reset_archives">):
    Promise<ArchivedReset[]>;
  /** Every entry of the session as ever written, compacted ones included. */
  canonicalTranscript(workspace: string, args: CallArgs<"canonical_transcript">):
    Promise<Entry[]>;
  /** The session's compaction summaries. */
  listSummaries(workspace: string, args: CallArgs<"list_summaries">): Promise<Summary[]>;
  /** The session's ancestry and what it inherits. */
  lineage(workspace: string, args: CallArgs<"lineage">): Promise<LineageView>;
  /** The branches made from the session. */
  listChildren(workspace: string, args: CallArgs<"list_children">): Promise<BranchInfo[]>;
}
/* END generated from the operation table */
/** One call of the operation table, as `spoolCalls()` lists it: its name, its method's
 * name, its doc and its fields (`optional`: the core defaults it or the shell fills it). */
export interface SpoolCall {
  name: Command["op"]; js_name: string; doc: string;
  fields: { name: string; type: string; optional: boolean }[];
}
/** Options of `compactWith`: `nowMs` defaults to `Date.now()`. */
export interface TimeOptions { nowMs?: number; }
/** Options of `archiveSession`: `nowMs` defaults to `Date.now()`; with `expectedEpoch` the
 * call rejects with `stale_epoch` unless the session is at that epoch. */
export interface FenceOptions { nowMs?: number; expectedEpoch?: number; }
/** What `onProgress` is called with while a long call runs: `done` of `total` entries
 * of its `phase` (`total` 0: not known). */
export interface Progress {
  workspace: string; phase: "compact: plan" | "compact: read" | "reset: archive";
  done: number; total: number;
}
"#;

/// The methods of the calls of the feature `resume` (generated by `tests/ts_table.rs`).
#[cfg(feature = "resume")]
#[wasm_bindgen(typescript_custom_section)]
const RESUME_CALLS: &'static str = r#"
/* BEGIN the methods of feature "resume", generated by tests/ts_table.rs */
/** The table methods of the feature `resume`. */
export interface Spool {
  /** Creates or replaces a role session. */
  saveRoleSession(workspace: string, args: CallArgs<"save_role_session">):
    Promise<RoleSession>;
  /** The role session, or `None`. */
  getRoleSession(workspace: string, args: CallArgs<"get_role_session">):
    Promise<RoleSession | null>;
  /** Sets (or, with `None`, clears) an agent type's adapter state. */
  updateRoleAdapterState(workspace: string, args: CallArgs<"update_role_adapter_state">):
    Promise<boolean>;
  /** An agent type's adapter state, or `None`. */
  getRoleAdapterState(workspace: string, args: CallArgs<"get_role_adapter_state">):
    Promise<AdapterState | null>;
  /** Records one run of an external agent. */
  recordRun(workspace: string, args: CallArgs<"record_run">): Promise<RunRecord>;
  /** Runs passing `filter`, newest first, `limit` at a time. */
  listRuns(workspace: string, args: CallArgs<"list_runs">): Promise<RunList>;
  /** Which thread an external agent CLI resumes, if any. */
  selectResume(workspace: string, args: CallArgs<"select_resume">): Promise<ResumeDecision>;
  /** Records what a task left behind and what that invalidates. */
  recordTaskOutcome(workspace: string, args: CallArgs<"record_task_outcome">):
    Promise<TaskOutcomeEffects>;
}
/* END the methods of feature "resume" */
"#;

/// The methods of the calls of the feature `import` (generated by `tests/ts_table.rs`).
#[cfg(feature = "import")]
#[wasm_bindgen(typescript_custom_section)]
const IMPORT_CALLS: &'static str = r#"
/* BEGIN the methods of feature "import", generated by tests/ts_table.rs */
/** The table methods of the feature `import`. */
export interface Spool {
  /** Writes a parsed transcript as a new session. */
  importSession(workspace: string, args?: CallArgs<"import_session">):
    Promise<ImportOutcome>;
}
/* END the methods of feature "import" */
"#;

/// The methods of the calls of the feature `provider-fork` (generated by `tests/ts_table.rs`).
#[cfg(feature = "provider-fork")]
#[wasm_bindgen(typescript_custom_section)]
const PROVIDER_FORK_CALLS: &'static str = r#"
/* BEGIN the methods of feature "provider-fork", generated by tests/ts_table.rs */
/** The table methods of the feature `provider-fork`. */
export interface Spool {
  /** Starts (or finds again) a provider fork of `source_key`. */
  fork(workspace: string, args: CallArgs<"fork">): Promise<ForkOperationView>;
  /** Marks the fork as being dispatched; returns what to send the provider. */
  beginForkDispatch(workspace: string, args: CallArgs<"begin_fork_dispatch">):
    Promise<DispatchPayload>;
  /** Records the provider's answer. */
  recordForkDisposition(workspace: string, args: CallArgs<"record_fork_disposition">):
    Promise<ForkOperationView>;
  /** Writes the fork's child session. */
  commitFork(workspace: string, args: CallArgs<"commit_fork">): Promise<ForkOperationView>;
  /** The fork operation. */
  getForkOperation(workspace: string, args: CallArgs<"get_fork_operation">):
    Promise<ForkOperationView>;
  /** Acknowledges a finished fork operation. */
  acknowledgeForkOperation(workspace: string, args: CallArgs<"acknowledge_fork_operation">):
    Promise<ForkOperationView>;
  /** Moves every interrupted fork operation on. */
  recoverForkOperations(workspace: string, args?: CallArgs<"recover_fork_operations">):
    Promise<RecoveryReport>;
  /** Claims the provider binding a fork child still needs, if any. */
  claimForkProviderBinding(workspace: string, args: CallArgs<"claim_fork_provider_binding">):
    Promise<ProviderBindingRequest | null>;
  /** Records that the fork child's provider binding is done. */
  completeForkProviderBinding(workspace: string, args: CallArgs<"complete_fork_provider_binding">):
    Promise<ForkOperationView>;
  /** Where a fork child came from, or `None`. */
  getForkLineage(workspace: string, args: CallArgs<"get_fork_lineage">):
    Promise<ForkLineage | null>;
  /** What sessions look like to a provider that forks them. */
  forkProjection(workspace: string, args: CallArgs<"fork_projection">): Promise<Projection>;
}
/* END the methods of feature "provider-fork" */
"#;

/// The methods of the calls of the feature `states` (generated by `tests/ts_table.rs`).
#[cfg(feature = "states")]
#[wasm_bindgen(typescript_custom_section)]
const STATES_CALLS: &'static str = r#"
/* BEGIN the methods of feature "states", generated by tests/ts_table.rs */
/** The table methods of the feature `states`. */
export interface Spool {
  /** Saves a provider context state. */
  saveState(workspace: string, args: CallArgs<"save_state">): Promise<ContextState>;
  /** The session's context states (only valid ones unless `valid_only` is false). */
  listStates(workspace: string, args: CallArgs<"list_states">): Promise<ContextState[]>;
  /** Marks the session's states (of `state_kind`, or all) invalid for `reason`. */
  invalidateStates(workspace: string, args: CallArgs<"invalidate_states">): Promise<number>;
}
/* END the methods of feature "states" */
"#;

/// The methods of the calls of the feature `compaction` (generated by `tests/ts_table.rs`).
#[cfg(feature = "compaction")]
#[wasm_bindgen(typescript_custom_section)]
const COMPACTION_CALLS: &'static str = r#"
/* BEGIN the methods of feature "compaction", generated by tests/ts_table.rs */
/** The table methods of the feature `compaction`. */
export interface Spool {
  /** Compacts the session with the built-in summarizer. */
  compact(workspace: string, args: CallArgs<"compact">): Promise<CompactionResult>;
  /** Plans a compaction and returns what a summarizer needs. */
  prepareCompaction(workspace: string, args: CallArgs<"prepare_compaction">):
    Promise<Prepared>;
  /** Commits a prepared compaction with a summary. */
  commitCompaction(workspace: string, args: CallArgs<"commit_compaction">):
    Promise<CompactionResult>;
  /** Stores a compaction an external agent performed. */
  persistCompactionResult(workspace: string, args: CallArgs<"persist_compaction_result">):
    Promise<CompactionResult>;
  /** Compactions whose coverage check failed (of `agent_id`'s sessions, or all). */
  listDegradedCompactions(workspace: string, args?: CallArgs<"list_degraded_compactions">):
    Promise<Summary[]>;
  /** The entries a compaction replaced. */
  compactionPreimage(workspace: string, args: CallArgs<"compaction_preimage">):
    Promise<Entry[]>;
  /** Records the repair status of a degraded compaction. */
  setRepairStatus(workspace: string, args: CallArgs<"set_repair_status">): Promise<Summary>;
  /** Records the flush receipt of a compaction. */
  setFlushReceipt(workspace: string, args: CallArgs<"set_flush_receipt">): Promise<Summary>;
}
/* END the methods of feature "compaction" */
"#;

/// The methods of the calls of the feature `turns` (generated by `tests/ts_table.rs`).
#[cfg(feature = "turns")]
#[wasm_bindgen(typescript_custom_section)]
const TURNS_CALLS: &'static str = r#"
/* BEGIN the methods of feature "turns", generated by tests/ts_table.rs */
/** The table methods of the feature `turns`. */
export interface Spool {
  /** The provider thread the next turn of `agent_type` continues. */
  planProviderThread(workspace: string, args: CallArgs<"plan_provider_thread">):
    Promise<ThreadPlan>;
  /** Commits one provider turn: its entries, usage and thread binding. */
  commitTurn(workspace: string, args: CallArgs<"commit_turn">): Promise<TurnCommitted>;
  /** Starts a turn. */
  startTurn(workspace: string, args: CallArgs<"start_turn">): Promise<Turn>;
  /** Settles a running turn. */
  settleTurn(workspace: string, args: CallArgs<"settle_turn">): Promise<Turn>;
  /** Interrupts a running turn. */
  interruptTurn(workspace: string, args: CallArgs<"interrupt_turn">): Promise<Turn>;
  /** The turn, or `None`. */
  getTurn(workspace: string, args: CallArgs<"get_turn">): Promise<Turn | null>;
  /** The session's turns. */
  sessionTurns(workspace: string, args: CallArgs<"session_turns">): Promise<TurnSummary>;
  /** One page of the session's turns. */
  listTurns(workspace: string, args: CallArgs<"list_turns">): Promise<TurnPage>;
}
/* END the methods of feature "turns" */
"#;

/// The methods of the calls of the feature `usage` (generated by `tests/ts_table.rs`).
#[cfg(feature = "usage")]
#[wasm_bindgen(typescript_custom_section)]
const USAGE_CALLS: &'static str = r#"
/* BEGIN the methods of feature "usage", generated by tests/ts_table.rs */
/** The table methods of the feature `usage`. */
export interface Spool {
  /** The tokens and estimated cost of the workspace's sessions by session, day
   * and model (`spool::usage::usage_report`). Reads and writes nothing else.
   */
  usageReport(workspace: string, args: CallArgs<"usage_report">): Promise<UsageReport>;
}
/* END the methods of feature "usage" */
"#;

/// The methods of the calls of the feature `branch` (generated by `tests/ts_table.rs`).
#[cfg(feature = "branch")]
#[wasm_bindgen(typescript_custom_section)]
const BRANCH_CALLS: &'static str = r#"
/* BEGIN the methods of feature "branch", generated by tests/ts_table.rs */
/** The table methods of the feature `branch`. */
export interface Spool {
  /** Branches `child_key` off `parent_key`. */
  branch(workspace: string, args: CallArgs<"branch">): Promise<BranchInfo>;
  /** Edits a message by branching: `child_key` gets the history of `key`
   * before `message_id` and then `request`, in one commit.
   */
  editMessage(workspace: string, args: CallArgs<"edit_message">): Promise<BranchInfo>;
}
/* END the methods of feature "branch" */
"#;
