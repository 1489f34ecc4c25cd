//! A run's term table, built in memory from its entries.

use crate::types::{Entry, ToolStatus};

use super::*;
use crate::search::tokenize::each_term;

/// The hash of a term in the term table of a [`Run`]: FxHash's mixing, fixed (the core
/// takes no randomness; a run's terms are its own entries', and terms of one hash are
/// told apart by their text).
pub(crate) fn term_hash(term: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = term.len() as u64;
    let mut chunks = term.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
        hash = (hash.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    // The table takes its slot from the low bits, which the multiplications above
    // leave to the low bytes of each word (the first characters, shared by many terms):
    // fold the high bits in (MurmurHash3's finalizer).
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^ (hash >> 33)
}

/// No term: an empty slot of [`Run::slots`].
pub(crate) const NO_TERM: u32 = u32::MAX;

/// A distinct term of a [`Run`].
pub(crate) struct RunTerm {
    /// Where its text is in [`Run::text`].
    start: usize,
    end: usize,
    /// The doc index of its last posting, and that posting's place in `postings`.
    last_doc: u32,
    place: usize,
}

/// The in-memory index of a run of entries as it is built, one entry at a time in
/// increasing id: each distinct term once (a hash table to its number), every posting
/// in one vector in the order counted. Built for the write path: a term seen again
/// costs one lookup and no allocation; the postings are grouped by term (a counting
/// sort) and the terms sorted once, when the run is written ([`put_run`]) or turned
/// into a [`Segment`].
#[derive(Default)]
pub(crate) struct Run {
    docs: Vec<Doc>,
    /// The text of every distinct term, one after another (no allocation per term).
    text: String,
    /// The distinct terms, by number (the order they were first seen).
    terms: Vec<RunTerm>,
    /// The term table: `(hash, term number)` by hash, open addressing with linear
    /// probing (number [`NO_TERM`]: an empty slot); a power of two long, at most half
    /// full. Deterministic (the hashes are); its order is never used (the terms are
    /// sorted before they are written).
    slots: Vec<(u64, u32)>,
    /// `(term number, doc index, term frequency)`, in increasing doc index.
    postings: Vec<(u32, u32, u32)>,
}

/// A run's postings grouped by term: term number `n`'s are `flat[start[n]..start[n + 1]]`.
pub(crate) struct Lists {
    flat: Vec<(u32, u32)>,
    start: Vec<usize>,
}

impl Lists {
    pub(super) fn of(&self, number: u32) -> &[(u32, u32)] {
        let n = number as usize;
        &self.flat[self.start[n]..self.start[n + 1]]
    }
}

impl Run {
    /// The run of `entries` (in increasing id).
    pub(crate) fn of<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Run {
        // Room for a run of agent text (about a thousand terms) without growing.
        let mut run = Run {
            slots: vec![(0, NO_TERM); 2048],
            terms: Vec::with_capacity(1024),
            text: String::with_capacity(8 * 1024),
            postings: Vec::with_capacity(4096),
            ..Run::default()
        };
        for entry in entries {
            run.push(entry);
        }
        run
    }

    /// Adds `entry`, newer than every entry the run holds; returns its number of distinct
    /// terms (the postings it adds).
    pub(crate) fn push(&mut self, entry: &Entry) -> usize {
        let at = self.docs.len() as u32;
        let (mut len, mut added) = (0u32, 0usize);
        for (_, text) in fields(entry) {
            each_term(capped(&text), |t| {
                if !t.compound {
                    len = len.saturating_add(1);
                }
                added += self.count(t.term, at, true);
            });
        }
        added += self.count(role_term(entry.role), at, false);
        for name in tool_names(entry) {
            added += self.count(&tool_term(&name), at, false);
        }
        if entry.tool_status == Some(ToolStatus::Error) {
            added += self.count(&error_term(), at, false);
        }
        self.docs.push(Doc {
            id: entry.id,
            created_at: entry.created_at,
            len,
        });
        added
    }

    /// Counts `term` in doc `at` (`repeat`: each occurrence adds to its frequency; a
    /// filter term has frequency 1); returns 1 when it is the doc's first occurrence.
    fn count(&mut self, term: &str, at: u32, repeat: bool) -> usize {
        let number = self.number(term);
        let known = &mut self.terms[number as usize];
        if known.last_doc == at {
            if repeat {
                let tf = &mut self.postings[known.place].2;
                *tf = tf.saturating_add(1);
            }
            return 0;
        }
        (known.last_doc, known.place) = (at, self.postings.len());
        self.postings.push((number, at, 1));
        1
    }

    /// The number of `term`, given it the first time it is seen.
    fn number(&mut self, term: &str) -> u32 {
        if self.terms.len() * 2 >= self.slots.len() {
            self.grow();
        }
        let hash = term_hash(term);
        let mask = self.slots.len() - 1;
        // The low bits of the hash pick the slot (`term_hash` mixes its high bits in).
        let mut slot = hash as usize & mask;
        loop {
            let (slot_hash, number) = self.slots[slot];
            if number == NO_TERM {
                break;
            }
            if slot_hash == hash {
                let known = &self.terms[number as usize];
                if &self.text.as_bytes()[known.start..known.end] == term.as_bytes() {
                    return number;
                }
            }
            slot = (slot + 1) & mask;
        }
        let new = self.terms.len() as u32;
        let start = self.text.len();
        self.text.push_str(term);
        self.terms.push(RunTerm {
            start,
            end: self.text.len(),
            last_doc: u32::MAX,
            place: 0,
        });
        self.slots[slot] = (hash, new);
        new
    }

    /// Doubles the term table (from 2,048 slots when empty) and puts every term back.
    fn grow(&mut self) {
        let len = (self.slots.len() * 2).max(2048);
        let old = std::mem::replace(&mut self.slots, vec![(0, NO_TERM); len]);
        let mask = len - 1;
        for (hash, number) in old.into_iter().filter(|&(_, n)| n != NO_TERM) {
            let mut slot = hash as usize & mask;
            while self.slots[slot].1 != NO_TERM {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = (hash, number);
        }
    }

    /// The text of term `number`.
    fn term(&self, number: u32) -> &str {
        let t = &self.terms[number as usize];
        &self.text[t.start..t.end]
    }

    /// Every term with its number.
    pub(super) fn numbered(&self) -> impl Iterator<Item = (&str, u32)> {
        (0..self.terms.len() as u32).map(|n| (self.term(n), n))
    }

    /// The postings grouped by term, each group in increasing doc index.
    pub(super) fn lists(&self) -> Lists {
        let mut start = vec![0usize; self.terms.len() + 1];
        for &(number, _, _) in &self.postings {
            start[number as usize + 1] += 1;
        }
        for n in 1..start.len() {
            start[n] += start[n - 1];
        }
        let mut next = start.clone();
        let mut flat = vec![(0, 0); self.postings.len()];
        for &(number, doc, tf) in &self.postings {
            let place = &mut next[number as usize];
            flat[*place] = (doc, tf);
            *place += 1;
        }
        Lists { flat, start }
    }

    /// The entries it holds, in increasing id.
    pub(crate) fn docs(&self) -> &[Doc] {
        &self.docs
    }

    /// How many distinct terms it holds.
    pub(crate) fn term_count(&self) -> usize {
        self.terms.len()
    }

    /// The run as a [`Segment`], keeping the terms `keep` accepts (as UTF-8 bytes).
    pub(crate) fn into_segment(self, keep: impl Fn(&[u8]) -> bool) -> Segment {
        let lists = self.lists();
        let terms = self
            .numbered()
            .filter(|(term, _)| keep(term.as_bytes()))
            .map(|(term, number)| (term.to_owned(), lists.of(number).to_vec()))
            .collect();
        Segment {
            docs: self.docs,
            terms,
        }
    }
}

/// The in-memory index of `entries` (in increasing id).
#[cfg(test)]
pub(crate) fn invert<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Segment {
    Run::of(entries).into_segment(|_| true)
}
