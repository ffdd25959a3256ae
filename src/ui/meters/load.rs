//! htop's Load average and Uptime meters, from `/proc/loadavg` and
//! `/proc/uptime` (`n/a` when a recording lacks them).

use ratatui::text::{Line, Span};

use super::layout::compact_priority;
use super::{Item, Meter, bold, first_fit, na};
use crate::model::frame::Frame;
use crate::ui::style::Sty;

fn loads(f: &Frame) -> Option<[String; 3]> {
    let l = f.system.as_ref()?.load?;
    Some(l.map(|v| format!("{v:.2}")))
}

pub fn load<'a>(f: &Frame, w: u16, s: &Sty) -> Vec<Line<'a>> {
    let Some([a, b, c]) = loads(f) else {
        return first_fit(
            vec![
                vec![Span::styled("Load average: ", s.accent()), na(s)],
                vec![Span::styled("Load: ", s.accent()), na(s)],
            ],
            w,
        );
    };
    first_fit(
        vec![
            vec![
                Span::styled("Load average: ", s.accent()),
                bold(a.clone()),
                Span::raw(format!(" {b} {c}")),
            ],
            vec![
                Span::styled("Load: ", s.accent()),
                bold(a.clone()),
                Span::raw(format!(" {b} {c}")),
            ],
            vec![Span::styled("Load: ", s.accent()), bold(a)],
        ],
        w,
    )
}

/// htop's uptime: "3 days, 04:05:06", "1 day, 00:00:09", "04:05:06";
/// and a short "3d 04:05:06".
fn uptime_text(secs: f64, short: bool) -> String {
    let t = secs as u64;
    let (d, h, m, s) = (t / 86_400, t / 3600 % 24, t / 60 % 60, t % 60);
    let hms = format!("{h:02}:{m:02}:{s:02}");
    match (d, short) {
        (0, _) => hms,
        (d, true) => format!("{d}d {hms}"),
        (1, false) => format!("1 day, {hms}"),
        (d, false) => format!("{d} days, {hms}"),
    }
}

pub fn uptime<'a>(f: &Frame, w: u16, s: &Sty) -> Vec<Line<'a>> {
    let up = f.system.as_ref().and_then(|v| v.uptime_s);
    let value = |short| match up {
        Some(u) => bold(uptime_text(u, short)),
        None => na(s),
    };
    first_fit(
        vec![
            vec![Span::styled("Uptime: ", s.accent()), value(false)],
            vec![Span::styled("Up: ", s.accent()), value(true)],
        ],
        w,
    )
}

fn item<'a>(spans: Vec<Span<'a>>, m: Meter) -> Item<'a> {
    Item::new(spans, compact_priority(m))
}

/// "load 0.08 0.12 0.10".
pub fn load_item<'a>(f: &Frame, s: &Sty) -> Item<'a> {
    let value = match loads(f) {
        Some([a, b, c]) => Span::raw(format!("{a} {b} {c}")),
        None => na(s),
    };
    item(vec![Span::styled("load ", s.accent()), value], Meter::Load)
}

/// "up 3d 04:05:06".
pub fn uptime_item<'a>(f: &Frame, s: &Sty) -> Item<'a> {
    let value = match f.system.as_ref().and_then(|v| v.uptime_s) {
        Some(u) => Span::raw(uptime_text(u, true)),
        None => na(s),
    };
    item(vec![Span::styled("up ", s.accent()), value], Meter::Uptime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_as_htop_prints_it() {
        assert_eq!(uptime_text(3725.9, false), "01:02:05");
        assert_eq!(uptime_text(86_409.0, false), "1 day, 00:00:09");
        assert_eq!(
            uptime_text(3.0 * 86_400.0 + 14_706.0, false),
            "3 days, 04:05:06"
        );
        assert_eq!(uptime_text(3.0 * 86_400.0 + 14_706.0, true), "3d 04:05:06");
    }
}
