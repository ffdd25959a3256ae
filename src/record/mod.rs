//! `--record`: raw snapshots to a versioned, crash-safe file; reader for replay.
use std::path::Path;

use crate::cli::Cli;

pub fn run_record(_cli: &Cli, _file: &Path) -> anyhow::Result<u8> {
    anyhow::bail!("--record is not built yet")
}
