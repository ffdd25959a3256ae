//! Interactive ratatui front end over the same Frames batch mode prints.
use std::path::Path;

use crate::cli::Cli;

pub fn run_live(_cli: &Cli) -> anyhow::Result<u8> {
    anyhow::bail!("the interactive TUI is not built yet; use -b")
}

pub fn run_replay(_cli: &Cli, _file: &Path) -> anyhow::Result<u8> {
    anyhow::bail!("the interactive TUI is not built yet; use -b")
}
