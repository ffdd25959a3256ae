//! SMT: hyperthread siblings share one core's execution units and caches,
//! so interrupts or a second busy thread on the sibling slow a data-plane
//! thread.

use super::ctx::{Ctx, irq_fixes, rps_fix_lines, stolen_severity};
use super::{Finding, RuleId, finding, tref, uniq};
use crate::sys::cpuset::CpuSet;

pub(super) fn nt004_interrupts_on_sibling(cx: &Ctx, out: &mut Vec<Finding>) {
    for th in cx.narrow() {
        let (irqs, rps) = cx.interrupts_on(&th.affinity);
        // Siblings: the core's other hyperthread taking interrupts halves the
        // core's execution resources for this thread during each burst.
        let sib = cx.t.siblings_of(&th.affinity);
        let (mut s_irqs, mut s_rps) = cx.interrupts_on(&sib);
        s_irqs.retain(|x| !irqs.contains(x));
        s_rps.retain(|x| !rps.contains(x));
        if !s_irqs.is_empty() || !s_rps.is_empty() {
            let mut what = Vec::new();
            if !s_irqs.is_empty() {
                what.push(format!(
                    "IRQ {}",
                    s_irqs
                        .iter()
                        .map(|x| x.0.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            if !s_rps.is_empty() {
                what.push(format!(
                    "RPS {}",
                    s_rps
                        .iter()
                        .map(|(n, q)| format!("{n} rx-{q}"))
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            let mut f = finding(
                RuleId::Nt004,
                format!(
                    "pinned to {}; its SMT sibling {} takes {}",
                    th.affinity,
                    sib,
                    what.join(" and ")
                ),
                "Hyperthreads share one core's execution units and L1/L2: interrupt bursts on the sibling slow this \
                 data-plane thread and pollute its caches; keep the whole core free of device work.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.union(&sib);
            f.irqs = s_irqs.iter().map(|x| x.0).collect();
            f.nics = uniq(
                s_irqs
                    .iter()
                    .map(|x| x.1.clone())
                    .chain(s_rps.iter().map(|x| x.0.clone())),
            );
            irq_fixes(cx, &s_irqs, &mut f);
            f.fix.extend(rps_fix_lines(cx, &s_rps, &sib));
            stolen_severity(cx, th, &mut f);
            out.push(f);
        }
    }
}

pub(super) fn nt012_busy_siblings(cx: &Ctx, out: &mut Vec<Finding>) {
    let by_cpu = cx.busy_by_cpu();
    // Sibling pairs: busy threads on different PUs of the same core.
    let mut seen: Vec<CpuSet> = Vec::new();
    for pu in &cx.t.pus {
        if pu.siblings.len() < 2 || seen.contains(&pu.siblings) {
            continue;
        }
        seen.push(pu.siblings.clone());
        let on: Vec<u32> = pu
            .siblings
            .iter()
            .filter(|c| by_cpu.contains_key(c))
            .collect();
        if on.len() < 2 {
            continue;
        }
        let mut f = finding(
            RuleId::Nt012,
            format!(
                "busy threads on hyperthreads {} of one core",
                CpuSet::from_cpus(on.iter().copied())
            ),
            "Two busy hyperthreads share one core's execution units and L1/L2 caches, so each gets roughly \
             60-70% of a core; data-plane workers usually want one per core, siblings left idle.",
        );
        f.cpus = CpuSet::from_cpus(on.iter().copied());
        for c in &on {
            for (th, why) in by_cpu.get(c).into_iter().flatten() {
                f.threads.push(tref(th, cx.ev));
                f.evidence.push(why.clone());
            }
        }
        if let Some((th, _)) = on
            .get(1)
            .and_then(|c| by_cpu.get(c))
            .and_then(|v| v.first())
        {
            let node = cx.t.pu(on[1]).and_then(|p| p.numa);
            let busy_cores =
                cx.t.siblings_of(&CpuSet::from_cpus(by_cpu.keys().copied()))
                    .union(&CpuSet::from_cpus(by_cpu.keys().copied()));
            if let Some(c) = cx
                .quiet_all(node, th.cpuset.as_ref())
                .difference(&busy_cores)
                .first()
            {
                f.fix.push(format!("taskset -pc {c} {}", th.tid));
            }
        }
        out.push(f);
    }
}
