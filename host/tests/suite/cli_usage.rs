//! `spool usage`, `--prices FILE` and the token and cost figures `list` and `show` print
//! for imported sessions: where each figure comes from, and the report's totals equal
//! to the sum of the sessions' figures.

use std::path::{Path, PathBuf};

use crate::common::{fails, ok, ok_json, temp_db, usage_error};
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

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
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

#[test]
fn test_imported_responses_have_an_estimated_cost_never_billed() {
    let (_dir, db) = imported();
    let claude = "import:claude_code:6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f";
    let s = ok_json(&db, &["show", claude, "--json"])["session"].clone();
    assert!(s["estimated_cost_usd"].as_f64().expect("cost") > 0.0, "{s}");
    assert_eq!(s["cost_source"], "estimated");
    assert_eq!(s["billed_cost_usd"], 0.0);
    let shown = ok(&db, &["show", claude]);
    assert!(shown.contains("source estimated (USD)"), "{shown}");
    assert!(!shown.contains("$0.0000 total"), "{shown}");
}

#[test]
fn test_usage_totals_equal_the_sum_of_the_sessions_figures() {
    let (_dir, db) = imported();
    let report = ok_json(&db, &["usage", "--json"]);
    let total = &report["total"];
    let all = sessions(&db);
    for field in ["input_tokens", "output_tokens", "cache_read", "cache_write"] {
        let sum: u64 = all.iter().map(|s| n(&s[field])).sum();
        assert!(sum > 0, "{field}");
        assert_eq!(n(&total[field]), sum, "{field}");
    }
    let cost: f64 = all
        .iter()
        .map(|s| s["estimated_cost_usd"].as_f64().expect("cost"))
        .sum();
    assert!(cost > 0.0 && close(total["cost_usd"].as_f64().expect("cost"), cost));
    for rows in ["sessions", "days", "models"] {
        let rows = report[rows].as_array().expect("rows");
        let responses: u64 = rows.iter().map(|r| n(&r["responses"])).sum();
        assert_eq!(responses, n(&total["responses"]));
        let input: u64 = rows.iter().map(|r| n(&r["input_tokens"])).sum();
        assert_eq!(input, n(&total["input_tokens"]));
    }
    // The text report: a table per day and per model, with the total and its sources.
    let text = ok(&db, &["usage"]);
    for needle in [
        "DAY (UTC)",
        "MODEL",
        "SESSION",
        "COST (EST.)",
        "claude-sonnet-4-5-20250929",
        "gpt-5-codex",
        "2025-10-17",
        "data/prices.json",
        "not billed amounts",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    let total_line = text
        .lines()
        .find(|l| l.starts_with("total"))
        .expect("a total row");
    assert!(
        total_line.contains(&n(&total["input_tokens"]).to_string())
            && total_line.contains(&format!(
                "${:.2}",
                total["cost_usd"].as_f64().unwrap_or(0.0)
            )),
        "{total_line}"
    );
}

#[test]
fn test_usage_since_and_prices_file() {
    let (dir, db) = imported();
    let all = ok_json(&db, &["usage", "--json"]);
    let days = all["days"].as_array().expect("days");
    let last = days.last().expect("a day");
    let since = last["name"].as_str().expect("day");
    let later = ok_json(&db, &["usage", "--since", since, "--json"]);
    assert_eq!(later["days"].as_array().expect("days").len(), 1);
    assert_eq!(later["total"]["responses"], last["responses"]);
    assert!(n(&later["total"]["responses"]) < n(&all["total"]["responses"]));
    usage_error(&db, &["usage", "--since", "2025-13-01"]);
    usage_error(&db, &["usage", "--since", "soon"]);

    // A table of its own prices only what it lists.
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"prices": [{"models": ["gpt-5-codex"], "input": 1000, "output": 0, "cache_read": 0,
            "cache_write": 0, "date": "2026-12-07", "source": "https://example.test/p"}]}"#,
    )
    .expect("write");
    let p = prices.display().to_string();
    let own = ok_json(&db, &["usage", "--prices", &p, "--json"]);
    let models = own["models"].as_array().expect("models");
    let codex = models
        .iter()
        .find(|m| m["name"] == "gpt-5-codex")
        .expect("codex");
    let expected = n(&codex["input_tokens"]) as f64 * 1000.0 / 1e6;
    assert!(
        close(codex["cost_usd"].as_f64().expect("cost"), expected),
        "{codex}"
    );
    assert!(
        models
            .iter()
            .any(|m| m["name"] != "gpt-5-codex" && n(&m["unpriced"]) > 0)
    );
    let text = ok(&db, &["usage", "--prices", &p]);
    assert!(
        text.contains(&p) && text.contains("without a price"),
        "{text}"
    );

    // An import at that table prices its sessions so.
    let (_d2, db2) = temp_db();
    ok(
        &db2,
        &["import", "codex", "--prices", &p, &fixture("codex")],
    );
    let s = &sessions(&db2)[0];
    let input = n(&s["input_tokens"]) as f64;
    assert!(
        close(
            s["estimated_cost_usd"].as_f64().expect("cost"),
            input * 1000.0 / 1e6
        ),
        "{s}"
    );

    // A bad table is a clear error before anything is read or written.
    std::fs::write(
        &prices,
        r#"{"prices": [{"models": ["m"], "input": "cheap"}]}"#,
    )
    .expect("write");
    let e = fails(&db, &["usage", "--prices", &p], "invalid_argument");
    assert!(
        e.contains("prices.json") && e.contains("not a price table"),
        "{e}"
    );
    let (_d3, db3) = temp_db();
    let e = fails(
        &db3,
        &["import", "codex", "--prices", &p, &fixture("codex")],
        "invalid_argument",
    );
    assert!(e.contains("prices.json"), "{e}");
    let missing = dir.path().join("nope.json").display().to_string();
    fails(&db, &["usage", "--prices", &missing], "io");
}

#[test]
fn test_usage_of_a_workspace_without_usage_says_so() {
    let (_dir, db) = temp_db();
    ok(&db, &["create", "agent:main:main"]);
    let text = ok(&db, &["usage"]);
    assert!(text.contains("no responses with usage"), "{text}");
    let report = ok_json(&db, &["usage", "--json"]);
    assert_eq!(report["total"]["responses"], 0);
}
