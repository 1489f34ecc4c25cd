//! `cargo xtask bench`: runs the benchmark binaries (release build), shows their own
//! output, collects the figures they print as machine-readable lines and closes with one
//! table of every figure, its goal, the ratio to the goal and whether it is met; with
//! `--peers`, also the same append workload in the Python peers (OpenAI Agents SDK,
//! LangGraph) beside Spool's figures.
//!
//! The line format, one figure a line on the benchmark's stdout (tab-separated):
//!
//! ```text
//! figure<TAB><name><TAB><value><TAB><unit><TAB><goal>     goal: `>= X`, `<= X` or `-`
//! peer<TAB><name><TAB><value><TAB><unit><TAB><figure>     beside Spool's figure of that name
//! ```
//!
//! A figure line is not echoed; every other line is. A unit ending in `/s` is a rate
//! (higher is better), any other unit a cost (lower is better): that is how a peer and
//! Spool's figure are compared.

use std::path::PathBuf;

use crate::cmd::{Step, cargo, root};
use crate::setup;

/// The benchmarks `cargo xtask bench` runs: name, package, what it measures.
pub(crate) const BENCHES: &[(&str, &str, &str)] = &[
    (
        "append",
        "spool-host",
        "appends, component + SQLite vs raw SQLite, on disk and on tmpfs; bytes per entry",
    ),
    (
        "startup",
        "spool-host",
        "cold start: compile, cache load, instantiate; the CLI's first append, cache warm and cold",
    ),
    (
        "compact",
        "spool-host",
        "compaction of 1k, 10k, 100k-entry sessions in the component on SQLite",
    ),
    (
        "resume",
        "spool-host",
        "resume selection over 10k run rows, component on SQLite vs native core",
    ),
    (
        "branch",
        "spool-host",
        "branching parents of 100, 10k, 100k entries in the component on SQLite",
    ),
    (
        "compact_core",
        "spool",
        "compaction in the native core (no wasm, no database)",
    ),
    (
        "continuity",
        "spool",
        "continuity: the facts an agent needs kept by compaction at 25% of real-shaped sessions",
    ),
    (
        "size_ladder",
        "spool-host",
        "the size ladder: every operation on 10 MiB, 100 MiB, 1 GiB sessions (SPOOL_LADDER_SIZES)",
    ),
    (
        "import_stream",
        "spool-host",
        "a 200 MiB Codex rollout and Claude Code log streamed in slices under a 64 MiB guest limit, vs the native parse",
    ),
    (
        "stream",
        "spool-host",
        "updates per second of one entry in progress, each a durable commit, vs raw SQLite",
    ),
    (
        "search",
        "spool-host",
        "search: append cost of the index, index bytes per entry, query latency on 100k entries vs SQLite FTS5",
    ),
    (
        "postgres",
        "spool-host",
        "PostgreSQL: appends/s beside SQLite, a hand-written loop and with a synchronous standby, the newest page, advisory lock vs SERIALIZABLE",
    ),
];

/// Not a benchmark binary: the sizes of what ships, measured by building it (the
/// browser package, full and lean, through wasm-bindgen and wasm-opt; the component).
const SIZE: (&str, &str) = (
    "size",
    "the browser package's wasm (full and lean builds) as shipped and gzipped (-9), and the component, against their budgets",
);

/// The budget of the full browser package's wasm, gzipped, in bytes.
const FULL_GZIP_BUDGET: u64 = 560_000;
/// The budget of the lean browser package's wasm (`--no-default-features`), gzipped.
const LEAN_GZIP_BUDGET: u64 = 300_000;
/// The budget of the component as the host embeds it, in bytes.
const COMPONENT_BUDGET: u64 = 1_450_000;

/// Not a benchmark binary: the Python package's `SpoolSession` (OpenAI Agents SDK) beside
/// the SDK's `SQLiteSession` and LangGraph's `SqliteSaver` (`python/benches`).
const PYTHON: (&str, &str) = (
    "python",
    "appends/s through the Python package's SpoolSession vs the Agents SDK's SQLiteSession and LangGraph's SqliteSaver",
);

/// The Python packages of the peers, from PyPI: on SQLite, and on PostgreSQL (the
/// Agents SDK's `SQLAlchemySession` on asyncpg, LangGraph's `PostgresSaver` on psycopg).
const PEER_PACKAGES: &[&str] = &[
    "openai-agents",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "psycopg[binary]",
    "sqlalchemy[asyncio]",
    "asyncpg",
    // The Python package's tests (`cargo xtask test`), pinned.
    "pytest==9.2.0",
];

/// The figure the PostgreSQL peers are compared with, and the goal for Spool/peer.
const POSTGRES_APPENDS: (&str, f64) = ("postgres: appends", 2.0);

/// What a figure must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Goal {
    AtLeast(f64),
    AtMost(f64),
    None,
}

impl Goal {
    fn parse(text: &str) -> Result<Goal, String> {
        let text = text.trim();
        if text == "-" {
            return Ok(Goal::None);
        }
        let number = |rest: &str| {
            rest.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x != 0.0)
                .ok_or_else(|| format!("goal `{text}`: not a non-zero number"))
        };
        if let Some(rest) = text.strip_prefix(">=") {
            Ok(Goal::AtLeast(number(rest)?))
        } else if let Some(rest) = text.strip_prefix("<=") {
            Ok(Goal::AtMost(number(rest)?))
        } else {
            Err(format!("goal `{text}`: expected `>= X`, `<= X` or `-`"))
        }
    }

    fn limit(self) -> Option<f64> {
        match self {
            Goal::AtLeast(x) | Goal::AtMost(x) => Some(x),
            Goal::None => None,
        }
    }

    fn met(self, value: f64) -> Option<bool> {
        match self {
            Goal::AtLeast(x) => Some(value >= x),
            Goal::AtMost(x) => Some(value <= x),
            Goal::None => None,
        }
    }

    fn describe(self) -> String {
        match self {
            Goal::AtLeast(x) => format!(">= {x}"),
            Goal::AtMost(x) => format!("<= {x}"),
            Goal::None => "-".into(),
        }
    }
}

/// One line a benchmark printed for the table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Line {
    /// One of Spool's figures.
    Figure {
        name: String,
        value: f64,
        unit: String,
        goal: Goal,
    },
    /// A peer's figure, compared with Spool's figure `against`.
    Peer {
        name: String,
        value: f64,
        unit: String,
        against: String,
    },
}

impl Line {
    /// `None` for a line of human output; an error for a figure line that is malformed.
    pub(crate) fn parse(text: &str) -> Option<Result<Line, String>> {
        let mut fields = text.split('\t');
        let kind = fields.next()?;
        if kind != "figure" && kind != "peer" {
            return None;
        }
        let fields: Vec<&str> = fields.collect();
        let [name, value, unit, last] = fields[..] else {
            return Some(Err(format!(
                "`{text}`: expected `{kind}<TAB>name<TAB>value<TAB>unit<TAB>…`"
            )));
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            return Some(Err(format!(
                "`{text}`: the value `{value}` is not a number"
            )));
        };
        let (name, unit) = (name.trim().to_owned(), unit.trim().to_owned());
        Some(if kind == "figure" {
            Goal::parse(last).map(|goal| Line::Figure {
                name,
                value,
                unit,
                goal,
            })
        } else {
            Ok(Line::Peer {
                name,
                value,
                unit,
                against: last.trim().to_owned(),
            })
        })
    }
}

/// A number in at most four significant digits, without trailing noise.
fn number(x: f64) -> String {
    let magnitude = x.abs();
    if magnitude >= 100.0 || magnitude == 0.0 {
        format!("{x:.0}")
    } else if magnitude >= 10.0 {
        format!("{x:.1}")
    } else if magnitude >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The closing table: Spool's figures, then (when there are any) the peers beside the
/// figures they are compared with, then the count of goals met.
pub(crate) fn table(lines: &[Line]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let width = lines
        .iter()
        .map(|l| match l {
            Line::Figure { name, .. } | Line::Peer { name, .. } => name.chars().count(),
        })
        .max()
        .unwrap_or(6)
        .max(24);
    let (mut met, mut missed) = (0, 0);
    let _ = writeln!(
        out,
        "{:<width$}  {:>10}  {:<10}  {:<9}  {:>7}  result",
        "figure", "value", "unit", "goal", "×goal"
    );
    for line in lines {
        let Line::Figure {
            name,
            value,
            unit,
            goal,
        } = line
        else {
            continue;
        };
        let ratio = goal
            .limit()
            .map_or_else(|| "-".to_owned(), |x| format!("{:.2}", value / x));
        let result = match goal.met(*value) {
            Some(true) => {
                met += 1;
                "pass"
            }
            Some(false) => {
                missed += 1;
                "MISS"
            }
            None => "-",
        };
        let _ = writeln!(
            out,
            "{name:<width$}  {:>10}  {unit:<10}  {:<9}  {ratio:>7}  {result}",
            number(*value),
            goal.describe()
        );
    }
    if lines.iter().any(|l| matches!(l, Line::Peer { .. })) {
        let _ = writeln!(
            out,
            "\n{:<width$}  {:>10}  {:<10}  {:>10}  {:>10}  compared with",
            "peer (same workload)", "value", "unit", "Spool", "Spool/peer"
        );
        for line in lines {
            let Line::Peer {
                name,
                value,
                unit,
                against,
            } = line
            else {
                continue;
            };
            let spool = lines.iter().find_map(|l| match l {
                Line::Figure {
                    name, value, unit, ..
                } if name == against => Some((*value, unit)),
                _ => None,
            });
            let (spool_value, ratio, verdict) = match spool {
                Some((spool, spool_unit)) if spool_unit == unit && *value != 0.0 => {
                    let ratio = spool / value;
                    let rate = unit.ends_with("/s");
                    let ahead = if rate { ratio >= 1.0 } else { ratio <= 1.0 };
                    (
                        number(spool),
                        format!("{ratio:.2}"),
                        if ahead { "Spool ahead" } else { "peer ahead" },
                    )
                }
                Some(_) => ("?".into(), "-".into(), "(units differ)"),
                None => ("-".into(), "-".into(), "(Spool's figure not run)"),
            };
            let _ = writeln!(
                out,
                "{name:<width$}  {:>10}  {unit:<10}  {spool_value:>10}  {ratio:>10}  {against} \
                 {verdict}",
                number(*value)
            );
        }
    }
    let _ = writeln!(
        out,
        "\ngoals: {met} met, {missed} missed ({} figures)",
        lines
            .iter()
            .filter(|l| matches!(l, Line::Figure { .. }))
            .count()
    );
    out
}

/// `cargo xtask bench [--peers] [NAME...]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let peers = args.iter().any(|a| a == "--peers");
    let mut names: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--peers")
        .collect();
    if let Some(unknown) = names
        .iter()
        .find(|n| **n != SIZE.0 && **n != PYTHON.0 && !BENCHES.iter().any(|(name, ..)| name == *n))
    {
        let mut known: Vec<&str> = BENCHES.iter().map(|(name, ..)| *name).collect();
        known.extend([SIZE.0, PYTHON.0]);
        return Err(format!(
            "no benchmark `{unknown}`; there are {} (and --peers)",
            known.join(", ")
        ));
    }
    if peers && names.is_empty() {
        // The peers are compared with the append figures: run those, not everything
        // (`bench postgres --peers` runs the PostgreSQL ones).
        names.push("append");
    }
    let toolchain = setup::run(&setup::Options { browser: false })?;
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for (name, package, what) in BENCHES {
        if names.is_empty() || names.contains(name) {
            let mut step = cargo(
                &toolchain,
                &["bench", "--package", package, "--bench", name],
            );
            // The PostgreSQL benchmark runs on a throwaway server, stopped after it.
            // Beside it, a primary with a synchronous standby: the cost of the second
            // machine's acknowledgement.
            let servers = match *name {
                "postgres" => match crate::postgres::Servers::start().and_then(|servers| {
                    crate::postgres::Servers::start_with_standby().map(|pair| (servers, pair))
                }) {
                    Ok(both) => Some(both),
                    Err(e) => {
                        failures.push(e);
                        continue;
                    }
                },
                _ => None,
            };
            if let Some((servers, pair)) = &servers {
                servers.apply(&mut step);
                step.env("SPOOL_TEST_POSTGRES_SYNC_STANDBY", pair.url());
            }
            if let Err(e) = step.run_lines(&format!("bench: {what}"), collect(&mut lines)) {
                failures.push(e);
            }
            // The peers on the same server, beside Spool's figures.
            if let (true, Some((servers, _))) = (peers, &servers)
                && let Err(e) = run_postgres_peers(servers, &mut lines)
            {
                failures.push(e);
            }
            drop(servers);
        }
    }
    if (names.is_empty() || names.contains(&SIZE.0))
        && let Err(e) = browser_size(&mut lines)
    {
        failures.push(e);
    }
    if (names.is_empty() || names.contains(&PYTHON.0))
        && let Err(e) = crate::python::bench(&toolchain, PYTHON.1, &mut lines)
    {
        failures.push(e);
    }
    if peers
        && names.contains(&"append")
        && let Err(e) = run_peers(&mut lines)
    {
        failures.push(e);
    }
    println!("\n{}", table(&lines));
    match failures.as_slice() {
        [] => Ok(()),
        _ => Err(failures.join("; ")),
    }
}

/// Builds the browser package, full and lean (with wasm-opt, as it ships), and the
/// component, and adds their sizes with their budgets.
fn browser_size(lines: &mut Vec<Line>) -> Result<(), String> {
    println!("\n==> bench: {}", SIZE.1);
    let toolchain = setup::run(&setup::Options { browser: true })?;
    for (variant, budget) in [
        (crate::web::Variant::Full, FULL_GZIP_BUDGET),
        (crate::web::Variant::Lean, LEAN_GZIP_BUDGET),
    ] {
        let built = crate::web::build(&toolchain, true, variant)?;
        crate::web::report(&built);
        let gzip = built
            .gzip
            .ok_or("gzip is not installed: the browser package's size is not measured")?;
        lines.push(Line::Figure {
            name: format!("size: browser module, {} (gzip -9)", variant.name()),
            value: gzip as f64,
            unit: "bytes".into(),
            goal: Goal::AtMost(budget as f64),
        });
    }
    let component = crate::build_component(&toolchain)?;
    lines.push(Line::Figure {
        name: "size: component".into(),
        value: component as f64,
        unit: "bytes".into(),
        goal: Goal::AtMost(COMPONENT_BUDGET as f64),
    });
    Ok(())
}

/// A line handler for [`Step::run_lines`]: keeps figure lines (a malformed one is
/// reported and echoed), echoes the rest.
pub(crate) fn collect(lines: &mut Vec<Line>) -> impl FnMut(&str) -> bool + '_ {
    |text| match Line::parse(text) {
        None => true,
        Some(Ok(line)) => {
            lines.push(line);
            false
        }
        Some(Err(e)) => {
            eprintln!("warning: a malformed figure line: {e}");
            true
        }
    }
}

/// The target directory (the peers' virtualenv and databases go there).
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// The peers: a virtualenv under the target directory with the peers' packages from
/// PyPI (installed once), then `host/benches/peers/append.py`.
/// The virtualenv's Python with the peers' packages, created and installed on first use.
pub(crate) fn peers_python() -> Result<String, String> {
    let target = target_dir();
    let venv = target.join("peers-venv");
    let python = venv.join("bin").join("python");
    if !python.exists() {
        Step::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .run("peers: create a virtualenv")?;
    }
    let python = python.to_string_lossy().into_owned();
    let installed = Step::new(&python)
        .args([
            "-c",
            "import agents, langgraph.checkpoint.sqlite, langgraph.checkpoint.postgres, \
             psycopg, sqlalchemy.ext.asyncio, asyncpg, agents.extensions.memory.sqlalchemy_session, \
             pytest",
        ])
        .output()
        .is_some();
    if !installed {
        Step::new(&python)
            .args(["-m", "pip", "install", "--quiet"])
            .args(PEER_PACKAGES)
            .run(&format!(
                "peers: pip install {} (PyPI)",
                PEER_PACKAGES.join(" ")
            ))?;
    }
    Ok(python)
}

fn run_peers(lines: &mut Vec<Line>) -> Result<(), String> {
    let python = peers_python()?;
    let disk = target_dir().join("peers-bench");
    std::fs::create_dir_all(&disk).map_err(|e| format!("{}: {e}", disk.display()))?;
    Step::new(&python)
        .arg(root().join("host/benches/peers/append.py"))
        .arg("--disk-dir")
        .arg(&disk)
        .run_lines(
            "bench: peers, the same appends in the OpenAI Agents SDK and LangGraph",
            collect(lines),
        )
}

/// The postgres benchmark's appends in LangGraph's `PostgresSaver` and the Agents SDK's
/// `SQLAlchemySession` on the same server; adds Spool/peer for each as a figure with
/// its goal.
fn run_postgres_peers(
    servers: &crate::postgres::Servers,
    lines: &mut Vec<Line>,
) -> Result<(), String> {
    let python = peers_python()?;
    Step::new(&python)
        .arg(root().join("host/benches/peers/append_postgres.py"))
        .arg("--url")
        .arg(servers.url())
        .run_lines(
            "bench: peers on PostgreSQL, LangGraph PostgresSaver and Agents SDK SQLAlchemySession",
            collect(lines),
        )?;
    let (figure, goal) = POSTGRES_APPENDS;
    let spool = lines.iter().find_map(|l| match l {
        Line::Figure { name, value, .. } if name == figure => Some(*value),
        _ => None,
    });
    let ratios: Vec<Line> = lines
        .iter()
        .filter_map(|l| match (l, spool) {
            (
                Line::Peer {
                    name,
                    value,
                    against,
                    ..
                },
                Some(spool),
            ) if against == figure && *value > 0.0 => Some(Line::Figure {
                name: format!("postgres: spool/{name}"),
                value: spool / value,
                unit: "ratio".into(),
                goal: Goal::AtLeast(goal),
            }),
            _ => None,
        })
        .collect();
    lines.extend(ratios);
    Ok(())
}

#[cfg(test)]
#[path = "tests/bench.rs"]
mod tests;
