//! Device counters: the rtnetlink dump (`collector::netdev`) against the
//! sysfs reader (`procfiles::read_devices`) on live veths in namespaces this
//! test creates, while bounded UDP traffic runs between them. Both must list
//! the same devices with the same ifindex, and every counter of the dump must
//! lie between two sysfs reads taken around it.
//! Needs root and `ip`; prints SKIPPED otherwise, fails under
//! NETTOP_REQUIRE_BPF=1.
//!
//! The ignored `cost_1000_veths` is the benchmark behind BENCHMARKS.md
//! "Device counters" (`bash bench/netdev.sh`).

use crate::common;
use crate::common::tier::Need;

use std::net::UdpSocket;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::netns::{ADDR_RX, ADDR_TX, NetnsPair, in_netns, in_netns_with_sysfs};
use nettop::collector::{netdev, procfiles};
use nettop::sample::RawDevice;
use nettop::sys::sysroot::Sysroot;

/// Datagrams sent tx → rx: enough to move every counter by a lot, bounded
/// (1,000-byte payloads, ~20 MB in all, well under a second on the VM).
const DATAGRAMS: u64 = 20_000;

fn counters(d: &RawDevice) -> [(&'static str, u64); 5] {
    [
        ("rx_packets", d.rx_packets),
        ("rx_bytes", d.rx_bytes),
        ("tx_packets", d.tx_packets),
        ("tx_bytes", d.tx_bytes),
        ("rx_dropped", d.rx_dropped),
    ]
}

/// One sysfs read, one dump, one sysfs read: same devices and ifindexes in
/// all three, and each dump counter between the two sysfs values (counters
/// only grow, and each sysfs file is read at some instant in its window).
fn sandwich(root: &Sysroot) -> Vec<RawDevice> {
    let before = procfiles::read_devices(root).expect("sysfs before");
    let (nl, bad) = netdev::read_netlink().expect("rtnetlink dump");
    let after = procfiles::read_devices(root).expect("sysfs after");
    assert!(bad.is_empty(), "undecodable link messages: {bad:?}");
    let ids = |v: &[RawDevice]| -> Vec<(String, u32)> {
        v.iter().map(|d| (d.name.clone(), d.ifindex)).collect()
    };
    assert_eq!(ids(&nl), ids(&before), "netlink vs sysfs devices");
    assert_eq!(ids(&after), ids(&before));
    for ((b, n), a) in before.iter().zip(&nl).zip(&after) {
        for (((what, lo), (_, mid)), (_, hi)) in
            counters(b).into_iter().zip(counters(n)).zip(counters(a))
        {
            assert!(
                lo <= mid && mid <= hi,
                "{}: {what}: sysfs {lo} then netlink {mid} then sysfs {hi}",
                b.name
            );
        }
    }
    nl
}

fn find<'a>(devs: &'a [RawDevice], name: &str) -> &'a RawDevice {
    devs.iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} not in {devs:?}"))
}

/// Sandwiches in namespace `ns` until `stop`, then one more; returns the
/// first and last dumps and how many sandwiches ran. The first is taken
/// before `start` lets the traffic begin.
fn watch(
    ns: &str,
    ready: mpsc::Sender<()>,
    stop: &AtomicBool,
) -> (Vec<RawDevice>, Vec<RawDevice>, usize) {
    in_netns_with_sysfs(ns, |dir: &Path| {
        let root = Sysroot::new(dir);
        let first = sandwich(&root);
        let _ = ready.send(());
        let mut n = 1;
        while !stop.load(Ordering::Relaxed) {
            sandwich(&root);
            n += 1;
        }
        (first, sandwich(&root), n + 1)
    })
    .unwrap_or_else(|e| panic!("namespace {ns}: {e}"))
}

case!(
    netlink_and_sysfs_agree_under_traffic,
    [Need::Root, Need::Tool("ip", "-V")]
);
fn netlink_and_sysfs_agree_under_traffic() {
    if !common::is_root() {
        return common::skip("netdev_live", "needs root (network namespaces)");
    }
    if !common::netns::have_program("ip") {
        return common::skip("netdev_live", "needs `ip` (iproute2)");
    }
    let pair = match NetnsPair::create("nd") {
        Ok(p) => p,
        Err(e) => return common::skip("netdev_live", &e),
    };
    let stop = AtomicBool::new(false);
    let (ready_tx, ready) = mpsc::channel();
    let ((tx0, tx1, ntx), (rx0, rx1, nrx)) = std::thread::scope(|s| {
        let r = ready_tx.clone();
        let tx = s.spawn(|| watch(&pair.ns_tx, r, &stop));
        let r = ready_tx;
        let rx = s.spawn(|| watch(&pair.ns_rx, r, &stop));
        let sent = in_netns(&pair.ns_tx, move || -> std::io::Result<u64> {
            let sock = UdpSocket::bind((ADDR_TX, 0))?;
            // Both first readings precede the traffic. A watcher that
            // failed never reports: send nothing, its panic shows below.
            for _ in 0..2 {
                if ready.recv_timeout(Duration::from_secs(20)).is_err() {
                    return Ok(0);
                }
            }
            let payload = [0x5au8; 1000];
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut sent = 0;
            // Nothing listens on the discard port: the receiver counts
            // the datagrams all the same.
            while sent < DATAGRAMS && Instant::now() < deadline {
                if sock.send_to(&payload, (ADDR_RX, 9)).is_ok() {
                    sent += 1;
                }
            }
            Ok(sent)
        });
        // Let the watchers see the counters settle once more.
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        let (tx, rx) = (tx.join().unwrap(), rx.join().unwrap());
        let sent = sent.expect("setns").expect("UDP send");
        assert_eq!(sent, DATAGRAMS, "sender stopped early");
        (tx, rx)
    });
    common::report(&format!(
        "netdev_live: {ntx} sandwiches in {}, {nrx} in {}\n",
        pair.ns_tx, pair.ns_rx
    ));
    // The dump saw the traffic: every datagram went out of the tx veth and
    // into the rx veth (more may: IPv6 neighbour discovery, ICMP replies).
    let (a, b) = (find(&tx0, &pair.veth_tx), find(&tx1, &pair.veth_tx));
    assert!(b.tx_packets - a.tx_packets >= DATAGRAMS, "{a:?} -> {b:?}");
    assert!(
        b.tx_bytes - a.tx_bytes >= DATAGRAMS * 1000,
        "{a:?} -> {b:?}"
    );
    let (a, b) = (find(&rx0, &pair.veth_rx), find(&rx1, &pair.veth_rx));
    assert!(b.rx_packets - a.rx_packets >= DATAGRAMS, "{a:?} -> {b:?}");
    assert!(
        b.rx_bytes - a.rx_bytes >= DATAGRAMS * 1000,
        "{a:?} -> {b:?}"
    );
    // Each namespace holds exactly its loopback and its veth end.
    let names = |v: &[RawDevice]| v.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&tx1), vec!["lo".to_string(), pair.veth_tx.clone()]);
    assert_eq!(names(&rx1), vec!["lo".to_string(), pair.veth_rx.clone()]);
    // At least one sandwich ran while traffic was flowing.
    assert!(ntx >= 3 && nrx >= 3, "{ntx} {nrx}");
}

/// CPU time of the calling thread, kernel time included: on a loaded
/// machine the wall clock measures the neighbours, this measures the read.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Deletes the benchmark's namespace (and its 1,000 veths) on every exit.
struct NsGuard(String);

impl Drop for NsGuard {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.0])
            .status();
    }
}

case!(
    cost_1000_veths,
    [Need::Root, Need::Tool("ip", "-V")],
    ignore = "benchmark: bash bench/netdev.sh"
);
/// CPU per device read with 1,000 veth devices (500 pairs) in a private
/// namespace: sysfs (six files per device), the rtnetlink dump with nettop's
/// decoder, and the same dump fully decoded by `netlink-packet-route`, in
/// interleaved rounds. Prints a table for BENCHMARKS.md; asserts nothing
/// about time. `bash bench/netdev.sh` runs it.
fn cost_1000_veths() {
    use netlink_packet_core::Parseable;
    use netlink_packet_route::link::LinkMessage;
    use nettop::sys::rtnl::{self, Stats};

    assert!(common::is_root(), "needs root");
    let pairs: usize = std::env::var("NETDEV_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let rounds: usize = std::env::var("NETDEV_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let ns = format!("nettop-ndb-{}", std::process::id());
    let _ = std::process::Command::new("ip")
        .args(["netns", "del", &ns])
        .stderr(std::process::Stdio::null())
        .status();
    let st = std::process::Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .unwrap();
    assert!(st.success());
    let _guard = NsGuard(ns.clone());
    let batch: String = (0..pairs)
        .map(|i| format!("link add nd{i}a type veth peer name nd{i}b\n"))
        .collect();
    let path = std::env::temp_dir().join(format!("{ns}.batch"));
    std::fs::write(&path, batch).unwrap();
    let st = std::process::Command::new("ip")
        .args(["-n", &ns, "-batch", path.to_str().unwrap()])
        .status()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(st.success(), "creating {pairs} veth pairs");

    in_netns_with_sysfs(&ns, |dir: &Path| {
        let root = Sysroot::new(dir);
        let n = procfiles::read_devices(&root).unwrap().len();
        assert_eq!(n, 2 * pairs + 1, "lo + veths");
        assert_eq!(sandwich(&root).len(), n);
        let full = || {
            rtnl::dump_links(Stats::Include, |p| {
                LinkMessage::parse(p).map_err(|e| anyhow::anyhow!("{e}"))
            })
            .unwrap()
        };
        let mut t: [Vec<f64>; 3] = Default::default();
        let mut wall: [Vec<f64>; 3] = Default::default();
        for _ in 0..rounds {
            for (i, slot) in t.iter_mut().enumerate() {
                let (w0, c0) = (Instant::now(), thread_cpu_ns());
                match i {
                    0 => {
                        std::hint::black_box(procfiles::read_devices(&root).unwrap());
                    }
                    1 => {
                        std::hint::black_box(netdev::read_netlink().unwrap());
                    }
                    _ => {
                        std::hint::black_box(full());
                    }
                }
                slot.push((thread_cpu_ns() - c0) as f64 / n as f64);
                wall[i].push(w0.elapsed().as_secs_f64() * 1e9 / n as f64);
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!("{n} devices (lo + {pairs} veth pairs), {rounds} interleaved rounds, medians");
        println!(
            "| reader | CPU per device (user+sys) | wall per device | CPU per 1,000 devices |"
        );
        println!("|---|---:|---:|---:|");
        for (i, what) in [
            "sysfs, 6 files per device (`procfiles::read_devices`)",
            "rtnetlink dump, nettop's decoder (`netdev::read_netlink`)",
            "rtnetlink dump, full `netlink-packet-route` decode",
        ]
        .iter()
        .enumerate()
        {
            let c = med(&mut t[i]);
            let w = med(&mut wall[i]);
            println!(
                "| {what} | {:.2} µs | {:.2} µs | {:.2} ms |",
                c / 1e3,
                w / 1e3,
                c * 1000.0 / 1e6
            );
        }
    })
    .unwrap();
}
