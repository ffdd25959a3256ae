use std::process::ExitCode;

use clap::Parser;
use nettop::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match nettop::run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("nettop: {e:#}");
            ExitCode::from(2)
        }
    }
}
