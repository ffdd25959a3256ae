//! htop's Mem and Swp bars: used (green), buffers (blue), shared
//! (magenta) and cache (yellow) of physical memory, used (red) and cache
//! (yellow) of swap, with `used/total` at the right end. Unknown (an old
//! recording, an unreadable /proc/meminfo) says `n/a`, never 0.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::Item;
use super::Meter;
use super::bar::{Seg, Text, bar};
use super::layout::compact_priority;
use crate::model::frame::Frame;
use crate::ui::style::Sty;

/// A size in KiB as htop prints it, in at most 5 characters with its
/// unit: "512K", "99.9M", "1.23G", "1000M".
pub fn fmt_kib(kib: u64) -> String {
    if kib < 1000 {
        return format!("{kib}K");
    }
    let mut v = kib as f64 / 1024.0;
    let mut unit = 'M';
    for next in ['G', 'T'] {
        if v < 999.5 {
            break;
        }
        v /= 1024.0;
        unit = next;
    }
    if v < 9.995 {
        format!("{v:.2}{unit}")
    } else if v < 99.95 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

fn used_total(used: u64, total: u64) -> String {
    format!("{}/{}", fmt_kib(used), fmt_kib(total))
}

pub fn mem_bar<'a>(f: &Frame, w: u16, s: &Sty) -> Line<'a> {
    let Some(m) = f.system.as_ref().and_then(|v| v.mem.as_ref()) else {
        return bar("Mem", &[], vec![Text::new("n/a", s.dim(), 0)], w, s);
    };
    let seg = |kib, color, mono| Seg {
        pct: pct(kib, m.total_kib),
        color,
        mono,
    };
    let segs = [
        seg(m.used_kib, Color::Green, '='),
        seg(m.buffers_kib, Color::Blue, '-'),
        seg(m.shared_kib, Color::Magenta, '*'),
        seg(m.cache_kib, Color::Yellow, '#'),
    ];
    let text = vec![Text::new(
        used_total(m.used_kib, m.total_kib),
        Style::new(),
        0,
    )];
    bar("Mem", &segs, text, w, s)
}

pub fn swap_bar<'a>(f: &Frame, w: u16, s: &Sty) -> Line<'a> {
    let Some(m) = f.system.as_ref().and_then(|v| v.swap.as_ref()) else {
        return bar("Swp", &[], vec![Text::new("n/a", s.dim(), 0)], w, s);
    };
    let segs = [
        Seg {
            pct: pct(m.used_kib, m.total_kib),
            color: Color::Red,
            mono: '=',
        },
        Seg {
            pct: pct(m.cache_kib, m.total_kib),
            color: Color::Yellow,
            mono: '#',
        },
    ];
    let text = vec![Text::new(
        used_total(m.used_kib, m.total_kib),
        Style::new(),
        0,
    )];
    bar("Swp", &segs, text, w, s)
}

fn item<'a>(label: &'static str, value: Option<String>, m: Meter, s: &Sty) -> Item<'a> {
    let value = match value {
        Some(v) => Span::raw(v),
        None => Span::styled("n/a", s.dim()),
    };
    Item::new(
        vec![Span::styled(label, s.accent()), Span::raw(" "), value],
        compact_priority(m),
    )
}

/// "Mem 1.23G/7.77G" for the compact header.
pub fn mem_item<'a>(f: &Frame, s: &Sty) -> Item<'a> {
    let v = f.system.as_ref().and_then(|v| v.mem.as_ref());
    item(
        "Mem",
        v.map(|m| used_total(m.used_kib, m.total_kib)),
        Meter::Mem,
        s,
    )
}

/// "Swp 0K/2.00G" for the compact header.
pub fn swap_item<'a>(f: &Frame, s: &Sty) -> Item<'a> {
    let v = f.system.as_ref().and_then(|v| v.swap.as_ref());
    item(
        "Swp",
        v.map(|m| used_total(m.used_kib, m.total_kib)),
        Meter::Swap,
        s,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_htop_prints_them() {
        assert_eq!(fmt_kib(0), "0K");
        assert_eq!(fmt_kib(999), "999K");
        assert_eq!(fmt_kib(1000), "0.98M");
        assert_eq!(fmt_kib(102_400), "100M");
        assert_eq!(fmt_kib(1_022_976), "999M");
        assert_eq!(fmt_kib(1_023_488), "0.98G");
        assert_eq!(fmt_kib(8_048_576), "7.68G");
        assert_eq!(fmt_kib(u64::MAX).chars().last(), Some('T'));
        for k in [0, 1, 999, 1000, 10_000, 99_999, 1 << 20, 1 << 30, 1 << 40] {
            assert!(fmt_kib(k).chars().count() <= 5, "{k}: {}", fmt_kib(k));
        }
    }
}
