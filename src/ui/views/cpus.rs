//! CPUs view: the CPU table batch text prints
//! ([`crate::output::cpus::CpuField`]), as many of its columns as fit: per
//! CPU, mpstat-style shares as a bar, NET_RX and napi rates, nettop's own
//! BPF time there, the tasks interrupt work is stolen from, and (the TUI's
//! own) sparklines of its STOLEN% and NET_RX/s history.
//!
//! The sparklines are STOLEN% and NET_RX/s rather than busy %: the bar
//! already shows how busy a CPU is now, and a CPU at 100 % busy looks the
//! same in a busy history whether a task or interrupt work kept it busy.
//! What nettop is for is when interrupt work hit a CPU and whether it
//! tracks the receive rate, which these two show side by side.

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};

use super::table::{field_cell, field_head, fitting, mark_selected, on_screen};
use crate::model::frame::CpuView;
use crate::output::cpus::{CpuCtx, CpuField};
use crate::output::fields::Field;
use crate::output::format::fmt_rate;
use crate::ui::history::{Key, Series};
use crate::ui::rows::View;
use crate::ui::sparkline::PCT_SCALE;
use crate::ui::state::App;
use crate::ui::style::Sty;

/// The view's title line. BPF% comes early: a narrow terminal cuts the
/// line, and what nettop itself costs is the one column whose meaning a
/// reader cannot guess from the others.
pub(crate) const HEADER: &str = "Per CPU: bar = usr sys ! irq # soft ~ steal; BPF% = nettop's own BPF time on it (needs --bpf-stats, else -); NET_RX actions, packets, NET_RX ns per packet, napi polls, budget exhausted, time_squeeze per second; victims = most stolen-from tasks last on it";

const BAR_W: usize = 20;

/// Splits 0–100 % into `BAR_W` cells with largest-remainder rounding so
/// the segments never exceed the bar.
fn bar_spans<'a>(c: &CpuView, s: &Sty) -> Vec<Span<'a>> {
    let parts = [
        (c.usr_pct + c.nice_pct, '=', Color::Green),
        (c.sys_pct + c.iowait_pct, '-', Color::Blue),
        (c.irq_pct, '!', Color::Red),
        (c.soft_pct, '#', Color::Magenta),
        (c.steal_pct, '~', Color::Yellow),
    ];
    let scale = BAR_W as f64 / 100.0;
    let mut cells: Vec<usize> = parts
        .iter()
        .map(|p| (p.0.max(0.0) * scale).floor() as usize)
        .collect();
    let mut used: usize = cells.iter().sum();
    let mut rema: Vec<(usize, f64)> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| (i, p.0.max(0.0) * scale - cells[i] as f64))
        .collect();
    rema.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = parts.iter().map(|p| p.0.max(0.0)).sum::<f64>() * scale;
    let target = (total.round() as usize).min(BAR_W);
    for (i, r) in rema {
        if used >= target || r <= 0.0 {
            break;
        }
        cells[i] += 1;
        used += 1;
    }
    while used > BAR_W {
        if let Some(m) = cells.iter_mut().max() {
            *m -= 1;
        }
        used -= 1;
    }
    let mut spans = vec![Span::raw("[")];
    for (i, p) in parts.iter().enumerate() {
        if cells[i] > 0 {
            spans.push(Span::styled(p.1.to_string().repeat(cells[i]), s.fg(p.2)));
        }
    }
    spans.push(Span::raw(" ".repeat(BAR_W - used)));
    spans.push(Span::raw("]"));
    spans
}

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    let cols: Vec<CpuField> = fitting(area.width);
    // STOLEN% is drawn against a whole CPU; NET_RX/s against the highest
    // any CPU reached in the history, so rows share one scale: its title
    // says which.
    let rx_scale = format!("NETRX/s ≤{}", fmt_rate(app.history.net_rx_peak()));
    let (header, widths) = field_head(
        &cols,
        |c| match c {
            CpuField::NetRxHist => rx_scale.clone(),
            c => c.title().into(),
        },
        s,
    );
    let Some(frame) = &app.frame else {
        f.render_widget(Table::new(Vec::<Row>::new(), widths).header(header), area);
        return;
    };
    let cx = CpuCtx {
        traced: crate::output::columns::traced(frame),
        victims: &app.cpu_rows.victims,
    };
    let bar_shown = cols.contains(&CpuField::Busy);
    let rows: Vec<Row> = on_screen(app, View::Cpus, area, &frame.cpus)
        .map(|(c, selected)| {
            let cells = cols.iter().enumerate().map(|(i, &col)| {
                let w = col.width() as usize;
                match col {
                    CpuField::Busy if !c.online => Cell::from("offline"),
                    CpuField::Busy => Cell::from(Line::from(bar_spans(c, s))),
                    CpuField::StolenHist => Cell::from(Span::styled(
                        app.history
                            .sparkline(Key::Cpu(c.cpu), Series::Stolen, w, PCT_SCALE),
                        s.fg(Color::Red),
                    )),
                    CpuField::NetRxHist => Cell::from(Span::styled(
                        app.history.sparkline(
                            Key::Cpu(c.cpu),
                            Series::NetRx,
                            w,
                            app.history.net_rx_peak(),
                        ),
                        s.fg(Color::Magenta),
                    )),
                    // The bar already says it.
                    CpuField::Usr if !c.online && bar_shown => Cell::from(""),
                    col => field_cell(col, col.cell(c, &cx), i + 1 == cols.len(), s),
                }
            });
            mark_selected(Row::new(cells.collect::<Vec<_>>()), selected, s)
        })
        .collect();
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}
