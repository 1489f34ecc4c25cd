//! A log read a slice at a time ([`import::parse_slice`]) against the same log read
//! whole: what the slices list, merged, and what importing them one after the other
//! stores, must be what the whole log gives.

use std::collections::BTreeMap;

use serde_json::Value;
use spool::import::{self, ImportFormat, ImportRequest, ImportedLog, ImportedSession};
use spool::{MemoryStorage, run};

/// `text` parsed `n` lines a slice.
pub fn parse_in_slices(format: ImportFormat, text: &str, n: usize) -> Vec<ImportedLog> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let chunks: Vec<String> = lines.chunks(n.max(1)).map(|c| c.concat()).collect();
    let mut cursor = import::ParseCursor::default();
    let mut logs = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let last = i + 1 == chunks.len();
        let log = import::parse_slice(format, &mut cursor, chunk, last).expect("a slice parses");
        // What the cursor carries survives the trip through its JSON text.
        let text = serde_json::to_string(&cursor).expect("the cursor serializes");
        cursor = serde_json::from_str(&text).expect("the cursor parses back");
        logs.push(log);
    }
    logs
}

/// The sessions the slices listed, merged: each under its id with the header it was
/// last listed with and its entries in order; an entry given again for its usage (a
/// `usage_only` one, or one whose id it already holds) moves that usage onto it.
pub fn merged(logs: &[ImportedLog]) -> BTreeMap<String, ImportedSession> {
    let mut out: BTreeMap<String, ImportedSession> = BTreeMap::new();
    let mut again = 0;
    for log in logs {
        for s in &log.sessions {
            let entries = out
                .remove(&s.provider_session_id)
                .map(|old| old.entries)
                .unwrap_or_default();
            let mut session = ImportedSession {
                entries,
                ..s.clone()
            };
            for e in &s.entries {
                match session
                    .entries
                    .iter_mut()
                    .find(|x| x.message_id == e.message_id)
                {
                    Some(x) => {
                        x.turn_usage.clone_from(&e.turn_usage);
                        again += 1;
                    }
                    None => {
                        assert!(
                            !e.usage_only,
                            "a usage update for an entry not given: {e:?}"
                        );
                        session.entries.push(e.clone());
                    }
                }
            }
            out.insert(s.provider_session_id.clone(), session);
        }
    }
    let repeated: u64 = logs.iter().map(|l| l.repeated).sum();
    assert_eq!(again, repeated, "entries given again are the ones counted");
    out
}

/// Imports `sessions` into `storage` under the keys the plan gives (a sub-agent under
/// its parent; a branch standalone); returns the keys.
pub fn import_planned(
    storage: &MemoryStorage,
    format: ImportFormat,
    sessions: Vec<ImportedSession>,
) -> Vec<String> {
    let mut keys = Vec::new();
    for planned in import::plan(format, sessions) {
        let parent_key = match planned.link {
            Some(import::PlannedLink::Child { parent_key, .. }) if parent_key != planned.key => {
                run(storage, spool::get_session("w", &parent_key))
                    .expect("get")
                    .map(|_| parent_key)
            }
            _ => None,
        };
        run(
            storage,
            import::import_session(
                "w",
                ImportRequest {
                    key: planned.key.clone(),
                    // A session id of its own per key (ids hold no `:` or `@`).
                    session_id: format!(
                        "s{}",
                        spool::import::sanitize_id(&planned.key)
                            .rsplit('~')
                            .next()
                            .unwrap_or_default()
                    ),
                    format,
                    session: planned.session,
                    parent_key,
                    prices: None,
                },
                9_999_999_999_999,
            ),
        )
        .expect("import");
        keys.push(planned.key);
    }
    keys
}

/// A session as an import leaves it: its transcript, its usage totals and what it
/// records of the log.
pub fn stored(storage: &MemoryStorage, key: &str) -> (Vec<spool::Entry>, [u64; 4], Value) {
    let session = run(storage, spool::get_session("w", key))
        .expect("get")
        .expect("the session exists");
    let totals = [
        session.input_tokens,
        session.output_tokens,
        session.cache_read,
        session.entry_count,
    ];
    let record = serde_json::json!({
        "title": session.metadata.get("title"),
        "import": session.metadata.get("import"),
        "model": session.model,
    });
    (super::entries(storage, "w", key, false), totals, record)
}

/// The whole property for `text`, cut every 1, 2, 3, 7 lines and not at all: the same
/// counts and line numbers, the same sessions once merged, and the same sessions
/// stored when each slice is imported as it comes.
pub fn check(format: ImportFormat, name: &str, text: &str) {
    let whole_log = import::parse(format, text);
    let whole = MemoryStorage::new();
    let keys = import_planned(&whole, format, whole_log.sessions.clone());
    let by_id: BTreeMap<String, ImportedSession> = whole_log
        .sessions
        .iter()
        .map(|s| (s.provider_session_id.clone(), s.clone()))
        .collect();
    let count = text.split_inclusive('\n').count();
    for n in [1, 2, 3, 7, count.max(1)] {
        let at = format!("{name}, {n} lines a slice");
        let logs = parse_in_slices(format, text, n);
        let mut skipped = BTreeMap::new();
        for log in &logs {
            for (kind, k) in &log.skipped {
                *skipped.entry(kind.clone()).or_insert(0) += k;
            }
        }
        let sum = |f: fn(&ImportedLog) -> u64| logs.iter().map(f).sum::<u64>();
        let invalid: Vec<u64> = logs.iter().flat_map(|l| l.invalid_lines.clone()).collect();
        let tail = logs.iter().find_map(|l| l.truncated_tail);
        assert_eq!(
            (
                sum(|l| l.lines),
                &skipped,
                &invalid,
                sum(|l| l.attachments),
                sum(|l| l.attachment_bytes_not_stored),
                tail
            ),
            (
                whole_log.lines,
                &whole_log.skipped,
                &whole_log.invalid_lines,
                whole_log.attachments,
                whole_log.attachment_bytes_not_stored,
                whole_log.truncated_tail
            ),
            "{at}"
        );
        let last = logs.last().map(|l| &l.spawn_calls);
        assert_eq!(last, Some(&whole_log.spawn_calls), "{at}: spawn calls");
        assert_eq!(merged(&logs), by_id, "{at}: sessions");
        let sliced = MemoryStorage::new();
        for log in logs {
            import_planned(&sliced, format, log.sessions);
        }
        for key in &keys {
            assert_eq!(stored(&sliced, key), stored(&whole, key), "{at}: {key}");
        }
    }
}
