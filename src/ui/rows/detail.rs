//! The detail pane's data (`Enter` on a process, `Esc` closes): one
//! process's identity, memory, workload, placement, the split of the time
//! stolen from it, its threads and the pinning findings that name it.
//!
//! Everything comes from the Frame and from [`Facts`], which the topology
//! thread derives with the pinning lint (the NICs' NUMA nodes, findings per
//! PID). Nothing here reads /proc, so the pane shows the same in replay,
//! where the facts come from the recorded topology. The cpuset is the
//! model's: the Frame's cgroup roll-up carries each cgroup's allowed CPUs
//! (`CgroupView::cpus`, read by the collector with the cgroup paths).
//!
//! When the process exits the pane stays open, says so and keeps the last
//! data it had: the moment a process dies is when one wants to read what
//! happened to it. A process with the same PID and name coming back (a
//! replay seek backwards) revives it; another name under that PID is
//! another process, and the pane stays on the dead one.

use std::collections::{BTreeMap, BTreeSet};

use super::LineKind;
use crate::model::frame::{CgroupView, Frame, TaskView};
use crate::output::columns::{ProcColumn, RowCtx, cpu_nodes};
use crate::output::format::{fmt_cpu_time, fmt_mem, fmt_pct, fmt_priority, hms};
use crate::pinning::{Report, Severity};
use crate::sample::SOFTIRQ_NAMES;
use crate::sys::cpuset::CpuSet;
use crate::topology::HostTopology;

/// Threads the pane keeps, busiest first: a screenful and then some. A
/// copy of each is kept so an exited process still shows them; copying
/// 30,000 per frame would cost more than the pane is worth.
pub const PANE_THREADS: usize = 64;

/// A pinning finding as the pane lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFinding {
    /// Stable rule code ("NT003").
    pub rule: String,
    /// Stable rule name ("rps-on-pinned-cpu").
    pub name: String,
    pub severity: Severity,
    /// The finding's one-line summary.
    pub message: String,
    /// Its threads the finding names.
    pub tids: Vec<u32>,
}

/// What the topology thread knows that a Frame does not, for the pane.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    /// The topology has been read and linted at least once.
    pub loaded: bool,
    /// Physical NICs (label) and their NUMA node (`None`: unknown, or the
    /// host has one node).
    pub nics: Vec<(String, Option<u32>)>,
    /// Findings by the PID of the threads they name, in the lint's order
    /// (worst first).
    pub findings: BTreeMap<u32, Vec<TaskFinding>>,
}

/// The pane's facts from one topology and its lint report.
pub fn facts(topo: &HostTopology, report: &Report) -> Facts {
    let nics = topo
        .nics
        .iter()
        .filter(|n| !n.is_virtual)
        .map(|n| (n.label(), n.numa_node))
        .collect();
    let mut findings: BTreeMap<u32, Vec<TaskFinding>> = BTreeMap::new();
    for f in &report.findings {
        let mut by_pid: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for t in &f.threads {
            by_pid.entry(t.pid).or_default().insert(t.tid);
        }
        for (pid, tids) in by_pid {
            findings.entry(pid).or_default().push(TaskFinding {
                rule: f.rule.code().to_string(),
                name: f.name.clone(),
                severity: f.severity,
                message: f.summary.clone(),
                tids: tids.into_iter().collect(),
            });
        }
    }
    Facts {
        loaded: true,
        nics,
        findings,
    }
}

/// One process as the pane shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pane {
    pub pid: u32,
    /// Not in the newest frame: the rest is the last frame it was in.
    pub exited: bool,
    /// End of the last frame it was in (unix ms).
    pub seen_ms: u64,
    /// Its process row.
    pub task: TaskView,
    /// Its busiest thread rows (TRUE% + STOLEN%), at most [`PANE_THREADS`].
    pub threads: Vec<TaskView>,
    /// Its thread rows in the frame (0 when the frame has none).
    pub thread_rows: usize,
    /// The frame carried thread rows at all.
    pub frame_threads: bool,
    pub cgroup: Option<CgroupView>,
    /// NUMA nodes of the CPUs its affinity allows.
    pub nodes: Vec<u32>,
    /// NUMA nodes the host has (from the frame's CPU list).
    pub host_nodes: usize,
    pub last_node: Option<u32>,
    /// The topology thread has linted (else findings and NICs are unknown).
    pub facts_loaded: bool,
    pub findings: Vec<TaskFinding>,
    /// Physical NICs on its nodes (all of them on a one-node host).
    pub nics: Vec<String>,
    /// Who robbed it, whom it robbed.
    pub pairs: super::robbed::Pairs,
}

/// The pane for `pid` over the newest frame, or what `prev` last knew of
/// it (see the module doc for exits).
pub fn pane(
    pid: Option<u32>,
    frame: Option<&Frame>,
    facts: &Facts,
    prev: Option<Pane>,
) -> Option<Pane> {
    let pid = pid?;
    let prev = prev.filter(|p| p.pid == pid);
    let Some(f) = frame else {
        return prev;
    };
    let live = f.processes.iter().find(|p| p.pid == pid);
    match (live, prev) {
        (Some(t), Some(p)) if p.exited && p.task.comm != t.comm => Some(p),
        (Some(t), _) => Some(build(t, f, facts)),
        (None, Some(p)) => Some(Pane { exited: true, ..p }),
        (None, None) => None,
    }
}

fn build(t: &TaskView, f: &Frame, facts: &Facts) -> Pane {
    let busy = |x: &TaskView| x.true_pct + x.stolen_pct;
    let by_busy =
        |a: &&TaskView, b: &&TaskView| busy(b).total_cmp(&busy(a)).then(a.tid.cmp(&b.tid));
    let mut threads: Vec<&TaskView> = f.threads.iter().filter(|x| x.pid == t.pid).collect();
    let thread_rows = threads.len();
    if threads.len() > PANE_THREADS {
        threads.select_nth_unstable_by(PANE_THREADS - 1, by_busy);
        threads.truncate(PANE_THREADS);
    }
    threads.sort_by(by_busy);
    let node_of = cpu_nodes(f);
    let allowed = CpuSet::parse_list(&t.affinity).ok();
    let nodes: BTreeSet<u32> = f
        .cpus
        .iter()
        .filter(|c| allowed.as_ref().is_none_or(|a| a.contains(c.cpu)))
        .filter_map(|c| c.node)
        .collect();
    let host_nodes = f
        .cpus
        .iter()
        .filter_map(|c| c.node)
        .collect::<BTreeSet<_>>()
        .len();
    let nics = facts
        .nics
        .iter()
        .filter(|(_, n)| match n {
            Some(n) => nodes.contains(n),
            None => host_nodes <= 1,
        })
        .map(|(l, _)| l.clone())
        .collect();
    Pane {
        pid: t.pid,
        exited: false,
        seen_ms: f.unix_ms,
        task: t.clone(),
        threads: threads.into_iter().cloned().collect(),
        thread_rows,
        frame_threads: !f.threads.is_empty(),
        cgroup: f.cgroups.iter().find(|c| c.id == t.cgroup_id).cloned(),
        nodes: nodes.into_iter().collect(),
        host_nodes,
        last_node: node_of.get(t.last_cpu as usize).copied().flatten(),
        facts_loaded: facts.loaded,
        findings: facts.findings.get(&t.pid).cloned().unwrap_or_default(),
        nics,
        pairs: super::robbed::pairs(f, t.pid),
    }
}

/// The pane's title: who, and whether it is still there.
pub fn title(p: &Pane) -> String {
    let state = if p.exited {
        format!("EXITED (last seen {})", hms(p.seen_ms))
    } else {
        "running".to_string()
    };
    format!("PID {} {} · {state} · Esc closes", p.pid, p.task.comm)
}

/// The headline figures, then identity and command line: what must show
/// first on a small terminal.
pub fn head_lines(p: &Pane, cx: &RowCtx) -> Vec<(LineKind, String)> {
    let t = &p.task;
    let figures: Vec<String> = [
        ProcColumn::Top,
        ProcColumn::True,
        ProcColumn::Stolen,
        ProcColumn::Hidden,
        ProcColumn::NetRx,
    ]
    .into_iter()
    .map(|c| format!("{} {}", c.header(cx.traced, false), c.text(t, cx)))
    .collect();
    let node = p
        .last_node
        .map_or(String::new(), |n| format!(" (node {n})"));
    let cmd = if t.kthread {
        format!("[{}] (kernel thread)", t.comm)
    } else if t.cmdline.is_empty() {
        format!("{} (no command line recorded)", t.comm)
    } else {
        t.cmdline.join(" ")
    };
    vec![
        (LineKind::Heading, figures.join("  ")),
        (
            LineKind::Normal,
            format!(
                "PID {}  PPID {}  user {}  state {}  PRI {}  NI {}  threads {}  last CPU {}{node}",
                t.pid,
                t.ppid,
                cx.user(t.uid),
                t.state,
                fmt_priority(t.priority),
                t.nice.map_or("-".into(), |n| n.to_string()),
                t.nr_threads,
                t.last_cpu
            ),
        ),
        (LineKind::Normal, format!("command: {cmd}")),
        memory_line(t),
    ]
}

/// RES, its share of the host, SHR, VIRT and the CPU time used: what
/// htop's columns say about the process, on one line.
fn memory_line(t: &TaskView) -> (LineKind, String) {
    let time = fmt_cpu_time(t.cpu_time_s);
    let Some(res) = t.res_bytes else {
        let why = if t.kthread {
            "none (a kernel thread has no address space)"
        } else if t.state == 'Z' {
            "none (a zombie has no address space)"
        } else {
            "unknown (not in this frame: a recording made before nettop read it)"
        };
        return (LineKind::Note, format!("memory {why}  TIME+ {time}"));
    };
    let share = t
        .mem_pct
        .map_or(String::new(), |p| format!(" ({}% of memory)", fmt_pct(p)));
    (
        LineKind::Normal,
        format!(
            "memory RES {}{share}  SHR {}  VIRT {}  TIME+ {time}",
            fmt_mem(Some(res)),
            fmt_mem(t.shr_bytes),
            fmt_mem(t.virt_bytes),
        ),
    )
}

/// Everything below the history graph: stolen split, workload, placement,
/// findings, threads. `replay`: thread rows cannot be asked for.
pub fn body_lines(p: &Pane, cx: &RowCtx, replay: bool) -> Vec<(LineKind, String)> {
    let mut out = Vec::new();
    stolen_split(&mut out, &p.task, cx);
    super::robbed::lines(&mut out, &p.task, &p.pairs);
    workload(&mut out, p);
    placement(&mut out, p);
    findings(&mut out, p);
    threads(&mut out, p, cx, replay);
    out
}

fn stolen_split(out: &mut Vec<(LineKind, String)>, t: &TaskView, cx: &RowCtx) {
    if t.rebilled_pct >= 0.05 {
        out.push((
            LineKind::Note,
            format!(
                "TRUE% includes REBILL% {}: its own time the kernel billed to the threads its \
                 wake-ups (reschedule IPIs) woke, so TRUE% may exceed ONCPU%",
                fmt_pct(t.rebilled_pct)
            ),
        ));
    }
    out.push((LineKind::Heading, "Stolen from it".into()));
    if !cx.traced {
        out.push((
            LineKind::Note,
            "estimated from /proc/stat without BPF: no split per vector".into(),
        ));
        return;
    }
    out.push((
        LineKind::Normal,
        format!(
            "hardirq {}% = device {}% + system vectors {}% (timer, IPIs)",
            fmt_pct(t.hi_pct()),
            fmt_pct(t.hardirq_pct),
            fmt_pct(t.sysvec_pct)
        ),
    ));
    let mut vec: Vec<(usize, f64)> = t
        .softirq_stolen_pct
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| *v >= 0.05)
        .collect();
    vec.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let split: Vec<String> = vec
        .iter()
        .map(|(i, v)| format!("{} {}%", SOFTIRQ_NAMES[*i], fmt_pct(*v)))
        .collect();
    out.push((
        LineKind::Normal,
        format!(
            "softirq {}% = {}",
            fmt_pct(t.si_pct()),
            if split.is_empty() {
                "nothing".to_string()
            } else {
                split.join(" + ")
            }
        ),
    ));
}

fn workload(out: &mut Vec<(LineKind, String)>, p: &Pane) {
    out.push((LineKind::Heading, "Workload".into()));
    let Some(c) = &p.cgroup else {
        out.push((
            LineKind::Note,
            "cgroup unknown (a recording made before nettop read cgroups)".into(),
        ));
        return;
    };
    out.push((LineKind::Normal, format!("cgroup {}", c.name)));
    if c.path != c.name && !c.path.is_empty() {
        out.push((LineKind::Note, format!("path {}", c.path)));
    }
    let id = &c.identity;
    if let (Some(ns), Some(pod)) = (&id.namespace, &id.pod) {
        let ctr = id
            .container
            .as_ref()
            .map_or(String::new(), |c| format!(" · container {c}"));
        out.push((LineKind::Normal, format!("namespace {ns} · pod {pod}{ctr}")));
    }
    let mut parts = Vec::new();
    if let Some(pod) = &id.pod_uid {
        let qos = id
            .qos
            .map_or(String::new(), |q| format!(" ({})", q.as_str()));
        parts.push(format!("pod {pod}{qos}"));
    }
    if let Some(ctr) = &id.container_id {
        let rt = id.runtime.as_deref().unwrap_or("container");
        parts.push(format!("{rt} {ctr}"));
    }
    if let Some(u) = &id.unit {
        parts.push(format!("unit {u}"));
    }
    if !parts.is_empty() {
        out.push((LineKind::Normal, parts.join(" · ")));
    }
}

fn placement(out: &mut Vec<(LineKind, String)>, p: &Pane) {
    out.push((LineKind::Heading, "Placement".into()));
    let aff = &p.task.affinity;
    let cpuset = p.cgroup.as_ref().map(|c| c.cpus.as_str()).unwrap_or("");
    let (kind, verdict) = match (
        CpuSet::parse_list(aff).ok(),
        CpuSet::parse_list(cpuset).ok().filter(|s| !s.is_empty()),
    ) {
        (_, None) => (
            LineKind::Normal,
            "cpuset unknown or unrestricted".to_string(),
        ),
        (Some(a), Some(s)) if a.is_subset(&s) => (
            LineKind::Normal,
            format!("cpuset {cpuset}: affinity within it"),
        ),
        (Some(a), Some(s)) if !a.intersects(&s) => (
            LineKind::Warn,
            format!("cpuset {cpuset}: no CPU of its affinity is in it (the cpuset wins)"),
        ),
        (Some(a), Some(s)) => (
            LineKind::Warn,
            format!(
                "cpuset {cpuset}: affinity also names {} (never used: the cpuset wins)",
                a.difference(&s).to_list()
            ),
        ),
        (None, Some(_)) => (LineKind::Normal, format!("cpuset {cpuset}")),
    };
    out.push((kind, format!("affinity {aff} · {verdict}")));
    let nodes: Vec<String> = p.nodes.iter().map(u32::to_string).collect();
    let nodes = match nodes.len() {
        0 => "NUMA node unknown".to_string(),
        1 => format!("NUMA node {}", nodes[0]),
        _ => format!("NUMA nodes {}", nodes.join(",")),
    };
    let nics = if !p.facts_loaded {
        "NICs: waiting for the topology".to_string()
    } else if p.nics.is_empty() {
        "no physical NIC on them".to_string()
    } else if p.host_nodes <= 1 {
        format!("NICs (one node): {}", p.nics.join(", "))
    } else {
        format!("local NICs: {}", p.nics.join(", "))
    };
    out.push((LineKind::Normal, format!("{nodes} · {nics}")));
}

fn findings(out: &mut Vec<(LineKind, String)>, p: &Pane) {
    out.push((LineKind::Heading, "Pinning findings".into()));
    if !p.facts_loaded {
        out.push((
            LineKind::Note,
            "waiting for the topology thread's lint (Pinning view)".into(),
        ));
        return;
    }
    if p.findings.is_empty() {
        out.push((LineKind::Note, "none name it".into()));
    }
    for f in &p.findings {
        let kind = match f.severity {
            Severity::Info => LineKind::Normal,
            _ => LineKind::Warn,
        };
        let tids = if f.tids == [p.pid] {
            String::new()
        } else {
            let t: Vec<String> = f.tids.iter().map(u32::to_string).collect();
            format!(" (TID {})", t.join(","))
        };
        out.push((
            kind,
            format!(
                "{} {} {}: {}{tids}",
                f.severity.as_str(),
                f.rule,
                f.name,
                f.message
            ),
        ));
    }
}

fn threads(out: &mut Vec<(LineKind, String)>, p: &Pane, cx: &RowCtx, replay: bool) {
    if p.threads.is_empty() {
        out.push((LineKind::Heading, "Threads".into()));
        let note = if p.frame_threads {
            "no thread rows for it in this frame"
        } else if replay {
            "this recording has no thread rows (recorded without -H)"
        } else if p.exited {
            "no thread rows were collected before it exited"
        } else {
            "thread rows are collected while this pane is open: they come with the next interval"
        };
        out.push((LineKind::Note, note.into()));
        return;
    }
    let more = if p.thread_rows > p.threads.len() {
        format!(", busiest {} shown", p.threads.len())
    } else {
        String::new()
    };
    out.push((
        LineKind::Heading,
        format!("Threads ({}{more}, busiest first)", p.thread_rows),
    ));
    let cols = [
        ProcColumn::Pid,
        ProcColumn::True,
        ProcColumn::Stolen,
        ProcColumn::NetRx,
        ProcColumn::Cpu,
    ];
    let row = |cells: &mut dyn Iterator<Item = (ProcColumn, String)>, name: &str| {
        let mut l = String::new();
        for (c, t) in cells {
            let w = c.width() as usize;
            l.push_str(&format!("{t:>w$} "));
        }
        l.push_str(name);
        l
    };
    out.push((
        LineKind::Note,
        row(
            &mut cols.iter().map(|c| (*c, c.header(cx.traced, true))),
            "COMMAND",
        ),
    ));
    for t in &p.threads {
        out.push((
            LineKind::Normal,
            row(&mut cols.iter().map(|c| (*c, c.text(t, cx))), &t.comm),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::fixtures;

    fn cx() -> (std::collections::HashMap<u32, String>, Vec<Option<u32>>) {
        (fixtures::users(), Vec::new())
    }

    /// TRUE% above ONCPU% is explained where one reads the task, not left
    /// to contradict "what it really got".
    #[test]
    fn rebilled_time_is_explained() {
        let mut f = fixtures::busy_host();
        let t = f.processes.iter_mut().find(|t| t.pid == 880).unwrap();
        t.rebilled_pct = 3.5;
        let p = pane(Some(880), Some(&f), &Facts::default(), None).unwrap();
        let (users, nodes) = cx();
        let rc = RowCtx {
            users: &users,
            cpu_node: &nodes,
            traced: true,
            cmdline: false,
        };
        let text: Vec<String> = body_lines(&p, &rc, false)
            .into_iter()
            .map(|l| l.1)
            .collect();
        assert!(
            text.iter()
                .any(|l| l.starts_with("TRUE% includes REBILL% 3.5")),
            "{text:?}"
        );
        assert_eq!(ProcColumn::Rebill.text(&p.task, &rc), "3.5");
    }

    #[test]
    fn a_process_that_exits_keeps_its_last_data() {
        let f = fixtures::busy_host();
        let p = pane(Some(880), Some(&f), &Facts::default(), None).unwrap();
        assert!(!p.exited);
        assert_eq!(p.thread_rows, 3);
        assert_eq!(p.threads.len(), 3);
        let mut gone = fixtures::busy_host_at(1);
        gone.processes.retain(|t| t.pid != 880);
        let q = pane(Some(880), Some(&gone), &Facts::default(), Some(p.clone())).unwrap();
        assert!(q.exited);
        assert_eq!(q.task, p.task);
        // Back under the same name (a replay seek): alive again.
        let r = pane(Some(880), Some(&f), &Facts::default(), Some(q.clone())).unwrap();
        assert!(!r.exited);
        // Another name under the PID: another process; the pane stays dead.
        let mut reused = fixtures::busy_host();
        for t in reused.processes.iter_mut().filter(|t| t.pid == 880) {
            t.comm = "other".into();
        }
        let s = pane(Some(880), Some(&reused), &Facts::default(), Some(q)).unwrap();
        assert!(s.exited && s.task.comm == "vpp_main");
    }

    #[test]
    fn busiest_threads_are_kept_first() {
        let mut f = fixtures::busy_host();
        let proto = f.threads[0].clone();
        f.threads = (0..200u32)
            .map(|i| TaskView {
                pid: 9,
                tid: 1000 + i,
                true_pct: f64::from(i),
                ..proto.clone()
            })
            .collect();
        f.processes.push(TaskView {
            pid: 9,
            tid: 9,
            ..proto
        });
        let p = pane(Some(9), Some(&f), &Facts::default(), None).unwrap();
        assert_eq!(p.thread_rows, 200);
        assert_eq!(p.threads.len(), PANE_THREADS);
        assert_eq!(p.threads[0].tid, 1199);
        assert_eq!(p.threads[PANE_THREADS - 1].tid, 1200 - PANE_THREADS as u32);
        let (users, nodes) = cx();
        let cx = RowCtx {
            users: &users,
            cpu_node: &nodes,
            traced: true,
            cmdline: false,
        };
        let text = body_lines(&p, &cx, false);
        assert!(text.iter().any(|(_, l)| l.contains("busiest 64 shown")));
    }
}
