//! NUMA: threads, NIC IRQs, steering masks and memory on another node than
//! the NIC or the thread.

use super::ctx::Ctx;
use super::ctx::no_cpu_for_irq;
use super::{Finding, MEM_MIN_KIB, RuleId, finding, hexmask, join, tref};
use crate::sys::cpuset::CpuSet;

pub(super) fn nt001_remote_nic(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    for th in cx.pinned() {
        let nodes = cx.t.nodes_of(&th.affinity);
        for nic in th.nics.iter().filter_map(|n| cx.t.nic(n)) {
            let Some(nn) = nic.numa_node else { continue };
            if nodes.is_empty() || nodes.contains(&nn) {
                continue;
            }
            let mut f = finding(
                RuleId::Nt001,
                format!(
                    "pinned to {} (node {}) but uses {} on node {nn}",
                    th.affinity,
                    join(&nodes),
                    nic.name
                ),
                "Every packet crosses the inter-socket link twice (DMA to the NIC's node, then the thread's reads), \
                 costing memory bandwidth and latency; pinning on the wrong node typically loses 20-40% throughput.",
            );
            f.threads.push(tref(th, cx.ev));
            f.cpus = th.affinity.clone();
            f.nics.push(nic.name.clone());
            f.fix.extend(cx.move_thread_fix(th, Some(nn)));
            f.fix.push(format!(
                "# or start it with: numactl --cpunodebind={nn} --membind={nn} <command>"
            ));
            out.push(f);
        }
    }
}

pub(super) fn nt010_nic_irq_remote(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    for nic in &cx.t.nics {
        let Some(node) = nic.numa_node else { continue };
        let Some(nc) = cx.t.node_cpus(node) else {
            continue;
        };
        let mut bad = Vec::new();
        let mut cpus = CpuSet::new();
        for irq in nic.irqs.iter().filter_map(|i| cx.t.irq(*i)) {
            let lands = irq.lands_on();
            if lands.is_empty() || (irq.effective.is_none() && cx.t.online.is_subset(&lands)) {
                continue;
            }
            let off = lands.difference(nc);
            if !off.is_empty() {
                bad.push(irq.irq);
                cpus = cpus.union(&off);
            }
        }
        if bad.is_empty() {
            continue;
        }
        let mut f = finding(
            RuleId::Nt010,
            format!(
                "{} is on node {node} but {} of its queue IRQs run on CPUs {cpus}",
                nic.name,
                bad.len()
            ),
            "The IRQ handler and NET_RX processing then touch descriptors and packet buffers in remote memory, \
             and the packets are usually consumed on the NIC's node anyway: twice across the interconnect.",
        );
        f.irqs = bad.clone();
        f.cpus = cpus;
        f.nics.push(nic.name.clone());
        let hk = cx.housekeeping(Some(node));
        for i in &bad {
            if hk.is_empty() {
                f.evidence.push(no_cpu_for_irq(*i));
            } else {
                f.fix
                    .push(format!("echo {hk} > /proc/irq/{i}/smp_affinity_list"));
            }
        }
        f.fix.push(format!(
            "# or, with irqbalance: it follows the NIC's numa_node by itself; check /sys/class/net/{}/device/numa_node",
            nic.name
        ));
        out.push(f);
    }
}

pub(super) fn nt015_steering_off_node(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    for nic in &cx.t.nics {
        let rps = nic.rps_cpus();
        let Some(node) = nic.numa_node else { continue };
        let Some(nc) = cx.t.node_cpus(node) else {
            continue;
        };
        let xps = nic
            .tx_queues
            .iter()
            .filter_map(|q| q.xps_cpus.clone())
            .fold(CpuSet::new(), |a, b| a.union(&b));
        let off_rps = rps.difference(nc);
        let off_xps = xps.difference(nc);
        if off_rps.is_empty() && off_xps.is_empty() {
            continue;
        }
        let mut f = finding(
            RuleId::Nt015,
            format!(
                "{} is on node {node}; RPS/XPS name CPUs {} on other nodes",
                nic.name,
                off_rps.union(&off_xps)
            ),
            "Steering receive processing or transmit queues to remote CPUs makes the stack touch the NIC's \
             buffers across the interconnect; keep steering masks on the NIC's node unless the consumer is remote.",
        );
        f.cpus = off_rps.union(&off_xps);
        f.nics.push(nic.name.clone());
        for q in nic
            .rx_queues
            .iter()
            .filter(|q| q.rps_cpus.intersects(&off_rps))
        {
            f.fix.push(format!(
                "echo {} > /sys/class/net/{}/queues/rx-{}/rps_cpus",
                hexmask(&q.rps_cpus.intersection(nc)),
                nic.name,
                q.queue
            ));
        }
        for q in nic.tx_queues.iter() {
            if let Some(x) = &q.xps_cpus
                && x.intersects(&off_xps)
            {
                f.fix.push(format!(
                    "echo {} > /sys/class/net/{}/queues/tx-{}/xps_cpus",
                    hexmask(&x.intersection(nc)),
                    nic.name,
                    q.queue
                ));
            }
        }
        out.push(f);
    }
}

pub(super) fn nt016_remote_memory(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    for th in cx.pinned() {
        let Some(mem) = &th.mem_kib else { continue };
        let nodes = cx.t.nodes_of(&th.affinity);
        let [node] = nodes.as_slice() else { continue };
        let total: u64 = mem.values().sum();
        let local = mem.get(node).copied().unwrap_or(0);
        if total < MEM_MIN_KIB || local * 2 >= total {
            continue;
        }
        let remote: Vec<u32> = mem
            .iter()
            .filter(|(n, k)| *n != node && **k > 0)
            .map(|(n, _)| *n)
            .collect();
        let mut f = finding(
            RuleId::Nt016,
            format!(
                "runs on node {node} but {}% of its process's memory is on node {}",
                (total - local) * 100 / total,
                join(&remote)
            ),
            "Every cache miss goes over the inter-socket link to remote DRAM (roughly 1.5-2x the latency); \
             memory was probably allocated before the thread was pinned or on another node's CPU.",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.clone();
        f.evidence.push(format!(
            "numa_maps of pid {}: {} KiB total, {local} KiB on node {node}",
            th.pid, total
        ));
        f.fix
            .push(format!("migratepages {} {} {node}", th.pid, join(&remote)));
        f.fix.push(format!(
            "# or start it with: numactl --cpunodebind={node} --membind={node} <command>"
        ));
        out.push(f);
    }
}

pub(super) fn nt018_across_nodes(cx: &Ctx, out: &mut Vec<Finding>) {
    if !cx.multi_node {
        return;
    }
    let housekeeping = cx.t.online.difference(&cx.isolated);
    for th in cx.pinned() {
        let nodes = cx.t.nodes_of(&th.affinity);
        if nodes.len() < 2 || housekeeping.is_subset(&th.affinity) {
            continue;
        }
        let mut f = finding(
            RuleId::Nt018,
            format!(
                "pinned to {} which spans NUMA nodes {}",
                th.affinity,
                join(&nodes)
            ),
            "The scheduler may move the thread between nodes, leaving its memory and caches behind; pin to CPUs \
             of one node (the NIC's, for network work).",
        );
        f.threads.push(tref(th, cx.ev));
        f.cpus = th.affinity.clone();
        let nic_node = th.nics.iter().filter_map(|n| cx.t.nic(n)?.numa_node).next();
        let node = nic_node.or(nodes.first().copied());
        if let Some(n) = node
            && let Some(nc) = cx.t.node_cpus(n)
        {
            let keep = th.affinity.intersection(nc);
            if keep.is_empty() {
                f.evidence.push(format!(
                    "none of its CPUs is on node {n} (CPUs {nc}): pin it to CPUs there"
                ));
            } else {
                f.fix.push(format!("taskset -pc {keep} {}", th.tid));
            }
        }
        out.push(f);
    }
}
