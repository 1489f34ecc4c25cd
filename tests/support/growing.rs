//! The properties every importer keeps for a log that only grows: a parse of a prefix
//! gives a prefix of each session; a prefix imported, then the whole, stores what the
//! whole imported once stores; importing the same log again writes nothing.

use std::collections::BTreeMap;

use spool::MemoryStorage;
use spool::import::{self, ImportFormat, ImportedLog};

use super::slices::{import_planned, stored};

/// Each session of `log` by provider id: its entries.
fn by_id(log: &ImportedLog) -> BTreeMap<&str, &[import::ImportedEntry]> {
    log.sessions
        .iter()
        .map(|s| (s.provider_session_id.as_str(), &s.entries[..]))
        .collect()
}

/// Every prefix of `versions` (growing texts of one log, each holding the one before)
/// parses to a prefix of the last one's sessions: the same entries in the same order,
/// a usage not yet reported or the same usage.
pub fn prefixes_are_prefixes(format: ImportFormat, name: &str, versions: &[String]) {
    let whole = import::parse(format, versions.last().expect("a version"));
    let whole = by_id(&whole);
    for (k, version) in versions.iter().enumerate() {
        let part = import::parse(format, version);
        for (id, entries) in by_id(&part) {
            let full = whole
                .get(id)
                .unwrap_or_else(|| panic!("{name} at {k}: session {id} is not in the whole"));
            assert!(entries.len() <= full.len(), "{name} at {k}: {id}");
            for (p, w) in entries.iter().zip(full.iter()) {
                assert!(
                    p.turn_usage.is_none() || p.turn_usage == w.turn_usage,
                    "{name} at {k}: {p:?} vs {w:?}"
                );
                let mut p = p.clone();
                p.turn_usage.clone_from(&w.turn_usage);
                assert_eq!(&p, w, "{name} at {k}");
            }
        }
    }
}

/// Each of `versions` imported in turn stores what the last one imported alone stores,
/// and importing the last one again changes nothing.
pub fn growing_imports_equal_the_whole(format: ImportFormat, name: &str, versions: &[String]) {
    let last = import::parse(format, versions.last().expect("a version"));
    let fresh = MemoryStorage::new();
    let keys = import_planned(&fresh, format, last.sessions.clone());
    for start in 0..versions.len() {
        let storage = MemoryStorage::new();
        for version in &versions[start..] {
            import_planned(&storage, format, import::parse(format, version).sessions);
        }
        for key in &keys {
            assert_eq!(
                stored(&storage, key),
                stored(&fresh, key),
                "{name}: from version {start}, {key}"
            );
        }
    }
    let before: Vec<_> = keys.iter().map(|k| stored(&fresh, k)).collect();
    import_planned(&fresh, format, last.sessions);
    let after: Vec<_> = keys.iter().map(|k| stored(&fresh, k)).collect();
    assert_eq!(before, after, "{name}: imported again");
}

/// The line prefixes of `text`, from none to all of it.
pub fn line_prefixes(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        end += line.len();
        out.push(text[..end].to_owned());
    }
    out
}
