//! The planner proper: RPS and XPS masks first, then one CPU per misplaced
//! queue IRQ chosen with those masks known, then what ethtool and the
//! kernel command line should say.

use std::collections::BTreeMap;

use super::{Change, Kind, Load, Plan, SCHEMA, Unaddressed, Victim};
use crate::pinning::{Evidence, Finding, Report, RuleId};
use crate::sys::cpuset::CpuSet;
use crate::topology::{HostTopology, Nic};

/// What the planner knows about CPUs before placing anything.
struct Cpus {
    online: CpuSet,
    /// Busy narrowly pinned threads' CPUs and isolated CPUs.
    protected: CpuSet,
    /// SMT siblings of the data-plane CPUs (NT004): avoided while any
    /// other CPU will do.
    shadow: CpuSet,
}

pub(super) fn compute(t: &HostTopology, r: &Report, ev: &Evidence, load: &Load) -> Plan {
    let dp = crate::pinning::data_plane_threads(t, ev);
    let dp_cpus = dp
        .iter()
        .fold(CpuSet::new(), |a, th| a.union(&th.affinity))
        .intersection(&t.online);
    let isolated = t.host.isolated();
    let protected = dp_cpus.union(&isolated).intersection(&t.online);
    let cpus = Cpus {
        online: t.online.clone(),
        shadow: t.siblings_of(&dp_cpus).difference(&protected),
        protected,
    };
    let mut changes = Vec::new();
    let mut impossible = Vec::new();

    let rps_after = steering(t, &cpus, load, &mut changes);
    irqs(t, &cpus, load, &rps_after, &mut changes, &mut impossible);
    ntuple(t, r, &mut changes);
    rss(t, &mut changes);
    cmdline(t, &dp_cpus, &mut changes, &mut impossible);

    for c in &mut changes {
        c.resolves = resolves(c, &r.findings);
    }
    let resolved: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| changes.iter().any(|c| finding_matches(c, f)))
        .collect();
    let unaddressed = r
        .findings
        .iter()
        .filter(|f| !resolved.iter().any(|g| std::ptr::eq(*g, *f)))
        .map(|f| Unaddressed {
            rule: f.rule,
            summary: f.summary.clone(),
            reason: unaddressed_reason(f),
        })
        .collect();
    let mut victims: Vec<Victim> = resolved
        .iter()
        .flat_map(|f| f.threads.iter())
        .map(|th| Victim {
            pid: th.pid,
            tid: th.tid,
            comm: th.comm.clone(),
            affinity: th.affinity.clone(),
        })
        .collect();
    // Robbed processes whose receive work the plan steers away are
    // measured before and after too.
    if changes.iter().any(|c| c.kind == Kind::Rps) {
        victims.extend(
            load.robbed
                .iter()
                .filter(|r| r.pct >= STEER_MIN_PCT)
                .filter(|r| {
                    rps_after.contains(r.beneficiary_cpu) && !rps_after.contains(r.victim_cpu)
                })
                .map(|r| Victim {
                    pid: r.victim_pid,
                    tid: r.victim_pid,
                    comm: r.victim_comm.clone(),
                    affinity: r.victim_affinity.clone(),
                }),
        );
    }
    victims.sort_by_key(|v| v.tid);
    victims.dedup_by_key(|v| v.tid);
    Plan {
        schema: SCHEMA.to_string(),
        source: t.source.clone(),
        load: load
            .measured
            .clone()
            .unwrap_or_else(|| "none (configuration only)".into()),
        protected: cpus.protected,
        feasible: impossible.is_empty(),
        changes,
        impossible,
        unaddressed,
        victims,
    }
}

fn node_cpus(t: &HostTopology, nic: &Nic) -> Option<CpuSet> {
    nic.numa_node
        .and_then(|n| t.node_cpus(n).cloned())
        .map(|c| c.intersection(&t.online))
        .filter(|c| !c.is_empty())
}

fn in_netns(t: &HostTopology, nic: &Nic, cmd: String) -> String {
    let prefix = t.exec_prefix(nic);
    if prefix.is_empty() {
        cmd
    } else {
        format!("{prefix}sh -c '{cmd}'")
    }
}

/// RPS masks without protected CPUs or their siblings (empty: RPS off, and
/// receive work stays on the CPU that took the packet, which the IRQ plan
/// keeps on housekeeping CPUs); CPU 0 and other nodes dropped when other
/// CPUs remain. XPS masks kept to the NIC's node. Returns every CPU an RPS
/// mask still names after the plan.
fn steering(t: &HostTopology, cpus: &Cpus, load: &Load, out: &mut Vec<Change>) -> CpuSet {
    let mut after = CpuSet::new();
    for nic in &t.nics {
        let node = node_cpus(t, nic);
        for q in &nic.rx_queues {
            let cur = &q.rps_cpus;
            let mut to = cur.difference(&cpus.protected).difference(&cpus.shadow);
            let no0 = to.difference(&CpuSet::from_cpus([0]));
            if !no0.is_empty() {
                to = no0;
            }
            if let Some(n) = &node {
                let on = to.intersection(n);
                if !on.is_empty() {
                    to = on;
                } else if !to.is_empty() {
                    // Only other nodes' CPUs: as many of the NIC's node's
                    // housekeeping CPUs instead (not CPU 0, not already an
                    // RPS target, least busy first); none left: RPS off.
                    let free = n
                        .difference(&cpus.protected)
                        .difference(&cpus.shadow)
                        .difference(&CpuSet::from_cpus([0]))
                        .difference(&after)
                        .difference(&later_rps(nic, q.queue));
                    let mut pick: Vec<u32> = free.iter().collect();
                    pick.sort_by_key(|c| {
                        let busy = load.cpu_busy_pct.get(c).copied().unwrap_or(0.0);
                        (busy.round() as i64, *c)
                    });
                    to = CpuSet::from_cpus(pick.into_iter().take(to.len()));
                }
            }
            let steer = to_beneficiaries(cur, cpus, node.as_ref(), load);
            if let Some((cpus_to, _)) = &steer {
                to = to.difference(&robbed_cpus(load, cur)).union(cpus_to);
            }
            after = after.union(&to);
            if &to == cur {
                continue;
            }
            let path = format!("/sys/class/net/{}/queues/rx-{}/rps_cpus", nic.name, q.queue);
            let why = if let Some((_, why)) = steer {
                format!("RPS of {} rx-{}: {why}", nic.label(), q.queue)
            } else if to.is_empty() {
                format!(
                    "RPS off for {} rx-{}: receive work stays on the CPU that took the packet \
                     instead of CPU {} (busy pinned, isolated or their SMT sibling)",
                    nic.label(),
                    q.queue,
                    cur.difference(&to)
                )
            } else {
                format!(
                    "RPS of {} rx-{} keeps CPUs {to}, drops {}",
                    nic.label(),
                    q.queue,
                    cur.difference(&to)
                )
            };
            out.push(mask_change(t, nic, Kind::Rps, path, (cur, &to), why));
        }
        for q in &nic.tx_queues {
            let (Some(cur), Some(n)) = (&q.xps_cpus, &node) else {
                continue;
            };
            let to = cur.intersection(n);
            if to.is_empty() || &to == cur {
                continue;
            }
            let path = format!("/sys/class/net/{}/queues/tx-{}/xps_cpus", nic.name, q.queue);
            let why = format!(
                "XPS of {} tx-{} kept on the NIC's node (drops {})",
                nic.label(),
                q.queue,
                cur.difference(&to)
            );
            out.push(mask_change(t, nic, Kind::Xps, path, (cur, &to), why));
        }
    }
    after
}

/// Receive work stolen from a process below this share of a CPU is left
/// where it is: moving it would not pay for the change.
pub const STEER_MIN_PCT: f64 = 1.0;

/// The CPUs of `mask` where some process lost at least [`STEER_MIN_PCT`]
/// to another's receive work.
fn robbed_cpus(load: &Load, mask: &CpuSet) -> CpuSet {
    CpuSet::from_cpus(
        load.robbed
            .iter()
            .filter(|r| r.pct >= STEER_MIN_PCT && mask.contains(r.victim_cpu))
            .map(|r| r.victim_cpu),
    )
}

/// When the receive work an RPS mask sends to a CPU is stolen there from
/// a process for the sockets of processes that run on other CPUs: those
/// CPUs (the beneficiaries', where RFS would take each flow), and why.
/// Beneficiary CPUs that are protected, shadowed, off the NIC's node or a
/// robbed CPU themselves are not offered; `None` when none is left.
fn to_beneficiaries(
    mask: &CpuSet,
    cpus: &Cpus,
    node: Option<&CpuSet>,
    load: &Load,
) -> Option<(CpuSet, String)> {
    let robbed = robbed_cpus(load, mask);
    let theirs: Vec<&crate::plan::Robbery> = load
        .robbed
        .iter()
        .filter(|r| r.pct >= STEER_MIN_PCT && robbed.contains(r.victim_cpu))
        .filter(|r| !robbed.contains(r.beneficiary_cpu))
        .filter(|r| !cpus.protected.contains(r.beneficiary_cpu))
        .filter(|r| !cpus.shadow.contains(r.beneficiary_cpu))
        .filter(|r| node.is_none_or(|n| n.contains(r.beneficiary_cpu)))
        .collect();
    let first = theirs.first()?;
    let to = CpuSet::from_cpus(theirs.iter().map(|r| r.beneficiary_cpu));
    let pct: f64 = theirs.iter().map(|r| r.pct).sum();
    Some((
        to.clone(),
        format!(
            "steered to CPU {to}, where its receivers run ({} {} and others): its receive work \
             ran on CPU {robbed} in the time of {} {} and others ({pct:.1} % of a CPU)",
            first.beneficiary_comm, first.beneficiary_pid, first.victim_comm, first.victim_pid
        ),
    ))
}

/// One RPS or XPS mask written in the NIC's namespace: `(from, to)`.
fn mask_change(
    t: &HostTopology,
    nic: &Nic,
    kind: Kind,
    path: String,
    (from, to): (&CpuSet, &CpuSet),
    why: String,
) -> Change {
    Change {
        kind,
        nic: nic.label(),
        netns: nic.netns.clone(),
        command: in_netns(t, nic, format!("echo {} > {path}", to.to_mask())),
        target: path,
        from: from.to_mask(),
        to: to.to_mask(),
        resolves: Vec::new(),
        why,
    }
}

/// CPUs the RPS masks of `nic`'s queues after `queue` name now: a
/// replacement mask should not pile onto a CPU another queue keeps.
fn later_rps(nic: &Nic, queue: u32) -> CpuSet {
    nic.rx_queues
        .iter()
        .filter(|q| q.queue > queue)
        .fold(CpuSet::new(), |a, q| a.union(&q.rps_cpus))
}

/// Places every misplaced NIC queue IRQ (on a protected CPU or its
/// sibling, or off its NIC's node) on one CPU: the NIC's node's
/// housekeeping CPUs that no RPS mask names first, then any housekeeping
/// CPU; within a tier, the CPU with the fewest queue IRQs, then the least
/// busy, then the least NET_RX, CPU 0 last.
fn irqs(
    t: &HostTopology,
    cpus: &Cpus,
    load: &Load,
    rps_after: &CpuSet,
    out: &mut Vec<Change>,
    impossible: &mut Vec<String>,
) {
    let avoid = cpus.protected.union(&cpus.shadow);
    let mut count: BTreeMap<u32, usize> = BTreeMap::new();
    let mut bad = Vec::new();
    let mut seen = Vec::new();
    for nic in &t.nics {
        let node = node_cpus(t, nic);
        let queue_of: BTreeMap<u32, u32> = nic
            .queue_irqs(&t.irqs)
            .into_iter()
            .map(|(q, i)| (i, q))
            .collect();
        for irq in nic.irqs.iter().filter_map(|i| t.irq(*i)) {
            if seen.contains(&irq.irq) {
                continue;
            }
            seen.push(irq.irq);
            let lands = irq.lands_on();
            // Allowed everywhere with no effective affinity reported: the
            // kernel picks, nothing to judge (as the lint).
            if lands.is_empty() || (irq.effective.is_none() && t.online.is_subset(&lands)) {
                continue;
            }
            let off_node = node.as_ref().is_some_and(|n| !lands.is_subset(n));
            if lands.intersects(&avoid) || off_node {
                bad.push((nic, irq, node.clone(), queue_of.get(&irq.irq).copied()));
            } else {
                for c in lands.iter() {
                    *count.entry(c).or_default() += 1;
                }
            }
        }
    }
    let hk = cpus.online.difference(&avoid);
    for (nic, irq, node, queue) in bad {
        let local = node.as_ref().map_or(hk.clone(), |n| hk.intersection(n));
        let tiers = [
            local.difference(rps_after),
            local.clone(),
            hk.difference(rps_after),
            hk.clone(),
            cpus.online.difference(&cpus.protected),
        ];
        let what = match queue {
            Some(q) => format!("IRQ {} ({} queue {q})", irq.irq, nic.label()),
            None => format!("IRQ {} ({})", irq.irq, nic.label()),
        };
        let Some((tier, set)) = tiers.iter().enumerate().find(|(_, s)| !s.is_empty()) else {
            impossible.push(format!(
                "no CPU for {what}: every online CPU ({}) runs a busy pinned thread or is \
                 isolated; free one (or unpin a thread) first",
                cpus.online
            ));
            continue;
        };
        let key = |c: u32| {
            let busy = load.cpu_busy_pct.get(&c).copied().unwrap_or(0.0);
            let net = load.cpu_net_rx_pct.get(&c).copied().unwrap_or(0.0);
            // Whole percents: a 0.3 % difference is noise, not a reason.
            (
                count.get(&c).copied().unwrap_or(0),
                busy.round() as i64,
                net.round() as i64,
                c == 0,
                c,
            )
        };
        let Some(cpu) = set.iter().min_by_key(|c| key(*c)) else {
            continue;
        };
        *count.entry(cpu).or_default() += 1;
        let to = CpuSet::from_cpus([cpu]);
        let from = irq.smp_affinity.clone().unwrap_or_else(|| irq.lands_on());
        let path = format!("/proc/irq/{}/smp_affinity_list", irq.irq);
        let place = match tier {
            0 => "a housekeeping CPU of the NIC's node that no RPS mask names",
            1 => "a housekeeping CPU of the NIC's node (every one is an RPS target)",
            2 | 3 => "a housekeeping CPU of another node (none left on the NIC's)",
            _ => "the SMT sibling of a busy pinned thread (no other CPU is free)",
        };
        out.push(Change {
            kind: Kind::IrqAffinity,
            nic: nic.label(),
            netns: String::new(),
            command: format!("echo {to} > {path}"),
            target: path,
            from: from.to_list(),
            to: to.to_list(),
            resolves: Vec::new(),
            why: format!(
                "{what} from CPU {} to CPU {cpu}: {place}, fewest queue IRQs",
                irq.lands_on()
            ),
        });
    }
}

/// A queue a flow rule dedicates to one flow that RSS still fills with
/// hashed traffic: out of RSS (`ethtool -X DEV weight …`), as the
/// dedicated-queue setup wants, while another queue keeps weight. Runs
/// after [`ntuple`], whose retargeted rules count at their new queue.
fn rss(t: &HostTopology, out: &mut Vec<Change>) {
    let words = |w: &[u32]| w.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
    for nic in &t.nics {
        let Some(st) = nic.steering.as_ref().filter(|s| !s.indir.is_empty()) else {
            continue;
        };
        let label = nic.label();
        let retargeted: Vec<String> = out
            .iter()
            .filter(|c| c.kind == Kind::Ntuple && c.nic == label)
            .map(|c| c.target.clone())
            .collect();
        let before = st.weights();
        let mut w = before.clone();
        for r in &st.rules {
            let Some(q) = r.queue else { continue };
            let loc = format!("ethtool -N {} loc {}", nic.name, r.location);
            let q = q as usize;
            if retargeted.contains(&loc) || w.get(q).copied().unwrap_or(0) == 0 {
                continue;
            }
            if w.iter().enumerate().any(|(i, x)| i != q && *x > 0) {
                w[q] = 0;
            }
        }
        if w == before {
            continue;
        }
        let out_q: Vec<String> = (0..w.len())
            .filter(|i| w[*i] == 0 && before[*i] > 0)
            .map(|i| i.to_string())
            .collect();
        out.push(Change {
            kind: Kind::Rss,
            nic: label,
            netns: nic.netns.clone(),
            target: format!("ethtool -X {}", nic.name),
            from: format!("weight {}", words(&before)),
            to: format!("weight {}", words(&w)),
            command: in_netns(
                t,
                nic,
                format!("ethtool -X {} weight {}", nic.name, words(&w)),
            ),
            resolves: Vec::new(),
            why: format!(
                "queue(s) {} carry flow rules' traffic: out of RSS, hashed traffic no longer \
                 mixes into the dedicated queue",
                out_q.join(",")
            ),
        });
    }
}

/// A flow rule steering to a queue RSS also uses, on a device with exactly
/// one queue out of RSS that nothing steers to: the rule most likely meant
/// that queue (the dedicated-queue setup with a typo), so the plan moves it.
fn ntuple(t: &HostTopology, r: &Report, out: &mut Vec<Change>) {
    for nic in &t.nics {
        let Some(st) = &nic.steering else { continue };
        if st.indir.is_empty() || st.rules.is_empty() {
            continue;
        }
        let weights = st.weights();
        let unused: Vec<u32> = (0..weights.len() as u32)
            .filter(|q| weights[*q as usize] == 0 && nic.rules_to(*q).is_empty())
            .collect();
        let [spare] = unused.as_slice() else { continue };
        let label = nic.label();
        let flagged = r
            .findings
            .iter()
            .any(|f| f.rule == RuleId::Nt020 && f.nics.contains(&label));
        if !flagged {
            continue;
        }
        for rule in &st.rules {
            let Some(q) = rule.queue else { continue };
            if weights.get(q as usize).copied().unwrap_or(0) == 0 {
                continue;
            }
            let dev = &nic.name;
            out.push(Change {
                kind: Kind::Ntuple,
                nic: label.clone(),
                netns: nic.netns.clone(),
                target: format!("ethtool -N {dev} loc {}", rule.location),
                from: format!("{} action {q}", rule.flow),
                to: format!("{} action {spare}", rule.flow),
                command: in_netns(
                    t,
                    nic,
                    format!(
                        "ethtool -N {dev} delete {loc} && ethtool -N {dev} flow-type {} action {spare} loc {loc}",
                        rule.flow,
                        loc = rule.location
                    ),
                ),
                resolves: Vec::new(),
                why: format!(
                    "rule {} steers to queue {q}, which RSS also fills; queue {spare} is out of \
                     RSS with nothing steered to it: the dedicated queue it was meant for",
                    rule.location
                ),
            });
        }
    }
}

/// What the kernel command line should say so that the layout survives a
/// reboot and new IRQs: the data-plane CPUs isolated (never CPU 0, the
/// housekeeping CPU), device IRQs kept off them. Shown, never applied.
fn cmdline(
    t: &HostTopology,
    dp_cpus: &CpuSet,
    out: &mut Vec<Change>,
    impossible: &mut Vec<String>,
) {
    if dp_cpus.is_empty() {
        return;
    }
    if t.online.difference(dp_cpus).is_empty() {
        impossible.push(format!(
            "kernel command line: every online CPU ({}) runs a busy pinned thread; none is left \
             for housekeeping and device IRQs",
            t.online
        ));
        return;
    }
    let h = &t.host;
    let iso = h
        .isolcpus
        .union(dp_cpus)
        .difference(&CpuSet::from_cpus([0]));
    if iso.is_empty() {
        return;
    }
    let nohz = h.nohz_full.union(&iso);
    let irqaff = t.online.difference(&iso);
    if irqaff.is_empty() {
        impossible.push(format!(
            "kernel command line: isolating CPUs {iso} leaves no CPU for device IRQs"
        ));
        return;
    }
    if iso == h.isolcpus && nohz == h.nohz_full && h.irqaffinity.as_ref() == Some(&irqaff) {
        return;
    }
    let show = |s: &CpuSet| {
        if s.is_empty() {
            "(unset)".to_string()
        } else {
            s.to_list()
        }
    };
    let flags = if h.isolcpus_flags.is_empty() {
        "managed_irq,domain".to_string()
    } else {
        h.isolcpus_flags.join(",")
    };
    let to = format!("isolcpus={flags},{iso} nohz_full={nohz} irqaffinity={irqaff}");
    out.push(Change {
        kind: Kind::Cmdline,
        nic: String::new(),
        netns: String::new(),
        target: "kernel command line".into(),
        from: format!(
            "isolcpus={} nohz_full={} irqaffinity={}",
            show(&h.isolcpus),
            show(&h.nohz_full),
            h.irqaffinity.as_ref().map_or("(unset)".into(), show)
        ),
        command: format!(
            "# kernel command line (never applied by nettop): put `{to}` in \
             GRUB_CMDLINE_LINUX (/etc/default/grub), run update-grub, reboot"
        ),
        to,
        resolves: Vec::new(),
        why: format!(
            "busy pinned threads run on CPUs {dp_cpus}: isolated at boot, new device IRQs \
             (irqaffinity=) and irqbalance stay off them"
        ),
    });
}

/// Whether change `c` addresses finding `f`: the same IRQ; the same
/// queue's steering file; the same device's RSS/rules; the command line
/// for the boot-isolation rules.
fn finding_matches(c: &Change, f: &Finding) -> bool {
    let on_nic = f.nics.contains(&c.nic);
    match c.kind {
        Kind::IrqAffinity => {
            let irq = c
                .target
                .strip_prefix("/proc/irq/")
                .and_then(|s| s.split('/').next())
                .and_then(|s| s.parse::<u32>().ok());
            irq.is_some_and(|i| f.irqs.contains(&i))
        }
        Kind::Rps | Kind::Xps => {
            let file = c
                .target
                .strip_prefix("/sys/class/net/")
                .unwrap_or(&c.target);
            let by_fix = f.fix.iter().any(|l| l.contains(file));
            let removed = CpuSet::parse_mask(&c.from)
                .ok()
                .zip(CpuSet::parse_mask(&c.to).ok())
                .map(|(a, b)| a.difference(&b))
                .unwrap_or_default();
            let rules: &[RuleId] = if c.kind == Kind::Rps {
                &[
                    RuleId::Nt003,
                    RuleId::Nt004,
                    RuleId::Nt013,
                    RuleId::Nt014,
                    RuleId::Nt015,
                ]
            } else {
                &[RuleId::Nt015]
            };
            by_fix || (on_nic && rules.contains(&f.rule) && f.cpus.intersects(&removed))
        }
        Kind::Rss | Kind::Ntuple => {
            on_nic && matches!(f.rule, RuleId::Nt019 | RuleId::Nt020 | RuleId::Nt021)
        }
        Kind::Cmdline => matches!(f.rule, RuleId::Nt007 | RuleId::Nt008 | RuleId::Nt009),
    }
}

fn resolves(c: &Change, fs: &[Finding]) -> Vec<RuleId> {
    let mut v: Vec<RuleId> = fs
        .iter()
        .filter(|f| finding_matches(c, f))
        .map(|f| f.rule)
        .collect();
    v.sort();
    v.dedup();
    v
}

fn unaddressed_reason(f: &Finding) -> String {
    use RuleId::*;
    match f.rule {
        Nt001 | Nt005 | Nt006 | Nt011 | Nt012 | Nt016 | Nt018 => {
            "thread placement: the plan moves interrupts, not threads (see the lint's fix)".into()
        }
        Nt022 => "XDP attach mode: see the lint's fix".into(),
        Nt014 => "RPS onto CPU 0 alone is kept: turning it off moves the work to the IRQ's CPU, \
                  and CPU 0 is not a data-plane CPU here"
            .into(),
        Nt017 => "irqbalance configuration: see the lint's fix".into(),
        _ if f
            .evidence
            .iter()
            .any(|e| e.starts_with("no CPU") || e.contains("no CPU to")) =>
        {
            "no CPU to move it to (see the plan's impossible list)".into()
        }
        _ => "no change of this plan addresses it".into(),
    }
}
