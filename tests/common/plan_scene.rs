//! The scene of the plan's live tests (`--plan --apply` in plan_live.rs,
//! `P` in the TUI in plan_tui.rs): two network namespaces joined by a
//! veth pair, the receiving veth's RPS onto CPU 1 where a spinner is
//! pinned at SCHED_FIFO (`chrt -f`: whatever else runs on this shared VM
//! cannot take its CPU, so its TRUE% moves with interrupts only; the
//! kernel's RT throttling still leaves others 5 %), and UDP traffic
//! between them on CPU 0.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::netns::{ADDR_RX, NetnsPair, have_program};
use super::run::{nettop, output_within};

pub fn skip(reason: &str) {
    super::skip("plan live test", reason);
}

pub fn can_run() -> bool {
    if !super::is_root() {
        skip("not root");
        return false;
    }
    for p in ["ip", "iperf3", "taskset", "chrt"] {
        if !have_program(p) {
            skip(&format!("`{p}` not installed"));
            return false;
        }
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        skip("needs at least 2 CPUs");
        return false;
    }
    true
}

/// The calibration cache filled on a quiet machine (once per target
/// directory), so the runs below do not calibrate under load.
pub fn warm_calibration() {
    let out = output_within(
        nettop()
            .env("NETTOP_CACHE_DIR", super::cache_dir())
            .args(["-b", "-n", "1", "-d", "0.2"]),
        Duration::from_secs(300),
        "nettop -b (calibration)",
    );
    assert!(out.status.success(), "{}", super::run::stderr(&out));
}

/// The receiving veth, RPS onto CPU 1 (`rps` mask), a SCHED_FIFO spinner
/// on CPU 1, UDP traffic on CPU 0. Returns the pair and the spinner's pid.
pub fn scene(tag: &str, rps: &str) -> Option<(NetnsPair, u32)> {
    let mut pair = pair(tag)?;
    let pid = load(&mut pair, rps);
    Some((pair, pid))
}

/// The namespaces and the veth pair alone, idle.
pub fn pair(tag: &str) -> Option<NetnsPair> {
    match NetnsPair::create(tag) {
        Ok(p) => Some(p),
        Err(e) => {
            skip(&e);
            None
        }
    }
}

/// The load on an idle `pair`: its RPS mask, the spinner on CPU 1 (its
/// pid returned) and the traffic.
pub fn load(pair: &mut NetnsPair, rps: &str) -> u32 {
    load_at(pair, rps, "0")
}

/// [`load`] with the UDP sender limited to `rate` (iperf3's `-b`; "0" is
/// as fast as it can), leaving CPU 0 some time for a terminal.
pub fn load_at(pair: &mut NetnsPair, rps: &str, rate: &str) -> u32 {
    pair.set_rps(rps).unwrap();
    let ns = pair.ns_rx.clone();
    let pid = pair
        .spawn_in(
            &ns,
            Some(1),
            &["nice", "-n", "-20", "sh", "-c", "while :; do :; done"],
        )
        .unwrap();
    // `ip netns exec`, taskset and chrt each exec the next: wait for sh.
    for _ in 0..200 {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "sh" {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    traffic(pair, rate);
    std::thread::sleep(Duration::from_secs(1));
    pid
}

/// Packets the receiving veth has taken so far.
pub fn rx_packets(pair: &NetnsPair) -> u64 {
    let path = format!("/sys/class/net/{}/statistics/rx_packets", pair.veth_rx);
    let out = Command::new("ip")
        .args(["netns", "exec", &pair.ns_rx, "cat", &path])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// UDP from the tx namespace to the rx one, both ends on CPU 0 at nice
/// -10 (as `NetnsPair::start_iperf3`, but a nice-0 CPU hog another test
/// left on this shared VM cannot slow the sender, and with it the RPS work
/// on CPU 1, to a trickle). Started again until packets really flow: a
/// client that connected and then failed leaves the one-off server gone.
pub fn traffic(pair: &mut NetnsPair, rate: &str) {
    let (rx, tx) = (pair.ns_rx.clone(), pair.ns_tx.clone());
    let nice = ["nice", "-n", "-10", "iperf3"];
    let server: Vec<&str> = nice
        .iter()
        .copied()
        .chain(["-s", "-1", "-B", ADDR_RX])
        .collect();
    let client: Vec<&str> = nice
        .iter()
        .copied()
        .chain([
            "-c", ADDR_RX, "-t", "120", "-i", "0", "-u", "-b", rate, "-l", "1400",
        ])
        .collect();
    for _ in 0..5 {
        let s = pair.spawn_in(&rx, Some(0), &server).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let c = pair.spawn_in(&tx, Some(0), &client).unwrap();
        std::thread::sleep(Duration::from_secs(1));
        let before = rx_packets(pair);
        std::thread::sleep(Duration::from_millis(500));
        if rx_packets(pair).saturating_sub(before) > 1_000 {
            return;
        }
        for pid in [c, s] {
            super::run::signal(pid as i32, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("no UDP traffic reached the receiving veth after 5 starts of iperf3");
}

pub fn rps_path(pair: &NetnsPair) -> String {
    format!("/sys/class/net/{}/queues/rx-0/rps_cpus", pair.veth_rx)
}

/// `rps_cpus` exactly as the kernel prints it.
pub fn rps_bytes(pair: &NetnsPair) -> Vec<u8> {
    let out = Command::new("ip")
        .args(["netns", "exec", &pair.ns_rx, "cat", &rps_path(pair)])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

/// Reverts with `file` and checks `pair`'s RPS mask is `original` again,
/// byte for byte.
pub fn revert_restores(state: &Path, file: &Path, pair: &NetnsPair, original: &[u8]) {
    let out = revert(state, file);
    assert_eq!(out.status.code(), Some(0), "{}", super::run::stderr(&out));
    assert_eq!(
        rps_bytes(pair),
        original,
        "rps_cpus not restored byte for byte"
    );
}

/// `nettop --revert FILE --yes` with the revert files under `state`.
pub fn revert(state: &Path, file: &Path) -> std::process::Output {
    output_within(
        nettop()
            .args(["--revert"])
            .arg(file)
            .args(["--yes", "--state-dir"])
            .arg(state),
        Duration::from_secs(60),
        "nettop --revert",
    )
}
