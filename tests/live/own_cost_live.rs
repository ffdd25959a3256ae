//! nettop's own BPF cost per CPU, live (issue 22, "nettop's own cost on
//! screen"): the collector attached to the real kernel with `--bpf-stats`,
//! UDP between two network namespaces with RPS steering its receive work
//! onto CPU 1 (so CPU 1 takes IPIs and NET_RX it did not ask for), and the
//! frame the model computes from two samples around it.
//!
//! Checks that the figure is there and > 0 on every CPU, that the CPUs add
//! up to the programs' run time the kernel reports for the same interval
//! (the health line's bpf-cpu) within 3 %, that every program's per-CPU run
//! counts add up to the kernel's run count, and that without BPF stats the
//! figure is absent, not 0.
//!
//! Needs root, `ip` and BPF; prints SKIPPED otherwise, fails under
//! NETTOP_REQUIRE_BPF=1.

use crate::common;
use crate::common::tier::Need;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::netns::{ADDR_RX, NetnsPair, have_program, in_netns};
use common::{is_root, pin_self, report, skip};
use nettop::collector::{Collector, CollectorOptions};
use nettop::model::compute;
use nettop::sample::RawSample;

const T: &str = "own_cost_live";

fn collector(bpf_stats: bool) -> Option<Collector> {
    match Collector::new(CollectorOptions {
        bpf_stats,
        ..Default::default()
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            skip(T, &format!("needs root and BPF: {e:#}"));
            None
        }
    }
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Whether BPF run-time stats are on for the whole host right now
/// (someone else's `--bpf-stats` or sysctl).
fn stats_on_globally() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").is_ok_and(|s| s.trim() != "0")
}

/// UDP datagrams from `ns_tx` to `ns_rx` for `secs`, from a thread pinned
/// to CPU 0, paced (bursts of 16 every 200 µs, ~80,000/s at most) so it
/// loads the receive path without spinning a CPU flat out. Returns how
/// many were sent.
fn udp_flood(pair: &NetnsPair, secs: f64) -> u64 {
    let rx = in_netns(&pair.ns_rx, || UdpSocket::bind((ADDR_RX, 0)))
        .expect("enter rx namespace")
        .expect("bind in rx namespace");
    let dst = rx.local_addr().expect("rx address");
    let tx = in_netns(&pair.ns_tx, || UdpSocket::bind("0.0.0.0:0"))
        .expect("enter tx namespace")
        .expect("bind in tx namespace");
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        // Drain the receiver so the socket never fills (a full one drops
        // before the work this test wants to see).
        s.spawn(|| {
            rx.set_read_timeout(Some(Duration::from_millis(50))).ok();
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                let _ = rx.recv(&mut buf);
            }
        });
        let sender = s.spawn(|| {
            pin_self(0);
            let payload = [0u8; 1400];
            let mut sent = 0u64;
            let end = Instant::now() + Duration::from_secs_f64(secs);
            while Instant::now() < end {
                for _ in 0..16 {
                    if tx.send_to(&payload, dst).is_ok() {
                        sent += 1;
                    }
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            sent
        });
        let sent = sender.join().expect("sender");
        stop.store(true, Ordering::Relaxed);
        sent
    })
}

/// Σ over CPUs of a program's per-CPU runs over the interval, against the
/// kernel's run count for it: the counts the time is shared out by must be
/// the runs bpf_stats timed.
fn runs_match(prev: &RawSample, cur: &RawSample) -> String {
    let (p, c) = (prev.health.as_ref().unwrap(), cur.health.as_ref().unwrap());
    let mut out = String::new();
    for q in &c.programs {
        let Some(b) = p.programs.iter().find(|b| b.name == q.name) else {
            continue;
        };
        assert!(
            !q.cpu_runs.is_empty(),
            "{}: no per-CPU runs with stats on",
            q.name
        );
        let counted: u64 = q
            .cpu_runs
            .iter()
            .enumerate()
            .map(|(i, n)| n - b.cpu_runs.get(i).copied().unwrap_or(0))
            .sum();
        let kernel = q.run_cnt - b.run_cnt;
        // The per-CPU map and the program info are read a moment apart:
        // runs in between land in one interval's count and the next's.
        let slack = 200 + kernel / 100;
        assert!(
            counted.abs_diff(kernel) <= slack,
            "{}: the CPUs counted {counted} runs, the kernel {kernel}",
            q.name
        );
        if kernel > 0 {
            out.push_str(&format!(
                "  {:<14} {kernel:>8} runs (per-CPU counts {counted:>8}), {:>5.0} ns/run\n",
                q.name,
                (q.run_time_ns - b.run_time_ns) as f64 / kernel as f64
            ));
        }
    }
    out
}

case!(
    own_bpf_cost_per_cpu_adds_up_to_the_programs_run_time,
    [Need::Bpf, Need::Tool("ip", "-V")]
);
fn own_bpf_cost_per_cpu_adds_up_to_the_programs_run_time() {
    if !is_root() {
        skip(T, "needs root (BPF, network namespaces)");
        return;
    }
    if !have_program("ip") {
        skip(T, "needs ip(8) for the network namespaces");
        return;
    }

    // Without BPF stats: the figure is absent, not 0. Only meaningful
    // while nobody else holds the stats on for the whole host.
    if stats_on_globally() {
        report(&format!(
            "{T}: BPF stats already on for the host (another nettop?): the \
             'absent without --bpf-stats' part is left out\n"
        ));
    } else {
        let Some(mut c) = collector(false) else {
            return;
        };
        let a = c.sample().expect("sample");
        std::thread::sleep(Duration::from_millis(300));
        let b = c.sample().expect("sample");
        let f = compute(c.host(), &a, &b);
        assert!(f.health.bpf_cpu_pct.is_none(), "stats are off");
        for cpu in &f.cpus {
            assert_eq!(cpu.own_bpf_pct, None, "CPU {}: not measured", cpu.cpu);
        }
        let json = nettop::output::json::render_json(&f, &[]).expect("json");
        assert!(json.contains("\"own_bpf_pct\":null"), "{json}");
    }

    let mut pair = match NetnsPair::create("oc") {
        Ok(p) => p,
        Err(e) => {
            skip(T, &format!("cannot create network namespaces: {e}"));
            return;
        }
    };
    let rps_cpu = if cpus() > 1 { 1 } else { 0 };
    if rps_cpu == 1 {
        pair.set_rps("2").expect("RPS onto CPU 1");
    }
    let Some(mut c) = collector(true) else {
        return;
    };
    let prev = c.sample().expect("sample");
    let t0 = Instant::now();
    let sent = udp_flood(&pair, 1.5);
    let cur = c.sample().expect("sample");
    let wall = t0.elapsed().as_secs_f64();
    pair.stop_children();

    let f = compute(c.host(), &prev, &cur);
    let Some(total) = f.health.bpf_cpu_pct else {
        panic!("--bpf-stats as root but no BPF run time: {:?}", cur.health);
    };
    let per_program = runs_match(&prev, &cur);
    let online: Vec<_> = f.cpus.iter().filter(|c| c.online).collect();
    let mut lines = String::new();
    let mut sum = 0.0;
    for cpu in &online {
        let own = cpu
            .own_bpf_pct
            .unwrap_or_else(|| panic!("CPU {}: no own BPF cost with stats on", cpu.cpu));
        assert!(own > 0.0, "CPU {}: own BPF cost {own}", cpu.cpu);
        sum += own;
        let per_intr = if cpu.interruptions_per_s > 0.0 {
            own / 100.0 / cpu.interruptions_per_s * 1e6
        } else {
            0.0
        };
        lines.push_str(&format!(
            "  CPU {}: BPF {own:.3} % of the CPU, {:.0} interruptions/s, {:.0} NET_RX/s, \
             {per_intr:.2} µs of BPF per interruption\n",
            cpu.cpu, cpu.interruptions_per_s, cpu.net_rx_per_s
        ));
    }
    report(&format!(
        "{T}: {sent} datagrams in {wall:.2} s, RPS onto CPU {rps_cpu}; \
         own BPF cost per CPU (sum {sum:.3} %, programs' run time {total:.3} % of one CPU):\n\
         {lines}{per_program}"
    ));
    assert!(sent > 10_000, "sent only {sent} datagrams");
    assert!(
        (sum - total).abs() <= 0.03 * total,
        "per-CPU sum {sum:.4} % against the programs' run time {total:.4} %"
    );
    // The receive work was steered onto the RPS CPU: its IPIs and NET_RX
    // run nettop's programs there.
    let rx = online
        .iter()
        .find(|c| c.cpu == rps_cpu)
        .expect("the RPS CPU is online");
    assert!(rx.net_rx_per_s > 1_000.0, "no NET_RX on CPU {rps_cpu}");
    // JSON carries the figure as a number.
    let json = nettop::output::json::render_json(&f, &[]).expect("json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("parse");
    assert!(
        v["cpus"][rps_cpu as usize]["own_bpf_pct"]
            .as_f64()
            .is_some_and(|x| x > 0.0),
        "{}",
        v["cpus"]
    );
}
