//! Batch text and JSON rendering of deterministic frames, snapshotted, and
//! the `nettop -b` binary end to end (fixture sysroot, closed pipe, live BPF).
//!
//! The frames come from the real model ([`nettop::model::compute`]) over
//! synthetic samples of a busy two-socket, 8-CPU host: NET_RX steered onto
//! CPU 2 where a pinned data-plane worker runs, ksoftirqd/6 saturated by a
//! second queue, CPU 7 offline. CLK_TCK 100, interval 1 s.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

use nettop::model::compute;
use nettop::model::frame::Frame;
use nettop::model::hidden::{Basis, Calibration, ClassCost};
use nettop::model::raw::*;
use nettop::output::json::render_json;
use nettop::output::text::{TextOptions, render_frame};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const T0_MS: u64 = 1_795_336_800_000;

fn host() -> HostInfo {
    HostInfo {
        hostname: "edge-lb-07".into(),
        kernel: "6.18.0".into(),
        regime: Regime::TickBased,
        regime_source: "/proc/config.gz".into(),
        clk_tck: 100,
        nr_cpus: 8,
        cpu_node: vec![0, 0, 0, 0, 1, 1, 1, 1],
        calibration: Some(calibration()),
        ..Default::default()
    }
}

/// Measured an hour before the frames: IPI 2.6 µs, timer 4.2 µs hidden.
fn calibration() -> Calibration {
    let c = |basis, samples, traced, hidden, spread| ClassCost {
        basis,
        samples,
        traced_ns: traced,
        hidden_ns: hidden,
        spread_ns: spread,
    };
    Calibration {
        measured_unix_ms: T0_MS - 3_600_000,
        origin: "cache /var/cache/nettop/calibration.json".into(),
        cpu: 3,
        sender_cpu: 2,
        device: c(Basis::SameAsIpi, 0, 0.0, 2_600.0, 20.0),
        timer: c(Basis::Measured, 70, 5_100.0, 4_200.0, 400.0),
        ipi: c(Basis::Measured, 4_000, 300.0, 2_600.0, 20.0),
        other: c(Basis::SameAsIpi, 0, 0.0, 2_600.0, 20.0),
        softirq: c(Basis::Measured, 2_000, 2_100.0, 450.0, 30.0),
        runtime_share: 1.0,
        ..Default::default()
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

fn tasks() -> Vec<T> {
    let mut v = vec![
        t(1, 1, "systemd", 0, 1, 8, 0, "0-7"),
        t(812, 812, "sshd", 0, 0, 2, 1, "0-7"),
        T {
            irq: Irq {
                sv_ms: 1,
                sv_n: 120,
                timer_ms: 1,
                ..Default::default()
            },
            ..t(2001, 2001, "dataplane", 1000, 2, 20, 0, "0")
        },
        T {
            irq: Irq {
                hi_ms: 25,
                hi_n: 2500,
                sv_ms: 8,
                sv_n: 800,
                rx_stolen_ms: 300,
                rx_n: 6000,
                timer_ms: 1,
                ..Default::default()
            },
            ..t(2001, 2002, "dp-worker-0", 1000, 98, 980, 2, "2")
        },
        T {
            irq: Irq {
                sv_ms: 2,
                sv_n: 250,
                timer_ms: 1,
                ..Default::default()
            },
            ..t(2001, 2003, "dp-worker-1", 1000, 26, 260, 3, "3")
        },
        T {
            irq: Irq {
                hi_ms: 15,
                hi_n: 1500,
                sv_ms: 5,
                sv_n: 500,
                rx_stolen_ms: 50,
                rx_n: 900,
                tx_inline_ms: 30,
                ..Default::default()
            },
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
            if cur {
                x.irq.acct()
            } else {
                IrqAcct::default()
            }
        }),
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
        2 => Irq {
            hi_ms: 25,
            hi_n: 2500,
            sv_ms: 8,
            sv_n: 800,
            rx_stolen_ms: 300,
            rx_n: 6000,
            rx_ksoftirqd_ms: 20,
            timer_ms: 1,
            ..Default::default()
        },
        6 => Irq {
            hi_ms: 15,
            hi_n: 1500,
            sv_ms: 5,
            sv_n: 500,
            rx_stolen_ms: 50,
            rx_n: 900,
            tx_inline_ms: 30,
            rx_ksoftirqd_ms: 600,
            ..Default::default()
        },
        _ => Irq {
            sv_ms: 2,
            sv_n: 250,
            timer_ms: 1,
            ..Default::default()
        },
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
        },
        6 => CpuNet {
            net_rx_actions: 2000,
            net_rx_ns: 650 * MS,
            net_rx_restarts: 900,
            net_rx_max_ns: 2 * MS,
            napi_polls: 12000,
            napi_work: 700_000,
            napi_budget_exhausted: 9000,
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

fn sample(cur: bool, bpf: bool) -> RawSample {
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
            programs: vec![ProgStat {
                name: "softirq_exit".into(),
                run_cnt: 0,
                run_time_ns: if cur { 3_500_000 } else { 1 },
            }],
            attach_mode: "tp_btf".into(),
            ..Default::default()
        }),
        cgroups: vec![],
        notes: vec![],
    }
}

fn frame(bpf: bool) -> Frame {
    compute(&host(), &sample(false, bpf), &sample(true, bpf))
}

fn users() -> std::collections::HashMap<u32, String> {
    [(0, "root"), (1000, "dpdk"), (65534, "nobody")]
        .into_iter()
        .map(|(u, n)| (u, n.to_string()))
        .collect()
}

fn opts(threads: bool) -> TextOptions {
    TextOptions {
        threads,
        max_rows: 0,
        users: users(),
        regime_source: "/proc/config.gz".into(),
        ..Default::default()
    }
}

fn snap(name: &str, text: &str) {
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn text_busy_two_socket_bpf_processes() {
    snap(
        "batch_text_busy_2socket_processes",
        &render_frame(&frame(true), &opts(false)),
    );
}

#[test]
fn text_busy_two_socket_bpf_threads() {
    snap(
        "batch_text_busy_2socket_threads",
        &render_frame(&frame(true), &opts(true)),
    );
}

#[test]
fn text_proc_only_marks_estimates() {
    let text = render_frame(&frame(false), &opts(true));
    assert!(text.contains("ESTIMATES (no BPF)"));
    assert!(text.contains("STOLEN~%"));
    snap("batch_text_proc_only_threads", &text);
}

/// A collector note (device counters from the sysfs fallback) reaches the
/// health lines of text and JSON; without one, neither changes.
#[test]
fn collector_notes_are_shown() {
    let note = "device counters from sysfs: rtnetlink socket: Permission denied";
    for bpf in [true, false] {
        let mut cur = sample(true, bpf);
        cur.notes = vec![note.into()];
        let f = compute(&host(), &sample(false, bpf), &cur);
        let text = render_frame(&f, &opts(false));
        assert!(text.contains(&format!("Note: {note}")), "{text}");
        let back: Frame = serde_json::from_str(&render_json(&f, &[]).unwrap()).unwrap();
        assert_eq!(back.health.notes, vec![note.to_string()]);
        let plain = render_frame(&frame(bpf), &opts(false));
        assert!(!plain.contains("Note:"), "{plain}");
        assert!(!render_json(&frame(bpf), &[]).unwrap().contains("\"notes\""));
    }
}

#[test]
fn text_pid_filter_and_row_limit() {
    let o = TextOptions {
        pids: vec![2001],
        max_rows: 2,
        ..opts(true)
    };
    let text = render_frame(&frame(true), &o);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("TID"))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    // Most stolen first: the worker on the NET_RX CPU.
    assert!(rows[0].contains("dp-worker-0"), "{text}");
    assert!(rows.iter().all(|r| !r.contains("iperf3")));
}

#[test]
fn json_is_one_line_frame_filtered_by_pid() {
    let f = frame(true);
    let line = render_json(&f, &[3100]).unwrap();
    assert!(!line.contains('\n'));
    let back: Frame = serde_json::from_str(&line).unwrap();
    assert_eq!(
        back.processes.iter().map(|p| p.pid).collect::<Vec<_>>(),
        vec![3100]
    );
    assert!(back.threads.iter().all(|t| t.pid == 3100) && !back.threads.is_empty());
    // Everything else is the whole frame (serde_json's parser may round the
    // last digit of a float, so compare what the renderer printed).
    assert_eq!(back.cpus.len(), f.cpus.len());
    let all = render_json(&f, &[]).unwrap();
    assert_eq!(all, serde_json::to_string(&f).unwrap());
    let all: Frame = serde_json::from_str(&all).unwrap();
    assert_eq!(
        (all.processes.len(), all.threads.len()),
        (f.processes.len(), f.threads.len())
    );
}

#[test]
fn json_snapshots() {
    for (bpf, name) in [
        (true, "batch_json_busy_2socket"),
        (false, "batch_json_proc_only"),
    ] {
        let mut v: serde_json::Value =
            serde_json::from_str(&render_json(&frame(bpf), &[2001]).unwrap()).unwrap();
        // Thread rows duplicate the process rows' shape; keep the snapshot readable.
        v["threads"] = serde_json::Value::Array(vec![]);
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_json_snapshot!(name, v);
        });
    }
}

fn nettop() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nettop"));
    c.env("NETTOP_CACHE_DIR", common::cache_dir());
    c
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/proc/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The fixture tree never changes, so every rate is 0, but the whole path
/// runs: host detection, readers, model, renderer, user names from the
/// sysroot's /etc/passwd, -n and -d.
#[test]
fn binary_batch_on_fixture_sysroot() {
    let out = nettop()
        .args([
            "-b",
            "--no-bpf",
            "-n",
            "2",
            "-d",
            "0.05",
            "-H",
            "--sysroot",
            &fixture("modern"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("nettop - ").count(), 2, "{text}");
    assert!(text.contains("host modern-host"));
    assert!(text.contains("irq_time_accounting (from /proc/config.gz)"));
    assert!(text.contains("weird) name (x"));
    assert!(
        text.contains("alice"),
        "uid 1000 named from the sysroot's /etc/passwd:\n{text}"
    );
    assert!(text.contains("   2 ") && text.contains("offline"));

    let out = nettop()
        .args([
            "-b",
            "--no-bpf",
            "--json",
            "-n",
            "3",
            "-d",
            "0.05",
            "--sysroot",
            &fixture("old"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let frames: Vec<Frame> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0].regime, Regime::TickBased);
    assert_eq!(frames[0].source, Source::ProcOnly);
}

#[test]
fn binary_bad_sysroot_is_a_clear_error() {
    let out = nettop()
        .args([
            "-b",
            "--no-bpf",
            "-n",
            "1",
            "--sysroot",
            "/nonexistent-nettop",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent-nettop/"), "{err}");
}

/// `nettop -b | head -c 100`: the reader goes away, nettop exits 0 quietly.
#[test]
fn binary_closed_pipe_exits_zero() {
    let mut child = nettop()
        .args([
            "-b",
            "--no-bpf",
            "-d",
            "0.05",
            "--sysroot",
            &fixture("modern"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 100];
    stdout.read_exact(&mut buf).unwrap();
    drop(stdout);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "{err}");
}

/// Live, with BPF: two JSON frames from this machine.
#[test]
fn binary_live_bpf_json() {
    if !common::is_root() {
        return common::skip("binary_live_bpf_json", "needs root for BPF");
    }
    let out = nettop()
        .args(["-b", "--json", "-H", "-n", "2", "-d", "0.2"])
        .output()
        .unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return common::skip("binary_live_bpf_json", &format!("BPF unavailable: {err}"));
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let frames: Vec<Frame> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 2);
    for f in &frames {
        assert_eq!(f.source, Source::Bpf);
        assert!(f.interval_s > 0.1 && f.interval_s < 1.0, "{}", f.interval_s);
        assert!(f.summary.cpus_online >= 1);
        // -H: thread rows too (process mode emits none, see below).
        assert!(!f.threads.is_empty());
        assert!(!f.processes.is_empty());
        assert!(
            f.cpus
                .iter()
                .filter(|c| c.online)
                .all(|c| c.idle_pct + c.usr_pct + c.sys_pct <= 100.0 + 1e-6)
        );
    }
}

/// Without -H a frame has one row per process and none per thread, so its
/// size does not grow with the host's threads.
#[test]
fn binary_live_process_mode_has_no_thread_rows() {
    if !common::is_root() {
        return common::skip(
            "binary_live_process_mode_has_no_thread_rows",
            "needs root for BPF",
        );
    }
    let out = nettop()
        .args(["-b", "--json", "-n", "1", "-d", "0.2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f: Frame = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert!(f.threads.is_empty());
    assert!(f.processes.len() > 5);
    assert!(f.summary.tasks as usize >= f.processes.len());
    assert_eq!(f.health.task_source, "iter/task");
}

/// A mistyped `-p` is an error naming the PID, not an empty screen.
#[test]
fn binary_unknown_pid_is_a_clear_error() {
    let out = nettop()
        .args([
            "-b",
            "--no-bpf",
            "-n",
            "1",
            "-p",
            "100,4242",
            "--sysroot",
            &fixture("modern"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no such process: 4242"), "{err}");
    assert!(!err.contains("100,"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Without root or CAP_BPF+CAP_PERFMON: one line saying what is missing and
/// how to fix it, exit 2. Run as `nobody` through setpriv when we are root.
#[test]
fn binary_unprivileged_is_a_clear_error() {
    if !common::is_root() {
        // Already unprivileged: the binary itself is the test subject.
        let out = nettop().args(["-b", "-n", "1"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("CAP_BPF"), "{err}");
        return;
    }
    // The checkout may sit under a directory `nobody` cannot enter: run a
    // copy from a world-readable temporary directory.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("nettop");
    std::fs::copy(env!("CARGO_BIN_EXE_nettop"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            bin.to_str().unwrap(),
            "-b",
            "-n",
            "1",
        ])
        .output()
        .expect("setpriv (util-linux) runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("CAP_BPF") && err.contains("CAP_PERFMON") && err.contains("--no-bpf"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
}
