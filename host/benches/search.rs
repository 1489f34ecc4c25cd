//! Full-text search (issue 22), natively through the core (`spool::run`) on
//! `SqliteStorage` (WAL, `synchronous=FULL`): the same code the component runs, without
//! wasm (the search op is not on the component surface of this branch yet).
//!
//! 1. **Append cost of the index.** The core has no switch to turn indexing off, so
//!    the same single appends (each its own durable commit) run on three sides,
//!    interleaved in rounds so all see the same disk:
//!    - `indexed`: realistic agent text, index on (what Spool does);
//!    - `unindexed`: the same text through a storage wrapper that keeps every mutation
//!      under the index tag (`I`) out of the database, in memory, and answers the
//!      index's reads from there: what the index costs the database (bytes, pages,
//!      WAL, fsync) is gone, the core's CPU for it (tokenizing, encoding, runs) is
//!      still in, so `indexed/unindexed` is the database's share only;
//!    - `no-token`: index on, content of the same length that yields no token (letters
//!      and digits replaced by `.`): the index writes a segment with only a doc table
//!      and the role term, so `indexed - no-token` is what tokens cost.
//!
//!    Figures: `indexed/no-token` time per append (goal <= 1.25: the nearest to "without
//!    the index" the core allows) and `indexed/unindexed` on disk and on tmpfs, and the mutations and bytes the index adds to each commit
//!    (counted by the wrapper on the indexed side).
//! 2. **Index bytes per entry**: the keys and values under the index tag once the
//!    appends are done, divided by the entries; and the database bytes on disk (file +
//!    WAL after a checkpoint) indexed minus unindexed, divided by the entries.
//! 3. **Query latency** on a workspace of 100k entries in 10 sessions of realistic,
//!    deterministic agent text (prose, code identifiers, paths, error codes): the top 20
//!    hits (limit 20, first page) of a rare term, a common term, two terms (AND), a
//!    phrase, a prefix and a path, median of the runs (goal <= 20 ms), beside SQLite
//!    FTS5 (bundled, `unicode61` tokenizer, default options: no prefix index) over the
//!    same texts in its own database with the same pragmas, `bm25` ranking, `LIMIT 20`,
//!    with `snippet()` (Spool returns a snippet per hit). The two runs of each query are
//!    interleaved. The matches (FTS5 `count(*)`) are printed to show what each query
//!    matches, and Spool's storage reads (`get` and `range` calls) and the bytes they
//!    returned in the last run, to show where its time goes; the tokenizers differ (Spool also splits identifiers at `_` and case
//!    changes), so the queries are chosen to mean the same in both.
//!
//! `cargo bench -p spool-host --bench search`. `SPOOL_BENCH_N` is the appends per side
//! of 1 (default 3000), `SPOOL_BENCH_SEARCH_N` the entries of 3 (default 100000),
//! `SPOOL_BENCH_RUNS` the runs of each query (default 20), `SPOOL_BENCH_QUERY` keeps only
//! the queries whose label holds it (`path`, `prefix`, …); `cargo test --benches` runs
//! it with small counts. Every figure is also printed as a `figure` line for
//! `cargo xtask bench`'s table.

#[path = "support/disk.rs"]
mod disk;
#[path = "support/figure.rs"]
mod support;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use spool::keys::SEARCH_POSTINGS;
use spool::{
    AppendRequest, Batch, KeyRange, Kv, MemoryStorage, Mutation, RangeQuery, Role, SearchRequest,
    Storage, StorageError,
};
use spool_host::SqliteStorage;
use support::figure;

const WS: &str = "default";

// ---- deterministic agent text -----------------------------------------------------

/// xorshift64*: the same numbers on every run.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        // splitmix64 of the seed, so nearby seeds give unrelated streams.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Skewed towards the first items (log-uniform), as word frequencies are.
    fn skewed(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (((n as f64 + 1.0).powf(u) - 1.0) as usize).min(n - 1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.skewed(items.len())]
    }
}

const PROSE: &[&str] = &[
    "the",
    "to",
    "error",
    "is",
    "a",
    "in",
    "test",
    "and",
    "it",
    "of",
    "now",
    "this",
    "function",
    "file",
    "fails",
    "when",
    "value",
    "returns",
    "with",
    "build",
    "after",
    "check",
    "fix",
    "type",
    "line",
    "run",
    "passes",
    "instead",
    "because",
    "expected",
    "found",
    "missing",
    "field",
    "struct",
    "trait",
    "bound",
    "lifetime",
    "compile",
    "warning",
    "parser",
    "drops",
    "last",
    "element",
    "nested",
    "lists",
    "moving",
    "push",
    "release",
    "flags",
    "retry",
    "timeout",
    "connection",
    "refused",
    "request",
    "response",
    "header",
    "cache",
    "miss",
    "index",
    "query",
    "slow",
    "memory",
    "leak",
    "thread",
    "panic",
    "unwrap",
    "option",
    "result",
    "config",
    "directory",
    "permission",
    "denied",
    "update",
    "dependency",
    "version",
    "lock",
    "merge",
    "conflict",
    "branch",
    "commit",
    "mutable",
    "borrow",
    "iterator",
    "closure",
    "generic",
    "macro",
    "schema",
    "migration",
    "deadlock",
    "regression",
    "benchmark",
    "allocation",
    "overflow",
    "serialize",
    "encoding",
    "utf8",
    "socket",
    "handshake",
    "certificate",
    "flaky",
    "ordering",
    "checksum",
    "truncated",
];

const VERBS: &[&str] = &[
    "parse", "read", "write", "load", "store", "build", "flush", "merge", "split", "resolve",
    "handle", "encode", "decode", "fetch", "spawn", "commit", "validate",
];

const NOUNS: &[&str] = &[
    "nested_list",
    "config",
    "token",
    "header",
    "buffer",
    "segment",
    "session",
    "entry",
    "cursor",
    "index",
    "request",
    "batch",
    "schema",
    "module",
    "path",
    "frame",
    "record",
];

const DIRS: &[&str] = &[
    "parser", "storage", "search", "engine", "net", "cli", "api", "util", "tests", "web",
];

const SYS_ERRORS: &[&str] = &["ENOENT", "EACCES", "ECONNREFUSED", "EPIPE", "ETIMEDOUT"];

const ROLES: [Role; 2] = [Role::User, Role::Assistant];

/// The text of entry `i` (of `session`): a few sentences of prose with identifiers,
/// paths, error codes and numbers; assistant entries sometimes quote a code line or a
/// compiler error. Every 5000th entry (offset 17) says `heisenbug`: the rare term.
fn text(session: usize, i: usize) -> String {
    let mut rng = Rng::new(((session as u64) << 32) ^ i as u64);
    let mut out = String::new();
    let words = 10 + rng.below(50);
    for w in 0..words {
        if w > 0 {
            out.push(if rng.below(12) == 0 { '.' } else { ' ' });
            if out.ends_with('.') {
                out.push(' ');
            }
        }
        match rng.below(100) {
            0..=69 => out.push_str(rng.pick(PROSE)),
            70..=77 => {
                let (v, n) = (rng.pick(VERBS), rng.pick(NOUNS));
                match rng.below(3) {
                    0 => out.push_str(&format!("`{v}_{n}`")),
                    1 => {
                        out.push_str(v);
                        for part in n.split('_') {
                            let mut c = part.chars();
                            if let Some(first) = c.next() {
                                out.push(first.to_ascii_uppercase());
                                out.push_str(c.as_str());
                            }
                        }
                        out.push_str("()");
                    }
                    _ => out.push_str(&format!("{v}::{n}")),
                }
            }
            78..=84 => {
                let (d, n) = (rng.pick(DIRS), rng.pick(NOUNS));
                out.push_str(&format!("src/{d}/{n}.rs:{}", 1 + rng.below(900)));
            }
            85..=89 => out.push_str(&format!("E0{}", 100 + rng.skewed(700))),
            90..=92 => out.push_str(rng.pick(SYS_ERRORS)),
            _ => out.push_str(&(rng.below(100_000)).to_string()),
        }
    }
    out.push('.');
    match rng.below(20) {
        0 => out.push_str(
            "\nerror[E0502]: cannot borrow `self.items` as mutable because it is also \
             borrowed as immutable",
        ),
        1 => {
            let (v, n) = (rng.pick(VERBS), rng.pick(NOUNS));
            out.push_str(&format!(
                "\n    fn {v}_{n}(input: &str) -> Result<Vec<Token>, Error> {{ todo!() }}"
            ));
        }
        _ => {}
    }
    if i % 5000 == 17 {
        out.push_str(" Looks like a heisenbug: it only fails under load.");
    }
    out
}

fn request(session: usize, i: usize, tokens: bool) -> AppendRequest {
    let mut content = text(session, i);
    if !tokens {
        content = content
            .chars()
            .map(|c| if c.is_alphanumeric() { '.' } else { c })
            .collect();
    }
    let mut request = AppendRequest::new(ROLES[i % 2], content);
    request.token_count = Some(20 + (i % 7) as u64);
    request
}

fn session_key(s: usize) -> String {
    format!("agent:bench:s{s}")
}

fn session_id(s: usize) -> String {
    format!("0b7e4a52-9c1d-4f3e-8a6b-{s:012}")
}

fn create(storage: &impl Storage, s: usize) {
    spool::run(
        storage,
        spool::create_session(WS, &session_key(s), &session_id(s), 1),
    )
    .expect("create");
}

// ---- the storage wrapper ------------------------------------------------------------

fn is_index(key: &[u8]) -> bool {
    key.first() == Some(&SEARCH_POSTINGS)
}

/// `SqliteStorage` that counts what the core commits, and with `keep_index` false keeps
/// every mutation under the index tag out of the database, in memory (`aside`), and
/// answers the index's reads from there: the core does the same work, the database
/// carries no index.
struct Sieve {
    inner: SqliteStorage,
    keep_index: bool,
    aside: MemoryStorage,
    commits: Cell<u64>,
    mutations: Cell<u64>,
    bytes: Cell<u64>,
    index_mutations: Cell<u64>,
    index_bytes: Cell<u64>,
    /// Reads (`get` and `range` calls) and the bytes of keys and values they returned.
    reads: Cell<u64>,
    read_bytes: Cell<u64>,
}

impl Sieve {
    fn new(inner: SqliteStorage, keep_index: bool) -> Self {
        Sieve {
            inner,
            keep_index,
            aside: MemoryStorage::new(),
            commits: Cell::new(0),
            mutations: Cell::new(0),
            bytes: Cell::new(0),
            index_mutations: Cell::new(0),
            index_bytes: Cell::new(0),
            reads: Cell::new(0),
            read_bytes: Cell::new(0),
        }
    }
}

/// What [`Batch::written_bytes`] counts for one mutation.
fn written(m: &Mutation) -> usize {
    match m {
        Mutation::Put(kv) => kv.key.len() + kv.value.len(),
        Mutation::Delete(key) => key.len(),
        Mutation::DeleteRange(r) => r.start.len() + r.end.as_ref().map_or(0, Vec::len),
    }
}

fn add(cell: &Cell<u64>, n: usize) {
    cell.set(cell.get() + n as u64);
}

impl Storage for Sieve {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if !self.keep_index && is_index(key) {
            return self.aside.get(workspace, key);
        }
        add(&self.reads, 1);
        let value = self.inner.get(workspace, key)?;
        add(
            &self.read_bytes,
            value.as_ref().map_or(0, |v| key.len() + v.len()),
        );
        Ok(value)
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        if !self.keep_index && is_index(&query.range.start) {
            return self.aside.range(workspace, query);
        }
        add(&self.reads, 1);
        let kvs = self.inner.range(workspace, query)?;
        add(
            &self.read_bytes,
            kvs.iter().map(|kv| kv.key.len() + kv.value.len()).sum(),
        );
        Ok(kvs)
    }

    fn commit(&self, workspace: &str, mut batch: Batch) -> Result<(), StorageError> {
        add(&self.commits, 1);
        add(&self.mutations, batch.mutations.len());
        add(&self.bytes, batch.written_bytes());
        let index = |m: &Mutation| match m {
            Mutation::Put(kv) => is_index(&kv.key),
            Mutation::Delete(key) => is_index(key),
            Mutation::DeleteRange(r) => is_index(&r.start),
        };
        // Counted in place (no copy), the same on both sides.
        for m in batch.mutations.iter().filter(|m| index(m)) {
            add(&self.index_mutations, 1);
            add(&self.index_bytes, written(m));
        }
        if !self.keep_index {
            let (aside, kept) = batch.mutations.into_iter().partition(index);
            batch.mutations = kept;
            if !aside.is_empty() {
                let batch = Batch {
                    mutations: aside,
                    ..Batch::default()
                };
                self.aside.commit(workspace, batch)?;
            }
        }
        self.inner.commit(workspace, batch)
    }

    fn begin_operation(&self) {
        self.inner.begin_operation();
    }

    fn end_operation(&self) {
        self.inner.end_operation();
    }
}

/// The keys and values under the index tag: (records, bytes).
fn index_bytes(storage: &impl Storage) -> (u64, u64) {
    let mut records = 0;
    let mut bytes = 0;
    let query = RangeQuery {
        range: KeyRange::prefix(&[SEARCH_POSTINGS]),
        limit: 0,
        reverse: false,
    };
    for kv in storage.range(WS, &query).expect("range") {
        records += 1;
        bytes += (kv.key.len() + kv.value.len()) as u64;
    }
    (records, bytes)
}

// ---- 1 and 2: append cost and index size ----------------------------------------------

/// One side of the append comparison: single appends to one session.
struct AppendSide {
    storage: Sieve,
    db: PathBuf,
    tokens: bool,
    done: usize,
}

impl AppendSide {
    fn new(dir: &Path, name: &str, keep_index: bool, tokens: bool) -> Self {
        let db = dir.join(format!("{name}.db"));
        let storage = Sieve::new(SqliteStorage::open(&db).expect("open"), keep_index);
        create(&storage, 0);
        AppendSide {
            storage,
            db,
            tokens,
            done: 0,
        }
    }

    fn run(&mut self, count: usize) -> Duration {
        let key = session_key(0);
        let requests: Vec<AppendRequest> = (self.done..self.done + count)
            .map(|i| request(0, i, self.tokens))
            .collect();
        let start = Instant::now();
        for (k, request) in requests.into_iter().enumerate() {
            let now = 2 + (self.done + k) as u64;
            spool::run(&self.storage, spool::append_entry(WS, &key, request, now)).expect("append");
        }
        self.done += count;
        start.elapsed()
    }
}

fn per_append(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_secs_f64() * 1e6 / n as f64
}

fn append_regime(label: &str, where_: &str, dir: &Path, n: usize) {
    let mut sides = [
        AppendSide::new(dir, "indexed", true, true),
        AppendSide::new(dir, "unindexed", false, true),
        AppendSide::new(dir, "no-token", true, false),
    ];
    let rounds = 20.min(n.max(1));
    let mut times = [Duration::ZERO; 3];
    for round in 0..rounds {
        let count = n / rounds + usize::from(round < n % rounds);
        for k in 0..sides.len() {
            let s = (round + k) % sides.len();
            times[s] += sides[s].run(count);
        }
    }
    let [indexed, unindexed, no_token] = times.map(|t| per_append(t, n));
    println!(
        "{n} single appends {where_}, native core on SqliteStorage, each its own durable \
         commit (WAL, synchronous=FULL):"
    );
    println!("  indexed (Spool)              : {indexed:>8.1} µs/append");
    println!("  index kept out of the database: {unindexed:>7.1} µs/append");
    println!("  indexed, content of no token : {no_token:>8.1} µs/append");
    println!(
        "  indexed/unindexed {:.3} (the database's share), indexed/no-token {:.3} (goal <= 1.25)",
        indexed / unindexed,
        indexed / no_token
    );
    figure(
        &format!("search append {label}: indexed/unindexed"),
        indexed / unindexed,
        "ratio",
        "-",
    );
    figure(
        &format!("search append {label}: indexed/no-token"),
        indexed / no_token,
        "ratio",
        "<= 1.25",
    );
    figure(
        &format!("search append {label}: indexed"),
        indexed,
        "µs/append",
        "-",
    );
    if label != "disk" {
        return;
    }
    let s = &sides[0].storage;
    let (commits, mutations, bytes) = (s.commits.get(), s.mutations.get(), s.bytes.get());
    let (index_mutations, index_bytes_written) = (s.index_mutations.get(), s.index_bytes.get());
    let per = |x: u64| x as f64 / commits as f64;
    println!(
        "  per commit of the indexed side: {:.2} mutations ({:.2} of the index, +{:.1}%), \
         {:.0} bytes written ({:.0} of the index, +{:.1}%)",
        per(mutations),
        per(index_mutations),
        100.0 * index_mutations as f64 / (mutations - index_mutations) as f64,
        per(bytes),
        per(index_bytes_written),
        100.0 * index_bytes_written as f64 / (bytes - index_bytes_written) as f64,
    );
    figure(
        "search append: index bytes written/append",
        per(index_bytes_written),
        "B/append",
        "-",
    );
    figure(
        "search append: index share of bytes written",
        100.0 * index_bytes_written as f64 / (bytes - index_bytes_written) as f64,
        "% more",
        "-",
    );
    let (records, stored) = index_bytes(&sides[0].storage.inner);
    let per_entry = |side: &AppendSide| disk::bytes_on_disk(&side.db) as f64 / n as f64;
    let (with, without) = (per_entry(&sides[0]), per_entry(&sides[1]));
    println!(
        "  index stored: {records} records, {:.1} bytes/entry (keys + values); on disk \
         (file + WAL after a checkpoint) {with:.0} bytes/entry indexed, {without:.0} \
         unindexed: +{:.0} bytes/entry",
        stored as f64 / n as f64,
        with - without
    );
    figure(
        "search index: stored bytes/entry",
        stored as f64 / n as f64,
        "B/entry",
        "-",
    );
    figure(
        "search index: disk bytes/entry (indexed - unindexed)",
        with - without,
        "B/entry",
        "-",
    );
}

// ---- 3: query latency ----------------------------------------------------------------

const SESSIONS: usize = 10;
/// Entries per commit while building the query workspace.
const BUILD_BATCH: usize = 100;

/// The query kinds: name, Spool's query, FTS5's query.
const QUERIES: &[(&str, &str, &str)] = &[
    ("rare term", "heisenbug", "heisenbug"),
    ("common term", "error", "error"),
    ("two terms", "borrow mutable", "borrow mutable"),
    ("phrase", "\"cannot borrow\"", "\"cannot borrow\""),
    ("prefix", "pars*", "pars*"),
    ("path", "src/parser/token.rs", "\"src parser token rs\""),
];

fn open_fts(db: &Path) -> Connection {
    let conn = Connection::open(db).expect("open fts");
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous");
    conn
}

/// Builds the workspace (Spool and FTS5, the same texts, `BUILD_BATCH` entries per
/// commit, sessions in turn) and prints what it took.
fn build(dir: &Path, total: usize) -> (Sieve, Connection) {
    let storage = Sieve::new(
        SqliteStorage::open(dir.join("spool.db")).expect("open"),
        true,
    );
    let fts = open_fts(&dir.join("fts5.db"));
    fts.execute_batch(
        "CREATE VIRTUAL TABLE fts USING fts5(content, session UNINDEXED, role UNINDEXED);",
    )
    .expect("fts5 table (is FTS5 compiled in?)");
    for s in 0..SESSIONS {
        create(&storage, s);
    }
    let per_session = total.div_ceil(SESSIONS);
    let (mut spool_time, mut fts_time) = (Duration::ZERO, Duration::ZERO);
    let mut now = 2u64;
    let mut done = 0;
    let mut offset = 0;
    while done < total {
        for s in 0..SESSIONS {
            let count = BUILD_BATCH.min(per_session - offset).min(total - done);
            if count == 0 {
                continue;
            }
            let requests: Vec<AppendRequest> = (offset..offset + count)
                .map(|i| request(s, i, true))
                .collect();
            let start = Instant::now();
            let tx = fts.unchecked_transaction().expect("begin");
            {
                let mut insert = tx
                    .prepare_cached("INSERT INTO fts (content, session, role) VALUES (?1, ?2, ?3)")
                    .expect("prepare");
                for r in &requests {
                    insert
                        .execute(params![r.content, session_key(s), r.role.as_str()])
                        .expect("insert");
                }
            }
            tx.commit().expect("commit");
            fts_time += start.elapsed();
            let start = Instant::now();
            spool::run(
                &storage,
                spool::append_entries(WS, &session_key(s), requests, now),
            )
            .expect("append_entries");
            spool_time += start.elapsed();
            now += 1;
            done += count;
        }
        offset += BUILD_BATCH;
    }
    let rate = |t: Duration| total as f64 / t.as_secs_f64();
    println!(
        "built {total} entries in {SESSIONS} sessions, {BUILD_BATCH} per commit: Spool (indexed) \
         {:.0} entries/s, FTS5 {:.0} entries/s",
        rate(spool_time),
        rate(fts_time)
    );
    (storage, fts)
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e3
}

fn query_latency(dir: &Path, total: usize, runs: usize) {
    let (storage, fts) = build(dir, total);
    // The figures' names say the workspace's size: `100k` by default.
    let size = if total.is_multiple_of(1000) {
        format!("{}k", total / 1000)
    } else {
        total.to_string()
    };
    let (records, stored) = index_bytes(&storage);
    let fts_index: i64 = fts
        .query_row(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat \
             WHERE name LIKE 'fts_%' AND name != 'fts_content'",
            [],
            |r| r.get(0),
        )
        .expect("dbstat");
    println!(
        "  index: Spool {records} records, {:.1} bytes/entry (keys + values); FTS5 {:.1} \
         bytes/entry (its index tables' pages, dbstat)",
        stored as f64 / total as f64,
        fts_index as f64 / total as f64
    );
    figure(
        &format!("search index {size}: Spool stored bytes/entry"),
        stored as f64 / total as f64,
        "B/entry",
        "-",
    );
    figure(
        &format!("search index {size}: FTS5 index bytes/entry"),
        fts_index as f64 / total as f64,
        "B/entry",
        "-",
    );
    let mut select = fts
        .prepare(
            "SELECT rowid, session, snippet(fts, 0, '[', ']', '…', 16), bm25(fts) FROM fts \
             WHERE fts MATCH ?1 ORDER BY bm25(fts) LIMIT 20",
        )
        .expect("prepare");
    let mut count = fts
        .prepare("SELECT count(*) FROM fts WHERE fts MATCH ?1")
        .expect("prepare");
    println!(
        "top 20 hits on {total} entries, median of {runs} runs (Spool native core on \
         SqliteStorage; FTS5 bm25 + snippet, LIMIT 20):"
    );
    println!(
        "  {:<12} {:>8} {:>10} {:>9} {:>10} {:>10} {:>8} {:>12} {:>12}",
        "query",
        "matches",
        "Spool hits",
        "FTS5 hits",
        "Spool ms",
        "FTS5 ms",
        "ratio",
        "Spool reads",
        "KiB read"
    );
    // `SPOOL_BENCH_QUERY`: only the queries whose label holds it (to profile one).
    let filter = std::env::var("SPOOL_BENCH_QUERY").ok();
    for (name, ours, theirs) in QUERIES {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let matches: i64 = count.query_row([theirs], |r| r.get(0)).expect("count");
        let mut spool_times = Vec::with_capacity(runs);
        let mut fts_times = Vec::with_capacity(runs);
        let mut hits = 0;
        let mut fts_hits = 0;
        // One unmeasured run of each first (page cache, statement cache).
        for run in 0..=runs {
            storage.reads.set(0);
            storage.read_bytes.set(0);
            let start = Instant::now();
            let page = spool::run(
                &storage,
                spool::search(
                    WS,
                    SearchRequest {
                        query: (*ours).to_owned(),
                        limit: 20,
                        cursor: None,
                    },
                ),
            )
            .expect("search");
            let spool_elapsed = start.elapsed();
            hits = page.hits.len();
            let start = Instant::now();
            let rows = select
                .query_map([theirs], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, f64>(3)?,
                    ))
                })
                .expect("query")
                .collect::<Result<Vec<_>, _>>()
                .expect("rows");
            let fts_elapsed = start.elapsed();
            fts_hits = rows.len();
            if run > 0 {
                spool_times.push(spool_elapsed);
                fts_times.push(fts_elapsed);
            }
        }
        assert!(
            matches == 0 || hits > 0,
            "{name}: Spool found nothing, FTS5 {matches} matches"
        );
        let (ms, fts_ms) = (median(spool_times), median(fts_times));
        println!(
            "  {name:<12} {matches:>8} {hits:>10} {fts_hits:>9} {ms:>10.3} {fts_ms:>10.3} \
             {:>8.2} {:>12} {:>12.0}",
            ms / fts_ms,
            storage.reads.get(),
            storage.read_bytes.get() as f64 / 1024.0
        );
        figure(&format!("search {size}: {name}"), ms, "ms", "<= 20");
        figure(&format!("search {size}: {name} FTS5"), fts_ms, "ms", "-");
        figure(
            &format!("search {size}: {name} Spool/FTS5"),
            ms / fts_ms,
            "ratio",
            "-",
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with nothing, so
    // keep that run short.
    let benching = std::env::args().any(|a| a == "--bench");
    let knob = |name: &str, bench: usize, smoke: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if benching { bench } else { smoke })
    };
    let n = knob("SPOOL_BENCH_N", 3000, 100);
    let total = knob("SPOOL_BENCH_SEARCH_N", 100_000, 2000);
    let runs = knob("SPOOL_BENCH_RUNS", 20, 2).max(1);

    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    append_regime("disk", "on disk (the target directory)", disk.path(), n);
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let tmpfs = tempfile::tempdir_in(shm).expect("tmpfs dir");
        append_regime("tmpfs", "on tmpfs (/dev/shm)", tmpfs.path(), n);
    } else {
        println!("no /dev/shm on this machine: the tmpfs regime is skipped");
    }
    let workspace = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    query_latency(workspace.path(), total, runs);
}
