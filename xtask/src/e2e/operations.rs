//! The Operations panel: every method the page lists from the `Spool` class is run at
//! least once through the panel (its inputs, its Run button), with valid arguments, and
//! each answer is checked — a result, or the typed error the call must give. The scenario
//! fails when the page lists a method this test did not call, so a method added to the
//! class without a call here is caught. Also the raw `execute` box.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{CLAUDE_LOG, Outcome, WAIT, ensure};
use crate::webdriver::Browser;

/// The session the panel works on, and the keys it creates besides.
const OPS: &str = "agent:e2e:ops";
const BRANCH: &str = "agent:e2e:ops-branch";
const EDITED: &str = "agent:e2e:ops-edited";
const FORKED: &str = "agent:e2e:ops-fork";
const IMPORTED: &str = "import:claude_code:ops-copy";
/// An age no session of the test reaches: `pruneStale` must delete nothing.
const TEN_YEARS_MS: u64 = 10 * 365 * 24 * 3600 * 1000;

/// What the panel showed for one run.
struct Answer {
    outcome: String,
    code: Value,
    text: String,
    value: Value,
    prefills: Value,
}

/// Drives the panel and remembers which methods it ran.
struct Panel<'a> {
    browser: &'a Browser,
    called: BTreeSet<String>,
}

impl Panel<'_> {
    /// Resets the row of `method`, types `args` (JSON per named parameter; for a table
    /// method, whose one `args` box takes the call's fields, a name that is a field of the
    /// call is written into that box over its pre-fill; the others keep the page's pre-fill
    /// or stay empty), clicks Run and reads the answer.
    fn run(&mut self, method: &str, args: Value) -> Result<Answer, String> {
        let out = self.browser.js_async(
            "const [name, args] = arguments;\n\
             const li = document.querySelector(`#ops-list li[data-method=\"${name}\"]`);\n\
             if (!li) throw new Error(`the panel has no row for ${name}`);\n\
             li.querySelector('details').open = true;\n\
             li.querySelector('button[aria-label^=\"Reset\"]').click();\n\
             const inputs = [...li.querySelectorAll('[data-param]')];\n\
             const prefills = Object.fromEntries(inputs.map(i => [i.dataset.param, i.value]));\n\
             const table = li.dataset.table === 'true' ? inputs.find(i => i.dataset.param === 'args') : null;\n\
             let merged = null;\n\
             for (const [param, value] of Object.entries(args)) {\n\
               const input = inputs.find(i => i.dataset.param === param);\n\
               if (input) { input.value = JSON.stringify(value); continue; }\n\
               const fields = table ? table.dataset.fields.split(' ') : [];\n\
               if (!fields.includes(param)) throw new Error(`${name} has no parameter or field ${param} (${inputs.map(i => i.dataset.param)} ${fields})`);\n\
               merged = merged ?? (table.value.trim() ? JSON.parse(table.value) : {});\n\
               merged[param] = value;\n\
             }\n\
             if (merged) table.value = JSON.stringify(merged);\n\
             const out = li.querySelector('output');\n\
             const runs = Number(out.dataset.runs);\n\
             li.querySelector('button[type=submit]').click();\n\
             while (Number(out.dataset.runs) === runs) await new Promise(r => setTimeout(r, 10));\n\
             const value = window.spoolDemo.operations.lastValue(name);\n\
             return { outcome: out.dataset.outcome, code: out.dataset.code ?? null,\n\
                      text: out.textContent, value: value === undefined ? null : value, prefills };",
            json!([method, args]),
        )?;
        self.called.insert(method.to_owned());
        Ok(Answer {
            outcome: out["outcome"].as_str().unwrap_or_default().to_owned(),
            code: out["code"].clone(),
            text: out["text"].as_str().unwrap_or_default().to_owned(),
            value: out["value"].clone(),
            prefills: out["prefills"].clone(),
        })
    }

    /// Runs `method`; it must resolve to a value `check` accepts. Returns the value.
    fn ok(
        &mut self,
        method: &str,
        args: Value,
        check: impl FnOnce(&Value) -> bool,
    ) -> Result<Value, String> {
        let answer = self.run(method, args.clone())?;
        ensure(answer.outcome == "ok", || {
            format!("{method}({args}) failed: {}", answer.text)
        })?;
        ensure(check(&answer.value), || {
            format!("{method}({args}) returned {}", answer.value)
        })?;
        Ok(answer.value)
    }

    /// Runs `method`; it must reject with `code`, and the panel must show the code.
    fn fails(&mut self, method: &str, args: Value, code: &str) -> Result<String, String> {
        let answer = self.run(method, args.clone())?;
        ensure(
            answer.outcome == "error"
                && answer.code == code
                && answer.text.starts_with(&format!("[{code}] ")),
            || {
                format!(
                    "{method}({args}): expected [{code}], the panel shows {} ({})",
                    answer.outcome, answer.text
                )
            },
        )?;
        Ok(answer.text)
    }
}

fn len(v: &Value) -> usize {
    v.as_array().map_or(usize::MAX, Vec::len)
}

pub(super) fn operations(browser: &Browser) -> Result<Outcome, String> {
    // The panel is drawn after the page is ready.
    let drawn = browser.wait_for("document.documentElement.dataset.opsReady", super::WAIT)?;
    ensure(drawn == "true", || {
        format!("the Operations panel was not drawn: {drawn}")
    })?;
    let mut p = Panel {
        browser,
        called: BTreeSet::new(),
    };
    p.ok(
        "createSession",
        json!({ "key": OPS, "session_id": "ops-sid-1" }),
        |v| v["key"] == OPS && v["session_id"] == "ops-sid-1",
    )?;
    p.fails("createSession", json!({ "key": OPS }), "conflict")?;
    // Select it: the key arguments follow the selection.
    browser.js_async("await window.spoolDemo.select(arguments[0])", json!([OPS]))?;
    let answer = p.run("getSession", json!({}))?;
    ensure(
        answer.prefills
            == json!({ "workspace": "\"default\"", "args": json!({ "key": OPS }).to_string() }),
        || format!("pre-filled arguments: {}", answer.prefills),
    )?;
    ensure(answer.value["key"] == OPS, || {
        format!("getSession: {}", answer.text)
    })?;
    p.ok("getOrCreate", json!({}), |v| {
        v["created"] == false && v["session"]["session_id"] == "ops-sid-1"
    })?;

    // Transcript.
    p.ok(
        "appendEntry",
        json!({ "request": { "role": "user", "message_id": "ops-m1", "token_count": 400,
            "content": "Goal: keep src/ops.rs tidy. Constraint: never touch Cargo.lock." } }),
        |v| v["message_id"] == "ops-m1" && v["token_count"] == 400,
    )?;
    p.ok(
        "appendEntries",
        json!({ "requests": [
            { "role": "assistant", "content": "Reading src/ops.rs.", "token_count": 300,
              "tool_calls": [{ "id": "call_ops", "name": "read", "arguments": { "path": "src/ops.rs" } }] },
            { "role": "tool", "content": "fn main() {}", "tool_call_id": "call_ops", "token_count": 300 }
        ] }),
        |v| len(v) == 2 && v[0]["id"] == 2 && v[1]["tool_call_id"] == "call_ops",
    )?;
    p.ok(
        "commitTurn",
        json!({ "turn": {
            "entries": [
                { "role": "assistant", "content": "It is tidy already.", "token_count": 300 }
            ],
            "thread": { "agent_type": "codex", "thread_id": "thread-ops-1" } } }),
        |v| len(&v["entries"]) == 1 && v["session"]["entry_count"] == 4,
    )?;
    p.ok(
        "readPage",
        json!({ "request": { "order": "oldest_first", "limit": 10 } }),
        |v| len(&v["entries"]) == 4 && v["entries"][0]["message_id"] == "ops-m1",
    )?;
    p.fails(
        "readPage",
        json!({ "request": { "order": "oldest_first", "limit": 0 } }),
        "invalid_argument",
    )?;
    p.ok("countEntries", json!({}), |v| *v == 4)?;
    p.ok("getEntry", json!({ "message_id": "ops-m1" }), |v| {
        v["role"] == "user"
    })?;
    p.ok("canonicalTranscript", json!({}), |v| len(v) == 4)?;
    p.ok(
        "readCanonicalPage",
        json!({ "request": { "order": "newest_first", "limit": 3 } }),
        |v| len(&v["entries"]) == 3 && v["next_cursor"].is_string(),
    )?;
    p.ok("listSessions", json!({ "limit": 200 }), |v| {
        v["sessions"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["key"] == OPS))
    })?;
    // Search: across sessions, filters in the query, a page at a time.
    let scoped = format!("tidy session:{OPS}");
    let first = p.ok("search", json!({ "query": scoped, "limit": 1 }), |v| {
        len(&v["hits"]) == 1 && v["hits"][0]["session_key"] == OPS && v["next_cursor"].is_string()
    })?;
    p.ok(
        "search",
        json!({ "query": scoped, "limit": 1, "cursor": first["next_cursor"] }),
        |v| {
            len(&v["hits"]) == 1
                && v["hits"][0]["entry_id"] != first["hits"][0]["entry_id"]
                && v["next_cursor"].is_null()
        },
    )?;
    p.ok(
        "search",
        json!({ "query": format!("tidy role:user session:{OPS}") }),
        |v| {
            len(&v["hits"]) == 1
                && v["hits"][0]["message_id"] == "ops-m1"
                && v["hits"][0]["snippet"]["highlights"]
                    .as_array()
                    .is_some_and(|h| !h.is_empty())
        },
    )?;
    p.fails(
        "search",
        json!({ "query": "\"not closed" }),
        "invalid_argument",
    )?;
    // Everything the page wrote is indexed as it was written: the backfill of older
    // history finds nothing to do, and refuses a cursor it did not give.
    p.ok("indexBackfill", json!({}), |v| {
        v["indexed_entries"] == 0
            && v["next_cursor"].is_null()
            && v["sessions_checked"].as_u64() > Some(0)
    })?;
    p.fails(
        "indexBackfill",
        json!({ "cursor": "not-a-cursor" }),
        "invalid_argument",
    )?;
    p.ok("resume", json!({}), |v| v["key"] == OPS)?;
    p.ok(
        "update",
        json!({ "request": { "model": "gpt-5-codex", "metadata": { "ui": "demo" } } }),
        |v| v["model"] == "gpt-5-codex" && v["metadata"]["ui"] == "demo",
    )?;
    p.ok(
        "planProviderThread",
        json!({ "agent_type": "codex" }),
        |v| v["action"] == "resume" && v["thread_id"] == "thread-ops-1",
    )?;
    p.ok("applyIntent", json!({ "intent": "continue" }), |v| {
        v["created"] == false && v["rotated"] == false
    })?;

    // Turns.
    p.ok(
        "startTurn",
        json!({ "request": { "turn_id": "ops-t1", "provider_turn_id": "p-ops-t1" } }),
        |v| v["phase"] == "running" && v["seq"] == 1,
    )?;
    p.ok("sessionTurns", json!({}), |v| {
        v["active"]["turn_id"] == "ops-t1"
    })?;
    p.ok("settleTurn", json!({ "turn_id": "ops-t1" }), |v| {
        v["phase"] == "settled" && !v["boundary"].is_null()
    })?;
    p.fails("settleTurn", json!({ "turn_id": "ops-t1" }), "conflict")?;
    p.ok(
        "startTurn",
        json!({ "request": { "turn_id": "ops-t2" } }),
        |v| v["seq"] == 2,
    )?;
    p.ok("interruptTurn", json!({ "turn_id": "ops-t2" }), |v| {
        v["phase"] == "interrupted"
    })?;
    p.ok("getTurn", json!({ "turn_id": "ops-t1" }), |v| {
        v["phase"] == "settled" && v["provider_turn_id"] == "p-ops-t1"
    })?;
    // Every turn, a page at a time: no request reads them all in start order; pages of
    // one newest first continue by the cursor; a cursor Spool did not return is refused.
    p.ok("listTurns", json!({}), |v| {
        len(&v["turns"]) == 2
            && v["turns"][0]["turn_id"] == "ops-t1"
            && v["turns"][1]["turn_id"] == "ops-t2"
            && v["next_cursor"].is_null()
    })?;
    let newest = p.ok(
        "listTurns",
        json!({ "request": { "order": "newest_first", "limit": 1 } }),
        |v| {
            len(&v["turns"]) == 1
                && v["turns"][0]["phase"] == "interrupted"
                && v["next_cursor"].is_string()
        },
    )?;
    p.ok(
        "listTurns",
        json!({ "request": { "order": "newest_first", "limit": 1, "cursor": newest["next_cursor"] } }),
        |v| {
            len(&v["turns"]) == 1
                && v["turns"][0]["turn_id"] == "ops-t1"
                && v["next_cursor"].is_null()
        },
    )?;
    p.fails(
        "listTurns",
        json!({ "request": { "limit": 1, "cursor": "not-a-cursor" } }),
        "invalid_argument",
    )?;

    // Context states.
    p.ok(
        "saveState",
        json!({ "state": { "provider": "anthropic", "state_kind": "prompt_cache", "payload": { "cache_id": "c1" } } }),
        |v| v["valid"] == true && v["state_kind"] == "prompt_cache",
    )?;
    p.ok("listStates", json!({}), |v| len(v) == 1)?;
    p.ok(
        "invalidateStates",
        json!({ "reason": "model changed" }),
        |v| *v == 1,
    )?;

    // Two-phase compaction, its summaries, receipts and repairs.
    let request = json!({ "context_window_tokens": 100, "compaction_id": "ops-c1" });
    let prepared = p.ok("prepareCompaction", json!({ "request": request }), |v| {
        v["skip_reason"].is_null() && v["preimage"].is_string()
    })?;
    p.ok(
        "commitCompaction",
        json!({ "commit": { "request": request, "preimage": prepared["preimage"],
            "summary_text": "Goal: keep src/ops.rs tidy; it is tidy already." } }),
        |v| v["compaction_id"] == "ops-c1" && v["removed_count"].as_u64() > Some(0),
    )?;
    p.ok("listSummaries", json!({}), |v| {
        len(v) == 1 && v[0]["compaction_id"] == "ops-c1"
    })?;
    p.ok(
        "compactionPreimage",
        json!({ "compaction_id": "ops-c1" }),
        |v| len(v) > 0 && len(v) != usize::MAX,
    )?;
    p.ok(
        "setFlushReceipt",
        json!({ "compaction_id": "ops-c1", "status": "unsafe" }),
        |v| v["flush_receipt_status"] == "degraded_forensic",
    )?;
    p.ok("listDegradedCompactions", json!({}), |v| {
        v.as_array()
            .is_some_and(|s| s.iter().any(|s| s["compaction_id"] == "ops-c1"))
    })?;
    p.ok(
        "setRepairStatus",
        json!({ "compaction_id": "ops-c1", "status": "repaired" }),
        |v| v["repair_status"] == "repaired",
    )?;
    p.ok(
        "appendEntry",
        json!({ "request": { "role": "user", "content": "Now split src/ops.rs in two.", "token_count": 300 } }),
        |v| v["role"] == "user",
    )?;
    let answer = p.run(
        "compactWith",
        json!({ "request": { "context_window_tokens": 50, "compaction_id": "ops-c2" },
            "summarize": "Goal: keep src/ops.rs tidy, then split it in two." }),
    )?;
    ensure(
        answer.outcome == "ok"
            && answer.value["summary_source"] == "llm"
            && answer
                .text
                .contains("The function argument was called 1 time(s)."),
        || format!("compactWith: {}", answer.text),
    )?;
    p.ok(
        "compact",
        json!({ "request": { "context_window_tokens": 1_000_000 } }),
        |v| v["skip_reason"] == "below_threshold",
    )?;
    // An external summary must shrink what it replaces: give it a long entry to replace.
    p.ok(
        "appendEntry",
        json!({ "request": { "role": "assistant", "content": "Split done; the long report follows.", "token_count": 300 } }),
        |v| v["role"] == "assistant",
    )?;
    p.ok(
        "persistCompactionResult",
        json!({ "persist": { "summary_text": "Split src/ops.rs in two.", "compaction_id": "ops-c3",
            "kept_entries": [{ "role": "user", "content": "Kept verbatim." }] } }),
        |v| v["summary_source"] == "external" && v["compaction_id"] == "ops-c3",
    )?;

    // Branches.
    p.ok(
        "branch",
        json!({ "child_key": BRANCH, "request": { "fork_transcript": true } }),
        |v| v["parent_session_key"] == OPS && v["forked_from_parent"] == true,
    )?;
    p.ok("lineage", json!({}), |v| {
        v["children"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["key"] == BRANCH))
    })?;
    p.ok("listChildren", json!({}), |v| {
        len(v) == 1 && v[0]["key"] == BRANCH
    })?;
    // An edit of the first message: a branch holding only the edited text.
    p.ok(
        "editMessage",
        json!({ "child_key": EDITED, "message_id": "ops-m1",
            "request": { "role": "user", "content": "Goal: keep src/ops.rs short." } }),
        |v| v["key"] == EDITED && v["parent_session_key"] == OPS && v["entry_count"] == 1,
    )?;

    // A provider fork through ops-t1, every step by hand, with a provider-state binding.
    let op = json!({ "operation_id": "ops-op-1" });
    p.ok(
        "fork",
        json!({ "request": { "request_id": "ops-r1", "target_key": FORKED,
            "target_session_id": "ops-fork-sid", "through_turn_id": "ops-t1" },
            "operation_id": "ops-op-1" }),
        |v| v["status"] == "accepted" && v["phase"] == "frozen",
    )?;
    p.ok("getForkOperation", op.clone(), |v| v["state"] == "prepared")?;
    p.fails(
        "getForkOperation",
        json!({ "operation_id": "no-such-op" }),
        "not_found",
    )?;
    p.ok("beginForkDispatch", op.clone(), |v| {
        v["target_key"] == FORKED && v["point"]["turn_id"] == "ops-t1"
    })?;
    let accepted = json!({ "disposition": "accepted",
        "target_provider_session_id": "sim-ops-1", "bind_provider_state": true });
    p.ok(
        "recordForkDisposition",
        json!({ "operation_id": "ops-op-1", "disposition": accepted }),
        |v| v["state"] == "provider_accepted",
    )?;
    p.ok("commitFork", op.clone(), |v| {
        v["status"] == "committed" && v["session"]["key"] == FORKED
    })?;
    let again = p.fails(
        "recordForkDisposition",
        json!({ "operation_id": "ops-op-1", "disposition": accepted }),
        "conflict",
    )?;
    ensure(again.contains("(reason: stale_transition)"), || {
        format!("the fork reason is not shown: {again}")
    })?;
    p.ok("getForkLineage", json!({ "key": FORKED }), |v| {
        v["source_key"] == OPS && v["operation_id"] == "ops-op-1"
    })?;
    p.ok("claimForkProviderBinding", json!({ "key": FORKED }), |v| {
        v["operation_id"] == "ops-op-1" && v["target_provider_session_id"] == "sim-ops-1"
    })?;
    p.ok("completeForkProviderBinding", op.clone(), |v| {
        v["provider_state_binding"] == "bound"
    })?;
    p.ok("acknowledgeForkOperation", op, |v| {
        v["acknowledged"] == true
    })?;
    p.ok("recoverForkOperations", json!({}), |v| {
        ["marked_unknown", "to_dispatch", "to_commit"]
            .iter()
            .all(|k| {
                v[k].as_array()
                    .is_some_and(|a| a.iter().all(|o| o["operation_id"] != "ops-op-1"))
            })
    })?;
    p.ok("forkProjection", json!({ "mode": "list" }), |v| {
        len(&v["sessions"]) == 1 && v["sessions"][0]["key"] == OPS
    })?;

    // Resume selection, role state, runs.
    p.ok(
        "saveRoleSession",
        json!({ "role": { "role_session_id": "role-ops", "run_id": "run-ops", "role_id": "cto" } }),
        |v| v["role_session_id"] == "role-ops",
    )?;
    p.ok(
        "getRoleSession",
        json!({ "role_session_id": "role-ops" }),
        |v| v["role_id"] == "cto",
    )?;
    p.ok(
        "updateRoleAdapterState",
        json!({ "role_session_id": "role-ops", "agent_type": "codex",
            "state": { "resume_session_id": "thread-ops-1" } }),
        |v| *v == true,
    )?;
    p.ok(
        "getRoleAdapterState",
        json!({ "role_session_id": "role-ops", "agent_type": "codex" }),
        |v| v["resume_session_id"] == "thread-ops-1",
    )?;
    p.ok(
        "recordRun",
        json!({ "run": { "agent_type": "codex", "project_id": "ops", "session_id": "thread-ops-1",
            "task_id": "ops-task-1", "status": "done", "role_session_id": "role-ops" } }),
        |v| v["session_id"] == "thread-ops-1",
    )?;
    p.ok(
        "listRuns",
        json!({ "limit": 100, "filter": { "project_id": "ops" } }),
        |v| len(&v["runs"]) == 1,
    )?;
    p.ok(
        "selectResume",
        json!({ "request": { "agent_type": "codex", "project_id": "ops", "role_session_id": "role-ops" } }),
        |v| v["mode"] == "resume" && v["session_id"] == "thread-ops-1",
    )?;
    p.ok(
        "recordTaskOutcome",
        json!({ "request": { "role_session_id": "role-ops", "project_id": "ops",
            "outcome": { "agent_type": "codex", "task_id": "ops-task-2", "status": "done", "token": "thread-ops-2" } } }),
        |v| v["role_state"]["action"] == "set",
    )?;

    // Import.
    let log = p.ok(
        "parseImport",
        json!({ "format": "claude_code", "text": CLAUDE_LOG }),
        |v| len(&v["sessions"]) == 1,
    )?;
    p.ok(
        "planImport",
        json!({ "format": "claude_code", "text": CLAUDE_LOG }),
        |v| {
            len(&v["sessions"]) == 1
                && v["sessions"][0]["session"] == log["sessions"][0]
                && v["sessions"][0]["slice_ends"] == json!([2])
        },
    )?;
    p.ok(
        "importSession",
        json!({ "request": { "key": IMPORTED, "format": "claude_code", "session": log["sessions"][0] } }),
        |v| v["created"] == true && v["imported"] == 2,
    )?;

    // Pop, truncate, reset with its archive, finish, delete, prune, cap.
    p.ok(
        "appendEntry",
        json!({ "request": { "role": "assistant", "content": "Split done." } }),
        |v| v["role"] == "assistant",
    )?;
    p.ok(
        "appendEntry",
        json!({ "request": { "role": "user", "content": "Scratch that." } }),
        |v| v["role"] == "user",
    )?;
    p.ok("popEntry", json!({}), |v| v["content"] == "Scratch that.")?;
    p.ok("truncate", json!({ "max_messages": 1 }), |v| {
        v["truncated"] == true && v["before_count"] == 2 && v["after_count"] == 1
    })?;
    p.ok("rollback", json!({ "turns": 0 }), |v| {
        v["truncated"] == false && v["before_count"] == 1 && v["after_count"] == 1
    })?;
    p.ok("listArchives", json!({}), |v| len(v) == 0)?;
    p.ok("applyIntent", json!({ "intent": "reset_same_key" }), |v| {
        v["rotated"] == true && v["archive"]["written"] == true
    })?;
    p.ok("listArchives", json!({}), |v| {
        len(v) == 1 && v[0]["session_id"] == "ops-sid-1"
    })?;
    p.ok("listResetArchives", json!({}), |v| {
        len(v) == 1 && v[0]["session_id"] == "ops-sid-1"
    })?;
    p.ok("archiveSession", json!({ "key": BRANCH }), |v| {
        v["status"] == "done"
    })?;
    p.ok(
        "finish",
        json!({ "key": FORKED, "status": "failed" }),
        |v| v["status"] == "failed",
    )?;
    for key in [BRANCH, EDITED] {
        p.ok("deleteSession", json!({ "key": key }), Value::is_null)?;
        p.ok("getSession", json!({ "key": key }), Value::is_null)?;
    }
    p.ok("pruneStale", json!({ "max_age_ms": TEN_YEARS_MS }), |v| {
        *v == 0
    })?;
    p.ok("capSessions", json!({ "max": 1000 }), |v| *v == 0)?;

    // The raw execute method, and the execute box.
    p.ok(
        "execute",
        json!({ "command": { "op": "count_entries", "key": OPS } }),
        |v| *v == 0,
    )?;
    execute_box(browser)?;

    // A second connection, then closing the page's own: the page opens it again.
    p.ok("open", json!({}), |v| v["name"] == "spool-e2e")?;
    let closed = p.run("close", json!({}))?;
    ensure(
        closed.outcome == "ok" && closed.text.contains("opened the database again"),
        || format!("close: {}", closed.text),
    )?;
    p.ok("getSession", json!({}), |v| v["key"] == OPS)?;

    // An answer streamed in: begun, updated, settled; another stopped.
    p.ok(
        "beginEntry",
        json!({ "request": { "role": "assistant", "content": "", "turn_id": "ops-t1", "message_id": "ops-live" } }),
        |v| v["status"] == "in_progress",
    )?;
    p.ok(
        "updateEntry",
        json!({ "update": { "message_id": "ops-live", "content": "Half of it" } }),
        |v| v["content"] == "Half of it" && v["status"] == "in_progress",
    )?;
    p.ok(
        "settleEntry",
        json!({ "update": { "message_id": "ops-live", "content": "All of it.",
            "turn_usage": { "model": "m", "input_tokens": 9, "output_tokens": 3 } } }),
        |v| v["content"] == "All of it." && v.get("status").is_none(),
    )?;
    p.ok(
        "beginEntry",
        json!({ "request": { "role": "assistant", "content": "", "turn_id": "ops-t2", "message_id": "ops-stop" } }),
        |v| v["status"] == "in_progress",
    )?;
    p.ok(
        "abortEntry",
        json!({ "update": { "message_id": "ops-stop", "reason": "stopped" } }),
        |v| v["status"] == "incomplete" && v["stop_reason"] == "stopped",
    )?;
    p.ok(
        "replaySafe",
        json!({ "entries": [
            { "id": 1, "message_id": "a", "role": "assistant", "content": "", "created_at": 1,
              "token_count": null, "tool_calls": [{ "id": "c1", "name": "ls", "input": {} }],
              "tool_call_id": null, "turn_id": null, "turn_usage": null, "status": "incomplete" }
        ] }),
        |v| len(v) == 2 && v[1]["tool_call_id"] == "c1" && v[1]["tool_status"] == "cancelled",
    )?;
    // The settled answer's usage names a model without a price: counted, not costed.
    p.ok("usageReport", json!({ "request": {} }), |v| {
        v["total"]["responses"].as_u64().is_some_and(|n| n >= 1)
            && v["models"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["name"] == "m" && m["unpriced"] == 1))
    })?;

    let listed = browser.js("return window.spoolDemo.operations.methods()", json!([]))?;
    let listed: BTreeSet<String> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect();
    let missed: Vec<&String> = listed.difference(&p.called).collect();
    ensure(missed.is_empty(), || {
        format!("the panel lists methods this test never called: {missed:?}")
    })?;
    let unknown: Vec<&String> = p.called.difference(&listed).collect();
    ensure(unknown.is_empty(), || {
        format!("the test called methods the panel does not list: {unknown:?}")
    })?;
    println!(
        "e2e: the Operations panel lists {} methods; each ran at least once",
        listed.len()
    );
    browser.js(
        "document.getElementById('operations').scrollIntoView()",
        json!([]),
    )?;
    super::save_screenshot(browser, "operations")?;
    Ok(Outcome::Passed)
}

/// The raw `execute` box: a `Command` as JSON, its result, and an unknown op's error.
fn execute_box(browser: &Browser) -> Result<(), String> {
    let run = |command: &str| -> Result<Value, String> {
        browser.js(
            "document.getElementById('execute-command').value = arguments[0]",
            json!([command]),
        )?;
        let runs = browser.js(
            "return document.getElementById('execute-result').dataset.runs",
            json!([]),
        )?;
        browser.click("#execute button[type=submit]")?;
        browser.wait_for(
            &format!(
                "document.getElementById('execute-result').dataset.runs !== {runs} && {{ outcome: document.getElementById('execute-result').dataset.outcome, code: document.getElementById('execute-result').dataset.code || null, text: document.getElementById('execute-result').textContent }}"
            ),
            WAIT,
        )
    };
    let prefilled = browser.js(
        "return JSON.parse(document.getElementById('execute-command').value)",
        json!([]),
    )?;
    ensure(
        prefilled == json!({ "op": "count_entries", "key": OPS }),
        || format!("execute box pre-fill: {prefilled}"),
    )?;
    let listed = run(&json!({ "op": "list_children", "key": OPS }).to_string())?;
    ensure(listed["outcome"] == "ok" && listed["text"] == "[]", || {
        format!("execute list_children: {listed}")
    })?;
    let refused = run(r#"{"op": "no_such_op"}"#)?;
    ensure(
        refused["outcome"] == "error"
            && refused["code"] == "invalid_argument"
            && refused["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("[invalid_argument]")),
        || format!("execute of an unknown op: {refused}"),
    )?;
    Ok(())
}
