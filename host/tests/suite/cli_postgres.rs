//! The CLI on a PostgreSQL database, selected by URL (`--db` or `SPOOL_DB`): nothing is
//! created on the local disk, and a server that cannot be used is a `storage` error
//! naming the host and database, never the password.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::postgres::{self as server, Via};
use crate::common::{clean_env, stderr, stdout};

/// `spool ARGS…` in the directory `cwd`, with `SPOOL_DB` set to `db` when given.
fn spool_in(cwd: &Path, db: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spool"));
    clean_env(command.current_dir(cwd).args(args));
    if let Some(db) = db {
        command.env("SPOOL_DB", db);
    }
    command.output().expect("run spool")
}

#[test]
fn test_a_url_selects_the_server_and_creates_nothing_locally() {
    for via in [Via::Direct, Via::Pooler] {
        let cwd = tempfile::tempdir().expect("temp dir");
        let url = server::url(&server::fresh_database("cli_url"), via);
        let out = spool_in(cwd.path(), None, &["--db", &url, "create", "agent:a:main"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let out = spool_in(
            cwd.path(),
            None,
            &[
                "--db",
                &url,
                "append",
                "agent:a:main",
                "--role",
                "user",
                "--content",
                "hi",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // The same database through SPOOL_DB, `postgresql://` spelled.
        let spelled = url.replacen("postgres://", "postgresql://", 1);
        let out = spool_in(cwd.path(), Some(&spelled), &["list", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let sessions = list["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 1, "{list}");
        assert_eq!(sessions[0]["entry_count"], 1, "{list}");
        assert!(server::is_empty_dir(cwd.path()));
    }
}

#[test]
fn test_a_server_that_cannot_be_used_is_a_storage_error_and_writes_nothing() {
    let host = server::host_port();
    let (user, _) = server::password_role();
    let missing = format!("spool_cli_missing_{}", std::process::id());
    let port = server::closed_port();
    let cases = [
        (
            format!("postgres://postgres@{host}/{missing}"),
            format!("{host}/{missing}"),
        ),
        (
            format!("postgres://{user}:wrong-password@{host}/postgres"),
            format!("{host}/postgres"),
        ),
        (
            format!("postgres://postgres:secret-pw@127.0.0.1:{port}/spool"),
            format!("127.0.0.1:{port}/spool"),
        ),
        (
            "postgresql://postgres:secret-pw@127.0.0.1:99999/spool".to_owned(),
            "not a PostgreSQL URL".to_owned(),
        ),
    ];
    for (url, names) in cases {
        let cwd = tempfile::tempdir().expect("temp dir");
        let out = spool_in(cwd.path(), None, &["--db", &url, "create", "agent:a:main"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{url}: {err}");
        assert!(err.starts_with("error[storage]: "), "{url}: {err}");
        assert!(err.contains(&names), "{url}: {err} should name {names}");
        assert!(
            !err.contains("secret-pw") && !err.contains("wrong-password"),
            "{err}"
        );
        assert!(stdout(&out).is_empty());
        assert!(
            server::is_empty_dir(cwd.path()),
            "{url}: something was created locally"
        );
    }
    assert!(!server::database_exists(&missing));
}

#[test]
fn test_sqlite_durability_is_refused_on_a_server() {
    let cwd = tempfile::tempdir().expect("temp dir");
    let url = server::url(&server::fresh_database("cli_durability"), Via::Direct);
    let out = spool_in(
        cwd.path(),
        None,
        &[
            "--db",
            &url,
            "--durability",
            "normal",
            "create",
            "agent:a:main",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error[invalid_argument]: "), "{err}");
    assert!(err.contains("synchronous_commit"), "{err}");
}

/// `spool --db URL ARGS…` in `cwd`, which must succeed; its stdout.
fn ok_in(cwd: &Path, url: &str, args: &[&str]) -> String {
    let mut all = vec!["--db", url];
    all.extend_from_slice(args);
    let out = spool_in(cwd, None, &all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "spool {args:?}: {}",
        stderr(&out)
    );
    stdout(&out)
}

/// The parts of reset archives the database holds.
fn archive_parts(database: &str) -> i64 {
    let mut client =
        postgres::Client::connect(&server::admin_url(database), postgres::NoTls).expect("connect");
    client
        .query_one("SELECT count(*) FROM spool_reset_archives", &[])
        .expect("count")
        .get(0)
}

#[test]
fn test_reset_archives_go_to_the_database_page_by_page() {
    for via in [Via::Direct, Via::Pooler] {
        let cwd = tempfile::tempdir().expect("temp dir");
        let database = server::fresh_database("cli_reset_archive");
        let url = server::url(&database, via);
        const KEY: &str = "agent:a:main";
        ok_in(cwd.path(), &url, &["create", KEY]);
        // About 2.5 MB of transcript: the reset hands it over in several pages.
        let big = "x".repeat(8 * 1024);
        for i in 0..300 {
            let content = format!("entry {i} {big}");
            ok_in(
                cwd.path(),
                &url,
                &["append", KEY, "--role", "tool", "--content", &content],
            );
        }
        let human = ok_in(cwd.path(), &url, &["reset", KEY]);
        let host = url
            .split_once('@')
            .expect("user")
            .1
            .split('/')
            .next()
            .expect("host");
        assert!(
            human.contains(&format!("archive  written to PostgreSQL {host}/{database}")),
            "{human}"
        );
        assert!(archive_parts(&database) > 3, "the archive went in parts");
        let lines = ok_in(cwd.path(), &url, &["export", KEY, "--archive"]);
        let archives: Vec<serde_json::Value> = lines
            .lines()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect();
        assert_eq!(archives.len(), 1);
        let entries = archives[0]["transcript_entries"]
            .as_array()
            .expect("entries");
        assert_eq!(entries.len(), 300);
        assert_eq!(entries[299]["content"], format!("entry 299 {big}"));
        // Another workspace sees none of it.
        let other = spool_in(
            cwd.path(),
            None,
            &[
                "--db",
                &url,
                "--workspace",
                "other",
                "export",
                KEY,
                "--archive",
            ],
        );
        assert!(
            stderr(&other).starts_with("error[not_found]: no session and no reset archive"),
            "{}",
            stderr(&other)
        );
        assert!(server::is_empty_dir(cwd.path()));
    }
}

#[test]
fn test_a_reset_whose_archive_cannot_be_written_still_resets_and_says_why() {
    let cwd = tempfile::tempdir().expect("temp dir");
    let database = server::fresh_database("cli_reset_archive_fails");
    let url = server::url(&database, Via::Direct);
    const KEY: &str = "agent:a:main";
    let created: serde_json::Value =
        serde_json::from_str(&ok_in(cwd.path(), &url, &["create", KEY, "--json"])).expect("JSON");
    ok_in(
        cwd.path(),
        &url,
        &["append", KEY, "--role", "user", "--content", "hi"],
    );
    let mut client =
        postgres::Client::connect(&server::admin_url(&database), postgres::NoTls).expect("connect");
    client
        .batch_execute("DROP TABLE spool_reset_archives")
        .expect("take the archive table away");
    let outcome: serde_json::Value =
        serde_json::from_str(&ok_in(cwd.path(), &url, &["reset", KEY, "--json"])).expect("JSON");
    assert_eq!(outcome["archive"]["written"], false, "{outcome}");
    let error = outcome["archive"]["error"].as_str().expect("a reason");
    assert!(error.contains("spool_reset_archives"), "{error}");
    assert_ne!(outcome["session"]["session_id"], created["session_id"]);
    // No archive was recorded, so none is listed.
    assert_eq!(ok_in(cwd.path(), &url, &["export", KEY, "--archive"]), "");
}
