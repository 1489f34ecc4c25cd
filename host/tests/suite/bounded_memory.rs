//! Issue 17, every operation in bounded memory: on a session of more than 50 MB, each
//! operation of the workload (`common/workload.rs`: append, newest page, two
//! compactions, export, import of the export, branch, deleting the parent while the
//! branch reads its history, reset) runs through the component on SQLite in a fresh
//! instance whose linear memory may grow to 8 MiB at most, and must succeed — not hit
//! `resource_limit` — and do what it must (each is checked through a second instance
//! with the default limits). The peak guest memory of each is printed
//! (`cargo test -p spool-host --test suite bounded_memory:: -- --nocapture`).

use crate::common::workload;

use std::time::{Duration, Instant};

use spool::import::ImportFormat;
use spool_host::{ArchiveDir, Runtime, SqliteStorage};
use workload::{Before, OPS, Op, Output, Shape};

/// The guest memory every operation must fit in: 8 MiB, or `SPOOL_BOUNDED_MEMORY_MIB`
/// MiB (to see which operations fit under another limit).
fn limit() -> usize {
    std::env::var("SPOOL_BOUNDED_MEMORY_MIB")
        .ok()
        .map(|mib| {
            mib.parse::<usize>()
                .expect("SPOOL_BOUNDED_MEMORY_MIB: a number of MiB")
        })
        .unwrap_or(8)
        * 1024
        * 1024
}

/// 52 MiB of content: 4 KiB entries and three tool outputs of 1 MiB.
fn shape() -> Shape {
    Shape::of_bytes(52 * 1024 * 1024, 4096, 3, 1024 * 1024)
}

#[test]
fn every_operation_fits_in_8_mib_of_guest_memory_on_a_50_mb_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("spool.db");
    let archives = ArchiveDir::new(dir.path().join("archives"));
    let open = || SqliteStorage::open(&db).expect("open the database");
    let runtime = Runtime::shared().expect("runtime");
    let limit = limit();
    let shape = shape();
    assert!(shape.content_bytes() >= 50 * 1024 * 1024);

    let started = Instant::now();
    let mut builder = runtime
        .instantiate(open(), spool::NoArchive)
        .expect("instantiate");
    let built = workload::build(&mut builder, &shape).expect("build the session");
    drop(builder);
    assert_eq!(built.entry_count, shape.entries as u64);
    println!(
        "built {} entries, {} of content, in {:.1} s",
        shape.entries,
        workload::mib(shape.content_bytes()),
        started.elapsed().as_secs_f64()
    );

    let mut verifier = runtime
        .instantiate(open(), spool::NoArchive)
        .expect("instantiate the verifier");
    let mut exported = None;
    let mut rows: Vec<(Op, usize, Duration, Result<String, String>)> = Vec::new();
    for (k, op) in OPS.into_iter().enumerate() {
        let before = Before::read(&mut verifier).expect("read the sessions");
        let mut spool = runtime
            .instantiate_with_memory_limit(open(), archives.clone(), limit)
            .expect("instantiate");
        let now = workload::T_OPS + k as u64;
        let start = Instant::now();
        let result = match op {
            Op::Import => match exported.take() {
                Some(entries) => workload::import(
                    &mut spool,
                    Vec::into_iter(entries).map(workload::to_imported),
                    now,
                ),
                // The export failed: import the same log, rebuilt.
                None => {
                    let last = before.parent.as_ref().map_or(0, |p| p.last_entry_id);
                    workload::import(&mut spool, workload::log(&shape, last), now)
                }
            },
            op => workload::perform(op, &mut spool, now),
        };
        let elapsed = start.elapsed();
        let peak = spool.peak_memory_bytes();
        drop(spool);
        let verdict = match result {
            Ok(output) => {
                let verdict = workload::check(op, &shape, &before, &output, &mut verifier)
                    .map_err(|why| format!("wrong result: {why}"));
                if let (Ok(_), Output::Exported(entries)) = (&verdict, output) {
                    exported = Some(entries);
                }
                verdict
            }
            Err(e) => Err(format!("error[{}]: {}", e.code(), e.message())),
        };
        rows.push((op, peak, elapsed, verdict));
    }

    println!(
        "{:<14} {:>11} {:>9}  result (guest memory limit {})",
        "operation",
        "guest peak",
        "time",
        workload::mib(limit as u64)
    );
    for (op, peak, elapsed, verdict) in &rows {
        let text = match verdict {
            Ok(done) => format!("ok: {done}"),
            Err(why) => why.clone(),
        };
        println!(
            "{:<14} {:>11} {:>7.0}ms  {}",
            op.name(),
            workload::mib(*peak as u64),
            elapsed.as_secs_f64() * 1e3,
            text
        );
    }
    let failed: Vec<String> = rows
        .iter()
        .filter_map(|(op, peak, _, verdict)| {
            verdict.as_ref().err().map(|why| {
                format!(
                    "  {} (guest peak {}): {why}",
                    op.name(),
                    workload::mib(*peak as u64)
                )
            })
        })
        .collect();
    for (op, peak, _, _) in &rows {
        assert!(
            *peak <= limit,
            "{} grew the guest to {peak} bytes, over the limit",
            op.name()
        );
    }
    assert!(
        failed.is_empty(),
        "{} of {} operations failed on a {} session under a {} guest memory limit:\n{}",
        failed.len(),
        rows.len(),
        workload::mib(shape.content_bytes()),
        workload::mib(limit as u64),
        failed.join("\n")
    );
}

/// Streams the log of `format` at `path` (in `dir`) into a fresh database under the
/// guest limit, 256 KiB a slice; prints what it took and checks the guest's peak.
fn stream_under_limit(
    dir: &std::path::Path,
    format: ImportFormat,
    path: &std::path::Path,
) -> (crate::common::rollout::Streamed, spool_host::Instance) {
    let limit = limit();
    let mut spool = Runtime::shared()
        .expect("runtime")
        .instantiate_with_memory_limit(
            SqliteStorage::open(dir.join("spool.db")).expect("open"),
            spool::NoArchive,
            limit,
        )
        .expect("instantiate");
    let started = Instant::now();
    let done =
        crate::common::rollout::import_file(&mut spool, "default", format, path, 256 << 10, 1)
            .unwrap_or_else(|e| panic!("the streamed import failed: {e}"));
    println!(
        "streamed {} of {} in {} slices and {} imports, cursor up to {}, {:.1} s, guest peak {}",
        workload::mib(std::fs::metadata(path).expect("size").len()),
        format.agent_type(),
        done.slices,
        done.calls,
        workload::mib(done.cursor_bytes as u64),
        started.elapsed().as_secs_f64(),
        workload::mib(spool.peak_memory_bytes() as u64)
    );
    assert!(done.slices > 100, "{done:?}");
    assert!(spool.peak_memory_bytes() <= limit);
    (done, spool)
}

/// A 52 MiB Codex rollout (outputs of 16 KiB, and one of 512 KiB: a line longer than a
/// slice of 256 KiB) is streamed in a slice at a time under the same 8 MiB guest limit,
/// and every entry is written.
#[test]
fn a_52_mib_rollout_streams_in_under_8_mib_of_guest_memory() {
    use crate::common::rollout;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("rollout.jsonl");
    let mut file = std::fs::File::create(&path).expect("create");
    let mut turns = rollout::write(&mut file, 52 << 20, 16 << 10).expect("write");
    std::io::Write::write_all(&mut file, rollout::turn(turns, 512 << 10).as_bytes())
        .expect("write");
    turns += 1;
    drop(file);
    let (done, _) = stream_under_limit(dir.path(), ImportFormat::Codex, &path);
    assert_eq!(done.imported, 4 * turns);
}

/// A 52 MiB Claude Code log (tool results of 16 KiB, a response written as two lines
/// that a slice may split, a rewind every 50 turns) is streamed in a slice at a time
/// under the same 8 MiB guest limit: every entry is written, the rewinds are branches,
/// and what the parser carries between slices (the uuid tree) stays a small part of the
/// file.
#[test]
fn a_52_mib_claude_code_log_streams_in_under_8_mib_of_guest_memory() {
    use crate::common::rollout::claude;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("log.jsonl");
    let mut file = std::fs::File::create(&path).expect("create");
    let turns = claude::write(&mut file, 52 << 20, 16 << 10).expect("write");
    drop(file);
    let (done, mut spool) = stream_under_limit(dir.path(), ImportFormat::ClaudeCode, &path);
    assert_eq!(done.imported, 5 * turns);
    // Six lines a turn; the cursor carries a few dozen bytes for each.
    assert!(done.cursor_bytes as u64 <= 80 * 6 * turns, "{done:?}");
    let listed = spool
        .call(
            "default",
            spool::ops::ListSessions {
                limit: 1_000,
                cursor: None,
                agent_id: None,
                status: None,
            },
        )
        .expect("list");
    assert_eq!(
        listed.sessions.len() as u64,
        1 + (turns + 1) / 50,
        "the main session and a branch per rewind"
    );
}
