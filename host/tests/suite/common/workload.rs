//! The bounded-memory workload of issue 17, shared by `bounded_memory.rs` (through
//! `common`) and `benches/size_ladder.rs` (which includes this file with `#[path]`): a large
//! coding-agent session built fast, and the operations run on it — each through the
//! component, each checked for what it must have done.
//!
//! The session is built with `commit_turn` (up to 4 MiB per commit) through an
//! instance with the default limits. Each operation is meant to run on a fresh
//! [`Instance`] (guest memory never shrinks, so its peak is the operation's); its checks
//! read through another instance (the *verifier*, default limits), so they cost the
//! measured one nothing.
#![allow(dead_code, unreachable_pub)]

use spool::compaction::{CompactRequest, CompactionConfig, CompactionResult};
use spool::import::{ImportFormat, ImportRequest, ImportedEntry, ImportedSession};
use spool::{
    AppendRequest, BranchInfo, BranchRequest, Entry, Intent, IntentOutcome, Order, Page,
    PageRequest, Role, Session, TurnCommit, ops,
};
use spool_host::{Error, Instance};

/// The workspace everything runs in.
pub const WS: &str = "ladder";
/// The large session.
pub const PARENT: &str = "agent:ladder:main";
/// Its session id.
pub const PARENT_ID: &str = "ladder-parent";
/// The branch of it (made after the compactions, then left alone by the parent's delete).
pub const BRANCH: &str = "agent:ladder:branch";
/// Where the exported transcript is imported.
pub const IMPORTED: &str = "agent:ladder:imported";
/// The newest page read.
pub const PAGE: u32 = 100;
/// The context windows of the two compactions (tokens): realistic model windows, so
/// what a compaction keeps (and returns) stays small whatever the session's size.
pub const WINDOWS: [u64; 2] = [128_000, 32_000];
/// An import call carries at most this many bytes of content (and at most
/// [`spool::import::MAX_IMPORT_ENTRIES`] entries; a larger entry goes alone): what a host
/// importing in bounded memory does. (The CLI slices by entry count only.)
pub const IMPORT_SLICE_BYTES: usize = 1024 * 1024;
/// The time of the first entry (ms).
pub const T0: u64 = 1_700_000_000_000;
/// The time of the first operation (ms): after every entry built.
pub const T_OPS: u64 = T0 + 1_000_000_000;

/// The operations, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// One entry appended to the large session.
    Append,
    /// Its newest page of [`PAGE`] entries.
    NewestPage,
    /// The first compaction (window `WINDOWS[0]`).
    Compact1,
    /// The second one (window `WINDOWS[1]`): a session that already has an archive.
    Compact2,
    /// The canonical transcript: every entry ever appended, compacted ones included.
    Export,
    /// The exported transcript written as a new session with `import_session`.
    Import,
    /// A branch of the whole history.
    Branch,
    /// Deleting the parent while the branch reads its history: the branch gets its copy.
    DeleteParent,
    /// `reset_same_key` of the branch: its archive holds the whole canonical transcript.
    Reset,
}

/// Every operation, in the order they run.
pub const OPS: [Op; 9] = [
    Op::Append,
    Op::NewestPage,
    Op::Compact1,
    Op::Compact2,
    Op::Export,
    Op::Import,
    Op::Branch,
    Op::DeleteParent,
    Op::Reset,
];

impl Op {
    /// Its name in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Op::Append => "append",
            Op::NewestPage => "newest page",
            Op::Compact1 => "compact #1",
            Op::Compact2 => "compact #2",
            Op::Export => "export",
            Op::Import => "import",
            Op::Branch => "branch",
            Op::DeleteParent => "delete parent",
            Op::Reset => "reset",
        }
    }

    /// The operation named `name`.
    pub fn parse(name: &str) -> Option<Op> {
        OPS.into_iter().find(|op| op.name() == name)
    }
}

/// What the large session holds: turns of four entries (a goal, an assistant message
/// with a tool call, the tool's output, the assistant's answer) of about `entry_bytes`
/// of content each, with `big_outputs` of the tool outputs `big_output_bytes` long,
/// spread over the history (never in the newest turns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Entries in the session as built.
    pub entries: usize,
    /// Content bytes of an ordinary entry.
    pub entry_bytes: usize,
    /// How many tool outputs are large.
    pub big_outputs: usize,
    /// The content bytes of each large one.
    pub big_output_bytes: usize,
}

impl Shape {
    /// The shape of about `total_bytes` of content (at least one turn).
    pub fn of_bytes(
        total_bytes: u64,
        entry_bytes: usize,
        big_outputs: usize,
        big_output_bytes: usize,
    ) -> Shape {
        let big = (big_outputs * big_output_bytes) as u64;
        let rest = total_bytes.saturating_sub(big);
        let ordinary = rest.div_ceil(entry_bytes as u64) as usize + big_outputs;
        let turns = ordinary.div_ceil(4).max(big_outputs + 1);
        Shape {
            entries: turns * 4,
            entry_bytes,
            big_outputs,
            big_output_bytes,
        }
    }

    fn turns(&self) -> usize {
        self.entries / 4
    }

    /// Whether turn `t`'s tool output is a large one.
    fn big_turn(&self, t: usize) -> bool {
        (1..=self.big_outputs).any(|k| k * self.turns() / (self.big_outputs + 1) == t)
    }

    /// The content bytes of the session as built.
    pub fn content_bytes(&self) -> u64 {
        (0..self.entries).map(|i| self.content_len(i) as u64).sum()
    }

    fn content_len(&self, i: usize) -> usize {
        if i % 4 == 2 && self.big_turn(i / 4) {
            self.big_output_bytes
        } else {
            self.entry_bytes
        }
    }

    /// The content of entry `i` (0-based; its id is `i + 1`).
    pub fn content(&self, i: usize) -> String {
        let t = i / 4;
        let file = format!("src/module{}/file{}.rs", t % 13, t % 29);
        // The facts compaction looks for recur as in real sessions: a goal now and
        // then, failures in some tool outputs, a few decisions, many file paths.
        let head = match i % 4 {
            0 if t.is_multiple_of(50) => format!("Goal: make step {t} pass in {file}."),
            0 => format!("Looked at {file} again; what does the test expect?"),
            1 => format!("Running `cargo test -p m{}` to check {file}.", t % 7),
            2 if t.is_multiple_of(5) => {
                format!("test step_{t} ... FAILED in {file}\nExit code 101")
            }
            2 => "test result: ok. 14 passed; 0 failed".to_owned(),
            _ if t.is_multiple_of(10) => format!("Decision: keep the parser in {file}."),
            _ => format!("Edited {file}."),
        };
        fill(head, self.content_len(i))
    }

    /// The append request of entry `i`.
    pub fn request(&self, i: usize) -> AppendRequest {
        let t = i / 4;
        let role = match i % 4 {
            0 => Role::User,
            2 => Role::Tool,
            _ => Role::Assistant,
        };
        let mut request = AppendRequest::new(role, self.content(i));
        request.message_id = Some(message_id(i));
        match i % 4 {
            1 => {
                request.tool_calls = Some(serde_json::json!([{
                    "id": format!("call_{t}"),
                    "type": "function",
                    "name": "bash",
                    "input": {"cmd": format!("cargo test -p m{}", t % 7)},
                }]));
            }
            2 => request.tool_call_id = Some(format!("call_{t}")),
            _ => {}
        }
        request
    }

    /// Entry `i` as an import reads it from a log (the log of what was built).
    pub fn imported(&self, i: usize) -> ImportedEntry {
        let request = self.request(i);
        let mut entry =
            ImportedEntry::new(message_id(i), request.role, request.content, T0 + i as u64);
        entry.tool_calls = request.tool_calls;
        entry.tool_call_id = request.tool_call_id;
        entry
    }
}

/// The message id of built entry `i`.
pub fn message_id(i: usize) -> String {
    format!("m-{i}")
}

/// The message id of the entry [`Op::Append`] adds.
pub const APPENDED_ID: &str = "m-appended";

/// The entry [`Op::Append`] adds.
pub fn appended() -> AppendRequest {
    let mut request = AppendRequest::new(
        Role::User,
        fill("Goal: one more step after the long session.".into(), 4096),
    );
    request.message_id = Some(APPENDED_ID.into());
    request
}

/// The log an export of the session returns when its newest id is `last`: the entries
/// built, then the appended one if it was appended — what [`Op::Import`] imports when
/// the export itself failed.
pub fn log(shape: &Shape, last: u64) -> impl Iterator<Item = ImportedEntry> + '_ {
    let extra = (last as usize > shape.entries).then(|| {
        let request = appended();
        ImportedEntry::new(
            APPENDED_ID,
            request.role,
            request.content,
            T0 + shape.entries as u64,
        )
    });
    (0..shape.entries).map(|i| shape.imported(i)).chain(extra)
}

/// `head`, then lines of filler text up to `len` bytes (ASCII).
fn fill(head: String, len: usize) -> String {
    const WORDS: &str = "The change keeps the existing behaviour and adds a regression test;\n\
        the public API stays as it was. The parser now checks the nesting depth\n\
        after pushing each item, so the last element of a nested list is kept.\n";
    let mut text = head;
    text.push('\n');
    while text.len() < len {
        let take = (len - text.len()).min(WORDS.len());
        text.push_str(&WORDS[..take]);
    }
    text.truncate(len);
    text
}

/// Builds the large session under [`PARENT`]: one `commit_turn` per at most 1,000
/// entries and 4 MiB of content (the most a turn commits).
pub fn build(spool: &mut Instance, shape: &Shape) -> Result<Session, Error> {
    spool.call(
        WS,
        ops::CreateSession {
            key: PARENT.into(),
            session_id: PARENT_ID.into(),
            now_ms: T0,
        },
    )?;
    let mut i = 0;
    let mut session = None;
    while i < shape.entries {
        let mut entries = Vec::new();
        let mut bytes = 0;
        while i < shape.entries
            && entries.len() < spool::provider_thread::MAX_TURN_ENTRIES
            && (entries.is_empty()
                || bytes + shape.content_len(i) <= spool::validate::MAX_CONTENT_BYTES)
        {
            bytes += shape.content_len(i);
            entries.push(shape.request(i));
            i += 1;
        }
        let turn = TurnCommit {
            entries,
            thread: None,
            expected_epoch: None,
        };
        let done = spool.call(
            WS,
            ops::CommitTurn {
                key: PARENT.into(),
                turn,
                now_ms: T0 + i as u64,
            },
        )?;
        session = Some(done.session);
    }
    Ok(session.expect("a shape has at least one turn"))
}

/// What an operation returned.
#[derive(Debug)]
pub enum Output {
    /// [`Op::Append`].
    Appended(Entry),
    /// [`Op::NewestPage`].
    Page(Page),
    /// [`Op::Compact1`], [`Op::Compact2`].
    Compacted(CompactionResult),
    /// [`Op::Export`].
    Exported(Vec<Entry>),
    /// [`Op::Import`]: the entries fed, and what the calls reported together.
    Imported {
        /// Entries handed to `import_session`.
        fed: u64,
        /// Calls made.
        calls: u64,
        /// Entries written.
        imported: u64,
        /// Whether the first call created the session.
        created: bool,
        /// The session after the last call.
        session: Session,
    },
    /// [`Op::Branch`].
    Branched(BranchInfo),
    /// [`Op::DeleteParent`].
    Deleted,
    /// [`Op::Reset`].
    Reset(IntentOutcome),
}

/// Runs `op` (any but [`Op::Import`], see [`import`]) on `spool`; `now_ms` is its time.
pub fn perform(op: Op, spool: &mut Instance, now_ms: u64) -> Result<Output, Error> {
    let compact = |spool: &mut Instance, window: u64| {
        let request = CompactRequest {
            context_window_tokens: window,
            config: CompactionConfig::default(),
            compaction_id: None,
            trigger_reason: Some("bounded-memory workload".into()),
            flush_receipt_status: None,
        };
        spool
            .call(
                WS,
                ops::Compact {
                    key: PARENT.into(),
                    request,
                    now_ms,
                },
            )
            .map(Output::Compacted)
    };
    match op {
        Op::Append => spool
            .call(
                WS,
                ops::AppendEntry {
                    key: PARENT.into(),
                    request: appended(),
                    now_ms,
                },
            )
            .map(Output::Appended),
        Op::NewestPage => spool
            .call(
                WS,
                ops::ReadPage {
                    key: PARENT.into(),
                    request: PageRequest {
                        order: Order::NewestFirst,
                        cursor: None,
                        limit: PAGE,
                    },
                },
            )
            .map(Output::Page),
        Op::Compact1 => compact(spool, WINDOWS[0]),
        Op::Compact2 => compact(spool, WINDOWS[1]),
        // Page by page, as `spool export` reads it (the harness keeps the entries, to
        // check them and import them).
        Op::Export => {
            let (mut entries, mut cursor) = (Vec::new(), None);
            loop {
                let request = PageRequest {
                    order: Order::OldestFirst,
                    cursor,
                    limit: spool::MAX_PAGE,
                };
                let page = spool.call(
                    WS,
                    ops::ReadCanonicalPage {
                        key: PARENT.into(),
                        request,
                    },
                )?;
                entries.extend(page.entries);
                cursor = page.next_cursor;
                if cursor.is_none() {
                    return Ok(Output::Exported(entries));
                }
            }
        }
        Op::Import => panic!("run the import with `workload::import`"),
        Op::Branch => {
            let mut request = BranchRequest::empty("ladder-branch");
            request.fork_transcript = true;
            spool
                .call(
                    WS,
                    ops::Branch {
                        parent_key: PARENT.into(),
                        child_key: BRANCH.into(),
                        request,
                        now_ms,
                    },
                )
                .map(Output::Branched)
        }
        Op::DeleteParent => spool
            .call(
                WS,
                ops::DeleteSession {
                    key: PARENT.into(),
                    expected_epoch: None,
                },
            )
            .map(|()| Output::Deleted),
        Op::Reset => spool
            .call(
                WS,
                ops::ApplyIntent {
                    key: BRANCH.into(),
                    intent: Intent::ResetSameKey,
                    session_id: "ladder-branch-2".into(),
                    now_ms,
                },
            )
            .map(Output::Reset),
    }
}

/// An exported entry as an import reads it back.
pub fn to_imported(entry: Entry) -> ImportedEntry {
    entry.into()
}

/// [`Op::Import`]: writes `entries` under [`IMPORTED`] in order, one `import_session`
/// call per slice of at most [`IMPORT_SLICE_BYTES`] of content and
/// [`spool::import::MAX_IMPORT_ENTRIES`] entries.
pub fn import(
    spool: &mut Instance,
    entries: impl IntoIterator<Item = ImportedEntry>,
    now_ms: u64,
) -> Result<Output, Error> {
    let mut entries = entries.into_iter().peekable();
    let (mut fed, mut calls, mut imported, mut created) = (0, 0, 0, false);
    let mut session = None;
    let mut started_at = None;
    while entries.peek().is_some() || calls == 0 {
        let mut slice = Vec::new();
        let mut bytes = 0;
        while let Some(next) = entries.peek() {
            let full = slice.len() == spool::import::MAX_IMPORT_ENTRIES
                || (!slice.is_empty() && bytes + next.content.len() > IMPORT_SLICE_BYTES);
            if full {
                break;
            }
            bytes += next.content.len();
            slice.extend(entries.next());
        }
        fed += slice.len() as u64;
        let started = *started_at.get_or_insert(slice.first().map_or(now_ms, |e| e.created_at));
        let request = ImportRequest {
            key: IMPORTED.into(),
            session_id: "ladder-imported".into(),
            format: ImportFormat::ClaudeCode,
            session: ImportedSession {
                cwd: Some("/src/ladder".into()),
                started_at: started,
                entries: slice,
                ..ImportedSession::new("ladder-export")
            },
            parent_key: None,
            prices: None,
        };
        let outcome = spool.call(WS, ops::ImportSession { request, now_ms })?;
        created |= outcome.created;
        imported += outcome.imported;
        calls += 1;
        session = Some(outcome.session);
    }
    Ok(Output::Imported {
        fed,
        calls,
        imported,
        created,
        session: session.expect("at least one call"),
    })
}

/// The sessions as they were before an operation (read by the verifier).
#[derive(Debug, Clone, Default)]
pub struct Before {
    /// [`PARENT`].
    pub parent: Option<Session>,
    /// [`BRANCH`].
    pub branch: Option<Session>,
    /// [`IMPORTED`].
    pub imported: Option<Session>,
}

/// Reads the session under `key`.
pub fn session(verifier: &mut Instance, key: &str) -> Result<Option<Session>, String> {
    verifier
        .call(WS, ops::GetSession { key: key.into() })
        .map_err(|e| format!("cannot read {key}: {e}"))
}

impl Before {
    /// Reads them.
    pub fn read(verifier: &mut Instance) -> Result<Before, String> {
        Ok(Before {
            parent: session(verifier, PARENT)?,
            branch: session(verifier, BRANCH)?,
            imported: session(verifier, IMPORTED)?,
        })
    }
}

macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err(format!($($why)+));
        }
    };
}

fn needs(session: &Option<Session>, key: &str) -> Result<Session, String> {
    session
        .clone()
        .ok_or_else(|| format!("{key} did not exist before the operation"))
}

/// Checks that `op`, which returned `output`, did what it must, on a session of `shape`
/// that was `before` as it is before the operation; returns a short account of it.
pub fn check(
    op: Op,
    shape: &Shape,
    before: &Before,
    output: &Output,
    verifier: &mut Instance,
) -> Result<String, String> {
    match (op, output) {
        (Op::Append, Output::Appended(entry)) => {
            let parent = needs(&before.parent, PARENT)?;
            ensure!(
                entry.id == parent.last_entry_id + 1,
                "appended id {} after {}",
                entry.id,
                parent.last_entry_id
            );
            let after = needs(&session(verifier, PARENT)?, PARENT)?;
            ensure!(
                after.entry_count == parent.entry_count + 1,
                "entry count {} → {}",
                parent.entry_count,
                after.entry_count
            );
            Ok(format!("id {}", entry.id))
        }
        (Op::NewestPage, Output::Page(page)) => {
            let parent = needs(&before.parent, PARENT)?;
            let want = parent.entry_count.min(u64::from(PAGE));
            ensure!(
                page.entries.len() as u64 == want,
                "{} entries, want {want}",
                page.entries.len()
            );
            let ids: Vec<u64> = page.entries.iter().map(|e| e.id).collect();
            ensure!(
                ids.first() == Some(&parent.last_entry_id),
                "newest id {:?}, want {}",
                ids.first(),
                parent.last_entry_id
            );
            ensure!(
                ids.windows(2).all(|w| w[0] > w[1]),
                "ids not newest first: {ids:?}"
            );
            Ok(format!("{} entries", ids.len()))
        }
        (Op::Compact1 | Op::Compact2, Output::Compacted(result)) => {
            let parent = needs(&before.parent, PARENT)?;
            ensure!(
                result.skip_reason.is_none(),
                "skipped: {:?}",
                result.skip_reason
            );
            ensure!(result.removed_count > 0, "removed nothing");
            let after = needs(&session(verifier, PARENT)?, PARENT)?;
            ensure!(
                after.entry_count + result.removed_count == parent.entry_count,
                "entry count {} → {} after removing {}",
                parent.entry_count,
                after.entry_count,
                result.removed_count
            );
            ensure!(
                result.kept_entries.len() as u64 == after.entry_count,
                "kept {} entries, the session holds {}",
                result.kept_entries.len(),
                after.entry_count
            );
            ensure!(
                result.tokens_after < result.tokens_before,
                "tokens {} → {}",
                result.tokens_before,
                result.tokens_after
            );
            Ok(format!(
                "removed {}, kept {}",
                result.removed_count,
                result.kept_entries.len()
            ))
        }
        (Op::Export, Output::Exported(entries)) => {
            let parent = needs(&before.parent, PARENT)?;
            check_canonical(shape, entries, parent.last_entry_id)?;
            let bytes: usize = entries.iter().map(|e| e.content.len()).sum();
            Ok(format!("{} entries, {}", entries.len(), mib(bytes as u64)))
        }
        (
            Op::Import,
            Output::Imported {
                fed,
                calls,
                imported,
                created,
                session,
            },
        ) => {
            let parent = needs(&before.parent, PARENT)?;
            ensure!(before.imported.is_none(), "{IMPORTED} existed before");
            ensure!(*created, "the import did not create {IMPORTED}");
            ensure!(
                *fed == parent.last_entry_id,
                "fed {fed} entries, the export holds {}",
                parent.last_entry_id
            );
            ensure!(
                *imported == *fed && session.entry_count == *fed,
                "imported {imported} of {fed}, the session counts {}",
                session.entry_count
            );
            let stored = needs(&self::session(verifier, IMPORTED)?, IMPORTED)?;
            ensure!(
                stored.entry_count == *fed,
                "{IMPORTED} counts {} entries, want {fed}",
                stored.entry_count
            );
            Ok(format!("{imported} entries in {calls} calls"))
        }
        (Op::Branch, Output::Branched(branch)) => {
            let parent = needs(&before.parent, PARENT)?;
            ensure!(
                branch.lineage.parent_session_key.as_deref() == Some(PARENT)
                    && branch.lineage.forked_from_parent,
                "lineage {:?}",
                branch.lineage
            );
            ensure!(
                branch.session.entry_count == parent.entry_count,
                "the branch counts {} entries, its parent {}",
                branch.session.entry_count,
                parent.entry_count
            );
            Ok(format!("{} entries shared", branch.session.entry_count))
        }
        (Op::DeleteParent, Output::Deleted) => {
            let parent = needs(&before.parent, PARENT)?;
            let branch = needs(&before.branch, BRANCH)?;
            ensure!(
                session(verifier, PARENT)?.is_none(),
                "{PARENT} still exists"
            );
            let after = needs(&session(verifier, BRANCH)?, BRANCH)?;
            ensure!(
                after.entry_count == branch.entry_count,
                "the branch counts {} entries, {} before",
                after.entry_count,
                branch.entry_count
            );
            let (read, newest) = read_all(verifier, BRANCH)?;
            ensure!(
                read == branch.entry_count && newest == parent.last_entry_id,
                "the branch reads {read} entries up to id {newest}, want {} up to {}",
                branch.entry_count,
                parent.last_entry_id
            );
            Ok(format!("the branch reads its {read} entries"))
        }
        (Op::Reset, Output::Reset(outcome)) => {
            let branch = needs(&before.branch, BRANCH)?;
            let session = &outcome.session;
            ensure!(outcome.rotated, "not rotated");
            ensure!(
                session.session_id != branch.session_id && session.epoch == branch.epoch + 1,
                "identity {} epoch {} → {} epoch {}",
                branch.session_id,
                branch.epoch,
                session.session_id,
                session.epoch
            );
            ensure!(
                session.entry_count == 0,
                "{} entries after the reset",
                session.entry_count
            );
            let archive = outcome.archive.as_ref().ok_or("no archive status")?;
            ensure!(archive.written, "archive not written: {:?}", archive.error);
            let archives = verifier
                .call(WS, ops::ListResetArchives { key: BRANCH.into() })
                .map_err(|e| format!("cannot list the archives: {e}"))?;
            let newest = archives.last().ok_or("no archive recorded")?;
            ensure!(
                newest.session_id == branch.session_id
                    && newest.transcript_entries == branch.last_entry_id,
                "the archive of {} holds {} entries, want {} of {}",
                newest.session_id,
                newest.transcript_entries,
                branch.last_entry_id,
                branch.session_id
            );
            Ok(format!(
                "archived {} entries, now {}",
                newest.transcript_entries, session.session_id
            ))
        }
        (op, output) => Err(format!("{} returned {output:?}", op.name())),
    }
}

/// A canonical transcript of the built session plus the appended entry: ids `1..=last`
/// in order, each built one as built.
pub fn check_canonical(shape: &Shape, entries: &[Entry], last: u64) -> Result<(), String> {
    ensure!(
        entries.len() as u64 == last,
        "{} entries, want {last}",
        entries.len()
    );
    for (n, entry) in entries.iter().enumerate() {
        check_canonical_entry(shape, n, entry)?;
    }
    Ok(())
}

/// Checks entry `n` (from 0) of the canonical transcript: the one built, or the
/// appended one after them.
pub fn check_canonical_entry(shape: &Shape, n: usize, entry: &Entry) -> Result<(), String> {
    ensure!(
        entry.id == n as u64 + 1,
        "entry {n} has id {}, want {}",
        entry.id,
        n + 1
    );
    if n < shape.entries {
        ensure!(
            entry.message_id == message_id(n) && entry.content == shape.content(n),
            "entry {} ({}) is not the one built",
            entry.id,
            entry.message_id
        );
    } else {
        ensure!(
            entry.message_id == APPENDED_ID,
            "entry {} is {}, want the appended one",
            entry.id,
            entry.message_id
        );
    }
    Ok(())
}

/// Reads the session's whole transcript page by page, oldest first; returns how many
/// entries it holds and the newest id (ids must strictly increase).
pub fn read_all(verifier: &mut Instance, key: &str) -> Result<(u64, u64), String> {
    let (mut count, mut newest, mut cursor) = (0, 0, None);
    loop {
        let page = verifier
            .call(
                WS,
                ops::ReadPage {
                    key: key.into(),
                    request: PageRequest {
                        order: Order::OldestFirst,
                        cursor,
                        limit: 200,
                    },
                },
            )
            .map_err(|e| format!("cannot read a page of {key}: {e}"))?;
        for entry in &page.entries {
            ensure!(entry.id > newest, "id {} after {newest} in {key}", entry.id);
            newest = entry.id;
            count += 1;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((count, newest)),
        }
    }
}

/// `bytes` in MiB, one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
