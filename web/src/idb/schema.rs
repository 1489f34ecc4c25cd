//! The database schema and its versioned upgrades.
//!
//! `UPGRADES[n]` takes the database from version `n` to `n + 1`; the schema version is
//! the number of steps. `onupgradeneeded` applies every step between the version on disk
//! and [`SCHEMA_VERSION`], in order, inside the upgrade transaction. Steps are never
//! edited once released: a schema change is a new step at the end.

use indexed_db_futures::database::{Database, VersionChangeEvent};
use indexed_db_futures::prelude::*;

/// The one object store: out-of-line keys `[workspace, Uint8Array(key)]`, values
/// `Uint8Array`. IndexedDB orders array keys element by element and binary keys as
/// unsigned bytes, so each workspace is a contiguous, bytewise-ordered slice of it.
pub const STORE: &str = "kv";

/// The reset archives (schema version 2): out-of-line keys `[workspace, session_key,
/// session_id, archived_at]`, values the core's `ResetArchive` as a plain object. The key
/// names one generation of one session, so an operation that retries a reset writes the
/// same archive again instead of a second copy; one workspace's archives of one key form
/// a contiguous slice (`[workspace, session_key]` up to `[workspace, session_key, []]`).
pub const ARCHIVES: &str = "archives";

type Upgrade = fn(&Database) -> indexed_db_futures::Result<()>;

/// Every upgrade step, oldest first.
const UPGRADES: &[Upgrade] = &[create_kv_store, create_archive_store];

/// The schema version this build opens databases at (the number of upgrade steps).
// A handful of steps: the cast cannot truncate.
pub const SCHEMA_VERSION: u32 = UPGRADES.len() as u32;

/// Version 1: the key-value store.
fn create_kv_store(db: &Database) -> indexed_db_futures::Result<()> {
    db.create_object_store(STORE).build().map(drop)
}

/// Version 2: the reset archive store.
fn create_archive_store(db: &Database) -> indexed_db_futures::Result<()> {
    db.create_object_store(ARCHIVES).build().map(drop)
}

/// The `onupgradeneeded` handler: applies the steps from the old version to the new one.
pub(super) fn upgrade(event: &VersionChangeEvent, db: &Database) -> indexed_db_futures::Result<()> {
    // Versions are small whole numbers carried as JS numbers.
    let from = event.old_version() as usize;
    let to = event
        .new_version()
        .map_or(UPGRADES.len(), |v| v as usize)
        .min(UPGRADES.len());
    for step in UPGRADES.get(from..to).unwrap_or_default() {
        step(db)?;
    }
    Ok(())
}
