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
//! (format 6); runs alone cost about +20% (see the measure in `search/tests.rs`).
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

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::engine::error::Error;
use crate::engine::op::Io;
use crate::session::Identity;
use crate::storage::binary::{Reader, put_varint};
use crate::storage::entry_record::decode_entry;
use crate::storage::keys;
use crate::storage::{Batch, KeyRange, MAX_BATCH_BYTES, MAX_BATCH_MUTATIONS, RangeQuery};
use crate::types::{Entry, ToolStatus};

use super::tokenize::{each_term, fold};

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

/// The filter term of a role: `FILTER` then `r:` and the role's name.
pub(crate) fn role_term(role: crate::types::Role) -> &'static str {
    use crate::types::Role;
    match role {
        Role::User => "\u{1}r:user",
        Role::Assistant => "\u{1}r:assistant",
        Role::Tool => "\u{1}r:tool",
        Role::System => "\u{1}r:system",
    }
}

/// The filter term of a called tool (name folded like text).
pub(crate) fn tool_term(name: &str) -> String {
    format!("{FILTER}t:{}", fold(name))
}

/// The filter term of a tool result with status `error`.
pub(crate) fn error_term() -> String {
    format!("{FILTER}e")
}

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

/// The text fields of an entry that are indexed, by name: `content`, `reasoning`,
/// `tool_calls` (its string values, one a line), each whole (callers cap them).
pub(crate) fn fields(entry: &Entry) -> Vec<(&'static str, Cow<'_, str>)> {
    let mut out = vec![("content", Cow::Borrowed(entry.content.as_str()))];
    if let Some(reasoning) = &entry.reasoning {
        out.push(("reasoning", Cow::Borrowed(reasoning.as_str())));
    }
    if let Some(calls) = &entry.tool_calls {
        let mut text = String::new();
        strings(calls, &mut text);
        out.push(("tool_calls", Cow::Owned(text)));
    }
    out
}

fn strings(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Number(n) => {
            out.push_str(&n.to_string());
            out.push('\n');
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The first `MAX_FIELD_BYTES` of `text`, cut at a character boundary.
pub(crate) fn capped(text: &str) -> &str {
    if text.len() <= MAX_FIELD_BYTES {
        return text;
    }
    let mut at = MAX_FIELD_BYTES;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

/// The names of the tools an entry's `tool_calls` call (`name` or `function.name` of
/// each call).
pub(crate) fn tool_names(entry: &Entry) -> Vec<String> {
    let Some(serde_json::Value::Array(calls)) = &entry.tool_calls else {
        return Vec::new();
    };
    calls
        .iter()
        .filter_map(|call| {
            call.get("name")
                .or_else(|| call.get("function").and_then(|f| f.get("name")))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// The hash of a term in the term table of a [`Run`]: FxHash's mixing, fixed (the core
/// takes no randomness; a run's terms are its own entries', and terms of one hash are
/// told apart by their text).
fn term_hash(term: &str) -> u64 {
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
const NO_TERM: u32 = u32::MAX;

/// A distinct term of a [`Run`].
struct RunTerm {
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
struct Lists {
    flat: Vec<(u32, u32)>,
    start: Vec<usize>,
}

impl Lists {
    fn of(&self, number: u32) -> &[(u32, u32)] {
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
    fn numbered(&self) -> impl Iterator<Item = (&str, u32)> {
        (0..self.terms.len() as u32).map(|n| (self.term(n), n))
    }

    /// The postings grouped by term, each group in increasing doc index.
    fn lists(&self) -> Lists {
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

// ---- encoding -------------------------------------------------------------------

fn zigzag(delta: i128) -> u64 {
    let d = delta.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// Encodes an index value.
#[cfg(test)]
pub(crate) fn encode(segment: &Segment) -> Vec<u8> {
    encode_in(INDEX_FORMAT, segment)
}

/// Encodes an index value in `format` (tests write format 1, as older builds did).
#[cfg(test)]
pub(crate) fn encode_in(format: u8, segment: &Segment) -> Vec<u8> {
    encode_parts(
        &mut Scratch::default(),
        format,
        &segment.docs,
        segment.terms.len(),
        segment
            .terms
            .iter()
            .map(|(t, l)| (t.as_str(), l.as_slice())),
    )
}

/// A term and its postings, `(doc index, term frequency)` in increasing doc index.
type TermList<'a> = (&'a str, &'a [(u32, u32)]);

/// Room an encoding reuses from one value to the next.
#[derive(Default)]
struct Scratch {
    section: Vec<u8>,
    postings: Vec<u8>,
}

/// Encodes the index value of a doc table and `n_terms` terms, given in byte order.
fn encode_parts<'a>(
    scratch: &mut Scratch,
    format: u8,
    docs: &[Doc],
    n_terms: usize,
    terms: impl Iterator<Item = TermList<'a>>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + docs.len() * 6);
    out.push(format);
    put_varint(&mut out, docs.len() as u64);
    let (mut id, mut created) = (0u64, 0u64);
    for doc in docs {
        put_varint(&mut out, doc.id.wrapping_sub(id));
        put_varint(&mut out, zigzag(doc.created_at as i128 - created as i128));
        put_varint(&mut out, u64::from(doc.len));
        (id, created) = (doc.id, doc.created_at);
    }
    put_varint(&mut out, n_terms as u64);
    // Format 3 writes the terms in blocks, each block's length first; format 1 and 2
    // write them as one block (and no length).
    let per_block = if format == INDEX_FORMAT {
        TERMS_PER_BLOCK
    } else {
        usize::MAX
    };
    let Scratch { section, postings } = scratch;
    section.clear();
    let (mut lengths, mut block_start) = (Vec::new(), 0);
    let mut previous: &[u8] = &[];
    for (i, (term, list)) in terms.enumerate() {
        if i > 0 && i % per_block == 0 {
            // A block's first term shares nothing: a reader starts at any block.
            lengths.push(section.len() - block_start);
            block_start = section.len();
            previous = &[];
        }
        let bytes = term.as_bytes();
        let shared = previous
            .iter()
            .zip(bytes)
            .take_while(|(a, b)| a == b)
            .count();
        put_varint(section, shared as u64);
        put_varint(section, (bytes.len() - shared) as u64);
        section.extend_from_slice(&bytes[shared..]);
        postings.clear();
        let mut at = 0u32;
        for &(doc, tf) in list {
            // The delta's low bit says whether a term frequency other than 1 follows.
            let delta = u64::from(doc.wrapping_sub(at)) << 1;
            if tf == 1 {
                put_varint(postings, delta);
            } else {
                put_varint(postings, delta | 1);
                put_varint(postings, u64::from(tf));
            }
            at = doc;
        }
        // Their length in bytes, not their number: a reader steps over a term it does
        // not want in one move.
        let n = if format == INDEX_FORMAT_V1 {
            list.len()
        } else {
            postings.len()
        };
        put_varint(section, n as u64);
        section.extend_from_slice(postings);
        previous = bytes;
    }
    if format == INDEX_FORMAT && n_terms > 0 {
        lengths.push(section.len() - block_start);
        out.reserve_exact(lengths.len() * 2 + section.len());
        for length in lengths {
            put_varint(&mut out, length as u64);
        }
    }
    out.extend_from_slice(section);
    out
}

/// A reader of `value` (the index value stored under `key`: every failure names it)
/// after its format byte, and that format.
fn open<'a>(key: &'a [u8], value: &'a [u8]) -> Result<(Reader<'a>, u8), Error> {
    let mut reader = Reader::new(key, value);
    match value.first() {
        Some(&format @ (INDEX_FORMAT_V1 | INDEX_FORMAT_V2 | INDEX_FORMAT)) => {
            reader.byte()?;
            Ok((reader, format))
        }
        Some(&other) => Err(reader.corrupt(&format!(
            "unknown index format {other} (this build reads {INDEX_FORMAT_V1} to \
             {INDEX_FORMAT})"
        ))),
        None => Err(reader.corrupt("empty index value")),
    }
}

/// Whether [`decode`] keeps a term's postings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// Keep this term's.
    Keep,
    /// Not this term's.
    Skip,
    /// Neither this term's nor those of any term after it in byte order.
    SkipRest,
}

impl From<bool> for Want {
    fn from(keep: bool) -> Want {
        if keep { Want::Keep } else { Want::Skip }
    }
}

/// What [`decode`] keeps of a value's terms.
pub(crate) trait Wanted {
    /// What it keeps of `term` (UTF-8 bytes: terms are chosen before they are checked
    /// as text); terms come in byte order.
    fn want(&self, term: &[u8]) -> Want;

    /// Whether it may keep a term from `from` (included) to `to` (excluded; `None`: no
    /// end). `false` lets decoding step over a block of such terms unread.
    fn may_want(&self, _from: &[u8], _to: Option<&[u8]>) -> bool {
        true
    }
}

impl<F: Fn(&[u8]) -> Want> Wanted for F {
    fn want(&self, term: &[u8]) -> Want {
        self(term)
    }
}

/// Decodes the index value stored under `key`, keeping the terms `want` keeps. The
/// postings of the others are stepped over, not decoded; in format 3 so are the
/// blocks of terms `want` may not keep and those after a [`Want::SkipRest`]. Damage in
/// what is stepped over shows when a query wants it: what every decoding checks is
/// the doc table and that the value ends where its parts say (a cut value is
/// `corruption`).
pub(crate) fn decode(key: &[u8], value: &[u8], want: impl Wanted) -> Result<Segment, Error> {
    decode_wanting(key, value, &want)
}

/// [`decode`] through one `dyn` filter: the decoder is compiled once, not once per
/// filter type.
fn decode_wanting(key: &[u8], value: &[u8], want: &dyn Wanted) -> Result<Segment, Error> {
    let (mut reader, format) = open(key, value)?;
    let n_docs = reader.count(3)?;
    let mut out = Segment {
        docs: Vec::with_capacity(n_docs),
        terms: BTreeMap::new(),
    };
    let (mut id, mut created) = (0u64, 0u64);
    for i in 0..n_docs {
        let delta = reader.varint()?;
        if i > 0 && delta == 0 {
            return Err(reader.corrupt("entry ids do not increase"));
        }
        id = id
            .checked_add(delta)
            .ok_or_else(|| reader.corrupt("entry id overflows"))?;
        let shift = unzigzag(reader.varint()?);
        created = created
            .checked_add_signed(shift)
            .ok_or_else(|| reader.corrupt("created_at overflows"))?;
        let len = reader.small("entry length")?;
        out.docs.push(Doc {
            id,
            created_at: created,
            len,
        });
    }
    let n_terms = reader.count(3)?;
    if format == INDEX_FORMAT {
        decode_blocks(&mut reader, n_terms, want, &mut out.terms)?;
    } else {
        // One block, walked to its end whatever `want` says.
        read_terms(&mut reader, n_terms, format, want, &mut out.terms, true)?;
        reader.finish()?;
    }
    if !out.docs.is_empty() {
        check_indexes(key, &out, out.docs.len())?;
    }
    Ok(out)
}

/// Reads the `n_terms` terms of a value of format 3 (its block lengths, then its
/// blocks), keeping in `terms` those `want` keeps: only the blocks it may keep are
/// read, up to a [`Want::SkipRest`].
fn decode_blocks(
    reader: &mut Reader<'_>,
    n_terms: usize,
    want: &dyn Wanted,
    terms: &mut BTreeMap<String, Vec<(u32, u32)>>,
) -> Result<(), Error> {
    let n_blocks = n_terms.div_ceil(TERMS_PER_BLOCK);
    // Every block is at least a term of 3 bytes, so the count is bounded by the value.
    let mut blocks: Vec<Reader<'_>> = Vec::with_capacity(n_blocks);
    let mut lengths = Vec::with_capacity(n_blocks);
    for _ in 0..n_blocks {
        lengths.push(reader.varint()?);
    }
    for length in lengths {
        let block = usize::try_from(length)
            .ok()
            .and_then(|length| reader.rest.get(..length))
            .ok_or_else(|| reader.corrupt("a block of terms ends past the value"))?;
        reader.rest = &reader.rest[block.len()..];
        blocks.push(Reader::new(reader.key(), block));
    }
    reader.finish()?;
    // Each block's first term (it shares nothing with the one before).
    let mut firsts: Vec<&[u8]> = Vec::with_capacity(n_blocks);
    for block in &blocks {
        let mut peek = Reader::new(block.key(), block.rest);
        if peek.varint()? != 0 {
            return Err(peek.corrupt("a block's first term shares a prefix"));
        }
        let first = peek.bytes()?;
        if firsts.last().is_some_and(|last| *last >= first) {
            return Err(peek.corrupt("blocks of terms out of order"));
        }
        firsts.push(first);
    }
    for (at, mut block) in blocks.into_iter().enumerate() {
        if !want.may_want(firsts[at], firsts.get(at + 1).copied()) {
            continue;
        }
        let count = if at + 1 < n_blocks {
            TERMS_PER_BLOCK
        } else {
            n_terms - TERMS_PER_BLOCK * (n_blocks - 1)
        };
        if read_terms(&mut block, count, INDEX_FORMAT, want, terms, false)? {
            return Ok(());
        }
        block.finish()?;
    }
    Ok(())
}

/// Reads `n` terms of a value of `format` (the first shares nothing), keeping in
/// `terms` those `want` keeps. After a [`Want::SkipRest`] it steps over the rest when
/// `walk_rest`, else stops; `true` when it stopped there.
fn read_terms(
    reader: &mut Reader<'_>,
    n: usize,
    format: u8,
    want: &dyn Wanted,
    terms: &mut BTreeMap<String, Vec<(u32, u32)>>,
    walk_rest: bool,
) -> Result<bool, Error> {
    let mut term: Vec<u8> = Vec::new();
    // The length of the term read last; once `want` says `SkipRest`, terms are checked
    // and stepped over without being spelled out.
    let (mut term_len, mut rest) = (0usize, false);
    for _ in 0..n {
        let shared = reader.varint()?;
        let suffix = reader.bytes()?;
        let shared = usize::try_from(shared)
            .ok()
            .filter(|&shared| shared <= term_len)
            .ok_or_else(|| reader.corrupt("a term shares more than its predecessor"))?;
        term_len = shared + suffix.len();
        let kept = !rest && {
            term.truncate(shared);
            term.extend_from_slice(suffix);
            match want.want(&term) {
                Want::Keep => true,
                Want::Skip => false,
                Want::SkipRest => {
                    if !walk_rest {
                        return Ok(true);
                    }
                    rest = true;
                    false
                }
            }
        };
        let list = if format == INDEX_FORMAT_V1 {
            let n = reader.count(1)?;
            if !kept {
                skip_postings(reader, n)?;
                continue;
            }
            postings(reader, Some(n))?
        } else {
            let bytes = reader.bytes()?;
            if !kept {
                continue;
            }
            if bytes.is_empty() {
                return Err(reader.corrupt("a term has no postings"));
            }
            postings(&mut Reader::new(reader.key(), bytes), None)?
        };
        let text = std::str::from_utf8(&term)
            .map_err(|_| reader.corrupt("a term is not UTF-8"))?
            .to_owned();
        terms.insert(text, list);
    }
    Ok(false)
}

fn postings(reader: &mut Reader<'_>, n: Option<usize>) -> Result<Vec<(u32, u32)>, Error> {
    let mut list = Vec::with_capacity(n.unwrap_or(reader.rest.len()));
    let mut at = 0u32;
    while n.map_or(!reader.rest.is_empty(), |n| list.len() < n) {
        let coded = reader.varint()?;
        let delta =
            u32::try_from(coded >> 1).map_err(|_| reader.corrupt("doc index out of range"))?;
        if !list.is_empty() && delta == 0 {
            return Err(reader.corrupt("doc indexes do not increase"));
        }
        at = at
            .checked_add(delta)
            .ok_or_else(|| reader.corrupt("doc index overflows"))?;
        let tf = if coded & 1 == 1 {
            reader.small("term frequency")?
        } else {
            1
        };
        list.push((at, tf));
    }
    Ok(list)
}

/// Steps over `n` postings of format 1: a posting's first byte says whether a term
/// frequency follows (the delta's low bit), so only the ends of its varints are looked
/// for.
fn skip_postings(reader: &mut Reader<'_>, n: usize) -> Result<(), Error> {
    let bytes = reader.rest;
    let varint_end = |at: usize| {
        bytes
            .get(at..)
            .and_then(|rest| rest.iter().position(|b| b & 0x80 == 0))
            .map(|len| at + len + 1)
    };
    let mut at = 0;
    for _ in 0..n {
        let tf_follows = bytes.get(at).is_some_and(|b| b & 1 == 1);
        at = varint_end(at).ok_or_else(|| reader.corrupt("record ends early"))?;
        if tf_follows {
            at = varint_end(at).ok_or_else(|| reader.corrupt("record ends early"))?;
        }
    }
    reader.rest = &bytes[at..];
    Ok(())
}

/// The first entry id in the run key `key` (its last 8 bytes).
pub(crate) fn key_run(key: &[u8]) -> Result<u64, Error> {
    key.len()
        .checked_sub(8)
        .and_then(|at| keys::read_u64(key, at))
        .map(|(n, _)| n)
        .ok_or_else(|| Error::Corruption {
            key: keys::display(key),
            detail: "not an index key".into(),
        })
}

// ---- maintenance ----------------------------------------------------------------

/// The position `(created_at, id)` of the newest entry the runs of identity `data_id`
/// cover (the last entry of its last doc table); `None` before its first run. The
/// identity's tail is every entry after it.
pub(crate) async fn indexed_through(io: &Io, data_id: &str) -> Result<Option<(u64, u64)>, Error> {
    let last = io
        .range(RangeQuery {
            range: KeyRange::prefix(&bucket_runs(data_id, DOCS)),
            limit: 1,
            reverse: true,
        })
        .await?;
    let Some(kv) = last.first() else {
        return Ok(None);
    };
    let table = decode(&kv.key, &kv.value, |_: &[u8]| Want::SkipRest)?;
    Ok(table.docs.last().map(|d| (d.created_at, d.id)))
}

/// The first `limit` entries of `identity` after position `after` (all of them when
/// `None`), in position order (one range read).
pub(crate) async fn tail_entries(
    io: &Io,
    identity: Identity<'_>,
    after: Option<(u64, u64)>,
    limit: usize,
) -> Result<Vec<Entry>, Error> {
    let prefix = keys::entries(identity.data_id);
    let start = match after {
        Some((created_at, id)) => {
            let mut key = keys::entry(identity.data_id, created_at, id);
            key.push(0);
            key
        }
        None => prefix.clone(),
    };
    let kvs = io
        .range(RangeQuery {
            range: KeyRange {
                start,
                end: crate::storage::prefix_end(&prefix),
            },
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
            reverse: false,
        })
        .await?;
    kvs.iter()
        .map(|kv| decode_entry(&kv.key, &kv.value, Some(identity.session_id)))
        .collect()
}

/// Adds to `batch` the index records due with `entries`, new entries of `identity` in
/// increasing id order, for the commit that writes them: nothing,
/// unless their ids cross a multiple of [`BLOCK_ENTRIES`]; then the identity's tail
/// (its entries after its last run, at most [`MAX_MERGE_ENTRIES`], one range read
/// after one small read) and these entries become one run. Call it after every other
/// record of the commit but the session record is staged (the run keeps room for it).
pub(crate) async fn stage_entries(
    io: &Io,
    batch: &mut Batch,
    identity: Identity<'_>,
    entries: &[Entry],
) -> Result<(), Error> {
    let data_id = identity.data_id;
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Ok(());
    };
    let crosses = last.id / BLOCK_ENTRIES > first.id.saturating_sub(1) / BLOCK_ENTRIES;
    if !crosses {
        return Ok(());
    }
    let through = indexed_through(io, data_id).await?;
    let tail = tail_entries(io, identity, through, MAX_MERGE_ENTRIES).await?;
    // A tail longer than one run holds (entries written before this index existed)
    // is merged oldest first, a run per crossing; this commit's entries wait. (The
    // entries are read where they are, not copied: an import's commit holds a MiB.)
    let stored = tail.last().map_or(0, |l| l.id);
    let new: &[Entry] = if tail.len() < MAX_MERGE_ENTRIES {
        let from = entries.partition_point(|e| e.id <= stored);
        &entries[from..]
    } else {
        &[]
    };
    let Some(run_first) = tail.first().or(new.first()).map(|e| e.id) else {
        return Ok(());
    };
    let mut records = Batch::default();
    stage_v1_removal(&mut records, data_id, through);
    put_run(
        &mut records,
        data_id,
        run_first,
        &Run::of(tail.iter().chain(new)),
    );
    let fits = batch.mutations.len() + records.mutations.len() + MERGE_RESERVE_MUTATIONS
        <= MAX_BATCH_MUTATIONS
        && batch.written_bytes() + records.written_bytes() + MERGE_RESERVE_BYTES <= MAX_BATCH_BYTES;
    if fits {
        batch.extend(records);
    }
    Ok(())
}

/// Adds to `batch` the records of `run`, the merged run starting at entry `run_first`:
/// one per bucket its terms fall in and its doc table.
pub(crate) fn put_run(batch: &mut Batch, data_id: &str, run_first: u64, run: &Run) {
    let lists = run.lists();
    // By bucket, each bucket's terms in byte order: their first 8 bytes (zero-padded,
    // big-endian) order most pairs in one comparison, the text the rest.
    let head = |term: &str| {
        let mut bytes = [0u8; 8];
        let n = term.len().min(8);
        bytes[..n].copy_from_slice(&term.as_bytes()[..n]);
        u64::from_be_bytes(bytes)
    };
    let mut terms: Vec<(u8, u64, TermList<'_>)> = run
        .numbered()
        .map(|(term, number)| (bucket(term), head(term), (term, lists.of(number))))
        .collect();
    terms.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then_with(|| a.2.0.cmp(b.2.0)));
    let mut scratch = Scratch::default();
    for part in terms.chunk_by(|a, b| a.0 == b.0) {
        let value = encode_parts(
            &mut scratch,
            INDEX_FORMAT,
            &[],
            part.len(),
            part.iter().map(|&(_, _, term)| term),
        );
        batch.put(run_key(data_id, part[0].0, run_first), value);
    }
    batch.put(
        run_key(data_id, DOCS, run_first),
        encode_parts(&mut scratch, INDEX_FORMAT, &run.docs, 0, std::iter::empty()),
    );
}

/// Adds to `batch` the removal of the whole index of identity `data_id`, under its
/// tag and the old one (a range delete each, whatever its size). Deleting or resetting
/// a session does this already: the index's tags are identity tags
/// ([`keys::IDENTITY_TAGS`]).
pub fn stage_removal(batch: &mut Batch, data_id: &str) {
    for tag in [keys::SEARCH_POSTINGS, keys::SEARCH_POSTINGS_V1] {
        batch.delete_range(KeyRange::prefix(&keys::identity(tag, data_id)));
    }
}

/// Adds to `batch` the removal of identity `data_id`'s index under the tag builds
/// before [`keys::SEARCH_POSTINGS`] wrote (nothing reads it), for the commit that writes
/// the identity's first run (`through`, what its runs cover, is `None`).
pub(crate) fn stage_v1_removal(batch: &mut Batch, data_id: &str, through: Option<(u64, u64)>) {
    if through.is_none() {
        batch.delete_range(KeyRange::prefix(&keys::identity(
            keys::SEARCH_POSTINGS_V1,
            data_id,
        )));
    }
}

#[cfg(test)]
#[path = "tests/index.rs"]
mod tests;
