//! Host topology: CPUs (hwloc), NICs with their queues and IRQs, thread
//! placement and boot-time isolation, as plain serialisable structs.
//!
//! The structs are the contract between the loader (this module, the only
//! part that does I/O), the pinning lint, the TUI's Topology view and
//! recordings: a saved [`HostTopology`] can be linted later on another
//! machine. Every /proc and /sys read goes through [`Sysroot`] so tests can
//! describe machines we don't have; the CPU structure comes from hwloc (live,
//! XML or synthetic) or, when no hwloc source fits a fake root, from the
//! root's own `/sys/devices/system` files.

pub mod ethtool;
mod hw;
mod net;
pub mod netns;
mod sys;
mod threads;
pub mod xdp;

pub use ethtool::{FlowRule, Steering, Support};
pub use netns::{NetnsInfo, NetnsKind};
pub use xdp::XdpProg;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cli::Cli;
use crate::cpuset::CpuSet;
use crate::sysroot::Sysroot;

/// Where the CPU structure (packages, caches, cores, PUs) comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuSource {
    /// hwloc discovery of this machine.
    Live,
    /// An hwloc XML export (`lstopo --of xml`).
    Xml(PathBuf),
    /// An hwloc synthetic description ("pack:2 [numa] core:12 pu:2").
    Synthetic(String),
    /// The sysroot's `/sys/devices/system/{cpu,node}` files, no hwloc.
    Sysfs,
}

/// CPU sample for "busy" on live hosts: long enough that a thread spinning
/// at 20 % shows, short enough to keep the check well under 200 ms.
const SAMPLE_MS: u64 = 25;

/// What [`load`] reads. Built from the command line with
/// [`LoadOptions::from_cli`]; the TUI builds its own.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub sysroot: Sysroot,
    pub cpu_source: CpuSource,
    /// Measure CPU use of pinned threads over this interval (live only), so
    /// "busy" means busy rather than "pinned narrowly". `None` skips it.
    pub sample: Option<Duration>,
}

impl LoadOptions {
    /// Flags win; a fake sysroot may carry its own `hwloc.xml` or
    /// `hwloc.synthetic`; otherwise a fake root falls back to its sysfs files
    /// (the live hwloc view would describe the wrong machine).
    pub fn from_cli(cli: &Cli) -> Self {
        let sysroot = Sysroot::new(&cli.sysroot);
        let cpu_source = if let Some(x) = &cli.hwloc_xml {
            CpuSource::Xml(x.clone())
        } else if let Some(s) = &cli.hwloc_synthetic {
            CpuSource::Synthetic(s.clone())
        } else if sysroot.is_live() {
            CpuSource::Live
        } else if sysroot.root().join("hwloc.xml").is_file() {
            CpuSource::Xml(sysroot.root().join("hwloc.xml"))
        } else if let Some(s) = sysroot
            .read("/hwloc.synthetic")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
        {
            CpuSource::Synthetic(s)
        } else {
            CpuSource::Sysfs
        };
        let sample = sysroot.is_live().then(|| Duration::from_millis(SAMPLE_MS));
        Self {
            sysroot,
            cpu_source,
            sample,
        }
    }
}

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

/// How an XDP program is attached to a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    /// Not determined: a fake sysroot without an `xdp_mode` fixture file, or
    /// the rtnetlink dump failed (see the notes); see [`xdp`].
    #[default]
    Unknown,
    None,
    Native,
    Generic,
    Offload,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RxQueue {
    pub queue: u32,
    /// `rps_cpus`; empty when RPS is off for this queue.
    pub rps_cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TxQueue {
    pub queue: u32,
    /// `xps_cpus`; `None` when the file is absent (single-queue devices).
    pub xps_cpus: Option<CpuSet>,
}

/// A network interface and where its work lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Nic {
    pub name: String,
    pub ifindex: Option<u32>,
    /// Network namespace name ([`NetnsInfo::name`]); empty for nettop's
    /// own. Names repeat across namespaces (every pod has an `eth0`), so
    /// a device is (namespace, name); [`Nic::label`] prints both.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub netns: String,
    /// No `device` link in sysfs: veth, bridge, loopback, tunnels.
    pub is_virtual: bool,
    pub driver: Option<String>,
    /// PCI address ("0000:81:00.0") when the device is on PCI.
    pub pci: Option<String>,
    /// NUMA node of the device; `None` when unknown or the host has one node.
    pub numa_node: Option<u32>,
    pub local_cpus: Option<CpuSet>,
    /// "sysfs", "hwloc" or "" when locality is unknown.
    pub locality_source: String,
    /// IPv6 addresses and IPv4 connected subnets ("10.0.1.0/24").
    pub addrs: Vec<String>,
    pub rx_queues: Vec<RxQueue>,
    pub tx_queues: Vec<TxQueue>,
    /// Device IRQs (MSI vectors and IRQs whose name mentions the NIC).
    pub irqs: Vec<u32>,
    pub xdp: XdpMode,
    /// Attached XDP programs (several only for `XDP_ATTACHED_MULTI`); empty
    /// when none or unknown. Left out of JSON when empty, so older saved
    /// topologies and snapshots stay byte-identical.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xdp_progs: Vec<XdpProg>,
    /// RSS indirection table and flow-steering rules as ethtool answered;
    /// `None` when not read (older topologies, fixtures without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<Steering>,
}

impl Nic {
    /// The device's name, with its namespace when that is not nettop's:
    /// "veth1 (netns blue)". Findings, views and IRQ owners use it.
    pub fn label(&self) -> String {
        label(&self.name, &self.netns)
    }

    /// RX queue → IRQ, from IRQ names that carry a queue number
    /// ("eth0-TxRx-3", "mlx5_comp3@pci:…", "virtio0-input.1", "i40e-eth0-TxRx-3").
    /// Queues whose IRQ cannot be told are left out.
    pub fn queue_irqs(&self, irqs: &[Irq]) -> BTreeMap<u32, u32> {
        let mut m = BTreeMap::new();
        for irq in irqs.iter().filter(|i| self.irqs.contains(&i.irq)) {
            if let Some(q) = queue_of_irq_name(&irq.name) {
                m.entry(q).or_insert(irq.irq);
            }
        }
        m
    }

    /// Weight RSS gives `queue` (indirection table entries pointing at it);
    /// `None` when the table is unknown or unsupported.
    pub fn rss_weight(&self, queue: u32) -> Option<u32> {
        let st = self.steering.as_ref()?;
        if st.indir.is_empty() {
            return None;
        }
        Some(st.indir.iter().filter(|q| **q == queue).count() as u32)
    }

    /// Flow-steering rules whose action is `queue`.
    pub fn rules_to(&self, queue: u32) -> Vec<&FlowRule> {
        self.steering
            .iter()
            .flat_map(|s| s.rules.iter())
            .filter(|r| r.queue == Some(queue))
            .collect()
    }
    /// Union of every RX queue's RPS mask.
    pub fn rps_cpus(&self) -> CpuSet {
        self.rx_queues
            .iter()
            .fold(CpuSet::new(), |acc, q| acc.union(&q.rps_cpus))
    }
}

/// "veth1 (netns blue)", or the bare name in nettop's own namespace.
pub fn label(name: &str, netns: &str) -> String {
    if netns.is_empty() {
        name.to_string()
    } else {
        format!("{name} (netns {netns})")
    }
}

/// The queue number an IRQ name ends in, for names that name a data queue:
/// a trailing number after `-`, `.`, `_comp` or `TxRx-`/`rx-`/`input.`.
fn queue_of_irq_name(name: &str) -> Option<u32> {
    let action = name.split([' ', ',']).find(|a| !a.is_empty())?;
    let action = action.split('@').next()?;
    let lower = action.to_ascii_lowercase();
    // Config/async vectors carry no queue.
    if lower.contains("config") || lower.contains("async") || lower.ends_with("-ctrl") {
        return None;
    }
    let digits: String = action
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if digits.is_empty() {
        return None;
    }
    let head = &action[..action.len() - digits.len()];
    let ok = head.ends_with('-')
        || head.ends_with('.')
        || head.ends_with("_comp")
        || head.ends_with('_');
    ok.then(|| digits.parse().ok()).flatten()
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
    /// (`crate::cgroup::Identity::label`); absent in older topologies.
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

/// Only what device configuration needs (`model::devconf`): IRQs, NICs of
/// every namespace with their queues, XDP, RSS and flow rules. No hwloc,
/// no thread walk: batch and `--serve` join this to every frame's devices,
/// and a host with 40,000 threads must not pay a thread list for it. NIC
/// locality comes from sysfs only.
pub fn load_devices(opts: &LoadOptions) -> anyhow::Result<HostTopology> {
    let root = &opts.sysroot;
    let mut topo = HostTopology {
        source: if root.is_live() {
            "live".to_string()
        } else {
            format!("sysroot {}", root.root().display())
        },
        ..Default::default()
    };
    let none = hw::NicLocality::new();
    topo.irqs = sys::load_irqs(root, &mut topo.notes)?;
    topo.nics = sys::load_nics(
        root,
        &mut topo.irqs,
        &none,
        &sys::NicScope::OWN,
        &mut topo.notes,
    )?;
    xdp::fill(root, &mut topo.nics, &mut topo.notes);
    ethtool::fill(root, &mut topo.nics, &mut topo.notes);
    load_other_namespaces(root, &none, &mut topo);
    crate::sanitize::Untrusted::sanitize(&mut topo);
    Ok(topo)
}

/// NICs of every other network namespace, appended to `topo.nics`; see
/// [`netns`]. Never fails: a namespace that cannot be read becomes a note.
fn load_other_namespaces(root: &Sysroot, hw: &hw::NicLocality, topo: &mut HostTopology) {
    type NsRead = (Vec<Nic>, Vec<Irq>, Vec<String>);
    let read = |nsroot: &Sysroot, proc_net: &str, netns: &str, irqs: &[Irq]| -> NsRead {
        let mut irqs = irqs.to_vec();
        let mut notes = Vec::new();
        let scope = sys::NicScope { proc_net, netns };
        let mut nics = match sys::load_nics(nsroot, &mut irqs, hw, &scope, &mut notes) {
            Ok(n) => n,
            Err(e) => {
                notes.push(format!("netns {netns}: {e:#}"));
                Vec::new()
            }
        };
        xdp::fill(nsroot, &mut nics, &mut notes);
        ethtool::fill(nsroot, &mut nics, &mut notes);
        (nics, irqs, notes)
    };
    let merge = |info: NetnsInfo, r: NsRead, topo: &mut HostTopology| {
        let (nics, irqs, notes) = r;
        for (mine, theirs) in topo.irqs.iter_mut().zip(irqs) {
            if mine.nic.is_none() {
                mine.nic = theirs.nic;
            }
        }
        topo.notes.extend(notes);
        topo.nics.extend(nics);
        topo.netns.push(info);
    };
    if !root.is_live() {
        for (info, sub) in netns::enumerate_fixture(root) {
            let r = read(&sub, "/proc/net", &info.name, &topo.irqs);
            merge(info, r, topo);
        }
        return;
    }
    let mut failed = Vec::new();
    for found in netns::enumerate_live() {
        let name = found.info.name.clone();
        let irqs = topo.irqs.clone();
        let live = Sysroot::new("/");
        match netns::with_netns(&found.path, || {
            read(&live, "/proc/thread-self/net", &name, &irqs)
        }) {
            Ok(r) => merge(found.info, r, topo),
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    let denied = failed
        .iter()
        .filter(|f| f.contains("not permitted"))
        .count();
    if denied > 0 && denied == failed.len() {
        topo.notes.push(format!(
            "{denied} other network namespace(s) not read (their devices are not checked): \
             entering them needs CAP_SYS_ADMIN"
        ));
    } else if !failed.is_empty() {
        topo.notes.push(format!(
            "network namespaces not read (their devices are not checked): {}",
            failed.join("; ")
        ));
    }
}

/// CPUs set apart at boot (isolcpus=, nohz_full=, and what sysfs lists as
/// isolated or nohz_full): nettop's calibration never runs there.
pub fn isolated_cpus(root: &Sysroot) -> anyhow::Result<CpuSet> {
    let mut notes = Vec::new();
    Ok(sys::load_host(root, &mut notes)?.isolated())
}

/// Reads the whole host. Fails only when the CPU structure cannot be had at
/// all; anything else missing is recorded in `notes` and judged as unknown.
pub fn load(opts: &LoadOptions) -> anyhow::Result<HostTopology> {
    let root = &opts.sysroot;
    let mut topo = HostTopology {
        source: if root.is_live() {
            "live".to_string()
        } else {
            format!("sysroot {}", root.root().display())
        },
        ..Default::default()
    };
    let cpus = hw::load_cpus(root, &opts.cpu_source)?;
    topo.cpu_source = cpus.source;
    topo.pus = cpus.pus;
    topo.numa_nodes = cpus.numa_nodes;
    topo.packages = cpus.packages;
    topo.caches = cpus.caches;
    topo.notes.extend(cpus.notes);

    topo.online = match root.read_opt("/sys/devices/system/cpu/online") {
        Some(s) => CpuSet::parse_list(&s).map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}",
                root.path("/sys/devices/system/cpu/online").display()
            )
        })?,
        None => {
            topo.notes.push(
                "/sys/devices/system/cpu/online unreadable: all CPUs in the topology taken as online"
                    .into(),
            );
            CpuSet::from_cpus(topo.pus.iter().map(|p| p.cpu))
        }
    };

    topo.host = sys::load_host(root, &mut topo.notes)?;
    topo.irqs = sys::load_irqs(root, &mut topo.notes)?;
    topo.nics = sys::load_nics(
        root,
        &mut topo.irqs,
        &cpus.nic_locality,
        &sys::NicScope::OWN,
        &mut topo.notes,
    )?;
    xdp::fill(root, &mut topo.nics, &mut topo.notes);
    ethtool::fill(root, &mut topo.nics, &mut topo.notes);
    load_other_namespaces(root, &cpus.nic_locality, &mut topo);
    let scan = threads::load_threads(root, &topo.online, &topo.nics, opts.sample, &mut topo.notes)?;
    topo.threads = scan.threads;
    if let Some(ib) = scan.irqbalance_pid {
        topo.host.irqbalance = Some(sys::load_irqbalance(root, ib));
    }
    // Thread names, IRQ and NIC names come from other users and drivers.
    crate::sanitize::Untrusted::sanitize(&mut topo);
    Ok(topo)
}
