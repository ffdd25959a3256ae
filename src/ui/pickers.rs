//! The pop-up lists of process control and htop's habits: the signal
//! chooser (`k`), the CPU picker (`a`) and the user picker (`u`). Drawing
//! only; their keys are in [`super::control`] and [`super::habits`].

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::state::App;
use super::style::Sty;
use crate::output::format::fmt_pct;
use crate::sample::NET_RX;
use crate::sys::control::{SIGNALS, Target};
use crate::sys::cpuset::CpuSet;

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

/// A bordered list with a title and a footer, scrolled so line `at`
/// shows, highlighted.
fn list(
    f: &mut TermFrame,
    s: &Sty,
    area: Rect,
    (title, footer): (String, &str),
    rows: Vec<String>,
    at: usize,
    width: u16,
) {
    let r = centered(area, width, rows.len() as u16 + 3);
    f.render_widget(Clear, r);
    let inner = r.height.saturating_sub(3) as usize;
    let skip = (at + 1).saturating_sub(inner.max(1));
    let mut lines: Vec<Line> = rows
        .into_iter()
        .enumerate()
        .skip(skip)
        .take(inner.max(1))
        .map(|(i, l)| {
            let l = Line::from(l);
            if i == at { l.style(s.selected()) } else { l }
        })
        .collect();
    lines.push(Line::styled(footer.to_string(), s.dim()));
    let block = Block::default().borders(Borders::ALL).title(title);
    f.render_widget(Paragraph::new(lines).block(block), r);
}

/// `k`: every signal by number and name, SIGTERM first highlighted.
pub(crate) fn draw_signals(f: &mut TermFrame, s: &Sty, area: Rect, t: &Target, at: usize) {
    let rows = SIGNALS
        .iter()
        .map(|(n, name)| format!(" {n:>2} {name}"))
        .collect();
    list(
        f,
        s,
        area,
        (
            format!(" send a signal to {} ", t.label()),
            " Enter choose (asks) · Esc cancel",
        ),
        rows,
        at,
        60,
    );
}

/// `a`: each online CPU, ticked when in the set, with what the frame and
/// the topology say lands there: NET_RX work, stolen time, queue IRQs
/// and RPS steering.
pub(crate) fn draw_affinity(
    f: &mut TermFrame,
    app: &App,
    s: &Sty,
    area: Rect,
    (t, cpus, at): (&Target, &CpuSet, usize),
) {
    let frame = app.frame.as_ref();
    let irqs = app.extras.cpu_interrupts.as_ref();
    let rows = app
        .picker_cpus()
        .into_iter()
        .map(|cpu| {
            let tick = if cpus.contains(cpu) { "[x]" } else { "[ ]" };
            let view = frame.and_then(|fr| fr.cpus.iter().find(|c| c.cpu == cpu));
            let node = view
                .and_then(|c| c.node)
                .map_or(String::new(), |n| format!(" node {n}"));
            let work = view.map_or(String::new(), |c| {
                format!(
                    "  NET_RX {:>5}%  stolen {:>5}%",
                    fmt_pct(c.traced_softirq_pct[NET_RX]),
                    fmt_pct(c.stolen_pct)
                )
            });
            let lands = irqs
                .and_then(|m| m.get(&cpu))
                .filter(|v| !v.is_empty())
                .map_or(String::new(), |v| format!("  ← {}", v.join(", ")));
            format!(" {tick} CPU {cpu:<3}{node}{work}{lands}")
        })
        .collect();
    let width = area.width.saturating_sub(4).clamp(40, 110);
    list(
        f,
        s,
        area,
        (
            format!(" CPUs {} may run on ", t.label()),
            " Space tick · o only this · A all · Enter set (asks) · Esc",
        ),
        rows,
        at,
        width,
    );
}

/// `u`: every user with processes in the frame, and how many.
pub(crate) fn draw_users(f: &mut TermFrame, app: &App, s: &Sty, area: Rect, at: usize) {
    let rows = app
        .user_choices()
        .into_iter()
        .map(|c| format!(" {:<24} {:>6} processes", c.name, c.processes))
        .collect();
    list(
        f,
        s,
        area,
        (" show the tasks of ".into(), " Enter choose · Esc cancel"),
        rows,
        at,
        48,
    );
}
