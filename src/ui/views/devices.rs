//! Devices/NAPI view: per interface, its napi instances (RX queues) with
//! polls, packets per poll against the budget and the CPUs that polled;
//! beside each interface, what the topology knows (XDP mode, RPS, queue
//! IRQs and where they land).

use std::collections::BTreeMap;

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};

use super::table::{Col, mark_selected, on_screen, table_head};
use crate::model::cost::napi_of;
use crate::model::frame::Frame;
use crate::output::format::fmt_rate;
use crate::ui::app::App;
use crate::ui::rows::View;
use crate::ui::rows::devices::{DevRow, DevTopo};
use crate::ui::style::{Sty, fit};

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

pub(crate) const HEADER: &str = "Per interface (every network namespace) and napi instance (RX queue): packets/s, NET_RX ns per packet, polls/s, packets per poll vs budget, CPUs that polled; XDP mode, RPS CPUs, queue:IRQ → CPUs with RSS weight (w) and flow rules (r)";

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    const COLS: [Col; 15] = [
        ("DEVICE / NAPI", 20, false),
        ("RX PKT/s", 8, true),
        ("NS/PKT", 6, true),
        ("RX B/s", 7, true),
        ("TX PKT/s", 8, true),
        ("TX B/s", 7, true),
        ("DROP/s", 6, true),
        ("POLL/s", 7, true),
        ("WORK/POLL", 9, true),
        ("BUDGET USE", 12, false),
        ("EXH/s", 6, true),
        ("CPUS", 12, false),
        ("XDP", 7, false),
        ("RPS", 8, false),
        ("QUEUE IRQ→CPUS", 16, false),
    ];
    /// Dropped in this order until the table fits: transmit rates first
    /// (this view is about receive work), then configuration detail that
    /// the Topology view also shows.
    const DROP_ORDER: [usize; 6] = [5, 4, 13, 3, 14, 12];
    let mut keep = [true; 15];
    let need = |keep: &[bool; 15]| -> usize {
        let kept = COLS.iter().zip(keep).filter(|(_, k)| **k);
        kept.clone().map(|(c, _)| c.1 as usize).sum::<usize>() + kept.count().saturating_sub(1)
    };
    for i in DROP_ORDER {
        if need(&keep) <= area.width as usize {
            break;
        }
        keep[i] = false;
    }
    let kept = |cells: Vec<Cell<'static>>| -> Vec<Cell<'static>> {
        let mut cells = cells;
        cells.resize(COLS.len(), Cell::from(""));
        cells
            .into_iter()
            .zip(keep)
            .filter_map(|(c, k)| k.then_some(c))
            .collect()
    };
    let (header, widths) = table_head(&COLS, |i| keep[i], s);
    let Some(frame) = &app.frame else {
        f.render_widget(Table::new(Vec::<Row>::new(), widths).header(header), area);
        return;
    };
    let topo = app.extras.devices.as_ref();
    let w = |i: usize| COLS[i].1 as usize;
    let rows: Vec<Row> = on_screen(app, View::Devices, area, &app.dev_rows)
        .map(|(r, selected)| {
            let cells: Vec<Cell> = match r {
                DevRow::Device(name, idx) => {
                    let mut c = device_cells(frame, s, name, *idx, &w);
                    c.extend(dev_topo_cells(topo, name, s, &w));
                    c
                }
                DevRow::Napi(j) => napi_cells(frame, s, *j, &w),
            };
            mark_selected(Row::new(kept(cells)), selected, s)
        })
        .collect();
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}

/// XDP, RPS and queue IRQ cells of a device row; "…" until the topology
/// thread has reported, so a blank never reads as "none".
fn dev_topo_cells<'a>(
    topo: Option<&BTreeMap<String, DevTopo>>,
    name: &str,
    s: &Sty,
    w: &dyn Fn(usize) -> usize,
) -> Vec<Cell<'a>> {
    let Some(map) = topo else {
        return vec![Cell::from("…"), Cell::from("…"), Cell::from("…")];
    };
    let Some(d) = map.get(name) else {
        return vec![Cell::from("-"), Cell::from("-"), Cell::from("-")];
    };
    let xdp_style = if d.xdp == "generic" {
        s.warn()
    } else {
        Style::new()
    };
    vec![
        Cell::from(Span::styled(fit(&d.xdp, w(12), false), xdp_style)),
        Cell::from(fit(&d.rps, w(13), false)),
        Cell::from(d.irqs.clone()),
    ]
}

fn cpu_list(cpus: &[u32]) -> String {
    if cpus.is_empty() {
        "-".into()
    } else {
        crate::sys::cpuset::CpuSet::from_cpus(cpus.iter().copied()).to_list()
    }
}

fn device_cells<'a>(
    frame: &Frame,
    s: &Sty,
    name: &str,
    idx: Option<usize>,
    w: &dyn Fn(usize) -> usize,
) -> Vec<Cell<'a>> {
    let d = idx.and_then(|i| frame.devices.get(i));
    let napis: Vec<_> = frame
        .napi
        .iter()
        .filter(|n| match d {
            Some(d) => napi_of(n, d),
            None => n.dev == name,
        })
        .collect();
    let polls: f64 = napis.iter().map(|n| n.polls_per_s).sum();
    let pkts: f64 = napis.iter().map(|n| n.packets_per_s).sum();
    let exh: f64 = napis.iter().map(|n| n.budget_exhausted_per_s).sum();
    let mut cpus: Vec<u32> = napis.iter().flat_map(|n| n.cpus.iter().copied()).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let r = |v: Option<f64>, i: usize| Cell::from(fit(&v.map_or("-".into(), fmt_rate), w(i), true));
    let drop = d.map_or(0.0, |d| d.rx_dropped_per_s);
    let wpp = if polls > 0.0 {
        format!("{:.1}", pkts / polls)
    } else {
        "-".into()
    };
    vec![
        Cell::from(Span::styled(fit(name, w(0), false), s.accent())),
        r(d.map(|d| d.rx_packets_per_s), 1),
        Cell::from(fit(
            &d.and_then(|d| d.net_rx_ns_per_packet)
                .map_or("-".into(), |v| format!("{v:.0}")),
            w(2),
            true,
        )),
        r(d.map(|d| d.rx_bytes_per_s), 3),
        r(d.map(|d| d.tx_packets_per_s), 4),
        r(d.map(|d| d.tx_bytes_per_s), 5),
        Cell::from(Span::styled(
            fit(&fmt_rate(drop), w(6), true),
            if drop > 0.0 { s.warn() } else { Style::new() },
        )),
        r(Some(polls), 7),
        Cell::from(fit(&wpp, w(8), true)),
        Cell::from(""),
        r(Some(exh), 10),
        Cell::from(fit(&cpu_list(&cpus), w(11), false)),
    ]
}

fn napi_cells<'a>(frame: &Frame, s: &Sty, j: usize, w: &dyn Fn(usize) -> usize) -> Vec<Cell<'a>> {
    let Some(n) = frame.napi.get(j) else {
        return Vec::new();
    };
    let budget = n.budget.max(1) as f64;
    let used = (n.work_per_poll / budget).clamp(0.0, 1.0);
    let bw = w(9) - 2;
    let fill = (used * bw as f64).round() as usize;
    let bar_style = if used >= 0.99 {
        s.stolen()
    } else {
        s.fg(Color::Magenta)
    };
    let r = |v: f64, i: usize| Cell::from(fit(&fmt_rate(v), w(i), true));
    vec![
        Cell::from(fit(&format!(" └ napi {}", n.napi_id), w(0), false)),
        r(n.packets_per_s, 1),
        Cell::from(fit(
            &n.net_rx_ns_per_packet
                .map_or("-".into(), |v| format!("{v:.0}")),
            w(2),
            true,
        )),
        Cell::from(fit("", w(3), true)),
        Cell::from(fit("", w(4), true)),
        Cell::from(fit("", w(5), true)),
        Cell::from(fit("", w(6), true)),
        r(n.polls_per_s, 7),
        Cell::from(fit(
            &format!("{:.1}/{}", n.work_per_poll, n.budget),
            w(8),
            true,
        )),
        Cell::from(Line::from(vec![
            Span::raw("["),
            Span::styled("#".repeat(fill), bar_style),
            Span::raw(" ".repeat(bw - fill)),
            Span::raw("]"),
        ])),
        Cell::from(Span::styled(
            fit(&fmt_rate(n.budget_exhausted_per_s), w(10), true),
            if n.budget_exhausted_per_s > 0.0 {
                s.warn()
            } else {
                Style::new()
            },
        )),
        Cell::from(fit(&cpu_list(&n.cpus), w(11), false)),
    ]
}
