//! Deterministic synthetic samples for tests, fuzz seeds and benchmarks
//! (e.g. a 24-hour recording that no test can wait for). Counters grow
//! monotonically like a real busy host's, so frames computed from them are
//! meaningful.

use crate::sample::traffic::RawRob;
use crate::sample::{
    BpfHealth, CTX_INLINE, CTX_KSOFTIRQD, CTX_STOLEN, CpuNet, CpuTimes, HostInfo, IrqAcct, NET_RX,
    ProgStat, RawCgroup, RawCpu, RawDevice, RawNapi, RawSample, RawTask, RawTraffic, Regime,
    RxSplit, SockAcct, Softnet, Source, TaskMem,
};

/// A finished recording of `samples` at `path` (zstd when `compressed`):
/// a host record for [`host`]`(nr_cpus)` at a 1 s interval, the samples,
/// an end record. What most recording tests and benches start from,
/// written one way; a test that needs a topology record, a different host
/// record or the offsets of its records writes its own with `Writer`.
pub fn write_recording(
    path: &std::path::Path,
    compressed: bool,
    nr_cpus: u32,
    samples: impl IntoIterator<Item = RawSample>,
) -> anyhow::Result<()> {
    let mut w = super::Writer::create(path, compressed, false)?;
    w.write_meta(&super::Meta {
        format: super::format::VERSION,
        writer: "synth".into(),
        interval_s: 1.0,
        host: host(nr_cpus),
        ..Default::default()
    })?;
    for s in samples {
        w.write_sample(&s)?;
    }
    w.finish("count")?;
    Ok(())
}

pub fn host(nr_cpus: u32) -> HostInfo {
    HostInfo {
        hostname: "synth".into(),
        kernel: "6.1.0-synthetic".into(),
        boot_id: "00000000-0000-4000-8000-000000000000".into(),
        regime: Regime::TickBased,
        regime_source: "/proc/config.gz".into(),
        clk_tck: 100,
        nr_cpus,
        cpu_node: (0..nr_cpus).map(|c| c / 2.max(nr_cpus / 2)).collect(),
        mem_total_bytes: Some(16 << 30),
        ..Default::default()
    }
}

fn irq(k: u64, w: u64) -> IrqAcct {
    let mut a = IrqAcct {
        hardirq_ns: k * 40_000 * w,
        hardirq_count: k * 20 * w,
        sysvec_ns: k * 10_000 * w,
        sysvec_count: k * 250 * w,
        ..Default::default()
    };
    a.softirq_ns[CTX_STOLEN][NET_RX] = k * 900_000 * w;
    a.softirq_ns[CTX_STOLEN][1] = k * 20_000 * w;
    a.softirq_ns[CTX_INLINE][2] = k * 30_000 * w;
    a.softirq_ns[CTX_KSOFTIRQD][NET_RX] = k * 5_000 * w;
    a.softirq_count[NET_RX] = k * 150 * w;
    a.softirq_count[1] = k * 250 * w;
    a
}

/// A busy task's interrupt time and, as a network server's, its traffic.
fn task_irq(k: u64, w: u64) -> IrqAcct {
    let mut a = irq(k, w);
    a.sock = SockAcct {
        rx_bytes: [k * 2_000_000 * w, k * 300_000 * w, 0],
        rx_calls: [k * 400 * w, k * 200 * w, 0],
        tx_bytes: [k * 9_000_000 * w, k * 300_000 * w, 0],
        tx_calls: [k * 900 * w, k * 200 * w, 0],
        caused_ns: k * 400_000 * w,
        caused_pkts: k * 1_600 * w,
        caused_ipis_milli: k * 30_000 * w,
    };
    a
}

/// Sample number `k` (1 s apart) of a host with `ntasks` threads on `ncpus` CPUs.
pub fn sample(k: u64, ntasks: usize, ncpus: u32) -> RawSample {
    let cpus = (0..ncpus)
        .map(|c| {
            let w = u64::from(c) + 1;
            RawCpu {
                cpu: c,
                online: true,
                times: Some(CpuTimes {
                    user: k * 60 + w,
                    system: k * 20,
                    idle: k * 10,
                    irq: k,
                    softirq: k * 9,
                    ..Default::default()
                }),
                softnet: Some(Softnet {
                    processed: k * 90_000 * w,
                    dropped: k / 100,
                    time_squeeze: k * 3,
                    received_rps: k * 10,
                    flow_limit: 0,
                }),
                irq: Some(irq(k * 4, w)),
                net: Some(CpuNet {
                    net_rx_actions: k * 600 * w,
                    net_rx_ns: k * 3_600_000 * w,
                    net_rx_restarts: k * 3,
                    net_rx_max_ns: 1_900_000,
                    napi_polls: k * 1400 * w,
                    napi_work: k * 90_000 * w,
                    rx: RxSplit {
                        ns: [
                            k * 2_000_000 * w,
                            0,
                            k * 10_000 * w,
                            0,
                            0,
                            k * 1_500_000 * w,
                            k * 90_000 * w,
                        ],
                        units: [
                            k * 50_000 * w,
                            0,
                            k * 200 * w,
                            0,
                            0,
                            k * 30_000 * w,
                            k * 300 * w,
                        ],
                        lost_ns: 0,
                        rps_ipi_ns: k * 60_000 * w,
                        rps_ipis: k * 30 * w,
                    },
                    napi_budget_exhausted: k * 400 * w,
                }),
                ksoftirqd_tid: Some(10 + c * 8),
            }
        })
        .collect();
    let tasks = (0..ntasks)
        .map(|i| {
            let i = i as u64;
            let tgid = 1000 + (i / 4) as u32 * 4;
            let tid = 1000 + i as u32;
            let busy = if i.is_multiple_of(7) { 5 } else { 0 };
            let kthread = i.is_multiple_of(11);
            // A small forest: every third process starts a chain of three.
            let nth = (tgid - 1000) / 4;
            let ppid = if nth.is_multiple_of(3) { 1 } else { tgid - 4 };
            RawTask {
                tgid,
                tid,
                start_ticks: 5000 + i,
                comm: format!("worker-{}", i % 13),
                uid: (i % 3) as u32 * 1000,
                state: if busy > 0 { 'R' } else { 'S' },
                utime_ticks: k * busy * 10 + i,
                stime_ticks: k * busy * 2,
                on_cpu_ns: k * busy * 110_000_000 + i * 1000,
                run_delay_ns: k * 3_000_000,
                last_cpu: (i % u64::from(ncpus.max(1))) as u32,
                affinity: format!("0-{}", ncpus.saturating_sub(1)),
                kthread,
                irq: (busy > 0).then(|| Box::new(task_irq(k, 1 + i % 3))),
                ppid,
                // Leaders only, as collected (process rows take the
                // leader's). Real kernel threads have none; synth's
                // `kthread` rows are arbitrary variety (multi-threaded,
                // named like workers), and the smallest samples' only
                // leader is one, so they get one too: every string field
                // is then filled for the sanitiser's test.
                cmdline: if tid == tgid {
                    vec![
                        format!("/usr/bin/worker-{}", i % 13),
                        "--queue".into(),
                        format!("{}", nth % 8),
                    ]
                } else {
                    Vec::new()
                },
                // Per process (its threads share it), growing a page a
                // sample; none for the `kthread` rows.
                mem: (!kthread).then(|| {
                    let n = u64::from(nth % 16);
                    TaskMem {
                        virt: (64 + n * 32) << 20,
                        res: ((8 + n * 4) << 20) + k * 4096,
                        shr: (4 + n % 4) << 20,
                    }
                }),
                priority: Some(if nth % 5 == 4 { 25 } else { 20 }),
                nice: Some(if nth % 5 == 4 { 5 } else { 0 }),
                ..Default::default()
            }
        })
        .collect();
    RawSample {
        seq: k,
        mono_ns: 1_000_000_000_000 + k * 1_000_000_000,
        unix_ms: 1_700_000_000_000 + k * 1000,
        source: Source::Bpf,
        cpus,
        tasks,
        procs: Vec::new(),
        napi: (0..ncpus)
            .map(|c| RawNapi {
                dev: "eth0".into(),
                napi_id: 8193 + c,
                cpu: c,
                polls: k * 1400,
                work: k * 90_000,
                budget_exhausted: k * 400,
                budget: 64,
                ..Default::default()
            })
            .collect(),
        devices: vec![RawDevice {
            name: "eth0".into(),
            ifindex: 2,
            rx_packets: k * 180_000,
            rx_bytes: k * 250_000_000,
            tx_packets: k * 90_000,
            tx_bytes: k * 6_000_000,
            rx_dropped: k / 50,
            ..Default::default()
        }],
        health: Some(BpfHealth {
            map_full: 0,
            map_full_ns: 0,
            napi_map_full: 0,
            unmatched_exits: k / 1000,
            recursion_misses: 0,
            programs: vec![ProgStat {
                name: "handle_softirq_exit".into(),
                run_cnt: k * 3000,
                run_time_ns: k * 600_000,
                // As recorded before programs counted their runs per CPU
                // (the golden recordings are written from this).
                cpu_runs: Vec::new(),
            }],
            missing_tracepoints: vec![],
            attach_mode: "tp_btf".into(),
            ..Default::default()
        }),
        cgroups: Vec::new(),
        notes: Vec::new(),
        system: None,
        devices_incomplete: None,
        // The busy tasks (every 7th) rob each other's neighbours.
        traffic: RawTraffic {
            available: true,
            why: String::new(),
            robbed: (0..ntasks.min(28) as u32)
                .step_by(7)
                .map(|i| RawRob {
                    victim_tid: 1001 + i,
                    victim_pid: 1000 + (1 + i) / 4 * 4,
                    beneficiary_tid: 1000 + i,
                    beneficiary_pid: 1000 + i / 4 * 4,
                    beneficiary_cgroup: 0,
                    ns: k * 200_000 * u64::from(1 + i % 3),
                    pkts: k * 800 * u64::from(1 + i % 3),
                })
                .collect(),
            cgroups: Vec::new(),
        },
    }
}

/// Paths of synthetic cgroup `i`: Kubernetes pods of each QoS class,
/// docker, systemd services and a v1 path, in turn.
pub fn cgroup_path(i: u64) -> (String, bool) {
    let uid = format!("{i:08x}-0000-4000-8000-{:012x}", i * 7919);
    let cid = format!("{:064x}", u128::from(i) * 0x9e37_79b9_7f4a_7c15);
    match i % 5 {
        0 => (
            format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{cid}.scope",
                uid.replace('-', "_")
            ),
            false,
        ),
        1 => (format!("/kubepods/besteffort/pod{uid}/{cid}"), false),
        2 => (format!("/system.slice/docker-{cid}.scope"), false),
        3 => (format!("/system.slice/svc-{i}.service"), false),
        _ => (format!("/docker/{cid}"), true),
    }
}

/// [`sample`] with process rows, each process in one of `ncgroups`
/// cgroups (process `p` in cgroup `p % ncgroups`), and the cgroup table.
pub fn sample_with_cgroups(k: u64, ntasks: usize, ncpus: u32, ncgroups: u64) -> RawSample {
    let mut s = sample(k, ntasks, ncpus);
    let n = ncgroups.max(1);
    let key = |i: u64| 1000 + i;
    for t in s.tasks.iter_mut() {
        t.cgroup_id = key(u64::from(t.tgid / 4) % n);
    }
    // Process totals: the leader's identity, the threads' sums.
    let mut procs: Vec<RawTask> = Vec::new();
    for t in &s.tasks {
        match procs.last_mut() {
            Some(p) if p.tgid == t.tgid => {
                p.utime_ticks += t.utime_ticks;
                p.stime_ticks += t.stime_ticks;
                p.on_cpu_ns += t.on_cpu_ns;
                p.nr_threads += 1;
                if let Some(a) = &t.irq {
                    p.irq.get_or_insert_with(Box::default).add(a);
                }
            }
            _ => {
                let mut p = t.clone();
                p.tid = p.tgid;
                p.nr_threads = 1;
                procs.push(p);
            }
        }
    }
    s.procs = procs;
    s.tasks.clear();
    let used: std::collections::BTreeSet<u64> = s.procs.iter().map(|p| p.cgroup_id).collect();
    s.cgroups = used
        .into_iter()
        .map(|id| {
            let (path, v1) = cgroup_path(id - 1000);
            RawCgroup {
                id,
                path,
                v1,
                cpus: if id % 2 == 0 {
                    String::new()
                } else {
                    format!("0-{}", ncpus.saturating_sub(1) / 2)
                },
                // One in three has no memory controller counting it.
                mem_bytes: (id % 3 != 0).then(|| (id % 7 + 1) << 26),
                pod: None,
            }
        })
        .collect();
    s
}

/// A [`super::SampleSource`] replaying synthetic samples (tests).
pub struct Synth {
    pub host: HostInfo,
    pub k: u64,
    pub ntasks: usize,
}

impl super::SampleSource for Synth {
    fn host(&self) -> &HostInfo {
        &self.host
    }
    fn sample(&mut self) -> anyhow::Result<RawSample> {
        self.k += 1;
        Ok(sample(self.k, self.ntasks, self.host.nr_cpus))
    }
}
