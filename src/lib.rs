//! # Spool core
//!
//! A pure, sans-IO session engine for AI coding agents. Every operation (create a
//! session, append an entry, read a page, …) is an [`Operation`]: a state machine that
//! asks for storage reads, takes their results, emits at most one atomic commit per
//! attempt and finishes with an outcome. The core never performs I/O, never reads a
//! clock and never draws randomness: time (`now_ms`) and fresh ids are arguments.
//!
//! **Drain contract: call [`Operation::poll`]; answer each [`Step::Read`] with
//! [`Operation::handle_read`], each [`Step::Commit`] with [`Operation::handle_commit`]
//! and each [`Step::Archive`] (a part of a reset's archive) with
//! [`Operation::handle_archive`], exactly once and in order; call `poll` again after
//! every answer, until it returns [`Step::Done`].** [`run`] (sync) and [`run_async`]
//! (async) are that loop, with an [`Archiver`] for the archive parts
//! ([`run_with`]).
//!
//! ```
//! use spool::{AppendRequest, MemoryStorage, Role, run};
//!
//! let storage = MemoryStorage::new();
//! run(&storage, spool::create_session("default", "agent:main:main", "s1", 1_000))?;
//! let entry = run(
//!     &storage,
//!     spool::append_entry("default", "agent:main:main", AppendRequest::new(Role::User, "hi"), 1_001),
//! )?;
//! assert_eq!(entry.id, 1);
//! # Ok::<(), spool::Error>(())
//! ```
//!
//! Hosts supply a [`Storage`] (or [`AsyncStorage`]): an ordered byte key space per
//! workspace with `get`, `range` and an all-or-nothing `commit` with preconditions. The
//! core owns the key layout ([`keys`]), the versioned record encoding ([`record`]) and
//! every index.
// The core has no unsafe code; only the generated component bindings need it, and the
// workspace lint denies it everywhere else (`engine/component.rs` opts out explicitly).
#![cfg_attr(
    not(all(feature = "component", target_arch = "wasm32")),
    forbid(unsafe_code)
)]

/// Returns, from a function that builds an [`Operation`], the operation that fails at
/// once with the error of `$checked` (bad input found before any read).
macro_rules! check {
    ($workspace:expr, $checked:expr) => {
        if let Err(e) = $checked {
            return $crate::engine::op::Operation::failed($workspace, e);
        }
    };
}

mod branch;
pub mod compaction;
mod engine;
pub mod export;
pub mod import;
mod order;
pub mod provider_fork;
pub mod provider_thread;
pub mod resume;
pub mod search;
mod session;
mod storage;
pub mod streaming;
mod transcript;
pub mod turns;
mod types;
pub mod usage;

pub use engine::{ops, validate, wit_map};
pub use storage::{keys, record};

pub use branch::{branch, edit_message, lineage, list_children};
pub use engine::error::{Error, ErrorCode};
pub use engine::op::{
    ArchiveInProgress, ArchivePart, ArchiveWriter, Archiver, MAX_ATTEMPTS, NoArchive, Operation,
    ReadRequest, ReadResult, Step, read_sync, run, run_async, run_with,
};
pub use ops::{Command, Op, execute, execute_with};
pub use provider_fork::{
    acknowledge_fork_operation, begin_fork_dispatch, claim_fork_provider_binding, commit_fork,
    complete_fork_provider_binding, fork, get_fork_lineage, get_fork_operation,
    record_fork_disposition, recover_fork_operations,
};
pub use provider_thread::{
    ThreadBinding, ThreadPlan, TurnCommit, TurnCommitted, commit_turn, plan_provider_thread,
};
pub use resume::{
    NewRoleSession, NewRun, OutcomeRequest, ResumeRequest, RoleSession, RunFilter, RunList,
    get_role_adapter_state, get_role_session, list_runs, record_run, record_task_outcome,
    save_role_session, select_resume, update_role_adapter_state,
};
pub use search::backfill::{IndexProgress, index_backfill};
pub use search::{SearchHit, SearchPage, SearchRequest, Snippet, search};
pub use session::lifecycle::{
    apply_intent, cap_sessions, delete_session, finish, get_or_create, list_reset_archives,
    prune_stale, resume, update,
};
pub use session::states::{invalidate_states, list_states, save_state};
pub use session::{
    agent_id, create_session, get_session, list_sessions, list_sessions_where, session_data_id,
};
pub use storage::memory::MemoryStorage;
pub use storage::{
    AsyncStorage, Batch, KeyRange, Kv, MAX_BATCH_BYTES, MAX_BATCH_MUTATIONS, Mutation,
    Precondition, Progress, RangeQuery, Storage, StorageError, SyncAdapter, prefix_end,
};
pub use streaming::{
    EntryUpdate, abort_entry, begin_entry, replay_safe, settle_entry, update_entry,
};
pub use transcript::{
    MAX_APPEND_ENTRIES, append_entries, append_entry, count_entries, get_entry, pop_entry,
    read_canonical_page, read_page, rollback, truncate,
};
pub use turns::{get_turn, interrupt_turn, list_turns, session_turns, settle_turn, start_turn};
pub use types::{
    AppendRequest, ArchiveStatus, ArchivedReset, Attachment, BranchInfo, BranchLineage,
    BranchRequest, ContextState, Entry, EntryKind, EntryStatus, FinishStatus, ForkPoint, Intent,
    IntentOutcome, LineageView, ListFilter, NewContextState, Order, Page, PageRequest,
    ResetArchive, Role, Session, SessionList, SessionStatus, ToolStatus, TruncateOutcome,
    TurnUsage, UpdateRequest,
};
pub use validate::{MAX_KEY_BYTES, MAX_PAGE};
