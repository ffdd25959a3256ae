//! Processes view: one row per process or thread (or a process with its
//! threads under it), sorted, filtered and followed; TOP% beside TRUE% and
//! the interrupt work stolen from each task.

use std::collections::HashMap;

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::{View, mark_selected, on_screen};
use crate::model::frame::TaskView;
use crate::output::columns::{self, PRIORITY, ProcColumn, RowCtx};
use crate::ui::app::App;
use crate::ui::style::{STOLEN_MARK_PCT, Sty, fit, fit_columns};

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
    let ord = app.sort.column.compare(a, b, &ctx(app));
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

/// What the shared column table needs from the App to print or sort a row.
pub(crate) fn ctx(app: &App) -> RowCtx<'_> {
    RowCtx {
        users: &app.users,
        cpu_node: &app.cpu_rows.node,
        traced: app.frame.as_ref().is_none_or(columns::traced),
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
        " │ TOP% = what top shows, TRUE% = what it really got, STOLEN% = irq work run on its time (! ≥ {STOLEN_MARK_PCT:.0}%), HIDDEN~% = its untraced cost (estimate)"
    ));
    t
}

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    // Marker column (1) + spacing, then the rest.
    let avail = area.width.saturating_sub(2);
    let fixed: Vec<(ProcColumn, u16)> = ProcColumn::ALL
        .iter()
        .filter(|c| **c != ProcColumn::Command)
        .map(|c| (*c, c.width()))
        .collect();
    let mut cols = fit_columns(&fixed, &PRIORITY, avail, ProcColumn::Command.width());
    // Command goes last and takes what is left, as in top and htop.
    cols.push(ProcColumn::Command);
    let used: u16 = cols
        .iter()
        .filter(|c| **c != ProcColumn::Command)
        .map(|c| c.width() + 1)
        .sum();
    let cmd_w = avail.saturating_sub(used + 1).max(4);
    let width_of = |c: ProcColumn| {
        if c == ProcColumn::Command {
            cmd_w
        } else {
            c.width()
        }
    };

    let traced = ctx(app).traced;
    let thread_rows = app.threads && !app.tree;
    let mut header_cells = vec![Cell::from(" ")];
    for &c in &cols {
        let mut t = c.header(traced, thread_rows);
        if c == app.sort.column {
            t.push(if app.sort.descending { '▼' } else { '▲' });
        }
        header_cells.push(Cell::from(fit(&t, width_of(c) as usize, c.numeric())));
    }
    let header = Row::new(header_cells).style(s.header());

    let rows: Vec<Row> = on_screen(app, View::Processes, area, &app.rows)
        .filter_map(|(r, selected)| task_row(app, s, r, &cols, &width_of, selected))
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
    cols: &[ProcColumn],
    width_of: &dyn Fn(ProcColumn) -> u16,
    selected: bool,
) -> Option<Row<'a>> {
    let t = app.task(r.src)?;
    let cx = ctx(app);
    let gap = t.gap_pct();
    let marked = t.stolen_pct >= STOLEN_MARK_PCT;
    let mut cells = vec![if marked {
        Cell::from(Span::styled("!", s.stolen()))
    } else {
        Cell::from(" ")
    }];
    for &c in cols {
        let mut text = c.text(t, &cx);
        if c == ProcColumn::Command && r.depth > 0 {
            let prefix = if r.last { "└─ " } else { "├─ " };
            text.insert_str(0, prefix);
        }
        let style = match c {
            ProcColumn::True if gap >= STOLEN_MARK_PCT => Style::new().add_modifier(Modifier::BOLD),
            ProcColumn::Gap if gap >= STOLEN_MARK_PCT => s.gap(),
            ProcColumn::Stolen if marked => s.stolen(),
            ProcColumn::NetRx if cx.traced && t.net_rx_pct() >= 0.05 => s.net_rx(),
            _ => Style::new(),
        };
        let w = width_of(c) as usize;
        cells.push(Cell::from(Span::styled(fit(&text, w, c.numeric()), style)));
    }
    Some(mark_selected(Row::new(cells), selected, s))
}
