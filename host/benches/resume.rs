//! Resume selection (ARCHITECTURE.md, "Resume selection") over 10,000 external run rows:
//! `select_resume` through the wasmtime component on `SqliteStorage`, and natively in the
//! core (on the same SQLite file, on `MemoryStorage`, and the plain function over the whole
//! history in memory).
//!
//! The history mixes agents (`codex`, `claude_code`, `opencode`), ten projects and
//! statuses (`done`, `failed`, `working`, `cancelled`). Selection is timed two ways:
//!
//! - **role state**: the role session's codex entry names the winning token; selection
//!   reads the role record and that token's rows;
//! - **history index**: no role state; the newest half of the codex `done` rows (two per
//!   token) belong to tokens whose newest run failed, so selection walks them (reading
//!   each dead token's rows) before it reaches the winning token deep in history.
//!
//! Only the selection is timed (the rows are recorded through the component first).
//! `cargo bench -p spool-host --bench resume`; `SPOOL_BENCH_N` changes the row count.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use spool::resume::rules::{ResumePolicy, ResumeQuery, RunRecord};
use spool::{MemoryStorage, NewRoleSession, NewRun, ResumeRequest};
use spool_host::{Runtime, SqliteStorage};

const WS: &str = "bench";
const ROLE: &str = "role-runtime::bench::cto";
const WINNER: &str = "thread-winner";
const AGENTS: [&str; 3] = ["codex", "claude_code", "opencode"];
const STATUSES: [&str; 5] = ["done", "failed", "working", "cancelled", "done"];

/// The history: `(run, updated_at)`, oldest first. About a quarter of `n` are filler
/// rows of every agent and project, one is the winner (codex, `p1`, `done`), and the
/// rest are three rows per dead codex token in `p1` (two `done`, then a newer `failed`),
/// all newer than the winner.
fn history(n: usize) -> Vec<(NewRun, u64)> {
    let dead = n / 4;
    let filler = n - 3 * dead - 1;
    let run = |agent: &str, project: String, token: String, task: String, status: &str| NewRun {
        agent_type: agent.into(),
        project_id: project,
        session_id: token,
        task_id: task,
        status: status.into(),
        role_session_id: None,
        workspace_path: Some("/src/bench".into()),
        run_mode: Some("exec".into()),
        metadata: BTreeMap::new(),
    };
    let mut rows = Vec::with_capacity(n);
    let winner_at = filler as u64 + 1;
    for i in 0..filler {
        let agent = AGENTS[i % 3];
        let project = format!("p{}", i % 10);
        // No live codex `done` row in p1 but the winner's.
        let status = if agent == "codex" && project == "p1" {
            "working"
        } else {
            STATUSES[i % 5]
        };
        // Filler times straddle the winner's.
        let at = 1 + 2 * i as u64;
        rows.push((
            run(
                agent,
                project,
                format!("{agent}-tok-{}", i / 2),
                format!("f{i}"),
                status,
            ),
            at,
        ));
    }
    rows.push((
        run("codex", "p1".into(), WINNER.into(), "t-win".into(), "done"),
        winner_at,
    ));
    let start = 2 * filler as u64 + 10;
    for j in 0..dead {
        let token = format!("thread-dead-{j}");
        let at = start + 3 * j as u64;
        for (k, status) in ["done", "done", "failed"].into_iter().enumerate() {
            rows.push((
                run(
                    "codex",
                    "p1".into(),
                    token.clone(),
                    format!("d{j}-{k}"),
                    status,
                ),
                at + k as u64,
            ));
        }
    }
    rows.sort_by_key(|(_, at)| *at);
    rows
}

fn role() -> NewRoleSession {
    let mut entry = serde_json::Map::new();
    entry.insert("resume_session_id".into(), Value::String(WINNER.into()));
    entry.insert("last_task_id".into(), Value::String("t-win".into()));
    let mut state = BTreeMap::new();
    state.insert("codex".into(), Value::Object(entry));
    NewRoleSession {
        role_session_id: ROLE.into(),
        run_id: Some("bench".into()),
        role_id: Some("cto".into()),
        adapter_state: state,
    }
}

fn request(with_role: bool) -> ResumeRequest {
    ResumeRequest {
        agent_type: "codex".into(),
        role_session_id: with_role.then(|| ROLE.into()),
        project_id: Some("p1".into()),
        scope_id: None,
        preconfigured: None,
        surviving_agents: None,
    }
}

/// Per-call times of `f`, called until `budget` is spent (at least `min` calls).
fn sample(min: usize, budget: Duration, mut f: impl FnMut()) -> Stats {
    f(); // warm up
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < min || start.elapsed() < budget {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    Stats {
        calls: times.len(),
        median: times[times.len() / 2],
        p95: times[times.len() * 95 / 100],
    }
}

struct Stats {
    calls: usize,
    median: Duration,
    p95: Duration,
}

fn print(what: &str, s: &Stats) {
    println!(
        "  {what:<46} {:>10.1} µs  {:>10.1} µs  {:>7}",
        s.median.as_secs_f64() * 1e6,
        s.p95.as_secs_f64() * 1e6,
        s.calls
    );
}

fn check(decision: &spool::resume::rules::ResumeDecision) {
    assert_eq!(
        (decision.mode.as_str(), decision.session_id.as_str()),
        ("resume", WINNER),
        "{decision:?}"
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with nothing, so
    // keep that run short.
    let benching = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SPOOL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 10_000 } else { 400 });
    let budget = Duration::from_millis(if benching { 2_000 } else { 50 });
    let rows = history(n);

    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench dir");
    let path = dir.path().join("resume.db");
    let mut spool = Runtime::shared()
        .expect("runtime")
        .instantiate(SqliteStorage::open(&path).expect("open"), spool::NoArchive)
        .expect("instantiate");
    let start = Instant::now();
    for (run, at) in &rows {
        spool
            .call(
                WS,
                spool::ops::RecordRun {
                    run: run.clone(),
                    now_ms: *at,
                },
            )
            .expect("record");
    }
    spool
        .call(
            WS,
            spool::ops::SaveRoleSession {
                role: role(),
                now_ms: 1,
            },
        )
        .expect("role");
    let build = start.elapsed();

    let memory = MemoryStorage::new();
    for (run, at) in &rows {
        spool::run(&memory, spool::record_run(WS, run.clone(), *at)).expect("record natively");
    }
    spool::run(&memory, spool::save_role_session(WS, role(), 1)).expect("role natively");
    let native_sqlite = SqliteStorage::open(&path).expect("open again");

    let codex_done = rows
        .iter()
        .filter(|(r, _)| r.agent_type == "codex" && r.status == "done")
        .count();
    println!(
        "resume selection over {n} run rows ({codex_done} codex `done`, the newest {} of them \
         of dead tokens); recorded through the component in {:.1} s",
        2 * (n / 4),
        build.as_secs_f64()
    );
    println!(
        "  {:<46} {:>13}  {:>13}  {:>7}",
        "select_resume", "median", "p95", "calls"
    );

    for (label, with_role) in [("role state", true), ("history index", false)] {
        println!("{label}:");
        let s = sample(20, budget, || {
            check(
                &spool
                    .call(
                        WS,
                        spool::ops::SelectResume {
                            request: request(with_role),
                        },
                    )
                    .expect("select"),
            );
        });
        print("component (wasmtime) on SQLite", &s);
        let s = sample(20, budget, || {
            check(
                &spool::run(&native_sqlite, spool::select_resume(WS, request(with_role)))
                    .expect("select natively"),
            );
        });
        print("native core on SQLite (same file)", &s);
        let s = sample(20, budget, || {
            check(
                &spool::run(&memory, spool::select_resume(WS, request(with_role)))
                    .expect("select natively"),
            );
        });
        print("native core on MemoryStorage", &s);
    }

    // The plain rule over the whole history, as a host without the indexes would run it.
    let history: Vec<RunRecord> = rows
        .iter()
        .map(|(r, at)| RunRecord {
            agent_type: r.agent_type.clone(),
            project_id: r.project_id.clone(),
            session_id: r.session_id.clone(),
            status: r.status.clone(),
            updated_at: *at,
            task_id: r.task_id.clone(),
            role_session_id: r.role_session_id.clone(),
            workspace_path: r.workspace_path.clone(),
            run_mode: r.run_mode.clone(),
            metadata: r.metadata.clone(),
        })
        .collect();
    let query = ResumeQuery {
        agent_type: "codex".into(),
        project_id: Some("p1".into()),
        scope_id: None,
        role_state: None,
        preconfigured: None,
    };
    let policy = ResumePolicy::default();
    println!("no index (for comparison):");
    let s = sample(5, budget, || {
        check(&spool::resume::rules::choose_resume(
            &query, &history, &policy,
        ));
    });
    print("plain function over all rows in memory", &s);
}
