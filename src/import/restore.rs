//! What importing a Spool export restores beyond its entries ([`super::ImportedExport`]):
//! the session record's own fields, its compactions (summary records and the
//! active/archived split) and its parent link.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{ImportFormat, ImportedExport};
use crate::compaction::{Boundary, repair_key, summary_key};
use crate::engine::error::Error;
use crate::engine::op::Io;
use crate::session::{Identity, Loaded};
use crate::storage::{Batch, keys, record};
use crate::types::Session;

/// The exported session's own fields, taken by the session an import creates: its
/// creation time, status and end, model, channel, configuration (provider thread
/// bindings included), metadata, costs, and the usage its entries do not account for
/// (the entries add the rest as they are written). Not taken: the key and identity
/// (the import's), the epoch, and what the written entries and restored compactions
/// set (entry and compaction counts, newest entry id, update time).
pub(super) fn adopt(session: &mut Session, export: &ImportedExport) {
    let from = &export.session;
    session.created_at = from.created_at;
    session.status = from.status;
    session.ended_at = from.ended_at;
    session.runtime_ms = from.runtime_ms;
    session.model.clone_from(&from.model);
    session.channel.clone_from(&from.channel);
    session.model_config.clone_from(&from.model_config);
    session.metadata.clone_from(&from.metadata);
    session.estimated_cost_usd = from.estimated_cost_usd;
    session.total_cost_usd = from.total_cost_usd;
    session.billed_cost_usd = from.billed_cost_usd;
    session.estimated_cost_component_usd = from.estimated_cost_component_usd;
    session.cost_source.clone_from(&from.cost_source);
    session.missing_cost_entries = from.missing_cost_entries;
    let u = export.unaccounted;
    session.input_tokens = u.input_tokens;
    session.output_tokens = u.output_tokens;
    session.cache_read = u.cache_read;
    session.cache_write = u.cache_write;
    session.total_tokens = u.total_tokens;
}

/// What the `import` metadata of a session imported from a Spool export adds: the
/// exported key, identity and lineage, and the `import` metadata the exported session
/// itself had (an earlier import's), as `origin`.
pub(super) fn note(record: &mut Value, export: &ImportedExport) {
    record["export"] = json!({
        "key": export.session.key,
        "session_id": export.session.session_id,
        "lineage": export.lineage,
        "origin": export.session.metadata.get("import"),
    });
}

/// Whether the session under import may take the export's compactions: it was created
/// by this import, or by an earlier import of the same exported session.
pub(super) fn owns(session: &Session, created: bool, provider_id: &str) -> bool {
    let import = session.metadata.get("import");
    created
        || (import.and_then(|i| i.get("format")) == Some(&json!(ImportFormat::Spool))
            && import
                .and_then(|i| i.get("provider_session_id"))
                .and_then(Value::as_str)
                == Some(provider_id))
}

/// Restores, in order, each exported compaction the session does not have yet (by
/// index: `compaction_count` on) whose newest archived entry is written — in this
/// call (`staged`: message id → position) or before: its summary record (rewritten to
/// the session's key, identity and that entry's new id; a degraded one also queued for
/// repair), its boundary, and the session's active start past that entry, compaction
/// count and active entry count. Stops at the first whose entry is still to come (a
/// later slice). Returns the new active start, when one was restored.
pub(super) async fn compactions(
    io: &Io,
    export: &ImportedExport,
    identity: Identity<'_>,
    loaded: Option<&Loaded>,
    session: &mut Session,
    staged: &BTreeMap<String, (u64, u64)>,
    batch: &mut Batch,
) -> Result<Option<(u64, u64)>, Error> {
    let mut active_from = loaded.and_then(|l| l.active_from);
    let mut restored = false;
    let sid = session.session_id.clone();
    let data_id = identity.data_id;
    for pending in export
        .summaries
        .iter()
        .skip(session.compaction_count as usize)
    {
        let through = match &pending.through_message_id {
            None => None,
            Some(id) => match staged.get(id) {
                Some(&at) => Some(at),
                None => match crate::branch::history::indexed_position(io, identity, id).await? {
                    Some(at) => keys::split_position(&at),
                    None => break,
                },
            },
        };
        let index = session.compaction_count;
        let to = match through {
            Some((at, id)) => (at, id.saturating_add(1)),
            None => active_from.unwrap_or((0, 0)),
        };
        let boundary = Boundary {
            from: active_from,
            to,
        };
        batch.put(keys::boundary(data_id, index), record::encode(&boundary)?);
        let mut summary = pending.summary.clone();
        summary.compaction_index = index;
        summary.session_id.clone_from(&sid);
        summary.session_key.clone_from(&session.key);
        summary.covered_through_id = through.map_or(0, |(_, id)| id);
        let bytes = record::encode(&summary)?;
        if summary.degraded() {
            batch.put(repair_key(&session.key, index), bytes.clone());
        }
        batch.put(summary_key(data_id, index), bytes);
        session.compaction_count += 1;
        session.entry_count = session.entry_count.saturating_sub(pending.archived);
        active_from = Some(to);
        restored = true;
    }
    Ok(restored.then_some(active_from).flatten())
}
