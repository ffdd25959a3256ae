//! The CPU meter: htop's bar per CPU (user, system, irq, softirq, steal)
//! with its busy share at the right end, and after it `!N%`: the share
//! of that CPU's time that was interrupt work done on the time of the
//! task it interrupted, which top charges to that task
//! (`CpuView::stolen_pct`). With more CPUs than the header has lines for,
//! one character per CPU, its height the busy share, stolen-from CPUs
//! marked in the stolen style.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::Item;
use super::bar::{Seg, Text, bar};
use super::layout::{label_width, strip_per_line};
use crate::model::frame::{CpuView, Frame};
use crate::output::format::fmt_pct;
use crate::ui::style::{STOLEN_MARK_PCT, Sty};

/// Busy as htop counts it: everything but idle and iowait.
pub fn busy(c: &CpuView) -> f64 {
    let b = c.usr_pct + c.nice_pct + c.sys_pct + c.irq_pct + c.soft_pct + c.steal_pct;
    if b.is_finite() {
        b.clamp(0.0, 100.0)
    } else {
        0.0
    }
}

/// us/sy/hi/si/st in htop's colours (user green, system red, irq yellow,
/// softirq magenta, steal cyan); in mono the CPUs view's characters.
fn segs(c: &CpuView) -> [Seg; 5] {
    let seg = |pct, color, mono| Seg { pct, color, mono };
    [
        seg(c.usr_pct + c.nice_pct, Color::Green, '='),
        seg(c.sys_pct, Color::Red, '-'),
        seg(c.irq_pct, Color::Yellow, '!'),
        seg(c.soft_pct, Color::Magenta, '#'),
        seg(c.steal_pct, Color::Cyan, '~'),
    ]
}

/// `!12.3%` for a CPU some of whose time was stolen; `None` below 0.05 %
/// (as a dash in the tables: real values stand out).
fn stolen_text(c: &CpuView, s: &Sty) -> Option<(String, Style)> {
    // NaN (never from the model) shows nothing rather than "!NaN%".
    if c.stolen_pct.is_nan() || c.stolen_pct < 0.05 {
        return None;
    }
    let st = if c.stolen_pct >= STOLEN_MARK_PCT {
        s.stolen()
    } else {
        s.gap()
    };
    Some((format!("!{}%", fmt_pct(c.stolen_pct)), st))
}

/// One CPU's bar, `w` wide.
fn cell<'a>(c: &CpuView, lw: u16, w: u16, s: &Sty) -> Line<'a> {
    let label = format!("{:>lw$}", c.cpu, lw = usize::from(lw));
    if !c.online {
        return bar(&label, &[], vec![Text::new("offline", s.dim(), 0)], w, s);
    }
    let mut text = vec![Text::new(format!("{}%", fmt_pct(busy(c))), Style::new(), 1)];
    if let Some((t, st)) = stolen_text(c, s) {
        text.push(Text::new(format!(" {t}"), st, 0));
    }
    bar(&label, &segs(c), text, w, s)
}

/// The bars in `cols` columns of `w / cols`, counting down each column
/// first (htop's AllCPUs2/4), at most `h` lines.
pub fn bars<'a>(f: &Frame, cols: u16, w: u16, h: u16, s: &Sty) -> Vec<Line<'a>> {
    let n = f.cpus.len();
    if n == 0 {
        return vec![bar("CPU", &[], vec![Text::new("n/a", s.dim(), 0)], w, s)];
    }
    let cols = cols.max(1);
    let rows = n.div_ceil(usize::from(cols)).min(usize::from(h));
    let cw = w / cols;
    let lw = label_width(n);
    (0..rows)
        .map(|r| {
            let mut spans: Vec<Span> = Vec::new();
            for col in 0..usize::from(cols) {
                let Some(c) = f.cpus.get(col * rows + r) else {
                    break;
                };
                // A blank column between bars side by side.
                let last = col + 1 == usize::from(cols);
                let width = if last { w - cw * (cols - 1) } else { cw - 1 };
                spans.extend(cell(c, lw, width, s).spans);
                if !last {
                    spans.push(Span::raw(" "));
                }
            }
            Line::from(spans)
        })
        .collect()
}

/// The block character for a busy share: blank when idle, `▁` … `█`.
fn level(busy: f64) -> char {
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if busy < 0.5 {
        return LEVELS[0];
    }
    LEVELS[((busy / 12.5).ceil() as usize).clamp(1, 8)]
}

/// One character per CPU of `cpus`, in its style.
fn strip_spans<'a>(cpus: &[CpuView], s: &Sty) -> Vec<Span<'a>> {
    cpus.iter()
        .map(|c| {
            if !c.online {
                Span::styled("x", s.dim())
            } else if c.stolen_pct >= STOLEN_MARK_PCT {
                Span::styled(level(busy(c)).to_string(), s.stolen())
            } else {
                Span::styled(level(busy(c)).to_string(), s.fg(Color::Green))
            }
        })
        .collect()
}

/// The CPU stolen from most, as ` !45.2% cpu3`; `None` when none was.
fn most_stolen<'a>(f: &Frame, s: &Sty) -> Option<Vec<Span<'a>>> {
    let c = f
        .cpus
        .iter()
        .filter(|c| c.online)
        .max_by(|a, b| a.stolen_pct.total_cmp(&b.stolen_pct))?;
    let (t, st) = stolen_text(c, s)?;
    Some(vec![
        Span::styled(t, st),
        Span::raw(format!(" cpu{}", c.cpu)),
    ])
}

/// `first[▁▂█▇…]` lines of `w`, and after the last the CPU stolen from
/// most when it fits.
pub fn strip<'a>(f: &Frame, w: u16, s: &Sty) -> Vec<Line<'a>> {
    let n = f.cpus.len();
    let per = strip_per_line(n, w);
    let lw = usize::from(label_width(n));
    let mut lines: Vec<Line> = f
        .cpus
        .chunks(per)
        .enumerate()
        .map(|(i, chunk)| {
            let mut spans = vec![
                Span::styled(format!("{:>lw$}", i * per), s.accent()),
                Span::raw("["),
            ];
            spans.extend(strip_spans(chunk, s));
            spans.push(Span::raw("]"));
            Line::from(spans)
        })
        .collect();
    if let (Some(last), Some(mut most)) = (lines.last_mut(), most_stolen(f, s)) {
        most.insert(0, Span::raw(" "));
        let room = usize::from(w).saturating_sub(last.width());
        if most.iter().map(|s| s.width()).sum::<usize>() <= room {
            last.spans.extend(most);
        }
    }
    lines
}

/// The compact header's CPU words: the strip in pieces that fit `w`, and
/// the CPU stolen from most.
pub fn compact<'a>(f: &Frame, w: u16, s: &Sty) -> Vec<Item<'a>> {
    let n = f.cpus.len();
    let per = strip_per_line(n, w);
    let lw = usize::from(label_width(n));
    let mut items: Vec<Item> = f
        .cpus
        .chunks(per)
        .enumerate()
        .map(|(i, chunk)| {
            let mut spans = vec![
                Span::styled(format!("{:>lw$}", i * per), s.accent()),
                Span::raw("["),
            ];
            spans.extend(strip_spans(chunk, s));
            spans.push(Span::raw("]"));
            Item::new(spans, 2)
        })
        .collect();
    if let Some(most) = most_stolen(f, s) {
        items.push(Item::new(most, 1));
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        assert_eq!(level(0.0), ' ');
        assert_eq!(level(0.6), '▁');
        assert_eq!(level(12.5), '▁');
        assert_eq!(level(12.6), '▂');
        assert_eq!(level(100.0), '█');
        assert_eq!(level(f64::NAN), '▁');
    }
}
