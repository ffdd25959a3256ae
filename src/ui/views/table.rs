//! What the table views (Processes, grouped, CPUs, Devices/NAPI) share:
//! which rows fit on screen, the header row of fixed columns, and how the
//! selected row looks.

use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};

use crate::ui::app::App;
use crate::ui::rows::View;
use crate::ui::style::{Sty, fit};

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

/// A column of a fixed table: title, width, right-aligned (numbers).
pub(crate) type Col = (&'static str, u16, bool);

/// The header row and widths of a fixed table's columns that `keep`
/// admits (by index); the last column stretches over what is left.
pub(crate) fn table_head<'a>(
    cols: &[Col],
    keep: impl Fn(usize) -> bool,
    s: &Sty,
) -> (Row<'a>, Vec<Constraint>) {
    let kept = || cols.iter().enumerate().filter(|(i, _)| keep(*i));
    let header = Row::new(
        kept()
            .map(|(_, (t, w, r))| Cell::from(fit(t, *w as usize, *r)))
            .collect::<Vec<_>>(),
    )
    .style(s.header());
    let widths = kept()
        .map(|(i, c)| {
            if i == cols.len() - 1 {
                Constraint::Min(c.1)
            } else {
                Constraint::Length(c.1)
            }
        })
        .collect();
    (header, widths)
}

/// A table row, reversed when selected.
pub(crate) fn mark_selected<'a>(row: Row<'a>, selected: bool, s: &Sty) -> Row<'a> {
    if selected {
        row.style(s.selected())
    } else {
        row
    }
}
