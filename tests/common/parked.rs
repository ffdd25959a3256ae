//! Many idle threads in the test process, for tests and benchmarks that
//! need a host (or one process) with thousands of tasks to read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};

/// Stack of each parked thread: they run nothing, so keep them small (the
/// default 2 MiB would make 40,000 of them 80 GB of address space).
const STACK: usize = 64 * 1024;

/// Threads that sleep (parked) until this is dropped, which wakes and joins
/// them; a test that fails midway so leaves none behind.
pub struct ParkedThreads {
    release: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
}

impl ParkedThreads {
    /// Spawns `n` parked threads. When the system refuses one (pid_max,
    /// max_map_count, memory), the ones already spawned are released and
    /// the error says how many there were.
    pub fn spawn(n: usize) -> Result<Self, String> {
        let mut set = ParkedThreads {
            release: Arc::new(AtomicBool::new(false)),
            handles: Vec::with_capacity(n),
        };
        for i in 0..n {
            let release = Arc::clone(&set.release);
            let spawned = thread::Builder::new().stack_size(STACK).spawn(move || {
                // park() may return spuriously: sleep again until released.
                while !release.load(Ordering::Acquire) {
                    thread::park();
                }
            });
            match spawned {
                Ok(h) => set.handles.push(h),
                Err(e) => return Err(format!("created only {i} threads: {e}")),
            }
        }
        Ok(set)
    }
}

impl Drop for ParkedThreads {
    fn drop(&mut self) {
        self.release.store(true, Ordering::Release);
        for h in &self.handles {
            h.thread().unpark();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}
