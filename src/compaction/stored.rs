//! The reads and repairs of what compaction stored: the canonical transcript, the
//! summaries, the degraded ones and their preimages, repair and flush-receipt status.

use super::types::Summary;
use crate::branch::history::View;
use crate::engine::error::Error;
use crate::engine::op::{Io, Operation};
use crate::engine::validate;
use crate::session::read_all;
use crate::session::require;
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange};
use crate::types::{Entry, Order};

use super::ops::{Boundary, PASS_PAGE, op, receipt, repair_key};

/// The canonical transcript of the session under `key`: entries archived by compactions
/// and active ones, in original `(created_at, id)` order — the transcript as appended.
pub fn canonical_transcript(workspace: &str, key: &str) -> Operation<Vec<Entry>> {
    op(workspace, key, Ok(()), |io, key| async move {
        let loaded = require(&io, &key).await?;
        let items = crate::branch::history::items(&io, &View::of(&loaded), true, None).await?;
        let active = items.iter().filter(|i| !i.archived).count();
        crate::branch::history::check_count(&io, &loaded, active).await?;
        crate::branch::history::confirm(&io, &loaded).await?;
        Ok(items.into_iter().map(|i| i.entry).collect())
    })
}

/// The compaction summaries of identity `data_id` with their keys, oldest first.
pub(crate) async fn summaries_of(io: &Io, data_id: &str) -> Result<Vec<(Vec<u8>, Summary)>, Error> {
    read_all(
        io,
        KeyRange::prefix(&keys::identity(keys::SUMMARY, data_id)),
    )
    .await?
    .into_iter()
    .map(|kv| record::decode(&kv.key, &kv.value).map(|s| (kv.key, s)))
    .collect()
}

/// The compaction summaries of the session under `key`, oldest first.
pub fn list_summaries(workspace: &str, key: &str) -> Operation<Vec<Summary>> {
    op(workspace, key, Ok(()), |io, key| async move {
        let loaded = require(&io, &key).await?;
        Ok(summaries_of(&io, loaded.data_id())
            .await?
            .into_iter()
            .map(|(_, s)| s)
            .collect())
    })
}

/// The degraded compactions waiting for repair, of every session (of one agent when
/// `agent_id` is given).
pub fn list_degraded_compactions(
    workspace: &str,
    agent_id: Option<&str>,
) -> Operation<Vec<Summary>> {
    check!(workspace, validate::workspace(workspace));
    let agent = agent_id.map(str::to_owned);
    Operation::new(workspace, move |io| {
        let agent = agent.clone();
        async move {
            let mut out = Vec::new();
            for kv in read_all(&io, KeyRange::prefix(&[keys::REPAIR])).await? {
                let summary: Summary = record::decode(&kv.key, &kv.value)?;
                if agent.is_none() || crate::agent_id(&summary.session_key) == agent {
                    out.push(summary);
                }
            }
            Ok(out)
        }
    })
}

/// The entries a compaction archived (its pre-image), in original order.
pub fn compaction_preimage(
    workspace: &str,
    key: &str,
    compaction_id: &str,
) -> Operation<Vec<Entry>> {
    let checked = validate::id("compaction_id", compaction_id);
    let compaction_id = compaction_id.to_owned();
    op(workspace, key, checked, move |io, key| {
        let compaction_id = compaction_id.clone();
        async move {
            let loaded = require(&io, &key).await?;
            let data_id = loaded.data_id().to_owned();
            let (_, summary) = summary_of(&io, &data_id, &compaction_id).await?;
            // A compaction of this build archived a range of positions; one of an
            // earlier build moved its entries to the archive range, tagged.
            let boundary_key = keys::boundary(&data_id, summary.compaction_index);
            let boundary = io
                .get(boundary_key.clone())
                .await?
                .map(|bytes| record::decode::<Boundary>(&boundary_key, &bytes))
                .transpose()?;
            let mut out = Vec::new();
            let mut cursor: Option<Vec<u8>> = None;
            loop {
                // The archive of a branch includes what it inherited through its base.
                let (items, more) = crate::branch::history::page(
                    &io,
                    &View::of(&loaded),
                    true,
                    Order::OldestFirst,
                    cursor.as_deref(),
                    PASS_PAGE,
                )
                .await?;
                cursor = items.last().map(|i| i.position.clone());
                out.extend(items.into_iter().filter_map(|i| {
                    let ours = match &i.tag {
                        Some((id, _)) => *id == compaction_id,
                        None => i.archived && boundary.is_some_and(|b| b.holds(&i.position)),
                    };
                    ours.then_some(i.entry)
                }));
                if !more || cursor.is_none() {
                    break;
                }
            }
            crate::branch::history::confirm(&io, &loaded).await?;
            Ok(out)
        }
    })
}

/// Changes one summary (found by compaction id) and keeps the repair queue in step.
fn amend(
    workspace: &str,
    key: &str,
    compaction_id: &str,
    checked: Result<(), Error>,
    change: impl Fn(&mut Summary) + 'static,
) -> Operation<Summary> {
    let checked = checked.and_then(|()| validate::id("compaction_id", compaction_id));
    let compaction_id = compaction_id.to_owned();
    let change = std::rc::Rc::new(change);
    op(workspace, key, checked, move |io, key| {
        let (compaction_id, change) = (compaction_id.clone(), change.clone());
        async move {
            let loaded = require(&io, &key).await?;
            let (record_key, before) = summary_of(&io, loaded.data_id(), &compaction_id).await?;
            let mut after = before.clone();
            change(&mut after);
            let bytes = record::encode(&after)?;
            let mut batch = Batch::default();
            batch.require_equals(record_key.clone(), record::encode(&before)?);
            batch.put(record_key, bytes.clone());
            let queue = repair_key(&key, after.compaction_index);
            if after.degraded() {
                batch.put(queue, bytes);
            } else {
                batch.delete(queue);
            }
            io.commit(batch).await?;
            Ok(after)
        }
    })
}

/// Sets the repair status of a compaction (e.g. `repaired`); it leaves the repair queue.
pub fn set_repair_status(
    workspace: &str,
    key: &str,
    compaction_id: &str,
    status: &str,
) -> Operation<Summary> {
    let checked = validate::id("repair_status", status);
    let status = status.to_owned();
    amend(workspace, key, compaction_id, checked, move |s| {
        s.repair_status = Some(status.clone())
    })
}

/// Back-fills the flush receipt of a compaction (e.g. `safe`); a compaction that is no
/// longer degraded leaves the repair queue.
pub fn set_flush_receipt(
    workspace: &str,
    key: &str,
    compaction_id: &str,
    status: &str,
) -> Operation<Summary> {
    let stored = receipt(Some(status));
    let checked = stored.as_ref().map(|_| ()).map_err(Clone::clone);
    let stored = stored.unwrap_or_default();
    amend(workspace, key, compaction_id, checked, move |s| {
        s.flush_receipt_status = stored.clone()
    })
}

/// The summary of compaction `compaction_id` of identity `data_id` with its record's
/// key; `not_found` when it has none.
async fn summary_of(
    io: &Io,
    data_id: &str,
    compaction_id: &str,
) -> Result<(Vec<u8>, Summary), Error> {
    summaries_of(io, data_id)
        .await?
        .into_iter()
        .find(|(_, s)| s.compaction_id == compaction_id)
        .ok_or_else(|| Error::NotFound {
            what: "compaction",
            key: compaction_id.to_owned(),
        })
}
