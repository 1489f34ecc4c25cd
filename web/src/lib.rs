//! # Spool in the browser
//!
//! The browser host of the Spool core: [`IdbStorage`], an IndexedDB implementation of
//! [`spool::AsyncStorage`] (with an archive store for the generations resets replace),
//! and [`Spool`], the class JavaScript uses:
//!
//! - sessions and transcripts: `Spool.open(name)`, `createSession`, `appendEntry`,
//!   `readPage`, `applyIntent`, `listArchives`, …;
//! - compaction: `compact`, `compactWith` (two-phase, the summary from a JS function), …;
//! - resume selection for external agent CLIs: `saveRoleSession`,
//!   `updateRoleAdapterState`, `recordRun`, `selectResume`, `recordTaskOutcome`,
//!   `planProviderThread`, `commitTurn`;
//! - local branches: `branch`, `lineage`, `listChildren`; turns: `startTurn`,
//!   `settleTurn`, `interruptTurn`, `getTurn`, `sessionTurns`, `listTurns`;
//! - provider fork operations: `fork`, `beginForkDispatch`, `recordForkDisposition`,
//!   `commitFork`, `getForkOperation`, `acknowledgeForkOperation`, `recoverForkOperations`,
//!   the one-time provider binding, `getForkLineage`, `forkProjection`;
//! - transcript imports: `parseImport`, `importSession`;
//! - `execute`, which runs any core `Command` given as data (the escape hatch).
//!
//! Every call of the core's operation table is a method derived from the table, with one
//! convention: `spool.jsName(workspace, args)`, `args` being the call's fields in
//! `snake_case` (its `Command` JSON without `op`); [`js_names`] maps each call to its
//! method, and the module's `spoolCalls()` lists the calls and their fields at runtime.
//!
//! # Features
//! Eight Cargo features, all on by default, each bring a group of calls and their code;
//! an app that leaves one out ships a smaller module (`cargo xtask bench size` prints
//! the sizes of the full build and of the lean one, `--no-default-features`):
//! - `branch`: `branch`, `editMessage`;
//! - `compaction`: `compact`, `compactWith`, `prepareCompaction`, `commitCompaction`,
//!   `persistCompactionResult` and the repair of degraded compactions
//!   (`listDegradedCompactions`, `compactionPreimage`, `setRepairStatus`,
//!   `setFlushReceipt`);
//! - `import`: `parseImport`, `planImport`, `importSession`;
//! - `provider-fork`: the provider fork operations above and `forkProjection`;
//! - `resume`: role sessions, runs, `selectResume`, `recordTaskOutcome`;
//! - `states`: provider context states (`saveState`, `listStates`, `invalidateStates`);
//! - `turns`: `startTurn`, `settleTurn`, `interruptTurn`, `getTurn`, `sessionTurns`,
//!   `listTurns`, and provider turns (`planProviderThread`, `commitTurn`);
//! - `usage`: `usageReport`.
//!
//! The lean build keeps sessions, transcripts and their page reads, entries in progress
//! (`beginEntry` … `settleEntry`), edits (`truncate`, `rollback`, `popEntry`), search,
//! lineage and the reads of what another host compacted (`listSummaries`,
//! `canonicalTranscript`, `listArchives`). A session another host branched or compacted
//! reads the same in every build.
//!
//! Without a feature its methods are absent from the class and its `.d.ts`, and
//! `execute` of one of its calls rejects with `invalid_argument` naming the feature.
//! The `Command`, `CallArgs` and `CallResults` types still name every call.
//!
//! The host is a thin shell: every session rule lives in the core's operations, which
//! [`spool::run_async`] drives against IndexedDB. The shell only converts values at the JS
//! boundary and supplies what the core never reads itself: the clock (`Date.now()`) and
//! fresh ids (`crypto.randomUUID()`).
//!
//! Everything is compiled for `wasm32` only; on other targets the crate is empty, so
//! native workspace builds and lints need no browser toolchain.

#[cfg(target_arch = "wasm32")]
mod api;
#[cfg(target_arch = "wasm32")]
mod idb;
#[cfg(target_arch = "wasm32")]
mod js;
#[cfg(target_arch = "wasm32")]
mod tabs;
#[cfg(target_arch = "wasm32")]
mod ts;

#[cfg(target_arch = "wasm32")]
pub use api::{Spool, js_names, spool_calls};
#[cfg(target_arch = "wasm32")]
pub use idb::{ARCHIVES, Attempt, IdbStorage, Known, SCHEMA_VERSION, STORE};
