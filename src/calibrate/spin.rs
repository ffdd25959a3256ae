//! The instruments of the calibration: a pinned thread that spins on the
//! clock and records every gap in its own execution, and a sender that makes
//! interruptions of a known kind arrive on the spinner's CPU.
//!
//! A gap is time the spinner did not run between two clock reads: with
//! nothing else runnable on its CPU, that is an interruption, from the first
//! instruction of the entry code to the return to user space, VM exits
//! included. BPF traces only the part between the tracepoints; the spinner
//! reads the collector's per-CPU counters itself right before and after its
//! window, so the two cover the same interruptions.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::collector::bpf::{Probe, ProbeCounts};
use crate::sample::NR_INTR_CLASSES;
use crate::sys::clock::thread_cputime_ns;

/// A clock-read step longer than the loop's own step by more than this is
/// an interruption. No interrupt entry and exit costs less than ~1 µs even on
/// bare metal; the loop's own jitter stays well below this.
pub const GAP_THRESHOLD_NS: u64 = 300;

/// One gap in the spinner's execution and what BPF traced inside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gap {
    /// Start of the gap, ns since the start of its window.
    pub at_ns: u64,
    /// Length beyond one loop step.
    pub len_ns: u64,
    /// Traced hardirq + softirq time inside it.
    pub traced_ns: u64,
    /// Outermost hardirqs inside it by class (`sample::INTR_CLASSES`).
    pub intr: [u64; NR_INTR_CLASSES],
    pub softirqs: u64,
}

impl Gap {
    pub fn interruptions(&self) -> u64 {
        self.intr.iter().sum()
    }
}

/// What the spinner saw in one window.
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub cpu: u32,
    /// Length of the window.
    pub wall_ns: u64,
    /// Shortest loop step (one clock read), measured before the window.
    pub step_ns: u64,
    pub gaps: Vec<Gap>,
    /// Interruptions the probe counted in the window but in no gap (too
    /// short to cross the threshold, or after the last clock read): the
    /// census is complete when this is 0.
    pub outside_gaps: u64,
    /// The spinner's own CPU time over the window (CLOCK_THREAD_CPUTIME_ID).
    pub cputime_ns: u64,
    /// Context switches of the spinner in the window: another task ran in
    /// some gap.
    pub ctx_switches: u64,
    /// The sender sent in this window (false: a quiet window of a
    /// differential measure, see [`Schedule::quiet_odd`]).
    pub induced: bool,
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: u32) -> io::Result<()> {
    let cpu = cpu as usize;
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cpu {cpu} out of range"),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is a valid
    // (empty) value; CPU_SET writes inside it (index checked above), and
    // sched_setaffinity reads exactly size_of bytes of it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn thread_ctx_switches() -> u64 {
    // SAFETY: rusage is plain data for which all-zero is valid; getrusage
    // writes one struct into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid, writable rusage pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_nvcsw as u64).wrapping_add(ru.ru_nivcsw as u64)
}

/// Shortest step of the clock-read loop over `dur`.
fn measure_step(dur: Duration) -> u64 {
    let start = Instant::now();
    let mut last = 0u64;
    let mut min = u64::MAX;
    let end = dur.as_nanos() as u64;
    loop {
        let now = start.elapsed().as_nanos() as u64;
        let dt = now - last;
        last = now;
        min = min.min(dt.max(1));
        if now >= end {
            return min;
        }
    }
}

fn delta(a: &ProbeCounts, b: &ProbeCounts) -> Gap {
    let mut g = Gap {
        traced_ns: b.traced_ns.wrapping_sub(a.traced_ns),
        softirqs: b.softirq_runs.wrapping_sub(a.softirq_runs),
        ..Default::default()
    };
    for (d, (x, y)) in g.intr.iter_mut().zip(a.intr.iter().zip(&b.intr)) {
        *d = y.wrapping_sub(*x);
    }
    g
}

/// Spins on the calling thread for `dur`; the thread must be pinned to the
/// CPU `probe` watches. After every gap the probe is read, so each gap
/// carries exactly the traced time and interruptions that happened in it.
pub fn spin_window(probe: &Probe<'_>, cpu: u32, dur: Duration) -> Window {
    let step = measure_step(Duration::from_millis(2));
    let mut gaps: Vec<Gap> = Vec::with_capacity(1 << 14);
    let csw0 = thread_ctx_switches();
    let cpu0 = thread_cputime_ns();
    let mut seen = probe.read();
    let start = Instant::now();
    let end = dur.as_nanos() as u64;
    let limit = step + GAP_THRESHOLD_NS;
    let mut last = 0u64;
    let wall = loop {
        let now = start.elapsed().as_nanos() as u64;
        let dt = now - last;
        last = now;
        if dt > limit {
            let mut g = delta(&seen, &probe.read());
            g.at_ns = now - dt;
            g.len_ns = dt - step;
            gaps.push(g);
            // The bookkeeping above is the spinner's own work, not a loss:
            // the next step and the next count start after it. Left in the
            // next step, it read as a gap of its own after most real ones
            // (a debug build: 7–14 % of the CPU "untraced", 1.5 % without).
            seen = probe.read();
            last = start.elapsed().as_nanos() as u64;
        }
        if now >= end {
            break now;
        }
    };
    let rest = delta(&seen, &probe.read());
    let cpu1 = thread_cputime_ns();
    let csw1 = thread_ctx_switches();
    Window {
        cpu,
        wall_ns: wall,
        step_ns: step,
        gaps,
        outside_gaps: rest.interruptions(),
        cputime_ns: cpu1.saturating_sub(cpu0),
        ctx_switches: csw1.saturating_sub(csw0),
        induced: true,
    }
}

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> io::Result<()> {
    // SAFETY: membarrier(2) takes two integers and a CPU id, no memory.
    let rc = unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Lets this process use expedited private membarriers (process-wide, once).
pub fn register_ipi_sender() -> Result<()> {
    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
        .context("membarrier(REGISTER_PRIVATE_EXPEDITED) failed (CONFIG_MEMBARRIER?)")
}

/// What the sender did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    /// Pure IPIs (membarriers).
    pub ipis: u64,
    /// Loopback RPS datagrams (IPI + NET_RX each), when set up.
    pub rps: u64,
    /// TLB shootdowns ([`super::tlb`]), when set up.
    pub tlb: u64,
    /// Why there were no TLB shootdowns.
    pub tlb_error: Option<String>,
    /// Wake-ups of a thread sleeping on the spinner's CPU
    /// ([`super::resched`]), when set up, and what that thread did.
    pub resched: u64,
    pub resched_error: Option<String>,
    pub woken: super::resched::Woken,
    /// Why the local timer was not induced on the spinner's CPU
    /// ([`super::hrtimer`]).
    pub timer_error: Option<String>,
    /// Why there were no RPS datagrams.
    pub rps_error: Option<String>,
    /// CPU time of the loopback receiver thread, ns.
    pub receiver_cpu_ns: u64,
}

/// When the spinner measures: `windows` windows of `window`, one every
/// `every` from `start`. The sender sends only inside them (plus the
/// spinner's step measurement before each), so spacing the windows out costs
/// no CPU, and the table averages over the hypervisor's changing states
/// (on the development VM a vCPU's interruptions cost ~2.8 or ~3.6 µs
/// depending on the state it is in, switching every few hundred ms).
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub start: Instant,
    pub windows: u32,
    pub window: Duration,
    pub every: Duration,
    /// The sender leaves every odd window quiet (a differential measure).
    pub quiet_odd: bool,
    /// The window in which the sender induces TLB shootdowns and wake-ups
    /// (its first two thirds) and the local timer (its last); every other
    /// induced window has the IPI and the RPS datagram only. Apart, because
    /// mixed into the IPI's windows they moved its calibrated cost by up to
    /// 1.6 µs between runs and the RPS and IPI oracles missed by up to 11
    /// points (BENCHMARKS.md): each class's gaps are then measured without
    /// the others' after-effects.
    pub classes_window: Option<u32>,
    /// Its length: longer than the others, as it holds three classes.
    pub classes_len: Duration,
}

/// The spinner measures its loop step for this long before each window.
const STEP_PROBE: Duration = Duration::from_millis(2);

impl Schedule {
    pub fn window_start(&self, i: u32) -> Instant {
        self.start + self.every * i
    }

    pub fn window_len(&self, i: u32) -> Duration {
        if self.classes_window == Some(i) {
            self.classes_len
        } else {
            self.window
        }
    }

    /// Whether the sender leaves window `i` alone.
    pub fn quiet(&self, i: u32) -> bool {
        self.quiet_odd && i % 2 == 1
    }

    /// Runs `spin_window` at every window's start on the calling thread.
    pub fn spin(&self, probe: &Probe<'_>, cpu: u32) -> Vec<Window> {
        (0..self.windows)
            .map(|i| {
                sleep_until(self.window_start(i));
                let mut w = spin_window(probe, cpu, self.window_len(i));
                w.induced = !self.quiet(i);
                w
            })
            .collect()
    }
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// Busy-waits until `t`, so the sender does not halt between two IPIs: a
/// vCPU that halts and wakes for each IPI makes the hypervisor do work no
/// real interrupt source causes (a busy RPS CPU, a device). On the
/// development VM the difference was within the noise of the host's states
/// (BENCHMARKS.md); this keeps the measured load like the real one.
fn spin_until(t: Instant) {
    while Instant::now() < t {
        std::hint::spin_loop();
    }
}

/// The local timer's note when the calibration had only natural ticks.
const NOT_INDUCED: &str = "not induced (natural ticks only)";

/// Turns a wake-up takes, so the woken thread's run is over before the
/// next interruption.
const WAKE_TURNS: u32 = 3;

/// What the sender's next turn induces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ipi,
    Rps,
    Tlb,
    Resched,
}

/// Sends IPIs inside the windows of `sched` until `stop`, from the calling
/// (pinned) thread, one every `period`, paced by spinning (see
/// [`spin_until`]). An expedited private membarrier interrupts every other
/// CPU that runs one of this process's threads right now: with the spinner
/// the only other running thread, that is one `call_function_single` IPI
/// to the spinner's CPU, the vector RPS uses. Turns alternate between that
/// and (with `rps_to`) a loopback RPS datagram, which reaches that CPU as
/// the same IPI with a NET_RX softirq in its tail ([`super::rps`]); in
/// [`Schedule::classes_window`] between a TLB shootdown ([`super::tlb`])
/// and (with `rps_to`) a wake-up of a thread sleeping on that CPU, a
/// reschedule IPI ([`super::resched`]), then local timer interrupts every
/// `period` on that CPU ([`super::hrtimer`]). What cannot be set up is left
/// out and the reason returned.
pub fn send_ipis(
    stop: &AtomicBool,
    sched: &Schedule,
    period: Duration,
    rps_to: Option<u32>,
) -> Result<Sent> {
    let mut sent = Sent::default();
    let rps = match rps_to.map(super::rps::LoopbackRps::new) {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            sent.rps_error = Some(format!("{e:#}"));
            None
        }
        None => None,
    };
    let tlb = match super::tlb::Shooter::new() {
        Ok(t) => Some(t),
        Err(e) => {
            sent.tlb_error = Some(format!("{e:#}"));
            None
        }
    };
    let mut waker = match rps_to.map(|cpu| super::resched::Waker::new(cpu, pin_to_cpu)) {
        Some(Ok(w)) => Some(w),
        Some(Err(e)) => {
            sent.resched_error = Some(format!("{e:#}"));
            None
        }
        None => None,
    };
    // A timer interrupt's gap is ~13 µs on the development VM (~6 µs of it
    // the traced handler): every other turn, so each gap stays one sample.
    let timer = match rps_to.map(|cpu| super::hrtimer::PinnedTimer::new(cpu, period * 2)) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            sent.timer_error = Some(format!("{NOT_INDUCED}: {e:#}"));
            None
        }
        None => None,
    };
    // Turns alternate, in the IPI's windows, between a pure IPI and (when
    // set up) an RPS datagram, as they always did; in the classes' window
    // between a TLB shootdown and a wake-up (those set up; a pure IPI when
    // neither is).
    let ipi_kinds: Vec<Kind> = [Some(Kind::Ipi), rps.as_ref().map(|_| Kind::Rps)]
        .into_iter()
        .flatten()
        .collect();
    let class_kinds: Vec<Kind> = [
        tlb.as_ref().map(|_| Kind::Tlb),
        waker.as_ref().map(|_| Kind::Resched),
    ]
    .into_iter()
    .flatten()
    .collect();
    let period = period.max(Duration::from_micros(1));
    'windows: for i in 0..sched.windows {
        if sched.quiet(i) {
            continue;
        }
        let start = sched.window_start(i);
        let len = sched.window_len(i);
        let end = start + STEP_PROBE + len + Duration::from_millis(1);
        sleep_until(start);
        let mut next = Instant::now();
        let mut turn = 0usize;
        let classes = sched.classes_window == Some(i);
        let kinds = if classes && !class_kinds.is_empty() {
            &class_kinds
        } else {
            &ipi_kinds
        };
        // The timer's third: the sender leaves the spinner to it.
        let timer_from = match (&timer, classes) {
            (Some(_), true) if class_kinds.is_empty() => Some(start),
            (Some(_), true) => Some(start + STEP_PROBE + len * 2 / 3),
            _ => None,
        };
        while Instant::now() < timer_from.unwrap_or(end) {
            if stop.load(Ordering::Relaxed) {
                break 'windows;
            }
            match (kinds[turn % kinds.len()], &rps, &tlb, &waker) {
                (Kind::Rps, Some(r), _, _) => {
                    r.kick()?;
                    sent.rps += 1;
                }
                (Kind::Tlb, _, Some(t), _) => {
                    t.shoot()?;
                    sent.tlb += 1;
                }
                (Kind::Resched, _, _, Some(w)) => {
                    w.kick()?;
                    sent.resched += 1;
                }
                _ => {
                    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
                        .context("membarrier(PRIVATE_EXPEDITED)")?;
                    sent.ipis += 1;
                }
            }
            // A wake-up's gap holds the woken thread's whole run (15–23 µs
            // on the development VM): the next turn waits it out, or its
            // IPI lands in the same gap and neither is a clean sample.
            next += if kinds[turn % kinds.len()] == Kind::Resched {
                period * WAKE_TURNS
            } else {
                period
            };
            turn += 1;
            spin_until(next);
        }
        if let (Some(t), Some(from)) = (&timer, timer_from) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let on = Instant::now().max(from);
            sleep_until(on);
            // A timer that cannot be switched costs the class its induced
            // gaps, not the calibration: the natural ticks remain, and the
            // event stops when `timer` is dropped below at the latest.
            match t.enable() {
                Ok(()) => {
                    sleep_until(end);
                    if let Err(e) = t.disable() {
                        sent.timer_error = Some(format!("induced, but not switched off: {e:#}"));
                    }
                }
                Err(e) => sent.timer_error = Some(format!("{NOT_INDUCED}: {e:#}")),
            }
        }
    }
    if let Some(r) = rps {
        sent.receiver_cpu_ns = r.finish();
    }
    if let Some(w) = waker.as_mut() {
        sent.woken = w.finish();
    }
    if sent.ipis == 0 {
        bail!("the IPI sender never ran");
    }
    Ok(sent)
}
