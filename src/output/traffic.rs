//! Who robs whom, as text: the header's line on where NET_RX time went
//! (with the conservation check), and the victim x beneficiary tables of
//! batch text and the TUI's detail pane. Renders `Frame::traffic` only.

use std::fmt::Write as _;

use super::format::{fmt_pct, fmt_rate};
use crate::model::frame::Frame;
use crate::model::traffic::{RobPair, TrafficView};

/// Pairs printed per table in batch text.
pub const BATCH_PAIRS: usize = 10;

/// The header's traffic line: NET_RX time (and the RPS IPIs that brought
/// its packets) by what it did, and whether the parts add up. Nothing when
/// traffic is not counted (the collector said why once, at start; the
/// columns say `n/a`).
pub fn summary_line(out: &mut String, f: &Frame) {
    let Some(t) = &f.traffic else {
        return;
    };
    let c = &t.conservation;
    let mut parts = Vec::new();
    for b in t.buckets.iter().filter(|b| b.pct >= 0.05) {
        parts.push(format!("{} {}", b.name, fmt_pct(b.pct)));
    }
    let ratio = c
        .ratio
        .map_or_else(|| "-".to_string(), |r| format!("{:.1}%", r * 100.0));
    let ipis = if c.rps_ipi_pct >= 0.05 {
        format!(" + RPS IPIs {}%", fmt_pct(c.rps_ipi_pct))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "Traffic: NET_RX {}%{ipis} of a CPU = {} | CAUSED (tasks, traced) {} + not delivered {} = {} of it{}",
        fmt_pct(c.net_rx_pct),
        if parts.is_empty() {
            "-".into()
        } else {
            parts.join(" + ")
        },
        fmt_pct(c.caused_pct),
        fmt_pct(c.buckets_pct),
        ratio,
        if c.lost_pct >= 0.05 {
            format!(" (charged to no task {})", fmt_pct(c.lost_pct))
        } else {
            String::new()
        },
    );
}

/// One pair as a line, under [`pair_header`]'s columns.
pub fn pair_line(p: &RobPair) -> String {
    format!(
        "{:>7} {:<15} <- {:>7} {:<15} {:>7} {:>9}",
        p.victim_pid,
        p.victim_comm,
        p.beneficiary_pid,
        p.beneficiary_comm,
        fmt_pct(p.pct),
        fmt_rate(p.pkts_per_s)
    )
}

/// The columns of [`pair_line`].
pub fn pair_header() -> String {
    format!(
        "{:>7} {:<15}    {:>7} {:<15} {:>7} {:>9}",
        "PID", "VICTIM", "PID", "ROBBED BY", "NET_RX%", "PKT/s"
    )
}

/// Pairs below this share of a CPU are left out of the tables (batch text
/// and the cgroup view's): a trickle says nothing at one decimal.
pub const MIN_PAIR_PCT: f64 = 0.05;

/// The pairs a victim was robbed by, largest first.
pub fn robbed_by(t: &TrafficView, victim: u32) -> Vec<&RobPair> {
    t.robbed.iter().filter(|p| p.victim_pid == victim).collect()
}

/// The victims a beneficiary robbed, largest first.
pub fn robbed(t: &TrafficView, beneficiary: u32) -> Vec<&RobPair> {
    t.robbed
        .iter()
        .filter(|p| p.beneficiary_pid == beneficiary)
        .collect()
}

/// Batch text's tables after the task (or cgroup) table: process pairs,
/// or cgroup pairs with `--group cgroup`; the largest, trickles left out.
pub fn tables(out: &mut String, f: &Frame, cgroups: bool) {
    let Some(t) = &f.traffic else { return };
    let lines: Vec<String> = if cgroups {
        t.cgroup_pairs
            .iter()
            .filter(|p| p.pct >= MIN_PAIR_PCT)
            .take(BATCH_PAIRS)
            .map(|p| {
                format!(
                    "{:<40} <- {:<40} {:>7} {:>9}",
                    p.victim_name,
                    p.beneficiary_name,
                    fmt_pct(p.pct),
                    fmt_rate(p.pkts_per_s)
                )
            })
            .collect()
    } else {
        t.robbed
            .iter()
            .filter(|p| p.pct >= MIN_PAIR_PCT)
            .take(BATCH_PAIRS)
            .map(pair_line)
            .collect()
    };
    if lines.is_empty() {
        return;
    }
    let (title, header) = if cgroups {
        (
            "cgroups: NET_RX run in the victim's tasks, delivering to the beneficiary's sockets",
            format!(
                "{:<40}    {:<40} {:>7} {:>9}",
                "VICTIM", "ROBBED BY", "NET_RX%", "PKT/s"
            ),
        )
    } else {
        (
            "NET_RX run in the victim's context, delivering to the beneficiary's sockets",
            pair_header(),
        )
    };
    let _ = writeln!(out, "\nROBBED BY ({title})\n{header}");
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
}
