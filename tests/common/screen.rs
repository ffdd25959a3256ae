//! The TUI drawn into ratatui's TestBackend from the deterministic
//! fixtures (src/ui/fixtures/), for the render tests: an App, keys pressed
//! into it, the screen as text, and snapshots in the crate's `snapshots/`
//! named by the test alone.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use nettop::ui::state::{App, Options, Theme};
use nettop::ui::{fixtures, render};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// An App on the fixtures' users, `color` or mono, before any frame.
pub fn app(w: u16, h: u16, color: bool) -> App {
    let mut a = App::new(Options {
        theme: if color {
            Theme::default()
        } else {
            Theme::mono()
        },
        width: w,
        height: h,
        ..Options::default()
    });
    a.add_users(fixtures::users());
    a
}

/// The busy host after 30 frames of history.
pub fn busy(w: u16, h: u16) -> App {
    let mut a = app(w, h, true);
    // A history so the sparklines have something to show.
    for t in 0..30 {
        a.push_frame(fixtures::busy_host_at(t));
    }
    a.push_frame(fixtures::busy_host());
    a
}

pub fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| render::draw(f, app)).unwrap();
    t
}

/// The screen as text, one quoted line per row.
pub fn screen(app: &App, w: u16, h: u16) -> String {
    draw(app, w, h).backend().to_string()
}

pub fn press(app: &mut App, c: KeyCode) {
    app.handle_event(&Event::Key(KeyEvent::new(c, KeyModifiers::NONE)));
}

/// Checks `value` against `snapshots/<name>.snap`.
pub fn snap(name: &str, value: impl AsRef<str>) {
    insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, value.as_ref());
    });
}
