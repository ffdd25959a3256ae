//! Signals that end a non-interactive run (batch, record, serve).
//!
//! SIGINT, SIGTERM and SIGHUP only set a flag; the loop notices it between
//! samples and unwinds, so a recording gets its end record, BPF programs are
//! detached and the `bpf_stats` setting is restored. SIGHUP is the one a
//! closed terminal or a logged-out ssh session sends: by default it killed
//! the recorder before it could close its file.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;

/// The signals that stop a run cleanly.
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// A flag set by any of [`STOP_SIGNALS`].
pub fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in STOP_SIGNALS {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("cannot install signal handler")?;
    }
    Ok(stop)
}
