//! Batch text: the cost line and the device table (every namespace), with
//! each device's configuration when the frame carries it.

use std::fmt::Write as _;

use crate::model::frame::{DeviceView, Frame, Summary};
use crate::topology::XdpMode;

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.prec$}"))
}

/// The host's receive cost in words, for batch text and the TUI alike:
/// "NET_RX 812 ns/pkt, 3.1 % of a CPU per Gbit/s received", or with the
/// second figure "n/a" and its reason when the received bytes it divides
/// by are known to be incomplete. `None` when there is no figure at all.
pub fn cost_text(s: &Summary) -> Option<String> {
    let per_gbps = match (&s.net_rx_pct_per_gbps_unknown, s.net_rx_pct_per_gbps) {
        (Some(gap), _) => format!("n/a % of a CPU per Gbit/s received ({})", gap.why),
        (None, v) => format!("{} % of a CPU per Gbit/s received", opt(v, 1)),
    };
    let unknown = s.net_rx_pct_per_gbps_unknown.is_some();
    if s.net_rx_ns_per_packet.is_none() && s.net_rx_pct_per_gbps.is_none() && !unknown {
        return None;
    }
    Some(format!(
        "NET_RX {} ns/pkt, {per_gbps}",
        opt(s.net_rx_ns_per_packet, 0)
    ))
}

/// "Cost: NET_RX 812 ns/pkt, 3.1 % of a CPU per Gbit/s received".
pub fn cost_line(out: &mut String, f: &Frame) {
    if let Some(t) = cost_text(&f.summary) {
        let _ = writeln!(out, "Cost: {t}");
    }
}

fn xdp(m: XdpMode) -> &'static str {
    match m {
        XdpMode::Unknown => "?",
        XdpMode::None => "-",
        XdpMode::Native => "native",
        XdpMode::Generic => "generic",
        XdpMode::Offload => "offload",
    }
}

fn config_words(d: &DeviceView) -> String {
    let Some(c) = &d.config else {
        return String::new();
    };
    let mut w = vec![format!("xdp {}", xdp(c.xdp))];
    let rps: Vec<String> = c
        .rx_queues
        .iter()
        .filter(|q| !q.rps_cpus.is_empty())
        .map(|q| format!("rx-{}→{}", q.queue, q.rps_cpus))
        .collect();
    if !rps.is_empty() {
        w.push(format!("rps {}", rps.join(" ")));
    }
    let irqs: Vec<String> = c
        .rx_queues
        .iter()
        .filter_map(|q| {
            let irq = q.irq?;
            let cpus = q.irq_cpus.as_ref().map_or("?".into(), |c| c.to_string());
            let weight = q.rss_weight.map_or(String::new(), |w| format!(" w{w}"));
            Some(format!("rx-{}:irq{irq}→{cpus}{weight}", q.queue))
        })
        .collect();
    if !irqs.is_empty() {
        w.push(irqs.join(" "));
    }
    if !c.flow_rules.is_empty() {
        w.push(format!("{} flow rule(s)", c.flow_rules.len()));
    }
    w.join("  ")
}

/// Devices that received or sent anything in the interval.
pub fn device_table(out: &mut String, f: &Frame) {
    let active: Vec<&DeviceView> = f
        .devices
        .iter()
        .filter(|d| d.rx_packets_per_s > 0.0 || d.tx_packets_per_s > 0.0)
        .collect();
    if active.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nDEV                          rxpkt/s  rxMbit/s  txpkt/s  ns/pkt  %/Gbit  CONFIG"
    );
    for d in active {
        let _ = writeln!(
            out,
            "{:<28} {:>8} {:>9.1} {:>8} {:>7} {:>7}  {}",
            d.label(),
            super::format::fmt_rate(d.rx_packets_per_s),
            d.rx_bytes_per_s * 8.0 / 1e6,
            super::format::fmt_rate(d.tx_packets_per_s),
            opt(d.net_rx_ns_per_packet, 0),
            opt(d.net_rx_pct_per_gbps, 1),
            config_words(d)
        );
    }
}
