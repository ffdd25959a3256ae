//! Devices/NAPI view: the device table batch text prints
//! ([`crate::output::devices::DevField`]), as many of its columns as fit:
//! per interface, its napi instances (RX queues) with polls, packets per
//! poll against the budget and the CPUs that polled; beside each interface
//! its configuration (XDP mode, RPS, queue IRQs and where they land).

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::widgets::{Row, Table};

use super::table::{field_cell, field_head, fitting, mark_selected, on_screen};
use crate::output::devices::{DevCtx, DevField};
use crate::output::fields::Field;
use crate::ui::rows::View;
use crate::ui::state::App;
use crate::ui::style::Sty;

/// The view's header: the host's receive cost (the batch's "Cost:" line,
/// n/a with its reason when its denominator is incomplete), then how to
/// read the table.
pub(crate) fn header(app: &App) -> String {
    match app
        .frame
        .as_ref()
        .and_then(|f| crate::output::devices::cost_text(&f.summary))
    {
        Some(cost) => format!("Host cost: {cost} │ {HEADER}"),
        None => HEADER.into(),
    }
}

pub(crate) const HEADER: &str = "Per interface (every network namespace) and napi instance (RX queue): packets/s, NET_RX ns per packet, polls/s, packets per poll vs budget, CPUs that polled; XDP mode, queue:IRQ → CPUs with RSS weight (w) and flow rules (r), RPS CPUs";

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    let cols: Vec<DevField> = fitting(area.width);
    let (header, widths) = field_head(&cols, |c| c.title().into(), s);
    let Some(frame) = &app.frame else {
        f.render_widget(Table::new(Vec::<Row>::new(), widths).header(header), area);
        return;
    };
    // Until the topology thread has reported, a device without
    // configuration shows "…" rather than "-".
    let cx = DevCtx::of(frame, app.extras.devices.is_none());
    let rows: Vec<Row> = on_screen(app, View::Devices, area, &app.dev_rows)
        .map(|(line, selected)| {
            let cells = cols
                .iter()
                .enumerate()
                .map(|(i, &c)| field_cell(c, c.cell(frame, line, &cx), i + 1 == cols.len(), s));
            mark_selected(Row::new(cells.collect::<Vec<_>>()), selected, s)
        })
        .collect();
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}
