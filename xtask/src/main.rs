//! `cargo xtask`: Spool's one entry point for set-up, builds, tests, the demo and
//! benchmarks. Every step runs alone; `test` runs them all in CI's order.

mod cmd;
mod setup;

use std::process::ExitCode;
use std::time::Instant;

use cmd::{Step, cargo, root};

const HELP: &str = "\
cargo xtask <command> [args]

Commands:
  setup [--no-browser]  Install what builds and tests need on a fresh machine: the
                        wasm32-unknown-unknown target (rustup, or Debian's rustc-web +
                        -Zbuild-std as a fallback), wasm-bindgen-cli at the Cargo.lock
                        version, Chromium + chromedriver. Quick when all is present.
  demo [args]           Set up, then run `spool demo` on the embedded SQLite default
                        (./spool.db): a short scripted session through the component.
  test                  Everything CI checks: fmt, clippy (native + wasm32), native
                        tests, component tests, docs, browser tests in headless Chromium.
  ci                    Same as test.
  build-wasm            Build and package the component; print its size.
  check-imports         Check the component imports only Spool's own interfaces.
  test-browser          Run the browser tests (IndexedDB, vectors) in headless Chromium.
  bench                 Run the benchmarks (release build): component + SQLite vs raw SQLite.
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
        "check-imports" => check_imports(),
        "test-browser" => {
            setup::run(&setup::Options { browser: true }).and_then(|t| test_browser(&t))
        }
        "bench" => bench(),
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

fn build_wasm() -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: false })?;
    cargo(&toolchain, &["build", "--package", "spool-host"]).run("build the component and host")?;
    let out = root().join("target/spool.component.wasm");
    cargo(
        &toolchain,
        &[
            "run",
            "--quiet",
            "--package",
            "spool-host",
            "--bin",
            "spool",
            "--",
            "component",
        ],
    )
    .arg(&out)
    .run("export the component")?;
    let size = std::fs::metadata(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .len();
    println!(
        "component: {} ({size} bytes, {:.1} KiB)",
        out.display(),
        size as f64 / 1024.0
    );
    Ok(())
}

fn check_imports() -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: false })?;
    cargo(
        &toolchain,
        &[
            "test",
            "--package",
            "spool-host",
            "--test",
            "component_imports",
        ],
    )
    .run("component imports only spool:engine interfaces")
}

fn test_browser(toolchain: &setup::Toolchain) -> Result<(), String> {
    let mut step = toolchain.wasm_cargo(&[
        "test",
        "--package",
        "spool-web",
        "--target",
        "wasm32-unknown-unknown",
    ]);
    step.env("CHROMEDRIVER", "/usr/bin/chromedriver");
    step.env("WASM_BINDGEN_TEST_TIMEOUT", "120");
    step.run("browser tests in headless Chromium")
}

fn bench() -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: false })?;
    cargo(
        &toolchain,
        &["bench", "--package", "spool-host", "--bench", "append"],
    )
    .run("bench: appends")
}

fn test_all() -> Result<(), String> {
    let toolchain = setup::run(&setup::Options { browser: true })?;
    let mut timings = Vec::new();
    let mut timed = |name: &str, mut step: Step| -> Result<(), String> {
        let t = Instant::now();
        let result = step.run(name);
        timings.push((name.to_owned(), t.elapsed().as_secs_f64()));
        result
    };
    timed("fmt", cargo(&toolchain, &["fmt", "--all", "--", "--check"]))?;
    timed(
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
        timed(
            "clippy wasm32 (core, component, web)",
            cargo(
                &toolchain,
                &[
                    "clippy",
                    "--target",
                    "wasm32-unknown-unknown",
                    "--package",
                    "spool",
                    "--package",
                    "spool-web",
                    "--features",
                    "spool/component",
                    "--all-targets",
                    "--",
                    "-D",
                    "warnings",
                ],
            ),
        )?;
    } else {
        eprintln!("note: clippy for wasm32 needs the rustup route; skipped on the fallback route");
    }
    timed(
        "native tests (core, host through the component, xtask)",
        cargo(&toolchain, &["test", "--workspace"]),
    )?;
    let mut doc = cargo(&toolchain, &["doc", "--workspace", "--no-deps"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    timed("docs", doc)?;
    let t = Instant::now();
    let browser = test_browser(&toolchain);
    timings.push(("browser tests".into(), t.elapsed().as_secs_f64()));
    browser?;
    eprintln!("\nstep timings:");
    for (name, secs) in &timings {
        eprintln!("  {secs:7.1} s  {name}");
    }
    Ok(())
}
