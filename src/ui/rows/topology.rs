//! Topology view's lines: NUMA nodes → L3 → cores → CPUs, NICs with their
//! queue IRQs, and pinned threads, each at its place. The lines are built
//! from a [`HostTopology`] on the data thread (loading it does I/O); until
//! the first one arrives, [`frame_lines`] shows what the Frame alone says.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::LineKind;
use crate::model::frame::Frame;
use crate::sys::cpuset::CpuSet;
use crate::topology::{HostTopology, Support, XdpMode};

/// A cache size in the one size syntax ([`crate::sys::units`]), exact.
fn size(bytes: Option<u64>) -> String {
    bytes.map_or(String::new(), |b| {
        format!(" {}", crate::sys::units::human_bytes(b))
    })
}

/// The XDP mode's one label, with what generic mode costs said beside it.
fn xdp(m: XdpMode) -> String {
    match m {
        XdpMode::Generic => format!("{} (costs several times native)", m.as_str()),
        m => m.as_str().to_string(),
    }
}

/// NUMA nodes → L3 → cores → CPUs, then NICs with their queue IRQs, then
/// pinned threads: each at its place, with what sits on each CPU.
pub fn lines(topo: &HostTopology) -> Vec<(LineKind, String)> {
    let mut out: Vec<(LineKind, String)> = Vec::new();
    let h = |s: String| (LineKind::Heading, s);
    let n = |s: String| (LineKind::Normal, s);
    out.push((
        LineKind::Note,
        format!(
            "source {} · CPUs from {} · online {}",
            topo.source, topo.cpu_source, topo.online
        ),
    ));
    let isolated = topo.host.isolated();
    // What lands on each CPU: IRQs of NICs (effective affinity) and pinned threads.
    let mut irqs_on: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for irq in topo.irqs.iter().filter(|i| i.nic.is_some()) {
        let lands = irq.lands_on();
        if lands.len() <= 4 {
            for c in lands.iter() {
                irqs_on.entry(c).or_default().push(irq.irq.to_string());
            }
        }
    }
    let mut pinned_on: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for t in topo.threads.iter().filter(|t| t.is_pinned(&topo.online)) {
        for c in t.affinity.iter() {
            pinned_on
                .entry(c)
                .or_default()
                .push(format!("{}({})", t.comm, t.tid));
        }
    }
    let cpu_note = |c: u32| -> String {
        let mut s = String::new();
        if isolated.contains(c) {
            s.push_str(" isolated");
        }
        if let Some(v) = irqs_on.get(&c) {
            let _ = write!(s, " irq {}", v.join(","));
        }
        if let Some(v) = pinned_on.get(&c) {
            let shown: Vec<&str> = v.iter().take(4).map(String::as_str).collect();
            let _ = write!(s, " pinned {}", shown.join(" "));
            if v.len() > 4 {
                let _ = write!(s, " +{}", v.len() - 4);
            }
        }
        s
    };
    let nodes: Vec<(Option<u32>, CpuSet, String)> = if topo.numa_nodes.is_empty() {
        vec![(None, topo.online.clone(), String::new())]
    } else {
        topo.numa_nodes
            .iter()
            .map(|nd| (Some(nd.node), nd.cpus.clone(), size(nd.memory_bytes)))
            .collect()
    };
    for (node, cpus, mem) in nodes {
        let pkgs: Vec<String> = topo
            .packages
            .iter()
            .filter(|p| p.cpus.intersects(&cpus))
            .map(|p| p.package.to_string())
            .collect();
        out.push(h(format!(
            "{} (package {}): CPUs {cpus}{mem}",
            node.map_or("all CPUs".to_string(), |n| format!("NUMA node {n}")),
            if pkgs.is_empty() {
                "?".into()
            } else {
                pkgs.join(",")
            },
        )));
        for nic in topo
            .nics
            .iter()
            .filter(|x| x.numa_node.is_some() && x.numa_node == node)
        {
            out.push(n(format!("  NIC {} is local here", nic.name)));
        }
        let l3s: Vec<_> = topo
            .caches
            .iter()
            .filter(|c| c.level == 3 && c.cpus.intersects(&cpus))
            .collect();
        let groups: Vec<(String, CpuSet)> = if l3s.is_empty() {
            vec![(String::new(), cpus.clone())]
        } else {
            l3s.iter()
                .map(|c| {
                    (
                        format!("  L3 #{}{}: CPUs {}", c.index, size(c.size_bytes), c.cpus),
                        c.cpus.intersection(&cpus),
                    )
                })
                .collect()
        };
        for (label, gcpus) in groups {
            if !label.is_empty() {
                out.push(n(label));
            }
            let mut cores: BTreeMap<(Option<u32>, u32), Vec<u32>> = BTreeMap::new();
            for c in gcpus.iter() {
                let core = topo.pu(c).and_then(|p| p.core);
                let key = (core, if core.is_some() { 0 } else { c });
                cores.entry(key).or_default().push(c);
            }
            for ((core, _), pus) in cores {
                let notes: String = pus
                    .iter()
                    .map(|c| cpu_note(*c))
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(";");
                let label = core.map_or("    cpu".to_string(), |k| format!("    core {k:>3}:"));
                let list = CpuSet::from_cpus(pus.iter().copied());
                let kind = if notes.contains("irq") && notes.contains("pinned") {
                    LineKind::Warn
                } else {
                    LineKind::Normal
                };
                out.push((kind, format!("{label} CPU {list}{notes}")));
            }
        }
    }
    if !topo.nics.is_empty() {
        out.push(h("NICs and queue IRQs".into()));
    }
    for nic in &topo.nics {
        let mut s = format!("  {}", nic.label());
        if let Some(w) = topo.netns_of(nic).and_then(|n| n.workload.as_deref()) {
            let _ = write!(s, " [{w}]");
        }
        if nic.is_virtual {
            s.push_str(" (virtual)");
        }
        if let Some(d) = &nic.driver {
            let _ = write!(s, " {d}");
        }
        if let Some(p) = &nic.pci {
            let _ = write!(s, " {p}");
        }
        match nic.numa_node {
            Some(nd) => {
                let _ = write!(s, " node {nd}");
            }
            None => s.push_str(" node ?"),
        }
        if let Some(l) = &nic.local_cpus {
            let _ = write!(s, " local CPUs {l}");
        }
        let _ = write!(s, " · XDP {}", xdp(nic.xdp));
        let rps = nic.rps_cpus();
        if !rps.is_empty() {
            let _ = write!(s, " · RPS → {rps}");
        }
        if let Some(st) = &nic.steering {
            match &st.rss {
                Support::Supported => {
                    let _ = write!(s, " · RSS {} entries", st.indir.len());
                }
                Support::NotSupported => s.push_str(" · no RSS"),
                Support::Error(e) => {
                    let _ = write!(s, " · RSS ? ({e})");
                }
            }
            if !st.rules.is_empty() {
                let _ = write!(s, " · {} flow rule(s)", st.rules.len());
            }
        }
        out.push(n(s));
        let by_irq: BTreeMap<u32, u32> = nic
            .queue_irqs(&topo.irqs)
            .into_iter()
            .map(|(q, i)| (i, q))
            .collect();
        for irq_n in &nic.irqs {
            let Some(irq) = topo.irq(*irq_n) else {
                continue;
            };
            let lands = irq.lands_on();
            let remote = nic
                .local_cpus
                .as_ref()
                .is_some_and(|l| !lands.is_empty() && !lands.is_subset(l));
            let allowed = irq
                .smp_affinity
                .as_ref()
                .map_or("?".to_string(), |a| a.to_string());
            out.push((
                if remote {
                    LineKind::Warn
                } else {
                    LineKind::Normal
                },
                format!(
                    "    IRQ {:>4} {:<28} → CPU {} (allowed {allowed}){}{}",
                    irq.irq,
                    irq.name,
                    if lands.is_empty() {
                        "?".to_string()
                    } else {
                        lands.to_string()
                    },
                    by_irq
                        .get(&irq.irq)
                        .map_or(String::new(), |q| queue_steering(nic, *q)),
                    if remote { "  off the NIC's node" } else { "" }
                ),
            ));
        }
    }
    let pinned: Vec<_> = topo
        .threads
        .iter()
        .filter(|t| t.is_pinned(&topo.online))
        .collect();
    if !pinned.is_empty() {
        out.push(h(format!("Pinned threads ({})", pinned.len())));
    }
    for t in pinned {
        let nodes = topo.nodes_of(&t.affinity);
        out.push(n(format!(
            "  {:>7} {:<16} affinity {} node {}{}",
            t.tid,
            t.comm,
            t.affinity,
            if nodes.is_empty() {
                "?".to_string()
            } else {
                nodes
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
            t.cpu_pct.map_or(String::new(), |p| format!(" cpu {p:.0}%")),
        )));
    }
    for note in &topo.notes {
        out.push((LineKind::Note, format!("note: {note}")));
    }
    out
}

/// " · rx-4 RSS weight 0 · rule 1023 udp4 dst-port 53": what sends
/// packets to the queue an IRQ serves, when ethtool told.
fn queue_steering(nic: &crate::topology::Nic, q: u32) -> String {
    let mut s = format!(" · rx-{q}");
    if let Some(w) = nic.rss_weight(q) {
        let _ = write!(s, " RSS weight {w}");
    }
    for r in nic.rules_to(q) {
        let _ = write!(s, " · rule {} {}", r.location, r.flow);
    }
    s
}

/// What the Frame alone says about placement, until the topology thread
/// has loaded the hwloc topology.
pub fn frame_lines(frame: Option<&Frame>) -> Vec<(LineKind, String)> {
    let mut out = vec![(
        LineKind::Note,
        "Loading the hwloc topology (caches, cores, NIC locality, queue IRQs); until it arrives, NUMA placement from the counters.".to_string(),
    )];
    let Some(f) = frame else {
        return out;
    };
    let mut nodes: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
    for c in &f.cpus {
        nodes.entry(c.node).or_default().push(c.cpu);
    }
    let all: Vec<u32> = f.cpus.iter().map(|c| c.cpu).collect();
    let all_list = crate::sys::cpuset::CpuSet::from_cpus(all.iter().copied()).to_list();
    let tasks = if f.threads.is_empty() {
        &f.processes
    } else {
        &f.threads
    };
    // Parse each narrowly pinned task's affinity once, not once per CPU.
    let mut pinned_on: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for t in tasks
        .iter()
        .filter(|t| !t.kthread && t.affinity != all_list)
    {
        if let Ok(set) = crate::sys::cpuset::CpuSet::parse_list(&t.affinity)
            && set.len() <= 4
        {
            for c in set.iter() {
                pinned_on
                    .entry(c)
                    .or_default()
                    .push(format!("{}({})", t.comm, t.tid));
            }
        }
    }
    for (node, cpus) in nodes {
        let name = node.map_or("node ?".to_string(), |n| format!("NUMA node {n}"));
        let list = crate::sys::cpuset::CpuSet::from_cpus(cpus.iter().copied()).to_list();
        out.push((LineKind::Heading, format!("{name}: CPUs {list}")));
        for c in cpus {
            let mut polled: Vec<String> = f
                .napi
                .iter()
                .filter(|n| n.cpus.contains(&c) && n.polls_per_s > 0.0)
                .map(|n| format!("{}#{}", n.dev, n.napi_id))
                .collect();
            polled.dedup();
            let mut pinned = pinned_on.remove(&c).unwrap_or_default();
            pinned.sort();
            if polled.is_empty() && pinned.is_empty() {
                continue;
            }
            let mut s = format!("  CPU {c:>3}");
            if !polled.is_empty() {
                s.push_str(&format!("  napi: {}", polled.join(" ")));
            }
            if !pinned.is_empty() {
                s.push_str(&format!("  pinned here: {}", pinned.join(" ")));
            }
            let kind = if polled.is_empty() || pinned.is_empty() {
                LineKind::Normal
            } else {
                // A pinned task sharing its CPU with NET_RX is the classic victim.
                LineKind::Warn
            };
            out.push((kind, s));
        }
    }
    out
}
