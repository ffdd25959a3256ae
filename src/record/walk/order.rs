//! Time order within a recording: which sample comes before which, and
//! which samples a random access must decode to know it.
//!
//! Within one boot the monotonic clock orders samples (the wall clock can
//! step). Across boots it restarts, and only the wall clock goes on. So
//! each readable sample carries two numbers: its monotonic clock, and when
//! its boot began by the wall clock (its time minus its monotonic clock).
//! The second is the same for every sample of one boot, and jumps forward
//! by at least the old boot's uptime at a reboot; that tells a sample taken
//! earlier on the same boot (out of order: skipped) from the first sample
//! of a new boot (a new baseline).

use super::{LOOK, Skip};
use crate::record::{Recording, Window};
use crate::sample::RawSample;

/// How far apart two samples' boot starts may be and still be one boot:
/// the milliseconds between reading the two clocks, with room for a
/// preempted collector. A step of the wall clock (NTP steps from 128 ms)
/// or a suspend (which the monotonic clock does not count) looks like
/// another boot: a sample out of order across one becomes a new baseline,
/// as at a reboot. Kept below common intervals, so a random access in an
/// ordered recording at 500 ms or more decodes no sample it does not use.
const SAME_BOOT_MS: i128 = 250;

/// The clocks of one readable sample: all the ordering needs, so a walk
/// keeps the last few without keeping the samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    pub mono_ns: u64,
    /// When the sample's boot began by the wall clock, in ms.
    boot_ms: i128,
}

impl Stamp {
    /// `unix_ms` is the index's time of the sample: the header's, which the
    /// writer takes from the sample and the checksum covers, so that a
    /// random access can rule samples out by the index alone
    /// ([`may_outrun`]).
    pub fn new(s: &RawSample, unix_ms: u64) -> Stamp {
        Stamp {
            mono_ns: s.mono_ns,
            boot_ms: i128::from(unix_ms) - i128::from(s.mono_ns / 1_000_000),
        }
    }

    /// Whether this sample, earlier in the file, shows `cur` out of order:
    /// the same boot, and its monotonic clock at or after `cur`'s.
    pub fn outruns(self, cur: Stamp) -> bool {
        (self.boot_ms - cur.boot_ms).abs() < SAME_BOOT_MS && self.mono_ns >= cur.mono_ns
    }
}

/// Whether a sample at index time `t_ms` can outrun one at `cur_ms`. A
/// sample that outruns has a boot start less than [`SAME_BOOT_MS`] before
/// `cur`'s and a monotonic clock not before it, so its time is less than
/// that before `cur_ms`: anything earlier need not be decoded.
fn may_outrun(t_ms: u64, cur_ms: u64) -> bool {
    i128::from(t_ms) + SAME_BOOT_MS > i128::from(cur_ms)
}

/// The latest of `look` (position and clocks, oldest first; `None`
/// unreadable) that outruns `cur`: the walk's test.
pub(super) fn outrun_in<'a>(
    look: impl DoubleEndedIterator<Item = &'a (usize, Option<Stamp>)>,
    cur: Stamp,
) -> Option<(usize, Stamp)> {
    look.rev()
        .find_map(|&(i, s)| s.filter(|s| s.outruns(cur)).map(|s| (i, s)))
}

/// The walk's decisions about sample `k` of a window, made by random
/// access: the same tests over the same [`LOOK`] samples before it,
/// decoding only those the index cannot rule out.
pub(super) struct Lookback<'a> {
    rec: &'a Recording,
    window: &'a Window,
    /// Clocks decoded so far (`None`: unreadable).
    clocks: std::collections::HashMap<usize, Option<Stamp>>,
    /// The newest sample decoded whole: the newest readable one before
    /// `k` is the baseline asked for next, unless it is out of order.
    last: Option<(usize, RawSample)>,
}

impl<'a> Lookback<'a> {
    pub fn new(rec: &'a Recording, window: &'a Window) -> Lookback<'a> {
        Lookback {
            rec,
            window,
            clocks: Default::default(),
            last: None,
        }
    }

    /// The window's samples before `k`, newest first, at most [`LOOK`].
    pub fn before(&self, k: usize) -> Vec<usize> {
        (self.window.span.start..k.min(self.window.span.end))
            .rev()
            .filter(|&i| self.window.contains(self.rec, i))
            .take(LOOK)
            .collect()
    }

    fn time(&self, i: usize) -> u64 {
        self.rec.unix_ms(i).unwrap_or(0)
    }

    /// Sample `i` decoded whole, with its clocks (an error: unreadable).
    pub fn sample(&mut self, i: usize) -> anyhow::Result<(RawSample, Stamp)> {
        let s = match self.last.take() {
            Some((j, s)) if j == i => s,
            _ => self.rec.get(i).inspect_err(|_| {
                self.clocks.insert(i, None);
            })?,
        };
        let st = Stamp::new(&s, self.time(i));
        self.clocks.insert(i, Some(st));
        Ok((s, st))
    }

    fn clocks(&mut self, i: usize) -> Option<Stamp> {
        if let Some(c) = self.clocks.get(&i) {
            return *c;
        }
        let c = self.rec.get(i).ok().map(|s| {
            let st = Stamp::new(&s, self.time(i));
            if self.last.as_ref().is_none_or(|(j, _)| i > *j) {
                self.last = Some((i, s));
            }
            st
        });
        self.clocks.insert(i, c);
        c
    }

    /// The skip the walk reports at readable sample `k` (clocks `cur`)
    /// when a sample among the [`LOOK`] before it outruns it.
    pub fn out_of_order(&mut self, k: usize, cur: Stamp) -> Option<Skip> {
        let t = self.time(k);
        for i in self.before(k) {
            if !may_outrun(self.time(i), t) {
                continue;
            }
            if let Some(s) = self.clocks(i)
                && s.outruns(cur)
            {
                return Some(Skip::OutOfOrder {
                    index: k,
                    earlier: i,
                    earlier_ns: s.mono_ns,
                    cur_ns: cur.mono_ns,
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(unix_ms: u64, mono_s: u64) -> Stamp {
        let s = RawSample {
            mono_ns: mono_s * 1_000_000_000,
            ..Default::default()
        };
        Stamp::new(&s, unix_ms)
    }

    #[test]
    fn same_boot_earlier_is_out_of_order_a_new_boot_is_not() {
        let t0 = 1_700_000_000_000;
        let prev = stamp(t0 + 100_000, 100);
        // Taken 30 s earlier on the same boot (both clocks agree).
        assert!(prev.outruns(stamp(t0 + 70_000, 70)));
        // A duplicate.
        assert!(prev.outruns(prev));
        // Rebooted: the monotonic clock restarts, the wall clock goes on.
        assert!(!prev.outruns(stamp(t0 + 160_000, 20)));
        // Rebooted with the wall clock wrong (a VM without an RTC).
        assert!(!prev.outruns(stamp(5_000, 4)));
        // Later on the same boot.
        assert!(!prev.outruns(stamp(t0 + 101_000, 101)));
    }

    #[test]
    fn the_index_rules_out_what_cannot_outrun() {
        // Whatever the clocks, a sample that outruns passes `may_outrun`.
        let cur = stamp(1_700_000_010_000, 10);
        for (t, mono) in [(1_700_000_009_800, 10), (1_700_000_030_000, 30)] {
            let s = stamp(t, mono);
            assert!(s.outruns(cur) && may_outrun(t, 1_700_000_010_000));
        }
        assert!(!may_outrun(1_700_000_009_000, 1_700_000_010_000));
    }
}
