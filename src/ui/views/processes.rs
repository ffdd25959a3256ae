//! Processes view: one row per process or thread (or a process with its
//! threads under it), sorted, filtered and followed; TOP% beside TRUE% and
//! the interrupt work stolen from each task.

use std::collections::HashMap;

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::View;
use crate::model::frame::TaskView;
use crate::model::raw::NET_RX;
use crate::output::format::{fmt_pct, fmt_pct_or_dash};
use crate::ui::app::App;
use crate::ui::style::{STOLEN_MARK_PCT, Sty, fit, fit_columns};

/// Process table columns, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Pid,
    User,
    Command,
    Top,
    True,
    Gap,
    Stolen,
    Hidden,
    Hardirq,
    Softirq,
    NetRx,
    Inline,
    Cpu,
    Affinity,
    Node,
}

impl Column {
    /// Screen order (COMMAND last, as in top), which `<`/`>` walk.
    pub const ALL: [Column; 15] = [
        Column::Pid,
        Column::User,
        Column::Top,
        Column::True,
        Column::Gap,
        Column::Stolen,
        Column::Hidden,
        Column::Hardirq,
        Column::Softirq,
        Column::NetRx,
        Column::Inline,
        Column::Cpu,
        Column::Affinity,
        Column::Node,
        Column::Command,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Column::Pid => "PID",
            Column::User => "USER",
            Column::Command => "COMMAND",
            Column::Top => "TOP%",
            Column::True => "TRUE%",
            Column::Gap => "GAP",
            Column::Stolen => "STOLEN%",
            Column::Hidden => "HID~%",
            Column::Hardirq => "HI%",
            Column::Softirq => "SI%",
            Column::NetRx => "NET_RX%",
            Column::Inline => "INLINE%",
            Column::Cpu => "CPU",
            Column::Affinity => "AFFINITY",
            Column::Node => "NODE",
        }
    }

    /// What the column means, for the sort picker.
    pub fn describe(self) -> &'static str {
        match self {
            Column::Pid => "process (or thread) ID",
            Column::User => "owner",
            Column::Command => "command name",
            Column::Top => "%CPU exactly as top shows it",
            Column::True => "CPU the task really got for its own work",
            Column::Gap => "TOP% minus TRUE%: what top gets wrong",
            Column::Stolen => "hardirq+softirq run on its time for others",
            Column::Hidden => "estimate: untraced cost of its interruptions",
            Column::Hardirq => "stolen: hardirq + system vectors",
            Column::Softirq => "stolen: softirq, all vectors",
            Column::NetRx => "stolen: NET_RX softirq",
            Column::Inline => "softirq it raised itself (e.g. its sends)",
            Column::Cpu => "CPU it last ran on",
            Column::Affinity => "CPUs it may run on",
            Column::Node => "NUMA node of its last CPU",
        }
    }

    /// Numbers sort largest first and align right.
    pub fn numeric(self) -> bool {
        !matches!(self, Column::User | Column::Command | Column::Affinity)
    }

    /// Amounts sort largest first; identifiers and text ascending (htop).
    pub fn default_descending(self) -> bool {
        self.numeric() && !matches!(self, Column::Pid | Column::Cpu | Column::Node)
    }

    pub(crate) fn pos(self) -> usize {
        Column::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }
}

/// Hardirq + system-vector time stolen from the task.
pub fn hi_pct(t: &TaskView) -> f64 {
    t.hardirq_pct + t.sysvec_pct
}

/// Softirq time stolen from the task, all vectors.
pub fn si_pct(t: &TaskView) -> f64 {
    t.softirq_stolen_pct.iter().sum()
}

pub fn net_rx_pct(t: &TaskView) -> f64 {
    t.softirq_stolen_pct[NET_RX]
}

/// Which Frame list a task row points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    Proc(usize),
    Thread(usize),
}

/// One visible row of the Processes view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRow {
    pub src: Src,
    /// 0 for top-level rows, 1 for threads under a process in tree mode.
    pub depth: u8,
    /// Last child of its parent (tree drawing).
    pub last: bool,
}

fn matches(app: &App, t: &TaskView) -> bool {
    if app.filter.is_empty() {
        return true;
    }
    let f = app.filter.to_lowercase();
    if let Ok(pid) = f.parse::<u32>()
        && (t.pid == pid || t.tid == pid)
    {
        return true;
    }
    t.comm.to_lowercase().contains(&f)
        || app
            .users
            .get(&t.uid)
            .is_some_and(|u| u.to_lowercase().contains(&f))
}

fn compare(app: &App, a: &TaskView, b: &TaskView) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let num = |f: fn(&TaskView) -> f64| f(a).total_cmp(&f(b));
    let ord = match app.sort.column {
        Column::Pid => a.pid.cmp(&b.pid).then(a.tid.cmp(&b.tid)),
        Column::User => app.user_name(a.uid).cmp(&app.user_name(b.uid)),
        Column::Command => a.comm.cmp(&b.comm),
        Column::Top => num(|t| t.top_pct),
        Column::True => num(|t| t.true_pct),
        Column::Gap => num(|t| t.top_pct - t.true_pct),
        Column::Stolen => num(|t| t.stolen_pct),
        Column::Hidden => num(|t| t.hidden_pct),
        Column::Hardirq => num(hi_pct),
        Column::Softirq => num(si_pct),
        Column::NetRx => num(net_rx_pct),
        Column::Inline => num(|t| t.inline_pct),
        Column::Cpu => a.last_cpu.cmp(&b.last_cpu),
        Column::Affinity => a.affinity.cmp(&b.affinity),
        Column::Node => app.node_of(a.last_cpu).cmp(&app.node_of(b.last_cpu)),
    };
    let ord = if app.sort.descending {
        ord.reverse()
    } else {
        ord
    };
    // Ties by PID/TID ascending, whatever the direction: stable screens.
    match ord {
        Ordering::Equal => a.pid.cmp(&b.pid).then(a.tid.cmp(&b.tid)),
        o => o,
    }
}

/// The rows on screen, in order, under the current sort, filter and mode.
pub(crate) fn rows(app: &App) -> Vec<TaskRow> {
    let Some(f) = &app.frame else {
        return Vec::new();
    };
    if !app.tree {
        let (list, mk): (&[TaskView], fn(usize) -> Src) = if app.threads {
            (&f.threads, Src::Thread)
        } else {
            (&f.processes, Src::Proc)
        };
        let mut idx: Vec<usize> = (0..list.len())
            .filter(|&i| matches(app, &list[i]))
            .collect();
        idx.sort_by(|&a, &b| compare(app, &list[a], &list[b]));
        return idx
            .into_iter()
            .map(|i| TaskRow {
                src: mk(i),
                depth: 0,
                last: false,
            })
            .collect();
    }
    // Tree: each process, then its threads (the Frame has no parent PIDs,
    // so the tree is process → threads).
    let mut threads_of: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, t) in f.threads.iter().enumerate() {
        threads_of.entry(t.pid).or_default().push(i);
    }
    let mut procs: Vec<usize> = (0..f.processes.len())
        .filter(|&i| {
            let p = &f.processes[i];
            matches(app, p)
                || threads_of
                    .get(&p.pid)
                    .is_some_and(|ts| ts.iter().any(|&j| matches(app, &f.threads[j])))
        })
        .collect();
    procs.sort_by(|&a, &b| compare(app, &f.processes[a], &f.processes[b]));
    let mut rows = Vec::with_capacity(procs.len() + f.threads.len());
    for p in procs {
        rows.push(TaskRow {
            src: Src::Proc(p),
            depth: 0,
            last: false,
        });
        if let Some(ts) = threads_of.get_mut(&f.processes[p].pid) {
            if ts.len() < 2 {
                continue;
            }
            ts.sort_by(|&a, &b| compare(app, &f.threads[a], &f.threads[b]));
            let n = ts.len();
            for (k, &j) in ts.iter().enumerate() {
                rows.push(TaskRow {
                    src: Src::Thread(j),
                    depth: 1,
                    last: k + 1 == n,
                });
            }
        }
    }
    rows
}

/// Settings first: they must stay visible on narrow terminals.
pub(crate) fn header(app: &App) -> String {
    let mut t = format!(
        "{} ({}) · sort {}{}",
        if app.threads { "Threads" } else { "Processes" },
        if app.tree { "tree" } else { "flat" },
        app.sort.column.title(),
        if app.sort.descending { "▼" } else { "▲" },
    );
    if !app.filter.is_empty() {
        t.push_str(&format!(" · filter \"{}\"", app.filter));
    }
    if let Some(p) = app.follow {
        t.push_str(&format!(" · following {p}"));
    }
    t.push_str(&format!(
        " │ TOP% = what top shows, TRUE% = what it really got, STOLEN% = irq work run on its time (! ≥ {STOLEN_MARK_PCT:.0}%), HID~% = its untraced cost (estimate)"
    ));
    t
}

fn col_width(c: Column) -> u16 {
    match c {
        Column::Pid => 7,
        Column::User => 8,
        Column::Command => 15,
        Column::Top => 5,
        Column::True => 5,
        Column::Gap => 5,
        Column::Stolen => 7,
        Column::Hidden => 5,
        Column::Hardirq => 4,
        Column::Softirq => 4,
        Column::NetRx => 7,
        Column::Inline => 7,
        Column::Cpu => 3,
        Column::Affinity => 9,
        Column::Node => 4,
    }
}

const PROC_PRIORITY: [Column; 14] = [
    Column::Pid,
    Column::Top,
    Column::True,
    Column::Stolen,
    Column::Hidden,
    Column::NetRx,
    Column::Gap,
    Column::User,
    Column::Softirq,
    Column::Hardirq,
    Column::Cpu,
    Column::Inline,
    Column::Node,
    Column::Affinity,
];

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    // Marker column (1) + spacing, then the rest.
    let avail = area.width.saturating_sub(2);
    let fixed: Vec<(Column, u16)> = Column::ALL
        .iter()
        .filter(|c| **c != Column::Command)
        .map(|c| (*c, col_width(*c)))
        .collect();
    let mut cols = fit_columns(&fixed, &PROC_PRIORITY, avail, col_width(Column::Command));
    // Command goes last and takes what is left, as in top and htop.
    cols.push(Column::Command);
    let used: u16 = cols
        .iter()
        .filter(|c| **c != Column::Command)
        .map(|c| col_width(*c) + 1)
        .sum();
    let cmd_w = avail.saturating_sub(used + 1).max(4);
    let width_of = |c: Column| {
        if c == Column::Command {
            cmd_w
        } else {
            col_width(c)
        }
    };

    let mut header_cells = vec![Cell::from(" ")];
    for &c in &cols {
        let mut t = c.title().to_string();
        if c == app.sort.column {
            t.push(if app.sort.descending { '▼' } else { '▲' });
        }
        header_cells.push(Cell::from(fit(&t, width_of(c) as usize, c.numeric())));
    }
    let header = Row::new(header_cells).style(s.header());

    let visible = area.height.saturating_sub(1) as usize;
    let pos = app.pos[View::Processes.index()];
    let rows: Vec<Row> = app
        .rows
        .iter()
        .enumerate()
        .skip(pos.offset)
        .take(visible)
        .filter_map(|(i, r)| task_row(app, s, r, &cols, &width_of, i == pos.selected))
        .collect();
    let empty = rows.is_empty();
    let mut widths = vec![Constraint::Length(1)];
    widths.extend(cols.iter().map(|c| Constraint::Length(width_of(*c))));
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    f.render_widget(table, area);
    if empty {
        let msg = if app.frame.is_none() {
            "  collecting the first interval..."
        } else {
            "  no tasks match (Esc clears the filter)"
        };
        let r = Rect {
            y: area.y + 1,
            height: 1,
            ..area
        };
        f.render_widget(Paragraph::new(msg), r);
    }
}

fn task_row<'a>(
    app: &App,
    s: &Sty,
    r: &TaskRow,
    cols: &[Column],
    width_of: &dyn Fn(Column) -> u16,
    selected: bool,
) -> Option<Row<'a>> {
    let t = app.task(r.src)?;
    let stolen = t.stolen_pct;
    let gap = t.top_pct - t.true_pct;
    let marked = stolen >= STOLEN_MARK_PCT;
    let mut cells = vec![if marked {
        Cell::from(Span::styled("!", s.stolen()))
    } else {
        Cell::from(" ")
    }];
    for &c in cols {
        let w = width_of(c) as usize;
        let (text, style) = match c {
            Column::Pid => (
                match r.src {
                    Src::Thread(_) => t.tid.to_string(),
                    Src::Proc(_) => t.pid.to_string(),
                },
                Style::new(),
            ),
            Column::User => (app.user_name(t.uid), Style::new()),
            Column::Command => {
                let prefix = match (r.depth, r.last) {
                    (0, _) => "",
                    (_, true) => "└─ ",
                    (_, false) => "├─ ",
                };
                let name = if t.kthread {
                    format!("{prefix}[{}]", t.comm)
                } else {
                    format!("{prefix}{}", t.comm)
                };
                (name, Style::new())
            }
            Column::Top => (fmt_pct(t.top_pct), Style::new()),
            Column::True => (
                fmt_pct(t.true_pct),
                if gap >= STOLEN_MARK_PCT {
                    Style::new().add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                },
            ),
            Column::Gap => (
                fmt_pct_or_dash(gap.max(0.0)),
                if gap >= STOLEN_MARK_PCT {
                    s.gap()
                } else {
                    Style::new()
                },
            ),
            Column::Stolen => (
                fmt_pct_or_dash(stolen),
                if marked { s.stolen() } else { Style::new() },
            ),
            Column::Hidden => (fmt_pct_or_dash(t.hidden_pct), Style::new()),
            Column::Hardirq => (fmt_pct_or_dash(hi_pct(t)), Style::new()),
            Column::Softirq => (fmt_pct_or_dash(si_pct(t)), Style::new()),
            Column::NetRx => {
                let v = net_rx_pct(t);
                (
                    fmt_pct_or_dash(v),
                    if v >= 0.05 { s.net_rx() } else { Style::new() },
                )
            }
            Column::Inline => (fmt_pct_or_dash(t.inline_pct), Style::new()),
            Column::Cpu => (t.last_cpu.to_string(), Style::new()),
            Column::Affinity => (t.affinity.clone(), Style::new()),
            Column::Node => (
                app.node_of(t.last_cpu)
                    .map_or("-".into(), |n| n.to_string()),
                Style::new(),
            ),
        };
        cells.push(Cell::from(Span::styled(fit(&text, w, c.numeric()), style)));
    }
    let row = Row::new(cells);
    Some(if selected {
        row.style(s.selected())
    } else {
        row
    })
}
