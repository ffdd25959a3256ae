//! The network half of the topology model: a NIC with its queues, IRQs,
//! XDP attachment and steering, and how an IRQ's name tells the queue it
//! serves.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{FlowRule, Irq, Steering, XdpProg};
use crate::sys::cpuset::CpuSet;

/// How an XDP program is attached to a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    /// Not determined: a fake sysroot without an `xdp_mode` fixture file, or
    /// the rtnetlink dump failed (see the notes); see [`super::xdp`].
    #[default]
    Unknown,
    None,
    Native,
    Generic,
    Offload,
}

impl XdpMode {
    /// Its one spelling in every output: the TUI's and batch text's XDP
    /// column, the Topology view, JSON (serde) and the `mode` label of
    /// `nettop_device_xdp_info`.
    pub fn as_str(self) -> &'static str {
        match self {
            XdpMode::Unknown => "unknown",
            XdpMode::None => "none",
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
            XdpMode::Offload => "offload",
        }
    }
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
    /// Network namespace name ([`NetnsInfo::name`](crate::sys::netns::NetnsInfo::name)); empty for nettop's
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
