//! The lint rules. Each rule looks at the topology only (plus optional
//! evidence) and says what is wrong, why it costs, and a command that fixes
//! it.

use std::collections::BTreeMap;

use super::{Evidence, Finding, Severity, ThreadRef};
use crate::cpuset::CpuSet;
use crate::topology::{HostTopology, Nic, ThreadInfo};

/// (ID, name, default severity, what it catches). IDs are stable.
pub const RULES: &[(&str, &str, Severity, &str)] = &[
    (
        "NT001",
        "thread-remote-nic-node",
        Severity::Warning,
        "pinned thread uses a NIC attached to another NUMA node",
    ),
    (
        "NT002",
        "irq-on-pinned-cpu",
        Severity::Warning,
        "a NIC queue IRQ lands on a pinned thread's CPU",
    ),
    (
        "NT003",
        "rps-on-pinned-cpu",
        Severity::Warning,
        "RPS steers receive work onto a pinned thread's CPU",
    ),
    (
        "NT004",
        "interrupts-on-smt-sibling",
        Severity::Warning,
        "the SMT sibling of a pinned thread's CPU takes NIC IRQs or RPS work",
    ),
    (
        "NT005",
        "dataplane-on-cpu0",
        Severity::Warning,
        "busy pinned thread on CPU 0, the housekeeping CPU",
    ),
    (
        "NT006",
        "affinity-outside-cpuset",
        Severity::Error,
        "affinity names CPUs outside the cgroup cpuset (host CPU indexes in a container)",
    ),
    (
        "NT007",
        "irq-on-isolated-cpu",
        Severity::Warning,
        "a device IRQ lands on an isolcpus/nohz_full CPU",
    ),
    (
        "NT008",
        "irqaffinity-includes-isolated",
        Severity::Warning,
        "irqaffinity= boot parameter includes isolated CPUs",
    ),
    (
        "NT009",
        "isolated-cpus-unprotected",
        Severity::Info,
        "isolated CPUs but nothing keeps new device IRQs off them",
    ),
    (
        "NT010",
        "nic-irq-remote-node",
        Severity::Warning,
        "a NIC's queue IRQs run on another NUMA node",
    ),
    (
        "NT011",
        "busy-threads-share-cpu",
        Severity::Warning,
        "several busy threads pinned to the same CPU",
    ),
    (
        "NT012",
        "busy-threads-smt-siblings",
        Severity::Warning,
        "busy pinned threads on the two hyperthreads of one core",
    ),
    (
        "NT013",
        "rps-on-isolated-cpu",
        Severity::Warning,
        "RPS steers receive work onto isolated CPUs",
    ),
    (
        "NT014",
        "rps-on-cpu0",
        Severity::Info,
        "RPS steers receive work onto CPU 0",
    ),
    (
        "NT015",
        "steering-off-node",
        Severity::Info,
        "RPS/XPS masks name CPUs on another NUMA node than the NIC",
    ),
    (
        "NT016",
        "memory-remote-node",
        Severity::Warning,
        "pinned thread's memory lives mostly on another NUMA node",
    ),
    (
        "NT017",
        "irqbalance-ban-misses-isolated",
        Severity::Warning,
        "irqbalance's banned CPUs replace its isolcpus default and miss isolated CPUs",
    ),
    (
        "NT018",
        "pinned-across-nodes",
        Severity::Info,
        "thread pinned to a CPU set that spans NUMA nodes",
    ),
];

/// Stolen share at which an interrupt-sharing finding becomes an error.
const STOLEN_ERROR_PCT: f64 = 10.0;
/// Measured CPU use above which a pinned thread counts as busy.
const BUSY_PCT: f64 = 20.0;
/// "Narrow" pinning, the data-plane pattern: one CPU or one core's pair.
const NARROW: usize = 2;
/// Below this a process's memory placement is noise.
const MEM_MIN_KIB: u64 = 4096;

fn rule(id: &str) -> (&'static str, Severity) {
    RULES
        .iter()
        .find(|r| r.0 == id)
        .map(|r| (r.1, r.2))
        .unwrap_or(("unknown", Severity::Info))
}

fn finding(id: &str, summary: String, why: &str) -> Finding {
    let (name, severity) = rule(id);
    Finding {
        rule: id.to_string(),
        name: name.to_string(),
        severity,
        summary,
        threads: Vec::new(),
        irqs: Vec::new(),
        cpus: CpuSet::new(),
        nics: Vec::new(),
        why: why.to_string(),
        fix: Vec::new(),
        evidence: Vec::new(),
    }
}

fn tref(t: &ThreadInfo, ev: &Evidence) -> ThreadRef {
    ThreadRef {
        pid: t.pid,
        tid: t.tid,
        comm: t.comm.clone(),
        affinity: t.affinity.clone(),
        cpu_pct: t.cpu_pct,
        stolen_pct: ev.stolen_pct.get(&t.tid).copied(),
        workload: t.workload.clone(),
    }
}

fn hexmask(s: &CpuSet) -> String {
    let Some(max) = s.iter().last() else {
        return "0".into();
    };
    let words = (max / 32 + 1) as usize;
    let mut w = vec![0u32; words];
    for c in s.iter() {
        w[(c / 32) as usize] |= 1 << (c % 32);
    }
    w.iter()
        .rev()
        .map(|x| format!("{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

struct Ctx<'a> {
    t: &'a HostTopology,
    ev: &'a Evidence,
    isolated: CpuSet,
    multi_node: bool,
    /// Where NIC queue IRQs land, per CPU: (irq, nic).
    irq_on: BTreeMap<u32, Vec<(u32, String)>>,
    /// RPS targets per CPU: (nic, queue).
    rps_on: BTreeMap<u32, Vec<(String, u32)>>,
    /// CPUs of narrowly pinned user threads.
    pinned_cpus: CpuSet,
}

impl<'a> Ctx<'a> {
    fn new(t: &'a HostTopology, ev: &'a Evidence) -> Self {
        let mut irq_on: BTreeMap<u32, Vec<(u32, String)>> = BTreeMap::new();
        let mut rps_on: BTreeMap<u32, Vec<(String, u32)>> = BTreeMap::new();
        for nic in &t.nics {
            for irq in nic.irqs.iter().filter_map(|i| t.irq(*i)) {
                let lands = irq.lands_on();
                // An IRQ allowed everywhere with no effective affinity reported
                // does not single out any CPU.
                if lands.is_empty() || (irq.effective.is_none() && t.online.is_subset(&lands)) {
                    continue;
                }
                for c in lands.iter() {
                    irq_on
                        .entry(c)
                        .or_default()
                        .push((irq.irq, nic.name.clone()));
                }
            }
            for q in &nic.rx_queues {
                for c in q.rps_cpus.iter() {
                    rps_on
                        .entry(c)
                        .or_default()
                        .push((nic.name.clone(), q.queue));
                }
            }
        }
        let pinned_cpus = t
            .threads
            .iter()
            .filter(|th| th.is_pinned(&t.online) && th.affinity.len() <= NARROW)
            .fold(CpuSet::new(), |a, th| a.union(&th.affinity));
        Ctx {
            t,
            ev,
            isolated: t.host.isolated(),
            multi_node: t.numa_nodes.len() > 1,
            irq_on,
            rps_on,
            pinned_cpus,
        }
    }

    fn pinned(&self) -> impl Iterator<Item = &'a ThreadInfo> + '_ {
        self.t
            .threads
            .iter()
            .filter(|th| th.is_pinned(&self.t.online))
    }

    fn narrow(&self) -> impl Iterator<Item = &'a ThreadInfo> + '_ {
        self.pinned().filter(|th| th.affinity.len() <= NARROW)
    }

    fn stolen(&self, th: &ThreadInfo) -> Option<f64> {
        self.ev.stolen_pct.get(&th.tid).copied()
    }

    /// Busy: measured (stolen or CPU) when possible, else narrow pinning is
    /// the only evidence and is taken at face value.
    fn busy(&self, th: &ThreadInfo) -> (bool, String) {
        if let Some(s) = self.stolen(th)
            && s >= 1.0
        {
            return (
                true,
                format!(
                    "{} ({}) loses {s:.0}% of its CPU to interrupt work",
                    th.tid, th.comm
                ),
            );
        }
        match th.cpu_pct {
            Some(p) => (
                p >= BUSY_PCT,
                format!("{} ({}) used {p:.0}% CPU during the check", th.tid, th.comm),
            ),
            None => (
                th.affinity.len() <= NARROW,
                format!(
                    "{} ({}) pinned to {} (no CPU measurement: narrow pinning taken as data-plane)",
                    th.tid, th.comm, th.affinity
                ),
            ),
        }
    }

    fn node_cpus_or_online(&self, node: Option<u32>) -> CpuSet {
        node.and_then(|n| self.t.node_cpus(n).cloned())
            .unwrap_or_else(|| self.t.online.clone())
            .intersection(&self.t.online)
    }

    /// CPUs that can take interrupts: not isolated, not a data-plane CPU.
    fn housekeeping(&self, node: Option<u32>) -> CpuSet {
        let base = self.node_cpus_or_online(node);
        let hk = base
            .difference(&self.isolated)
            .difference(&self.pinned_cpus);
        if !hk.is_empty() {
            return hk;
        }
        let hk = self
            .t
            .online
            .difference(&self.isolated)
            .difference(&self.pinned_cpus);
        if !hk.is_empty() {
            return hk;
        }
        self.t.online.difference(&self.pinned_cpus)
    }

    /// CPUs good for a data-plane thread on `node`: quiet (no NIC IRQ, RPS
    /// or their siblings), not CPU 0, not already a pinned thread's, inside
    /// `allowed`; isolated ones first when there are any.
    fn quiet_all(&self, node: Option<u32>, allowed: Option<&CpuSet>) -> CpuSet {
        let noisy: CpuSet =
            CpuSet::from_cpus(self.irq_on.keys().chain(self.rps_on.keys()).copied());
        let noisy = noisy.union(&self.t.siblings_of(&noisy));
        let mut base = self
            .node_cpus_or_online(node)
            .difference(&noisy)
            .difference(&self.pinned_cpus)
            .difference(&CpuSet::from_cpus([0]));
        if let Some(a) = allowed {
            base = base.intersection(a);
        }
        let iso = base.intersection(&self.isolated);
        if iso.is_empty() { base } else { iso }
    }

    fn quiet(&self, node: Option<u32>, allowed: Option<&CpuSet>, n: usize) -> Option<CpuSet> {
        let pick = self.quiet_all(node, allowed);
        (pick.len() >= n && n > 0).then(|| CpuSet::from_cpus(pick.iter().take(n)))
    }

    fn move_thread_fix(&self, th: &ThreadInfo, node: Option<u32>) -> Option<String> {
        let to = self.quiet(node, th.cpuset.as_ref(), th.affinity.len())?;
        Some(format!("taskset -pc {} {}", to, th.tid))
    }
}

/// Merges per-thread findings that say the same thing about the same
/// objects, so 64 worker threads with one mistake make one finding.
fn merge(fs: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for f in fs {
        if let Some(g) = out.iter_mut().find(|g| {
            g.rule == f.rule
                && g.severity == f.severity
                && g.summary == f.summary
                && g.cpus == f.cpus
                && g.irqs == f.irqs
                && g.nics == f.nics
        }) {
            g.threads.extend(f.threads);
            for c in f.fix {
                if !g.fix.contains(&c) {
                    g.fix.push(c);
                }
            }
            for e in f.evidence {
                if !g.evidence.contains(&e) {
                    g.evidence.push(e);
                }
            }
        } else {
            out.push(f);
        }
    }
    out
}

pub(super) fn run(t: &HostTopology, ev: &Evidence) -> Vec<Finding> {
    let cx = Ctx::new(t, ev);
    let mut per_thread = Vec::new();
    nt001_remote_nic(&cx, &mut per_thread);
    nt002_004_interrupt_sharing(&cx, &mut per_thread);
    nt005_cpu0(&cx, &mut per_thread);
    nt006_outside_cpuset(&cx, &mut per_thread);
    nt016_remote_memory(&cx, &mut per_thread);
    nt018_across_nodes(&cx, &mut per_thread);
    let mut out = merge(per_thread);
    nt007_009_isolated_irqs(&cx, &mut out);
    nt010_nic_irq_remote(&cx, &mut out);
    nt011_012_busy_sharing(&cx, &mut out);
    nt013_015_rps(&cx, &mut out);
    nt017_irqbalance_ban(&cx, &mut out);
    out
}

fn nt001_remote_nic(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    for th in cx.pinned() {
        let nodes = cx.t.nodes_of(&th.affinity);
        for nic in th.nics.iter().filter_map(|n| cx.t.nic(n)) {
            let Some(nn) = nic.numa_node else { continue };
            if nodes.is_empty() || nodes.contains(&nn) {
                continue;
            }
            let mut f = finding(
                "NT001",
                format!(
                    "pinned to {} (node {}) but uses {} on node {nn}",
                    th.affinity,
                    join(&nodes),
                    nic.name
                ),
                "Every packet crosses the inter-socket link twice (DMA to the NIC's node, then the thread's reads), \
                 costing memory bandwidth and latency; pinning on the wrong node typically loses 20-40% throughput.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.clone();
            f.nics.push(nic.name.clone());
            f.fix.extend(cx.move_thread_fix(th, Some(nn)));
            f.fix.push(format!(
                "# or start it with: numactl --cpunodebind={nn} --membind={nn} <command>"
            ));
            out.push(f);
        }
    }
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn irq_fix_lines(cx: &Ctx, irqs: &[(u32, String)]) -> Vec<String> {
    let mut v = Vec::new();
    for (irq, nic) in irqs {
        let node = cx.t.nic(nic).and_then(|n| n.numa_node);
        v.push(format!(
            "echo {} > /proc/irq/{irq}/smp_affinity_list",
            cx.housekeeping(node)
        ));
    }
    v
}

fn rps_fix_lines(cx: &Ctx, rps: &[(String, u32)], remove: &CpuSet) -> Vec<String> {
    let mut v = Vec::new();
    for (nic, q) in rps {
        let cur =
            cx.t.nic(nic)
                .and_then(|n| n.rx_queues.iter().find(|x| x.queue == *q))
                .map(|x| x.rps_cpus.clone())
                .unwrap_or_default();
        v.push(format!(
            "echo {} > /sys/class/net/{nic}/queues/rx-{q}/rps_cpus",
            hexmask(&cur.difference(remove))
        ));
    }
    v
}

fn stolen_severity(cx: &Ctx, th: &ThreadInfo, f: &mut Finding) {
    if let Some(s) = cx.stolen(th) {
        f.evidence.push(format!(
            "{} ({}) measured {s:.1}% of its CPU time stolen by interrupt work",
            th.tid, th.comm
        ));
        if s >= STOLEN_ERROR_PCT {
            f.severity = Severity::Error;
        }
    }
    if let Some(p) = th.cpu_pct {
        f.evidence.push(format!(
            "{} ({}) used {p:.0}% CPU during the check",
            th.tid, th.comm
        ));
    }
}

fn nt002_004_interrupt_sharing(cx: &Ctx, out: &mut Vec<Finding>) {
    for th in cx.narrow() {
        let mut irqs: Vec<(u32, String)> = Vec::new();
        let mut rps: Vec<(String, u32)> = Vec::new();
        for c in th.affinity.iter() {
            irqs.extend(cx.irq_on.get(&c).into_iter().flatten().cloned());
            rps.extend(cx.rps_on.get(&c).into_iter().flatten().cloned());
        }
        irqs.sort();
        irqs.dedup();
        rps.sort();
        rps.dedup();
        if !irqs.is_empty() {
            let mut f = finding(
                "NT002",
                format!(
                    "pinned to {} which also takes NIC queue IRQ {}",
                    th.affinity,
                    irqs.iter()
                        .map(|(i, n)| format!("{i} ({n})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "Each hardirq and the NET_RX softirq it raises run on top of this thread and are charged to it \
                 (top shows it busy while it loses throughput); data-plane CPUs should take no device IRQs.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.clone();
            f.irqs = irqs.iter().map(|x| x.0).collect();
            f.nics = uniq(irqs.iter().map(|x| x.1.clone()));
            f.fix = irq_fix_lines(cx, &irqs);
            stolen_severity(cx, th, &mut f);
            out.push(f);
        }
        if !rps.is_empty() {
            let mut f = finding(
                "NT003",
                format!(
                    "pinned to {} which is an RPS target of {}",
                    th.affinity,
                    rps.iter()
                        .map(|(n, q)| format!("{n} rx-{q}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "RPS sends an IPI and runs the receive stack (NET_RX softirq) on this CPU, in whatever task is \
                 running there: this pinned thread loses that time while top charges it to the thread.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.clone();
            f.nics = uniq(rps.iter().map(|x| x.0.clone()));
            f.fix = rps_fix_lines(cx, &rps, &th.affinity);
            stolen_severity(cx, th, &mut f);
            out.push(f);
        }
        // Siblings: the core's other hyperthread taking interrupts halves the
        // core's execution resources for this thread during each burst.
        let sib = cx.t.siblings_of(&th.affinity);
        let mut s_irqs: Vec<(u32, String)> = Vec::new();
        let mut s_rps: Vec<(String, u32)> = Vec::new();
        for c in sib.iter() {
            s_irqs.extend(cx.irq_on.get(&c).into_iter().flatten().cloned());
            s_rps.extend(cx.rps_on.get(&c).into_iter().flatten().cloned());
        }
        s_irqs.retain(|x| !irqs.contains(x));
        s_rps.retain(|x| !rps.contains(x));
        s_irqs.sort();
        s_irqs.dedup();
        s_rps.sort();
        s_rps.dedup();
        if !s_irqs.is_empty() || !s_rps.is_empty() {
            let mut what = Vec::new();
            if !s_irqs.is_empty() {
                what.push(format!(
                    "IRQ {}",
                    s_irqs
                        .iter()
                        .map(|x| x.0.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            if !s_rps.is_empty() {
                what.push(format!(
                    "RPS {}",
                    s_rps
                        .iter()
                        .map(|(n, q)| format!("{n} rx-{q}"))
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            let mut f = finding(
                "NT004",
                format!(
                    "pinned to {}; its SMT sibling {} takes {}",
                    th.affinity,
                    sib,
                    what.join(" and ")
                ),
                "Hyperthreads share one core's execution units and L1/L2: interrupt bursts on the sibling slow this \
                 data-plane thread and pollute its caches; keep the whole core free of device work.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.union(&sib);
            f.irqs = s_irqs.iter().map(|x| x.0).collect();
            f.nics = uniq(
                s_irqs
                    .iter()
                    .map(|x| x.1.clone())
                    .chain(s_rps.iter().map(|x| x.0.clone())),
            );
            f.fix = irq_fix_lines(cx, &s_irqs);
            f.fix.extend(rps_fix_lines(cx, &s_rps, &sib));
            stolen_severity(cx, th, &mut f);
            out.push(f);
        }
    }
}

fn uniq(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = it.collect();
    v.sort();
    v.dedup();
    v
}

fn nt005_cpu0(cx: &Ctx, out: &mut Vec<Finding>) {
    if cx.t.online.len() < 2 {
        return;
    }
    for th in cx.narrow().filter(|th| th.affinity.contains(0)) {
        let (busy, why_busy) = cx.busy(th);
        if !busy {
            continue;
        }
        let mut f = finding(
            "NT005",
            format!("busy thread pinned to {} (includes CPU 0)", th.affinity),
            "CPU 0 carries housekeeping the kernel cannot move (timers, some IRQs, often the boot-time default \
             for everything unpinned), so a data-plane thread there is interrupted and jittery.",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.clone();
        let node = cx.t.pu(0).and_then(|p| p.numa);
        f.fix.extend(cx.move_thread_fix(th, node));
        f.evidence.push(why_busy);
        out.push(f);
    }
}

fn nt006_outside_cpuset(cx: &Ctx, out: &mut Vec<Finding>) {
    for th in cx.t.threads.iter().filter(|th| !th.kthread) {
        let Some(cs) = &th.cpuset else { continue };
        if th.affinity.is_empty() || th.affinity.is_subset(cs) {
            continue;
        }
        // Reading the affinity as indexes into the cpuset gives what the
        // operator most likely meant.
        let cs_cpus: Vec<u32> = cs.iter().collect();
        let meant: Option<CpuSet> = th
            .affinity
            .iter()
            .map(|c| cs_cpus.get(c as usize).copied())
            .collect::<Option<Vec<u32>>>()
            .map(CpuSet::from_cpus);
        let mut f = finding(
            "NT006",
            format!("pinned to {} but its cgroup cpuset is {}", th.affinity, cs),
            "The kernel keeps a task inside its cpuset, so CPUs outside it are dropped or the pinning fails: \
             software that pins by host CPU number inside a container lands on other cores than intended \
             (or none), often sharing them with everything else.",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.difference(cs);
        match meant {
            Some(m) => f.fix.push(format!(
                "taskset -pc {m} {}   # CPUs {} as indexes into the cpuset {cs}",
                th.tid, th.affinity
            )),
            None => f.fix.push(format!("taskset -pc {cs} {}", th.tid)),
        }
        f.fix.push(
            "# configure the application with CPUs from its cpuset (cat /sys/fs/cgroup/cpuset.cpus.effective), \
             not from /sys/devices/system/cpu/online"
                .to_string(),
        );
        if let Some(cg) = &th.cgroup {
            f.evidence.push(format!("cgroup {cg}"));
        }
        out.push(f);
    }
}

fn nt016_remote_memory(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    for th in cx.pinned() {
        let Some(mem) = &th.mem_kib else { continue };
        let nodes = cx.t.nodes_of(&th.affinity);
        let [node] = nodes.as_slice() else { continue };
        let total: u64 = mem.values().sum();
        let local = mem.get(node).copied().unwrap_or(0);
        if total < MEM_MIN_KIB || local * 2 >= total {
            continue;
        }
        let remote: Vec<u32> = mem
            .iter()
            .filter(|(n, k)| *n != node && **k > 0)
            .map(|(n, _)| *n)
            .collect();
        let mut f = finding(
            "NT016",
            format!(
                "runs on node {node} but {}% of its process's memory is on node {}",
                (total - local) * 100 / total,
                join(&remote)
            ),
            "Every cache miss goes over the inter-socket link to remote DRAM (roughly 1.5-2x the latency); \
             memory was probably allocated before the thread was pinned or on another node's CPU.",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.clone();
        f.evidence.push(format!(
            "numa_maps of pid {}: {} KiB total, {local} KiB on node {node}",
            th.pid, total
        ));
        f.fix
            .push(format!("migratepages {} {} {node}", th.pid, join(&remote)));
        f.fix.push(format!(
            "# or start it with: numactl --cpunodebind={node} --membind={node} <command>"
        ));
        out.push(f);
    }
}

fn nt018_across_nodes(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    let housekeeping = cx.t.online.difference(&cx.isolated);
    for th in cx.pinned() {
        let nodes = cx.t.nodes_of(&th.affinity);
        if nodes.len() < 2 || housekeeping.is_subset(&th.affinity) {
            continue;
        }
        let mut f = finding(
            "NT018",
            format!(
                "pinned to {} which spans NUMA nodes {}",
                th.affinity,
                join(&nodes)
            ),
            "The scheduler may move the thread between nodes, leaving its memory and caches behind; pin to CPUs \
             of one node (the NIC's, for network work).",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.clone();
        let nic_node = th.nics.iter().filter_map(|n| cx.t.nic(n)?.numa_node).next();
        let node = nic_node.or(nodes.first().copied());
        if let Some(n) = node
            && let Some(nc) = cx.t.node_cpus(n)
        {
            let keep = th.affinity.intersection(nc);
            f.fix.push(format!("taskset -pc {keep} {}", th.tid));
        }
        out.push(f);
    }
}

fn nt007_009_isolated_irqs(cx: &Ctx, out: &mut Vec<Finding>) {
    let iso = &cx.isolated;
    if iso.is_empty() {
        return;
    }
    let host = &cx.t.host;
    for irq in &cx.t.irqs {
        let lands = irq.lands_on();
        // Allowed everywhere and no effective affinity reported: the kernel
        // picks; nothing we can attribute to configuration.
        if irq.effective.is_none() && cx.t.online.is_subset(&lands) {
            continue;
        }
        let hit = lands.intersection(iso);
        if hit.is_empty() {
            continue;
        }
        let label = match &irq.nic {
            Some(n) => format!("{} ({n})", irq.irq),
            None => format!("{} ({})", irq.irq, irq.name),
        };
        let why = if host.irqbalance.is_some() {
            "Isolated CPUs exist to run one task undisturbed; each interrupt preempts it and its softirq work is \
             charged to it. irqbalance keeps the IRQs it manages off isolated CPUs, so this affinity was set by \
             hand, banned from balancing or is kernel-managed, and it stays until changed."
        } else {
            "Isolated CPUs exist to run one task undisturbed; each interrupt preempts it and its softirq work is \
             charged to it, and no irqbalance is running to move it elsewhere."
        };
        let mut f = finding(
            "NT007",
            format!("IRQ {label} lands on isolated CPU {hit}"),
            why,
        );
        f.irqs.push(irq.irq);
        f.cpus = hit.clone();
        f.nics.extend(irq.nic.clone());
        let fired: u64 = hit.iter().filter_map(|c| irq.counts.get(&c)).sum();
        if fired > 0 {
            f.evidence
                .push(format!("fired {fired} times on CPU {hit} since boot"));
        }
        if let Some(a) = &irq.smp_affinity {
            f.evidence.push(format!("smp_affinity_list {a}"));
        }
        let node = irq.nic.as_ref().and_then(|n| cx.t.nic(n)?.numa_node);
        f.fix.push(format!(
            "echo {} > /proc/irq/{}/smp_affinity_list",
            cx.housekeeping(node),
            irq.irq
        ));
        out.push(f);
    }
    if let Some(ia) = &host.irqaffinity {
        let hit = ia.intersection(iso);
        if !hit.is_empty() {
            let mut f = finding(
                "NT008",
                format!("irqaffinity={ia} includes isolated CPU {hit}"),
                "irqaffinity= is the default affinity of every device IRQ: naming isolated CPUs invites interrupts \
                 onto the CPUs meant to be quiet.",
            );
            f.cpus = hit;
            f.fix.push(format!(
                "# kernel command line: irqaffinity={}",
                ia.difference(iso)
            ));
            f.fix.push(format!(
                "echo {} > /proc/irq/default_smp_affinity",
                hexmask(&ia.difference(iso))
            ));
            out.push(f);
        }
    }
    let managed = host.isolcpus_flags.iter().any(|f| f == "managed_irq");
    let default_hits = host
        .default_smp_affinity
        .as_ref()
        .map(|d| d.intersects(iso))
        .unwrap_or(true);
    if host.irqaffinity.is_none() && host.irqbalance.is_none() && !managed && default_hits {
        let mut f = finding(
            "NT009",
            format!("CPUs {iso} are isolated but new device IRQs may still land on them"),
            "Without irqaffinity=, isolcpus=managed_irq or a running irqbalance, device IRQs default to all \
             CPUs, isolated ones included, until someone sets each smp_affinity by hand.",
        );
        f.cpus = iso.clone();
        let hk = cx.t.online.difference(iso);
        f.fix
            .push(format!("# kernel command line: irqaffinity={hk}"));
        f.fix.push(format!(
            "echo {} > /proc/irq/default_smp_affinity",
            hexmask(&hk)
        ));
        out.push(f);
    }
}

fn nt010_nic_irq_remote(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    for nic in &cx.t.nics {
        let Some(node) = nic.numa_node else { continue };
        let Some(nc) = cx.t.node_cpus(node) else {
            continue;
        };
        let mut bad = Vec::new();
        let mut cpus = CpuSet::new();
        for irq in nic.irqs.iter().filter_map(|i| cx.t.irq(*i)) {
            let lands = irq.lands_on();
            if lands.is_empty() || (irq.effective.is_none() && cx.t.online.is_subset(&lands)) {
                continue;
            }
            let off = lands.difference(nc);
            if !off.is_empty() {
                bad.push(irq.irq);
                cpus = cpus.union(&off);
            }
        }
        if bad.is_empty() {
            continue;
        }
        let mut f = finding(
            "NT010",
            format!(
                "{} is on node {node} but {} of its queue IRQs run on CPUs {cpus}",
                nic.name,
                bad.len()
            ),
            "The IRQ handler and NET_RX processing then touch descriptors and packet buffers in remote memory, \
             and the packets are usually consumed on the NIC's node anyway: twice across the interconnect.",
        );
        f.irqs = bad.clone();
        f.cpus = cpus;
        f.nics.push(nic.name.clone());
        let hk = cx.housekeeping(Some(node));
        for i in &bad {
            f.fix
                .push(format!("echo {hk} > /proc/irq/{i}/smp_affinity_list"));
        }
        f.fix.push(format!(
            "# or, with irqbalance: it follows the NIC's numa_node by itself; check /sys/class/net/{}/device/numa_node",
            nic.name
        ));
        out.push(f);
    }
}

fn nt011_012_busy_sharing(cx: &Ctx, out: &mut Vec<Finding>) {
    let mut by_cpu: BTreeMap<u32, Vec<(&ThreadInfo, String)>> = BTreeMap::new();
    for th in cx.narrow().filter(|th| th.affinity.len() == 1) {
        let (busy, why) = cx.busy(th);
        if busy && let Some(c) = th.affinity.first() {
            by_cpu.entry(c).or_default().push((th, why));
        }
    }
    for (cpu, ths) in &by_cpu {
        if ths.len() < 2 {
            continue;
        }
        let mut f = finding(
            "NT011",
            format!("{} busy threads pinned to CPU {cpu}", ths.len()),
            "Threads pinned to one CPU time-share it: each runs at most a fraction of the time, with context \
             switches and cold caches in between, while other CPUs may idle.",
        );
        f.cpus = CpuSet::from_cpus([*cpu]);
        let mut used = CpuSet::from_cpus(by_cpu.keys().copied());
        for (i, (th, why)) in ths.iter().enumerate() {
            f.threads.push(tref(th, cx.ev));
            f.evidence.push(why.clone());
            if i > 0 {
                let node = cx.t.pu(*cpu).and_then(|p| p.numa);
                let free = cx.quiet_all(node, th.cpuset.as_ref()).difference(&used);
                if let Some(c) = free.first() {
                    used.insert(c);
                    f.fix.push(format!("taskset -pc {c} {}", th.tid));
                }
            }
        }
        out.push(f);
    }
    // Sibling pairs: busy threads on different PUs of the same core.
    let mut seen: Vec<CpuSet> = Vec::new();
    for pu in &cx.t.pus {
        if pu.siblings.len() < 2 || seen.contains(&pu.siblings) {
            continue;
        }
        seen.push(pu.siblings.clone());
        let on: Vec<u32> = pu
            .siblings
            .iter()
            .filter(|c| by_cpu.contains_key(c))
            .collect();
        if on.len() < 2 {
            continue;
        }
        let mut f = finding(
            "NT012",
            format!(
                "busy threads on hyperthreads {} of one core",
                CpuSet::from_cpus(on.iter().copied())
            ),
            "Two busy hyperthreads share one core's execution units and L1/L2 caches, so each gets roughly \
             60-70% of a core; data-plane workers usually want one per core, siblings left idle.",
        );
        f.cpus = CpuSet::from_cpus(on.iter().copied());
        for c in &on {
            for (th, why) in by_cpu.get(c).into_iter().flatten() {
                f.threads.push(tref(th, cx.ev));
                f.evidence.push(why.clone());
            }
        }
        if let Some((th, _)) = on
            .get(1)
            .and_then(|c| by_cpu.get(c))
            .and_then(|v| v.first())
        {
            let node = cx.t.pu(on[1]).and_then(|p| p.numa);
            let busy_cores =
                cx.t.siblings_of(&CpuSet::from_cpus(by_cpu.keys().copied()))
                    .union(&CpuSet::from_cpus(by_cpu.keys().copied()));
            if let Some(c) = cx
                .quiet_all(node, th.cpuset.as_ref())
                .difference(&busy_cores)
                .first()
            {
                f.fix.push(format!("taskset -pc {c} {}", th.tid));
            }
        }
        out.push(f);
    }
}

fn rps_finding(id: &str, nic: &Nic, hit: &CpuSet, summary: String, why: &str) -> Finding {
    let mut f = finding(id, summary, why);
    f.cpus = hit.clone();
    f.nics.push(nic.name.clone());
    for q in nic.rx_queues.iter().filter(|q| q.rps_cpus.intersects(hit)) {
        f.fix.push(format!(
            "echo {} > /sys/class/net/{}/queues/rx-{}/rps_cpus",
            hexmask(&q.rps_cpus.difference(hit)),
            nic.name,
            q.queue
        ));
    }
    f
}

fn nt013_015_rps(cx: &Ctx, out: &mut Vec<Finding>) {
    for nic in &cx.t.nics {
        let rps = nic.rps_cpus();
        let hit = rps.intersection(&cx.isolated);
        if !hit.is_empty() {
            out.push(rps_finding(
                "NT013",
                nic,
                &hit,
                format!("{} RPS steers receive work onto isolated CPU {hit}", nic.name),
                "RPS runs the receive stack on its target CPUs via IPIs: on isolated CPUs that is exactly the \
                 interference isolation was meant to remove.",
            ));
        }
        if rps.contains(0) && cx.t.online.len() > 1 {
            out.push(rps_finding(
                "NT014",
                nic,
                &CpuSet::from_cpus([0]),
                format!("{} RPS steers receive work onto CPU 0", nic.name),
                "CPU 0 already carries housekeeping (timers, unpinned IRQs, many kernel threads); adding packet \
                 processing there makes both jittery.",
            ));
        }
        if !cx.multi_node {
            continue;
        }
        let Some(node) = nic.numa_node else { continue };
        let Some(nc) = cx.t.node_cpus(node) else {
            continue;
        };
        let xps = nic
            .tx_queues
            .iter()
            .filter_map(|q| q.xps_cpus.clone())
            .fold(CpuSet::new(), |a, b| a.union(&b));
        let off_rps = rps.difference(nc);
        let off_xps = xps.difference(nc);
        if off_rps.is_empty() && off_xps.is_empty() {
            continue;
        }
        let mut f = finding(
            "NT015",
            format!(
                "{} is on node {node}; RPS/XPS name CPUs {} on other nodes",
                nic.name,
                off_rps.union(&off_xps)
            ),
            "Steering receive processing or transmit queues to remote CPUs makes the stack touch the NIC's \
             buffers across the interconnect; keep steering masks on the NIC's node unless the consumer is remote.",
        );
        f.cpus = off_rps.union(&off_xps);
        f.nics.push(nic.name.clone());
        for q in nic
            .rx_queues
            .iter()
            .filter(|q| q.rps_cpus.intersects(&off_rps))
        {
            f.fix.push(format!(
                "echo {} > /sys/class/net/{}/queues/rx-{}/rps_cpus",
                hexmask(&q.rps_cpus.intersection(nc)),
                nic.name,
                q.queue
            ));
        }
        for q in nic.tx_queues.iter() {
            if let Some(x) = &q.xps_cpus
                && x.intersects(&off_xps)
            {
                f.fix.push(format!(
                    "echo {} > /sys/class/net/{}/queues/tx-{}/xps_cpus",
                    hexmask(&x.intersection(nc)),
                    nic.name,
                    q.queue
                ));
            }
        }
        out.push(f);
    }
}

fn nt017_irqbalance_ban(cx: &Ctx, out: &mut Vec<Finding>) {
    let Some(ib) = &cx.t.host.irqbalance else {
        return;
    };
    let Some(banned) = &ib.banned_cpus else {
        return;
    };
    let missing = cx.isolated.difference(banned);
    if missing.is_empty() {
        return;
    }
    let mut f = finding(
        "NT017",
        format!("irqbalance bans CPUs {banned} but isolated CPUs {missing} are not among them"),
        "Setting IRQBALANCE_BANNED_CPUS/CPULIST replaces irqbalance's default of banning isolcpus and nohz_full \
         CPUs, so it will place IRQs on the isolated CPUs left out.",
    );
    f.cpus = missing;
    f.evidence.push(format!("irqbalance pid {}", ib.pid));
    f.fix.push(format!(
        "# in /etc/default/irqbalance: IRQBALANCE_BANNED_CPULIST={}",
        banned.union(&cx.isolated)
    ));
    f.fix.push("systemctl restart irqbalance".into());
    out.push(f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hexmask_matches_kernel_spelling() {
        assert_eq!(hexmask(&CpuSet::parse_list("1").unwrap()), "00000002");
        assert_eq!(
            hexmask(&CpuSet::parse_list("0,33").unwrap()),
            "00000002,00000001"
        );
        assert_eq!(hexmask(&CpuSet::new()), "0");
        let s = CpuSet::parse_list("0-3,40").unwrap();
        assert_eq!(CpuSet::parse_mask(&hexmask(&s)).unwrap(), s);
    }

    #[test]
    fn rule_ids_are_unique() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.0).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}
