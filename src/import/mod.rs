//! Importers for real agent transcripts: Claude Code session logs, Codex rollouts and pi
//! sessions (JSON Lines), Gemini CLI sessions (a JSON document or JSON Lines), opencode
//! sessions (a JSON document per session), and Spool's own export (`spool export KEY`, [`crate::export`]). Parsing is a pure function from the file's text to an
//! [`ImportedLog`]; [`import_session`] writes one parsed session, idempotently (an entry
//! whose message id the session already holds is skipped), so importing the same file
//! twice — or a longer version of it — adds only what is new.
//!
//! The JSON Lines parsers are forgiving in the ways real logs need: an unparsable **last** line
//! without a trailing newline is a write cut short (reported as `truncated_tail`,
//! everything before it imported); an unparsable line elsewhere is counted in
//! `invalid_lines` and skipped; line types Spool does not import are counted by type in
//! `skipped`. Attachments (images, documents) are described on their entries (kind,
//! media type, decoded size, SHA-256 or where they were), never stored: the log's
//! [`ImportedLog::attachments`] and [`ImportedLog::attachment_bytes_not_stored`] count
//! them. A JSON document that does not parse is one invalid line and no session.
//!
//! A parse of a log's prefix gives a prefix of each of its sessions (the Claude Code
//! parser guarantees it, see [`parse_claude_code`]; the pi, Gemini CLI and opencode
//! parsers for a file that grows by lines or a document that grows by messages); with [`import_session`] rewriting
//! usage figures that grew, importing a log while it grows and once more at its end
//! gives the same sessions as importing it once.

mod claude;
mod codex;
mod gemini;
mod opencode;
mod pi;
mod plan;
mod restore;
mod spool;
mod time;
mod uuid_tree;
mod write;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compaction::Summary;
use crate::types::{Attachment, BranchLineage, EntryKind, Role, Session, ToolStatus, TurnUsage};

pub use claude::{SpawnCalls, link_sub_agents, parse_claude_code, parse_claude_code_files};
pub use codex::parse_codex;
pub use gemini::parse_gemini;
pub use opencode::parse_opencode;
pub use pi::parse_pi;
pub use plan::{ImportPlan, MAX_PROVIDER_ID_BYTES, PlannedLink, PlannedSession, plan, session_key};
pub use spool::parse_spool;
pub use time::parse_rfc3339_ms;
pub use write::{
    AdjustedEntry, ImportOutcome, ImportRequest, MAX_IMPORT_ENTRIES, MAX_IMPORT_SLICE_BYTES,
    import_session, slices,
};

/// A provider session id reduced to what keys and ids may hold: ASCII letters, digits,
/// `-`, `_`, `.` and `@` (any other character becomes `_`), at most 64 of them, then `~`
/// and 16 hex digits of the 64-bit FNV-1a hash of the whole id, so distinct ids stay
/// distinct and an id gives the same result on every import.
pub fn sanitize_id(provider_id: &str) -> String {
    let clean = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@');
    let reduced: String = provider_id
        .chars()
        .map(|c| if clean(c) { c } else { '_' })
        .take(64)
        .collect();
    let hash = provider_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, b| {
            (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    format!("{reduced}~{hash:016x}")
}

/// The provider session id as Spool records it (in metadata, derived message ids): the
/// id itself when it is a valid id ([`crate::engine::validate::id`]) or empty (no id), else
/// [`sanitize_id`] of it.
pub fn recorded_provider_id(provider_id: &str) -> String {
    match crate::engine::validate::id("provider_session_id", provider_id) {
        Err(_) if !provider_id.is_empty() => sanitize_id(provider_id),
        _ => provider_id.to_owned(),
    }
}

/// Which agent wrote a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportFormat {
    /// Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// Codex rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`).
    Codex,
    /// Spool's own export (`spool export KEY`): a header, the entries, the summaries.
    Spool,
    /// pi coding agent session JSONL (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`).
    Pi,
    /// Gemini CLI session, a JSON document or JSON Lines
    /// (`~/.gemini/tmp/<project hash>/chats/session-….json[l]`).
    Gemini,
    /// An opencode session as one JSON document, `{info, messages: [{info, parts}]}`
    /// (what `opencode export` prints; the CLI builds it from opencode's SQLite
    /// database or its older JSON files).
    Opencode,
}

impl ImportFormat {
    /// The agent type used for run records and session keys.
    pub fn agent_type(self) -> &'static str {
        match self {
            ImportFormat::ClaudeCode => "claude_code",
            ImportFormat::Codex => "codex",
            ImportFormat::Spool => "spool",
            ImportFormat::Pi => "pi",
            ImportFormat::Gemini => "gemini",
            ImportFormat::Opencode => "opencode",
        }
    }
}

/// Parses `text` as a log of `format`.
pub fn parse(format: ImportFormat, text: &str) -> ImportedLog {
    match format {
        ImportFormat::ClaudeCode => parse_claude_code(text),
        ImportFormat::Codex => parse_codex(text),
        ImportFormat::Spool => parse_spool(text),
        ImportFormat::Pi => parse_pi(text),
        ImportFormat::Gemini => parse_gemini(text),
        ImportFormat::Opencode => parse_opencode(text),
    }
}

/// One transcript entry read from a log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedEntry {
    /// Stable id: the log's own message id, or one derived from the session id and the
    /// line number (stable while the log only grows).
    pub message_id: String,
    /// The message id this one follows in the log's own tree, when the log has one.
    #[serde(default)]
    pub parent_message_id: Option<String>,
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// When it was written (ms since the Unix epoch); 0 when the log had no time.
    pub created_at: u64,
    /// Tool calls made by an assistant message.
    #[serde(default)]
    pub tool_calls: Option<Value>,
    /// The tool call a `tool` entry answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Model usage reported with this message: the response's final figures.
    #[serde(default)]
    pub turn_usage: Option<TurnUsage>,
    /// How the tool call a `tool` entry answers ended.
    #[serde(default)]
    pub tool_status: Option<ToolStatus>,
    /// The model's reasoning (thinking) behind an assistant message.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Files that came with the message.
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// What the message is when it is not a plain one of its role.
    #[serde(default)]
    pub kind: Option<EntryKind>,
    /// The token count its writer reported (a Spool export's `token_count`).
    #[serde(default)]
    pub token_count: Option<u64>,
    /// The turn it belongs to (a Spool export's `turn_id`).
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Only the usage of an entry an earlier slice gave ([`parse_slice`]): an import
    /// sets `turn_usage` on the entry it holds under `message_id`, reads no other
    /// field, and never adds it as an entry.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_only: bool,
}

impl ImportedEntry {
    /// A plain entry: no parent, tool calls, usage, status, reasoning or attachments.
    pub fn new(
        message_id: impl Into<String>,
        role: Role,
        content: String,
        created_at: u64,
    ) -> Self {
        ImportedEntry {
            message_id: message_id.into(),
            parent_message_id: None,
            role,
            content,
            created_at,
            tool_calls: None,
            tool_call_id: None,
            turn_usage: None,
            tool_status: None,
            reasoning: None,
            attachments: Vec::new(),
            kind: None,
            token_count: None,
            turn_id: None,
            usage_only: false,
        }
    }
}

/// An entry as read back from an export: every field kept, no parent.
impl From<crate::types::Entry> for ImportedEntry {
    fn from(e: crate::types::Entry) -> Self {
        ImportedEntry {
            message_id: e.message_id,
            parent_message_id: None,
            role: e.role,
            content: e.content,
            created_at: e.created_at,
            tool_calls: e.tool_calls,
            tool_call_id: e.tool_call_id,
            turn_usage: e.turn_usage,
            tool_status: e.tool_status,
            reasoning: e.reasoning,
            attachments: e.attachments,
            kind: e.kind,
            token_count: e.token_count,
            turn_id: e.turn_id,
            usage_only: false,
        }
    }
}

/// One session read from a log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedSession {
    /// The provider's session or thread id: what `claude --resume` / `codex resume` take.
    pub provider_session_id: String,
    /// The working directory the agent ran in.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The model, when the log names one.
    #[serde(default)]
    pub model: Option<String>,
    /// The agent's version.
    #[serde(default)]
    pub version: Option<String>,
    /// The git branch, when the log names one.
    #[serde(default)]
    pub git_branch: Option<String>,
    /// When the session started (ms since the Unix epoch).
    pub started_at: u64,
    /// For a branch of another session in the same log: where it leaves it.
    #[serde(default)]
    pub fork_of: Option<ImportedFork>,
    /// For a sub-agent's session: the session that spawned it.
    #[serde(default)]
    pub spawned_by: Option<ImportedSpawn>,
    /// The session's title, when the log gives one.
    #[serde(default)]
    pub title: Option<String>,
    /// The entries, in log order.
    pub entries: Vec<ImportedEntry>,
    /// For a Spool export: the exported session's record, lineage and summaries, which
    /// [`import_session`] restores.
    #[serde(default)]
    pub exported: Option<Box<ImportedExport>>,
}

/// What a Spool export holds beyond its entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedExport {
    /// The exported session's record, as it was (its key, identity, status, model,
    /// configuration, metadata, counters and costs).
    pub session: Session,
    /// Its lineage (parent key, fork point), as it was.
    #[serde(default)]
    pub lineage: BranchLineage,
    /// Its compaction summaries, oldest first, each with the entries it archived.
    #[serde(default)]
    pub summaries: Vec<ImportedSummary>,
    /// What the session's usage counters hold beyond what its entries account for
    /// (usage recorded apart from entries): added once, when the import creates the
    /// session.
    #[serde(default)]
    pub unaccounted: Unaccounted,
}

/// A compaction summary of a Spool export and the part of the transcript it archived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedSummary {
    /// The summary record, as it was.
    pub summary: Summary,
    /// The newest entry it archived (entries up to and including it are archived once
    /// it is restored); `None` when the export does not hold that entry.
    #[serde(default)]
    pub through_message_id: Option<String>,
    /// How many of the export's entries it archived (after the previous one's).
    #[serde(default)]
    pub archived: u64,
}

/// Usage counters of an exported session not accounted for by its entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unaccounted {
    /// Of `input_tokens`.
    pub input_tokens: u64,
    /// Of `output_tokens`.
    pub output_tokens: u64,
    /// Of `cache_read`.
    pub cache_read: u64,
    /// Of `cache_write`.
    pub cache_write: u64,
    /// Of `total_tokens`.
    pub total_tokens: u64,
}

impl ImportedSession {
    /// A session of `provider_session_id` with nothing else known and no entries.
    pub fn new(provider_session_id: impl Into<String>) -> Self {
        ImportedSession {
            provider_session_id: provider_session_id.into(),
            cwd: None,
            model: None,
            version: None,
            git_branch: None,
            started_at: 0,
            fork_of: None,
            spawned_by: None,
            title: None,
            entries: Vec::new(),
            exported: None,
        }
    }
}

/// Where a branch leaves the session it forks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedFork {
    /// The session it branches from.
    pub provider_session_id: String,
    /// The last message the two share.
    pub after_message_id: String,
}

/// The session that spawned a sub-agent's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedSpawn {
    /// The parent's provider session id (as in its [`ImportedSession`]).
    pub provider_session_id: String,
    /// The parent's tool call that started the sub-agent, when the log says.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// What a parser read from one log file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedLog {
    /// The format.
    pub format: ImportFormat,
    /// The sessions in the log: its own session first, then (Claude Code) the branches
    /// of its rewinds and its sub-agents' sessions, each after the session it forks or
    /// that spawned it; empty when the log held no message.
    pub sessions: Vec<ImportedSession>,
    /// Lines read (blank lines excluded).
    pub lines: u64,
    /// Lines of types Spool does not import, counted by type.
    pub skipped: BTreeMap<String, u64>,
    /// Lines that were not JSON objects (except a cut-off last line), by line number.
    pub invalid_lines: Vec<u64>,
    /// The last line, when it was cut off mid-write (no newline, not JSON): its number.
    pub truncated_tail: Option<u64>,
    /// Attachments described on imported entries (their bytes are not stored).
    #[serde(default)]
    pub attachments: u64,
    /// Bytes of those attachments that the log inlined and Spool did not store.
    #[serde(default)]
    pub attachment_bytes_not_stored: u64,
    /// The tool calls the log says started sub-agents (Claude Code), for the sub-agent
    /// files parsed after it ([`link_sub_agents`]).
    #[serde(default)]
    pub spawn_calls: SpawnCalls,
    /// Entries of an earlier slice given again because this slice reported their usage
    /// ([`parse_slice`]; an import updates them in place): counted in the sessions'
    /// entries, not new ones.
    #[serde(default)]
    pub repeated: u64,
}

impl ImportedLog {
    fn new(format: ImportFormat) -> Self {
        ImportedLog {
            format,
            sessions: Vec::new(),
            lines: 0,
            skipped: BTreeMap::new(),
            invalid_lines: Vec::new(),
            truncated_tail: None,
            attachments: 0,
            attachment_bytes_not_stored: 0,
            spawn_calls: SpawnCalls::default(),
            repeated: 0,
        }
    }

    fn skip(&mut self, kind: &str) {
        *self.skipped.entry(kind.to_owned()).or_insert(0) += 1;
    }
}

/// Moves the line numbers `log` recorded for a slice whose first line is line
/// `first_line + 1` of its file.
fn renumber(log: &mut ImportedLog, first_line: u64) {
    for line in &mut log.invalid_lines {
        *line += first_line;
    }
    if let Some(line) = &mut log.truncated_tail {
        *line += first_line;
    }
}

/// Where a log read a slice at a time stands between slices: the lines read so far and
/// what the parser carries from one slice to the next (a few lines' worth, whatever the
/// log's size). Start with `ParseCursor::default()` and hand each slice's cursor to the
/// next; hosts keep it as the JSON text [`parse_slice`] returns, without reading it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParseCursor {
    /// Lines (ended by a newline) of the slices parsed so far.
    pub lines: u64,
    /// The Codex parser's carry.
    #[serde(default)]
    codex: Option<codex::Carry>,
    /// The Claude Code parser's carry.
    #[serde(default)]
    claude: Option<claude::Carry>,
}

/// Whether logs of `format` can be parsed a slice at a time ([`parse_slice`]): Codex
/// rollouts and Claude Code logs can. A Spool export ends with its summaries, and is
/// parsed whole ([`parse`]).
///
/// What a cursor carries is a few lines' worth for a Codex rollout; for a Claude Code
/// log it grows with the lines read, by a few dozen bytes a line (its uuid and the
/// message it stands for: the tree that tells a rewind from a parallel tool call),
/// never by the lines themselves.
pub fn streams(format: ImportFormat) -> bool {
    matches!(format, ImportFormat::Codex | ImportFormat::ClaudeCode)
}

/// Parses the next slice of a log of `format` (one that [`streams`]): `text` is whole
/// lines, each ended by a newline, unless it is the `last` slice (the end of the file,
/// which may be a line cut short: `truncated_tail`). Line numbers are the file's.
/// The sessions hold the entries of this slice, and the usage of an earlier slice's
/// entry that this one reported (a Codex entry given again, a Claude Code
/// [`usage_only`](ImportedEntry::usage_only) entry; both counted in `repeated`), which
/// an import updates in place. A Claude Code session is also listed without entries
/// when what it was given as changed (a summary titled it, a later line named its
/// model). Imported slice after slice under the keys [`plan`] gives, they make what
/// importing the whole file makes. Exceptions, where the whole file decides from lines
/// a slice has not reached: a rollout whose `session_meta` comes only after a slice
/// with entries has those entries under the unnamed thread's key (`rollout`); a Claude
/// Code log whose first slice with messages names no `sessionId` takes its first
/// message's uuid as its session id; and a sub-agent's session is linked to the Task
/// call its log names by the time the session is first listed (by its first prompt
/// when the call's result comes later), and keeps that link.
pub fn parse_slice(
    format: ImportFormat,
    cursor: &mut ParseCursor,
    text: &str,
    last: bool,
) -> Result<ImportedLog, crate::Error> {
    if !streams(format) {
        return Err(crate::Error::invalid(
            "format",
            format!(
                "{} logs are parsed whole, not a slice at a time",
                format.agent_type()
            ),
        ));
    }
    if !last && !text.is_empty() && !text.ends_with('\n') {
        return Err(crate::Error::invalid(
            "text",
            "a slice that is not the last must end with a newline (whole lines only)",
        ));
    }
    let log = match format {
        ImportFormat::Codex => {
            let carry = cursor.codex.get_or_insert_with(Default::default);
            codex::parse_codex_slice(carry, cursor.lines, text, last)
        }
        _ => {
            let carry = cursor.claude.get_or_insert_with(Default::default);
            claude::parse_claude_slice(carry, cursor.lines, text, last)
        }
    };
    cursor.lines += text.lines().count() as u64;
    Ok(log)
}

/// Splits `text` into numbered JSON objects, recording blank, invalid and cut-off lines
/// in `log`.
fn json_lines(text: &str, log: &mut ImportedLog) -> Vec<(u64, serde_json::Map<String, Value>)> {
    let mut lines = JsonLines::new(text);
    std::iter::from_fn(|| lines.next(log)).collect()
}

/// [`json_lines`] a line at a time: a streamed slice then holds one parsed line at a
/// time, not all of them.
struct JsonLines<'a> {
    lines: std::iter::Peekable<std::iter::Enumerate<std::str::Lines<'a>>>,
    ends_cleanly: bool,
}

impl<'a> JsonLines<'a> {
    fn new(text: &'a str) -> Self {
        JsonLines {
            lines: text.lines().enumerate().peekable(),
            ends_cleanly: text.ends_with('\n'),
        }
    }

    /// The next object and its line number; blank, invalid and cut-off lines on the way
    /// are recorded in `log`.
    fn next(&mut self, log: &mut ImportedLog) -> Option<(u64, serde_json::Map<String, Value>)> {
        while let Some((i, line)) = self.lines.next() {
            let number = i as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            log.lines += 1;
            match crate::storage::record::parse_json(line.as_bytes()) {
                Ok(Value::Object(map)) => return Some((number, map)),
                _ if self.lines.peek().is_none() && !self.ends_cleanly => {
                    log.truncated_tail = Some(number);
                }
                _ => log.invalid_lines.push(number),
            }
        }
        None
    }
}

fn str_field<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

fn u64_field(map: &serde_json::Map<String, Value>, key: &str) -> u64 {
    map.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The text of a content value: a string, or the `text` parts of a list of blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => str_field(o, "text"),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// An attachment the log inlined as base64 (`data`, optionally a `data:` URL): its
/// decoded size and SHA-256. `None` when `data` is not base64; the caller reports it.
fn inline_attachment(kind: &str, media_type: Option<&str>, data: &str) -> Option<Attachment> {
    let (media_type, data) = match data.strip_prefix("data:") {
        Some(url) => {
            let (head, body) = url.split_once(',')?;
            let head = head.strip_suffix(";base64")?;
            (media_type.or((!head.is_empty()).then_some(head)), body)
        }
        None => (media_type, data),
    };
    let bytes = decode_base64(data)?;
    Some(bytes_attachment(kind, media_type, &bytes))
}

/// An attachment whose bytes the log held: their size and SHA-256.
fn bytes_attachment(kind: &str, media_type: Option<&str>, bytes: &[u8]) -> Attachment {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(bytes);
    let sha256 = digest.iter().map(|b| format!("{b:02x}")).collect();
    Attachment {
        kind: kind.to_owned(),
        media_type: media_type.map(str::to_owned),
        size: bytes.len() as u64,
        sha256: Some(sha256),
        source: None,
    }
}

/// `text` without ANSI escape sequences (colours, cursor moves, OSC titles and links):
/// what a terminal would show of hook and command output.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST (ESC backslash).
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{07}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                // Any other escape is two characters.
                _ => {}
            },
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Standard base64, padded.
fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard or URL-safe base64, padded or not, ASCII whitespace ignored.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    let mut padding = false;
    for b in text.bytes() {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding = true;
                continue;
            }
            b if b.is_ascii_whitespace() => continue,
            _ => return None,
        };
        if padding {
            return None;
        }
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Left-over bits must be padding zeros; a lone 6-bit group is not base64.
    (bits < 6 && acc == 0).then_some(out)
}

#[cfg(test)]
#[path = "tests/import.rs"]
mod tests;
