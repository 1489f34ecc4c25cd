//! `spool`: the command-line interface to a Spool session database (see [`cli`]).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
