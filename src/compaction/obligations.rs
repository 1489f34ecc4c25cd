//! Obligations: the facts a summary must keep, extracted from the entries it replaces.
//!
//! Goals (`Goal:`), constraints (`Constraint:`), decisions (`Decision:`), next actions
//! ("Next I will …"), failures (`Exit code`, `Error:`, `Command failed:`), tool call ids,
//! pending tool ids (issued without a result anywhere in the transcript), file paths,
//! commands (in backticks or after `$ `), identifiers (UUIDs, hex of 16+ digits) and
//! questions. All but decisions, commands and questions are critical. Every one is
//! extracted, however many there are (the same fact twice is one): coverage then carries
//! each into the summary or reports it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::plan::call_ids;
use crate::types::{Entry, Role, ToolStatus};

/// What kind of fact an obligation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObligationKind {
    /// The task's goal.
    Goal,
    /// A constraint on the work.
    Constraint,
    /// A decision taken.
    Decision,
    /// What the agent said it would do next.
    NextAction,
    /// A failing command or an error.
    Failure,
    /// A tool call id.
    ToolCall,
    /// A tool call issued without a result yet.
    PendingTool,
    /// A file path.
    File,
    /// A command.
    Command,
    /// A UUID or long hex id.
    Identifier,
    /// An open question.
    Question,
    /// A fact an earlier summary carried forward.
    CarryForward,
}

impl ObligationKind {
    /// Whether losing it blocks a compaction in blocking mode.
    pub fn critical(self) -> bool {
        !matches!(
            self,
            ObligationKind::Decision | ObligationKind::Command | ObligationKind::Question
        )
    }

    fn label(self) -> &'static str {
        match self {
            ObligationKind::Goal => "goal",
            ObligationKind::Constraint => "constraint",
            ObligationKind::Decision => "decision",
            ObligationKind::NextAction => "next_action",
            ObligationKind::Failure => "failure",
            ObligationKind::ToolCall => "tool_call",
            ObligationKind::PendingTool => "pending_tool",
            ObligationKind::File => "file",
            ObligationKind::Command => "command",
            ObligationKind::Identifier => "identifier",
            ObligationKind::Question => "question",
            ObligationKind::CarryForward => "carry_forward",
        }
    }
}

/// One fact the summary must keep.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Obligation {
    /// What kind of fact.
    pub kind: ObligationKind,
    /// The text that must appear in the summary.
    pub text: String,
    /// Whether losing it blocks a compaction in blocking mode.
    pub critical: bool,
}

impl Obligation {
    fn new(kind: ObligationKind, text: impl Into<String>) -> Self {
        Obligation {
            kind,
            text: text.into(),
            critical: kind.critical(),
        }
    }

    /// `kind: text`, as listed in `missing_obligations` and `critical_carry_forward`.
    /// A fact carried forward is already described: it keeps its text, so carrying it
    /// through many compactions does not grow it.
    pub fn describe(&self) -> String {
        match self.kind {
            ObligationKind::CarryForward => self.text.clone(),
            kind => format!("{}: {}", kind.label(), self.text),
        }
    }
}

const FILE_EXTENSIONS: &[&str] = &[
    "rs", "py", "ts", "tsx", "js", "jsx", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs",
    "rb", "php", "swift", "md", "txt", "json", "toml", "yaml", "yml", "lock", "html", "css", "sh",
    "sql", "wit", "proto", "cfg", "ini", "xml", "csv",
];

fn trim_token(token: &str) -> &str {
    token.trim_matches(|c: char| {
        matches!(
            c,
            '.' | ','
                | ';'
                | ':'
                | '('
                | ')'
                | '['
                | ']'
                | '"'
                | '\''
                | '`'
                | '<'
                | '>'
                | '!'
                | '?'
        )
    })
}

fn looks_like_path(token: &str) -> bool {
    let name = token.rsplit('/').next().unwrap_or(token);
    let has_ext = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && FILE_EXTENSIONS.contains(&ext));
    has_ext && !token.contains("://") && token.chars().all(|c| !c.is_whitespace())
}

fn looks_like_identifier(token: &str) -> bool {
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    let parts: Vec<&str> = token.split('-').collect();
    let uuid = parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts.iter().all(|p| hex(p));
    let long_hex = token.len() >= 16 && hex(token) && token.chars().any(|c| c.is_ascii_digit());
    uuid || long_hex
}

/// Whether a line reports a failure (`Exit code …`, `Error:`).
fn failure_line(line: &str) -> bool {
    line.contains("Exit code") || line.contains("Error:")
}

/// Whether `text` reports a failing command or an error: a failure line, or
/// `Command failed:`.
pub(crate) fn reports_failure(text: &str) -> bool {
    text.lines()
        .any(|line| failure_line(line) || line.contains("Command failed:"))
}

/// Whether `entry` is a failed tool result: its status says `error` or `cancelled`, or,
/// when the writer gave no status, its text reports a failure ([`reports_failure`]). A
/// result whose status is `ok` never fails, whatever its text quotes.
pub(crate) fn failed_result(entry: &Entry) -> bool {
    entry.role == Role::Tool
        && match entry.tool_status {
            Some(status) => status != ToolStatus::Ok,
            None => reports_failure(&entry.content),
        }
}

fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker)
        .map(|i| line[i + marker.len()..].trim())
        .filter(|rest| !rest.is_empty())
}

fn from_text(entry: &Entry, out: &mut Vec<Obligation>) {
    use ObligationKind as K;
    // A result the writer marked successful reports no failure, whatever it quotes.
    let may_fail = entry.tool_status != Some(ToolStatus::Ok);
    for line in entry
        .content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        for (marker, kind) in [
            ("Goal:", K::Goal),
            ("Constraint:", K::Constraint),
            ("Decision:", K::Decision),
        ] {
            if let Some(rest) = line.strip_prefix(marker) {
                out.push(Obligation::new(kind, rest.trim()));
            }
        }
        if let Some(i) = line.find("Next I will") {
            let sentence = &line[i..];
            let end = sentence.find(". ").map_or(sentence.len(), |e| e + 1);
            out.push(Obligation::new(K::NextAction, &sentence[..end]));
        }
        if may_fail && failure_line(line) {
            out.push(Obligation::new(K::Failure, line));
        }
        if let Some(command) = after(line, "Command failed:").filter(|_| may_fail) {
            out.push(Obligation::new(K::Failure, command));
        }
        if let Some(command) = line.strip_prefix("$ ") {
            out.push(Obligation::new(K::Command, command.trim()));
        }
        let mut quoted = line.split('`');
        while let (Some(_), Some(inside)) = (quoted.next(), quoted.next()) {
            if inside.contains(' ') && !inside.is_empty() {
                out.push(Obligation::new(K::Command, inside));
            }
        }
        for token in line.split_whitespace().map(trim_token) {
            if looks_like_path(token) {
                out.push(Obligation::new(K::File, token));
            } else if looks_like_identifier(token) {
                out.push(Obligation::new(K::Identifier, token));
            }
        }
        if entry.role == Role::User && line.ends_with('?') {
            out.push(Obligation::new(K::Question, line));
        }
    }
}

/// The obligations of `removed` entries. `transcript` is the whole active transcript
/// (a tool call is pending when no entry in it answers the call); `carried` are the
/// facts an earlier summary carried forward.
pub fn extract(removed: &[Entry], transcript: &[Entry], carried: &[String]) -> Vec<Obligation> {
    let answered: BTreeSet<&str> = transcript
        .iter()
        .filter_map(|e| e.tool_call_id.as_deref())
        .collect();
    let mut extractor = Extractor::new(carried);
    for entry in removed {
        extractor.feed(entry, |id| answered.contains(id));
    }
    extractor.finish()
}

/// [`extract`] one entry at a time, for a compaction that reads what it removes in
/// pages: it holds the distinct obligations seen so far, not the entries.
#[derive(Debug, Default)]
pub struct Extractor {
    /// Each distinct obligation with where it was last seen.
    seen: BTreeMap<(ObligationKind, String), u64>,
    next: u64,
    scratch: Vec<Obligation>,
}

impl Extractor {
    /// Starts with the facts an earlier summary carried forward.
    pub fn new(carried: &[String]) -> Extractor {
        let mut out = Extractor::default();
        for fact in carried {
            out.add(Obligation::new(ObligationKind::CarryForward, fact.clone()));
        }
        out
    }

    fn add(&mut self, obligation: Obligation) {
        if obligation.text.is_empty() {
            return;
        }
        self.seen
            .insert((obligation.kind, obligation.text), self.next);
        self.next += 1;
    }

    /// Takes in the next removed entry; `answered(id)` says whether the active transcript
    /// answers tool call `id`.
    pub fn feed(&mut self, entry: &Entry, answered: impl Fn(&str) -> bool) {
        let mut found = std::mem::take(&mut self.scratch);
        from_text(entry, &mut found);
        if let Some(calls) = &entry.tool_calls {
            for id in call_ids(calls) {
                let kind = if answered(&id) {
                    ObligationKind::ToolCall
                } else {
                    ObligationKind::PendingTool
                };
                found.push(Obligation::new(kind, id));
            }
        }
        if let Some(id) = &entry.tool_call_id {
            found.push(Obligation::new(ObligationKind::ToolCall, id.clone()));
            if let Some(status @ (ToolStatus::Error | ToolStatus::Cancelled)) = entry.tool_status {
                let first = entry.content.lines().map(str::trim).find(|l| !l.is_empty());
                let what = match status {
                    ToolStatus::Cancelled => "was cancelled",
                    _ => "failed",
                };
                found.push(Obligation::new(
                    ObligationKind::Failure,
                    match first {
                        Some(line) => format!("tool call {id} {what}: {line}"),
                        None => format!("tool call {id} {what}"),
                    },
                ));
            }
        }
        for obligation in found.drain(..) {
            self.add(obligation);
        }
        self.scratch = found;
    }

    /// The obligations: the same fact twice is one obligation, placed where it was last
    /// seen. There is no cap: every obligation is checked, and one the summary cannot
    /// hold is reported.
    pub fn finish(self) -> Vec<Obligation> {
        let mut last: Vec<(u64, ObligationKind, String)> = self
            .seen
            .into_iter()
            .map(|((kind, text), at)| (at, kind, text))
            .collect();
        last.sort_unstable_by_key(|(at, _, _)| *at);
        last.into_iter()
            .map(|(_, kind, text)| Obligation::new(kind, text))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(role: Role, content: &str) -> Entry {
        Entry {
            id: 0,
            message_id: String::new(),
            role,
            content: content.into(),
            created_at: 0,
            token_count: None,
            tool_calls: None,
            tool_call_id: None,
            turn_id: None,
            turn_usage: None,
            tool_status: None,
            reasoning: None,
            attachments: Vec::new(),
            kind: None,
        }
    }

    fn texts(obligations: &[Obligation], kind: ObligationKind) -> Vec<&str> {
        obligations
            .iter()
            .filter(|o| o.kind == kind)
            .map(|o| o.text.as_str())
            .collect()
    }

    #[test]
    fn test_extracts_every_kind_from_an_agent_conversation() {
        use ObligationKind as K;
        let mut call = e(
            Role::Assistant,
            "Next I will run uv run pytest tests/test_session/test_manager.py.",
        );
        call.tool_calls = Some(serde_json::json!([{"id": "call_exec_1"}, {"id": "call_pending"}]));
        let mut result = e(
            Role::Tool,
            "Command failed: uv run pytest tests/test_session/test_manager.py\nExit code 1\nError: missing summary_payload column",
        );
        result.tool_call_id = Some("call_exec_1".into());
        let removed = vec![
            e(
                Role::User,
                "Goal: finish continuity work.\nConstraint: do not enable coverage blocking by default.\nKeep src/opensquilla/session/models.py and docs/Long Task Report.md.\nCan you check run 3f2a9c4e-1b2d-4c5e-8f90-1a2b3c4d5e6f?",
            ),
            call,
            result.clone(),
            e(
                Role::Assistant,
                "Decision: keep the schema. Run `cargo test --workspace` after.",
            ),
        ];
        let all = removed.clone();
        let o = extract(&removed, &all, &["goal: an older goal".into()]);
        assert_eq!(texts(&o, K::Goal), ["finish continuity work."]);
        assert_eq!(
            texts(&o, K::Constraint),
            ["do not enable coverage blocking by default."]
        );
        assert_eq!(
            texts(&o, K::NextAction),
            ["Next I will run uv run pytest tests/test_session/test_manager.py."]
        );
        assert_eq!(texts(&o, K::ToolCall), ["call_exec_1"]);
        assert_eq!(texts(&o, K::PendingTool), ["call_pending"]);
        assert!(texts(&o, K::File).contains(&"src/opensquilla/session/models.py"));
        assert!(texts(&o, K::File).contains(&"tests/test_session/test_manager.py"));
        assert!(texts(&o, K::Failure).contains(&"Exit code 1"));
        assert!(
            texts(&o, K::Failure).contains(&"uv run pytest tests/test_session/test_manager.py")
        );
        assert_eq!(
            texts(&o, K::Identifier),
            ["3f2a9c4e-1b2d-4c5e-8f90-1a2b3c4d5e6f"]
        );
        assert_eq!(texts(&o, K::Command), ["cargo test --workspace"]);
        assert_eq!(
            texts(&o, K::Decision),
            ["keep the schema. Run `cargo test --workspace` after."]
        );
        assert_eq!(texts(&o, K::CarryForward), ["goal: an older goal"]);
        assert_eq!(texts(&o, K::Question).len(), 1);
        assert!(
            o.iter()
                .filter(|x| x.kind == K::Question || x.kind == K::Command)
                .all(|x| !x.critical)
        );
    }

    #[test]
    fn test_every_obligation_is_extracted_however_many_there_are() {
        let removed: Vec<Entry> = (0..100)
            .map(|i| e(Role::User, &format!("Goal: step {i}\nedit src/file_{i}.rs")))
            .collect();
        let o = extract(&removed, &removed, &[]);
        let files = texts(&o, ObligationKind::File);
        assert_eq!(files.len(), 100);
        assert_eq!(files.first(), Some(&"src/file_0.rs"));
        assert_eq!(texts(&o, ObligationKind::Goal).len(), 100);
    }

    #[test]
    fn test_duplicates_collapse_and_plain_words_are_not_paths() {
        let removed = vec![e(
            Role::User,
            "see main.rs and main.rs, version 1.2, e.g. foo",
        )];
        let o = extract(&removed, &removed, &[]);
        assert_eq!(
            o.iter().filter(|x| x.kind == ObligationKind::File).count(),
            1
        );
        assert!(o.iter().all(|x| x.text != "1.2" && x.text != "e.g"));
    }
}
