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

/** A session, addressed by its key. Times are ms since the Unix epoch. */
export interface Session {
  key: string; session_id: string; agent_id: string | null; status: SessionStatus;
  epoch: number; created_at: number; updated_at: number; entry_count: number;
  last_entry_id: number; total_tokens: number;
}
/** One transcript message. */
export interface Entry {
  id: number; message_id: string; role: Role; content: string; created_at: number;
  token_count: number | null; tool_calls: unknown | null; tool_call_id: string | null;
  turn_id: string | null;
}
/** What `appendEntry` appends. */
export interface AppendRequest {
  role: Role; content: string; token_count?: number | null; message_id?: string | null;
  tool_calls?: unknown; tool_call_id?: string | null; turn_id?: string | null;
  expected_epoch?: number | null;
}
/** Which transcript page `readPage` reads. */
export interface PageRequest {
  order?: "oldest_first" | "newest_first"; cursor?: string | null; limit: number;
}
/** A transcript page; `next_cursor` is null on the last page. */
export interface Page { entries: Entry[]; next_cursor: string | null; }
/** A page of sessions, most recently updated first. */
export interface SessionList { sessions: Session[]; next_cursor: string | null; }
/** Options of `createSession`: defaults are `crypto.randomUUID()` and `Date.now()`. */
export interface CreateOptions { sessionId?: string; nowMs?: number; }
/** Options of `appendEntry`: `nowMs` defaults to `Date.now()`. */
export interface AppendOptions { nowMs?: number; }
"#;
