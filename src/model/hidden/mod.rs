//! The interrupt cost tracepoints cannot see, and how a task is charged for it.
//!
//! Every interruption costs more than its traced handler: the entry code
//! before the first tracepoint, the exit code after the last one, APIC
//! accesses and, in a VM, the exits to the hypervisor. On the 2-vCPU
//! development VM that is ~3 µs per interruption, more than the handler of a
//! pure IPI itself. The cost is a property of the machine, not of the load,
//! so nettop measures it once per host and boot (`crate::calibrate`) per
//! interruption class and charges each task its interruptions by class ×
//! that cost: `HIDDEN~%`. It is an estimate (the `~`): the cost drifts with
//! the hypervisor's own load, and the spread says by how much it varied.

mod state;

pub use state::state_note;

use crate::sample::calibration::{Basis, Calibration, IpiState};
use crate::sample::{IrqAcct, NR_INTR_CLASSES, Regime};

/// The timer's and the reschedule class's index in [`class_counts`].
const TIMER: usize = 1;
const RESCHED: usize = 5;

/// How far a measured cost moves, as a share of it, between a calibration
/// and a load taken seconds to minutes later in the same state of the host:
/// calibrations within one state on the development VM differ by up to
/// 1.15× ([`crate::sample::calibration::SAME_STATE`] allows for it).
const DRIFT: f64 = 0.15;
/// How far off a class charged another class's cost may be, as a share of
/// it: the local timer charged the IPI's cost missed by a third of its
/// loss on the development VM.
const PROXY: f64 = 0.5;
/// The same for reschedule IPIs: the kernel may bill the whole wake-up to
/// the woken thread (the development VM does), so the truth lies anywhere
/// from none of the IPI's cost to all of it.
const PROXY_RESCHED: f64 = 1.0;
/// What a state no calibration saw adds to the IPI path's costs: the
/// development VM's two states are a quarter apart.
const UNKNOWN_STATE: f64 = 0.25;
/// How far the time given back to a reschedule's sender may be off, as a
/// share of it: it rests on the woken thread's run time per wake-up, which
/// one day's calibrations on the development VM put anywhere from 16 to
/// 40 µs, and with 15 % the reschedule oracle fell outside its band in
/// every attempt.
const REBILLED: f64 = 0.5;

/// Interruptions by class in an account (`sample::INTR_CLASSES`: device,
/// timer, IPI, other, TLB shootdown, reschedule). `ipi_count` holds all
/// IPIs; the IPI class is what is left of it beyond the TLB shootdowns and
/// reschedules (all of it in recordings from before those classes).
pub fn class_counts(a: &IrqAcct) -> [u64; NR_INTR_CLASSES] {
    let other = a
        .sysvec_count
        .saturating_sub(a.timer_count)
        .saturating_sub(a.ipi_count);
    let tlb = a.tlb_count.min(a.ipi_count);
    let resched = a.resched_count.min(a.ipi_count - tlb);
    let ipi = a.ipi_count - tlb - resched;
    [a.hardirq_count, a.timer_count, ipi, other, tlb, resched]
}

/// The interruptions HIDDEN~ charges, by class: all but those inside a
/// stolen softirq run, whose untraced cost that run's span (STOLEN) holds.
pub fn charged_counts(a: &IrqAcct) -> [u64; NR_INTR_CLASSES] {
    let mut n = class_counts(a);
    for (n, inside) in n.iter_mut().zip(a.in_softirq_count) {
        *n = n.saturating_sub(inside);
    }
    n
}

/// What HIDDEN~ charges an account and how far that may be off, ns
/// ([`Calibration::charge`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Charge {
    pub hidden_ns: f64,
    pub band_ns: f64,
}

/// The costs one account is charged at: the state its own IPIs show and
/// each class's cost in it, the timer's rescaled by its handler time.
struct Priced {
    state: IpiState,
    cost: [f64; NR_INTR_CLASSES],
}

impl Calibration {
    fn price(&self, a: &IrqAcct) -> Priced {
        let state = self.state_for(a);
        let mut cost = self.charged_ns(&state);
        cost[TIMER] *= self.timer_scale(a);
        Priced { state, cost }
    }

    /// Untraced cost of the interruptions counted in `a` (less those
    /// STOLEN holds already, see [`charged_counts`]) and of the softirqs
    /// they made it run, ns, at the costs of the state `a`'s own IPIs show
    /// ([`Self::state_for`]).
    pub fn hidden_ns(&self, a: &IrqAcct) -> f64 {
        self.hidden_at(a, &self.price(a))
    }

    /// [`Self::hidden_ns`] and [`Self::hidden_band_ns`] together, `a`
    /// priced once: what a frame computes for every task.
    pub fn charge(&self, a: &IrqAcct, unknown_state: bool) -> Charge {
        let p = self.price(a);
        Charge {
            hidden_ns: self.hidden_at(a, &p),
            band_ns: self.band_at(a, &p, unknown_state),
        }
    }

    fn hidden_at(&self, a: &IrqAcct, p: &Priced) -> f64 {
        let interruptions: f64 = charged_counts(a)
            .iter()
            .zip(p.cost)
            .map(|(&n, c)| n as f64 * c)
            .sum();
        let softirq = match self.softirq.basis {
            Basis::NotMeasured => 0.0,
            _ => a.softirq_stolen_count as f64 * self.softirq.hidden_ns.max(0.0),
        };
        interruptions + softirq
    }

    /// Run time the kernel billed to the threads this task's reschedule
    /// IPIs woke though it was this task's ([`Calibration::resched_rebilled_ns`]
    /// per IPI, when the class was measured): given back to it in TRUE%.
    pub fn rebilled_ns(&self, a: &IrqAcct) -> f64 {
        if self.resched.basis != Basis::Measured {
            return 0.0;
        }
        class_counts(a)[RESCHED] as f64 * self.resched_rebilled_ns.max(0.0)
    }

    /// The share of the hidden cost the kernel leaves in runtime under
    /// `regime` (see [`Calibration::runtime_share`]).
    pub fn runtime_share_in(&self, regime: Regime) -> f64 {
        if regime == Regime::IrqTimeAccounting {
            self.runtime_share.clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// How far [`Self::hidden_ns`] may be off, ns: half the width of the
    /// band HIDDEN~ carries, and TRUE% with [`Self::rebilled_band_ns`].
    /// Each interruption's cost is uncertain by the drift between a
    /// calibration and a later load ([`DRIFT`]) plus the calibration's own
    /// disturbance ([`Calibration::noise`], 1–5 % when quiet); one charged
    /// another class's cost by [`PROXY`] (a reschedule by
    /// [`PROXY_RESCHED`]); the IPI path's costs by [`UNKNOWN_STATE`] more
    /// when the frame's IPIs show a state no calibration saw
    /// (`unknown_state`, see [`state_note`]). The errors
    /// move together (the host's state moves every class), so they add up
    /// rather than average out. How often the band holds the oracles' real
    /// share is in BENCHMARKS.md ("Trust").
    pub fn hidden_band_ns(&self, a: &IrqAcct, unknown_state: bool) -> f64 {
        self.band_at(a, &self.price(a), unknown_state)
    }

    fn band_at(&self, a: &IrqAcct, p: &Priced, unknown_state: bool) -> f64 {
        let measured = DRIFT + self.noise();
        let mut basis = self.classes().map(|(_, c)| c.basis);
        basis[2] = p.state.ipi.basis;
        basis[4] = match p.state.tlb.basis {
            Basis::Measured => Basis::Measured,
            Basis::SameAsIpi | Basis::NotMeasured => Basis::SameAsIpi,
        };
        let rel = |k: usize| -> f64 {
            let base = match basis[k] {
                Basis::Measured => measured,
                Basis::SameAsIpi | Basis::NotMeasured if k == RESCHED => PROXY_RESCHED,
                Basis::SameAsIpi | Basis::NotMeasured => PROXY,
            };
            // Device and other interrupts take the IPI's cost: its path.
            let ipi_path = matches!(k, 0 | 2 | 3 | 4);
            base + if unknown_state && ipi_path {
                UNKNOWN_STATE
            } else {
                0.0
            }
        };
        let interruptions: f64 = charged_counts(a)
            .iter()
            .zip(p.cost)
            .enumerate()
            .map(|(k, (&n, c))| n as f64 * c * rel(k))
            .sum();
        let softirq = match self.softirq.basis {
            Basis::NotMeasured => 0.0,
            _ => a.softirq_stolen_count as f64 * self.softirq.hidden_ns.max(0.0) * measured,
        };
        interruptions + softirq
    }

    /// How far [`Self::rebilled_ns`] may be off, ns ([`REBILLED`]).
    pub fn rebilled_band_ns(&self, a: &IrqAcct) -> f64 {
        self.rebilled_ns(a) * REBILLED
    }
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1000.0)
}

/// A spread keeps two significant decimals: ±0.02 µs is not ±0.0.
fn spread(ns: f64) -> String {
    format!("±{:.2} µs", ns / 1000.0)
}

fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", s / 60),
        7200..172_800 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

/// What a frame says when its charges rest on a calibration not to be
/// taken at face value (`Frame::calibration_warning`): one the host's own
/// load disturbed, or a state of the host none saw (`unknown_state`, the
/// HIDDEN~ line says which). Empty otherwise.
pub fn warning(c: &Calibration, unknown_state: bool) -> String {
    let mut why = Vec::new();
    if c.noisy() {
        why.push(format!(
            "the host disturbed the calibration ({}, 1-5 % when quiet)",
            c.spread_words()
        ));
    }
    if c.resched_spoiled() {
        why.push(
            "the host left too few clean wake-ups to price reschedule IPIs (charged an IPI's cost)"
                .to_string(),
        );
    }
    if unknown_state {
        why.push("the host delivers IPIs in a state no calibration saw".to_string());
    }
    if why.is_empty() {
        return String::new();
    }
    format!(
        "HIDDEN~ uncertain: {}; TRUE% and HIDDEN~ carry a wider band",
        why.join(", and ")
    )
}

/// One line for the front ends: where the calibration came from and how
/// wide its spread is, or why there is none. `now_ms` is the frame's time.
pub fn note(cal: Option<&Calibration>, missing: &str, now_ms: u64) -> String {
    let Some(c) = cal else {
        let why = if missing.is_empty() {
            "no calibration in this data".to_string()
        } else {
            missing.to_string()
        };
        return format!(
            "HIDDEN~ not calibrated ({why}): TRUE% leaves out the untraced entry/exit cost of \
             each interruption; run nettop --calibrate"
        );
    };
    let when = if now_ms >= c.measured_unix_ms {
        format!("{} before this frame", age(now_ms - c.measured_unix_ms))
    } else {
        "after this frame".to_string()
    };
    let origin = if c.origin.is_empty() {
        "recorded"
    } else {
        &c.origin
    };
    let class = |name: &str, k: &crate::sample::calibration::ClassCost| match k.basis {
        Basis::Measured => format!("{name} {} {}", us(k.hidden_ns), spread(k.spread_ns)),
        Basis::SameAsIpi | Basis::NotMeasured => format!("{name} = IPI"),
    };
    let timer = class("timer", &c.timer);
    let tlb = class("TLB shootdown", &c.tlb);
    let mut resched = class("reschedule", &c.resched);
    if c.resched.basis == Basis::Measured && c.resched_rebilled_ns > 0.0 {
        resched.push_str(&format!(
            " ({} given back: billed to the woken thread)",
            us(c.resched_rebilled_ns)
        ));
    }
    let softirq = match c.softirq.basis {
        Basis::NotMeasured => "softirq in its tail not measured".into(),
        _ => format!(
            "+{} {} per softirq in its tail",
            us(c.softirq.hidden_ns),
            spread(c.softirq.spread_ns)
        ),
    };
    // Tables from before the marginal measure carry 1 (or 0 when built in
    // code): nothing to say then.
    let marginal = if c.marginal_ratio > 0.0 && (c.marginal_ratio - 1.0).abs() >= 0.005 {
        format!(", marginal {:.2}× the single-gap cost", c.marginal_ratio)
    } else {
        String::new()
    };
    // The other states the cache knows, each charged where a frame's own
    // IPIs show it (`Calibration::state_for`).
    let states: String = c
        .states
        .iter()
        .map(|s| {
            let tlb = match s.tlb.basis {
                Basis::Measured => format!(", TLB shootdown {}", us(s.tlb.hidden_ns)),
                Basis::SameAsIpi | Basis::NotMeasured => String::new(),
            };
            format!(
                "; in the state where IPI handlers take {}: IPI {}{tlb}",
                us(s.ipi.traced_ns),
                us(s.ipi.hidden_ns)
            )
        })
        .collect();
    format!(
        "HIDDEN~ = interruptions × untraced cost each, calibrated on CPU {} {when} ({origin}): \
         IPI {} {} (traced {}), {timer}, {tlb}, {resched}, device/other = IPI, \
         {softirq}{marginal}{states}",
        c.cpu,
        us(c.ipi.hidden_ns),
        spread(c.ipi.spread_ns),
        us(c.ipi.traced_ns),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::calibration::ClassCost;

    #[test]
    fn measured_reschedules_give_back_what_the_woken_thread_was_billed() {
        let a = IrqAcct {
            sysvec_count: 12,
            ipi_count: 12,
            resched_count: 10,
            ..Default::default()
        };
        let mut c = Calibration {
            resched_rebilled_ns: 3_000.0,
            ..Default::default()
        };
        c.resched.basis = Basis::Measured;
        assert!((c.rebilled_ns(&a) - 30_000.0).abs() < 1e-9);
        // Not measured (taken as an IPI): nothing given back.
        c.resched.basis = Basis::SameAsIpi;
        assert_eq!(c.rebilled_ns(&a), 0.0);
    }

    fn cal() -> Calibration {
        Calibration {
            timer: ClassCost {
                basis: Basis::Measured,
                hidden_ns: 10_000.0,
                ..Default::default()
            },
            ipi: ClassCost {
                basis: Basis::Measured,
                hidden_ns: 3_000.0,
                ..Default::default()
            },
            device: ClassCost {
                hidden_ns: 3_000.0,
                ..Default::default()
            },
            other: ClassCost {
                hidden_ns: 3_000.0,
                ..Default::default()
            },
            softirq: ClassCost {
                basis: Basis::Measured,
                hidden_ns: 500.0,
                ..Default::default()
            },
            runtime_share: 0.25,
            ..Default::default()
        }
    }

    #[test]
    fn counts_by_class() {
        let a = IrqAcct {
            hardirq_count: 2,
            sysvec_count: 10,
            timer_count: 3,
            ipi_count: 5,
            softirq_stolen_count: 4,
            ..Default::default()
        };
        assert_eq!(class_counts(&a), [2, 3, 5, 2, 0, 0]);
        // Softirq in interrupts' tails: 4 stolen runs at 0.5 µs.
        let mut c = cal();
        assert_eq!(
            c.hidden_ns(&a) - {
                c.softirq = ClassCost::not_measured();
                c.hidden_ns(&a)
            },
            2_000.0
        );
        let a = IrqAcct {
            softirq_stolen_count: 0,
            ..a
        };
        // 2 device + 5 IPI + 2 other at 3 µs, 3 timers at 10 µs.
        assert_eq!(cal().hidden_ns(&a), 9.0 * 3_000.0 + 30_000.0);
        assert_eq!(
            cal().hidden_ns(&a) * cal().runtime_share_in(Regime::IrqTimeAccounting),
            (9.0 * 3_000.0 + 30_000.0) * 0.25
        );
        assert_eq!(
            cal().hidden_ns(&a) * cal().runtime_share_in(Regime::TickBased),
            9.0 * 3_000.0 + 30_000.0
        );
    }

    /// An IPI and a tick that landed inside a stolen NET_RX run: that run's
    /// span (STOLEN) holds their entry/exit already, so HIDDEN~ charges
    /// only the other interruptions.
    #[test]
    fn interruptions_inside_a_stolen_softirq_are_charged_once() {
        let a = IrqAcct {
            hardirq_count: 2,
            sysvec_count: 10,
            timer_count: 3,
            ipi_count: 5,
            in_softirq_count: [0, 1, 4, 0, 0, 0],
            ..Default::default()
        };
        assert_eq!(class_counts(&a), [2, 3, 5, 2, 0, 0], "shown: every one");
        assert_eq!(charged_counts(&a), [2, 2, 1, 2, 0, 0]);
        // 2 device + 1 IPI + 2 other at 3 µs, 2 timers at 10 µs.
        assert_eq!(cal().hidden_ns(&a), 5.0 * 3_000.0 + 20_000.0);
        let odd = IrqAcct {
            in_softirq_count: [9; 6],
            ..a
        };
        assert_eq!(charged_counts(&odd), [0; 6], "never negative");
    }

    /// TLB shootdowns and reschedules are IPIs (in `ipi_count`) with
    /// costs of their own; a table without them charges them as IPIs.
    #[test]
    fn tlb_shootdowns_and_reschedules_have_their_own_cost() {
        let a = IrqAcct {
            sysvec_count: 10,
            ipi_count: 10,
            tlb_count: 4,
            resched_count: 2,
            in_softirq_count: [0, 0, 0, 0, 1, 0],
            ..Default::default()
        };
        assert_eq!(class_counts(&a), [0, 0, 4, 0, 4, 2]);
        assert_eq!(charged_counts(&a), [0, 0, 4, 0, 3, 2]);
        let mut c = cal();
        assert_eq!(c.hidden_ns(&a), 9.0 * 3_000.0, "not measured: the IPI's");
        c.tlb = ClassCost {
            basis: Basis::Measured,
            hidden_ns: 5_000.0,
            ..Default::default()
        };
        c.resched = ClassCost {
            basis: Basis::Measured,
            hidden_ns: 4_000.0,
            ..Default::default()
        };
        assert_eq!(
            c.hidden_ns(&a),
            4.0 * 3_000.0 + 3.0 * 5_000.0 + 2.0 * 4_000.0
        );
        let n = note(Some(&c), "", 0);
        assert!(
            n.contains("TLB shootdown 5.0 µs") && n.contains("reschedule 4.0 µs"),
            "{n}"
        );
        // More TLB shootdowns than IPIs (a corrupt sample): never negative.
        let odd = IrqAcct {
            ipi_count: 3,
            tlb_count: 5,
            resched_count: 5,
            ..Default::default()
        };
        assert_eq!(class_counts(&odd), [0, 0, 0, 0, 3, 0]);
    }

    #[test]
    fn inconsistent_counts_never_go_negative() {
        let a = IrqAcct {
            sysvec_count: 1,
            timer_count: 5,
            ipi_count: 5,
            ..Default::default()
        };
        assert_eq!(class_counts(&a), [0, 5, 5, 0, 0, 0]);
    }

    #[test]
    fn notes_say_where_it_came_from() {
        let mut c = cal();
        c.origin = "cache /x".into();
        c.measured_unix_ms = 1_000;
        let n = note(Some(&c), "", 3_601_000);
        assert!(n.contains("60 min before this frame (cache /x)"), "{n}");
        assert!(n.contains("IPI 3.0 µs"), "{n}");
        assert!(!n.contains("marginal"), "{n}");
        c.marginal_ratio = 0.96;
        let n = note(Some(&c), "", 3_601_000);
        assert!(n.ends_with("marginal 0.96× the single-gap cost"), "{n}");
        let n = note(None, "every CPU is isolated", 0);
        assert!(n.contains("not calibrated (every CPU is isolated)"), "{n}");
    }
}
