//! The detail pane: `Enter` opens it on the process under the cursor, `Esc`
//! closes it (before clearing anything else), and it outlives its process.

use crossterm::event::KeyCode;
use nettop::ui::fixtures;
use nettop::ui::rows::View;
use nettop::ui::state::Action;

use crate::ui_keys::{app, ch, key, selected_comm};

#[test]
fn enter_opens_the_pane_and_esc_closes_it() {
    let mut a = app(30);
    key(&mut a, KeyCode::Down);
    let comm = selected_comm(&a);
    let pid = a.selected_task().unwrap().pid;
    assert_eq!(key(&mut a, KeyCode::Enter), Action::None);
    assert_eq!(a.detail, Some(pid));
    let pane = a.pane.as_ref().expect("the pane is built at once");
    assert_eq!((pane.pid, pane.task.comm.as_str()), (pid, comm.as_str()));
    assert!(!pane.exited);
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.detail, None);
}

/// Esc closes the pane first; the filter goes with the next Esc.
#[test]
fn esc_closes_the_pane_before_it_clears_the_filter() {
    let mut a = app(30);
    key(&mut a, KeyCode::Char('/'));
    ch(&mut a, "nginx");
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.pane.as_ref().unwrap().task.comm, "nginx");
    key(&mut a, KeyCode::Esc);
    assert_eq!((a.detail, a.filter.as_str()), (None, "nginx"));
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.filter, "");
}

/// The process exits: the pane stays open on its last data, marked as
/// exited, while the list under it moves on.
#[test]
fn the_pane_survives_its_process_exiting() {
    let mut a = app(30);
    key(&mut a, KeyCode::Enter);
    let pid = a.detail.unwrap();
    let before = a.pane.clone().unwrap();
    let mut f = fixtures::busy_host_at(3);
    f.processes.retain(|p| p.pid != pid);
    f.threads.retain(|p| p.pid != pid);
    a.push_frame(f);
    assert_eq!(a.detail, Some(pid));
    let after = a.pane.as_ref().unwrap();
    assert!(after.exited);
    assert_eq!(after.task, before.task);
    assert_eq!(after.seen_ms, before.seen_ms);
    assert!(a.rows.iter().all(|r| a.task(r.src).unwrap().pid != pid));
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.detail, None);
}

/// The pane needs thread rows: while it is open `H` cannot turn them off.
#[test]
fn the_pane_keeps_thread_rows_collected() {
    let mut a = app(30);
    key(&mut a, KeyCode::Enter);
    assert_eq!(key(&mut a, KeyCode::Char('H')), Action::ThreadRows(true));
    assert_eq!(key(&mut a, KeyCode::Char('H')), Action::ThreadRows(true));
    key(&mut a, KeyCode::Esc);
    assert_eq!(key(&mut a, KeyCode::Char('H')), Action::ThreadRows(true));
    assert_eq!(key(&mut a, KeyCode::Char('H')), Action::ThreadRows(false));
}

/// Enter opens nothing outside the Processes list, and the pane covers
/// only the Processes view: other views stay reachable under it.
#[test]
fn the_pane_belongs_to_the_processes_view() {
    let mut a = app(30);
    key(&mut a, KeyCode::Char('2'));
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.detail, None);
    key(&mut a, KeyCode::Char('1'));
    key(&mut a, KeyCode::Enter);
    let pid = a.detail.unwrap();
    key(&mut a, KeyCode::Tab);
    assert_eq!((a.view, a.detail), (View::Cpus, Some(pid)));
}
