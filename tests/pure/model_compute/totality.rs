//! The model is total: any input, even garbage from a corrupt recording,
//! gives a frame of finite numbers; a zero interval, a zero clock tick or a
//! counter that went backwards gives zeros.

use crate::model_compute::fixtures::*;
use proptest::prelude::*;

/// The checker itself: serde turns NaN into null, which it must not let by.
#[test]
#[should_panic(expected = "is null: NaN")]
fn all_finite_sees_a_nan() {
    let mut f = Frame::default();
    f.summary.usr_pct = f64::NAN;
    all_finite(&f);
}

#[test]
#[should_panic(expected = "is null: NaN")]
fn all_finite_sees_an_infinity_in_a_row() {
    let mut f = Frame::default();
    f.cpus.push(Default::default());
    f.cpus[0].irq_pct = f64::INFINITY;
    all_finite(&f);
}

#[test]
fn zero_interval_is_all_zero_never_nan() {
    let (prev, mut cur) = bpf_pair();
    cur.mono_ns = prev.mono_ns;
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    all_finite(&f);
    assert_eq!(f.interval_s, 0.0);
    for t in &f.threads {
        assert_eq!(
            (
                t.top_pct,
                t.on_cpu_pct,
                t.stolen_pct,
                t.true_pct,
                t.interruptions_per_s
            ),
            (0.0, 0.0, 0.0, 0.0, 0.0)
        );
    }
    assert_eq!(f.cpus[0].net_rx_per_s, 0.0);
    // Going back in time is a zero interval too.
    cur.mono_ns = 0;
    all_finite(&compute(&host(Regime::TickBased), &prev, &cur));
    // And a zero clock tick.
    let mut h = host(Regime::TickBased);
    h.clk_tck = 0;
    let (prev, cur) = bpf_pair();
    let f = compute(&h, &prev, &cur);
    all_finite(&f);
    assert_eq!(thread(&f, 100).top_pct, 0.0);
}

#[test]
fn counters_going_backwards_give_zero() {
    let (cur, prev) = bpf_pair();
    // Swap the samples' clocks so the interval is positive and only the
    // counters run backwards.
    let (mut prev, mut cur) = (prev, cur);
    prev.mono_ns = S;
    cur.mono_ns = 2 * S;
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    all_finite(&f);
    let v = thread(&f, 100);
    assert_eq!(
        (v.top_pct, v.on_cpu_pct, v.stolen_pct, v.true_pct),
        (0.0, 0.0, 0.0, 0.0)
    );
    assert_eq!(f.cpus[0].usr_pct, 0.0);
    assert_eq!(f.cpus[0].net_rx_per_s, 0.0);
    assert_eq!(f.health.map_full, 0);
}

fn arb_irq() -> impl Strategy<Value = Option<IrqAcct>> {
    proptest::option::of(
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<[u64; 10]>()).prop_map(|(a, b, c, s)| {
            IrqAcct {
                hardirq_ns: a,
                hardirq_count: b,
                sysvec_ns: c,
                softirq_ns: [s, s, s],
                softirq_count: s,
                sysvec_count: b,
                timer_count: s[0],
                ipi_count: s[1],
                softirq_stolen_count: s[2],
                in_softirq_count: [s[3], s[4], s[5], s[6], s[7], s[8]],
                tlb_count: s[9],
                resched_count: s[7],
                // Arbitrary handler time: the state check must stay total.
                ipi_ns: c,
                tlb_ns: a,
                timer_ns: b,
                sock: nettop::sample::SockAcct {
                    rx_bytes: [a, b, c],
                    rx_calls: [s[0], s[1], s[2]],
                    tx_bytes: [c, b, a],
                    tx_calls: [s[3], s[4], s[5]],
                    caused_ns: c,
                    caused_pkts: s[6],
                    caused_ipis_milli: s[8],
                },
            }
        }),
    )
}

fn arb_sample() -> impl Strategy<Value = RawSample> {
    (
        any::<u64>(),
        any::<bool>(),
        proptest::collection::vec((0u32..4, any::<bool>(), any::<[u64; 8]>(), arb_irq()), 0..4),
        proptest::collection::vec(
            (
                0u32..4,
                0u32..6,
                0u64..3,
                any::<[u64; 3]>(),
                0u32..8,
                arb_irq(),
            ),
            0..6,
        ),
    )
        .prop_map(|(mono, bpf, cpus, tasks)| RawSample {
            mono_ns: mono,
            source: if bpf { Source::Bpf } else { Source::ProcOnly },
            cpus: cpus
                .into_iter()
                .map(|(n, on, t, irq)| RawCpu {
                    cpu: n,
                    online: on,
                    times: Some(CpuTimes {
                        user: t[0],
                        nice: t[1],
                        system: t[2],
                        idle: t[3],
                        iowait: t[4],
                        irq: t[5],
                        softirq: t[6],
                        steal: t[7],
                        ..Default::default()
                    }),
                    irq,
                    net: Some(CpuNet {
                        net_rx_actions: t[0],
                        net_rx_ns: t[1],
                        ..Default::default()
                    }),
                    ksoftirqd_tid: Some(n),
                    ..Default::default()
                })
                .collect(),
            tasks: tasks
                .into_iter()
                .map(|(tg, tid, st, v, cpu, irq)| RawTask {
                    tgid: tg,
                    tid,
                    start_ticks: st,
                    utime_ticks: v[0],
                    stime_ticks: v[1],
                    on_cpu_ns: v[2],
                    last_cpu: cpu,
                    irq: irq.map(Box::new),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
}

proptest! {
    #[test]
    fn never_panics_never_nan(a in arb_sample(), b in arb_sample(), tck in 0u64..1000, r in 0u8..3) {
        let regime = [Regime::TickBased, Regime::IrqTimeAccounting, Regime::Unknown][r as usize];
        let mut h = calibrated(regime);
        h.clk_tck = tck;
        all_finite(&compute(&h, &a, &b));
    }
}
