//! The binary session record (format 6), what this build writes under `s · key` and
//! copies into its recency row `r`.
//!
//! Every field of the [`Session`] in declaration order — text and bytes as a varint
//! length then the bytes, counters as varints, costs as the eight little-endian bytes of
//! their `f64`, an optional value as a presence byte (0 or 1) then the value, the status
//! as a byte (0 running, 1 done, 2 failed), `model_config` and `metadata` as JSON (empty:
//! no bytes) — then the tail: the entry clock and the active start (optional), and the
//! lineage and shared base as one JSON object (empty: no bytes, the session was never
//! branched). Decoding and encoding name every field, so a field added to [`Session`]
//! does not compile until it has its place here (and a new format number).
//!
//! Records of formats 1 to 5 are JSON and still read (see [`super::Stored`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::error::Error;
use crate::session::Layer;
use crate::storage::binary::{Reader, put_bytes, put_varint};
use crate::storage::{keys, record};
use crate::types::{BranchLineage, Session, SessionStatus};

/// The lineage and shared base, stored as JSON (rare: only branched sessions).
#[derive(Serialize)]
struct SharedRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    lineage: Option<&'a BranchLineage>,
    #[serde(skip_serializing_if = "<[Layer]>::is_empty")]
    base: &'a [Layer],
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shared {
    #[serde(default)]
    lineage: Option<BranchLineage>,
    #[serde(default)]
    base: Vec<Layer>,
}

/// What a session record holds besides the session.
#[derive(Debug)]
pub(crate) struct TailParts {
    pub(crate) data_id: Option<String>,
    pub(crate) lineage: Option<BranchLineage>,
    pub(crate) base: Vec<Layer>,
    pub(crate) newest_entry_at: Option<u64>,
    pub(crate) active_from: Option<(u64, u64)>,
}

const STATUSES: [SessionStatus; 3] = [
    SessionStatus::Running,
    SessionStatus::Done,
    SessionStatus::Failed,
];

fn put_text(out: &mut Vec<u8>, text: &str) {
    put_bytes(out, text.as_bytes());
}

fn put_opt_varint(out: &mut Vec<u8>, n: Option<u64>) {
    match n {
        None => out.push(0),
        Some(n) => {
            out.push(1);
            put_varint(out, n);
        }
    }
}

fn put_opt_text(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        None => out.push(0),
        Some(text) => {
            out.push(1);
            put_text(out, text);
        }
    }
}

fn put_f64(out: &mut Vec<u8>, x: f64) {
    out.extend_from_slice(&x.to_bits().to_le_bytes());
}

fn put_json_map(out: &mut Vec<u8>, map: &BTreeMap<String, serde_json::Value>) -> Result<(), Error> {
    if map.is_empty() {
        put_varint(out, 0);
        return Ok(());
    }
    let json = serde_json::to_vec(map)
        .map_err(|e| Error::internal(format!("session record does not encode: {e}")))?;
    put_bytes(out, &json);
    Ok(())
}

/// Encodes `session` with its tail: a format-6 record, or with a minted `data_id` a
/// format-7 one (format 6 followed by the data id).
pub(crate) fn encode(
    session: &Session,
    data_id: Option<&str>,
    lineage: Option<&BranchLineage>,
    base: &[Layer],
    newest_entry_at: Option<u64>,
    active_from: Option<(u64, u64)>,
) -> Result<Vec<u8>, Error> {
    let Session {
        key,
        session_id,
        agent_id,
        status,
        epoch,
        created_at,
        updated_at,
        entry_count,
        last_entry_id,
        total_tokens,
        ended_at,
        runtime_ms,
        input_tokens,
        output_tokens,
        cache_read,
        cache_write,
        estimated_cost_usd,
        total_cost_usd,
        billed_cost_usd,
        estimated_cost_component_usd,
        cost_source,
        missing_cost_entries,
        compaction_count,
        model,
        channel,
        model_config,
        metadata,
        last_state_id,
        message_index,
    } = session;
    let mut out = Vec::with_capacity(128 + key.len() + session_id.len());
    out.push(match data_id {
        None => record::SESSION_FORMAT_VERSION,
        Some(_) => record::DATA_ID_FORMAT_VERSION,
    });
    put_text(&mut out, key);
    put_text(&mut out, session_id);
    put_opt_text(&mut out, agent_id.as_deref());
    let status = STATUSES
        .iter()
        .position(|s| s == status)
        .ok_or_else(|| Error::internal("a status without a code"))?;
    out.push(status as u8);
    for n in [
        *epoch,
        *created_at,
        *updated_at,
        *entry_count,
        *last_entry_id,
        *total_tokens,
    ] {
        put_varint(&mut out, n);
    }
    put_opt_varint(&mut out, *ended_at);
    put_opt_varint(&mut out, *runtime_ms);
    for n in [*input_tokens, *output_tokens, *cache_read, *cache_write] {
        put_varint(&mut out, n);
    }
    for x in [
        *estimated_cost_usd,
        *total_cost_usd,
        *billed_cost_usd,
        *estimated_cost_component_usd,
    ] {
        put_f64(&mut out, x);
    }
    put_text(&mut out, cost_source);
    put_varint(&mut out, *missing_cost_entries);
    put_varint(&mut out, *compaction_count);
    put_opt_text(&mut out, model.as_deref());
    put_opt_text(&mut out, channel.as_deref());
    put_json_map(&mut out, model_config)?;
    put_json_map(&mut out, metadata)?;
    put_varint(&mut out, *last_state_id);
    out.push(u8::from(*message_index));
    put_opt_varint(&mut out, newest_entry_at);
    match active_from {
        None => out.push(0),
        Some((at, id)) => {
            out.push(1);
            put_varint(&mut out, at);
            put_varint(&mut out, id);
        }
    }
    if lineage.is_none() && base.is_empty() {
        put_varint(&mut out, 0);
    } else {
        let json = serde_json::to_vec(&SharedRef { lineage, base })
            .map_err(|e| Error::internal(format!("session record does not encode: {e}")))?;
        put_bytes(&mut out, &json);
    }
    if let Some(data_id) = data_id {
        put_text(&mut out, data_id);
    }
    Ok(out)
}

fn flag(reader: &mut Reader<'_>) -> Result<bool, Error> {
    match reader.byte()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(reader.corrupt("session record holds a flag that is neither 0 nor 1")),
    }
}

fn opt_varint(reader: &mut Reader<'_>) -> Result<Option<u64>, Error> {
    flag(reader)?.then(|| reader.varint()).transpose()
}

fn opt_text(reader: &mut Reader<'_>) -> Result<Option<String>, Error> {
    flag(reader)?.then(|| reader.text()).transpose()
}

fn f64_bits(reader: &mut Reader<'_>) -> Result<f64, Error> {
    reader.fixed64().map(f64::from_bits)
}

fn json<T: serde::de::DeserializeOwned + Default>(reader: &mut Reader<'_>) -> Result<T, Error> {
    let bytes = reader.bytes()?;
    if bytes.is_empty() {
        return Ok(T::default());
    }
    crate::record::from_json(bytes).map_err(|e| reader.corrupt(&e.to_string()))
}

/// Decodes a format-6 or format-7 record stored under `key` (`value` with its version byte).
pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<(Session, TailParts), Error> {
    let mut r = Reader::new(key, value.get(1..).unwrap_or_default());
    let key_text = r.text()?;
    let session_id = r.text()?;
    let agent_id = opt_text(&mut r)?;
    let status = *STATUSES
        .get(usize::from(r.byte()?))
        .ok_or_else(|| r.corrupt("unknown session status code"))?;
    let session = Session {
        key: key_text,
        session_id,
        agent_id,
        status,
        epoch: r.varint()?,
        created_at: r.varint()?,
        updated_at: r.varint()?,
        entry_count: r.varint()?,
        last_entry_id: r.varint()?,
        total_tokens: r.varint()?,
        ended_at: opt_varint(&mut r)?,
        runtime_ms: opt_varint(&mut r)?,
        input_tokens: r.varint()?,
        output_tokens: r.varint()?,
        cache_read: r.varint()?,
        cache_write: r.varint()?,
        estimated_cost_usd: f64_bits(&mut r)?,
        total_cost_usd: f64_bits(&mut r)?,
        billed_cost_usd: f64_bits(&mut r)?,
        estimated_cost_component_usd: f64_bits(&mut r)?,
        cost_source: r.text()?,
        missing_cost_entries: r.varint()?,
        compaction_count: r.varint()?,
        model: opt_text(&mut r)?,
        channel: opt_text(&mut r)?,
        model_config: json(&mut r)?,
        metadata: json(&mut r)?,
        last_state_id: r.varint()?,
        message_index: flag(&mut r)?,
    };
    let newest_entry_at = opt_varint(&mut r)?;
    let active_from = if flag(&mut r)? {
        Some((r.varint()?, r.varint()?))
    } else {
        None
    };
    let shared: Shared = json(&mut r)?;
    let data_id = if value.first() == Some(&record::DATA_ID_FORMAT_VERSION) {
        let data_id = r.text()?;
        if !keys::is_minted(&data_id) {
            return Err(r.corrupt("session record names its data by an id that was not minted"));
        }
        Some(data_id)
    } else {
        None
    };
    r.finish()?;
    Ok((
        session,
        TailParts {
            data_id,
            lineage: shared.lineage,
            base: shared.base,
            newest_entry_at,
            active_from,
        },
    ))
}

#[cfg(test)]
#[path = "tests/codec.rs"]
mod tests;
