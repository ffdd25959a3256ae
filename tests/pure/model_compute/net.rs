//! napi instances and devices (`src/model/compute/net.rs`).

use crate::model_compute::fixtures::*;

/// Cost per packet, by hand. One second. CPU 0: NET_RX 10 ms for 10,000
/// packets (1,000 ns each); CPU 1: 6 ms for 2,000 (3,000 ns each).
/// veth1 in namespace "blue" (inode 777, ifindex 5) polled 6,000 packets on
/// CPU 0 and 2,000 on CPU 1: 6 ms + 6 ms = 12 ms charged, 1,500 ns per
/// packet, 1.2 % of a CPU, for 100 MB/s = 0.8 Gbit/s: 1.5 %/Gbit/s. The
/// backlog polled the other 4,000 on CPU 0. A "veth1" in nettop's own
/// namespace (another inode) received 50 MB/s through the backlog: no cost
/// of its own. Host: 16 ms / 12,000 = 1,333.3 ns per packet; 1.6 % of a CPU
/// for 150 MB/s = 1.2 Gbit/s: 1.333 %/Gbit/s.
#[test]
fn cost_per_packet_by_hand() {
    let net = |ns: u64, pkts: u64| CpuNet {
        net_rx_ns: ns,
        napi_work: pkts,
        napi_polls: pkts / 10,
        net_rx_actions: pkts / 10,
        ..Default::default()
    };
    let mk = |n: u32, netv: CpuNet, idle: u64| {
        let mut c = cpu(n, times(0, 0, 0, 0, idle), Some(IrqAcct::default()));
        c.net = Some(netv);
        c
    };
    let napi = |dev: &str, cpu: u32, work: u64, ifindex: u32, inode: u64| RawNapi {
        dev: dev.into(),
        napi_id: if dev == "backlog" { 0 } else { 9 },
        cpu,
        polls: work / 10,
        work,
        budget: 64,
        ifindex,
        netns_inode: inode,
        ..Default::default()
    };
    let dev = |netns: &str, inode: u64, rx_bytes: u64| RawDevice {
        name: "veth1".into(),
        ifindex: 5,
        netns: netns.into(),
        netns_inode: inode,
        rx_bytes,
        rx_packets: rx_bytes / 1000,
        ..Default::default()
    };
    let (mut prev, mut cur) = pair(
        Source::Bpf,
        (
            vec![mk(0, CpuNet::default(), 0), mk(1, CpuNet::default(), 0)],
            vec![],
        ),
        (
            vec![
                mk(0, net(10 * MS, 10_000), 100),
                mk(1, net(6 * MS, 2_000), 100),
            ],
            vec![],
        ),
    );
    prev.napi = vec![
        napi("veth1", 0, 0, 5, 777),
        napi("veth1", 1, 0, 5, 777),
        napi("backlog", 0, 0, 0, 0),
    ];
    cur.napi = vec![
        napi("veth1", 0, 6_000, 5, 777),
        napi("veth1", 1, 2_000, 5, 777),
        napi("backlog", 0, 4_000, 0, 0),
    ];
    prev.devices = vec![dev("blue", 777, 0), dev("", 1, 0)];
    cur.devices = vec![dev("blue", 777, 100_000_000), dev("", 1, 50_000_000)];
    let f = compute(&host(Regime::TickBased), &prev, &cur);
    let cpu0 = f.cpus.iter().find(|c| c.cpu == 0).unwrap();
    let cpu1 = f.cpus.iter().find(|c| c.cpu == 1).unwrap();
    approx(cpu0.net_rx_ns_per_packet.unwrap(), 1000.0);
    approx(cpu1.net_rx_ns_per_packet.unwrap(), 3000.0);
    let n = f.napi.iter().find(|n| n.dev == "veth1").unwrap();
    approx(n.net_rx_ns_per_packet.unwrap(), 1500.0);
    approx(n.net_rx_pct, 1.2);
    let blue = f.devices.iter().find(|d| d.netns == "blue").unwrap();
    assert_eq!(blue.label(), "veth1 (netns blue)");
    approx(blue.net_rx_ns_per_packet.unwrap(), 1500.0);
    approx(blue.net_rx_pct.unwrap(), 1.2);
    approx(blue.net_rx_pct_per_gbps.unwrap(), 1.5);
    let own = f.devices.iter().find(|d| d.netns.is_empty()).unwrap();
    assert_eq!(own.net_rx_ns_per_packet, None, "{own:?}");
    approx(own.rx_bytes_per_s, 50e6);
    approx(f.summary.net_rx_ns_per_packet.unwrap(), 16e6 / 12_000.0);
    approx(f.summary.net_rx_pct_per_gbps.unwrap(), 1.6 / 1.2);
}
