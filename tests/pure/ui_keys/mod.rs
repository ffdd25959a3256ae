//! Key and mouse handling: event → App state, no terminal involved.
//!
//! One binary: this file holds what each key and click does; `help` checks
//! the help overlay lists exactly the keys that do something; `selection`
//! where the cursor goes when the rows re-sort under it.

mod detail;
mod fields;
mod help;
mod selection;

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use nettop::output::columns::ProcColumn as Column;
use nettop::ui::fixtures;
use nettop::ui::rows::View;
use nettop::ui::rows::processes::Src;
use nettop::ui::state::{Action, App, Mode, Options};

fn app(h: u16) -> App {
    let mut a = App::new(Options {
        width: 120,
        height: h,
        ..Options::default()
    });
    a.add_users(fixtures::users());
    a.push_frame(fixtures::busy_host());
    a
}

fn key(a: &mut App, c: KeyCode) -> Action {
    a.handle_event(&Event::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

fn ch(a: &mut App, s: &str) {
    for c in s.chars() {
        key(a, KeyCode::Char(c));
    }
}

fn comms(a: &App) -> Vec<String> {
    a.rows
        .iter()
        .map(|r| a.task(r.src).unwrap().comm.clone())
        .collect()
}

fn true_pcts(a: &App) -> Vec<f64> {
    a.rows
        .iter()
        .map(|r| a.task(r.src).unwrap().true_pct)
        .collect()
}

fn selected_comm(a: &App) -> String {
    a.selected_task().unwrap().comm.clone()
}

#[test]
fn view_switch_with_tab_backtab_and_digits() {
    let mut a = app(30);
    assert_eq!(a.view, View::Processes);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.view, View::Cpus);
    key(&mut a, KeyCode::BackTab);
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.view, View::Pinning);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.view, View::Processes);
    for (c, v) in ['1', '2', '3', '4', '5'].into_iter().zip(View::ALL) {
        key(&mut a, KeyCode::Char(c));
        assert_eq!(a.view, v);
    }
}

#[test]
fn sort_moves_between_columns_and_reverses() {
    let mut a = app(30);
    assert_eq!(a.sort.column, Column::Top);
    let pos = |a: &App| comms(a).iter().position(|c| c == "openssl").unwrap();
    assert_eq!(pos(&a), 1); // 98 % in top's eyes, after vpp's 3 threads
    key(&mut a, KeyCode::Char('>'));
    assert_eq!(a.sort.column, Column::OnCpu);
    key(&mut a, KeyCode::Char('>'));
    assert_eq!(a.sort.column, Column::True);
    assert!(a.sort.descending);
    // By what it really got, vpp is far ahead of openssl.
    assert_eq!(comms(&a)[0], "vpp_main");
    key(&mut a, KeyCode::Char('>'));
    assert_eq!(a.sort.column, Column::Gap);
    assert_eq!(pos(&a), 0); // what top gets most wrong
    key(&mut a, KeyCode::Char('<'));
    let trues = true_pcts(&a);
    assert!(trues.windows(2).all(|w| w[0] >= w[1]));
    key(&mut a, KeyCode::Char('R'));
    assert!(!a.sort.descending);
    let trues = true_pcts(&a);
    assert!(trues.windows(2).all(|w| w[0] <= w[1]));
    // Past the left end it stays on the first column.
    for _ in 0..20 {
        key(&mut a, KeyCode::Char('<'));
    }
    assert_eq!(a.sort.column, Column::Pid);
    assert!(!a.sort.descending); // PID: ascending like top
    for _ in 0..40 {
        key(&mut a, KeyCode::Char('>'));
    }
    assert_eq!(a.sort.column, Column::Command);
}

/// `M` sorts by RES, largest first, as in htop and top: whichever column
/// the sort was on, and kernel threads (no memory) last; `R` reverses.
#[test]
fn m_sorts_by_resident_memory() {
    let mut a = app(60);
    key(&mut a, KeyCode::Char('<'));
    key(&mut a, KeyCode::Char('M'));
    assert_eq!(a.sort.column, Column::Res);
    assert!(a.sort.descending);
    let res: Vec<Option<u64>> = a
        .rows
        .iter()
        .map(|r| a.task(r.src).unwrap().res_bytes)
        .collect();
    assert!(res.windows(2).all(|w| w[0] >= w[1]), "{res:?}");
    assert!(res[0].is_some() && res.last() == Some(&None), "{res:?}");
    // Again: still RES, still largest first (a sort key, not a toggle).
    key(&mut a, KeyCode::Char('M'));
    assert_eq!((a.sort.column, a.sort.descending), (Column::Res, true));
    key(&mut a, KeyCode::Char('R'));
    assert!(!a.sort.descending);
}

#[test]
fn sort_picker_picks_stolen() {
    let mut a = app(30);
    key(&mut a, KeyCode::Char('F'));
    assert!(matches!(a.mode, Mode::Fields { .. }));
    key(&mut a, KeyCode::Home);
    // PID, USER, PRI, NI, S, TOP%, ONCPU%, TRUE%, GAP, STOLEN%.
    for _ in 0..9 {
        key(&mut a, KeyCode::Down);
    }
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.mode, Mode::Normal);
    assert_eq!(a.sort.column, Column::Stolen);
    assert_eq!(comms(&a)[0], "openssl");
    // Esc leaves the sort alone.
    key(&mut a, KeyCode::Char('F'));
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.sort.column, Column::Stolen);
    // Sorting by command is ascending.
    key(&mut a, KeyCode::Char('F'));
    key(&mut a, KeyCode::End);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.sort.column, Column::Command);
    let c = comms(&a);
    let mut sorted = c.clone();
    sorted.sort();
    assert_eq!(c, sorted);
}

#[test]
fn filter_by_command_user_and_pid() {
    let mut a = app(30);
    let all = a.rows.len();
    key(&mut a, KeyCode::Char('/'));
    ch(&mut a, "NGI");
    // Applied as it is typed (htop's), before Enter.
    assert_eq!(comms(&a), vec!["nginx"; 4]);
    ch(&mut a, "NX");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.filter, "NGINX");
    assert_eq!(comms(&a), vec!["nginx"; 4]);
    // By user name.
    key(&mut a, KeyCode::Char('/'));
    for _ in 0..5 {
        key(&mut a, KeyCode::Backspace);
    }
    assert_eq!(a.rows.len(), all, "an empty filter lists everything");
    ch(&mut a, "postgres");
    key(&mut a, KeyCode::Enter);
    assert_eq!(comms(&a), vec!["postgres"]);
    // By PID.
    key(&mut a, KeyCode::Char('/'));
    for _ in 0..8 {
        key(&mut a, KeyCode::Backspace);
    }
    ch(&mut a, "5001");
    key(&mut a, KeyCode::Enter);
    assert_eq!(comms(&a), vec!["openssl"]);
    // Esc in the prompt clears the filter; so does Esc in normal mode.
    key(&mut a, KeyCode::Char('/'));
    ch(&mut a, "zzz");
    assert!(a.rows.is_empty());
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.filter, "");
    assert_eq!(a.rows.len(), all);
    key(&mut a, KeyCode::Char('/'));
    ch(&mut a, "5001");
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.filter, "");
    assert_eq!(a.rows.len(), all);
    // Nothing matches: empty list, selection clamps to 0, no panic.
    key(&mut a, KeyCode::Char('/'));
    ch(&mut a, "no-such-task");
    key(&mut a, KeyCode::Enter);
    assert!(a.rows.is_empty());
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::End);
    assert_eq!(a.pos[0].selected, 0);
    assert!(a.selected_task().is_none());
}

#[test]
fn pause_holds_frames_back_until_resumed() {
    let mut a = app(30);
    assert_eq!(a.frame.as_ref().unwrap().seq, 1000);
    key(&mut a, KeyCode::Char('p'));
    assert!(a.paused);
    a.push_frame(fixtures::busy_host_at(5));
    assert_eq!(a.frame.as_ref().unwrap().seq, 1000);
    key(&mut a, KeyCode::Char(' '));
    assert!(!a.paused);
    assert_eq!(a.frame.as_ref().unwrap().seq, 1005);
}

#[test]
fn scrolling_stops_at_both_ends() {
    // 12 - 2 header meters - tabs - title - table header - status.
    let h = 12;
    let mut a = app(h);
    let len = a.rows.len();
    let vp = a.viewport(View::Processes);
    assert_eq!((a.header_rows(), vp), (2, 6));
    key(&mut a, KeyCode::Up);
    key(&mut a, KeyCode::PageUp);
    assert_eq!(a.pos[0], Default::default());
    key(&mut a, KeyCode::PageDown);
    assert_eq!(a.pos[0].selected, vp);
    assert_eq!(a.pos[0].offset, 1); // selection stays on screen
    for _ in 0..100 {
        key(&mut a, KeyCode::Down);
    }
    assert_eq!(a.pos[0].selected, len - 1);
    assert_eq!(a.pos[0].offset, len - vp);
    key(&mut a, KeyCode::PageDown);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.pos[0].selected, len - 1);
    key(&mut a, KeyCode::Home);
    assert_eq!(a.pos[0], Default::default());
    key(&mut a, KeyCode::End);
    assert_eq!(a.pos[0].selected, len - 1);
    // Shrinking the terminal keeps the selection visible.
    a.resize(120, 9);
    let vp = a.viewport(View::Processes);
    assert!(a.pos[0].offset + vp > a.pos[0].selected);
    // Text views scroll their offset and stop at the end.
    key(&mut a, KeyCode::Char('4'));
    for _ in 0..500 {
        key(&mut a, KeyCode::Down);
    }
    let n = a.topo_lines.len();
    assert_eq!(
        a.pos[3].offset,
        n.saturating_sub(a.viewport(View::Topology))
    );
    key(&mut a, KeyCode::Home);
    assert_eq!(a.pos[3].offset, 0);
    // CPUs list: 16 rows.
    key(&mut a, KeyCode::Char('2'));
    key(&mut a, KeyCode::End);
    assert_eq!(a.pos[1].selected, 15);
}

#[test]
fn threads_toggle_and_tree() {
    let mut a = app(60);
    let procs = a.rows.len();
    assert!(a.rows.iter().all(|r| matches!(r.src, Src::Proc(_))));
    key(&mut a, KeyCode::Char('H'));
    assert!(a.threads);
    assert!(a.rows.iter().all(|r| matches!(r.src, Src::Thread(_))));
    assert_eq!(a.rows.len(), procs + 2); // vpp has 2 extra threads
    key(&mut a, KeyCode::Char('H'));
    key(&mut a, KeyCode::Char('t'));
    assert!(a.tree);
    let vpp = a
        .rows
        .iter()
        .position(|r| a.task(r.src).unwrap().comm == "vpp_main" && r.depth == 0)
        .unwrap();
    assert_eq!(a.rows[vpp + 1].depth, 1);
    assert_eq!(a.rows[vpp + 3].depth, 1);
    assert!(a.rows[vpp + 3].last);
}

#[test]
fn quit_help_and_ctrl_c() {
    let mut a = app(30);
    assert_eq!(key(&mut a, KeyCode::Char('?')), Action::None);
    assert_eq!(a.mode, Mode::Help(0));
    // q closes help instead of quitting.
    assert_eq!(key(&mut a, KeyCode::Char('q')), Action::None);
    assert_eq!(a.mode, Mode::Normal);
    assert_eq!(key(&mut a, KeyCode::Char('q')), Action::Quit);
    let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    key(&mut a, KeyCode::Char('/'));
    assert_eq!(a.handle_event(&ctrl_c), Action::Quit);
}

#[test]
fn delay_prompt_validates() {
    let mut a = app(30);
    key(&mut a, KeyCode::Char('d'));
    ch(&mut a, "2.5");
    assert_eq!(key(&mut a, KeyCode::Enter), Action::SetDelay(2.5));
    assert_eq!(a.delay, 2.5);
    key(&mut a, KeyCode::Char('d'));
    ch(&mut a, "99999");
    assert_eq!(key(&mut a, KeyCode::Enter), Action::None);
    assert_eq!(a.delay, 2.5);
    assert!(a.message.as_deref().unwrap().contains("not a delay"));
    // Letters are not accepted into the number.
    key(&mut a, KeyCode::Char('d'));
    ch(&mut a, "x1");
    assert_eq!(a.mode, Mode::Delay("1".into()));
}

#[test]
fn mouse_click_selects_and_wheel_scrolls() {
    let mut a = app(20);
    let click = |row, column| {
        Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    // Body rows start below the chrome (the header meters, the tabs, the
    // view's title) and the table header.
    let top = a.chrome_top() + 1;
    assert_eq!(top, a.header_rows() + 3);
    a.handle_event(&click(top + 2, 10));
    assert_eq!(a.pos[0].selected, 2);
    let wheel = Event::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: 10,
        row: 10,
        modifiers: KeyModifiers::NONE,
    });
    a.handle_event(&wheel);
    assert_eq!(a.pos[0].selected, 5);
    // Clicking a tab switches view; clicking the header row does nothing.
    a.handle_event(&click(a.header_rows(), 15));
    assert_eq!(a.view, View::Cpus);
    a.handle_event(&click(top - 1, 15));
    assert_eq!(a.pos[1].selected, 0);
    a.handle_event(&click(top + 5, 15));
    assert_eq!(a.pos[1].selected, 5);
}

#[test]
fn replay_keys_seek_within_bounds() {
    let mut a = app(30);
    assert_eq!(key(&mut a, KeyCode::Char(']')), Action::None);
    assert!(a.message.is_some()); // explains the key outside replay
    a.set_replay(5, 20, false);
    assert_eq!(key(&mut a, KeyCode::Char(']')), Action::Seek(6));
    assert_eq!(key(&mut a, KeyCode::Char('[')), Action::Seek(4));
    assert_eq!(key(&mut a, KeyCode::Char('{')), Action::Seek(0));
    assert_eq!(key(&mut a, KeyCode::Char('}')), Action::Seek(15));
    a.set_replay(19, 20, false);
    assert_eq!(key(&mut a, KeyCode::Char('}')), Action::None); // already at the end
    // Space plays; at the end it restarts from the beginning.
    assert_eq!(key(&mut a, KeyCode::Char(' ')), Action::Seek(0));
    assert!(a.replay.unwrap().playing);
    assert!(!a.paused);
}

#[test]
fn replay_jump_to_time_prompt() {
    let mut a = app(30);
    // Outside replay `T` opens nothing.
    assert_eq!(key(&mut a, KeyCode::Char('T')), Action::None);
    assert_eq!(a.mode, Mode::Normal);
    a.set_replay(5, 20, false);
    let now = a.frame.as_ref().unwrap().unix_ms;
    key(&mut a, KeyCode::Char('T'));
    ch(&mut a, "+90s");
    assert_eq!(a.mode, Mode::Goto("+90s".into()));
    assert_eq!(key(&mut a, KeyCode::Enter), Action::SeekTime(now + 90_000));
    assert_eq!(a.mode, Mode::Normal);
    // Garbage is refused with a message, nothing is sent.
    key(&mut a, KeyCode::Char('T'));
    ch(&mut a, "7pm");
    assert_eq!(key(&mut a, KeyCode::Enter), Action::None);
    assert!(a.message.as_deref().unwrap_or("").contains("HH:MM"));
    // Esc cancels.
    key(&mut a, KeyCode::Char('T'));
    ch(&mut a, "12:00");
    assert_eq!(key(&mut a, KeyCode::Esc), Action::None);
    assert_eq!(a.mode, Mode::Normal);
}

#[test]
fn goto_times_parse() {
    use nettop::ui::prompt::parse_goto;
    // 2026-11-22 13:59:19.500 UTC
    let now = 1_795_355_959_500;
    let day = now / 86_400_000 * 86_400_000;
    assert_eq!(
        parse_goto("12:30", now),
        Ok(day + (12 * 3600 + 30 * 60) * 1000)
    );
    assert_eq!(parse_goto("00:00:05", now), Ok(day + 5_000));
    assert_eq!(parse_goto("-10m", now), Ok(now - 600_000));
    assert_eq!(parse_goto("+1h", now), Ok(now + 3_600_000));
    assert_eq!(parse_goto("+1.5", now), Ok(now + 1_500));
    assert_eq!(parse_goto("+1h30m", now), Ok(now + 5_400_000));
    assert_eq!(parse_goto("-500ms", now), Ok(now - 500));
    // The one time syntax: +0 is "here", as --begin +0s is the start.
    assert_eq!(parse_goto("+0s", now), Ok(now));
    assert_eq!(
        parse_goto("-99999h", now),
        Ok(now.saturating_sub(99_999 * 3_600_000))
    );
    for bad in ["", "24:00", "12:60", "1:2:3:4", "+", "+5x", "noon", "-x"] {
        assert!(parse_goto(bad, now).is_err(), "{bad} accepted");
    }
}

/// Thread rows cost the collector per thread: it is asked for them only
/// while the thread list or the tree is shown.
#[test]
fn thread_rows_are_requested_only_while_a_view_needs_them() {
    let mut a = app(30);
    assert_eq!(key(&mut a, KeyCode::Char('H')), Action::ThreadRows(true));
    assert_eq!(key(&mut a, KeyCode::Char('t')), Action::ThreadRows(true));
    assert_eq!(key(&mut a, KeyCode::Char('H')), Action::ThreadRows(true));
    assert_eq!(key(&mut a, KeyCode::Char('t')), Action::ThreadRows(false));
}
