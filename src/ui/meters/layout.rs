//! Where each meter goes: a pure function of the configuration, the
//! terminal's size and the CPU count, so the App knows the header's height
//! without drawing and a test can check every size.
//!
//! The header gets at most [`budget`] lines (about two sevenths of what is
//! left after the tabs and the status line: 6 of 24, 13 of 50), so the
//! table keeps most of the screen. The full header tries the CPU bars one
//! per line, then in 2 and 4 columns, then one character per CPU, first
//! with nettop's summary on as many lines as it needs, then on fewer; when
//! nothing fits, every meter becomes a few words flowed together
//! (compact), never cut.

use super::pack::{self, Slot};
use super::{CpuBars, HeaderMode, Meter, MeterConfig};

/// What the layout needs to know of the terminal and the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub width: u16,
    /// The terminal's height (the header's share is taken from it).
    pub height: u16,
    /// CPUs in the frame; `None` before the first frame.
    pub cpus: Option<usize>,
}

/// What one block of the header shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// The CPU bars in this many columns, CPU 0 at the top left and
    /// counting down each column first (htop's).
    CpuBars {
        cols: u16,
    },
    /// One character per CPU.
    CpuStrip,
    Meter(Meter),
    /// These meters as words, flowed together.
    Compact(Vec<Meter>),
}

/// A piece and its place, relative to the header's top left corner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub x: u16,
    pub y: u16,
    pub w: u16,
    pub h: u16,
    pub piece: Piece,
}

/// The header's layout: the mode actually drawn (a full header that does
/// not fit becomes compact), its lines, and its blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub mode: HeaderMode,
    pub rows: u16,
    pub blocks: Vec<Block>,
}

/// Narrowest column of the two-column header.
pub const COL_MIN: u16 = 30;
/// Narrowest CPU bar: label, brackets, "100%", " !45.2%" and a few cells.
pub const CPU_CELL_MIN: u16 = 19;
/// Lines of chrome besides the header: tabs, the view's title, status.
const OTHER_CHROME: u16 = 3;

/// Lines the header may take on a terminal `height` tall.
pub fn budget(height: u16) -> u16 {
    (height.saturating_sub(OTHER_CHROME) * 2 / 7).max(1)
}

/// Columns a CPU number takes as a label (htop right-aligns them).
pub fn label_width(cpus: usize) -> u16 {
    let mut n = cpus.saturating_sub(1);
    let mut w = 1;
    while n >= 10 {
        n /= 10;
        w += 1;
    }
    w
}

/// CPUs one strip line of `w` holds: `label[` … `]`.
pub fn strip_per_line(cpus: usize, w: u16) -> usize {
    usize::from(w.saturating_sub(label_width(cpus) + 2)).max(1)
}

fn div_ceil(n: usize, d: usize) -> u16 {
    u16::try_from(n.div_ceil(d.max(1))).unwrap_or(u16::MAX)
}

/// How the CPUs are drawn in the full header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arrangement {
    Bars(u16),
    Strip,
}

fn arrangements(pref: CpuBars) -> &'static [Arrangement] {
    use Arrangement::*;
    match pref {
        CpuBars::Auto | CpuBars::One => &[Bars(1), Bars(2), Bars(4), Strip],
        CpuBars::Two => &[Bars(2), Bars(4), Strip],
        CpuBars::Four => &[Bars(4), Strip],
        CpuBars::Strip => &[Strip],
    }
}

/// Lines meter `m` takes in a column `w` wide; `None` when it cannot be
/// drawn that way at that width.
fn meter_rows(
    m: Meter,
    cpus: usize,
    w: u16,
    arr: Arrangement,
    nettop: (&[Slot], u16),
) -> Option<u16> {
    match (m, arr) {
        (Meter::Cpus, _) if cpus == 0 => Some(1),
        (Meter::Cpus, Arrangement::Bars(k)) => {
            (w / k).checked_sub(1).filter(|c| *c >= CPU_CELL_MIN)?;
            Some(div_ceil(cpus, usize::from(k)))
        }
        (Meter::Cpus, Arrangement::Strip) => Some(div_ceil(cpus, strip_per_line(cpus, w))),
        (Meter::Nettop, _) => Some(pack::lines_needed(nettop.0, w).clamp(1, nettop.1)),
        _ => Some(1),
    }
}

/// The blocks of one column of meters from `y`, `w` wide; `None` when a
/// meter cannot be drawn at that width.
fn column(
    meters: &[Meter],
    cpus: usize,
    (x, y, w): (u16, u16, u16),
    arr: Arrangement,
    nettop: (&[Slot], u16),
) -> Option<Vec<Block>> {
    let mut at = y;
    let mut out = Vec::new();
    for &m in meters {
        let h = meter_rows(m, cpus, w, arr, nettop)?;
        let piece = match (m, arr) {
            (Meter::Cpus, Arrangement::Bars(cols)) => Piece::CpuBars { cols },
            (Meter::Cpus, Arrangement::Strip) if cpus > 0 => Piece::CpuStrip,
            (Meter::Cpus, _) => Piece::CpuBars { cols: 1 },
            (m, _) => Piece::Meter(m),
        };
        out.push(Block {
            x,
            y: at,
            w,
            h,
            piece,
        });
        at = at.saturating_add(h);
    }
    Some(out)
}

fn bottom(blocks: &[Block]) -> u16 {
    blocks.iter().map(|b| b.y + b.h).max().unwrap_or(0)
}

/// The full header, if it fits `budget` lines in any arrangement.
fn full(cfg: &MeterConfig, cpus: usize, nettop: &[Slot], width: u16, budget: u16) -> Option<Plan> {
    let nettop_all = [&cfg.left, &cfg.right, &cfg.below]
        .iter()
        .flat_map(|v| v.iter())
        .any(|m| *m == Meter::Nettop);
    let most = if nettop_all {
        pack::lines_needed(nettop, width).max(1)
    } else {
        1
    };
    let two = width >= 2 * COL_MIN;
    for cap in (1..=most).rev() {
        for &arr in arrangements(cfg.cpu_bars) {
            let blocks = if two {
                let lw = width / 2;
                // One blank column between the two, taken from the left.
                let left = column(&cfg.left, cpus, (0, 0, lw - 1), arr, (nettop, cap));
                let right = column(&cfg.right, cpus, (lw, 0, width - lw), arr, (nettop, cap));
                let (Some(mut left), Some(right)) = (left, right) else {
                    continue;
                };
                let top = bottom(&left).max(bottom(&right));
                let Some(below) = column(&cfg.below, cpus, (0, top, width), arr, (nettop, cap))
                else {
                    continue;
                };
                left.extend(right);
                left.extend(below);
                Some(left)
            } else {
                let stacked: Vec<Meter> = cfg
                    .left
                    .iter()
                    .chain(&cfg.right)
                    .chain(&cfg.below)
                    .copied()
                    .collect();
                column(&stacked, cpus, (0, 0, width), arr, (nettop, cap))
            };
            let Some(blocks) = blocks else { continue };
            let rows = bottom(&blocks);
            if rows <= budget {
                return Some(Plan {
                    mode: HeaderMode::Full,
                    rows,
                    blocks,
                });
            }
        }
    }
    None
}

/// The most a meter's words take in the compact header: the slots of the
/// widest figures it can show.
fn compact_slots(m: Meter, cpus: usize, nettop: &[Slot], width: u16) -> Vec<Slot> {
    match m {
        Meter::Cpus => {
            let per = strip_per_line(cpus, width);
            (0..div_ceil(cpus.max(1), per))
                .map(|i| {
                    let n = (cpus - (usize::from(i) * per).min(cpus)).min(per);
                    Slot {
                        width: u16::try_from(n).unwrap_or(u16::MAX) + label_width(cpus) + 2,
                        priority: 2,
                        group: false,
                    }
                })
                // The CPU stolen from most: "!100% cpu1023".
                .chain([Slot {
                    width: 10 + label_width(cpus),
                    priority: 1,
                    group: false,
                }])
                .collect()
        }
        Meter::Nettop => nettop.to_vec(),
        m => vec![Slot {
            width: compact_width(m),
            priority: compact_priority(m),
            group: false,
        }],
    }
}

/// The most columns a meter's words take in the compact header, for
/// figures of ordinary size ("Mem 99.9M/99.9G", "load 99.99 99.99 99.99").
/// Larger ones still never overflow: they may leave out another item.
fn compact_width(m: Meter) -> u16 {
    match m {
        Meter::Mem | Meter::Swap => 15,
        Meter::Tasks => 46,
        Meter::Load => 22,
        Meter::Uptime => 16,
        Meter::Host => 30,
        Meter::Cpus | Meter::Nettop => 0,
    }
}

/// Which meters' words the compact header leaves out first (larger
/// first); nettop's own items have theirs (`summary`).
pub fn compact_priority(m: Meter) -> u8 {
    match m {
        Meter::Cpus | Meter::Mem => 2,
        Meter::Tasks | Meter::Load => 3,
        Meter::Swap | Meter::Uptime => 4,
        Meter::Host => 5,
        Meter::Nettop => 0,
    }
}

fn compact(cfg: &MeterConfig, cpus: usize, nettop: &[Slot], width: u16, budget: u16) -> Plan {
    let mut meters: Vec<Meter> = Vec::new();
    for m in cfg.left.iter().chain(&cfg.right).chain(&cfg.below) {
        if !meters.contains(m) {
            meters.push(*m);
        }
    }
    let slots: Vec<Slot> = meters
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            let mut s = compact_slots(*m, cpus, nettop, width);
            if i > 0
                && let Some(first) = s.first_mut()
            {
                first.group = true;
            }
            s
        })
        .collect();
    let rows = pack::lines_needed(&slots, width).clamp(1, budget);
    Plan {
        mode: HeaderMode::Compact,
        rows,
        blocks: vec![Block {
            x: 0,
            y: 0,
            w: width,
            h: rows,
            piece: Piece::Compact(meters),
        }],
    }
}

fn brief(nettop: &[Slot], width: u16, budget: u16) -> Plan {
    let rows = pack::lines_needed(nettop, width).clamp(1, budget);
    Plan {
        mode: HeaderMode::Brief,
        rows,
        blocks: vec![Block {
            x: 0,
            y: 0,
            w: width,
            h: rows,
            piece: Piece::Meter(Meter::Nettop),
        }],
    }
}

/// The header for `cfg` on a terminal of `shape`.
pub fn plan(cfg: &MeterConfig, shape: &Shape) -> Plan {
    let Some(cpus) = shape.cpus else {
        // One line says nettop is waiting for its first interval.
        return Plan {
            mode: cfg.mode,
            rows: 1,
            blocks: Vec::new(),
        };
    };
    let budget = budget(shape.height);
    let width = shape.width;
    let nettop = super::summary::slots(cpus);
    match cfg.mode {
        HeaderMode::Full => full(cfg, cpus, &nettop, width, budget)
            .unwrap_or_else(|| compact(cfg, cpus, &nettop, width, budget)),
        HeaderMode::Compact => compact(cfg, cpus, &nettop, width, budget),
        HeaderMode::Brief => brief(&nettop, width, budget),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(w: u16, h: u16, cpus: usize) -> Plan {
        plan(
            &MeterConfig::default(),
            &Shape {
                width: w,
                height: h,
                cpus: Some(cpus),
            },
        )
    }

    fn cpu_piece(p: &Plan) -> Option<Piece> {
        p.blocks
            .iter()
            .map(|b| b.piece.clone())
            .find(|p| matches!(p, Piece::CpuBars { .. } | Piece::CpuStrip))
    }

    /// No block leaves the terminal or overlaps another, and the header
    /// stays within its share of the height, at every size from the
    /// smallest the TUI draws into.
    #[test]
    fn every_size_fits() {
        for cpus in [0, 1, 2, 3, 8, 16, 64, 100, 256, 1024] {
            for w in (30..=260).step_by(7) {
                for h in [7, 10, 24, 30, 50, 80] {
                    let p = at(w, h, cpus);
                    assert!(p.rows >= 1 && p.rows <= budget(h), "{w}x{h} {cpus}: {p:?}");
                    for (i, b) in p.blocks.iter().enumerate() {
                        assert!(
                            b.x + b.w <= w && b.y + b.h <= p.rows,
                            "{w}x{h} {cpus}: {b:?}"
                        );
                        for c in &p.blocks[i + 1..] {
                            let apart = b.x + b.w <= c.x
                                || c.x + c.w <= b.x
                                || b.y + b.h <= c.y
                                || c.y + c.h <= b.y;
                            assert!(apart, "{w}x{h} {cpus}: {b:?} overlaps {c:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn htop_layout_at_80x24_and_200x50() {
        // Two CPUs at 80x24: a bar each, Mem, Swp beside Tasks, Load,
        // Uptime, Host, and nettop's summary under them on two lines.
        let p = at(80, 24, 2);
        assert_eq!(p.mode, HeaderMode::Full);
        assert_eq!(p.rows, 6);
        assert_eq!(cpu_piece(&p), Some(Piece::CpuBars { cols: 1 }));
        let right = p.blocks.iter().filter(|b| b.x == 40).count();
        assert_eq!(right, 4);
        // Sixteen CPUs do not fit 6 lines as bars: one character each.
        assert_eq!(cpu_piece(&at(80, 24, 16)), Some(Piece::CpuStrip));
        // At 200x50 they do, in two columns.
        let p = at(200, 50, 16);
        assert_eq!(cpu_piece(&p), Some(Piece::CpuBars { cols: 2 }));
        assert_eq!(p.rows, 8 + 2 + 1);
        // 64 CPUs at 250x80: four columns of 16.
        assert_eq!(
            cpu_piece(&at(250, 80, 64)),
            Some(Piece::CpuBars { cols: 4 })
        );
    }

    #[test]
    fn narrow_and_short_collapse() {
        // One column below 60: stacked, and too tall for 24 lines.
        let p = at(50, 24, 2);
        assert_eq!(p.mode, HeaderMode::Compact);
        assert!(p.rows <= 6);
        // The smallest terminal: one line.
        assert_eq!(at(30, 7, 16).rows, 1);
        // A tall narrow one stacks the bars in one column.
        let p = at(40, 80, 2);
        assert_eq!(p.mode, HeaderMode::Full);
        assert!(p.blocks.iter().all(|b| b.x == 0 && b.w == 40));
    }

    #[test]
    fn modes_and_cpu_bar_choices() {
        let shape = Shape {
            width: 200,
            height: 50,
            cpus: Some(4),
        };
        let mut cfg = MeterConfig {
            cpu_bars: CpuBars::Two,
            ..MeterConfig::default()
        };
        assert_eq!(
            cpu_piece(&plan(&cfg, &shape)),
            Some(Piece::CpuBars { cols: 2 })
        );
        cfg.cpu_bars = CpuBars::Strip;
        assert_eq!(cpu_piece(&plan(&cfg, &shape)), Some(Piece::CpuStrip));
        cfg.mode = HeaderMode::Brief;
        let p = plan(&cfg, &shape);
        assert_eq!((p.rows, p.blocks.len()), (1, 1));
        cfg.mode = HeaderMode::Compact;
        let p = plan(&cfg, &shape);
        assert_eq!(p.mode, HeaderMode::Compact);
        assert!(p.rows <= 2, "{p:?}");
        // Before the first frame: one line, whatever the mode.
        let waiting = Shape {
            cpus: None,
            ..shape
        };
        assert_eq!(plan(&MeterConfig::default(), &waiting).rows, 1);
        // No meters at all: no header lines but the one a frame needs.
        let none = MeterConfig {
            left: vec![],
            right: vec![],
            below: vec![],
            ..MeterConfig::default()
        };
        assert_eq!(plan(&none, &shape).rows, 0);
    }
}
