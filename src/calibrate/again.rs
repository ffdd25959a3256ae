//! A disturbed or failed calibration measured again while a live run goes
//! on.
//!
//! A calibration the host's own load disturbed ([`Calibration::disturbed`])
//! is the one a user would otherwise be shown until the next boot, and one
//! that failed (a CPU too busy for clean gaps) leaves HIDDEN~ at 0 until
//! then. A live run (the TUI, batch) with BPF measures again in the
//! background: first [`FIRST_AFTER`] after it started, then as often as
//! [`CPU_BUDGET`] allows, and keeps a new table when there was none or when
//! it is quieter. The frames charged meanwhile carry the calibration's
//! warning and say when the next measurement is due; the frame a
//! measurement ran in says so too (its spinner took CPU time on one CPU in
//! that interval).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::collector::Collector;
use crate::sample::calibration::Calibration;
use crate::sys::sysroot::Sysroot;

/// A run that started on a disturbed table, or none, measures again this
/// long after its start: long enough for a burst of load (the development
/// VM's last a second or two) to pass, short enough that few frames are
/// charged with it.
pub const FIRST_AFTER: Duration = Duration::from_secs(10);
/// Never more often than this.
const MIN_PAUSE: Duration = Duration::from_secs(60);
/// Share of one CPU the measurements may take on average: one costs
/// ~0.34 s of CPU, two when the host disturbs it again.
const CPU_BUDGET: f64 = 0.01;

/// When the next measurement is due; `None` once this host cannot be
/// calibrated at all (no two eligible CPUs): measuring again would say
/// the same.
#[derive(Debug, Clone)]
pub struct Again {
    next: Option<Instant>,
}

/// What a measurement in the background came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The new table is the first, or quieter: it charges this frame on.
    Kept {
        noise: f64,
    },
    /// The new table is no quieter: the old one stays.
    Dropped {
        noise: f64,
        old: f64,
    },
    Failed(String),
    /// No two CPUs it could run on: not tried again in this run.
    Cannot(String),
}

impl Again {
    pub fn new(start: Instant) -> Again {
        Again {
            next: Some(start + FIRST_AFTER),
        }
    }

    /// Whether to measure at `now`, given `cal`, the table in use, and
    /// whether the run is `traced` (BPF: without it there is nothing to
    /// calibrate).
    pub fn due(&self, now: Instant, cal: Option<&Calibration>, traced: bool) -> bool {
        self.wants(cal, traced) && self.next.is_some_and(|n| now >= n)
    }

    /// Whether a run in this state measures again at all.
    pub fn wants(&self, cal: Option<&Calibration>, traced: bool) -> bool {
        self.next.is_some() && traced && cal.is_none_or(Calibration::disturbed)
    }

    /// A measurement that cost `cpu_ms` of CPU ended at `now` with
    /// `outcome`: the next waits until the budget has paid for this one,
    /// and there is none after one that could not run here at all.
    pub fn measured(&mut self, now: Instant, outcome: &Outcome, cpu_ms: f64) {
        if let Outcome::Cannot(_) = outcome {
            self.next = None;
            return;
        }
        let paid = Duration::from_secs_f64((cpu_ms.max(0.0) / 1e3 / CPU_BUDGET).min(3600.0));
        self.next = Some(now + paid.max(MIN_PAUSE));
    }

    /// What a frame charged with a disturbed table says of the next
    /// measurement.
    pub fn status(&self, now: Instant) -> String {
        let s = self
            .next
            .map_or(0, |n| n.saturating_duration_since(now).as_secs());
        format!("measuring again in the background in {s} s")
    }
}

/// Measures again with the collector's own BPF programs, and gives the
/// collector (and the cache in `dir`) the new table when there was none or
/// it is quieter than the one in use. A run without a table keeps the
/// newest reason why.
pub fn run(col: &mut Collector, root: &Sysroot, dir: &Path) -> (Outcome, f64) {
    let Some(bpf) = col.bpf() else {
        return (Outcome::Failed("no BPF collector".into()), 0.0);
    };
    let place = match super::placement::choose(root) {
        Ok(p) => p,
        Err(e) => return (Outcome::Cannot(format!("{e:#}")), 0.0),
    };
    let old = col.host().calibration.as_ref();
    let key = super::cache::key(root, col.host(), bpf.mode().name());
    let mut new = match super::measure_on(
        bpf,
        &place,
        key,
        col.host().regime,
        &super::Options::default(),
    ) {
        Ok(c) => c,
        Err(e) => {
            let why = format!("{e:#}");
            if old.is_none() {
                col.set_calibration(Err(e));
            }
            return (Outcome::Failed(why), 0.0);
        }
    };
    let cpu_ms = new.cost_cpu_ms;
    let outcome = judge(old, &new);
    if let Outcome::Kept { .. } = outcome {
        new.origin = match super::cache::store(dir, &mut new) {
            Ok(p) => format!(
                "measured again in the background, cached in {}",
                p.display()
            ),
            Err(e) => format!("measured again in the background, not cached: {e:#}"),
        };
        col.set_calibration(Ok(new));
    }
    (outcome, cpu_ms)
}

/// Keeps `new` when there was no table, or over `old` when it is better
/// ([`Calibration::better_than`]): quieter, or pricing a class `old` could not.
pub fn judge(old: Option<&Calibration>, new: &Calibration) -> Outcome {
    let n = new.noise();
    let Some(old) = old else {
        return Outcome::Kept { noise: n };
    };
    let o = old.noise();
    if new.better_than(old) {
        Outcome::Kept { noise: n }
    } else {
        Outcome::Dropped { noise: n, old: o }
    }
}

impl Outcome {
    /// What the frame the measurement ran in says.
    pub fn note(&self) -> String {
        match self {
            Outcome::Kept { noise } => format!(
                "measured again during this frame (spread now up to {:.0} % of a cost): \
                 the new table charges it",
                100.0 * noise
            ),
            Outcome::Dropped { noise, old } => format!(
                "measured again during this frame, disturbed as well (spread {:.0} % \
                 against {:.0} %): the earlier table stays",
                100.0 * noise,
                100.0 * old
            ),
            Outcome::Failed(e) => format!("measuring again during this frame failed: {e}"),
            Outcome::Cannot(e) => format!("not measured again: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::calibration::{Basis, ClassCost};

    fn table(spread: f64) -> Calibration {
        Calibration {
            ipi: ClassCost {
                basis: Basis::Measured,
                samples: 1_000,
                traced_ns: 300.0,
                hidden_ns: 7_000.0,
                spread_ns: 7_000.0 * spread,
            },
            ..Default::default()
        }
    }

    #[test]
    fn only_a_disturbed_table_is_measured_again_and_within_the_budget() {
        let t0 = Instant::now();
        let mut a = Again::new(t0);
        let busy = table(0.2);
        let quiet = table(0.03);
        assert!(!a.due(t0, Some(&busy), true), "not at once");
        let later = t0 + FIRST_AFTER;
        assert!(a.due(later, Some(&busy), true));
        assert!(!a.due(later, Some(&quiet), true), "a quiet table stays");
        assert!(a.due(later, None, true), "a failed calibration is retried");
        assert!(!a.due(later, None, false), "without BPF nothing to measure");
        assert_eq!(a.status(t0), "measuring again in the background in 10 s");
        // 0.34 s of CPU at 1 %: 34 s, so the floor of a minute.
        let kept = Outcome::Kept { noise: 0.05 };
        a.measured(later, &kept, 340.0);
        assert!(!a.due(later + Duration::from_secs(59), Some(&busy), true));
        assert!(a.due(later + MIN_PAUSE, Some(&busy), true));
        // Two measurements' 0.9 s: 90 s.
        a.measured(later, &kept, 900.0);
        assert!(!a.due(later + Duration::from_secs(89), Some(&busy), true));
        assert!(a.due(later + Duration::from_secs(90), Some(&busy), true));
        // A host it cannot run on: never again.
        a.measured(later, &Outcome::Cannot("one CPU".into()), 0.0);
        assert!(!a.wants(None, true));
        assert!(!a.due(later + Duration::from_secs(3600), None, true));
    }

    #[test]
    fn a_new_table_is_kept_only_when_better() {
        assert_eq!(
            judge(Some(&table(0.2)), &table(0.05)),
            Outcome::Kept { noise: 0.05 }
        );
        assert_eq!(judge(None, &table(0.25)), Outcome::Kept { noise: 0.25 });
        let o = judge(Some(&table(0.1)), &table(0.25));
        assert!(matches!(o, Outcome::Dropped { .. }), "{o:?}");
        assert!(
            o.note().contains("spread 25 % against 10 %"),
            "{}",
            o.note()
        );
        // A table that left reschedules unpriced gives way to one that
        // prices them, though noisier.
        let mut spoiled = table(0.03);
        spoiled.resched.basis = Basis::SameAsIpi;
        spoiled.resched_woken_ns = 14_000.0;
        assert_eq!(
            judge(Some(&spoiled), &table(0.06)),
            Outcome::Kept { noise: 0.06 }
        );
        assert!(matches!(
            judge(Some(&table(0.06)), &spoiled),
            Outcome::Dropped { .. }
        ));
    }
}
