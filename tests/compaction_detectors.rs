//! Each obligation detector on the shape real sessions have: a task in plain words, a
//! "don't …" constraint, Codex's exit format, a patch header's path, a rejected call,
//! parallel calls grouped by id; and the built-in summary passing its own blocking
//! check with them, also across two compactions.

use serde_json::json;
use spool::compaction::{self, CompactRequest, Obligation, ObligationKind, Plan};
use spool::{AppendRequest, Entry, MemoryStorage, Role, run};

const WS: &str = "w";
const KEY: &str = "agent:main:main";

fn e(role: Role, content: &str) -> Entry {
    Entry::from_request(AppendRequest::new(role, content), 0, String::new(), 0)
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> Entry {
    let mut entry = e(Role::Assistant, "");
    entry.tool_calls = Some(json!([{"id": id, "name": name, "input": arguments}]));
    entry
}

fn result(id: &str, content: &str) -> Entry {
    let mut entry = e(Role::Tool, content);
    entry.tool_call_id = Some(id.into());
    entry
}

fn of(obligations: &[Obligation], kind: ObligationKind) -> Vec<(&str, bool)> {
    obligations
        .iter()
        .filter(|o| o.kind == kind)
        .map(|o| (o.text.as_str(), o.critical))
        .collect()
}

#[test]
fn test_a_task_in_plain_words_and_the_latest_request_are_critical() {
    let first = "The export button in the reports page downloads an empty CSV when the date filter is set. Can you find out why and fix it?";
    let latest = "Looks good. Now set the default timeout to 90 in the REPORTS_TIMEOUT env var.";
    let removed = [
        e(Role::User, first),
        e(Role::Assistant, "Looking at the export code."),
        e(Role::User, "thanks"),
        e(Role::User, latest),
    ];
    let o = compaction::extract(&removed, &removed, &[]);
    assert_eq!(of(&o, ObligationKind::Task), [(first, true)]);
    assert_eq!(of(&o, ObligationKind::LatestRequest), [(latest, true)]);
    // A later request that redirects the work is part of the task.
    let redirect =
        "Actually, forget the CSV for now — the PDF export is what the customer needs first.";
    let more = [e(Role::User, first), e(Role::User, redirect)];
    let o = compaction::extract(&more, &more, &[]);
    assert_eq!(
        of(&o, ObligationKind::Task),
        [(first, true), (redirect, true)]
    );
}

#[test]
fn test_a_dont_constraint_is_found_in_plain_words_and_kept_whole() {
    let prose = "The notifications lag behind by minutes. To be clear: don't use WebSockets for the notifications, use server-sent events. Bitte keine neuen Abhängigkeiten hinzufügen.";
    let removed = [e(Role::User, prose)];
    let o = compaction::extract(&removed, &removed, &[]);
    assert_eq!(
        of(&o, ObligationKind::Constraint),
        [
            (
                "To be clear: don't use WebSockets for the notifications, use server-sent events.",
                true
            ),
            ("Bitte keine neuen Abhängigkeiten hinzufügen.", true)
        ]
    );
}

#[test]
fn test_codex_exit_formats_are_failures_and_quoted_errors_are_not() {
    let run_tests = call("call_t", "exec_command", json!("{\"cmd\": \"pytest -q\"}"));
    let failed = result(
        "call_t",
        "Chunk ID: 9c1d\nWall time: 4.0 seconds\nProcess exited with code 1\nOriginal token count: 30\nOutput:\nFAILED tests/test_export.py::test_csv_dates - AssertionError: assert 0 == 12\n1 failed, 3 passed in 0.31s\n",
    );
    let read = call("call_r", "Read", json!({"file_path": "/w/src/api.ts"}));
    let source = result(
        "call_r",
        "     1\tif (!res.ok) {\n     2\t  throw new Error(`Error: ${model.error}`);\n     3\t}",
    );
    let removed = [run_tests, failed, read, source];
    let o = compaction::extract(&removed, &removed, &[]);
    assert_eq!(
        of(&o, ObligationKind::Failure),
        [(
            "`pytest -q` failed (exit 1): FAILED tests/test_export.py::test_csv_dates - AssertionError: assert 0 == 12",
            true
        )]
    );
    for format in [
        "Exit code: 2\nOutput:\nboom",
        "exit status 3",
        "Exit code 1\nboom",
    ] {
        let removed = [
            call("c", "shell", json!({"command": ["bash", "-lc", "make"]})),
            result("c", format),
        ];
        let o = compaction::extract(&removed, &removed, &[]);
        assert_eq!(of(&o, ObligationKind::Failure).len(), 1, "{format}");
    }
}

#[test]
fn test_paths_come_from_patch_headers_and_tool_arguments() {
    let patch = "*** Begin Patch\n*** Update File: src/billing/invoice.py\n@@\n-    total = 0\n+    total = Decimal(0)\n*** Add File: tests/test_invoice.py\n+def test_total(): ...\n*** End Patch";
    let mut apply = e(Role::Assistant, "");
    apply.tool_calls = Some(json!([{"id": "call_p", "name": "apply_patch", "arguments": patch}]));
    let removed = [
        apply,
        result(
            "call_p",
            "Success. Updated the following files:\nM src/billing/invoice.py",
        ),
        call(
            "call_e",
            "Edit",
            json!({"file_path": "/home/ana/app/src/main.rs", "old_string": "a", "new_string": "b"}),
        ),
        result("call_e", "The file has been updated."),
        call(
            "call_s",
            "Bash",
            json!({"command": "sed -i 's/60/90/' config/app.toml"}),
        ),
        result("call_s", ""),
        call(
            "call_v",
            "Read",
            json!({"file_path": "/home/ana/app/README.md"}),
        ),
        result("call_v", "# app"),
    ];
    let o = compaction::extract(&removed, &removed, &[]);
    let files = of(&o, ObligationKind::File);
    for edited in [
        "src/billing/invoice.py",
        "tests/test_invoice.py",
        "/home/ana/app/src/main.rs",
        "config/app.toml",
    ] {
        assert!(files.contains(&(edited, true)), "{edited}: {files:?}");
    }
    // A file only read is mentioned, not owed.
    assert!(
        files.contains(&("/home/ana/app/README.md", false)),
        "{files:?}"
    );
    // Answered call ids are provenance.
    assert!(
        of(&o, ObligationKind::ToolCall)
            .iter()
            .all(|(_, critical)| !critical)
    );
}

#[test]
fn test_a_rejected_call_is_recorded_with_what_it_wanted() {
    let mut rejected = result(
        "toolu_rm",
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
    );
    rejected.tool_status = Some(spool::ToolStatus::Error);
    let removed = [
        call("toolu_rm", "Bash", json!({"command": "rm -rf build/"})),
        rejected,
        call(
            "call_x",
            "exec_command",
            json!("{\"cmd\": \"git push --force\"}"),
        ),
        result("call_x", "exec command rejected by user"),
    ];
    let o = compaction::extract(&removed, &removed, &[]);
    assert_eq!(
        of(&o, ObligationKind::Rejected),
        [
            ("`rm -rf build/` (rejected by the user)", true),
            ("`git push --force` (rejected by the user)", true)
        ]
    );
    assert!(of(&o, ObligationKind::Failure).is_empty());
}

#[test]
fn test_parallel_calls_keep_their_results_by_call_id() {
    // A Responses-shaped turn: each call has its item id and the call id its result
    // answers; the results follow as a group.
    let mut calls = e(Role::Assistant, "Reading both.");
    calls.tool_calls = Some(json!([
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "read"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "read"}
    ]));
    calls.token_count = Some(10);
    let mut entries = vec![e(Role::User, "Start.")];
    entries[0].token_count = Some(400);
    entries.push(calls);
    for id in ["call_a", "call_b"] {
        let mut r = result(id, "contents");
        r.token_count = Some(10);
        entries.push(r);
    }
    let mut next = e(Role::User, "And now?");
    next.token_count = Some(10);
    entries.push(next);
    let config = compaction::CompactionConfig {
        safety_margin: 1.0,
        ..Default::default()
    };
    // Room for the newest three entries only: the results go with their call.
    let Plan::Cut { removed, .. } = compaction::plan(&entries, 60, &config) else {
        panic!("a cut");
    };
    assert_eq!(removed, 4, "a result kept without its call");
    // Both calls are answered: neither is pending.
    let o = compaction::extract(&entries[..4], &entries, &[]);
    assert!(of(&o, ObligationKind::PendingTool).is_empty(), "{o:?}");
}

fn append(storage: &MemoryStorage, request: AppendRequest, at: u64) {
    run(storage, spool::append_entry(WS, KEY, request, at)).expect("append");
}

fn tokens(mut request: AppendRequest, n: u64) -> AppendRequest {
    request.token_count = Some(n);
    request
}

#[test]
fn test_the_builtin_summary_passes_blocking_and_carries_the_task_through_two_compactions() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    let task = "The invoice totals are off by a cent for some customers. Find out why and fix it.";
    let constraint = "Never change the public API of the billing module.";
    append(
        &storage,
        tokens(
            AppendRequest::new(Role::User, format!("{task} {constraint}")),
            300,
        ),
        2,
    );
    let mut at = 3;
    for round in 0..2 {
        for i in 0..6 {
            let id = format!("call_{round}_{i}");
            let mut c = AppendRequest::new(Role::Assistant, format!("Step {round}.{i}."));
            c.tool_calls = Some(
                json!([{"id": id, "name": "Edit", "input": {"file_path": format!("src/billing/part_{round}_{i}.py")}}]),
            );
            append(&storage, tokens(c, 150), at);
            let mut r = AppendRequest::new(Role::Tool, "The file has been updated.");
            r.tool_call_id = Some(id);
            append(&storage, tokens(r, 150), at + 1);
            at += 2;
        }
        let mut request = CompactRequest::new(1_200);
        request.config.safety_margin = 1.0;
        request.config.coverage_blocking = true;
        let result = run(&storage, compaction::compact(WS, KEY, request, at)).expect("compact");
        assert_eq!(
            result.skip_reason, None,
            "round {round}: {:?}",
            result.missing_obligations
        );
        // The first request left the transcript in the first round: the second summary
        // still holds it, from the first one's continuity.
        assert!(
            result.summary.contains(task),
            "round {round}:\n{}",
            result.summary
        );
        assert!(result.summary.contains(constraint), "round {round}");
        assert!(
            result.summary.contains("src/billing/part_0_0.py"),
            "round {round}"
        );
        at += 1;
    }
}

#[test]
fn test_the_two_phase_input_asks_for_the_same_summary_and_lists_the_facts() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, "s", 1)).expect("create");
    let task = "Make the CSV export honour the date filter.";
    let constraint = "Don't touch the PDF export.";
    append(
        &storage,
        tokens(
            AppendRequest::new(Role::User, format!("{task} {constraint}")),
            400,
        ),
        2,
    );
    for i in 0..4 {
        append(
            &storage,
            tokens(
                AppendRequest::new(Role::Assistant, format!("step {i}")),
                100,
            ),
            3 + i,
        );
    }
    let mut request = CompactRequest::new(300);
    request.config.safety_margin = 1.0;
    request.config.coverage_blocking = true;
    let prepared = run(
        &storage,
        compaction::prepare_compaction(WS, KEY, request.clone()),
    )
    .expect("prepare");
    assert!(prepared.needs_summary());
    let (head, conversation) = prepared
        .input
        .split_once("--- conversation ---")
        .expect("instructions, then the conversation");
    for section in [
        "Task",
        "Constraints",
        "Latest request",
        "Files",
        "Pending tool calls",
    ] {
        assert!(head.contains(section), "{section}: {head}");
    }
    assert!(
        head.contains(&format!("- task: {task} {constraint}")),
        "{head}"
    );
    assert!(
        head.contains(&format!("- constraint: {constraint}")),
        "{head}"
    );
    assert!(conversation.contains(task));
    // The same check as the built-in path: a summary without the task is refused in
    // blocking mode.
    let commit = prepared
        .clone()
        .commit(request.clone(), "The agent took four steps.".into());
    let refused =
        run(&storage, compaction::commit_compaction(WS, KEY, commit, 20)).expect("commit");
    assert_eq!(refused.skip_reason.as_deref(), Some("coverage_blocked"));
    assert!(
        refused
            .missing_obligations
            .contains(&format!("constraint: {constraint}")),
        "{:?}",
        refused.missing_obligations
    );
    let faithful = format!(
        "Task: {task} {constraint}\nConstraints:\n- {constraint}\nCurrent state: four steps taken."
    );
    let commit = prepared.commit(request, faithful);
    let written =
        run(&storage, compaction::commit_compaction(WS, KEY, commit, 21)).expect("commit");
    assert_eq!(
        written.skip_reason, None,
        "{:?}",
        written.missing_obligations
    );
    assert_eq!(written.summary_source, "llm");
}
