//! Snapshot tests of the detail pane (`Enter`) and the sparkline history
//! (the CPUs view, the STOLEN HIST column), drawn with ratatui's
//! TestBackend over 40 frames of an RX burst from deterministic fixtures.

use crate::common;

use common::screen::{app, press, screen, snap};
use crossterm::event::KeyCode;
use nettop::ui::fixtures;
use nettop::ui::state::App;

/// The busy host in its cgroups over 40 ticks of an RX burst, with the
/// topology thread's facts: what the detail pane and the sparklines show.
fn burst_app(w: u16, h: u16) -> App {
    let mut a = app(w, h, true);
    a.facts = fixtures::detail_facts();
    for t in 0..40 {
        a.push_frame(fixtures::detail_host_at(t));
    }
    a
}

/// Enter on openssl's row (found with the filter: vpp is busier).
fn open_openssl(a: &mut App) {
    press(a, KeyCode::Char('/'));
    for c in "openssl".chars() {
        press(a, KeyCode::Char(c));
    }
    press(a, KeyCode::Enter);
    press(a, KeyCode::Enter);
}

/// Enter on openssl: who it is, where it may run, what is stolen from it
/// and by which vector, the findings naming it, its history and threads.
#[test]
fn detail_pane_of_a_robbed_process() {
    let mut a = burst_app(120, 44);
    open_openssl(&mut a);
    let s = screen(&a, 120, 44);
    assert!(s.contains("PID 5001 openssl · running · Esc closes"), "{s}");
    assert!(
        s.contains("ECDHE-RSA-AES256-GCM-SHA384 -www"),
        "wrapped: {s}"
    );
    assert!(s.contains("PPID 4990") && s.contains("user alice"), "{s}");
    assert!(s.contains("softirq ") && s.contains("NET_RX "), "{s}");
    assert!(s.contains("cgroup docker:5a5a5a5a5a5a"), "{s}");
    assert!(
        s.contains("affinity 3 · cpuset 3: affinity within it"),
        "{s}"
    );
    assert!(s.contains("NUMA node 0 · local NICs: eth0"), "{s}");
    assert!(!s.contains("eth1"), "eth1 is on the other node: {s}");
    assert!(s.contains("warning NT002 irq-on-pinned-cpu"), "{s}");
    assert!(s.contains("History: last 40s (40 frames)"), "{s}");
    let stolen = s.lines().find(|l| l.contains("│STOLEN%  ")).unwrap();
    let ticks: std::collections::BTreeSet<char> =
        stolen.chars().filter(|c| ('▁'..='█').contains(c)).collect();
    assert!(ticks.len() >= 4, "the burst has a shape: {stolen}");
    assert!(s.contains("Threads (1, busiest first)"), "{s}");
    snap("ui_detail_pane", s);
}

/// The process exits: the pane stays, says so and keeps what it knew.
#[test]
fn detail_pane_after_the_process_exits() {
    let mut a = burst_app(80, 24);
    open_openssl(&mut a);
    let mut f = fixtures::detail_host_at(40);
    f.processes.retain(|p| p.pid != 5001);
    f.threads.retain(|p| p.pid != 5001);
    a.push_frame(f);
    let s = screen(&a, 80, 24);
    assert!(s.contains("PID 5001 openssl · EXITED (last seen"), "{s}");
    assert!(s.contains("openssl s_server"), "{s}");
    snap("ui_detail_pane_exited_80x24", s);
}

/// Small terminals: the pane drops its border and keeps the first lines;
/// nothing panics down to the smallest size the TUI draws into.
#[test]
fn detail_pane_on_small_terminals() {
    let mut a = burst_app(30, 7);
    open_openssl(&mut a);
    for (w, h) in [(30, 7), (30, 8), (31, 9), (40, 10), (24, 8), (60, 12)] {
        a.resize(w, h);
        let s = screen(&a, w, h);
        if w >= 30 {
            assert!(s.contains("PID 5001"), "{w}x{h}: {s}");
        }
    }
    a.resize(30, 7);
    snap("ui_detail_pane_30x7", screen(&a, 30, 7));
}

/// The optional STOLEN HIST column (fields screen): each row's STOLEN%
/// over the last frames, against a whole CPU, so rows compare.
#[test]
fn processes_trend_column() {
    use nettop::output::columns::ProcColumn;
    let mut a = burst_app(250, 16);
    let at = a
        .columns
        .iter()
        .position(|c| *c == ProcColumn::Stolen)
        .unwrap();
    a.columns.insert(at + 1, ProcColumn::Trend);
    let s = screen(&a, 250, 16);
    assert!(s.contains("STOLEN HIST"), "{s}");
    let line = s.lines().find(|l| l.contains("openssl")).unwrap();
    assert!(line.contains("▅▆▇▆▅▅▄▄▃▂▂▁"), "{line}");
    let idle = s.lines().find(|l| l.contains("postgres")).unwrap();
    assert!(idle.contains("▁▁▁▁▁▁▁▁▁▁▁▁"), "{idle}");
    snap("ui_processes_trend", s);
}

/// The CPUs view's STOLEN and NET_RX/s history: CPU 3 carries the burst,
/// CPU 5 a quarter of it on the shared NET_RX/s scale.
#[test]
fn cpus_history_sparklines() {
    let mut a = burst_app(190, 22);
    press(&mut a, KeyCode::Char('2'));
    let s = screen(&a, 190, 22);
    assert!(
        s.contains("STOLEN% HIST") && s.contains("NETRX/s ≤90."),
        "{s}"
    );
    let row = |n: &str| {
        s.lines()
            .find(|l| l.trim_start_matches(['"', ' ']).starts_with(n))
            .unwrap()
            .to_string()
    };
    assert!(row("3 ").contains('█'), "{s}");
    assert!(!row("5 ").contains('█'), "{s}");
    assert!(row("8 ").contains("▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁"), "{s}");
    snap("ui_cpus_history", s);
}
