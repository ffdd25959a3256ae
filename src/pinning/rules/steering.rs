//! Receive steering a NIC does itself: the RSS indirection table, flow
//! (ntuple) rules and XDP mode (`topology::ethtool`, `topology::xdp`). The
//! classic dedicated-queue setup (take a queue out of RSS with
//! `ethtool -X … weight`, steer one flow to it with `ethtool -N … action`,
//! move its IRQ) goes wrong in a few typical ways: these rules catch them.
//!
//! "Consumers" of a NIC are the pinned threads whose sockets use it (the
//! only link from a thread to a NIC nettop can see).

use super::ctx::{Ctx, in_netns_of, no_cpu_for_irq};
use super::{Finding, RuleId, finding, tref};
use crate::pinning::Severity;
use crate::sys::cpuset::CpuSet;
use crate::topology::{Nic, Steering, Support, ThreadInfo, XdpMode};

/// Drivers with native (driver) XDP, from the kernel's `ndo_bpf`
/// implementations: generic XDP on them leaves performance on the table
/// for frames that arrive from hardware or by XDP_REDIRECT.
const NATIVE_XDP: &[&str] = &[
    "veth",
    "virtio_net",
    "tun",
    "ixgbe",
    "ixgbevf",
    "i40e",
    "ice",
    "igb",
    "igc",
    "mlx4_en",
    "mlx5_core",
    "bnxt_en",
    "nfp",
    "qede",
    "ena",
    "hv_netvsc",
    "stmmac",
    "mvneta",
    "mvpp2",
    "sfc",
    "netdevsim",
    "bond",
];

/// Pinned threads using `nic`, narrowest first.
fn consumers<'a>(cx: &'a Ctx, nic: &Nic) -> Vec<&'a ThreadInfo> {
    let label = nic.label();
    let mut v: Vec<&ThreadInfo> = cx.pinned().filter(|th| th.nics.contains(&label)).collect();
    v.sort_by_key(|th| (th.affinity.len(), th.tid));
    v
}

/// Where the IRQ of `queue` lands, when its IRQ is known.
fn queue_irq(cx: &Ctx, nic: &Nic, queue: u32) -> Option<(u32, CpuSet)> {
    let irq = *nic.queue_irqs(&cx.t.irqs).get(&queue)?;
    let lands = cx.t.irq(irq)?.lands_on();
    (!lands.is_empty()).then_some((irq, lands))
}

/// `ethtool -X DEV weight …` with `queue` at `w` and the others as now.
fn weight_cmd(cx: &Ctx, nic: &Nic, queue: u32, w: u32) -> Option<String> {
    let st = nic.steering.as_ref()?;
    let mut ws = st.weights();
    *ws.get_mut(queue as usize)? = w;
    if ws.iter().all(|x| *x == 0) {
        return None;
    }
    let list: Vec<String> = ws.iter().map(u32::to_string).collect();
    Some(in_netns_of(
        cx,
        nic,
        format!("ethtool -X {} weight {}", nic.name, list.join(" ")),
    ))
}

/// An IRQ move onto `to`, or the reason there is none.
fn move_irq(f: &mut Finding, irq: u32, to: &CpuSet) {
    if to.is_empty() {
        f.evidence.push(no_cpu_for_irq(irq));
    } else {
        f.fix
            .push(format!("echo {to} > /proc/irq/{irq}/smp_affinity_list"));
    }
}

/// Housekeeping CPUs on `node`, minus `avoid`.
fn targets(cx: &Ctx, node: Option<u32>, avoid: &CpuSet) -> CpuSet {
    cx.housekeeping(node).difference(avoid)
}

/// NUMA nodes an IRQ lands on (`lands`) outside `home`, the consumers'
/// nodes; none on a single-node host.
fn remote_nodes(cx: &Ctx, lands: &CpuSet, home: &[u32]) -> Vec<u32> {
    if !cx.multi_node {
        return Vec::new();
    }
    cx.t.nodes_of(lands)
        .into_iter()
        .filter(|n| !home.contains(n))
        .collect()
}

/// NICs whose RSS table could be read, with their steering: the only ones
/// whose queue weights say anything.
fn rss_nics<'a>(cx: &'a Ctx) -> impl Iterator<Item = (&'a Nic, &'a Steering)> {
    cx.t.nics.iter().filter_map(|nic| {
        let st = nic
            .steering
            .as_ref()
            .filter(|s| s.rss == Support::Supported)?;
        Some((nic, st))
    })
}

fn share(w: u32, total: usize) -> String {
    format!("RSS sends {w}/{total} of the hash buckets (of all hashed flows) to it")
}

/// NT019: a queue RSS gives weight to has its IRQ on a pinned or isolated
/// CPU, or on another NUMA node than the threads consuming the NIC. Runs
/// after the IRQ rules, whose findings it completes rather than repeats.
pub(super) fn nt019_rss_queue_irq(cx: &Ctx, out: &mut Vec<Finding>) {
    for (nic, st) in rss_nics(cx) {
        let weights = st.weights();
        let users = consumers(cx, nic);
        let user_nodes: Vec<u32> = users
            .iter()
            .flat_map(|th| cx.t.nodes_of(&th.affinity))
            .collect();
        for (q, w) in weights.iter().enumerate() {
            let q = q as u32;
            if *w == 0 {
                continue;
            }
            let Some((irq, lands)) = queue_irq(cx, nic, q) else {
                continue;
            };
            let quiet = cx.isolated.union(&cx.pinned_cpus);
            let hit = lands.intersection(&quiet);
            let remote = if user_nodes.is_empty() {
                Vec::new()
            } else {
                remote_nodes(cx, &lands, &user_nodes)
            };
            if hit.is_empty() && remote.is_empty() {
                continue;
            }
            // On a pinned or isolated CPU, NT002/NT003/NT007 already name
            // this IRQ: what RSS adds (its share, and the fix of taking the
            // queue out of the table) joins that finding, not a second one.
            if !hit.is_empty()
                && let Some(g) = out.iter_mut().find(|g| {
                    matches!(g.rule, RuleId::Nt002 | RuleId::Nt003 | RuleId::Nt007)
                        && g.irqs.contains(&irq)
                })
            {
                g.evidence.push(format!(
                    "{} rx-{q}: {}",
                    nic.label(),
                    share(*w, st.indir.len())
                ));
                if let Some(c) = weight_cmd(cx, nic, q, 0) {
                    g.fix
                        .push(format!("# or take {} rx-{q} out of RSS: {c}", nic.label()));
                }
                continue;
            }
            let summary = if !hit.is_empty() {
                format!(
                    "{} rx-{q} takes RSS traffic and its IRQ {irq} lands on {} CPU {hit}",
                    nic.label(),
                    if hit.is_subset(&cx.isolated) {
                        "isolated"
                    } else {
                        "pinned"
                    }
                )
            } else {
                format!(
                    "{} rx-{q} takes RSS traffic and its IRQ {irq} runs on node {} while its consumers run on node {}",
                    nic.label(),
                    super::join(&remote),
                    super::join(&user_nodes)
                )
            };
            let mut f = finding(
                RuleId::Nt019,
                summary,
                "Every flow RSS hashes to this queue raises its IRQ and NET_RX where the IRQ lands: on a \
                 pinned or isolated CPU that is stolen from the thread meant to run there, on another node \
                 the packets cross the interconnect before their consumer reads them.",
            );
            f.irqs.push(irq);
            f.cpus = lands.clone();
            f.nics.push(nic.label());
            f.evidence.push(share(*w, st.indir.len()));
            // Its consumers, and the pinned threads whose CPU it lands on.
            let mut named: Vec<&ThreadInfo> = users.clone();
            named.extend(cx.narrow().filter(|th| th.affinity.intersects(&hit)));
            named.sort_by_key(|th| th.tid);
            named.dedup_by_key(|th| th.tid);
            for th in named {
                f.threads.push(tref(th, cx.ev));
            }
            let node = user_nodes.first().copied().or(nic.numa_node);
            move_irq(&mut f, irq, &targets(cx, node, &quiet));
            if let Some(c) = weight_cmd(cx, nic, q, 0) {
                f.fix.push(format!("# or take the queue out of RSS: {c}"));
            }
            out.push(f);
        }
    }
}

/// NT020: a flow rule steers to a queue whose IRQ lands on the consuming
/// thread's own CPU, or on another node than it.
pub(super) fn nt020_flow_rule_irq(cx: &Ctx, out: &mut Vec<Finding>) {
    for nic in &cx.t.nics {
        let Some(st) = &nic.steering else {
            continue;
        };
        let users = consumers(cx, nic);
        if users.is_empty() {
            continue;
        }
        for rule in &st.rules {
            let Some(q) = rule.queue else {
                continue;
            };
            let Some((irq, lands)) = queue_irq(cx, nic, q) else {
                continue;
            };
            for th in &users {
                let own = lands.intersection(&th.affinity);
                let th_nodes = cx.t.nodes_of(&th.affinity);
                let remote = remote_nodes(cx, &lands, &th_nodes);
                if own.is_empty() && remote.is_empty() {
                    continue;
                }
                let summary = if own.is_empty() {
                    format!(
                        "flow rule {} ({}) steers to {} rx-{q} whose IRQ {irq} runs on node {}, \
                         its consumer {} ({}) on node {}",
                        rule.location,
                        rule.flow,
                        nic.label(),
                        super::join(&remote),
                        th.tid,
                        th.comm,
                        super::join(&th_nodes)
                    )
                } else {
                    format!(
                        "flow rule {} ({}) steers to {} rx-{q} whose IRQ {irq} lands on CPU {own}, \
                         its consumer {} ({})'s own CPU",
                        rule.location,
                        rule.flow,
                        nic.label(),
                        th.tid,
                        th.comm
                    )
                };
                let mut f = finding(
                    RuleId::Nt020,
                    summary,
                    "A dedicated queue's IRQ belongs on a quiet CPU of its consumer's node: on the consumer's \
                     own CPU every interrupt and its NET_RX preempt the thread that should be reading the \
                     queue; on another node every packet crosses the interconnect.",
                );
                f.threads.push(tref(th, cx.ev));
                f.irqs.push(irq);
                f.cpus = lands.clone();
                f.nics.push(nic.label());
                f.evidence.push(format!(
                    "rule {}: {} → {}",
                    rule.location, rule.flow, rule.action
                ));
                let node = th_nodes.first().copied();
                let avoid = cx.isolated.union(&cx.pinned_cpus).union(&th.affinity);
                move_irq(&mut f, irq, &targets(cx, node, &avoid));
                out.push(f);
            }
        }
    }
}

/// NT021: a queue RSS gives no weight with no flow rule steering to it:
/// its ring, IRQ and memory serve nothing (typically the rule's `action`
/// names another queue).
pub(super) fn nt021_unused_queue(cx: &Ctx, out: &mut Vec<Finding>) {
    for (nic, st) in rss_nics(cx) {
        for (q, w) in st.weights().iter().enumerate() {
            let q = q as u32;
            if *w > 0 || !nic.rules_to(q).is_empty() {
                continue;
            }
            let mut f = finding(
                RuleId::Nt021,
                format!(
                    "{} rx-{q} is out of RSS (weight 0) and no flow rule steers to it",
                    nic.label()
                ),
                "A queue taken out of the indirection table receives only what flow rules send it; with none \
                 it is dead weight, and the flow meant for it goes through the shared queues after all.",
            );
            f.nics.push(nic.label());
            if let Some((irq, lands)) = queue_irq(cx, nic, q) {
                f.irqs.push(irq);
                f.cpus = lands;
            }
            // A rule exists but points elsewhere: likely a typo in `action`.
            if !st.rules.is_empty() {
                f.severity = Severity::Warning;
                for r in &st.rules {
                    f.evidence
                        .push(format!("rule {}: {} → {}", r.location, r.flow, r.action));
                }
            }
            // Back into RSS with the weight the other queues have.
            let back = st.weights().into_iter().max().unwrap_or(1).max(1);
            if let Some(c) = weight_cmd(cx, nic, q, back) {
                f.fix.push(c);
            }
            f.fix.push(format!(
                "# or steer its flow to it: {}",
                in_netns_of(
                    cx,
                    nic,
                    format!(
                        "ethtool -N {} flow-type udp4 dst-port PORT action {q}",
                        nic.name
                    )
                )
            ));
            out.push(f);
        }
    }
}

/// NT022: XDP in generic mode on a device whose driver has native XDP.
pub(super) fn nt022_generic_xdp(cx: &Ctx, out: &mut Vec<Finding>) {
    for nic in &cx.t.nics {
        let generic: Vec<u32> = nic
            .xdp_progs
            .iter()
            .filter(|p| p.mode == XdpMode::Generic)
            .map(|p| p.id)
            .collect();
        if generic.is_empty() && nic.xdp != XdpMode::Generic {
            continue;
        }
        let Some(driver) = nic.driver.as_deref().filter(|d| NATIVE_XDP.contains(d)) else {
            continue;
        };
        let mut f = finding(
            RuleId::Nt022,
            format!(
                "{} runs XDP in generic mode, but its driver ({driver}) has native XDP",
                nic.label()
            ),
            "Generic XDP runs after the kernel has allocated and filled an skb; native XDP runs in the \
             driver on the raw buffer, several times cheaper for frames from a NIC or XDP_REDIRECT. On veth, \
             frames sent by the peer's own stack are copied into an XDP buffer in native mode and can cost \
             more: compare nettop's NET_RX ns/pkt before and after.",
        );
        f.nics.push(nic.label());
        f.evidence.push(format!("driver {driver}"));
        if driver == "veth" {
            f.severity = Severity::Info;
        }
        for id in &generic {
            f.fix.push(in_netns_of(
                cx,
                nic,
                format!(
                    "bpftool net detach xdpgeneric dev {0} && bpftool net attach xdpdrv id {id} dev {0}",
                    nic.name
                ),
            ));
        }
        out.push(f);
    }
}
