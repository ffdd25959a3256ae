//! The help overlay against the key handling: every key that changes
//! something is listed, and every listed key changes something.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use nettop::ui::fixtures;
use nettop::ui::state::{Action, App, Mode};

use crate::ui_keys::{app, key};

/// column of each line above the "!" legend, names turned back into keys.
fn keys_in_drawn_help(a: &App) -> Vec<KeyEvent> {
    use ratatui::{Terminal, backend::TestBackend};
    let mut t = Terminal::new(TestBackend::new(120, 70)).unwrap();
    t.draw(|f| nettop::ui::render::draw(f, a)).unwrap();
    let screen = t.backend().to_string();
    let mut keys = Vec::new();
    // The box's left edge: the column of its top-left corner.
    let mut left: Option<usize> = None;
    for line in screen.lines() {
        let chars: Vec<char> = line.chars().collect();
        let Some(x) = left else {
            if line.contains("nettop keys") {
                left = chars.iter().position(|c| *c == '┌');
            }
            continue;
        };
        // Each row is "│ label(16) help │".
        let label: String = chars.iter().skip(x + 2).take(16).collect();
        let label = label.trim();
        if label.starts_with('!') || label.is_empty() {
            break;
        }
        if label == "mouse" {
            continue;
        }
        for name in label.split_whitespace() {
            keys.push(key_named(name));
        }
    }
    assert!(
        !keys.is_empty(),
        "no key lines found in the help:\n{screen}"
    );
    keys
}

fn key_named(name: &str) -> KeyEvent {
    let plain = |c| KeyEvent::new(c, KeyModifiers::NONE);
    if let Some(c) = name.strip_prefix("Ctrl-") {
        let c = c.chars().next().unwrap().to_ascii_lowercase();
        return KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    }
    match name {
        "Space" => plain(KeyCode::Char(' ')),
        "Up" => plain(KeyCode::Up),
        "Down" => plain(KeyCode::Down),
        "PgUp" => plain(KeyCode::PageUp),
        "PgDn" => plain(KeyCode::PageDown),
        "Home" => plain(KeyCode::Home),
        "End" => plain(KeyCode::End),
        "Tab" => plain(KeyCode::Tab),
        "Shift-Tab" => plain(KeyCode::BackTab),
        "Esc" => plain(KeyCode::Esc),
        "Enter" => plain(KeyCode::Enter),
        "Left" => plain(KeyCode::Left),
        "Right" => plain(KeyCode::Right),
        n if n.len() > 1 && n.starts_with('F') => plain(KeyCode::F(n[1..].parse().unwrap())),
        n if n.chars().count() == 1 => plain(KeyCode::Char(n.chars().next().unwrap())),
        n => panic!("the help names a key no keyboard has: {n:?}"),
    }
}

/// Everything a keyboard sends that the views could react to.
fn every_key() -> Vec<KeyEvent> {
    let mut v: Vec<KeyEvent> = (' '..='~')
        .map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
        .collect();
    v.extend(('a'..='z').map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)));
    v.extend((1..=12).map(|n| KeyEvent::new(KeyCode::F(n), KeyModifiers::NONE)));
    for c in [
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Esc,
        KeyCode::Enter,
        KeyCode::Backspace,
        KeyCode::Delete,
        KeyCode::Insert,
    ] {
        v.push(KeyEvent::new(c, KeyModifiers::NONE));
    }
    v
}

/// Two states in which every bound key has something to do: live on the
/// Processes view with the cursor mid-list and a followed PID, and a
/// replay mid-recording on the CPUs view.
fn starting_states() -> Vec<App> {
    let mut live = app(30);
    for _ in 0..3 {
        key(&mut live, KeyCode::Down);
    }
    key(&mut live, KeyCode::Char('f'));
    assert!(live.follow.is_some());
    // Any key clears a note; that is not a key doing something.
    live.message = None;
    let mut replay = app(30);
    replay.set_replay(5, 10, false);
    key(&mut replay, KeyCode::Char('2'));
    key(&mut replay, KeyCode::Down);
    // Processes grouped by cgroup, cursor on a group: Enter and the arrows
    // open and close it.
    let mut grouped = app(30);
    grouped.push_frame(fixtures::busy_host_in_cgroups());
    key(&mut grouped, KeyCode::Char('C'));
    assert!(grouped.group_cgroup);
    let mut opened = app(30);
    opened.push_frame(fixtures::busy_host_in_cgroups());
    key(&mut opened, KeyCode::Char('C'));
    key(&mut opened, KeyCode::Enter);
    assert!(!opened.expanded.is_empty());
    vec![live, replay, grouped, opened]
}

fn state(a: &App) -> String {
    let mut open: Vec<u64> = a.expanded.iter().copied().collect();
    open.sort_unstable();
    format!(
        "{:?} {:?} {:?}",
        (
            a.view, &a.mode, a.sort, a.threads, a.tree, &a.filter, a.follow, a.paused, a.delay,
            a.replay, &a.message, a.pos,
        ),
        (a.group_cgroup, open),
        (a.forest, a.detail, &a.columns, a.theme, a.cmdline),
    )
}

#[test]
fn help_lists_exactly_the_keys_that_do_something() {
    let mut shown = app(30);
    shown.mode = Mode::Help(0);
    let help = keys_in_drawn_help(&shown);
    let reacts = |k: &KeyEvent| {
        starting_states().into_iter().any(|mut a| {
            let before = state(&a);
            let action = a.handle_event(&Event::Key(*k));
            action != Action::None || state(&a) != before
        })
    };
    let handled: Vec<KeyEvent> = every_key().into_iter().filter(reacts).collect();
    let name = |k: &KeyEvent| {
        format!(
            "{:?}{}",
            k.code,
            if k.modifiers.is_empty() { "" } else { "+Ctrl" }
        )
    };
    let missing: Vec<String> = handled
        .iter()
        .filter(|k| !help.contains(k))
        .map(name)
        .collect();
    let dead: Vec<String> = help
        .iter()
        .filter(|k| !handled.contains(k))
        .map(name)
        .collect();
    assert!(
        missing.is_empty(),
        "keys handled but not in the help: {missing:?}"
    );
    assert!(
        dead.is_empty(),
        "keys in the help that do nothing: {dead:?}"
    );
    assert!(handled.len() >= 30, "only {} keys react", handled.len());
}

/// The help on a 80x24 terminal is longer than the screen: the arrows
/// scroll it to its last line, and any other key closes it.
#[test]
fn help_scrolls_on_a_short_terminal() {
    use ratatui::{Terminal, backend::TestBackend};
    let draw = |a: &App| {
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| nettop::ui::render::draw(f, a)).unwrap();
        t.backend().to_string()
    };
    let mut a = app(24);
    a.resize(80, 24);
    key(&mut a, KeyCode::Char('?'));
    let top = draw(&a);
    assert!(top.contains("↑↓ scroll"), "{top}");
    assert!(!top.contains("wheel scrolls"), "{top}");
    for _ in 0..40 {
        key(&mut a, KeyCode::Down);
    }
    let bottom = draw(&a);
    assert!(bottom.contains("wheel scrolls"), "{bottom}");
    assert!(!bottom.contains("next / previous view"), "{bottom}");
    key(&mut a, KeyCode::Char('x'));
    assert_eq!(a.mode, Mode::Normal);
}
