//! What every rule asks of the topology: where NIC IRQs and RPS land, who
//! is pinned and busy, which CPUs are quiet, and the fix commands built on
//! those answers.

use std::collections::BTreeMap;

use super::{BUSY_PCT, Finding, NARROW, STOLEN_ERROR_PCT, hexmask};
use crate::pinning::{Evidence, Severity};
use crate::sys::cpuset::CpuSet;
use crate::topology::{HostTopology, Nic, ThreadInfo};

/// NIC queue IRQs as (irq, nic).
pub(super) type Irqs = Vec<(u32, String)>;
/// RPS targets as (nic, rx queue).
pub(super) type Rps = Vec<(String, u32)>;

pub(super) struct Ctx<'a> {
    pub t: &'a HostTopology,
    pub ev: &'a Evidence,
    pub isolated: CpuSet,
    pub multi_node: bool,
    /// Where NIC queue IRQs land, per CPU: (irq, nic).
    pub irq_on: BTreeMap<u32, Vec<(u32, String)>>,
    /// RPS targets per CPU: (nic, queue).
    pub rps_on: BTreeMap<u32, Vec<(String, u32)>>,
    /// CPUs of narrowly pinned user threads.
    pub pinned_cpus: CpuSet,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(t: &'a HostTopology, ev: &'a Evidence) -> Self {
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
                    irq_on.entry(c).or_default().push((irq.irq, nic.label()));
                }
            }
            for q in &nic.rx_queues {
                for c in q.rps_cpus.iter() {
                    rps_on.entry(c).or_default().push((nic.label(), q.queue));
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

    pub(super) fn pinned(&self) -> impl Iterator<Item = &'a ThreadInfo> + '_ {
        self.t
            .threads
            .iter()
            .filter(|th| th.is_pinned(&self.t.online))
    }

    pub(super) fn narrow(&self) -> impl Iterator<Item = &'a ThreadInfo> + '_ {
        self.pinned().filter(|th| th.affinity.len() <= NARROW)
    }

    pub(super) fn stolen(&self, th: &ThreadInfo) -> Option<f64> {
        self.ev.stolen_pct.get(&th.tid).copied()
    }

    /// Busy: measured (stolen or CPU) when possible, else narrow pinning is
    /// the only evidence and is taken at face value.
    pub(super) fn busy(&self, th: &ThreadInfo) -> (bool, String) {
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

    pub(super) fn node_cpus_or_online(&self, node: Option<u32>) -> CpuSet {
        node.and_then(|n| self.t.node_cpus(n).cloned())
            .unwrap_or_else(|| self.t.online.clone())
            .intersection(&self.t.online)
    }

    /// CPUs that can take interrupts: not isolated, not a data-plane CPU.
    pub(super) fn housekeeping(&self, node: Option<u32>) -> CpuSet {
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
    pub(super) fn quiet_all(&self, node: Option<u32>, allowed: Option<&CpuSet>) -> CpuSet {
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

    pub(super) fn quiet(
        &self,
        node: Option<u32>,
        allowed: Option<&CpuSet>,
        n: usize,
    ) -> Option<CpuSet> {
        let pick = self.quiet_all(node, allowed);
        (pick.len() >= n && n > 0).then(|| CpuSet::from_cpus(pick.iter().take(n)))
    }

    pub(super) fn move_thread_fix(&self, th: &ThreadInfo, node: Option<u32>) -> Option<String> {
        let to = self.quiet(node, th.cpuset.as_ref(), th.affinity.len())?;
        Some(format!("taskset -pc {} {}", to, th.tid))
    }

    /// NIC queue IRQs and RPS targets landing on `cpus`, sorted, each once.
    pub(super) fn interrupts_on(&self, cpus: &CpuSet) -> (Irqs, Rps) {
        let mut irqs: Irqs = Vec::new();
        let mut rps: Rps = Vec::new();
        for c in cpus.iter() {
            irqs.extend(self.irq_on.get(&c).into_iter().flatten().cloned());
            rps.extend(self.rps_on.get(&c).into_iter().flatten().cloned());
        }
        irqs.sort();
        irqs.dedup();
        rps.sort();
        rps.dedup();
        (irqs, rps)
    }

    /// Busy threads pinned to exactly one CPU, by CPU, with why each counts
    /// as busy.
    pub(super) fn busy_by_cpu(&self) -> BTreeMap<u32, Vec<(&'a ThreadInfo, String)>> {
        let mut by_cpu: BTreeMap<u32, Vec<(&ThreadInfo, String)>> = BTreeMap::new();
        for th in self.narrow().filter(|th| th.affinity.len() == 1) {
            let (busy, why) = self.busy(th);
            if busy && let Some(c) = th.affinity.first() {
                by_cpu.entry(c).or_default().push((th, why));
            }
        }
        by_cpu
    }
}

/// `echo CPUS > /proc/irq/N/smp_affinity_list` for each IRQ, moving it to
/// housekeeping CPUs near its NIC. When there is no CPU to move it to, no
/// command: the finding says so instead (an empty list is not a command).
pub(super) fn irq_fixes(cx: &Ctx, irqs: &[(u32, String)], f: &mut Finding) {
    for (irq, nic) in irqs {
        let node = cx.t.nic(nic).and_then(|n| n.numa_node);
        let to = cx.housekeeping(node);
        if to.is_empty() {
            f.evidence.push(no_cpu_for_irq(*irq));
        } else {
            f.fix
                .push(format!("echo {to} > /proc/irq/{irq}/smp_affinity_list"));
        }
    }
}

/// What a finding says when an IRQ has nowhere to go.
pub(super) fn no_cpu_for_irq(irq: u32) -> String {
    format!(
        "no CPU to move IRQ {irq} to: every online CPU is isolated or runs a pinned thread; \
         free one (or unpin a thread) first"
    )
}

/// A command that writes under `/sys/class/net/<dev>/`, run where the
/// device lives: `ip netns exec NS sh -c '...'` for another namespace.
pub(super) fn in_netns_of(cx: &Ctx, nic: &Nic, cmd: String) -> String {
    let prefix = cx.t.exec_prefix(nic);
    if prefix.is_empty() {
        cmd
    } else {
        format!("{prefix}sh -c '{cmd}'")
    }
}

/// Commands taking `remove` out of each (nic, queue)'s RPS mask (an empty
/// mask, `0`, turns RPS off for the queue).
pub(super) fn rps_fix_lines(cx: &Ctx, rps: &[(String, u32)], remove: &CpuSet) -> Vec<String> {
    let mut v = Vec::new();
    for (label, q) in rps {
        let Some(nic) = cx.t.nic(label) else {
            continue;
        };
        let cur = nic
            .rx_queues
            .iter()
            .find(|x| x.queue == *q)
            .map(|x| x.rps_cpus.clone())
            .unwrap_or_default();
        v.push(in_netns_of(
            cx,
            nic,
            format!(
                "echo {} > /sys/class/net/{}/queues/rx-{q}/rps_cpus",
                hexmask(&cur.difference(remove)),
                nic.name
            ),
        ));
    }
    v
}

pub(super) fn stolen_severity(cx: &Ctx, th: &ThreadInfo, f: &mut Finding) {
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
