//! Deterministic model Frames for the TUI's snapshot tests and benches.
//!
//! Built in code (not recorded) so that every number on screen is known and
//! a snapshot diff always means the renderer changed, never the machine.

use std::collections::HashMap;

use crate::model::frame::{CpuView, DeviceView, Frame, HealthView, NapiView, Summary, TaskView};
use crate::model::raw::{NET_RX, NR_SOFTIRQS, Regime, Source};

/// A tiny linear congruential generator: reproducible filler numbers
/// without pulling a rand crate into the library.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// Uniform-ish value in `0..max` with one decimal.
    fn pct(&mut self, max: f64) -> f64 {
        ((self.next() % 10_000) as f64 / 10_000.0 * max * 10.0).round() / 10.0
    }
}

/// User names for the fixture uids (what the collector thread resolves live).
pub fn users() -> HashMap<u32, String> {
    [
        (0, "root"),
        (33, "www-data"),
        (105, "postgres"),
        (1000, "alice"),
    ]
    .into_iter()
    .map(|(u, n)| (u, n.to_string()))
    .collect()
}

/// Parameters of one fixture task; stolen softirq is all NET_RX unless
/// `other_si` says otherwise.
struct T<'a> {
    pid: u32,
    tid: u32,
    comm: &'a str,
    uid: u32,
    cpu: u32,
    aff: &'a str,
    top: f64,
    hi: f64,
    net_rx: f64,
    other_si: f64,
    inline: f64,
    ksoftirqd: f64,
    kthread: bool,
    threads: u32,
}

impl T<'_> {
    fn view(&self, is_process: bool) -> TaskView {
        let mut si = [0.0; NR_SOFTIRQS];
        si[NET_RX] = self.net_rx;
        si[1] = self.other_si; // TIMER
        let stolen = self.hi + self.net_rx + self.other_si;
        // Hidden cost ~40 % of the stolen time, as on the development VM.
        let hidden = stolen * 0.4;
        let true_pct = (self.top - stolen - hidden - self.ksoftirqd).max(0.0);
        TaskView {
            pid: self.pid,
            tid: if is_process { self.pid } else { self.tid },
            is_process,
            comm: self.comm.to_string(),
            uid: self.uid,
            state: if self.top > 1.0 { 'R' } else { 'S' },
            nr_threads: self.threads,
            kthread: self.kthread,
            last_cpu: self.cpu,
            affinity: self.aff.to_string(),
            top_pct: self.top,
            on_cpu_pct: self.top,
            hardirq_pct: self.hi * 0.7,
            sysvec_pct: self.hi * 0.3,
            softirq_stolen_pct: si,
            stolen_pct: stolen,
            inline_pct: self.inline,
            ksoftirqd_pct: self.ksoftirqd,
            true_pct,
            hidden_pct: hidden,
            interrupts_per_s: self.hi * 100.0,
            softirqs_per_s: (self.net_rx + self.other_si) * 50.0,
            cgroup_id: 0,
        }
    }
}

fn cpu(n: u32, node: u32, usr: f64, sys: f64, irq: f64, soft: f64) -> CpuView {
    let idle = (100.0 - usr - sys - irq - soft).max(0.0);
    CpuView {
        cpu: n,
        online: true,
        node: Some(node),
        usr_pct: usr,
        sys_pct: sys,
        irq_pct: irq,
        soft_pct: soft,
        idle_pct: idle,
        ..Default::default()
    }
}

fn summarize(frame: &mut Frame) {
    let n = frame.cpus.iter().filter(|c| c.online).count().max(1) as f64;
    let avg = |f: fn(&CpuView) -> f64| frame.cpus.iter().map(f).sum::<f64>() / n;
    let sum = |f: fn(&CpuView) -> f64| frame.cpus.iter().map(f).sum::<f64>();
    frame.summary = Summary {
        cpus_online: n as u32,
        usr_pct: avg(|c| c.usr_pct),
        sys_pct: avg(|c| c.sys_pct),
        irq_pct: avg(|c| c.irq_pct),
        soft_pct: avg(|c| c.soft_pct),
        idle_pct: avg(|c| c.idle_pct),
        steal_pct: avg(|c| c.steal_pct),
        net_rx_per_s: sum(|c| c.net_rx_per_s),
        napi_polls_per_s: sum(|c| c.napi_polls_per_s),
        packets_per_s: sum(|c| c.packets_per_s),
        budget_exhausted_per_s: sum(|c| c.budget_exhausted_per_s),
        time_squeeze_per_s: sum(|c| c.time_squeeze_per_s),
        stolen_pct_total: frame.threads.iter().map(|t| t.stolen_pct).sum(),
        hidden_pct_total: frame.threads.iter().map(|t| t.hidden_pct).sum(),
        tasks: frame.threads.len() as u32,
        processes: frame.processes.len() as u32,
        ..Default::default()
    };
}

fn push(frame: &mut Frame, t: &T) {
    frame.processes.push(t.view(true));
    frame.threads.push(t.view(false));
}

/// A quiet 2-CPU VM: /proc only, nothing stolen to speak of.
pub fn idle_host() -> Frame {
    let mut f = Frame {
        seq: 7,
        unix_ms: 1_700_000_000_000,
        interval_s: 1.0,
        hostname: "idle-vm".into(),
        regime: Regime::TickBased,
        regime_note: "tick-based: top charges interrupt time to whoever was running".into(),
        source: Source::ProcOnly,
        cpus: vec![cpu(0, 0, 1.0, 1.0, 0.0, 0.0), cpu(1, 0, 0.0, 1.0, 0.0, 0.0)],
        devices: vec![
            DeviceView {
                name: "eth0".into(),
                rx_packets_per_s: 3.0,
                rx_bytes_per_s: 240.0,
                tx_packets_per_s: 2.0,
                tx_bytes_per_s: 300.0,
                rx_dropped_per_s: 0.0,
                ..Default::default()
            },
            DeviceView {
                name: "lo".into(),
                ..Default::default()
            },
        ],
        health: HealthView {
            attach_mode: String::new(),
            ..Default::default()
        },
        ..Default::default()
    };
    let tasks = [
        T {
            pid: 1,
            tid: 1,
            comm: "systemd",
            uid: 0,
            cpu: 0,
            aff: "0-1",
            top: 0.0,
            hi: 0.0,
            net_rx: 0.0,
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        },
        T {
            pid: 14,
            tid: 14,
            comm: "ksoftirqd/0",
            uid: 0,
            cpu: 0,
            aff: "0",
            top: 0.0,
            hi: 0.0,
            net_rx: 0.0,
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: true,
            threads: 1,
        },
        T {
            pid: 512,
            tid: 512,
            comm: "sshd",
            uid: 0,
            cpu: 1,
            aff: "0-1",
            top: 0.0,
            hi: 0.0,
            net_rx: 0.0,
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        },
        T {
            pid: 1200,
            tid: 1200,
            comm: "bash",
            uid: 1000,
            cpu: 1,
            aff: "0-1",
            top: 0.0,
            hi: 0.0,
            net_rx: 0.0,
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        },
        T {
            pid: 1301,
            tid: 1301,
            comm: "nettop",
            uid: 0,
            cpu: 0,
            aff: "0-1",
            top: 2.0,
            hi: 0.0,
            net_rx: 0.0,
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        },
    ];
    for t in &tasks {
        push(&mut f, t);
    }
    summarize(&mut f);
    f
}

/// A 2-socket, 16-CPU receiver under NET_RX load: RX steered onto CPU 3,
/// where a pinned `openssl` loses ~45 % of its CPU while top shows 98 %.
/// `tick` varies the load a little so a series has a visible history.
pub fn busy_host_at(tick: u64) -> Frame {
    let wobble = (tick % 7) as f64;
    let mut f = Frame {
        seq: 1000 + tick,
        unix_ms: 1_700_000_000_000 + tick * 1000,
        interval_s: 1.0,
        hostname: "rx-2s-16c".into(),
        regime: Regime::TickBased,
        regime_note: "tick-based: top charges interrupt time to whoever was running".into(),
        hidden_note:
            "HIDDEN~ = interruptions × untraced cost each, calibrated on CPU 15 3 h before \
                      this frame (cache /var/cache/nettop/calibration.json): IPI 2.6 µs ±0.02 µs \
                      (traced 0.3 µs), timer 4.2 µs ±0.40 µs, device/other = IPI, +0.5 µs ±0.03 µs per softirq in its \
                      tail"
                .into(),
        source: Source::Bpf,
        health: HealthView {
            map_full: 3,
            napi_map_full: 0,
            unmatched_exits: 12,
            recursion_misses: 0,
            vanished_tasks: 2,
            missing_tracepoints: vec![],
            attach_mode: "tp_btf".into(),
            bpf_cpu_pct: Some(0.8),
            ..Default::default()
        },
        ..Default::default()
    };
    for n in 0..16u32 {
        let node = n / 8;
        let mut c = match n {
            0 => cpu(n, node, 35.0, 12.0, 0.5, 2.0),
            3 => cpu(n, node, 50.0, 2.0, 1.5, 44.0 + wobble),
            5 => cpu(n, node, 20.0, 10.0, 1.0, 18.0 - wobble),
            8..=11 => cpu(n, node, 30.0 + wobble * 2.0, 8.0, 0.2, 3.0),
            _ => cpu(n, node, 2.0 + (n % 3) as f64, 1.0, 0.0, 0.1 * n as f64),
        };
        if n == 3 || n == 5 {
            let share = if n == 3 { 0.7 } else { 0.3 };
            c.net_rx_per_s = 64_000.0 * share;
            c.packets_per_s = 1_350_000.0 * share;
            c.napi_polls_per_s = 60_000.0 * share;
            c.budget_exhausted_per_s = if n == 3 { 1_800.0 } else { 20.0 };
            c.time_squeeze_per_s = if n == 3 { 45.0 } else { 0.0 };
            c.ksoftirqd_pct = if n == 3 { 12.5 } else { 1.0 };
            c.traced_softirq_pct[NET_RX] = c.soft_pct - 1.0;
            c.softirq_stolen_pct = c.soft_pct * 0.8;
            c.softirq_ksoftirqd_pct = c.ksoftirqd_pct;
            c.interrupts_per_s = 9_000.0 * share;
        }
        if n == 12 {
            c.steal_pct = 4.0;
            c.idle_pct -= 4.0;
        }
        f.cpus.push(c);
    }
    let named = [
        T {
            pid: 5001,
            tid: 5001,
            comm: "openssl",
            uid: 1000,
            cpu: 3,
            aff: "3",
            top: 98.0,
            hi: 1.5,
            net_rx: 38.0 + wobble,
            other_si: 0.5,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        },
        T {
            pid: 4242,
            tid: 4242,
            comm: "iperf3",
            uid: 1000,
            cpu: 5,
            aff: "0-15",
            top: 46.0,
            hi: 0.4,
            net_rx: 9.0,
            other_si: 0.1,
            inline: 14.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        },
        T {
            pid: 27,
            tid: 27,
            comm: "ksoftirqd/3",
            uid: 0,
            cpu: 3,
            aff: "3",
            top: 12.5,
            hi: 0.0,
            net_rx: 0.0,
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 12.5,
            kthread: true,
            threads: 1,
        },
        T {
            pid: 880,
            tid: 880,
            comm: "vpp_main",
            uid: 0,
            cpu: 0,
            aff: "0",
            top: 40.0,
            hi: 0.2,
            net_rx: 0.0,
            other_si: 0.3,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 3,
        },
        T {
            pid: 3100,
            tid: 3100,
            comm: "postgres",
            uid: 105,
            cpu: 9,
            aff: "8-15",
            top: 22.0,
            hi: 0.1,
            net_rx: 0.0,
            other_si: 0.2,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        },
    ];
    for t in &named {
        push(&mut f, t);
    }
    // vpp worker threads, under pid 880: one of them sits on the busy CPU.
    for (i, (cpu_n, net_rx)) in [(3u32, 6.0), (11, 0.0)].into_iter().enumerate() {
        let t = T {
            pid: 880,
            tid: 881 + i as u32,
            comm: "vpp_wk",
            uid: 0,
            cpu: cpu_n,
            aff: if cpu_n == 3 { "3" } else { "11" },
            top: 30.0,
            hi: 0.2,
            net_rx,
            other_si: 0.1,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 3,
        };
        f.threads.push(t.view(false));
        if let Some(p) = f.processes.iter_mut().find(|p| p.pid == 880) {
            let v = t.view(false);
            p.top_pct += v.top_pct;
            p.on_cpu_pct += v.on_cpu_pct;
            p.true_pct += v.true_pct;
            p.stolen_pct += v.stolen_pct;
            p.hardirq_pct += v.hardirq_pct;
            p.sysvec_pct += v.sysvec_pct;
            for k in 0..NR_SOFTIRQS {
                p.softirq_stolen_pct[k] += v.softirq_stolen_pct[k];
            }
        }
    }
    // nginx workers on socket 1, a little NET_RX each.
    for w in 0..4u32 {
        let t = T {
            pid: 6000 + w,
            tid: 6000 + w,
            comm: "nginx",
            uid: 33,
            cpu: 8 + w,
            aff: "8-15",
            top: 18.0 + w as f64,
            hi: 0.3,
            net_rx: 1.0 + w as f64 * 0.5,
            other_si: 0.2,
            inline: 0.8,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        };
        push(&mut f, &t);
    }
    let mut rng = Lcg(42);
    for i in 0..24u32 {
        let pid = 7000 + i * 13;
        let comm = format!("worker-{i:02}");
        let t = T {
            pid,
            tid: pid,
            comm: &comm,
            uid: if i % 3 == 0 { 0 } else { 1000 },
            cpu: (i * 5) % 16,
            aff: "0-15",
            top: rng.pct(6.0),
            hi: 0.0,
            net_rx: if i % 4 == 0 { rng.pct(0.8) } else { 0.0 },
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        };
        push(&mut f, &t);
    }
    f.napi = (0..8u32)
        .map(|q| {
            let (polls, cpus) = match q {
                0 => (42_000.0, vec![3]),
                1 => (18_000.0, vec![5]),
                _ => (0.0, vec![]),
            };
            let pkts = polls * 22.5;
            NapiView {
                dev: "ens1f0np0".into(),
                napi_id: 8193 + q,
                polls_per_s: polls,
                packets_per_s: pkts,
                work_per_poll: if polls > 0.0 { pkts / polls } else { 0.0 },
                budget: 64,
                budget_exhausted_per_s: if q == 0 { 1_800.0 } else { 0.0 },
                cpus,
                ..Default::default()
            }
        })
        .chain(std::iter::once(NapiView {
            dev: "veth-rx".into(),
            napi_id: 0,
            polls_per_s: 1200.0,
            packets_per_s: 76_800.0,
            work_per_poll: 64.0,
            budget: 64,
            budget_exhausted_per_s: 1200.0,
            cpus: vec![3, 5],
            ..Default::default()
        }))
        .collect();
    f.devices = vec![
        DeviceView {
            name: "ens1f0np0".into(),
            rx_packets_per_s: 1_350_000.0,
            rx_bytes_per_s: 1.9e9,
            tx_packets_per_s: 90_000.0,
            tx_bytes_per_s: 6.1e6,
            rx_dropped_per_s: 120.0,
            ..Default::default()
        },
        DeviceView {
            name: "ens1f1np1".into(),
            rx_packets_per_s: 40.0,
            rx_bytes_per_s: 5_000.0,
            tx_packets_per_s: 30.0,
            tx_bytes_per_s: 4_000.0,
            rx_dropped_per_s: 0.0,
            ..Default::default()
        },
        DeviceView {
            name: "lo".into(),
            ..Default::default()
        },
        DeviceView {
            name: "veth-rx".into(),
            rx_packets_per_s: 76_800.0,
            rx_bytes_per_s: 1.1e8,
            tx_packets_per_s: 100.0,
            tx_bytes_per_s: 9_000.0,
            rx_dropped_per_s: 0.0,
            ..Default::default()
        },
        // A pod's end of a veth pair, in its own network namespace.
        DeviceView {
            name: "eth0".into(),
            netns: "pod-web".into(),
            ifindex: 3,
            netns_inode: 4026532999,
            rx_packets_per_s: 12_000.0,
            rx_bytes_per_s: 1.7e7,
            tx_packets_per_s: 11_000.0,
            tx_bytes_per_s: 1.6e7,
            ..Default::default()
        },
    ];
    f.napi.push(NapiView {
        dev: "eth0".into(),
        napi_id: 8300,
        polls_per_s: 400.0,
        packets_per_s: 12_000.0,
        work_per_poll: 30.0,
        budget: 64,
        cpus: vec![5],
        ifindex: 3,
        netns_inode: 4026532999,
        ..Default::default()
    });
    summarize(&mut f);
    costs(&mut f);
    f
}

/// NET_RX cost per packet (`model::cost`) from the fixture's per-CPU
/// NET_RX share and packet rates over its one-second interval; a napi
/// instance's packets are split evenly over the CPUs that polled it.
fn costs(f: &mut Frame) {
    use crate::model::cost::{self, CpuCost};
    let cpus: std::collections::BTreeMap<u32, CpuCost> = f
        .cpus
        .iter()
        .map(|c| {
            (
                c.cpu,
                CpuCost {
                    net_rx_ns: (c.traced_softirq_pct[NET_RX] / 100.0 * 1e9) as u64,
                    packets: c.packets_per_s as u64,
                },
            )
        })
        .collect();
    for c in &mut f.cpus {
        c.net_rx_ns_per_packet = cpus.get(&c.cpu).and_then(CpuCost::per_packet);
    }
    for n in &mut f.napi {
        let each = (n.packets_per_s / n.cpus.len().max(1) as f64) as u64;
        let work = n.cpus.iter().map(|c| (*c, each)).collect();
        let (per_packet, ns) = cost::napi_charge(&work, &cpus);
        n.net_rx_ns_per_packet = per_packet;
        n.net_rx_pct = ns / 1e9 * 100.0;
    }
    cost::fill_devices(&mut f.devices, &f.napi, &cpus, 1.0, &mut f.summary);
}

/// The busy host, tick 0.
pub fn busy_host() -> Frame {
    busy_host_at(0)
}

/// `n` processes (one thread each) on the busy host, for the render bench.
pub fn many_tasks(n: usize) -> Frame {
    let mut f = busy_host();
    f.processes.clear();
    f.threads.clear();
    let mut rng = Lcg(7);
    for i in 0..n as u32 {
        let comm = format!("task-{i}");
        let top = rng.pct(100.0);
        let net_rx = if i % 5 == 0 { rng.pct(top * 0.5) } else { 0.0 };
        let t = T {
            pid: 100 + i,
            tid: 100 + i,
            comm: &comm,
            uid: [0, 33, 105, 1000][(i % 4) as usize],
            cpu: i % 16,
            aff: "0-15",
            top,
            hi: 0.0,
            net_rx,
            other_si: 0.0,
            inline: 0.0,
            ksoftirqd: 0.0,
            kthread: false,
            threads: 1,
        };
        push(&mut f, &t);
    }
    summarize(&mut f);
    f
}

/// The busy host with every process in a cgroup: pods of each QoS class,
/// docker, systemd services and sessions, kernel threads in the root. The
/// roll-up is the model's own (`model::cgroups::rollup`).
pub fn busy_host_in_cgroups() -> Frame {
    use crate::model::raw::RawCgroup;
    let mut f = busy_host();
    let pod = |qos: &str, uid: &str, scope: &str| {
        let u = uid.replace('-', "_");
        if qos.is_empty() {
            format!("/kubepods.slice/kubepods-pod{u}.slice/{scope}")
        } else {
            format!("/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{u}.slice/{scope}")
        }
    };
    let ctr = |n: u8| format!("{:02x}", n).repeat(32);
    let table: Vec<(u64, String, &str)> = vec![
        (1, "/".into(), ""),
        (2, "/init.scope".into(), ""),
        (3, "/system.slice/ssh.service".into(), ""),
        (4, "/user.slice/user-1000.slice/session-2.scope".into(), ""),
        (5, format!("/system.slice/docker-{}.scope", ctr(0x5a)), "3"),
        (
            6,
            pod(
                "besteffort",
                "7c1e2a90-1111-4c2b-8d3e-0a1b2c3d4e5f",
                &format!("cri-containerd-{}.scope", ctr(0x1f)),
            ),
            "",
        ),
        (
            7,
            pod(
                "",
                "a9d0c3b4-2222-4e5f-9a6b-7c8d9e0f1a2b",
                &format!("cri-containerd-{}.scope", ctr(0x77)),
            ),
            "8-11",
        ),
        (8, "/system.slice/postgresql.service".into(), "12-15"),
        (
            9,
            pod(
                "burstable",
                "5e6f7a8b-3333-4c9d-8e0f-1a2b3c4d5e6f",
                &format!("crio-{}.scope", ctr(0xc3)),
            ),
            "0-7",
        ),
    ];
    let of = |t: &TaskView| -> u64 {
        match t.comm.as_str() {
            _ if t.kthread => 1,
            "systemd" => 2,
            "sshd" => 3,
            "bash" | "nettop" => 4,
            "openssl" => 5,
            "iperf3" => 6,
            c if c.starts_with("vpp") => 7,
            "postgres" => 8,
            "nginx" => 9,
            _ => 4,
        }
    };
    for t in f.processes.iter_mut().chain(f.threads.iter_mut()) {
        t.cgroup_id = of(t);
    }
    let raw: Vec<RawCgroup> = table
        .into_iter()
        .map(|(id, path, cpus)| RawCgroup {
            id,
            path,
            v1: false,
            cpus: cpus.into(),
        })
        .collect();
    f.cgroups = crate::model::cgroups::rollup(&f.processes, &raw, &f.cpus, f.source);
    f
}
