//! The uuids of a Claude Code log read so far, each with what it stands for: kept
//! between slices ([`super::ParseCursor`]), so a few dozen bytes a line. A uuid in the
//! canonical lowercase form Claude Code writes is kept as its 16 bytes (and crosses a
//! cursor as base64, 20 bytes a line with its link), any other id as its text.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a line's uuid stands for: the node (a line that became entries) it is, or the
/// nearest node above it earlier in the log, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Link {
    /// The line became entries: node `n`.
    Own(u32),
    /// The line did not; node `n` is its nearest ancestor that did.
    Above(u32),
    /// Neither it nor any ancestor earlier in the log became entries.
    None,
}

impl Link {
    /// The node it stands for.
    pub(super) fn node(self) -> Option<u32> {
        match self {
            Link::Own(n) | Link::Above(n) => Some(n),
            Link::None => None,
        }
    }

    /// As stored: 0 for none, the node + 1, with the top bit set for its own node.
    fn pack(self) -> u32 {
        match self {
            Link::Own(n) => (n + 1) | OWN,
            Link::Above(n) => n + 1,
            Link::None => 0,
        }
    }

    fn unpack(v: u32) -> Link {
        match (v & !OWN, v & OWN != 0) {
            (0, _) => Link::None,
            (n, true) => Link::Own(n - 1),
            (n, false) => Link::Above(n - 1),
        }
    }
}

const OWN: u32 = 1 << 31;

/// The uuids read so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct UuidTree {
    canonical: BTreeMap<u128, u32>,
    other: BTreeMap<String, u32>,
}

impl UuidTree {
    pub(super) fn get(&self, uuid: &str) -> Option<Link> {
        match canonical(uuid) {
            Some(k) => self.canonical.get(&k),
            None => self.other.get(uuid),
        }
        .map(|&v| Link::unpack(v))
    }

    pub(super) fn contains(&self, uuid: &str) -> bool {
        self.get(uuid).is_some()
    }

    pub(super) fn insert(&mut self, uuid: &str, link: Link) {
        match canonical(uuid) {
            Some(k) => self.canonical.insert(k, link.pack()),
            None => self.other.insert(uuid.to_owned(), link.pack()),
        };
    }

    /// The uuid of node `n`'s own line (a scan: asked only when a rewind forks after
    /// it).
    pub(super) fn uuid_of(&self, n: u32) -> Option<String> {
        let own = Link::Own(n).pack();
        self.canonical
            .iter()
            .find(|(_, v)| **v == own)
            .map(|(k, _)| format_canonical(*k))
            .or_else(|| {
                self.other
                    .iter()
                    .find(|(_, v)| **v == own)
                    .map(|(k, _)| k.clone())
            })
    }
}

/// `uuid` as 128 bits when it is 8-4-4-4-12 lowercase hex digits (so formatting it back
/// gives the same text).
fn canonical(uuid: &str) -> Option<u128> {
    let b = uuid.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut v = 0u128;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | u128::from(d);
    }
    Some(v)
}

fn format_canonical(v: u128) -> String {
    let hex = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// How a tree crosses a cursor: its canonical uuids packed (16 bytes and a 4-byte link
/// each, big-endian) as base64, the other ids as a map.
#[derive(Serialize, Deserialize)]
struct Packed {
    #[serde(rename = "u")]
    canonical: String,
    #[serde(rename = "o", default)]
    other: BTreeMap<String, u32>,
}

impl Serialize for UuidTree {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(self.canonical.len() * 20);
        for (k, v) in &self.canonical {
            bytes.extend_from_slice(&k.to_be_bytes());
            bytes.extend_from_slice(&v.to_be_bytes());
        }
        Packed {
            canonical: super::encode_base64(&bytes),
            other: self.other.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for UuidTree {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let packed = Packed::deserialize(d)?;
        let bytes = super::decode_base64(&packed.canonical)
            .filter(|b| b.len() % 20 == 0)
            .ok_or_else(|| serde::de::Error::custom("the cursor's uuid tree is damaged"))?;
        let canonical = bytes
            .chunks_exact(20)
            .map(|c| {
                let mut k = [0u8; 16];
                k.copy_from_slice(&c[..16]);
                let mut v = [0u8; 4];
                v.copy_from_slice(&c[16..]);
                (u128::from_be_bytes(k), u32::from_be_bytes(v))
            })
            .collect();
        Ok(UuidTree {
            canonical,
            other: packed.other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_and_links_survive_the_cursor() {
        let mut tree = UuidTree::default();
        let ids = [
            "6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f",
            "6F1C2A7E-2B4D-4E8A-9D3F-1A2B3C4D5E6F",
            "line-id",
            "00000000-0000-4000-8000-00000000000a",
        ];
        let links = [Link::Own(0), Link::Above(0), Link::None, Link::Own(7)];
        for (id, link) in ids.iter().zip(links) {
            tree.insert(id, link);
        }
        let text = serde_json::to_string(&tree).expect("serializes");
        let back: UuidTree = serde_json::from_str(&text).expect("parses back");
        assert_eq!(back, tree);
        for (id, link) in ids.iter().zip(links) {
            assert_eq!(back.get(id), Some(link), "{id}");
        }
        assert_eq!(back.get("6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e60"), None);
        assert_eq!(back.uuid_of(7).as_deref(), Some(ids[3]));
        assert_eq!(back.uuid_of(0).as_deref(), Some(ids[0]));
        assert_eq!(back.uuid_of(3), None);
        // The upper-case form is another id, kept as text.
        assert_eq!(back.other.len(), 2);
        let damaged = serde_json::from_str::<UuidTree>(r#"{"u":"AAAA"}"#);
        assert!(damaged.is_err());
    }
}
