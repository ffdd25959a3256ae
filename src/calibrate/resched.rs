//! Reschedule IPIs for the calibration: a thread that sleeps on the
//! spinner's CPU, woken from the sender's CPU.
//!
//! A wake-up of a task on another CPU that must preempt what runs there is
//! a `reschedule` IPI to that CPU; on the way out of it the scheduler
//! switches to the woken task, which runs, sleeps again, and the spinner
//! gets its CPU back. That is what a busy task pays when a thread sharing
//! its CPU is woken from elsewhere (a server thread woken by another CPU's
//! network work, a lock hand-over). The woken thread is SCHED_FIFO so every
//! wake-up preempts (a fair-class wakee may wait for the tick instead, with
//! no IPI). Its own run time is its own (nettop shows it on its row): the
//! calibration takes it out of the spinner's gaps, per wake-up
//! ([`Woken::cpu_ns`]). Needs CAP_SYS_NICE; without it the class is charged
//! as an IPI and the table says why.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow};

use crate::sys::clock::thread_cputime_ns;

/// What the woken thread did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Woken {
    /// Its CPU time in those wake-ups, ns.
    pub cpu_ns: u64,
    /// The median of its CPU time per wake-up, 0 without any. The plain mean holds the
    /// wake-ups whose gaps the census left out (a hypervisor stall in the
    /// woken thread's run, another interruption in it); on a busy host
    /// they are a tail too wide even for the far-outlier cut the gaps get
    /// ([`super::robust::robust`]). Set against the clean gaps' cost, the
    /// mean gave back 4–30 µs per wake-up in fourteen calibrations of one
    /// busy hour, the trimmed mean 3–15, the median 2–6 (BENCHMARKS.md).
    pub per_wake_ns: f64,
}

/// Deltas of the woken thread's CPU clock kept, one per wake-up: some
/// seconds of wake-ups at the calibration's rate, allocated before the
/// first so the loop does not allocate.
const MAX_WAKES: usize = 1 << 14;

/// The sleeping thread and the eventfd that wakes it; stopped on drop.
pub struct Waker {
    fd: Arc<OwnedFd>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Woken>>,
}

fn write_one(fd: &OwnedFd) -> io::Result<()> {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64 to an eventfd we own.
    let rc = unsafe { libc::write(fd.as_raw_fd(), std::ptr::addr_of!(one).cast(), 8) };
    if rc != 8 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn read_one(fd: &OwnedFd) -> io::Result<()> {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64 from an eventfd we own.
    let rc = unsafe { libc::read(fd.as_raw_fd(), std::ptr::addr_of_mut!(v).cast(), 8) };
    if rc != 8 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the calling thread SCHED_FIFO at the lowest real-time priority.
fn make_fifo() -> io::Result<()> {
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: sets the calling thread's policy from a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Waker {
    /// Starts the sleeper on `cpu`, pinned there by `pin`; an error says
    /// why there can be none (no CAP_SYS_NICE, CPU not allowed).
    pub fn new(cpu: u32, pin: fn(u32) -> io::Result<()>) -> Result<Waker> {
        // SAFETY: eventfd(2) with valid flags; a non-negative result is a
        // new descriptor nobody else owns.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(anyhow!(io::Error::last_os_error()).context("eventfd"));
        }
        // SAFETY: `raw` was just returned by the kernel (see above).
        let fd = Arc::new(unsafe { OwnedFd::from_raw_fd(raw) });
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        let thread = {
            let (fd, stop) = (fd.clone(), stop.clone());
            std::thread::Builder::new()
                .name("nettop-woken".into())
                .spawn(move || {
                    let setup = pin(cpu)
                        .with_context(|| format!("pinning to CPU {cpu}"))
                        .and_then(|()| make_fifo().context("SCHED_FIFO (CAP_SYS_NICE?)"));
                    let ok = setup.is_ok();
                    let _ = ready_tx.send(setup);
                    let mut w = Woken::default();
                    if !ok {
                        return w;
                    }
                    // Each delta runs from one return from read to the
                    // next: the end of one run and the start of the next,
                    // one wake-up's billing in all.
                    let mut per_wake: Vec<f64> = Vec::with_capacity(MAX_WAKES);
                    let c0 = thread_cputime_ns();
                    let mut last = c0;
                    while read_one(&fd).is_ok() && !stop.load(Ordering::Relaxed) {
                        let now = thread_cputime_ns();
                        if per_wake.len() < MAX_WAKES {
                            per_wake.push(now.saturating_sub(last) as f64);
                        }
                        last = now;
                    }
                    w.cpu_ns = thread_cputime_ns().saturating_sub(c0);
                    w.per_wake_ns = super::robust::robust(&per_wake).1;
                    w
                })
                .context("starting the woken thread")?
        };
        let mut waker = Waker {
            fd,
            stop,
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(waker),
            Ok(Err(e)) => {
                waker.finish();
                Err(e)
            }
            Err(_) => {
                waker.finish();
                Err(anyhow!("the woken thread died"))
            }
        }
    }

    /// Wakes the sleeper (one reschedule IPI to its CPU when it preempts
    /// what runs there).
    pub fn kick(&self) -> Result<()> {
        write_one(&self.fd).context("eventfd write")
    }

    /// Stops the sleeper and says what it did.
    pub fn finish(&mut self) -> Woken {
        self.stop.store(true, Ordering::Relaxed);
        let _ = write_one(&self.fd);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}
