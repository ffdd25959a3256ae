//! Under the cgroup table (`C`): who robs whom between cgroups, pod × pod.
//! Each line is NET_RX time that ran in the victim cgroup's tasks
//! delivering to the beneficiary cgroup's sockets, largest first
//! (`Frame::traffic`, bounded by the model). Drawn only when the whole
//! cgroup table fits above it, so it never pushes a row off the screen.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table};

use crate::model::frame::Frame;
use crate::model::traffic::CgroupPair;
use crate::output::format::{fmt_pct, fmt_rate};
use crate::output::traffic::MIN_PAIR_PCT;
use crate::ui::style::Sty;

/// Pairs shown at most.
pub const MAX_LINES: usize = 6;

/// The pairs to show: two different cgroups, largest first.
pub fn pairs(f: &Frame) -> Vec<&CgroupPair> {
    f.traffic.as_ref().map_or_else(Vec::new, |t| {
        t.cgroup_pairs
            .iter()
            .filter(|p| p.victim_cgroup != p.beneficiary_cgroup && p.pct >= MIN_PAIR_PCT)
            .take(MAX_LINES)
            .collect()
    })
}

/// Lines the block takes for `n` pairs: a blank, the header, the pairs.
pub fn height(n: usize) -> u16 {
    if n == 0 { 0 } else { (n + 2) as u16 }
}

pub fn draw(f: &mut TermFrame, pairs: &[&CgroupPair], s: &Sty, area: Rect) {
    let name_w = (area.width.saturating_sub(22) / 2).min(44);
    let widths = [
        Constraint::Length(name_w),
        Constraint::Length(name_w),
        Constraint::Length(8),
        Constraint::Length(9),
    ];
    let header = Row::new(vec![
        Cell::from(Span::styled("VICTIM (its tasks paid)", s.header())),
        Cell::from(Span::styled("ROBBED BY (whose sockets)", s.header())),
        Cell::from(Span::styled("NET_RX%", s.header())),
        Cell::from(Span::styled("PKT/s", s.header())),
    ])
    .top_margin(1);
    let rows: Vec<Row> = pairs
        .iter()
        .map(|p| {
            Row::new(vec![
                Cell::from(p.victim_name.clone()),
                Cell::from(p.beneficiary_name.clone()),
                Cell::from(Span::styled(format!("{:>7}", fmt_pct(p.pct)), s.net_rx())),
                Cell::from(format!("{:>9}", fmt_rate(p.pkts_per_s))),
            ])
        })
        .collect();
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
}
