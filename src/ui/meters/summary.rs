//! nettop's own meter, what its one summary line said: how many CPUs'
//! worth of time top misattributes (interrupt work charged to the tasks
//! it interrupted), the CPU shares averaged over the online CPUs (top's
//! `%Cpu(s)`), and the receive path's rates. Its items wrap as whole
//! words and, with fewer lines than they need, the least important are
//! left out: the misattributed CPUs last of all.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::pack::Slot;
use super::{Item, flow_items};
use crate::model::frame::Frame;
use crate::output::format::{fmt_pct, fmt_rate};
use crate::ui::style::{STOLEN_MARK_PCT, Sty, Theme};

/// The items, in the order they read.
pub fn items<'a>(f: &Frame, s: &Sty) -> Vec<Item<'a>> {
    let m = &f.summary;
    let stolen_style = if m.stolen_pct_total >= STOLEN_MARK_PCT {
        s.stolen()
    } else {
        Style::new()
    };
    let pct = |v: f64| format!("{}%", fmt_pct(v));
    vec![
        Item::new(
            vec![Span::styled(
                format!("top misattributes {:.2} CPUs", m.stolen_pct_total / 100.0),
                stolen_style,
            )],
            0,
        ),
        Item::new(
            vec![Span::raw(format!(
                "{} CPUs: us {} sy {} hi {}",
                m.cpus_online,
                pct(m.usr_pct),
                pct(m.sys_pct),
                pct(m.irq_pct)
            ))],
            3,
        )
        .group(),
        Item::new(
            vec![
                Span::styled(format!("si {}", pct(m.soft_pct)), s.net_rx()),
                Span::raw(format!(" id {} st {}", pct(m.idle_pct), pct(m.steal_pct))),
            ],
            4,
        ),
        Item::new(
            vec![Span::styled(
                format!("NET_RX {}/s", fmt_rate(m.net_rx_per_s)),
                s.net_rx(),
            )],
            1,
        )
        .group(),
        Item::new(
            vec![Span::raw(format!("pkts {}/s", fmt_rate(m.packets_per_s)))],
            2,
        ),
        Item::new(
            vec![Span::raw(format!(
                "polls {}/s",
                fmt_rate(m.napi_polls_per_s)
            ))],
            2,
        ),
        Item::new(
            vec![Span::raw(format!(
                "squeeze {}/s",
                fmt_rate(m.time_squeeze_per_s)
            ))],
            2,
        ),
    ]
}

/// The meter in `h` lines of `w`.
pub fn lines<'a>(f: &Frame, w: u16, h: u16, s: &Sty) -> Vec<Line<'a>> {
    flow_items(items(f, s), w, h)
}

/// The items' slots at their widest figures for `cpus` CPUs (all of
/// them misattributed, 99.9 %, 999.9k/s): what the layout plans lines
/// for, so the header keeps its height from frame to frame.
pub fn slots(cpus: usize) -> Vec<Slot> {
    let mut f = Frame::default();
    let m = &mut f.summary;
    m.cpus_online = u32::try_from(cpus).unwrap_or(u32::MAX);
    m.stolen_pct_total = cpus as f64 * 100.0;
    for v in [
        &mut m.usr_pct,
        &mut m.sys_pct,
        &mut m.irq_pct,
        &mut m.soft_pct,
        &mut m.idle_pct,
        &mut m.steal_pct,
    ] {
        *v = 99.9;
    }
    for v in [
        &mut m.net_rx_per_s,
        &mut m.packets_per_s,
        &mut m.napi_polls_per_s,
        &mut m.time_squeeze_per_s,
    ] {
        *v = 999_900.0;
    }
    items(&f, &Sty(Theme::default()))
        .iter()
        .map(|i| i.slot)
        .collect()
}
