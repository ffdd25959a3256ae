//! The busy two-socket host every rendering test here draws: raw samples
//! before and after one second, and the frame the real model computes.

use crate::common::calibration::{from_ipi, measured};
use nettop::model::compute;
use nettop::model::frame::Frame;
use nettop::output::text::TextOptions;
use nettop::sample::calibration::Calibration;
use nettop::sample::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const T0_MS: u64 = 1_795_336_800_000;

pub fn host() -> HostInfo {
    HostInfo {
        hostname: "edge-lb-07".into(),
        kernel: "6.18.0".into(),
        regime: Regime::TickBased,
        regime_source: "/proc/config.gz".into(),
        clk_tck: 100,
        nr_cpus: 8,
        cpu_node: vec![0, 0, 0, 0, 1, 1, 1, 1],
        calibration: Some(calibration()),
        mem_total_bytes: Some(64 << 30),
        ..Default::default()
    }
}

/// Measured an hour before the frames: IPI 2.6 µs, timer 4.2 µs hidden.
fn calibration() -> Calibration {
    Calibration {
        measured_unix_ms: T0_MS - 3_600_000,
        origin: "cache /var/cache/nettop/calibration.json".into(),
        cpu: 3,
        sender_cpu: 2,
        timer: measured(70, 5_100.0, 4_200.0, 400.0),
        softirq: measured(2_000, 2_100.0, 450.0, 30.0),
        ..from_ipi(measured(4_000, 300.0, 2_600.0, 20.0))
    }
}

#[derive(Default, Clone, Copy)]
struct Irq {
    hi_ms: u64,
    hi_n: u64,
    sv_ms: u64,
    sv_n: u64,
    rx_stolen_ms: u64,
    rx_n: u64,
    timer_ms: u64,
    tx_inline_ms: u64,
    rx_ksoftirqd_ms: u64,
}

impl Irq {
    fn acct(self) -> IrqAcct {
        let mut a = IrqAcct {
            hardirq_ns: self.hi_ms * MS,
            hardirq_count: self.hi_n,
            sysvec_ns: self.sv_ms * MS,
            sysvec_count: self.sv_n,
            // Most system vectors in these fixtures are RPS IPIs.
            ipi_count: self.sv_n * 3 / 4,
            timer_count: self.sv_n / 8,
            // NET_RX here is all raised by interrupts: stolen runs.
            softirq_stolen_count: self.rx_n,
            ..Default::default()
        };
        a.softirq_ns[CTX_STOLEN][NET_RX] = self.rx_stolen_ms * MS;
        a.softirq_ns[CTX_STOLEN][1] = self.timer_ms * MS;
        a.softirq_ns[CTX_INLINE][2] = self.tx_inline_ms * MS;
        a.softirq_ns[CTX_KSOFTIRQD][NET_RX] = self.rx_ksoftirqd_ms * MS;
        a.softirq_count[NET_RX] = self.rx_n;
        a.softirq_count[1] = self.timer_ms * 10;
        a.softirq_count[2] = self.tx_inline_ms * 20;
        a
    }
}

struct T {
    tgid: u32,
    tid: u32,
    comm: &'static str,
    uid: u32,
    ticks: u64,
    on_ms: u64,
    cpu: u32,
    aff: &'static str,
    irq: Irq,
    kthread: bool,
}

/// Positional on purpose: the task table above reads like a `ps` listing.
#[allow(clippy::too_many_arguments)]
fn t(
    tgid: u32,
    tid: u32,
    comm: &'static str,
    uid: u32,
    ticks: u64,
    on_ms: u64,
    cpu: u32,
    aff: &'static str,
) -> T {
    T {
        tgid,
        tid,
        comm,
        uid,
        ticks,
        on_ms,
        cpu,
        aff,
        irq: Irq::default(),
        kthread: false,
    }
}

/// Away from the NIC queues: system vectors (ticks, IPIs) and the timer
/// softirq, nothing else.
fn vectors_only(sv_ms: u64, sv_n: u64) -> Irq {
    Irq {
        sv_ms,
        sv_n,
        timer_ms: 1,
        ..Default::default()
    }
}

/// What the NET_RX queue steered onto CPU 2 took from the worker pinned
/// there.
fn worker_irq() -> Irq {
    Irq {
        hi_ms: 25,
        hi_n: 2500,
        sv_ms: 8,
        sv_n: 800,
        rx_stolen_ms: 300,
        rx_n: 6000,
        timer_ms: 1,
        ..Default::default()
    }
}

/// What the second queue took from iperf3 on CPU 6, and its own NET_TX.
fn iperf_irq() -> Irq {
    Irq {
        hi_ms: 15,
        hi_n: 1500,
        sv_ms: 5,
        sv_n: 500,
        rx_stolen_ms: 50,
        rx_n: 900,
        tx_inline_ms: 30,
        ..Default::default()
    }
}

fn tasks() -> Vec<T> {
    let mut v = vec![
        t(1, 1, "systemd", 0, 1, 8, 0, "0-7"),
        t(812, 812, "sshd", 0, 0, 2, 1, "0-7"),
        T {
            irq: vectors_only(1, 120),
            ..t(2001, 2001, "dataplane", 1000, 2, 20, 0, "0")
        },
        T {
            irq: worker_irq(),
            ..t(2001, 2002, "dp-worker-0", 1000, 98, 980, 2, "2")
        },
        T {
            irq: vectors_only(2, 250),
            ..t(2001, 2003, "dp-worker-1", 1000, 26, 260, 3, "3")
        },
        T {
            irq: iperf_irq(),
            ..t(3100, 3100, "iperf3", 0, 20, 200, 6, "4-7")
        },
        t(4400, 4400, "prometheus-node", 65534, 3, 31, 5, "0-7"),
    ];
    for cpu in 0..8u32 {
        let (ms, irq) = match cpu {
            2 => (
                20,
                Irq {
                    rx_ksoftirqd_ms: 20,
                    ..Default::default()
                },
            ),
            6 => (
                620,
                Irq {
                    rx_ksoftirqd_ms: 600,
                    ..Default::default()
                },
            ),
            _ => (0, Irq::default()),
        };
        let name: &'static str = Box::leak(format!("ksoftirqd/{cpu}").into_boxed_str());
        v.push(T {
            kthread: true,
            irq,
            ..t(
                12 + cpu * 6,
                12 + cpu * 6,
                name,
                0,
                ms / 10,
                ms,
                cpu,
                Box::leak(cpu.to_string().into_boxed_str()),
            )
        });
    }
    v
}

fn raw_task(x: &T, cur: bool, bpf: bool) -> RawTask {
    RawTask {
        tgid: x.tgid,
        tid: x.tid,
        start_ticks: 100 + u64::from(x.tid),
        comm: x.comm.into(),
        uid: x.uid,
        state: if x.on_ms > 500 { 'R' } else { 'S' },
        utime_ticks: if cur { 5000 + x.ticks * 9 / 10 } else { 5000 },
        stime_ticks: if cur {
            700 + x.ticks - x.ticks * 9 / 10
        } else {
            700
        },
        on_cpu_ns: if cur { 60 * S + x.on_ms * MS } else { 60 * S },
        run_delay_ns: 0,
        last_cpu: x.cpu,
        affinity: x.aff.into(),
        kthread: x.kthread,
        irq: bpf.then(|| {
            Box::new(if cur {
                x.irq.acct()
            } else {
                IrqAcct::default()
            })
        }),
        // Per process (from the TGID), none for kernel threads; the
        // dataplane (dpdk, UID 1000) runs reniced.
        mem: (!x.kthread).then(|| {
            let res = (20 + u64::from(x.tgid) * 13 % 900) << 20;
            nettop::sample::TaskMem {
                virt: res * 4 + (300 << 20),
                res,
                shr: res / 8,
            }
        }),
        priority: Some(if x.uid == 1000 { 10 } else { 20 }),
        nice: Some(if x.uid == 1000 { -10 } else { 0 }),
        ..Default::default()
    }
}

/// (user, system, irq, softirq, idle) ticks over the interval.
fn cpu_ticks(cpu: u32) -> (u64, u64, u64, u64, u64) {
    match cpu {
        2 => (55, 5, 3, 35, 2),
        6 => (10, 10, 2, 70, 8),
        c => (20 + u64::from(c), 5, 0, 1, 74 - u64::from(c)),
    }
}

fn cpu_irq(cpu: u32) -> IrqAcct {
    match cpu {
        // A CPU's interrupt work: its task's, plus what its ksoftirqd ran.
        2 => Irq {
            rx_ksoftirqd_ms: 20,
            ..worker_irq()
        },
        6 => Irq {
            rx_ksoftirqd_ms: 600,
            ..iperf_irq()
        },
        _ => vectors_only(2, 250),
    }
    .acct()
}

fn cpu_net(cpu: u32) -> CpuNet {
    match cpu {
        2 => CpuNet {
            net_rx_actions: 6000,
            net_rx_ns: 320 * MS,
            net_rx_restarts: 40,
            net_rx_max_ns: 2 * MS,
            napi_polls: 9000,
            napi_work: 450_000,
            napi_budget_exhausted: 3000,
            ..Default::default()
        },
        6 => CpuNet {
            net_rx_actions: 2000,
            net_rx_ns: 650 * MS,
            net_rx_restarts: 900,
            net_rx_max_ns: 2 * MS,
            napi_polls: 12000,
            napi_work: 700_000,
            napi_budget_exhausted: 9000,
            ..Default::default()
        },
        _ => CpuNet::default(),
    }
}

fn softnet(cpu: u32) -> Softnet {
    match cpu {
        2 => Softnet {
            processed: 450_000,
            time_squeeze: 35,
            ..Default::default()
        },
        6 => Softnet {
            processed: 700_000,
            time_squeeze: 420,
            dropped: 12,
            ..Default::default()
        },
        _ => Softnet::default(),
    }
}

pub fn sample(cur: bool, bpf: bool) -> RawSample {
    let cpus = (0..8u32)
        .map(|c| {
            let (u, s, i, si, id) = cpu_ticks(c);
            let base = CpuTimes {
                user: 9000,
                system: 900,
                idle: 90000,
                irq: 90,
                softirq: 900,
                ..Default::default()
            };
            let times = if cur {
                CpuTimes {
                    user: 9000 + u,
                    system: 900 + s,
                    irq: 90 + i,
                    softirq: 900 + si,
                    idle: 90000 + id,
                    ..base.clone()
                }
            } else {
                base
            };
            RawCpu {
                cpu: c,
                online: !(cur && c == 7),
                times: (!(cur && c == 7)).then_some(times),
                softnet: Some(if cur { softnet(c) } else { Softnet::default() }),
                irq: bpf.then(|| if cur { cpu_irq(c) } else { IrqAcct::default() }),
                net: bpf.then(|| if cur { cpu_net(c) } else { CpuNet::default() }),
                ksoftirqd_tid: Some(12 + c * 6),
            }
        })
        .collect();
    let mut tasks: Vec<RawTask> = tasks().iter().map(|x| raw_task(x, cur, bpf)).collect();
    if !cur {
        // Exited during the interval.
        tasks.push(RawTask {
            tgid: 5000,
            tid: 5000,
            start_ticks: 9,
            comm: "curl".into(),
            ..Default::default()
        });
    }
    let napi = |id: u32, cpu: u32, polls: u64, work: u64, ex: u64| RawNapi {
        dev: "ens1f0".into(),
        napi_id: id,
        cpu,
        polls,
        work,
        budget_exhausted: ex,
        budget: 64,
        ..Default::default()
    };
    RawSample {
        seq: if cur { 42 } else { 41 },
        mono_ns: if cur { 101 * S } else { 100 * S },
        unix_ms: if cur { T0_MS + 1000 } else { T0_MS },
        source: if bpf { Source::Bpf } else { Source::ProcOnly },
        cpus,
        tasks,
        procs: Vec::new(),
        napi: if !bpf {
            vec![]
        } else if cur {
            vec![
                napi(8193, 2, 9000, 450_000, 3000),
                napi(8194, 6, 12000, 700_000, 9000),
                napi(8195, 5, 0, 0, 0),
            ]
        } else {
            vec![
                napi(8193, 2, 0, 0, 0),
                napi(8194, 6, 0, 0, 0),
                napi(8195, 5, 0, 0, 0),
            ]
        },
        devices: vec![RawDevice {
            name: "ens1f0".into(),
            ifindex: 2,
            rx_packets: if cur { 1_150_000 } else { 0 },
            rx_bytes: if cur { 1_700_000_000 } else { 0 },
            ..Default::default()
        }],
        health: bpf.then(|| BpfHealth {
            unmatched_exits: if cur { 2 } else { 0 },
            // 35,000 runs at 100 ns, most of them on the RX CPUs 2 and 6.
            programs: vec![ProgStat {
                name: "softirq_exit".into(),
                run_cnt: if cur { 35_000 } else { 0 },
                run_time_ns: if cur { 3_500_001 } else { 1 },
                cpu_runs: if cur {
                    vec![1_000, 500, 9_000, 500, 500, 500, 20_000, 3_000]
                } else {
                    vec![0; 8]
                },
            }],
            attach_mode: "tp_btf".into(),
            ..Default::default()
        }),
        cgroups: vec![],
        notes: vec![],
        system: None,
        devices_incomplete: None,
        traffic: Default::default(),
    }
}

pub fn frame(bpf: bool) -> Frame {
    compute(&host(), &sample(false, bpf), &sample(true, bpf))
}

fn users() -> std::collections::HashMap<u32, String> {
    [(0, "root"), (1000, "dpdk"), (65534, "nobody")]
        .into_iter()
        .map(|(u, n)| (u, n.to_string()))
        .collect()
}

pub fn opts(threads: bool) -> TextOptions {
    TextOptions {
        threads,
        max_rows: 0,
        users: users(),
        regime_source: "/proc/config.gz".into(),
        ..Default::default()
    }
}
