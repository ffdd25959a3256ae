//! `nettop -b`: top-style text frames, or one JSON object per frame.
use std::path::Path;

use crate::cli::Cli;

pub fn run_live(_cli: &Cli) -> anyhow::Result<u8> {
    anyhow::bail!("batch mode is not built yet")
}

pub fn run_replay(_cli: &Cli, _file: &Path) -> anyhow::Result<u8> {
    anyhow::bail!("batch replay is not built yet")
}
