//! The collector attached to the live kernel: real tracepoints, real traffic.

use crate::common;
use crate::common::tier::Need;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use nettop::collector::bpf::{AttachMode, BpfCollector, BpfOptions};
use nettop::sample::{CTX_INLINE, CTX_KSOFTIRQD, CTX_STOLEN, NET_RX};
use nettop::sys::cpuset::CpuSet;

/// Live tests generate their own load; running them one at a time keeps one
/// test's traffic out of another's numbers.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn live_or_skip(mode: Option<AttachMode>) -> Option<BpfCollector> {
    match BpfCollector::open(&BpfOptions {
        mode,
        stats: true,
        ..Default::default()
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            common::skip("live BPF tests", &format!("need root and BTF: {e:#}"));
            None
        }
    }
}

fn all_cpus() -> CpuSet {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    CpuSet::from_cpus(0..n)
}

/// Loopback UDP sent by this thread is received by NET_RX raised in this
/// thread's own syscall and run at its local_bh_enable: inline work, never
/// stolen. Checks both program flavours.
fn loopback_is_inline(mode: AttachMode) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(c) = live_or_skip(Some(mode)) else {
        return;
    };
    assert_eq!(c.mode(), mode);
    let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let dst = rx.local_addr().expect("addr");
    rx.set_nonblocking(true).expect("nonblocking");
    let before = c.read(&all_cpus()).expect("read");
    let payload = [0u8; 512];
    let deadline = Instant::now() + Duration::from_millis(300);
    let mut sent = 0u64;
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline {
        for _ in 0..64 {
            if tx.send_to(&payload, dst).is_ok() {
                sent += 1;
            }
        }
        while rx.recv(&mut buf).is_ok() {}
    }
    let after = c.read(&all_cpus()).expect("read");
    assert!(sent > 1000, "sent only {sent} datagrams");

    let me = after
        .tasks
        .get(&common::gettid())
        .expect("this thread ran NET_RX inline");
    let was = before
        .tasks
        .get(&common::gettid())
        .map_or(0, |t| t.acct.softirq_ns[CTX_INLINE][NET_RX]);
    let inline_ns = me.acct.softirq_ns[CTX_INLINE][NET_RX] - was;
    let ksoftirqd_ns: u64 = after
        .cpus
        .iter()
        .map(|c| c.acct.softirq_ns[CTX_KSOFTIRQD][NET_RX])
        .sum::<u64>()
        - before
            .cpus
            .iter()
            .map(|c| c.acct.softirq_ns[CTX_KSOFTIRQD][NET_RX])
            .sum::<u64>();
    // The kernel may hand the backlog to a running ksoftirqd instead of our
    // local_bh_enable; either way it is never stolen from us.
    assert!(
        inline_ns > 0 || ksoftirqd_ns > 0,
        "loopback NET_RX was neither inline in the sender nor in ksoftirqd"
    );
    let stolen_was = before
        .tasks
        .get(&common::gettid())
        .map_or(0, |t| t.acct.softirq_ns[CTX_STOLEN][NET_RX]);
    assert_eq!(
        me.acct.softirq_ns[CTX_STOLEN][NET_RX] - stolen_was,
        0,
        "our own loopback traffic must not look stolen"
    );
    let actions: u64 = after.cpus.iter().map(|c| c.net.net_rx_actions).sum::<u64>()
        - before
            .cpus
            .iter()
            .map(|c| c.net.net_rx_actions)
            .sum::<u64>();
    assert!(actions > 0, "no NET_RX actions seen");
    let polls: u64 = after
        .napi
        .iter()
        .filter(|n| n.dev == "backlog")
        .map(|n| n.polls)
        .sum();
    assert!(
        polls > 0,
        "loopback goes through the backlog napi: {:?}",
        after.napi
    );
    // Per-napi polls wait in a per-CPU cache until the sample-time flush:
    // after it, the napi table must hold what the per-CPU counters saw
    // (give or take polls that ran between the flush and the reads).
    let napi_total =
        |s: &nettop::collector::bpf::Readout| -> u64 { s.napi.iter().map(|n| n.polls).sum() };
    let cpu_total = |s: &nettop::collector::bpf::Readout| -> u64 {
        s.cpus.iter().map(|c| c.net.napi_polls).sum()
    };
    let by_napi = napi_total(&after) - napi_total(&before);
    let by_cpu = cpu_total(&after) - cpu_total(&before);
    assert!(
        by_napi.abs_diff(by_cpu) <= 5.max(by_cpu / 100),
        "napi table has {by_napi} polls, the CPUs counted {by_cpu} (flush deferred {})",
        after.health.flush_deferred
    );
    let softirq_runs: u64 = after
        .health
        .programs
        .iter()
        .filter(|p| p.name.ends_with("si_out"))
        .map(|p| p.run_cnt)
        .sum();
    assert!(
        softirq_runs > 0,
        "bpf_stats reports run counts: {:?}",
        after.health.programs
    );
    eprintln!(
        "{mode:?}: {sent} datagrams, inline NET_RX {inline_ns} ns in this thread, {actions} NET_RX actions"
    );
}

case!(loopback_is_inline_tp_btf, [Need::Bpf]);
fn loopback_is_inline_tp_btf() {
    loopback_is_inline(AttachMode::TpBtf);
}

case!(loopback_is_inline_raw_tp, [Need::Bpf]);
fn loopback_is_inline_raw_tp() {
    loopback_is_inline(AttachMode::RawTp);
}

case!(timer_ticks_are_seen_as_system_vectors, [Need::Bpf]);
fn timer_ticks_are_seen_as_system_vectors() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(c) = live_or_skip(None) else { return };
    let before = c.read(&all_cpus()).expect("read");
    // Spin so the tick lands on this thread.
    let end = Instant::now() + Duration::from_millis(200);
    let mut x = 0u64;
    while Instant::now() < end {
        x = x.wrapping_add(1);
    }
    std::hint::black_box(x);
    let after = c.read(&all_cpus()).expect("read");
    let ticks: u64 = after.cpus.iter().map(|c| c.acct.timer_count).sum::<u64>()
        - before.cpus.iter().map(|c| c.acct.timer_count).sum::<u64>();
    assert!(ticks > 0, "no local timer interrupts seen in 200 ms");
    assert_eq!(after.health.map_full, 0);
}

case!(raw_tp_loads_say_traffic_needs_tp_btf, [Need::Bpf]);
/// The socket programs exist as tp_btf only: a raw_tp load asked for
/// traffic says why its frames have none, rather than showing zeros.
fn raw_tp_loads_say_traffic_needs_tp_btf() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for mode in [AttachMode::RawTp, AttachMode::TpBtf] {
        let c = match BpfCollector::open(&BpfOptions {
            mode: Some(mode),
            traffic: true,
            ..Default::default()
        }) {
            Ok(c) => c,
            Err(e) => return common::skip("live BPF tests", &format!("need root and BTF: {e:#}")),
        };
        let t = c.read(&all_cpus()).expect("read").traffic;
        match mode {
            AttachMode::RawTp => {
                assert!(!t.available, "raw_tp counted traffic");
                assert!(t.why.contains("tp_btf"), "why: {}", t.why);
            }
            AttachMode::TpBtf => assert!(t.available, "tp_btf: {}", t.why),
        }
    }
}
