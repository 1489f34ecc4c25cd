//! Lookups in a parsed log, shared by the importers' tests.

use spool::import::{ImportedEntry, ImportedLog};

/// The entry with `message_id` in any session of `log`; panics naming it when there is
/// none.
pub fn entry<'a>(log: &'a ImportedLog, message_id: &str) -> &'a ImportedEntry {
    log.sessions
        .iter()
        .flat_map(|s| &s.entries)
        .find(|e| e.message_id == message_id)
        .unwrap_or_else(|| panic!("no entry {message_id}"))
}

/// The message ids of the entries of the `session`-th session of `log`, in order.
pub fn ids(log: &ImportedLog, session: usize) -> Vec<&str> {
    log.sessions[session]
        .entries
        .iter()
        .map(|e| e.message_id.as_str())
        .collect()
}
