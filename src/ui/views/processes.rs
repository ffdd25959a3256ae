//! Processes view: one row per process or thread (or a process with its
//! threads under it), sorted, filtered and followed; TOP% beside TRUE% and
//! the interrupt work stolen from each task.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::table::{mark_selected, on_screen, tone_style};
use crate::output::columns::{PRIORITY, ProcColumn};
use crate::ui::history::{Key, Series};
use crate::ui::rows::View;
use crate::ui::rows::processes::TaskRow;
use crate::ui::sparkline::PCT_SCALE;
use crate::ui::state::App;
use crate::ui::style::{STOLEN_MARK_PCT, Sty, fit, fit_columns};

/// Settings first: they must stay visible on narrow terminals.
pub(crate) fn header(app: &App) -> String {
    // The forest lists processes whatever `H` says; `H` and `t` only hang
    // each one's threads under it.
    let (rows, mode) = match (app.forest, app.threads, app.tree) {
        (true, threads, tree) if threads || tree => ("Processes", "forest + threads"),
        (true, _, _) => ("Processes", "forest"),
        (false, true, tree) => ("Threads", if tree { "tree" } else { "flat" }),
        (false, false, tree) => ("Processes", if tree { "tree" } else { "flat" }),
    };
    let mut t = format!(
        "{rows} ({mode}) · sort {}{}",
        app.sort.column.title(),
        if app.sort.descending { "▼" } else { "▲" },
    );
    if !app.pids.is_empty() {
        let pids: Vec<String> = app.pids.iter().map(u32::to_string).collect();
        t.push_str(&format!(" · -p {}", pids.join(",")));
        let gone = exited_pids(app);
        if !gone.is_empty() {
            t.push_str(&format!(" (PID {} has exited)", gone.join(",")));
        }
    }
    if !app.filter.is_empty() {
        t.push_str(&format!(" · filter \"{}\"", app.filter));
    }
    if let Some(u) = app.user {
        t.push_str(&format!(" · user {}", app.row_ctx().user(u)));
    }
    if app.hide_kthreads {
        t.push_str(" · no kernel threads");
    }
    if let Some(p) = app.follow {
        t.push_str(&format!(" · following {p}"));
    }
    t.push_str(&format!(
        " │ TOP% = what top shows, TRUE% = what it really got for its own work (with REBILL%, its time the kernel billed to threads it woke: TRUE% may exceed ONCPU%), STOLEN% = irq work run on its time (! ≥ {STOLEN_MARK_PCT:.0}%), HIDDEN~% = its untraced cost (estimate)"
    ));
    t
}

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    // Marker column (1) + spacing, then the rest.
    let avail = area.width.saturating_sub(2);
    // The chosen columns in their order; on a narrow terminal the most
    // wanted of them (PRIORITY, then the rest as chosen) are kept.
    let shown = |c: &ProcColumn| crate::output::columns::shown(app.frame.as_ref(), *c);
    let fixed: Vec<(ProcColumn, u16)> = app
        .columns
        .iter()
        .filter(|c| shown(c))
        .map(|c| (*c, c.width()))
        .collect();
    let priority: Vec<ProcColumn> = PRIORITY
        .iter()
        .copied()
        .chain(app.columns.iter().copied())
        .filter(|c| shown(c))
        .collect();
    let mut cols = fit_columns(&fixed, &priority, avail, ProcColumn::Command.width());
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

    let traced = app.row_ctx().traced;
    let thread_rows = app.threads && !app.tree && !app.forest;
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
        let msg = empty_note(app);
        let r = Rect {
            y: area.y + 1,
            height: 1,
            ..area
        };
        f.render_widget(Paragraph::new(msg), r);
    }
}

/// The `-p` PIDs the newest frame no longer has.
fn exited_pids(app: &App) -> Vec<String> {
    let Some(f) = &app.frame else {
        return Vec::new();
    };
    app.pids
        .iter()
        .filter(|p| !f.processes.iter().any(|t| t.pid == **p))
        .map(u32::to_string)
        .collect()
}

/// Why the list is empty, and what to do about it.
fn empty_note(app: &App) -> String {
    if app.frame.is_none() {
        return "  collecting the first interval...".into();
    }
    let gone = exited_pids(app);
    if !app.pids.is_empty() && gone.len() == app.pids.len() {
        let list = gone.join(",");
        return format!("  PID {list} has exited: nettop -p {list} watches only it (q quits)");
    }
    if !app.filter.is_empty() || app.user.is_some() {
        return "  no tasks match the filter or user (Esc clears them)".into();
    }
    "  no tasks to list (i lists idle tasks, K kernel threads)".into()
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
    let cx = app.row_ctx();
    let marked = t.stolen_pct >= STOLEN_MARK_PCT;
    let mut cells = vec![if marked {
        Cell::from(Span::styled("!", s.stolen()))
    } else {
        Cell::from(" ")
    }];
    for &c in cols {
        let cell = c.cell(t, &cx);
        let mut text = cell.text;
        if c == ProcColumn::Command && r.depth > 0 {
            text.insert_str(0, &tree_prefix(r, width_of(c) as usize));
        }
        let style = tone_style(s, cell.tone);
        let w = width_of(c) as usize;
        if c == ProcColumn::Trend {
            text = app
                .history
                .sparkline(Key::of(t), Series::Stolen, w, PCT_SCALE);
        }
        // A command line cut to the screen says so, as htop's does.
        if c == ProcColumn::Command && cx.cmdline && w > 1 && text.chars().count() > w {
            text = text.chars().take(w - 1).chain(['…']).collect();
        }
        cells.push(Cell::from(Span::styled(fit(&text, w, c.numeric()), style)));
    }
    Some(mark_selected(Row::new(cells), selected, s))
}

/// The tree glyphs before a nested row's COMMAND, as top -V and htop draw
/// them: a `│` in each ancestor's column while it has siblings below,
/// then the row's own `├─` or `└─`. A deep tree (a fork chain, a hostile
/// recording) gets about half of COMMAND, so the names stay on screen:
/// past that only the nearest levels are drawn, after a `…` one level
/// wide, so that the first row past the cap still has its glyph under its
/// parent's name.
fn tree_prefix(r: &TaskRow, cmd_w: usize) -> String {
    let depth = usize::from(r.depth);
    if depth == 0 {
        return String::new();
    }
    // Three columns a level; always the row's own glyph; the rails hold 32.
    let drawn = depth.min((cmd_w / 2 / 3).clamp(1, 32));
    let mut s = String::with_capacity(drawn * 9 + 3);
    if depth > drawn {
        s.push_str("…  ");
    }
    // Outermost first: bit j is the ancestor j + 1 levels up.
    for j in (0..drawn - 1).rev() {
        s.push_str(if r.rails >> j & 1 == 1 {
            "│  "
        } else {
            "   "
        });
    }
    s.push_str(if r.last { "└─ " } else { "├─ " });
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::rows::processes::Src;

    fn row(depth: u8) -> TaskRow {
        TaskRow {
            src: Src::Proc(0),
            depth,
            last: true,
            rails: 0,
        }
    }

    #[test]
    fn the_first_row_past_the_cap_stays_under_its_parent() {
        // COMMAND 42 wide: 7 levels drawn in full.
        let w = |d: u8| tree_prefix(&row(d), 42).chars().count();
        assert_eq!(w(7), 21);
        assert!(!tree_prefix(&row(7), 42).contains('…'));
        // Depth 8, cut: its glyph where depth 7's name begins.
        let cut = tree_prefix(&row(8), 42);
        assert!(cut.starts_with('…'), "{cut}");
        assert_eq!(cut.chars().count() - 3, w(7), "{cut}");
    }
}
