//! The CPU table, shared by the TUI's CPUs view and batch text: per CPU,
//! mpstat-style shares from /proc/stat, the traced interrupt work split as
//! the task columns split it, NET_RX and napi rates, nettop's own BPF time
//! there and the tasks its interrupt work is stolen from.

use super::fields::{Align, Cell, Field, STOLEN_MARK_PCT, Tone, batch_columns, fmt_opt, text_line};
use super::format::{fmt_fine_pct, fmt_pct, fmt_pct_or_dash, fmt_rate};
use crate::model::frame::{CpuView, Frame};
use crate::sample::Source;

/// A column of the CPU table, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuField {
    Cpu,
    Node,
    /// The CPU's time as a bar of usr, sys, irq, soft and steal: the TUI's.
    Busy,
    Usr,
    Nice,
    Sys,
    Iowait,
    Irq,
    Soft,
    Steal,
    Idle,
    Hardirq,
    Sysvec,
    Softirq,
    Inline,
    KsdSoftirq,
    Hidden,
    NetRx,
    NetRxUs,
    Restarts,
    Polls,
    Packets,
    NsPkt,
    Exhausted,
    Squeeze,
    Ksoftirqd,
    OwnBpf,
    Victims,
    /// STOLEN% and NET_RX/s over the last frames, from the TUI's history.
    StolenHist,
    NetRxHist,
}

use CpuField as C;

impl Field for CpuField {
    const ALL: &'static [Self] = &[
        C::Cpu,
        C::Node,
        C::Busy,
        C::Usr,
        C::Nice,
        C::Sys,
        C::Iowait,
        C::Irq,
        C::Soft,
        C::Steal,
        C::Idle,
        C::Hardirq,
        C::Sysvec,
        C::Softirq,
        C::Inline,
        C::KsdSoftirq,
        C::Hidden,
        C::NetRx,
        C::NetRxUs,
        C::Restarts,
        C::Polls,
        C::Packets,
        C::NsPkt,
        C::Exhausted,
        C::Squeeze,
        C::Ksoftirqd,
        C::OwnBpf,
        C::Victims,
        C::StolenHist,
        C::NetRxHist,
    ];
    /// The monitor's own cost comes beside what it reports, before the
    /// finer rates: without it part of what a victim loses looks like the
    /// host's.
    const PRIORITY: &'static [Self] = &[
        C::Cpu,
        C::Busy,
        C::Soft,
        C::NetRx,
        C::Victims,
        C::OwnBpf,
        C::Packets,
        C::NsPkt,
        C::Polls,
        C::Exhausted,
        C::Squeeze,
        C::Ksoftirqd,
        C::Irq,
        C::StolenHist,
        C::NetRxHist,
        C::Softirq,
        C::Hardirq,
        C::Hidden,
        C::Node,
        C::Usr,
        C::Sys,
        C::Idle,
        C::Steal,
    ];

    fn key(self) -> &'static str {
        match self {
            C::Cpu => "cpu",
            C::Node => "node",
            C::Busy => "busy",
            C::Usr => "usr",
            C::Nice => "nice",
            C::Sys => "sys",
            C::Iowait => "iowait",
            C::Irq => "irq",
            C::Soft => "soft",
            C::Steal => "steal",
            C::Idle => "idle",
            C::Hardirq => "hi",
            C::Sysvec => "sysv",
            C::Softirq => "si",
            C::Inline => "inline",
            C::KsdSoftirq => "ksd",
            C::Hidden => "hidden",
            C::NetRx => "net_rx_s",
            C::NetRxUs => "us_net_rx",
            C::Restarts => "rst_s",
            C::Polls => "polls_s",
            C::Packets => "pkts_s",
            C::NsPkt => "ns_pkt",
            C::Exhausted => "exh_s",
            C::Squeeze => "sqz_s",
            C::Ksoftirqd => "ksirq",
            C::OwnBpf => "bpf",
            C::Victims => "victims",
            C::StolenHist => "stolen_hist",
            C::NetRxHist => "net_rx_hist",
        }
    }

    fn title(self) -> &'static str {
        match self {
            C::Cpu => "CPU",
            C::Node => "NODE",
            C::Busy => "BUSY",
            C::Usr => "USR%",
            C::Nice => "NICE%",
            C::Sys => "SYS%",
            C::Iowait => "IOWAIT%",
            C::Irq => "IRQ%",
            C::Soft => "SOFT%",
            C::Steal => "STEAL%",
            C::Idle => "IDLE%",
            C::Hardirq => "HI%",
            C::Sysvec => "SYSV%",
            C::Softirq => "SI%",
            C::Inline => "INLINE%",
            C::KsdSoftirq => "KSD%",
            C::Hidden => "HIDDEN~%",
            C::NetRx => "NETRX/s",
            C::NetRxUs => "US/NETRX",
            C::Restarts => "RST/s",
            C::Polls => "POLLS/s",
            C::Packets => "PKTS/s",
            C::NsPkt => "NS/PKT",
            C::Exhausted => "EXH/s",
            C::Squeeze => "SQZ/s",
            C::Ksoftirqd => "KSIRQ%",
            C::OwnBpf => "BPF%",
            C::Victims => "VICTIMS",
            C::StolenHist => "STOLEN% HIST",
            C::NetRxHist => "NETRX/s HIST",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            C::Cpu => "the CPU",
            C::Node => "its NUMA node",
            C::Busy => {
                "its time as a bar: `=` usr, `-` sys, `!` irq, `#` soft, `~` steal (TUI only)"
            }
            C::Usr => {
                "user time, from /proc/stat like the next seven (tick-sampled unless the kernel accounts IRQ time)"
            }
            C::Nice => "user time of niced tasks",
            C::Sys => "system time",
            C::Iowait => "idle time waiting for I/O",
            C::Irq => "hardirq time, as /proc/stat counts it",
            C::Soft => "softirq time, as /proc/stat counts it",
            C::Steal => "time the hypervisor gave another guest",
            C::Idle => "idle time",
            C::Hardirq => {
                "traced hardirq time on it: devices and system vectors, as the task column `HI%`"
            }
            C::Sysvec => "the system-vector part of `HI%` (timer, IPIs)",
            C::Softirq => {
                "traced softirq time run on the time of the task it interrupted (stolen), as the task column `SI%`"
            }
            C::Inline => {
                "traced softirq time run by the task that raised it, at its own `local_bh_enable`"
            }
            C::KsdSoftirq => "traced softirq time run by ksoftirqd (deferred, stolen from no one)",
            C::Hidden => {
                "an **estimate** of the untraced cost of its interruptions (calibrated per class)"
            }
            C::NetRx => "NET_RX softirq actions per second",
            C::NetRxUs => "mean time of one NET_RX action, in µs",
            C::Restarts => {
                "NET_RX actions per second that asked for another round (a restart, or ksoftirqd)"
            }
            C::Polls => "napi polls per second",
            C::Packets => "packets its napi polls processed per second (softnet's count)",
            C::NsPkt => "NET_RX softirq time per packet polled on it, in ns",
            C::Exhausted => "napi polls per second that used their whole budget",
            C::Squeeze => {
                "times per second NET_RX ran out of budget or time with work left (softnet's `time_squeeze`)"
            }
            C::Ksoftirqd => "ksoftirqd/N's on-CPU time (from /proc: also without BPF)",
            C::OwnBpf => "nettop's own BPF run time on it (needs `--bpf-stats`, else `-`)",
            C::Victims => {
                "the tasks last on it that most interrupt work was stolen from, with their `STOLEN%`"
            }
            C::StolenHist => "its `STOLEN%` over the last frames, 0–100 % (TUI only)",
            C::NetRxHist => {
                "its NET_RX/s over the last frames, against the highest any CPU reached (TUI only)"
            }
        }
    }

    fn width(self) -> u16 {
        match self {
            C::Cpu => 3,
            C::Node | C::Usr | C::Sys | C::Irq | C::Hardirq | C::Softirq | C::KsdSoftirq => 4,
            C::Nice | C::Soft | C::Idle | C::Sysvec | C::Exhausted | C::Squeeze | C::OwnBpf => 5,
            C::Steal | C::Restarts | C::NsPkt | C::Ksoftirqd => 6,
            C::Iowait | C::Inline | C::NetRx | C::Polls | C::Packets => 7,
            C::Hidden | C::NetRxUs => 8,
            C::StolenHist | C::NetRxHist => 16,
            C::Busy | C::Victims => 22,
        }
    }

    fn align(self) -> Align {
        match self {
            C::Busy | C::Victims | C::StolenHist | C::NetRxHist => Align::Left,
            _ => Align::Right,
        }
    }

    fn tui_only(self) -> bool {
        matches!(self, C::Busy | C::StolenHist | C::NetRxHist)
    }
}

/// What a CPU's cells need besides the CPU: the frame's facts and what the
/// tasks say about each CPU ([`victims`]).
pub struct CpuCtx<'a> {
    /// BPF traced the frame's interrupt figures.
    pub traced: bool,
    /// By CPU number, the tasks last on it most stolen from, most first.
    pub victims: &'a [Vec<(String, f64)>],
}

/// By CPU number, up to three tasks last on it that lost at least 1 % of
/// a CPU to interrupt work, most stolen from first.
pub fn victims(f: &Frame) -> Vec<Vec<(String, f64)>> {
    let n = f.cpus.iter().map(|c| c.cpu as usize + 1).max().unwrap_or(0);
    // Positions first and names for the three kept only: a thread list
    // of 30,000 busy rows would otherwise copy 30,000 names a frame.
    let tasks = f.finest_rows();
    let mut by_cpu: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, t) in tasks.iter().enumerate() {
        if t.stolen_pct >= 1.0
            && let Some(v) = by_cpu.get_mut(t.last_cpu as usize)
        {
            v.push(i);
        }
    }
    let by_stolen = |a: &usize, b: &usize| {
        let (a, b) = (&tasks[*a], &tasks[*b]);
        b.stolen_pct
            .total_cmp(&a.stolen_pct)
            .then_with(|| a.comm.cmp(&b.comm))
    };
    by_cpu
        .into_iter()
        .map(|mut v| {
            if v.len() > 3 {
                v.select_nth_unstable_by(2, by_stolen);
                v.truncate(3);
            }
            v.sort_by(by_stolen);
            v.iter()
                .map(|&i| (tasks[i].comm.clone(), tasks[i].stolen_pct))
                .collect()
        })
        .collect()
}

impl CpuField {
    /// Only a tracer measures it: `n/a` without BPF.
    fn traced_only(self) -> bool {
        matches!(
            self,
            C::Hardirq
                | C::Sysvec
                | C::Softirq
                | C::Inline
                | C::KsdSoftirq
                | C::Hidden
                | C::NetRx
                | C::NetRxUs
                | C::Restarts
                | C::Polls
                | C::NsPkt
                | C::Exhausted
        )
    }

    /// The cell of CPU `c` in this column, the same in every front end.
    /// An offline CPU has its number, its node and `offline` under USR%.
    pub fn cell(self, c: &CpuView, cx: &CpuCtx) -> Cell {
        if !c.online {
            return match self {
                C::Cpu | C::Node => self.online_cell(c, cx),
                C::Usr => Cell::plain("offline"),
                _ => Cell::empty(),
            };
        }
        if !cx.traced && self.traced_only() {
            return Cell::plain("n/a");
        }
        self.online_cell(c, cx)
    }

    fn online_cell(self, c: &CpuView, cx: &CpuCtx) -> Cell {
        let pct = |v: f64| Cell::plain(fmt_pct(v));
        let irq = |v: f64| Cell::plain(fmt_pct_or_dash(v));
        let hot = |v: f64| Cell::marked(fmt_rate(v), v > 0.0, Tone::Warn);
        match self {
            C::Cpu => Cell::plain(c.cpu.to_string()),
            C::Node => Cell::plain(c.node.map_or("-".into(), |n| n.to_string())),
            // Drawn by the TUI.
            C::Busy | C::StolenHist | C::NetRxHist => Cell::empty(),
            C::Usr => pct(c.usr_pct),
            C::Nice => pct(c.nice_pct),
            C::Sys => pct(c.sys_pct),
            C::Iowait => pct(c.iowait_pct),
            C::Irq => pct(c.irq_pct),
            C::Soft => Cell::marked(
                fmt_pct(c.soft_pct),
                c.soft_pct >= STOLEN_MARK_PCT,
                Tone::NetRx,
            ),
            C::Steal => pct(c.steal_pct),
            C::Idle => pct(c.idle_pct),
            C::Hardirq => irq(c.traced_hardirq_pct + c.traced_sysvec_pct),
            C::Sysvec => irq(c.traced_sysvec_pct),
            C::Softirq => irq(c.softirq_stolen_pct),
            C::Inline => irq(c.softirq_inline_pct),
            C::KsdSoftirq => irq(c.softirq_ksoftirqd_pct),
            C::Hidden => irq(c.hidden_pct),
            C::NetRx => Cell::marked(fmt_rate(c.net_rx_per_s), c.net_rx_per_s > 0.0, Tone::NetRx),
            C::NetRxUs => Cell::plain(if c.net_rx_per_s > 0.0 {
                format!("{:.1}", c.net_rx_avg_us)
            } else {
                "-".into()
            }),
            C::Restarts => Cell::plain(fmt_rate(c.net_rx_restarts_per_s)),
            C::Polls => Cell::plain(fmt_rate(c.napi_polls_per_s)),
            C::Packets => Cell::plain(fmt_rate(c.packets_per_s)),
            C::NsPkt => Cell::plain(fmt_opt(c.net_rx_ns_per_packet, 0)),
            C::Exhausted => hot(c.budget_exhausted_per_s),
            C::Squeeze => hot(c.time_squeeze_per_s),
            C::Ksoftirqd => pct(c.ksoftirqd_pct),
            C::OwnBpf => Cell::plain(fmt_fine_pct(c.own_bpf_pct)),
            C::Victims => {
                let v = cx.victims.get(c.cpu as usize).map_or(String::new(), |v| {
                    v.iter()
                        .take(2)
                        .map(|(n, p)| format!("{n} {p:.0}%"))
                        .collect::<Vec<_>>()
                        .join(", ")
                });
                Cell::new(v, Tone::Stolen)
            }
        }
    }
}

/// The CPU table of batch text: every column but the TUI's own, every
/// CPU.
pub fn cpu_table(out: &mut String, f: &Frame) {
    let victims = victims(f);
    let cx = CpuCtx {
        traced: f.source == Source::Bpf,
        victims: &victims,
    };
    let cols: Vec<CpuField> = batch_columns();
    out.push('\n');
    text_line(out, &cols, |c| c.title().into());
    for c in &f.cpus {
        text_line(out, &cols, |col| col.cell(c, &cx).text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        super::super::fields::check_table::<CpuField>();
    }
}
