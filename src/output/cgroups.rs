//! `--group cgroup`: one line per cgroup (pod, container, service) instead
//! of one per task, in batch text and JSON. Renders the model's roll-up
//! (`Frame::cgroups`) and nothing else.

use std::fmt::Write;

use crate::model::frame::CgroupView;
use crate::model::frame::Frame;
use crate::output::format::fmt_mem;
use crate::sample::Source;

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Rows in display order: the model's (most STOLEN% first), limited to
/// `max_rows` (0 = all).
pub fn rows(f: &Frame, max_rows: usize) -> &[CgroupView] {
    let n = if max_rows == 0 {
        f.cgroups.len()
    } else {
        max_rows.min(f.cgroups.len())
    };
    &f.cgroups[..n]
}

/// The cgroup table, appended to `out`. MEM is the memory charged to the
/// cgroup (`-` where no memory controller counts it); RX% is receive work
/// on the CPUs the cgroup's cpuset allows; RX-CPUS the ones where it lands.
pub fn table(out: &mut String, f: &Frame, max_rows: usize) {
    let e = if f.source == Source::Bpf { "" } else { "~" };
    let _ = writeln!(
        out,
        "\n{:<32} {:>5} {:>5} {:>6} {:>7} {:>8} {:>7} {:>7} {:>8} {:>5} {:>8} {:>7} {:<8} PATH",
        "CGROUP",
        "PROCS",
        "THR",
        "TOP%",
        format!("TRUE{e}%"),
        format!("STOLEN{e}%"),
        "NET_RX%",
        "INLINE%",
        "HIDDEN~%",
        "MEM",
        "CPUS",
        format!("RX{e}%"),
        "RX-CPUS",
    );
    if f.cgroups.is_empty() {
        let _ = writeln!(out, "(no cgroup information in this frame)");
        return;
    }
    let bpf = f.source == Source::Bpf;
    for c in rows(f, max_rows) {
        let dash = |x: f64| {
            if bpf {
                format!("{x:.1}")
            } else {
                "-".to_string()
            }
        };
        let _ = writeln!(
            out,
            "{:<32} {:>5} {:>5} {:6.1} {:7.1} {:8.1} {:>7} {:>7} {:>8} {:>5} {:>8} {:7.1} {:<8} {}",
            truncate(&c.name, 32),
            c.processes,
            c.threads,
            c.top_pct,
            c.true_pct,
            c.stolen_pct,
            dash(c.net_rx_stolen_pct),
            dash(c.inline_pct),
            dash(c.hidden_pct),
            fmt_mem(c.mem_bytes),
            if c.cpus.is_empty() { "all" } else { &c.cpus },
            c.rx_on_cpus_pct,
            if c.rx_cpus.is_empty() {
                "-"
            } else {
                &c.rx_cpus
            },
            if c.path.is_empty() { "?" } else { &c.path },
        );
    }
}

/// The frame as `--group cgroup --json` prints it: the roll-up without
/// task rows (one object per frame, as always).
pub fn json_frame(frame: &Frame) -> Frame {
    Frame {
        processes: Vec::new(),
        threads: Vec::new(),
        ..frame.clone()
    }
}
