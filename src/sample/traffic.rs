//! Socket traffic and the receive processing it causes, as the collector
//! counts them (cumulative): what a task moved through its own sockets,
//! how each CPU's NET_RX time divides over what it did, and whose context
//! paid for whose deliveries.

use serde::{Deserialize, Serialize};

/// Protocols counted apart, in the order of `NT_PROTO_*` (bpf/nettop.h).
/// Only inet sockets count: unix and netlink sockets carry no network
/// traffic.
pub const PROTOCOLS: [&str; NR_PROTO] = ["tcp", "udp", "other"];
pub const NR_PROTO: usize = 3;

/// What a NET_RX run's time went to, in the order of `NT_RX_*`.
pub const RX_BUCKETS: [&str; NR_RX_BUCKETS] = [
    "delivered",
    "unread",
    "dropped",
    "forwarded",
    "xdp",
    "steered",
    "no_socket",
];
pub const NR_RX_BUCKETS: usize = 7;
pub const RX_DELIVERED: usize = 0;

/// A task's socket traffic and the receive processing its sockets caused.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct SockAcct {
    /// Bytes and calls of its own sends and receives, by [`PROTOCOLS`].
    /// Calls are datagrams for UDP; for a TCP stream they are receive and
    /// send calls (a stream has no packets at the socket).
    pub rx_bytes: [u64; NR_PROTO],
    pub rx_calls: [u64; NR_PROTO],
    pub tx_bytes: [u64; NR_PROTO],
    pub tx_calls: [u64; NR_PROTO],
    /// Its share of NET_RX runs that delivered to sockets it reads,
    /// whichever CPU and task they ran on (CAUSED).
    pub caused_ns: u64,
    /// Packets delivered to those sockets in those runs.
    pub caused_pkts: u64,
    /// Its share of the RPS IPIs that brought those packets, in
    /// thousandths of an IPI: their handler time is in `caused_ns`, their
    /// untraced cost is the model's to add (calibrated per host).
    #[serde(default)]
    pub caused_ipis_milli: u64,
}

fn sum(v: &[u64]) -> u64 {
    v.iter().fold(0u64, |s, x| s.saturating_add(*x))
}

impl SockAcct {
    pub fn is_zero(&self) -> bool {
        *self == SockAcct::default()
    }

    pub fn rx_bytes_total(&self) -> u64 {
        sum(&self.rx_bytes)
    }

    pub fn tx_bytes_total(&self) -> u64 {
        sum(&self.tx_bytes)
    }

    pub fn rx_calls_total(&self) -> u64 {
        sum(&self.rx_calls)
    }

    pub fn tx_calls_total(&self) -> u64 {
        sum(&self.tx_calls)
    }

    /// Field-wise saturating sum.
    pub fn add(&mut self, b: &SockAcct) {
        let pairs = [
            (&mut self.rx_bytes, &b.rx_bytes),
            (&mut self.rx_calls, &b.rx_calls),
            (&mut self.tx_bytes, &b.tx_bytes),
            (&mut self.tx_calls, &b.tx_calls),
        ];
        for (x, y) in pairs {
            for (x, y) in x.iter_mut().zip(y) {
                *x = x.saturating_add(*y);
            }
        }
        self.caused_ns = self.caused_ns.saturating_add(b.caused_ns);
        self.caused_pkts = self.caused_pkts.saturating_add(b.caused_pkts);
        self.caused_ipis_milli = self.caused_ipis_milli.saturating_add(b.caused_ipis_milli);
    }

    /// `self - prev`, field-wise, saturating at 0 (a counter that went
    /// back belongs to a newer task: its delta is not known, never
    /// negative).
    pub fn since(&self, prev: &SockAcct) -> SockAcct {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let arr = |a: &[u64; NR_PROTO], b: &[u64; NR_PROTO]| {
            let mut o = [0u64; NR_PROTO];
            for ((o, a), b) in o.iter_mut().zip(a).zip(b) {
                *o = d(*a, *b);
            }
            o
        };
        SockAcct {
            rx_bytes: arr(&self.rx_bytes, &prev.rx_bytes),
            rx_calls: arr(&self.rx_calls, &prev.rx_calls),
            tx_bytes: arr(&self.tx_bytes, &prev.tx_bytes),
            tx_calls: arr(&self.tx_calls, &prev.tx_calls),
            caused_ns: d(self.caused_ns, prev.caused_ns),
            caused_pkts: d(self.caused_pkts, prev.caused_pkts),
            caused_ipis_milli: d(self.caused_ipis_milli, prev.caused_ipis_milli),
        }
    }
}

/// One CPU's NET_RX time by what it did ([`RX_BUCKETS`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RxSplit {
    pub ns: [u64; NR_RX_BUCKETS],
    /// The units the time was shared over: packets delivered, dropped,
    /// forwarded, handled by XDP; one per run for `no_socket`.
    pub units: [u64; NR_RX_BUCKETS],
    /// Of `ns[delivered]`: charged to no task (its record was gone, or a
    /// run delivered to more readers than the collector tells apart).
    pub lost_ns: u64,
    /// The call-function IPIs that raised NET_RX here (RPS handing this
    /// CPU its packets) and their handler time: shared out with the next
    /// NET_RX run, so `ns` adds up to NET_RX time plus `rps_ipi_ns`.
    #[serde(default)]
    pub rps_ipi_ns: u64,
    #[serde(default)]
    pub rps_ipis: u64,
}

impl RxSplit {
    /// `self - prev`, field-wise, saturating at 0.
    pub fn since(&self, prev: &RxSplit) -> RxSplit {
        let mut o = RxSplit {
            lost_ns: self.lost_ns.saturating_sub(prev.lost_ns),
            rps_ipi_ns: self.rps_ipi_ns.saturating_sub(prev.rps_ipi_ns),
            rps_ipis: self.rps_ipis.saturating_sub(prev.rps_ipis),
            ..Default::default()
        };
        for b in 0..NR_RX_BUCKETS {
            o.ns[b] = self.ns[b].saturating_sub(prev.ns[b]);
            o.units[b] = self.units[b].saturating_sub(prev.units[b]);
        }
        o
    }

    /// All NET_RX time split: equals the CPU's NET_RX time plus its RPS
    /// IPIs' but for rounding (one nanosecond per unit at most).
    pub fn total_ns(&self) -> u64 {
        sum(&self.ns)
    }
}

/// NET_RX time that ran in a victim's context delivering to a
/// beneficiary's sockets, cumulative per pair of threads.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RawRob {
    pub victim_tid: u32,
    pub victim_pid: u32,
    pub beneficiary_tid: u32,
    pub beneficiary_pid: u32,
    /// The beneficiary's socket's cgroup (v2 id; 0 unknown).
    #[serde(default)]
    pub beneficiary_cgroup: u64,
    pub ns: u64,
    pub pkts: u64,
}

/// Receive processing for one cgroup's sockets (the socket's own cgroup,
/// read or not), cumulative.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RawCgCaused {
    pub cgroup_id: u64,
    pub ns: u64,
    pub pkts: u64,
    /// As [`SockAcct::caused_ipis_milli`].
    #[serde(default)]
    pub ipis_milli: u64,
}

/// Everything about traffic in one sample, beside the per-task counters
/// (which live in each task's `IrqAcct::sock`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RawTraffic {
    /// The socket tracepoints are attached: without them the figures are
    /// not known (left out of the tables, null in JSON), never 0.
    pub available: bool,
    /// Why not, when not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub robbed: Vec<RawRob>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<RawCgCaused>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_that_went_back_gives_no_negative_delta() {
        let mut a = SockAcct::default();
        a.rx_bytes[1] = 100;
        a.caused_ns = 50;
        let mut b = a.clone();
        b.rx_bytes[1] = 40;
        b.caused_ns = 80;
        let d = b.since(&a);
        assert_eq!(d.rx_bytes[1], 0);
        assert_eq!(d.caused_ns, 30);
        let mut s = a.clone();
        s.add(&b);
        assert_eq!(s.rx_bytes_total(), 140);
    }
}
