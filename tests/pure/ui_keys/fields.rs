//! The fields screen (`F`/`s`/`F2`): columns shown, hidden and moved, the
//! sort picked, and all of it carried by the settings `W` saves.

use crossterm::event::KeyCode;
use nettop::output::columns::ProcColumn as Column;
use nettop::ui::settings::Settings;
use nettop::ui::state::{Action, Mode, Scheme};

use crate::ui_keys::{app, ch, key};

/// The fields screen's line of `c`.
fn line_of(a: &nettop::ui::state::App, c: Column) -> usize {
    a.fields().iter().position(|f| f.column == c).unwrap()
}

fn go_to(a: &mut nettop::ui::state::App, c: Column) {
    key(a, KeyCode::Home);
    for _ in 0..line_of(a, c) {
        key(a, KeyCode::Down);
    }
}

#[test]
fn space_hides_and_shows_a_column_and_command_stays() {
    let mut a = app(30);
    ch(&mut a, "F");
    go_to(&mut a, Column::User);
    key(&mut a, KeyCode::Char(' '));
    assert!(!a.columns.contains(&Column::User));
    assert!(matches!(a.mode, Mode::Fields { moving: false, .. }));
    // Hidden columns come after the shown ones, COMMAND last.
    let f = a.fields();
    assert_eq!(f.last().unwrap().column, Column::Command);
    assert!(!f[line_of(&a, Column::User)].shown);
    assert!(f[..line_of(&a, Column::User)].iter().all(|f| f.shown));
    // COMMAND cannot be hidden.
    go_to(&mut a, Column::Command);
    key(&mut a, KeyCode::Char(' '));
    assert!(a.fields().last().unwrap().shown);
    // Shown again, it is the last of the shown ones.
    go_to(&mut a, Column::User);
    key(&mut a, KeyCode::Char('d'));
    assert_eq!(a.columns.last(), Some(&Column::User));
}

#[test]
fn right_takes_a_column_and_up_down_move_it() {
    let mut a = app(30);
    let before = a.columns.clone();
    ch(&mut a, "F");
    go_to(&mut a, Column::Stolen);
    let at = line_of(&a, Column::Stolen);
    key(&mut a, KeyCode::Right);
    assert!(matches!(a.mode, Mode::Fields { moving: true, .. }));
    key(&mut a, KeyCode::Up);
    key(&mut a, KeyCode::Up);
    key(&mut a, KeyCode::Left);
    assert_eq!(
        a.mode,
        Mode::Fields {
            at: at - 2,
            moving: false
        }
    );
    assert_eq!(a.columns[at - 2], Column::Stolen);
    assert_eq!(a.columns[at - 1], before[at - 2]);
    assert_eq!(a.columns.len(), before.len());
    // Moving never passes the first line.
    key(&mut a, KeyCode::Right);
    for _ in 0..50 {
        key(&mut a, KeyCode::Up);
    }
    assert_eq!(a.columns[0], Column::Stolen);
}

#[test]
fn enter_sorts_and_closes_s_sorts_and_stays() {
    let mut a = app(30);
    ch(&mut a, "F");
    go_to(&mut a, Column::NetRx);
    ch(&mut a, "s");
    assert_eq!(a.sort.column, Column::NetRx);
    assert!(matches!(a.mode, Mode::Fields { .. }));
    go_to(&mut a, Column::Stolen);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.sort.column, Column::Stolen);
    assert_eq!(a.mode, Mode::Normal);
}

#[test]
fn sort_keys_walk_the_shown_columns_only() {
    let mut a = app(30);
    a.apply_settings(&Settings {
        columns: Some(vec![Column::Pid, Column::Stolen, Column::True]),
        sort: Some(Column::Stolen),
        ..Settings::default()
    });
    ch(&mut a, ">");
    assert_eq!(a.sort.column, Column::True);
    ch(&mut a, ">");
    assert_eq!(a.sort.column, Column::Command);
    ch(&mut a, ">");
    assert_eq!(a.sort.column, Column::Command);
    ch(&mut a, "<<<<");
    assert_eq!(a.sort.column, Column::Pid);
}

#[test]
fn w_hands_over_what_is_on_screen_and_it_comes_back() {
    let mut a = app(30);
    ch(&mut a, "2VcZ");
    ch(&mut a, "F");
    go_to(&mut a, Column::Gap);
    key(&mut a, KeyCode::Char(' '));
    key(&mut a, KeyCode::Esc);
    ch(&mut a, "R");
    let Action::SaveSettings(s) = key(&mut a, KeyCode::Char('W')) else {
        panic!("W did not ask to save");
    };
    assert_eq!(s.color_scheme, Some(Scheme::Light));
    assert!(!s.columns.as_ref().unwrap().contains(&Column::Gap));
    let mut b = app(30);
    b.apply_settings(&s);
    assert_eq!(b.settings(), *s);
    assert_eq!(b.view, a.view);
    assert_eq!(b.columns, a.columns);
    assert_eq!(b.sort, a.sort);
    assert!(b.forest && b.cmdline);
}
