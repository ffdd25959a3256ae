//! `nettop_cgroup_*`: the model's per-cgroup roll-up as metrics.
//!
//! PIDs come and go and per-PID series churn; a pod or a service keeps its
//! name. These are gauges over the last interval (fractions of one CPU,
//! the model's percentages / 100), not counters: a cgroup's processes
//! change, so a sum of their cumulative counters would go backwards.
//!
//! Cardinality is bounded: the `top` cgroups with the most STOLEN% get
//! their own series, and everything else is summed into one
//! `cgroup="other"` series, so a host with thousands of pods exports at
//! most `top + 1` series per family.

use super::super::{Family, Kind};
use crate::model::cgroups::top_n;
use crate::model::compute;
use crate::model::frame::CgroupView;
use crate::sample::{HostInfo, RawSample};

/// The ratio families: name, help, value.
type Ratio = (&'static str, &'static str, fn(&CgroupView) -> f64);

const RATIOS: [Ratio; 8] = [
    (
        "nettop_cgroup_top_cpu_ratio",
        "CPU as top sees it, summed over the cgroup's processes (1 = one CPU), last interval",
        |c| c.top_pct,
    ),
    (
        "nettop_cgroup_on_cpu_ratio",
        "Scheduler on-CPU time of the cgroup's processes (1 = one CPU), last interval",
        |c| c.on_cpu_pct,
    ),
    (
        "nettop_cgroup_stolen_cpu_ratio",
        "Interrupt work run in the cgroup's tasks' context for others (1 = one CPU), last interval",
        |c| c.stolen_pct,
    ),
    (
        "nettop_cgroup_net_rx_stolen_cpu_ratio",
        "Of the stolen time: NET_RX softirq (1 = one CPU), last interval",
        |c| c.net_rx_stolen_pct,
    ),
    (
        "nettop_cgroup_hidden_cpu_ratio",
        "Estimated untraced cost of the cgroup's interruptions (calibrated; 1 = one CPU), last interval",
        |c| c.hidden_pct,
    ),
    (
        "nettop_cgroup_inline_cpu_ratio",
        "Softirq the cgroup's tasks raised and ran themselves (1 = one CPU), last interval",
        |c| c.inline_pct,
    ),
    (
        "nettop_cgroup_true_cpu_ratio",
        "CPU the cgroup's tasks really got for their own work (1 = one CPU), last interval",
        |c| c.true_pct,
    ),
    (
        "nettop_cgroup_rx_on_allowed_cpus_ratio",
        "Receive (NET_RX) work on the CPUs the cgroup's cpuset allows (1 = one CPU), last interval",
        |c| c.rx_on_cpus_pct,
    ),
];

/// The family names [`families`] builds, for `--metrics-exclude`.
pub(super) const NAMES: [&str; RATIOS.len() + 6] = [
    COUNT,
    INFO,
    PROCESSES,
    MEMORY,
    CAUSED,
    ROBBED,
    RATIOS[0].0,
    RATIOS[1].0,
    RATIOS[2].0,
    RATIOS[3].0,
    RATIOS[4].0,
    RATIOS[5].0,
    RATIOS[6].0,
    RATIOS[7].0,
];
const COUNT: &str = "nettop_cgroups";
const INFO: &str = "nettop_cgroup";
const PROCESSES: &str = "nettop_cgroup_processes";
const MEMORY: &str = "nettop_cgroup_memory_bytes";
const CAUSED: &str = "nettop_cgroup_caused_cpu_ratio";
const ROBBED: &str = "nettop_cgroup_robbed_by_cpu_ratio";

/// The series' identity: the path, and the Kubernetes names beside the
/// ids when the node named them (empty, i.e. absent to Prometheus,
/// otherwise). Named `namespace`, `pod` and `container` as Kubernetes'
/// own metrics are, so queries join them; a PodMonitor scraping nettop
/// must then honour them (`honorLabels`), or Prometheus renames them to
/// `exported_*` in favour of nettop's own pod's.
fn labels(c: &CgroupView) -> Vec<(&'static str, String)> {
    let id = &c.identity;
    let get = |v: &Option<String>| v.clone().unwrap_or_default();
    vec![
        ("cgroup", c.path.clone()),
        ("pod_uid", get(&id.pod_uid)),
        ("container_id", get(&id.container_id)),
        ("namespace", get(&id.namespace)),
        ("pod", get(&id.pod)),
        ("container", get(&id.container)),
    ]
}

/// The cgroup families of the interval `prev` → `cur` (none without a
/// previous sample or without cgroups), at most `top` + 1 series each.
pub fn families(
    host: &HostInfo,
    prev: Option<&RawSample>,
    cur: &RawSample,
    top: usize,
) -> Vec<Family> {
    let Some(prev) = prev else {
        return Vec::new();
    };
    if cur.cgroups.is_empty() {
        return Vec::new();
    }
    let frame = compute(host, prev, cur);
    let (head, other) = top_n(&frame.cgroups, top);
    let rows: Vec<&CgroupView> = head.iter().chain(other.as_ref()).collect();

    let mut count = Family::new(
        COUNT,
        Kind::Gauge,
        None,
        "cgroups with tasks in the sample (those beyond --top-cgroups are summed into cgroup=\"other\")",
    );
    count.push(vec![], frame.cgroups.len() as f64);
    let mut info = Family::new(
        INFO,
        Kind::Info,
        None,
        "What the cgroup path names: Kubernetes QoS class, runtime, systemd unit, allowed CPUs",
    );
    let mut procs = Family::new(PROCESSES, Kind::Gauge, None, "Processes in the cgroup");
    let mut memory = Family::new(
        MEMORY,
        Kind::Gauge,
        Some("bytes"),
        "Memory charged to the cgroup (memory.current; v1 memory.usage_in_bytes); no series where no memory controller counts it",
    );
    let mut out = Vec::with_capacity(RATIOS.len() + 4);
    for c in &rows {
        let mut l = labels(c);
        let id = &c.identity;
        l.extend([
            (
                "qos",
                id.qos.map(|q| q.as_str().to_string()).unwrap_or_default(),
            ),
            ("runtime", id.runtime.clone().unwrap_or_default()),
            ("unit", id.unit.clone().unwrap_or_default()),
            ("cpus", c.cpus.clone()),
        ]);
        info.push(l, 1.0);
        procs.push(labels(c), f64::from(c.processes));
        if let Some(m) = c.mem_bytes {
            memory.push(labels(c), m as f64);
        }
    }
    out.extend([count, info, procs, memory]);
    if frame.traffic.is_some() {
        out.extend(traffic_families(&frame, &rows, top));
    }
    for (name, help, get) in RATIOS {
        let mut f = Family::new(name, Kind::Gauge, Some("ratio"), help);
        for c in &rows {
            f.push(labels(c), get(c) / 100.0);
        }
        out.push(f);
    }
    out
}

/// Who pays for whose receive processing, by cgroup: each exported
/// cgroup's CAUSED (by its sockets' cgroup), and the largest victim x
/// beneficiary pairs, at most `top` of them.
fn traffic_families(
    frame: &crate::model::frame::Frame,
    rows: &[&CgroupView],
    top: usize,
) -> Vec<Family> {
    let mut caused = Family::new(
        CAUSED,
        Kind::Gauge,
        Some("ratio"),
        "NET_RX time spent delivering to the cgroup's sockets, on any CPU and in any task's context (1 = one CPU), last interval",
    );
    for c in rows {
        if let Some(t) = &c.traffic {
            caused.push(labels(c), t.caused_pct / 100.0);
        }
    }
    let mut robbed = Family::new(
        ROBBED,
        Kind::Gauge,
        Some("ratio"),
        "NET_RX time run in the victim cgroup's tasks' context delivering to another (beneficiary) cgroup's sockets (1 = one CPU), last interval; the largest --top-cgroups pairs",
    );
    let by_id: std::collections::HashMap<u64, &CgroupView> =
        frame.cgroups.iter().map(|c| (c.id, c)).collect();
    let side = |prefix: &'static str, id: u64, name: &str| -> Vec<(&'static str, String)> {
        let c = by_id.get(&id);
        let get = |f: fn(&CgroupView) -> Option<String>| c.and_then(|c| f(c)).unwrap_or_default();
        let path = c.map_or_else(|| name.to_string(), |c| c.path.clone());
        match prefix {
            "victim" => vec![
                ("victim_cgroup", path),
                ("victim_pod_uid", get(|c| c.identity.pod_uid.clone())),
                ("victim_namespace", get(|c| c.identity.namespace.clone())),
                ("victim_pod", get(|c| c.identity.pod.clone())),
            ],
            _ => vec![
                ("beneficiary_cgroup", path),
                ("beneficiary_pod_uid", get(|c| c.identity.pod_uid.clone())),
                (
                    "beneficiary_namespace",
                    get(|c| c.identity.namespace.clone()),
                ),
                ("beneficiary_pod", get(|c| c.identity.pod.clone())),
            ],
        }
    };
    if let Some(t) = &frame.traffic {
        // Two different cgroups: a pod robbed by its own traffic pays its
        // own bill (its CAUSED).
        for p in t
            .cgroup_pairs
            .iter()
            .filter(|p| p.victim_cgroup != p.beneficiary_cgroup)
            .take(top)
        {
            let mut l = side("victim", p.victim_cgroup, &p.victim_name);
            l.extend(side(
                "beneficiary",
                p.beneficiary_cgroup,
                &p.beneficiary_name,
            ));
            robbed.push(l, p.pct / 100.0);
        }
    }
    vec![caused, robbed]
}
