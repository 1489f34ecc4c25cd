//! Appends per second, each append its own durable commit (WAL, `synchronous=FULL`):
//! through the wasmtime component on `SqliteStorage`, versus raw rusqlite doing the
//! equivalent SQL with the same pragmas (read the session row, insert the entry row,
//! update the session row and its recency row, one transaction per append). Two
//! regimes: on disk (a directory in the target directory; durability is part of the
//! cost, goal component/raw >= 0.9) and on tmpfs (`/dev/shm`, where the fsync is nearly
//! free and the component's own cost shows; goal >= 0.7). Each regime times its appends
//! after [`WARM_UP`] appends per side, which it prints apart. Then the bytes on disk per
//! entry of each database (file + WAL after a checkpoint, divided by the entries; the
//! messages are ~100 bytes; goal for Spool <= 200). Then, on tmpfs, a fifth as many
//! appends of 4 KiB entries (a tool's output): no goal, the component's cost on entries
//! of the size agents write. Then, on tmpfs, a fifth as many single appends each after
//! a pause of about one fsync (timed without it): no goal, what an append costs with
//! cold caches, which is where the disk ratio goes below the tmpfs one. Last, the disk
//! regime again with `Durability::Normal` (`synchronous=NORMAL` on both sides: the WAL
//! is synced at checkpoints, not at each commit): no goal, what the documented faster
//! option gives.
//!
//! `cargo bench -p spool-host --bench append`; `SPOOL_BENCH_N` changes the count
//! (default 10000). Every figure is also printed as a `figure` line for
//! `cargo xtask bench`'s table.

#[path = "support/disk.rs"]
mod disk;
#[path = "support/figure.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use spool::{AppendRequest, Role};
use spool_host::{Durability, Instance, Runtime, SqliteStorage};
use support::figure;

const WS: &str = "default";
const KEY: &str = "agent:bench:main";

/// Entry `i`'s content: a ~100-byte message, or with `size` above that, the message
/// and lines of a tool's output up to `size` bytes.
fn content(i: usize, size: usize) -> String {
    let mut out = format!(
        "message {i}: the parser drops the last element of nested lists; moving the check after the push fixes it."
    );
    let mut line = 0;
    while out.len() < size {
        line += 1;
        out.push_str(&format!(
            "\nsrc/parser/mod_{}.rs:{}:9: warning: unused variable `depth_{line}`",
            (i + line) % 17,
            40 + line
        ));
    }
    out
}

fn request(i: usize, size: usize) -> AppendRequest {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let mut request = AppendRequest::new(role, content(i, size));
    request.token_count = Some(20 + (i % 7) as u64);
    request
}

/// Times appends `from..from + count`, made one at a time by `append(i)`. With `pause`,
/// sleeps that long before each append and times the appends alone: the caches are then
/// as cold as after an fsync on disk, with none of the disk's noise.
fn timed(
    from: usize,
    count: usize,
    pause: Option<Duration>,
    mut append: impl FnMut(usize),
) -> Duration {
    let Some(pause) = pause else {
        let start = Instant::now();
        (from..from + count).for_each(append);
        return start.elapsed();
    };
    let mut total = Duration::ZERO;
    for i in from..from + count {
        std::thread::sleep(pause);
        let start = Instant::now();
        append(i);
        total += start.elapsed();
    }
    total
}

/// One way of appending the bench's entries: `run(count)` appends the next `count`
/// entries (entry `i` is [`request`]`(i)`) and returns the time they took.
trait Side {
    /// Appends the next `count` entries.
    fn run(&mut self, count: usize) -> Duration;
    /// Checks every entry appended so far is there.
    fn check(&mut self);
    /// The database file.
    fn db(&self) -> PathBuf;
}

/// Appends through the wasmtime component on `SqliteStorage`: one `append_entry` per
/// entry (`batch` 1), or `append_entries` of `batch` entries per commit.
struct ComponentSide {
    spool: Instance,
    dir: PathBuf,
    file: String,
    batch: usize,
    /// Content bytes of each entry ([`content`]).
    size: usize,
    /// A sleep before each single append (see [`timed`]).
    pause: Option<Duration>,
    done: usize,
}

/// Entries per commit of the batched side.
const BATCH: usize = 8;

/// A session id as agents make them (a UUID): every key of the session holds it.
const SESSION_ID: &str = "0b7e4a52-9c1d-4f3e-8a6b-2d5c7e9f1a30";

impl ComponentSide {
    fn new(dir: &Path, batch: usize, size: usize, durability: Durability) -> Self {
        let file = format!("component-{batch}.db");
        let storage = SqliteStorage::open_with(dir.join(&file), durability).expect("open");
        let mut spool = Runtime::shared()
            .expect("runtime")
            .instantiate(storage, spool::NoArchive)
            .expect("instantiate");
        spool
            .call(
                WS,
                spool::ops::CreateSession {
                    key: KEY.to_owned(),
                    session_id: SESSION_ID.to_owned(),
                    now_ms: 1,
                },
            )
            .expect("create");
        ComponentSide {
            spool,
            dir: dir.to_owned(),
            file,
            batch,
            size,
            pause: None,
            done: 0,
        }
    }
}

impl Side for ComponentSide {
    fn run(&mut self, count: usize) -> Duration {
        let end = self.done + count;
        if self.batch == 1 {
            let (spool, size) = (&mut self.spool, self.size);
            let took = timed(self.done, count, self.pause, |i| {
                spool
                    .call(
                        WS,
                        spool::ops::AppendEntry {
                            key: KEY.to_owned(),
                            request: request(i, size),
                            now_ms: 2 + i as u64,
                        },
                    )
                    .expect("append");
            });
            self.done = end;
            return took;
        }
        let start = Instant::now();
        let mut i = self.done;
        while i < end {
            let next = (i + self.batch).min(end);
            self.spool
                .call(
                    WS,
                    spool::ops::AppendEntries {
                        key: KEY.to_owned(),
                        requests: (i..next).map(|i| request(i, self.size)).collect(),
                        now_ms: 2 + i as u64,
                    },
                )
                .expect("append_entries");
            i = next;
        }
        self.done = end;
        start.elapsed()
    }

    fn check(&mut self) {
        let session = self
            .spool
            .call(
                WS,
                spool::ops::GetSession {
                    key: KEY.to_owned(),
                },
            )
            .expect("get")
            .expect("exists");
        assert_eq!(session.entry_count, self.done as u64);
    }

    fn db(&self) -> PathBuf {
        self.dir.join(&self.file)
    }
}

const RAW_SCHEMA: &str = "
    CREATE TABLE session (
        workspace TEXT NOT NULL, key TEXT NOT NULL, session_id TEXT NOT NULL,
        status TEXT NOT NULL, epoch INTEGER NOT NULL, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL, entry_count INTEGER NOT NULL,
        last_entry_id INTEGER NOT NULL, total_tokens INTEGER NOT NULL,
        PRIMARY KEY (workspace, key)) WITHOUT ROWID;
    CREATE TABLE recency (
        workspace TEXT NOT NULL, updated_at INTEGER NOT NULL, key TEXT NOT NULL,
        PRIMARY KEY (workspace, updated_at, key)) WITHOUT ROWID;
    CREATE TABLE entry (
        workspace TEXT NOT NULL, session_id TEXT NOT NULL, created_at INTEGER NOT NULL,
        id INTEGER NOT NULL, message_id TEXT NOT NULL, role TEXT NOT NULL,
        content TEXT NOT NULL, token_count INTEGER, tool_calls TEXT, tool_call_id TEXT,
        turn_id TEXT,
        PRIMARY KEY (workspace, session_id, created_at, id)) WITHOUT ROWID;";

/// The same append in hand-written SQL on relational tables, same pragmas.
struct RawSide {
    conn: Connection,
    dir: PathBuf,
    size: usize,
    /// A sleep before each append (see [`timed`]).
    pause: Option<Duration>,
    done: usize,
}

impl RawSide {
    fn new(dir: &Path, size: usize, durability: Durability) -> Self {
        let conn = Connection::open(dir.join("raw.db")).expect("open");
        conn.busy_timeout(Duration::from_millis(5000))
            .expect("busy_timeout");
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
            .expect("wal");
        let synchronous = match durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", synchronous)
            .expect("synchronous");
        conn.execute_batch(RAW_SCHEMA).expect("schema");
        conn.execute(
            "INSERT INTO session VALUES (?1, ?2, ?3, 'running', 0, 1, 1, 0, 0, 0)",
            params![WS, KEY, SESSION_ID],
        )
        .expect("create");
        conn.execute("INSERT INTO recency VALUES (?1, 1, ?2)", params![WS, KEY])
            .expect("recency");
        RawSide {
            conn,
            dir: dir.to_owned(),
            size,
            pause: None,
            done: 0,
        }
    }

    fn append(&mut self, i: usize) {
        let now = 2 + i as i64;
        let req = request(i, self.size);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        let (session_id, updated_at, last_id): (String, i64, i64) = tx
            .prepare_cached(
                "SELECT session_id, updated_at, last_entry_id FROM session \
                 WHERE workspace = ?1 AND key = ?2",
            )
            .expect("prepare")
            .query_row(params![WS, KEY], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .expect("read")
            .expect("session exists");
        let id = last_id + 1;
        tx.prepare_cached(
            "INSERT INTO entry (workspace, session_id, created_at, id, message_id, role, content, \
             token_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .expect("prepare")
        .execute(params![
            WS,
            session_id,
            now,
            id,
            format!("{session_id}-{id}"),
            req.role.as_str(),
            req.content,
            req.token_count.map(|t| t as i64)
        ])
        .expect("insert entry");
        tx.prepare_cached(
            "UPDATE session SET updated_at = ?3, entry_count = entry_count + 1, \
             last_entry_id = ?4, total_tokens = total_tokens + ?5 \
             WHERE workspace = ?1 AND key = ?2",
        )
        .expect("prepare")
        .execute(params![
            WS,
            KEY,
            now,
            id,
            req.token_count.unwrap_or(0) as i64
        ])
        .expect("update session");
        tx.prepare_cached(
            "DELETE FROM recency WHERE workspace = ?1 AND updated_at = ?2 AND key = ?3",
        )
        .expect("prepare")
        .execute(params![WS, updated_at, KEY])
        .expect("delete recency");
        tx.prepare_cached("INSERT INTO recency VALUES (?1, ?2, ?3)")
            .expect("prepare")
            .execute(params![WS, now, KEY])
            .expect("insert recency");
        tx.commit().expect("commit");
    }
}

impl Side for RawSide {
    fn run(&mut self, count: usize) -> Duration {
        let (from, pause) = (self.done, self.pause);
        let took = timed(from, count, pause, |i| self.append(i));
        self.done += count;
        took
    }

    fn check(&mut self) {
        let count: i64 = self
            .conn
            .query_row("SELECT count(*) FROM entry", [], |r| r.get(0))
            .expect("count");
        assert_eq!(count, self.done as i64);
    }

    fn db(&self) -> PathBuf {
        self.dir.join("raw.db")
    }
}

/// Appends `n` entries on every side, interleaved in rounds (each round starts with the
/// next side), so all of them see the same disk: fsync latency drifts a lot on shared
/// machines. Returns each side's total time.
fn interleave(n: usize, sides: &mut [&mut dyn Side]) -> Vec<Duration> {
    let rounds = 20.min(n.max(1));
    let mut times = vec![Duration::ZERO; sides.len()];
    for round in 0..rounds {
        let count = n / rounds + usize::from(round < n % rounds);
        for k in 0..sides.len() {
            let s = (round + k) % sides.len();
            times[s] += sides[s].run(count);
        }
    }
    for side in sides.iter_mut() {
        side.check();
    }
    times
}

fn rate(n: usize, elapsed: Duration) -> f64 {
    n as f64 / elapsed.as_secs_f64()
}

/// Appends each side makes before the timed ones, so that each database's WAL file has
/// been checkpointed and restarted at least once (SQLite checkpoints at 1,000 pages,
/// and a single append writes one to three): until then every commit makes the file
/// longer, which on disk costs each fsync a journal commit of the file system. The
/// side that writes fewer pages per commit stays in that phase longer, so timing it
/// would compare the two unequally. Timed apart and printed, with no goal.
const WARM_UP: usize = 1_000;

/// One regime: after [`WARM_UP`] appends, `n` appends of entries of `size` content bytes
/// ([`content`]) on each side in a fresh directory under `dir`, the rates, and the
/// figures `append <label>: …` (component/raw against `goal`, if any).
fn regime(
    label: &str,
    where_: &str,
    dir: &Path,
    n: usize,
    goal: Option<f64>,
    size: usize,
    durability: Durability,
) {
    let mut raw = RawSide::new(dir, size, durability);
    let mut component = ComponentSide::new(dir, 1, size, durability);
    let mut batched = ComponentSide::new(dir, BATCH, size, durability);
    let warm = WARM_UP.min(n);
    let first = interleave(warm, &mut [&mut raw, &mut component, &mut batched]);
    let times = interleave(n, &mut [&mut raw, &mut component, &mut batched]);
    let (raw_rate, component_rate) = (rate(n, times[0]), rate(n, times[1]));
    let ratio = component_rate / raw_rate;
    let commit = match durability {
        Durability::Full => "each its own durable commit (WAL, synchronous=FULL)",
        Durability::Normal => {
            "each its own commit (WAL, synchronous=NORMAL: synced at checkpoints)"
        }
    };
    let first_ratio = rate(warm, first[1]) / rate(warm, first[0]);
    println!(
        "first {warm} appends {where_} (the WAL files still growing): component {:.1} µs, \
         raw {:.1} µs each, ratio {first_ratio:.2} (no goal; not in the figures below)",
        first[1].as_secs_f64() * 1e6 / warm as f64,
        first[0].as_secs_f64() * 1e6 / warm as f64,
    );
    figure(
        &format!("append {label}: component/raw, first {warm}"),
        first_ratio,
        "ratio",
        "-",
    );
    println!("the next {n} appends {where_}, {commit}:");
    println!(
        "  component + SQLite : {component_rate:>9.0} appends/s ({:.1} µs each)",
        times[1].as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "  raw rusqlite       : {raw_rate:>9.0} appends/s ({:.1} µs each)",
        times[0].as_secs_f64() * 1e6 / n as f64
    );
    let goal = goal.map_or("-".to_owned(), |g| format!(">= {g}"));
    println!("  ratio component/raw: {ratio:.2} (goal {goal})");
    let batched_rate = rate(n, times[2]);
    // The batch's goal is on disk with full durability, where the commit dominates.
    let batch_goal = if label == "disk" { ">= 4" } else { "-" };
    println!(
        "  component, {BATCH} per commit (append_entries): {batched_rate:>9.0} entries/s, \
         {:.1}x single appends (goal {batch_goal})",
        batched_rate / component_rate
    );
    figure(
        &format!("append {label}: k={BATCH} batch/single"),
        batched_rate / component_rate,
        "ratio",
        batch_goal,
    );
    figure(
        &format!("append {label}: component"),
        component_rate,
        "appends/s",
        "-",
    );
    figure(
        &format!("append {label}: raw rusqlite"),
        raw_rate,
        "appends/s",
        "-",
    );
    figure(
        &format!("append {label}: component/raw"),
        ratio,
        "ratio",
        &goal,
    );
    if label == "disk" {
        let appended = (warm + n) as f64;
        let per_entry = |side: &dyn Side| disk::bytes_on_disk(&side.db()) as f64 / appended;
        let (component_bytes, raw_bytes) = (per_entry(&component), per_entry(&raw));
        println!(
            "  bytes on disk per entry (file + WAL after a checkpoint, {} bytes of content \
             each): component {component_bytes:.0}, raw {raw_bytes:.0} (goal for Spool <= 200)",
            content(0, size).len()
        );
        figure(
            "bytes/entry: component",
            component_bytes,
            "B/entry",
            "<= 200",
        );
        figure("bytes/entry: raw rusqlite", raw_bytes, "B/entry", "-");
        // Where the component's bytes are: key + value bytes of each kind of record,
        // and what SQLite adds (record headers, cell pointers, the free space of
        // pages, interior pages).
        let mut parts = Vec::new();
        let mut stored = 0;
        for (tag, key, value) in rows_by_tag(&component.db()) {
            let (key, value) = (key as u64, value as u64);
            stored += key + value;
            let (k, v) = (key as f64 / appended, value as f64 / appended);
            if k + v >= 0.5 {
                parts.push(format!("`{}` {k:.1} + {v:.1}", char::from(tag)));
            }
        }
        println!(
            "    component per entry, key + value bytes by key tag: {}; SQLite's own {:.1}",
            parts.join(", "),
            component_bytes - stored as f64 / appended
        );
    }
}

/// The pause of [`paused`]: about one fsync of this machine's disk.
const PAUSE: Duration = Duration::from_micros(150);

/// Single appends on tmpfs with a [`PAUSE`] before each, timed without the pauses: what
/// an append costs when the caches have gone cold, as they do while a commit on disk
/// waits for its fsync. No goal: it shows where the disk ratio goes beyond the tmpfs one
/// (the component's code and data are a larger working set to bring back than raw
/// SQLite's), measured without the disk's noise.
fn paused(dir: &Path, n: usize) {
    let mut raw = RawSide::new(dir, 0, Durability::Full);
    let mut component = ComponentSide::new(dir, 1, 0, Durability::Full);
    interleave(WARM_UP.min(n), &mut [&mut raw, &mut component]);
    raw.pause = Some(PAUSE);
    component.pause = Some(PAUSE);
    let times = interleave(n, &mut [&mut raw, &mut component]);
    let each = |took: Duration| took.as_secs_f64() * 1e6 / n as f64;
    let ratio = rate(n, times[1]) / rate(n, times[0]);
    println!(
        "{n} appends on tmpfs, each after a pause of {} µs (timed without it): component \
         {:.1} µs, raw {:.1} µs each, ratio {ratio:.2} (no goal)",
        PAUSE.as_micros(),
        each(times[1]),
        each(times[0]),
    );
    figure("append tmpfs paused: component/raw", ratio, "ratio", "-");
}

/// What a Spool database's `kv` rows hold, by key tag (the key's first byte): key bytes
/// and value bytes, tags in byte order.
fn rows_by_tag(db: &Path) -> Vec<(u8, i64, i64)> {
    let conn = Connection::open(db).expect("open for reading");
    let mut stmt = conn
        .prepare(
            "SELECT substr(key, 1, 1), sum(length(key)), sum(length(value)) \
             FROM kv GROUP BY 1 ORDER BY 1",
        )
        .expect("prepare");
    stmt.query_map([], |row| {
        let tag: Vec<u8> = row.get(0)?;
        Ok((tag.first().copied().unwrap_or(0), row.get(1)?, row.get(2)?))
    })
    .expect("query")
    .collect::<rusqlite::Result<_>>()
    .expect("rows")
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with nothing, so
    // keep that run short.
    let benching = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SPOOL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 10_000 } else { 100 });
    // Load (and cache) the compiled component before timing anything.
    Runtime::shared().expect("runtime");

    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    regime(
        "disk",
        "on disk (the target directory)",
        disk.path(),
        n,
        Some(0.9),
        0,
        Durability::Full,
    );
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let tmpfs = tempfile::tempdir_in(shm).expect("tmpfs dir");
        regime(
            "tmpfs",
            "on tmpfs (/dev/shm)",
            tmpfs.path(),
            n,
            Some(0.7),
            0,
            Durability::Full,
        );
        // Agents' tool outputs run to kilobytes: the same appends with entries of 4 KiB
        // (no goal of their own; what the component costs on real entry sizes).
        let large = tempfile::tempdir_in(shm).expect("tmpfs dir");
        regime(
            "tmpfs 4 KiB",
            "of 4 KiB entries on tmpfs (/dev/shm)",
            large.path(),
            (n / 5).max(1),
            None,
            4096,
            Durability::Full,
        );
        let pauses = tempfile::tempdir_in(shm).expect("tmpfs dir");
        paused(pauses.path(), (n / 5).max(1));
    } else {
        println!("no /dev/shm on this machine: the tmpfs regime is skipped");
    }
    // The documented faster option, `Durability::Normal`: the same appends on disk, the
    // raw side with the same setting (no goal).
    let normal = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    regime(
        "disk normal",
        "on disk (the target directory)",
        normal.path(),
        n,
        None,
        0,
        Durability::Normal,
    );
}
