//! The host half of the topology model: CPUs and where they sit (PUs,
//! NUMA nodes, packages, caches), boot-time isolation and IRQ management,
//! interrupts and threads, and [`HostTopology`] that holds it all with the
//! NICs of [`super::nic`]. Plain serialisable data: a saved topology can be
//! linted later on another machine.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{NetnsInfo, Nic};
use crate::sys::cpuset::CpuSet;
use crate::sys::sysroot::Sysroot;

/// Everything the lint and the Topology view know about one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostTopology {
    /// Where the data came from ("live", "sysroot tests/fixtures/...").
    pub source: String,
    /// "hwloc live", "hwloc xml FILE", "hwloc synthetic DESC" or "sysfs".
    pub cpu_source: String,
    pub online: CpuSet,
    pub pus: Vec<Pu>,
    pub numa_nodes: Vec<NumaNode>,
    pub packages: Vec<Package>,
    pub caches: Vec<Cache>,
    pub host: HostConfig,
    /// NICs of nettop's own namespace first, then of every other network
    /// namespace (`Nic::netns` names it).
    pub nics: Vec<Nic>,
    /// The other network namespaces that were read (nettop's own is not
    /// listed). Absent from older saved topologies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub netns: Vec<NetnsInfo>,
    /// Every numbered IRQ in `/proc/interrupts`.
    pub irqs: Vec<Irq>,
    pub threads: Vec<ThreadInfo>,
    /// What could not be read and what that means for the results.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One logical CPU (hwloc PU) and where it sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Pu {
    /// OS index, the number `taskset` and `/proc` use.
    pub cpu: u32,
    /// Logical core index (hwloc logical index of the Core object).
    pub core: Option<u32>,
    pub package: Option<u32>,
    pub numa: Option<u32>,
    /// PUs of the same core, including this one.
    pub siblings: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct NumaNode {
    pub node: u32,
    pub cpus: CpuSet,
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Package {
    pub package: u32,
    pub cpus: CpuSet,
}

/// A unified or data cache shared by `cpus` (L2 and L3 only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Cache {
    pub level: u8,
    /// hwloc logical index among caches of this level.
    pub index: u32,
    pub cpus: CpuSet,
    pub size_bytes: Option<u64>,
}

/// Boot parameters and IRQ management that decide where interrupts may go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostConfig {
    pub cmdline: String,
    /// `isolcpus=` CPUs (flags such as `domain,managed_irq` dropped) united
    /// with `/sys/devices/system/cpu/isolated`.
    pub isolcpus: CpuSet,
    pub isolcpus_flags: Vec<String>,
    /// `nohz_full=` united with `/sys/devices/system/cpu/nohz_full`.
    pub nohz_full: CpuSet,
    pub rcu_nocbs: CpuSet,
    /// `irqaffinity=`: default affinity of device IRQs, when given.
    pub irqaffinity: Option<CpuSet>,
    /// `/proc/irq/default_smp_affinity`.
    pub default_smp_affinity: Option<CpuSet>,
    pub irqbalance: Option<IrqBalance>,
}

impl HostConfig {
    /// CPUs the operator wants kept free of kernel noise.
    pub fn isolated(&self) -> CpuSet {
        self.isolcpus.union(&self.nohz_full)
    }
}

/// A running irqbalance and what it was told to avoid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct IrqBalance {
    pub pid: u32,
    /// From `IRQBALANCE_BANNED_CPULIST`/`IRQBALANCE_BANNED_CPUS` in its
    /// environment. `None`: not set (irqbalance then bans isolcpus and
    /// nohz_full CPUs by itself) or unreadable, see `environ_readable`.
    pub banned_cpus: Option<CpuSet>,
    /// `--banirq`/`-i` arguments.
    pub banned_irqs: Vec<u32>,
    pub environ_readable: bool,
}

/// One numbered interrupt line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Irq {
    pub irq: u32,
    /// Action name(s) from `/proc/interrupts` ("mlx5_comp3@pci:0000:81:00.0").
    pub name: String,
    /// The NIC this IRQ belongs to, when known.
    pub nic: Option<String>,
    /// `smp_affinity_list`: where the operator/irqbalance allows it.
    pub smp_affinity: Option<CpuSet>,
    /// `effective_affinity_list`: where the kernel actually routes it.
    pub effective: Option<CpuSet>,
    /// Non-zero per-CPU counts since boot.
    pub counts: BTreeMap<u32, u64>,
}

impl Irq {
    /// Where the IRQ lands: effective affinity when the kernel reports one,
    /// else the allowed set.
    pub fn lands_on(&self) -> CpuSet {
        match (&self.effective, &self.smp_affinity) {
            (Some(e), _) if !e.is_empty() => e.clone(),
            (_, Some(a)) => a.clone(),
            _ => CpuSet::new(),
        }
    }
}

/// One thread and where it may run, what it uses and where its memory is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ThreadInfo {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    /// `Cpus_allowed_list`.
    pub affinity: CpuSet,
    /// `stat` field 39.
    pub last_cpu: Option<u32>,
    pub kthread: bool,
    /// cgroup path (v2 unified, else the v1 cpuset hierarchy).
    pub cgroup: Option<String>,
    /// Effective cgroup cpuset, when the thread is in a restricted one.
    pub cpuset: Option<CpuSet>,
    /// The pod/container or systemd unit its cgroup path names
    /// (`crate::sys::cgroup::Identity::label`); absent in older topologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// KiB of the process's memory per NUMA node (`numa_maps`), read for
    /// pinned threads on multi-node hosts only.
    pub mem_kib: Option<BTreeMap<u32, u64>>,
    /// NICs the process's sockets are bound to or AF_PACKET sockets use.
    pub nics: Vec<String>,
    /// Measured CPU use over the sample interval, percent of one CPU.
    pub cpu_pct: Option<f64>,
}

impl ThreadInfo {
    /// Affinity narrower than what it could otherwise use: the online CPUs,
    /// or its cgroup cpuset. Kernel threads are pinned by design and excluded.
    pub fn is_pinned(&self, online: &CpuSet) -> bool {
        if self.kthread || self.affinity.is_empty() {
            return false;
        }
        let avail = match &self.cpuset {
            Some(c) => c.intersection(online),
            None => online.clone(),
        };
        !avail.is_subset(&self.affinity)
    }
}

impl HostTopology {
    /// An empty topology that names where it is read from.
    pub(super) fn of(root: &Sysroot) -> Self {
        HostTopology {
            source: if root.is_live() {
                "live".to_string()
            } else {
                format!("sysroot {}", root.root().display())
            },
            ..Default::default()
        }
    }

    pub fn pu(&self, cpu: u32) -> Option<&Pu> {
        self.pus.iter().find(|p| p.cpu == cpu)
    }

    /// NUMA nodes of these CPUs (unknown CPUs are left out).
    pub fn nodes_of(&self, cpus: &CpuSet) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .numa_nodes
            .iter()
            .filter(|n| n.cpus.intersects(cpus))
            .map(|n| n.node)
            .collect();
        v.sort_unstable();
        v
    }

    pub fn node_cpus(&self, node: u32) -> Option<&CpuSet> {
        self.numa_nodes
            .iter()
            .find(|n| n.node == node)
            .map(|n| &n.cpus)
    }

    /// SMT siblings of these CPUs, the CPUs themselves excluded.
    pub fn siblings_of(&self, cpus: &CpuSet) -> CpuSet {
        let mut s = CpuSet::new();
        for c in cpus.iter() {
            if let Some(p) = self.pu(c) {
                s = s.union(&p.siblings);
            }
        }
        s.difference(cpus)
    }

    /// A NIC by [`Nic::label`] (the bare name in nettop's own namespace).
    pub fn nic(&self, label: &str) -> Option<&Nic> {
        self.nics.iter().find(|n| n.label() == label)
    }

    /// The namespace a NIC is in (`None`: nettop's own).
    pub fn netns_of(&self, nic: &Nic) -> Option<&NetnsInfo> {
        if nic.netns.is_empty() {
            return None;
        }
        self.netns.iter().find(|n| n.name == nic.netns)
    }

    /// A shell prefix that runs a command where `nic` lives (see
    /// [`NetnsInfo::exec_prefix`]); empty in nettop's own namespace.
    pub fn exec_prefix(&self, nic: &Nic) -> String {
        self.netns_of(nic)
            .map(NetnsInfo::exec_prefix)
            .unwrap_or_default()
    }

    pub fn irq(&self, irq: u32) -> Option<&Irq> {
        self.irqs.iter().find(|i| i.irq == irq)
    }
}

/// Generic, through the JSON form: the topology has many nested string
/// fields and is read rarely (once per lint, every 15 s in the TUI).
impl crate::sys::sanitize::Untrusted for HostTopology {
    fn sanitize(&mut self) {
        crate::sys::sanitize::sanitize_via_json(self);
    }
}
