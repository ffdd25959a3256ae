//! One htop bar: `label[||||||||       text]`. Segments are drawn in their
//! colours with `|`, or with a character each in the mono scheme (where
//! colours are not shown, the characters tell the parts apart); the text
//! sits at the bar's right end over the cells it covers, as in htop.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::ui::style::Sty;

/// One part of a bar: percent of the whole bar, its colour, and its
/// character in the mono scheme.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub pct: f64,
    pub color: Color,
    pub mono: char,
}

/// A part of the text: what it says, its style, and how soon it is left
/// out when the bar is too short for all of it (larger first).
pub struct Text {
    pub text: String,
    pub style: Style,
    pub drop: u8,
}

impl Text {
    pub fn new(text: impl Into<String>, style: Style, drop: u8) -> Text {
        Text {
            text: text.into(),
            style,
            drop,
        }
    }
}

/// Cells per segment over `cells`, largest remainder first, never more
/// than the bar holds.
pub fn cells(segs: &[Seg], cells: usize) -> Vec<usize> {
    let scale = cells as f64 / 100.0;
    let want: Vec<f64> = segs
        .iter()
        .map(|s| {
            if s.pct.is_finite() {
                s.pct.max(0.0) * scale
            } else {
                0.0
            }
        })
        .collect();
    let mut out: Vec<usize> = want.iter().map(|w| w.floor() as usize).collect();
    let target = (want.iter().sum::<f64>().round() as usize).min(cells);
    let mut used: usize = out.iter().sum();
    let mut order: Vec<usize> = (0..segs.len()).collect();
    order.sort_by(|a, b| (want[*b] - want[*b].floor()).total_cmp(&(want[*a] - want[*a].floor())));
    for i in order {
        if used >= target {
            break;
        }
        if want[i] > out[i] as f64 {
            out[i] += 1;
            used += 1;
        }
    }
    // Segments of over 100 % together (a recording's garbage) are cut
    // from the last, so the bar never overflows.
    let mut i = out.len();
    while used > cells && i > 0 {
        i -= 1;
        let take = out[i].min(used - cells);
        out[i] -= take;
        used -= take;
    }
    out
}

/// The bar in exactly `w` columns (nothing when `w` cannot hold the label
/// and the brackets). Text parts that do not fit are left out whole,
/// those with the largest `drop` first.
pub fn bar<'a>(label: &str, segs: &[Seg], mut text: Vec<Text>, w: u16, s: &Sty) -> Line<'a> {
    let lw = label.chars().count();
    let Some(inner) = usize::from(w).checked_sub(lw + 2) else {
        return Line::default();
    };
    let width = |t: &[Text]| t.iter().map(|t| t.text.chars().count()).sum::<usize>();
    while width(&text) > inner {
        let Some(i) = (0..text.len()).max_by_key(|&i| (text[i].drop, i)) else {
            break;
        };
        text.remove(i);
    }
    let tw = width(&text);
    let color = s.0.color();
    let mut cell: Vec<(char, Style)> = Vec::with_capacity(inner);
    for (seg, n) in segs.iter().zip(cells(segs, inner)) {
        let ch = if color { '|' } else { seg.mono };
        cell.extend(std::iter::repeat_n((ch, s.fg(seg.color)), n));
    }
    cell.resize(inner, (' ', Style::new()));
    for (i, (ch, st)) in text
        .iter()
        .flat_map(|t| t.text.chars().map(move |c| (c, t.style)))
        .enumerate()
    {
        cell[inner - tw + i] = (ch, st);
    }
    let mut spans = vec![Span::styled(label.to_string(), s.accent()), Span::raw("[")];
    let mut run = String::new();
    let mut run_style = Style::new();
    for (ch, st) in cell {
        if st != run_style && !run.is_empty() {
            spans.push(Span::styled(std::mem::take(&mut run), run_style));
        }
        run_style = st;
        run.push(ch);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, run_style));
    }
    spans.push(Span::raw("]"));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::style::Theme;

    fn seg(pct: f64) -> Seg {
        Seg {
            pct,
            color: Color::Green,
            mono: '=',
        }
    }

    #[test]
    fn cells_round_to_the_whole_and_never_overflow() {
        assert_eq!(cells(&[seg(50.0), seg(25.0)], 20), vec![10, 5]);
        // 3 × 33.4 % of 10 cells: 10 in all, not 9.
        assert_eq!(cells(&[seg(33.4); 3], 10).iter().sum::<usize>(), 10);
        assert_eq!(cells(&[seg(90.0), seg(90.0)], 10), vec![9, 1]);
        assert_eq!(cells(&[seg(f64::NAN), seg(-5.0)], 10), vec![0, 0]);
    }

    #[test]
    fn text_is_left_out_whole_never_cut() {
        let s = Sty(Theme::mono());
        let line = |w| {
            let t = vec![
                Text::new("45.2%", Style::new(), 1),
                Text::new(" !12.3%", Style::new(), 0),
            ];
            bar("0", &[seg(50.0)], t, w, &s).to_string()
        };
        assert_eq!(line(22), "0[=======45.2% !12.3%]");
        assert_eq!(line(22).chars().count(), 22);
        // Too short for both: the busy figure goes first.
        assert_eq!(line(10), "0[ !12.3%]");
        assert_eq!(line(3), "0[]");
        assert_eq!(line(2), "");
    }
}
