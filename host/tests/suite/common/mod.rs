//! Helpers shared by the CLI tests: run the `spool` binary on a temporary database.
#![allow(dead_code, unreachable_pub)]

pub mod postgres;
pub mod rollout;
pub mod workload;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// A command that runs one test of this binary again, alone, in a new process (for
/// tests whose other processes are the same test in another role): `module` is the
/// test's `module_path!()`, `test` its function's name.
pub fn test_in_new_process(module: &str, test: &str) -> Command {
    let module = module.split_once("::").map_or("", |(_, path)| path);
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command.args([
        "--exact",
        &format!("{module}::{test}"),
        "--nocapture",
        "--test-threads=1",
    ]);
    command
}

/// An instance of the component on the database `db` (a SQLite file or a PostgreSQL
/// URL, shared with other processes), archiving nothing.
pub fn instance_on(db: &Path) -> spool_host::Instance {
    let runtime = spool_host::Runtime::shared().expect("runtime");
    match db.to_str().filter(|text| spool_host::is_postgres_url(text)) {
        Some(url) => {
            let storage = spool_host::PostgresStorage::connect(url).expect("connect");
            runtime.instantiate(storage, spool::NoArchive)
        }
        None => {
            let storage = spool_host::SqliteStorage::open(db).expect("open the database");
            runtime.instantiate(storage, spool::NoArchive)
        }
    }
    .expect("instance")
}

/// The storage of the test database `db` (a SQLite file or a PostgreSQL URL), for
/// reading it through the core directly.
pub fn storage_on(db: &Path) -> Box<dyn spool::Storage + Send> {
    match db.to_str().filter(|text| spool_host::is_postgres_url(text)) {
        Some(url) => Box::new(spool_host::PostgresStorage::connect(url).expect("connect")),
        None => Box::new(spool_host::SqliteStorage::open(db).expect("open the database")),
    }
}

/// One compiled-component cache for every CLI run of this test process.
pub fn cache_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

/// Gives a `spool` command the test process's component cache and none of the
/// `SPOOL_*` settings of the environment it runs in.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    cmd.env("SPOOL_CACHE_DIR", cache_dir())
        .env_remove("SPOOL_DB")
        .env_remove("SPOOL_WORKSPACE")
        .env_remove("SPOOL_ARCHIVE_DIR")
        .env_remove("SPOOL_DURABILITY")
}

/// Creates the session `key` in workspace `ws` (session id from the key).
pub fn create_session(spool: &mut spool_host::Instance, ws: &str, key: &str) {
    spool
        .call(
            ws,
            spool::ops::CreateSession {
                key: key.to_owned(),
                session_id: format!("s-{}", key.replace(':', "-")),
                now_ms: 1,
            },
        )
        .expect("create the session");
}

/// Appends a user message `text` to `key` in workspace `ws`.
pub fn append_text(
    spool: &mut spool_host::Instance,
    ws: &str,
    key: &str,
    text: &str,
) -> Result<spool::Entry, spool_host::Error> {
    spool.call(
        ws,
        spool::ops::AppendEntry {
            key: key.to_owned(),
            request: spool::AppendRequest::new(spool::Role::User, text),
            now_ms: 2,
        },
    )
}

/// Every entry of the session `key` in workspace `ws`, oldest first, read page by page.
pub fn transcript(spool: &mut spool_host::Instance, ws: &str, key: &str) -> Vec<spool::Entry> {
    let mut entries = Vec::new();
    let mut cursor = None;
    loop {
        let page = spool
            .call(
                ws,
                spool::ops::ReadPage {
                    key: key.to_owned(),
                    request: spool::PageRequest {
                        order: spool::Order::OldestFirst,
                        cursor,
                        limit: 500,
                    },
                },
            )
            .expect("read a page");
        entries.extend(page.entries);
        cursor = page.next_cursor;
        if cursor.is_none() {
            return entries;
        }
    }
}

/// Runs `command` with `sh -c`, which must succeed.
pub fn sh(command: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .output()
        .expect("run a shell command");
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Appends `line` and a newline to a record file in one write, so a process reading
/// the file while it grows never sees part of a line as a whole one.
pub fn record_line(out: &mut std::fs::File, line: &str) {
    use std::io::Write;
    out.write_all(format!("{line}\n").as_bytes())
        .expect("record a line");
}

/// The complete lines of a record file another process may still be writing: a last
/// line without its newline is not yet written, and left out.
pub fn complete_lines(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().map(str::to_owned).collect()
}

/// The entry count of the session `key` in workspace `ws`.
pub fn entry_count(spool: &mut spool_host::Instance, ws: &str, key: &str) -> u64 {
    spool
        .call(
            ws,
            spool::ops::GetSession {
                key: key.to_owned(),
            },
        )
        .expect("get the session")
        .expect("the session exists")
        .entry_count
}

/// Runs `spool --db DB ARGS…` under umask 022 with a clean environment.
pub fn spool_with(db: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_spool"))
        .arg("--db")
        .arg(db)
        .args(args);
    clean_env(&mut cmd);
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().expect("run spool")
}

pub fn spool(db: &Path, args: &[&str]) -> Output {
    spool_with(db, args, &[])
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The words of a command line, split at white space (for arguments that hold none).
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

pub fn ok(db: &Path, args: &[&str]) -> String {
    let out = spool(db, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "spool {args:?} failed: {}",
        stderr(&out)
    );
    stdout(&out)
}

pub fn ok_json(db: &Path, args: &[&str]) -> Value {
    let text = ok(db, args);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("spool {args:?} printed no JSON ({e}): {text}"))
}

/// `spool append KEY --role user --content CONTENT --json` with `extra` flags, which
/// must succeed: the appended entry.
pub fn append_user(db: &Path, key: &str, content: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "append",
        key,
        "--role",
        "user",
        "--content",
        content,
        "--json",
    ];
    args.extend_from_slice(extra);
    ok_json(db, &args)
}

/// Asserts exit 1 with `error[<code>]: …` on stderr and nothing on stdout; returns stderr.
pub fn fails(db: &Path, args: &[&str], code: &str) -> String {
    let out = spool(db, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "spool {args:?}: {err}");
    assert!(
        err.starts_with(&format!("error[{code}]: ")),
        "spool {args:?}: {err}"
    );
    assert!(stdout(&out).is_empty(), "spool {args:?}: {}", stdout(&out));
    err
}

pub fn usage_error(db: &Path, args: &[&str]) {
    let out = spool(db, args);
    assert_eq!(
        out.status.code(),
        Some(2),
        "spool {args:?} should be a usage error: {}",
        stderr(&out)
    );
}

/// A temporary directory and a fresh database for one test: a SQLite file in the
/// directory, or, when `SPOOL_TEST_BACKEND=postgres` (the CLI suites' second run in
/// `cargo xtask test`), a new database on the test server, as its URL.
pub fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = if on_postgres() {
        PathBuf::from(postgres::url(
            &postgres::fresh_database("cli"),
            postgres::Via::Direct,
        ))
    } else {
        dir.path().join("spool.db")
    };
    (dir, db)
}

/// Runs a statement on the rows of the test database `db` directly, bypassing Spool:
/// `sqlite` on a SQLite file (table `kv`), `postgres` on a PostgreSQL database (table
/// `spool_kv`); returns the rows it changed.
pub fn execute_raw(db: &Path, sqlite: &str, postgres: &str) -> u64 {
    match db.to_str().filter(|text| spool_host::is_postgres_url(text)) {
        Some(url) => ::postgres::Client::connect(url, ::postgres::NoTls)
            .expect("connect")
            .execute(postgres, &[])
            .expect("run the statement"),
        None => rusqlite::Connection::open(db)
            .expect("open")
            .execute(sqlite, [])
            .expect("run the statement") as u64,
    }
}

/// The count a `SELECT count(*) …` query gives, run as [`execute_raw`] runs.
pub fn count_raw(db: &Path, sqlite: &str, postgres: &str) -> i64 {
    match db.to_str().filter(|text| spool_host::is_postgres_url(text)) {
        Some(url) => ::postgres::Client::connect(url, ::postgres::NoTls)
            .expect("connect")
            .query_one(postgres, &[])
            .expect("count")
            .get(0),
        None => rusqlite::Connection::open(db)
            .expect("open")
            .query_row(sqlite, [], |row| row.get(0))
            .expect("count"),
    }
}

/// Whether the tests' databases are on the PostgreSQL server
/// (`SPOOL_TEST_BACKEND=postgres`).
pub fn on_postgres() -> bool {
    match std::env::var("SPOOL_TEST_BACKEND").as_deref() {
        Ok("postgres") => true,
        Ok("sqlite") | Err(_) => false,
        Ok(other) => panic!("SPOOL_TEST_BACKEND={other}: expected sqlite or postgres"),
    }
}

/// Every file under `dir` (any depth), temporary ones included; none for a missing
/// directory.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
