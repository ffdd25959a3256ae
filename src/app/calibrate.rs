//! `nettop --calibrate`: measure again, replace the cache, print the table.

use anyhow::{Context, Result, bail};

use crate::app::cli::Cli;
use crate::sys::sysroot::Sysroot;

pub fn run(cli: &Cli) -> Result<u8> {
    let root = Sysroot::new(&cli.sysroot);
    if !root.is_live() {
        bail!(
            "--calibrate measures the running machine; it cannot use --sysroot {}",
            root.root().display()
        );
    }
    if cli.no_bpf {
        bail!("--calibrate needs the BPF collector: it compares gaps with traced time");
    }
    let dir = crate::calibrate::cache::dir(cli.cache_dir.as_deref());
    let c = crate::calibrate::recalibrate(&root, &dir)?;
    let out = if cli.json {
        serde_json::to_string(&c).context("encoding the calibration")? + "\n"
    } else {
        crate::output::calibration::render_table(&c)
    };
    print!("{out}");
    Ok(0)
}
