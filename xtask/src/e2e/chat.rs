//! The chat view (`web/www/chat.html`) driven as a user would: an answer streams in
//! from the scripted model and settles with its usage; Stop leaves it incomplete;
//! a reload mid-answer shows what arrived, and the next turn marks it interrupted;
//! "Edit" on a message opens a branch answered in turn. Saves `chat.png`.

use serde_json::json;

use super::{Outcome, WAIT, ensure, load, save_screenshot};
use crate::webdriver::Browser;

/// The assistant messages in `status` (`in_progress`, `incomplete`, `done`).
fn assistants(browser: &Browser, status: &str) -> Result<u64, String> {
    let n = browser.js(
        "return document.querySelectorAll(`#messages li[data-role=assistant][data-status=${arguments[0]}]`).length",
        json!([status]),
    )?;
    Ok(n.as_u64().unwrap_or(0))
}

/// Sends `text` from the composer.
fn send(browser: &Browser, text: &str) -> Result<(), String> {
    browser.wait_for("!document.getElementById('send').disabled", WAIT)?;
    browser.type_into("#prompt", text)?;
    browser.click("#send")
}

/// Waits until an answer streams (an assistant message in progress with some text).
fn wait_streaming(browser: &Browser) -> Result<(), String> {
    browser.wait_for(
        "[...document.querySelectorAll('#messages li[data-status=in_progress] .text')].some(p => p.textContent.length > 20)",
        WAIT,
    )?;
    Ok(())
}

/// Waits until no answer streams and the composer is free.
fn wait_idle(browser: &Browser) -> Result<(), String> {
    browser.wait_for(
        "!document.getElementById('send').disabled && !document.querySelector('#messages li[data-status=in_progress]')",
        WAIT,
    )?;
    Ok(())
}

pub(super) fn chat(browser: &Browser, url: &str) -> Result<Outcome, String> {
    load(browser, url)?;
    browser.click("#new-chat")?;
    browser.wait_for(
        "document.getElementById('chat-title').textContent.startsWith('agent:chat:')",
        WAIT,
    )?;
    // A whole answer: text and a tool call, the tool's result, the final text.
    send(browser, "Fix the parser: it drops the last element")?;
    wait_streaming(browser)?;
    wait_idle(browser)?;
    ensure(assistants(browser, "done")? == 2, || {
        "two settled answers".into()
    })?;
    let usage = browser.js(
        "return [...document.querySelectorAll('#messages li[data-role=assistant] .usage')].map(u => u.textContent)",
        json!([]),
    )?;
    ensure(usage.as_array().is_some_and(|u| u.len() == 2), || {
        format!("each answer shows its tokens and cost: {usage}")
    })?;
    let input = browser.js(
        "return Number(document.getElementById('chat-usage').dataset.input)",
        json!([]),
    )?;
    ensure(input.as_f64().is_some_and(|n| n > 0.0), || {
        format!("the conversation's totals: {input}")
    })?;
    // Stop mid-answer: what arrived is kept, marked stopped.
    send(browser, "Now refactor the lexer")?;
    wait_streaming(browser)?;
    browser.click("#stop")?;
    browser.wait_for(
        "[...document.querySelectorAll('#messages li[data-status=incomplete] .badge')].some(b => b.textContent.includes('stopped by the user'))",
        WAIT,
    )?;
    wait_idle(browser)?;
    // Reload mid-answer: the answer is there, as far as it was written.
    send(browser, "Add documentation for the parser")?;
    wait_streaming(browser)?;
    std::thread::sleep(std::time::Duration::from_millis(700));
    load(browser, url)?;
    let left = browser.wait_for(
        "document.querySelector('#messages li[data-status=in_progress]')?.querySelector('.text').textContent",
        WAIT,
    )?;
    ensure(left.as_str().is_some_and(|t| t.len() > 10), || {
        format!("the partial answer after the reload: {left}")
    })?;
    save_screenshot(browser, "chat-reloaded")?;
    // The next turn marks it interrupted.
    send(browser, "Continue")?;
    wait_streaming(browser)?;
    wait_idle(browser)?;
    browser.wait_for(
        "[...document.querySelectorAll('#messages li[data-status=incomplete] .badge')].some(b => b.textContent.includes('interrupted'))",
        WAIT,
    )?;
    // Edit the first message: a branch, answered.
    browser.click("#messages li[data-role=user] button.edit")?;
    browser.js(
        "const area = document.querySelector('#messages li[data-role=user] .edit-text'); area.value = 'Fix the parser and add a test'; area.form.requestSubmit();",
        json!([]),
    )?;
    browser.wait_for(
        "document.getElementById('chat-title').textContent.includes('-edit-')",
        WAIT,
    )?;
    wait_streaming(browser)?;
    wait_idle(browser)?;
    let first = browser.js(
        "return document.querySelector('#messages li[data-role=user] .text').textContent",
        json!([]),
    )?;
    ensure(first == "Fix the parser and add a test", || {
        format!("the branch holds the edited message: {first}")
    })?;
    ensure(assistants(browser, "done")? == 2, || {
        "the branch is answered".into()
    })?;
    // Search finds the conversations that hold a word.
    browser.type_into("#chat-search", "lexer")?;
    browser.wait_for(
        "document.querySelectorAll('#chat-list li').length === 1",
        WAIT,
    )?;
    save_screenshot(browser, "chat")?;
    Ok(Outcome::Passed)
}
