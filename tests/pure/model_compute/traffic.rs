//! Who robs whom, from two samples: pairs of threads become pairs of
//! processes and of cgroups, NET_RX's buckets add up, and a sample without
//! the socket tracepoints gives "not known", never 0.

use crate::common::calibration;
use nettop::model::compute;
use nettop::record::synth;
use nettop::sample::RawSample;
use nettop::sample::traffic::{RawCgCaused, RawRob};

fn rob(victim: (u32, u32), beneficiary: (u32, u32), ns: u64, pkts: u64) -> RawRob {
    RawRob {
        victim_tid: victim.1,
        victim_pid: victim.0,
        beneficiary_tid: beneficiary.1,
        beneficiary_pid: beneficiary.0,
        beneficiary_cgroup: 0,
        ns,
        pkts,
    }
}

/// Two samples of the synthetic host, 1 s apart, with `pairs(k)` as the
/// cumulative pair counters of sample `k`.
fn two(pairs: impl Fn(u64) -> Vec<RawRob>) -> (RawSample, RawSample) {
    let mut p = synth::sample(1, 40, 2);
    let mut c = synth::sample(2, 40, 2);
    p.traffic.robbed = pairs(1);
    c.traffic.robbed = pairs(2);
    (p, c)
}

#[test]
fn thread_pairs_add_up_to_process_pairs() {
    // Threads 1001 and 1002 of process 1000 are both robbed for process
    // 1004's sockets (its threads 1004 and 1005): one process pair.
    let (p, c) = two(|k| {
        vec![
            rob((1000, 1001), (1004, 1004), k * 3_000_000, k * 300),
            rob((1000, 1002), (1004, 1005), k * 1_000_000, k * 100),
            rob((1008, 1008), (1004, 1004), k * 2_000_000, k * 200),
        ]
    });
    let f = compute(&synth::host(2), &p, &c);
    let t = f.traffic.expect("traffic counted");
    let pair = |v: u32, b: u32| {
        t.robbed
            .iter()
            .find(|r| r.victim_pid == v && r.beneficiary_pid == b)
            .unwrap_or_else(|| panic!("{v} <- {b}: {:?}", t.robbed))
    };
    // 4 ms of 1 s is 0.4 % of a CPU.
    assert!((pair(1000, 1004).pct - 0.4).abs() < 1e-9, "{:?}", t.robbed);
    assert!((pair(1000, 1004).pkts_per_s - 400.0).abs() < 1e-9);
    assert!((pair(1008, 1004).pct - 0.2).abs() < 1e-9);
    assert_eq!(t.robbed.len(), 2, "{:?}", t.robbed);
    assert!(t.robbed[0].pct >= t.robbed[1].pct, "largest first");
    // Batch text lists them under the task table, largest first.
    let f = compute(&synth::host(2), &p, &c);
    let text = nettop::output::text::render_frame(&f, &Default::default());
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("ROBBED BY"))
        .collect();
    assert!(table.len() >= 4, "{text}");
    assert!(
        table[2].trim_start().starts_with("1000 ") && table[2].contains("<-    1004"),
        "{}",
        table[2]
    );
    assert!(table[2].contains("    0.4"), "{}", table[2]);
}

#[test]
fn the_buckets_and_every_caused_add_up_to_net_rx() {
    let (p, c) = two(|_| Vec::new());
    let f = compute(&synth::host(2), &p, &c);
    let t = f.traffic.expect("traffic counted");
    // Synth's NET_RX: 3.6 ms a second on CPU 0, twice that on CPU 1.
    let net_rx = 3_600_000.0 * 3.0 / 1e9 * 100.0;
    let buckets: f64 = t.buckets.iter().map(|b| b.pct).sum();
    // Synth's buckets are a fixed split, not NET_RX's: what is checked is
    // that the model sums what it was given, all of it.
    let given: f64 = (0..2u64)
        .map(|cpu| {
            let w = cpu + 1;
            (2_000_000 + 10_000 + 1_500_000 + 90_000) as f64 * w as f64
        })
        .sum::<f64>()
        / 1e9
        * 100.0;
    assert!((buckets - given).abs() < 1e-9, "{buckets} vs {given}");
    let c = &t.conservation;
    let caused: f64 = f
        .processes
        .iter()
        .filter_map(|p| p.traffic.as_ref())
        .map(|t| t.caused_pct)
        .sum();
    assert!((c.caused_pct - caused).abs() < 1e-9);
    assert!(caused > 0.0, "synth's busy tasks cause receive work");
    assert!(
        (c.net_rx_pct - net_rx).abs() < 1e-6,
        "{} vs {net_rx}",
        c.net_rx_pct
    );
    // Synth's RPS IPIs: 60 µs a second on CPU 0, twice that on CPU 1.
    assert!((c.rps_ipi_pct - 0.018).abs() < 1e-9, "{}", c.rps_ipi_pct);
    let ratio = c.ratio.expect("NET_RX time in the interval");
    assert!((ratio - (c.caused_pct + c.buckets_pct) / (c.net_rx_pct + c.rps_ipi_pct)).abs() < 1e-9);
}

/// The RPS IPIs that brought a receiver's packets are in its CAUSED%:
/// their handler time as the collector shared it out, their untraced cost
/// at the host's calibrated IPI cost. Conservation checks the traced part.
#[test]
fn rps_ipis_are_billed_to_the_receivers_at_the_hosts_ipi_cost() {
    let (p, c) = two(|_| Vec::new());
    let uncalibrated = compute(&synth::host(2), &p, &c);
    let mut host = synth::host(2);
    host.calibration = Some(calibration::from_ipi(calibration::measured(
        100, 500.0, 3_000.0, 50.0,
    )));
    let f = compute(&host, &p, &c);
    // Every IPI share the collector gave out, 3 µs each.
    let milli = |s: &RawSample| -> u64 {
        s.tasks
            .iter()
            .filter_map(|t| t.irq.as_ref())
            .map(|a| a.sock.caused_ipis_milli)
            .sum()
    };
    let want = (milli(&c) - milli(&p)) as f64 / 1000.0 * 3_000.0 / 1e9 * 100.0;
    let hidden = |f: &nettop::model::frame::Frame| -> f64 {
        f.processes
            .iter()
            .filter_map(|p| p.traffic.as_ref())
            .map(|t| t.caused_ipi_hidden_pct)
            .sum()
    };
    assert!(want > 0.0);
    assert!((hidden(&f) - want).abs() < 1e-9, "{} vs {want}", hidden(&f));
    assert_eq!(hidden(&uncalibrated), 0.0, "no calibration, no estimate");
    for (a, b) in uncalibrated.processes.iter().zip(&f.processes) {
        let (Some(a), Some(b)) = (&a.traffic, &b.traffic) else {
            continue;
        };
        assert!(
            (b.caused_pct - a.caused_pct - b.caused_ipi_hidden_pct).abs() < 1e-9,
            "{a:?} / {b:?}"
        );
    }
    let (a, b) = (
        uncalibrated.traffic.expect("traffic"),
        f.traffic.expect("traffic"),
    );
    assert!(
        (a.conservation.caused_pct - b.conservation.caused_pct).abs() < 1e-9,
        "the estimate stays out of the conservation check"
    );
}

#[test]
fn without_the_tracepoints_traffic_is_not_known_not_zero() {
    let (mut p, mut c) = two(|_| Vec::new());
    for s in [&mut p, &mut c] {
        s.traffic.available = false;
        s.traffic.why = "this kernel has no sock_recv_length tracepoint".into();
    }
    let f = compute(&synth::host(2), &p, &c);
    assert!(f.traffic.is_none());
    assert!(f.processes.iter().all(|t| t.traffic.is_none()));
    // Batch text leaves the traffic columns out: a column of n/a says
    // nothing. The frame's JSON has null.
    let text = nettop::output::text::render_frame(&f, &Default::default());
    let header = text.lines().find(|l| l.contains("TOP%")).expect("header");
    assert!(
        !header.contains("CAUSED%") && !header.contains("RXB/s"),
        "{header}"
    );
    assert!(!text.contains("ROBBED BY"), "{text}");
    let json = serde_json::to_value(&f.processes[0]).unwrap();
    assert!(json["traffic"].is_null(), "{json}");
}

#[test]
fn a_cgroup_is_billed_by_its_sockets_and_its_processes_traffic_adds_up() {
    let mut p = synth::sample_with_cgroups(1, 40, 2, 3);
    let mut c = synth::sample_with_cgroups(2, 40, 2, 3);
    let id = c.cgroups[0].id;
    p.traffic.cgroups = vec![RawCgCaused {
        cgroup_id: id,
        ns: 1_000_000,
        pkts: 10,
        ipis_milli: 0,
    }];
    c.traffic.cgroups = vec![RawCgCaused {
        cgroup_id: id,
        ns: 6_000_000,
        pkts: 60,
        ipis_milli: 0,
    }];
    let f = compute(&synth::host(2), &p, &c);
    let row = f.cgroups.iter().find(|g| g.id == id).expect("cgroup row");
    let t = row.traffic.as_ref().expect("traffic counted");
    assert!(
        (t.caused_pct - 0.5).abs() < 1e-9,
        "5 ms of 1 s: {}",
        t.caused_pct
    );
    let rx: f64 = f
        .processes
        .iter()
        .filter(|p| p.cgroup_id == id)
        .filter_map(|p| p.traffic.as_ref())
        .map(|t| t.rx_bytes_per_s)
        .sum();
    assert!((t.rx_bytes_per_s - rx).abs() < 1e-6);
    assert!(rx > 0.0);
}

#[test]
fn each_protocol_has_its_own_rates() {
    let (p, c) = two(|_| Vec::new());
    let f = compute(&synth::host(2), &p, &c);
    // Synth's busy tasks: TCP 2 MB/s and UDP 0.3 MB/s in, per weight.
    let t = f
        .threads
        .iter()
        .chain(&f.processes)
        .filter_map(|t| t.traffic.as_ref())
        .find(|t| !t.protocols.is_empty())
        .expect("a task with traffic");
    let names: Vec<&str> = t.protocols.iter().map(|p| p.protocol.as_str()).collect();
    assert_eq!(names, ["tcp", "udp"], "other has none");
    let rx: f64 = t.protocols.iter().map(|p| p.rx_bytes_per_s).sum();
    assert!((rx - t.rx_bytes_per_s).abs() < 1e-6, "{t:?}");
    assert!(
        (t.protocols[0].rx_bytes_per_s / t.protocols[1].rx_bytes_per_s - 2.0 / 0.3).abs() < 1e-9
    );
}
