//! Which of many needles occur in one text, in time linear in the text (times a small
//! constant) plus the needles: coverage checks thousands of facts against a summary of
//! hundreds of kilobytes, where one `str::contains` per fact is quadratic.
//!
//! Every needle is found by an anchor, its first `min(len, ANCHOR)` bytes: for each
//! anchor length in use, a rolling hash runs over the text once, and a position whose
//! window hashes like an anchor is compared in full with the needles of that anchor.
//! The answer is exactly `text.contains(needle)` for each needle (bytes compared, so a
//! hash collision costs a comparison, never a wrong answer). The anchors of one length
//! are a sorted list behind a 64-kibibit filter of their hashes, so most positions cost
//! one bit test: no hash map, whose seed would be randomness in the core.

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

/// For each needle, whether `text` contains it (an empty needle always).
pub(crate) fn contained<S: AsRef<str>>(text: &str, needles: &[S]) -> Vec<bool> {
    let text = text.as_bytes();
    let mut found = vec![false; needles.len()];
    // Anchor length → (anchor hash, needle) pairs.
    let mut anchors: BTreeMap<usize, Vec<(u64, usize)>> = BTreeMap::new();
    for (i, needle) in needles.iter().enumerate() {
        let needle = needle.as_ref().as_bytes();
        let len = needle.len().min(ANCHOR);
        if len == 0 {
            found[i] = true;
        } else if needle.len() <= text.len() {
            anchors
                .entry(len)
                .or_default()
                .push((hash(&needle[..len]), i));
        }
    }
    let mut filter = vec![0u64; FILTER_BITS / 64];
    for (len, mut by_hash) in anchors {
        by_hash.sort_unstable();
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
                for &(_, i) in by_hash[first..].iter().take_while(|&&(k, _)| k == h) {
                    if !found[i] && text[at..].starts_with(needles[i].as_ref().as_bytes()) {
                        found[i] = true;
                        open -= 1;
                    }
                }
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

#[cfg(test)]
#[path = "tests/contained.rs"]
mod tests;
