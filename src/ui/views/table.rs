//! What the table views (Processes, grouped, CPUs, Devices/NAPI) share:
//! which rows fit on screen, the header row of a field table's columns,
//! how a cell's tone looks, and how the selected row looks.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row};

use crate::output::fields::{self, Align, Field, Tone};
use crate::ui::rows::View;
use crate::ui::state::App;
use crate::ui::style::{Sty, fit, fit_columns};

/// The items of a table view that fit below its header row, from the
/// view's scroll offset, each with whether it is the selected one.
pub(crate) fn on_screen<T>(
    app: &App,
    view: View,
    area: Rect,
    items: impl IntoIterator<Item = T>,
) -> impl Iterator<Item = (T, bool)> {
    let pos = app.pos[view.index()];
    let visible = area.height.saturating_sub(1) as usize;
    items
        .into_iter()
        .enumerate()
        .skip(pos.offset)
        .take(visible)
        .map(move |(i, t)| (t, i == pos.selected))
}

/// A table row, reversed when selected.
pub(crate) fn mark_selected<'a>(row: Row<'a>, selected: bool, s: &Sty) -> Row<'a> {
    if selected {
        row.style(s.selected())
    } else {
        row
    }
}

/// The columns of a field table that fit `width`, in display order:
/// [`Field::PRIORITY`] first, then the rest as they come.
pub(crate) fn fitting<F: Field>(width: u16) -> Vec<F> {
    let display: Vec<(F, u16)> = F::ALL.iter().map(|c| (*c, c.width())).collect();
    let priority: Vec<F> = F::PRIORITY.iter().chain(F::ALL).copied().collect();
    fit_columns(&display, &priority, width.saturating_add(1), 0)
}

/// The header row and widths of a field table's `cols`, each header as
/// `title` says; the last column stretches over what is left.
pub(crate) fn field_head<'a, F: Field>(
    cols: &[F],
    title: impl Fn(F) -> String,
    s: &Sty,
) -> (Row<'a>, Vec<Constraint>) {
    let header = Row::new(
        cols.iter()
            .map(|&c| {
                Cell::from(fit(
                    &title(c),
                    c.width() as usize,
                    c.align() == Align::Right,
                ))
            })
            .collect::<Vec<_>>(),
    )
    .style(s.header());
    let widths = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i + 1 == cols.len() {
                Constraint::Min(c.width())
            } else {
                Constraint::Length(c.width())
            }
        })
        .collect();
    (header, widths)
}

/// How a tone looks in the scheme.
pub(crate) fn tone_style(s: &Sty, t: Tone) -> Style {
    match t {
        Tone::Plain | Tone::Bar(_) => Style::new(),
        Tone::Warn => s.warn(),
        Tone::Stolen => s.stolen(),
        Tone::NetRx => s.net_rx(),
        Tone::Gap => s.gap(),
        Tone::Strong => Style::new().add_modifier(Modifier::BOLD),
        Tone::Accent => s.accent(),
        Tone::Dim => s.dim(),
    }
}

/// A field table's cell on screen: its text cut to the column's width
/// (the `last` column stretches, so it is not cut) and coloured by its
/// tone; a [`Tone::Bar`] as a bar of that width, full (every poll used the
/// whole budget) in the stolen colour.
pub(crate) fn field_cell<'a, F: Field>(
    col: F,
    cell: fields::Cell,
    last: bool,
    s: &Sty,
) -> Cell<'a> {
    let w = col.width() as usize;
    if let Tone::Bar(used) = cell.tone {
        let bw = w.saturating_sub(2);
        let fill = ((used.clamp(0.0, 1.0) * bw as f64).round() as usize).min(bw);
        let style = if used >= 0.99 {
            s.stolen()
        } else {
            s.fg(Color::Magenta)
        };
        return Cell::from(Line::from(vec![
            Span::raw("["),
            Span::styled("#".repeat(fill), style),
            Span::raw(" ".repeat(bw - fill)),
            Span::raw("]"),
        ]));
    }
    let text = if last {
        cell.text
    } else {
        fit(&cell.text, w, col.align() == Align::Right)
    };
    Cell::from(Span::styled(text, tone_style(s, cell.tone)))
}
