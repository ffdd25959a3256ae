//! Drawing: `App` state → ratatui buffer. No I/O, no sorting, no lookups
//! beyond the rows on screen, so a frame costs the same with 50 or 5,000
//! tasks. The header meters are in [`super::meters`], the rest of the
//! chrome in [`super::chrome`], each view's body in [`super::views`].

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Layout};
use ratatui::widgets::Paragraph;

use super::state::{App, CHROME_BOTTOM, Mode};
use super::style::Sty;
use super::{chrome, meters, pickers, views};

pub fn draw(f: &mut TermFrame, app: &App) {
    let area = f.area();
    if chrome::too_small(f, area) {
        return;
    }
    let s = Sty(app.theme);
    let frame = app.frame.as_ref();
    let header_h = meters::height(&app.meters, frame, area.width, area.height);
    let [head, tabs, header, body, status] = Layout::vertical([
        Constraint::Length(header_h),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(CHROME_BOTTOM),
    ])
    .areas(area);
    meters::draw(f, frame, &app.meters, &s, head, area.height);
    f.render_widget(Paragraph::new(chrome::tab_line(app, &s)), tabs);
    f.render_widget(Paragraph::new(chrome::view_header(app, &s)), header);
    // The detail pane covers the list; the list is still built underneath.
    if views::detail::covers(app) {
        views::detail::draw(f, app, &s, body);
    } else {
        views::draw(f, app, &s, body);
    }
    chrome::draw_status(f, app, &s, status);
    match &app.mode {
        Mode::Help(off) => chrome::draw_help(f, app, &s, area, *off),
        Mode::Fields { at, moving } => chrome::draw_fields(f, app, &s, area, *at, *moving),
        Mode::Signal { target, at } => pickers::draw_signals(f, &s, area, target, *at),
        Mode::Affinity { target, cpus, at } => {
            pickers::draw_affinity(f, app, &s, area, (target, cpus, *at));
        }
        Mode::Users(at) => pickers::draw_users(f, app, &s, area, *at),
        _ => {}
    }
}
