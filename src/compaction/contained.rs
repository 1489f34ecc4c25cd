//! Which of many needles occur in one text, in time linear in the text (times a small
//! constant) plus the needles: coverage checks thousands of facts against a summary of
//! hundreds of kilobytes, where one `str::contains` per fact is quadratic.
//!
//! Every needle is found by an anchor, its first bytes: 32 of them, or for a shorter
//! needle the largest power of two it holds (so there are six anchor lengths at most).
//! For each anchor length in use, a rolling hash runs over the text once, and at a
//! position whose window hashes like an anchor, the needles of that anchor are looked
//! up in their byte order (a binary search, however many share the anchor: the facts
//! of a summary often start alike, like "Next I will run `cargo test -p …"). The answer
//! is exactly `text.contains(needle)` for each needle (bytes compared, so a hash
//! collision costs a comparison, never a wrong answer). The anchors of one length are a
//! sorted list behind a 64-kibibit filter of their hashes, so most positions cost one
//! bit test: no hash map, whose seed would be randomness in the core.

use std::collections::BTreeMap;

/// The longest anchor: needles sharing their first this many bytes are compared in
/// full at each place the shared start occurs.
const ANCHOR: usize = 32;

/// The rolling hash's multiplier (odd; arithmetic is modulo 2⁶⁴).
const BASE: u64 = 0x100_0000_01b3;

/// Bits of the filter of anchor hashes.
const FILTER_BITS: usize = 1 << 16;

/// A hash's bit in the filter (its high bits: the low ones of a polynomial hash depend
/// on the last bytes only).
fn slot(h: u64) -> usize {
    (h >> 48) as usize
}

fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |h, &b| {
        h.wrapping_mul(BASE).wrapping_add(u64::from(b) + 1)
    })
}

/// The anchor length of a needle of `len` bytes (at least 1): [`ANCHOR`], or the
/// largest power of two up to `len`.
fn anchor_len(len: usize) -> usize {
    if len >= ANCHOR {
        ANCHOR
    } else {
        1 << len.ilog2()
    }
}

/// For each needle, whether `text` contains it (an empty needle always).
pub(crate) fn contained<S: AsRef<str>>(text: &str, needles: &[S]) -> Vec<bool> {
    let text = text.as_bytes();
    let bytes = |i: usize| needles[i].as_ref().as_bytes();
    let mut found = vec![false; needles.len()];
    // Anchor length → (anchor hash, needle) pairs.
    let mut anchors: BTreeMap<usize, Vec<(u64, usize)>> = BTreeMap::new();
    for (i, needle) in needles.iter().enumerate() {
        let needle = needle.as_ref().as_bytes();
        if needle.is_empty() {
            found[i] = true;
        } else if needle.len() <= text.len() {
            let len = anchor_len(needle.len());
            anchors
                .entry(len)
                .or_default()
                .push((hash(&needle[..len]), i));
        }
    }
    let mut filter = vec![0u64; FILTER_BITS / 64];
    for (len, mut by_hash) in anchors {
        // By hash, then by bytes: the needles of a hash are one run, in byte order.
        crate::order::sort_by(&mut by_hash, |&(h, i), &(k, j)| {
            h.cmp(&k).then_with(|| super::compare(bytes(i), bytes(j)))
        });
        filter.fill(0);
        for &(h, _) in &by_hash {
            let bit = slot(h);
            filter[bit / 64] |= 1 << (bit % 64);
        }
        // BASE^len: what the byte leaving the window weighs.
        let out = (0..len).fold(1u64, |p, _| p.wrapping_mul(BASE));
        let mut open = by_hash.len();
        let mut h = hash(&text[..len]);
        let mut at = 0;
        loop {
            let bit = slot(h);
            if filter[bit / 64] & (1 << (bit % 64)) != 0 {
                let first = by_hash.partition_point(|&(k, _)| k < h);
                let run = &by_hash[first..];
                let run = &run[..run.partition_point(|&(k, _)| k == h)];
                open -= starting(run, &text[at..], len, &bytes, &mut found);
            }
            if open == 0 || at + len >= text.len() {
                break;
            }
            h = h
                .wrapping_mul(BASE)
                .wrapping_add(u64::from(text[at + len]) + 1)
                .wrapping_sub(out.wrapping_mul(u64::from(text[at]) + 1));
            at += 1;
        }
    }
    found
}

/// Marks in `found` the needles of `run` (in byte order, none shorter than `anchor`)
/// that `rest` starts with; returns how many were not marked yet.
///
/// The greatest needle up to `rest[..limit]` is found by a binary search: every needle
/// that `rest[..limit]` starts with is up to it and starts it too, so is no longer than
/// the bytes they have in common. The search goes on within those, or, when it is
/// one, within the bytes before its last (equal needles are side by side).
fn starting<'a>(
    run: &[(u64, usize)],
    rest: &[u8],
    anchor: usize,
    bytes: &impl Fn(usize) -> &'a [u8],
    found: &mut [bool],
) -> usize {
    let mut newly = 0;
    let mut limit = rest.len();
    while limit >= anchor {
        let window = &rest[..limit];
        let below = run.partition_point(|&(_, i)| super::compare(bytes(i), window).is_le());
        let Some(&(_, greatest)) = below.checked_sub(1).and_then(|k| run.get(k)) else {
            break;
        };
        let needle = bytes(greatest);
        let common = super::common_prefix(needle, window);
        if common < needle.len() {
            limit = common;
            continue;
        }
        for &(_, i) in run[..below]
            .iter()
            .rev()
            .take_while(|&&(_, i)| super::compare(bytes(i), needle).is_eq())
        {
            if !found[i] {
                found[i] = true;
                newly += 1;
            }
        }
        limit = needle.len() - 1;
    }
    newly
}

#[cfg(test)]
#[path = "tests/contained.rs"]
mod tests;
