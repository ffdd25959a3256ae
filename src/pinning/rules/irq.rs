//! IRQ and RPS placement: NIC queue interrupts and RPS receive work landing
//! on the CPUs of pinned data-plane threads, on CPU 0 or on isolated CPUs.

use super::ctx::{Ctx, in_netns_of, irq_fixes, rps_fix_lines, stolen_severity};
use super::{Finding, RuleId, finding, hexmask, tref, uniq};
use crate::sys::cpuset::CpuSet;
use crate::topology::Nic;

pub(super) fn nt002_003_interrupts_on_pinned(cx: &Ctx, out: &mut Vec<Finding>) {
    for th in cx.narrow() {
        let (irqs, rps) = cx.interrupts_on(&th.affinity);
        if !irqs.is_empty() {
            let mut f = finding(
                RuleId::Nt002,
                format!(
                    "pinned to {} which also takes NIC queue IRQ {}",
                    th.affinity,
                    irqs.iter()
                        .map(|(i, n)| format!("{i} ({n})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "Each hardirq and the NET_RX softirq it raises run on top of this thread and are charged to it \
                 (top shows it busy while it loses throughput); data-plane CPUs should take no device IRQs.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.clone();
            f.irqs = irqs.iter().map(|x| x.0).collect();
            f.nics = uniq(irqs.iter().map(|x| x.1.clone()));
            irq_fixes(cx, &irqs, &mut f);
            stolen_severity(cx, th, &mut f);
            out.push(f);
        }
        if !rps.is_empty() {
            let mut f = finding(
                RuleId::Nt003,
                format!(
                    "pinned to {} which is an RPS target of {}",
                    th.affinity,
                    rps.iter()
                        .map(|(n, q)| format!("{n} rx-{q}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "RPS sends an IPI and runs the receive stack (NET_RX softirq) on this CPU, in whatever task is \
                 running there: this pinned thread loses that time while top charges it to the thread.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.clone();
            f.nics = uniq(rps.iter().map(|x| x.0.clone()));
            f.fix = rps_fix_lines(cx, &rps, &th.affinity);
            stolen_severity(cx, th, &mut f);
            out.push(f);
        }
    }
}

fn rps_finding(
    cx: &Ctx,
    id: RuleId,
    nic: &Nic,
    hit: &CpuSet,
    summary: String,
    why: &str,
) -> Finding {
    let mut f = finding(id, summary, why);
    f.cpus = hit.clone();
    f.nics.push(nic.label());
    for q in nic.rx_queues.iter().filter(|q| q.rps_cpus.intersects(hit)) {
        f.fix.push(in_netns_of(
            cx,
            nic,
            format!(
                "echo {} > /sys/class/net/{}/queues/rx-{}/rps_cpus",
                hexmask(&q.rps_cpus.difference(hit)),
                nic.name,
                q.queue
            ),
        ));
    }
    f
}

pub(super) fn nt013_014_rps(cx: &Ctx, out: &mut Vec<Finding>) {
    for nic in &cx.t.nics {
        let rps = nic.rps_cpus();
        let hit = rps.intersection(&cx.isolated);
        if !hit.is_empty() {
            out.push(rps_finding(
                cx,
                RuleId::Nt013,
                nic,
                &hit,
                format!("{} RPS steers receive work onto isolated CPU {hit}", nic.label()),
                "RPS runs the receive stack on its target CPUs via IPIs: on isolated CPUs that is exactly the \
                 interference isolation was meant to remove.",
            ));
        }
        if rps.contains(0) && cx.t.online.len() > 1 {
            out.push(rps_finding(
                cx,
                RuleId::Nt014,
                nic,
                &CpuSet::from_cpus([0]),
                format!("{} RPS steers receive work onto CPU 0", nic.label()),
                "CPU 0 already carries housekeeping (timers, unpinned IRQs, many kernel threads); adding packet \
                 processing there makes both jittery.",
            ));
        }
    }
}
