//! The table's arithmetic on made-up windows.

use super::super::spin::Gap;
use super::*;

fn place() -> Placement {
    Placement {
        spinner: 1,
        sender: 0,
        excluded: Default::default(),
    }
}

/// The table of `w` on a tick-based kernel, no wake-ups.
fn tabled(w: &[Window]) -> Calibration {
    table(
        w,
        CalibrationKey::default(),
        Regime::TickBased,
        &place(),
        0.0,
    )
    .expect("table")
}

/// `n` gaps of `len_ns`, `traced_ns` of it traced, holding `intr` and
/// no softirq.
fn gaps(n: usize, len_ns: u64, traced_ns: u64, intr: [u64; 6]) -> Vec<Gap> {
    (0..n)
        .map(|_| Gap {
            at_ns: 0,
            len_ns,
            traced_ns,
            intr,
            softirqs: 0,
        })
        .collect()
}

/// The table of one window of 300 IPIs and 25 ticks.
fn plain() -> Calibration {
    tabled(&[window(300, 25, 0)])
}

/// A quiet window: the sender left it alone; ten more gaps of the
/// hypervisor's than an induced one has.
fn quiet() -> Window {
    let mut w = window(0, 25, 0);
    w.gaps.extend((0..10).map(|_| Gap {
        len_ns: 10_000,
        ..Default::default()
    }));
    w.induced = false;
    w
}

/// One 100 ms window: `ipis` IPI gaps of 3.5 µs (0.5 traced), `ticks`
/// timer gaps of 20 µs (15 traced), 10 hypervisor gaps of 10 µs.
fn window(ipis: u64, ticks: u64, cputime_ns: u64) -> Window {
    let gaps = [
        gaps(ipis as usize, 3_500, 500, [0, 0, 1, 0, 0, 0]),
        gaps(ticks as usize, 20_000, 15_000, [0, 1, 0, 0, 0, 0]),
        gaps(10, 10_000, 0, [0; 6]),
    ]
    .concat();
    Window {
        cpu: 1,
        wall_ns: 100_000_000,
        step_ns: 30,
        gaps,
        outside_gaps: 0,
        cputime_ns,
        ctx_switches: 0,
        induced: true,
    }
}

#[test]
fn table_from_gaps() {
    let w = vec![window(300, 25, 100_000_000)];
    let c = tabled(&w);
    assert_eq!((c.cpu, c.sender_cpu), (1, 0));
    assert_eq!((c.ipi.basis, c.ipi.samples), (Basis::Measured, 300));
    assert!((c.ipi.hidden_ns - 3_000.0).abs() < 1e-9);
    assert!((c.ipi.traced_ns - 500.0).abs() < 1e-9);
    assert_eq!(c.timer.basis, Basis::Measured);
    assert!((c.timer.hidden_ns - 5_000.0).abs() < 1e-9);
    // Devices cannot be induced: the IPI's cost, and said so.
    assert_eq!(c.device.basis, Basis::SameAsIpi);
    assert!((c.device.hidden_ns - 3_000.0).abs() < 1e-9);
    assert_eq!(c.runtime_share, 1.0);
    assert!((c.untraced_gaps_per_s - 100.0).abs() < 1e-9);
    assert!((c.untraced_pct - 0.1).abs() < 1e-9);

    // Too few ticks: the timer takes the IPI's cost.
    let c = tabled(&[window(300, 5, 0)]);
    assert_eq!(c.timer.basis, Basis::SameAsIpi);
    assert!((c.timer.hidden_ns - 3_000.0).abs() < 1e-9);
}

/// The noise is the worst relative spread of the IPI, TLB and timer
/// costs; classes not measured, or near 0, do not count.
#[test]
fn noise_is_the_widest_relative_spread() {
    let mut c = plain();
    // Identical gaps: no spread at all.
    assert_eq!(c.noise(), 0.0);
    c.ipi.spread_ns = 150.0; // 5 % of 3 µs
    assert!((c.noise() - 0.05).abs() < 1e-9);
    c.timer.spread_ns = 600.0; // 12 % of 5 µs: a busy host
    assert!((c.noise() - 0.12).abs() < 1e-9);
    assert!(c.disturbed());
    // Charged as an IPI: its spread is the IPI's, counted there.
    c.timer.basis = Basis::SameAsIpi;
    assert!((c.noise() - 0.05).abs() < 1e-9);
    c.resched.spread_ns = 5_000.0;
    c.resched.hidden_ns = 0.0;
    assert!((c.noise() - 0.05).abs() < 1e-9);
}

/// One window of five hit by a burst (its IPIs 1 µs dearer): the median
/// of the windows' estimates ignores it; the pooled mean would move by
/// a fifth of it.
#[test]
fn a_disturbed_window_does_not_move_the_table() {
    let mut w: Vec<Window> = (0..5).map(|_| window(300, 25, 0)).collect();
    for (k, win) in w.iter_mut().enumerate() {
        let extra = if k == 4 { 1_000 } else { 0 };
        for (i, g) in win.gaps.iter_mut().filter(|g| g.intr[2] == 1).enumerate() {
            // 3050..3950 ns around a 3500 ns mean: 3 µs hidden.
            g.len_ns = 3_050 + (i as u64 % 10) * 100 + extra;
        }
    }
    let c = tabled(&w);
    assert!(
        (c.ipi.hidden_ns - 3_000.0).abs() < 1e-9,
        "{}",
        c.ipi.hidden_ns
    );
    assert_eq!(c.ipi.samples, 1_500);
}

/// Loopback RPS IPIs with their NET_RX (6 µs, 2.6 traced: 3.4 µs
/// hidden) next to pure IPIs (3 µs hidden): a softirq in the tail costs
/// 0.4 µs untraced and 2.1 µs traced.
#[test]
fn softirq_cost_from_ipis_with_and_without_one() {
    let mut w: Vec<Window> = (0..3).map(|_| window(300, 25, 0)).collect();
    for win in &mut w {
        win.gaps.extend((0..100).map(|_| Gap {
            at_ns: 0,
            len_ns: 6_000,
            traced_ns: 2_600,
            intr: [0, 0, 1, 0, 0, 0],
            softirqs: 1,
        }));
    }
    let c = tabled(&w);
    assert_eq!(c.softirq.basis, Basis::Measured);
    assert!(
        (c.softirq.hidden_ns - 400.0).abs() < 1e-9,
        "{:?}",
        c.softirq
    );
    assert!(
        (c.softirq.traced_ns - 2_100.0).abs() < 1e-9,
        "{:?}",
        c.softirq
    );
    assert!(
        (c.ipi.hidden_ns - 3_000.0).abs() < 1e-9,
        "IPIs with a softirq stay out"
    );

    // No RPS gaps (no CAP_SYS_ADMIN): not measured, charged as 0.
    let c = plain();
    assert_eq!(c.softirq.basis, Basis::NotMeasured);
}

/// Quiet windows (no IPIs) with 100 µs more hypervisor work than the
/// induced ones: the 300 IPIs took 900 − 100 µs untraced, 8/9 of what
/// 3 µs each predicts, and every class is charged that much less.
#[test]
fn costs_are_brought_to_the_marginal_cost() {
    let w = vec![window(300, 25, 0), quiet(), window(300, 25, 0), quiet()];
    let c = tabled(&w);
    let r = 8.0 / 9.0;
    assert!((c.marginal_ratio - r).abs() < 1e-9, "{}", c.marginal_ratio);
    assert!((c.ipi.hidden_ns - 3_000.0 * r).abs() < 1e-6, "{:?}", c.ipi);
    assert!((c.device.hidden_ns - 3_000.0 * r).abs() < 1e-6);
    assert!(
        (c.timer.hidden_ns - 5_000.0 * r).abs() < 1e-6,
        "{:?}",
        c.timer
    );
    assert_eq!(c.ipi.samples, 600);
    // Only induced windows: no quiet one to compare with, no scaling.
    let c = tabled(&[window(300, 25, 0), window(300, 25, 0)]);
    assert_eq!(c.marginal_ratio, 1.0);
    assert!((c.ipi.hidden_ns - 3_000.0).abs() < 1e-9);
}

/// TLB shootdowns (5 µs gaps, 1 µs traced) get a cost of their own;
/// reschedule IPIs, not induced, take the IPI's and a note says why.
#[test]
fn induced_ipi_kinds_get_their_own_cost() {
    let mut w = window(300, 25, 0);
    w.gaps.extend(gaps(150, 5_000, 1_000, [0, 0, 0, 0, 1, 0]));
    let c = tabled(&[w.clone()]);
    assert_eq!((c.tlb.basis, c.tlb.samples), (Basis::Measured, 150));
    assert!((c.tlb.hidden_ns - 4_000.0).abs() < 1e-9, "{:?}", c.tlb);
    assert!(
        (c.ipi.hidden_ns - 3_000.0).abs() < 1e-9,
        "TLB gaps stay out"
    );
    assert_eq!(c.resched.basis, Basis::SameAsIpi);
    assert!((c.resched.hidden_ns - 3_000.0).abs() < 1e-9);
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("reschedule IPIs: 0 clean gaps")),
        "{:?}",
        c.notes
    );
    assert!(
        !c.notes.iter().any(|n| n.starts_with("TLB")),
        "{:?}",
        c.notes
    );

    // Wake-ups: 20 µs gaps, 0.5 traced, 12 µs of them the woken
    // thread's own run: 7.5 µs is the reschedule's.
    w.gaps.extend(gaps(120, 20_000, 500, [0, 0, 0, 0, 0, 1]));
    let c = table(
        &[w],
        CalibrationKey::default(),
        Regime::TickBased,
        &place(),
        12_000.0,
    )
    .expect("table");
    assert_eq!((c.resched.basis, c.resched.samples), (Basis::Measured, 120));
    assert!(
        (c.resched.hidden_ns - 7_500.0).abs() < 1e-9,
        "{:?}",
        c.resched
    );
    assert_eq!(c.resched_woken_ns, 12_000.0);
}

#[test]
fn a_calibration_the_host_changed_state_in_keeps_both() {
    // Five windows; the middle two in the slower state: IPI handlers
    // at 900 ns hiding 5 µs instead of 500 ns hiding 3 µs.
    let slow = |mut w: Window| {
        for g in w.gaps.iter_mut().filter(|g| g.intr[2] == 1) {
            (g.len_ns, g.traced_ns) = (5_900, 900);
        }
        w
    };
    let w = [
        window(300, 5, 0),
        quiet(),
        slow(window(300, 5, 0)),
        quiet(),
        slow(window(300, 5, 0)),
        quiet(),
        window(300, 5, 0),
        quiet(),
        window(300, 5, 0),
        quiet(),
    ];
    let c = tabled(&w);
    // The last windows' state is the table's own.
    assert!((c.ipi.traced_ns - 500.0).abs() < 1e-9);
    assert!((c.ipi.hidden_ns - 3_000.0).abs() < 1e-9);
    assert_eq!(c.ipi.samples, 900);
    assert_eq!(c.states.len(), 1);
    let other = &c.states[0];
    assert!((other.ipi.traced_ns - 900.0).abs() < 1e-9);
    assert!((other.ipi.hidden_ns - 5_000.0).abs() < 1e-9);
    // No shootdowns induced here: the other state's stay unknown.
    assert_eq!(other.tlb.basis, Basis::NotMeasured);
    assert!(
        c.notes.iter().any(|n| n.contains("both states kept")),
        "{:?}",
        c.notes
    );
    // Devices take the table's own IPI cost, not a mix.
    assert!((c.device.hidden_ns - 3_000.0).abs() < 1e-9);
    // The marginal ratio would weigh the slow windows' losses against
    // the table's own cost: not applied.
    assert_eq!(c.marginal_ratio, 1.0);
    // Shootdowns in the last window (1 µs traced, twice the IPI's):
    // the other state's take its IPI's cost, and a handler time twice
    // its IPI's, so shootdowns alone can tell the states apart.
    let mut w = w;
    w[8].gaps
        .extend(gaps(150, 5_000, 1_000, [0, 0, 0, 0, 1, 0]));
    let c = tabled(&w);
    assert_eq!(c.tlb.basis, Basis::Measured);
    let tlb = &c.states[0].tlb;
    assert_eq!(tlb.basis, Basis::SameAsIpi);
    assert!((tlb.traced_ns - 1_800.0).abs() < 1e-9, "{tlb:?}");
    assert!((tlb.hidden_ns - 5_000.0).abs() < 1e-9, "{tlb:?}");
}

#[test]
fn too_few_ipis_is_an_error() {
    let e = table(
        &[window(50, 25, 0)],
        CalibrationKey::default(),
        Regime::TickBased,
        &place(),
        0.0,
    )
    .expect_err("50 IPIs");
    assert!(format!("{e:#}").contains("only 50 clean IPI gaps"));
}

/// IRQ_TIME_ACCOUNTING: the spinner was charged 100 ms − lost + what of
/// its gaps the kernel did not clock as irq time. Gaps: 300 × 3.5 µs +
/// 25 × 20 µs + 10 × 10 µs = 1.65 ms; hidden 300 × 3 + 25 × 5 = 1.025 ms.
/// Charged 98.35 ms own + 0.1 ms untraced + 0.5 × 1.025 ms: share 0.5.
#[test]
fn runtime_share_under_irq_time_accounting() {
    let cputime = 98_350_000 + 100_000 + 512_500;
    let c = table(
        &[window(300, 25, cputime)],
        CalibrationKey::default(),
        Regime::IrqTimeAccounting,
        &place(),
        0.0,
    )
    .expect("table");
    assert!((c.runtime_share - 0.5).abs() < 1e-9, "{}", c.runtime_share);
}
