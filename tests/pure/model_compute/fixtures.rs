//! The builders and checkers every test here uses, and the names they
//! need, so a test module only says `use crate::model_compute::fixtures::*`.

use crate::common::calibration::{from_ipi, measured};
pub use nettop::model::compute;
pub use nettop::model::frame::{Frame, TaskView};
pub use nettop::sample::calibration::Calibration;
pub use nettop::sample::*;

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

pub fn host(regime: Regime) -> HostInfo {
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
pub fn calibration() -> Calibration {
    Calibration {
        cpu: 1,
        measured_unix_ms: 1_000,
        origin: "cache /x".into(),
        timer: measured(100, 500.0, 10_000.0, 100.0),
        runtime_share: 0.5,
        ..from_ipi(measured(100, 500.0, 3_000.0, 100.0))
    }
}

pub fn calibrated(regime: Regime) -> HostInfo {
    HostInfo {
        calibration: Some(calibration()),
        ..host(regime)
    }
}

pub fn approx(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

pub fn times(user: u64, system: u64, irq: u64, softirq: u64, idle: u64) -> CpuTimes {
    CpuTimes {
        user,
        system,
        irq,
        softirq,
        idle,
        ..Default::default()
    }
}

pub fn cpu(n: u32, t: CpuTimes, irq: Option<IrqAcct>) -> RawCpu {
    RawCpu {
        cpu: n,
        online: true,
        times: Some(t),
        irq,
        ksoftirqd_tid: None,
        ..Default::default()
    }
}

pub fn task(
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

pub fn kthread(t: RawTask) -> RawTask {
    RawTask { kthread: true, ..t }
}

/// The CPUs and tasks of one sample.
pub type Seen = (Vec<RawCpu>, Vec<RawTask>);

/// Two samples one second apart: the interval every expectation here is
/// computed for.
pub fn pair(source: Source, prev: Seen, cur: Seen) -> (RawSample, RawSample) {
    let at = |mono: u64, (cpus, tasks): Seen| RawSample {
        seq: mono / S,
        mono_ns: mono,
        unix_ms: mono / MS,
        source,
        cpus,
        tasks,
        ..Default::default()
    };
    (at(S, prev), at(2 * S, cur))
}

pub fn thread(f: &Frame, tid: u32) -> &TaskView {
    f.threads.iter().find(|t| t.tid == tid).unwrap()
}

pub fn process(f: &Frame, pid: u32) -> &TaskView {
    f.processes.iter().find(|t| t.pid == pid).unwrap()
}

/// Fields that are `Option`s in the frame: serialised as null when absent.
pub const NULLABLE: &[&str] = &[
    "node",
    "bpf_cpu_pct",
    "own_bpf_pct",
    "priority",
    "nice",
    "virt_bytes",
    "res_bytes",
    "shr_bytes",
    "mem_pct",
    "mem_bytes",
    "traffic",
    "ratio",
];

/// Every number in the frame is finite. Walked serialised, so no field is
/// missed; serde_json writes NaN and ±inf as null, so a null anywhere but
/// an `Option` field is a non-finite number, and the `Option<f64>` fields
/// are checked directly.
pub fn all_finite(f: &Frame) {
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
            t.cpu_time_s,
        ] {
            assert!(x.is_finite() && x >= 0.0, "{x} in {t:?}");
        }
        if let Some(x) = t.mem_pct {
            assert!(x.is_finite() && x >= 0.0, "MEM% {x} in {t:?}");
        }
    }
    for c in &f.cpus {
        for x in [c.stolen_pct, c.hidden_pct, c.true_pct] {
            assert!(x.is_finite() && x >= 0.0, "{x} in {c:?}");
        }
    }
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
pub fn bpf_pair() -> (RawSample, RawSample) {
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
        ..Default::default()
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

    let mut ks_p = kthread(task(9, 9, 1, "ksoftirqd/0", (0, 0), 0, 0));
    ks_p.irq = Some(Box::new(IrqAcct::default()));
    let mut ks = kthread(task(9, 9, 1, "ksoftirqd/0", (0, 5), 5 * MS, 0));
    ks.irq = Some(Box::new(ks_irq));

    let victim_p = task(100, 100, 50, "victim", (0, 0), 0, 0);
    let mut victim = task(100, 100, 50, "victim", (80, 10), 900 * MS, 0);
    victim.irq = Some(Box::new(t_irq));

    let (mut prev, mut cur) = pair(
        Source::Bpf,
        (vec![c0p, c1p], vec![ks_p, victim_p]),
        (vec![c0, c1], vec![ks, victim]),
    );
    let health = |map_full, unmatched_exits, run_cnt, run_time_ns| BpfHealth {
        map_full,
        unmatched_exits,
        // Recorded before programs counted their runs per CPU.
        programs: vec![ProgStat {
            name: "softirq_exit".into(),
            run_cnt,
            run_time_ns,
            ..Default::default()
        }],
        attach_mode: "tp_btf".into(),
        ..Default::default()
    };
    prev.health = Some(health(5, 0, 10, 100 * MS));
    cur.health = Some(health(8, 1, 20, 120 * MS));
    let napi = |cpu, polls, work, budget_exhausted| RawNapi {
        dev: "eth0".into(),
        napi_id: 7,
        cpu,
        polls,
        work,
        budget_exhausted,
        budget: 64,
        ..Default::default()
    };
    prev.napi = vec![napi(0, 0, 0, 0)];
    cur.napi = vec![napi(0, 1500, 48000, 20), napi(1, 0, 0, 0)];
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
