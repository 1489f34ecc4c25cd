//! Obligations: the facts a summary must keep, extracted from the entries it replaces.
//!
//! From the structure of the transcript first:
//! - **task**: the user's first request, each later one that redirects the work
//!   ("actually …", "instead …", "forget …"), and the request a short nudge ("go on")
//!   leans on (the summary shows the user's other requests while there is room);
//! - **latest request**: the user's newest request;
//! - **constraints**: the user's sentences that bind the work ("don't …", "never …",
//!   "always …", "use X, not Y", "make sure …", and their German, French, Spanish,
//!   Italian and Portuguese forms);
//! - **files**: paths in tool-call arguments (`file_path`, `path`, …), patch headers and
//!   the shell commands that write them; critical when the call changes the file;
//! - **failures**: tool results whose status is `error` or `cancelled`, or (when the
//!   writer gave no status) that end in a non-zero exit in any common format or start
//!   with `Error:`; critical when unresolved (no later success of the same command) or
//!   the newest; a result marked `ok` never fails;
//! - **rejected** calls: results saying the user refused the call;
//! - **pending tool ids**: calls without a result anywhere in the active transcript;
//! - **tool call ids** answered (provenance, not critical) and **commands** run.
//!
//! Then from the text of user and assistant messages (not tool output): the markers
//! `Goal:`, `Constraint:`, `Decision:`, "Next I will …" and `Command failed:`, file
//! paths, commands (in backticks or after `$ `), identifiers (UUIDs, hex of 16+
//! digits) and the user's questions. Decisions, commands, questions, identifiers,
//! answered ids, files only read and resolved failures are not critical. Every one is extracted, however many there are (the same fact twice
//! is one): the summary carries each, or coverage reports it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::calls::{self, Action, Call};
use super::requests;
use crate::types::{Entry, Role, ToolStatus};

/// What kind of fact an obligation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObligationKind {
    /// A user request that sets or changes the task.
    Task,
    /// The user's newest request.
    LatestRequest,
    /// The task's goal, marked `Goal:`.
    Goal,
    /// A constraint on the work.
    Constraint,
    /// A decision taken.
    Decision,
    /// What the agent said it would do next.
    NextAction,
    /// A failing command or an error.
    Failure,
    /// A tool call the user rejected.
    Rejected,
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
    /// Whether losing one of this kind blocks a compaction in blocking mode, unless the
    /// extractor says otherwise for the one fact (a file only read, a resolved failure,
    /// an intermediate request).
    pub fn critical(self) -> bool {
        use ObligationKind as K;
        matches!(
            self,
            K::Task
                | K::LatestRequest
                | K::Goal
                | K::Constraint
                | K::NextAction
                | K::Failure
                | K::Rejected
                | K::PendingTool
                | K::File
                | K::CarryForward
        )
    }

    /// Its name in `kind: text` descriptions.
    pub fn label(self) -> &'static str {
        match self {
            ObligationKind::Task => "task",
            ObligationKind::LatestRequest => "latest_request",
            ObligationKind::Goal => "goal",
            ObligationKind::Constraint => "constraint",
            ObligationKind::Decision => "decision",
            ObligationKind::NextAction => "next_action",
            ObligationKind::Failure => "failure",
            ObligationKind::Rejected => "rejected",
            ObligationKind::ToolCall => "tool_call",
            ObligationKind::PendingTool => "pending_tool",
            ObligationKind::File => "file",
            ObligationKind::Command => "command",
            ObligationKind::Identifier => "identifier",
            ObligationKind::Question => "question",
            ObligationKind::CarryForward => "carry_forward",
        }
    }

    const ALL: [ObligationKind; 15] = [
        ObligationKind::Task,
        ObligationKind::LatestRequest,
        ObligationKind::Goal,
        ObligationKind::Constraint,
        ObligationKind::Decision,
        ObligationKind::NextAction,
        ObligationKind::Failure,
        ObligationKind::Rejected,
        ObligationKind::ToolCall,
        ObligationKind::PendingTool,
        ObligationKind::File,
        ObligationKind::Command,
        ObligationKind::Identifier,
        ObligationKind::Question,
        ObligationKind::CarryForward,
    ];
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

    /// The obligation a description (see [`Obligation::describe`]) stands for: its kind
    /// when it names one, else a fact carried forward as it is.
    pub fn from_description(text: &str) -> Obligation {
        text.split_once(": ")
            .and_then(|(label, rest)| {
                ObligationKind::ALL
                    .iter()
                    .find(|k| k.label() == label && **k != ObligationKind::CarryForward)
                    .map(|&kind| Obligation::new(kind, rest))
            })
            .unwrap_or_else(|| Obligation::new(ObligationKind::CarryForward, text))
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
    // One backward pass (this runs on every word a compaction removes): the last `.`
    // of the name after the last `/`, with a stem before it.
    let bytes = token.as_bytes();
    let Some(dot) = bytes.iter().rposition(|&b| b == b'.' || b == b'/') else {
        return false;
    };
    if bytes[dot] != b'.' {
        return false;
    }
    let name_start = bytes[..dot]
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |slash| slash + 1);
    let has_ext = dot > name_start && FILE_EXTENSIONS.contains(&&token[dot + 1..]);
    has_ext && !token.contains("://") && token.chars().all(|c| !c.is_whitespace())
}

fn looks_like_identifier(token: &str) -> bool {
    // Both shapes are 16 bytes or longer (a UUID 36): most words are out at once. This
    // runs on every word a compaction removes.
    if token.len() < 16 {
        return false;
    }
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    let uuid = token.len() == 36
        && token.split('-').map(str::len).eq([8, 4, 4, 4, 12])
        && token.split('-').all(hex);
    let long_hex = hex(token) && token.chars().any(|c| c.is_ascii_digit());
    uuid || long_hex
}

/// Whether a tool result's text, written without a status, reports a failure: a
/// non-zero exit in any common format, `Command failed:`, or a first line that is an
/// error (`Error: …`, `error: …`, `fatal: …`). An `Error:` further down (a line of a
/// file that was read) is not one.
pub(crate) fn reports_failure(text: &str) -> bool {
    if calls::exit_code(text).is_some_and(|code| code != 0) {
        return true;
    }
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    text.lines()
        .any(|l| l.trim_start().starts_with("Command failed:"))
        || first.is_some_and(|l| {
            let lower = l.to_ascii_lowercase();
            ["error:", "error[", "fatal:", "traceback"]
                .iter()
                .any(|m| lower.starts_with(m))
        })
}

/// Whether `entry` is a failed tool result: its status says `error` or `cancelled`, or,
/// when the writer gave no status, its text reports a failure ([`reports_failure`]) or a
/// rejection. A result whose status is `ok` never fails, whatever its text quotes.
pub(crate) fn failed_result(entry: &Entry) -> bool {
    entry.role == Role::Tool
        && match entry.tool_status {
            Some(status) => status != ToolStatus::Ok,
            None => reports_failure(&entry.content) || calls::rejected(&entry.content),
        }
}

fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    super::find(line, marker)
        .map(|i| line[i + marker.len()..].trim())
        .filter(|rest| !rest.is_empty())
}

/// What [`from_text`]'s pass over a line does with a byte: most bytes are none of
/// these (0). White space ends a word (`WORD_END`, or `MAY_END`: the first byte of a
/// character that may be white space, see [`super::SPACE`]); a `.` makes a word one
/// that may be a path; `N`, `C` and `` ` `` may start a marker.
const WORD_END: u8 = 1;
const MAY_END: u8 = 2;
const DOT: u8 = 4;
const MARKER: u8 = 8;

const TEXT_BYTES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match super::SPACE[b] {
            1 => WORD_END,
            2 => MAY_END,
            _ => match b as u8 {
                b'.' => DOT,
                b'N' | b'C' | b'`' => MARKER,
                _ => 0,
            },
        };
        b += 1;
    }
    table
};

/// The marker and text detectors, over the words of a user or assistant message.
fn from_text(entry: &Entry, out: &mut Vec<Obligation>) {
    use ObligationKind as K;
    for line in entry
        .content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        // One pass over the line (this reads every message a compaction removes): its
        // words, each checked as a path or an identifier as it ends, and where the
        // markers' first bytes first occur. The words' obligations go after the
        // markers', as they were found before.
        let first_word = out.len();
        let bytes = line.as_bytes();
        let (mut start, mut dot, mut at) = (0, false, 0);
        let (mut next_at, mut failed_at, mut quoted) = (None, None, false);
        while at < bytes.len() {
            let class = TEXT_BYTES[usize::from(bytes[at])];
            if class == 0 {
                at += 1;
                continue;
            }
            let width = match class {
                WORD_END => 1,
                MAY_END => super::wide_space_at(line, at).unwrap_or(0),
                _ => 0,
            };
            if width == 0 {
                dot |= class == DOT;
                match bytes[at] {
                    b'N' => _ = next_at.get_or_insert(at),
                    b'C' => _ = failed_at.get_or_insert(at),
                    b'`' => quoted = true,
                    _ => {}
                }
                at += 1;
                continue;
            }
            word(&line[start..at], dot, out);
            at += width;
            (start, dot) = (at, false);
        }
        word(&line[start..], dot, out);
        let words = out.len() - first_word;
        for (marker, kind) in [
            ("Goal:", K::Goal),
            ("Constraint:", K::Constraint),
            ("Decision:", K::Decision),
        ] {
            if let Some(rest) = line.strip_prefix(marker) {
                out.push(Obligation::new(kind, rest.trim()));
            }
        }
        // Looked for from the first occurrence of their first byte on.
        if let Some(i) = next_at.and_then(|n| Some(n + super::find(&line[n..], "Next I will")?)) {
            let sentence = &line[i..];
            let end = sentence.find(". ").map_or(sentence.len(), |e| e + 1);
            out.push(Obligation::new(K::NextAction, &sentence[..end]));
        }
        if let Some(command) = failed_at.and_then(|c| after(&line[c..], "Command failed:")) {
            out.push(Obligation::new(K::Failure, command));
        }
        if let Some(command) = line.strip_prefix("$ ") {
            out.push(Obligation::new(K::Command, command.trim()));
        }
        if quoted {
            let mut quoted = line.split('`');
            while let (Some(_), Some(inside)) = (quoted.next(), quoted.next()) {
                if inside.contains(' ') && !inside.is_empty() {
                    out.push(Obligation::new(K::Command, inside));
                }
            }
        }
        out[first_word..].rotate_left(words);
        if entry.role == Role::User && line.ends_with('?') {
            out.push(Obligation::new(K::Question, line));
        }
    }
}

/// The obligation of one word of a message, if it is a path or an identifier; `dot`
/// says whether it holds a `.`.
fn word(token: &str, dot: bool, out: &mut Vec<Obligation>) {
    // A path has a `.` and an identifier 16 bytes or more, before trimming as after:
    // most words are neither, and are passed over untrimmed.
    if token.len() < 16 && !dot {
        return;
    }
    let token = trim_token(token);
    if looks_like_path(token) {
        let mut file = Obligation::new(ObligationKind::File, token);
        file.critical = false;
        out.push(file);
    } else if looks_like_identifier(token) {
        out.push(Obligation::new(ObligationKind::Identifier, token));
    }
}

/// Whether a user entry is a request in the user's own words (not a context block, a
/// slash command, an earlier summary or Claude Code's interruption marker).
fn request_of(entry: &Entry) -> Option<String> {
    if entry.role != Role::User || entry.kind.is_some() {
        return None;
    }
    let text = entry.content.trim();
    if text.is_empty() || text.starts_with("[Request interrupted by user") {
        return None;
    }
    Some(requests::compress(text)).filter(|t| !t.is_empty())
}

/// The obligations of `removed` entries. `transcript` is the whole active transcript
/// (a tool call is pending when no entry in it answers the call); `carried` are the
/// facts an earlier summary carried forward.
pub fn extract(removed: &[Entry], transcript: &[Entry], carried: &[String]) -> Vec<Obligation> {
    facts(removed, transcript, carried).obligations
}

/// [`extract`] with what the built-in summarizer shows beside the obligations.
pub fn facts(removed: &[Entry], transcript: &[Entry], carried: &[String]) -> Facts {
    let answered =
        crate::order::set_of(transcript.iter().filter_map(|e| e.tool_call_id.as_deref()));
    let mut extractor = Extractor::new(carried);
    for entry in removed {
        extractor.feed(entry, |id| answered.contains(id));
    }
    extractor.finish()
}

/// What one file went through, in the removed entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHistory {
    /// The path, as the calls wrote it.
    pub path: String,
    /// How many calls changed it, by what they did (edited, written, deleted).
    pub changes: BTreeMap<&'static str, u32>,
    /// How many calls only read it.
    pub reads: u32,
}

impl FileHistory {
    /// `path (edited ×2, read)`.
    pub fn describe(&self) -> String {
        let mut what: Vec<String> = self
            .changes
            .iter()
            .map(|(action, n)| match n {
                1 => (*action).to_owned(),
                n => format!("{action} ×{n}"),
            })
            .collect();
        if self.reads > 0 {
            what.push(match self.reads {
                1 => "read".into(),
                n => format!("read ×{n}"),
            });
        }
        format!("{} ({})", self.path, what.join(", "))
    }
}

/// What the extractor found: the obligations, and what a summary shows beside them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facts {
    /// Every obligation, each where it was last seen.
    pub obligations: Vec<Obligation>,
    /// The files tool calls touched, changed ones first, oldest first.
    pub files: Vec<FileHistory>,
    /// Each command run and how its last run ended, oldest first.
    pub commands: Vec<(String, String)>,
    /// Pending tool ids with what the call was.
    pub pending: BTreeMap<String, String>,
    /// The newest words of the agent (its last message, first paragraph).
    pub status: Option<String>,
    /// References (size, hash, preview) of the newest large tool payloads.
    pub payloads: Vec<serde_json::Value>,
    /// The newest of the user's other requests (neither the task, a change of it, nor
    /// the latest), oldest first.
    pub requests: Vec<String>,
    /// Entries read.
    pub removed: u64,
}

/// [`extract`] one entry at a time, for a compaction that reads what it removes in
/// pages: it holds the distinct facts seen so far, not the entries.
#[derive(Debug, Default)]
pub struct Extractor {
    /// Each distinct obligation with where it was last seen and whether it is critical.
    seen: BTreeMap<Fact, (u64, bool)>,
    next: u64,
    scratch: Vec<Obligation>,
    /// Calls not yet answered among the removed entries, by id.
    open: BTreeMap<String, Call>,
    /// Whether the task has been seen (here or in a carried fact).
    tasked: bool,
    /// The newest request and whether it is already a task.
    latest: Option<(String, bool)>,
    /// The newest failure of each call key: its text.
    failing: BTreeMap<String, String>,
    /// The newest failure of all.
    newest_failure: Option<String>,
    files: BTreeMap<String, (u64, FileHistory)>,
    commands: BTreeMap<String, (u64, String)>,
    pending: BTreeMap<String, String>,
    /// The first paragraph of the agent's newest words.
    status: Option<String>,
    payloads: std::collections::VecDeque<serde_json::Value>,
    requests: std::collections::VecDeque<String>,
    removed: u64,
}

/// An obligation's identity in the [`Extractor`]: its kind and text, ordered as the pair
/// is, the texts compared eight bytes at a time (many facts start alike, and in the
/// component `memcmp` compares a byte at a time).
#[derive(Debug, PartialEq, Eq)]
struct Fact(ObligationKind, String);

impl Ord for Fact {
    fn cmp(&self, other: &Fact) -> std::cmp::Ordering {
        self.0
            .cmp(&other.0)
            .then_with(|| super::compare(self.1.as_bytes(), other.1.as_bytes()))
    }
}

impl PartialOrd for Fact {
    fn partial_cmp(&self, other: &Fact) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// How many of the user's requests that neither set nor change the task a summary
/// shows (the newest).
const SHOWN_REQUESTS: usize = 16;

/// How many large tool payloads a summary references: the newest ones (the others stay
/// in the canonical transcript).
const SHOWN_PAYLOADS: usize = 32;

/// The key of a failure's text (`` `command` failed … ``): its command.
fn failure_key(text: &str) -> Option<&str> {
    text.strip_prefix('`')
        .and_then(|rest| rest.split_once("` "))
        .map(|(key, _)| key)
}

impl Extractor {
    /// Starts with the facts an earlier summary carried forward.
    pub fn new(carried: &[String]) -> Extractor {
        let mut out = Extractor::default();
        for fact in carried {
            let obligation = Obligation::from_description(fact);
            match obligation.kind {
                ObligationKind::Task => out.tasked = true,
                ObligationKind::LatestRequest => {
                    out.latest = Some((obligation.text.clone(), false));
                    out.tasked = true;
                    continue;
                }
                ObligationKind::Failure => {
                    // A failure without a command is never resolved by a later success.
                    let key = failure_key(&obligation.text).unwrap_or(&obligation.text);
                    out.failing.insert(key.to_owned(), obligation.text.clone());
                    out.newest_failure = Some(obligation.text.clone());
                    continue;
                }
                _ => {}
            }
            out.add(obligation);
        }
        out
    }

    fn add(&mut self, obligation: Obligation) {
        if obligation.text.is_empty() {
            return;
        }
        let seen = self
            .seen
            .entry(Fact(obligation.kind, obligation.text))
            .or_insert((self.next, false));
        *seen = (self.next, seen.1 || obligation.critical);
        self.next += 1;
    }

    fn request(&mut self, prose: String) {
        for sentence in requests::constraints(&prose) {
            self.add(Obligation::new(ObligationKind::Constraint, sentence));
        }
        let task = !self.tasked || requests::redirects(&prose);
        // A nudge ("go on") leans on the request before it: that one becomes a task.
        // Other requests in between are shown while there is room, not owed.
        if let Some((before, false)) = self.latest.take() {
            if requests::nudge(&prose) && !requests::nudge(&before) {
                self.add(Obligation::new(ObligationKind::Task, before));
            } else {
                if self.requests.len() == SHOWN_REQUESTS {
                    self.requests.pop_front();
                }
                self.requests.push_back(before);
            }
        }
        if task {
            self.add(Obligation::new(ObligationKind::Task, prose.clone()));
        }
        self.tasked = true;
        self.latest = Some((prose, task));
    }

    fn file(&mut self, path: &str, action: Action) {
        let at = self.next;
        let (_, history) = self.files.entry(path.to_owned()).or_insert_with(|| {
            (
                at,
                FileHistory {
                    path: path.to_owned(),
                    changes: BTreeMap::new(),
                    reads: 0,
                },
            )
        });
        if action.changes() {
            *history.changes.entry(action.as_str()).or_default() += 1;
        } else {
            history.reads += 1;
        }
        let mut obligation = Obligation::new(ObligationKind::File, path);
        obligation.critical = action.changes();
        self.add(obligation);
    }

    fn result(&mut self, entry: &Entry, id: Option<&str>) {
        use ObligationKind as K;
        let call = id.and_then(|id| self.open.remove(id));
        let what = match (&call, id) {
            (Some(call), _) => call.describe(),
            (None, Some(id)) => format!("tool call {id}"),
            (None, None) => "a tool call".to_owned(),
        };
        let key = call.as_ref().map(Call::key).unwrap_or_else(|| what.clone());
        let failed = failed_result(entry);
        let code = calls::exit_code(&entry.content);
        if let Some(command) = call.as_ref().and_then(|c| c.command.clone()) {
            let last = match (failed, code) {
                (_, Some(code)) if code != 0 || failed => format!("exit {code}"),
                (true, _) => entry
                    .tool_status
                    .map_or("failed", |s| s.as_str())
                    .to_owned(),
                (false, Some(0)) => "exit 0".to_owned(),
                (false, _) => "ok".to_owned(),
            };
            let at = self.next;
            self.commands.insert(command.clone(), (at, last));
            self.add(Obligation::new(K::Command, command));
        }
        if calls::rejected(&entry.content) && entry.tool_status != Some(ToolStatus::Ok) {
            self.add(Obligation::new(
                K::Rejected,
                format!("{what} (rejected by the user)"),
            ));
            return;
        }
        if !failed {
            self.failing.remove(&key);
            return;
        }
        // The marker extra: `Command failed: <command>`.
        for line in entry.content.lines() {
            if let Some(command) = after(line, "Command failed:") {
                self.add(Obligation::new(K::Failure, command));
            }
        }
        let line = calls::error_line(&entry.content);
        let how = match (entry.tool_status, code) {
            (Some(ToolStatus::Cancelled), _) => "was cancelled".to_owned(),
            (_, Some(code)) if code != 0 => format!("failed (exit {code})"),
            _ => "failed".to_owned(),
        };
        let text = match line {
            Some(line) => format!("{what} {how}: {line}"),
            None => format!("{what} {how}"),
        };
        self.failing.insert(key, text.clone());
        self.newest_failure = Some(text.clone());
        let mut obligation = Obligation::new(K::Failure, text);
        // Critical or not is settled at the end, when it is known whether it was resolved.
        obligation.critical = false;
        self.add(obligation);
    }

    /// Takes in the next removed entry; `answered(id)` says whether the active transcript
    /// answers tool call `id`.
    pub fn feed(&mut self, entry: &Entry, answered: impl Fn(&str) -> bool) {
        self.removed += 1;
        let mut found = std::mem::take(&mut self.scratch);
        if entry.role != Role::Tool {
            from_text(entry, &mut found);
        }
        for obligation in found.drain(..) {
            self.add(obligation);
        }
        self.scratch = found;
        if let Some(prose) = request_of(entry) {
            self.request(prose);
        }
        if entry.role == Role::Assistant && !entry.content.trim().is_empty() {
            // Only the newest one is shown: its sentences are chosen in `finish`.
            self.status = Some(first_paragraph(entry.content.trim()).to_owned());
        }
        for reference in super::summarize::large_payloads(entry) {
            if self.payloads.len() == SHOWN_PAYLOADS {
                self.payloads.pop_front();
            }
            self.payloads.push_back(reference);
        }
        if let Some(tool_calls) = &entry.tool_calls {
            for call in calls::calls(tool_calls) {
                for (path, action) in &call.files {
                    self.file(path, *action);
                }
                if let Some(id) = call.id.clone() {
                    if answered(&id) {
                        self.add(Obligation::new(ObligationKind::ToolCall, id.clone()));
                    } else {
                        self.pending.insert(id.clone(), call.describe());
                        self.add(Obligation::new(ObligationKind::PendingTool, id.clone()));
                    }
                    self.open.insert(id, call);
                }
            }
        }
        if entry.role == Role::Tool {
            if let Some(id) = &entry.tool_call_id {
                self.add(Obligation::new(ObligationKind::ToolCall, id.clone()));
            }
            self.result(entry, entry.tool_call_id.as_deref());
        }
    }

    /// The facts: the same fact twice is one obligation, placed where it was last seen.
    /// There is no cap: every obligation is checked, and one the summary cannot hold is
    /// reported.
    pub fn finish(mut self) -> Facts {
        if let Some((latest, _)) = self.latest.take() {
            self.add(Obligation::new(ObligationKind::LatestRequest, latest));
        }
        let unresolved = crate::order::set_of(self.failing.values().map(String::as_str));
        // A carried failure that is still unresolved is still owed.
        let carried_failures: Vec<String> = self
            .failing
            .values()
            .filter(|t| {
                !self
                    .seen
                    .contains_key(&Fact(ObligationKind::Failure, (*t).clone()))
            })
            .cloned()
            .collect();
        let mut last: Vec<(u64, Obligation)> = self
            .seen
            .iter()
            .map(|(Fact(kind, text), &(at, critical))| {
                let critical = match kind {
                    ObligationKind::Failure => {
                        critical
                            || unresolved.contains(text.as_str())
                            || self.newest_failure.as_ref() == Some(text)
                    }
                    _ => critical,
                };
                (
                    at,
                    Obligation {
                        kind: *kind,
                        text: text.clone(),
                        critical,
                    },
                )
            })
            .collect();
        last.extend(
            carried_failures
                .into_iter()
                .map(|text| (0, Obligation::new(ObligationKind::Failure, text))),
        );
        crate::order::sort_by_key(&mut last, |(at, _)| *at);
        let mut files: Vec<(u64, FileHistory)> = self.files.into_values().collect();
        crate::order::sort_by_key(&mut files, |(at, f)| (f.changes.is_empty(), *at));
        let mut commands: Vec<(u64, String, String)> = self
            .commands
            .into_iter()
            .map(|(command, (at, last))| (at, command, last))
            .collect();
        crate::order::sort_by(&mut commands, Ord::cmp);
        Facts {
            obligations: last.into_iter().map(|(_, o)| o).collect(),
            files: files.into_iter().map(|(_, f)| f).collect(),
            commands: commands.into_iter().map(|(_, c, l)| (c, l)).collect(),
            pending: self.pending,
            status: self
                .status
                .map(|paragraph| sentences_within(&paragraph, STATUS)),
            payloads: self.payloads.into(),
            requests: self.requests.into(),
            removed: self.removed,
        }
    }
}

/// `text.split("\n\n").next()`, found with `memchr` (this reads every message of the
/// agent a compaction removes).
fn first_paragraph(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find('\n') {
        let at = from + at;
        if text.as_bytes().get(at + 1) == Some(&b'\n') {
            return &text[..at];
        }
        from = at + 1;
    }
    text
}

/// Characters of the agent's newest words a summary shows as its current state.
const STATUS: usize = 600;

/// The whole sentences of `text` that fit in `limit` characters (at least the first,
/// cut at a word when it alone is longer, marked `…`).
fn sentences_within(text: &str, limit: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let mut end = 0;
    for (count, (at, c)) in text.char_indices().enumerate() {
        if count > limit {
            break;
        }
        if matches!(c, '.' | '!' | '?' | '\n') {
            end = at + c.len_utf8();
        }
    }
    if end == 0 {
        let cut = text
            .char_indices()
            .take(limit)
            .filter(|(_, c)| c.is_whitespace())
            .last()
            .map_or(limit.min(text.len()), |(at, _)| at);
        let cut = (0..=cut)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        return format!("{}…", text[..cut].trim_end());
    }
    format!("{} …", text[..end].trim_end())
}

#[cfg(test)]
#[path = "tests/obligations.rs"]
mod tests;
