//! A disturbed calibration measured again while a live run goes on.
//!
//! A calibration the host's own load disturbed ([`Calibration::disturbed`])
//! is the one a user would otherwise be shown until the next boot. A live
//! run (the TUI, batch) measures again in the background: first
//! [`FIRST_AFTER`] after it started, then as often as [`CPU_BUDGET`] allows,
//! and keeps a new table only when it is quieter. The frames charged
//! meanwhile carry the calibration's warning and say when the next
//! measurement is due; the frame a measurement ran in says so too (its
//! spinner took CPU time on one CPU in that interval).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::collector::Collector;
use crate::sample::calibration::Calibration;
use crate::sys::sysroot::Sysroot;

/// A run that started on a disturbed table measures again this long after
/// its start: long enough for a burst of load (the development VM's last
/// a second or two) to pass, short enough that few frames are charged
/// with it.
pub const FIRST_AFTER: Duration = Duration::from_secs(10);
/// Never more often than this.
const MIN_PAUSE: Duration = Duration::from_secs(60);
/// Share of one CPU the measurements may take on average: one costs
/// ~0.34 s of CPU, two when the host disturbs it again.
const CPU_BUDGET: f64 = 0.01;

/// When the next measurement is due.
#[derive(Debug, Clone)]
pub struct Again {
    next: Instant,
}

/// What a measurement in the background came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The new table is quieter: it charges this frame on.
    Kept {
        noise: f64,
    },
    /// The new table is no quieter: the old one stays.
    Dropped {
        noise: f64,
        old: f64,
    },
    Failed(String),
}

impl Again {
    pub fn new(start: Instant) -> Again {
        Again {
            next: start + FIRST_AFTER,
        }
    }

    /// Whether `cal`, the table in use, is to be measured again at `now`.
    pub fn due(&self, now: Instant, cal: Option<&Calibration>) -> bool {
        cal.is_some_and(Calibration::disturbed) && now >= self.next
    }

    /// A measurement that cost `cpu_ms` of CPU ended at `now`: the next
    /// waits until the budget has paid for this one.
    pub fn measured(&mut self, now: Instant, cpu_ms: f64) {
        let paid = Duration::from_secs_f64((cpu_ms.max(0.0) / 1e3 / CPU_BUDGET).min(3600.0));
        self.next = now + paid.max(MIN_PAUSE);
    }

    /// What a frame charged with a disturbed table says of the next
    /// measurement.
    pub fn status(&self, now: Instant) -> String {
        let s = self.next.saturating_duration_since(now).as_secs();
        format!("measuring again in the background in {s} s")
    }
}

/// Measures again with the collector's own BPF programs, and gives the
/// collector (and the cache in `dir`) the new table when it is quieter
/// than the one in use.
pub fn run(col: &mut Collector, root: &Sysroot, dir: &Path) -> (Outcome, f64) {
    let (Some(bpf), Some(old)) = (col.bpf(), col.host().calibration.as_ref()) else {
        return (Outcome::Failed("no calibration in use".into()), 0.0);
    };
    let key = super::cache::key(root, col.host(), bpf.mode().name());
    let mut new = match super::measure(
        bpf,
        root,
        key,
        col.host().regime,
        &super::Options::default(),
    ) {
        Ok(c) => c,
        Err(e) => return (Outcome::Failed(format!("{e:#}")), 0.0),
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

/// Keeps `new` over `old` only when it is quieter.
pub fn judge(old: &Calibration, new: &Calibration) -> Outcome {
    let (o, n) = (old.noise(), new.noise());
    if n < o {
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
        assert!(!a.due(t0, Some(&busy)), "not at once");
        let later = t0 + FIRST_AFTER;
        assert!(a.due(later, Some(&busy)));
        assert!(!a.due(later, Some(&quiet)), "a quiet table stays");
        assert!(!a.due(later, None));
        assert_eq!(a.status(t0), "measuring again in the background in 10 s");
        // 0.34 s of CPU at 1 %: 34 s, so the floor of a minute.
        a.measured(later, 340.0);
        assert!(!a.due(later + Duration::from_secs(59), Some(&busy)));
        assert!(a.due(later + MIN_PAUSE, Some(&busy)));
        // Two measurements' 0.9 s: 90 s.
        a.measured(later, 900.0);
        assert!(!a.due(later + Duration::from_secs(89), Some(&busy)));
        assert!(a.due(later + Duration::from_secs(90), Some(&busy)));
    }

    #[test]
    fn a_new_table_is_kept_only_when_quieter() {
        assert_eq!(
            judge(&table(0.2), &table(0.05)),
            Outcome::Kept { noise: 0.05 }
        );
        let o = judge(&table(0.1), &table(0.25));
        assert!(matches!(o, Outcome::Dropped { .. }), "{o:?}");
        assert!(
            o.note().contains("spread 25 % against 10 %"),
            "{}",
            o.note()
        );
    }
}
