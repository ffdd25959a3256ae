//! The detail pane's traffic section: what the process moves through its
//! sockets, the receive processing it causes, whose time paid for it
//! (robbed) and whose deliveries took its own time (robbed by). From the
//! Frame's traffic section only, so it reads the same in replay.

use super::LineKind;
use crate::model::frame::{Frame, TaskView};
use crate::model::traffic::RobPair;
use crate::output::format::{fmt_pct, fmt_rate};
use crate::output::traffic::{robbed, robbed_by};

/// Pairs the pane lists each way.
pub const PANE_PAIRS: usize = 5;

/// The process's pairs each way, as the pane keeps them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pairs {
    /// The frame counted traffic at all.
    pub known: bool,
    /// Whose deliveries ran on its time, largest first.
    pub robbed_by: Vec<RobPair>,
    /// Whose time its deliveries ran on, largest first.
    pub robbed: Vec<RobPair>,
}

pub fn pairs(f: &Frame, pid: u32) -> Pairs {
    let Some(t) = &f.traffic else {
        return Pairs::default();
    };
    let take = |v: Vec<&RobPair>| v.into_iter().take(PANE_PAIRS).cloned().collect();
    Pairs {
        known: true,
        robbed_by: take(robbed_by(t, pid)),
        robbed: take(robbed(t, pid)),
    }
}

fn who(pid: u32, comm: &str, pct: f64, pkts: f64) -> String {
    format!(
        "{comm} ({pid}) {}% · {} pkt/s",
        fmt_pct(pct),
        fmt_rate(pkts)
    )
}

pub fn lines(out: &mut Vec<(LineKind, String)>, t: &TaskView, p: &Pairs) {
    out.push((LineKind::Heading, "Traffic".into()));
    let Some(tr) = t.traffic.as_ref().filter(|_| p.known) else {
        out.push((
            LineKind::Note,
            "not counted: start nettop with --traffic (it needs BPF and Linux 6.3+)".into(),
        ));
        return;
    };
    out.push((
        LineKind::Normal,
        format!(
            "receives {}B/s ({} pkt/s) · sends {}B/s ({} calls/s) · CAUSED {}% of a CPU",
            fmt_rate(tr.rx_bytes_per_s),
            fmt_rate(tr.rx_pkts_per_s),
            fmt_rate(tr.tx_bytes_per_s),
            fmt_rate(tr.tx_pkts_per_s),
            fmt_pct(tr.caused_pct)
        ),
    ));
    if tr.protocols.len() > 1 {
        let by: Vec<String> = tr
            .protocols
            .iter()
            .map(|p| {
                format!(
                    "{} in {}B/s out {}B/s",
                    p.protocol,
                    fmt_rate(p.rx_bytes_per_s),
                    fmt_rate(p.tx_bytes_per_s)
                )
            })
            .collect();
        out.push((LineKind::Note, format!("by protocol: {}", by.join(" · "))));
    }
    let list = |v: &[RobPair], victim: bool| -> String {
        v.iter()
            .map(|r| {
                if victim {
                    who(r.beneficiary_pid, &r.beneficiary_comm, r.pct, r.pkts_per_s)
                } else {
                    who(r.victim_pid, &r.victim_comm, r.pct, r.pkts_per_s)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !p.robbed_by.is_empty() {
        out.push((
            LineKind::Warn,
            format!("robbed by: {}", list(&p.robbed_by, true)),
        ));
    }
    if !p.robbed.is_empty() {
        out.push((
            LineKind::Normal,
            format!("its deliveries ran on: {}", list(&p.robbed, false)),
        ));
    }
}
