//! The size ladder (issue 17, every operation in bounded memory): sessions of 10 MiB,
//! 100 MiB and 1 GiB of content, and on each the operations of the bounded-memory
//! workload (`tests/suite/common/workload.rs`): append, the newest page, two compactions,
//! export (the canonical transcript, page by page into a file as `spool export` writes
//! it, each entry checked as it comes), import of the export (read back line by line), a
//! branch, deleting the parent while the branch reads its history, and a
//! reset of the branch. Every operation runs through the component on `SqliteStorage`
//! (a file in a temporary directory on disk), in a child process of its own (this
//! binary again) and a fresh instance, and is checked for what it must have done.
//!
//! For each: the wall time of the call(s), the peak host RSS (`VmHWM`, reset through
//! `/proc/self/clear_refs` just before the operation, so it is the process's resident
//! set at its largest *during* the operation, baseline included) and the peak guest
//! linear memory ([`Instance::peak_memory_bytes`]), beside the **limit**: raw SQLite
//! (rusqlite, the same pragmas) doing the same minimal work on a copy of the database
//! taken after the build — write one entry row and the session record (append), read the
//! newest rows (page), move the entry rows a compaction removes to the archive range
//! (compact), read every entry row (export), write them again under another identity
//! (import, 1,000 rows per transaction), copy the parent's rows to the branch and delete
//! them (delete), read the branch's rows into a file, sync it and delete them (reset).
//! A branch writes a few records whatever the size: it has no limit row. An operation
//! that fails prints its error code (e.g. `resource_limit (memory)`), and the ladder
//! goes on.
//!
//! The session is built through the component with `commit_turn` (4 MiB per commit):
//! turns of a goal or question, a tool call, its output and an answer, 4 KiB each, and
//! one 4 MiB tool output per 256 MiB (at least one from 8 MiB on).
//!
//! `cargo bench -p spool-host --bench size_ladder`. `SPOOL_LADDER_SIZES=10M,100M` picks
//! the sizes (suffix K, M, G: KiB, MiB, GiB; default `10M,100M,1G`);
//! `SPOOL_LADDER_MEMORY_MIB` the guest memory limit (default 256, Spool's default).
//! Run without `--bench` (`cargo test --benches`) it does one 1 MiB session.

#[path = "../tests/suite/common/workload.rs"]
mod workload;

#[path = "support/status.rs"]
mod support;

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use rusqlite::{Connection, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use spool::keys;
use spool_host::{ArchiveDir, DEFAULT_MEMORY_LIMIT, Error, Runtime, SqliteStorage};
use support::status_bytes;
use workload::{Before, OPS, Op, Shape};

/// The argument that makes this binary a child running one operation.
const CHILD: &str = "--ladder-child";
/// Content bytes of an ordinary entry.
const ENTRY_BYTES: usize = 4096;
/// Content bytes of a large tool output: the most an entry holds.
const BIG_OUTPUT_BYTES: usize = spool::validate::MAX_CONTENT_BYTES;
const MIB: u64 = 1024 * 1024;

/// The shape of a session of `bytes` of content: one large tool output per 256 MiB, at
/// least one from 8 MiB on (none in a smaller session, which it would be most of).
fn shape(bytes: u64) -> Shape {
    let big = match bytes {
        b if b < 8 * MIB => 0,
        b => (b / (256 * MIB)).clamp(1, 8) as usize,
    };
    Shape::of_bytes(bytes, ENTRY_BYTES, big, BIG_OUTPUT_BYTES)
}

/// What one measured run reported; a child prints it as one JSON line.
#[derive(Debug, Serialize, Deserialize)]
struct Measured {
    secs: f64,
    /// The resident set before the operation and at its peak during it (bytes).
    rss_before: u64,
    rss_peak: u64,
    /// Whether the peak could be reset before the operation (else it is the process's).
    rss_reset: bool,
    /// The peak linear memory of the guest (component runs only).
    guest_peak: Option<u64>,
    /// What it did, or why it failed (an error code, or a wrong result).
    outcome: Result<String, String>,
}

impl Measured {
    fn failed(why: String) -> Measured {
        Measured {
            secs: 0.0,
            rss_before: 0,
            rss_peak: 0,
            rss_reset: false,
            guest_peak: None,
            outcome: Err(why),
        }
    }
}

/// Times an operation and takes its peak resident set.
struct Meter {
    start: Instant,
    rss_before: u64,
    rss_reset: bool,
}

impl Meter {
    fn start() -> Meter {
        // "5" resets the peak resident set (VmHWM) to the current one (Linux).
        let rss_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        Meter {
            rss_before: status_bytes("VmRSS"),
            rss_reset,
            start: Instant::now(),
        }
    }

    fn stop(self, guest_peak: Option<u64>, outcome: Result<String, String>) -> Measured {
        Measured {
            secs: self.start.elapsed().as_secs_f64(),
            rss_before: self.rss_before,
            rss_peak: status_bytes("VmHWM"),
            rss_reset: self.rss_reset,
            guest_peak,
            outcome,
        }
    }
}

fn describe(error: &Error) -> String {
    match error {
        Error::ResourceLimit { limit, .. } => format!("resource_limit ({limit})"),
        other => format!("{}: {}", other.code(), clip(&other.message(), 60)),
    }
}

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

// ---- child: one operation ----

fn child(args: &[String]) {
    let [kind, op, dir, bytes, limit] = args else {
        panic!("{CHILD} KIND OP DIR BYTES LIMIT, got {args:?}");
    };
    let op = Op::parse(op).unwrap_or_else(|| panic!("no operation {op:?}"));
    let dir = PathBuf::from(dir);
    let shape = shape(bytes.parse().expect("BYTES"));
    let limit: usize = limit.parse().expect("LIMIT");
    let measured = match kind.as_str() {
        "op" => run_op(op, &dir, &shape, limit),
        "raw" => run_raw(op, &dir),
        other => panic!("no kind {other:?}"),
    };
    println!(
        "{}",
        serde_json::to_string(&measured).expect("encode the measurement")
    );
}

/// Runs `op` through the component in a fresh instance limited to `limit` bytes.
fn run_op(op: Op, dir: &Path, shape: &Shape, limit: usize) -> Measured {
    let db = dir.join("spool.db");
    let runtime = Runtime::shared().expect("runtime");
    let open = || SqliteStorage::open(&db).expect("open the database");
    let mut verifier = runtime
        .instantiate(open(), spool::NoArchive)
        .expect("instantiate the verifier");
    let before = Before::read(&mut verifier).expect("read the sessions");
    let mut spool = runtime
        .instantiate_with_memory_limit(open(), ArchiveDir::new(dir.join("archives")), limit)
        .expect("instantiate");
    let now = workload::T_OPS + OPS.iter().position(|o| *o == op).unwrap_or(0) as u64;
    let export = dir.join("export.jsonl");
    // A first call pages in the compiled code and sets up the guest: not the operation's.
    spool
        .call(
            workload::WS,
            spool::ops::GetSession {
                key: "agent:ladder:warm-up".into(),
            },
        )
        .expect("warm up");
    let meter = Meter::start();
    let result = match op {
        // The export's JSON Lines, read as the import goes.
        Op::Import if export.exists() => {
            let lines = BufReader::new(File::open(&export).expect("open the export")).lines();
            let entries = lines.map(|line| {
                let line = line.expect("read the export");
                workload::to_imported(serde_json::from_str(&line).expect("an exported entry"))
            });
            workload::import(&mut spool, entries, now)
        }
        // The export failed: the same log, rebuilt.
        Op::Import => {
            let last = before.parent.as_ref().map_or(0, |p| p.last_entry_id);
            workload::import(&mut spool, workload::log(shape, last), now)
        }
        // Page by page into the file, as `spool export` writes it, each entry checked as
        // it comes: the harness holds a page, not the session.
        Op::Export => {
            let outcome = export_to(&mut spool, shape, &before, &export);
            if outcome.is_err() {
                // The import then imports the same log, rebuilt.
                let _ = std::fs::remove_file(&export);
            }
            let guest_peak = Some(spool.peak_memory_bytes() as u64);
            return meter.stop(guest_peak, outcome);
        }
        op => workload::perform(op, &mut spool, now),
    };
    let guest_peak = Some(spool.peak_memory_bytes() as u64);
    let mut measured = meter.stop(guest_peak, Err(String::new()));
    drop(spool);
    measured.outcome = match result {
        Ok(output) => workload::check(op, shape, &before, &output, &mut verifier)
            .map_err(|why| format!("wrong result: {why}")),
        Err(e) => Err(describe(&e)),
    };
    measured
}

/// [`Op::Export`] in the ladder: the canonical transcript read page by page, each entry
/// checked and written to `path` as a JSON line; what it found, or why it is wrong.
fn export_to(
    spool: &mut spool_host::Instance,
    shape: &Shape,
    before: &Before,
    path: &Path,
) -> Result<String, String> {
    let last = before
        .parent
        .as_ref()
        .map(|p| p.last_entry_id)
        .ok_or("no parent session")?;
    let mut out = BufWriter::new(File::create(path).expect("create the export"));
    let (mut n, mut bytes, mut cursor) = (0usize, 0u64, None);
    loop {
        let request = spool::PageRequest {
            order: spool::Order::OldestFirst,
            cursor,
            limit: spool::MAX_PAGE,
        };
        let page = spool
            .call(
                workload::WS,
                spool::ops::ReadCanonicalPage {
                    key: workload::PARENT.into(),
                    request,
                },
            )
            .map_err(|e| describe(&e))?;
        for entry in &page.entries {
            workload::check_canonical_entry(shape, n, entry)
                .map_err(|why| format!("wrong result: {why}"))?;
            serde_json::to_writer(&mut out, entry).expect("write the export");
            out.write_all(b"\n").expect("write the export");
            bytes += entry.content.len() as u64;
            n += 1;
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    out.flush().expect("write the export");
    if n as u64 != last {
        return Err(format!("wrong result: {n} entries, want {last}"));
    }
    Ok(format!("{n} entries, {}", workload::mib(bytes)))
}

// ---- child: the limit, raw SQLite ----

const RAW_BRANCH: &str = "raw-branch";
const RAW_IMPORTED: &str = "raw-imported";
const PUT: &str = "INSERT OR REPLACE INTO kv (workspace, key, value) VALUES (?1, ?2, ?3)";

fn raw_connection(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("open the raw database");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy_timeout");
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous");
    conn
}

/// The key range of an identity's records with `tag`.
fn range_of(tag: u8, data_id: &str) -> (Vec<u8>, Vec<u8>) {
    let start = keys::identity(tag, data_id);
    let end = spool::prefix_end(&start).expect("a prefix has an end");
    (start, end)
}

/// Calls `f` with the rows of `[start, end)` in key order, 256 at a time (so the
/// statement reading them is done before `f` writes).
fn in_batches(
    tx: &Transaction<'_>,
    (start, end): (&[u8], &[u8]),
    mut f: impl FnMut(&[(Vec<u8>, Vec<u8>)]) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let mut from = start.to_vec();
    loop {
        let rows: Vec<(Vec<u8>, Vec<u8>)> = tx
            .prepare_cached(
                "SELECT key, value FROM kv WHERE workspace = ?1 AND key >= ?2 AND key < ?3 \
                 ORDER BY key LIMIT 256",
            )?
            .query_map(params![raw_ws(), from, end], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let Some((last, _)) = rows.last() else {
            return Ok(());
        };
        from.clone_from(last);
        from.push(0);
        f(&rows)?;
    }
}

/// Copies the rows of `(tag, from_id)` to `(tag, to_id)`, same suffixes; returns the
/// rows and value bytes copied.
fn copy_identity(
    tx: &Transaction<'_>,
    tag: u8,
    from_id: &str,
    to_id: &str,
    end: Option<&[u8]>,
) -> rusqlite::Result<(u64, u64)> {
    let (start, full_end) = range_of(tag, from_id);
    let target = keys::identity(tag, to_id);
    copy_rows(tx, (&start, end.unwrap_or(&full_end)), start.len(), &target)
}

fn copy_rows(
    tx: &Transaction<'_>,
    range: (&[u8], &[u8]),
    prefix_len: usize,
    target: &[u8],
) -> rusqlite::Result<(u64, u64)> {
    let (mut rows, mut bytes) = (0, 0);
    in_batches(tx, range, |batch| {
        let mut put = tx.prepare_cached(PUT)?;
        for (key, value) in batch {
            let mut moved = target.to_vec();
            moved.extend_from_slice(&key[prefix_len..]);
            put.execute(params![raw_ws(), moved, value])?;
            rows += 1;
            bytes += value.len() as u64;
        }
        Ok(())
    })?;
    Ok((rows, bytes))
}

fn delete_range(tx: &Transaction<'_>, (start, end): (&[u8], &[u8])) -> rusqlite::Result<usize> {
    tx.execute(
        "DELETE FROM kv WHERE workspace = ?1 AND key >= ?2 AND key < ?3",
        params![raw_ws(), start, end],
    )
}

/// Reads the values of `[start, end)`, handing each to `f`; returns rows and bytes.
fn read_values(
    conn: &Connection,
    (start, end): (&[u8], &[u8]),
    mut f: impl FnMut(&[u8]),
) -> rusqlite::Result<(u64, u64)> {
    let mut statement = conn.prepare(
        "SELECT value FROM kv WHERE workspace = ?1 AND key >= ?2 AND key < ?3 ORDER BY key",
    )?;
    let mut rows = statement.query(params![raw_ws(), start, end])?;
    let (mut count, mut bytes) = (0, 0);
    while let Some(row) = rows.next()? {
        let value = row.get_ref(0)?.as_blob()?;
        count += 1;
        bytes += value.len() as u64;
        f(value);
    }
    Ok((count, bytes))
}

/// What the rows of the workload's workspace hold in `kv.workspace`: its number in
/// `workspaces` (a database Spool creates is schema 2). Looked up once, before the
/// measured work.
static RAW_WS: OnceLock<i64> = OnceLock::new();

fn raw_ws() -> i64 {
    *RAW_WS.get().expect("run_raw looks the workspace up first")
}

/// The name of the parent's keys (its minted data id), looked up once through Spool
/// before the measured work; `None` once "delete parent" deleted it.
static RAW_PARENT: OnceLock<Option<String>> = OnceLock::new();

/// The parent's data id, or an error for a limit that needs the parent after it is gone.
fn raw_parent() -> rusqlite::Result<&'static str> {
    RAW_PARENT
        .get()
        .expect("run_raw looks the parent's data id up first")
        .as_deref()
        .ok_or_else(|| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some("the workload's parent is gone".into()),
            )
        })
}

/// Fails a limit that touched no rows: it would time nothing (as the limits did while
/// they looked for the workspace's rows by name in a schema-2 database).
fn touched(rows: u64, what: &str) -> rusqlite::Result<()> {
    if rows == 0 {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(format!("{what} touched no rows: nothing to time")),
        ));
    }
    Ok(())
}

/// The limit of `op`: raw SQLite doing its minimal work on `raw.db`.
fn run_raw(op: Op, dir: &Path) -> Measured {
    let storage = SqliteStorage::open(dir.join("raw.db")).expect("open the raw database");
    let parent = spool::run(
        &storage,
        spool::session_data_id(workload::WS, workload::PARENT),
    )
    .expect("read the parent");
    drop(storage);
    RAW_PARENT.set(parent).expect("one limit per process");
    let mut conn = raw_connection(&dir.join("raw.db"));
    let number = conn
        .query_row(
            "SELECT id FROM workspaces WHERE name = ?1",
            params![workload::WS],
            |r| r.get(0),
        )
        .expect("the workload's workspace has a number in workspaces");
    RAW_WS.set(number).expect("one limit per process");
    let meter = Meter::start();
    let outcome = raw(op, &mut conn, dir).map_err(|e| format!("sqlite: {e}"));
    meter.stop(None, outcome)
}

fn raw(op: Op, conn: &mut Connection, dir: &Path) -> rusqlite::Result<String> {
    use workload::PARENT;
    // Every limit but the reset's reads the parent (which "delete parent" deletes).
    let entries = || Ok::<_, rusqlite::Error>(range_of(keys::ENTRY, raw_parent()?));
    let archived = || Ok::<_, rusqlite::Error>(range_of(keys::ARCHIVE, raw_parent()?));
    let rows_bytes = |(rows, bytes): (u64, u64)| format!("{rows} rows, {}", workload::mib(bytes));
    match op {
        Op::Append => {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let record: Vec<u8> = tx.query_row(
                "SELECT value FROM kv WHERE workspace = ?1 AND key = ?2",
                params![raw_ws(), keys::session(PARENT)],
                |r| r.get(0),
            )?;
            let content = workload::appended().content;
            let key = keys::entry(raw_parent()?, workload::T_OPS, 1 << 40);
            tx.execute(PUT, params![raw_ws(), key, content.as_bytes()])?;
            tx.execute(PUT, params![raw_ws(), keys::session(PARENT), record])?;
            tx.execute(
                PUT,
                params![raw_ws(), keys::recency(workload::T_OPS, PARENT), record],
            )?;
            tx.commit()?;
            Ok("1 entry row, the record twice".into())
        }
        Op::NewestPage => {
            let entries = entries()?;
            let rows: Vec<(Vec<u8>, Vec<u8>)> = conn
                .prepare(
                    "SELECT key, value FROM kv WHERE workspace = ?1 AND key >= ?2 AND key < ?3 \
                     ORDER BY key DESC LIMIT ?4",
                )?
                .query_map(
                    params![raw_ws(), entries.0, entries.1, workload::PAGE],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?
                .collect::<Result<_, _>>()?;
            touched(rows.len() as u64, "newest page")?;
            Ok(format!("{} rows", rows.len()))
        }
        Op::Compact1 | Op::Compact2 => {
            let window = workload::WINDOWS[usize::from(op == Op::Compact2)];
            let entries = entries()?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Keep the newest rows within half the window (4 bytes a token), move the rest.
            let mut oldest_kept = None;
            {
                let mut statement = tx.prepare(
                    "SELECT key, length(value) FROM kv WHERE workspace = ?1 AND key >= ?2 \
                     AND key < ?3 ORDER BY key DESC",
                )?;
                let mut rows = statement.query(params![raw_ws(), entries.0, entries.1])?;
                let mut tokens = 0u64;
                while let Some(row) = rows.next()? {
                    let length: i64 = row.get(1)?;
                    tokens += length.unsigned_abs().div_ceil(4);
                    if tokens > window / 2 {
                        break;
                    }
                    oldest_kept = Some(row.get::<_, Vec<u8>>(0)?);
                }
            }
            let end = oldest_kept.unwrap_or_else(|| entries.1.clone());
            let target = keys::identity(keys::ARCHIVE, raw_parent()?);
            let moved = copy_rows(&tx, (&entries.0, &end), entries.0.len(), &target)?;
            delete_range(&tx, (&entries.0, &end))?;
            touched(moved.0, "compact")?;
            tx.commit()?;
            Ok(format!("moved {}", rows_bytes(moved)))
        }
        Op::Export => {
            let (entries, archived) = (entries()?, archived()?);
            let tx = conn.transaction()?;
            let a = read_values(&tx, (&archived.0, &archived.1), |_| {})?;
            let e = read_values(&tx, (&entries.0, &entries.1), |_| {})?;
            touched(a.0 + e.0, "export")?;
            Ok(format!("read {}", rows_bytes((a.0 + e.0, a.1 + e.1))))
        }
        Op::Import => {
            // The rows to write, read 1,000 at a time; one transaction per 1,000.
            let (entries, archived) = (entries()?, archived()?);
            let (mut rows, mut bytes) = (0, 0);
            for range in [&archived, &entries] {
                let mut from = range.0.clone();
                loop {
                    let batch: Vec<(Vec<u8>, Vec<u8>)> = conn
                        .prepare_cached(
                            "SELECT key, value FROM kv WHERE workspace = ?1 AND key >= ?2 \
                             AND key < ?3 ORDER BY key LIMIT 1000",
                        )?
                        .query_map(params![raw_ws(), from, range.1], |r| {
                            Ok((r.get(0)?, r.get(1)?))
                        })?
                        .collect::<Result<_, _>>()?;
                    let Some((last, _)) = batch.last() else {
                        break;
                    };
                    from.clone_from(last);
                    from.push(0);
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    {
                        let mut put = tx.prepare_cached(PUT)?;
                        for (key, value) in &batch {
                            let mut target = keys::identity(keys::ENTRY, RAW_IMPORTED);
                            target.extend_from_slice(&key[range.0.len()..]);
                            put.execute(params![raw_ws(), target, value])?;
                            rows += 1;
                            bytes += value.len() as u64;
                        }
                    }
                    tx.commit()?;
                }
            }
            touched(rows, "import")?;
            Ok(format!("wrote {}", rows_bytes((rows, bytes))))
        }
        Op::Branch => Ok("no limit".into()),
        Op::DeleteParent => {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let (mut rows, mut bytes) = (0, 0);
            for tag in [keys::ENTRY, keys::ARCHIVE, keys::MESSAGE] {
                let (r, b) = copy_identity(&tx, tag, raw_parent()?, RAW_BRANCH, None)?;
                rows += r;
                bytes += b;
            }
            for tag in [keys::ENTRY, keys::ARCHIVE, keys::MESSAGE, keys::SUMMARY] {
                let (start, end) = range_of(tag, raw_parent()?);
                delete_range(&tx, (&start, &end))?;
            }
            tx.execute(
                "DELETE FROM kv WHERE workspace = ?1 AND key = ?2",
                params![raw_ws(), keys::session(PARENT)],
            )?;
            touched(rows, "delete parent")?;
            tx.commit()?;
            Ok(format!("copied {}", rows_bytes((rows, bytes))))
        }
        Op::Reset => {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let path = dir.join("raw-archive.bin");
            let mut out = BufWriter::new(File::create(&path).expect("create the archive"));
            let (mut rows, mut bytes) = (0, 0);
            for tag in [keys::ARCHIVE, keys::ENTRY] {
                let (start, end) = range_of(tag, RAW_BRANCH);
                let (r, b) = read_values(&tx, (&start, &end), |value| {
                    out.write_all(value).expect("write the archive");
                })?;
                rows += r;
                bytes += b;
            }
            let file = out.into_inner().expect("flush the archive");
            file.sync_all().expect("sync the archive");
            for tag in [keys::ENTRY, keys::ARCHIVE, keys::MESSAGE] {
                let (start, end) = range_of(tag, RAW_BRANCH);
                delete_range(&tx, (&start, &end))?;
            }
            touched(rows, "reset")?;
            tx.commit()?;
            Ok(format!("archived {}", rows_bytes((rows, bytes))))
        }
    }
}

// ---- the parent: build, run every operation in a child, print the table ----

/// Runs `kind` (`op` or `raw`) of `op` in a child process.
fn spawn(kind: &str, op: Op, dir: &Path, bytes: u64, limit: usize) -> Measured {
    let exe = std::env::current_exe().expect("this binary");
    let output = Command::new(exe)
        .arg(CHILD)
        .args([kind, op.name()])
        .arg(dir)
        .args([bytes.to_string(), limit.to_string()])
        .stderr(Stdio::inherit())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => return Measured::failed(format!("cannot start a child: {e}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().rev().find(|l| l.starts_with('{')) {
        Some(line) if output.status.success() => serde_json::from_str(line)
            .unwrap_or_else(|e| Measured::failed(format!("unreadable measurement: {e}"))),
        _ => Measured::failed(format!("the child failed ({})", output.status)),
    }
}

/// A size from `10M`, `1G`, `512K` or a number of bytes.
fn parse_size(text: &str) -> u64 {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last() {
        Some((at, 'K' | 'k')) => (&text[..at], 1024),
        Some((at, 'M' | 'm')) => (&text[..at], MIB),
        Some((at, 'G' | 'g')) => (&text[..at], 1024 * MIB),
        _ => (text, 1),
    };
    number
        .parse::<u64>()
        .unwrap_or_else(|_| panic!("SPOOL_LADDER_SIZES: {text:?} is not a size like 10M or 1G"))
        * unit
}

fn bytes_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 * MIB && b % (1024 * MIB) == 0 => format!("{} GiB", b / (1024 * MIB)),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b => workload::mib(b),
    }
}

fn time_label(secs: f64) -> String {
    match secs {
        s if s >= 10.0 => format!("{s:.1} s"),
        s if s >= 1.0 => format!("{s:.2} s"),
        s if s >= 1e-3 => format!("{:.1} ms", s * 1e3),
        s => format!("{:.0} µs", s * 1e6),
    }
}

fn memory_label(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

/// The free space of the file system holding `dir` (`df -Pk`), if `df` says.
fn free_disk(dir: &Path) -> Option<u64> {
    let output = Command::new("df").arg("-Pk").arg(dir).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == CHILD) {
        child(&args[at + 1..]);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with nothing, so
    // keep that run short.
    let benching = args.iter().any(|a| a == "--bench");
    let sizes: Vec<u64> = match std::env::var("SPOOL_LADDER_SIZES") {
        Ok(list) => list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(parse_size)
            .collect(),
        Err(_) if benching => vec![10 * MIB, 100 * MIB, 1024 * MIB],
        Err(_) => vec![MIB],
    };
    let limit = match std::env::var("SPOOL_LADDER_MEMORY_MIB") {
        Ok(mib) => {
            mib.parse::<usize>()
                .expect("SPOOL_LADDER_MEMORY_MIB: a number")
                << 20
        }
        Err(_) => DEFAULT_MEMORY_LIMIT,
    };
    // On disk (the target directory), not a tmpfs: durability is part of the cost.
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    let runtime = Runtime::shared().expect("runtime");

    println!(
        "size ladder: each operation through the component on SQLite, in a process and an \
         instance of its own (guest memory limit {}); limit = raw SQLite doing the same \
         minimal work",
        memory_label(limit as u64)
    );
    println!(
        "{:<8} {:<14} {:>9} {:>9} {:>7} {:>10} {:>10} {:>10}  result",
        "size", "operation", "time", "limit", "×limit", "host RSS", "limit RSS", "guest peak"
    );
    let mut baselines = Vec::new();
    for &bytes in &sizes {
        let label = bytes_label(bytes);
        let dir = root.path().join(label.replace(' ', ""));
        std::fs::create_dir_all(&dir).expect("size dir");
        // The database, its copy for the limit, the imported and the branch's copies of
        // the history on both sides, and a WAL as large as the largest commit.
        let needed = bytes * 8;
        if let Some(free) = free_disk(&dir).filter(|&free| free < needed) {
            println!(
                "{label}: skipped, it needs about {} of free disk and {} has {}",
                memory_label(needed),
                dir.display(),
                memory_label(free)
            );
            continue;
        }
        let shape = shape(bytes);
        let started = Instant::now();
        let mut builder = runtime
            .instantiate(
                SqliteStorage::open(dir.join("spool.db")).expect("open"),
                spool::NoArchive,
            )
            .expect("instantiate");
        let built = workload::build(&mut builder, &shape).expect("build the session");
        drop(builder);
        let build_secs = started.elapsed().as_secs_f64();
        std::fs::copy(dir.join("spool.db"), dir.join("raw.db")).expect("copy for the limit");
        let file = std::fs::metadata(dir.join("spool.db")).map_or(0, |m| m.len());
        println!(
            "{label}: {} entries of {} KiB{}: {} of content, database {}; built in {}",
            built.entry_count,
            ENTRY_BYTES / 1024,
            match shape.big_outputs {
                0 => String::new(),
                n => format!(
                    ", but {n} tool output{} of {}",
                    if n == 1 { "" } else { "s" },
                    bytes_label(BIG_OUTPUT_BYTES as u64)
                ),
            },
            memory_label(shape.content_bytes()),
            memory_label(file),
            time_label(build_secs)
        );
        for op in OPS {
            let measured = spawn("op", op, &dir, bytes, limit);
            let raw = (op != Op::Branch).then(|| spawn("raw", op, &dir, bytes, limit));
            baselines.push(measured.rss_before);
            let mut result = match &measured.outcome {
                Ok(done) => format!("ok: {done}"),
                Err(why) => why.clone(),
            };
            if let Some(Measured {
                outcome: Err(why), ..
            }) = &raw
            {
                result.push_str(&format!(" (the limit failed: {why})"));
            }
            let (raw_time, ratio, raw_rss) = match &raw {
                Some(raw @ Measured { outcome: Ok(_), .. }) => (
                    time_label(raw.secs),
                    // A failed operation did not do the work.
                    match measured.outcome {
                        Ok(_) => format!("{:.1}", measured.secs / raw.secs.max(1e-9)),
                        Err(_) => "—".into(),
                    },
                    memory_label(raw.rss_peak),
                ),
                Some(Measured {
                    outcome: Err(_), ..
                }) => ("failed".into(), "—".into(), "—".into()),
                None => ("—".into(), "—".into(), "—".into()),
            };
            let reset = if measured.rss_reset { "" } else { "*" };
            println!(
                "{:<8} {:<14} {:>9} {:>9} {:>7} {:>10} {:>10} {:>10}  {result}",
                label,
                op.name(),
                time_label(measured.secs),
                raw_time,
                ratio,
                format!("{}{reset}", memory_label(measured.rss_peak)),
                raw_rss,
                measured.guest_peak.map_or("—".into(), memory_label),
            );
        }
        // Free the disk before the next size.
        drop(std::fs::remove_dir_all(&dir));
    }
    let (low, high) = (
        baselines.iter().copied().min().unwrap_or(0),
        baselines.iter().copied().max().unwrap_or(0),
    );
    println!(
        "host RSS: the child's peak resident set during the operation, its baseline (the \
         runtime and the compiled component, before the operation) {}–{} included; \
         * = could not reset the peak, the process's own",
        memory_label(low),
        memory_label(high)
    );
}
