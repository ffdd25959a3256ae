//! The detail pane (`Enter` on a process, `Esc` closes): drawn over the
//! Processes view's body while the list keeps updating under it. The text
//! is [`rows::detail`](crate::ui::rows::detail)'s; this file lays it out
//! and draws the history graph from [`crate::ui::history`] with
//! [`crate::ui::sparkline`].

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::output::format::fmt_mem;
use crate::ui::history::{Key, Series};
use crate::ui::rows::detail::{self, Pane};
use crate::ui::rows::{LineKind, View};
use crate::ui::sparkline::{PCT_SCALE, fmt_span, spark, squeeze};
use crate::ui::state::App;
use crate::ui::style::Sty;

/// Below this the pane goes without its border: every line is content.
const BORDER_MIN: (u16, u16) = (24, 8);

/// Whether the pane covers the body now.
pub(crate) fn covers(app: &App) -> bool {
    app.view == View::Processes && app.detail.is_some()
}

/// The view header line while the pane is open.
pub(crate) fn header(app: &App) -> String {
    format!(
        "Detail of PID {} · Esc closes · the list keeps updating under it",
        app.detail.unwrap_or_default()
    )
}

pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    f.render_widget(Clear, area);
    let Some(p) = app.pane.as_ref().filter(|p| Some(p.pid) == app.detail) else {
        let msg = format!(
            "PID {}: not in the frames seen so far · Esc closes",
            app.detail.unwrap_or_default()
        );
        f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: false }), area);
        return;
    };
    let title = detail::title(p);
    let title_style = if p.exited { s.warn() } else { s.accent() };
    let bordered = area.width >= BORDER_MIN.0 && area.height >= BORDER_MIN.1;
    let inner = if bordered {
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(format!(" {title} "), title_style));
        let inner = block.inner(area);
        f.render_widget(block, area);
        inner
    } else {
        area
    };
    let cx = app.row_ctx();
    let width = usize::from(inner.width);
    let mut lines: Vec<Line> = Vec::new();
    let text = |lines: &mut Vec<Line>, (k, t): (LineKind, String)| {
        let st = match k {
            LineKind::Heading => s.accent(),
            LineKind::Normal => Style::new(),
            LineKind::Warn => s.warn(),
            LineKind::Note => s.dim(),
        };
        lines.extend(
            wrap(&t, width)
                .into_iter()
                .map(|l| Line::from(Span::styled(l, st))),
        );
    };
    if !bordered {
        lines.push(Line::from(Span::styled(title, title_style)));
    }
    for l in detail::head_lines(p, &cx) {
        text(&mut lines, l);
    }
    lines.extend(graph(app, p, s, width));
    for a in app.affinity_changes.iter().filter(|a| a.pid == p.pid) {
        for l in a.lines() {
            text(&mut lines, l);
        }
    }
    for l in detail::body_lines(p, &cx, app.replay.is_some()) {
        text(&mut lines, l);
    }
    // What does not fit says so on the last line rather than vanishing.
    let room = usize::from(inner.height);
    if lines.len() > room && room > 0 {
        let more = lines.len() - room + 1;
        lines.truncate(room - 1);
        lines.push(Line::from(Span::styled(
            format!("… {more} more lines (a taller terminal shows them)"),
            s.dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// Lines of at most `width` characters: broken between words, a word
/// longer than a line (a cgroup path, a container id) broken where the
/// line ends rather than pushed down whole; continuation lines indented.
fn wrap(text: &str, width: usize) -> Vec<String> {
    const INDENT: &str = "  ";
    if width <= INDENT.len() + 1 || text.chars().count() <= width {
        return vec![text.to_string()];
    }
    let mut out = Vec::new();
    let mut line = String::new();
    // Characters on `line`, and whether a word is on it yet.
    let mut n = 0;
    let mut empty = true;
    let mut next = |line: &mut String, n: &mut usize| {
        out.push(std::mem::replace(line, INDENT.to_string()));
        *n = INDENT.len();
    };
    for word in text.split(' ') {
        let len = word.chars().count();
        if !empty && n + 1 + len > width && len <= width - INDENT.len() {
            next(&mut line, &mut n);
            empty = true;
        }
        if !empty {
            if n + 1 >= width {
                next(&mut line, &mut n);
            } else {
                line.push(' ');
                n += 1;
            }
        }
        for c in word.chars() {
            if n >= width {
                next(&mut line, &mut n);
            }
            line.push(c);
            n += 1;
        }
        empty = false;
    }
    out.push(line);
    out
}

/// The process's rings as sparklines the pane's width, the whole history
/// squeezed in (each column the highest of its frames), its span labelled.
fn graph<'a>(app: &App, p: &Pane, s: &Sty, width: usize) -> Vec<Line<'a>> {
    let h = &app.history;
    let key = Key::Proc(p.pid);
    let n = h.frames();
    if n == 0 || !h.has(key) {
        return vec![Line::from(Span::styled(
            "History: none yet for this process",
            s.dim(),
        ))];
    }
    const LABEL: usize = 9;
    const PEAK: usize = 11;
    let w = width.saturating_sub(LABEL + PEAK).max(1);
    let per = n.div_ceil(w);
    let mut out = vec![Line::from(Span::styled(
        format!(
            "History: last {} ({n} frames{}), 0–100% of one CPU",
            fmt_span(h.span_ms(n)),
            if per > 1 {
                format!(", {per} per column")
            } else {
                String::new()
            }
        ),
        s.accent(),
    ))];
    for (label, series, style) in [
        ("STOLEN%", Series::Stolen, s.stolen()),
        ("TRUE%", Series::True, Style::new()),
        ("NET_RX%", Series::NetRx, s.net_rx()),
    ] {
        let values = squeeze(&h.last_n(key, series, n), w);
        let peak = values.iter().flatten().copied().fold(0.0f32, f32::max);
        out.push(Line::from(vec![
            Span::raw(format!("{label:<LABEL$}")),
            Span::styled(spark(&values, PCT_SCALE), style),
            Span::raw(format!(" max {peak:>5.1}")),
        ]));
    }
    // RES against its own peak (bytes have no 100 %): growth shows as a
    // rising line, a leak as one that never comes down.
    if h.has_res(p.pid) {
        let values = squeeze(&h.res_last_n(p.pid, n), w);
        let peak = values.iter().flatten().copied().fold(0.0f32, f32::max);
        out.push(Line::from(vec![
            Span::raw(format!("{:<LABEL$}", "RES")),
            Span::styled(spark(&values, f64::from(peak)), s.accent()),
            Span::raw(format!(
                " max {:>5}",
                fmt_mem(Some(peak_bytes(peak, p.task.res_bytes)))
            )),
        ]));
    }
    out
}

/// The RES peak to print: the rings keep 3 significant digits, so a peak
/// within that of the process's exact RES now is that RES (the memory line
/// above prints it; the two must not disagree by a rounding).
fn peak_bytes(peak: f32, now: Option<u64>) -> u64 {
    match now {
        Some(n) if f64::from(peak) <= n as f64 * (1.0 + 1.0 / 256.0) => n,
        _ => peak as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::{peak_bytes, wrap};

    #[test]
    fn a_peak_that_is_the_current_res_prints_it_exactly() {
        let now = 545u64 << 20;
        let ring = 544.0f32 * (1u32 << 20) as f32;
        assert_eq!(peak_bytes(ring, Some(now)), now);
        let higher = 600.0f32 * (1u32 << 20) as f32;
        assert_eq!(peak_bytes(higher, Some(now)), higher as u64);
        assert_eq!(peak_bytes(ring, None), ring as u64);
    }

    #[test]
    fn long_words_break_where_the_line_ends() {
        assert_eq!(wrap("short", 10), vec!["short"]);
        assert_eq!(
            wrap("command: a bb ccc dddd", 10),
            vec!["command: a", "  bb ccc", "  dddd"]
        );
        assert_eq!(
            wrap("path /aaaaaaaaaaaaaaaa", 10),
            vec!["path /aaaa", "  aaaaaaaa", "  aaaa"]
        );
        for l in wrap("x ".repeat(40).as_str(), 7) {
            assert!(l.chars().count() <= 7, "{l:?}");
        }
    }
}
