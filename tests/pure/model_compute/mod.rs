//! The pure model on synthetic samples with hand-computed expectations.
//! CLK_TCK is 100 (1 tick = 10 ms) and the interval is 1 s unless a test
//! says otherwise, so 1 tick = 1 % and 10 ms = 1 %.
//!
//! One test binary; its modules follow `src/model/compute/`: `cpu`, `task`
//! and `net`, plus `totality` (no input gives a panic or a non-finite
//! number). The test here is the whole frame of one interval, which all
//! three build.

mod cpu;
mod fixtures;
mod net;
mod task;
mod totality;
mod traffic;

use fixtures::*;

#[test]
fn tick_based_bpf_victim() {
    let (prev, cur) = bpf_pair();
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    all_finite(&f);
    approx(f.interval_s, 1.0);
    let v = thread(&f, 100);
    approx(v.top_pct, 90.0);
    approx(v.on_cpu_pct, 90.0);
    approx(v.hardirq_pct, 3.0);
    approx(v.sysvec_pct, 2.0);
    approx(v.softirq_stolen_pct[NET_RX], 8.0);
    approx(v.stolen_pct, 13.0);
    approx(v.inline_pct, 1.0);
    approx(v.ksoftirqd_pct, 0.0);
    // Tick-based: runtime includes the stolen time; inline work is its own.
    // No calibration: nothing hidden is charged, and the frame says why.
    approx(v.true_pct, 77.0);
    approx(v.hidden_pct, 0.0);
    assert!(
        f.hidden_note.contains("not calibrated"),
        "{}",
        f.hidden_note
    );
    approx(v.interruptions_per_s, 1200.0);
    approx(v.softirqs_per_s, 450.0);
    assert_eq!(f.health.vanished_tasks, 0);

    let ks = thread(&f, 9);
    approx(ks.ksoftirqd_pct, 0.5);
    approx(ks.stolen_pct, 0.0);
    approx(ks.true_pct, 0.5);

    let c = &f.cpus[0];
    assert!(c.online);
    assert_eq!(c.node, Some(0));
    approx(c.usr_pct, 60.0);
    approx(c.sys_pct, 20.0);
    approx(c.irq_pct, 5.0);
    approx(c.soft_pct, 10.0);
    approx(c.idle_pct, 5.0);
    approx(c.traced_hardirq_pct, 3.0);
    approx(c.traced_sysvec_pct, 2.0);
    approx(c.traced_softirq_pct[NET_RX], 8.5);
    approx(c.traced_softirq_pct[2], 1.0);
    approx(c.softirq_stolen_pct, 8.0);
    approx(c.softirq_inline_pct, 1.0);
    approx(c.softirq_ksoftirqd_pct, 0.5);
    approx(c.ksoftirqd_pct, 0.5);
    approx(c.unexplained_irq_pct, 0.5);
    approx(c.stolen_pct, 13.0);
    approx(c.hidden_pct, 0.0);
    approx(c.true_pct, 95.0 - 13.0);
    approx(c.interruptions_per_s, 1500.0);
    approx(c.net_rx_per_s, 1000.0);
    approx(c.net_rx_avg_us, 85.0);
    approx(c.net_rx_restarts_per_s, 4.0);
    approx(c.napi_polls_per_s, 1500.0);
    approx(c.packets_per_s, 48000.0);
    approx(c.budget_exhausted_per_s, 20.0);
    approx(c.time_squeeze_per_s, 7.0);
    assert_eq!(f.cpus[1].node, Some(1));
    approx(f.cpus[1].idle_pct, 100.0);

    approx(f.summary.usr_pct, 30.0);
    approx(f.summary.idle_pct, 52.5);
    approx(f.summary.stolen_pct_total, 13.0);
    approx(f.summary.packets_per_s, 48000.0);
    assert_eq!(
        (f.summary.tasks, f.summary.processes, f.summary.cpus_online),
        (2, 2, 2)
    );

    assert_eq!(f.napi.len(), 1);
    assert_eq!(f.napi[0].cpus, vec![0]);
    approx(f.napi[0].work_per_poll, 32.0);
    approx(f.napi[0].budget_exhausted_per_s, 20.0);
    approx(f.devices[0].rx_packets_per_s, 48000.0);

    assert_eq!((f.health.map_full, f.health.unmatched_exits), (3, 1));
    approx(f.health.bpf_cpu_pct.unwrap(), 2.0);
    assert_eq!(f.health.attach_mode, "tp_btf");
    assert!(f.regime_note.contains("CONFIG_IRQ_TIME_ACCOUNTING off"));
}
