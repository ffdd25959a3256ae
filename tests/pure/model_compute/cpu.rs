//! Per-CPU figures (`src/model/compute/cpu.rs`).

use crate::model_compute::fixtures::*;

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

/// A program's cumulative counters: runs and run time from bpf_stats, and
/// its own runs per CPU.
fn prog(name: &str, run_cnt: u64, run_time_ns: u64, cpu_runs: &[u64]) -> ProgStat {
    ProgStat {
        name: name.into(),
        run_cnt,
        run_time_ns,
        cpu_runs: cpu_runs.to_vec(),
    }
}

fn with_programs(
    (mut prev, mut cur): (RawSample, RawSample),
    before: Vec<ProgStat>,
    after: Vec<ProgStat>,
) -> (RawSample, RawSample) {
    for (s, programs) in [(&mut prev, before), (&mut cur, after)] {
        s.health = Some(BpfHealth {
            programs,
            ..Default::default()
        });
    }
    (prev, cur)
}

/// Over one second: the exit handler ran 3,000 times for 3 ms (1,000 on
/// CPU 0, 2,000 on CPU 1), the raise handler 1,000 times for 5 ms, all on
/// CPU 0. Each program's time goes where it ran, at its own mean cost per
/// run: CPU 0 has 1 ms + 5 ms, CPU 1 2 ms, and together they are the
/// 8 ms the kernel's stats give (the health line's bpf-cpu).
#[test]
fn own_bpf_cost_is_each_programs_time_shared_out_by_its_runs() {
    let (prev, cur) = with_programs(
        bpf_pair(),
        vec![
            prog("btf_si_out", 1_000, 100 * MS, &[600, 400]),
            prog("btf_si_raise", 50, MS, &[50, 0]),
        ],
        vec![
            prog("btf_si_out", 4_000, 103 * MS, &[1_600, 2_400]),
            prog("btf_si_raise", 1_050, 6 * MS, &[1_050, 0]),
        ],
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    approx(f.cpus[0].own_bpf_pct.unwrap(), 0.6);
    approx(f.cpus[1].own_bpf_pct.unwrap(), 0.2);
    let sum: f64 = f.cpus.iter().filter_map(|c| c.own_bpf_pct).sum();
    approx(sum, f.health.bpf_cpu_pct.unwrap());
    all_finite(&f);
}

/// Not measured is not zero: without BPF run-time stats (the counters stay
/// 0), from a recording made before the per-CPU runs, or without BPF, the
/// figure is absent (JSON null, `-` on screen), never 0.
#[test]
fn own_bpf_cost_is_absent_when_not_measured() {
    let absent = |f: &Frame, why: &str| {
        for c in &f.cpus {
            assert_eq!(c.own_bpf_pct, None, "{why}: CPU {}", c.cpu);
        }
        let json = serde_json::to_value(f).unwrap();
        assert!(json["cpus"][0]["own_bpf_pct"].is_null(), "{why}: {json}");
    };
    // Stats off: runs are counted per CPU, run time and count stay 0.
    let (prev, cur) = with_programs(
        bpf_pair(),
        vec![prog("btf_si_out", 0, 0, &[10, 10])],
        vec![prog("btf_si_out", 0, 0, &[900, 500])],
    );
    absent(&compute(&host(Regime::TickBased), &prev, &cur), "stats off");
    // A recording from before the per-CPU runs.
    let (prev, cur) = bpf_pair();
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    assert!(f.health.bpf_cpu_pct.is_some(), "stats were on");
    absent(&f, "old recording");
    // A program that ran with stats on but counts no runs per CPU: a
    // figure without it would under-state the monitor.
    let (prev, cur) = with_programs(
        bpf_pair(),
        vec![prog("a", 10, MS, &[5, 5]), prog("b", 10, MS, &[])],
        vec![prog("a", 20, 2 * MS, &[10, 10]), prog("b", 20, 2 * MS, &[])],
    );
    absent(
        &compute(&host(Regime::TickBased), &prev, &cur),
        "b uncounted",
    );
    // /proc only.
    let (mut prev, mut cur) = with_programs(
        bpf_pair(),
        vec![prog("a", 10, MS, &[5, 5])],
        vec![prog("a", 20, 2 * MS, &[10, 10])],
    );
    prev.source = Source::ProcOnly;
    cur.source = Source::ProcOnly;
    absent(&compute(&host(Regime::TickBased), &prev, &cur), "no BPF");
}

/// A CPU that ran none of nettop's programs shows 0 (measured, nothing),
/// and an offline one nothing.
#[test]
fn own_bpf_cost_is_zero_where_nothing_ran_and_absent_offline() {
    let (prev, cur) = with_programs(
        bpf_pair(),
        vec![prog("a", 0, 0, &[0, 0])],
        vec![prog("a", 100, 10 * MS, &[100])],
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    approx(f.cpus[0].own_bpf_pct.unwrap(), 1.0);
    assert_eq!(f.cpus[1].own_bpf_pct, Some(0.0));
    let (prev, mut cur) = (prev, cur);
    cur.cpus[1].online = false;
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    assert_eq!(f.cpus[1].own_bpf_pct, None);
}

/// The per-CPU counts and the kernel's run count are read a moment apart:
/// when the counts got a few runs more, the CPUs still share only the
/// program's run time, never more. Counters that went backwards (a new
/// collector's maps, a spliced recording) give 0, not a negative or a
/// wrapped figure.
#[test]
fn own_bpf_cost_saturates() {
    let (prev, cur) = with_programs(
        bpf_pair(),
        vec![prog("a", 0, 0, &[0, 0])],
        vec![prog("a", 900, 9 * MS, &[600, 400])],
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    approx(f.cpus[0].own_bpf_pct.unwrap(), 0.54);
    approx(f.cpus[1].own_bpf_pct.unwrap(), 0.36);
    approx(
        f.cpus.iter().filter_map(|c| c.own_bpf_pct).sum(),
        f.health.bpf_cpu_pct.unwrap(),
    );
    let (prev, cur) = with_programs(
        bpf_pair(),
        vec![prog("a", 5_000, 50 * MS, &[3_000, 2_000])],
        vec![prog("a", 100, 60 * MS, &[u64::MAX, 10])],
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    for c in &f.cpus {
        let v = c.own_bpf_pct.unwrap();
        assert!(v.is_finite() && (0.0..=1.0 + 1e-9).contains(&v), "{v}");
    }
    all_finite(&f);
}
