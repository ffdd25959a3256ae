//! The cgroup table (`--group cgroup` in batch text, `C` in the TUI): one
//! line per cgroup (pod, container, service) instead of one per task.
//! Renders the model's roll-up (`Frame::cgroups`) and nothing else; the
//! TUI's lines of an open group's processes come from the same table.

use super::fields::{Align, Cell, Field, STOLEN_MARK_PCT, Tone, batch_columns, text_line};
use super::format::{fmt_mem, fmt_pct, fmt_pct_band, fmt_pct_or_dash, fmt_rate};
use crate::model::frame::{CgroupView, Frame, TaskView};
use crate::model::traffic::TaskTraffic;
use crate::sample::Source;

/// A column of the cgroup table, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CgField {
    Name,
    Procs,
    Threads,
    Top,
    OnCpu,
    True,
    Stolen,
    Hidden,
    NetRx,
    Inline,
    /// NET_RX time delivering to its sockets, wherever it ran.
    Caused,
    RxBytes,
    Mem,
    Cpus,
    Rx,
    RxCpus,
    Path,
}

use CgField as G;

impl Field for CgField {
    const ALL: &'static [Self] = &[
        G::Name,
        G::Procs,
        G::Threads,
        G::Top,
        G::OnCpu,
        G::True,
        G::Stolen,
        G::Hidden,
        G::NetRx,
        G::Inline,
        G::Caused,
        G::RxBytes,
        G::Mem,
        G::Cpus,
        G::Rx,
        G::RxCpus,
        G::Path,
    ];
    /// Who is robbed and whether receive work shares its CPUs first.
    const PRIORITY: &'static [Self] = &[
        G::Name,
        G::Top,
        G::Stolen,
        G::NetRx,
        G::True,
        G::Caused,
        G::Hidden,
        G::Rx,
        G::RxCpus,
        G::Cpus,
        G::Mem,
        G::Procs,
        G::Path,
        G::OnCpu,
        G::Threads,
        G::Inline,
        G::RxBytes,
    ];

    fn key(self) -> &'static str {
        match self {
            G::Name => "cgroup",
            G::Procs => "procs",
            G::Threads => "thr",
            G::Top => "top",
            G::OnCpu => "oncpu",
            G::True => "true",
            G::Stolen => "stolen",
            G::Hidden => "hidden",
            G::NetRx => "net_rx",
            G::Inline => "inline",
            G::Caused => "caused",
            G::RxBytes => "rxb_s",
            G::Mem => "mem",
            G::Cpus => "cpus",
            G::Rx => "rx",
            G::RxCpus => "rx_cpus",
            G::Path => "path",
        }
    }

    /// The header with BPF; see [`CgField::header`].
    fn title(self) -> &'static str {
        match self {
            G::Name => "CGROUP",
            G::Procs => "PROCS",
            G::Threads => "THR",
            G::Top => "TOP%",
            G::OnCpu => "ONCPU%",
            G::True => "TRUE%",
            G::Stolen => "STOLEN%",
            G::Hidden => "HIDDEN~%",
            G::NetRx => "NET_RX%",
            G::Inline => "INLINE%",
            G::Caused => "CAUSED%",
            G::RxBytes => "RXB/s",
            G::Mem => "MEM",
            G::Cpus => "CPUS",
            G::Rx => "RX%",
            G::RxCpus => "RX-CPUS",
            G::Path => "PATH",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            G::Name => {
                "what its path names: a pod's container, a docker, containerd, cri-o or podman container, a systemd unit or slice, else the path (see below); in the TUI an open group's processes follow it"
            }
            G::Procs => "its processes",
            G::Threads => "their threads",
            G::Top => "its processes' `TOP%`, summed",
            G::OnCpu => "their `ONCPU%`, summed",
            G::True => "their `TRUE%`, summed, with their bands summed (`±` as for a task)",
            G::Stolen => {
                "their `STOLEN%`, summed: interrupt work run on its tasks' time for others"
            }
            G::Hidden => "their `HIDDEN~%`, summed (an estimate)",
            G::NetRx => "the NET_RX part of `STOLEN%`",
            G::Inline => "their `INLINE%`, summed: its own network work",
            G::Caused => {
                "NET_RX time spent delivering to its sockets (by the socket's cgroup), on any CPU and in any task's context: the receive work it causes others to pay for; shown with `--traffic`"
            }
            G::RxBytes => "bytes per second its processes' receive calls took",
            G::Mem => {
                "the memory charged to it (see below), `-` where no memory controller counts it; a process line shows its `RES`"
            }
            G::Cpus => {
                "what its cpuset allows (`cpuset.cpus.effective` in v2, `cpuset.effective_cpus` of the v1 cpuset hierarchy), `all` when unknown; a process line shows its affinity"
            }
            G::Rx => "receive work (NET_RX; /proc/stat si without BPF) on those CPUs",
            G::RxCpus => {
                "those of them with at least 1 % of a CPU of it: a pinned workload whose `RX-CPUS` is not `-` shares its CPUs with the network stack"
            }
            G::Path => "its path in its hierarchy; a process line shows the CPU it last ran on",
        }
    }

    fn width(self) -> u16 {
        match self {
            G::Name => 40,
            G::Procs | G::Threads | G::Mem => 5,
            G::Top | G::OnCpu | G::True | G::Rx => 6,
            G::NetRx | G::Inline | G::Caused => 7,
            G::RxBytes => 6,
            G::Stolen | G::Hidden | G::Cpus | G::RxCpus => 8,
            G::Path => 20,
        }
    }

    fn align(self) -> Align {
        match self {
            G::Name | G::Cpus | G::RxCpus | G::Path => Align::Left,
            _ => Align::Right,
        }
    }
}

/// One line of the cgroup table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgRow {
    /// Index into `Frame::cgroups`.
    Group(usize),
    /// Index into `Frame::processes`: one of an open group's processes
    /// (the TUI's).
    Task(usize),
}

impl CgField {
    /// The header as printed: `~` on the columns that are estimates
    /// without BPF, as the task columns have it.
    pub fn header(self, traced: bool) -> &'static str {
        match self {
            G::True if !traced => "TRUE~%",
            G::Stolen if !traced => "STOLEN~%",
            G::Rx if !traced => "RX~%",
            c => c.title(),
        }
    }

    /// Drawn for frame `f`: the traffic columns only when it counted
    /// traffic (as the task table's, `columns::shown`).
    pub fn shown(self, f: Option<&Frame>) -> bool {
        !matches!(self, G::Caused | G::RxBytes) || f.is_some_and(|f| f.traffic.is_some())
    }

    /// Only a tracer measures it: `n/a` without BPF.
    fn traced_only(self) -> bool {
        matches!(
            self,
            G::Hidden | G::NetRx | G::Inline | G::Caused | G::RxBytes
        )
    }

    /// The cell of `row` in this column, the same in every front end.
    pub fn cell(self, f: &Frame, row: CgRow, traced: bool) -> Cell {
        if !traced && self.traced_only() {
            return Cell::plain("n/a");
        }
        match row {
            CgRow::Group(i) => f
                .cgroups
                .get(i)
                .map_or_else(Cell::empty, |c| self.group_cell(c)),
            CgRow::Task(i) => f
                .processes
                .get(i)
                .map_or_else(Cell::empty, |t| self.task_cell(t)),
        }
    }

    fn group_cell(self, c: &CgroupView) -> Cell {
        let irq = |v: f64| Cell::plain(fmt_pct_or_dash(v));
        match self {
            G::Name => Cell::plain(c.name.clone()),
            G::Procs => Cell::plain(c.processes.to_string()),
            G::Threads => Cell::plain(c.threads.to_string()),
            G::Top => Cell::plain(fmt_pct(c.top_pct)),
            G::OnCpu => Cell::plain(fmt_pct(c.on_cpu_pct)),
            G::True => Cell::plain(fmt_pct_band(c.true_pct, c.true_band_pct())),
            G::Stolen => Cell::marked(
                fmt_pct_or_dash(c.stolen_pct),
                c.stolen_pct >= STOLEN_MARK_PCT,
                Tone::Stolen,
            ),
            G::Hidden => irq(c.hidden_pct),
            G::NetRx => irq(c.net_rx_stolen_pct),
            G::Inline => irq(c.inline_pct),
            G::Caused | G::RxBytes => traffic_cell(self, c.traffic.as_ref()),
            G::Mem => Cell::plain(fmt_mem(c.mem_bytes)),
            G::Cpus => Cell::plain(if c.cpus.is_empty() { "all" } else { &c.cpus }),
            G::Rx => Cell::plain(fmt_pct(c.rx_on_cpus_pct)),
            G::RxCpus => {
                if c.rx_cpus.is_empty() {
                    Cell::plain("-")
                } else {
                    Cell::new(c.rx_cpus.clone(), Tone::NetRx)
                }
            }
            G::Path => Cell::new(if c.path.is_empty() { "?" } else { &c.path }, Tone::Dim),
        }
    }

    fn task_cell(self, t: &TaskView) -> Cell {
        let irq = |v: f64| Cell::plain(fmt_pct_or_dash(v));
        match self {
            G::Name => Cell::plain(format!("   {} {}", t.pid, t.comm)),
            G::Procs | G::Rx | G::RxCpus => Cell::empty(),
            G::Threads => Cell::plain(t.nr_threads.to_string()),
            G::Top => Cell::plain(fmt_pct(t.top_pct)),
            G::OnCpu => Cell::plain(fmt_pct(t.on_cpu_pct)),
            G::True => Cell::plain(fmt_pct_band(t.true_pct, t.true_band_pct())),
            G::Stolen => Cell::marked(
                fmt_pct_or_dash(t.stolen_pct),
                t.stolen_pct >= STOLEN_MARK_PCT,
                Tone::Stolen,
            ),
            G::Hidden => irq(t.hidden_pct),
            G::NetRx => irq(t.net_rx_pct()),
            G::Inline => irq(t.inline_pct),
            G::Caused | G::RxBytes => traffic_cell(self, t.traffic.as_ref()),
            G::Mem => Cell::plain(fmt_mem(t.res_bytes)),
            G::Cpus => Cell::plain(t.affinity.clone()),
            G::Path => Cell::new(format!("cpu {}", t.last_cpu), Tone::Dim),
        }
    }
}

/// A traffic figure of a cgroup or a process line: `n/a` where traffic
/// was not counted, never 0.
fn traffic_cell(c: CgField, t: Option<&TaskTraffic>) -> Cell {
    let Some(t) = t else {
        return Cell::plain("n/a");
    };
    match c {
        G::Caused => Cell::marked(
            fmt_pct_or_dash(t.caused_pct),
            t.caused_pct >= 0.05,
            Tone::NetRx,
        ),
        _ => Cell::plain(fmt_rate(t.rx_bytes_per_s)),
    }
}

/// Rows in display order: the model's (most STOLEN% first), limited to
/// `max_rows` (0 = all).
pub fn rows(f: &Frame, max_rows: usize) -> &[CgroupView] {
    let n = if max_rows == 0 {
        f.cgroups.len()
    } else {
        max_rows.min(f.cgroups.len())
    };
    &f.cgroups[..n]
}

/// The cgroup table of batch text, appended to `out`: every column of
/// [`CgField`], a line per cgroup.
pub fn table(out: &mut String, f: &Frame, max_rows: usize) {
    let traced = f.source == Source::Bpf;
    let cols: Vec<CgField> = batch_columns::<CgField>()
        .into_iter()
        .filter(|c| c.shown(Some(f)))
        .collect();
    out.push('\n');
    text_line(out, &cols, |c| c.header(traced).into());
    if f.cgroups.is_empty() {
        out.push_str("(no cgroup information in this frame)\n");
        return;
    }
    for i in 0..rows(f, max_rows).len() {
        text_line(out, &cols, |c| c.cell(f, CgRow::Group(i), traced).text);
    }
}

/// The frame as `--group cgroup --json` prints it: the roll-up without
/// task rows (one object per frame, as always).
pub fn json_frame(frame: &Frame) -> Frame {
    Frame {
        processes: Vec::new(),
        threads: Vec::new(),
        ..frame.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        super::super::fields::check_table::<CgField>();
    }
}
