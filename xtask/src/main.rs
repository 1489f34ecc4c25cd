//! `cargo xtask`: Spool's one entry point for set-up, builds, tests, the demo and
//! benchmarks. Every step runs alone; `test` runs them all in CI's order.

mod bench;
mod cmd;
mod e2e;
mod hosts;
#[cfg(test)]
mod layers;
mod postgres;
mod python;
mod serve;
mod setup;
mod size_report;
mod web;
mod webdriver;

use std::process::ExitCode;
use std::time::Instant;

use cmd::{Step, Tally, cargo, root};

const HELP: &str = "\
cargo xtask <command> [args]

Commands:
  setup [--no-browser]  Install what builds and tests need on a fresh machine: the
                        wasm32-unknown-unknown target (rustup, or Debian's rustc-web +
                        -Zbuild-std as a fallback), wasm-bindgen-cli at the Cargo.lock
                        version, Chromium + chromedriver. Quick when all is present.
                        SPOOL_WASM_ROUTE=debian forces the fallback route.
  demo [args]           Set up, then run `spool demo` on the embedded SQLite default
                        (./spool.db): a short scripted session through the component.
  test                  Everything CI checks: fmt, clippy (native + wasm32), native
                        tests (with a throwaway PostgreSQL and PgBouncer for the server
                        backend's), component tests, the vectors in Node (jco) and
                        wasmtime-py, docs, browser tests in headless
                        Chromium, the demo page end to end, the TypeScript declarations
                        under tsc --strict.
  ci                    Same as test.
  build-wasm            Build and package the component; print its size.
  build-web [--no-opt] [--lean]
                        Build the browser package @spool/engine into web/pkg: wasm-bindgen
                        --target web, wasm-opt -Oz when binaryen is installed, package.json,
                        and a check that the .d.ts declares exactly the exported Spool
                        methods. --lean: without the optional features
                        (--no-default-features), into target/web-lean.
  serve-web [--port N]  Build web/pkg if stale, then serve web/ on 127.0.0.1:N (default 8080):
                        the demo page is at /www/.
  size-report [--lean] [--top N]
                        Where the browser module's bytes go: the package built with v0
                        symbol names into target/size-report, wasm-opt -Oz without
                        inlining, its code by category (serde readers and writers,
                        BTreeMap, operation bodies, core modules, ...) and the N largest
                        functions (default 25).
  e2e-web               Drive the demo page end to end in headless Chromium (WebDriver),
                        every Spool method through its Operations panel; saves
                        screenshots in target/e2e/ and reports the cold start.
  with-postgres [--standby] CMD...
                        Start a throwaway PostgreSQL and a PgBouncer (transaction pooling)
                        on loopback, run CMD with SPOOL_TEST_POSTGRES / SPOOL_TEST_PGBOUNCER
                        set to their URLs, then stop them: e.g. `cargo xtask with-postgres
                        cargo test -p spool-host --test suite postgres`; --standby adds a
                        synchronous hot standby (the failover test). Needs root (it
                        installs Debian's postgresql and pgbouncer when missing).
  postgres-failover DIR Force one failover of the pair `with-postgres --standby` started
                        in DIR: kill -9 the primary, promote the standby, rebuild the
                        lost one as the new synchronous standby (the failover test
                        runs it through SPOOL_TEST_POSTGRES_FAILOVER_NOW).
  check-imports         Check the component imports only Spool's own interfaces.
  typecheck-web         Type-check web/tests/typescript/use.ts against the browser
                        package's declarations with tsc --strict (npm's typescript).
  test-browser          Run the browser tests (IndexedDB, vectors) in headless Chromium.
  test-hosts            Run the scenario vectors through the component in two hosts
                        that are not Spool's: Node, after jco transpiles it (npm's
                        @bytecodealliance/jco, in target/tools/jco), and wasmtime-py
                        (PyPI's wasmtime, in a virtualenv in target/tools/wasmtime-py),
                        each against an in-memory storage of its own language.
  test-python           Install ./python (pip --no-index, cargo profile dev) into the
                        peers' virtualenv and run pytest on python/tests (the cross-host
                        test runs the debug `spool`: cargo build -p spool-host first).
  bench [--peers] [NAME...]
                        Run the benchmarks (release build), or those named, then print one
                        table: each figure, its goal, the ratio to it, pass or miss.
                        append: appends through component + SQLite vs raw SQLite on disk
                        and on tmpfs, bytes per entry; startup: compile, cache load,
                        instantiate, the CLI's first append with the cache warm and cold;
                        compaction of 1k/10k/100k-entry sessions in the component
                        (compact) and in the native core (compact_core), continuity,
                        resume selection over 10k run rows (resume), branching parents of
                        100/10k/100k entries (branch), search (search): the append cost
                        of the index, its bytes per entry, query latency on 100k entries
                        beside SQLite FTS5, and the size ladder (size_ladder): every
                        operation on 10 MiB, 100 MiB and 1 GiB sessions; a 200 MiB
                        Codex rollout streamed in (import_stream);
                        SPOOL_LADDER_SIZES=10M,100M skips the 1 GiB one. --peers (not in
                        CI) adds the same appends in the OpenAI Agents SDK and LangGraph
                        (a virtualenv under the target directory, packages from PyPI);
                        alone it runs append and the peers. postgres: Spool on a
                        throwaway PostgreSQL (and PgBouncer) beside SQLite and a
                        hand-written loop; `bench postgres --peers` adds LangGraph's
                        PostgresSaver and the Agents SDK's SQLAlchemySession on the
                        same server, with Spool/peer against the goal (>= 2). python:
                        appends/s through the Python package's SpoolSession (OpenAI
                        Agents SDK) beside the SDK's SQLiteSession (goal >= 3x on
                        tmpfs) and LangGraph's SqliteSaver, in the peers' virtualenv
                        (SPOOL_PYTHON_PROFILE picks the cargo profile, default release).
  bench-web             The browser benchmarks in headless Chromium (release build):
                        appendEntry calls/s into IndexedDB (goal 1000/s), appendEntries of
                        eight and of 32 (entries/s, goal 5000/s), the newest page of a
                        10,000-entry session (goal 20 ms), branch times, search
                        on 100,000 entries (goal 100 ms), updates/s of an entry in
                        progress (goal 100/s); closes with the table of figures.
  help                  This text.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((c, rest)) => (c.as_str(), rest),
        None => ("help", &[][..]),
    };
    let started = Instant::now();
    let result = match command {
        "setup" => setup::run(&setup::Options {
            browser: !rest.iter().any(|a| a == "--no-browser"),
        })
        .map(|_| ()),
        "demo" => demo(rest),
        "test" | "ci" => test_all(),
        "build-wasm" => build_wasm(),
        "build-web" => build_web(
            !rest.iter().any(|a| a == "--no-opt"),
            if rest.iter().any(|a| a == "--lean") {
                web::Variant::Lean
            } else {
                web::Variant::Full
            },
        ),
        "serve-web" => serve_web(rest),
        "size-report" => size_report::run(rest),
        "e2e-web" => setup::run(&setup::Options { browser: true }).and_then(|t| {
            let mut tally = Tally::default();
            let result = e2e_web(&t, &mut tally);
            println!("e2e: {} passed, {} failed", tally.passed, tally.failed);
            result
        }),
        "with-postgres" => match rest.split_first() {
            Some((flag, command)) if flag == "--standby" => postgres::with_servers(command, true),
            _ => postgres::with_servers(rest, false),
        },
        "postgres-failover" => match rest {
            [dir] => postgres::failover(std::path::Path::new(dir)),
            _ => Err("usage: cargo xtask postgres-failover DIR (the pair's directory)".into()),
        },
        "check-imports" => check_imports(),
        "typecheck-web" => {
            setup::run(&setup::Options { browser: false }).and_then(|t| web::typecheck(&t))
        }
        "test-browser" => setup::run(&setup::Options { browser: true }).and_then(|t| {
            let mut tally = Tally::default();
            test_browser(&t, &mut tally)?;
            println!("browser: {} passed, {} failed", tally.passed, tally.failed);
            Ok(())
        }),
        "test-hosts" => setup::run(&setup::Options { browser: false }).and_then(|t| {
            let mut tally = Tally::default();
            hosts::run(&t, &mut tally)?;
            println!("hosts: {} passed, {} failed", tally.passed, tally.failed);
            Ok(())
        }),
        "test-python" => setup::run(&setup::Options { browser: false }).and_then(|t| {
            let mut tally = Tally::default();
            python::test(&t, &mut tally)?;
            println!("python: {} passed, {} failed", tally.passed, tally.failed);
            Ok(())
        }),
        "bench" => bench::run(rest),
        "bench-web" => setup::run(&setup::Options { browser: true }).and_then(|t| bench_web(&t)),
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(())
        }
        other => {
            eprintln!("unknown command `{other}`\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => {
            eprintln!(
                "xtask {command}: done in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "xtask {command}: FAILED after {:.1} s: {e}",
                started.elapsed().as_secs_f64()
            );
            ExitCode::FAILURE
        }
    }
}

fn demo(args: &[String]) -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: false })?;
    let mut step = cargo(
        &toolchain,
        &[
            "run",
            "--quiet",
            "--package",
            "spool-host",
            "--bin",
            "spool",
            "--",
        ],
    );
    step.args(["demo"]).args(args);
    step.run("spool demo")
}

/// `spool demo` twice against a fresh database: the README's main command must work,
/// and a re-run on the same database must too (it tells the same story again).
fn demo_twice(toolchain: &setup::Toolchain) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("spool-ci-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let db = dir.join("spool.db");
    let result = (1..=2).try_for_each(|run| {
        let mut step = cargo(
            toolchain,
            &[
                "run",
                "--quiet",
                "--package",
                "spool-host",
                "--bin",
                "spool",
                "--",
                "--db",
            ],
        );
        step.arg(&db).arg("demo");
        step.run(&format!("spool demo (run {run} of 2)"))
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn build_wasm() -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: false })?;
    build_component(&toolchain).map(drop)
}

/// Builds the component (through the host, which embeds it), writes it to
/// `target/spool.component.wasm` and prints its size; returns it, in bytes.
pub(crate) fn build_component(toolchain: &setup::Toolchain) -> Result<u64, String> {
    cargo(toolchain, &["build", "--package", "spool-host"]).run("build the component and host")?;
    let out = root().join("target/spool.component.wasm");
    hosts::export_component_to(toolchain, &out)?;
    let size = std::fs::metadata(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .len();
    println!(
        "component: {} ({size} bytes, {:.1} KiB)",
        out.display(),
        size as f64 / 1024.0
    );
    if let Some(gzip) = web::gzip_size(&out) {
        println!(
            "component: gzip -9 {gzip} bytes ({:.1} KiB)",
            gzip as f64 / 1024.0
        );
    }
    Ok(size)
}

fn build_web(optimize: bool, variant: web::Variant) -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: true })?;
    let built = web::build(&toolchain, optimize, variant)?;
    web::report(&built);
    Ok(())
}

fn serve_web(args: &[String]) -> Result<(), String> {
    let port = match args {
        [] => 8080,
        [flag, port] if flag == "--port" => {
            port.parse().map_err(|e| format!("--port {port}: {e}"))?
        }
        _ => {
            return Err(format!(
                "usage: cargo xtask serve-web [--port N], got {args:?}"
            ));
        }
    };
    let toolchain = setup::run(&setup::Options { browser: true })?;
    web::build_if_needed(&toolchain)?;
    let server = serve::Server::bind(root().join("web"), port)?;
    println!("Serving web/ at {}/www/ (Ctrl-C to stop)", server.url());
    server.run();
    Ok(())
}

fn e2e_web(toolchain: &setup::Toolchain, tally: &mut Tally) -> Result<(), String> {
    web::build_if_needed(toolchain)?;
    e2e::run(tally)
}

/// The host's test suite, the tests whose names hold `filter`; `alone`: only the
/// ignored ones, one at a time (the tests that stop or kill a server).
fn host_suite(toolchain: &setup::Toolchain, filter: &str, alone: bool) -> cmd::Step {
    let mut step = cargo(
        toolchain,
        &["test", "--package", "spool-host", "--test", "suite", filter],
    );
    if alone {
        step.args(["--", "--ignored", "--test-threads=1"]);
    }
    step
}

fn check_imports() -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: false })?;
    host_suite(&toolchain, "component_imports::", false)
        .run("component imports only spool:engine interfaces")
}

fn test_browser(toolchain: &setup::Toolchain, tally: &mut Tally) -> Result<(), String> {
    let mut step = toolchain.wasm_cargo(&[
        "test",
        "--package",
        "spool-web",
        "--target",
        "wasm32-unknown-unknown",
    ]);
    step.env("CHROMEDRIVER", "/usr/bin/chromedriver");
    step.env("WASM_BINDGEN_TEST_TIMEOUT", "120");
    step.run_counting("browser tests in headless Chromium", tally)
}

/// The browser benchmarks (`web/tests/perf_idb.rs`, ignored in the normal run): appends
/// per second into IndexedDB, the newest page of a 10,000-entry session, branch times,
/// search latency on a 100,000-entry workspace.
fn bench_web(toolchain: &setup::Toolchain) -> Result<(), String> {
    let mut step = toolchain.wasm_cargo(&[
        "test",
        "--release",
        "--package",
        "spool-web",
        "--target",
        "wasm32-unknown-unknown",
        "--test",
        "perf_idb",
        "--",
        "--include-ignored",
        "--nocapture",
    ]);
    step.env("CHROMEDRIVER", "/usr/bin/chromedriver");
    step.env("WASM_BINDGEN_TEST_TIMEOUT", "600");
    let mut lines = Vec::new();
    let run = step.run_lines(
        "bench: IndexedDB in headless Chromium (appends/s, newest page, branch, search, streamed entry updates/s)",
        bench::collect(&mut lines),
    );
    // The figures measured, also when a later test failed.
    println!("\n{}", bench::table(&lines));
    run
}

/// Runs CI's steps in order, timing each and adding up the tests they ran.
struct Ci {
    timings: Vec<(String, f64)>,
    tally: Tally,
}

impl Ci {
    fn step(&mut self, name: &str, mut step: Step) -> Result<(), String> {
        self.timed(name, |_| step.run(name))
    }

    fn tests(&mut self, name: &str, mut step: Step) -> Result<(), String> {
        self.timed(name, |tally| step.run_counting(name, tally))
    }

    fn timed(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut Tally) -> Result<(), String>,
    ) -> Result<(), String> {
        let t = Instant::now();
        let result = f(&mut self.tally);
        self.timings
            .push((name.to_owned(), t.elapsed().as_secs_f64()));
        result
    }
}

fn test_all() -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: true })?;
    let mut ci = Ci {
        timings: Vec::new(),
        tally: Tally::default(),
    };
    ci.step("fmt", cargo(&toolchain, &["fmt", "--all", "--", "--check"]))?;
    ci.step(
        "clippy native",
        cargo(
            &toolchain,
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ),
    )?;
    if toolchain.has_wasm_clippy() {
        let builds: [(&str, &[&str]); 2] = [
            (
                "clippy wasm32 (core, component, web)",
                &[
                    "--package",
                    "spool",
                    "--package",
                    "spool-web",
                    "--features",
                    "spool/component",
                    "--all-targets",
                ],
            ),
            (
                "clippy wasm32 (the lean browser build)",
                &["--package", "spool-web", "--no-default-features", "--lib"],
            ),
        ];
        for (name, selection) in builds {
            let mut args = vec!["clippy", "--target", "wasm32-unknown-unknown"];
            args.extend(selection);
            args.extend(["--", "-D", "warnings"]);
            ci.step(name, cargo(&toolchain, &args))?;
        }
    } else {
        eprintln!("note: clippy for wasm32 needs the rustup route; skipped on the fallback route");
    }
    // The PostgreSQL backend's tests run on a throwaway server and pooler, stopped
    // when `servers` is dropped (after the tests, or on any failure).
    let servers = postgres::Servers::start()?;
    // spool-web is empty off wasm32; its tests run in Chromium below.
    let mut native = cargo(
        &toolchain,
        &["test", "--workspace", "--exclude", "spool-web"],
    );
    servers.apply(&mut native);
    ci.tests(
        "native tests (core, host through the component on SQLite and PostgreSQL, xtask)",
        native,
    )?;
    // The CLI suites again, every database on the server (`common::temp_db`).
    let mut on_server = host_suite(&toolchain, "cli", false);
    servers.apply(&mut on_server);
    on_server.env("SPOOL_TEST_BACKEND", "postgres");
    ci.tests("the CLI suites on PostgreSQL", on_server)?;
    // Alone, as they restart the server under every connection.
    let mut restarts = host_suite(&toolchain, "postgres_restart", true);
    servers.apply(&mut restarts);
    ci.tests("PostgreSQL restarted under the host (alone)", restarts)?;
    drop(servers);
    // A primary with a synchronous standby of its own: the failover test kills it.
    let pair = postgres::Servers::start_with_standby()?;
    let mut failover = host_suite(&toolchain, "postgres_failover", true);
    pair.apply(&mut failover);
    ci.tests(
        "PostgreSQL failover to a synchronous standby (alone)",
        failover,
    )?;
    drop(pair);
    ci.timed("the component in Node (jco) and wasmtime-py", |tally| {
        hosts::run(&toolchain, tally)
    })?;
    ci.timed(
        "Python package: pip install --no-index, pytest (API, Agents SDK, CLI)",
        |tally| python::test(&toolchain, tally),
    )?;
    ci.timed("demo, twice on a fresh database", |_| {
        demo_twice(&toolchain)
    })?;
    let mut doc = cargo(
        &toolchain,
        &["doc", "--workspace", "--no-deps", "--exclude", "spool-web"],
    );
    doc.env("RUSTDOCFLAGS", "-D warnings");
    ci.step("docs", doc)?;
    if toolchain.has_wasm_clippy() {
        let mut doc = cargo(
            &toolchain,
            &[
                "doc",
                "--package",
                "spool-web",
                "--no-deps",
                "--target",
                "wasm32-unknown-unknown",
            ],
        );
        doc.env("RUSTDOCFLAGS", "-D warnings");
        ci.step("docs (browser host, wasm32)", doc)?;
    }
    ci.timed("browser tests in headless Chromium", |tally| {
        test_browser(&toolchain, tally)
    })?;
    ci.timed("demo page end to end in headless Chromium", |tally| {
        e2e_web(&toolchain, tally)
    })?;
    ci.timed(
        "the lean browser package (--no-default-features)",
        |tally| {
            let built = web::build(&toolchain, true, web::Variant::Lean)?;
            web::report(&built);
            tally.passed += 1;
            Ok(())
        },
    )?;
    ci.timed("TypeScript declarations (tsc --strict)", |tally| {
        web::typecheck(&toolchain)?;
        tally.passed += 1;
        Ok(())
    })?;
    eprintln!("\nstep timings:");
    for (name, secs) in &ci.timings {
        eprintln!("  {secs:7.1} s  {name}");
    }
    // The closing line CI reads: every test of every runner, native and in Chromium.
    let Tally { passed, failed } = ci.tally;
    println!("all: {passed} passed, {failed} failed");
    if passed == 0 || failed > 0 {
        return Err(format!("{passed} passed, {failed} failed"));
    }
    Ok(())
}
