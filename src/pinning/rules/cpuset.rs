//! Threads' CPU affinity: data-plane threads on CPU 0, affinity outside the
//! cgroup cpuset, and busy threads time-sharing one CPU.

use super::ctx::Ctx;
use super::{Finding, RuleId, finding, tref};
use crate::sys::cpuset::CpuSet;

pub(super) fn nt005_cpu0(cx: &Ctx, out: &mut Vec<Finding>) {
    if cx.t.online.len() < 2 {
        return;
    }
    for th in cx.narrow().filter(|th| th.affinity.contains(0)) {
        let (busy, why_busy) = cx.busy(th);
        if !busy {
            continue;
        }
        let mut f = finding(
            RuleId::Nt005,
            format!("busy thread pinned to {} (includes CPU 0)", th.affinity),
            "CPU 0 carries housekeeping the kernel cannot move (timers, some IRQs, often the boot-time default \
             for everything unpinned), so a data-plane thread there is interrupted and jittery.",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.clone();
        let node = cx.t.pu(0).and_then(|p| p.numa);
        f.fix.extend(cx.move_thread_fix(th, node));
        f.evidence.push(why_busy);
        out.push(f);
    }
}

pub(super) fn nt006_outside_cpuset(cx: &Ctx, out: &mut Vec<Finding>) {
    for th in cx.t.threads.iter().filter(|th| !th.kthread) {
        let Some(cs) = &th.cpuset else { continue };
        if th.affinity.is_empty() || th.affinity.is_subset(cs) {
            continue;
        }
        // Reading the affinity as indexes into the cpuset gives what the
        // operator most likely meant.
        let cs_cpus: Vec<u32> = cs.iter().collect();
        let meant: Option<CpuSet> = th
            .affinity
            .iter()
            .map(|c| cs_cpus.get(c as usize).copied())
            .collect::<Option<Vec<u32>>>()
            .map(CpuSet::from_cpus);
        let mut f = finding(
            RuleId::Nt006,
            format!("pinned to {} but its cgroup cpuset is {}", th.affinity, cs),
            "The kernel keeps a task inside its cpuset, so CPUs outside it are dropped or the pinning fails: \
             software that pins by host CPU number inside a container lands on other cores than intended \
             (or none), often sharing them with everything else.",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.difference(cs);
        match meant {
            Some(m) => f.fix.push(format!(
                "taskset -pc {m} {}   # CPUs {} as indexes into the cpuset {cs}",
                th.tid, th.affinity
            )),
            None => f.fix.push(format!("taskset -pc {cs} {}", th.tid)),
        }
        f.fix.push(
            "# configure the application with CPUs from its cpuset (cat /sys/fs/cgroup/cpuset.cpus.effective), \
             not from /sys/devices/system/cpu/online"
                .to_string(),
        );
        if let Some(cg) = &th.cgroup {
            f.evidence.push(format!("cgroup {cg}"));
        }
        out.push(f);
    }
}

pub(super) fn nt011_busy_share_cpu(cx: &Ctx, out: &mut Vec<Finding>) {
    let by_cpu = cx.busy_by_cpu();
    for (cpu, ths) in &by_cpu {
        if ths.len() < 2 {
            continue;
        }
        let mut f = finding(
            RuleId::Nt011,
            format!("{} busy threads pinned to CPU {cpu}", ths.len()),
            "Threads pinned to one CPU time-share it: each runs at most a fraction of the time, with context \
             switches and cold caches in between, while other CPUs may idle.",
        );
        f.cpus = CpuSet::from_cpus([*cpu]);
        let mut used = CpuSet::from_cpus(by_cpu.keys().copied());
        for (i, (th, why)) in ths.iter().enumerate() {
            f.threads.push(tref(th, cx.ev));
            f.evidence.push(why.clone());
            if i > 0 {
                let node = cx.t.pu(*cpu).and_then(|p| p.numa);
                let free = cx.quiet_all(node, th.cpuset.as_ref()).difference(&used);
                if let Some(c) = free.first() {
                    used.insert(c);
                    f.fix.push(format!("taskset -pc {c} {}", th.tid));
                }
            }
        }
        out.push(f);
    }
}
