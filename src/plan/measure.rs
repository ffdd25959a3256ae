//! What the live collector says before and after `--apply`, and the
//! verdict that reverts a plan that made things worse. Pure: frames in,
//! figures and a verdict out.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{Load, Victim};
use crate::model::frame::{CpuView, Frame};
use crate::pinning::Evidence;
use crate::sample::NET_RX;
use crate::sys::cpuset::CpuSet;
use crate::topology::HostTopology;

/// Each of an apply's before and after windows when not given
/// (`--measure`): long enough that two windows of the same load agree
/// within [`TRUE_DROP_PTS`].
pub const DEFAULT_WINDOW: std::time::Duration = std::time::Duration::from_secs(10);

/// A victim whose TRUE% fell by more than this many points is worse off
/// (below it, two 10 s windows of the same load differ by noise).
pub const TRUE_DROP_PTS: f64 = 2.0;
/// A CPU no victim runs on that went past this share busy, by more than
/// [`CPU_BUSY_RISE`] points: a CPU that was already near it is noise.
pub const CPU_BUSY_MAX: f64 = 95.0;
pub const CPU_BUSY_RISE: f64 = 5.0;
/// Drops per second that count as "rose": more than this many more, and
/// more than [`DROP_SHARE`] of the packets received.
pub const DROP_MIN_PER_S: f64 = 10.0;
pub const DROP_SHARE: f64 = 0.01;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VictimLoad {
    pub tid: u32,
    pub comm: String,
    /// `None` when the thread was not seen (exited).
    pub on_cpu_pct: Option<f64>,
    pub stolen_pct: Option<f64>,
    pub true_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuLoad {
    pub cpu: u32,
    pub busy_pct: f64,
    pub net_rx_pct: f64,
}

/// One window's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    pub seconds: f64,
    pub victims: Vec<VictimLoad>,
    pub cpus: Vec<CpuLoad>,
    /// softnet backlog drops plus device receive drops, per second.
    pub drops_per_s: f64,
    pub packets_per_s: f64,
}

fn busy(c: &CpuView) -> f64 {
    (100.0 - c.idle_pct - c.iowait_pct - c.steal_pct).clamp(0.0, 100.0)
}

/// NET_RX softirq time on the CPU (traced by BPF; /proc's softirq share
/// without it).
fn net_rx(c: &CpuView) -> f64 {
    let traced = c.traced_softirq_pct[NET_RX];
    if traced > 0.0 { traced } else { c.soft_pct }
}

impl Measure {
    pub fn of(f: &Frame, victims: &[Victim]) -> Measure {
        let rows = f.finest_rows();
        Measure {
            seconds: f.interval_s,
            victims: victims
                .iter()
                .map(|v| {
                    let t = rows.iter().find(|t| t.tid == v.tid);
                    VictimLoad {
                        tid: v.tid,
                        comm: v.comm.clone(),
                        on_cpu_pct: t.map(|t| t.on_cpu_pct),
                        stolen_pct: t.map(|t| t.stolen_pct),
                        true_pct: t.map(|t| t.true_pct),
                    }
                })
                .collect(),
            cpus: f
                .cpus
                .iter()
                .filter(|c| c.online)
                .map(|c| CpuLoad {
                    cpu: c.cpu,
                    busy_pct: busy(c),
                    net_rx_pct: net_rx(c),
                })
                .collect(),
            drops_per_s: f.cpus.iter().map(|c| c.softnet_dropped_per_s).sum::<f64>()
                + f.devices.iter().map(|d| d.rx_dropped_per_s).sum::<f64>(),
            packets_per_s: f.devices.iter().map(|d| d.rx_packets_per_s).sum(),
        }
    }
}

/// What the planner takes from one measured frame: per-CPU load, and
/// each thread's CPU share and stolen share. The TUI's collector thread
/// keeps the latest one for its topology thread, so the plan `P` applies
/// is the one `--plan` would compute.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub load: Load,
    /// tid → (percent on CPU, percent of that stolen by interrupts).
    pub threads: BTreeMap<u32, (f64, f64)>,
}

impl Observed {
    pub fn of(f: &Frame) -> Observed {
        Observed {
            load: Load {
                cpu_busy_pct: f
                    .cpus
                    .iter()
                    .filter(|c| c.online)
                    .map(|c| (c.cpu, busy(c)))
                    .collect(),
                cpu_net_rx_pct: f.cpus.iter().map(|c| (c.cpu, net_rx(c))).collect(),
                measured: Some(format!("measured {:.1} s", f.interval_s)),
                robbed: robberies(f),
            },
            threads: f
                .finest_rows()
                .iter()
                .map(|t| (t.tid, (t.on_cpu_pct, t.stolen_pct)))
                .collect(),
        }
    }

    /// Folds the threads' figures into the topology and the lint's
    /// evidence, so "busy" means measured busy; returns the load.
    pub fn fold(&self, topo: &mut HostTopology, ev: &mut Evidence) -> Load {
        for th in &mut topo.threads {
            if let Some(&(on_cpu, stolen)) = self.threads.get(&th.tid) {
                th.cpu_pct = Some(on_cpu);
                ev.stolen_pct.insert(th.tid, stolen);
            }
        }
        self.load.clone()
    }

    /// The lint's evidence alone: every thread's stolen share.
    pub fn evidence(&self) -> Evidence {
        Evidence {
            stolen_pct: self.threads.iter().map(|(&t, &(_, s))| (t, s)).collect(),
        }
    }
}

/// The frame's robbed-by pairs with where each side runs (pairs whose
/// processes are not in the frame are left out).
fn robberies(f: &Frame) -> Vec<super::Robbery> {
    let Some(t) = &f.traffic else {
        return Vec::new();
    };
    let row = |pid: u32| f.processes.iter().find(|p| p.pid == pid);
    t.robbed
        .iter()
        .filter_map(|r| {
            let (v, b) = (row(r.victim_pid)?, row(r.beneficiary_pid)?);
            Some(super::Robbery {
                victim_pid: r.victim_pid,
                victim_comm: r.victim_comm.clone(),
                victim_cpu: v.last_cpu,
                victim_affinity: CpuSet::parse_list(&v.affinity).unwrap_or_default(),
                beneficiary_pid: r.beneficiary_pid,
                beneficiary_comm: r.beneficiary_comm.clone(),
                beneficiary_cpu: b.last_cpu,
                pct: r.pct,
            })
        })
        .collect()
}

/// The planner's view of a measured frame ([`Observed::fold`]).
pub fn observe(f: &Frame, topo: &mut HostTopology, ev: &mut Evidence) -> Load {
    Observed::of(f).fold(topo, ev)
}

/// Why the plan made things worse; empty when it did not. `exempt`: the
/// victims' CPUs, busy by design (a pinned spinner is always at 100 %).
pub fn judge(before: &Measure, after: &Measure, exempt: &CpuSet) -> Vec<String> {
    let mut worse = Vec::new();
    for a in &after.victims {
        let Some(b) = before.victims.iter().find(|b| b.tid == a.tid) else {
            continue;
        };
        if let (Some(tb), Some(ta)) = (b.true_pct, a.true_pct)
            && ta < tb - TRUE_DROP_PTS
        {
            worse.push(format!(
                "{} ({}) TRUE% fell from {tb:.1} to {ta:.1}",
                a.tid, a.comm
            ));
        }
    }
    for a in after.cpus.iter().filter(|a| !exempt.contains(a.cpu)) {
        let b = before.cpus.iter().find(|b| b.cpu == a.cpu);
        if a.busy_pct > CPU_BUSY_MAX
            && b.is_some_and(|b| {
                b.busy_pct <= CPU_BUSY_MAX && a.busy_pct - b.busy_pct > CPU_BUSY_RISE
            })
        {
            worse.push(format!(
                "CPU {} went from {:.1} % to {:.1} % busy",
                a.cpu,
                b.map_or(0.0, |b| b.busy_pct),
                a.busy_pct
            ));
        }
    }
    let rise = after.drops_per_s - before.drops_per_s;
    if rise > DROP_MIN_PER_S && rise > DROP_SHARE * after.packets_per_s {
        worse.push(format!(
            "drops rose from {:.0}/s to {:.0}/s",
            before.drops_per_s, after.drops_per_s
        ));
    }
    worse
}

/// `--plan --apply --format json`: the whole run as one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplyReport {
    pub schema: String,
    pub plan: super::Plan,
    pub revert_file: String,
    /// "PATH (netns NS): OLD -> NEW", in the order written.
    pub written: Vec<String>,
    pub before: Measure,
    pub after: Measure,
    /// Why the plan was judged worse; empty when kept.
    pub worse: Vec<String>,
    pub reverted: bool,
    /// What the automatic revert restored.
    pub restored: Vec<String>,
}

/// [`ApplyReport`]'s schema.
pub const APPLY_SCHEMA: &str = "nettop.apply/1";

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// Before/after per victim and per CPU, as README shows it.
pub fn render_table(before: &Measure, after: &Measure) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "before/after ({:.1} s each)\n\n{:<8} {:<16} {:>14} {:>14} {:>14}",
        before.seconds, "TID", "COMMAND", "ONCPU% b→a", "STOLEN% b→a", "TRUE% b→a"
    );
    for a in &after.victims {
        let b = before.victims.iter().find(|b| b.tid == a.tid);
        let _ = writeln!(
            o,
            "{:<8} {:<16} {:>14} {:>14} {:>14}",
            a.tid,
            a.comm,
            format!(
                "{} → {}",
                pct(b.and_then(|b| b.on_cpu_pct)),
                pct(a.on_cpu_pct)
            ),
            format!(
                "{} → {}",
                pct(b.and_then(|b| b.stolen_pct)),
                pct(a.stolen_pct)
            ),
            format!("{} → {}", pct(b.and_then(|b| b.true_pct)), pct(a.true_pct)),
        );
    }
    let _ = writeln!(
        o,
        "\n{:<5} {:>14} {:>14}",
        "CPU", "BUSY% b→a", "NET_RX% b→a"
    );
    for a in &after.cpus {
        let b = before.cpus.iter().find(|b| b.cpu == a.cpu);
        let _ = writeln!(
            o,
            "{:<5} {:>14} {:>14}",
            a.cpu,
            format!("{} → {:.1}", pct(b.map(|b| b.busy_pct)), a.busy_pct),
            format!("{} → {:.1}", pct(b.map(|b| b.net_rx_pct)), a.net_rx_pct),
        );
    }
    let _ = writeln!(
        o,
        "\ndrops/s {:.0} → {:.0}",
        before.drops_per_s, after.drops_per_s
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(true_pct: f64, busy: f64, drops: f64) -> Measure {
        Measure {
            seconds: 10.0,
            victims: vec![VictimLoad {
                tid: 7,
                comm: "spin".into(),
                on_cpu_pct: Some(100.0),
                stolen_pct: Some(100.0 - true_pct),
                true_pct: Some(true_pct),
            }],
            cpus: vec![CpuLoad {
                cpu: 1,
                busy_pct: busy,
                net_rx_pct: 0.0,
            }],
            drops_per_s: drops,
            packets_per_s: 10_000.0,
        }
    }

    #[test]
    fn better_or_equal_is_kept() {
        let none = CpuSet::new();
        assert!(judge(&m(70.0, 50.0, 0.0), &m(99.0, 50.0, 0.0), &none).is_empty());
        // Within the noise allowance.
        assert!(judge(&m(99.0, 50.0, 0.0), &m(97.5, 50.0, 0.0), &none).is_empty());
        // Already past 95 % before, or near it: not "went past".
        assert!(judge(&m(90.0, 99.0, 0.0), &m(95.0, 100.0, 0.0), &none).is_empty());
        assert!(judge(&m(90.0, 94.0, 0.0), &m(95.0, 96.0, 0.0), &none).is_empty());
        // A victim's own CPU is busy by design.
        let cpu1 = CpuSet::from_cpus([1]);
        assert!(judge(&m(90.0, 60.0, 0.0), &m(95.0, 100.0, 0.0), &cpu1).is_empty());
        // A few more drops on 10,000 packets/s.
        assert!(judge(&m(90.0, 50.0, 0.0), &m(95.0, 50.0, 50.0), &none).is_empty());
    }

    #[test]
    fn each_kind_of_worse_is_reported() {
        let none = CpuSet::new();
        let w = judge(&m(99.0, 50.0, 0.0), &m(70.0, 50.0, 0.0), &none);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("TRUE% fell from 99.0 to 70.0"), "{w:?}");
        let w = judge(&m(90.0, 60.0, 0.0), &m(90.0, 96.0, 0.0), &none);
        assert_eq!(w, vec!["CPU 1 went from 60.0 % to 96.0 % busy".to_string()]);
        let w = judge(&m(90.0, 60.0, 0.0), &m(90.0, 60.0, 500.0), &none);
        assert_eq!(w, vec!["drops rose from 0/s to 500/s".to_string()]);
    }
}
