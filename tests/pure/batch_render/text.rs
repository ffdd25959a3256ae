//! Text rendering: snapshots of the busy host, estimates without BPF,
//! collector notes, the PID filter and the row limit.

use nettop::model::compute;
use nettop::model::frame::Frame;
use nettop::output::json::render_json;
use nettop::output::text::{TextOptions, render_frame};

use crate::batch_render::busy_host::{frame, host, opts, sample};
use crate::batch_render::in_snapshots;

fn snap(name: &str, text: &str) {
    in_snapshots(|| insta::assert_snapshot!(name, text));
}

#[test]
fn text_busy_two_socket_bpf_processes() {
    snap(
        "batch_text_busy_2socket_processes",
        &render_frame(&frame(true), &opts(false)),
    );
}

#[test]
fn text_busy_two_socket_bpf_threads() {
    snap(
        "batch_text_busy_2socket_threads",
        &render_frame(&frame(true), &opts(true)),
    );
}

#[test]
fn text_proc_only_marks_estimates() {
    let text = render_frame(&frame(false), &opts(true));
    assert!(text.contains("ESTIMATES (no BPF)"));
    assert!(text.contains("STOLEN~%"));
    snap("batch_text_proc_only_threads", &text);
}

/// A collector note (device counters from the sysfs fallback) reaches the
/// health lines of text and JSON; without one, neither changes.
#[test]
fn collector_notes_are_shown() {
    let note = "device counters from sysfs: rtnetlink socket: Permission denied";
    for bpf in [true, false] {
        let mut cur = sample(true, bpf);
        cur.notes = vec![note.into()];
        let f = compute(&host(), &sample(false, bpf), &cur);
        let text = render_frame(&f, &opts(false));
        assert!(text.contains(&format!("Note: {note}")), "{text}");
        let back: Frame = serde_json::from_str(&render_json(&f, &[]).unwrap()).unwrap();
        assert_eq!(back.health.notes, vec![note.to_string()]);
        let plain = render_frame(&frame(bpf), &opts(false));
        assert!(!plain.contains("Note:"), "{plain}");
        assert!(!render_json(&frame(bpf), &[]).unwrap().contains("\"notes\""));
    }
}

#[test]
fn text_pid_filter_and_row_limit() {
    let o = TextOptions {
        pids: vec![2001],
        max_rows: 2,
        ..opts(true)
    };
    let text = render_frame(&frame(true), &o);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("TID"))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    // Most stolen first: the worker on the NET_RX CPU.
    assert!(rows[0].contains("dp-worker-0"), "{text}");
    assert!(rows.iter().all(|r| !r.contains("iperf3")));
}

/// `-b -c`: COMMAND is the whole command line, never cut (logs keep whole
/// values), as `top -b -c` prints it; without `-c` the name.
#[test]
fn text_command_lines_with_c() {
    let mut f = frame(true);
    let argv: Vec<String> = ["iperf3", "-s", "-B", "10.9.0.2", "--one-off", "-p", "5299"]
        .map(String::from)
        .to_vec();
    let p = f
        .processes
        .iter_mut()
        .max_by_key(|p| p.pid)
        .expect("a process");
    p.cmdline = argv.clone();
    let pid = p.pid;
    let row = |text: &str| {
        text.lines()
            .skip_while(|l| !l.trim_start().starts_with("PID "))
            .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
            .unwrap_or_else(|| panic!("no row {pid} in {text}"))
            .to_string()
    };
    let with = render_frame(
        &f,
        &TextOptions {
            cmdline: true,
            ..opts(false)
        },
    );
    assert!(row(&with).ends_with(&argv.join(" ")), "{with}");
    let without = render_frame(&f, &opts(false));
    assert!(!row(&without).contains("--one-off"), "{without}");
}

/// `-i` (top -b -i): rows of tasks that used no CPU are left out, every
/// other row stays, in the same order.
#[test]
fn text_hide_idle_leaves_out_tasks_without_cpu() {
    let f = frame(true);
    let pids = |text: &str| -> Vec<u32> {
        text.lines()
            .skip_while(|l| !l.trim_start().starts_with("PID "))
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect()
    };
    let all = pids(&render_frame(&f, &opts(false)));
    let busy = pids(&render_frame(
        &f,
        &TextOptions {
            hide_idle: true,
            ..opts(false)
        },
    ));
    let idle: Vec<u32> = f
        .processes
        .iter()
        .filter(|t| t.is_idle())
        .map(|t| t.pid)
        .collect();
    assert!(!idle.is_empty() && !busy.is_empty(), "the fixture has both");
    let want: Vec<u32> = all.into_iter().filter(|p| !idle.contains(p)).collect();
    assert_eq!(busy, want);
}
