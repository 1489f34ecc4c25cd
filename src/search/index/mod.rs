//! The search index: its key layout, the posting encoding and how appends maintain it.
//!
//! ## Layout
//!
//! The index of a session identity is one range of that identity (its tag is in
//! [`keys::IDENTITY_TAGS`], so deleting or resetting the identity removes it with the
//! same range deletes as its entries):
//!
//! | key | value |
//! |-----|-------|
//! | `I · data_id · bucket · run_first_id` | a **run** of entries starting at entry `run_first_id`: for a bucket below [`BUCKETS`], the terms of that bucket with their postings; for bucket [`DOCS`], the run's doc table |
//!
//! A term's bucket is a hash of its first two characters (its first one when that is
//! CJK), so a term and every term a prefix query of it can expand to share a bucket.
//!
//! **Runs and the tail.** The entries after an identity's last run are its **tail**;
//! a query reads the tail's entries (one range read, at most [`MAX_MERGE_ENTRIES`]) and
//! tokenizes them, so every entry is found from the commit that writes it, whatever
//! wrote it. The append whose entries cross a multiple of [`BLOCK_ENTRIES`] in entry id
//! turns the tail and its own entries into one run, in its commit: one small read (the
//! last doc table) and one range read (the tail), then at most [`BUCKETS`] + 1 puts,
//! whatever the run's vocabulary. Other appends write nothing for the index. So the
//! tail holds fewer than `BLOCK_ENTRIES` entries after appends (more after writes that
//! do not cut runs: branch copies, provider forks, a persisted compaction's kept
//! entries; the next crossing append catches up, [`MAX_MERGE_ENTRIES`] at a time), and
//! a query reads per identity the last doc table, the tail, one range per bucket its
//! terms fall in (`I · data_id · bucket`: about `1 / BUCKETS` of the identity's
//! index) and, when the runs hold candidates, the doc tables (`I · data_id ·
//! DOCS`): few, large reads whatever the transcript's length. A run that would not fit
//! the commit's size limits ([`crate::MAX_BATCH_MUTATIONS`], [`crate::MAX_BATCH_BYTES`],
//! with room left for the append's own records) is left to a later crossing.
//!
//! Why not a record per append: an append's postings are about the size of its text
//! (a short message's terms take more bytes than the message), and a per-append record
//! plus its later merge into a run cost +46% bytes per append over the binary records
//! (format 6); runs alone cost about +20% (see the measure in `search/tests/mod.rs`).
//!
//! ## What is indexed
//!
//! Each entry's `content`, `reasoning` and the string values of its `tool_calls`
//! (names, arguments; not the object keys), each up to its first [`MAX_FIELD_BYTES`],
//! tokenized by [`super::tokenize`](mod@super::tokenize); and three kinds of filter terms that no text
//! produces (they start with `\x01`): the role, each tool name it calls, and a tool
//! result's `error` status. Entries of every role, active or compacted, are indexed:
//! the index covers the identity's entries as appended. (Runs written before the
//! tokenizer gave a CJK run's last character as a term of its own lack that term: a
//! one-character query misses such a character in them, and finds it everywhere else.)
//!
//! ## Encoding (format 3)
//!
//! A value is a format byte ([`INDEX_FORMAT`]) then LEB128 varints: a **doc table**,
//! `n_docs` then per entry in increasing id `id delta · created_at delta (zigzag) ·
//! length (terms)`, deltas from the previous entry (the first from 0); then the
//! **terms**, `n_terms`, then the byte length of each **block** of terms (blocks of
//! [`TERMS_PER_BLOCK`] terms in byte order, the last one holding the rest), then the
//! blocks. Per term: `shared prefix length with the previous term of its block (0 for
//! a block's first) · suffix length · suffix bytes · postings length (bytes) ·
//! postings`, a posting being `doc index delta × 2 + (1 when a term frequency other
//! than 1 follows)`, then that frequency (indexes into the doc table of the same value,
//! or of the run for a bucket record; the first delta from 0). A bucket record has no
//! docs, a doc table record no terms (the in-memory index of a tail has both).
//!
//! A query reads a value's block lengths and each block's first term, then only the
//! blocks that may hold one of its terms, up to the first term past them: in the few
//! terms it reads, it decodes the postings of its own terms and steps over the others'
//! in one move each. A value that does not decode is [`Error::Corruption`] naming its
//! key; what every read checks is the doc table, the block lengths against the value's
//! length (a cut value is corruption) and the blocks' first terms (increasing); damage
//! inside a block shows when a query reads that block.
//!
//! Format 1 ([`INDEX_FORMAT_V1`]) wrote the number of postings where later formats
//! write their length in bytes, so a reader had to decode every posting of the terms
//! it stepped over; format 2 ([`INDEX_FORMAT_V2`]) wrote the terms as one block, so a
//! reader walked every term before and after its own. Both are read, value by value
//! (and walked whole): an index written before keeps working, and the runs written
//! since are format 3.
//!
//! ## Files
//!
//! `terms.rs`: what of an entry is indexed, as terms; `run.rs`: building a run's term
//! table in memory; `codec.rs`: a value's encoding and the reads that decode only the
//! blocks a query wants; `upkeep.rs`: how appends cut runs, and removal.

mod codec;
mod run;
mod terms;
mod upkeep;

pub(crate) use codec::*;
pub(crate) use run::*;
pub(crate) use terms::*;
pub use upkeep::stage_removal;
pub(crate) use upkeep::{indexed_through, put_run, stage_entries, stage_v1_removal, tail_entries};

use std::collections::BTreeMap;

use crate::engine::error::Error;
use crate::storage::keys;

/// The format byte of every index value this build writes.
pub const INDEX_FORMAT: u8 = 3;

/// The first format: it is read as well (see the module documentation).
pub const INDEX_FORMAT_V1: u8 = 1;

/// The second format: it is read as well (see the module documentation).
pub const INDEX_FORMAT_V2: u8 = 2;

/// The terms of a block of a value of format 3 (the last block holds the rest).
pub const TERMS_PER_BLOCK: usize = 16;

/// Entries per run (see the module documentation).
pub const BLOCK_ENTRIES: u64 = 64;

/// Term buckets of a run.
pub const BUCKETS: u8 = 16;

/// The most entries of a tail one run takes, and that a query reads of a tail.
pub const MAX_MERGE_ENTRIES: usize = 1024;

/// The bucket of a run's doc table.
pub const DOCS: u8 = 0xff;

/// The bytes of each field of an entry that are indexed (its start; a longer field is
/// found by what it starts with).
pub const MAX_FIELD_BYTES: usize = 64 * 1024;

/// Mutations and bytes a merge leaves free in its commit for the rest of the append.
const MERGE_RESERVE_MUTATIONS: usize = 64;
const MERGE_RESERVE_BYTES: usize = 1024 * 1024;

/// Prefix of filter terms (no tokenized term starts with a control character).
const FILTER: char = '\u{1}';

/// One entry of a doc table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Doc {
    /// The entry id.
    pub(crate) id: u64,
    /// The entry's `created_at` (its key is `e · data_id · created_at · id`).
    pub(crate) created_at: u64,
    /// How many terms (positions) the entry has: its length for ranking.
    pub(crate) len: u32,
}

/// A decoded index value: a doc table and terms whose postings index into a doc table
/// (its own, or the run's for a bucket record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Segment {
    /// Entries, in increasing id.
    pub(crate) docs: Vec<Doc>,
    /// Per term, `(doc index, term frequency)` in increasing doc index.
    pub(crate) terms: BTreeMap<String, Vec<(u32, u32)>>,
}

/// Fails when a posting of `segment` points past `docs`.
pub(crate) fn check_indexes(key: &[u8], segment: &Segment, docs: usize) -> Result<(), Error> {
    let past = segment
        .terms
        .values()
        .flatten()
        .any(|&(at, _)| at as usize >= docs);
    if past {
        return Err(Error::Corruption {
            key: keys::display(key),
            detail: format!("a posting points past the {docs} entries of its doc table"),
        });
    }
    Ok(())
}

/// Key prefix of bucket `bucket` (or [`DOCS`]) of every run of identity `data_id`.
pub(crate) fn bucket_runs(data_id: &str, bucket: u8) -> Vec<u8> {
    let mut key = keys::identity(keys::SEARCH_POSTINGS, data_id);
    key.push(bucket);
    key
}

/// Key of bucket `bucket` (or [`DOCS`]) of the run starting at `run_first_id`.
pub(crate) fn run_key(data_id: &str, bucket: u8, run_first_id: u64) -> Vec<u8> {
    let mut key = bucket_runs(data_id, bucket);
    key.extend_from_slice(&run_first_id.to_be_bytes());
    key
}

/// The bucket of `term`, and of every term that starts with it when it is a prefix a
/// query accepts (two characters or more, or one CJK character).
pub(crate) fn bucket(term: &str) -> u8 {
    let mut chars = term.char_indices();
    let head_end = match chars.next() {
        Some((_, c)) if super::tokenize::is_cjk(c) => c.len_utf8(),
        Some((_, c)) => chars
            .next()
            .map_or(c.len_utf8(), |(at, c)| at + c.len_utf8()),
        None => 0,
    };
    // FNV-1a: fixed, so every build puts a term in the same bucket.
    let mut hash: u32 = 0x811c_9dc5;
    for &b in &term.as_bytes()[..head_end] {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (hash % u32::from(BUCKETS)) as u8
}

#[cfg(test)]
#[path = "../tests/index.rs"]
mod tests;
