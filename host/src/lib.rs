//! # Spool host
//!
//! The native host of Spool: it runs the Spool WebAssembly component (embedded in this
//! crate, see [`COMPONENT`]) on wasmtime, serves its storage imports from SQLite and
//! keeps the archives of reset sessions as private JSON files ([`ArchiveDir`]).
//! The session rules all live in the component; this crate is the shell around it.
//!
//! - [`Spool`]: the friendly API — one workspace of one database, with the clock and
//!   session ids supplied for you.
//! - [`Instance`]: exactly the component's WIT `api`, with core types and explicit
//!   workspace, time and ids. [`Runtime`] compiles (and caches on disk) the component.
//! - [`SqliteStorage`]: the storage contract on SQLite, usable on its own.
//! - [`PostgresStorage`]: the storage contract on a PostgreSQL server (also behind
//!   PgBouncer in transaction pooling mode), usable on its own.
//! - [`ArchiveDir`]: the reset-archive store (a [`spool::Archiver`]), usable on its own.
//! - [`ForkProvider`]: the agent's provider as the host calls it in a provider fork
//!   ([`Spool::run_fork`]); [`TestProvider`] and [`CommandProvider`] are ready-made.
//! - [`CommandSummarizer`]: a shell command as the summarizer of
//!   [`Spool::compact_with`], with a timeout.
//!
//! ```
//! use spool::{AppendRequest, Role};
//! use spool_host::Spool;
//!
//! let mut spool = Spool::builder().open()?; // in-memory database
//! spool.create_session("agent:main:main")?;
//! let mut reply = AppendRequest::new(Role::Assistant, "All tests pass now.");
//! reply.token_count = Some(12);
//! spool.append_entry("agent:main:main", reply)?;
//! let session = spool.get_session("agent:main:main")?.expect("just created");
//! assert_eq!((session.entry_count, session.total_tokens), (1, 12));
//!
//! let err = spool.create_session("agent:main:main").unwrap_err();
//! assert_eq!(err.code(), "conflict");
//! # Ok::<(), spool_host::Error>(())
//! ```
//!
//! A whole agent session on a database file: compact it with your own summarizer (any
//! LLM), branch it, and pick which provider thread the next task resumes.
//!
//! ```
//! use spool::compaction::{CompactRequest, Prepared};
//! use spool::resume::rules::TaskOutcome;
//! use spool::{AppendRequest, OutcomeRequest, ResumeRequest, Role};
//! use spool_host::{BranchOptions, Spool};
//!
//! let dir = tempfile::tempdir()?;
//! let mut spool = Spool::builder()
//!     .db_path(dir.path().join("spool.db"))
//!     .clock(|| 1_700_000_000_000) // fixed time and ids make tests reproducible
//!     .ids({ let mut n = 0; move || { n += 1; format!("id-{n}") } })
//!     .open()?;
//! spool.create_session("agent:main:main")?;
//! for (i, text) in ["Goal: fix the failing test in src/lib.rs", "Exit code 101", "fixed"]
//!     .into_iter()
//!     .enumerate()
//! {
//!     let mut entry = AppendRequest::new(Role::User, text);
//!     entry.token_count = Some(400);
//!     entry.message_id = Some(format!("m-{i}"));
//!     spool.append_entry("agent:main:main", entry)?;
//! }
//!
//! // Compact with a custom summarizer: it sees the text and the obligations to keep.
//! let request = CompactRequest {
//!     context_window_tokens: 1_000,
//!     config: Default::default(),
//!     compaction_id: None,
//!     trigger_reason: None,
//!     flush_receipt_status: None,
//! };
//! let summarize = |p: &Prepared| -> Result<String, std::convert::Infallible> {
//!     Ok(p.obligations.iter().map(|o| o.text.as_str()).collect::<Vec<_>>().join("\n"))
//! };
//! let compacted = spool.compact_with("agent:main:main", request, summarize)?;
//! assert!(compacted.removed_count > 0 && compacted.coverage_status.starts_with("pass"));
//!
//! // Branch before the second message: the child shares the first one.
//! let retry = spool.branch("agent:main:main", "agent:main:retry", BranchOptions::before("m-1"))?;
//! assert_eq!(retry.session.entry_count, 1);
//!
//! // Record a finished run of an external agent, then select what the next task resumes.
//! spool.record_task_outcome(OutcomeRequest {
//!     role_session_id: None,
//!     project_id: "p1".into(),
//!     outcome: TaskOutcome {
//!         agent_type: "codex".into(),
//!         task_id: "t1".into(),
//!         status: "done".into(),
//!         token: Some("thread-abc".into()),
//!         resumed_from: None,
//!         from_stream: false,
//!     },
//!     workspace_path: None,
//!     run_mode: None,
//!     metadata: Default::default(),
//!     surviving_agents: None,
//! })?;
//! let decision = spool.select_resume(ResumeRequest {
//!     agent_type: "codex".into(),
//!     role_session_id: None,
//!     project_id: Some("p1".into()),
//!     scope_id: None,
//!     preconfigured: None,
//!     surviving_agents: None,
//! })?;
//! assert_eq!((decision.mode.as_str(), decision.session_id.as_str()), ("resume", "thread-abc"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`SpoolBuilder`] sets the database, the archive directory, the workspace, the
//! clock and id sources, and the [`ResourceLimits`] of the component instance: a call
//! over the memory or execution (fuel) limit fails with [`Error::ResourceLimit`]
//! (code `resource_limit`), writes nothing, and the next call works.

mod client;
mod command;
mod error;
mod provider;
mod runtime;
mod slices;
mod storage;

pub use client::{
    Arg, BranchOptions, DEFAULT_WORKSPACE, Pages, Spool, SpoolBuilder, Transcript, random_id,
    system_clock, uuid_text,
};
pub use command::CommandSummarizer;
pub use error::{CompactWithError, Error};
pub use provider::{CommandProvider, ForkProvider, TestProvider};
pub use runtime::cache::{CacheStatus, default_cache_dir};
pub use runtime::wit::{Call, ProgressSink};
pub use runtime::{
    DEFAULT_FUEL_LIMIT, DEFAULT_FUEL_PER_BYTE_READ, DEFAULT_MAX_FUEL_PER_CALL,
    DEFAULT_MEMORY_LIMIT, Instance, ResourceLimits, Runtime,
};
pub use slices::LineSlices;
pub use storage::archive::{ArchiveDir, ArchiveFile, ArchiveReadError, DEFAULT_ARCHIVE_DIR_NAME};
pub use storage::postgres::{
    Isolation, POSTGRES_SCHEMA_VERSION, PostgresStorage, display_database, is_postgres_url,
};
pub use storage::postgres_archives::PostgresArchives;
pub use storage::sqlite::{APPLICATION_ID, Durability, SqliteStorage};

/// The packaged Spool component (the core built for `wasm32-unknown-unknown` and wrapped
/// as a component by this crate's build script). It imports only Spool's `storage` and
/// `archive` interfaces and exports its `api`; `spool component` writes it to a file.
pub const COMPONENT: &[u8] = include_bytes!(env!("SPOOL_COMPONENT_PATH"));
