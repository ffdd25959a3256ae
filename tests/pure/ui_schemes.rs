//! Colour schemes (`Z`): the marks keep their meaning in every scheme, the
//! light scheme avoids the colours that wash out on a white background,
//! and mono and NO_COLOR draw no colour at all.

use std::collections::BTreeSet;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use nettop::ui::state::{App, Options, Scheme, Theme};
use nettop::ui::{fixtures, render};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};

fn busy(theme: Theme) -> App {
    let mut a = App::new(Options {
        theme,
        width: 140,
        height: 30,
        ..Options::default()
    });
    a.add_users(fixtures::users());
    a.push_frame(fixtures::busy_host());
    a
}

/// Every foreground colour on screen, and whether anything is bold.
fn colours(a: &App) -> (BTreeSet<String>, bool) {
    let mut t = Terminal::new(TestBackend::new(140, 30)).unwrap();
    t.draw(|f| render::draw(f, a)).unwrap();
    let buf = t.backend().buffer();
    let mut fg = BTreeSet::new();
    let mut bold = false;
    for c in buf.content() {
        if c.fg != Color::Reset {
            fg.insert(format!("{:?}", c.fg));
        }
        bold |= c.modifier.contains(Modifier::BOLD);
    }
    (fg, bold)
}

#[test]
fn each_scheme_keeps_the_marks_in_its_own_colours() {
    let (dark, _) = colours(&busy(Theme::default()));
    assert!(dark.contains("Yellow") && dark.contains("Red"), "{dark:?}");
    let (light, _) = colours(&busy(Theme::default().with_scheme(Scheme::Light)));
    assert!(light.contains("Red"), "stolen stays red: {light:?}");
    for washed in ["Yellow", "Cyan"] {
        assert!(
            !light.contains(washed),
            "{washed} on a light background: {light:?}"
        );
    }
    let (mono, bold) = colours(&busy(Theme::mono()));
    assert!(mono.is_empty(), "{mono:?}");
    assert!(bold, "mono marks with attributes");
}

#[test]
fn no_color_wins_over_the_scheme_and_z_cycles() {
    let no_color = Theme {
        scheme: Scheme::Light,
        no_color: true,
    };
    let (fg, _) = colours(&busy(no_color));
    assert!(fg.is_empty(), "{fg:?}");
    let mut a = busy(Theme::default());
    let z = Event::Key(KeyEvent::new(KeyCode::Char('Z'), KeyModifiers::NONE));
    let mut seen = Vec::new();
    for _ in 0..3 {
        a.handle_event(&z);
        seen.push(a.theme.scheme);
    }
    assert_eq!(seen, [Scheme::Light, Scheme::Mono, Scheme::Default]);
}
