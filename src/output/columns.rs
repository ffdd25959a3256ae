//! The task columns, shared by batch text and the TUI (bottom's
//! `ProcColumn`): header, meaning, width, alignment, how a value prints and
//! how it sorts, each said once here, in the shape of every entity's table
//! ([`super::fields::Field`]). README's column table lists the same
//! columns in the same order (tests/pure/columns_readme.rs compares all three).
//!
//! Both front ends print the same text for a cell; they differ only in
//! layout. The TUI cuts cells to the column width and drops low-priority
//! columns on narrow terminals ([`PRIORITY`]); batch text (for logs) prints
//! every column and never cuts a value, padding to the same widths.
//!
//! Vocabulary: `STOLEN% = HI% + SI%`; `SYSV%` is the system-vector part of
//! `HI%`, `NET_RX%` the NET_RX part of `SI%`. Without BPF, the columns a
//! tracer measures print `n/a`, and the estimated ones get a `~` in their
//! header (`TRUE~%`, `STOLEN~%`, `HI~%`). Interrupt figures below 0.05 %
//! print `-`, so real values stand out.
//!
//! The columns htop users look for mean what they mean in htop: `S`,
//! `PRI` and `NI` as /proc/PID/stat has them, `VIRT`/`RES`/`SHR` as
//! /proc/PID/statm counts them, `MEM%` as RES over the host's memory and
//! `TIME+` as utime + stime. A figure nettop does not have (a kernel
//! thread's memory, a recording made before it was collected) prints `-`,
//! never 0.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::fields::{Align, Cell, Field, STOLEN_MARK_PCT, Tone};
use super::format::{
    fmt_cpu_time, fmt_mem, fmt_pct, fmt_pct_band, fmt_pct_or_dash, fmt_priority, fmt_rate,
};
use crate::model::frame::{Frame, TaskView};
use crate::sample::Source;

/// A task column, in display order. Its serde name is [`ProcColumn::key`]
/// (configuration files name columns by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ProcColumn {
    Pid,
    User,
    Priority,
    Nice,
    State,
    Top,
    OnCpu,
    True,
    Gap,
    Stolen,
    Hidden,
    /// Its own run time the kernel billed to the threads its reschedule
    /// IPIs woke, given back in TRUE%: why TRUE% may exceed ONCPU%.
    Rebill,
    Hardirq,
    Sysvec,
    Softirq,
    NetRx,
    Inline,
    IrqRate,
    /// The receive processing spent delivering to its sockets, wherever
    /// it ran: the bill nobody sends it (`model::traffic`).
    Caused,
    RxBytes,
    TxBytes,
    RxPkts,
    Virt,
    Res,
    Shr,
    MemPct,
    Time,
    Cpu,
    Node,
    Affinity,
    /// The row's STOLEN% over the last frames as a sparkline: the TUI's
    /// history, which batch text has not got ([`ProcColumn::tui_only`]).
    Trend,
    Command,
}

use ProcColumn as P;

/// Which columns the TUI keeps on a narrow terminal, most wanted first
/// (COMMAND always stays, taking what is left). At 80 columns: PID, S,
/// TOP%, TRUE%, STOLEN%, HIDDEN~%, NET_RX%, RES and MEM%: nettop's own
/// figures first, then the memory an htop user looks for; GAP (TOP% −
/// TRUE%, readable from the two) and USER come back from 86 columns on.
pub const PRIORITY: [ProcColumn; 30] = [
    P::Pid,
    P::Top,
    P::True,
    P::Stolen,
    P::Hidden,
    P::NetRx,
    P::Res,
    P::MemPct,
    P::Gap,
    P::User,
    P::State,
    P::Time,
    P::Caused,
    P::RxBytes,
    P::Softirq,
    P::Hardirq,
    P::Cpu,
    P::Inline,
    P::OnCpu,
    P::Sysvec,
    P::IrqRate,
    P::Virt,
    P::Shr,
    P::Priority,
    P::Nice,
    P::Rebill,
    P::Node,
    P::Affinity,
    P::TxBytes,
    P::RxPkts,
];

/// What a row needs besides its task: names resolved elsewhere (reading
/// /etc/passwd is I/O) and the frame's facts.
pub struct RowCtx<'a> {
    pub users: &'a HashMap<u32, String>,
    /// NUMA node by CPU number.
    pub cpu_node: &'a [Option<u32>],
    /// The frame's interrupt figures were traced (BPF), not estimated.
    pub traced: bool,
    /// COMMAND shows the full command line (`-c`, the TUI's `c`), not the
    /// 15-character name.
    pub cmdline: bool,
}

impl RowCtx<'_> {
    pub fn user(&self, uid: u32) -> String {
        self.users
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string())
    }

    pub fn node(&self, cpu: u32) -> Option<u32> {
        self.cpu_node.get(cpu as usize).copied().flatten()
    }
}

/// NUMA node by CPU number, from the frame's CPU list.
pub fn cpu_nodes(f: &Frame) -> Vec<Option<u32>> {
    let max = f.cpus.iter().map(|c| c.cpu + 1).max().unwrap_or(0) as usize;
    let mut node = vec![None; max];
    for c in &f.cpus {
        node[c.cpu as usize] = c.node;
    }
    node
}

/// A row's value in one column, as it sorts ([`ProcColumn::sort_value`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SortValue<'a> {
    Num(u64),
    Text(Cow<'a, str>),
}

/// `v` as an unsigned integer in `f64::total_cmp`'s order: flip every bit
/// of a negative, only the sign bit of anything else.
fn total_order_key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// A signed figure in integer order, unknown (`None`) first.
fn signed_key(v: Option<i32>) -> u64 {
    v.map_or(0, |v| (i64::from(v) - i64::from(i32::MIN) + 1) as u64)
}

/// Whether column `c` is drawn for frame `f`: the traffic columns only
/// when the frame counted traffic.
pub fn shown(f: Option<&Frame>, c: ProcColumn) -> bool {
    !c.traffic() || f.is_some_and(|f| f.traffic.is_some())
}

/// `traced` for a frame: BPF measured its interrupt figures.
pub fn traced(f: &Frame) -> bool {
    f.source == Source::Bpf
}

impl ProcColumn {
    /// Display order (COMMAND last, as in top), which `<`/`>` walk.
    pub const ALL: [ProcColumn; 32] = [
        P::Pid,
        P::User,
        P::Priority,
        P::Nice,
        P::State,
        P::Top,
        P::OnCpu,
        P::True,
        P::Gap,
        P::Stolen,
        P::Hidden,
        P::Rebill,
        P::Hardirq,
        P::Sysvec,
        P::Softirq,
        P::NetRx,
        P::Inline,
        P::IrqRate,
        P::Caused,
        P::RxBytes,
        P::TxBytes,
        P::RxPkts,
        P::Virt,
        P::Res,
        P::Shr,
        P::MemPct,
        P::Time,
        P::Cpu,
        P::Node,
        P::Affinity,
        P::Trend,
        P::Command,
    ];

    /// The header with BPF, and the name README documents.
    pub fn title(self) -> &'static str {
        match self {
            P::Pid => "PID",
            P::User => "USER",
            P::Priority => "PRI",
            P::Nice => "NI",
            P::State => "S",
            P::Top => "TOP%",
            P::OnCpu => "ONCPU%",
            P::True => "TRUE%",
            P::Gap => "GAP",
            P::Stolen => "STOLEN%",
            P::Hidden => "HIDDEN~%",
            P::Rebill => "REBILL%",
            P::Hardirq => "HI%",
            P::Sysvec => "SYSV%",
            P::Softirq => "SI%",
            P::NetRx => "NET_RX%",
            P::Inline => "INLINE%",
            P::IrqRate => "IRQ/s",
            P::Caused => "CAUSED%",
            P::RxBytes => "RXB/s",
            P::TxBytes => "TXB/s",
            P::RxPkts => "RXPK/s",
            P::Virt => "VIRT",
            P::Res => "RES",
            P::Shr => "SHR",
            P::MemPct => "MEM%",
            P::Time => "TIME+",
            P::Cpu => "CPU",
            P::Node => "NODE",
            P::Affinity => "AFFINITY",
            P::Trend => "STOLEN HIST",
            P::Command => "COMMAND",
        }
    }

    /// The header as printed: `TID` over thread rows, and `~` on the
    /// columns that are estimates without BPF.
    pub fn header(self, traced: bool, thread_rows: bool) -> String {
        match self {
            P::Pid if thread_rows => "TID".into(),
            P::True if !traced => "TRUE~%".into(),
            P::Stolen if !traced => "STOLEN~%".into(),
            P::Hardirq if !traced => "HI~%".into(),
            P::Trend if !traced => "STOLEN~HIST".into(),
            c => c.title().into(),
        }
    }

    /// What the column means, for the sort picker.
    pub fn describe(self) -> &'static str {
        match self {
            P::Pid => "process ID (thread ID on thread rows)",
            P::User => "owner",
            P::Priority => "kernel priority as /proc shows it (RT: real-time)",
            P::Nice => "nice value",
            P::State => "state: R run, S sleep, D disk wait, Z zombie",
            P::Top => "%CPU exactly as top shows it",
            P::OnCpu => "time the scheduler had it on a CPU",
            P::True => "CPU the task really got for its own work, ± its band",
            P::Gap => "TOP% minus TRUE%: what top gets wrong",
            P::Stolen => "HI% + SI%: irq work run on its time for others",
            P::Hidden => "estimate: untraced cost of its interruptions",
            P::Rebill => "its time billed to threads it woke; in TRUE%",
            P::Hardirq => "stolen: hardirq, devices + system vectors",
            P::Sysvec => "stolen: system vectors (timer, IPIs) of HI%",
            P::Softirq => "stolen: softirq, all vectors",
            P::NetRx => "stolen: NET_RX softirq, part of SI%",
            P::Inline => "softirq it raised itself (e.g. its sends)",
            P::IrqRate => "interruptions per second in its context",
            P::Caused => "NET_RX time delivering to its sockets, anywhere",
            P::RxBytes => "bytes per second its receive calls took",
            P::TxBytes => "bytes per second its send calls gave",
            P::RxPkts => "packets per second delivered to its sockets",
            P::Virt => "virtual memory: its whole address space",
            P::Res => "resident memory: anonymous, file and shmem pages",
            P::Shr => "the file and shmem part of RES (shareable)",
            P::MemPct => "RES as a percent of the host's memory",
            P::Time => "CPU time since it started, utime + stime",
            P::Cpu => "CPU it last ran on",
            P::Node => "NUMA node of its last CPU",
            P::Affinity => "CPUs it may run on",
            P::Trend => "STOLEN% over the last frames (sorts as STOLEN%)",
            P::Command => "command name ([kernel thread]); c: command line",
        }
    }

    /// Columns wide enough for their header (with `~`) and their values.
    pub fn width(self) -> u16 {
        match self {
            P::Pid => 7,
            P::User => 8,
            P::Priority => 3,
            P::Nice => 3,
            P::State => 1,
            P::Top => 5,
            P::OnCpu => 6,
            P::True => 6,
            P::Gap => 5,
            P::Stolen => 8,
            P::Hidden => 8,
            P::Rebill => 7,
            P::Hardirq => 4,
            P::Sysvec => 5,
            P::Softirq => 4,
            P::NetRx => 7,
            P::Inline => 7,
            P::IrqRate => 6,
            P::Caused => 7,
            P::RxBytes | P::TxBytes | P::RxPkts => 6,
            P::Virt | P::Res | P::Shr | P::MemPct => 5,
            P::Time => 9,
            P::Cpu => 3,
            P::Node => 4,
            P::Affinity => 9,
            P::Trend => 12,
            P::Command => 15,
        }
    }

    /// Numbers align right and sort largest first.
    pub fn numeric(self) -> bool {
        !matches!(self, P::User | P::State | P::Command | P::Affinity)
    }

    /// Amounts sort largest first; identifiers, text and priorities (the
    /// most favoured first) ascending (htop).
    pub fn default_descending(self) -> bool {
        self.numeric() && !matches!(self, P::Pid | P::Cpu | P::Node | P::Priority | P::Nice)
    }

    /// Shown by the TUI only: its cell is drawn from the TUI's history, so
    /// [`ProcColumn::text`] has nothing for it and batch text skips it.
    pub fn tui_only(self) -> bool {
        self == P::Trend
    }

    /// Only a tracer measures it: `n/a` without BPF.
    fn traced_only(self) -> bool {
        matches!(
            self,
            P::Hidden
                | P::Rebill
                | P::Sysvec
                | P::Softirq
                | P::NetRx
                | P::Inline
                | P::IrqRate
                | P::Caused
                | P::RxBytes
                | P::TxBytes
                | P::RxPkts
        )
    }

    /// Counted from the socket tracepoints: `n/a` where they were not
    /// (without `--traffic`, a kernel without them, older recordings).
    /// Front ends leave these columns out of a frame without traffic
    /// ([`shown`]): a column of `n/a` on every row says nothing.
    pub fn traffic(self) -> bool {
        matches!(self, P::Caused | P::RxBytes | P::TxBytes | P::RxPkts)
    }

    /// The column's figure, for the percent and rate columns.
    pub fn value(self, t: &TaskView) -> Option<f64> {
        Some(match self {
            P::Top => t.top_pct,
            P::OnCpu => t.on_cpu_pct,
            P::True => t.true_pct,
            P::Gap => t.gap_pct(),
            P::Stolen | P::Trend => t.stolen_pct,
            P::Hidden => t.hidden_pct,
            P::Rebill => t.rebilled_pct,
            P::Hardirq => t.hi_pct(),
            P::Sysvec => t.sysvec_pct,
            P::Softirq => t.si_pct(),
            P::NetRx => t.net_rx_pct(),
            P::Inline => t.inline_pct,
            P::IrqRate => t.interruptions_per_s,
            P::MemPct => return t.mem_pct,
            P::Caused => return t.traffic.as_ref().map(|x| x.caused_pct),
            P::RxBytes => return t.traffic.as_ref().map(|x| x.rx_bytes_per_s),
            P::TxBytes => return t.traffic.as_ref().map(|x| x.tx_bytes_per_s),
            P::RxPkts => return t.traffic.as_ref().map(|x| x.rx_pkts_per_s),
            _ => return None,
        })
    }

    /// The cell's text, the same in every front end.
    pub fn text(self, t: &TaskView, cx: &RowCtx) -> String {
        if (!cx.traced && self.traced_only()) || (self.traffic() && t.traffic.is_none()) {
            return "n/a".into();
        }
        match self {
            P::Pid => t.id().to_string(),
            P::User => cx.user(t.uid),
            P::Cpu => t.last_cpu.to_string(),
            P::Node => cx.node(t.last_cpu).map_or("-".into(), |n| n.to_string()),
            P::Affinity => t.affinity.clone(),
            P::State => t.state.to_string(),
            P::Priority => fmt_priority(t.priority),
            P::Nice => t.nice.map_or("-".into(), |n| n.to_string()),
            P::Virt => fmt_mem(t.virt_bytes),
            P::Res => fmt_mem(t.res_bytes),
            P::Shr => fmt_mem(t.shr_bytes),
            P::MemPct => t.mem_pct.map_or("-".into(), fmt_pct),
            P::Time => fmt_cpu_time(t.cpu_time_s),
            P::Command if t.kthread => format!("[{}]", t.comm),
            // As top -c: the arguments when there are any (a zombie or a
            // process whose argv is gone shows its name).
            P::Command if cx.cmdline && !t.cmdline.is_empty() => t.cmdline.join(" "),
            P::Command => t.comm.clone(),
            P::True => fmt_pct_band(t.true_pct, t.true_band_pct()),
            P::Top | P::OnCpu => fmt_pct(self.value(t).unwrap_or(0.0)),
            // The TUI draws it from its history (`ui::history`).
            P::Trend => String::new(),
            P::IrqRate => fmt_rate(t.interruptions_per_s),
            P::RxBytes | P::TxBytes | P::RxPkts => fmt_rate(self.value(t).unwrap_or(0.0)),
            // GAP below zero is top under-stating, not a loss: shown as none.
            c => fmt_pct_or_dash(c.value(t).unwrap_or(0.0).max(0.0)),
        }
    }

    /// The cell: [`ProcColumn::text`] with what it says beyond its text
    /// (STOLEN% at the mark, TOP% over-stating the task, NET_RX work).
    pub fn cell(self, t: &TaskView, cx: &RowCtx) -> Cell {
        let gap = t.gap_pct() >= STOLEN_MARK_PCT;
        let tone = match self {
            P::True if gap => Tone::Strong,
            P::Gap if gap => Tone::Gap,
            P::Stolen if t.stolen_pct >= STOLEN_MARK_PCT => Tone::Stolen,
            P::NetRx if cx.traced && t.net_rx_pct() >= 0.05 => Tone::NetRx,
            P::Caused if self.value(t).is_some_and(|v| v >= 0.05) => Tone::NetRx,
            _ => Tone::Plain,
        };
        Cell::new(self.text(t, cx), tone)
    }

    /// Orders two rows by this column, ascending.
    pub fn compare(self, a: &TaskView, b: &TaskView, cx: &RowCtx) -> Ordering {
        self.sort_value(a, cx).cmp(&self.sort_value(b, cx))
    }

    /// What the column sorts `t` by. Sorting 30,000 thread rows takes
    /// about half a million comparisons; taking each row's value out once
    /// makes every comparison an integer or string compare instead of a
    /// column dispatch, a figure derived twice and (for USER) a name
    /// looked up and copied twice. [`ProcColumn::compare`] is defined
    /// through it, so the two orders cannot differ.
    pub fn sort_value<'a>(self, t: &'a TaskView, cx: &RowCtx<'a>) -> SortValue<'a> {
        match self {
            P::Pid => SortValue::Num((u64::from(t.pid) << 32) | u64::from(t.tid)),
            P::User => SortValue::Text(match cx.users.get(&t.uid) {
                Some(name) => Cow::Borrowed(name.as_str()),
                None => Cow::Owned(t.uid.to_string()),
            }),
            P::Command => SortValue::Text(Cow::Borrowed(&t.comm)),
            P::Cpu => SortValue::Num(u64::from(t.last_cpu)),
            // No node sorts first, as `None < Some(_)`.
            P::Node => SortValue::Num(cx.node(t.last_cpu).map_or(0, |n| u64::from(n) + 1)),
            P::Affinity => SortValue::Text(Cow::Borrowed(&t.affinity)),
            P::State => SortValue::Num(u64::from(u32::from(t.state))),
            // Unknown below every known figure, a 0 included.
            P::Priority => SortValue::Num(signed_key(t.priority)),
            P::Nice => SortValue::Num(signed_key(t.nice)),
            P::Virt => SortValue::Num(t.virt_bytes.map_or(0, |b| b.saturating_add(1))),
            P::Res => SortValue::Num(t.res_bytes.map_or(0, |b| b.saturating_add(1))),
            P::Shr => SortValue::Num(t.shr_bytes.map_or(0, |b| b.saturating_add(1))),
            P::MemPct => SortValue::Num(t.mem_pct.map_or(0, total_order_key)),
            P::Time => SortValue::Num(total_order_key(t.cpu_time_s)),
            // Not known below every known figure, a 0 included.
            c if c.traffic() => SortValue::Num(c.value(t).map_or(0, total_order_key)),
            c => SortValue::Num(total_order_key(c.value(t).unwrap_or(0.0))),
        }
    }

    /// The column's name in configuration files: its header in lower case
    /// without `%` and `+`, and `_` for what a name cannot hold (`IRQ/s`
    /// is `irq_s`).
    pub fn key(self) -> &'static str {
        match self {
            P::Pid => "pid",
            P::User => "user",
            P::Priority => "pri",
            P::Nice => "ni",
            P::State => "s",
            P::Top => "top",
            P::OnCpu => "oncpu",
            P::True => "true",
            P::Gap => "gap",
            P::Stolen => "stolen",
            P::Hidden => "hidden",
            P::Rebill => "rebill",
            P::Hardirq => "hi",
            P::Sysvec => "sysv",
            P::Softirq => "si",
            P::NetRx => "net_rx",
            P::Inline => "inline",
            P::IrqRate => "irq_s",
            P::Caused => "caused",
            P::RxBytes => "rxb_s",
            P::TxBytes => "txb_s",
            P::RxPkts => "rxpk_s",
            P::Virt => "virt",
            P::Res => "res",
            P::Shr => "shr",
            P::MemPct => "mem",
            P::Time => "time",
            P::Cpu => "cpu",
            P::Node => "node",
            P::Affinity => "affinity",
            P::Trend => "trend",
            P::Command => "command",
        }
    }

    pub fn from_key(k: &str) -> Option<ProcColumn> {
        P::ALL.into_iter().find(|c| c.key().eq_ignore_ascii_case(k))
    }

    /// The columns shown before any are chosen: all of them, COMMAND
    /// excepted (it is always there, last), and STOLEN HIST, which one
    /// turns on in the fields screen.
    pub fn default_visible() -> Vec<ProcColumn> {
        P::ALL
            .into_iter()
            .filter(|c| *c != P::Command && *c != P::Trend)
            .collect()
    }

    /// A chosen column list as the TUI can show it: in the given order,
    /// each column once, COMMAND left out (it is always last).
    pub fn visible_from(cols: &[ProcColumn]) -> Vec<ProcColumn> {
        let mut out: Vec<ProcColumn> = Vec::with_capacity(cols.len());
        for &c in cols {
            if c != P::Command && !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    /// Its place in [`ProcColumn::ALL`].
    pub fn pos(self) -> usize {
        P::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }
}

/// The task table in the shape every entity's table has. The inherent
/// methods stay (callers need no trait in scope); these delegate to them.
impl Field for ProcColumn {
    const ALL: &'static [Self] = &ProcColumn::ALL;
    /// COMMAND is not listed: the TUI always shows it, last.
    const PRIORITY: &'static [Self] = &PRIORITY;

    fn key(self) -> &'static str {
        ProcColumn::key(self)
    }
    fn title(self) -> &'static str {
        ProcColumn::title(self)
    }
    fn describe(self) -> &'static str {
        ProcColumn::describe(self)
    }
    fn width(self) -> u16 {
        ProcColumn::width(self)
    }
    fn align(self) -> Align {
        if self.numeric() {
            Align::Right
        } else {
            Align::Left
        }
    }
    fn tui_only(self) -> bool {
        ProcColumn::tui_only(self)
    }
}

impl From<ProcColumn> for String {
    fn from(c: ProcColumn) -> String {
        c.key().to_string()
    }
}

impl TryFrom<String> for ProcColumn {
    type Error = anyhow::Error;
    fn try_from(k: String) -> anyhow::Result<Self> {
        ProcColumn::from_key(&k).ok_or_else(|| {
            let keys: Vec<&str> = P::ALL.iter().map(|c| c.key()).collect();
            anyhow::anyhow!("unknown column '{k}' (columns: {})", keys.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        super::super::fields::check_table::<ProcColumn>();
    }

    #[test]
    fn sort_keys_keep_total_cmp_order() {
        let vals = [
            f64::NEG_INFINITY,
            -1e300,
            -12.5,
            -0.1,
            -0.0,
            0.0,
            1e-300,
            0.1,
            12.5,
            99.9,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        for a in vals {
            for b in vals {
                assert_eq!(
                    total_order_key(a).cmp(&total_order_key(b)),
                    a.total_cmp(&b),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn user_sorts_by_name_and_unnamed_uids_as_text() {
        let users = HashMap::from([(1000, "zed".to_string()), (0, "root".to_string())]);
        let cx = RowCtx {
            users: &users,
            cpu_node: &[Some(1), None],
            traced: true,
            cmdline: false,
        };
        let t = |uid, cpu| TaskView {
            uid,
            last_cpu: cpu,
            ..TaskView::default()
        };
        let (root, zed, nobody) = (t(0, 0), t(1000, 1), t(65534, 0));
        assert_eq!(P::User.compare(&root, &zed, &cx), Ordering::Less);
        // "65534" < "root": an unnamed uid sorts as its digits.
        assert_eq!(P::User.compare(&nobody, &root, &cx), Ordering::Less);
        // CPU 1 has no node, CPU 0 is on node 1: no node first.
        assert_eq!(P::Node.compare(&zed, &root, &cx), Ordering::Less);
    }

    /// A figure nettop does not have sorts below every figure it has, 0
    /// and negative ones included, and prints `-`, never 0.
    #[test]
    fn unknown_memory_and_priorities_sort_first_and_print_a_dash() {
        let users = HashMap::new();
        let cx = RowCtx {
            users: &users,
            cpu_node: &[],
            traced: true,
            cmdline: false,
        };
        let none = TaskView::default();
        let some = TaskView {
            res_bytes: Some(0),
            virt_bytes: Some(0),
            shr_bytes: Some(0),
            mem_pct: Some(0.0),
            priority: Some(-100),
            nice: Some(-20),
            ..TaskView::default()
        };
        for c in [P::Res, P::Virt, P::Shr, P::MemPct, P::Priority, P::Nice] {
            assert_eq!(c.compare(&none, &some, &cx), Ordering::Less, "{c:?}");
            assert_eq!(c.text(&none, &cx), "-", "{c:?}");
        }
        assert_eq!(P::Res.text(&some, &cx), "0");
        assert_eq!(P::Priority.text(&some, &cx), "RT");
        let nice = |n| TaskView {
            nice: Some(n),
            ..TaskView::default()
        };
        assert_eq!(P::Nice.compare(&nice(-5), &nice(3), &cx), Ordering::Less);
    }
}
