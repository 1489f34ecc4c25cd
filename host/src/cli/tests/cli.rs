use clap::CommandFactory;

use super::{COMMANDS, Cli};

/// Every leaf subcommand, as its path (`fork run`).
fn leaves(command: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in command.get_subcommands() {
        let name = format!("{path}{}", sub.get_name());
        if sub.has_subcommands() {
            leaves(sub, &format!("{name} "), out);
        } else {
            out.push((name, sub.clone()));
        }
    }
}

#[test]
fn test_help_lists_every_subcommand() {
    for sub in Cli::command().get_subcommands() {
        let listed = COMMANDS
            .lines()
            .any(|line| line.split_whitespace().next() == Some(sub.get_name()));
        assert!(listed, "`spool --help` does not list `{}`", sub.get_name());
    }
}

#[test]
fn test_every_subcommand_has_json() {
    // Not JSON by nature: a shell script, JSON Lines, the wasm bytes on stdout; or
    // always JSON (`call`).
    let exempt = ["completions", "export", "call"];
    let mut all = Vec::new();
    leaves(&Cli::command(), "", &mut all);
    for (name, command) in all {
        if exempt.contains(&name.as_str()) {
            continue;
        }
        assert!(
            command.get_arguments().any(|a| a.get_id() == "json"),
            "`spool {name}` has no --json"
        );
    }
}
