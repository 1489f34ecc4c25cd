//! Running commands with their output streamed and their failure explained.

use std::path::PathBuf;
use std::process::Command;

use crate::setup::Toolchain;

/// The workspace root (xtask lives in `<root>/xtask`).
pub(crate) fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
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

    /// Runs to completion; a non-zero exit is an error naming the step.
    pub(crate) fn run(&mut self, name: &str) -> Result<(), String> {
        eprintln!("\n==> {name}\n    $ {}", self.describe());
        let status = self
            .0
            .status()
            .map_err(|e| format!("{name}: cannot start `{}`: {e}", self.describe()))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{name}: `{}` exited with {status}",
                self.describe()
            ))
        }
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
