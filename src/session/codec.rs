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
mod tests {
    use super::*;

    fn rich() -> Session {
        let mut s = Session::new("agent:main:main", "sid-1", 5);
        s.agent_id = None;
        s.status = SessionStatus::Failed;
        s.epoch = 3;
        s.updated_at = u64::MAX;
        s.entry_count = 300;
        s.last_entry_id = 301;
        s.total_tokens = 1 << 40;
        s.ended_at = Some(9);
        s.runtime_ms = Some(0);
        s.input_tokens = 1;
        s.output_tokens = 2;
        s.cache_read = 3;
        s.cache_write = 4;
        s.estimated_cost_usd = 0.1;
        s.total_cost_usd = 1e-12;
        s.billed_cost_usd = 12345.678;
        s.estimated_cost_component_usd = -0.0;
        s.cost_source = "mixed".into();
        s.missing_cost_entries = 7;
        s.compaction_count = 2;
        s.model = Some("claude-é".into());
        s.channel = Some(String::new());
        s.model_config
            .insert("temperature".into(), serde_json::json!(0.2));
        s.metadata.insert("k".into(), serde_json::json!({"a": [1]}));
        s.last_state_id = 11;
        s.message_index = false;
        s
    }

    fn layer() -> Layer {
        Layer {
            data_id: "~p1".into(),
            session_id: Some("parent-1".into()),
            last_entry_id: 4,
            compactions: 1,
            before: Some((10, 3)),
            flatten: true,
            indexed: true,
        }
    }

    #[test]
    fn test_every_field_and_the_tail_round_trip() {
        let session = rich();
        let lineage = BranchLineage {
            parent_session_key: Some("agent:main:parent".into()),
            spawn_depth: 2,
            forked_from_parent: true,
            fork_point: None,
            fork_count: 5,
        };
        let base = [layer()];
        let bytes = encode(
            &session,
            Some("~Xy"),
            Some(&lineage),
            &base,
            Some(77),
            Some((70, 9)),
        )
        .expect("enc");
        assert_eq!(bytes[0], record::DATA_ID_FORMAT_VERSION);
        let (back, tail) = decode(b"s", &bytes).expect("decodes");
        assert_eq!(tail.data_id.as_deref(), Some("~Xy"));
        assert_eq!(back, session);
        assert_eq!(
            back.estimated_cost_component_usd.to_bits(),
            (-0.0f64).to_bits()
        );
        assert_eq!(tail.lineage, Some(lineage));
        assert_eq!(tail.base, base);
        assert_eq!(tail.newest_entry_at, Some(77));
        assert_eq!(tail.active_from, Some((70, 9)));

        let plain = Session::new("k", "s", 1);
        let bytes = encode(&plain, None, None, &[], None, None).expect("enc");
        assert_eq!(bytes[0], record::SESSION_FORMAT_VERSION);
        let (back, tail) = decode(b"s", &bytes).expect("decodes");
        assert_eq!(back, plain);
        assert!(tail.data_id.is_none());
        assert!(tail.lineage.is_none() && tail.base.is_empty());
        assert_eq!((tail.newest_entry_at, tail.active_from), (None, None));
    }

    #[test]
    fn test_every_cut_and_damage_is_corruption() {
        let bytes = encode(&rich(), None, None, &[layer()], Some(1), None).expect("enc");
        for len in 0..bytes.len() {
            let err = decode(b"s", &bytes[..len]).expect_err("cut short");
            assert_eq!(err.code(), "corruption", "cut at {len}");
        }
        let minted = encode(&rich(), Some("~ab"), None, &[], Some(1), None).expect("enc");
        for len in 0..minted.len() {
            let err = decode(b"s", &minted[..len]).expect_err("cut short");
            assert_eq!(err.code(), "corruption", "cut at {len}");
        }
        // A format-7 record naming its keys by anything but a minted id would read
        // another identity's entries.
        let foreign = encode(&rich(), Some("sid-2"), None, &[], Some(1), None).expect("enc");
        assert_eq!(
            decode(b"s", &foreign).expect_err("not minted").code(),
            "corruption"
        );
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(
            decode(b"s", &trailing).expect_err("trailing").code(),
            "corruption"
        );
        // The status byte follows the key, the id and the absent agent id.
        let mut status =
            encode(&Session::new("k", "s", 1), None, None, &[], None, None).expect("e");
        let at = 1 + 2 + 2 + 1;
        assert_eq!(status[at], 0);
        status[at] = 3;
        assert_eq!(
            decode(b"s", &status).expect_err("status").code(),
            "corruption"
        );
    }
}
