//! The one schedule every periodic loop follows: batch (`-b`), `--record`,
//! `--serve`, the TUI's data thread, its replay playback and its topology
//! refresh. (Single waits, such as one measurement interval, and the
//! calibration's IPI generator, whose rate is what it counts, are not
//! schedules.)
//!
//! Deadlines are kept on a grid (`start + k × period`) so the sampling and
//! printing time does not make frames drift. When the process could not run
//! for a while (SIGSTOP, a stalled disk, a suspended VM), the grid points it
//! missed are **skipped**, not caught up: the next tick fires once, at
//! once, and the schedule restarts from there. A naive grid loop fires every
//! missed deadline back to back, and each of those frames spans a few
//! milliseconds — less than one clock tick of /proc's utime/stime — which
//! gave TOP% of 268 % on 2 CPUs and CPU modes summing to 0 %. Skipping makes
//! the stall one long interval, which the model computes over its real
//! length (it divides by the samples' monotonic-clock gap), and no interval
//! after it is shorter than half a period.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest single sleep, so a stop request is seen promptly.
const SLICE: Duration = Duration::from_millis(50);

#[derive(Clone, Debug)]
pub struct Ticker {
    period: Duration,
    next: Instant,
    skipped: u64,
}

/// Why [`Ticker::sleep`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The deadline passed; the ticker has moved on to the next one.
    Tick,
    /// The stop flag was set.
    Stop,
    /// The `until` instant passed before the deadline (the tick is not consumed).
    Until,
}

impl Ticker {
    /// First deadline one `period` from now.
    pub fn new(period: Duration) -> Ticker {
        Ticker::starting_at(Instant::now(), period)
    }

    /// First deadline at `start + period`. A zero period is treated as 1 ms
    /// so that a loop can never spin.
    pub fn starting_at(start: Instant, period: Duration) -> Ticker {
        let period = period.max(Duration::from_millis(1));
        Ticker {
            period,
            next: start + period,
            skipped: 0,
        }
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    /// When the next tick is due.
    pub fn deadline(&self) -> Instant {
        self.next
    }

    /// Ticks dropped after stalls since the ticker started.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Consumes the due tick at time `now`. Normally the deadline moves one
    /// period on along the grid; when `now` is more than half a period past
    /// it, the missed grid points are dropped and the next deadline is
    /// `now + period`, so the following interval is a full one.
    pub fn advance(&mut self, now: Instant) {
        let late = now.saturating_duration_since(self.next);
        if late > self.period / 2 {
            let p = self.period.as_nanos().max(1);
            self.skipped += u64::try_from(late.as_nanos() / p).unwrap_or(u64::MAX);
            self.next = now + self.period;
        } else {
            self.next += self.period;
        }
    }

    /// A new period from `now` on (the TUI's `d` key).
    pub fn set_period(&mut self, period: Duration, now: Instant) {
        self.period = period.max(Duration::from_millis(1));
        self.next = now + self.period;
    }

    /// Sleeps until the deadline (then consumes it), until `stop` is set, or
    /// until `until` passes, whichever comes first. Sleeps in short slices
    /// so that a signal handler's flag is noticed within [`SLICE`].
    pub fn sleep(&mut self, stop: &AtomicBool, until: Option<Instant>) -> Wake {
        self.sleep_on(&SystemClock, stop, until)
    }

    /// [`Ticker::sleep`] on any clock (tests run it on a fake one).
    pub fn sleep_on(
        &mut self,
        clock: &impl Clock,
        stop: &AtomicBool,
        until: Option<Instant>,
    ) -> Wake {
        loop {
            if stop.load(Ordering::Relaxed) {
                return Wake::Stop;
            }
            let now = clock.now();
            if now >= self.next {
                self.advance(now);
                return Wake::Tick;
            }
            if until.is_some_and(|u| now >= u) {
                return Wake::Until;
            }
            let target = until.map_or(self.next, |u| u.min(self.next));
            clock.sleep(target.saturating_duration_since(now).min(SLICE));
        }
    }
}

/// Where [`Ticker::sleep_on`] reads the time and waits.
pub trait Clock {
    fn now(&self) -> Instant;
    fn sleep(&self, d: Duration);
}

/// The monotonic clock and `thread::sleep`.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Duration = Duration::from_millis(100);

    #[test]
    fn on_time_ticks_stay_on_the_grid() {
        let t0 = Instant::now();
        let mut t = Ticker::starting_at(t0, P);
        for k in 1..=5u32 {
            // A little late each time: the grid does not drift.
            t.advance(t0 + P * k + Duration::from_millis(7));
            assert_eq!(t.deadline(), t0 + P * (k + 1));
        }
        assert_eq!(t.skipped(), 0);
    }

    #[test]
    fn a_stall_is_one_long_interval_not_a_burst() {
        let t0 = Instant::now();
        let mut t = Ticker::starting_at(t0, P);
        // Stopped for 10 s: woken at 10.03 s, 99 grid points late.
        let woke = t0 + Duration::from_millis(10_030);
        t.advance(woke);
        assert_eq!(t.deadline(), woke + P, "next tick a full period later");
        assert_eq!(t.skipped(), 99);
        // Then back on a grid from there.
        t.advance(woke + P);
        assert_eq!(t.deadline(), woke + P * 2);
    }

    #[test]
    fn no_interval_after_a_late_tick_is_shorter_than_half_a_period() {
        let t0 = Instant::now();
        for late_ms in 0..300u64 {
            let mut t = Ticker::starting_at(t0, P);
            let fired = t0 + P + Duration::from_millis(late_ms);
            t.advance(fired);
            let gap = t.deadline() - fired;
            assert!(gap >= P / 2, "late {late_ms} ms: next in {gap:?}");
        }
    }

    #[test]
    fn sleep_stops_and_honours_until() {
        let stop = AtomicBool::new(false);
        let mut t = Ticker::new(Duration::from_secs(60));
        let until = Instant::now() + Duration::from_millis(30);
        assert_eq!(t.sleep(&stop, Some(until)), Wake::Until);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(t.sleep(&stop, None), Wake::Stop);
        let stop = AtomicBool::new(false);
        let mut t = Ticker::new(Duration::from_millis(20));
        assert_eq!(t.sleep(&stop, None), Wake::Tick);
    }

    /// Time passes only when the ticker sleeps or the loop "works"; like
    /// a real sleep, each one overshoots a little (timer slack, scheduling).
    struct FakeClock {
        now: std::cell::Cell<Instant>,
        seed: std::cell::Cell<u64>,
    }
    impl FakeClock {
        /// Deterministic 0..n µs.
        fn jitter_us(&self, n: u64) -> Duration {
            let s = self
                .seed
                .get()
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.seed.set(s);
            Duration::from_micros((s >> 33) % n)
        }
        fn pass(&self, d: Duration) {
            self.now.set(self.now.get() + d);
        }
    }
    impl Clock for FakeClock {
        fn now(&self) -> Instant {
            self.now.get()
        }
        fn sleep(&self, d: Duration) {
            self.pass(d + self.jitter_us(2_000));
        }
    }

    #[test]
    fn a_loop_that_works_between_ticks_does_not_drift() {
        let t0 = Instant::now();
        let clock = FakeClock {
            now: std::cell::Cell::new(t0),
            seed: std::cell::Cell::new(12345),
        };
        let stop = AtomicBool::new(false);
        let mut t = Ticker::starting_at(t0, P);
        for k in 1..=10_000u32 {
            // Sampling and printing take 0-40 ms, differently each time.
            clock.pass(clock.jitter_us(40_000));
            assert_eq!(t.sleep_on(&clock, &stop, None), Wake::Tick);
            // Each tick is at most one sleep's overshoot after its grid
            // point: lateness does not add up over 10,000 periods.
            let late = clock.now() - (t0 + P * k);
            assert!(late < Duration::from_millis(2), "tick {k} late by {late:?}");
        }
        assert_eq!(t.skipped(), 0);
    }

    #[test]
    fn zero_period_cannot_spin() {
        let t0 = Instant::now();
        let t = Ticker::starting_at(t0, Duration::ZERO);
        assert!(t.deadline() > t0);
    }
}
