//! `spool`: the command-line interface to a Spool session database.
//!
//! Exit codes: 0 success, 1 the operation failed (printed as `error[<code>]: <message>`
//! on stderr), 2 usage error.

#[path = "cli/demo.rs"]
mod demo;
#[path = "cli/render.rs"]
mod render;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;
use spool::{AppendRequest, Role};
use spool_host::{Error, Spool};

const EXAMPLES: &str = "Examples:
  spool demo                                   record and show a sample agent session
  spool create agent:main:main
  spool append agent:main:main --role user --content 'Fix the failing test'
  spool show agent:main:main --json
  spool --db ~/agents.db --workspace team list --limit 50
  spool component spool.wasm                   extract the WebAssembly component

Exit status: 0 success, 1 the operation failed (error[<code>] on stderr), 2 usage error.";

/// Spool: durable sessions and transcripts for AI coding agents.
///
/// Sessions live in a SQLite database; the session rules run inside the embedded Spool
/// WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "spool", version, propagate_version = true, after_help = EXAMPLES)]
struct Cli {
    /// The SQLite database file (created if missing).
    #[arg(
        long,
        global = true,
        env = "SPOOL_DB",
        default_value = "./spool.db",
        value_name = "PATH"
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
    /// Append one entry to the transcript of the session under KEY.
    Append {
        /// The session key.
        key: String,
        /// Who wrote the entry.
        #[arg(long, value_enum)]
        role: RoleArg,
        /// The text of the entry; `-` reads it from stdin.
        #[arg(long)]
        content: String,
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
        /// Print the appended entry as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the session under KEY and its whole transcript.
    Show {
        /// The session key.
        key: String,
        /// Print `{"session": …, "entries": […]}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List sessions, most recently updated first.
    List {
        /// How many sessions to list (1 to 1000).
        #[arg(long, default_value_t = 20, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Continue after a previous page (its `next_cursor`).
        #[arg(long)]
        cursor: Option<String>,
        /// Print the page as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Record a short scripted coding-agent session (`agent:demo:main`) and show it.
    ///
    /// Running it again just shows the existing session.
    Demo,
    /// Write the embedded Spool WebAssembly component to PATH (or stdout).
    Component {
        /// Where to write the `.wasm` file; stdout when absent.
        path: Option<PathBuf>,
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

fn parse_json(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error[{}]: {}", e.code(), e.message());
            ExitCode::FAILURE
        }
    }
}

fn open(cli: &Cli) -> Result<Spool, Error> {
    Spool::builder()
        .db_path(&cli.db)
        .workspace(&cli.workspace)
        .open()
}

fn print_json(value: &impl Serialize) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Spool {
        code: "internal".into(),
        message: format!("cannot print JSON: {e}"),
    })?;
    println!("{text}");
    Ok(())
}

fn run(cli: Cli) -> Result<(), Error> {
    match &cli.command {
        Command::Create { key, json } => {
            let session = open(&cli)?.create_session(key)?;
            if *json {
                print_json(&session)
            } else {
                print!("created {}", render::session(&session));
                Ok(())
            }
        }
        Command::Append {
            key,
            role,
            content,
            token_count,
            message_id,
            turn_id,
            tool_call_id,
            tool_calls,
            json,
        } => {
            let mut request = AppendRequest::new((*role).into(), read_content(content)?);
            request.token_count = *token_count;
            request.message_id = message_id.clone();
            request.turn_id = turn_id.clone();
            request.tool_call_id = tool_call_id.clone();
            request.tool_calls = tool_calls.clone();
            let entry = open(&cli)?.append(key, request)?;
            if *json {
                print_json(&entry)
            } else {
                println!("appended #{} ({}) to {key}", entry.id, entry.message_id);
                Ok(())
            }
        }
        Command::Show { key, json } => show(&mut open(&cli)?, key, *json),
        Command::List {
            limit,
            cursor,
            json,
        } => {
            let list = open(&cli)?.list_sessions(*limit, cursor.as_deref())?;
            if *json {
                return print_json(&list);
            }
            if list.sessions.is_empty() {
                println!("no sessions in workspace `{}`", cli.workspace);
                return Ok(());
            }
            print!("{}", render::table(&list.sessions));
            if let Some(next) = list.next_cursor {
                println!("(more: spool list --limit {limit} --cursor {next})");
            }
            Ok(())
        }
        Command::Demo => {
            let mut spool = open(&cli)?;
            if demo::run(&mut spool)? {
                println!("recorded a demo session in {}\n", cli.db.display());
            } else {
                println!("session {} already exists; showing it\n", demo::KEY);
            }
            show(&mut spool, demo::KEY, false)
        }
        Command::Component { path } => write_component(path.as_ref()),
    }
}

fn show(spool: &mut Spool, key: &str, json: bool) -> Result<(), Error> {
    let session = spool.get_session(key)?.ok_or_else(|| Error::Spool {
        code: "not_found".into(),
        message: format!("session not found: {key}"),
    })?;
    let entries = spool.transcript(key)?;
    if json {
        return print_json(&serde_json::json!({ "session": session, "entries": entries }));
    }
    print!("{}", render::session(&session));
    for entry in &entries {
        println!();
        print!("{}", render::entry(entry));
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
