//! The TUI's signals and its watchdog: runner work, since it ends the
//! process. SIGTERM/SIGHUP/SIGINT only set a flag the TUI's loop watches
//! (`ui::run`); the watchdog covers the cases where that loop cannot get
//! back to it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Registers the signals that end the TUI and starts the watchdog.
/// Returns the flag: the number of the signal that came, 0 while none.
pub fn install() -> anyhow::Result<Arc<AtomicUsize>> {
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
    ] {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)?;
    }
    spawn_watchdog(Arc::clone(&signal));
    Ok(signal)
}

/// How long the event loop gets to notice a signal and unwind on its own.
const SIGNAL_GRACE: Duration = Duration::from_millis(1500);
/// How often the watchdog looks at the terminal and the signal flag.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// Makes SIGTERM/SIGHUP and a vanished terminal end nettop even when the
/// event loop cannot notice them. On a hung-up terminal, crossterm's reader
/// spins inside `event::poll` (`read()` returns 0 forever, a whole CPU),
/// so the loop may never get back to the signal flag; and a terminal can
/// disappear without SIGHUP reaching us (another process group in the
/// foreground). A hung-up terminal ends nettop at once: there is nothing to
/// restore on it, and every moment spent waiting is a CPU burnt. After a
/// signal the loop gets [`SIGNAL_GRACE`] to unwind on its own (restoring
/// the terminal); then this thread restores it as far as it still exists
/// and exits with 128+signal. Exiting without unwinding is safe for kernel
/// state: BPF links and the bpf_stats handle are file descriptors the
/// kernel releases with the process, and an unjudged apply is restored
/// first.
fn spawn_watchdog(signal: Arc<AtomicUsize>) {
    std::thread::spawn(move || {
        let mut since: Option<Instant> = None;
        loop {
            std::thread::sleep(WATCH_EVERY);
            let hung_up = crate::ui::terminal_hung_up();
            if hung_up {
                signal.store(signal_hook::consts::SIGHUP as usize, Ordering::Relaxed);
            }
            let sig = signal.load(Ordering::Relaxed);
            if sig == 0 {
                continue;
            }
            let waited = since.get_or_insert_with(Instant::now).elapsed();
            if hung_up || waited >= SIGNAL_GRACE {
                // Changes an apply (`P`) wrote and has not judged yet
                // outlive the process: undo them before the exit that
                // skips every destructor.
                crate::plan::steps::restore_all_armed();
                if !hung_up {
                    crate::ui::restore_terminal();
                }
                std::process::exit(128 + sig as i32);
            }
        }
    });
}
