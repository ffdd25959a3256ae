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
//!
//! Where things are: the model types in `host` (CPUs, IRQs, threads,
//! [`HostTopology`]) and `nic` (NICs and their queues); this file builds
//! one ([`load`], [`load_devices`]) from the readers: `hw` (hwloc or sysfs
//! CPU structure), `sysfs` (boot parameters, IRQs, NICs and queues), [`xdp`],
//! [`ethtool`] (RSS and flow rules), [`crate::sys::netns`] (other namespaces) and
//! `threads` (placement, with `net` for the NICs a process uses).

pub mod ethtool;
mod host;
mod hw;
mod net;
mod nic;
mod sysfs;
mod threads;
pub mod xdp;

pub use crate::sys::netns::{NetnsInfo, NetnsKind};
pub use ethtool::{FlowRule, Steering, Support};
pub use host::{
    Cache, HostConfig, HostTopology, Irq, IrqBalance, NumaNode, Package, Pu, ThreadInfo,
};
pub use nic::{Nic, RxQueue, TxQueue, XdpMode, label};
pub use xdp::XdpProg;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::sample::RawTask;
use crate::sys::cpuset::CpuSet;
use crate::sys::netns;
use crate::sys::sysroot::Sysroot;

/// Where the CPU structure (packages, caches, cores, PUs) comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuSource {
    /// hwloc discovery of this machine.
    Live,
    /// An hwloc XML export (`lstopo --of xml`).
    Xml(PathBuf),
    /// An hwloc synthetic description (`pack:2 [numa] core:12 pu:2`).
    Synthetic(String),
    /// The sysroot's `/sys/devices/system/{cpu,node}` files, no hwloc.
    Sysfs,
}

/// CPU sample for "busy" on live hosts: long enough that a thread spinning
/// at 20 % shows, short enough to keep the check well under 200 ms.
const SAMPLE_MS: u64 = 25;

/// What [`load`] reads.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub sysroot: Sysroot,
    pub cpu_source: CpuSource,
    /// Measure CPU use of pinned threads over this interval (live only), so
    /// "busy" means busy rather than "pinned narrowly". `None` skips it.
    pub sample: Option<Duration>,
    /// Every thread with its name and affinity, when the caller already
    /// has them (the task sampler): the scan then reads per-process files
    /// only, not two files per thread. `None`: walk /proc.
    pub known_threads: Option<Vec<RawTask>>,
    /// Every process on the host, when the caller has the list: the
    /// namespaces processes hold are then found without listing /proc
    /// (`netns::enumerate_live`). `None`: from `known_threads` ([`load`]
    /// only), else /proc.
    pub processes: Option<Vec<u32>>,
}

impl LoadOptions {
    /// An explicit hwloc XML file or synthetic description wins; a fake
    /// sysroot may carry its own `hwloc.xml` or `hwloc.synthetic`; otherwise
    /// a fake root falls back to its sysfs files (the live hwloc view would
    /// describe the wrong machine).
    pub fn new(
        sysroot: Sysroot,
        hwloc_xml: Option<PathBuf>,
        hwloc_synthetic: Option<String>,
    ) -> Self {
        let cpu_source = if let Some(x) = hwloc_xml {
            CpuSource::Xml(x)
        } else if let Some(s) = hwloc_synthetic {
            CpuSource::Synthetic(s)
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
            known_threads: None,
            processes: None,
        }
    }
}

/// Only what device configuration needs (`model::devconf`): IRQs, NICs of
/// every namespace with their queues, XDP, RSS and flow rules. No hwloc,
/// no thread walk: batch and `--serve` join this to every frame's devices,
/// and a host with 40,000 threads must not pay a thread list for it. NIC
/// locality comes from sysfs only.
pub fn load_devices(opts: &LoadOptions) -> anyhow::Result<HostTopology> {
    let root = &opts.sysroot;
    let mut topo = HostTopology::of(root);
    let processes = opts.processes.as_deref();
    load_network(root, &hw::NicLocality::new(), processes, &mut topo)?;
    crate::sys::sanitize::Untrusted::sanitize(&mut topo);
    Ok(topo)
}

/// IRQs, then the NICs of every namespace with their XDP and steering:
/// the part [`load`] and [`load_devices`] share. `locality` places NICs
/// (hwloc's view; empty for sysfs only).
fn load_network(
    root: &Sysroot,
    locality: &hw::NicLocality,
    processes: Option<&[u32]>,
    topo: &mut HostTopology,
) -> anyhow::Result<()> {
    topo.irqs = sysfs::load_irqs(root, &mut topo.notes)?;
    topo.nics = sysfs::load_nics(
        root,
        &mut topo.irqs,
        locality,
        &sysfs::NicScope::OWN,
        &mut topo.notes,
    )?;
    xdp::fill(root, &mut topo.nics, &mut topo.notes);
    ethtool::fill(root, &mut topo.nics, &mut topo.notes);
    load_other_namespaces(root, locality, processes, topo);
    Ok(())
}

/// NICs of every other network namespace, appended to `topo.nics`; see
/// [`netns`]. Never fails: a namespace that cannot be read becomes a note.
fn load_other_namespaces(
    root: &Sysroot,
    hw: &hw::NicLocality,
    processes: Option<&[u32]>,
    topo: &mut HostTopology,
) {
    type NsRead = (Vec<Nic>, Vec<Irq>, Vec<String>);
    let read = |nsroot: &Sysroot, proc_net: &str, netns: &str, irqs: &[Irq]| -> NsRead {
        let mut irqs = irqs.to_vec();
        let mut notes = Vec::new();
        let scope = sysfs::NicScope { proc_net, netns };
        let mut nics = match sysfs::load_nics(nsroot, &mut irqs, hw, &scope, &mut notes) {
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
    for found in netns::enumerate_live(processes) {
        let name = found.info.name.clone();
        let irqs = topo.irqs.clone();
        let live = Sysroot::new("/");
        match netns::with_netns(&found.path, || {
            read(&live, "/proc/thread-self/net", &name, &irqs)
        }) {
            Ok(r) => merge(found.info, r, topo),
            Err(e) => failed.push(format!("{name}: {e:#}")),
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
    Ok(sysfs::load_host(root, &mut notes)?.isolated())
}

/// Reads the whole host. Fails only when the CPU structure cannot be had at
/// all; anything else missing is recorded in `notes` and judged as unknown.
pub fn load(opts: &LoadOptions) -> anyhow::Result<HostTopology> {
    let root = &opts.sysroot;
    let mut topo = HostTopology::of(root);
    let cpus = hw::load_cpus(root, &opts.cpu_source)?;
    topo.cpu_source = cpus.source;
    topo.pus = cpus.pus;
    topo.numa_nodes = cpus.numa_nodes;
    topo.packages = cpus.packages;
    topo.caches = cpus.caches;
    topo.notes.extend(cpus.notes);

    topo.online = match root.read_opt("/sys/devices/system/cpu/online") {
        Some(s) => CpuSet::parse_list(&s).with_context(|| {
            root.path("/sys/devices/system/cpu/online")
                .display()
                .to_string()
        })?,
        None => {
            topo.notes.push(
                "/sys/devices/system/cpu/online unreadable: all CPUs in the topology taken as online"
                    .into(),
            );
            CpuSet::from_cpus(topo.pus.iter().map(|p| p.cpu))
        }
    };

    topo.host = sysfs::load_host(root, &mut topo.notes)?;
    let processes = opts.processes.clone().or_else(|| {
        let threads = opts.known_threads.as_deref()?;
        Some(threads.iter().map(|t| t.tgid).collect::<Vec<u32>>())
    });
    load_network(root, &cpus.nic_locality, processes.as_deref(), &mut topo)?;
    let scan = threads::load_threads(
        root,
        &topo.online,
        &topo.nics,
        opts.sample,
        opts.known_threads.as_deref(),
        &mut topo.notes,
    )?;
    topo.threads = scan.threads;
    if let Some(ib) = scan.irqbalance_pid {
        topo.host.irqbalance = Some(sysfs::load_irqbalance(root, ib));
    }
    // Thread names, IRQ and NIC names come from other users and drivers.
    crate::sys::sanitize::Untrusted::sanitize(&mut topo);
    Ok(topo)
}
