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

/// For a long-running recorder (`--record DIR`, or `--record` with
/// `--serve`): SIGINT and SIGTERM stop, SIGHUP sets the second flag, asking
/// for the output to be reopened (after logrotate, or `systemctl reload`).
/// A service has no terminal to lose, so the hang-up signal is free for
/// the daemon convention.
pub fn service_flags() -> anyhow::Result<(Arc<AtomicBool>, Arc<AtomicBool>)> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("cannot install signal handler")?;
    }
    let reopen = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reopen))
        .context("cannot install signal handler")?;
    Ok((stop, reopen))
}
