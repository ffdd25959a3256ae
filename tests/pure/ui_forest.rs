//! The forest (`V`, as in top): processes under their parents, built by
//! `ui::rows::processes` from each task's PPID on every rebuild. Checked as
//! App state (rows, depths, glyph rails) and, for deep trees, as drawn.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use nettop::model::frame::{Frame, TaskView};
use nettop::ui::rows::processes::{Src, TaskRow};
use nettop::ui::state::{App, Options};
use nettop::ui::{fixtures, render};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn app(forest: bool) -> App {
    let mut a = App::new(Options {
        forest,
        width: 160,
        height: 60,
        ..Options::default()
    });
    a.add_users(fixtures::users());
    a
}

fn busy_forest() -> App {
    let mut a = app(false);
    a.push_frame(fixtures::busy_host());
    key(&mut a, 'V');
    a
}

fn key(a: &mut App, c: char) {
    a.handle_event(&Event::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )));
}

/// Replaces the filter (`/` starts from the current one).
fn filter(a: &mut App, text: &str) {
    a.handle_event(&Event::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    key(a, '/');
    for c in text.chars() {
        key(a, c);
    }
    a.handle_event(&Event::Key(KeyEvent::new(
        KeyCode::Enter,
        KeyModifiers::NONE,
    )));
}

/// Each row as (its own ID, depth), in order.
fn tree(a: &App) -> Vec<(u32, u8)> {
    a.rows
        .iter()
        .map(|r| (a.task(r.src).expect("row in frame").id(), r.depth))
        .collect()
}

/// The row of process `pid`.
fn row_of(a: &App, pid: u32) -> (usize, TaskRow) {
    a.rows
        .iter()
        .enumerate()
        .find(|(_, r)| matches!(r.src, Src::Proc(_)) && a.task(r.src).is_some_and(|t| t.pid == pid))
        .map(|(i, r)| (i, *r))
        .unwrap_or_else(|| panic!("no row for {pid}: {:?}", tree(a)))
}

fn proc(pid: u32, ppid: u32, comm: &str, top: f64) -> TaskView {
    TaskView {
        pid,
        tid: pid,
        ppid,
        is_process: true,
        comm: comm.into(),
        nr_threads: 1,
        top_pct: top,
        ..Default::default()
    }
}

fn frame(procs: Vec<TaskView>) -> Frame {
    Frame {
        processes: procs,
        ..Default::default()
    }
}

fn screen(a: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| render::draw(f, a)).expect("draw");
    t.backend().to_string()
}

#[test]
fn children_come_right_under_their_parents() {
    let a = busy_forest();
    let t = tree(&a);
    // nginx: the master, then its three workers one level down.
    let (m, master) = row_of(&a, 6000);
    assert_eq!(master.depth, 0);
    let kids: Vec<u32> = t[m + 1..m + 4].iter().map(|&(id, _)| id).collect();
    assert_eq!(kids.len(), 3);
    assert!(kids.iter().all(|k| (6001..=6003).contains(k)), "{t:?}");
    assert!(t[m + 1..m + 4].iter().all(|&(_, d)| d == 1), "{t:?}");
    assert!(!a.rows[m + 1].last && !a.rows[m + 2].last && a.rows[m + 3].last);
    // A family of workers: 7000 → {7013 → 7026, 7039}.
    let (w, _) = row_of(&a, 7000);
    let family: Vec<(u32, u8)> = t[w..w + 4].to_vec();
    for member in [(7013, 1), (7026, 2), (7039, 1)] {
        assert!(family.contains(&member), "{family:?}");
    }
    let (g, grandchild) = row_of(&a, 7026);
    assert_eq!(t[g - 1], (7013, 1), "grandchild right under its parent");
    assert!(grandchild.last);
    // Every process once; the busy host's kernel thread's parent
    // (kthreadd) is not in the frame, so it is a root.
    assert_eq!(
        a.rows.len(),
        a.frame.as_ref().map_or(0, |f| f.processes.len())
    );
    assert_eq!(row_of(&a, 27).1.depth, 0);
    // Off again: the flat list.
    let mut a = a;
    key(&mut a, 'V');
    assert!(a.rows.iter().all(|r| r.depth == 0));
}

#[test]
fn siblings_follow_the_sort_at_every_level() {
    let mut a = busy_forest();
    let workers = |a: &App| -> Vec<u32> {
        let (m, _) = row_of(a, 6000);
        tree(a)[m + 1..m + 4].iter().map(|&(id, _)| id).collect()
    };
    // TOP% descending (the default): nginx workers 18, 19, 20 % go
    // busiest first.
    assert_eq!(workers(&a), [6003, 6002, 6001]);
    // Roots too: vpp (100 % over its three threads) heads the list.
    assert_eq!(tree(&a)[0], (880, 0));
    key(&mut a, 'R');
    assert_eq!(workers(&a), [6001, 6002, 6003]);
    let roots: Vec<f64> = a
        .rows
        .iter()
        .filter(|r| r.depth == 0)
        .filter_map(|r| a.task(r.src).map(|t| t.top_pct))
        .collect();
    assert!(roots.windows(2).all(|w| w[0] <= w[1]), "{roots:?}");
}

#[test]
fn glyph_rails_mark_ancestors_with_siblings_below() {
    // 1 → {10 → {100 → 1000}, 20}: under 10 a line runs on down to 20.
    let mut a = app(true);
    a.push_frame(frame(vec![
        proc(1, 0, "init", 0.0),
        proc(10, 1, "a", 5.0),
        proc(20, 1, "b", 1.0),
        proc(100, 10, "a1", 0.0),
        proc(1000, 100, "a11", 0.0),
    ]));
    assert_eq!(
        tree(&a),
        [(1, 0), (10, 1), (100, 2), (1000, 3), (20, 1)],
        "depth first"
    );
    let rails = |pid| row_of(&a, pid).1.rails;
    assert_eq!(rails(10), 0, "a child of a root has no ancestor column");
    assert_eq!(rails(100), 0b1, "its parent 10 has 20 below it");
    assert_eq!(rails(1000), 0b10, "100 is last; 10 two up is not");
    let s = screen(&a, 230, 12);
    for line in ["├─ a", "│  └─ a1", "│     └─ a11", "└─ b"] {
        assert!(
            s.lines()
                .any(|l| l.trim_end_matches('"').trim_end().ends_with(line)),
            "{line}:\n{s}"
        );
    }
    assert!(s.contains("Processes (forest)"), "{s}");
}

#[test]
fn the_filter_keeps_every_ancestor_of_a_match() {
    let mut a = busy_forest();
    filter(&mut a, "worker-02");
    // worker-02 (7026) is 7000's grandchild; 7039, its uncle, goes.
    assert_eq!(tree(&a), [(7000, 0), (7013, 1), (7026, 2)]);
    assert!(a.rows[1].last && a.rows[2].last, "alone at each level");
    // A match whose parent matches too is still listed once.
    filter(&mut a, "nginx");
    assert_eq!(a.rows.len(), 4);
    assert_eq!(tree(&a)[0], (6000, 0));
}

#[test]
fn ppid_cycles_and_odd_parents_list_every_process_once() {
    // A hostile recording: 10 → 11 → 12 → 10 with 13 hanging off 11 and
    // 14 off 12, a process that is its own parent, a PID twice (one of
    // the two in a loop of its own), a parent not in the frame and a PPID
    // of 0.
    let procs = vec![
        proc(10, 12, "loop-a", 3.0),
        proc(11, 10, "loop-b", 2.0),
        proc(12, 11, "loop-c", 1.0),
        proc(13, 11, "hanger", 1.5),
        proc(14, 12, "sib", 5.0),
        proc(20, 20, "selfish", 0.0),
        proc(30, 31, "twin-1", 0.0),
        proc(31, 30, "twin-parent", 0.0),
        proc(30, 1, "twin-2", 0.0),
        proc(40, 4040, "orphan", 9.0),
        proc(50, 0, "init", 0.0),
    ];
    let n = procs.len();
    let mut a = app(true);
    a.push_frame(frame(procs));
    let mut seen: Vec<usize> = a
        .rows
        .iter()
        .map(|r| match r.src {
            Src::Proc(i) => i,
            Src::Thread(_) => panic!("no thread rows asked for"),
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{:?}", tree(&a));
    // Orphans, self-parents and PPID 0 are roots. A loop is cut where
    // climbing from its first process in the sort (sib) meets itself: at
    // loop-c, which heads it where the sort puts it; the twins' loop at
    // twin-1.
    assert_eq!(
        tree(&a),
        [
            (40, 0),
            (12, 0),
            (14, 1),
            (10, 1),
            (11, 2),
            (13, 3),
            (20, 0),
            (30, 0),
            (31, 1),
            (30, 0),
            (50, 0)
        ]
    );
    // Under 11, hanger is the last child left (its sibling loop-c heads
    // the loop); so is loop-a under loop-c, after sib.
    let last: Vec<bool> = a.rows[2..6].iter().map(|r| r.last).collect();
    assert_eq!(last, [false, true, true, true]);
    // Under a filter the loop's members still show once each.
    filter(&mut a, "loop-c");
    assert_eq!(tree(&a), [(10, 0), (11, 1), (12, 2)]);
}

#[test]
fn processes_without_a_listed_parent_are_roots() {
    let mut a = app(true);
    a.push_frame(fixtures::idle_host());
    // systemd → sshd → bash → nettop; ksoftirqd's parent (kthreadd) is
    // not in the frame.
    assert_eq!(
        tree(&a),
        [(1, 0), (512, 1), (1200, 2), (1301, 3), (14, 0)],
        "{:?}",
        tree(&a)
    );
}

#[test]
fn kernel_threads_go_under_kthreadd() {
    let kt = |pid, ppid, comm: &str| TaskView {
        kthread: true,
        ..proc(pid, ppid, comm, 0.0)
    };
    let mut a = app(true);
    a.push_frame(frame(vec![
        proc(1, 0, "systemd", 1.0),
        kt(2, 0, "kthreadd"),
        kt(14, 2, "ksoftirqd/0"),
        // From a recording that never collected PPIDs.
        kt(15, 0, "kworker/0:1"),
        proc(300, 0, "old-recording", 0.0),
    ]));
    assert_eq!(
        tree(&a),
        [(1, 0), (2, 0), (14, 1), (15, 1), (300, 0)],
        "{:?}",
        tree(&a)
    );
}

#[test]
fn threads_hang_under_each_process_with_h_or_t() {
    let mut a = busy_forest();
    let processes = a.rows.len();
    key(&mut a, 'H');
    // Still process rows, each with its threads (vpp_main's three) under
    // it, before its child processes.
    let (v, vpp) = row_of(&a, 880);
    assert_eq!(vpp.depth, 0);
    let under: Vec<TaskRow> = a.rows[v + 1..v + 4].to_vec();
    assert!(
        under
            .iter()
            .all(|r| matches!(r.src, Src::Thread(_)) && r.depth == 1)
    );
    assert!(under[2].last && !under[0].last);
    assert_eq!(
        a.rows.len(),
        processes + 3,
        "single-threaded: no thread row"
    );
    let (m, _) = row_of(&a, 6000);
    assert!(matches!(a.rows[m + 1].src, Src::Proc(_)));
    assert!(render_header(&a).contains("Processes (forest + threads)"));
    let with_h = a.rows.clone();
    // `t` means the same under the forest.
    key(&mut a, 'H');
    key(&mut a, 't');
    assert_eq!(a.rows, with_h);
    // Without the forest `t` is the flat tree again: every process a root.
    key(&mut a, 'V');
    assert!(
        a.rows
            .iter()
            .all(|r| matches!(r.src, Src::Thread(_)) || r.depth == 0)
    );
    assert_eq!(a.rows.len(), processes + 3);
}

#[test]
fn threads_of_a_process_come_before_its_children() {
    let th = |pid, tid| TaskView {
        tid,
        is_process: false,
        ..proc(pid, 1, "t", 0.0)
    };
    let mut f = frame(vec![proc(1, 0, "init", 0.0), proc(5, 1, "kid", 0.0)]);
    f.threads = vec![th(1, 1), th(1, 2), th(5, 5)];
    let mut a = app(true);
    a.push_frame(f);
    key(&mut a, 'H');
    assert_eq!(tree(&a), [(1, 0), (1, 1), (2, 1), (5, 1)]);
    assert!(!a.rows[2].last, "the child process follows the threads");
    assert!(a.rows[3].last);
    // A thread's filter match keeps its process and that one's parents.
    filter(&mut a, "2");
    assert_eq!(tree(&a), [(1, 0), (1, 1), (2, 1)]);
}

#[test]
fn replay_builds_the_same_forest() {
    let mut live = busy_forest();
    key(&mut live, 'H');
    let mut replay = app(true);
    replay.set_replay(0, 3, false);
    key(&mut replay, 'H');
    replay.show_frame(fixtures::busy_host());
    assert_eq!(replay.rows, live.rows);
    // Seeking to another frame rebuilds it the same way.
    replay.show_frame(fixtures::busy_host_at(2));
    live.push_frame(fixtures::busy_host_at(2));
    assert_eq!(replay.rows, live.rows);
    assert!(replay.rows.iter().any(|r| r.depth == 2));
}

#[test]
fn a_deep_chain_neither_overflows_nor_hides_command() {
    // A fork chain far deeper than any screen (and than u8).
    let n = 100_000u32;
    let procs = (1..=n)
        .map(|pid| proc(pid, pid - 1, &format!("c{pid}"), 0.0))
        .collect();
    let mut a = app(true);
    a.push_frame(frame(procs));
    assert_eq!(a.rows.len(), n as usize);
    assert_eq!(a.rows[300].depth, 255, "depth saturates");
    // The deepest rows on screen: their names still show.
    a.resize(120, 12);
    let s = screen(&a, 120, 12);
    let last = a.rows.len();
    a.handle_event(&Event::Key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE)));
    let deep = screen(&a, 120, 12);
    assert!(deep.contains(&format!("c{last}")), "{deep}");
    assert!(deep.contains('…'), "cut indentation is marked: {deep}");
    // And the first screen shows the shallow levels in full.
    assert!(s.contains("└─ c2") && s.contains("└─ c3"), "{s}");
}

fn render_header(a: &App) -> String {
    screen(a, 160, 8)
}
