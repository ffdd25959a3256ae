//! The header meters, htop's way with nettop's split: per-CPU bars (user,
//! system, irq, softirq, steal) each marked with the share top
//! misattributes there, Mem and Swp bars, tasks, load and uptime in two
//! columns, and nettop's own summary under them.
//!
//! [`layout`] decides, from the terminal's size and the CPU count alone,
//! which meter goes where and how many lines the header takes (the App
//! needs that without a frame to draw); each meter's file draws its piece
//! from the frame and does no I/O. Text that does not fit wraps or is left
//! out whole ([`pack`]): a header line never ends in a cut number.

mod bar;
mod cpu;
mod host;
pub mod layout;
mod load;
mod mem;
pub mod pack;
mod summary;
mod tasks;

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use serde::{Deserialize, Serialize};

use super::style::Sty;
use crate::model::frame::Frame;
use layout::{Piece, Plan, Shape};

/// One meter the header can show (the configuration file's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Meter {
    /// A bar per CPU, or one character per CPU when they do not fit.
    Cpus,
    Mem,
    Swap,
    /// Processes, threads, kernel threads, runnable tasks.
    Tasks,
    /// Load average.
    Load,
    Uptime,
    /// Host name and the frame's time (UTC).
    Host,
    /// nettop's summary: what top misattributes, the CPU shares averaged,
    /// NET_RX and napi rates.
    Nettop,
}

/// How much the header shows (`m` steps through them, as top's `t` and
/// `m` step through their summary lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeaderMode {
    /// htop's: bars in two columns, nettop's summary under them.
    #[default]
    Full,
    /// Every meter as a few words, flowed into as few lines as fit.
    Compact,
    /// nettop's summary alone.
    Brief,
}

impl HeaderMode {
    pub const ALL: [HeaderMode; 3] = [HeaderMode::Full, HeaderMode::Compact, HeaderMode::Brief];

    pub fn name(self) -> &'static str {
        match self {
            HeaderMode::Full => "full",
            HeaderMode::Compact => "compact",
            HeaderMode::Brief => "brief",
        }
    }

    pub fn next(self) -> HeaderMode {
        let i = HeaderMode::ALL.iter().position(|m| *m == self).unwrap_or(0);
        HeaderMode::ALL[(i + 1) % HeaderMode::ALL.len()]
    }
}

/// How the CPU bars are arranged in the full header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuBars {
    /// As many bars side by side as the header's height needs, one
    /// character per CPU when even four columns are too tall.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "1")]
    One,
    #[serde(rename = "2")]
    Two,
    #[serde(rename = "4")]
    Four,
    /// One character per CPU.
    #[serde(rename = "strip")]
    Strip,
}

/// Which meters are shown where; what `W` saves of the header.
#[derive(Clone, Debug, PartialEq)]
pub struct MeterConfig {
    pub mode: HeaderMode,
    /// htop's two columns, top to bottom.
    pub left: Vec<Meter>,
    pub right: Vec<Meter>,
    /// Full-width meters under the two columns.
    pub below: Vec<Meter>,
    pub cpu_bars: CpuBars,
}

impl Default for MeterConfig {
    fn default() -> Self {
        MeterConfig {
            mode: HeaderMode::Full,
            left: vec![Meter::Cpus, Meter::Mem, Meter::Swap],
            right: vec![Meter::Tasks, Meter::Load, Meter::Uptime, Meter::Host],
            below: vec![Meter::Nettop],
            cpu_bars: CpuBars::Auto,
        }
    }
}

/// The shape the header is laid out for: the frame's CPU count, or none
/// before the first frame.
pub fn shape(frame: Option<&Frame>, width: u16, height: u16) -> Shape {
    Shape {
        width,
        height,
        cpus: frame.map(|f| f.cpus.len()),
    }
}

/// Lines the header takes on this terminal.
pub fn height(cfg: &MeterConfig, frame: Option<&Frame>, width: u16, height: u16) -> u16 {
    layout::plan(cfg, &shape(frame, width, height)).rows
}

/// Draws the header into `area`, the top of a terminal `term_height`
/// lines tall (the plan is made for the terminal, as [`height`]'s is).
pub(crate) fn draw(
    f: &mut TermFrame,
    frame: Option<&Frame>,
    cfg: &MeterConfig,
    s: &Sty,
    area: Rect,
    term_height: u16,
) {
    let plan = layout::plan(cfg, &shape(frame, area.width, term_height));
    for (rect, lines) in render(&plan, frame, s, area) {
        f.render_widget(Paragraph::new(lines), rect);
    }
}

/// Each piece's lines and where they go.
fn render<'a>(
    plan: &Plan,
    frame: Option<&'a Frame>,
    s: &Sty,
    area: Rect,
) -> Vec<(Rect, Vec<Line<'a>>)> {
    let Some(fr) = frame else {
        return vec![(
            Rect { height: 1, ..area },
            vec![Line::from(vec![
                Span::styled("nettop", s.accent()),
                Span::raw("  waiting for the first interval..."),
            ])],
        )];
    };
    plan.blocks
        .iter()
        .filter_map(|b| {
            let rect = Rect {
                x: area.x + b.x,
                y: area.y + b.y,
                width: b.w.min(area.width.saturating_sub(b.x)),
                height: b.h.min(area.height.saturating_sub(b.y)),
            };
            if rect.width == 0 || rect.height == 0 {
                return None;
            }
            let lines = match b.piece {
                Piece::CpuBars { cols } => cpu::bars(fr, cols, b.w, b.h, s),
                Piece::CpuStrip => cpu::strip(fr, b.w, s),
                Piece::Meter(m) => meter_lines(m, fr, b.w, b.h, s),
                Piece::Compact(ref meters) => compact(meters, fr, b.w, b.h, s),
            };
            Some((rect, lines))
        })
        .collect()
}

/// One meter in a column (or below them), `w` × `h`.
fn meter_lines<'a>(m: Meter, f: &'a Frame, w: u16, h: u16, s: &Sty) -> Vec<Line<'a>> {
    match m {
        Meter::Cpus => cpu::bars(f, 1, w, h, s),
        Meter::Mem => vec![mem::mem_bar(f, w, s)],
        Meter::Swap => vec![mem::swap_bar(f, w, s)],
        Meter::Tasks => tasks::tasks(f, w, s),
        Meter::Load => load::load(f, w, s),
        Meter::Uptime => load::uptime(f, w, s),
        Meter::Host => host::host(f, w, s),
        Meter::Nettop => summary::lines(f, w, h, s),
    }
}

/// Every meter as a few words, flowed together into `h` lines.
fn compact<'a>(meters: &[Meter], f: &'a Frame, w: u16, h: u16, s: &Sty) -> Vec<Line<'a>> {
    let mut items: Vec<Item<'a>> = Vec::new();
    for (n, m) in meters.iter().enumerate() {
        let mut its = match m {
            Meter::Cpus => cpu::compact(f, w, s),
            Meter::Mem => vec![mem::mem_item(f, s)],
            Meter::Swap => vec![mem::swap_item(f, s)],
            Meter::Tasks => vec![tasks::tasks_item(f, s)],
            Meter::Load => vec![load::load_item(f, s)],
            Meter::Uptime => vec![load::uptime_item(f, s)],
            Meter::Host => vec![host::host_item(f)],
            Meter::Nettop => summary::items(f, s),
        };
        if n > 0
            && let Some(first) = its.first_mut()
        {
            first.slot.group = true;
        }
        items.extend(its);
    }
    flow_items(items, w, h)
}

/// A piece of text a meter shows, and how it packs.
pub(crate) struct Item<'a> {
    pub spans: Vec<Span<'a>>,
    pub slot: pack::Slot,
}

impl<'a> Item<'a> {
    /// An item of these spans, as wide as they are.
    pub fn new(spans: Vec<Span<'a>>, priority: u8) -> Item<'a> {
        let width: usize = spans.iter().map(|s| s.width()).sum();
        Item {
            spans,
            slot: pack::Slot {
                width: u16::try_from(width).unwrap_or(u16::MAX),
                priority,
                group: false,
            },
        }
    }

    /// Starts a group (" │ " before it).
    pub fn group(mut self) -> Item<'a> {
        self.slot.group = true;
        self
    }
}

/// The items packed into at most `h` lines of `w` ([`pack::pack`]).
pub(crate) fn flow_items(items: Vec<Item<'_>>, w: u16, h: u16) -> Vec<Line<'_>> {
    let slots: Vec<pack::Slot> = items.iter().map(|i| i.slot).collect();
    let lines = pack::pack(&slots, w, h);
    let mut items: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    lines
        .into_iter()
        .map(|line| {
            let mut spans = Vec::new();
            for (k, i) in line.into_iter().enumerate() {
                let Some(item) = items[i].take() else {
                    continue;
                };
                if k > 0 {
                    spans.push(Span::raw(if item.slot.group { " │ " } else { " " }));
                }
                spans.extend(item.spans);
            }
            Line::from(spans)
        })
        .collect()
}

/// The first form no wider than `w`, or an empty line.
pub(crate) fn first_fit<'a>(forms: Vec<Vec<Span<'a>>>, w: u16) -> Vec<Line<'a>> {
    let line = forms
        .into_iter()
        .map(Line::from)
        .find(|l| l.width() <= usize::from(w))
        .unwrap_or_default();
    vec![line]
}

pub(crate) fn bold<'a>(v: impl Into<String>) -> Span<'a> {
    Span::styled(v.into(), Style::new().add_modifier(Modifier::BOLD))
}

/// Unknown figures say so.
pub(crate) fn na<'a>(s: &Sty) -> Span<'a> {
    Span::styled("n/a", s.dim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::fixtures;
    use crate::ui::style::Theme;

    /// Every line a piece draws fits its block whole, so the terminal
    /// never cuts one: at every size from the smallest terminal, for 2,
    /// 16 and 96 CPUs, in every mode and every CPU bar choice, coloured
    /// and mono, and with unknown memory and load.
    #[test]
    fn every_line_fits_its_block() {
        let mut many = fixtures::busy_host();
        let cpus = many.cpus.clone();
        for k in 1..6u32 {
            many.cpus.extend(cpus.iter().cloned().map(|mut c| {
                c.cpu += 16 * k;
                c
            }));
        }
        let mut unknown = fixtures::idle_host();
        unknown.system = None;
        let frames = [fixtures::idle_host(), fixtures::busy_host(), many, unknown];
        // The meters as a configuration file may place them: CPUs on the
        // right, nettop's summary in a column, everything in one column.
        let placements = [
            MeterConfig::default(),
            MeterConfig {
                left: vec![Meter::Tasks, Meter::Nettop],
                right: vec![Meter::Cpus, Meter::Swap, Meter::Mem],
                below: vec![Meter::Host, Meter::Load, Meter::Uptime],
                ..MeterConfig::default()
            },
            MeterConfig {
                left: vec![Meter::Cpus, Meter::Mem, Meter::Nettop, Meter::Load],
                right: vec![],
                below: vec![Meter::Cpus],
                ..MeterConfig::default()
            },
        ];
        for f in &frames {
            for theme in [Theme::default(), Theme::mono()] {
                let s = Sty(theme);
                for mode in HeaderMode::ALL {
                    let choices = [CpuBars::Auto, CpuBars::Two, CpuBars::Four, CpuBars::Strip];
                    let configs = choices
                        .into_iter()
                        .map(|cpu_bars| MeterConfig {
                            cpu_bars,
                            ..MeterConfig::default()
                        })
                        .chain(placements.iter().cloned());
                    for cfg in configs {
                        let cfg = MeterConfig { mode, ..cfg };
                        let cpu_bars = cfg.cpu_bars;
                        for w in (30..=260).step_by(3) {
                            for h in [7, 12, 24, 50, 80] {
                                let plan = layout::plan(&cfg, &shape(Some(f), w, h));
                                let area = Rect::new(0, 0, w, plan.rows);
                                for (rect, lines) in render(&plan, Some(f), &s, area) {
                                    assert!(
                                        lines.len() <= usize::from(rect.height),
                                        "{w}x{h} {mode:?} {cpu_bars:?} {rect:?}: {lines:?}"
                                    );
                                    for l in lines {
                                        assert!(
                                            l.width() <= usize::from(rect.width),
                                            "{w}x{h} {mode:?} {cpu_bars:?} {rect:?}: {l}"
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
