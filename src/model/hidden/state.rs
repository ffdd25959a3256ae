//! Which of the host's states an account's interruptions were taken in
//! (see `calibrate::states`): the handler time of its own plain IPIs and
//! TLB shootdowns, against each state's calibrated one. HIDDEN~ charges
//! that state's costs; a state no calibration saw is a warning.

use super::class_counts;
use crate::sample::IrqAcct;
use crate::sample::calibration::{Basis, Calibration, ClassCost, IpiState, within_ratio};

/// Plain IPIs in [`class_counts`].
const IPI: usize = 2;
/// TLB shootdowns in [`class_counts`].
const TLB: usize = 4;

/// IPIs of one kind an account must hold before their handler time picks
/// the host's state: a few hundred give the mean within a few per cent,
/// where the development VM's two states are 1.8× apart.
const STATE_EVIDENCE: u64 = 200;

/// Per kind of IPI that shows the state (plain IPIs, TLB shootdowns): how
/// many `a` holds, their handler time, and the state's cost of that kind.
type Kind = (u64, u64, fn(&IpiState) -> &ClassCost);

fn kinds(a: &IrqAcct) -> [Kind; 2] {
    let n = class_counts(a);
    [
        (n[IPI], a.ipi_ns, |s| &s.ipi),
        (n[TLB], a.tlb_ns, |s| &s.tlb),
    ]
}

impl Calibration {
    /// The state whose handler times `a`'s own IPIs and TLB shootdowns
    /// match best (least count-weighted squared log ratio), among those
    /// the calibrations saw; the table's own when there is no other, or
    /// too few IPIs to tell. A kind of IPI speaks only when every state
    /// knows its handler time, so all are judged on the same evidence.
    pub fn state_for(&self, a: &IrqAcct) -> IpiState {
        let own = self.own_state();
        // Most tasks take no IPIs at all: they are done here, without
        // gathering the states.
        let evidence = kinds(a)
            .into_iter()
            .filter(|&(n, ns, _)| n >= STATE_EVIDENCE && ns > 0);
        if self.states.is_empty() || evidence.clone().next().is_none() {
            return own;
        }
        let states = self.known_states();
        let usable: Vec<Kind> = evidence
            .filter(|&(_, _, k)| states.iter().all(|s| k(s).handler_ns().is_some()))
            .collect();
        if usable.is_empty() {
            return own;
        }
        let score = |s: &IpiState| -> f64 {
            usable
                .iter()
                .map(|&(n, ns, k)| {
                    let at = k(s).handler_ns().unwrap_or(1.0);
                    let r = (ns as f64 / n as f64 / at).ln();
                    n as f64 * r * r
                })
                .sum()
        };
        states
            .into_iter()
            .map(|s| (score(&s), s))
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .map_or(own, |(_, s)| s)
    }
}

/// Timer interrupts an account must hold before their handler time
/// rescales the timer's cost: a thousand give the mean within a few per
/// cent. Natural ticks (100–1,000 a second per CPU) seldom reach it in a
/// frame, and at their rates the timer's whole cost is a point at most.
const TIMER_EVIDENCE: u64 = 1_000;
/// The rescaling stays within this factor either way: beyond it the
/// handler did other work (a heavy tick), not the same work slower.
const TIMER_SCALE_MAX: f64 = 1.5;

impl Calibration {
    /// The factor on the timer's hidden cost for `a`: its timer handlers'
    /// mean time against the calibration's. The host's slow spells slow
    /// the local timer's handler (which re-arms the timer through the
    /// hypervisor) and its untraced entry and exit alike: on the
    /// development VM, seven attempts of a 20,000-timer-interrupts/s scene
    /// lost 17–26 µs per interrupt from one minute to the next, while the
    /// traced part stayed 42–43 % of the loss. A calibration taken a few
    /// seconds before such a swing charged every interrupt its own
    /// moment's cost, 6–11 points of TRUE% off. 1 when `a` holds too few
    /// timer interrupts, or the calibration or the account lacks the
    /// handler time (recordings from before it).
    pub fn timer_scale(&self, a: &IrqAcct) -> f64 {
        let at = match self.timer.basis {
            Basis::Measured => self.timer.handler_ns(),
            Basis::SameAsIpi | Basis::NotMeasured => None,
        };
        match at {
            Some(at) if a.timer_count >= TIMER_EVIDENCE && a.timer_ns > 0 => {
                (a.timer_ns as f64 / a.timer_count as f64 / at)
                    .clamp(1.0 / TIMER_SCALE_MAX, TIMER_SCALE_MAX)
            }
            _ => 1.0,
        }
    }
}

/// Plain IPIs a CPU must take in an interval before their handler time
/// is read as the host's state: a few hundred already give the mean within
/// a few nanoseconds; fewer leave an occasional long irq_work in charge.
const STATE_MIN_IPIS: u64 = 1_000;
/// Handler time per IPI this many times the calibration's, or this many
/// times less: another way of delivering interrupts, not noise (the
/// development VM's two states are 1.8× apart; the calibrations within one
/// vary by 1.2×).
const STATE_RATIO: f64 = 1.5;

/// When the host now delivers IPIs another way than in any state a
/// calibration saw, the warning to add to the HIDDEN~ line; `None`
/// otherwise. The plain IPIs' handler time per IPI is the sign: on the
/// development VM ~270 ns in one state and ~480 ns in the other, where each
/// IPI (and TLB shootdown) hides ~1.3 µs more, so HIDDEN~ and TRUE% taken
/// in one state with the other's costs are off by a quarter of the IPIs'
/// cost. A state the cache knows is charged its own costs
/// ([`Calibration::state_for`]) and needs no word. `cpus` are the
/// interval's per-CPU accounts. Accounts without handler time (recordings
/// from before it) say nothing.
pub fn state_note<'a>(
    cal: &Calibration,
    cpus: impl IntoIterator<Item = (u32, &'a IrqAcct)>,
) -> Option<String> {
    let known: Vec<f64> = cal
        .known_states()
        .iter()
        .filter_map(|s| s.ipi.handler_ns())
        .collect();
    if cal.ipi.basis != Basis::Measured || cal.ipi.handler_ns().is_none() {
        return None;
    }
    let off: Vec<String> = cpus
        .into_iter()
        .filter_map(|(cpu, a)| {
            let n = class_counts(a)[IPI];
            if n < STATE_MIN_IPIS || a.ipi_ns == 0 {
                return None;
            }
            let now = a.ipi_ns as f64 / n as f64;
            let near = known.iter().any(|&at| within_ratio(now, at, STATE_RATIO));
            (!near).then(|| format!("CPU {cpu} {now:.0} ns"))
        })
        .collect();
    if off.is_empty() {
        return None;
    }
    let at: Vec<String> = known.iter().map(|ns| format!("{ns:.0} ns")).collect();
    Some(format!(
        "IPI handlers now take {} each against {} when calibrated: the host delivers \
         interrupts another way than then, and their untraced cost may differ from the \
         calibrated one; measure again with nettop --calibrate (the cache keeps every state \
         it has seen on this boot)",
        off.join(", "),
        at.join(" or ")
    ))
}

#[cfg(test)]
mod tests {
    use super::super::note;
    use super::*;

    fn measured(traced_ns: f64, hidden_ns: f64) -> ClassCost {
        ClassCost {
            basis: Basis::Measured,
            samples: 1_000,
            traced_ns,
            hidden_ns,
            spread_ns: 100.0,
        }
    }

    /// Calibrated in the development VM's first state (IPI handlers at
    /// 270 ns, hiding 5.6 µs; shootdowns at 470 ns, 5.7 µs), knowing its
    /// second (480 ns and 7.0 µs; 870 ns and 7.1 µs) from an earlier
    /// calibration.
    fn two_states() -> Calibration {
        Calibration {
            timer: measured(6_000.0, 7_200.0),
            ipi: measured(270.0, 5_600.0),
            tlb: measured(470.0, 5_700.0),
            states: vec![IpiState {
                measured_unix_ms: 1,
                ipi: measured(480.0, 7_000.0),
                tlb: measured(870.0, 7_100.0),
            }],
            ..Default::default()
        }
    }

    /// `ipis` plain IPIs at `ipi_ns` each and `tlbs` shootdowns at
    /// `tlb_ns` each.
    fn ipis(ipis: u64, ipi_ns: u64, tlbs: u64, tlb_ns: u64) -> IrqAcct {
        IrqAcct {
            sysvec_count: ipis + tlbs,
            ipi_count: ipis + tlbs,
            ipi_ns: ipis * ipi_ns,
            tlb_count: tlbs,
            tlb_ns: tlbs * tlb_ns,
            ..Default::default()
        }
    }

    /// `n` local timer interrupts at `handler_ns` each.
    fn timers(n: u64, handler_ns: u64) -> IrqAcct {
        IrqAcct {
            sysvec_count: n,
            timer_count: n,
            timer_ns: n * handler_ns,
            ..Default::default()
        }
    }

    #[test]
    fn the_timer_is_charged_at_the_pace_of_its_own_handlers() {
        // Calibrated at 6 µs traced, 7.2 µs hidden.
        let c = two_states();
        // Handlers a third slower: the hidden cost a third higher.
        assert!((c.hidden_ns(&timers(2_000, 8_000)) - 2_000.0 * 9_600.0).abs() < 1e-6);
        // Faster: lower.
        assert!((c.hidden_ns(&timers(2_000, 4_500)) - 2_000.0 * 5_400.0).abs() < 1e-6);
        // Within a factor of 1.5 either way: a tick that did more work.
        assert!((c.hidden_ns(&timers(2_000, 30_000)) - 2_000.0 * 10_800.0).abs() < 1e-6);
        assert!((c.hidden_ns(&timers(2_000, 1_000)) - 2_000.0 * 4_800.0).abs() < 1e-6);
        // Too few to tell, or no handler time (an old recording): as
        // calibrated.
        assert_eq!(c.hidden_ns(&timers(999, 8_000)), 999.0 * 7_200.0);
        assert_eq!(c.hidden_ns(&timers(2_000, 0)), 2_000.0 * 7_200.0);
        // A timer charged the IPI's cost has no handler time of its own.
        let mut proxy = two_states();
        proxy.timer.basis = Basis::SameAsIpi;
        assert_eq!(
            proxy.timer_scale(&timers(2_000, 8_000)),
            1.0,
            "a proxy cost is not rescaled"
        );
    }

    #[test]
    fn each_account_is_charged_the_state_its_own_ipis_show() {
        let c = two_states();
        // Plain IPIs at the second state's handler time: its cost.
        assert_eq!(c.hidden_ns(&ipis(10_000, 500, 0, 0)), 10_000.0 * 7_000.0);
        // At the first's: the table's own.
        assert_eq!(c.hidden_ns(&ipis(10_000, 290, 0, 0)), 10_000.0 * 5_600.0);
        // Shootdowns alone tell the state too, and are charged its TLB cost.
        assert_eq!(c.hidden_ns(&ipis(0, 0, 10_000, 850)), 10_000.0 * 7_100.0);
        assert_eq!(c.hidden_ns(&ipis(0, 0, 10_000, 480)), 10_000.0 * 5_700.0);
        // Both kinds: the count-weighted evidence decides, for both costs.
        assert_eq!(
            c.hidden_ns(&ipis(1_000, 300, 9_000, 880)),
            1_000.0 * 7_000.0 + 9_000.0 * 7_100.0
        );
        // Too few IPIs to tell: the table's own state.
        assert_eq!(c.hidden_ns(&ipis(150, 500, 0, 0)), 150.0 * 5_600.0);
        // A recording from before handler times: the table's own.
        let mut old = ipis(10_000, 500, 0, 0);
        old.ipi_ns = 0;
        assert_eq!(c.hidden_ns(&old), 10_000.0 * 5_600.0);
        // A device interrupt takes the IPI's cost of the state shown.
        let mut dev = ipis(10_000, 500, 0, 0);
        dev.hardirq_count = 10;
        assert_eq!(c.hidden_ns(&dev), 10_010.0 * 7_000.0);
        // A state without a measured TLB cost: shootdowns cannot choose
        // between the two, so the table's own is charged; its plain IPIs
        // still can, and its shootdowns then take its IPI's cost.
        let mut no_tlb = two_states();
        no_tlb.states[0].tlb = ClassCost::not_measured();
        assert_eq!(
            no_tlb.hidden_ns(&ipis(0, 0, 10_000, 850)),
            10_000.0 * 5_700.0
        );
        assert_eq!(
            no_tlb.hidden_ns(&ipis(10_000, 500, 1_000, 850)),
            11_000.0 * 7_000.0
        );
        // A TLB handler time derived for a split calibration's other state
        // (`calibrate::table`) tells shootdowns apart too, at its IPI's cost.
        no_tlb.states[0].tlb = ClassCost {
            basis: Basis::SameAsIpi,
            traced_ns: 860.0,
            hidden_ns: 7_000.0,
            ..Default::default()
        };
        assert_eq!(
            no_tlb.hidden_ns(&ipis(0, 0, 10_000, 850)),
            10_000.0 * 7_000.0
        );
    }

    #[test]
    fn a_state_the_cache_knows_needs_no_warning() {
        let c = two_states();
        let b = ipis(50_000, 500, 0, 0);
        assert_eq!(state_note(&c, [(1, &b)]), None);
        let mut only_a = c.clone();
        only_a.states.clear();
        assert!(state_note(&only_a, [(1, &b)]).is_some());
        // A third way of delivering IPIs is news again, and the warning
        // names both known handler times.
        let note = state_note(&c, [(1, &ipis(50_000, 1_200, 0, 0))]).expect("a warning");
        assert!(note.contains("against 270 ns or 480 ns"), "{note}");
        // The HIDDEN~ line shows the other state's costs.
        let line = note_line(&c);
        assert!(
            line.contains(
                "in the state where IPI handlers take 0.5 µs: IPI 7.0 µs, TLB shootdown 7.1 µs"
            ),
            "{line}"
        );
    }

    fn note_line(c: &Calibration) -> String {
        note(Some(c), "", c.measured_unix_ms)
    }

    #[test]
    fn a_changed_ipi_handler_time_says_the_calibration_is_from_another_state() {
        let mut c = Calibration::default();
        c.ipi.basis = Basis::Measured;
        c.ipi.traced_ns = 270.0;
        let acct = |ipis: u64, ns: u64| IrqAcct {
            sysvec_count: ipis + 10,
            timer_count: 10,
            ipi_count: ipis,
            ipi_ns: ns,
            ..Default::default()
        };
        // 50,000 IPIs at 518 ns on CPU 1, as the state changed; CPU 0's
        // at the calibrated 280 ns.
        let (cpu0, cpu1) = (acct(40_000, 40_000 * 280), acct(50_000, 50_000 * 518));
        let note = state_note(&c, [(0, &cpu0), (1, &cpu1)]).expect("a warning");
        assert!(
            note.starts_with("IPI handlers now take CPU 1 518 ns each"),
            "{note}"
        );
        assert!(note.contains("270 ns when calibrated"), "{note}");
        assert!(!note.contains("CPU 0"), "{note}");
        // The same state as calibrated, too few IPIs to tell, or a
        // recording without handler time: nothing to say.
        assert_eq!(state_note(&c, [(0, &cpu0)]), None);
        assert_eq!(state_note(&c, [(1, &acct(500, 500 * 518))]), None);
        assert_eq!(state_note(&c, [(1, &acct(50_000, 0))]), None);
        // TLB shootdowns and wake-ups are not plain IPIs, and their
        // handler time is not in `ipi_ns`: per plain IPI it is 280 ns here
        // (112 ns per IPI of any kind, which would read as a change).
        let mut tlb = acct(50_000, 20_000 * 280);
        tlb.tlb_count = 30_000;
        assert_eq!(state_note(&c, [(1, &tlb)]), None);
        // Faster than calibrated counts too; no calibrated IPI, no word.
        assert!(state_note(&c, [(1, &acct(50_000, 50_000 * 150))]).is_some());
        c.ipi.basis = Basis::SameAsIpi;
        assert_eq!(state_note(&c, [(1, &cpu1)]), None);
    }
}
