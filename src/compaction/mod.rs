//! Compaction: replace the oldest part of a transcript by a summary that provably keeps
//! what matters. Pure functions here; the operations that read and commit live beside
//! them.
//!
//! - [`mod@tokens`]: the deterministic token measure and its trigger;
//! - [`mod@plan`]: where to cut (units never split, half the window kept);
//! - [`mod@calls`]: what tool calls and results say (ids, commands, files, exits);
//! - [`mod@obligations`]: the facts the summary must keep;
//! - [`mod@summarize`]: the built-in `structured_v1` summarizer and its rendering;
//! - [`mod@coverage`]: the check, back-fill and blocking decision.

pub mod calls;
mod contained;
pub mod coverage;
pub mod obligations;
mod ops;
pub mod plan;
mod requests;
mod stored;
pub mod summarize;
pub mod tokens;
pub(crate) mod types;

pub use coverage::{Coverage, check};
pub use obligations::{Facts, FileHistory, Obligation, ObligationKind, extract, facts};
pub use ops::MAX_PREPARED_INPUT_BYTES;
pub(crate) use ops::{Boundary, boundaries_of, repair_key, repairs, summary_key};
pub use ops::{
    commit_compaction, compact, persist_compaction_result, prepare_compaction, render_input,
};
pub use plan::{CompactionConfig, Plan, Shape, plan, plan_shapes};
pub(crate) use stored::summaries_of;
pub use stored::{
    canonical_transcript, compaction_preimage, list_degraded_compactions, list_summaries,
    set_flush_receipt, set_repair_status,
};
pub use summarize::{render, summarize};
pub use tokens::{entry_tokens, estimate};
pub use types::{
    ArchivedEntry, CommitRequest, CompactRequest, CompactionResult, PersistRequest, Prepared,
    Summary,
};

/// `haystack.find(needle)` for the detectors, which look for a few short markers in
/// every line a compaction removes: the first byte's occurrences, each checked. (A
/// `str::find` builds a two-way searcher first, which costs more than scanning a short
/// line.) The same answer: a match of a UTF-8 needle starts on a character boundary.
/// An ASCII first byte is looked for with `memchr` (a word at a time, where a loop
/// over the bytes reads one: in the component, that is most of the scan).
fn find(haystack: &str, needle: &str) -> Option<usize> {
    let (hay, pattern) = (haystack.as_bytes(), needle.as_bytes());
    let Some((&first, _)) = pattern.split_first() else {
        return Some(0);
    };
    let mut from = 0;
    loop {
        let at = if first.is_ascii() {
            // `from` is 0 or just past an ASCII byte: a character boundary.
            haystack.get(from..)?.find(char::from(first))?
        } else {
            hay.get(from..)?.iter().position(|&b| b == first)?
        };
        let start = from + at;
        if hay[start..].starts_with(pattern) {
            return Some(start);
        }
        from = start + 1;
    }
}

/// How many bytes `a` and `b` start with in common, compared eight at a time (in the
/// component, `memcmp` compares one at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let mut at = 0;
    while let (Some(x), Some(y)) = (a[at..len].first_chunk::<8>(), b[at..len].first_chunk::<8>()) {
        let differ = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if differ != 0 {
            return at + (differ.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < len && a[at] == b[at] {
        at += 1;
    }
    at
}

/// `a.cmp(b)`, through [`common_prefix`]: for the detectors' sorted collections of
/// facts, which often start alike.
fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let common = common_prefix(a, b);
    match (a.get(common), b.get(common)) {
        (Some(x), Some(y)) => x.cmp(y),
        _ => a.len().cmp(&b.len()),
    }
}

/// Whether the character at byte `at` of `text` (a character boundary, or inside a
/// character) is white space ([`char::is_whitespace`]), and its width, read through
/// [`SPACE`].
#[inline]
fn space_at(text: &str, at: usize) -> Option<usize> {
    match SPACE[usize::from(text.as_bytes()[at])] {
        0 => None,
        1 => Some(1),
        _ => wide_space_at(text, at),
    }
}

/// [`space_at`] for a character that starts with 0xC2, 0xE1, 0xE2 or 0xE3 (see
/// [`SPACE`]).
#[inline(never)]
fn wide_space_at(text: &str, at: usize) -> Option<usize> {
    text.get(at..)
        .and_then(|rest| rest.chars().next())
        .filter(|c| c.is_whitespace())
        .map(char::len_utf8)
}

/// Per byte: 1 for ASCII white space, 2 for the first byte of a character that may be
/// white space, 0 for the others. ASCII white space ([`char::is_whitespace`]) is ` `,
/// `\t`, `\n`, `\x0B`, `\x0C` and `\r`; every other white space character starts with
/// 0xC2, 0xE1, 0xE2 or 0xE3 (U+0085, U+00A0, U+1680, U+2000 to U+3000), bytes that are
/// never a character's inner ones: only those characters are decoded.
const SPACE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b' ' | b'\t'..=b'\r' => 1,
            0xC2 | 0xE1 | 0xE2 | 0xE3 => 2,
            _ => 0,
        };
        b += 1;
    }
    table
};

/// `text.split_whitespace()` read a byte at a time (see [`SPACE`]): the detectors
/// split every line a compaction removes into words.
fn words(text: &str) -> Words<'_> {
    Words { text, at: 0 }
}

/// The iterator of [`words`].
struct Words<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let mut at = self.at;
        // Past the white space.
        loop {
            let Some(&b) = bytes.get(at) else {
                self.at = at;
                return None;
            };
            let class = SPACE[usize::from(b)];
            if class == 0 {
                break;
            } else if class == 1 {
                at += 1;
            } else if let Some(width) = wide_space_at(text, at) {
                at += width;
            } else {
                break;
            }
        }
        // To the next white space (an inner byte of a character is never one's start).
        let start = at;
        at += 1;
        loop {
            while bytes.get(at).is_some_and(|&b| SPACE[usize::from(b)] == 0) {
                at += 1;
            }
            match bytes.get(at) {
                Some(&b) if SPACE[usize::from(b)] == 2 && wide_space_at(text, at).is_none() => {
                    at += 1;
                }
                _ => break,
            }
        }
        self.at = at;
        Some(&text[start..at])
    }
}

#[cfg(test)]
#[path = "tests/compaction.rs"]
mod tests;
