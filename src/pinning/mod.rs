//! `--pinning-check`: a lint for misaligned CPU/IRQ/NUMA affinity.
//!
//! [`check`] is pure (topology in, report out) and the renderers do no I/O,
//! so the TUI's Pinning view, recordings (`--replay` of a saved topology) and
//! tests all share one implementation. Rule IDs are stable: scripts and
//! suppressions may key on them; never renumber, only add.

mod rules;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::sys::cpuset::CpuSet;
use crate::sys::sanitize::Untrusted;
use crate::topology::{self, HostTopology};

pub use rules::{RuleId, RuleInfo};

/// JSON schema identifier; bump the number on any incompatible change
/// (documented in docs/pinning-schema.md).
pub const SCHEMA: &str = "nettop.pinning/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Live measurements that sharpen the lint when a collector is running.
/// Without them the lint judges configuration alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// tid → percent of its CPU time taken by interrupt work run in its
    /// context (the BPF collector's "stolen" share).
    pub stolen_pct: BTreeMap<u32, f64>,
}

/// A thread named by a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRef {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub affinity: CpuSet,
    /// Measured CPU use during the check (live only).
    pub cpu_pct: Option<f64>,
    /// Stolen share from [`Evidence`], when given.
    pub stolen_pct: Option<f64>,
    /// The container or service it belongs to (from its cgroup path), so a
    /// finding names the workload, not only a PID that will be gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable rule ID, serialized as its code ("NT003").
    pub rule: RuleId,
    /// Stable rule name ("rps-on-pinned-cpu").
    pub name: String,
    pub severity: Severity,
    /// One line: what is wrong where.
    pub summary: String,
    pub threads: Vec<ThreadRef>,
    pub irqs: Vec<u32>,
    pub cpus: CpuSet,
    pub nics: Vec<String>,
    /// Why it costs performance, one or two sentences.
    pub why: String,
    /// Commands that fix it (shell, to be reviewed before running).
    pub fix: Vec<String>,
    /// Facts the finding rests on (measurements, counts).
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Counts {
    pub error: usize,
    pub warning: usize,
    pub info: usize,
}

/// What was looked at, so "no findings" can be trusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Summary {
    pub source: String,
    pub cpu_source: String,
    pub online: CpuSet,
    pub numa_nodes: usize,
    pub isolated: CpuSet,
    pub irqbalance: Option<u32>,
    pub nics: Vec<String>,
    /// XDP attachment per NIC, same order as `nics`.
    #[serde(default)]
    pub nic_xdp: Vec<topology::xdp::NicXdp>,
    pub irqs: usize,
    pub threads: usize,
    pub pinned_threads: usize,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub summary: Summary,
    pub counts: Counts,
    pub findings: Vec<Finding>,
}

impl Report {
    /// Highest severity present.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// Exit code for `--fail-on`: 1 when a finding reaches the threshold.
    pub fn exit_code(&self, fail_on: Option<Severity>) -> u8 {
        let Some(min) = fail_on else {
            return 0;
        };
        u8::from(self.worst().is_some_and(|w| w >= min))
    }
}

/// Lints a topology. Pure: same input, same report, in a stable order.
pub fn check(topo: &HostTopology, evidence: &Evidence) -> Report {
    let mut findings = rules::run(topo, evidence);
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.rule.cmp(&b.rule))
            .then_with(|| a.summary.cmp(&b.summary))
    });
    let mut counts = Counts::default();
    for f in &findings {
        match f.severity {
            Severity::Error => counts.error += 1,
            Severity::Warning => counts.warning += 1,
            Severity::Info => counts.info += 1,
        }
    }
    Report {
        schema: SCHEMA.to_string(),
        summary: Summary {
            source: topo.source.clone(),
            cpu_source: topo.cpu_source.clone(),
            online: topo.online.clone(),
            numa_nodes: topo.numa_nodes.len(),
            isolated: topo.host.isolated(),
            irqbalance: topo.host.irqbalance.as_ref().map(|i| i.pid),
            nics: topo.nics.iter().map(|n| n.label()).collect(),
            nic_xdp: topology::xdp::summary(&topo.nics),
            irqs: topo.irqs.len(),
            threads: topo.threads.iter().filter(|t| !t.kthread).count(),
            pinned_threads: topo
                .threads
                .iter()
                .filter(|t| t.is_pinned(&topo.online))
                .count(),
            notes: topo.notes.clone(),
        },
        counts,
        findings,
    }
}

/// The threads the lint protects: busy user threads pinned to at most two
/// CPUs ("busy" as the rules judge it: measured stolen or CPU share, else
/// narrow pinning taken at face value). The planner keeps interrupts off
/// their CPUs.
pub fn data_plane_threads(topo: &HostTopology, evidence: &Evidence) -> Vec<topology::ThreadInfo> {
    rules::data_plane(topo, evidence)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Fix commands shown per finding in text; JSON always has all of them.
const TEXT_MAX_FIX: usize = 6;
const TEXT_MAX_THREADS: usize = 8;
const TEXT_MAX_EVIDENCE: usize = 4;

/// Human report, grouped by severity, worst first.
pub fn render_text(r: &Report) -> String {
    let mut o = String::new();
    let s = &r.summary;
    let _ = writeln!(
        o,
        "nettop pinning check: {}, {}, {}",
        plural(r.counts.error, "error", "errors"),
        plural(r.counts.warning, "warning", "warnings"),
        plural(r.counts.info, "info", "infos"),
    );
    let _ = writeln!(
        o,
        "host: {} · {} · online CPUs {} · {} · isolated {} · irqbalance {}",
        s.source,
        s.cpu_source,
        if s.online.is_empty() {
            "?".into()
        } else {
            s.online.to_list()
        },
        plural(s.numa_nodes, "NUMA node", "NUMA nodes"),
        if s.isolated.is_empty() {
            "none".into()
        } else {
            s.isolated.to_list()
        },
        match s.irqbalance {
            Some(p) => format!("running (pid {p})"),
            None => "not running".into(),
        },
    );
    let _ = writeln!(
        o,
        "checked: {} ({} pinned), {} [{}], {}",
        plural(s.threads, "thread", "threads"),
        s.pinned_threads,
        plural(s.nics.len(), "NIC", "NICs"),
        s.nics.join(" "),
        plural(s.irqs, "IRQ", "IRQs"),
    );
    if r.findings.is_empty() {
        let _ = writeln!(o, "\nno findings");
    }
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        let group: Vec<&Finding> = r.findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(o, "\n{}", sev.as_str().to_uppercase());
        for f in group {
            let _ = writeln!(o, "  {} {}: {}", f.rule, f.name, f.summary);
            if !f.threads.is_empty() {
                let mut names: Vec<String> = f
                    .threads
                    .iter()
                    .take(TEXT_MAX_THREADS)
                    .map(|t| {
                        let mut s = if t.pid == t.tid {
                            format!("{} {}", t.tid, t.comm)
                        } else {
                            format!("{} {} (pid {})", t.tid, t.comm, t.pid)
                        };
                        if let Some(w) = &t.workload {
                            s.push_str(&format!(" [{w}]"));
                        }
                        s
                    })
                    .collect();
                if f.threads.len() > TEXT_MAX_THREADS {
                    names.push(format!("… {} more", f.threads.len() - TEXT_MAX_THREADS));
                }
                let _ = writeln!(o, "      threads: {}", names.join(", "));
            }
            let mut facts = Vec::new();
            if !f.cpus.is_empty() {
                facts.push(format!("cpus {}", f.cpus));
            }
            if !f.irqs.is_empty() {
                let irqs: Vec<String> = f.irqs.iter().map(u32::to_string).collect();
                facts.push(format!("irqs {}", irqs.join(",")));
            }
            if !f.nics.is_empty() {
                facts.push(format!("nics {}", f.nics.join(",")));
            }
            if !facts.is_empty() {
                let _ = writeln!(o, "      {}", facts.join(" · "));
            }
            for e in f.evidence.iter().take(TEXT_MAX_EVIDENCE) {
                let _ = writeln!(o, "      evidence: {e}");
            }
            if f.evidence.len() > TEXT_MAX_EVIDENCE {
                let _ = writeln!(
                    o,
                    "      evidence: … {} more (see --format json)",
                    f.evidence.len() - TEXT_MAX_EVIDENCE
                );
            }
            let _ = writeln!(o, "      why: {}", f.why);
            for (i, c) in f.fix.iter().enumerate() {
                if i == TEXT_MAX_FIX {
                    let _ = writeln!(
                        o,
                        "      fix: … {} more (see --format json)",
                        f.fix.len() - TEXT_MAX_FIX
                    );
                    break;
                }
                let _ = writeln!(o, "      fix: {c}");
            }
        }
    }
    if !s.notes.is_empty() {
        let _ = writeln!(o, "\nnotes:");
        for n in &s.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
    o
}

/// Machine report, schema [`SCHEMA`].
pub fn render_json(r: &Report) -> String {
    // Serialising plain structs with string keys cannot fail; fall back to a
    // valid document rather than panic if it ever did.
    serde_json::to_string_pretty(r)
        .unwrap_or_else(|e| format!("{{\"schema\":\"{SCHEMA}\",\"error\":\"{e}\"}}"))
}

/// Reads a saved [`HostTopology`] (JSON) to lint a configuration recorded
/// elsewhere.
pub fn load_saved(path: &std::path::Path) -> anyhow::Result<HostTopology> {
    // A regular file, bounded: `--replay /dev/zero` or a FIFO must fail,
    // not eat memory or hang. A saved topology of a 40,000-thread host is
    // ~12 MB of JSON.
    let bytes = crate::sys::safefile::read_input(path, crate::sys::sysroot::MAX_LARGE_FILE)?;
    let mut topo: HostTopology = serde_json::from_slice(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: neither a nettop recording nor a saved topology (JSON HostTopology): {e}",
            path.display()
        )
    })?;
    topo.sanitize();
    Ok(topo)
}
