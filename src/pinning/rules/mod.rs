//! The lint rules, by family: [`irq`] (NIC IRQ and RPS placement),
//! [`isolation`] (isolcpus/nohz_full and irqbalance), [`numa`], [`cpuset`]
//! (threads' affinity and cgroup cpusets), [`smt`] (hyperthread
//! siblings) and [`steering`] (RSS table, flow rules, XDP mode). Each rule looks at the topology only (plus optional evidence)
//! and says what is wrong, why it costs, and a command that fixes it.
//!
//! A rule is named by a [`RuleId`], never by a string: its code, name,
//! default severity and one-line description live in the one table below,
//! so a misspelt id does not compile.

mod cpuset;
mod ctx;
mod irq;
mod isolation;
mod numa;
mod smt;
mod steering;

use serde::{Deserialize, Serialize};

use super::{Evidence, Finding, Severity, ThreadRef};
use crate::sys::cpuset::CpuSet;
use crate::topology::{HostTopology, ThreadInfo};

use ctx::Ctx;

/// What the table says about one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    pub id: RuleId,
    /// Stable code, as printed and in JSON ("NT003").
    pub code: &'static str,
    /// Stable name ("rps-on-pinned-cpu").
    pub name: &'static str,
    /// Default severity (evidence may raise it).
    pub severity: Severity,
    /// What it catches, one line.
    pub catches: &'static str,
}

/// Defines [`RuleId`] and its table from one list, so a rule cannot exist
/// without a code, name, severity and description. Serialized as the code
/// ("NT001"), which JSON reports and suppressions key on.
macro_rules! rules {
    ($($v:ident $code:literal $name:literal $sev:ident $doc:literal;)*) => {
        /// A lint rule. Codes are stable: never renumber, only add.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum RuleId {
            $(#[serde(rename = $code)] $v,)*
        }

        impl RuleId {
            /// Every rule, in code order.
            pub const ALL: &'static [RuleId] = &[$(RuleId::$v),*];

            pub const fn info(self) -> RuleInfo {
                match self {
                    $(RuleId::$v => RuleInfo {
                        id: RuleId::$v,
                        code: $code,
                        name: $name,
                        severity: Severity::$sev,
                        catches: $doc,
                    },)*
                }
            }
        }
    };
}

rules! {
    Nt001 "NT001" "thread-remote-nic-node" Warning
        "pinned thread uses a NIC attached to another NUMA node";
    Nt002 "NT002" "irq-on-pinned-cpu" Warning
        "a NIC queue IRQ lands on a pinned thread's CPU";
    Nt003 "NT003" "rps-on-pinned-cpu" Warning
        "RPS steers receive work onto a pinned thread's CPU";
    Nt004 "NT004" "interrupts-on-smt-sibling" Warning
        "the SMT sibling of a pinned thread's CPU takes NIC IRQs or RPS work";
    Nt005 "NT005" "dataplane-on-cpu0" Warning
        "busy pinned thread on CPU 0, the housekeeping CPU";
    Nt006 "NT006" "affinity-outside-cpuset" Error
        "affinity names CPUs outside the cgroup cpuset (host CPU indexes in a container)";
    Nt007 "NT007" "irq-on-isolated-cpu" Warning
        "a device IRQ lands on an isolcpus/nohz_full CPU";
    Nt008 "NT008" "irqaffinity-includes-isolated" Warning
        "irqaffinity= boot parameter includes isolated CPUs";
    Nt009 "NT009" "isolated-cpus-unprotected" Info
        "isolated CPUs but nothing keeps new device IRQs off them";
    Nt010 "NT010" "nic-irq-remote-node" Warning
        "a NIC's queue IRQs run on another NUMA node";
    Nt011 "NT011" "busy-threads-share-cpu" Warning
        "several busy threads pinned to the same CPU";
    Nt012 "NT012" "busy-threads-smt-siblings" Warning
        "busy pinned threads on the two hyperthreads of one core";
    Nt013 "NT013" "rps-on-isolated-cpu" Warning
        "RPS steers receive work onto isolated CPUs";
    Nt014 "NT014" "rps-on-cpu0" Info
        "RPS steers receive work onto CPU 0";
    Nt015 "NT015" "steering-off-node" Info
        "RPS/XPS masks name CPUs on another NUMA node than the NIC";
    Nt016 "NT016" "memory-remote-node" Warning
        "pinned thread's memory lives mostly on another NUMA node";
    Nt017 "NT017" "irqbalance-ban-misses-isolated" Warning
        "irqbalance's banned CPUs replace its isolcpus default and miss isolated CPUs";
    Nt018 "NT018" "pinned-across-nodes" Info
        "thread pinned to a CPU set that spans NUMA nodes";
    Nt019 "NT019" "rss-queue-irq-misplaced" Warning
        "a queue RSS gives weight to has its IRQ on a pinned/isolated CPU or off its consumers' node";
    Nt020 "NT020" "flow-rule-irq-misplaced" Warning
        "a flow rule steers to a queue whose IRQ lands on its consumer's own CPU or another node";
    Nt021 "NT021" "queue-out-of-rss-unused" Info
        "a queue taken out of RSS with no flow rule steering to it";
    Nt022 "NT022" "xdp-generic-on-native-driver" Warning
        "XDP attached in generic mode on a device whose driver has native XDP";
}

impl RuleId {
    pub const fn code(self) -> &'static str {
        self.info().code
    }
    pub const fn name(self) -> &'static str {
        self.info().name
    }
    pub const fn severity(self) -> Severity {
        self.info().severity
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// `finding.rule == "NT002"`: scripts and tests name rules by code.
impl PartialEq<&str> for RuleId {
    fn eq(&self, other: &&str) -> bool {
        self.code() == *other
    }
}

impl PartialEq<str> for RuleId {
    fn eq(&self, other: &str) -> bool {
        self.code() == other
    }
}

/// Stolen share at which an interrupt-sharing finding becomes an error.
const STOLEN_ERROR_PCT: f64 = 10.0;
/// Measured CPU use above which a pinned thread counts as busy.
const BUSY_PCT: f64 = 20.0;
/// "Narrow" pinning, the data-plane pattern: one CPU or one core's pair.
const NARROW: usize = 2;
/// Below this a process's memory placement is noise.
const MEM_MIN_KIB: u64 = 4096;

fn finding(id: RuleId, summary: String, why: &str) -> Finding {
    Finding {
        rule: id,
        name: id.name().to_string(),
        severity: id.severity(),
        summary,
        threads: Vec::new(),
        irqs: Vec::new(),
        cpus: CpuSet::new(),
        nics: Vec::new(),
        why: why.to_string(),
        fix: Vec::new(),
        evidence: Vec::new(),
    }
}

fn tref(t: &ThreadInfo, ev: &Evidence) -> ThreadRef {
    ThreadRef {
        pid: t.pid,
        tid: t.tid,
        comm: t.comm.clone(),
        affinity: t.affinity.clone(),
        cpu_pct: t.cpu_pct,
        stolen_pct: ev.stolen_pct.get(&t.tid).copied(),
        workload: t.workload.clone(),
    }
}

fn hexmask(s: &CpuSet) -> String {
    s.to_mask()
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn uniq(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = it.collect();
    v.sort();
    v.dedup();
    v
}

/// Merges per-thread findings that say the same thing about the same
/// objects, so 64 worker threads with one mistake make one finding.
fn merge(fs: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for f in fs {
        if let Some(g) = out.iter_mut().find(|g| {
            g.rule == f.rule
                && g.severity == f.severity
                && g.summary == f.summary
                && g.cpus == f.cpus
                && g.irqs == f.irqs
                && g.nics == f.nics
        }) {
            g.threads.extend(f.threads);
            for c in f.fix {
                if !g.fix.contains(&c) {
                    g.fix.push(c);
                }
            }
            for e in f.evidence {
                if !g.evidence.contains(&e) {
                    g.evidence.push(e);
                }
            }
        } else {
            out.push(f);
        }
    }
    out
}

/// Per-thread rules first, merged; then the rules about IRQs, NICs and
/// CPUs. The order only matters between findings of one rule (the report
/// sorts by severity, rule and summary), and each rule keeps its own.
pub(super) fn run(t: &HostTopology, ev: &Evidence) -> Vec<Finding> {
    let cx = Ctx::new(t, ev);
    let mut per_thread = Vec::new();
    numa::nt001_remote_nic(&cx, &mut per_thread);
    irq::nt002_003_interrupts_on_pinned(&cx, &mut per_thread);
    smt::nt004_interrupts_on_sibling(&cx, &mut per_thread);
    cpuset::nt005_cpu0(&cx, &mut per_thread);
    cpuset::nt006_outside_cpuset(&cx, &mut per_thread);
    numa::nt016_remote_memory(&cx, &mut per_thread);
    numa::nt018_across_nodes(&cx, &mut per_thread);
    let mut out = merge(per_thread);
    isolation::nt007_009_isolated_irqs(&cx, &mut out);
    numa::nt010_nic_irq_remote(&cx, &mut out);
    cpuset::nt011_busy_share_cpu(&cx, &mut out);
    smt::nt012_busy_siblings(&cx, &mut out);
    irq::nt013_014_rps(&cx, &mut out);
    numa::nt015_steering_off_node(&cx, &mut out);
    isolation::nt017_irqbalance_ban(&cx, &mut out);
    steering::nt019_rss_queue_irq(&cx, &mut out);
    steering::nt020_flow_rule_irq(&cx, &mut out);
    steering::nt021_unused_queue(&cx, &mut out);
    steering::nt022_generic_xdp(&cx, &mut out);
    without_empty_lists(&mut out);
    out
}

/// Busy, narrowly pinned user threads: the data-plane threads every
/// interrupt-placement rule protects, judged as the rules judge "busy".
pub(super) fn data_plane(t: &HostTopology, ev: &Evidence) -> Vec<ThreadInfo> {
    let cx = Ctx::new(t, ev);
    cx.narrow().filter(|th| cx.busy(th).0).cloned().collect()
}

/// A fix command with an empty CPU list (`echo  > …/smp_affinity_list`,
/// `taskset -pc  PID`, `irqaffinity=`) is not a fix: the builders above
/// never make one and say why instead; this is the net under them, so a
/// rule added later cannot print one either.
fn without_empty_lists(fs: &mut [Finding]) {
    for f in fs {
        let (bad, ok): (Vec<String>, Vec<String>) = std::mem::take(&mut f.fix)
            .into_iter()
            .partition(|c| empty_list(c));
        f.fix = ok;
        for c in bad {
            f.evidence.push(format!("no CPU to use for: {}", c.trim()));
        }
    }
}

/// True for a command whose CPU list or mask is empty.
pub(super) fn empty_list(cmd: &str) -> bool {
    cmd.contains("echo  ")
        || cmd.contains("echo > ")
        || cmd.contains("taskset -pc  ")
        || cmd.trim_end().ends_with("irqaffinity=")
        || cmd.contains("irqaffinity= ")
        || (cmd.contains("echo 0 > ") && cmd.contains("default_smp_affinity"))
        || (cmd.contains("smp_affinity")
            && cmd.contains("echo 0 > /proc/irq")
            && !cmd.contains("_list"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hexmask_matches_kernel_spelling() {
        assert_eq!(hexmask(&CpuSet::parse_list("1").unwrap()), "00000002");
        assert_eq!(
            hexmask(&CpuSet::parse_list("0,33").unwrap()),
            "00000002,00000001"
        );
        assert_eq!(hexmask(&CpuSet::new()), "0");
        let s = CpuSet::parse_list("0-3,40").unwrap();
        assert_eq!(CpuSet::parse_mask(&hexmask(&s)).unwrap(), s);
    }

    #[test]
    fn codes_are_unique_numbered_in_order_and_serialized_as_codes() {
        for (i, id) in RuleId::ALL.iter().enumerate() {
            let info = id.info();
            assert_eq!(info.id, *id);
            assert_eq!(info.code, format!("NT{:03}", i + 1));
            assert_eq!(id.to_string(), info.code);
            assert_eq!(
                serde_json::to_string(id).unwrap(),
                format!("\"{}\"", info.code)
            );
            let back: RuleId = serde_json::from_str(&format!("\"{}\"", info.code)).unwrap();
            assert_eq!(back, *id);
        }
        let mut names: Vec<&str> = RuleId::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), RuleId::ALL.len());
        assert!(serde_json::from_str::<RuleId>("\"NT999\"").is_err());
    }
}
