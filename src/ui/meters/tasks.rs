//! htop's Tasks meter: processes, their other threads, kernel threads
//! and the tasks runnable now, in the longest form its column fits.

use ratatui::text::{Line, Span};

use super::layout::compact_priority;
use super::{Item, Meter, bold, first_fit, na};
use crate::model::frame::Frame;
use crate::ui::style::Sty;

/// htop's counts: user processes, their threads besides the main ones,
/// kernel threads, and the tasks runnable now (`n/a` without the load
/// file).
fn counts(f: &Frame) -> (u32, u32, u32, Option<u32>) {
    let m = &f.summary;
    let procs = m.processes.saturating_sub(m.kthreads);
    let thr = m.tasks.saturating_sub(m.processes);
    let running = f.system.as_ref().and_then(|v| v.running);
    (procs, thr, m.kthreads, running)
}

pub fn tasks<'a>(f: &Frame, w: u16, s: &Sty) -> Vec<Line<'a>> {
    let (p, thr, k, r) = counts(f);
    let label = || Span::styled("Tasks: ", s.accent());
    let run = || match r {
        Some(r) => bold(r.to_string()),
        None => na(s),
    };
    first_fit(
        vec![
            vec![
                label(),
                bold(p.to_string()),
                Span::raw(", "),
                bold(thr.to_string()),
                Span::raw(" thr, "),
                bold(k.to_string()),
                Span::raw(" kthr; "),
                run(),
                Span::raw(" running"),
            ],
            vec![
                label(),
                bold(p.to_string()),
                Span::raw(", "),
                bold(thr.to_string()),
                Span::raw(" thr; "),
                run(),
                Span::raw(" running"),
            ],
            vec![
                label(),
                bold(p.to_string()),
                Span::raw("; "),
                run(),
                Span::raw(" run"),
            ],
            vec![label(), bold(p.to_string())],
        ],
        w,
    )
}

/// "Tasks: 61, 209 thr, 73 kthr; 1 running", one item.
pub fn tasks_item<'a>(f: &Frame, s: &Sty) -> Item<'a> {
    let line = tasks(f, u16::MAX, s).pop().unwrap_or_default();
    Item::new(line.spans, compact_priority(Meter::Tasks))
}
