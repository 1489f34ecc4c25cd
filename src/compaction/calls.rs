//! What a compaction reads of tool calls and their results: the ids a call names, the
//! command it runs, the files it changes (from its arguments, patch headers and shell
//! redirections), and of a result whether it failed, how it exited and what went wrong.
//!
//! Calls arrive in every agent's shape: Anthropic `tool_use` (`id`, `name`, `input`),
//! OpenAI Chat Completions (`id`, `function: {name, arguments}`), OpenAI Responses
//! (`call_id`, `name`, `arguments` as a JSON string, `input` as raw text for a custom
//! tool such as `apply_patch`) and Codex `local_shell_call` (`action.command`).

use serde_json::Value;

/// The ids the `tool_calls` of an entry name, one per call that has one. A call that
/// names several ids (a Responses item with its item `id` and its `call_id`) is answered
/// by `call_id`, then `tool_use_id`, then `id`: the id its result carries.
pub fn call_ids(tool_calls: &Value) -> Vec<String> {
    calls_of(tool_calls).filter_map(call_id).collect()
}

fn calls_of(tool_calls: &Value) -> impl Iterator<Item = &Value> {
    let calls: Vec<&Value> = match tool_calls {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        single => vec![single],
    };
    calls.into_iter()
}

fn call_id(call: &Value) -> Option<String> {
    ["call_id", "tool_use_id", "id"]
        .iter()
        .find_map(|field| call.get(field).and_then(Value::as_str))
        .map(str::to_owned)
}

/// What happens to a file a call touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Read, searched or listed: mentioned, not changed.
    Read,
    /// Changed in place.
    Edited,
    /// Created or overwritten whole.
    Written,
    /// Deleted.
    Deleted,
}

impl Action {
    /// Whether the call changes the file.
    pub fn changes(self) -> bool {
        self != Action::Read
    }

    /// The word for it in a summary.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Edited => "edited",
            Action::Written => "written",
            Action::Deleted => "deleted",
        }
    }
}

/// One tool call as a compaction reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Call {
    /// The id its result answers.
    pub id: Option<String>,
    /// The tool's name (`""` when the call names none).
    pub name: String,
    /// The shell command it runs, for a shell tool.
    pub command: Option<String>,
    /// The files it touches, in order, with what it does to each.
    pub files: Vec<(String, Action)>,
}

impl Call {
    /// How the call is named in a summary: its command in backticks, or its tool and
    /// first file, or its tool.
    pub fn describe(&self) -> String {
        match (&self.command, self.files.first(), &self.id) {
            (Some(command), ..) => format!("`{command}`"),
            (None, Some((path, _)), _) if !self.name.is_empty() => format!("{} {path}", self.name),
            (None, ..) if !self.name.is_empty() => self.name.clone(),
            (None, _, Some(id)) => format!("tool call {id}"),
            (None, _, None) => "a tool call".to_owned(),
        }
    }

    /// What identifies "the same call again" for telling a later success from an
    /// earlier failure: the command, or the tool and its files.
    pub fn key(&self) -> String {
        match &self.command {
            Some(command) => command.clone(),
            None => {
                let files: Vec<&str> = self.files.iter().map(|(p, _)| p.as_str()).collect();
                format!("{} {}", self.name, files.join(" "))
            }
        }
    }
}

/// The calls an entry's `tool_calls` holds.
pub fn calls(tool_calls: &Value) -> Vec<Call> {
    calls_of(tool_calls).map(read_call).collect()
}

fn read_call(call: &Value) -> Call {
    let function = call.get("function");
    let name = call
        .get("name")
        .or_else(|| function.and_then(|f| f.get("name")))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let raw = call
        .get("input")
        .or_else(|| call.get("arguments"))
        .or_else(|| function.and_then(|f| f.get("arguments")))
        .or_else(|| call.get("action"))
        .cloned()
        .unwrap_or(Value::Null);
    // Arguments written as a JSON string are read as JSON; other text stays text (the
    // raw input of a custom tool, such as a patch).
    let args = match raw {
        Value::String(text) => match crate::storage::record::parse_json(text.as_bytes()) {
            Ok(value @ Value::Object(_)) => value,
            _ => Value::String(text),
        },
        other => other,
    };
    let mut out = Call {
        id: call_id(call),
        name,
        command: None,
        files: Vec::new(),
    };
    let editing = edits_by_name(&out.name);
    match &args {
        Value::String(text) => {
            patch_files(text, &mut out.files);
        }
        Value::Object(map) => {
            if let Some(command) = map
                .get("command")
                .or_else(|| map.get("cmd"))
                .and_then(command_text)
            {
                // `str_replace_based_edit_tool` names its action `command`: a word, not a
                // shell command.
                let editor_action = matches!(
                    command.as_str(),
                    "view" | "create" | "str_replace" | "insert" | "undo_edit"
                );
                if !editor_action {
                    patch_files(&command, &mut out.files);
                    shell_files(&command, &mut out.files);
                    out.command = Some(command);
                }
            }
            for field in ["patch", "input", "diff"] {
                if let Some(text) = map.get(field).and_then(Value::as_str) {
                    patch_files(text, &mut out.files);
                }
            }
            let action = if map.get("command").and_then(Value::as_str) == Some("view") {
                Action::Read
            } else if editing {
                match out.name.to_ascii_lowercase() {
                    n if n.contains("write") || n.contains("create") => Action::Written,
                    n if n.contains("delete") || n.contains("remove") => Action::Deleted,
                    _ => Action::Edited,
                }
            } else {
                Action::Read
            };
            for field in ["file_path", "path", "notebook_path", "filePath", "filename"] {
                if let Some(path) = map.get(field).and_then(Value::as_str) {
                    push(&mut out.files, path, action);
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether a tool's name says it changes files (`Edit`, `Write`, `MultiEdit`,
/// `apply_patch`, `str_replace_editor`, `create_file`, …).
fn edits_by_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "edit", "write", "patch", "create", "replace", "insert", "delete", "remove", "rename",
        "move",
    ]
    .iter()
    .any(|word| name.contains(word))
}

fn push(files: &mut Vec<(String, Action)>, path: &str, action: Action) {
    let path = path.trim();
    if path.is_empty() || path.starts_with('-') || path.starts_with("/dev/") || path.contains('$') {
        return;
    }
    match files.iter_mut().find(|(p, _)| p == path) {
        Some(found) => found.1 = found.1.max(action),
        None => files.push((path.to_owned(), action)),
    }
}

/// A command given as a string, or as an argument vector (`["bash", "-lc", "make"]`
/// runs `make`).
fn command_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.trim().to_owned()).filter(|t| !t.is_empty()),
        Value::Array(items) => {
            let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [] => None,
                [shell, flag, script]
                    if ["bash", "sh", "zsh"].iter().any(|s| shell.ends_with(s))
                        && flag.starts_with('-')
                        && flag.contains('c') =>
                {
                    Some(script.trim().to_owned())
                }
                words => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

/// The files a patch names: `*** Update File: p`, `*** Add File: p`, `*** Delete File:
/// p`, `*** Move to: p` (the `apply_patch` format) and `+++ b/p` of a unified diff.
fn patch_files(text: &str, files: &mut Vec<(String, Action)>) {
    for line in text.lines() {
        let line = line.trim_end();
        let found = [
            ("*** Update File:", Action::Edited),
            ("*** Add File:", Action::Written),
            ("*** Delete File:", Action::Deleted),
            ("*** Move to:", Action::Written),
        ]
        .iter()
        .find_map(|(marker, action)| line.strip_prefix(marker).map(|p| (p.trim(), *action)));
        if let Some((path, action)) = found {
            push(files, path, action);
        } else if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.split('\t').next().unwrap_or(path).trim();
            let path = path.strip_prefix("b/").unwrap_or(path);
            if path != "/dev/null" {
                push(files, path, Action::Edited);
            }
        }
    }
}

fn unquote(word: &str) -> &str {
    word.trim_matches(|c| c == '"' || c == '\'' || c == ';' || c == '(' || c == ')')
}

/// The files a shell command writes: redirections (`> f`, `>> f`, `cat > f <<EOF`),
/// `tee`, `sed -i`, `touch`, `rm`, `mv` / `cp` targets, `git mv` / `git rm`.
fn shell_files(command: &str, files: &mut Vec<(String, Action)>) {
    // Only the command lines, not the body of a here-document.
    let mut heredoc: Option<String> = None;
    for line in command.lines() {
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        for segment in line.split(['|', '&', ';']) {
            shell_segment(segment, files);
        }
        if let Some(at) = line.find("<<") {
            let word = line[at + 2..].trim_start_matches('-').trim();
            let word = unquote(word.split_whitespace().next().unwrap_or_default());
            if !word.is_empty() {
                heredoc = Some(word.to_owned());
            }
        }
    }
}

fn shell_segment(segment: &str, files: &mut Vec<(String, Action)>) {
    let words: Vec<&str> = segment.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        // `>f`, `> f`, `>>f`, `1> f`; not `2>&1` or `>&2`.
        if let Some(at) = word.find('>') {
            let target = word[at..].trim_start_matches('>');
            let fd = &word[..at];
            if fd.is_empty() || fd == "1" {
                let target = if target.is_empty() {
                    i += 1;
                    words.get(i).copied().unwrap_or_default()
                } else {
                    target
                };
                if !target.starts_with('&') {
                    push(files, unquote(target), Action::Written);
                }
            }
        }
        i += 1;
    }
    let args: Vec<&str> = words.iter().map(|w| unquote(w)).collect();
    let (program, rest) = match args.split_first() {
        Some((&"git", rest)) => match rest.split_first() {
            Some((sub, rest)) => (*sub, rest),
            None => return,
        },
        Some((&"sudo", rest)) => match rest.split_first() {
            Some((p, rest)) => (*p, rest),
            None => return,
        },
        Some((p, rest)) => (*p, rest),
        None => return,
    };
    let operands: Vec<&str> = rest
        .iter()
        .copied()
        .filter(|w| !w.starts_with('-') && !w.contains('>') && !w.contains('<'))
        .collect();
    match program {
        "tee" | "touch" => operands
            .iter()
            .for_each(|p| push(files, p, Action::Written)),
        "rm" => operands
            .iter()
            .for_each(|p| push(files, p, Action::Deleted)),
        "mv" | "cp" => {
            if let Some(target) = operands.last().filter(|_| operands.len() >= 2) {
                push(files, target, Action::Written);
            }
            if program == "mv" {
                for source in &operands[..operands.len().saturating_sub(1)] {
                    push(files, source, Action::Deleted);
                }
            }
        }
        "sed" | "perl"
            if rest
                .iter()
                .any(|w| w.starts_with("-i") || w.starts_with("-pi")) =>
        {
            // The last operand is the file; the script comes before it.
            if let Some(path) = operands.last().filter(|_| operands.len() >= 2) {
                push(files, path, Action::Edited);
            }
        }
        _ => {}
    }
}

/// The exit code a result's text reports, in any common format: `Exit code N`, `Exit
/// code: N`, `Process exited with code N`, `exit status N`, `exited with status N`,
/// `returned non-zero exit status N`, and a structured `"exit_code": N`.
pub fn exit_code(text: &str) -> Option<i64> {
    // Every marker holds `exit`: a text without it (most results) is read once.
    if !has_exit(text) {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let markers = [
        "exit code:",
        "exit code",
        "exited with code",
        "exit status:",
        "exit status",
        "exited with status",
        "\"exit_code\":",
    ];
    let mut found = None;
    for marker in markers {
        let mut from = 0;
        while let Some(at) = super::find(&lower[from..], marker) {
            let start = from + at + marker.len();
            let digits: String = lower[start..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(code) = digits.parse::<i64>() {
                // The last one a result reports is how it ended.
                if found.is_none_or(|(at, _)| start > at) {
                    found = Some((start, code));
                }
            }
            from = start;
        }
    }
    found.map(|(_, code)| code)
}

/// Whether `text` holds `exit` in any ASCII case.
fn has_exit(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(at, &b)| {
        b | 0x20 == b'e'
            && bytes
                .get(at + 1..at + 4)
                .is_some_and(|rest| rest.eq_ignore_ascii_case(b"xit"))
    })
}

/// Whether a result says the user rejected the call (Claude Code's "The user doesn't
/// want to proceed with this tool use", Codex's "rejected by user", a declined
/// approval).
pub fn rejected(text: &str) -> bool {
    let head: String = text.chars().take(400).collect::<String>().to_lowercase();
    [
        "doesn't want to proceed with this tool use",
        "tool use was rejected",
        "rejected by user",
        "rejected by the user",
        "user rejected",
        "declined by user",
        "declined by the user",
        "user declined",
        "approval denied",
        "denied by the user",
    ]
    .iter()
    .any(|marker| head.contains(marker))
}

/// Lines of a shell tool's frame, not of what it printed.
fn frame_line(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    [
        "wall time:",
        "chunk id:",
        "original token count:",
        "output:",
    ]
    .iter()
    .any(|m| lower.starts_with(m))
        || (exit_code(line).is_some() && line.len() < 60)
}

/// Whether a line names an error: a developer would quote it.
fn names_error(line: &str) -> bool {
    let lower = line.to_lowercase();
    [
        "error",
        "failed",
        "failure",
        "panicked",
        "exception",
        "fatal",
        "denied",
        "not found",
        "no such",
        "cannot",
        "can't",
        "unable",
        "refused",
        "timed out",
        "traceback",
        "assert",
        "invalid",
        "undefined",
    ]
    .iter()
    .any(|word| lower.contains(word))
}

/// Whether a line states an error rather than only mentioning a failure: it names an
/// error type (`AssertionError: …`, `KeyError`, `NullPointerException`), starts as a
/// compiler or tool error (`error[E0308]`, `error: …`, `fatal: …`), reports a failed
/// test by name (`FAILED tests/…`, `--- FAIL: TestX`) or a panic, or says a thing is
/// missing or refused.
fn states_error(line: &str) -> bool {
    let lower = line.to_lowercase();
    let typed = line
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|word| {
            word.len() > 5
                && (word.ends_with("Error") || word.ends_with("Exception"))
                && word.chars().next().is_some_and(char::is_uppercase)
        });
    typed
        || [
            "error:", "error[", "fatal:", "e   ", "failed ", "--- fail", "fail:",
        ]
        .iter()
        .any(|m| lower.starts_with(m))
        || [
            ": error",
            "panicked at",
            "no such file",
            "not found",
            "permission denied",
            "cannot ",
            "is not defined",
            "undefined",
            "refused",
            "timed out",
        ]
        .iter()
        .any(|m| lower.contains(m))
}

/// Longest error line a failure obligation quotes; a longer line is quoted up to it.
const ERROR_LINE: usize = 300;
/// Most error lines a failure obligation quotes.
const ERROR_LINES: usize = 3;

/// Whether a line only sums up a run (`test result: FAILED. 4 passed; 1 failed`,
/// `Found 2 errors in 1 file`, `===== 1 failed in 0.31s =====`, `error: could not
/// compile …`) rather than saying what went wrong.
fn sums_up(line: &str) -> bool {
    let lower = line.to_lowercase();
    let wrapped = ["==", "--", "**", "⎯", "─", "═"]
        .iter()
        .any(|w| lower.starts_with(w) && lower.ends_with(w));
    let counts = lower.contains("passed") && lower.contains("failed");
    wrapped
        || counts
        || [
            "test result:",
            "found ",
            "tests:",
            "test suites:",
            "test files",
            "error: could not compile",
            "error: test failed",
            "error: process didn't exit successfully",
            "warning: build failed",
            "fail\t",
            "make: ***",
            "npm err! code",
            "exit status",
            "traceback (most recent call last)",
            "failures:",
        ]
        .iter()
        .any(|m| lower.starts_with(m))
}

fn quoted(line: &str) -> String {
    match line.char_indices().nth(ERROR_LINE) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// The lines of a failed result that say what went wrong, joined by ` | `: of the
/// distinct lines stating an error (`states_error`; else of those only naming one)
/// that do not merely sum the run up, the first two and the last; else the last such
/// summary; else the last line it printed.
pub fn error_line(text: &str) -> Option<String> {
    let printed: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !frame_line(l))
        .collect();
    let mut lines: Vec<&str> = Vec::new();
    let mut weak: Vec<&str> = Vec::new();
    for line in printed.iter().copied() {
        if names_error(line) && !sums_up(line) {
            let list = if states_error(line) {
                &mut lines
            } else {
                &mut weak
            };
            if !list.contains(&line) {
                list.push(line);
            }
        }
    }
    if lines.is_empty() {
        lines = weak;
    }
    // The first ones say where it broke, the last one how the tool put it.
    if lines.len() > ERROR_LINES {
        let last = lines[lines.len() - 1];
        lines.truncate(ERROR_LINES - 1);
        lines.push(last);
    }
    if lines.is_empty() {
        let last = printed
            .iter()
            .rev()
            .find(|l| names_error(l))
            .or_else(|| printed.last())?;
        lines.push(last);
    }
    Some(
        lines
            .into_iter()
            .map(quoted)
            .collect::<Vec<_>>()
            .join(" | "),
    )
}

#[cfg(test)]
#[path = "tests/calls.rs"]
mod tests;
