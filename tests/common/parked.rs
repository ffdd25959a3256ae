//! Many idle threads in the test process, for tests and benchmarks that
//! need a host (or one process) with thousands of tasks to read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::{self, JoinHandle};

/// Stack of each parked thread: they run nothing, so keep them small (the
/// default 2 MiB would make 40,000 of them 80 GB of address space).
const STACK: usize = 64 * 1024;

/// Threads that sleep (parked) until this is dropped, which wakes and joins
/// them; a test that fails midway so leaves none behind.
pub struct ParkedThreads {
    release: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
    tids: Vec<u32>,
}

impl ParkedThreads {
    /// Spawns `n` parked threads. When the system refuses one (pid_max,
    /// max_map_count, memory), the ones already spawned are released and
    /// the error says how many there were.
    pub fn spawn(n: usize) -> Result<Self, String> {
        let mut set = ParkedThreads {
            release: Arc::new(AtomicBool::new(false)),
            handles: Vec::with_capacity(n),
            tids: Vec::with_capacity(n),
        };
        let (tx, rx) = mpsc::channel();
        for i in 0..n {
            let release = Arc::clone(&set.release);
            let tx = tx.clone();
            let spawned = thread::Builder::new().stack_size(STACK).spawn(move || {
                // SAFETY: gettid has no preconditions.
                let _ = tx.send(unsafe { libc::gettid() } as u32);
                drop(tx);
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
        drop(tx);
        set.tids = rx.iter().collect();
        Ok(set)
    }

    /// The threads' kernel TIDs.
    #[allow(
        dead_code,
        reason = "bench/programs includes this file and asks no TIDs"
    )]
    pub fn tids(&self) -> &[u32] {
        &self.tids
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
