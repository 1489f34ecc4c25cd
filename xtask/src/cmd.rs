//! Running commands with their output streamed and their failure explained.

use std::path::PathBuf;
use std::process::Command;

use crate::setup::Toolchain;

/// The workspace root (xtask lives in `<root>/xtask`). `cargo run` sets
/// `CARGO_MANIFEST_DIR` for the process too; it wins over the compile-time value, which
/// names another checkout when worktrees share a target directory.
pub(crate) fn root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// A command about to run.
pub(crate) struct Step(Command);

impl Step {
    pub(crate) fn new(program: &str) -> Self {
        let mut command = Command::new(program);
        command.current_dir(root());
        Step(command)
    }

    pub(crate) fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.0.args(args);
        self
    }

    pub(crate) fn arg(&mut self, arg: impl AsRef<std::ffi::OsStr>) -> &mut Self {
        self.0.arg(arg);
        self
    }

    pub(crate) fn env(&mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> &mut Self {
        self.0.env(key, value);
        self
    }

    fn describe(&self) -> String {
        let mut text = self.0.get_program().to_string_lossy().into_owned();
        for arg in self.0.get_args() {
            text.push(' ');
            text.push_str(&arg.to_string_lossy());
        }
        text
    }

    /// `Ok` for a successful exit, else an error naming the step and the command.
    fn exited(&self, name: &str, status: std::process::ExitStatus) -> Result<(), String> {
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{name}: `{}` exited with {status}",
                self.describe()
            ))
        }
    }

    /// Runs to completion; a non-zero exit is an error naming the step.
    pub(crate) fn run(&mut self, name: &str) -> Result<(), String> {
        eprintln!("\n==> {name}\n    $ {}", self.describe());
        let status = self
            .0
            .status()
            .map_err(|e| format!("{name}: cannot start `{}`: {e}", self.describe()))?;
        self.exited(name, status)
    }

    /// Runs to completion like [`Step::run`], streaming stdout while it adds up the
    /// `test result: … N passed; M failed` lines of the test runners (cargo test and
    /// wasm-bindgen-test-runner print the same shape).
    pub(crate) fn run_counting(&mut self, name: &str, tally: &mut Tally) -> Result<(), String> {
        self.run_lines(name, |line| {
            tally.read(line);
            true
        })
    }

    /// Runs to completion like [`Step::run`], handing each line of stdout to `line`,
    /// which says whether to echo it.
    pub(crate) fn run_lines(
        &mut self,
        name: &str,
        mut line: impl FnMut(&str) -> bool,
    ) -> Result<(), String> {
        use std::io::{BufRead, BufReader, Write};
        eprintln!("\n==> {name}\n    $ {}", self.describe());
        let mut child = self
            .0
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("{name}: cannot start `{}`: {e}", self.describe()))?;
        if let Some(out) = child.stdout.take() {
            let stdout = std::io::stdout();
            for text in BufReader::new(out).lines().map_while(Result::ok) {
                if line(&text) {
                    let _ = writeln!(stdout.lock(), "{text}");
                }
            }
        }
        let status = child
            .wait()
            .map_err(|e| format!("{name}: waiting for `{}`: {e}", self.describe()))?;
        self.exited(name, status)
    }

    /// Runs quietly and returns stdout; a failure is an error naming the step, with
    /// what the program printed.
    pub(crate) fn output_or_err(&mut self, name: &str) -> Result<String, String> {
        let out = self
            .0
            .output()
            .map_err(|e| format!("{name}: cannot start `{}`: {e}", self.describe()))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        Err(format!(
            "{name}: `{}` exited with {}: {}{}",
            self.describe(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }

    /// Runs and captures stdout; `None` when the program is missing or fails.
    pub(crate) fn output(&mut self) -> Option<String> {
        let out = self.0.output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// `cargo <args>` with the toolchain's environment (the guest cargo for host builds).
pub(crate) fn cargo(toolchain: &Toolchain, args: &[&str]) -> Step {
    let mut step = Step::new(&toolchain.cargo);
    step.args(args);
    toolchain.apply_env(&mut step);
    step
}

/// Test counts added up over several runs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
}

impl Tally {
    /// Adds the counts of a `test result: ok. 3 passed; 0 failed; …` line.
    pub(crate) fn read(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        let count = |word: &str| {
            rest.split([';', '.'])
                .filter_map(|part| part.trim().strip_suffix(word))
                .find_map(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        self.passed += count(" passed");
        self.failed += count(" failed");
    }
}

#[cfg(test)]
#[path = "tests/cmd.rs"]
mod tests;
