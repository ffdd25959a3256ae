//! Metric families for the cost of a received packet (`model::cost`) and
//! each device's receive configuration (`model::devconf`): gauges over the
//! last interval, and info families from the topology.

use super::{Family, Kind};
use crate::model::devconf::DeviceConfig;
use crate::model::frame::Frame;
use crate::topology::XdpMode;

fn mode(m: XdpMode) -> &'static str {
    match m {
        XdpMode::Unknown => "unknown",
        XdpMode::None => "none",
        XdpMode::Native => "native",
        XdpMode::Generic => "generic",
        XdpMode::Offload => "offload",
    }
}

/// Cost gauges of `frame` (computed without tasks, see
/// `model::compute::network`).
pub(super) fn cost_families(frame: &Frame) -> Vec<Family> {
    let mut host = Family::new(
        "nettop_net_rx_per_packet_seconds",
        Kind::Gauge,
        Some("seconds"),
        "NET_RX softirq time per packet over the last interval, all CPUs",
    );
    let mut gbps = Family::new(
        "nettop_net_rx_cpu_percent_per_gbps",
        Kind::Gauge,
        None,
        "NET_RX CPU (percent of one CPU) per Gbit/s received by all devices over the last interval",
    );
    if let Some(v) = frame.summary.net_rx_ns_per_packet {
        host.push(vec![], v / 1e9);
    }
    if let Some(v) = frame.summary.net_rx_pct_per_gbps {
        gbps.push(vec![], v);
    }
    let mut cpu = Family::new(
        "nettop_cpu_net_rx_per_packet_seconds",
        Kind::Gauge,
        Some("seconds"),
        "NET_RX softirq time per packet polled on this CPU over the last interval",
    );
    for c in &frame.cpus {
        if let Some(v) = c.net_rx_ns_per_packet {
            cpu.push(vec![("cpu", c.cpu.to_string())], v / 1e9);
        }
    }
    let mut dev = Family::new(
        "nettop_device_net_rx_per_packet_seconds",
        Kind::Gauge,
        Some("seconds"),
        "NET_RX time per packet polled by the device's napi instances over the last interval",
    );
    let mut dev_gbps = Family::new(
        "nettop_device_net_rx_cpu_percent_per_gbps",
        Kind::Gauge,
        None,
        "NET_RX CPU (percent of one CPU) charged to the device per Gbit/s it received",
    );
    for d in &frame.devices {
        let l = || vec![("device", d.name.clone()), ("netns", d.netns.clone())];
        if let Some(v) = d.net_rx_ns_per_packet {
            dev.push(l(), v / 1e9);
        }
        if let Some(v) = d.net_rx_pct_per_gbps {
            dev_gbps.push(l(), v);
        }
    }
    vec![host, gbps, cpu, dev, dev_gbps]
}

/// Configuration info families of the devices `frame` carries configs for.
pub(super) fn config_families(frame: &Frame) -> Vec<Family> {
    let mut xdp = Family::new(
        "nettop_device_xdp",
        Kind::Info,
        None,
        "XDP attachment per device: mode and program id (0 when none)",
    );
    let mut rxq = Family::new(
        "nettop_device_rx_queue",
        Kind::Info,
        None,
        "RX queue steering: RPS CPUs, IRQ and where it lands",
    );
    let mut weight = Family::new(
        "nettop_device_rx_queue_rss_weight",
        Kind::Gauge,
        None,
        "RSS indirection table entries pointing at the queue",
    );
    let mut rules = Family::new(
        "nettop_device_flow_rule",
        Kind::Info,
        None,
        "Flow-steering (ntuple) rule: match and action",
    );
    for d in &frame.devices {
        let Some(c): Option<&DeviceConfig> = d.config.as_ref() else {
            continue;
        };
        let base = || vec![("device", d.name.clone()), ("netns", d.netns.clone())];
        if c.xdp_progs.is_empty() {
            let mut l = base();
            l.push(("mode", mode(c.xdp).to_string()));
            l.push(("prog_id", "0".into()));
            xdp.push(l, 1.0);
        }
        for p in &c.xdp_progs {
            let mut l = base();
            l.push(("mode", mode(p.mode).to_string()));
            l.push(("prog_id", p.id.to_string()));
            xdp.push(l, 1.0);
        }
        for q in &c.rx_queues {
            let mut l = base();
            l.push(("queue", q.queue.to_string()));
            l.push(("rps_cpus", q.rps_cpus.to_string()));
            l.push(("irq", q.irq.map_or(String::new(), |i| i.to_string())));
            l.push((
                "irq_cpus",
                q.irq_cpus.as_ref().map_or(String::new(), |c| c.to_string()),
            ));
            rxq.push(l, 1.0);
            if let Some(w) = q.rss_weight {
                let mut l = base();
                l.push(("queue", q.queue.to_string()));
                weight.push(l, f64::from(w));
            }
        }
        for r in &c.flow_rules {
            let mut l = base();
            l.push(("location", r.location.to_string()));
            l.push(("flow", r.flow.clone()));
            l.push(("action", r.action.clone()));
            rules.push(l, 1.0);
        }
    }
    vec![xdp, rxq, weight, rules]
}
