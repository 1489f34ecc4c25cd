//! The agent-UI sections of the demo page, driven as a user would: turns, context states,
//! the simulated provider fork (accept and reject), and truncate / reset / delete of a
//! session with their confirmations.

use serde_json::{Value, json};

use super::{Outcome, WAIT, append, count, ensure, wait_count};
use crate::webdriver::Browser;

/// The session the turn, state and provider-fork scenarios share.
pub(super) const AGENT: &str = "agent:e2e:agent";
/// The provider fork's child, and the target of the rejected fork.
const CHILD: &str = "agent:e2e:agent-child";
const REJECTED: &str = "agent:e2e:agent-rejected";
/// The session truncated, reset and deleted.
const SCRATCH: &str = "agent:e2e:scratch";

fn create(browser: &Browser, key: &str) -> Result<(), String> {
    browser.type_into("#new-key", key)?;
    browser.click("#new-session button[type=submit]")?;
    browser.wait_for(
        &format!(
            "document.getElementById('session-title').textContent === {}",
            json!(key)
        ),
        WAIT,
    )?;
    wait_count(browser, 0)
}

/// `#turn-list`'s row of `turn` once it shows `phase`; returns its boundary cell.
fn wait_turn(browser: &Browser, turn: &str, phase: &str) -> Result<Value, String> {
    browser.wait_for(
        &format!(
            "document.querySelector('#turn-list tr[data-turn-id={}][data-phase={}]')?.children[3].textContent",
            json!(turn),
            json!(phase)
        ),
        WAIT,
    )
}

pub(super) fn turns(browser: &Browser) -> Result<Outcome, String> {
    create(browser, AGENT)?;
    browser.type_into("#turn-id", "turn-1")?;
    browser.type_into("#provider-turn-id", "provider-turn-1")?;
    browser.click("#start-turn button[type=submit]")?;
    ensure(wait_turn(browser, "turn-1", "running")? == "—", || {
        "a running turn has no boundary".into()
    })?;
    // While the turn runs, the append form carries its id into the entries.
    browser.wait_for(
        "document.getElementById('append-turn').value === 'turn-1'",
        WAIT,
    )?;
    append(browser, "user", "Goal: add a --json flag to the CLI.", None)?;
    append(browser, "assistant", "Adding it in src/cli.rs.", None)?;
    let tagged = browser.js(
        "return [...document.querySelectorAll('#transcript li.entry')].map(li => li.dataset.turnId || null)",
        json!([]),
    )?;
    ensure(tagged == json!(["turn-1", "turn-1"]), || {
        format!("entries of the turn: {tagged}")
    })?;
    // One turn at a time: the engine refuses a second and the page shows why.
    browser.type_into("#turn-id", "turn-2")?;
    browser.click("#start-turn button[type=submit]")?;
    let refused = browser.wait_for(
        "document.getElementById('status').dataset.kind === 'error' && document.getElementById('status').textContent",
        WAIT,
    )?;
    ensure(
        refused
            .as_str()
            .is_some_and(|s| s.starts_with("[conflict]") && s.contains("still running")),
        || format!("second running turn: {refused}"),
    )?;
    let last_entry = browser.js(
        "return '#' + [...document.querySelectorAll('#transcript li.entry')].pop().dataset.entryId",
        json!([]),
    )?;
    browser.click("#turn-list tr[data-turn-id=\"turn-1\"] button.settle")?;
    let boundary = wait_turn(browser, "turn-1", "settled")?;
    ensure(boundary == last_entry, || {
        format!("settled boundary {boundary}, newest entry {last_entry}")
    })?;
    browser.wait_for("document.getElementById('append-turn').value === ''", WAIT)?;
    // After the turn: an entry a fork through turn-1 must not copy.
    append(browser, "user", "Also update the README.", None)?;
    browser.type_into("#turn-id", "turn-2")?;
    browser.click("#start-turn button[type=submit]")?;
    wait_turn(browser, "turn-2", "running")?;
    browser.click("#turn-list tr[data-turn-id=\"turn-2\"] button.interrupt")?;
    wait_turn(browser, "turn-2", "interrupted")?;
    // A turn with no entries: once turn-3 follows it, turn-2 is neither named by the
    // transcript nor the latest, and the list (`listTurns`) still shows it.
    browser.type_into("#turn-id", "turn-3")?;
    browser.click("#start-turn button[type=submit]")?;
    wait_turn(browser, "turn-3", "running")?;
    browser.click("#turn-list tr[data-turn-id=\"turn-3\"] button.settle")?;
    wait_turn(browser, "turn-3", "settled")?;
    let listed = || {
        browser.js(
            "return [...document.querySelectorAll('#turn-list tr[data-turn-id]')].map(tr => [tr.dataset.turnId, tr.dataset.phase])",
            json!([]),
        )
    };
    let every = json!([
        ["turn-3", "settled"],
        ["turn-2", "interrupted"],
        ["turn-1", "settled"]
    ]);
    let phases = listed()?;
    ensure(phases == every, || {
        format!("turns listed, newest first: {phases}")
    })?;
    // A page at a time: with pages of two, "More" reads the rest through the cursor.
    browser.js_async(
        "window.spoolDemo.turnPaging.size = 2; await window.spoolDemo.select(arguments[0]);",
        json!([AGENT]),
    )?;
    browser.wait_for(
        "document.querySelectorAll('#turn-list tr[data-turn-id]').length === 2 && !document.getElementById('more-turns').hidden",
        WAIT,
    )?;
    let first = listed()?;
    ensure(first == json!([every[0], every[1]]), || {
        format!("first page of two: {first}")
    })?;
    browser.click("#more-turns")?;
    browser.wait_for(
        "document.querySelectorAll('#turn-list tr[data-turn-id]').length === 3 && document.getElementById('more-turns').hidden",
        WAIT,
    )?;
    let phases = listed()?;
    ensure(phases == every, || format!("after More: {phases}"))?;
    browser.js("window.spoolDemo.turnPaging.size = 50", json!([]))?;
    Ok(Outcome::Passed)
}

fn state_rows(browser: &Browser) -> Result<Value, String> {
    browser.js(
        "return [...document.querySelectorAll('#state-list tr[data-state-id]')].map(tr => [tr.children[2].textContent, tr.dataset.valid, tr.children[4].textContent])",
        json!([]),
    )
}

fn wait_state_rows(browser: &Browser, n: usize) -> Result<(), String> {
    browser
        .wait_for(
            &format!("document.querySelectorAll('#state-list tr[data-state-id]').length === {n}"),
            WAIT,
        )
        .map(drop)
}

pub(super) fn context_states(browser: &Browser) -> Result<Outcome, String> {
    browser.click("#save-state button[type=submit]")?;
    wait_state_rows(browser, 1)?;
    browser.type_into("#state-kind", "tool_cache")?;
    browser.type_into("#state-payload", r#"{"tools": ["shell"]}"#)?;
    browser.click("#save-state button[type=submit]")?;
    wait_state_rows(browser, 2)?;
    browser.type_into("#invalidate-kind", "prompt_cache")?;
    browser.click("#invalidate-states button[type=submit]")?;
    browser.wait_for(
        "document.getElementById('states-report').textContent === 'Invalidated 1 state(s).'",
        WAIT,
    )?;
    wait_state_rows(browser, 1)?;
    let valid = state_rows(browser)?;
    ensure(valid == json!([["tool_cache", "true", "valid"]]), || {
        format!("valid states: {valid}")
    })?;
    browser.click("#states-all")?;
    wait_state_rows(browser, 2)?;
    let all = state_rows(browser)?;
    ensure(
        all == json!([
            ["prompt_cache", "false", "invalid: model changed"],
            ["tool_cache", "true", "valid"]
        ]),
        || format!("all states: {all}"),
    )?;
    Ok(Outcome::Passed)
}

/// Waits for the fork operation panel to show `attribute` = `value`.
fn wait_op(browser: &Browser, attribute: &str, value: &str) -> Result<(), String> {
    browser
        .wait_for(
            &format!(
                "document.getElementById('fork-op').dataset.{attribute} === {}",
                json!(value)
            ),
            WAIT,
        )
        .map(drop)
}

fn op_field(browser: &Browser, field: &str) -> Result<Value, String> {
    browser.js(
        "return document.querySelector(`#fork-op [data-field=\"${arguments[0]}\"]`)?.textContent ?? null",
        json!([field]),
    )
}

fn prepare(browser: &Browser, through: &str, target: &str) -> Result<(), String> {
    browser.js(
        "document.getElementById('fork-turn').value = arguments[0]",
        json!([through]),
    )?;
    browser.type_into("#fork-target", target)?;
    browser.click("#fork-prepare button[type=submit]")?;
    Ok(())
}

pub(super) fn provider_fork(browser: &Browser) -> Result<Outcome, String> {
    // A fork point must be a settled turn: the engine refuses the interrupted one.
    prepare(browser, "turn-2", "agent:e2e:never")?;
    let refused = browser.wait_for(
        "document.getElementById('fork-step').dataset.outcome === 'error' && document.getElementById('fork-step').textContent",
        WAIT,
    )?;
    ensure(
        refused
            .as_str()
            .is_some_and(|s| s.contains("[conflict]") && s.contains("turn_interrupted")),
        || format!("fork through an interrupted turn: {refused}"),
    )?;

    // Accept: prepare → dispatch → the provider accepts → commit → acknowledge.
    prepare(browser, "turn-1", CHILD)?;
    wait_op(browser, "status", "accepted")?;
    wait_op(browser, "phase", "frozen")?;
    ensure(op_field(browser, "point")? == "through turn-1", || {
        "fork point not through turn-1".into()
    })?;
    browser.click("#fork-dispatch")?;
    wait_op(browser, "phase", "dispatching")?;
    let payload = browser.js(
        "return JSON.parse(document.querySelector('#fork-payload pre').textContent)",
        json!([]),
    )?;
    ensure(
        payload["target_key"] == CHILD && payload["point"]["turn_id"] == "turn-1",
        || format!("dispatch payload: {payload}"),
    )?;
    browser.click("#fork-accept")?;
    wait_op(browser, "state", "provider_accepted")?;
    wait_op(browser, "phase", "materializing")?;
    browser.click("#fork-commit")?;
    wait_op(browser, "status", "committed")?;
    let tree = browser.wait_for(
        &format!(
            "document.querySelector('#lineage-tree li[data-key={}] > ul > li[data-key={}][data-fork=provider]')?.textContent",
            json!(AGENT),
            json!(CHILD)
        ),
        WAIT,
    )?;
    ensure(
        tree.as_str().is_some_and(|t| t.contains("through turn-1")),
        || format!("child in the lineage tree: {tree}"),
    )?;
    browser.wait_for(
        &format!(
            "document.querySelector('#session-list li[data-key={}]')",
            json!(CHILD)
        ),
        WAIT,
    )?;
    // The child holds the source's history through turn-1's boundary, not the entry after.
    let copied = browser.js_async(
        "return await window.spoolDemo.spool.countEntries(window.spoolDemo.workspace, { key: arguments[0] })",
        json!([CHILD]),
    )?;
    ensure(copied == 2, || {
        format!("the child has {copied} entries, not the 2 through turn-1")
    })?;
    browser.click("#fork-ack")?;
    browser.wait_for(
        "document.querySelector('#fork-op [data-field=acknowledged]')?.textContent === 'true'",
        WAIT,
    )?;

    // Reject: the operation fails with the provider's error and reason, kept verbatim.
    prepare(browser, "", REJECTED)?;
    browser.wait_for(
        &format!(
            "document.querySelector('#fork-op [data-field=target]')?.textContent === {} && document.getElementById('fork-op').dataset.phase === 'frozen'",
            json!(REJECTED)
        ),
        WAIT,
    )?;
    ensure(op_field(browser, "point")? == "whole session", || {
        "fork point not the whole session".into()
    })?;
    browser.click("#fork-dispatch")?;
    wait_op(browser, "phase", "dispatching")?;
    let error = browser.js(
        "return document.getElementById('fork-error').value",
        json!([]),
    )?;
    browser.click("#fork-reject")?;
    wait_op(browser, "status", "failed")?;
    ensure(op_field(browser, "error")? == error, || {
        format!("error kept: {:?}", op_field(browser, "error"))
    })?;
    ensure(
        op_field(browser, "reason")? == "attachment_unsupported",
        || "reason not kept".into(),
    )?;
    // Committing a failed fork is refused, with the engine's code.
    browser.click("#fork-commit")?;
    let commit = browser.wait_for(
        "document.getElementById('fork-step').textContent.startsWith('commit:') && document.getElementById('fork-step').dataset.outcome === 'error' && document.getElementById('fork-step').dataset.code",
        WAIT,
    )?;
    ensure(commit == "conflict", || {
        format!("commit of a failed fork: {commit}")
    })?;
    let listed = browser.js(
        "return !!document.querySelector(`#session-list li[data-key=\"${arguments[0]}\"]`)",
        json!([REJECTED]),
    )?;
    ensure(listed == false, || {
        "the rejected fork created a session".into()
    })?;
    browser.js(
        "document.getElementById('provider-fork').scrollIntoView()",
        json!([]),
    )?;
    super::save_screenshot(browser, "provider-fork")?;
    Ok(Outcome::Passed)
}

/// Confirms (or cancels) the page's confirmation dialog.
fn answer_dialog(browser: &Browser, confirm: bool) -> Result<(), String> {
    browser.wait_for("document.getElementById('confirm').open", WAIT)?;
    browser.click(if confirm {
        "#confirm-ok"
    } else {
        "#confirm-cancel"
    })?;
    browser
        .wait_for("!document.getElementById('confirm').open", WAIT)
        .map(drop)
}

fn report(browser: &Browser, starts: &str) -> Result<String, String> {
    let text = browser.wait_for(
        &format!(
            "document.getElementById('session-action-report').textContent.startsWith({}) && document.getElementById('session-action-report').textContent",
            json!(starts)
        ),
        WAIT,
    )?;
    Ok(text.as_str().unwrap_or_default().to_owned())
}

pub(super) fn truncate_reset_delete(browser: &Browser) -> Result<Outcome, String> {
    create(browser, SCRATCH)?;
    for i in 1..=4 {
        append(browser, "user", &format!("scratch message {i}"), None)?;
    }
    browser.type_into("#truncate-keep", "2")?;
    browser.click("#truncate button[type=submit]")?;
    answer_dialog(browser, true)?;
    let truncated = report(browser, "Truncated")?;
    ensure(truncated == "Truncated: 4 → 2 messages.", || {
        format!("truncate report: {truncated}")
    })?;
    wait_count(browser, 2)?;
    let kept = browser.js(
        "return [...document.querySelectorAll('#transcript li.entry .content')].map(c => c.textContent)",
        json!([]),
    )?;
    ensure(
        kept == json!(["scratch message 3", "scratch message 4"]),
        || format!("truncate kept {kept}"),
    )?;

    browser.click("#reset-session")?;
    answer_dialog(browser, true)?;
    let reset = report(browser, "Reset")?;
    ensure(reset.ends_with("the old one is archived."), || {
        format!("reset report: {reset}")
    })?;
    wait_count(browser, 0)?;
    browser.wait_for(
        "document.getElementById('archive-count').textContent === '1'",
        WAIT,
    )?;
    let archive = browser.js(
        "return document.querySelector('#archive-list > li > span').textContent",
        json!([]),
    )?;
    ensure(
        archive.as_str().is_some_and(|a| a.ends_with("2 entries")),
        || format!("archive: {archive}"),
    )?;

    browser.click("#delete-session")?;
    answer_dialog(browser, false)?;
    report(browser, "Delete cancelled.")?;
    ensure(count(browser)? == 0, || "cancel changed the page".into())?;
    let listed = format!(
        "!!document.querySelector('#session-list li[data-key={}]')",
        json!(SCRATCH)
    );
    ensure(
        browser.js(&format!("return {listed}"), json!([]))? == true,
        || "cancelled delete removed the session".into(),
    )?;
    browser.click("#delete-session")?;
    answer_dialog(browser, true)?;
    report(browser, "Deleted")?;
    browser.wait_for(&format!("!{listed}"), WAIT)?;
    browser.wait_for(
        "document.getElementById('session-title').textContent === 'No session selected'",
        WAIT,
    )?;
    Ok(Outcome::Passed)
}

/// After the reload: the turns, states and provider fork of [`AGENT`] are still there.
pub(super) fn persisted(browser: &Browser) -> Result<(), String> {
    browser.click(&format!(
        "#session-list li[data-key={}] > button",
        json!(AGENT)
    ))?;
    wait_turn(browser, "turn-3", "settled")?;
    wait_turn(browser, "turn-2", "interrupted")?;
    wait_turn(browser, "turn-1", "settled")?;
    wait_state_rows(browser, 1)?;
    browser.wait_for(
        &format!(
            "document.querySelector('#lineage-tree li[data-key={}][data-fork=provider]')",
            json!(CHILD)
        ),
        WAIT,
    )?;
    Ok(())
}
