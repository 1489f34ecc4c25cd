//! The token figures `list` and `show` print for imported sessions, and where they
//! come from.

use std::path::{Path, PathBuf};

use crate::common::{ok, ok_json, temp_db};
use serde_json::Value;

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/import")
        .join(rel)
        .display()
        .to_string()
}

/// A database holding the Claude Code project and the Codex rollouts of the fixtures.
fn imported() -> (tempfile::TempDir, PathBuf) {
    let (dir, db) = temp_db();
    ok(&db, &["import", "claude-code", &fixture("claude-code")]);
    ok(
        &db,
        &[
            "import",
            "codex",
            &fixture("codex"),
            &fixture("codex-shapes"),
        ],
    );
    (dir, db)
}

fn sessions(db: &Path) -> Vec<Value> {
    ok_json(db, &["list", "--limit", "1000", "--json"])["sessions"]
        .as_array()
        .expect("sessions")
        .clone()
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a count: {v}"))
}

#[test]
fn test_list_and_show_give_imported_token_estimates_and_say_so() {
    let (_dir, db) = imported();
    let all = sessions(&db);
    assert!(all.len() >= 3);
    let table = ok(&db, &["list", "--limit", "1000"]);
    for s in &all {
        let (key, tokens) = (s["key"].as_str().expect("key"), n(&s["total_tokens"]));
        assert!(tokens > 0, "{key}: {s}");
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("{key} in:\n{table}"));
        assert!(row.contains(&format!("~{tokens}")), "{row}");
        let shown = ok(&db, &["show", key]);
        assert!(
            shown.contains(&format!("tokens {tokens} (estimated")),
            "{shown}"
        );
    }
    // A session written with token counts shows them as given.
    ok(&db, &["create", "agent:main:main"]);
    ok(
        &db,
        &[
            "append",
            "agent:main:main",
            "--role",
            "user",
            "--content",
            "hi",
            "--token-count",
            "7",
        ],
    );
    let shown = ok(&db, &["show", "agent:main:main"]);
    assert!(shown.contains("tokens 7    epoch"), "{shown}");
}
