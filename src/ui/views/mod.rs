//! Drawing, one file per view: each view's one-line header and its draw
//! function, over the rows [`super::rows`] derived from a Frame (built by
//! [`App::rebuild`](super::state::App::rebuild) when data or settings
//! change, never per draw):
//!
//! | view | file |
//! |---|---|
//! | Processes | [`processes`] |
//! | Processes grouped by cgroup (`C`) | [`cgroups`], with who robs whom under it ([`robbed`]) |
//! | CPUs | [`cpus`] |
//! | Devices/NAPI | [`devices`] |
//! | Topology | [`topology`] |
//! | Pinning | [`pinning`] |
//! | The detail pane over Processes (`Enter`) | [`detail`] |
//!
//! The table views share the helpers in `table.rs`. Topology and Pinning are
//! text views: lines made on the data thread (they need I/O), scrolled and
//! drawn by [`draw_text`].

pub mod cgroups;
pub mod cpus;
pub mod detail;
pub mod devices;
pub mod pinning;
pub mod processes;
mod robbed;
mod table;
pub mod topology;

use ratatui::Frame as TermFrame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::rows::{LineKind, View};
use super::state::App;
use super::style::Sty;

/// The dim line above the body: what the view shows and how to read it.
pub(crate) fn header(app: &App) -> String {
    match app.view {
        _ if detail::covers(app) => detail::header(app),
        View::Processes if app.group_cgroup => cgroups::header(app),
        View::Processes => processes::header(app),
        View::Cpus => cpus::HEADER.into(),
        View::Devices => devices::header(app),
        View::Topology => topology::HEADER.into(),
        View::Pinning => pinning::HEADER.into(),
    }
}

/// The body of the view on screen.
pub(crate) fn draw(f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
    match app.view {
        View::Processes if app.group_cgroup => cgroups::draw(f, app, s, area),
        View::Processes => processes::draw(f, app, s, area),
        View::Cpus => cpus::draw(f, app, s, area),
        View::Devices => devices::draw(f, app, s, area),
        View::Topology => draw_text(f, app, s, area, &app.topo_lines),
        View::Pinning => draw_text(f, app, s, area, &app.pin_lines),
    }
}

/// Draws a text view's lines from its scroll offset.
fn draw_text(f: &mut TermFrame, app: &App, s: &Sty, area: Rect, lines: &[(LineKind, String)]) {
    let off = app.pos[app.view.index()].offset;
    let text: Vec<Line> = lines
        .iter()
        .skip(off)
        .take(area.height as usize)
        .map(|(k, t)| {
            let st = match k {
                LineKind::Heading => s.accent(),
                LineKind::Normal => Style::new(),
                LineKind::Warn => s.warn(),
                LineKind::Note => s.dim(),
            };
            Line::from(Span::styled(t.as_str(), st))
        })
        .collect();
    f.render_widget(Paragraph::new(text), area);
}
