//! Per-CPU figures (`src/model/compute/cpu.rs`).

use crate::fixtures::*;

/// A softirq that ran 600 ms wall time with a 100 ms hardirq nested in it,
/// plus 400 ms of plain hardirqs: BPF reports softirq 500 ms (nested time
/// removed) and hardirq 500 ms. The CPU was 100 % in interrupts, not 110 %.
#[test]
fn nested_hardirq_in_softirq_counts_once() {
    let mut acct = IrqAcct {
        hardirq_ns: 500 * MS,
        hardirq_count: 10,
        ..Default::default()
    };
    acct.softirq_ns[CTX_STOLEN][NET_RX] = 500 * MS;
    let mut t = task(5, 5, 1, "spin", (100, 0), S, 0);
    t.irq = Some(Box::new(acct.clone()));
    let (prev, cur) = pair(
        Source::Bpf,
        (
            vec![cpu(0, times(0, 0, 0, 0, 0), Some(IrqAcct::default()))],
            vec![task(5, 5, 1, "spin", (0, 0), 0, 0)],
        ),
        (vec![cpu(0, times(0, 0, 50, 50, 0), Some(acct))], vec![t]),
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    let c = &f.cpus[0];
    let traced =
        c.traced_hardirq_pct + c.traced_sysvec_pct + c.traced_softirq_pct.iter().sum::<f64>();
    approx(traced, 100.0);
    approx(c.unexplained_irq_pct, 0.0);
    let v = thread(&f, 5);
    assert_eq!(
        v.stolen_pct,
        v.hardirq_pct + v.sysvec_pct + v.softirq_stolen_pct.iter().sum::<f64>()
    );
    approx(v.stolen_pct, 100.0);
    approx(v.true_pct, 0.0);
}

#[test]
fn offline_cpu_is_shown_offline_with_zeros() {
    let (prev, mut cur) = bpf_pair();
    cur.cpus[1].online = false;
    cur.cpus[1].times = None;
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    let c = &f.cpus[1];
    assert!(!c.online);
    assert_eq!((c.idle_pct, c.usr_pct), (0.0, 0.0));
    assert_eq!(f.summary.cpus_online, 1);
    approx(f.summary.usr_pct, 60.0);
    // Offline in the previous sample only: still offline for this interval.
    let (mut prev, cur) = bpf_pair();
    prev.cpus[1].online = false;
    assert!(!compute(&host(Regime::TickBased), &prev, &cur).cpus[1].online);
}
