//! Where the cursor goes when the rows re-sort under it: it keeps its row,
//! as in htop, unless `f` ties it to a task.

use crossterm::event::KeyCode;
use nettop::model::frame::Frame;
use nettop::ui::fixtures;
use nettop::ui::rows::View;
use nettop::ui::state::App;

use crate::ui_keys::{app, key, selected_comm};

/// Frame `tick` of the busy host with every process's TOP% and STOLEN%
/// rotated by three places per tick: consecutive frames sort differently
/// (by TOP%, the default) and no two processes tie.
fn reshuffled(tick: u64) -> Frame {
    let mut f = fixtures::busy_host_at(tick);
    f.processes.sort_by_key(|p| p.pid);
    let n = f.processes.len();
    for (k, p) in f.processes.iter_mut().enumerate() {
        let rank = ((k + 3 * tick as usize) % n) as f64;
        p.top_pct = 5.0 + rank * 7.0;
        p.stolen_pct = 1.0 + rank * 3.0;
    }
    f
}

fn selected_pid(a: &App) -> u32 {
    a.selected_task().unwrap().pid
}

#[test]
fn without_follow_the_cursor_keeps_its_row_while_tasks_move_under_it() {
    let mut a = app(30);
    a.push_frame(reshuffled(0));
    assert!(a.rows.len() > 3 + 1, "too few rows to re-sort");
    key(&mut a, KeyCode::Home);
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.pos[0].selected, 2);
    let mut pids = vec![selected_pid(&a)];
    for tick in 1..=10 {
        a.push_frame(reshuffled(tick));
        assert_eq!(
            a.pos[0].selected, 2,
            "frame {tick}: the cursor left its row"
        );
        pids.push(selected_pid(&a));
        assert_ne!(
            pids[pids.len() - 2],
            pids[pids.len() - 1],
            "frame {tick}: the same task under the cursor, so nothing re-sorted"
        );
    }
    assert_eq!(a.follow, None);
}

#[test]
fn with_follow_the_cursor_keeps_its_task_while_its_row_moves() {
    let mut a = app(30);
    a.push_frame(reshuffled(0));
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    let pid = selected_pid(&a);
    key(&mut a, KeyCode::Char('f'));
    assert_eq!(a.follow, Some(pid));
    let mut rows = vec![a.pos[0].selected];
    for tick in 1..=10 {
        a.push_frame(reshuffled(tick));
        assert_eq!(
            selected_pid(&a),
            pid,
            "frame {tick}: lost the followed task"
        );
        rows.push(a.pos[0].selected);
        assert_ne!(
            rows[rows.len() - 2],
            rows[rows.len() - 1],
            "frame {tick}: the followed task did not move, so nothing re-sorted"
        );
    }
    assert_eq!(a.follow, Some(pid));
    // A movement key lets go; from then on the row stays put again.
    key(&mut a, KeyCode::Up);
    assert_eq!(a.follow, None);
    let row = a.pos[0].selected;
    a.push_frame(reshuffled(11));
    assert_eq!(a.pos[0].selected, row);
}

/// As in htop, a new sort order keeps the cursor's row, or with `f` its task.
#[test]
fn a_sort_change_keeps_the_row_or_the_followed_task() {
    let mut a = app(30);
    while selected_comm(&a) != "iperf3" {
        key(&mut a, KeyCode::Down);
    }
    let row = a.pos[0].selected;
    key(&mut a, KeyCode::Char('<'));
    key(&mut a, KeyCode::Char('<')); // PID, ascending
    assert_eq!(a.pos[0].selected, row);
    assert_ne!(selected_comm(&a), "iperf3");
    // Back onto iperf3, and follow it through the sorts.
    while selected_comm(&a) != "iperf3" {
        key(&mut a, KeyCode::Down);
    }
    key(&mut a, KeyCode::Char('f'));
    assert_eq!(a.follow, Some(4242));
    for k in ['>', '>', 'R', '<'] {
        key(&mut a, KeyCode::Char(k));
        assert_eq!(selected_comm(&a), "iperf3", "after {k}");
    }
    // New frames keep it selected even when everything else changes.
    let mut f = fixtures::busy_host_at(3);
    f.processes.retain(|p| p.comm != "openssl");
    a.push_frame(f);
    assert_eq!(selected_comm(&a), "iperf3");
    // Esc stops following as well as a movement key does.
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.follow, None);
}

#[test]
fn the_followed_task_keeps_its_line_on_screen() {
    let mut a = app(12); // 7 body rows
    a.push_frame(reshuffled(0));
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Char('f'));
    let mut line = 2;
    let mut kept = 0;
    for tick in 1..=10 {
        a.push_frame(reshuffled(tick));
        let (p, vp) = (a.pos[0], a.viewport(View::Processes));
        let now = p.selected - p.offset;
        assert!(now < vp, "frame {tick}: off screen, {p:?}");
        // The same line, unless an end of the list leaves no room for it.
        if p.offset > 0 && p.offset + vp < a.rows.len() {
            assert_eq!(now, line, "frame {tick}: {p:?}");
            kept += 1;
        }
        line = now;
    }
    assert!(kept > 0, "never away from the ends: the test shows nothing");
}

#[test]
fn a_followed_task_that_exits_ends_the_follow() {
    let mut a = app(30);
    key(&mut a, KeyCode::Down);
    let row = a.pos[0].selected;
    let pid = selected_pid(&a);
    key(&mut a, KeyCode::Char('f'));
    let mut f = fixtures::busy_host_at(1);
    f.processes.retain(|p| p.pid != pid);
    a.push_frame(f);
    assert_eq!(a.follow, None);
    assert_eq!(a.pos[0].selected, row);
    assert!(
        a.message
            .as_deref()
            .unwrap_or("")
            .contains("no longer following")
    );
}

#[test]
fn shrinking_rows_clamp_the_cursor_and_the_last_row_stays_last() {
    let mut a = app(30);
    let n = a.rows.len();
    // Row 3 of a list cut to two rows: clamped to the last.
    for _ in 0..3 {
        key(&mut a, KeyCode::Down);
    }
    let mut f = fixtures::busy_host_at(1);
    f.processes.truncate(2);
    a.push_frame(f);
    assert_eq!(a.pos[0].selected, 1);
    // On the last row, it stays on the last row as the list grows back.
    a.push_frame(fixtures::busy_host_at(2));
    assert_eq!(a.rows.len(), n);
    assert_eq!(a.pos[0].selected, n - 1);
    // Anywhere else it keeps its index.
    key(&mut a, KeyCode::Home);
    key(&mut a, KeyCode::Down);
    a.push_frame(fixtures::busy_host_at(3));
    assert_eq!(a.pos[0].selected, 1);
}

/// A followed task that is only out of sight (no thread rows collected yet
/// after `H`) is still followed, and found again when its rows come.
#[test]
fn a_hidden_followed_task_is_still_followed() {
    let mut a = app(30);
    while selected_comm(&a) != "vpp_main" {
        key(&mut a, KeyCode::Down);
    }
    let pid = selected_pid(&a);
    key(&mut a, KeyCode::Char('f'));
    let mut f = fixtures::busy_host_at(1);
    f.threads.clear();
    a.push_frame(f);
    key(&mut a, KeyCode::Char('H'));
    assert!(a.rows.is_empty());
    assert_eq!(a.follow, Some(pid));
    a.push_frame(fixtures::busy_host_at(2));
    let t = a.selected_task().unwrap();
    assert_eq!((t.pid, t.tid, t.is_process), (pid, pid, false));
    assert_eq!(a.follow, Some(pid));
}
