//! The `spool` command line: its arguments (clap), the subcommands (one module each) and
//! how results are printed. Only this binary links clap and indicatif.
//!
//! Exit codes: 0 success, 1 the operation failed (printed as `error[<code>]: <message>`
//! on stderr), 2 usage error. Output to a closed pipe (`spool list | head -1`) ends the
//! program quietly with 0.

/// `println!` for the CLI's output: a closed stdout ends the program quietly instead of
/// panicking (see [`write_stdout`]).
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for the CLI's output; see [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

mod compaction;
mod completions;
mod demo;
mod entries;
mod fork;
mod lifecycle;
mod parse;
mod progress;
mod render;
mod resume;
mod search;
mod states;
mod thread;
mod usage;
// Importers and export (issue 7).
mod export;
mod import;
mod import_opencode;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use serde::Serialize;
use spool::{AppendRequest, Role, SessionStatus, TurnUsage};
use spool_host::{Durability, Error, Spool, Transcript};

use crate::cli::compaction::{CompactArgs, CompactionIdArgs, PersistArgs, RepairsArgs, StatusArgs};
use crate::cli::entries::{EntryArgs, PopArgs, RollbackArgs, TruncateArgs};
use crate::cli::fork::{BranchArgs, ForkCommand, TurnCommand};
use crate::cli::lifecycle::{
    CapArgs, FencedKeyArgs, FinishArgs, IntentArgs, KeyArgs, PruneArgs, UpdateArgs,
};
use crate::cli::parse::parse_json;
use crate::cli::resume::{ResumeArgs, RunsCommand};
use crate::cli::states::StatesCommand;
use crate::cli::thread::ThreadCommand;

/// The subcommands by topic (clap lists them in one block; `spool --help` shows these
/// instead, and a test checks that every subcommand appears here).
const COMMANDS: &str = "\
Sessions:
  create      Create a session under KEY with a fresh session id
  append      Append entries (user, assistant, tool or system) to a transcript, one commit
  show        Show a session and its whole transcript
  list        List sessions, most recently updated first (filter by agent, status)
  usage       Tokens and estimated cost by day, model and session (--since, --prices)
  search      Full-text search of every transcript: words, \"phrases\", pref*, filters
  index       Index history from before search (an older database), resumably
  count       Count the transcript entries of a session
  entry       Show one transcript entry by its message id
  update      Change model, channel, model config or metadata
  intent      Apply an intent: continue, new-chat, reset-same-key
  reset       Archive the transcript, then rotate the session's identity
  resume      Mark a session as in use; or resume selection: select, record, role
  finish      Finish a session (done, or failed)
  archive     Finish a session as done
  delete      Delete a session and everything it owns
  truncate    Keep only the newest entries of a session
  rollback    Drop the last turns of a session
  pop         Remove the newest entry of a session and print it
  prune       Delete sessions idle longer than --max-age
  cap         Keep the most recently updated sessions, delete the rest
  states      Context states: list, save, invalidate

Compaction:
  compact         Summarize the oldest entries when over --window (coverage-checked)
  compact-result  Store a compaction an agent produced itself
  canonical       Every entry ever appended, in order (archived and active)
  summaries       The compaction summaries of a session
  repairs         Degraded compactions waiting for repair
  repair          Set the repair status of a compaction
  receipt         Back-fill the flush receipt of a compaction
  preimage        The entries a compaction archived

Branches and provider forks:
  branch      Branch a session: empty, whole history (--fork) or before a message
  tree        The family of a session, from its root
  turn        Turns of a session: start, settle, interrupt, list
  turns       The latest and the active turn of a session
  fork        Provider fork operations: run, status, ack, continue, recover

External agents (Codex, Claude Code, opencode):
  runs        Agent runs recorded for resume selection: list
  thread      Provider thread bindings: plan, commit-turn
  import      Import Claude Code sessions, Codex rollouts or Spool exports
  export      Export a session as JSON Lines (re-importable) or Markdown

Other:
  demo         Run a scripted coding-agent session and show each step
  completions  Print a shell completion script (bash, zsh, fish, powershell, elvish)
  call         Run any API call given as JSON (operations without a subcommand)
  component    Write the embedded Spool WebAssembly component
  help         Print this message or the help of a subcommand";

const EXAMPLES: &str = "\
Examples:
  spool demo                                     a scripted agent session, step by step
  spool create agent:main:main
  spool append agent:main:main --role user --content 'Fix the failing test' --token-count 6
  spool show agent:main:main --json
  spool list --agent main --status running
  spool search '\"failing test\" pars*' --role tool --since 7d
  spool compact agent:main:main --window 8000    built-in summarizer, coverage report
  spool compact agent:main:main --window 8000 --summarizer-cmd 'my-llm --summarize'
  spool branch agent:main:main agent:main:alt --fork        share the history (O(1))
  spool branch agent:main:main agent:main:retry --before MESSAGE_ID
  spool tree agent:main:alt                      the family, from its root
  spool fork run agent:main:main --target agent:main:child --request-id r1 --provider-cmd ./fork.sh
  spool resume record --agent codex --task t1 --status done --token thread-abc --project p1
  spool resume select --agent codex --project p1  which thread a new task resumes
  spool import claude-code ~/.claude/projects/-home-me-myproject/
  spool import codex ~/.codex/sessions/
  spool import pi ~/.pi/agent/sessions/          also: gemini ~/.gemini/tmp/, opencode ~/.local/share/opencode/
  spool usage --since 7d                         tokens and estimated cost per day and model
  spool export agent:main:main --out session.jsonl   then: spool import spool session.jsonl
  spool export agent:main:main --format markdown > transcript.md
  spool --db ~/agents.db --workspace team list --json
  spool completions bash > ~/.local/share/bash-completion/completions/spool

Every command takes --json for machine-readable output (export writes JSON Lines).
The database is ./spool.db unless --db or SPOOL_DB says otherwise: a file path, or a
PostgreSQL URL (postgres://user@host:5432/spool); --workspace (or SPOOL_WORKSPACE)
picks an isolated set of sessions inside it.

Exit status:
  0  success
  1  the operation failed: `error[<code>]: <message>` on stderr (codes: not_found,
     conflict, invalid_argument, stale_epoch, corruption, storage, unknown,
     resource_limit, internal, io)
  2  usage error";

/// `spool --help`: the description, usage, the subcommands by topic, the options, the
/// examples and exit codes.
const HELP_TEMPLATE: &str = "\
{name} {version}
{about-with-newline}
{usage-heading} {usage}

{before-help}
Options:
{options}
{after-help}";

/// The description of `spool --help`, wrapped for an 80-column terminal.
const LONG_ABOUT: &str = "\
Spool: durable sessions and transcripts for AI coding agents.

Spool keeps coding-agent sessions in a SQLite database: transcripts with token
accounting, compaction that never silently drops a goal, path, tool call or
failure, branches that share their parent's history, provider forks, resume
selection for Codex, Claude Code and opencode, and import and export of their
logs. The session rules run inside the embedded Spool WebAssembly component,
the same one agent UIs run in the browser.";

/// Spool: durable sessions and transcripts for AI coding agents.
#[derive(Debug, Parser)]
#[command(
    name = "spool",
    long_about = LONG_ABOUT,
    version,
    propagate_version = true,
    help_template = HELP_TEMPLATE,
    before_help = COMMANDS,
    after_help = EXAMPLES
)]
struct Cli {
    /// The database: a SQLite file (created if missing), or a PostgreSQL database as
    /// `postgres://user[:password]@host[:port]/database` (or `postgresql://`).
    #[arg(
        long,
        global = true,
        env = "SPOOL_DB",
        default_value = "./spool.db",
        value_name = "PATH|URL"
    )]
    db: PathBuf,

    /// The workspace: an isolated set of sessions inside the database.
    #[arg(
        long,
        global = true,
        env = "SPOOL_WORKSPACE",
        default_value = "default",
        value_name = "W"
    )]
    workspace: String,

    /// Where `reset` keeps the archive of the replaced generation (default: a
    /// `spool-archives` directory beside the database).
    #[arg(long, global = true, env = "SPOOL_ARCHIVE_DIR", value_name = "DIR")]
    archive_dir: Option<PathBuf>,

    /// When a commit is on disk: `full`, when it returns; `normal`, at the next
    /// checkpoint (it survives the process being killed, but an operating-system crash
    /// or power loss may undo the newest commits).
    #[arg(
        long,
        global = true,
        env = "SPOOL_DURABILITY",
        default_value = "full",
        value_name = "WHEN"
    )]
    durability: DurabilityArg,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a session under KEY (e.g. `agent:main:main`) with a fresh session id.
    Create {
        /// The session key; fails with `conflict` if it is in use.
        key: String,
        /// Print the session as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Append entries to the transcript of the session under KEY, in one commit.
    ///
    /// One `--content` appends one entry; several append one entry each, with the same
    /// `--role` and `--turn-id`, all or none; `--jsonl FILE` appends one entry per line
    /// (an append request, e.g. `{"role":"tool","content":"…","tool_call_id":"c1"}`), all
    /// or none. At most 1000 entries per call.
    #[command(verbatim_doc_comment)]
    Append {
        /// The session key.
        key: String,
        /// Who wrote the entries.
        #[arg(long, value_enum, required_unless_present = "jsonl")]
        role: Option<RoleArg>,
        /// The text of an entry (repeat for several); `-` reads it from stdin.
        #[arg(long, required_unless_present_any = ["jsonl", "stream"], conflicts_with = "jsonl")]
        content: Vec<String>,
        /// A JSON Lines file of append requests, one entry per line (`-`: stdin).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["role", "turn_id"])]
        jsonl: Option<String>,
        /// Token count reported by the model.
        #[arg(long, value_name = "N")]
        token_count: Option<u64>,
        /// A stable message id (derived from the session id when absent).
        #[arg(long, value_name = "ID")]
        message_id: Option<String>,
        /// The turn the entry belongs to.
        #[arg(long, value_name = "T")]
        turn_id: Option<String>,
        /// The tool call a `tool` entry answers.
        #[arg(long, value_name = "ID")]
        tool_call_id: Option<String>,
        /// Tool calls made by an assistant entry, as JSON.
        #[arg(long, value_name = "JSON", value_parser = parse_json)]
        tool_calls: Option<serde_json::Value>,
        /// The model of the turn usage reported with this entry (accounted as input/output
        /// tokens, not in total tokens; its cost is estimated at the built-in price
        /// table's price of the model, see `spool usage`).
        #[arg(long, value_name = "M", requires_all = ["input_tokens", "output_tokens"])]
        usage_model: Option<String>,
        /// Prompt tokens of the turn usage (with `--usage-model`).
        #[arg(long, value_name = "N", requires = "usage_model")]
        input_tokens: Option<u64>,
        /// Completion tokens of the turn usage (with `--usage-model`).
        #[arg(long, value_name = "N", requires = "usage_model")]
        output_tokens: Option<u64>,
        /// Prompt tokens read from the provider's cache (with `--usage-model`).
        #[arg(long, value_name = "N", requires = "usage_model")]
        cache_read_tokens: Option<u64>,
        /// Prompt tokens written to the provider's cache (with `--usage-model`).
        #[arg(long, value_name = "N", requires = "usage_model")]
        cache_write_tokens: Option<u64>,
        /// How the tool call a `tool` entry answers ended.
        #[arg(long, value_enum)]
        tool_status: Option<ToolStatusArg>,
        /// The model's reasoning behind an assistant entry.
        #[arg(long, value_name = "TEXT")]
        reasoning: Option<String>,
        /// Stream the entry's content from stdin as it arrives: begin it in progress,
        /// write what arrived so far every --every-ms or --every-bytes (each a durable
        /// commit), settle it at the end of stdin (with the usage given). A writer killed
        /// midway leaves it in progress with what arrived; the next entry of another
        /// turn marks it incomplete.
        #[arg(long, conflicts_with_all = ["jsonl", "content"])]
        stream: bool,
        /// With --stream: the most time between two writes of what arrived.
        #[arg(long, value_name = "MS", default_value_t = 250, requires = "stream")]
        every_ms: u64,
        /// With --stream: write once this many new bytes arrived.
        #[arg(
            long,
            value_name = "BYTES",
            default_value_t = 1024,
            requires = "stream"
        )]
        every_bytes: usize,
        /// Print the appended entry as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the session under KEY and its whole transcript.
    ///
    /// The header's `tokens` is the transcript's size: the token counts writers gave
    /// with their entries, or for an imported session the estimate compaction uses
    /// (one token per four characters of each entry), marked `estimated`. `usage` is
    /// what the providers reported (input, output, cache read, cache write tokens).
    /// `cost` is in US dollars: `billed` as the writer reported it, `estimated` from
    /// usage at the built-in price table's prices (see `spool usage`); `source` says
    /// which (`none`, `billed`, `estimated`, `mixed`).
    #[command(verbatim_doc_comment)]
    Show {
        /// The session key.
        key: String,
        /// Print `{"session": …, "entries": […]}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List sessions, most recently updated first. TOKENS is the transcript's size as
    /// in `show` (`~`: an estimate, for an imported session).
    List {
        /// How many sessions to list (1 to 1000).
        #[arg(long, default_value_t = 20, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Continue after a previous page (its `next_cursor`).
        #[arg(long)]
        cursor: Option<String>,
        /// Only sessions of this agent id (the second segment of the key).
        #[arg(long, value_name = "A")]
        agent: Option<String>,
        /// Only sessions in this state.
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        /// Print the page as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The tokens and estimated cost of the workspace's sessions: a table per day (UTC),
    /// per model and per session, with their total.
    ///
    /// Tokens are what the providers reported with each response (`turn_usage`: input,
    /// output, cache read, cache write), counted once per response. Costs are estimates
    /// in US dollars: each response's tokens at its model's price per million tokens in
    /// the built-in price table (the repository's `data/prices.json`, each price with
    /// the day it was read and its source) or in `--prices FILE`; never a billed amount.
    /// Responses of a model without a price are counted with no cost, and the report
    /// names their models. A session's row is the usage its entries report (a
    /// branch's shared history is its parent's).
    #[command(verbatim_doc_comment)]
    Usage(usage::UsageArgs),
    /// Search the transcripts of every session of the workspace: a table of hits, best
    /// first (session key, entry id, role, time, snippet; matches in bold on a terminal).
    ///
    /// The query holds words (every one must match, prefix `pars*`), "phrases" and
    /// filters (`role:`, `tool:`, `has:error`, `session:`, `agent:`, `since:`, `until:`);
    /// the flags add filters. A branch's shared history is found once, under the session
    /// that owns it. A bad query is `invalid_argument` (exit status 1).
    Search(search::SearchArgs),
    /// Index history written before the search index existed (a database from an
    /// earlier release), so `search` finds all of it: a run of up to 1,024 entries per
    /// commit, a line of progress per run.
    ///
    /// Stop it at any time and run it again: it carries on where the index stops.
    /// Appends from other processes go on meanwhile. `search` says how many entries it
    /// could not search yet.
    Index(search::IndexArgs),
    /// Reset the session under KEY: archive its transcript, then rotate its identity
    /// (new session id, epoch + 1, counters zeroed, transcript emptied).
    ///
    /// The archive is a JSON file in the archive directory; if it cannot be written the
    /// reset still happens and says so.
    Reset(KeyArgs),
    /// Apply an intent to KEY: `continue`, `new-chat` or `reset-same-key`.
    Intent(IntentArgs),
    /// Mark the session under KEY as in use now; or, with a subcommand, resume selection
    /// for external agent CLIs: `select`, `record`, `role create|get|set|clear`.
    Resume(ResumeArgs),
    /// Change the model, channel, model config or metadata of the session under KEY.
    Update(UpdateArgs),
    /// Finish the session under KEY (`done`, or `failed` with `--failed`).
    Finish(FinishArgs),
    /// Archive the session under KEY: finish it as `done`.
    Archive(FencedKeyArgs),
    /// Delete the session under KEY and everything it owns.
    Delete(FencedKeyArgs),
    /// Delete every session idle longer than `--max-age`.
    Prune(PruneArgs),
    /// Keep the MAX most recently updated sessions, delete the rest.
    Cap(CapArgs),
    /// Print the number of transcript entries of the session under KEY.
    Count(KeyArgs),
    /// Show one transcript entry by its message id.
    Entry(EntryArgs),
    /// Keep only the newest `--keep` entries of the session under KEY.
    Truncate(TruncateArgs),
    /// Drop the last `--turns` turns of the session under KEY: every entry from the
    /// earliest of its last N user messages on.
    Rollback(RollbackArgs),
    /// Remove the newest entry of the session under KEY, whatever its role, in one
    /// commit, and print it.
    Pop(PopArgs),
    /// Compact the session under KEY when it exceeds `--window`: the oldest entries move
    /// to the canonical archive, replaced by a summary that keeps every obligation
    /// (goals, constraints, failures, files, tool ids, …) or reports the ones that do not
    /// fit in the window. A pending tool call or a failing tool result at the end stays
    /// raw; a compaction that would not shrink the context writes nothing.
    ///
    /// The built-in deterministic summarizer is used unless `--summarizer-cmd` names a
    /// command (any LLM CLI) that reads the text to summarize on stdin and prints the
    /// summary.
    Compact(CompactArgs),
    /// Store a compaction an agent produced itself: the summary, and the agent's version
    /// of the newest entries (`--kept-json`); the earlier entries are archived.
    CompactResult(PersistArgs),
    /// Show the canonical transcript of KEY: entries archived by compactions and the
    /// active ones, in the order they were appended.
    Canonical(KeyArgs),
    /// Show the compaction summaries of KEY, oldest first.
    Summaries(KeyArgs),
    /// List the degraded compactions (flush receipt `unsafe`) waiting for repair.
    Repairs(RepairsArgs),
    /// Set the repair status of a compaction (it leaves the repair queue).
    Repair(StatusArgs),
    /// Back-fill the flush receipt of a compaction (e.g. `--status safe`).
    Receipt(StatusArgs),
    /// Show the entries a compaction archived (its pre-image).
    Preimage(CompactionIdArgs),
    /// Context states saved for a session: `list`, `save`, `invalidate`.
    #[command(subcommand)]
    States(StatesCommand),
    /// External agent runs recorded for resume selection: `list`.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Provider thread bindings of a session: `plan`, `commit-turn`.
    #[command(subcommand)]
    Thread(ThreadCommand),
    /// Branch the session under PARENT into a new session CHILD (fresh session id):
    /// empty, or sharing the parent's history (`--fork`, `--before`) at constant cost.
    Branch(BranchArgs),
    /// Show the family of the session under KEY as a tree, from its root.
    Tree(KeyArgs),
    /// Provider fork operations: `run`, `status`, `ack`, `continue`, `recover`.
    #[command(subcommand)]
    Fork(ForkCommand),
    /// Turns of a session: `start`, `settle`, `interrupt`, `list`.
    #[command(subcommand)]
    Turn(TurnCommand),
    /// Show the latest and the active turn of the session under KEY.
    Turns(KeyArgs),
    /// Run a scripted coding-agent session (`agent:demo:main`) step by step: a failing
    /// test fixed with tool calls, a compaction with its coverage report, a branch and
    /// its tree, a recorded run and the resume selection it leads to.
    ///
    /// Running it again tells the same story: the previous demo sessions are deleted
    /// first.
    Demo {
        /// Print every step's result as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Print a completion script for SHELL to stdout.
    ///
    /// bash: `spool completions bash > ~/.local/share/bash-completion/completions/spool`
    ///
    /// zsh: `spool completions zsh > ~/.zfunc/_spool` (with `~/.zfunc` in `fpath`)
    ///
    /// fish: `spool completions fish > ~/.config/fish/completions/spool.fish`
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Run any API call given as data and print its result as JSON: the core's `Command`
    /// (`{"op": "get_session", "key": "agent:main:main"}` — the shape of the scenario
    /// vectors), performed through the component's typed export for its call. Reaches
    /// every operation, including those without a subcommand of their own (e.g.
    /// `fork_projection`, `claim_fork_provider_binding`); times and ids are not filled in.
    Call {
        /// The call as JSON, or `-` to read it from stdin.
        #[arg(value_name = "JSON", value_parser = parse_call)]
        command: Call,
    },
    /// Import agent session logs or Spool's own exports: `claude-code PATH…` (Claude
    /// Code), `codex PATH…` (Codex rollouts), `pi PATH…` (pi coding agent), `gemini
    /// PATH…` (Gemini CLI), `opencode PATH…` (its database, JSON files or exports),
    /// `spool PATH…` (files, or directories searched recursively for logs).
    ///
    /// Each session goes under `import:<agent>:<provider session id>` (an export under
    /// its exported key); importing again adds only new entries. Exit status 1 when a
    /// file cannot be read or imported.
    ///
    /// Logs give no size per entry: a session counts its transcript's tokens at the
    /// estimate compaction uses (one per four characters; `show` and `list` mark it).
    /// Each response's usage is counted as the log reports it, and its cost estimated
    /// in US dollars at the built-in price table's price of its model (or `--prices
    /// FILE`'s); `spool usage` reports both by day, model and session.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Export the session under KEY: as JSON Lines (a header with the session record and
    /// lineage, one entry per line, one `{"summary": …}` line per summary; `spool import
    /// spool` reads it back), as Markdown (`--format markdown`), or with `--archive` its
    /// reset archives.
    Export(export::ExportArgs),
    /// Write the embedded Spool WebAssembly component to PATH (or stdout).
    Component {
        /// Where to write the `.wasm` file; stdout when absent.
        path: Option<PathBuf>,
        /// With PATH: print `{"path": …, "bytes": …}` as JSON.
        #[arg(long, requires = "path")]
        json: bool,
    },
}

/// The role of an entry.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoleArg {
    /// The human.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
    /// A system message.
    System,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ToolStatusArg {
    /// It succeeded.
    Ok,
    /// It failed.
    Error,
    /// It was stopped before it finished.
    Cancelled,
}

impl From<ToolStatusArg> for spool::ToolStatus {
    fn from(status: ToolStatusArg) -> Self {
        match status {
            ToolStatusArg::Ok => spool::ToolStatus::Ok,
            ToolStatusArg::Error => spool::ToolStatus::Error,
            ToolStatusArg::Cancelled => spool::ToolStatus::Cancelled,
        }
    }
}

/// A session state to filter on.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum StatusArg {
    /// Open for appends.
    Running,
    /// Finished successfully.
    Done,
    /// Finished with a failure.
    Failed,
}

impl From<StatusArg> for SessionStatus {
    fn from(status: StatusArg) -> SessionStatus {
        match status {
            StatusArg::Running => SessionStatus::Running,
            StatusArg::Done => SessionStatus::Done,
            StatusArg::Failed => SessionStatus::Failed,
        }
    }
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Role {
        match role {
            RoleArg::User => Role::User,
            RoleArg::Assistant => Role::Assistant,
            RoleArg::Tool => Role::Tool,
            RoleArg::System => Role::System,
        }
    }
}

/// Runs the CLI: parses the arguments, performs the command, reports the outcome.
pub(crate) fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => usage_error(&e),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`spool export KEY | head`): nothing left to say.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error[{}]: {}", e.code(), e.message());
            ExitCode::FAILURE
        }
    }
}

/// Ends the program on a command line clap refused (or on `--help`, `--version`) the way
/// clap does, except that an argument it quotes is shortened: an error never echoes a
/// large input back.
fn usage_error(e: &clap::Error) -> ! {
    let plain = e.render().to_string();
    let short = spool::validate::shorten_quoted(&plain);
    if !e.use_stderr() || short == plain {
        e.exit();
    }
    eprint!("{short}");
    if !short.ends_with('\n') {
        eprintln!();
    }
    std::process::exit(e.exit_code());
}

/// Writes the CLI's output to stdout. A closed stdout (the reader of a pipe exited)
/// ends the program quietly with 0 — what `println!` would turn into a panic; any
/// other write failure ends it with 1 and `error[io]`.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error[io]: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// The argument of `spool call`.
#[derive(Debug, Clone)]
struct Call(spool::Command);

/// Parses `spool call`'s JSON at argument time: bad JSON is a usage error (exit 2).
fn parse_call(text: &str) -> Result<Call, String> {
    let text = if text == "-" {
        let mut input = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut input)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        input
    } else {
        text.to_owned()
    };
    spool::Command::from_json(&text)
        .map(Call)
        .map_err(|e| format!("{e} (a call is the core's `Command` as JSON)"))
}

/// `--durability`: SQLite's `synchronous` setting.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum DurabilityArg {
    /// `synchronous=FULL`: on disk when the command returns.
    Full,
    /// `synchronous=NORMAL`: handed to the operating system when the command returns.
    Normal,
}

impl From<DurabilityArg> for Durability {
    fn from(arg: DurabilityArg) -> Self {
        match arg {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        }
    }
}

fn open(cli: &Cli) -> Result<Spool, Error> {
    let builder = Spool::builder()
        .database(&cli.db)
        .durability(cli.durability.into())
        .workspace(&cli.workspace);
    match &cli.archive_dir {
        Some(dir) => builder.archive_dir(dir),
        None => builder,
    }
    .open()
}

fn json_text(value: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string_pretty(value).map_err(|e| {
        Error::spool(
            spool::ErrorCode::Internal,
            format!("cannot print JSON: {e}"),
        )
    })
}

/// Prints a JSON array `depth` levels deep one element at a time, exactly as
/// [`print_json`] would print it whole: the CLI streams transcripts of any size.
pub(crate) struct JsonArray {
    depth: usize,
    empty: bool,
}

impl JsonArray {
    /// Prints the opening bracket.
    pub(crate) fn open(depth: usize) -> JsonArray {
        out!("[");
        JsonArray { depth, empty: true }
    }

    /// Prints one element.
    pub(crate) fn push(&mut self, value: &impl Serialize) -> Result<(), Error> {
        let indent = "  ".repeat(self.depth + 1);
        let text = json_text(value)?.replace('\n', &format!("\n{indent}"));
        out!("{}\n{indent}{text}", if self.empty { "" } else { "," });
        self.empty = false;
        Ok(())
    }

    /// Prints the closing bracket.
    pub(crate) fn close(self) {
        if self.empty {
            out!("]");
        } else {
            out!("\n{}]", "  ".repeat(self.depth));
        }
    }
}

/// The pages of a transcript, the first read before anything is printed: a read that
/// fails at once (a missing session, a damaged transcript) prints nothing.
pub(crate) fn pages<'a>(
    spool: &'a mut Spool,
    key: &str,
    which: Transcript,
) -> Result<impl Iterator<Item = Result<Vec<spool::Entry>, Error>> + 'a, Error> {
    let mut pages = spool.pages(key, which);
    let first = pages.next().transpose()?;
    Ok(first.map(Ok).into_iter().chain(pages))
}

/// Prints every entry of the pages as a JSON array `depth` levels deep.
pub(crate) fn print_entries(
    pages: impl Iterator<Item = Result<Vec<spool::Entry>, Error>>,
    depth: usize,
) -> Result<(), Error> {
    let mut array = JsonArray::open(depth);
    for page in pages {
        for entry in page? {
            array.push(&entry)?;
        }
    }
    array.close();
    Ok(())
}

/// A `not_found` failure raised by the CLI itself (e.g. `show` of a missing key).
pub(crate) fn not_found(message: String) -> Error {
    Error::spool(spool::ErrorCode::NotFound, message)
}

pub(crate) fn print_json(value: &impl Serialize) -> Result<(), Error> {
    outln!("{}", json_text(value)?);
    Ok(())
}

fn run(cli: Cli) -> Result<(), Error> {
    match &cli.command {
        Command::Create { key, json } => {
            let session = open(&cli)?.create_session(key)?;
            if *json {
                print_json(&session)
            } else {
                out!("created {}", render::session(&session));
                Ok(())
            }
        }
        Command::Append {
            key,
            role,
            content,
            jsonl,
            token_count,
            message_id,
            turn_id,
            tool_call_id,
            tool_calls,
            usage_model,
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            tool_status,
            reasoning,
            stream,
            every_ms,
            every_bytes,
            json,
        } => {
            if let Some(path) = jsonl {
                let requests = entries::read_jsonl(path)?;
                return entries::appended(&open(&cli)?.append_entries(key, requests)?, key, *json);
            }
            let role: Role = role.map_or(Role::User, Into::into);
            let single = !matches!(
                (
                    token_count,
                    message_id,
                    tool_call_id,
                    tool_calls,
                    usage_model
                ),
                (None, None, None, None, None)
            ) || tool_status.is_some()
                || reasoning.is_some();
            if content.len() > 1 {
                if single {
                    return Err(Error::spool(
                        spool::ErrorCode::InvalidArgument,
                        "--token-count, --message-id, --tool-call-id, --tool-calls, \
                                  --usage-model, --tool-status and --reasoning describe one \
                                  entry: give one --content, or each entry its own line with \
                                  --jsonl FILE"
                            .into(),
                    ));
                }
                let requests = content
                    .iter()
                    .map(|text| {
                        let mut request = AppendRequest::new(role, read_content(text)?);
                        request.turn_id = turn_id.clone();
                        Ok(request)
                    })
                    .collect::<Result<Vec<_>, Error>>()?;
                return entries::appended(&open(&cli)?.append_entries(key, requests)?, key, *json);
            }
            let text = content.first().map(String::as_str).unwrap_or_default();
            let mut request = AppendRequest::new(role, read_content(text)?);
            request.turn_usage = usage_model.as_ref().map(|model| TurnUsage {
                cache_read_tokens: cache_read_tokens.unwrap_or(0),
                cache_write_tokens: cache_write_tokens.unwrap_or(0),
                ..TurnUsage::new(
                    model.clone(),
                    input_tokens.unwrap_or(0),
                    output_tokens.unwrap_or(0),
                )
            });
            request.tool_status = tool_status.map(Into::into);
            request.reasoning = reasoning.clone();
            request.token_count = *token_count;
            request.message_id = message_id.clone();
            request.turn_id = turn_id.clone();
            request.tool_call_id = tool_call_id.clone();
            request.tool_calls = tool_calls.clone();
            if *stream {
                let cadence = entries::Cadence {
                    every: std::time::Duration::from_millis(*every_ms),
                    bytes: *every_bytes,
                };
                let (entry, updates) =
                    entries::stream(&mut open(&cli)?, key, request, cadence, std::io::stdin())?;
                if *json {
                    return print_json(&entry);
                }
                outln!(
                    "settled #{} ({}) in {key}: {} bytes in {updates} update{}",
                    entry.id,
                    entry.message_id,
                    entry.content.len(),
                    if updates == 1 { "" } else { "s" }
                );
                return Ok(());
            }
            let entry = open(&cli)?.append_entry(key, request)?;
            if *json {
                print_json(&entry)
            } else {
                outln!("appended #{} ({}) to {key}", entry.id, entry.message_id);
                Ok(())
            }
        }
        Command::Show { key, json } => show(&mut open(&cli)?, key, *json),
        Command::List {
            limit,
            cursor,
            agent,
            status,
            json,
        } => {
            let status = status.map(Into::into);
            let list = open(&cli)?.list_sessions(*limit, cursor.clone(), agent.clone(), status)?;
            if *json {
                return print_json(&list);
            }
            if list.sessions.is_empty() {
                outln!("no sessions in workspace `{}`", cli.workspace);
                return Ok(());
            }
            out!("{}", render::table(&list.sessions));
            if let Some(next) = list.next_cursor {
                outln!("(more: spool list --limit {limit} --cursor {next})");
            }
            Ok(())
        }
        Command::Search(args) => search::run(&mut open(&cli)?, args, &cli.workspace),
        Command::Usage(args) => usage::run(&mut open(&cli)?, args),
        Command::Index(args) => search::index(&mut open(&cli)?, args, &cli.workspace),
        Command::Reset(args) => lifecycle::reset(&mut open(&cli)?, args),
        Command::Intent(args) => lifecycle::intent(&mut open(&cli)?, args),
        Command::Resume(args) => resume::run(&mut open(&cli)?, args),
        Command::Update(args) => lifecycle::update(&mut open(&cli)?, args),
        Command::Finish(args) => lifecycle::finish(&mut open(&cli)?, args),
        Command::Archive(args) => lifecycle::archive(&mut open(&cli)?, args),
        Command::Delete(args) => lifecycle::delete(&mut open(&cli)?, args),
        Command::Prune(args) => lifecycle::prune(&mut open(&cli)?, args),
        Command::Cap(args) => lifecycle::cap(&mut open(&cli)?, args),
        Command::Count(args) => entries::count(&mut open(&cli)?, args),
        Command::Entry(args) => entries::entry(&mut open(&cli)?, args),
        Command::Truncate(args) => entries::truncate(&mut open(&cli)?, args),
        Command::Rollback(args) => entries::rollback(&mut open(&cli)?, args),
        Command::Pop(args) => entries::pop(&mut open(&cli)?, args),
        Command::States(command) => states::run(&mut open(&cli)?, command),
        Command::Runs(command) => resume::runs(&mut open(&cli)?, command),
        Command::Thread(command) => thread::run(&mut open(&cli)?, command),
        Command::Compact(args) => compaction::compact(&mut open(&cli)?, args),
        Command::CompactResult(args) => compaction::persist(&mut open(&cli)?, args),
        Command::Canonical(args) => compaction::canonical(&mut open(&cli)?, args),
        Command::Summaries(args) => compaction::summaries(&mut open(&cli)?, args),
        Command::Repairs(args) => compaction::repairs(&mut open(&cli)?, args),
        Command::Repair(args) => compaction::repair(&mut open(&cli)?, args),
        Command::Receipt(args) => compaction::receipt(&mut open(&cli)?, args),
        Command::Preimage(args) => compaction::preimage(&mut open(&cli)?, args),
        Command::Branch(args) => fork::branch(&mut open(&cli)?, args),
        Command::Tree(args) => fork::tree(&mut open(&cli)?, args),
        Command::Fork(command) => fork::run(&mut open(&cli)?, command),
        Command::Turn(command) => fork::turn(&mut open(&cli)?, command),
        Command::Turns(args) => fork::turns(&mut open(&cli)?, args),
        Command::Demo { json } => demo::run(&mut open(&cli)?, &cli.db, *json),
        Command::Call { command } => print_json(&open(&cli)?.execute(&command.0)?),
        Command::Completions { shell } => {
            completions::write(*shell, &mut Cli::command());
            Ok(())
        }
        Command::Import(command) => import::run(
            &mut import::open(&cli.db, &cli.workspace, cli.durability.into())?,
            command,
        ),
        Command::Export(args) => export::run(&mut open(&cli)?, args),
        Command::Component { path, json } => {
            write_component(path.as_ref())?;
            match path {
                Some(path) if *json => print_json(&serde_json::json!({
                    "path": path,
                    "bytes": spool_host::COMPONENT.len(),
                })),
                Some(path) if !*json => {
                    outln!(
                        "wrote {} ({} bytes)",
                        path.display(),
                        spool_host::COMPONENT.len()
                    );
                    Ok(())
                }
                _ => Ok(()),
            }
        }
    }
}

fn show(spool: &mut Spool, key: &str, json: bool) -> Result<(), Error> {
    let session = spool
        .get_session(key)?
        .ok_or_else(|| not_found(format!("session not found: {key}")))?;
    // Page by page: the output of a session of any size, in bounded memory.
    let entries = pages(spool, key, Transcript::Active)?;
    if json {
        let head = json_text(&session)?.replace('\n', "\n  ");
        out!("{{\n  \"session\": {head},\n  \"entries\": ");
        print_entries(entries, 1)?;
        outln!("\n}}");
        return Ok(());
    }
    out!("{}", render::session(&session));
    for page in entries {
        for entry in page? {
            outln!();
            out!("{}", render::entry(&entry));
        }
    }
    Ok(())
}

fn read_content(content: &str) -> Result<String, Error> {
    if content != "-" {
        return Ok(content.to_owned());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|source| Error::Io {
            context: "cannot read the content from stdin".into(),
            source,
        })?;
    Ok(text)
}

fn write_component(path: Option<&PathBuf>) -> Result<(), Error> {
    let bytes = spool_host::COMPONENT;
    match path {
        Some(path) => std::fs::write(path, bytes).map_err(|source| Error::Io {
            context: format!("cannot write {}", path.display()),
            source,
        }),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(|source| Error::Io {
                    context: "cannot write the component to stdout".into(),
                    source,
                })
        }
    }
}

#[cfg(test)]
#[path = "tests/cli.rs"]
mod tests;
