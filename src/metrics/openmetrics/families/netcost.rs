//! Samples for the cost of a received packet (`model::cost`) and each
//! device's receive configuration (`model::devconf`): gauges over the last
//! interval, and info rows from the topology. Read from [`Scrape::net`],
//! the network part of the model's frame.

use super::Samples;
use super::node;
use super::scrape::Scrape;
use crate::model::devconf::DeviceConfig;
use crate::model::frame::DeviceView;

pub(super) fn host_per_packet(s: &Scrape, o: &mut Samples) {
    if let Some(v) = s.net.as_ref().and_then(|f| f.summary.net_rx_ns_per_packet) {
        o.push((vec![], v / 1e9));
    }
}

/// Seconds of NET_RX per received byte from the model's percent of one
/// CPU per Gbit/s: (pct / 100) CPU-seconds per second over (1e9 / 8) bytes
/// per second. Metrics are in base units (seconds, bytes); the model keeps
/// the figure people quote, which dashboards get back by × 1.25e10.
fn per_byte(pct_per_gbps: f64) -> f64 {
    pct_per_gbps / 100.0 / (1e9 / 8.0)
}

pub(super) fn host_per_byte(s: &Scrape, o: &mut Samples) {
    if let Some(v) = s.net.as_ref().and_then(|f| f.summary.net_rx_pct_per_gbps) {
        o.push((vec![], per_byte(v)));
    }
}

/// Why the host's figure per byte is missing, when the model knows: a
/// missing gauge alone reads as "no traffic", and a dashboard should say
/// "unknown, because".
pub(super) fn host_per_byte_unknown(s: &Scrape, o: &mut Samples) {
    let gap = s
        .net
        .as_ref()
        .and_then(|f| f.summary.net_rx_pct_per_gbps_unknown.as_ref());
    if let Some(g) = gap {
        o.push((vec![("cause", g.cause.as_str().to_string())], 1.0));
    }
}

pub(super) fn cpu_per_packet(s: &Scrape, o: &mut Samples) {
    for c in s.net.iter().flat_map(|f| &f.cpus) {
        if let Some(v) = c.net_rx_ns_per_packet {
            o.push((vec![("cpu", c.cpu.to_string())], v / 1e9));
        }
    }
}

/// Per node, the node's NET_RX time over its packets: each CPU's cost per
/// packet weighted by its packets (per packet × packets per second is its
/// NET_RX time per second), so a node's figure is what its packets cost,
/// not an average that an idle CPU's one odd packet could swing.
pub(super) fn node_per_packet(s: &Scrape, o: &mut Samples) {
    let mut nodes: Vec<(String, f64, f64)> = Vec::new();
    for c in s.net.iter().flat_map(|f| &f.cpus) {
        let Some(pp) = c.net_rx_ns_per_packet else {
            continue;
        };
        let node = node::node_of(s.host, c.cpu);
        let (ns, packets) = (pp * c.packets_per_s, c.packets_per_s);
        match nodes.iter_mut().find(|n| n.0 == node) {
            Some(n) => {
                n.1 += ns;
                n.2 += packets;
            }
            None => nodes.push((node, ns, packets)),
        }
    }
    for (node, ns, packets) in nodes {
        if packets > 0.0 {
            o.push((vec![("node", node)], ns / packets / 1e9));
        }
    }
}

fn per_device(s: &Scrape, o: &mut Samples, f: impl Fn(&DeviceView) -> Option<f64>) {
    for d in s.net.iter().flat_map(|f| &f.devices) {
        if let Some(v) = f(d) {
            o.push((
                vec![("device", d.name.clone()), ("netns", d.netns.clone())],
                v,
            ));
        }
    }
}

pub(super) fn device_per_packet(s: &Scrape, o: &mut Samples) {
    per_device(s, o, |d| d.net_rx_ns_per_packet.map(|v| v / 1e9));
}

pub(super) fn device_per_byte(s: &Scrape, o: &mut Samples) {
    per_device(s, o, |d| d.net_rx_pct_per_gbps.map(per_byte));
}

fn configs<'a>(s: &'a Scrape) -> impl Iterator<Item = (&'a DeviceView, &'a DeviceConfig)> {
    s.net
        .iter()
        .flat_map(|f| &f.devices)
        .filter_map(|d| Some((d, d.config.as_ref()?)))
}

fn base(d: &DeviceView) -> Vec<(&'static str, String)> {
    vec![("device", d.name.clone()), ("netns", d.netns.clone())]
}

pub(super) fn xdp(s: &Scrape, o: &mut Samples) {
    for (d, c) in configs(s) {
        if c.xdp_progs.is_empty() {
            let mut l = base(d);
            l.push(("mode", c.xdp.as_str().to_string()));
            l.push(("prog_id", "0".into()));
            o.push((l, 1.0));
        }
        for p in &c.xdp_progs {
            let mut l = base(d);
            l.push(("mode", p.mode.as_str().to_string()));
            l.push(("prog_id", p.id.to_string()));
            o.push((l, 1.0));
        }
    }
}

pub(super) fn rx_queue(s: &Scrape, o: &mut Samples) {
    for (d, c) in configs(s) {
        for q in &c.rx_queues {
            let mut l = base(d);
            l.push(("queue", q.queue.to_string()));
            l.push(("rps_cpus", q.rps_cpus.to_string()));
            l.push(("irq", q.irq.map_or(String::new(), |i| i.to_string())));
            l.push((
                "irq_cpus",
                q.irq_cpus.as_ref().map_or(String::new(), |c| c.to_string()),
            ));
            o.push((l, 1.0));
        }
    }
}

pub(super) fn rss_weight(s: &Scrape, o: &mut Samples) {
    for (d, c) in configs(s) {
        for q in &c.rx_queues {
            if let Some(w) = q.rss_weight {
                let mut l = base(d);
                l.push(("queue", q.queue.to_string()));
                o.push((l, f64::from(w)));
            }
        }
    }
}

pub(super) fn flow_rule(s: &Scrape, o: &mut Samples) {
    for (d, c) in configs(s) {
        for r in &c.flow_rules {
            let mut l = base(d);
            l.push(("location", r.location.to_string()));
            l.push(("flow", r.flow.clone()));
            l.push(("action", r.action.clone()));
            o.push((l, 1.0));
        }
    }
}
