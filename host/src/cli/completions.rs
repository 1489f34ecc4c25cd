//! `spool completions SHELL`: a completion script generated from the CLI's own
//! definition, so it never drifts from the subcommands and options.

use std::io::Write;

use clap_complete::Shell;

/// Writes the completion script for `shell` to stdout (a closed stdout ends quietly).
pub(crate) fn write(shell: Shell, command: &mut clap::Command) {
    let mut script = Vec::new();
    clap_complete::generate(shell, command, "spool", &mut script);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(&script).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error[io]: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}
