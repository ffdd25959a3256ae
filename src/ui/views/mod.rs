//! One file per view, each holding the rows it derives from a Frame (built
//! by [`App::rebuild`](super::app::App::rebuild) when data or settings
//! change, never per draw), its one-line header and its draw function:
//!
//! | view | file |
//! |---|---|
//! | Processes | [`processes`] |
//! | Processes grouped by cgroup (`c`) | [`grouped`] |
//! | CPUs | [`cpus`] |
//! | Devices/NAPI | [`devices`] |
//! | Topology | [`topology`] |
//! | Pinning | [`pinning`] |
//!
//! Topology and Pinning are text views: lines made on the data thread
//! (they need I/O), scrolled and drawn by [`draw_text`].

pub mod cpus;
pub mod devices;
pub mod grouped;
pub mod pinning;
pub mod processes;
pub mod topology;

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use super::app::App;
use super::style::{Sty, fit};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Processes,
    Cpus,
    Devices,
    Topology,
    Pinning,
}

impl View {
    pub const ALL: [View; 5] = [
        View::Processes,
        View::Cpus,
        View::Devices,
        View::Topology,
        View::Pinning,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn title(self) -> &'static str {
        match self {
            View::Processes => "Processes",
            View::Cpus => "CPUs",
            View::Devices => "Devices/NAPI",
            View::Topology => "Topology",
            View::Pinning => "Pinning",
        }
    }

    /// Whether the body is a table with a header row (vs. plain text lines).
    pub fn has_table_header(self) -> bool {
        matches!(self, View::Processes | View::Cpus | View::Devices)
    }

    /// Text views scroll; list views move a selection.
    pub fn scrolls_only(self) -> bool {
        matches!(self, View::Topology | View::Pinning)
    }

    /// The dim line above the body: what the view shows and how to read it.
    pub(crate) fn header(self, app: &App) -> String {
        match self {
            View::Processes if app.group_cgroup => grouped::header(app),
            View::Processes => processes::header(app),
            View::Cpus => cpus::HEADER.into(),
            View::Devices => devices::HEADER.into(),
            View::Topology => topology::HEADER.into(),
            View::Pinning => pinning::HEADER.into(),
        }
    }

    pub(crate) fn draw(self, f: &mut TermFrame, app: &App, s: &Sty, area: Rect) {
        match self {
            View::Processes if app.group_cgroup => grouped::draw(f, app, s, area),
            View::Processes => processes::draw(f, app, s, area),
            View::Cpus => cpus::draw(f, app, s, area),
            View::Devices => devices::draw(f, app, s, area),
            View::Topology => draw_text(f, app, s, area, &app.topo_lines),
            View::Pinning => draw_text(f, app, s, area, &app.pin_lines),
        }
    }
}

/// The items of a table view that fit below its header row, from the
/// view's scroll offset, each with whether it is the selected one.
pub(crate) fn on_screen<T>(
    app: &App,
    view: View,
    area: Rect,
    items: impl IntoIterator<Item = T>,
) -> impl Iterator<Item = (T, bool)> {
    let pos = app.pos[view.index()];
    let visible = area.height.saturating_sub(1) as usize;
    items
        .into_iter()
        .enumerate()
        .skip(pos.offset)
        .take(visible)
        .map(move |(i, t)| (t, i == pos.selected))
}

/// A column of a fixed table: title, width, right-aligned (numbers).
pub(crate) type Col = (&'static str, u16, bool);

/// The header row and widths of a fixed table's columns that `keep`
/// admits (by index); the last column stretches over what is left.
pub(crate) fn table_head<'a>(
    cols: &[Col],
    keep: impl Fn(usize) -> bool,
    s: &Sty,
) -> (Row<'a>, Vec<Constraint>) {
    let kept = || cols.iter().enumerate().filter(|(i, _)| keep(*i));
    let header = Row::new(
        kept()
            .map(|(_, (t, w, r))| Cell::from(fit(t, *w as usize, *r)))
            .collect::<Vec<_>>(),
    )
    .style(s.header());
    let widths = kept()
        .map(|(i, c)| {
            if i == cols.len() - 1 {
                Constraint::Min(c.1)
            } else {
                Constraint::Length(c.1)
            }
        })
        .collect();
    (header, widths)
}

/// A table row, reversed when selected.
pub(crate) fn mark_selected<'a>(row: Row<'a>, selected: bool, s: &Sty) -> Row<'a> {
    if selected {
        row.style(s.selected())
    } else {
        row
    }
}

/// Text line kinds of the Topology/Pinning views (styled when drawn).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Heading,
    Normal,
    Warn,
    Note,
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
