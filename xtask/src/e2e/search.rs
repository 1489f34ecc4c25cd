//! The Search section of the demo page: a query typed into the search box searches every
//! session of the workspace; a hit shows its session key, entry, role and a snippet with
//! the match marked; clicking it opens that session's transcript with the hit entry
//! scrolled into view and highlighted. Runs on the data the earlier scenarios wrote (the
//! imported Claude Code sessions, the compacted main session and its fork).

use serde_json::{Value, json};

use super::{KEY, Outcome, WAIT, ensure, save_screenshot};
use crate::webdriver::Browser;

/// The project log imported earlier: its main session, and the rewind branched from it.
const MAIN: &str = "import:claude_code:6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f";

/// Types `query` into the search box, submits and waits for the answer; returns the
/// hits shown and the report.
fn search(browser: &Browser, query: &str) -> Result<Value, String> {
    let runs = browser.js(
        "return Number(document.getElementById('search-hits').dataset.runs || 0)",
        json!([]),
    )?;
    browser.type_into("#text-search-query", query)?;
    browser.click("#text-search button[type=submit]")?;
    browser.wait_for(
        &format!("Number(document.getElementById('search-hits').dataset.runs || 0) > {runs}"),
        WAIT,
    )?;
    browser.js(
        "const report = document.getElementById('text-search-report');\n\
         return {\n\
           outcome: report.dataset.outcome, code: report.dataset.code ?? null, report: report.textContent,\n\
           more: !document.getElementById('more-hits').hidden,\n\
           hits: [...document.querySelectorAll('#search-hits > li')].map(li => ({\n\
             key: li.dataset.sessionKey, entry: Number(li.dataset.entryId), role: li.dataset.role,\n\
             marks: [...li.querySelectorAll('.snippet mark')].map(m => m.textContent),\n\
             snippet: li.querySelector('.snippet').textContent })),\n\
         };",
        json!([]),
    )
}

/// Clicks the `index`-th hit; waits for its session and its entry highlighted; returns
/// what the transcript shows.
fn open(browser: &Browser, index: usize, key: &str, entry: u64) -> Result<Value, String> {
    browser.click(&format!(
        "#search-hits > li:nth-child({}) button.hit",
        index + 1
    ))?;
    browser.wait_for(
        &format!(
            "document.getElementById('session-title').textContent === {} && document.getElementById('transcript').dataset.hit === '{entry}' && document.getElementById('transcript').dataset.hitShown",
            json!(key)
        ),
        WAIT,
    )?;
    browser.js(
        "const t = document.getElementById('transcript');\n\
         const marked = [...t.querySelectorAll('li.entry.search-hit')];\n\
         const el = marked[0];\n\
         const box = el ? el.getBoundingClientRect() : null;\n\
         return { shown: t.dataset.hitShown, marked: marked.map(li => Number(li.dataset.entryId)),\n\
                  current: el ? el.getAttribute('aria-current') : null,\n\
                  inView: box ? box.bottom > 0 && box.top < innerHeight : false,\n\
                  status: document.getElementById('status').textContent };",
        json!([]),
    )
}

pub(super) fn search_box(browser: &Browser) -> Result<Outcome, String> {
    let has = browser.js(
        "return typeof window.spoolDemo.spool.search === 'function'",
        json!([]),
    )?;
    if has != true {
        return Ok(Outcome::Skipped("this build has no search()"));
    }
    // A phrase of the imported project's first prompt: its rewind shares that history,
    // and the shared entry is found once, under the session that owns it.
    let found = search(browser, "\"public API\"")?;
    ensure(found["outcome"] == "ok", || {
        format!("search failed: {found}")
    })?;
    let hits = found["hits"].as_array().cloned().unwrap_or_default();
    ensure(hits.len() == 1, || {
        format!("expected the one shared entry: {found}")
    })?;
    ensure(hits[0]["key"] == MAIN && hits[0]["role"] == "user", || {
        format!("hit: {found}")
    })?;
    ensure(hits[0]["marks"] == json!(["public", "API"]), || {
        format!("marked: {found}")
    })?;
    let entry = hits[0]["entry"].as_u64().unwrap_or(0);
    let shown = open(browser, 0, MAIN, entry)?;
    ensure(
        shown["shown"] == "true"
            && shown["marked"] == json!([entry])
            && shown["current"] == "true"
            && shown["inView"] == true,
        || format!("the hit entry in its transcript: {shown}"),
    )?;
    save_screenshot(browser, "search")?;

    // Across sessions: every hit's snippet marks the word, best first, each entry once.
    let found = search(browser, "parser")?;
    let hits = found["hits"].as_array().cloned().unwrap_or_default();
    ensure(hits.len() >= 3, || format!("parser hits: {found}"))?;
    let keys: std::collections::BTreeSet<&str> =
        hits.iter().filter_map(|h| h["key"].as_str()).collect();
    ensure(keys.contains(KEY) && keys.contains(MAIN), || {
        format!("sessions with parser hits: {keys:?}")
    })?;
    ensure(
        hits.iter().all(|h| {
            h["marks"].as_array().is_some_and(|m| {
                !m.is_empty()
                    && m.iter().all(|m| {
                        m.as_str()
                            .is_some_and(|m| m.to_lowercase().starts_with("parser"))
                    })
            })
        }),
        || format!("a hit without its match marked: {found}"),
    )?;
    let mut seen = std::collections::BTreeSet::new();
    ensure(
        hits.iter()
            .all(|h| seen.insert((h["key"].to_string(), h["entry"].to_string()))),
        || format!("an entry found twice: {found}"),
    )?;
    // The last of the main session's hits that its transcript still shows opens there.
    let (index, hit) = hits
        .iter()
        .enumerate()
        .find(|(_, h)| {
            h["key"] == KEY
                && h["snippet"]
                    .as_str()
                    .is_some_and(|s| s.contains("42 parser tests"))
        })
        .ok_or_else(|| format!("no hit of the last reply: {found}"))?;
    let entry = hit["entry"].as_u64().unwrap_or(0);
    let shown = open(browser, index, KEY, entry)?;
    ensure(
        shown["shown"] == "true" && shown["marked"] == json!([entry]) && shown["inView"] == true,
        || format!("the hit entry in its transcript: {shown}"),
    )?;

    // An entry the compaction archived is found too; its session says where it went.
    let found = search(browser, format!("flaky role:user session:{KEY}").as_str())?;
    let hits = found["hits"].as_array().cloned().unwrap_or_default();
    ensure(hits.len() == 1 && hits[0]["key"] == KEY, || {
        format!("the compacted goal: {found}")
    })?;
    let entry = hits[0]["entry"].as_u64().unwrap_or(0);
    let shown = open(browser, 0, KEY, entry)?;
    ensure(
        shown["shown"] == "false"
            && shown["marked"] == json!([])
            && shown["status"]
                .as_str()
                .is_some_and(|s| s.contains("compacted")),
        || format!("a compacted hit: {shown}"),
    )?;

    // Nothing found, and a query the engine refuses: its code, shown.
    let found = search(browser, "zyzzyvas")?;
    ensure(
        found["outcome"] == "ok" && found["hits"] == json!([]) && found["report"] == "No hits.",
        || format!("no hits: {found}"),
    )?;
    let found = search(browser, "\"not closed")?;
    ensure(
        found["outcome"] == "error"
            && found["code"] == "invalid_argument"
            && found["report"]
                .as_str()
                .is_some_and(|r| r.starts_with("[invalid_argument] ")),
        || format!("a bad query: {found}"),
    )?;
    Ok(Outcome::Passed)
}
