//! `--plan`: one coherent layout for the host, from the topology, the
//! lint's findings and the live load, instead of one fix per finding.
//!
//! The lint's fixes are local: each finding's command is right alone, and
//! several of them together can undo each other (an IRQ moved onto the CPU
//! another queue's RPS now targets). [`compute`] decides every queue's RPS
//! mask first, then places every misplaced queue IRQ on one housekeeping
//! CPU of its NIC's node that no busy pinned thread, isolated CPU, SMT
//! sibling of one, or new RPS target uses, spreading them by the measured
//! load. It is pure (same input, same plan) so fixtures test it; `apply`
//! and `revert` do the writing, `measure` the before/after.

pub mod apply;
pub mod journal;
mod layout;
pub mod measure;
mod render;
pub mod revert;
pub mod steps;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::pinning::{Evidence, Report, RuleId};
use crate::sys::cpuset::CpuSet;
use crate::topology::HostTopology;

pub use render::{render_json, render_sh, render_text};

/// JSON schema identifier (docs/plan.md); bumped on incompatible changes.
pub const SCHEMA: &str = "nettop.plan/1";

/// What a change touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `/proc/irq/N/smp_affinity_list`.
    IrqAffinity,
    /// `/sys/class/net/DEV/queues/rx-N/rps_cpus`.
    Rps,
    /// `/sys/class/net/DEV/queues/tx-N/xps_cpus`.
    Xps,
    /// The RSS indirection table (`ethtool -X`).
    Rss,
    /// A flow-steering rule (`ethtool -N`).
    Ntuple,
    /// The kernel command line: shown, never applied.
    Cmdline,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::IrqAffinity => "irq",
            Kind::Rps => "rps",
            Kind::Xps => "xps",
            Kind::Rss => "rss",
            Kind::Ntuple => "ntuple",
            Kind::Cmdline => "cmdline",
        }
    }

    /// Written by `--apply` (a procfs/sysfs file whose previous value the
    /// revert file can hold exactly). ethtool tables are printed for review
    /// and the command line is never written.
    pub fn applied(self) -> bool {
        matches!(self, Kind::IrqAffinity | Kind::Rps | Kind::Xps)
    }
}

/// One change of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub kind: Kind,
    /// Device label ("eth0", "veth1 (netns blue)"); empty for IRQs of no
    /// known device and the command line.
    #[serde(default)]
    pub nic: String,
    /// Network namespace the file lives in; empty for nettop's own.
    #[serde(default)]
    pub netns: String,
    /// The file written, as seen inside `netns`; for ethtool and the
    /// command line, what changes.
    pub target: String,
    pub from: String,
    pub to: String,
    /// The shell line that makes the change (`--format sh`).
    pub command: String,
    /// Findings this change resolves, by rule.
    pub resolves: Vec<RuleId>,
    pub why: String,
}

/// A thread a resolved finding names: what `--apply` measures before and
/// after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Victim {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub affinity: CpuSet,
}

/// A finding no change addresses, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unaddressed {
    pub rule: RuleId,
    pub summary: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub schema: String,
    pub source: String,
    /// How the load was known: "measured 1.0 s" or "none (configuration only)".
    pub load: String,
    /// CPUs interrupts are kept off: busy narrowly pinned threads' and
    /// isolated ones.
    pub protected: CpuSet,
    /// False when some interrupt has no good place (every candidate CPU is
    /// protected); `impossible` says which and why.
    pub feasible: bool,
    pub changes: Vec<Change>,
    pub impossible: Vec<String>,
    pub unaddressed: Vec<Unaddressed>,
    pub victims: Vec<Victim>,
}

impl Plan {
    /// The changes `--apply` writes.
    pub fn applied(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.kind.applied())
    }
}

/// The live load the planner spreads interrupts by: per CPU, percent busy
/// and percent in NET_RX softirq over the measured window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Load {
    pub cpu_busy_pct: BTreeMap<u32, f64>,
    pub cpu_net_rx_pct: BTreeMap<u32, f64>,
    /// "measured 1.0 s", or `None` for configuration only.
    pub measured: Option<String>,
    /// NET_RX time that ran in one process's time for another's sockets
    /// (the frame's robbed-by pairs), largest first.
    pub robbed: Vec<Robbery>,
}

/// A victim robbed by a beneficiary's receive work, and where each runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Robbery {
    pub victim_pid: u32,
    pub victim_comm: String,
    /// The CPU it last ran on (where its time was taken).
    pub victim_cpu: u32,
    pub victim_affinity: CpuSet,
    pub beneficiary_pid: u32,
    pub beneficiary_comm: String,
    pub beneficiary_cpu: u32,
    /// % of one CPU.
    pub pct: f64,
}

/// The plan for a host. `evidence` must be the one `report` was made with.
pub fn compute(topo: &HostTopology, report: &Report, evidence: &Evidence, load: &Load) -> Plan {
    layout::compute(topo, report, evidence, load)
}

/// `--nic`: the plan for these devices only (a name matches in every
/// namespace; a label "DEV (netns NS)" in that one); IRQs and steering of
/// other devices are then left alone. Errors on a name no device has.
pub fn only_nics(topo: &mut HostTopology, want: &[String]) -> anyhow::Result<()> {
    for w in want {
        if !topo.nics.iter().any(|n| &n.name == w || &n.label() == w) {
            let have: Vec<String> = topo.nics.iter().map(|n| n.label()).collect();
            anyhow::bail!("--nic {w}: no such device (devices: {})", have.join(", "));
        }
    }
    topo.nics
        .retain(|n| want.iter().any(|w| w == &n.name || w == &n.label()));
    Ok(())
}

/// Reads a plan written by `--format json` (reviewed, perhaps edited) for
/// `--apply PLAN`. Every change `--apply` would write is checked as the
/// revert file's entries are ([`apply::validate`]).
pub fn load_saved(path: &std::path::Path) -> anyhow::Result<Plan> {
    let bytes = crate::sys::safefile::read_input(path, 16 << 20)?;
    let plan: Plan = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: not a nettop plan (JSON): {e}", path.display()))?;
    if plan.schema != SCHEMA {
        anyhow::bail!(
            "{}: schema {:?}, this nettop reads {SCHEMA}",
            path.display(),
            plan.schema
        );
    }
    for c in plan.applied() {
        apply::validate(c.kind, &c.target, &c.to)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    Ok(plan)
}
