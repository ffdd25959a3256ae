//! From gaps to per-interruption costs: which gaps hold exactly one
//! interruption of a class, and what each cost beyond its traced time.
//! Pure, so the arithmetic is tested on made-up gaps.

use super::robust::robust;
use super::spin::{Gap, Window};

use crate::sample::NR_INTR_CLASSES as N;

/// Interruption classes, in the order of `struct nt_probe.intr`.
pub const CLASSES: [&str; N] = crate::sample::INTR_CLASSES;

/// Robust summary of one class's per-interruption samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// Samples used.
    pub samples: u64,
    /// Samples dropped as far outliers (see [`super::robust::robust`]).
    pub outliers: u64,
    /// Mean traced time per interruption.
    pub traced_ns: f64,
    /// Mean untraced time per interruption: gap minus traced.
    pub hidden_ns: f64,
    /// Half the interquartile range of the per-interruption hidden time.
    pub spread_ns: f64,
    /// Median of the per-interruption hidden time.
    pub median_ns: f64,
}

/// Everything the gaps of a calibration say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Census {
    /// Gaps holding exactly one interruption of a class and no softirq.
    pub single: [Estimate; N],
    /// Gaps holding one interruption of a class and one softirq run in its
    /// tail (an RPS IPI and its NET_RX, a tick and its TIMER softirq):
    /// their hidden time minus the class's `single` one is the softirq's
    /// own untraced cost.
    pub with_softirq: [Estimate; N],
    /// Gaps without any traced interruption (the hypervisor's own work, SMIs,
    /// clock-read stalls): count and total length. Not an interruption cost,
    /// it stays out of every estimate.
    pub untraced_gaps: u64,
    pub untraced_ns: u64,
    /// Gaps holding several interruptions: not used.
    pub compound_gaps: u64,
    pub gaps: u64,
}

fn estimate(traced: &[f64], hidden: &[f64]) -> Estimate {
    let (mean, median, spread, outliers) = robust(hidden);
    let n = traced.len().max(1) as f64;
    Estimate {
        samples: hidden.len() as u64 - outliers,
        outliers,
        traced_ns: traced.iter().sum::<f64>() / n,
        hidden_ns: mean,
        spread_ns: spread,
        median_ns: median,
    }
}

/// Sorts gaps by content and estimates each class's hidden cost.
pub fn census<'a>(gaps: impl IntoIterator<Item = &'a Gap>) -> Census {
    let mut c = Census::default();
    let mut traced: [Vec<f64>; N] = Default::default();
    let mut hidden: [Vec<f64>; N] = Default::default();
    let mut traced_si: [Vec<f64>; N] = Default::default();
    let mut hidden_si: [Vec<f64>; N] = Default::default();
    for g in gaps {
        c.gaps += 1;
        let n = g.interruptions();
        if n == 0 {
            if g.softirqs == 0 {
                c.untraced_gaps += 1;
                c.untraced_ns += g.len_ns;
            } else {
                // A softirq without an interruption: the spinner itself
                // never raises one, so something else ran (compound).
                c.compound_gaps += 1;
            }
            continue;
        }
        let h = g.len_ns as f64 - g.traced_ns as f64;
        match (
            g.intr.iter().position(|&x| x == 1).filter(|_| n == 1),
            g.softirqs,
        ) {
            (Some(class), 0) => {
                traced[class].push(g.traced_ns as f64);
                hidden[class].push(h);
            }
            (Some(class), 1) => {
                traced_si[class].push(g.traced_ns as f64);
                hidden_si[class].push(h);
            }
            _ => c.compound_gaps += 1,
        }
    }
    for k in 0..N {
        c.single[k] = estimate(&traced[k], &hidden[k]);
        c.with_softirq[k] = estimate(&traced_si[k], &hidden_si[k]);
    }
    c
}

/// Totals of one window: all gap time, traced time, interruptions by class
/// and softirq runs.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    lost: f64,
    traced: f64,
    intr: [f64; N],
    softirqs: f64,
}

fn totals(w: &Window) -> Totals {
    let mut t = Totals::default();
    for g in &w.gaps {
        t.lost += g.len_ns as f64;
        t.traced += g.traced_ns as f64;
        for (a, &n) in t.intr.iter_mut().zip(&g.intr) {
            *a += n as f64;
        }
        t.softirqs += g.softirqs as f64;
    }
    t
}

/// Fewer induced IPIs than this in a pair's window: the pair says nothing.
const MIN_PAIR_IPIS: f64 = 50.0;

/// What the induced interruptions really took from the spinner, against
/// what the per-class costs predict: the median over pairs of an induced
/// window and the quiet one after it of (untraced time lost in the first
/// beyond the second) / (its extra interruptions × their class's cost).
///
/// The per-class costs come from single gaps and leave out gaps where the
/// hypervisor's own periodic work coincided. Under a steady interrupt load
/// that work partly rides on the interrupts' exits and costs less than it
/// does alone, so the interruptions' true marginal cost is lower: on the
/// development VM by up to 18 % (0.82–1.01 of it). The victim of an interrupt load loses the
/// marginal cost; HIDDEN~ charges it. `None` when no pair had enough IPIs.
pub fn marginal_ratio(windows: &[Window], cost: [f64; N], softirq_cost: f64) -> Option<f64> {
    let mut ratios: Vec<f64> = windows
        .windows(2)
        .filter(|p| p[0].induced && !p[1].induced && p[0].wall_ns > 0 && p[1].wall_ns > 0)
        .filter_map(|p| {
            let (on, off) = (totals(&p[0]), totals(&p[1]));
            let s = p[0].wall_ns as f64 / p[1].wall_ns as f64;
            let induced = |t: &Totals| t.intr[2] + t.intr[4] + t.intr[5];
            if induced(&on) - induced(&off) * s < MIN_PAIR_IPIS {
                return None;
            }
            let untraced = (on.lost - off.lost * s) - (on.traced - off.traced * s);
            let predicted: f64 = (0..N)
                .map(|k| (on.intr[k] - off.intr[k] * s) * cost[k])
                .sum::<f64>()
                + (on.softirqs - off.softirqs * s) * softirq_cost;
            (predicted > 0.0).then(|| untraced / predicted)
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    Some(if n % 2 == 1 {
        ratios[n / 2]
    } else {
        (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(len: u64, traced: u64, intr: [u64; N], softirqs: u64) -> Gap {
        Gap {
            at_ns: 0,
            len_ns: len,
            traced_ns: traced,
            intr,
            softirqs,
        }
    }

    #[test]
    fn gaps_are_sorted_by_content() {
        let mut gaps = Vec::new();
        // 100 IPIs: 3.5 µs gaps with 0.5 µs traced, i.e. 3 µs hidden each,
        // with a little jitter.
        for i in 0..100 {
            gaps.push(gap(3_500 + (i % 5) * 10, 500, [0, 0, 1, 0, 0, 0], 0));
        }
        // One IPI that coincided with 25 µs of hypervisor work: an outlier.
        gaps.push(gap(28_500, 500, [0, 0, 1, 0, 0, 0], 0));
        // 20 ticks of 20 µs, 15 traced: 5 µs hidden.
        for _ in 0..20 {
            gaps.push(gap(20_000, 15_000, [0, 1, 0, 0, 0, 0], 0));
        }
        // 50 RPS IPIs with their NET_RX: 6 µs, 2.6 traced: 3.4 µs hidden.
        for _ in 0..50 {
            gaps.push(gap(6_000, 2_600, [0, 0, 1, 0, 0, 0], 1));
        }
        // A tick with three softirqs in its tail: compound.
        gaps.push(gap(30_000, 20_000, [0, 1, 0, 0, 0, 0], 3));
        // Hypervisor gaps: nothing traced.
        for _ in 0..7 {
            gaps.push(gap(10_000, 0, [0; N], 0));
        }
        // An IPI and a tick in one gap: compound.
        gaps.push(gap(30_000, 16_000, [0, 1, 1, 0, 0, 0], 0));
        let c = census(&gaps);
        assert_eq!(c.gaps, 180);
        assert_eq!((c.untraced_gaps, c.untraced_ns), (7, 70_000));
        assert_eq!(c.compound_gaps, 2);
        let rps = &c.with_softirq[2];
        assert_eq!(rps.samples, 50);
        assert!((rps.hidden_ns - 3_400.0).abs() < 1e-9, "{rps:?}");
        let ipi = &c.single[2];
        assert_eq!((ipi.samples, ipi.outliers), (100, 1));
        assert!((ipi.hidden_ns - 3_020.0).abs() < 1e-9, "{ipi:?}");
        assert!((ipi.traced_ns - 500.0).abs() < 1e-9, "{ipi:?}");
        let timer = &c.single[1];
        assert_eq!(timer.samples, 20);
        assert!((timer.hidden_ns - 5_000.0).abs() < 1e-9, "{timer:?}");
        assert_eq!(c.single[0].samples, 0);
    }

    fn win(gaps: Vec<Gap>, induced: bool) -> Window {
        Window {
            wall_ns: 20_000_000,
            gaps,
            induced,
            ..Default::default()
        }
    }

    /// Induced windows: 400 IPIs of 3.5 µs (0.5 traced) and two 25 µs
    /// hypervisor gaps that rode on IPIs (the IPI's gap grew by 20 µs: an
    /// outlier the census drops). Quiet windows: the same hypervisor work
    /// alone, two 25 µs gaps. The IPIs took 400 × 3 µs + 2 × 20 µs − 50 µs
    /// = 1,190 µs untraced: 0.99 of what 3 µs each predicts.
    #[test]
    fn marginal_cost_against_quiet_windows() {
        let mut on: Vec<Gap> = (0..400)
            .map(|_| gap(3_500, 500, [0, 0, 1, 0, 0, 0], 0))
            .collect();
        on[0].len_ns += 20_000;
        on[1].len_ns += 20_000;
        let off = vec![gap(25_000, 0, [0; N], 0); 2];
        let ws = vec![
            win(on.clone(), true),
            win(off.clone(), false),
            win(on, true),
            win(off, false),
        ];
        let r = marginal_ratio(&ws, [0.0, 0.0, 3_000.0, 0.0, 0.0, 0.0], 0.0).expect("two pairs");
        assert!((r - 1_190.0 / 1_200.0).abs() < 1e-9, "{r}");
        // Without quiet windows there is nothing to compare with.
        let all_on: Vec<Window> = ws
            .iter()
            .map(|w| Window {
                induced: true,
                ..w.clone()
            })
            .collect();
        assert_eq!(
            marginal_ratio(&all_on, [0.0, 0.0, 3_000.0, 0.0, 0.0, 0.0], 0.0),
            None
        );
        // Too few IPIs in a pair: no estimate.
        let few = vec![
            win(vec![gap(3_500, 500, [0, 0, 1, 0, 0, 0], 0); 10], true),
            win(Vec::new(), false),
        ];
        assert_eq!(
            marginal_ratio(&few, [0.0, 0.0, 3_000.0, 0.0, 0.0, 0.0], 0.0),
            None
        );
    }
}
