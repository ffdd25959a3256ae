//! Socket traffic and who pays for whose receive processing.
//!
//! The kernel runs NET_RX in whatever task a CPU happens to be running,
//! and bills that task (tick-based accounting) or nobody. The collector
//! shares each NET_RX run's time out over the packets it delivered, so the
//! time can be billed to the tasks whose sockets took them (CAUSED) and,
//! when the run was stolen from another task, to the pair: victim robbed
//! by beneficiary. What reached no reader's socket goes to named buckets,
//! so the parts add up to all NET_RX time (the conservation check).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::frame::{CgroupView, TaskView};
use crate::sample::traffic::{NR_RX_BUCKETS, RX_BUCKETS, RX_DELIVERED, RawRob};
use crate::sample::{RawSample, RxSplit, SockAcct};

/// Pairs kept in a frame, for processes and for cgroups: the largest, so
/// a host with thousands of flows costs a bounded frame.
pub const MAX_PAIRS: usize = 32;

/// A task's traffic over the interval.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TaskTraffic {
    /// Bytes through its own receive and send calls, per second.
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    /// Packets delivered to its sockets by NET_RX, per second.
    pub rx_pkts_per_s: f64,
    /// Send calls (datagrams for UDP), per second.
    pub tx_pkts_per_s: f64,
    /// Receive calls, per second.
    pub rx_calls_per_s: f64,
    /// The receive processing spent delivering to its sockets, % of one
    /// CPU, wherever it ran (CAUSED%): the bill nobody sends it.
    pub caused_pct: f64,
}

impl TaskTraffic {
    pub fn from_delta(s: &SockAcct, dt_ns: u64) -> TaskTraffic {
        let secs = dt_ns as f64 / 1e9;
        let rate = |n: u64| {
            if secs > 0.0 {
                fin(n as f64 / secs)
            } else {
                0.0
            }
        };
        TaskTraffic {
            rx_bytes_per_s: rate(s.rx_bytes_total()),
            tx_bytes_per_s: rate(s.tx_bytes_total()),
            rx_pkts_per_s: rate(s.caused_pkts),
            tx_pkts_per_s: rate(s.tx_calls_total()),
            rx_calls_per_s: rate(s.rx_calls_total()),
            caused_pct: pct(s.caused_ns as f64, dt_ns),
        }
    }

    pub fn add(&mut self, o: &TaskTraffic) {
        self.rx_bytes_per_s += o.rx_bytes_per_s;
        self.tx_bytes_per_s += o.tx_bytes_per_s;
        self.rx_pkts_per_s += o.rx_pkts_per_s;
        self.tx_pkts_per_s += o.tx_pkts_per_s;
        self.rx_calls_per_s += o.rx_calls_per_s;
        self.caused_pct += o.caused_pct;
    }
}

/// One bucket of NET_RX time.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RxBucket {
    /// One of [`RX_BUCKETS`].
    pub name: String,
    /// % of one CPU, all CPUs summed.
    pub pct: f64,
    /// Units (packets; runs for `no_socket`) per second.
    pub units_per_s: f64,
}

/// NET_RX time stolen from a victim for a beneficiary's deliveries.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RobPair {
    pub victim_pid: u32,
    pub victim_comm: String,
    pub beneficiary_pid: u32,
    pub beneficiary_comm: String,
    /// % of one CPU.
    pub pct: f64,
    pub pkts_per_s: f64,
}

/// The same between cgroups (pods): the victim's task cgroup, the
/// beneficiary's socket cgroup.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct CgroupPair {
    pub victim_cgroup: u64,
    pub victim_name: String,
    pub beneficiary_cgroup: u64,
    pub beneficiary_name: String,
    pub pct: f64,
    pub pkts_per_s: f64,
}

/// Whether the parts add up: CAUSED of every task plus the buckets that
/// reached no reader, against all NET_RX time measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Conservation {
    /// All NET_RX time (stolen, inline, ksoftirqd), % of one CPU.
    pub net_rx_pct: f64,
    /// Σ CAUSED% over the process rows.
    pub caused_pct: f64,
    /// Σ of the buckets other than `delivered`.
    pub buckets_pct: f64,
    /// Delivered time charged to no task (see `RxSplit::lost_ns`).
    pub lost_pct: f64,
    /// (caused + buckets) / NET_RX; 1.0 is exact. `None` with no NET_RX.
    pub ratio: Option<f64>,
}

/// The frame's traffic section; `None` in a frame when the collector could
/// not count traffic (no BPF, or a kernel without the tracepoints).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TrafficView {
    pub buckets: Vec<RxBucket>,
    pub conservation: Conservation,
    /// Victim x beneficiary by process, largest first, at most
    /// [`MAX_PAIRS`].
    pub robbed: Vec<RobPair>,
    /// The same by cgroup.
    pub cgroup_pairs: Vec<CgroupPair>,
}

fn fin(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

fn pct(ns: f64, dt_ns: u64) -> f64 {
    if dt_ns == 0 {
        0.0
    } else {
        fin(ns / dt_ns as f64 * 100.0)
    }
}

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
    let secs = dt_ns as f64 / 1e9;
    let rate = |n: u64| {
        if secs > 0.0 {
            fin(n as f64 / secs)
        } else {
            0.0
        }
    };
    let mut split = RxSplit::default();
    for r in rx {
        for b in 0..NR_RX_BUCKETS {
            split.ns[b] = split.ns[b].saturating_add(r.ns[b]);
            split.units[b] = split.units[b].saturating_add(r.units[b]);
        }
        split.lost_ns = split.lost_ns.saturating_add(r.lost_ns);
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
        .map(|t| t.caused_pct)
        .sum();
    let undelivered_ns: u64 = (0..NR_RX_BUCKETS)
        .filter(|&b| b != RX_DELIVERED)
        .map(|b| split.ns[b])
        .sum();
    let buckets_pct = pct(undelivered_ns as f64, dt_ns);
    let net_rx_pct = pct(net_rx_ns as f64, dt_ns);
    let conservation = Conservation {
        net_rx_pct,
        caused_pct: fin(caused_pct),
        buckets_pct,
        lost_pct: pct(split.lost_ns as f64, dt_ns),
        ratio: (net_rx_ns > 0).then(|| fin((caused_pct + buckets_pct) / net_rx_pct)),
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
pub fn fill_cgroups(
    prev: &RawSample,
    cur: &RawSample,
    dt_ns: u64,
    cgroups: &mut [CgroupView],
    processes: &[TaskView],
) {
    if !cur.traffic.available || !prev.traffic.available {
        return;
    }
    let before: HashMap<u64, u64> = prev
        .traffic
        .cgroups
        .iter()
        .map(|c| (c.cgroup_id, c.ns))
        .collect();
    let caused: HashMap<u64, u64> = cur
        .traffic
        .cgroups
        .iter()
        .map(|c| {
            let p = before
                .get(&c.cgroup_id)
                .copied()
                .filter(|p| *p <= c.ns)
                .unwrap_or(0);
            (c.cgroup_id, c.ns - p)
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
        t.caused_pct = pct(caused.get(&c.id).copied().unwrap_or(0) as f64, dt_ns);
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
