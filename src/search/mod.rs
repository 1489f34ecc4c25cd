//! Full-text search over the transcripts of a workspace.
//!
//! [`search`] answers a query ([`query`] documents the language) with a page of hits,
//! best first. The index ([`index`] documents its layout and encoding) is kept by the
//! core per session identity, in the commits that write entries: a branch's shared
//! history is indexed once, in the identity that owns it, and its hits name that
//! identity's session (a `session:` filter on a branch searches its own entries).
//! History whose session was deleted or reset while branches read it (a retired
//! identity) is found through them: each of its entries once, under the first session
//! in key order of those searched that reads it (a `session:` filter on a branch finds
//! what it reads of it). Workspaces never see each other.
//!
//! ## Guarantees
//!
//! - **Matching.** A hit is an entry of the current identity of a session of the
//!   workspace (or of the retired history a searched session reads) that holds every
//!   term, prefix and phrase of the query in its indexed
//!   text (see [`index`]) and passes every filter. Every entry of the identity's
//!   transcript range is searched from the commit that writes it on — appended,
//!   imported or copied, active or compacted — except, in an identity whose unindexed
//!   tail exceeds [`index::MAX_MERGE_ENTRIES`] (history written before this index
//!   existed, or copied into an identity that takes over the history it read, which
//!   drops its index in that commit), the tail's newer entries until appends or the
//!   backfill have indexed them. Phrases are
//!   checked against the entry's text as stored. Entries removed (truncate, rollback,
//!   a compaction's replaced tail, a deleted or reset identity, even one branches
//!   still read) are not returned.
//! - **Ranking.** BM25 (`k1 = 1.2`, `b = 0.75`) over the query's terms (a prefix counts
//!   as one term, the sum of its expansions), with `N` the entries of the sessions
//!   searched and the average length that of the entries matched; the score is rounded
//!   to micro-units ([`SearchHit::score`]) so that the order is the same on every host.
//!   Ties go to the newer entry (`created_at` descending), then the session key
//!   ascending, then the entry id descending: a total order.
//! - **Paging.** A page holds at most `limit` hits and checks at most
//!   [`MAX_SCANNED`] candidates; `next_cursor` is set when more candidates follow.
//!   A cursor resumes exactly after the last candidate checked, in the order above, so
//!   paging a workspace that does not change meanwhile returns each hit once. A cursor
//!   belongs to its query: one from another query, or not from Spool, is
//!   `invalid_argument`.
//! - **Cost.** No commit. Reads: the session records searched (one read); per retired
//!   identity they read, its retirement record, and the reads of a session below; per session
//!   its last doc table (one read) and its tail (a read per 8 entries), the records of
//!   each index bucket of the query's terms (reads of about 512 KiB; stopping at the
//!   first term it lacks) and, when its runs hold candidates, its doc tables (one
//!   read); then one read per candidate checked. Memory: a few tail entries at a time,
//!   the postings of the query's terms in the records read, and the candidates (the
//!   entries that hold every term); never a whole tail or bucket.

pub mod backfill;
pub mod index;
pub mod query;
pub mod tokenize;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::{Identity, Layer};
use crate::storage::entry_record::decode_entry;
use crate::storage::keys;
use crate::storage::{KeyRange, RangeQuery};
use crate::types::{Entry, Role};

use index::Segment;
use query::{Clause, Query, SessionFilter};
use tokenize::{Token, tokenize};

/// The most hits one page holds.
pub const MAX_SEARCH_PAGE: u32 = 100;

/// The most candidates one page checks (reads), whatever its `limit`.
pub const MAX_SCANNED: usize = 200;

/// The longest snippet, in bytes.
pub const SNIPPET_BYTES: usize = 200;

/// A search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// The query ([`query`] documents the language).
    pub query: String,
    /// Hits per page: 1 to [`MAX_SEARCH_PAGE`].
    pub limit: u32,
    /// Where to resume: a `next_cursor` of the same query.
    pub cursor: Option<String>,
}

/// A short piece of an entry's text around what matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// The field it comes from: `content`, `reasoning` or `tool_calls` (its string
    /// values, one a line).
    pub field: String,
    /// The text, at most [`SNIPPET_BYTES`] bytes, cut at character boundaries.
    pub text: String,
    /// Byte ranges `[start, end)` of `text` that matched the query, in order, disjoint.
    pub highlights: Vec<(u32, u32)>,
}

/// One entry that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The session's key.
    pub session_key: String,
    /// The identity the entry belongs to.
    pub session_id: String,
    /// The entry's id.
    pub entry_id: u64,
    /// Its message id.
    pub message_id: String,
    /// Its role.
    pub role: Role,
    /// When it was appended (ms since the Unix epoch).
    pub created_at: u64,
    /// Its BM25 score, rounded to micro-units.
    pub score: f64,
    /// Where it matched.
    pub snippet: Snippet,
}

/// A page of hits, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    /// The hits.
    pub hits: Vec<SearchHit>,
    /// Set when more candidates follow: pass it back to continue.
    pub next_cursor: Option<String>,
    /// Entries of the sessions searched that were not searched: history written before
    /// the index whose runs [`backfill::index_backfill`] has not written yet (an upper
    /// bound; 0 once it has, and in every database written since).
    pub unindexed: u64,
}

/// Searches the workspace: the hits of `request.query`, best first, a page at a time
/// (see the [module documentation](self) for what is guaranteed).
pub fn search(workspace: &str, request: SearchRequest) -> Operation<SearchPage> {
    let prepared = prepare(workspace, &request);
    let (query, cursor) = match prepared {
        Ok(p) => p,
        Err(e) => return Operation::failed(workspace, e),
    };
    let limit = request.limit as usize;
    let digest = query_digest(&request.query);
    Operation::new(workspace, move |io| {
        let (query, cursor) = (query.clone(), cursor.clone());
        async move { run(&io, &query, cursor, limit, digest).await }
    })
}

fn prepare(workspace: &str, request: &SearchRequest) -> Result<(Query, Option<Cursor>), Error> {
    validate::workspace(workspace)?;
    if request.limit == 0 || request.limit > MAX_SEARCH_PAGE {
        return Err(Error::invalid(
            "limit",
            format!("is {}; it must be 1 to {MAX_SEARCH_PAGE}", request.limit),
        ));
    }
    let query = query::parse(&request.query)?;
    if let Some(SessionFilter::Key(key)) = &query.session {
        validate::session_key(key)?;
    }
    let digest = query_digest(&request.query);
    let cursor = request
        .cursor
        .as_deref()
        .map(|c| Cursor::decode(c, digest))
        .transpose()?;
    Ok((query, cursor))
}

// ---- cursor ---------------------------------------------------------------------

const CURSOR_VERSION: u8 = 1;

fn query_digest(text: &str) -> [u8; 8] {
    let hash = Sha256::digest(text.as_bytes());
    let mut out = [0u8; 8];
    out.copy_from_slice(&hash[..8]);
    out
}

/// A candidate's place in the ranking order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Rank {
    score: Reverse<u64>,
    created_at: Reverse<u64>,
    key: String,
    id: Reverse<u64>,
}

#[derive(Debug, Clone)]
struct Cursor(Rank);

impl Cursor {
    fn encode(rank: &Rank, digest: [u8; 8]) -> String {
        let mut out = vec![CURSOR_VERSION];
        out.extend_from_slice(&digest);
        out.extend_from_slice(&rank.score.0.to_be_bytes());
        out.extend_from_slice(&rank.created_at.0.to_be_bytes());
        out.extend_from_slice(&rank.id.0.to_be_bytes());
        out.extend_from_slice(rank.key.as_bytes());
        validate::hex(&out)
    }

    fn decode(text: &str, digest: [u8; 8]) -> Result<Cursor, Error> {
        let bad = || Error::invalid("cursor", "not a cursor Spool returned for this query");
        let bytes = validate::unhex("cursor", text)?;
        if bytes.len() < 33 || bytes[0] != CURSOR_VERSION || bytes[1..9] != digest {
            return Err(bad());
        }
        let int = |at: usize| {
            bytes[at..at + 8]
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| bad())
        };
        let key = String::from_utf8(bytes[33..].to_vec()).map_err(|_| bad())?;
        Ok(Cursor(Rank {
            score: Reverse(int(9)?),
            created_at: Reverse(int(17)?),
            id: Reverse(int(25)?),
            key,
        }))
    }
}

// ---- evaluation -----------------------------------------------------------------

/// One index lookup: an exact term (or one of an identifier's spellings) or a prefix,
/// scored or a filter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Lookup {
    text: String,
    /// Other terms it also matches exactly (an identifier's other spellings).
    also: Vec<String>,
    prefix: bool,
    scored: bool,
}

impl Lookup {
    /// Whether it matches the term `term` (UTF-8 bytes: an index record's terms are
    /// matched before they are decoded as text).
    fn matches(&self, term: &[u8]) -> bool {
        // The first bytes first: most terms differ there, and the comparisons of
        // whole slices are calls.
        let text = self.text.as_bytes();
        if self.prefix {
            term.first() == text.first() && term.starts_with(text)
        } else {
            (term.first() == text.first() && term == text)
                || self.also.iter().any(|a| a.as_bytes() == term)
        }
    }

    /// The first term in byte order after every term it matches (`None`: there is
    /// none, every term from `\xff…` on may match).
    fn end(&self) -> Option<Vec<u8>> {
        if self.prefix {
            return crate::storage::prefix_end(self.text.as_bytes());
        }
        std::iter::once(&self.text)
            .chain(&self.also)
            .map(|t| {
                let mut after = t.as_bytes().to_vec();
                after.push(0);
                after
            })
            .max()
    }

    /// The index buckets its terms fall in.
    fn buckets(&self) -> impl Iterator<Item = u8> + '_ {
        std::iter::once(&self.text)
            .chain(&self.also)
            .map(|t| index::bucket(t))
    }
}

/// What the records of one bucket are decoded for: the lookups with a term in it, and
/// the first term in byte order after every term they match.
struct BucketWant<'a> {
    lookups: Vec<&'a Lookup>,
    end: Option<Vec<u8>>,
    /// Per term or prefix of the lookups, the terms it matches: from the first
    /// (included) to the end (excluded; `None`: no end).
    ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl<'a> BucketWant<'a> {
    fn new(lookups: &'a [Lookup], bucket: u8) -> Self {
        let lookups: Vec<&Lookup> = lookups
            .iter()
            .filter(|l| l.buckets().any(|b| b == bucket))
            .collect();
        let mut end = Some(Vec::new());
        for l in &lookups {
            // `None` is past every term: the largest end.
            end = match (end, l.end()) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
        let ranges = lookups
            .iter()
            .flat_map(|l| {
                std::iter::once(&l.text).chain(&l.also).map(|t| {
                    let first = t.as_bytes().to_vec();
                    let end = if l.prefix {
                        crate::storage::prefix_end(&first)
                    } else {
                        let mut after = first.clone();
                        after.push(0);
                        Some(after)
                    };
                    (first, end)
                })
            })
            .collect();
        BucketWant {
            lookups,
            end,
            ranges,
        }
    }

    /// What decoding keeps of `term` (a record's terms come in byte order).
    fn want(&self, term: &[u8]) -> index::Want {
        let past = |end: &Vec<u8>| match (term.first(), end.first()) {
            (Some(t), Some(e)) if t != e => t > e,
            _ => term >= end.as_slice(),
        };
        if self.end.as_ref().is_some_and(past) {
            index::Want::SkipRest
        } else if self.lookups.iter().any(|l| l.matches(term)) {
            index::Want::Keep
        } else {
            index::Want::Skip
        }
    }
}

impl index::Wanted for &BucketWant<'_> {
    fn want(&self, term: &[u8]) -> index::Want {
        BucketWant::want(self, term)
    }

    fn may_want(&self, from: &[u8], to: Option<&[u8]>) -> bool {
        self.ranges.iter().any(|(first, end)| {
            to.is_none_or(|to| first.as_slice() < to)
                && end.as_ref().is_none_or(|end| end.as_slice() > from)
        })
    }
}

fn lookups(query: &Query) -> Vec<Lookup> {
    let mut out: BTreeSet<Lookup> = BTreeSet::new();
    let text = |text: &str, prefix| Lookup {
        text: text.to_owned(),
        also: Vec::new(),
        prefix,
        scored: true,
    };
    for clause in &query.clauses {
        match clause {
            Clause::Term(t) => {
                out.insert(text(t, false));
            }
            Clause::Prefix(p) => {
                out.insert(text(p, true));
            }
            Clause::Phrase(terms) => out.extend(terms.iter().map(|t| text(t, false))),
            Clause::Spellings(spellings) => {
                if let Some((first, also)) = spellings.split_first() {
                    out.insert(Lookup {
                        also: also.to_vec(),
                        ..text(first, false)
                    });
                }
            }
        }
    }
    let filter = |text: String| Lookup {
        text,
        also: Vec::new(),
        prefix: false,
        scored: false,
    };
    if let Some(role) = query.role {
        out.insert(filter(index::role_term(role).to_owned()));
    }
    if let Some(tool) = &query.tool {
        out.insert(filter(index::tool_term(tool)));
    }
    if query.has_error {
        out.insert(filter(index::error_term()));
    }
    out.into_iter().collect()
}

/// What one lookup found in one group of entries (a run, or an entry of the tail):
/// `(doc index, term frequency)` into the group's doc table, in increasing doc index
/// (so increasing entry id), one per entry (prefix expansions summed) once
/// [`Found::finish`]ed; gathered unordered before.
#[derive(Debug, Clone, Default)]
struct Found(Vec<(u32, u32)>);

impl Found {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// Orders the postings by doc index and sums those of one entry.
    fn finish(&mut self) {
        // Stable sort: it merges sorted runs, and the postings come as sorted runs (each
        // matching term's).
        self.0.sort_by_key(|p| p.0);
        self.0.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 = kept.1.saturating_add(next.1);
            }
            same
        });
    }

    /// The term frequency at doc index `at` (after [`Found::finish`]), searched from
    /// `*from` on, which it moves to the first posting not before `at`: a walk of
    /// increasing indexes reads the list once, skipping ahead by doubling steps.
    fn seek(&self, from: &mut usize, at: u32) -> Option<u32> {
        let rest = &self.0[(*from).min(self.0.len())..];
        let mut step = 1;
        while step < rest.len() && rest[step - 1].0 < at {
            step *= 2;
        }
        let window = &rest[..step.min(rest.len())];
        let skip = window.partition_point(|p| p.0 < at);
        *from += skip;
        rest.get(skip).filter(|p| p.0 == at).map(|p| p.1)
    }
}

/// A group of entries read (a run, a tail entry): its doc table and, per lookup, what
/// it found in it.
type Group = (Vec<index::Doc>, Vec<Found>);

/// A searched identity, the session its hits name and what its index holds for the
/// query's lookups.
struct Searched {
    key: String,
    /// The place of `key` among the keys searched (a session's own identity and the
    /// retired history it reads share it).
    key_rank: usize,
    session_id: String,
    /// The name of the identity's keys.
    data_id: String,
    tally: Tally,
}

/// What a query's lookups hold in one searched identity (or in the part of a retired
/// one a session reads), reduced a group of entries (a run, a tail entry) at a time as
/// it is read: per lookup the entries it matches, the lengths of the entries a scored
/// lookup matches, and the entries every lookup matches (the candidates) with their
/// term frequencies. The postings of common terms are never gathered whole: a group's
/// are dropped once added.
#[derive(Debug, Default)]
struct Tally {
    /// Per lookup, the entries it matches.
    df: Vec<u64>,
    /// The summed length and the number of the entries some scored lookup matches.
    lengths: u64,
    docs: u64,
    /// The entries every lookup matches and that pass the time filters, in the order
    /// added.
    hits: Vec<index::Doc>,
    /// Per hit, each lookup's term frequency (`df.len()` a hit).
    tfs: Vec<u32>,
    /// Per lookup, where a walk is in its list, and a bit per entry of a group (kept
    /// to reuse their room).
    at: Vec<usize>,
    seen: Vec<u64>,
}

impl Tally {
    fn new(lookups: usize) -> Self {
        Tally {
            df: vec![0; lookups],
            at: vec![0; lookups],
            ..Tally::default()
        }
    }

    /// Whether every lookup matches some entry (else no entry can be a hit, and the
    /// identity is not searched).
    fn complete(&self) -> bool {
        self.df.iter().all(|&d| d > 0)
    }

    /// Adds a group of entries, `docs`: per lookup, its [`Found::finish`]ed postings
    /// in them (every index inside `docs`).
    fn add(&mut self, docs: &[index::Doc], lists: &[Found], lookups: &[Lookup], query: &Query) {
        for (df, list) in self.df.iter_mut().zip(lists) {
            *df += list.len() as u64;
        }
        // The union of the scored lookups' entries: a bit per entry of the group.
        self.seen.clear();
        self.seen.resize(docs.len().div_ceil(64), 0);
        for (list, _) in lists.iter().zip(lookups).filter(|(_, l)| l.scored) {
            for &(at, _) in &list.0 {
                let (word, bit) = (at as usize / 64, 1u64 << (at % 64));
                if self.seen[word] & bit == 0 {
                    self.seen[word] |= bit;
                    self.lengths += u64::from(docs[at as usize].len);
                    self.docs += 1;
                }
            }
        }
        // The candidates: walk the smallest list; every other lookup must hold the
        // entry too. The walk goes up in index, so each list is read forward once.
        let Some(smallest) = (0..lists.len()).min_by_key(|&i| lists[i].len()) else {
            return;
        };
        self.at.iter_mut().for_each(|a| *a = 0);
        'entries: for &(at, tf) in &lists[smallest].0 {
            let doc = docs[at as usize];
            if !query.in_time(doc.created_at) {
                continue;
            }
            let held = self.tfs.len();
            for (i, found) in lists.iter().enumerate() {
                // The walked list holds the entry: no search in it.
                let tf = if i == smallest {
                    Some(tf)
                } else {
                    found.seek(&mut self.at[i], at)
                };
                let Some(tf) = tf else {
                    self.tfs.truncate(held);
                    continue 'entries;
                };
                self.tfs.push(tf);
            }
            self.hits.push(doc);
        }
    }
}

/// A session a query searches.
struct Listed {
    session: crate::Session,
    /// The name of its own identity's keys.
    data_id: String,
    /// Entries of its own identity (ids after those it reads through its base).
    own: u64,
    /// The shared history it reads.
    base: Vec<Layer>,
}

async fn sessions(io: &Io, query: &Query) -> Result<Vec<Listed>, Error> {
    let kvs = match &query.session {
        Some(SessionFilter::Key(key)) => {
            let record = keys::session(key);
            match io.get(record.clone()).await? {
                Some(value) => vec![crate::storage::Kv { key: record, value }],
                None => Vec::new(),
            }
        }
        other => {
            let mut prefix = keys::session("");
            prefix.pop();
            if let Some(SessionFilter::Prefix(p)) = other {
                prefix = keys::session(p);
                // The key component without its terminator: every key it starts.
                prefix.pop();
            }
            io.range(RangeQuery {
                range: KeyRange::prefix(&prefix),
                limit: 0,
                reverse: false,
            })
            .await?
        }
    };
    let mut out = Vec::with_capacity(kvs.len());
    for kv in kvs {
        let loaded = crate::session::decode(&kv.key, kv.value)?;
        if query
            .agent
            .as_ref()
            .is_some_and(|a| loaded.session.agent_id.as_ref() != Some(a))
        {
            continue;
        }
        // The identity's own entries: ids after those it reads through its base.
        let own = loaded
            .session
            .last_entry_id
            .saturating_sub(loaded.inherited());
        out.push(Listed {
            data_id: loaded.data_id().to_owned(),
            session: loaded.session,
            own,
            base: loaded.base,
        });
    }
    Ok(out)
}

/// Whether `layer` reads the entry `doc` of its identity.
fn covers(layer: &Layer, doc: &index::Doc) -> bool {
    doc.id <= layer.last_entry_id && layer.before.is_none_or(|b| (doc.created_at, doc.id) < b)
}

/// The shared history the sessions in `listed` read that no live session owns (its
/// session was deleted or reset while they read it: a retired identity), by data id,
/// with its session id and the newest entry id any of them reads.
async fn retired_history(
    io: &Io,
    listed: &[Listed],
) -> Result<BTreeMap<String, (String, u64)>, Error> {
    let owners = crate::order::set_of(listed.iter().map(|l| l.data_id.as_str()));
    let mut shared: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for layer in listed.iter().flat_map(|l| &l.base) {
        if !owners.contains(layer.data_id.as_str()) {
            let (_, newest) = shared
                .entry(layer.data_id.clone())
                .or_insert_with(|| (layer.identity().session_id.to_owned(), 0));
            *newest = (*newest).max(layer.last_entry_id);
        }
    }
    let mut out = BTreeMap::new();
    for (data_id, held) in shared {
        // A live owner outside the query's sessions keeps its hits (none here).
        if io.get(keys::retired(&data_id)).await?.is_some() {
            out.insert(data_id, held);
        }
    }
    Ok(out)
}

/// The tail entries one read of a query takes.
const TAIL_READ: usize = 8;

/// The records of a bucket one read takes: at least and at most these many, about
/// [`BUCKET_PAGE_BYTES`] in between.
const BUCKET_PAGE_MIN: u32 = 8;
const BUCKET_PAGE_MAX: u32 = 4096;
const BUCKET_PAGE_BYTES: usize = 512 * 1024;

/// Reads what the index of `identity` holds for `lookups`, a group of entries at a
/// time in increasing id (each run, then each entry of the tail): `each` gets the
/// group's doc table and, per lookup, its [`Found::finish`]ed postings in it. It stops
/// early, having given nothing, as soon as one lookup finds nothing (no entry of the
/// identity can match).
async fn read_identity(
    io: &Io,
    identity: Identity<'_>,
    last_entry_id: u64,
    lookups: &[Lookup],
    unindexed: &mut u64,
    // `dyn`: its two callers would otherwise compile this reader twice.
    each: &mut dyn FnMut(&[index::Doc], &[Found]),
) -> Result<(), Error> {
    let wanted = |term: &[u8]| lookups.iter().any(|l| l.matches(term));
    // The tail: the entries after the last run, tokenized here and given last.
    // A few entries a read, each inverted alone and only its wanted terms kept: the
    // memory a tail takes is a few entries' and the postings of the query's terms.
    let mut tail: Vec<Segment> = Vec::new();
    let data_id = identity.data_id;
    let through = index::indexed_through(io, data_id).await?;
    let (mut after, mut read) = (through, 0usize);
    while read < index::MAX_MERGE_ENTRIES {
        let want = TAIL_READ.min(index::MAX_MERGE_ENTRIES - read);
        let chunk = index::tail_entries(io, identity, after, want).await?;
        for entry in &chunk {
            let mut run = index::Run::default();
            run.push(entry);
            let one = run.into_segment(wanted);
            if !one.terms.is_empty() {
                tail.push(one);
            }
            after = Some((entry.created_at, entry.id));
        }
        read += chunk.len();
        if chunk.len() < want {
            break;
        }
    }
    if read == index::MAX_MERGE_ENTRIES {
        // A tail longer than a query reads: history the backfill has yet to index.
        let newest_read = after.map_or(0, |(_, id)| id);
        *unindexed = unindexed.saturating_add(last_entry_id.saturating_sub(newest_read));
    }
    let mut lists = vec![Found::default(); lookups.len()];
    if through.is_some() {
        // The runs' bucket records, a bucket at a time, then their doc tables.
        let mut buckets = [false; 256];
        for b in lookups.iter().flat_map(Lookup::buckets) {
            buckets[usize::from(b)] = true;
        }
        let mut runs: Vec<(Vec<u8>, u64, Segment)> = Vec::new();
        for b in (0..=u8::MAX).filter(|&b| buckets[usize::from(b)]) {
            read_bucket(io, data_id, lookups, b, &mut runs).await?;
            if lacks(lookups, &tail, &runs, b) {
                return Ok(());
            }
        }
        // Each run's parts together (a stable sort: the buckets' order within a run).
        crate::order::sort_by_key(&mut runs, |(_, run, _)| *run);
        let tables = doc_tables(io, data_id, &runs).await?;
        for group in runs.chunk_by(|a, b| a.1 == b.1) {
            let docs = tables.get(&group[0].1).map_or(&[][..], Vec::as_slice);
            for (key, _, part) in group {
                index::check_indexes(key, part, docs.len())?;
            }
            gather(&mut lists, lookups, group.iter().map(|(_, _, part)| part));
            each(docs, &lists);
        }
    }
    for one in &tail {
        gather(&mut lists, lookups, [one]);
        each(&one.docs, &lists);
    }
    Ok(())
}

/// Reads the records of bucket `b` of the runs of identity `data_id` into `runs`, each
/// decoded for the lookups with a term in it (records that hold none are left out).
async fn read_bucket(
    io: &Io,
    data_id: &str,
    lookups: &[Lookup],
    b: u8,
    runs: &mut Vec<(Vec<u8>, u64, Segment)>,
) -> Result<(), Error> {
    // A page of records at a time, sized from the last one's bytes: a bucket's
    // records together can be many MiB (a vocabulary of hashes and identifiers).
    let prefix = index::bucket_runs(data_id, b);
    let bucket_want = BucketWant::new(lookups, b);
    let (mut start, mut limit) = (prefix.clone(), BUCKET_PAGE_MIN);
    loop {
        let page = io
            .range(RangeQuery {
                range: KeyRange {
                    start: start.clone(),
                    end: crate::storage::prefix_end(&prefix),
                },
                limit,
                reverse: false,
            })
            .await?;
        let (count, bytes) = (
            page.len(),
            page.iter().map(|kv| kv.value.len()).sum::<usize>(),
        );
        for kv in page {
            start.clone_from(&kv.key);
            start.push(0);
            let run = index::key_run(&kv.key)?;
            let part = index::decode(&kv.key, &kv.value, &bucket_want)?;
            if !part.terms.is_empty() {
                runs.push((kv.key, run, part));
            }
        }
        if count < limit as usize {
            return Ok(());
        }
        let next = (limit as usize * BUCKET_PAGE_BYTES / bytes.max(1)) as u64;
        limit = next.clamp(u64::from(BUCKET_PAGE_MIN), u64::from(BUCKET_PAGE_MAX)) as u32;
    }
}

/// The doc tables of the runs in `runs` (one range read, from the first to the last).
async fn doc_tables(
    io: &Io,
    data_id: &str,
    runs: &[(Vec<u8>, u64, Segment)],
) -> Result<BTreeMap<u64, Vec<index::Doc>>, Error> {
    let mut tables = BTreeMap::new();
    let needed = crate::order::set_of(runs.iter().map(|(_, run, _)| *run));
    let (Some(&first), Some(&last)) = (needed.first(), needed.last()) else {
        return Ok(tables);
    };
    let mut end = index::run_key(data_id, index::DOCS, last);
    end.push(0);
    let tables_read = RangeQuery {
        range: KeyRange {
            start: index::run_key(data_id, index::DOCS, first),
            end: Some(end),
        },
        limit: 0,
        reverse: false,
    };
    for kv in io.range(tables_read).await? {
        let run = index::key_run(&kv.key)?;
        if needed.contains(&run) {
            let table = index::decode(&kv.key, &kv.value, |_: &[u8]| index::Want::SkipRest)?;
            tables.insert(run, table.docs);
        }
    }
    Ok(tables)
}

/// Sets `lists` to what each lookup finds in `parts`, the segments of one group of
/// entries (their postings index into the group's doc table).
fn gather<'a>(
    lists: &mut [Found],
    lookups: &[Lookup],
    parts: impl IntoIterator<Item = &'a Segment>,
) {
    lists.iter_mut().for_each(|f| f.0.clear());
    for part in parts {
        for (term, list) in &part.terms {
            for (found, lookup) in lists.iter_mut().zip(lookups) {
                if lookup.matches(term.as_bytes()) {
                    found.0.extend_from_slice(list);
                }
            }
        }
    }
    lists.iter_mut().for_each(Found::finish);
}

/// Whether some lookup whose last bucket is `b` (the buckets are read in increasing
/// order) has no term in the tail nor in the runs read.
fn lacks(lookups: &[Lookup], tail: &[Segment], runs: &[(Vec<u8>, u64, Segment)], b: u8) -> bool {
    let parts = || tail.iter().chain(runs.iter().map(|(_, _, part)| part));
    lookups.iter().any(|l| {
        l.buckets().max() == Some(b)
            && !parts().any(|part| part.terms.keys().any(|t| l.matches(t.as_bytes())))
    })
}

/// BM25 parameters.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A candidate hit; its place in the order is [`Candidate::rank`].
struct Candidate {
    score: u64,
    created_at: u64,
    /// Index into the searched identities.
    session: usize,
    /// Its session key's place in key order.
    key_rank: usize,
    id: u64,
}

impl Candidate {
    fn order(&self) -> (Reverse<u64>, Reverse<u64>, usize, Reverse<u64>) {
        (
            Reverse(self.score),
            Reverse(self.created_at),
            self.key_rank,
            Reverse(self.id),
        )
    }

    fn rank(&self, searched: &[Searched]) -> Rank {
        Rank {
            score: Reverse(self.score),
            created_at: Reverse(self.created_at),
            key: searched[self.session].key.clone(),
            id: Reverse(self.id),
        }
    }

    /// Whether it comes at or before `rank` in the order.
    fn not_after(&self, searched: &[Searched], rank: &Rank) -> bool {
        let mine = (
            Reverse(self.score),
            Reverse(self.created_at),
            searched[self.session].key.as_str(),
            Reverse(self.id),
        );
        mine <= (rank.score, rank.created_at, rank.key.as_str(), rank.id)
    }
}

/// Every hit of `searched`, scored.
fn candidates(searched: &[Searched], lookups: &[Lookup], total_docs: u64) -> Vec<Candidate> {
    if lookups.is_empty() {
        return Vec::new();
    }
    // Document frequencies and the average length of the entries matched.
    let mut df = vec![0u64; lookups.len()];
    let (mut lengths, mut docs) = (0u64, 0u64);
    for s in searched {
        for (all, one) in df.iter_mut().zip(&s.tally.df) {
            *all += one;
        }
        lengths += s.tally.lengths;
        docs += s.tally.docs;
    }
    let avgdl = if docs == 0 {
        1.0
    } else {
        (lengths as f64 / docs as f64).max(1.0)
    };
    let n = total_docs.max(df.iter().copied().max().unwrap_or(0)) as f64;
    let idf: Vec<f64> = df
        .iter()
        .map(|&d| (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln())
        .collect();
    let mut out = Vec::with_capacity(searched.iter().map(|s| s.tally.hits.len()).sum());
    for (si, s) in searched.iter().enumerate() {
        let tfs = s.tally.tfs.chunks_exact(lookups.len());
        for (doc, tfs) in s.tally.hits.iter().zip(tfs) {
            let mut score = 0.0;
            for ((lookup, &tf), idf) in lookups.iter().zip(tfs).zip(&idf) {
                if lookup.scored {
                    let tf = f64::from(tf);
                    let norm = 1.0 - B + B * f64::from(doc.len) / avgdl;
                    score += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
                }
            }
            let micros = (score * 1e6).round().max(0.0) as u64;
            out.push(Candidate {
                score: micros,
                created_at: doc.created_at,
                session: si,
                key_rank: s.key_rank,
                id: doc.id,
            });
        }
    }
    out
}

/// The candidates a page checks, in order: those after `cursor` (all without one), at
/// most [`MAX_SCANNED`] of them and the next one if any (so the caller knows more
/// follow). Only those are sorted: a common term has tens of thousands of candidates.
fn next_candidates(
    mut all: Vec<Candidate>,
    searched: &[Searched],
    cursor: Option<&Cursor>,
) -> Vec<Candidate> {
    if let Some(Cursor(after)) = cursor {
        all.retain(|c| !c.not_after(searched, after));
    }
    if all.len() > MAX_SCANNED + 1 {
        all.select_nth_unstable_by_key(MAX_SCANNED, Candidate::order);
        all.truncate(MAX_SCANNED + 1);
    }
    all.sort_unstable_by_key(Candidate::order);
    all
}

async fn read_entry(
    io: &Io,
    identity: Identity<'_>,
    created_at: u64,
    id: u64,
) -> Result<Option<Entry>, Error> {
    let active = keys::entry(identity.data_id, created_at, id);
    if let Some(bytes) = io.get(active.clone()).await? {
        return decode_entry(&active, &bytes, Some(identity.session_id)).map(Some);
    }
    // Compactions before record format 5 moved entries to the archive, same position.
    let archived = keys::archived(identity.data_id, &keys::position(created_at, id));
    match io.get(archived.clone()).await? {
        Some(bytes) => decode_entry(&archived, &bytes, Some(identity.session_id)).map(Some),
        None => Ok(None),
    }
}

async fn run(
    io: &Io,
    query: &Query,
    cursor: Option<Cursor>,
    limit: usize,
    digest: [u8; 8],
) -> OpResult<SearchPage> {
    let lookups = lookups(query);
    let mut sessions = sessions(io, query).await?;
    crate::order::sort_by(&mut sessions, |a, b| a.session.key.cmp(&b.session.key));
    let mut total_docs = 0u64;
    let mut unindexed = 0u64;
    // Retired history is read once, whoever reads it: its groups of postings, kept
    // to be split among the sessions that read it.
    let mut retired: BTreeMap<String, Vec<Group>> = BTreeMap::new();
    for (data_id, (session_id, newest)) in retired_history(io, &sessions).await? {
        total_docs = total_docs.saturating_add(newest);
        let mut groups = Vec::new();
        let mut keep = |docs: &[index::Doc], lists: &[Found]| {
            groups.push((docs.to_vec(), lists.to_vec()));
        };
        let identity = Identity {
            data_id: &data_id,
            session_id: &session_id,
        };
        read_identity(io, identity, newest, &lookups, &mut unindexed, &mut keep).await?;
        retired.insert(data_id, groups);
    }
    let mut searched = Vec::new();
    // Per retired identity, the layers of the sessions before: an entry is found once,
    // under the first session (in key order) that reads it.
    let mut claimed: BTreeMap<&str, Vec<&Layer>> = BTreeMap::new();
    let mut mine = vec![Found::default(); lookups.len()];
    for (key_rank, listed) in sessions.iter().enumerate() {
        let session = &listed.session;
        total_docs = total_docs.saturating_add(listed.own);
        let mut tally = Tally::new(lookups.len());
        let mut add =
            |docs: &[index::Doc], lists: &[Found]| tally.add(docs, lists, &lookups, query);
        let identity = Identity {
            data_id: &listed.data_id,
            session_id: &session.session_id,
        };
        read_identity(
            io,
            identity,
            session.last_entry_id,
            &lookups,
            &mut unindexed,
            &mut add,
        )
        .await?;
        if tally.complete() {
            searched.push(Searched {
                key: session.key.clone(),
                key_rank,
                session_id: session.session_id.clone(),
                data_id: listed.data_id.clone(),
                tally,
            });
        }
        for layer in &listed.base {
            let Some(groups) = retired.get(&layer.data_id) else {
                continue;
            };
            let earlier = claimed.entry(layer.data_id.as_str()).or_default();
            let mut tally = Tally::new(lookups.len());
            for (docs, lists) in groups {
                let read = |&&(at, _): &&(u32, u32)| {
                    let doc = &docs[at as usize];
                    covers(layer, doc) && !earlier.iter().any(|l| covers(l, doc))
                };
                for (mine, found) in mine.iter_mut().zip(lists) {
                    mine.0.clear();
                    mine.0.extend(found.0.iter().filter(read));
                }
                tally.add(docs, &mine, &lookups, query);
            }
            earlier.push(layer);
            if tally.complete() {
                searched.push(Searched {
                    key: session.key.clone(),
                    key_rank,
                    session_id: layer.identity().session_id.to_owned(),
                    data_id: layer.data_id.clone(),
                    tally,
                });
            }
        }
    }
    let all = candidates(&searched, &lookups, total_docs);
    let ranked = next_candidates(all, &searched, cursor.as_ref());
    let mut hits = Vec::new();
    let mut last = None;
    for (offset, candidate) in ranked.iter().enumerate() {
        if hits.len() == limit || offset == MAX_SCANNED {
            break;
        }
        last = Some(offset);
        let s = &searched[candidate.session];
        let identity = Identity {
            data_id: &s.data_id,
            session_id: &s.session_id,
        };
        let Some(entry) = read_entry(io, identity, candidate.created_at, candidate.id).await?
        else {
            continue;
        };
        let Some(snippet) = verify(&entry, query, &lookups) else {
            continue;
        };
        hits.push(SearchHit {
            session_key: s.key.clone(),
            session_id: s.session_id.clone(),
            entry_id: entry.id,
            message_id: entry.message_id,
            role: entry.role,
            created_at: entry.created_at,
            score: candidate.score as f64 / 1e6,
            snippet,
        });
    }
    let next_cursor = match last {
        Some(at) if at + 1 < ranked.len() => {
            Some(Cursor::encode(&ranked[at].rank(&searched), digest))
        }
        _ => None,
    };
    Ok(SearchPage {
        hits,
        next_cursor,
        unindexed,
    })
}

// ---- verification and snippets ------------------------------------------------

/// Whether `tokens` hold `phrase` at consecutive leaf positions.
fn holds_phrase(tokens: &[Token], phrase: &[String]) -> bool {
    let leaves: Vec<&str> = tokens
        .iter()
        .filter(|t| !t.compound)
        .map(|t| t.term.as_str())
        .collect();
    leaves
        .windows(phrase.len())
        .any(|w| w.iter().zip(phrase).all(|(a, b)| *a == b))
}

/// Checks the entry's phrases against its text; its snippet when it matches.
fn verify(entry: &Entry, query: &Query, lookups: &[Lookup]) -> Option<Snippet> {
    let fields: Vec<(&'static str, String)> = index::fields(entry)
        .into_iter()
        .map(|(name, text)| (name, index::capped(&text).to_owned()))
        .collect();
    let tokens: Vec<Vec<Token>> = fields.iter().map(|(_, t)| tokenize(t)).collect();
    let phrases: Vec<&Vec<String>> = query
        .clauses
        .iter()
        .filter_map(|c| match c {
            Clause::Phrase(p) => Some(p),
            _ => None,
        })
        .collect();
    let mut phrase_field = None;
    for phrase in &phrases {
        let at = tokens.iter().position(|t| holds_phrase(t, phrase))?;
        phrase_field.get_or_insert(at);
    }
    let text: Vec<&Lookup> = lookups.iter().filter(|l| l.scored).collect();
    let matched = |t: &Token| text.iter().any(|l| l.matches(t.term.as_bytes()));
    let field = phrase_field
        .or_else(|| tokens.iter().position(|ts| ts.iter().any(matched)))
        .unwrap_or(0);
    let (name, body) = &fields[field];
    let hits: Vec<(usize, usize)> = tokens[field]
        .iter()
        .filter(|t| matched(t))
        .map(|t| (t.start, t.end))
        .collect();
    Some(snippet(name, body, &hits))
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The snippet of `body` around the first of `hits` (byte ranges in `body`).
fn snippet(field: &str, body: &str, hits: &[(usize, usize)]) -> Snippet {
    let first = hits.first().map_or(0, |h| h.0);
    let mut start = floor_boundary(body, first.saturating_sub(SNIPPET_BYTES / 4));
    // Start at a word boundary when one is near.
    if start > 0
        && let Some(space) = body[start..first].find(char::is_whitespace)
    {
        start = floor_boundary(body, start + space + 1);
    }
    let end = floor_boundary(body, start + SNIPPET_BYTES);
    let mut highlights: Vec<(u32, u32)> = Vec::new();
    for &(s, e) in hits {
        if s < start || e > end {
            continue;
        }
        let (s, e) = ((s - start) as u32, (e - start) as u32);
        match highlights.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => highlights.push((s, e)),
        }
    }
    Snippet {
        field: field.to_owned(),
        text: body[start..end].to_owned(),
        highlights,
    }
}

#[cfg(test)]
mod tests;
