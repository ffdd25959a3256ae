//! Isolation: device IRQs on isolcpus/nohz_full CPUs, `irqaffinity=` and
//! irqbalance settings that let them land there.

use super::ctx::Ctx;
use super::ctx::no_cpu_for_irq;
use super::{Finding, RuleId, finding, hexmask};
use crate::sys::cpuset::CpuSet;

pub(super) fn nt007_009_isolated_irqs(cx: &Ctx, out: &mut Vec<Finding>) {
    let iso = &cx.isolated;
    if iso.is_empty() {
        return;
    }
    let host = &cx.t.host;
    for irq in &cx.t.irqs {
        let lands = irq.lands_on();
        // Allowed everywhere and no effective affinity reported: the kernel
        // picks; nothing we can attribute to configuration.
        if irq.effective.is_none() && cx.t.online.is_subset(&lands) {
            continue;
        }
        let hit = lands.intersection(iso);
        if hit.is_empty() {
            continue;
        }
        let label = match &irq.nic {
            Some(n) => format!("{} ({n})", irq.irq),
            None => format!("{} ({})", irq.irq, irq.name),
        };
        let why = if host.irqbalance.is_some() {
            "Isolated CPUs exist to run one task undisturbed; each interrupt preempts it and its softirq work is \
             charged to it. irqbalance keeps the IRQs it manages off isolated CPUs, so this affinity was set by \
             hand, banned from balancing or is kernel-managed, and it stays until changed."
        } else {
            "Isolated CPUs exist to run one task undisturbed; each interrupt preempts it and its softirq work is \
             charged to it, and no irqbalance is running to move it elsewhere."
        };
        let mut f = finding(
            RuleId::Nt007,
            format!("IRQ {label} lands on isolated CPU {hit}"),
            why,
        );
        f.irqs.push(irq.irq);
        f.cpus = hit.clone();
        f.nics.extend(irq.nic.clone());
        let fired: u64 = hit.iter().filter_map(|c| irq.counts.get(&c)).sum();
        if fired > 0 {
            f.evidence
                .push(format!("fired {fired} times on CPU {hit} since boot"));
        }
        if let Some(a) = &irq.smp_affinity {
            f.evidence.push(format!("smp_affinity_list {a}"));
        }
        let node = irq.nic.as_ref().and_then(|n| cx.t.nic(n)?.numa_node);
        let to = cx.housekeeping(node);
        if to.is_empty() {
            f.evidence.push(no_cpu_for_irq(irq.irq));
        } else {
            f.fix.push(format!(
                "echo {to} > /proc/irq/{}/smp_affinity_list",
                irq.irq
            ));
        }
        out.push(f);
    }
    if let Some(ia) = &host.irqaffinity {
        let hit = ia.intersection(iso);
        if !hit.is_empty() {
            let mut f = finding(
                RuleId::Nt008,
                format!("irqaffinity={ia} includes isolated CPU {hit}"),
                "irqaffinity= is the default affinity of every device IRQ: naming isolated CPUs invites interrupts \
                 onto the CPUs meant to be quiet.",
            );
            f.cpus = hit;
            default_affinity_fix(
                &mut f,
                &ia.difference(iso),
                "every CPU irqaffinity= names is isolated: no CPU is left for device IRQs; \
                 give housekeeping CPUs back first",
            );
            out.push(f);
        }
    }
    let managed = host.isolcpus_flags.iter().any(|f| f == "managed_irq");
    let default_hits = host
        .default_smp_affinity
        .as_ref()
        .map(|d| d.intersects(iso))
        .unwrap_or(true);
    if host.irqaffinity.is_none() && host.irqbalance.is_none() && !managed && default_hits {
        let mut f = finding(
            RuleId::Nt009,
            format!("CPUs {iso} are isolated but new device IRQs may still land on them"),
            "Without irqaffinity=, isolcpus=managed_irq or a running irqbalance, device IRQs default to all \
             CPUs, isolated ones included, until someone sets each smp_affinity by hand.",
        );
        f.cpus = iso.clone();
        default_affinity_fix(
            &mut f,
            &cx.t.online.difference(iso),
            "every online CPU is isolated: device IRQs have no other CPU to go to",
        );
        out.push(f);
    }
}

/// The fix that gives new device IRQs `cpus` by default (boot parameter
/// and the running kernel's default), or, when `cpus` is empty, `none_left`
/// as evidence: there is no CPU to send them to.
fn default_affinity_fix(f: &mut Finding, cpus: &CpuSet, none_left: &str) {
    if cpus.is_empty() {
        f.evidence.push(none_left.into());
    } else {
        f.fix
            .push(format!("# kernel command line: irqaffinity={cpus}"));
        f.fix.push(format!(
            "echo {} > /proc/irq/default_smp_affinity",
            hexmask(cpus)
        ));
    }
}

pub(super) fn nt017_irqbalance_ban(cx: &Ctx, out: &mut Vec<Finding>) {
    let Some(ib) = &cx.t.host.irqbalance else {
        return;
    };
    let Some(banned) = &ib.banned_cpus else {
        return;
    };
    let missing = cx.isolated.difference(banned);
    if missing.is_empty() {
        return;
    }
    let mut f = finding(
        RuleId::Nt017,
        format!("irqbalance bans CPUs {banned} but isolated CPUs {missing} are not among them"),
        "Setting IRQBALANCE_BANNED_CPUS/CPULIST replaces irqbalance's default of banning isolcpus and nohz_full \
         CPUs, so it will place IRQs on the isolated CPUs left out.",
    );
    f.cpus = missing;
    f.evidence.push(format!("irqbalance pid {}", ib.pid));
    f.fix.push(format!(
        "# in /etc/default/irqbalance: IRQBALANCE_BANNED_CPULIST={}",
        banned.union(&cx.isolated)
    ));
    f.fix.push("systemctl restart irqbalance".into());
    out.push(f);
}
