//! Tasks rolled up per cgroup: which pod, container or service is being
//! robbed.
//!
//! Built from the frame's own process rows, so a cgroup's STOLEN% is
//! exactly the sum of its processes' (no second arithmetic that could
//! disagree with the task table), plus what the CPU views say about the
//! CPUs its cpuset allows: whether receive work lands where it may run.

use std::collections::{BTreeMap, HashMap};

use super::frame::{CgroupView, CpuView, TaskView};
use crate::sample::{NET_RX, RawCgroup, Source};
use crate::sys::cgroup::Identity;
use crate::sys::cpuset::CpuSet;

/// Receive work of at least this much of one CPU on an allowed CPU counts
/// as "lands on it" (`rx_cpus`): below it, a few stray packets.
pub const RX_LANDS_PCT: f64 = 1.0;

impl CgroupView {
    /// Half the width of TRUE%'s band, points (0 without one).
    pub fn true_band_pct(&self) -> f64 {
        super::half_width(self.true_pct_low, self.true_pct_high)
    }

    fn add(&mut self, t: &TaskView) {
        self.processes = self.processes.saturating_add(1);
        self.threads = self.threads.saturating_add(t.nr_threads.max(1));
        self.top_pct += t.top_pct;
        self.on_cpu_pct += t.on_cpu_pct;
        self.stolen_pct += t.stolen_pct;
        self.net_rx_stolen_pct += t.softirq_stolen_pct[NET_RX];
        self.hidden_pct += t.hidden_pct;
        self.inline_pct += t.inline_pct;
        self.true_pct += t.true_pct;
        self.true_pct_low += t.true_pct_low;
        self.true_pct_high += t.true_pct_high;
    }

    fn add_row(&mut self, o: &CgroupView) {
        self.processes = self.processes.saturating_add(o.processes);
        self.threads = self.threads.saturating_add(o.threads);
        self.top_pct += o.top_pct;
        self.on_cpu_pct += o.on_cpu_pct;
        self.stolen_pct += o.stolen_pct;
        self.net_rx_stolen_pct += o.net_rx_stolen_pct;
        self.hidden_pct += o.hidden_pct;
        self.inline_pct += o.inline_pct;
        self.true_pct += o.true_pct;
        self.true_pct_low += o.true_pct_low;
        self.true_pct_high += o.true_pct_high;
        self.rx_on_cpus_pct += o.rx_on_cpus_pct;
        self.cgroups = self.cgroups.saturating_add(o.cgroups);
        // The known ones: a cgroup no controller counts adds nothing, and
        // a sum of none stays unknown.
        if let Some(m) = o.mem_bytes {
            self.mem_bytes = Some(self.mem_bytes.unwrap_or(0).saturating_add(m));
        }
        if let Some(t) = &o.traffic {
            self.traffic.get_or_insert_with(Default::default).add(t);
        }
    }
}

/// Per-CPU receive work: traced NET_RX with BPF, all softirq without.
fn rx_pct(c: &CpuView, source: Source) -> f64 {
    match source {
        Source::Bpf => c.traced_softirq_pct[NET_RX],
        Source::ProcOnly => c.soft_pct,
    }
}

/// Rolls `processes` up per cgroup, largest STOLEN% first (ties by key).
pub fn rollup(
    processes: &[TaskView],
    table: &[RawCgroup],
    cpus: &[CpuView],
    source: Source,
) -> Vec<CgroupView> {
    if processes.iter().all(|p| p.cgroup_id == 0) {
        return Vec::new();
    }
    let by_id: HashMap<u64, &RawCgroup> = table.iter().map(|c| (c.id, c)).collect();
    let mut acc: BTreeMap<u64, CgroupView> = BTreeMap::new();
    for p in processes {
        acc.entry(p.cgroup_id)
            .or_insert_with(|| new_row(p.cgroup_id, by_id.get(&p.cgroup_id).copied(), cpus, source))
            .add(p);
    }
    let mut out: Vec<CgroupView> = acc.into_values().collect();
    out.sort_by(|a, b| b.stolen_pct.total_cmp(&a.stolen_pct).then(a.id.cmp(&b.id)));
    out
}

fn new_row(id: u64, raw: Option<&RawCgroup>, cpus: &[CpuView], source: Source) -> CgroupView {
    let (path, v1, allowed, mem_bytes) = match raw {
        Some(r) => (r.path.clone(), r.v1, r.cpus.clone(), r.mem_bytes),
        None => (String::new(), false, String::new(), None),
    };
    let identity = Identity::parse(&path).named(raw.and_then(|r| r.pod.as_ref()));
    let name = match (identity.label(), path.is_empty()) {
        (Some(l), _) => l,
        (None, false) => path.clone(),
        (None, true) if id == 0 => "(unknown)".to_string(),
        (None, true) => format!("cgroup#{id}"),
    };
    let set = CpuSet::parse_list(&allowed).ok().filter(|s| !s.is_empty());
    let on = |c: &&CpuView| c.online && set.as_ref().is_none_or(|s| s.contains(c.cpu));
    let rx_on_cpus_pct = cpus.iter().filter(on).map(|c| rx_pct(c, source)).sum();
    let rx_cpus = CpuSet::from_cpus(
        cpus.iter()
            .filter(on)
            .filter(|c| rx_pct(c, source) >= RX_LANDS_PCT)
            .map(|c| c.cpu),
    )
    .to_list();
    CgroupView {
        id,
        path,
        v1,
        name,
        identity,
        cpus: allowed,
        rx_on_cpus_pct,
        rx_cpus,
        cgroups: 1,
        mem_bytes,
        ..Default::default()
    }
}

/// The cardinality bound of per-cgroup metrics: the first `n` rows (the
/// roll-up is sorted by STOLEN%) and one "other" row summing the rest
/// (`None` when nothing is left over).
pub fn top_n(rows: &[CgroupView], n: usize) -> (&[CgroupView], Option<CgroupView>) {
    if rows.len() <= n {
        return (rows, None);
    }
    let (head, rest) = rows.split_at(n);
    let mut other = CgroupView {
        name: "other".into(),
        path: "other".into(),
        cgroups: 0,
        ..Default::default()
    };
    for r in rest {
        other.add_row(r);
    }
    (head, Some(other))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: u32, cg: u64, stolen: f64) -> TaskView {
        let mut t = TaskView {
            pid,
            tid: pid,
            is_process: true,
            nr_threads: 2,
            cgroup_id: cg,
            top_pct: 90.0,
            on_cpu_pct: 90.0,
            stolen_pct: stolen,
            hidden_pct: 1.0,
            true_pct: 89.0 - stolen,
            ..Default::default()
        };
        t.softirq_stolen_pct[NET_RX] = stolen / 2.0;
        t
    }

    fn cpu(n: u32, rx: f64) -> CpuView {
        let mut c = CpuView {
            cpu: n,
            online: true,
            ..Default::default()
        };
        c.traced_softirq_pct[NET_RX] = rx;
        c
    }

    #[test]
    fn rolls_up_by_cgroup_sorted_by_stolen_with_cpuset_receive_work() {
        let table = vec![
            RawCgroup {
                id: 10,
                path: "/system.slice/nginx.service".into(),
                v1: false,
                cpus: "1".into(),
                mem_bytes: Some(300 << 20),
                pod: None,
            },
            RawCgroup {
                id: 11,
                path: "/batch".into(),
                v1: false,
                cpus: "0".into(),
                mem_bytes: None,
                pod: None,
            },
        ];
        let procs = [
            task(1, 11, 0.5),
            task(2, 10, 20.0),
            task(3, 10, 10.0),
            task(4, 99, 0.0),
        ];
        let cpus = [cpu(0, 0.4), cpu(1, 35.0)];
        let r = rollup(&procs, &table, &cpus, Source::Bpf);
        assert_eq!(r.len(), 3);
        let v = &r[0];
        assert_eq!((v.id, v.name.as_str()), (10, "nginx.service"));
        assert_eq!((v.processes, v.threads), (2, 4));
        assert!((v.stolen_pct - 30.0).abs() < 1e-9);
        assert!((v.net_rx_stolen_pct - 15.0).abs() < 1e-9);
        assert!((v.top_pct - 180.0).abs() < 1e-9);
        assert!((v.true_pct - 148.0).abs() < 1e-9);
        assert_eq!((v.cpus.as_str(), v.rx_cpus.as_str()), ("1", "1"));
        // The cgroup's own figure, not a sum of its processes'.
        assert_eq!(v.mem_bytes, Some(300 << 20));
        assert!((v.rx_on_cpus_pct - 35.0).abs() < 1e-9);
        let b = &r[1];
        assert_eq!((b.name.as_str(), b.rx_cpus.as_str()), ("/batch", ""));
        assert_eq!(b.mem_bytes, None);
        let (_, other) = top_n(&r, 1);
        assert_eq!(other.unwrap().mem_bytes, None, "none of the rest is known");
        let (_, other) = top_n(&r[1..], 0);
        assert_eq!(other.unwrap().mem_bytes, None);
        let mut known = r.clone();
        known[2].mem_bytes = Some(5);
        let (_, other) = top_n(&known, 1);
        assert_eq!(other.unwrap().mem_bytes, Some(5), "the known ones summed");
        assert!((b.rx_on_cpus_pct - 0.4).abs() < 1e-9);
        // A key missing from the table: named by its key, all CPUs allowed.
        let u = &r[2];
        assert_eq!((u.name.as_str(), u.path.as_str()), ("cgroup#99", ""));
        assert_eq!(u.rx_cpus, "1");
        // No cgroup information at all: no roll-up.
        let none = [task(1, 0, 1.0)];
        assert!(rollup(&none, &[], &cpus, Source::Bpf).is_empty());
    }

    #[test]
    fn top_n_sums_the_rest_into_other() {
        let procs: Vec<TaskView> = (0..500)
            .map(|i| task(i + 1, u64::from(i) + 1, f64::from(i % 50)))
            .collect();
        let r = rollup(&procs, &[], &[cpu(0, 0.0)], Source::Bpf);
        assert_eq!(r.len(), 500);
        let (head, other) = top_n(&r, 20);
        assert_eq!(head.len(), 20);
        // Ten cgroups at 49 %, then ten at 48 %: the largest first.
        assert!(head[..10].iter().all(|h| h.stolen_pct == 49.0));
        assert!(head[10..].iter().all(|h| h.stolen_pct == 48.0));
        let other = other.unwrap();
        assert_eq!(
            (other.cgroups, other.processes, other.name.as_str()),
            (480, 480, "other")
        );
        let total: f64 = r.iter().map(|x| x.stolen_pct).sum();
        let shown: f64 = head.iter().map(|x| x.stolen_pct).sum::<f64>() + other.stolen_pct;
        assert!((total - shown).abs() < 1e-6);
        let (all, none) = top_n(&r, 500);
        assert_eq!((all.len(), none), (500, None));
    }
}
