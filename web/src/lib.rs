//! # Spool in the browser
//!
//! The browser host of the Spool core: [`IdbStorage`], an IndexedDB implementation of
//! [`spool::AsyncStorage`] (with an archive store for the generations resets replace),
//! and [`Spool`], the class JavaScript uses (`Spool.open(name)`, `createSession`,
//! `appendEntry`, `readPage`, `applyIntent`, `listArchives`, `compact`, `compactWith`
//! — a two-phase compaction whose summary comes from a JS function —, and resume
//! selection for external agent CLIs: `saveRoleSession`, `updateRoleAdapterState`,
//! `recordRun`, `selectResume`, `recordTaskOutcome`, `planProviderThread`, `commitTurn`,
//! …). The host is a thin shell: every session rule lives in the core's operations, which
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
mod ts;

#[cfg(target_arch = "wasm32")]
pub use api::Spool;
#[cfg(target_arch = "wasm32")]
pub use idb::{ARCHIVES, Attempt, IdbStorage, SCHEMA_VERSION, STORE};
