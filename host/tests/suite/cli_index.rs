//! `spool index` on a database whose history predates the search index, with other
//! processes appending to it meanwhile.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use crate::common::{cache_dir, count_raw, execute_raw, ok, ok_json, temp_db};

const OLD: u64 = 2600;

/// A session of `OLD` entries (`noteN`, N = 1…) whose index rows are gone, as in a
/// database written before the index, and a second session with a fresh index.
fn old_database() -> (tempfile::TempDir, std::path::PathBuf) {
    old_index_rows(
        "DELETE FROM kv WHERE substr(key, 1, 1) = x'49'",
        "DELETE FROM spool_kv WHERE substr(key, 1, 1) = '\\x49'::bytea",
    )
}

/// The sessions of [`old_database`], every index row of theirs changed by a statement
/// (`sqlite`'s or `postgres`'s, the test database's).
fn old_index_rows(sqlite: &str, postgres: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, db) = temp_db();
    ok(&db, &["create", "agent:old:main"]);
    let jsonl = dir.path().join("old.jsonl");
    for chunk in (1..=OLD).collect::<Vec<u64>>().chunks(650) {
        let lines: String = chunk
            .iter()
            .map(|n| format!("{{\"role\":\"user\",\"content\":\"note{n} older history\"}}\n"))
            .collect();
        std::fs::write(&jsonl, lines).expect("write jsonl");
        ok(
            &db,
            &[
                "append",
                "agent:old:main",
                "--jsonl",
                jsonl.to_str().expect("utf-8"),
            ],
        );
    }
    ok(&db, &["create", "agent:new:main"]);
    ok(
        &db,
        &[
            "append",
            "agent:new:main",
            "--role",
            "user",
            "--content",
            "note1 newer",
        ],
    );
    // The search index's rows (tag `I`).
    let changed = execute_raw(&db, sqlite, postgres);
    assert!(changed > 0, "the appends wrote index rows");
    (dir, db)
}

fn hits(db: &std::path::Path, query: &str) -> serde_json::Value {
    ok_json(db, &["search", query, "--limit", "100", "--json"])
}

/// The entry ids of every hit of `term`, paging through all of it: each at most once,
/// and nothing left unsearched on any page.
fn every_hit_once(db: &std::path::Path, term: &str) -> BTreeSet<u64> {
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["search", term, "--limit", "100", "--json"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = ok_json(db, &args);
        assert_eq!(page["unindexed"], 0, "{page}");
        for hit in page["hits"].as_array().expect("hits") {
            let id = hit["entry_id"].as_u64().expect("id");
            assert!(seen.insert(id), "entry {id} twice");
        }
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return seen;
        }
    }
}

/// `spool index` on `db` in its own process, its output piped.
fn spawn_index(db: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_spool"))
        .arg("--db")
        .arg(db)
        .arg("index")
        .env("SPOOL_CACHE_DIR", cache_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spool index")
}

#[test]
fn test_index_makes_old_history_searchable_while_writers_append() {
    let (_dir, db) = old_database();
    let missed = hits(&db, "note2500");
    assert_eq!(missed["hits"].as_array().map(Vec::len), Some(0), "{missed}");
    let unindexed = missed["unindexed"].as_u64().expect("unindexed");
    assert!(unindexed >= OLD - 1024, "{missed}");
    let table = ok(&db, &["search", "note2500"]);
    assert!(table.contains("`spool index`"), "{table}");

    // `spool index` in one process, two writers appending in others.
    let index = spawn_index(&db);
    let writers: Vec<_> = ["a", "b"]
        .iter()
        .map(|w| {
            let db = db.clone();
            let w = (*w).to_owned();
            std::thread::spawn(move || {
                for i in 0..12 {
                    ok(
                        &db,
                        &[
                            "append",
                            "agent:old:main",
                            "--role",
                            "user",
                            "--content",
                            &format!("late{w}{i} older history"),
                        ],
                    );
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer");
    }
    let out = index.wait_with_output().expect("spool index");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("agent:old:main: indexed"), "{text}");
    assert!(
        text.contains("every session of workspace `default` is indexed"),
        "{text}"
    );

    for n in [1, 1024, 1025, 2500, OLD] {
        let page = hits(&db, &format!("note{n}"));
        let found: Vec<u64> = page["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .filter(|h| h["session_key"] == "agent:old:main")
            .filter_map(|h| h["entry_id"].as_u64())
            .collect();
        assert_eq!(found, [n], "note{n}: {page}");
        assert_eq!(page["unindexed"], 0, "{page}");
    }
    // Every entry once, the writers' too: page through a term they all hold.
    let seen = every_hit_once(&db, "older");
    assert_eq!(seen.len() as u64, OLD + 24);

    // Once done, a second run writes nothing and says so.
    let again = ok_json(&db, &["index", "--json"]);
    assert_eq!(again["indexed_entries"], 0, "{again}");
    assert!(ok(&db, &["index"]).contains("nothing to do"));
}

#[test]
fn test_index_killed_mid_run_resumes_and_finds_every_entry_once() {
    use std::io::{BufRead, BufReader};

    let (_dir, db) = old_database();
    let mut index = spawn_index(&db);
    // The first run is committed (its line printed): kill -9 before it is done.
    let mut first = String::new();
    BufReader::new(index.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a progress line");
    assert!(first.contains("agent:old:main: indexed"), "{first}");
    index.kill().expect("SIGKILL");
    let _ = index.wait();

    let page = hits(&db, "note1");
    assert!(
        page["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{page}"
    );
    // It carries on from what was committed (all of it, if the kill came after the
    // last run: the window is a few milliseconds, so that is not asserted).
    let again = ok_json(&db, &["index", "--json"]);
    assert!(again["indexed_entries"].as_u64() < Some(OLD), "{again}");
    let seen = every_hit_once(&db, "older");
    assert_eq!(seen, (1..=OLD).collect::<BTreeSet<u64>>());
}

/// Rows of the tag `i`, where builds before `I` kept the index.
fn v1_rows(db: &std::path::Path) -> i64 {
    count_raw(
        db,
        "SELECT count(*) FROM kv WHERE substr(key, 1, 1) = x'69'",
        "SELECT count(*) FROM spool_kv WHERE substr(key, 1, 1) = '\\x69'::bytea",
    )
}

#[test]
fn test_index_replaces_an_index_kept_under_the_old_tag() {
    // The index as an earlier build wrote it: the same rows under tag `i`.
    let (_dir, db) = old_index_rows(
        "UPDATE kv SET key = CAST(x'69' || substr(key, 2) AS BLOB) \
         WHERE substr(key, 1, 1) = x'49'",
        "UPDATE spool_kv SET key = '\\x69'::bytea || substr(key, 2) \
         WHERE substr(key, 1, 1) = '\\x49'::bytea",
    );
    assert!(v1_rows(&db) > 0);
    let missed = hits(&db, "note2500");
    assert_eq!(missed["hits"].as_array().map(Vec::len), Some(0), "{missed}");
    assert!(missed["unindexed"].as_u64().expect("unindexed") >= OLD - 1024);

    let out = spawn_index(&db).wait_with_output().expect("spool index");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v1_rows(&db), 0, "the new runs removed the old ones");
    let found = hits(&db, "note2500");
    assert_eq!(found["unindexed"], 0, "{found}");
    assert_eq!(found["hits"].as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(every_hit_once(&db, "older").len() as u64, OLD);
}
