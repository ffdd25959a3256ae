//! Everything around a view but the header meters ([`super::meters`]):
//! the tabs, the view's header line, the status line, and the help and
//! sort-picker overlays.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::state::{App, MIN_HEIGHT, MIN_WIDTH, Mode};
use super::style::Sty;
use super::{keymap, tabs, views};
use crate::output::format::fmt_pct;
use crate::sample::Regime;

/// Below the smallest terminal the TUI draws into, a note instead.
pub(crate) fn too_small(f: &mut TermFrame, area: Rect) -> bool {
    if area.width >= MIN_WIDTH && area.height >= MIN_HEIGHT {
        return false;
    }
    let msg = format!(
        "nettop: terminal too small ({}x{}, need {}x{}). q quits.",
        area.width, area.height, MIN_WIDTH, MIN_HEIGHT
    );
    f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
    true
}

pub(crate) fn tab_line<'a>(app: &App, s: &Sty) -> Line<'a> {
    let mut spans = Vec::new();
    for (v, label, ..) in tabs::tab_spans() {
        let st = if v == app.view { s.header() } else { s.dim() };
        spans.push(Span::styled(label, st));
        spans.push(Span::raw(" "));
    }
    Line::from(spans)
}

pub(crate) fn view_header<'a>(app: &App, s: &Sty) -> Line<'a> {
    Line::from(Span::styled(views::header(app), s.dim()))
}

pub(crate) fn status_line<'a>(app: &'a App, s: &Sty) -> Line<'a> {
    match &app.mode {
        Mode::Filter(buf) => {
            return Line::from(vec![
                Span::styled(
                    "Filter as you type (command, user or PID; Enter keeps, Esc clears): ",
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
        Mode::ConfirmPlan(plan) => {
            return Line::from(vec![
                Span::styled(app.plan_question(plan), s.accent()),
                Span::raw("_"),
            ]);
        }
        Mode::Confirm(c) => {
            return Line::from(vec![Span::styled(c.question(), s.accent()), Span::raw("_")]);
        }
        Mode::Renice { target, now, buf } => {
            let now = now.map_or("?".to_string(), |n| n.to_string());
            return Line::from(vec![
                Span::styled(
                    format!(
                        "Renice {} (nice now {now}; -20 highest priority to 19; Enter asks, Esc cancels): ",
                        target.label()
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
    // A key's answer first: the status line keeps what fits.
    if let Some(m) = &app.message {
        spans.push(Span::styled(m.as_str(), s.accent()));
        spans.push(Span::raw(" │ "));
    }
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
    let regime = app.frame.as_ref().map_or(Regime::Unknown, |f| f.regime);
    let note_style = if regime == Regime::Unknown {
        s.warn()
    } else {
        Style::new()
    };
    spans.push(Span::styled(
        format!("regime {}", regime.name()),
        note_style,
    ));
    if let Some(f) = app.frame.as_ref().filter(|f| !f.hidden_note.is_empty()) {
        // The full note (origin, spread) is in the help screen.
        if f.hidden_note.contains("not calibrated") {
            spans.push(Span::styled(" · HIDDEN~ not calibrated", s.warn()));
        } else if !f.calibration_warning.is_empty() {
            spans.push(Span::styled(" · HIDDEN~ uncertain (? for why)", s.warn()));
        } else {
            spans.push(Span::raw(" · HIDDEN~ calibrated (? for how)"));
        }
    }
    if let Some(f) = &app.frame {
        let src = match f.source {
            crate::sample::Source::Bpf if f.health.attach_mode.is_empty() => "BPF".to_string(),
            crate::sample::Source::Bpf => format!("BPF {}", f.health.attach_mode),
            crate::sample::Source::ProcOnly => "/proc only (estimates)".to_string(),
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
        // Not lost, but not per task (unattributed), a sample late
        // (deferred) or guessed stolen (unknown raise): said, not hidden.
        let soft: Vec<String> = [
            ("unattributed", h.unattributed),
            ("late", h.flush_deferred),
            ("unknown-raise", h.unknown_raise),
        ]
        .iter()
        .filter(|(_, v)| *v > 0)
        .map(|(k, v)| format!(" {k} {v}"))
        .collect();
        if !soft.is_empty() {
            spans.push(Span::styled(soft.concat(), note_style));
        }
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
    Line::from(spans)
}

/// What the status line always ends with.
const HINT: &str = " │ ? help  q quit";

/// The status line in `area`: a prompt across the whole line, else the
/// state on the left, as many whole parts of it as fit, and the help and
/// quit keys at the right end, which nothing pushes off.
pub(crate) fn draw_status(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    let line = status_line(app, s);
    if !matches!(app.mode, Mode::Normal | Mode::Help(_) | Mode::Fields { .. }) {
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let hint_w = HINT.chars().count() as u16;
    let [left, hint] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(hint_w)]).areas(area);
    f.render_widget(Paragraph::new(whole_spans(line, left.width)), left);
    f.render_widget(Paragraph::new(Span::styled(HINT, s.dim())), hint);
}

/// The spans of `line` up to the first that does not fit `w` whole: the
/// status line ends early rather than in the middle of a number. The
/// first is always kept (a message longer than the line shows its start
/// rather than nothing).
fn whole_spans(line: Line<'_>, w: u16) -> Line<'_> {
    let mut used = 0usize;
    let spans = line
        .spans
        .into_iter()
        .enumerate()
        .take_while(|(i, sp)| {
            used += sp.width();
            *i == 0 || used <= usize::from(w)
        })
        .map(|(_, sp)| sp)
        .collect::<Vec<_>>();
    Line::from(spans)
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

pub(crate) fn draw_help(f: &mut TermFrame, app: &App, s: &Sty, area: Rect, off: u16) {
    // The frame's notes on how TRUE% is computed, wrapped below the keys.
    let notes: Vec<&str> = app
        .frame
        .as_ref()
        .map(|fr| {
            vec![
                fr.regime_note.as_str(),
                fr.hidden_note.as_str(),
                fr.calibration_warning.as_str(),
            ]
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|n| !n.is_empty())
        .collect();
    let note_rows: u16 = notes
        .iter()
        .map(|n| (n.chars().count() as u16).div_ceil(68) + 1)
        .sum();
    let rows = keymap::help();
    let rows_len = rows.len();
    let r = centered(area, 72, rows_len as u16 + 4 + note_rows);
    f.render_widget(Clear, r);
    let mut lines: Vec<Line> = rows
        .into_iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(format!(" {k:<16} "), s.accent()),
                Span::raw(d),
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
    // Scrolled no further than the last line at the bottom; a title says
    // when there is more than the terminal shows.
    let total = rows_len as u16 + 4 + note_rows;
    let off = off.min(total.saturating_sub(r.height));
    let title = match (total > r.height, app.read_only) {
        (true, true) => " nettop keys (↑↓ scroll; read-only: k r a P off) ",
        (true, false) => " nettop keys (↑↓ scroll) ",
        (false, true) => " nettop keys (read-only: k r a P off) ",
        (false, false) => " nettop keys ",
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((off, 0)),
        r,
    );
}

/// The fields screen: `*` marks a shown column, `▼`/`▲` the sort column;
/// a column being moved is drawn in the accent colour.
pub(crate) fn draw_fields(
    f: &mut TermFrame,
    app: &App,
    s: &Sty,
    area: Rect,
    at: usize,
    moving: bool,
) {
    let fields = app.fields();
    let r = centered(area, 66, fields.len() as u16 + 3);
    f.render_widget(Clear, r);
    let mut lines: Vec<Line> = fields
        .iter()
        .enumerate()
        .map(|(i, fl)| {
            let shown = if fl.shown { "*" } else { " " };
            let sort = match (fl.column == app.sort.column, app.sort.descending) {
                (false, _) => " ",
                (true, true) => "▼",
                (true, false) => "▲",
            };
            let l = Line::from(format!(
                "{shown}{sort} {:<11} {}",
                fl.column.title(),
                fl.column.describe()
            ));
            match (i == at, moving) {
                (true, true) => l.style(s.accent().patch(s.selected())),
                (true, false) => l.style(s.selected()),
                _ if !fl.shown => l.style(s.dim()),
                _ => l,
            }
        })
        .collect();
    lines.push(Line::styled(
        if moving {
            " Up/Down move it · Left/Enter put it down"
        } else {
            " Space show/hide · Right move · Enter/s sort · W save · Esc"
        },
        s.dim(),
    ));
    // On a short terminal the list scrolls so the highlighted line shows.
    let inner = r.height.saturating_sub(2) as usize;
    let skip = (at + 2)
        .saturating_sub(inner)
        .min(lines.len().saturating_sub(inner));
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" fields: * shown, ▼ sort ");
    f.render_widget(
        Paragraph::new(lines.split_off(skip.min(lines.len()))).block(block),
        r,
    );
}
