//! The pure model on synthetic samples with hand-computed expectations.
//! CLK_TCK is 100 (1 tick = 10 ms) and the interval is 1 s unless a test
//! says otherwise, so 1 tick = 1 % and 10 ms = 1 %.

use nettop::model::compute;
use nettop::model::frame::{Frame, TaskView};
use nettop::model::hidden::{Basis, Calibration, ClassCost};
use nettop::model::raw::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn host(regime: Regime) -> HostInfo {
    HostInfo {
        hostname: "h".into(),
        regime,
        clk_tck: 100,
        nr_cpus: 2,
        cpu_node: vec![0, 1],
        ..Default::default()
    }
}

/// Hidden cost per interruption: timer 10 µs, everything else 3 µs; half of
/// it left in runtime under IRQ_TIME_ACCOUNTING.
fn calibration() -> Calibration {
    let c = |basis, ns: f64| ClassCost {
        basis,
        samples: 100,
        traced_ns: 500.0,
        hidden_ns: ns,
        spread_ns: 100.0,
    };
    Calibration {
        cpu: 1,
        measured_unix_ms: 1_000,
        origin: "cache /x".into(),
        device: c(Basis::SameAsIpi, 3_000.0),
        timer: c(Basis::Measured, 10_000.0),
        ipi: c(Basis::Measured, 3_000.0),
        other: c(Basis::SameAsIpi, 3_000.0),
        runtime_share: 0.5,
        ..Default::default()
    }
}

fn calibrated(regime: Regime) -> HostInfo {
    HostInfo {
        calibration: Some(calibration()),
        ..host(regime)
    }
}

fn approx(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

fn times(user: u64, system: u64, irq: u64, softirq: u64, idle: u64) -> CpuTimes {
    CpuTimes {
        user,
        system,
        irq,
        softirq,
        idle,
        ..Default::default()
    }
}

fn cpu(n: u32, t: CpuTimes, irq: Option<IrqAcct>) -> RawCpu {
    RawCpu {
        cpu: n,
        online: true,
        times: Some(t),
        irq,
        ksoftirqd_tid: None,
        ..Default::default()
    }
}

fn task(
    tgid: u32,
    tid: u32,
    start: u64,
    comm: &str,
    ticks: (u64, u64),
    on_cpu: u64,
    cpu: u32,
) -> RawTask {
    RawTask {
        tgid,
        tid,
        start_ticks: start,
        comm: comm.into(),
        state: 'R',
        utime_ticks: ticks.0,
        stime_ticks: ticks.1,
        on_cpu_ns: on_cpu,
        last_cpu: cpu,
        affinity: "0-1".into(),
        ..Default::default()
    }
}

fn sample(mono: u64, source: Source, cpus: Vec<RawCpu>, tasks: Vec<RawTask>) -> RawSample {
    RawSample {
        seq: mono / S,
        mono_ns: mono,
        unix_ms: mono / MS,
        source,
        cpus,
        tasks,
        ..Default::default()
    }
}

fn thread(f: &Frame, tid: u32) -> &TaskView {
    f.threads.iter().find(|t| t.tid == tid).unwrap()
}

fn process(f: &Frame, pid: u32) -> &TaskView {
    f.processes.iter().find(|t| t.pid == pid).unwrap()
}

/// Fields that are `Option`s in the frame: serialised as null when absent.
const NULLABLE: &[&str] = &["node", "bpf_cpu_pct"];

/// Every number in the frame is finite. Walked serialised, so no field is
/// missed; serde_json writes NaN and ±inf as null, so a null anywhere but
/// an `Option` field is a non-finite number, and the `Option<f64>` fields
/// are checked directly.
fn all_finite(f: &Frame) {
    fn walk(key: &str, v: &serde_json::Value) {
        match v {
            serde_json::Value::Number(n) => {
                assert!(n.as_f64().is_some_and(f64::is_finite), "{key}: {n}")
            }
            serde_json::Value::Null => {
                assert!(NULLABLE.contains(&key), "{key} is null: NaN or infinite")
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(key, x)),
            serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| walk(k, x)),
            _ => {}
        }
    }
    walk("frame", &serde_json::to_value(f).unwrap());
    if let Some(x) = f.health.bpf_cpu_pct {
        assert!(x.is_finite(), "bpf_cpu_pct {x}");
    }
    for t in f.threads.iter().chain(&f.processes) {
        for x in [
            t.top_pct,
            t.on_cpu_pct,
            t.stolen_pct,
            t.true_pct,
            t.hidden_pct,
            t.hardirq_pct,
        ] {
            assert!(x.is_finite() && x >= 0.0, "{x} in {t:?}");
        }
    }
    for c in &f.cpus {
        for x in [c.stolen_pct, c.hidden_pct, c.true_pct] {
            assert!(x.is_finite() && x >= 0.0, "{x} in {c:?}");
        }
    }
}

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

/// CPU 0 over one second: 60 user, 20 system, 5 irq, 10 softirq, 5 idle
/// ticks. BPF traced there: hardirq 30 ms (1000 irqs), sysvec 20 ms (500),
/// NET_RX stolen 80 ms, NET_TX inline 10 ms, NET_RX in ksoftirqd 5 ms.
/// Traced total 145 ms against /proc/stat's 150 ms: 5 ms the tick saw that
/// tracing did not.
///
/// The victim (tid 100, CPU 0): utime 80 + stime 10 ticks, 900 ms on CPU;
/// hardirq 30 ms (900 irqs), sysvec 20 ms (300: 100 timer, 150 IPIs, 50
/// other), NET_RX stolen 80 ms, inline NET_TX 10 ms; 400 NET_RX + 50 NET_TX
/// softirq runs.
fn bpf_pair() -> (RawSample, RawSample) {
    let mut cpu_irq = IrqAcct {
        hardirq_ns: 30 * MS,
        hardirq_count: 1000,
        sysvec_ns: 20 * MS,
        sysvec_count: 500,
        ..Default::default()
    };
    cpu_irq.softirq_ns[CTX_STOLEN][NET_RX] = 80 * MS;
    cpu_irq.softirq_ns[CTX_INLINE][2] = 10 * MS;
    cpu_irq.softirq_ns[CTX_KSOFTIRQD][NET_RX] = 5 * MS;
    let mut t_irq = IrqAcct {
        hardirq_ns: 30 * MS,
        hardirq_count: 900,
        sysvec_ns: 20 * MS,
        sysvec_count: 300,
        timer_count: 100,
        ipi_count: 150,
        ..Default::default()
    };
    t_irq.softirq_ns[CTX_STOLEN][NET_RX] = 80 * MS;
    t_irq.softirq_ns[CTX_INLINE][2] = 10 * MS;
    t_irq.softirq_count[NET_RX] = 400;
    t_irq.softirq_count[2] = 50;
    let mut ks_irq = IrqAcct::default();
    ks_irq.softirq_ns[CTX_KSOFTIRQD][NET_RX] = 5 * MS;

    let mut c0p = cpu(0, times(0, 0, 0, 0, 0), Some(IrqAcct::default()));
    c0p.ksoftirqd_tid = Some(9);
    c0p.net = Some(CpuNet::default());
    c0p.softnet = Some(Softnet {
        time_squeeze: 3,
        processed: 100,
        ..Default::default()
    });
    let mut c0 = cpu(0, times(60, 20, 5, 10, 5), Some(cpu_irq));
    c0.ksoftirqd_tid = Some(9);
    c0.net = Some(CpuNet {
        net_rx_actions: 1000,
        net_rx_ns: 85 * MS,
        net_rx_restarts: 4,
        net_rx_max_ns: 2 * MS,
        napi_polls: 1500,
        napi_work: 48000,
        napi_budget_exhausted: 20,
    });
    c0.softnet = Some(Softnet {
        time_squeeze: 10,
        processed: 50100,
        dropped: 2,
        received_rps: 0,
        flow_limit: 0,
    });
    let c1p = cpu(1, times(0, 0, 0, 0, 0), Some(IrqAcct::default()));
    let c1 = cpu(1, times(0, 0, 0, 0, 100), Some(IrqAcct::default()));

    let mut ks_p = task(9, 9, 1, "ksoftirqd/0", (0, 0), 0, 0);
    ks_p.kthread = true;
    ks_p.irq = Some(IrqAcct::default());
    let mut ks = task(9, 9, 1, "ksoftirqd/0", (0, 5), 5 * MS, 0);
    ks.kthread = true;
    ks.irq = Some(ks_irq);

    let victim_p = task(100, 100, 50, "victim", (0, 0), 0, 0);
    let mut victim = task(100, 100, 50, "victim", (80, 10), 900 * MS, 0);
    victim.irq = Some(t_irq);

    let mut prev = sample(S, Source::Bpf, vec![c0p, c1p], vec![ks_p, victim_p]);
    let mut cur = sample(2 * S, Source::Bpf, vec![c0, c1], vec![ks, victim]);
    prev.health = Some(BpfHealth {
        map_full: 5,
        programs: vec![ProgStat {
            name: "softirq_exit".into(),
            run_cnt: 10,
            run_time_ns: 100 * MS,
        }],
        attach_mode: "tp_btf".into(),
        ..Default::default()
    });
    cur.health = Some(BpfHealth {
        map_full: 8,
        unmatched_exits: 1,
        programs: vec![ProgStat {
            name: "softirq_exit".into(),
            run_cnt: 20,
            run_time_ns: 120 * MS,
        }],
        attach_mode: "tp_btf".into(),
        ..Default::default()
    });
    prev.napi = vec![RawNapi {
        dev: "eth0".into(),
        napi_id: 7,
        cpu: 0,
        polls: 0,
        work: 0,
        budget_exhausted: 0,
        budget: 64,
        ..Default::default()
    }];
    cur.napi = vec![
        RawNapi {
            dev: "eth0".into(),
            napi_id: 7,
            cpu: 0,
            polls: 1500,
            work: 48000,
            budget_exhausted: 20,
            budget: 64,
            ..Default::default()
        },
        RawNapi {
            dev: "eth0".into(),
            napi_id: 7,
            cpu: 1,
            polls: 0,
            work: 0,
            budget_exhausted: 0,
            budget: 64,
            ..Default::default()
        },
    ];
    prev.devices = vec![RawDevice {
        name: "eth0".into(),
        ifindex: 2,
        rx_packets: 10,
        ..Default::default()
    }];
    cur.devices = vec![RawDevice {
        name: "eth0".into(),
        ifindex: 2,
        rx_packets: 48010,
        rx_bytes: 1000,
        ..Default::default()
    }];
    (prev, cur)
}

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
    approx(v.interrupts_per_s, 1200.0);
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
    approx(c.interrupts_per_s, 1500.0);
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

#[test]
fn irq_time_accounting_gives_inline_back() {
    let (prev, mut cur) = bpf_pair();
    // Under IrqTimeAccounting the kernel removed all 140 ms of the victim's
    // irq time (hardirq, sysvec, stolen and inline softirq) from its runtime.
    cur.tasks[1].on_cpu_ns = 760 * MS;
    cur.tasks[1].utime_ticks = 70;
    cur.tasks[1].stime_ticks = 6;
    let f = compute(&host(Regime::IrqTimeAccounting), &prev, &cur);
    all_finite(&f);
    let v = thread(&f, 100);
    approx(v.top_pct, 76.0);
    approx(v.stolen_pct, 13.0);
    approx(v.true_pct, 77.0);
    // ksoftirqd's 5 ms stays in its own runtime, not /proc/stat softirq, so
    // it is left out of the comparison: 150 − 140 = 10 ms untraced.
    approx(f.cpus[0].unexplained_irq_pct, 1.0);
    assert!(f.regime_note.contains("CONFIG_IRQ_TIME_ACCOUNTING=y"));

    // Calibrated: 4.3 ms hidden (see hidden_cost_by_class), half of it left
    // in runtime by this kernel: TRUE% = 76 + 1 − 0.215.
    let f = compute(&calibrated(Regime::IrqTimeAccounting), &prev, &cur);
    let v = thread(&f, 100);
    approx(v.hidden_pct, 0.43);
    approx(v.true_pct, 77.0 - 0.215);
}

/// The victim's 1200 interruptions: 900 device + 150 IPIs + 50 other at
/// 3 µs, 100 timer ticks at 10 µs: 4.3 ms = 0.43 % hidden.
#[test]
fn hidden_cost_by_class() {
    let (prev, cur) = bpf_pair();
    let f = compute(&calibrated(Regime::TickBased), &prev, &cur);
    all_finite(&f);
    let v = thread(&f, 100);
    approx(v.stolen_pct, 13.0);
    approx(v.hidden_pct, 0.43);
    approx(v.true_pct, 90.0 - 13.0 - 0.43);
    approx(process(&f, 100).hidden_pct, 0.43);
    approx(f.summary.hidden_pct_total, 0.43);
    // CPU 0: 1000 device + 500 other system vectors (no class split) at 3 µs.
    let c = &f.cpus[0];
    approx(c.hidden_pct, 0.45);
    approx(c.true_pct, 95.0 - 13.0 - 0.45);
    assert!(
        f.hidden_note.contains("IPI 3.0 µs ±0.10 µs") && f.hidden_note.contains("cache /x"),
        "{}",
        f.hidden_note
    );

    // Unknown computes like tick-based.
    let u = compute(&calibrated(Regime::Unknown), &prev, &cur);
    assert_eq!(u.threads, f.threads);

    // Without BPF there are no counts to charge: nothing hidden.
    let (mut prev, mut cur) = (prev, cur);
    prev.source = Source::ProcOnly;
    cur.source = Source::ProcOnly;
    let p = compute(&calibrated(Regime::TickBased), &prev, &cur);
    approx(thread(&p, 100).hidden_pct, 0.0);
    assert!(p.hidden_note.is_empty());
}

#[test]
fn unknown_regime_computes_like_tick_based_and_says_so() {
    let (prev, cur) = bpf_pair();
    let f = compute(&host(Regime::Unknown), &prev, &cur);
    let t = compute(&host(Regime::TickBased), &prev, &cur);
    assert_eq!(f.threads, t.threads);
    assert_eq!(f.regime, Regime::Unknown);
    assert!(f.regime_note.contains("unknown"));
}

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
    let prev = sample(
        0,
        Source::Bpf,
        vec![cpu(0, times(0, 0, 0, 0, 0), Some(IrqAcct::default()))],
        vec![task(5, 5, 1, "spin", (0, 0), 0, 0)],
    );
    let mut t = task(5, 5, 1, "spin", (100, 0), S, 0);
    t.irq = Some(acct.clone());
    let cur = sample(
        S,
        Source::Bpf,
        vec![cpu(0, times(0, 0, 50, 50, 0), Some(acct))],
        vec![t],
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
fn pid_reuse_is_a_new_task() {
    let mut old = task(200, 200, 1000, "old", (400, 100), 5 * S, 0);
    old.irq = Some(IrqAcct {
        hardirq_ns: S,
        hardirq_count: 99999,
        ..Default::default()
    });
    let mut new = task(200, 200, 2000, "new", (10, 0), 100 * MS, 0);
    new.irq = Some(IrqAcct {
        hardirq_ns: 10 * MS,
        hardirq_count: 5,
        ..Default::default()
    });
    let c = |n| vec![cpu(0, times(n, 0, 0, 0, 100 - n), None)];
    let prev = sample(S, Source::Bpf, c(0), vec![old]);
    let cur = sample(2 * S, Source::Bpf, c(10), vec![new]);
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    all_finite(&f);
    let v = thread(&f, 200);
    assert_eq!(v.comm, "new");
    // Born in the interval: counted from zero, nothing borrowed from the old task.
    approx(v.top_pct, 10.0);
    approx(v.on_cpu_pct, 10.0);
    approx(v.hardirq_pct, 1.0);
    approx(v.interrupts_per_s, 5.0);
    approx(v.true_pct, 9.0);
    assert_eq!(f.health.vanished_tasks, 1);
}

#[test]
fn exec_keeps_the_row_and_shows_the_new_comm() {
    let c = |n| vec![cpu(0, times(n, 0, 0, 0, 100 - n), None)];
    let prev = sample(
        S,
        Source::ProcOnly,
        c(0),
        vec![task(7, 7, 3, "sh", (10, 0), 100 * MS, 0)],
    );
    let cur = sample(
        2 * S,
        Source::ProcOnly,
        c(30),
        vec![task(7, 7, 3, "iperf3", (40, 0), 400 * MS, 0)],
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    assert_eq!(f.threads.len(), 1);
    assert_eq!(f.threads[0].comm, "iperf3");
    approx(f.threads[0].top_pct, 30.0);
    approx(f.threads[0].on_cpu_pct, 30.0);
    assert_eq!(f.health.vanished_tasks, 0);
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
                t.interrupts_per_s
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

/// No BPF: CPU 0's 5 irq + 10 softirq ticks (150 ms) are shared by on-CPU
/// share. Tick-based: busy = 95 ticks = 950 ms includes the interrupt time;
/// a task with 475 ms on CPU gets half: 75 ms stolen, 25 ms of it hardirq.
#[test]
fn proc_only_estimates_tick_based() {
    let mut c0p = cpu(0, times(0, 0, 0, 0, 0), None);
    c0p.softnet = Some(Softnet {
        processed: 0,
        ..Default::default()
    });
    let mut c0 = cpu(0, times(60, 20, 5, 10, 5), None);
    c0.softnet = Some(Softnet {
        processed: 5000,
        time_squeeze: 2,
        ..Default::default()
    });
    let prev = sample(
        S,
        Source::ProcOnly,
        vec![c0p],
        vec![task(1, 1, 1, "a", (0, 0), 0, 0)],
    );
    let cur = sample(
        2 * S,
        Source::ProcOnly,
        vec![c0],
        vec![task(1, 1, 1, "a", (40, 8), 475 * MS, 0)],
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    all_finite(&f);
    assert_eq!(f.source, Source::ProcOnly);
    let v = thread(&f, 1);
    approx(v.top_pct, 48.0);
    approx(v.on_cpu_pct, 47.5);
    approx(v.stolen_pct, 7.5);
    approx(v.hardirq_pct, 2.5);
    approx(v.true_pct, 40.0);
    assert_eq!(
        (v.hidden_pct, v.interrupts_per_s, v.inline_pct),
        (0.0, 0.0, 0.0)
    );
    approx(f.cpus[0].packets_per_s, 5000.0);
    approx(f.cpus[0].time_squeeze_per_s, 2.0);
    assert_eq!(f.cpus[0].traced_hardirq_pct, 0.0);
    assert!(f.health.bpf_cpu_pct.is_none());
}

/// IrqTimeAccounting: runtime excludes interrupt time, so the share is of
/// busy minus interrupt time: 400 ms of 800 ms is half, and TRUE% is the
/// on-CPU time itself.
#[test]
fn proc_only_estimates_irq_time_accounting() {
    let prev = sample(
        S,
        Source::ProcOnly,
        vec![cpu(0, times(0, 0, 0, 0, 0), None)],
        vec![task(1, 1, 1, "a", (0, 0), 0, 0)],
    );
    let cur = sample(
        2 * S,
        Source::ProcOnly,
        vec![cpu(0, times(60, 20, 5, 10, 5), None)],
        vec![task(1, 1, 1, "a", (40, 0), 400 * MS, 0)],
    );
    let f = compute(&host(Regime::IrqTimeAccounting), &prev, &cur);
    let v = thread(&f, 1);
    approx(v.stolen_pct, 7.5);
    approx(v.true_pct, 40.0);
}

/// Process rows sum their threads; identity comes from the leader.
#[test]
fn process_rows_sum_threads() {
    let (mut prev, mut cur) = bpf_pair();
    // A second thread of the victim on CPU 1 with 50 device interrupts.
    prev.tasks.push(task(100, 101, 60, "worker", (0, 0), 0, 1));
    let mut w = task(100, 101, 60, "worker", (20, 0), 200 * MS, 1);
    w.irq = Some(IrqAcct {
        hardirq_ns: 10 * MS,
        hardirq_count: 50,
        ..Default::default()
    });
    cur.tasks.push(w);
    cur.cpus[1].times = Some(times(18, 0, 2, 0, 80));
    cur.cpus[1].irq = Some(IrqAcct {
        hardirq_ns: 10 * MS,
        hardirq_count: 100,
        ..Default::default()
    });
    let f = compute(&calibrated(Regime::TickBased), &prev, &cur);
    let p = process(&f, 100);
    assert!(p.is_process);
    assert_eq!(
        (p.tid, p.nr_threads, p.comm.as_str(), p.last_cpu),
        (100, 2, "victim", 0)
    );
    approx(p.top_pct, 110.0);
    approx(p.on_cpu_pct, 110.0);
    approx(p.hardirq_pct, 4.0);
    approx(p.stolen_pct, 14.0);
    // 0.43 % (victim) + 50 × 3 µs = 0.015 % (worker).
    approx(p.hidden_pct, 0.445);
    approx(p.true_pct, 96.0 - 0.445);
    approx(f.summary.stolen_pct_total, 14.0);
    assert_eq!(f.summary.processes, 2);
}

mod totality {
    use super::*;
    use proptest::prelude::*;

    fn arb_irq() -> impl Strategy<Value = Option<IrqAcct>> {
        proptest::option::of(
            (any::<u64>(), any::<u64>(), any::<u64>(), any::<[u64; 10]>()).prop_map(
                |(a, b, c, s)| IrqAcct {
                    hardirq_ns: a,
                    hardirq_count: b,
                    sysvec_ns: c,
                    softirq_ns: [s, s, s],
                    softirq_count: s,
                    sysvec_count: b,
                    timer_count: s[0],
                    ipi_count: s[1],
                    softirq_stolen_count: s[2],
                },
            ),
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
                        irq,
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
}

/// No BPF, a CPU where ksoftirqd did most of the softirq work (tick-based:
/// its 620 ms are inside /proc/stat's 720 ms of hi+si). Only the other
/// 100 ms can have been stolen from tasks, shared over the 300 ms of
/// non-ksoftirqd busy time: a task with 200 ms gets 66.7 ms.
#[test]
fn proc_only_leaves_ksoftirqd_work_out_of_the_pool() {
    let mut ks_p = task(48, 48, 2, "ksoftirqd/0", (0, 0), 0, 0);
    ks_p.kthread = true;
    let mut ks = task(48, 48, 2, "ksoftirqd/0", (0, 62), 620 * MS, 0);
    ks.kthread = true;
    let mut c0p = cpu(0, times(0, 0, 0, 0, 0), None);
    c0p.ksoftirqd_tid = Some(48);
    let mut c0 = cpu(0, times(10, 10, 2, 70, 8), None);
    c0.ksoftirqd_tid = Some(48);
    let prev = sample(
        S,
        Source::ProcOnly,
        vec![c0p],
        vec![ks_p, task(3, 3, 1, "rx", (0, 0), 0, 0)],
    );
    let cur = sample(
        2 * S,
        Source::ProcOnly,
        vec![c0],
        vec![ks, task(3, 3, 1, "rx", (20, 0), 200 * MS, 0)],
    );
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    let v = thread(&f, 3);
    approx(v.stolen_pct, 100.0 * 200.0 / 300.0 / 10.0);
    approx(v.hardirq_pct, v.stolen_pct * 2.0 / 72.0);
    approx(v.true_pct, 20.0 - v.stolen_pct);
    approx(thread(&f, 48).stolen_pct, 0.0);
    approx(f.cpus[0].ksoftirqd_pct, 62.0);
}

/// Cost per packet, by hand. One second. CPU 0: NET_RX 10 ms for 10,000
/// packets (1,000 ns each); CPU 1: 6 ms for 2,000 (3,000 ns each).
/// veth1 in namespace "blue" (inode 777, ifindex 5) polled 6,000 packets on
/// CPU 0 and 2,000 on CPU 1: 6 ms + 6 ms = 12 ms charged, 1,500 ns per
/// packet, 1.2 % of a CPU, for 100 MB/s = 0.8 Gbit/s: 1.5 %/Gbit/s. The
/// backlog polled the other 4,000 on CPU 0. A "veth1" in nettop's own
/// namespace (another inode) received 50 MB/s through the backlog: no cost
/// of its own. Host: 16 ms / 12,000 = 1,333.3 ns per packet; 1.6 % of a CPU
/// for 150 MB/s = 1.2 Gbit/s: 1.333 %/Gbit/s.
#[test]
fn cost_per_packet_by_hand() {
    let net = |ns: u64, pkts: u64| CpuNet {
        net_rx_ns: ns,
        napi_work: pkts,
        napi_polls: pkts / 10,
        net_rx_actions: pkts / 10,
        ..Default::default()
    };
    let mk = |n: u32, netv: CpuNet, idle: u64| {
        let mut c = cpu(n, times(0, 0, 0, 0, idle), Some(IrqAcct::default()));
        c.net = Some(netv);
        c
    };
    let napi = |dev: &str, cpu: u32, work: u64, ifindex: u32, inode: u64| RawNapi {
        dev: dev.into(),
        napi_id: if dev == "backlog" { 0 } else { 9 },
        cpu,
        polls: work / 10,
        work,
        budget: 64,
        ifindex,
        netns_inode: inode,
        ..Default::default()
    };
    let dev = |netns: &str, inode: u64, rx_bytes: u64| RawDevice {
        name: "veth1".into(),
        ifindex: 5,
        netns: netns.into(),
        netns_inode: inode,
        rx_bytes,
        rx_packets: rx_bytes / 1000,
        ..Default::default()
    };
    let mut prev = sample(
        S,
        Source::Bpf,
        vec![mk(0, CpuNet::default(), 0), mk(1, CpuNet::default(), 0)],
        vec![],
    );
    let mut cur = sample(
        2 * S,
        Source::Bpf,
        vec![
            mk(0, net(10 * MS, 10_000), 100),
            mk(1, net(6 * MS, 2_000), 100),
        ],
        vec![],
    );
    prev.napi = vec![
        napi("veth1", 0, 0, 5, 777),
        napi("veth1", 1, 0, 5, 777),
        napi("backlog", 0, 0, 0, 0),
    ];
    cur.napi = vec![
        napi("veth1", 0, 6_000, 5, 777),
        napi("veth1", 1, 2_000, 5, 777),
        napi("backlog", 0, 4_000, 0, 0),
    ];
    prev.devices = vec![dev("blue", 777, 0), dev("", 1, 0)];
    cur.devices = vec![dev("blue", 777, 100_000_000), dev("", 1, 50_000_000)];
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    let cpu0 = f.cpus.iter().find(|c| c.cpu == 0).unwrap();
    let cpu1 = f.cpus.iter().find(|c| c.cpu == 1).unwrap();
    approx(cpu0.net_rx_ns_per_packet.unwrap(), 1000.0);
    approx(cpu1.net_rx_ns_per_packet.unwrap(), 3000.0);
    let n = f.napi.iter().find(|n| n.dev == "veth1").unwrap();
    approx(n.net_rx_ns_per_packet.unwrap(), 1500.0);
    approx(n.net_rx_pct, 1.2);
    let blue = f.devices.iter().find(|d| d.netns == "blue").unwrap();
    assert_eq!(blue.label(), "veth1 (netns blue)");
    approx(blue.net_rx_ns_per_packet.unwrap(), 1500.0);
    approx(blue.net_rx_pct.unwrap(), 1.2);
    approx(blue.net_rx_pct_per_gbps.unwrap(), 1.5);
    let own = f.devices.iter().find(|d| d.netns.is_empty()).unwrap();
    assert_eq!(own.net_rx_ns_per_packet, None, "{own:?}");
    approx(own.rx_bytes_per_s, 50e6);
    approx(f.summary.net_rx_ns_per_packet.unwrap(), 16e6 / 12_000.0);
    approx(f.summary.net_rx_pct_per_gbps.unwrap(), 1.6 / 1.2);
}
