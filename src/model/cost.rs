//! What a received packet costs: NET_RX softirq time per packet, per CPU,
//! per napi instance and per device, and CPU % per Gbit/s received — the
//! units the field states its results in (generic vs native XDP, VXLAN
//! overhead per Gbit/s).
//!
//! The BPF collector times NET_RX per CPU and counts napi packets per CPU
//! and per napi instance, but cannot time a single napi poll (the
//! tracepoint fires after it, with no entry). So a napi instance is charged
//! each CPU's cost per packet for the packets it had polled there: exact
//! when one napi instance has a CPU to itself, a packet-weighted share
//! otherwise. A device is the sum of its napi instances. Packets a device
//! hands to the per-CPU backlog (veth without XDP or GRO, RPS targets) are
//! the backlog's, not the device's.

use std::collections::BTreeMap;

use super::frame::{DeviceView, NapiView, Summary};
use crate::sample::DeviceGap;

/// One CPU's NET_RX time and napi packets over the interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuCost {
    pub net_rx_ns: u64,
    pub packets: u64,
}

impl CpuCost {
    /// NET_RX nanoseconds per packet; `None` without packets.
    pub fn per_packet(&self) -> Option<f64> {
        (self.packets > 0).then(|| self.net_rx_ns as f64 / self.packets as f64)
    }
}

/// Per-packet cost of a napi instance from the packets it had polled on
/// each CPU: returns (ns per packet, NET_RX ns charged to it).
pub fn napi_charge(
    work_by_cpu: &BTreeMap<u32, u64>,
    cpus: &BTreeMap<u32, CpuCost>,
) -> (Option<f64>, f64) {
    let mut ns = 0.0;
    let mut packets = 0u64;
    for (cpu, w) in work_by_cpu {
        if let Some(c) = cpus.get(cpu).and_then(CpuCost::per_packet) {
            ns += c * *w as f64;
            packets = packets.saturating_add(*w);
        }
    }
    ((packets > 0).then(|| ns / packets as f64), ns)
}

/// CPU % of one CPU per Gbit/s: `cpu_pct` spent while receiving
/// `rx_bytes_per_s`. `None` below 1 kbit/s, where the ratio means nothing.
pub fn pct_per_gbps(cpu_pct: f64, rx_bytes_per_s: f64) -> Option<f64> {
    let gbps = rx_bytes_per_s * 8.0 / 1e9;
    (rx_bytes_per_s * 8.0 >= 1e3).then(|| cpu_pct / gbps)
}

/// True when `napi` belongs to `dev`: same namespace inode and ifindex when
/// both sides know them, else the same name in nettop's own namespace.
pub fn napi_of(napi: &NapiView, dev: &DeviceView) -> bool {
    if napi.netns_inode != 0 && dev.netns_inode != 0 && napi.ifindex != 0 {
        return napi.netns_inode == dev.netns_inode && napi.ifindex == dev.ifindex;
    }
    napi.dev == dev.name && dev.netns.is_empty()
}

/// Fills the devices' cost from their napi instances, and the summary's
/// host-wide figures. `dt_s` is the interval. `gap`: the sample's device
/// counters leave out devices (other namespaces nettop could not enter),
/// so the host's received bytes are a part of the whole: the host-wide
/// figure per Gbit/s is then unknown, with the gap as its reason, rather
/// than NET_RX time of all traffic over the bytes of some of it. The
/// per-packet figures count napi packets, which BPF sees in every
/// namespace, and each device's own figures are its own: both stay.
pub fn fill_devices(
    devices: &mut [DeviceView],
    napis: &[NapiView],
    cpus: &BTreeMap<u32, CpuCost>,
    dt_s: f64,
    gap: Option<&DeviceGap>,
    summary: &mut Summary,
) {
    for dev in devices.iter_mut() {
        let mine: Vec<&NapiView> = napis.iter().filter(|n| napi_of(n, dev)).collect();
        let ns: f64 = mine.iter().map(|n| n.net_rx_pct / 100.0 * dt_s * 1e9).sum();
        let packets: f64 = mine.iter().map(|n| n.packets_per_s * dt_s).sum();
        if packets >= 1.0 && dt_s > 0.0 {
            dev.net_rx_ns_per_packet = Some(ns / packets);
            let pct = ns / (dt_s * 1e9) * 100.0;
            dev.net_rx_pct = Some(pct);
            dev.net_rx_pct_per_gbps = pct_per_gbps(pct, dev.rx_bytes_per_s);
        }
    }
    let total = cpus.values().fold(CpuCost::default(), |a, c| CpuCost {
        net_rx_ns: a.net_rx_ns.saturating_add(c.net_rx_ns),
        packets: a.packets.saturating_add(c.packets),
    });
    summary.net_rx_ns_per_packet = total.per_packet();
    if dt_s > 0.0 && total.net_rx_ns > 0 {
        if let Some(g) = gap {
            summary.net_rx_pct_per_gbps = None;
            summary.net_rx_pct_per_gbps_unknown = Some(g.clone());
            return;
        }
        let pct = total.net_rx_ns as f64 / (dt_s * 1e9) * 100.0;
        let rx: f64 = devices.iter().map(|d| d.rx_bytes_per_s).sum();
        summary.net_rx_pct_per_gbps = pct_per_gbps(pct, rx);
    }
}
