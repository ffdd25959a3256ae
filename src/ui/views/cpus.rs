//! CPUs view: per CPU, mpstat-style shares as a bar, NET_RX and napi rates,
//! nettop's own BPF time there, the tasks interrupt work is stolen from,
//! and sparklines of its STOLEN% and NET_RX/s history.
//!
//! The sparklines are STOLEN% and NET_RX/s rather than busy %: the bar
//! already shows how busy a CPU is now, and a CPU at 100 % busy looks the
//! same in a busy history whether a task or interrupt work kept it busy.
//! What nettop is for is when interrupt work hit a CPU and whether it
//! tracks the receive rate, which these two show side by side.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};

use super::table::{mark_selected, on_screen};
use crate::model::frame::CpuView;
use crate::output::format::{fmt_fine_pct, fmt_pct, fmt_rate};
use crate::ui::app::App;
use crate::ui::history::{Key, Series};
use crate::ui::rows::View;
use crate::ui::sparkline::PCT_SCALE;
use crate::ui::style::{STOLEN_MARK_PCT, Sty, fit, fit_columns};

/// The view's title line. BPF% comes early: a narrow terminal cuts the
/// line, and what nettop itself costs is the one column whose meaning a
/// reader cannot guess from the others.
pub(crate) const HEADER: &str = "Per CPU: bar = usr sys ! irq # soft ~ steal; BPF% = nettop's own BPF time on it (needs --bpf-stats, else -); NET_RX actions, packets, NET_RX ns per packet, napi polls, budget exhausted, time_squeeze per second; victims = most stolen-from tasks last on it";

#[derive(Clone, Copy, PartialEq, Debug)]
enum CpuCol {
    Cpu,
    Node,
    Bar,
    Usr,
    Sys,
    Irq,
    Soft,
    Steal,
    Idle,
    NetRx,
    Pkts,
    NsPkt,
    Polls,
    Exh,
    Squeeze,
    Ksoftirqd,
    OwnBpf,
    Victims,
    StolenHist,
    NetRxHist,
}

const BAR_W: usize = 20;

fn cpu_cols() -> Vec<(CpuCol, u16, &'static str)> {
    use CpuCol::*;
    vec![
        (Cpu, 3, "CPU"),
        (Node, 4, "NODE"),
        (Bar, BAR_W as u16 + 2, "usr sys irq soft steal"),
        (Usr, 4, "USR"),
        (Sys, 4, "SYS"),
        (Irq, 4, "IRQ"),
        (Soft, 4, "SOFT"),
        (Steal, 4, "STL"),
        (Idle, 4, "IDLE"),
        (NetRx, 7, "NETRX/s"),
        (Pkts, 7, "PKTS/s"),
        (NsPkt, 6, "NS/PKT"),
        (Polls, 7, "POLLS/s"),
        (Exh, 5, "EXH/s"),
        (Squeeze, 5, "SQZ/s"),
        (Ksoftirqd, 6, "KSIRQ%"),
        (OwnBpf, 5, "BPF%"),
        (Victims, 22, "VICTIMS (stolen)"),
        (StolenHist, 16, "STOLEN% HIST"),
        (NetRxHist, 16, "NETRX/s HIST"),
    ]
}

const CPU_PRIORITY: [CpuCol; 20] = [
    CpuCol::Cpu,
    CpuCol::Bar,
    CpuCol::Soft,
    CpuCol::NetRx,
    CpuCol::Victims,
    // The monitor's own cost beside what it reports, before the finer
    // rates: without it part of what a victim loses looks like the host's.
    CpuCol::OwnBpf,
    CpuCol::Pkts,
    CpuCol::NsPkt,
    CpuCol::Polls,
    CpuCol::Exh,
    CpuCol::Squeeze,
    CpuCol::Ksoftirqd,
    CpuCol::Irq,
    CpuCol::StolenHist,
    CpuCol::NetRxHist,
    CpuCol::Node,
    CpuCol::Usr,
    CpuCol::Sys,
    CpuCol::Idle,
    CpuCol::Steal,
];

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
    let all = cpu_cols();
    let display: Vec<(CpuCol, u16)> = all.iter().map(|(c, w, _)| (*c, *w)).collect();
    let cols = fit_columns(&display, &CPU_PRIORITY, area.width, 0);
    let spec = |c: CpuCol| {
        all.iter()
            .find(|x| x.0 == c)
            .map_or((0, ""), |x| (x.1, x.2))
    };
    // STOLEN% is drawn against a whole CPU; NET_RX/s against the highest
    // any CPU reached in the history, so rows share one scale: its title
    // says which.
    let rx_scale = format!("NETRX/s ≤{}", fmt_rate(app.history.net_rx_peak()));
    let header = Row::new(cols.iter().map(|c| {
        let (w, t) = spec(*c);
        let t = if *c == CpuCol::NetRxHist {
            &rx_scale
        } else {
            t
        };
        let right = !matches!(
            c,
            CpuCol::Bar | CpuCol::Victims | CpuCol::StolenHist | CpuCol::NetRxHist
        );
        Cell::from(fit(t, w as usize, right))
    }))
    .style(s.header());
    let Some(frame) = &app.frame else {
        f.render_widget(
            Table::new(Vec::<Row>::new(), [Constraint::Length(1)]).header(header),
            area,
        );
        return;
    };
    let rows: Vec<Row> = on_screen(app, View::Cpus, area, &frame.cpus)
        .map(|(c, selected)| {
            let cells = cols
                .iter()
                .map(|col| cpu_cell(app, s, c, *col, spec(*col).0 as usize));
            mark_selected(Row::new(cells.collect::<Vec<_>>()), selected, s)
        })
        .collect();
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| Constraint::Length(spec(*c).0))
        .collect();
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}

fn cpu_cell<'a>(app: &App, s: &Sty, c: &CpuView, col: CpuCol, w: usize) -> Cell<'a> {
    let num = |v: f64| Cell::from(fit(&fmt_pct(v), w, true));
    let rate = |v: f64, st: Style| Cell::from(Span::styled(fit(&fmt_rate(v), w, true), st));
    if !c.online && !matches!(col, CpuCol::Cpu | CpuCol::Node) {
        return Cell::from(if col == CpuCol::Bar { "offline" } else { "" });
    }
    let hot = |v: f64| if v > 0.0 { s.warn() } else { Style::new() };
    match col {
        CpuCol::Cpu => Cell::from(fit(&c.cpu.to_string(), w, true)),
        CpuCol::Node => Cell::from(fit(&c.node.map_or("-".into(), |n| n.to_string()), w, true)),
        CpuCol::Bar => Cell::from(Line::from(bar_spans(c, s))),
        CpuCol::Usr => num(c.usr_pct + c.nice_pct),
        CpuCol::Sys => num(c.sys_pct),
        CpuCol::Irq => num(c.irq_pct),
        CpuCol::Soft => {
            let st = if c.soft_pct >= STOLEN_MARK_PCT {
                s.net_rx()
            } else {
                Style::new()
            };
            Cell::from(Span::styled(fit(&fmt_pct(c.soft_pct), w, true), st))
        }
        CpuCol::Steal => num(c.steal_pct),
        CpuCol::Idle => num(c.idle_pct),
        CpuCol::NetRx => rate(
            c.net_rx_per_s,
            if c.net_rx_per_s > 0.0 {
                s.net_rx()
            } else {
                Style::new()
            },
        ),
        CpuCol::Pkts => rate(c.packets_per_s, Style::new()),
        CpuCol::NsPkt => Cell::from(fit(
            &c.net_rx_ns_per_packet
                .map_or("-".into(), |v| format!("{v:.0}")),
            w,
            true,
        )),
        CpuCol::Polls => rate(c.napi_polls_per_s, Style::new()),
        CpuCol::Exh => rate(c.budget_exhausted_per_s, hot(c.budget_exhausted_per_s)),
        CpuCol::Squeeze => rate(c.time_squeeze_per_s, hot(c.time_squeeze_per_s)),
        CpuCol::Ksoftirqd => num(c.ksoftirqd_pct),
        CpuCol::OwnBpf => Cell::from(fit(&fmt_fine_pct(c.own_bpf_pct), w, true)),
        CpuCol::Victims => {
            let v = app
                .cpu_rows
                .victims
                .get(c.cpu as usize)
                .map_or(String::new(), |v| {
                    v.iter()
                        .take(2)
                        .map(|(n, p)| format!("{n} {p:.0}%"))
                        .collect::<Vec<_>>()
                        .join(", ")
                });
            Cell::from(Span::styled(fit(&v, w, false), s.stolen()))
        }
        CpuCol::StolenHist => Cell::from(Span::styled(
            app.history
                .sparkline(Key::Cpu(c.cpu), Series::Stolen, w, PCT_SCALE),
            s.fg(Color::Red),
        )),
        CpuCol::NetRxHist => Cell::from(Span::styled(
            app.history
                .sparkline(Key::Cpu(c.cpu), Series::NetRx, w, app.history.net_rx_peak()),
            s.fg(Color::Magenta),
        )),
    }
}
