//! How many series a big host exports (issue 23): a 256-CPU, 4-node
//! fixture with three NICs, counted family by family against
//! docs/metrics.md's formula under each setting (default, the
//! node-exporter preset, per node, both), and the per-node figures checked
//! against the per-CPU ones they fold.

use crate::common;
#[path = "../metrics/formula.rs"]
mod formula;

use std::collections::{BTreeMap, BTreeSet};

use common::calibration;
use formula::Inputs;
use nettop::metrics::openmetrics::{self, CpuSeries, Family, Options, select};
use nettop::record::synth;
use nettop::sample::calibration::Basis;
use nettop::sample::{HostInfo, RawDevice, RawNapi, RawSample};

const CPUS: u32 = 256;
const NODES: u32 = 4;

fn host() -> HostInfo {
    let mut h = synth::host(CPUS);
    h.cpu_node = (0..CPUS).map(|c| c / (CPUS / NODES)).collect();
    h.calibration = Some(calibration::from_ipi(calibration::measured(
        100, 500.0, 3_000.0, 50.0,
    )));
    h
}

/// Sample `k`: synth's busy host (eth0 with one napi instance per CPU,
/// 500 processes in 80 cgroups) plus eth1 with 8 queues on CPUs 0-7 and a
/// pod's eth0 in its own namespace (no napi: its packets take the backlog).
fn sample(k: u64) -> RawSample {
    let mut s = synth::sample_with_cgroups(k, 2000, CPUS, 80);
    // Packets per CPU that do not follow NET_RX time, so each CPU's cost
    // per packet differs and a node's weighted cost is not the mean.
    for c in &mut s.cpus {
        if let Some(n) = &mut c.net {
            n.napi_work = k * 1_000 * (1 + u64::from(c.cpu % 5) * 40);
        }
    }
    s.devices.push(RawDevice {
        name: "eth1".into(),
        ifindex: 3,
        rx_packets: k * 30_000,
        rx_bytes: k * 40_000_000,
        tx_packets: k * 10_000,
        tx_bytes: k * 1_000_000,
        ..Default::default()
    });
    s.devices.push(RawDevice {
        name: "eth0".into(),
        ifindex: 2,
        netns: "pod1".into(),
        netns_inode: 4_026_532_000,
        rx_packets: k * 1_000,
        rx_bytes: k * 1_000_000,
        ..Default::default()
    });
    for q in 0..8 {
        s.napi.push(RawNapi {
            dev: "eth1".into(),
            napi_id: 9000 + q,
            cpu: q,
            polls: k * 100,
            work: k * 5_000,
            budget: 64,
            ..Default::default()
        });
    }
    s
}

/// The formula's symbols, counted in the raw samples (not in the
/// exporter's output), per CPU or per node.
fn inputs(host: &HostInfo, prev: &RawSample, cur: &RawSample, per_node: bool) -> Inputs {
    let unit = |cpu: u32| {
        if per_node {
            host.cpu_node[cpu as usize]
        } else {
            cpu
        }
    };
    let units: BTreeSet<u32> = cur.cpus.iter().map(|c| unit(c.cpu)).collect();
    let mut softirq = BTreeSet::new();
    for c in &cur.cpus {
        let a = c.irq.as_ref().unwrap();
        for (ctx, row) in a.softirq_ns.iter().enumerate() {
            for (vec, ns) in row.iter().enumerate() {
                if *ns > 0 {
                    softirq.insert((unit(c.cpu), ctx, vec));
                }
            }
        }
    }
    let with_packets: BTreeSet<u32> = cur
        .cpus
        .iter()
        .zip(&prev.cpus)
        .filter(|(c, p)| c.net.as_ref().unwrap().napi_work > p.net.as_ref().unwrap().napi_work)
        .map(|(c, _)| unit(c.cpu))
        .collect();
    let napi: BTreeSet<(&str, u32)> = cur
        .napi
        .iter()
        .map(|n| (n.dev.as_str(), n.napi_id))
        .collect();
    // Devices of nettop's namespace whose napi instances polled packets;
    // all of them here receive well over 1 kbit/s.
    let polled: BTreeSet<&str> = cur
        .napi
        .iter()
        .filter(|n| n.work > 0)
        .map(|n| n.dev.as_str())
        .collect();
    let costed = cur
        .devices
        .iter()
        .filter(|d| d.netns.is_empty() && polled.contains(d.name.as_str()))
        .count();
    let cal = host.calibration.as_ref().unwrap();
    let classes = cal
        .rows()
        .iter()
        .filter(|(_, k)| k.basis != Basis::NotMeasured)
        .count();
    let with_irq = cur.procs.iter().filter(|p| p.irq.is_some()).count();
    let tasks = cur.procs.len().min(20);
    assert!(with_irq >= tasks, "the top rows are the BPF-accounted ones");
    // Which rows are the top ones is the exporter's ranking; whether each
    // has an address space is the sample's.
    let fams = openmetrics::families(host, Some(prev), cur, &Options::default());
    let top: BTreeSet<u32> = fams
        .iter()
        .find(|f| f.name == "nettop_task_on_cpu_seconds")
        .map(|f| {
            f.samples
                .iter()
                .filter_map(|(l, _)| label(l, "pid")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(top.len(), tasks);
    let tasks_mem = cur
        .procs
        .iter()
        .filter(|p| top.contains(&p.tgid) && p.mem.is_some())
        .count();
    assert!(
        tasks_mem > 0 && tasks_mem < tasks,
        "kernel threads among the top: {tasks_mem}"
    );
    let cgroups = cur.cgroups.len();
    let frame = nettop::model::compute(host, prev, cur);
    let (head, other) = nettop::model::cgroups::top_n(&frame.cgroups, 50);
    let cgroup_mem_rows = head
        .iter()
        .chain(other.as_ref())
        .filter(|c| c.mem_bytes.is_some())
        .count();
    assert!(
        cgroup_mem_rows > 0 && cgroup_mem_rows < cgroups,
        "{cgroup_mem_rows}"
    );
    Inputs {
        units: units.len(),
        softirq: softirq.len(),
        units_with_packets: with_packets.len(),
        bpf: true,
        hidden: true,
        calibration_classes: classes,
        napi: napi.len(),
        devices: cur.devices.len().min(64),
        devices_per_packet: costed,
        devices_per_byte: costed,
        tasks,
        tasks_bpf: tasks,
        tasks_mem,
        cgroup_rows: Some(cgroups.min(50) + usize::from(cgroups > 50)),
        cgroup_mem_rows,
        programs: cur.health.as_ref().unwrap().programs.len(),
        host_packets: true,
        host_bytes: true,
        traffic: cur.traffic.available,
        cgroup_pairs: nettop::model::compute(host, prev, cur)
            .traffic
            .map_or(0, |t| {
                t.cgroup_pairs
                    .iter()
                    .filter(|p| p.victim_cgroup != p.beneficiary_cgroup)
                    .count()
                    .min(50)
            }),
        ..Default::default()
    }
}

fn counts(fams: &[Family]) -> BTreeMap<String, usize> {
    fams.iter()
        .filter(|f| !f.samples.is_empty())
        .map(|f| (f.sample_name(), f.samples.len()))
        .collect()
}

fn options(exclude: bool, per_node: bool) -> Options {
    let mut o = Options::default();
    if exclude {
        o.exclude = select::resolve("node-exporter")
            .unwrap()
            .into_iter()
            .collect();
    }
    if per_node {
        o.cpu_series = CpuSeries::PerNode;
    }
    o
}

#[test]
fn a_256_cpu_host_exports_what_the_formula_says_under_each_setting() {
    let host = host();
    let (prev, cur) = (sample(1), sample(2));
    let mut report = String::new();
    for (exclude, per_node, what) in [
        (false, false, "default"),
        (true, false, "--metrics-exclude node-exporter"),
        (false, true, "--metrics-cpu per-node"),
        (true, true, "both"),
    ] {
        let x = inputs(&host, &prev, &cur, per_node);
        let excluded: &[&str] = if exclude {
            &formula::NODE_EXPORTER
        } else {
            &[]
        };
        let want: BTreeMap<String, usize> = formula::expected(&x, excluded)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let fams = openmetrics::families(&host, Some(&prev), &cur, &options(exclude, per_node));
        let got = counts(&fams);
        assert_eq!(got, want, "{what}: series per family");
        let total: usize = got.values().sum();
        assert_eq!(total, formula::closed_form(&x, exclude), "{what}: {x:?}");
        // The rendered scrape has one line per series, as Prometheus
        // counts them.
        let text = openmetrics::render(&fams, openmetrics::Flavor::Prometheus);
        let lines = text.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(lines, total, "{what}: rendered lines");
        report.push_str(&format!(
            "{what}: {total} series (T_m {}, G_m {})\n",
            x.tasks_mem, x.cgroup_mem_rows
        ));
    }
    common::report(&format!(
        "metrics_series ({CPUS} CPUs, {NODES} nodes):\n{report}"
    ));
}

type Labels = Vec<(&'static str, String)>;

/// The labels without `cpu`/`node`.
fn rest(l: &[(&'static str, String)]) -> Labels {
    l.iter()
        .filter(|(k, _)| *k != "cpu" && *k != "node")
        .cloned()
        .collect()
}

fn label<'a>(l: &'a [(&'static str, String)], key: &str) -> Option<&'a str> {
    l.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
}

#[test]
fn per_node_series_are_their_cpus_folded() {
    let host = host();
    let (prev, cur) = (sample(1), sample(2));
    let by_cpu = openmetrics::families(&host, Some(&prev), &cur, &options(false, false));
    let by_node = openmetrics::families(&host, Some(&prev), &cur, &options(false, true));
    let mut folded = 0;
    for f in &by_cpu {
        let Some(n) = by_node.iter().find(|n| n.name == f.name) else {
            panic!("{} missing per node", f.name);
        };
        if !f.samples.iter().any(|(l, _)| label(l, "cpu").is_some()) {
            assert_eq!(f.samples, n.samples, "{} is not per CPU", f.name);
            continue;
        }
        folded += 1;
        // What each node's series should be, from the per-CPU series.
        let mut want: BTreeMap<(String, Labels), Vec<f64>> = BTreeMap::new();
        for (l, v) in &f.samples {
            let cpu: usize = label(l, "cpu").unwrap().parse().unwrap();
            let node = host.cpu_node[cpu].to_string();
            want.entry((node, rest(l))).or_default().push(*v);
        }
        assert_eq!(n.samples.len(), want.len(), "{}", f.name);
        for (l, v) in &n.samples {
            assert!(label(l, "cpu").is_none(), "{}: {l:?}", f.name);
            let node = label(l, "node").unwrap().to_string();
            let vals = &want[&(node, rest(l))];
            let expect = match f.name {
                "nettop_cpu_net_rx_max_seconds" => vals.iter().copied().fold(0.0, f64::max),
                // The node's NET_RX time over its packets, from the raw
                // counters: not the mean of the CPUs' ratios.
                "nettop_cpu_net_rx_per_packet_seconds" => {
                    let node: u32 = label(l, "node").unwrap().parse().unwrap();
                    let (mut ns, mut pk) = (0u64, 0u64);
                    for (c, p) in cur.cpus.iter().zip(&prev.cpus) {
                        if host.cpu_node[c.cpu as usize] == node {
                            let (cn, pn) = (c.net.as_ref().unwrap(), p.net.as_ref().unwrap());
                            ns += cn.net_rx_ns - pn.net_rx_ns;
                            pk += cn.napi_work - pn.napi_work;
                        }
                    }
                    ns as f64 / pk as f64 / 1e9
                }
                _ => vals.iter().sum(),
            };
            let tol = 1e-9 * expect.abs().max(1e-12);
            assert!(
                (v - expect).abs() <= tol,
                "{} {l:?}: {v} per node, {expect} from its CPUs",
                f.name
            );
        }
    }
    assert_eq!(folded, 21, "per-CPU families");
    let nodes: BTreeSet<&str> = by_node
        .iter()
        .flat_map(|f| &f.samples)
        .filter_map(|(l, _)| label(l, "node"))
        .collect();
    assert_eq!(nodes, BTreeSet::from(["0", "1", "2", "3"]));
    // The fixture tells a weighted cost from the plain mean of the CPUs'
    // costs, so the check above would catch an average.
    let per_cpu = by_cpu
        .iter()
        .find(|f| f.name == "nettop_cpu_net_rx_per_packet_seconds")
        .unwrap();
    let mean = per_cpu.samples.iter().take(64).map(|s| s.1).sum::<f64>() / 64.0;
    let node0 = by_node
        .iter()
        .find(|f| f.name == "nettop_cpu_net_rx_per_packet_seconds")
        .unwrap()
        .samples[0]
        .1;
    assert!((mean - node0).abs() > 0.1 * node0, "{mean} vs {node0}");
    let online = by_node
        .iter()
        .find(|f| f.name == "nettop_cpu_online")
        .unwrap();
    assert!(online.samples.iter().all(|(_, v)| *v == 64.0));
}

/// With `--bpf-stats` (the programs' per-CPU runs in the sample) each CPU
/// gets one more series, nettop's own BPF cost (O·C in the doc's formula),
/// and per node it is the node's CPUs summed. The fixture above runs
/// without per-CPU runs, as the doc's table counts it.
#[test]
fn own_bpf_cost_is_one_series_per_cpu_summed_per_node() {
    let host = host();
    let with_runs = |k: u64| {
        let mut s = sample(k);
        for p in &mut s.health.as_mut().unwrap().programs {
            p.cpu_runs = (0..u64::from(CPUS)).map(|c| k * (1 + c % 3)).collect();
        }
        s
    };
    let (prev, cur) = (with_runs(1), with_runs(2));
    for (per_node, units) in [(false, CPUS as usize), (true, NODES as usize)] {
        let x = inputs(&host, &prev, &cur, per_node);
        let x = formula::Inputs { own_bpf: true, ..x };
        let fams = openmetrics::families(&host, Some(&prev), &cur, &options(false, per_node));
        let got = counts(&fams);
        assert_eq!(got.get("nettop_cpu_own_bpf_ratio"), Some(&units));
        let want: BTreeMap<String, usize> = formula::expected(&x, &[])
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(got, want, "per node {per_node}");
        assert_eq!(got.values().sum::<usize>(), formula::closed_form(&x, false));
    }
    let own = |per_node: bool| -> Vec<f64> {
        openmetrics::families(&host, Some(&prev), &cur, &options(false, per_node))
            .into_iter()
            .find(|f| f.name == "nettop_cpu_own_bpf_ratio")
            .unwrap()
            .samples
            .iter()
            .map(|s| s.1)
            .collect()
    };
    let (by_cpu, by_node) = (own(false), own(true));
    assert!(by_cpu.iter().all(|v| *v > 0.0), "{by_cpu:?}");
    for (n, v) in by_node.iter().enumerate() {
        let sum: f64 = by_cpu.iter().skip(n * 64).take(64).sum();
        assert!((v - sum).abs() <= 1e-12, "node {n}: {v} vs {sum}");
    }
}

#[test]
fn excluded_families_are_neither_rendered_nor_listed() {
    let host = host();
    let (prev, cur) = (sample(1), sample(2));
    let mut o = options(true, false);
    o.exclude.extend(
        [
            "nettop_cgroup_info",
            "nettop_napi_polls_total",
            "nettop_tasks",
        ]
        .into_iter()
        .flat_map(|n| select::resolve(n).unwrap()),
    );
    let fams = openmetrics::families(&host, Some(&prev), &cur, &o);
    let names: BTreeSet<String> = fams.iter().map(|f| f.sample_name()).collect();
    for gone in formula::NODE_EXPORTER.iter().chain(&[
        "nettop_cgroup_info",
        "nettop_napi_polls_total",
        "nettop_tasks",
    ]) {
        assert!(!names.contains(*gone), "{gone} still exported");
    }
    assert!(names.contains("nettop_cgroup_processes"));
    assert!(names.contains("nettop_napi_packets_total"));
    // Every family the exporter knows is a valid name, and only those.
    let all: Vec<&str> = openmetrics::families(&host, Some(&prev), &cur, &Options::default())
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(select::names(), all);
    assert!(select::resolve("nettop_cpu_interrupts_total").is_err());
}
