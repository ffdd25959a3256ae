//! A device's configuration beside its counters: XDP mode and programs,
//! RPS/XPS masks, queue → IRQ → effective CPUs, RSS weights and flow rules.
//!
//! The counters come from samples, the configuration from the topology
//! (read live, or the one a recording carries), so every front end that has
//! a topology joins the two with `attach`: batch text and JSON, metrics,
//! the TUI. Pure: no I/O here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sys::cpuset::CpuSet;
use crate::topology::{FlowRule, HostTopology, Nic, Support, XdpMode, XdpProg};

/// One RX queue's steering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RxQueueConfig {
    pub queue: u32,
    /// `rps_cpus`; empty when RPS is off.
    pub rps_cpus: CpuSet,
    /// Its IRQ, when the IRQ names tell which queue is which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<u32>,
    /// Where that IRQ lands (effective affinity, else the allowed set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_cpus: Option<CpuSet>,
    /// RSS indirection entries pointing here; `None` when unknown or the
    /// device has no RSS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_weight: Option<u32>,
    /// Locations of flow rules steering to this queue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_rules: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TxQueueConfig {
    pub queue: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xps_cpus: Option<CpuSet>,
}

/// Everything the topology knows about a device's receive path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DeviceConfig {
    /// The pod, container or service owning the device's network
    /// namespace, when a process there names one (`NetnsInfo::workload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    pub xdp: XdpMode,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xdp_progs: Vec<XdpProg>,
    pub rx_queues: Vec<RxQueueConfig>,
    pub tx_queues: Vec<TxQueueConfig>,
    /// Device IRQs (MSI vectors and IRQs named after it).
    pub irqs: Vec<u32>,
    /// Whether the device has an RSS table and flow rules (`None`: not
    /// read); see `topology::ethtool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss: Option<Support>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntuple: Option<Support>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_rules: Vec<FlowRule>,
}

impl DeviceConfig {
    pub fn from_nic(nic: &Nic, topo: &HostTopology) -> Self {
        let qirq = nic.queue_irqs(&topo.irqs);
        let rx_queues = nic
            .rx_queues
            .iter()
            .map(|q| {
                let irq = qirq.get(&q.queue).copied();
                RxQueueConfig {
                    queue: q.queue,
                    rps_cpus: q.rps_cpus.clone(),
                    irq,
                    irq_cpus: irq.and_then(|i| topo.irq(i)).map(|i| i.lands_on()),
                    rss_weight: nic.rss_weight(q.queue),
                    flow_rules: nic.rules_to(q.queue).iter().map(|r| r.location).collect(),
                }
            })
            .collect();
        DeviceConfig {
            workload: topo.netns_of(nic).and_then(|n| n.workload.clone()),
            driver: nic.driver.clone(),
            xdp: nic.xdp,
            xdp_progs: nic.xdp_progs.clone(),
            rx_queues,
            tx_queues: nic
                .tx_queues
                .iter()
                .map(|q| TxQueueConfig {
                    queue: q.queue,
                    xps_cpus: q.xps_cpus.clone(),
                })
                .collect(),
            irqs: nic.irqs.clone(),
            rss: nic.steering.as_ref().map(|s| s.rss.clone()),
            ntuple: nic.steering.as_ref().map(|s| s.ntuple.clone()),
            flow_rules: nic
                .steering
                .as_ref()
                .map(|s| s.rules.clone())
                .unwrap_or_default(),
        }
    }
}

/// Every device's configuration from one topology, keyed as frames name
/// devices (name, namespace name): what a front end that reads the
/// topology less often than it gets frames keeps, to join to each new
/// frame ([`Frame::attach_config`](super::frame::Frame::attach_config)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceConfigs(BTreeMap<(String, String), DeviceConfig>);

impl DeviceConfigs {
    pub fn of(topo: &HostTopology) -> Self {
        let mut map = BTreeMap::new();
        for nic in &topo.nics {
            // The first of two same-named NICs, as a lookup by name finds.
            map.entry((nic.name.clone(), nic.netns.clone()))
                .or_insert_with(|| DeviceConfig::from_nic(nic, topo));
        }
        DeviceConfigs(map)
    }

    pub fn get(&self, name: &str, netns: &str) -> Option<&DeviceConfig> {
        self.0.get(&(name.to_string(), netns.to_string()))
    }
}
