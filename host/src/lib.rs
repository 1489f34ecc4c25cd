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
//! - [`ArchiveDir`]: the reset-archive store (a [`spool::Archiver`]), usable on its own.
//! - [`ForkProvider`]: the agent's provider as the host calls it in a provider fork
//!   ([`Spool::run_fork`]); [`TestProvider`] and [`CommandProvider`] are ready-made.
//!
//! ```
//! use spool::{AppendRequest, Role};
//! use spool_host::Spool;
//!
//! let mut spool = Spool::builder().open()?; // in-memory database
//! spool.create_session("agent:main:main")?;
//! let mut reply = AppendRequest::new(Role::Assistant, "All tests pass now.");
//! reply.token_count = Some(12);
//! spool.append("agent:main:main", reply)?;
//! let session = spool.get_session("agent:main:main")?.expect("just created");
//! assert_eq!((session.entry_count, session.total_tokens), (1, 12));
//!
//! let err = spool.create_session("agent:main:main").unwrap_err();
//! assert_eq!(err.code(), "conflict");
//! # Ok::<(), spool_host::Error>(())
//! ```

mod archive;
mod cache;
mod client;
mod engine;
mod error;
mod execute;
mod provider;
mod sqlite;
mod wit;

pub use archive::{ArchiveDir, DEFAULT_ARCHIVE_DIR_NAME};
pub use cache::{CacheStatus, default_cache_dir};
pub use client::{BranchOptions, DEFAULT_WORKSPACE, Spool, SpoolBuilder, random_id, system_clock};
pub use engine::{DEFAULT_MEMORY_LIMIT, Instance, Runtime};
pub use error::{CompactWithError, Error};
pub use provider::{CommandProvider, ForkProvider, TestProvider};
pub use sqlite::SqliteStorage;

/// The packaged Spool component (the core built for `wasm32-unknown-unknown` and wrapped
/// as a component by this crate's build script). It imports only Spool's `storage` and
/// `archive` interfaces and exports its `api`; `spool component` writes it to a file.
pub const COMPONENT: &[u8] = include_bytes!(env!("SPOOL_COMPONENT_PATH"));
