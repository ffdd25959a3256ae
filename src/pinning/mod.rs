//! `--pinning-check`: lint for misaligned CPU/IRQ/NUMA affinity.
use crate::cli::Cli;

pub fn run_check(_cli: &Cli) -> anyhow::Result<u8> {
    anyhow::bail!("--pinning-check is not built yet")
}
