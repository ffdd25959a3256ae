//! A real Prometheus scraping `nettop --serve --metrics-exclude
//! node-exporter` stores the series docs/metrics.md counts for this host:
//! every per-CPU family once per online CPU, none of the preset's
//! families, the task and cgroup families bounded by `--rows` and
//! `--top-cgroups`, and in all exactly what Prometheus says it scraped.

use crate::common;
use crate::common::tier::Need;
#[path = "../metrics/formula.rs"]
mod formula;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::run::{Guard, nettop};
use formula::Inputs;

const ROWS: usize = 5;
const TOP_CGROUPS: usize = 3;

/// Online CPUs, from the kernel's list ("0-1", "0,2-5").
fn online_cpus() -> usize {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    list.trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query's result vector, `None` until Prometheus answers
/// with one.
fn query(web: &str, q: &str, time: Option<&str>) -> Option<Vec<serde_json::Value>> {
    let mut path = format!("/api/v1/query?query={}", encode(q));
    if let Some(t) = time {
        path.push_str(&format!("&time={t}"));
    }
    let (200, body) = common::prom::get(web, &path)? else {
        return None;
    };
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"].as_array().cloned()
}

fn value(r: &serde_json::Value) -> &str {
    r["value"][1].as_str().unwrap_or("")
}

/// The formula's inputs: the host's CPUs and BPF from the host itself, the
/// figures that depend on what ran (softirq vectors, devices, tasks,
/// cgroups) from the families that carry them.
fn inputs(n: &BTreeMap<String, usize>, cpus: usize, bpf: bool) -> Inputs {
    let get = |k: &str| n.get(k).copied().unwrap_or(0);
    Inputs {
        units: cpus,
        softirq: get("nettop_cpu_traced_softirq_seconds_total"),
        units_with_packets: get("nettop_cpu_net_rx_per_packet_seconds"),
        bpf,
        hidden: get("nettop_calibration_hidden_seconds") > 0,
        calibration_classes: get("nettop_calibration_hidden_seconds"),
        napi: get("nettop_napi_polls_total"),
        devices: 0,
        devices_per_packet: get("nettop_device_net_rx_per_packet_seconds"),
        devices_per_byte: get("nettop_device_net_rx_per_byte_seconds"),
        xdp: get("nettop_device_xdp_info"),
        queues: get("nettop_device_rx_queue_info"),
        rss: get("nettop_device_rx_queue_rss_weight"),
        flow_rules: get("nettop_device_flow_rule_info"),
        tasks: get("nettop_task_on_cpu_seconds_total"),
        tasks_bpf: get("nettop_task_stolen_seconds_total"),
        tasks_mem: get("nettop_task_resident_bytes"),
        cgroup_rows: n.get("nettop_cgroup_info").copied(),
        cgroup_mem_rows: get("nettop_cgroup_memory_bytes"),
        programs: get("nettop_bpf_program_runs_total"),
        own_bpf: get("nettop_cpu_own_bpf_ratio") > 0,
        host_packets: get("nettop_net_rx_per_packet_seconds") > 0,
        host_bytes: get("nettop_net_rx_per_byte_seconds") > 0,
        host_bytes_unknown: get("nettop_net_rx_per_byte_unknown_info") > 0,
        traffic: false,
        cgroup_pairs: get("nettop_cgroup_robbed_by_cpu_ratio"),
    }
}

/// NUMA nodes with CPUs (1 without NUMA in sysfs, as nettop then folds
/// every CPU into one `unknown` node).
fn numa_nodes() -> usize {
    let Ok(rd) = std::fs::read_dir("/sys/devices/system/node") else {
        return 1;
    };
    let with_cpus = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
        .filter(|e| {
            std::fs::read_to_string(e.path().join("cpulist")).is_ok_and(|l| !l.trim().is_empty())
        })
        .count();
    with_cpus.max(1)
}

/// `nettop --serve` on a free port with the preset and `extra`.
fn serve(extra: &[&str], bpf: bool) -> (Guard, String) {
    let target = common::prom::free_addr();
    let (rows, top) = (ROWS.to_string(), TOP_CGROUPS.to_string());
    let mut cmd = nettop();
    cmd.env("NETTOP_CACHE_DIR", common::cache_dir())
        .args(["--serve", &target, "-d", "0.5", "--rows", &rows])
        .args(["--top-cgroups", &top, "--metrics-exclude", "node-exporter"])
        .args(extra);
    if !bpf {
        cmd.arg("--no-bpf");
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    (Guard(child), target)
}

/// Checks one job's last scrape against the formula, with `units` CPUs
/// or nodes; returns its series count.
fn check(web: &str, job: &str, units: usize, bpf: bool) -> usize {
    // One scrape, seen at its own timestamp: series that left the scrape
    // are stale there, so the count is exactly that scrape's.
    let last = query(
        web,
        &format!("timestamp(scrape_samples_scraped{{job=\"{job}\"}})"),
        None,
    )
    .unwrap();
    let at = value(&last[0]).to_string();
    let q = format!("scrape_samples_scraped{{job=\"{job}\"}}");
    let scraped: usize = value(&query(web, &q, Some(&at)).unwrap()[0])
        .parse()
        .unwrap();
    let q = format!("count by (__name__) ({{job=\"{job}\",__name__=~\"nettop_.*\"}})");
    let per_family: BTreeMap<String, usize> = query(web, &q, Some(&at))
        .unwrap()
        .iter()
        .map(|r| {
            let name = r["metric"]["__name__"].as_str().unwrap().to_string();
            (name, value(r).parse().unwrap())
        })
        .collect();
    let x = inputs(&per_family, units, bpf);
    // What the host and the flags fix, whatever ran.
    assert_eq!(x.tasks, ROWS, "{job}: {per_family:?}");
    assert!(x.tasks_bpf <= x.tasks, "{job}");
    assert!(x.cgroup_rows.is_none_or(|g| g <= TOP_CGROUPS + 1), "{job}");
    assert!(
        x.softirq <= 30 * units && x.units_with_packets <= units,
        "{job}"
    );
    let want: BTreeMap<String, usize> = formula::expected(&x, &formula::NODE_EXPORTER)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(
        per_family, want,
        "{job}: series per family, as Prometheus stored them"
    );
    let total: usize = want.values().sum();
    assert_eq!(
        scraped, total,
        "{job}: Prometheus's own count of the scrape"
    );
    common::report(&format!(
        "{job}: {total} series ({units} units, bpf {bpf}, S {}, P {}, K {}, T {}, T_b {}, G {:?}, \
         I {}, Dp {}, Db {}, X {}, Q {}, W {}, F {}, R {})\n",
        x.softirq,
        x.units_with_packets,
        x.calibration_classes,
        x.tasks,
        x.tasks_bpf,
        x.cgroup_rows,
        x.napi,
        x.devices_per_packet,
        x.devices_per_byte,
        x.xdp,
        x.queues,
        x.rss,
        x.flow_rules,
        x.programs
    ));
    total
}

case!(
    prometheus_stores_the_series_the_formula_counts,
    [Need::Root, Need::Tool("prometheus", "--version")]
);
fn prometheus_stores_the_series_the_formula_counts() {
    const T: &str = "prometheus_stores_the_series_the_formula_counts";
    if !common::tool_runs("prometheus", "--version") {
        common::skip(T, "prometheus not installed");
        return;
    }
    let bpf = common::is_root();
    // Each guard kills its process when dropped: on return and on panic.
    let (_cpu, by_cpu) = serve(&[], bpf);
    let (_node, by_node) = serve(&["--metrics-cpu", "per-node"], bpf);
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n\
         \x20 - job_name: nettop\n    static_configs:\n      - targets: ['{by_cpu}']\n\
         \x20 - job_name: nettop_node\n    static_configs:\n      - targets: ['{by_node}']\n"
    );
    let (_prom, web) = common::prom::start_prometheus(dir.path(), &config);

    // Four good scrapes of each: nettop has had an interval, so the cost
    // and cgroup families are there too.
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "Prometheus did not scrape both nettops 4 times in 120 s"
        );
        std::thread::sleep(Duration::from_millis(500));
        let q = "sum_over_time(up[1m]) >= 4";
        if query(&web, q, None).is_some_and(|r| r.len() == 2) {
            break;
        }
    }
    let (cpus, nodes) = (online_cpus(), numa_nodes());
    let per_cpu = check(&web, "nettop", cpus, bpf);
    let per_node = check(&web, "nettop_node", nodes, bpf);
    common::report(&format!(
        "{T}: {cpus} CPUs, {nodes} node(s): {per_cpu} series per CPU, {per_node} per node, \
         after {:?}\n",
        t0.elapsed()
    ));
}
