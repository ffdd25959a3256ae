//! The host's name and the frame's time (UTC), htop's Hostname and Clock
//! meters in one: which machine, and when, a screen or a replay shows.

use ratatui::text::{Line, Span};

use super::layout::compact_priority;
use super::{Item, Meter, bold, first_fit};
use crate::model::frame::Frame;
use crate::output::format::hms;
use crate::ui::style::Sty;

pub fn host<'a>(f: &Frame, w: u16, s: &Sty) -> Vec<Line<'a>> {
    let name = || Span::raw(f.host_label());
    let time = || bold(hms(f.unix_ms));
    first_fit(
        vec![
            vec![
                Span::styled("Host: ", s.accent()),
                name(),
                Span::raw(" "),
                time(),
            ],
            vec![name(), Span::raw(" "), time()],
            vec![time()],
        ],
        w,
    )
}

/// "rx-2s-16c 12:00:00Z".
pub fn host_item<'a>(f: &Frame) -> Item<'a> {
    Item::new(
        vec![Span::raw(format!("{} {}", f.host_label(), hms(f.unix_ms)))],
        compact_priority(Meter::Host),
    )
}
