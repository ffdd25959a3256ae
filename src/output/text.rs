//! `top -b`-style text rendering of one [`Frame`]. Pure: user names are
//! resolved by the caller (reading /etc/passwd is I/O) and passed in
//! [`TextOptions`].

use std::collections::HashMap;
use std::fmt::Write;

use super::columns::{self, ProcColumn, RowCtx};
use super::fields::{batch_columns, text_line};
use super::format::fmt_rate;
use crate::model::frame::{Frame, TaskView};
use crate::sample::Source;

#[derive(Debug, Clone, Default)]
pub struct TextOptions {
    /// Thread rows instead of process rows.
    pub threads: bool,
    /// Only rows of these processes (empty = all).
    pub pids: Vec<u32>,
    /// Row limit (0 = all).
    pub max_rows: usize,
    /// UID -> user name; missing UIDs print as numbers.
    pub users: HashMap<u32, String>,
    /// Where the regime came from (`HostInfo::regime_source`), shown in the header.
    pub regime_source: String,
    /// `--group cgroup`: one row per cgroup instead of per task.
    pub group_cgroup: bool,
    /// `-c`: COMMAND is the full command line, as `top -b -c` prints it.
    pub cmdline: bool,
    /// `-i`: rows of tasks that used no CPU left out, as `top -b -i`.
    pub hide_idle: bool,
}

/// "2026-11-22 08:40:01Z" from milliseconds since the epoch, without a
/// time-zone database (batch output is for logs: UTC is unambiguous).
pub fn format_utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = (secs / 86_400) as i64;
    let sod = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

fn header(out: &mut String, f: &Frame, o: &TextOptions) {
    let _ = writeln!(
        out,
        "nettop - {}  host {}  interval {:.2}s  frame {}",
        format_utc(f.unix_ms),
        f.host_label(),
        f.interval_s,
        f.seq
    );
    let src = if o.regime_source.is_empty() {
        String::new()
    } else {
        format!(" (from {})", o.regime_source)
    };
    let _ = writeln!(out, "Regime: {}{src}: {}", f.regime.name(), f.regime_note);
    let h = &f.health;
    match f.source {
        Source::Bpf => {
            let mut line = format!(
                "Source: BPF ({})  health: map-full {} napi-map-full {} unmatched-exits {} recursion-misses {} \
                 vanished-tasks {}",
                if h.attach_mode.is_empty() {
                    "?"
                } else {
                    &h.attach_mode
                },
                h.map_full,
                h.napi_map_full,
                h.unmatched_exits,
                h.recursion_misses,
                h.vanished_tasks
            );
            if let Some(p) = h.bpf_cpu_pct {
                let _ = write!(line, "  bpf-cpu {p:.2}%");
            }
            if !h.task_source.is_empty() {
                let _ = write!(line, "  tasks: {}", h.task_source);
            }
            if h.exited_lost > 0 || h.bad_records > 0 {
                let _ = write!(
                    line,
                    "  exited-lost {} bad-records {}",
                    h.exited_lost, h.bad_records
                );
            }
            if h.unattributed + h.flush_deferred + h.unknown_raise > 0 {
                let _ = write!(
                    line,
                    "  unattributed {} late {} unknown-raise {}",
                    h.unattributed, h.flush_deferred, h.unknown_raise
                );
            }
            if !h.missing_tracepoints.is_empty() {
                let _ = write!(line, "  missing: {}", h.missing_tracepoints.join(","));
            }
            let _ = writeln!(out, "{line}");
            let _ = writeln!(out, "Hidden~: {}", f.hidden_note);
            if !f.calibration_warning.is_empty() {
                let _ = writeln!(out, "WARNING: {}", f.calibration_warning);
            }
        }
        Source::ProcOnly => {
            let _ = writeln!(
                out,
                "Source: /proc only -- ESTIMATES (no BPF): columns marked ~ apportion each CPU's /proc/stat \
                 hi+si time by on-CPU share; traced columns show 'n/a'  vanished-tasks {}",
                h.vanished_tasks
            );
        }
    }
    for n in &h.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    let s = &f.summary;
    let _ = writeln!(
        out,
        "%Cpu(s): {:5.1} us {:5.1} sy {:5.1} hi {:5.1} si {:5.1} st {:5.1} id | NET_RX {}/s  napi {}/s  pkts {}/s  \
         budget-exh {}/s  squeeze {}/s | stolen {:.1}%{} of a CPU | tasks {} procs {} cpus {}",
        s.usr_pct,
        s.sys_pct,
        s.irq_pct,
        s.soft_pct,
        s.steal_pct,
        s.idle_pct,
        fmt_rate(s.net_rx_per_s),
        fmt_rate(s.napi_polls_per_s),
        fmt_rate(s.packets_per_s),
        fmt_rate(s.budget_exhausted_per_s),
        fmt_rate(s.time_squeeze_per_s),
        s.stolen_pct_total,
        if f.source == Source::Bpf {
            format!(" hidden~ {:.1}%", s.hidden_pct_total)
        } else {
            String::new()
        },
        s.tasks,
        s.processes,
        s.cpus_online
    );
    super::devices::cost_line(out, f);
    super::traffic::summary_line(out, f);
}

/// Rows in display order: most stolen first, then most CPU by top's
/// measure, then by id so equal rows never swap between frames.
pub fn sorted_rows<'a>(f: &'a Frame, o: &TextOptions) -> Vec<&'a TaskView> {
    let src = if o.threads { &f.threads } else { &f.processes };
    let mut rows: Vec<&TaskView> = src
        .iter()
        .filter(|t| o.pids.is_empty() || o.pids.contains(&t.pid))
        .filter(|t| !(o.hide_idle && t.is_idle()))
        .collect();
    let cx = RowCtx {
        users: &o.users,
        cpu_node: &[],
        traced: true,
        cmdline: o.cmdline,
    };
    let by = |c: ProcColumn, a: &TaskView, b: &TaskView| c.compare(a, b, &cx);
    rows.sort_by(|a, b| {
        by(ProcColumn::Stolen, b, a)
            .then(by(ProcColumn::Top, b, a))
            .then(by(ProcColumn::Pid, a, b))
    });
    if o.max_rows > 0 {
        rows.truncate(o.max_rows);
    }
    rows
}

/// The task table: every column of [`columns`] but the TUI's own
/// ([`ProcColumn::tui_only`]), padded to its width and never cut (logs
/// keep whole values), COMMAND last.
fn task_table(out: &mut String, f: &Frame, o: &TextOptions) {
    let cpu_node = columns::cpu_nodes(f);
    let cx = RowCtx {
        users: &o.users,
        cpu_node: &cpu_node,
        traced: columns::traced(f),
        cmdline: o.cmdline,
    };
    let cols: Vec<ProcColumn> = batch_columns()
        .into_iter()
        .filter(|c| columns::shown(Some(f), *c))
        .collect();
    out.push('\n');
    text_line(out, &cols, |c| c.header(cx.traced, o.threads));
    for t in sorted_rows(f, o) {
        text_line(out, &cols, |c| c.text(t, &cx));
    }
}

/// The whole frame as text, ending in a newline.
pub fn render_frame(frame: &Frame, opts: &TextOptions) -> String {
    let mut out = String::with_capacity(8192);
    header(&mut out, frame, opts);
    super::cpus::cpu_table(&mut out, frame);
    super::devices::device_table(&mut out, frame);
    if opts.group_cgroup {
        super::cgroups::table(&mut out, frame, opts.max_rows);
    } else {
        task_table(&mut out, frame, opts);
    }
    super::traffic::tables(&mut out, frame, opts.group_cgroup);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TUI's own columns (drawn from its history) are not batch's:
    /// the task table's header stops at AFFINITY, then COMMAND.
    #[test]
    fn batch_skips_tui_only_columns() {
        let f = Frame {
            processes: vec![TaskView {
                pid: 7,
                tid: 7,
                is_process: true,
                comm: "x".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = render_frame(&f, &TextOptions::default());
        let header = text.lines().find(|l| l.contains("COMMAND")).unwrap();
        assert!(header.contains("AFFINITY"), "{header}");
        assert!(!header.contains("HIST"), "{header}");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(format_utc(1_795_336_801_000), "2026-11-22 08:40:01Z");
    }
}
