use super::*;
use serde_json::json;

fn files(call: &Value) -> Vec<(String, Action)> {
    read_call(call).files
}

#[test]
fn test_a_responses_call_is_answered_by_its_call_id() {
    let calls = json!([{"type": "function_call", "id": "fc_1", "call_id": "call_1"},
                       {"type": "tool_use", "id": "toolu_2"}]);
    assert_eq!(call_ids(&calls), ["call_1", "toolu_2"]);
}

#[test]
fn test_paths_come_from_arguments_patch_headers_and_shell_writes() {
    let edit = json!({"name": "Edit", "input": {"file_path": "/w/src/lib.rs", "old_string": "a"}});
    assert_eq!(files(&edit), [("/w/src/lib.rs".into(), Action::Edited)]);
    let read = json!({"name": "Read", "input": {"file_path": "/w/src/main.rs"}});
    assert_eq!(files(&read), [("/w/src/main.rs".into(), Action::Read)]);
    let patch = json!({"name": "apply_patch", "arguments":
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: tests/test_app.py\n+x\n*** Delete File: old.py\n*** End Patch"});
    assert_eq!(
        files(&patch),
        [
            ("src/app.py".into(), Action::Edited),
            ("tests/test_app.py".into(), Action::Written),
            ("old.py".into(), Action::Deleted)
        ]
    );
    let shell = json!({"name": "shell", "arguments":
        "{\"command\": [\"bash\", \"-lc\", \"sed -i 's/60/90/' config/app.toml && cat > notes.md <<'EOF'\\n> not a file\\nEOF\\necho hi 2>&1 >> log.txt | tee -a out.txt\"]}"});
    let call = read_call(&shell);
    assert_eq!(
        call.files,
        [
            ("config/app.toml".into(), Action::Edited),
            ("notes.md".into(), Action::Written),
            ("log.txt".into(), Action::Written),
            ("out.txt".into(), Action::Written)
        ]
    );
    assert!(call.command.as_deref().unwrap().starts_with("sed -i"));
    let cmd =
        json!({"name": "exec_command", "arguments": "{\"cmd\": \"cargo test 2>&1 > /dev/null\"}"});
    assert_eq!(files(&cmd), []);
}

#[test]
fn test_exit_codes_in_every_common_format() {
    assert_eq!(exit_code("Exit code 1\nboom"), Some(1));
    assert_eq!(exit_code("Exit code: 2\nWall time: 0.1 seconds"), Some(2));
    assert_eq!(
        exit_code("Chunk ID: 1\nProcess exited with code 101\n"),
        Some(101)
    );
    assert_eq!(exit_code("error: command exited with status 3"), Some(3));
    assert_eq!(
        exit_code("subprocess returned non-zero exit status 127."),
        Some(127)
    );
    assert_eq!(
        exit_code("{\"output\": \"x\", \"metadata\": {\"exit_code\": 0}}"),
        Some(0)
    );
    assert_eq!(exit_code("Error: ${model.error}"), None);
    // In any case: the quick test for `exit` ignores case as the markers do.
    assert_eq!(exit_code("EXIT CODE 4"), Some(4));
    assert_eq!(exit_code("build ExIt StAtUs: 5"), Some(5));
    assert_eq!(exit_code("exi t code 6"), None);
}

#[test]
fn test_the_error_line_is_the_one_that_names_the_error() {
    let pytest = "===== test session starts =====\ncollected 3 items\n\ntests/test_export.py ..F\nFAILED tests/test_export.py::test_csv - AssertionError: assert 0 == 12\n===== 1 failed, 2 passed in 0.31s =====\nExit code 1";
    assert_eq!(
        error_line(pytest).as_deref(),
        Some("FAILED tests/test_export.py::test_csv - AssertionError: assert 0 == 12")
    );
    let cargo = "   Compiling x v0.1.0\nerror[E0308]: mismatched types\n  --> src/lib.rs:3:5\nerror: could not compile `x` due to 1 previous error";
    assert_eq!(
        error_line(cargo).as_deref(),
        Some("error[E0308]: mismatched types")
    );
    let python = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nKeyError: 'user_id'";
    assert_eq!(error_line(python).as_deref(), Some("KeyError: 'user_id'"));
    assert_eq!(
        error_line("Exit code: 1\nOutput:\nsomething odd\n").as_deref(),
        Some("something odd")
    );
    assert!(rejected(
        "The user doesn't want to proceed with this tool use. The tool use was rejected"
    ));
    assert!(!rejected("rejected: 3 rows"));
}
