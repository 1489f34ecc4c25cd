//! The encoding of index values, and the reads that decode only what a query wants.

use std::collections::BTreeMap;

use crate::engine::error::Error;
use crate::storage::binary::{Reader, put_varint};
use crate::storage::keys;

use super::*;

pub(crate) fn zigzag(delta: i128) -> u64 {
    let d = delta.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

pub(crate) fn unzigzag(n: u64) -> i64 {
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
pub(crate) type TermList<'a> = (&'a str, &'a [(u32, u32)]);

/// Room an encoding reuses from one value to the next.
#[derive(Default)]
pub(crate) struct Scratch {
    section: Vec<u8>,
    postings: Vec<u8>,
}

/// Encodes the index value of a doc table and `n_terms` terms, given in byte order.
pub(crate) fn encode_parts<'a>(
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
pub(crate) fn open<'a>(key: &'a [u8], value: &'a [u8]) -> Result<(Reader<'a>, u8), Error> {
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
pub(crate) fn decode_wanting(
    key: &[u8],
    value: &[u8],
    want: &dyn Wanted,
) -> Result<Segment, Error> {
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
pub(crate) fn decode_blocks(
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
pub(crate) fn read_terms(
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

pub(crate) fn postings(
    reader: &mut Reader<'_>,
    n: Option<usize>,
) -> Result<Vec<(u32, u32)>, Error> {
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
pub(crate) fn skip_postings(reader: &mut Reader<'_>, n: usize) -> Result<(), Error> {
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
