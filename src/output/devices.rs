//! The device table (every namespace), shared by the TUI's Devices/NAPI
//! view and batch text: each device, its napi instances (RX queues) under
//! it, and its configuration from `DeviceView::config`. Also batch text's
//! cost line.

use std::fmt::Write as _;

use super::fields::{Align, Cell, Field, Tone, batch_columns, cpu_list, text_line};
use super::format::fmt_rate;
use crate::model::cost::napi_of;
use crate::model::devconf::DeviceConfig;
use crate::model::frame::{DeviceView, Frame, NapiView, Summary};
use crate::sample::Source;
use crate::sys::cpuset::CpuSet;
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

/// A column of the device table, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DevField {
    Name,
    RxPkts,
    RxBits,
    TxPkts,
    TxBits,
    Drops,
    NsPkt,
    PctGbit,
    Polls,
    PktPoll,
    BudgetUse,
    Exhausted,
    Cpus,
    Xdp,
    Rps,
    QueueIrqs,
}

use DevField as D;

impl Field for DevField {
    const ALL: &'static [Self] = &[
        D::Name,
        D::RxPkts,
        D::RxBits,
        D::TxPkts,
        D::TxBits,
        D::Drops,
        D::NsPkt,
        D::PctGbit,
        D::Polls,
        D::PktPoll,
        D::BudgetUse,
        D::Exhausted,
        D::Cpus,
        D::Xdp,
        D::Rps,
        D::QueueIrqs,
    ];
    /// The view is about receive work: transmit rates go first, then
    /// configuration detail the Topology view also shows.
    const PRIORITY: &'static [Self] = &[
        D::Name,
        D::RxPkts,
        D::NsPkt,
        D::Drops,
        D::Polls,
        D::PktPoll,
        D::BudgetUse,
        D::Exhausted,
        D::Cpus,
        D::Xdp,
        D::QueueIrqs,
        D::RxBits,
        D::PctGbit,
        D::Rps,
        D::TxPkts,
        D::TxBits,
    ];

    fn key(self) -> &'static str {
        match self {
            D::Name => "device",
            D::RxPkts => "rx_pkt_s",
            D::RxBits => "rx_bit_s",
            D::TxPkts => "tx_pkt_s",
            D::TxBits => "tx_bit_s",
            D::Drops => "drop_s",
            D::NsPkt => "ns_pkt",
            D::PctGbit => "pct_gbit",
            D::Polls => "polls_s",
            D::PktPoll => "pkt_poll",
            D::BudgetUse => "budget",
            D::Exhausted => "exh_s",
            D::Cpus => "cpus",
            D::Xdp => "xdp",
            D::Rps => "rps",
            D::QueueIrqs => "queue_irqs",
        }
    }

    fn title(self) -> &'static str {
        match self {
            D::Name => "DEVICE/NAPI",
            D::RxPkts => "RXPKT/s",
            D::RxBits => "RXBIT/s",
            D::TxPkts => "TXPKT/s",
            D::TxBits => "TXBIT/s",
            D::Drops => "DROP/s",
            D::NsPkt => "NS/PKT",
            D::PctGbit => "%/GBIT",
            D::Polls => "POLLS/s",
            D::PktPoll => "PKT/POLL",
            D::BudgetUse => "BUDGET%",
            D::Exhausted => "EXH/s",
            D::Cpus => "CPUS",
            D::Xdp => "XDP",
            D::Rps => "RPS",
            D::QueueIrqs => "QUEUE:IRQ→CPUS",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            D::Name => {
                "the device, `eth0 (netns NAME)` outside nettop's namespace; under it `└ napi ID`, one line per napi instance (RX queue)"
            }
            D::RxPkts => "packets received per second (a napi line: packets it polled)",
            D::RxBits => "bits received per second",
            D::TxPkts => "packets sent per second",
            D::TxBits => "bits sent per second",
            D::Drops => "received packets dropped per second",
            D::NsPkt => {
                "NET_RX softirq time per packet its napi instances polled, in ns (`-` when the packets went through the per-CPU backlog)"
            }
            D::PctGbit => "NET_RX time, in % of one CPU, per Gbit/s received",
            D::Polls => "napi polls per second",
            D::PktPoll => "packets per napi poll; on a napi line over its budget (`22.5/64`)",
            D::BudgetUse => {
                "a napi line's packets per poll as a share of its budget (a bar in the TUI): near 100 % the queue is never drained"
            }
            D::Exhausted => "polls per second that used the whole budget (more was waiting)",
            D::Cpus => "the CPUs that polled it",
            D::Xdp => {
                "XDP attachment: `none`, `native`, `generic` (costs several times native), `offload`, `unknown`"
            }
            D::Rps => "the CPUs RPS steers its packets to (all RX queues), `-` when off",
            D::QueueIrqs => {
                "each RX queue's IRQ and the CPUs it lands on, `qQUEUE:IRQ→CPUS`, with its RSS weight (`wN`) and the flow rules steering to it (`rN`); device IRQs of no queue bare"
            }
        }
    }

    fn width(self) -> u16 {
        match self {
            D::Name => 20,
            D::RxPkts | D::RxBits | D::TxPkts | D::TxBits => 8,
            D::Drops | D::NsPkt | D::PctGbit | D::Exhausted => 6,
            D::Polls => 7,
            D::PktPoll => 9,
            D::BudgetUse | D::Cpus => 12,
            D::Xdp => 7,
            D::Rps => 8,
            D::QueueIrqs => 16,
        }
    }

    fn align(self) -> Align {
        match self {
            D::Name | D::BudgetUse | D::Cpus | D::Xdp | D::Rps | D::QueueIrqs => Align::Left,
            _ => Align::Right,
        }
    }
}

/// A device's napi instances summed: what its line shows of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NapiTotals {
    pub polls_per_s: f64,
    pub packets_per_s: f64,
    pub budget_exhausted_per_s: f64,
    /// The CPUs that polled any of them, ascending.
    pub cpus: Vec<u32>,
}

impl NapiTotals {
    fn of<'a>(napis: impl IntoIterator<Item = &'a NapiView>) -> Self {
        let mut t = NapiTotals::default();
        for n in napis {
            t.polls_per_s += n.polls_per_s;
            t.packets_per_s += n.packets_per_s;
            t.budget_exhausted_per_s += n.budget_exhausted_per_s;
            t.cpus.extend(&n.cpus);
        }
        t.cpus.sort_unstable();
        t.cpus.dedup();
        t
    }
}

/// One line of the device table.
#[derive(Clone, Debug, PartialEq)]
pub enum DevLine {
    /// A device: its label, its index in `Frame::devices` (`None` for napi
    /// instances of no listed device, the backlog, shown under their own
    /// name) and its napi instances summed.
    Device {
        label: String,
        idx: Option<usize>,
        napi: NapiTotals,
    },
    /// A napi instance, by its index in `Frame::napi`, under its device.
    Napi(usize),
}

/// Each device by label (with its namespace when not nettop's), then its
/// napi instances by id.
pub fn lines(f: &Frame) -> Vec<DevLine> {
    let mut devs: Vec<(String, Option<usize>)> = f
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.label(), Some(i)))
        .collect();
    let owner = |n: &NapiView| f.devices.iter().position(|d| napi_of(n, d));
    let owners: Vec<Option<usize>> = f.napi.iter().map(owner).collect();
    for (n, o) in f.napi.iter().zip(&owners) {
        if o.is_none() && !devs.iter().any(|(l, i)| i.is_none() && *l == n.dev) {
            devs.push((n.dev.clone(), None));
        }
    }
    devs.sort();
    let mut out = Vec::with_capacity(devs.len() + f.napi.len());
    for (label, idx) in devs {
        let mut napis: Vec<usize> = (0..f.napi.len())
            .filter(|&i| match (owners[i], idx) {
                (Some(o), Some(d)) => o == d,
                (None, None) => f.napi[i].dev == label,
                _ => false,
            })
            .collect();
        napis.sort_by_key(|&i| f.napi[i].napi_id);
        let napi = NapiTotals::of(napis.iter().map(|&i| &f.napi[i]));
        out.push(DevLine::Device { label, idx, napi });
        out.extend(napis.into_iter().map(DevLine::Napi));
    }
    out
}

/// What a cell needs besides its line.
#[derive(Clone, Copy, Debug, Default)]
pub struct DevCtx {
    /// BPF measured the frame's napi figures and costs.
    pub traced: bool,
    /// The front end is still reading the topology: a device without
    /// configuration shows `…`, so a blank never reads as "none".
    pub config_pending: bool,
}

impl DevCtx {
    pub fn of(f: &Frame, config_pending: bool) -> Self {
        DevCtx {
            traced: f.source == Source::Bpf,
            config_pending,
        }
    }
}

/// The union of its RX queues' RPS CPUs, `-` when RPS is off.
fn rps(c: &DeviceConfig) -> String {
    let all = c
        .rx_queues
        .iter()
        .fold(CpuSet::new(), |a, q| a.union(&q.rps_cpus));
    if all.is_empty() {
        "-".into()
    } else {
        all.to_list()
    }
}

/// "q0:38→0 w1 q1:39→1 w3 r1 40": each queue's IRQ, where it lands, its
/// RSS weight and the flow rules steering to it; then the device's IRQs
/// no queue claims.
fn queue_irqs(c: &DeviceConfig) -> String {
    let mut v: Vec<String> = Vec::new();
    for q in &c.rx_queues {
        let Some(irq) = q.irq else { continue };
        let mut s = format!("q{}:{irq}", q.queue);
        if let Some(cpus) = &q.irq_cpus {
            let _ = write!(s, "→{cpus}");
        }
        if let Some(w) = q.rss_weight {
            let _ = write!(s, " w{w}");
        }
        if !q.flow_rules.is_empty() {
            let _ = write!(s, " r{}", q.flow_rules.len());
        }
        v.push(s);
    }
    for irq in &c.irqs {
        if !c.rx_queues.iter().any(|q| q.irq == Some(*irq)) {
            v.push(irq.to_string());
        }
    }
    if v.is_empty() {
        "-".into()
    } else {
        v.join(" ")
    }
}

impl DevField {
    /// Measured by BPF only: `n/a` without it.
    fn traced_only(self) -> bool {
        matches!(
            self,
            D::NsPkt | D::PctGbit | D::Polls | D::PktPoll | D::BudgetUse | D::Exhausted | D::Cpus
        )
    }

    /// The cell of `line` in this column, the same in every front end.
    pub fn cell(self, f: &Frame, line: &DevLine, cx: &DevCtx) -> Cell {
        if !cx.traced && self.traced_only() {
            return Cell::plain("n/a");
        }
        match line {
            DevLine::Device { label, idx, napi } => {
                let d = idx.and_then(|i| f.devices.get(i));
                self.device_cell(label, d, napi, cx)
            }
            DevLine::Napi(j) => f
                .napi
                .get(*j)
                .map_or_else(Cell::empty, |n| self.napi_cell(n)),
        }
    }

    fn device_cell(
        self,
        label: &str,
        d: Option<&DeviceView>,
        napi: &NapiTotals,
        cx: &DevCtx,
    ) -> Cell {
        let rate =
            |v: fn(&DeviceView) -> f64| Cell::plain(d.map_or("-".into(), |d| fmt_rate(v(d))));
        let config = |text: fn(&DeviceConfig) -> Cell| match d.and_then(|d| d.config.as_ref()) {
            Some(c) => text(c),
            None if cx.config_pending => Cell::plain("…"),
            None => Cell::plain("-"),
        };
        match self {
            D::Name => Cell::new(label, Tone::Accent),
            D::RxPkts => rate(|d| d.rx_packets_per_s),
            D::RxBits => rate(|d| d.rx_bytes_per_s * 8.0),
            D::TxPkts => rate(|d| d.tx_packets_per_s),
            D::TxBits => rate(|d| d.tx_bytes_per_s * 8.0),
            D::Drops => {
                let v = d.map_or(0.0, |d| d.rx_dropped_per_s);
                Cell::marked(fmt_rate(v), v > 0.0, Tone::Warn)
            }
            D::NsPkt => Cell::plain(opt(d.and_then(|d| d.net_rx_ns_per_packet), 0)),
            D::PctGbit => Cell::plain(opt(d.and_then(|d| d.net_rx_pct_per_gbps), 1)),
            D::Polls => Cell::plain(fmt_rate(napi.polls_per_s)),
            D::PktPoll => Cell::plain(if napi.polls_per_s > 0.0 {
                format!("{:.1}", napi.packets_per_s / napi.polls_per_s)
            } else {
                "-".into()
            }),
            D::BudgetUse => Cell::empty(),
            D::Exhausted => Cell::marked(
                fmt_rate(napi.budget_exhausted_per_s),
                napi.budget_exhausted_per_s > 0.0,
                Tone::Warn,
            ),
            D::Cpus => Cell::plain(cpu_list(&napi.cpus)),
            D::Xdp => {
                config(|c| Cell::marked(c.xdp.as_str(), c.xdp == XdpMode::Generic, Tone::Warn))
            }
            D::Rps => config(|c| Cell::plain(rps(c))),
            D::QueueIrqs => config(|c| Cell::plain(queue_irqs(c))),
        }
    }

    fn napi_cell(self, n: &NapiView) -> Cell {
        let used = (n.work_per_poll / f64::from(n.budget.max(1))).clamp(0.0, 1.0);
        match self {
            D::Name => Cell::plain(format!(" └ napi {}", n.napi_id)),
            D::RxPkts => Cell::plain(fmt_rate(n.packets_per_s)),
            D::NsPkt => Cell::plain(opt(n.net_rx_ns_per_packet, 0)),
            D::Polls => Cell::plain(fmt_rate(n.polls_per_s)),
            D::PktPoll => Cell::plain(format!("{:.1}/{}", n.work_per_poll, n.budget)),
            D::BudgetUse => Cell::new(format!("{:.0}%", used * 100.0), Tone::Bar(used)),
            D::Exhausted => Cell::marked(
                fmt_rate(n.budget_exhausted_per_s),
                n.budget_exhausted_per_s > 0.0,
                Tone::Warn,
            ),
            D::Cpus => Cell::plain(cpu_list(&n.cpus)),
            D::RxBits
            | D::TxPkts
            | D::TxBits
            | D::Drops
            | D::PctGbit
            | D::Xdp
            | D::Rps
            | D::QueueIrqs => Cell::empty(),
        }
    }
}

/// The lines batch text prints: devices that received or sent anything
/// in the interval (a backlog: that was polled), each with its napi
/// instances that were polled.
fn active_lines(f: &Frame) -> Vec<DevLine> {
    let mut shown = false;
    lines(f)
        .into_iter()
        .filter(|l| match l {
            DevLine::Device { idx, napi, .. } => {
                shown = match idx.and_then(|i| f.devices.get(i)) {
                    Some(d) => d.rx_packets_per_s > 0.0 || d.tx_packets_per_s > 0.0,
                    None => napi.polls_per_s > 0.0,
                };
                shown
            }
            DevLine::Napi(j) => shown && f.napi.get(*j).is_some_and(|n| n.polls_per_s > 0.0),
        })
        .collect()
}

/// The device table of batch text: every column of [`DevField`] but the
/// TUI's own, the active devices and napi instances.
pub fn device_table(out: &mut String, f: &Frame) {
    let lines = active_lines(f);
    if lines.is_empty() {
        return;
    }
    let cx = DevCtx::of(f, false);
    let cols: Vec<DevField> = batch_columns();
    out.push('\n');
    text_line(out, &cols, |c| c.title().into());
    for l in &lines {
        text_line(out, &cols, |c| c.cell(f, l, &cx).text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        super::super::fields::check_table::<DevField>();
    }
}
