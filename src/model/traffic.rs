//! Socket traffic and who pays for whose receive processing.
//!
//! The kernel runs NET_RX in whatever task a CPU happens to be running,
//! and bills that task (tick-based accounting) or nobody. The collector
//! shares each NET_RX run's time out over the packets it delivered, so the
//! time can be billed to the tasks whose sockets took them (CAUSED) and,
//! when the run was stolen from another task, to the pair: victim robbed
//! by beneficiary. What reached no reader's socket goes to named buckets,
//! so the parts add up to all NET_RX time (the conservation check).
//!
//! The figures' types; `compute::traffic` derives them from two samples.

use serde::{Deserialize, Serialize};

use super::{fin, pct, per_s};
use crate::sample::SockAcct;
use crate::sample::traffic::PROTOCOLS;

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
    /// CPU, wherever it ran (CAUSED%): the bill nobody sends it. It holds
    /// the RPS IPIs that brought its packets, their untraced cost too.
    pub caused_pct: f64,
    /// Of `caused_pct`: the RPS IPIs' untraced cost (calibrated per host,
    /// as HIDDEN~ is; 0 without a calibration).
    #[serde(default)]
    pub caused_ipi_hidden_pct: f64,
    /// The send and receive figures by protocol, those with traffic only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<ProtoTraffic>,
}

/// One protocol's share of a task's own sends and receives.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ProtoTraffic {
    /// One of [`crate::sample::traffic::PROTOCOLS`].
    pub protocol: String,
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    pub rx_calls_per_s: f64,
    pub tx_calls_per_s: f64,
}

impl TaskTraffic {
    /// `ipi_cost_ns` is one IPI's untraced cost on this host.
    pub fn from_delta(s: &SockAcct, dt_ns: u64, ipi_cost_ns: f64) -> TaskTraffic {
        let rate = |n: u64| per_s(n, dt_ns);
        let hidden = ipis_ns(s.caused_ipis_milli, ipi_cost_ns);
        TaskTraffic {
            rx_bytes_per_s: rate(s.rx_bytes_total()),
            tx_bytes_per_s: rate(s.tx_bytes_total()),
            rx_pkts_per_s: rate(s.caused_pkts),
            tx_pkts_per_s: rate(s.tx_calls_total()),
            rx_calls_per_s: rate(s.rx_calls_total()),
            caused_pct: pct(s.caused_ns as f64 + hidden, dt_ns),
            caused_ipi_hidden_pct: pct(hidden, dt_ns),
            protocols: PROTOCOLS
                .iter()
                .enumerate()
                .filter(|(p, _)| {
                    s.rx_bytes[*p] + s.tx_bytes[*p] + s.rx_calls[*p] + s.tx_calls[*p] > 0
                })
                .map(|(p, name)| ProtoTraffic {
                    protocol: (*name).to_string(),
                    rx_bytes_per_s: rate(s.rx_bytes[p]),
                    tx_bytes_per_s: rate(s.tx_bytes[p]),
                    rx_calls_per_s: rate(s.rx_calls[p]),
                    tx_calls_per_s: rate(s.tx_calls[p]),
                })
                .collect(),
        }
    }

    pub fn add(&mut self, o: &TaskTraffic) {
        self.rx_bytes_per_s += o.rx_bytes_per_s;
        self.tx_bytes_per_s += o.tx_bytes_per_s;
        self.rx_pkts_per_s += o.rx_pkts_per_s;
        self.tx_pkts_per_s += o.tx_pkts_per_s;
        self.rx_calls_per_s += o.rx_calls_per_s;
        self.caused_pct += o.caused_pct;
        self.caused_ipi_hidden_pct += o.caused_ipi_hidden_pct;
        for p in &o.protocols {
            match self.protocols.iter_mut().find(|q| q.protocol == p.protocol) {
                Some(q) => {
                    q.rx_bytes_per_s += p.rx_bytes_per_s;
                    q.tx_bytes_per_s += p.tx_bytes_per_s;
                    q.rx_calls_per_s += p.rx_calls_per_s;
                    q.tx_calls_per_s += p.tx_calls_per_s;
                }
                None => self.protocols.push(p.clone()),
            }
        }
    }
}

/// One bucket of NET_RX time.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RxBucket {
    /// One of [`crate::sample::traffic::RX_BUCKETS`].
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
/// reached no reader, against all NET_RX time measured and the RPS IPIs
/// that brought packets to it. Traced time only: the IPIs' untraced cost
/// in CAUSED is an estimate, with no measured total to check it against.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Conservation {
    /// All NET_RX time (stolen, inline, ksoftirqd), % of one CPU.
    pub net_rx_pct: f64,
    /// The handler time of the RPS IPIs that raised NET_RX, % of one CPU.
    #[serde(default)]
    pub rps_ipi_pct: f64,
    /// Σ CAUSED% over the process rows, less the IPIs' untraced cost.
    pub caused_pct: f64,
    /// Σ of the buckets other than `delivered`.
    pub buckets_pct: f64,
    /// Delivered time charged to no task (see `RxSplit::lost_ns`).
    pub lost_pct: f64,
    /// (caused + buckets) / (NET_RX + RPS IPIs); 1.0 is exact. `None`
    /// with no NET_RX.
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

/// The untraced cost of `milli` thousandths of an IPI, ns.
pub(crate) fn ipis_ns(milli: u64, ipi_cost_ns: f64) -> f64 {
    fin(milli as f64 / 1000.0 * ipi_cost_ns.max(0.0))
}
