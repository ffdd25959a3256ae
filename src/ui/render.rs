//! Drawing: `App` state → ratatui buffer. No I/O, no sorting, no lookups
//! beyond the rows on screen, so a frame costs the same with 50 or 5,000 tasks.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};
use std::collections::BTreeMap;

use super::app::{
    App, CHROME_BOTTOM, CHROME_TOP, Column, DevRow, DevTopo, KEYS, LineKind, MIN_HEIGHT, MIN_WIDTH,
    Mode, STOLEN_MARK_PCT, Src, TaskRow, Theme, View, hi_pct, net_rx_pct, si_pct, tab_spans,
};
use crate::model::frame::{CpuView, Frame};
use crate::model::raw::Regime;

/// Styles, each collapsing to attribute-only (bold/reverse) under NO_COLOR.
pub(super) struct Sty(Theme);

impl Sty {
    fn fg(&self, c: Color) -> Style {
        if self.0.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }
    pub(super) fn header(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
    }
    pub(super) fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    pub(super) fn stolen(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    pub(super) fn net_rx(&self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }
    fn gap(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub(super) fn dim(&self) -> Style {
        if self.0.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }
    pub(super) fn warn(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    fn accent(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
}

pub fn draw(f: &mut TermFrame, app: &App) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "nettop: terminal too small ({}x{}, need {}x{}). q quits.",
            area.width, area.height, MIN_WIDTH, MIN_HEIGHT
        );
        f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return;
    }
    let s = Sty(app.theme);
    let [summary, tabs, header, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(CHROME_TOP - 2),
        Constraint::Min(1),
        Constraint::Length(CHROME_BOTTOM),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(summary_line(app, &s)), summary);
    f.render_widget(Paragraph::new(tab_line(app, &s)), tabs);
    f.render_widget(Paragraph::new(view_header(app, &s)), header);
    match app.view {
        View::Processes if app.group_cgroup => {
            super::containers_view::draw(f, app, &s, body);
        }
        View::Processes => draw_processes(f, app, &s, body),
        View::Cpus => draw_cpus(f, app, &s, body),
        View::Devices => draw_devices(f, app, &s, body),
        View::Topology => draw_text(f, app, &s, body, &app.topo_lines),
        View::Pinning => draw_text(f, app, &s, body, &app.pin_lines),
    }
    f.render_widget(Paragraph::new(status_line(app, &s)), status);
    match &app.mode {
        Mode::Help => draw_help(f, app, &s, area),
        Mode::SortPicker(i) => draw_picker(f, app, &s, area, *i),
        _ => {}
    }
}

// ------------------------------------------------------------------ format

/// Percent of one CPU in at most 5 characters.
pub fn fmt_pct(v: f64) -> String {
    if v >= 99.95 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Interrupt-related percent: "-" for nothing, so real values stand out.
fn fmt_pct_or_dash(v: f64) -> String {
    if v < 0.05 { "-".into() } else { fmt_pct(v) }
}

/// Rate with K/M/G suffix in at most 6 characters.
pub fn fmt_rate(v: f64) -> String {
    let a = v.abs();
    if a < 0.5 {
        "0".into()
    } else if a < 1e3 {
        format!("{v:.0}")
    } else if a < 1e6 {
        format!("{:.1}K", v / 1e3)
    } else if a < 1e9 {
        format!("{:.1}M", v / 1e6)
    } else {
        format!("{:.1}G", v / 1e9)
    }
}

fn hms(unix_ms: u64) -> String {
    let s = (unix_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}Z", s / 3600, (s / 60) % 60, s % 60)
}

/// Pads or cuts `s` to exactly `w` columns (right-aligned for numbers).
pub(super) fn fit(s: &str, w: usize, right: bool) -> String {
    let n = s.chars().count();
    if n > w {
        s.chars().take(w).collect()
    } else if right {
        format!("{s:>w$}")
    } else {
        format!("{s:<w$}")
    }
}

/// Chooses which columns fit `avail`: take them in priority order while
/// they fit, then show them in display order.
fn fit_columns<C: Copy + PartialEq>(
    display: &[(C, u16)],
    priority: &[C],
    avail: u16,
    flex_min: u16,
) -> Vec<C> {
    let mut used = flex_min;
    let mut chosen: Vec<C> = Vec::new();
    for c in priority {
        if let Some((_, w)) = display.iter().find(|(d, _)| d == c) {
            if used + w < avail {
                used += w + 1;
                chosen.push(*c);
            }
        }
    }
    display
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| chosen.contains(c))
        .collect()
}

// ------------------------------------------------------------------ chrome

fn summary_line<'a>(app: &'a App, s: &Sty) -> Line<'a> {
    let Some(f) = &app.frame else {
        return Line::from(vec![
            Span::styled("nettop", s.accent()),
            Span::raw("  waiting for the first interval..."),
        ]);
    };
    let m = &f.summary;
    let stolen_style = if m.stolen_pct_total >= STOLEN_MARK_PCT {
        s.stolen()
    } else {
        Style::new()
    };
    let spans = vec![
        Span::styled("nettop ", s.accent()),
        Span::raw(format!("{} {} │ ", f.hostname, hms(f.unix_ms))),
        Span::styled(
            format!("top misattributes {:.2} CPUs", m.stolen_pct_total / 100.0),
            stolen_style,
        ),
        Span::raw(format!(
            " │ {} CPUs us {} sy {} hi {} ",
            m.cpus_online,
            fmt_pct(m.usr_pct),
            fmt_pct(m.sys_pct),
            fmt_pct(m.irq_pct)
        )),
        Span::styled(format!("si {}", fmt_pct(m.soft_pct)), s.net_rx()),
        Span::raw(format!(
            " id {} st {} │ ",
            fmt_pct(m.idle_pct),
            fmt_pct(m.steal_pct)
        )),
        Span::styled(format!("NET_RX {}/s", fmt_rate(m.net_rx_per_s)), s.net_rx()),
        Span::raw(format!(
            " pkts {}/s polls {}/s squeeze {}/s │ {} tasks {} procs",
            fmt_rate(m.packets_per_s),
            fmt_rate(m.napi_polls_per_s),
            fmt_rate(m.time_squeeze_per_s),
            m.tasks,
            m.processes
        )),
    ];
    Line::from(spans)
}

fn tab_line<'a>(app: &App, s: &Sty) -> Line<'a> {
    let mut spans = Vec::new();
    for (v, label, ..) in tab_spans() {
        let st = if v == app.view { s.header() } else { s.dim() };
        spans.push(Span::styled(label, st));
        spans.push(Span::raw(" "));
    }
    Line::from(spans)
}

fn view_header<'a>(app: &'a App, s: &Sty) -> Line<'a> {
    let text = match app.view {
        View::Processes if app.group_cgroup => super::containers_view::header_text(app),
        View::Processes => {
            // Settings first: they must stay visible on narrow terminals.
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
        View::Cpus => "Per CPU: bar = usr sys ! irq # soft ~ steal; NET_RX actions, packets, napi polls, budget exhausted, time_squeeze per second; victims = most stolen-from tasks last on it".into(),
        View::Devices => "Per interface and napi instance (RX queue): polls/s, packets/s, packets per poll vs budget, CPUs that polled; XDP mode (generic costs several times native), RPS CPUs, queue IRQs → CPUs they land on".into(),
        View::Topology => "Topology: NUMA nodes → CPUs, where napi polling and pinned tasks sit (pinned task sharing a NET_RX CPU highlighted)".into(),
        View::Pinning => "Pinning: findings of --pinning-check, live".into(),
    };
    Line::from(Span::styled(text, s.dim()))
}

fn status_line<'a>(app: &'a App, s: &Sty) -> Line<'a> {
    match &app.mode {
        Mode::Filter(buf) => {
            return Line::from(vec![
                Span::styled(
                    "Filter (command, user or PID; Enter applies, Esc cancels): ",
                    s.accent(),
                ),
                Span::raw(format!("{buf}_")),
            ]);
        }
        Mode::Delay(buf) => {
            return Line::from(vec![
                Span::styled(
                    format!(
                        "Delay in seconds (now {}; Enter applies, Esc cancels): ",
                        app.delay
                    ),
                    s.accent(),
                ),
                Span::raw(format!("{buf}_")),
            ]);
        }
        Mode::Goto(buf) => {
            return Line::from(vec![
                Span::styled(
                    "Go to time (HH:MM[:SS] UTC, or +30s -10m +1h; Enter jumps, Esc cancels): ",
                    s.accent(),
                ),
                Span::raw(format!("{buf}_")),
            ]);
        }
        _ => {}
    }
    let mut spans = Vec::new();
    if app.paused {
        spans.push(Span::styled(" PAUSED ", s.header()));
        spans.push(Span::raw(" "));
    }
    if let Some(r) = app.replay {
        let st = if r.playing { "playing" } else { "paused" };
        spans.push(Span::styled(
            format!(" REPLAY {}/{} {st} ", r.index + 1, r.len),
            s.header(),
        ));
        spans.push(Span::raw(" "));
    }
    let (regime, note_style) = match app.frame.as_ref().map(|f| f.regime) {
        Some(Regime::IrqTimeAccounting) => ("on", Style::new()),
        Some(Regime::TickBased) => ("off", Style::new()),
        _ => ("unknown", s.warn()),
    };
    spans.push(Span::styled(
        format!("IRQ_TIME_ACCOUNTING {regime}"),
        note_style,
    ));
    if let Some(f) = app.frame.as_ref().filter(|f| !f.hidden_note.is_empty()) {
        // The full note (origin, spread) is in the help screen.
        if f.hidden_note.contains("not calibrated") {
            spans.push(Span::styled(" · HIDDEN~ not calibrated", s.warn()));
        } else {
            spans.push(Span::raw(" · HIDDEN~ calibrated (? for how)"));
        }
    }
    if let Some(f) = &app.frame {
        let src = match f.source {
            crate::model::raw::Source::Bpf if f.health.attach_mode.is_empty() => "BPF".to_string(),
            crate::model::raw::Source::Bpf => format!("BPF {}", f.health.attach_mode),
            crate::model::raw::Source::ProcOnly => "/proc only (estimates)".to_string(),
        };
        spans.push(Span::raw(format!(
            " │ {src} │ interval {:.2}s delay {}s",
            f.interval_s, app.delay
        )));
        let h = &f.health;
        if h.task_source.starts_with("/proc") {
            spans.push(Span::styled(
                format!(" │ tasks {}", h.task_source),
                note_style,
            ));
        }
        let dropped = h.map_full
            + h.napi_map_full
            + h.unmatched_exits
            + h.recursion_misses
            + h.exited_lost
            + h.bad_records;
        let dropped_style = if dropped > 0 { s.warn() } else { Style::new() };
        spans.push(Span::raw(" │ "));
        let parts: Vec<String> = [
            ("map_full", h.map_full),
            ("napi_map_full", h.napi_map_full),
            ("unmatched", h.unmatched_exits),
            ("recursion", h.recursion_misses),
            ("exited_lost", h.exited_lost),
            ("bad_records", h.bad_records),
        ]
        .iter()
        .filter(|(_, v)| *v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
        let text = if parts.is_empty() {
            "dropped 0".to_string()
        } else {
            format!("dropped {dropped} ({})", parts.join(", "))
        };
        spans.push(Span::styled(text, dropped_style));
        if h.vanished_tasks > 0 {
            spans.push(Span::raw(format!(" vanished {}", h.vanished_tasks)));
        }
        if !h.missing_tracepoints.is_empty() {
            spans.push(Span::styled(
                format!(" missing tp {}", h.missing_tracepoints.len()),
                s.warn(),
            ));
        }
        if let Some(b) = h.bpf_cpu_pct {
            spans.push(Span::raw(format!(" │ BPF cost {}%", fmt_pct(b))));
        }
        for n in &h.notes {
            spans.push(Span::raw(" │ "));
            spans.push(Span::styled(n.as_str(), s.warn()));
        }
    } else {
        spans.push(Span::raw(format!(" │ delay {}s", app.delay)));
    }
    if let Some(m) = &app.message {
        spans.push(Span::raw(" │ "));
        spans.push(Span::styled(m.as_str(), s.accent()));
    }
    spans.push(Span::styled(" │ ? help  q quit", s.dim()));
    Line::from(spans)
}

// -------------------------------------------------------------- processes

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

fn draw_processes(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
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

// ------------------------------------------------------------------- CPUs

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
    Polls,
    Exh,
    Squeeze,
    Ksoftirqd,
    Victims,
    History,
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
        (Polls, 7, "POLLS/s"),
        (Exh, 5, "EXH/s"),
        (Squeeze, 5, "SQZ/s"),
        (Ksoftirqd, 6, "KSIRQ%"),
        (Victims, 22, "VICTIMS (stolen)"),
        (History, 16, "BUSY HISTORY"),
    ]
}

const CPU_PRIORITY: [CpuCol; 17] = [
    CpuCol::Cpu,
    CpuCol::Bar,
    CpuCol::Soft,
    CpuCol::NetRx,
    CpuCol::Victims,
    CpuCol::Pkts,
    CpuCol::Polls,
    CpuCol::Exh,
    CpuCol::Squeeze,
    CpuCol::Ksoftirqd,
    CpuCol::Irq,
    CpuCol::History,
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

/// Text sparkline of the last `w` values (0–100).
fn sparkline(values: Option<&std::collections::VecDeque<f64>>, w: usize) -> String {
    const TICKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let Some(v) = values else {
        return " ".repeat(w);
    };
    let skip = v.len().saturating_sub(w);
    let mut out: String = " ".repeat(w.saturating_sub(v.len()));
    for x in v.iter().skip(skip) {
        // Anything above zero shows at least the lowest tick.
        let i = ((x / 100.0 * 8.0).round() as usize).clamp(usize::from(*x > 0.0), 8);
        out.push(TICKS[i]);
    }
    out
}

fn draw_cpus(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    let all = cpu_cols();
    let display: Vec<(CpuCol, u16)> = all.iter().map(|(c, w, _)| (*c, *w)).collect();
    let cols = fit_columns(&display, &CPU_PRIORITY, area.width, 0);
    let spec = |c: CpuCol| {
        all.iter()
            .find(|x| x.0 == c)
            .map_or((0, ""), |x| (x.1, x.2))
    };
    let header = Row::new(cols.iter().map(|c| {
        let (w, t) = spec(*c);
        let right = !matches!(c, CpuCol::Bar | CpuCol::Victims | CpuCol::History);
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
    let visible = area.height.saturating_sub(1) as usize;
    let pos = app.pos[View::Cpus.index()];
    let rows: Vec<Row> = frame
        .cpus
        .iter()
        .enumerate()
        .skip(pos.offset)
        .take(visible)
        .map(|(i, c)| {
            let cells = cols
                .iter()
                .map(|col| cpu_cell(app, s, c, *col, spec(*col).0 as usize));
            let row = Row::new(cells.collect::<Vec<_>>());
            if i == pos.selected {
                row.style(s.selected())
            } else {
                row
            }
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
        CpuCol::Polls => rate(c.napi_polls_per_s, Style::new()),
        CpuCol::Exh => rate(c.budget_exhausted_per_s, hot(c.budget_exhausted_per_s)),
        CpuCol::Squeeze => rate(c.time_squeeze_per_s, hot(c.time_squeeze_per_s)),
        CpuCol::Ksoftirqd => num(c.ksoftirqd_pct),
        CpuCol::Victims => {
            let v = app.victims.get(c.cpu as usize).map_or(String::new(), |v| {
                v.iter()
                    .take(2)
                    .map(|(n, p)| format!("{n} {p:.0}%"))
                    .collect::<Vec<_>>()
                    .join(", ")
            });
            Cell::from(Span::styled(fit(&v, w, false), s.stolen()))
        }
        CpuCol::History => Cell::from(Span::styled(
            sparkline(app.history.get(&c.cpu), w),
            s.fg(Color::Cyan),
        )),
    }
}

// ---------------------------------------------------------------- devices

fn draw_devices(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    const COLS: [(&str, u16, bool); 14] = [
        ("DEVICE / NAPI", 16, false),
        ("RX PKT/s", 8, true),
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
    const DROP_ORDER: [usize; 6] = [4, 3, 12, 2, 13, 11];
    let last = COLS.len() - 1;
    let mut keep = [true; 14];
    let need = |keep: &[bool; 14]| -> usize {
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
    let header = Row::new(kept(
        COLS.iter()
            .map(|(t, w, r)| Cell::from(fit(t, *w as usize, *r)))
            .collect(),
    ))
    .style(s.header());
    let widths: Vec<Constraint> = COLS
        .iter()
        .enumerate()
        .filter(|(i, _)| keep[*i])
        .map(|(i, c)| {
            if i == last {
                Constraint::Min(c.1)
            } else {
                Constraint::Length(c.1)
            }
        })
        .collect();
    let Some(frame) = &app.frame else {
        f.render_widget(Table::new(Vec::<Row>::new(), widths).header(header), area);
        return;
    };
    let visible = area.height.saturating_sub(1) as usize;
    let pos = app.pos[View::Devices.index()];
    let topo = app.extras.devices.as_ref();
    let w = |i: usize| COLS[i].1 as usize;
    let rows: Vec<Row> = app
        .dev_rows
        .iter()
        .enumerate()
        .skip(pos.offset)
        .take(visible)
        .map(|(i, r)| {
            let cells: Vec<Cell> = match r {
                DevRow::Device(name, idx) => {
                    let mut c = device_cells(frame, s, name, *idx, &w);
                    c.extend(dev_topo_cells(topo, name, s, &w));
                    c
                }
                DevRow::Napi(j) => napi_cells(frame, s, *j, &w),
            };
            let row = Row::new(kept(cells));
            if i == pos.selected {
                row.style(s.selected())
            } else {
                row
            }
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
        Cell::from(Span::styled(fit(&d.xdp, w(11), false), xdp_style)),
        Cell::from(fit(&d.rps, w(12), false)),
        Cell::from(d.irqs.clone()),
    ]
}

fn cpu_list(cpus: &[u32]) -> String {
    if cpus.is_empty() {
        "-".into()
    } else {
        crate::cpuset::CpuSet::from_cpus(cpus.iter().copied()).to_list()
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
    let napis: Vec<_> = frame.napi.iter().filter(|n| n.dev == name).collect();
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
        r(d.map(|d| d.rx_bytes_per_s), 2),
        r(d.map(|d| d.tx_packets_per_s), 3),
        r(d.map(|d| d.tx_bytes_per_s), 4),
        Cell::from(Span::styled(
            fit(&fmt_rate(drop), w(5), true),
            if drop > 0.0 { s.warn() } else { Style::new() },
        )),
        r(Some(polls), 6),
        Cell::from(fit(&wpp, w(7), true)),
        Cell::from(""),
        r(Some(exh), 9),
        Cell::from(fit(&cpu_list(&cpus), w(10), false)),
    ]
}

fn napi_cells<'a>(frame: &Frame, s: &Sty, j: usize, w: &dyn Fn(usize) -> usize) -> Vec<Cell<'a>> {
    let Some(n) = frame.napi.get(j) else {
        return Vec::new();
    };
    let budget = n.budget.max(1) as f64;
    let used = (n.work_per_poll / budget).clamp(0.0, 1.0);
    let bw = w(8) - 2;
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
        Cell::from(fit("", w(2), true)),
        Cell::from(fit("", w(3), true)),
        Cell::from(fit("", w(4), true)),
        Cell::from(fit("", w(5), true)),
        r(n.polls_per_s, 6),
        Cell::from(fit(
            &format!("{:.1}/{}", n.work_per_poll, n.budget),
            w(7),
            true,
        )),
        Cell::from(Line::from(vec![
            Span::raw("["),
            Span::styled("#".repeat(fill), bar_style),
            Span::raw(" ".repeat(bw - fill)),
            Span::raw("]"),
        ])),
        Cell::from(Span::styled(
            fit(&fmt_rate(n.budget_exhausted_per_s), w(9), true),
            if n.budget_exhausted_per_s > 0.0 {
                s.warn()
            } else {
                Style::new()
            },
        )),
        Cell::from(fit(&cpu_list(&n.cpus), w(10), false)),
    ]
}

// ------------------------------------------------------------ text views

fn draw_text(f: &mut TermFrame, app: &App, s: &Sty, area: Rect, lines: &[(LineKind, String)]) {
    let off = app.pos[app.view.index()].offset;
    let text: Vec<Line> = lines
        .iter()
        .skip(off)
        .take(area.height as usize)
        .map(|(k, t)| {
            let st = match k {
                LineKind::Heading => s.accent(),
                LineKind::Normal => Style::new(),
                LineKind::Warn => s.warn(),
                LineKind::Note => s.dim(),
            };
            Line::from(Span::styled(t.as_str(), st))
        })
        .collect();
    f.render_widget(Paragraph::new(text), area);
}

// -------------------------------------------------------------- overlays

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn draw_help(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    // The frame's notes on how TRUE% is computed, wrapped below the keys.
    let notes: Vec<&str> = app
        .frame
        .as_ref()
        .map(|fr| vec![fr.regime_note.as_str(), fr.hidden_note.as_str()])
        .unwrap_or_default()
        .into_iter()
        .filter(|n| !n.is_empty())
        .collect();
    let note_rows: u16 = notes
        .iter()
        .map(|n| (n.chars().count() as u16).div_ceil(68) + 1)
        .sum();
    let r = centered(area, 72, KEYS.len() as u16 + 4 + note_rows);
    f.render_widget(Clear, r);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(format!(" {k:<16} "), s.accent()),
                Span::raw(*d),
            ])
        })
        .collect();
    lines.push(Line::from(Span::styled(
        " ! = task loses ≥10% of a CPU to interrupt work run on its time",
        s.dim(),
    )));
    for n in notes {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(format!(" {n}"), s.dim())));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" nettop keys (read-only: nothing is ever killed) ");
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        r,
    );
}

fn draw_picker(f: &mut TermFrame, app: &App, s: &Sty, area: Rect, sel: usize) {
    let r = centered(area, 60, Column::ALL.len() as u16 + 2);
    f.render_widget(Clear, r);
    let lines: Vec<Line> = Column::ALL
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mark = if *c == app.sort.column { "*" } else { " " };
            let l = Line::from(format!("{mark}{:<8} {}", c.title(), c.describe()));
            if i == sel { l.style(s.selected()) } else { l }
        })
        .collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" sort by (Enter picks, Esc cancels) ");
    f.render_widget(Paragraph::new(lines).block(block), r);
}
