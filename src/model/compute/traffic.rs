//! The traffic section of a frame and each cgroup's traffic, from two
//! samples (see `model::traffic` for what the figures mean).

use std::collections::{BTreeMap, HashMap};

use crate::model::frame::{CgroupView, TaskView};
use crate::model::traffic::{
    CgroupPair, Conservation, MAX_PAIRS, RobPair, RxBucket, TaskTraffic, TrafficView, ipis_ns,
};
use crate::model::{fin, pct, per_s};
use crate::sample::traffic::{NR_RX_BUCKETS, RX_BUCKETS, RX_DELIVERED, RawRob};
use crate::sample::{RawSample, RxSplit};

/// Interval deltas of the pair counters, keyed by thread pair. A pair not
/// in the previous sample is new (or was evicted and came back): all of
/// its count is this interval's.
fn rob_deltas<'a>(prev: &[RawRob], cur: &'a [RawRob]) -> Vec<(&'a RawRob, u64, u64)> {
    let before: HashMap<(u32, u32), &RawRob> = prev
        .iter()
        .map(|r| ((r.victim_tid, r.beneficiary_tid), r))
        .collect();
    cur.iter()
        .filter_map(|r| {
            let (ns, pkts) = match before.get(&(r.victim_tid, r.beneficiary_tid)) {
                Some(p) if p.ns <= r.ns => (r.ns - p.ns, r.pkts.saturating_sub(p.pkts)),
                _ => (r.ns, r.pkts),
            };
            (ns > 0).then_some((r, ns, pkts))
        })
        .collect()
}

fn largest<T>(mut v: Vec<T>, key: impl Fn(&T) -> f64) -> Vec<T> {
    v.sort_by(|a, b| key(b).total_cmp(&key(a)));
    v.truncate(MAX_PAIRS);
    v
}

/// The frame's traffic section. `rx` is each CPU's NET_RX split over the
/// interval, `net_rx_ns` all NET_RX time in it.
pub fn traffic_view(
    prev: &RawSample,
    cur: &RawSample,
    dt_ns: u64,
    rx: &[RxSplit],
    net_rx_ns: u64,
    processes: &[TaskView],
    cgroups: &[CgroupView],
) -> Option<TrafficView> {
    if !cur.traffic.available || !prev.traffic.available {
        return None;
    }
    let rate = |n: u64| per_s(n, dt_ns);
    let mut split = RxSplit::default();
    for r in rx {
        for b in 0..NR_RX_BUCKETS {
            split.ns[b] = split.ns[b].saturating_add(r.ns[b]);
            split.units[b] = split.units[b].saturating_add(r.units[b]);
        }
        split.lost_ns = split.lost_ns.saturating_add(r.lost_ns);
        split.rps_ipi_ns = split.rps_ipi_ns.saturating_add(r.rps_ipi_ns);
    }
    let buckets = RX_BUCKETS
        .iter()
        .enumerate()
        .map(|(b, name)| RxBucket {
            name: (*name).to_string(),
            pct: pct(split.ns[b] as f64, dt_ns),
            units_per_s: rate(split.units[b]),
        })
        .collect();
    let caused_pct: f64 = processes
        .iter()
        .filter_map(|p| p.traffic.as_ref())
        .map(|t| t.caused_pct - t.caused_ipi_hidden_pct)
        .sum();
    let undelivered_ns: u64 = (0..NR_RX_BUCKETS)
        .filter(|&b| b != RX_DELIVERED)
        .map(|b| split.ns[b])
        .sum();
    let buckets_pct = pct(undelivered_ns as f64, dt_ns);
    let net_rx_pct = pct(net_rx_ns as f64, dt_ns);
    let rps_ipi_pct = pct(split.rps_ipi_ns as f64, dt_ns);
    let conservation = Conservation {
        net_rx_pct,
        rps_ipi_pct,
        caused_pct: fin(caused_pct),
        buckets_pct,
        lost_pct: pct(split.lost_ns as f64, dt_ns),
        ratio: (net_rx_ns > 0)
            .then(|| fin((caused_pct + buckets_pct) / (net_rx_pct + rps_ipi_pct))),
    };

    let comm: HashMap<u32, (&str, u64)> = processes
        .iter()
        .map(|p| (p.pid, (p.comm.as_str(), p.cgroup_id)))
        .collect();
    let name_of = |pid: u32| comm.get(&pid).map_or("?", |c| c.0).to_string();
    let mut by_proc: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
    let mut by_cg: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    for (r, ns, pkts) in rob_deltas(&prev.traffic.robbed, &cur.traffic.robbed) {
        let e = by_proc
            .entry((r.victim_pid, r.beneficiary_pid))
            .or_default();
        e.0 = e.0.saturating_add(ns);
        e.1 = e.1.saturating_add(pkts);
        let victim_cg = comm.get(&r.victim_pid).map_or(0, |c| c.1);
        let e = by_cg.entry((victim_cg, r.beneficiary_cgroup)).or_default();
        e.0 = e.0.saturating_add(ns);
        e.1 = e.1.saturating_add(pkts);
    }
    let robbed = by_proc
        .into_iter()
        .map(|((v, b), (ns, pkts))| RobPair {
            victim_pid: v,
            victim_comm: name_of(v),
            beneficiary_pid: b,
            beneficiary_comm: name_of(b),
            pct: pct(ns as f64, dt_ns),
            pkts_per_s: rate(pkts),
        })
        .collect();
    let cg_name: HashMap<u64, &str> = cgroups
        .iter()
        .map(|c| {
            (
                c.id,
                if c.name.is_empty() {
                    c.path.as_str()
                } else {
                    c.name.as_str()
                },
            )
        })
        .collect();
    let cname = |id: u64| {
        cg_name
            .get(&id)
            .map_or_else(|| format!("cgroup {id}"), |n| (*n).to_string())
    };
    let cgroup_pairs = by_cg
        .into_iter()
        .map(|((v, b), (ns, pkts))| CgroupPair {
            victim_cgroup: v,
            victim_name: cname(v),
            beneficiary_cgroup: b,
            beneficiary_name: cname(b),
            pct: pct(ns as f64, dt_ns),
            pkts_per_s: rate(pkts),
        })
        .collect();
    Some(TrafficView {
        buckets,
        conservation,
        robbed: largest(robbed, |p| p.pct),
        cgroup_pairs: largest(cgroup_pairs, |p| p.pct),
    })
}

/// Each cgroup's receive processing, by its sockets' own cgroup (read or
/// not), and its processes' traffic. Left `None` when traffic is not known.
/// `ipi_cost_ns` is one IPI's untraced cost on this host.
pub fn fill_cgroups(
    prev: &RawSample,
    cur: &RawSample,
    dt_ns: u64,
    ipi_cost_ns: f64,
    cgroups: &mut [CgroupView],
    processes: &[TaskView],
) {
    if !cur.traffic.available || !prev.traffic.available {
        return;
    }
    let before: HashMap<u64, (u64, u64)> = prev
        .traffic
        .cgroups
        .iter()
        .map(|c| (c.cgroup_id, (c.ns, c.ipis_milli)))
        .collect();
    // A counter that went back was evicted and came back: all of it is new.
    let caused: HashMap<u64, f64> = cur
        .traffic
        .cgroups
        .iter()
        .map(|c| {
            let (ns, milli) = before
                .get(&c.cgroup_id)
                .copied()
                .filter(|p| p.0 <= c.ns && p.1 <= c.ipis_milli)
                .unwrap_or((0, 0));
            let hidden = ipis_ns(c.ipis_milli - milli, ipi_cost_ns);
            (c.cgroup_id, (c.ns - ns) as f64 + hidden)
        })
        .collect();
    let mut own: HashMap<u64, TaskTraffic> = HashMap::new();
    for p in processes {
        if let Some(t) = &p.traffic {
            own.entry(p.cgroup_id).or_default().add(t);
        }
    }
    for c in cgroups.iter_mut() {
        let mut t = own.remove(&c.id).unwrap_or_default();
        t.caused_pct = pct(caused.get(&c.id).copied().unwrap_or(0.0), dt_ns);
        c.traffic = Some(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rob(v: u32, b: u32, ns: u64) -> RawRob {
        RawRob {
            victim_tid: v,
            victim_pid: v,
            beneficiary_tid: b,
            beneficiary_pid: b,
            beneficiary_cgroup: 0,
            ns,
            pkts: ns / 1000,
        }
    }

    #[test]
    fn pairs_count_the_interval_and_a_new_pair_counts_whole() {
        let prev = [rob(1, 2, 5_000), rob(1, 3, 9_000)];
        let cur = [rob(1, 2, 8_000), rob(1, 3, 9_000), rob(4, 2, 2_000)];
        let d = rob_deltas(&prev, &cur);
        let got: Vec<(u32, u32, u64)> = d
            .iter()
            .map(|(r, ns, _)| (r.victim_tid, r.beneficiary_tid, *ns))
            .collect();
        assert_eq!(got, vec![(1, 2, 3_000), (4, 2, 2_000)]);
    }
}
