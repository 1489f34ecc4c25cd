use super::*;

#[test]
fn test_no_two_kinds_of_record_share_a_tag() {
    let unique: std::collections::BTreeSet<u8> = TAGS.into_iter().collect();
    assert_eq!(unique.len(), TAGS.len(), "{TAGS:?}");
}

#[test]
fn test_every_tag_declared_here_is_in_tags() {
    let declared: Vec<u8> = include_str!("../keys.rs")
        .lines()
        .filter_map(|line| line.strip_prefix("pub const "))
        .filter_map(|rest| rest.split_once(": u8 = b'"))
        .filter_map(|(_, value)| value.bytes().next())
        .collect();
    let mut listed = TAGS.to_vec();
    listed.sort_unstable();
    let mut sorted = declared.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, listed, "declared {declared:?}");
}

/// Positions spread over every byte length of both integers.
fn positions() -> Vec<(u64, u64)> {
    let mut values = vec![0u64, 1, 255, 256, 65_535, 65_536, u64::MAX - 1, u64::MAX];
    values.extend((0..64).map(|shift| (1u64 << shift) ^ 0x5a5a_5a5a_5a5a_5a5a >> shift));
    let mut out = Vec::new();
    for &at in &values {
        for &id in &values {
            out.push((at, id));
        }
    }
    out
}

#[test]
fn test_minted_positions_keep_position_order_and_read_back() {
    let mut minted: Vec<(Vec<u8>, (u64, u64))> = positions()
        .into_iter()
        .map(|p| (entry("~ab", p.0, p.1), p))
        .collect();
    minted.sort();
    let mut by_position = minted.clone();
    by_position.sort_by_key(|(_, p)| *p);
    assert_eq!(minted, by_position, "bytewise order is position order");
    let prefix = entries("~ab");
    for (key, p) in &minted {
        assert_eq!(read_position("~ab", &key[prefix.len()..]), Some(*p));
        assert_eq!(entry_position(key), Some(*p));
        let canon = position(p.0, p.1);
        assert_eq!(entry_at("~ab", &canon), *key);
    }
    // A time in milliseconds and a small id: 7 + 3 bytes instead of 16.
    let key = entry("~ab", 1_764_000_000_000, 300);
    assert_eq!(key.len() - prefix.len(), 10);
}

#[test]
fn test_positions_of_identities_named_by_session_id_stay_16_bytes() {
    let key = entry("sid-1", 7, 9);
    assert_eq!(key[entries("sid-1").len()..], position(7, 9)[..]);
    assert_eq!(entry_position(&key), Some((7, 9)));
    assert_eq!(suffix("sid-1", &position(7, 9)), position(7, 9));
    // A bound just past a position stays just past it in either form.
    let mut past = position(7, 9);
    past.push(0);
    let minted = suffix("~ab", &past);
    assert!(minted > suffix("~ab", &position(7, 9)));
    assert!(minted < suffix("~ab", &position(7, 10)));
}

#[test]
fn test_a_damaged_minted_position_reads_as_none() {
    let good = entry("~ab", 300, 5);
    let suffix = &good[entries("~ab").len()..];
    for cut in 0..suffix.len() {
        assert_eq!(read_position("~ab", &suffix[..cut]), None, "cut at {cut}");
    }
    let mut trailing = suffix.to_vec();
    trailing.push(1);
    assert_eq!(read_position("~ab", &trailing), None);
    // A length over 8 bytes, or a leading zero byte (not the one form of a number).
    assert_eq!(
        read_position("~ab", &[9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]),
        None
    );
    assert_eq!(read_position("~ab", &[2, 0, 5, 0]), None);
    assert_eq!(read_position("~ab", &[0, 0]), Some((0, 0)));
    assert_eq!(entry_position(b"e~ab"), None);
}

#[test]
fn test_entry_positions_read_past_escaped_names_and_snapshot_keys() {
    // A name holding a NUL (escaped) ends at its own terminator.
    let escaped = KeyBuf::new(ENTRY).str("a\0b").u64(7).u64(9).finish();
    assert_eq!(entry_position(&escaped), Some((7, 9)));
    // A fork snapshot's key holds canonical positions, whatever its name.
    let mut snapshot = fork_snapshot("~op");
    snapshot.extend_from_slice(&position(300, 2));
    assert_eq!(entry_position(&snapshot), Some((300, 2)));
    assert_eq!(entry_position(&entry("~ab", 300, 2)), Some((300, 2)));
    assert_eq!(
        entry_position(&archived("~ab", &position(5, 6))),
        Some((5, 6))
    );
}

#[test]
fn test_string_components_keep_tuple_order() {
    let a = KeyBuf::new(b'x').str("ab").u64(9).finish();
    let b = KeyBuf::new(b'x').str("ab\0").u64(0).finish();
    let c = KeyBuf::new(b'x').str("abc").u64(0).finish();
    assert!(a < b && b < c, "{a:?} {b:?} {c:?}");
}

#[test]
fn test_string_component_round_trips_nul() {
    let key = KeyBuf::new(b'x').str("a\0b").u64(7).finish();
    let (s, at) = read_str(&key, 1).expect("string");
    assert_eq!(s, "a\0b");
    assert_eq!(read_u64(&key, at), Some((7, key.len())));
}

#[test]
fn test_entry_keys_order_by_time_then_id() {
    assert!(entry("s", 5, 9) < entry("s", 6, 1));
    assert!(entry("s", 5, 1) < entry("s", 5, 2));
    assert!(
        entry("s", u64::MAX, u64::MAX)
            < crate::storage::prefix_end(&entries("s")).unwrap_or_default()
    );
}
