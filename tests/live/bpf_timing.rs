//! The BPF program's timing rules, checked in the kernel: the raw_tp
//! programs are loaded with the fake clock and driven through
//! BPF_PROG_TEST_RUN on this thread's CPU, so every timestamp and every
//! `current` is known and the expected nanoseconds are exact.

use crate::common;
use crate::common::tier::Need;

use nettop::collector::bpf::{BpfCollector, BpfOptions, Readout};
use nettop::sample::{CTX_INLINE, CTX_KSOFTIRQD, CTX_STOLEN, NET_RX};
use nettop::sys::cpuset::CpuSet;

const TIMER: u64 = 1;

fn bpf_or_skip() -> Option<BpfCollector> {
    match BpfCollector::open(&BpfOptions {
        test_clock: true,
        ..Default::default()
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            common::skip("BPF timing tests", &format!("need root and BTF: {e:#}"));
            None
        }
    }
}

struct Driver {
    c: BpfCollector,
    cpu: u32,
}

impl Driver {
    fn at(&self, ns: u64, tp: &str, args: &[u64]) {
        self.c.set_fake_now(ns);
        let mut a = args.to_vec();
        a.resize(3, 0);
        self.c
            .run_tracepoint(tp, self.cpu, &a)
            .unwrap_or_else(|e| panic!("{tp} at {ns}: {e:#}"));
    }
    fn read(&self) -> Readout {
        self.c
            .read(&CpuSet::from_cpus([self.cpu]))
            .expect("reading counters")
    }
}

fn driver() -> Option<Driver> {
    common::pin_self(0);
    bpf_or_skip().map(|c| Driver { c, cpu: 0 })
}

case!(nested_hardirq_is_subtracted_from_softirq_once, [Need::Bpf]);
fn nested_hardirq_is_subtracted_from_softirq_once() {
    let Some(d) = driver() else { return };
    // A device IRQ raises NET_RX (500 ns), then the softirq runs in the
    // interrupted task's context; a second IRQ lands inside it (300 ns).
    d.at(1_000, "irq_handler_entry", &[42]);
    d.at(1_200, "softirq_raise", &[NET_RX as u64]);
    d.at(1_500, "irq_handler_exit", &[42]);
    d.at(2_000, "softirq_entry", &[NET_RX as u64]);
    d.at(2_100, "irq_handler_entry", &[42]);
    d.at(2_400, "irq_handler_exit", &[42]);
    d.at(3_000, "softirq_exit", &[NET_RX as u64]);

    let r = d.read();
    let me = r
        .tasks
        .get(&common::gettid())
        .expect("this thread was charged");
    assert_eq!(me.acct.hardirq_ns, 800);
    assert_eq!(me.acct.hardirq_count, 2);
    assert_eq!(
        me.acct.softirq_ns[CTX_STOLEN][NET_RX], 700,
        "1000 ns span minus 300 ns nested"
    );
    assert_eq!(me.acct.softirq_ns[CTX_INLINE][NET_RX], 0);
    assert_eq!(me.acct.softirq_count[NET_RX], 1);
    assert_eq!(
        me.acct.in_softirq_count,
        [1, 0, 0, 0, 0, 0],
        "the second IRQ landed in the stolen run"
    );
    let cpu = &r.cpus[0];
    assert_eq!(cpu.acct.in_softirq_count, [1, 0, 0, 0, 0, 0]);
    assert_eq!(cpu.acct.hardirq_ns, 800);
    assert_eq!(cpu.acct.softirq_ns[CTX_STOLEN][NET_RX], 700);
    assert_eq!(cpu.net.net_rx_actions, 1);
    assert_eq!(cpu.net.net_rx_ns, 700);
    assert_eq!(cpu.net.net_rx_max_ns, 700);
}

case!(softirq_raised_by_the_task_itself_is_inline, [Need::Bpf]);
fn softirq_raised_by_the_task_itself_is_inline() {
    let Some(d) = driver() else { return };
    d.at(10_000, "softirq_raise", &[NET_RX as u64]);
    d.at(10_100, "softirq_entry", &[NET_RX as u64]);
    // An IRQ inside the task's own run: its entry/exit left in the run is
    // the task's time, so HIDDEN~ must still charge it (not in_softirq).
    d.at(10_200, "irq_handler_entry", &[42]);
    d.at(10_300, "irq_handler_exit", &[42]);
    d.at(10_700, "softirq_exit", &[NET_RX as u64]);
    let r = d.read();
    let me = r.tasks.get(&common::gettid()).expect("charged");
    assert_eq!(me.acct.in_softirq_count, [0; 6]);
    assert_eq!(me.acct.softirq_ns[CTX_INLINE][NET_RX], 500);
    assert_eq!(me.acct.softirq_ns[CTX_STOLEN][NET_RX], 0);
    assert_eq!(
        me.acct.softirq_stolen_count, 0,
        "its own softirq is not stolen"
    );
    assert_eq!(me.acct.softirq_ns[CTX_KSOFTIRQD][NET_RX], 0);
}

case!(
    net_rx_reraise_counts_a_restart_and_keeps_provenance,
    [Need::Bpf]
);
fn net_rx_reraise_counts_a_restart_and_keeps_provenance() {
    let Some(d) = driver() else { return };
    // Timer tick raises TIMER (a system vector), then NET_RX raised by an
    // IPI runs out of budget and re-raises itself.
    d.at(100, "local_timer_entry", &[236]);
    d.at(150, "softirq_raise", &[TIMER]);
    d.at(400, "local_timer_exit", &[236]);
    d.at(500, "call_function_single_entry", &[251]);
    d.at(550, "softirq_raise", &[NET_RX as u64]);
    d.at(600, "call_function_single_exit", &[251]);
    d.at(1_000, "softirq_entry", &[TIMER]);
    d.at(1_100, "softirq_exit", &[TIMER]);
    d.at(1_100, "softirq_entry", &[NET_RX as u64]);
    d.at(1_900, "softirq_raise", &[NET_RX as u64]);
    d.at(2_000, "softirq_exit", &[NET_RX as u64]);
    d.at(2_000, "softirq_entry", &[NET_RX as u64]);
    d.at(2_500, "softirq_exit", &[NET_RX as u64]);

    let r = d.read();
    let me = r.tasks.get(&common::gettid()).expect("charged");
    assert_eq!(me.acct.sysvec_ns, 300 + 100);
    assert_eq!(me.acct.sysvec_count, 2);
    assert_eq!(me.acct.hardirq_ns, 0);
    assert_eq!(me.acct.softirq_ns[CTX_STOLEN][TIMER as usize], 100);
    assert_eq!(me.acct.softirq_ns[CTX_STOLEN][NET_RX], 900 + 500);
    let cpu = &r.cpus[0];
    assert_eq!(cpu.net.net_rx_restarts, 1);
    assert_eq!(cpu.net.net_rx_actions, 2);
    assert_eq!(cpu.net.net_rx_max_ns, 900);
    assert_eq!(cpu.acct.timer_count, 1, "one local timer");
    assert_eq!(cpu.acct.ipi_count, 1, "one call_function_single (RPS IPI)");
}

case!(exits_without_entries_are_counted_not_charged, [Need::Bpf]);
fn exits_without_entries_are_counted_not_charged() {
    let Some(d) = driver() else { return };
    d.at(100, "softirq_exit", &[NET_RX as u64]);
    d.at(200, "irq_handler_exit", &[9]);
    let r = d.read();
    assert_eq!(r.cpus[0].health.unmatched_exits, 2);
    assert_eq!(r.health.unmatched_exits, 2);
    assert!(
        r.tasks
            .get(&common::gettid())
            .is_none_or(|t| t.acct.softirq_count == [0; 10])
    );
}

case!(
    batches_follow_the_current_task_and_keep_start_times,
    [Need::Bpf]
);
fn batches_follow_the_current_task_and_keep_start_times() {
    let Some(mut d) = driver() else { return };
    // Another thread on the same CPU gets interrupted first; when this
    // thread is hit, the other's batch is flushed to the hash.
    struct Shared(*mut Driver);
    // SAFETY: the pointer is only used by the scoped thread, which is joined
    // before `d` is touched again, so there is never concurrent access.
    unsafe impl Send for Shared {}
    let shared = Shared(&mut d);
    let other = std::thread::scope(|s| {
        s.spawn(move || {
            let shared = shared;
            common::pin_self(0);
            // SAFETY: see `Shared`: exclusive access until join.
            let d = unsafe { &mut *shared.0 };
            let tid = common::gettid();
            d.at(100, "irq_handler_entry", &[5]);
            d.at(350, "irq_handler_exit", &[5]);
            tid
        })
        .join()
        .expect("thread")
    });
    d.at(1_000, "irq_handler_entry", &[5]);
    d.at(1_050, "irq_handler_exit", &[5]);
    let r = d.read();
    assert_eq!(r.tasks.get(&other).map(|t| t.acct.hardirq_ns), Some(250));
    let me = r.tasks.get(&common::gettid()).expect("charged");
    assert_eq!(me.acct.hardirq_ns, 50);
    assert_eq!(me.tgid, std::process::id());

    // start_boottime, in clock ticks, is the stat field the model keys on.
    let stat = std::fs::read_to_string(format!("/proc/self/task/{}/stat", common::gettid()))
        .expect("stat");
    let after = stat.rsplit_once(')').expect("comm").1;
    let start_ticks: u64 = after
        .split_whitespace()
        .nth(19)
        .expect("field 22")
        .parse()
        .expect("num");
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    assert_eq!(me.start_boottime_ns / (1_000_000_000 / hz), start_ticks);
}

case!(interruptions_are_classed_and_probed, [Need::Bpf]);
/// Interruptions are counted by class (device, timer, IPI, other, TLB
/// shootdown, reschedule) for the task and the CPU, and the calibration probe of the CPU being calibrated
/// sees each with its traced time; a probe set on another CPU sees nothing.
fn interruptions_are_classed_and_probed() {
    let Some(d) = driver() else { return };
    let elsewhere = d.c.probe(1);
    d.at(100, "irq_handler_entry", &[42]);
    d.at(300, "irq_handler_exit", &[42]);
    assert_eq!(
        elsewhere.read(),
        Default::default(),
        "a probe on CPU 1 saw CPU 0"
    );
    drop(elsewhere);

    let probe = d.c.probe(0);
    let at = |ns, tp: &str, args: &[u64]| d.at(ns, tp, args);
    // (tracepoint, its argument, traced ns): one device IRQ, one tick,
    // three IPIs of different vectors, one other vector. System vectors
    // share one program that takes the kind from the vector number.
    let seq: [(&str, u64, u64); 6] = [
        ("irq_handler", 42, 200),
        ("local_timer", 0xec, 1_000),
        ("call_function_single", 0xfb, 300),
        ("reschedule", 0xfd, 100),
        ("irq_work", 0xf6, 50),
        ("x86_platform_ipi", 0xf7, 70),
    ];
    let mut t = 1_000;
    for (tp, arg, len) in seq {
        at(t, &format!("{tp}_entry"), &[arg]);
        at(t + len, &format!("{tp}_exit"), &[arg]);
        t += 10_000;
    }
    // An IPI (20 ns) raises NET_RX, which then runs for 400 ns.
    at(t, "call_function_single_entry", &[0xfb]);
    at(t + 10, "softirq_raise", &[NET_RX as u64]);
    at(t + 20, "call_function_single_exit", &[0xfb]);
    at(t + 100, "softirq_entry", &[NET_RX as u64]);
    // A reschedule IPI (30 ns) inside the run: the run's span holds all of
    // it, so the probe counts no interruption the gap has untraced cost for.
    at(t + 200, "reschedule_entry", &[0xfd]);
    at(t + 230, "reschedule_exit", &[0xfd]);
    at(t + 500, "softirq_exit", &[NET_RX as u64]);

    // A call-function IPI whose handler flushed this CPU's TLB for
    // another (TLB_REMOTE_SHOOTDOWN = 1) is a TLB shootdown; flushes at a
    // context switch (0) or in a reschedule IPI's handler change nothing.
    let t = t + 10_000;
    at(t, "tlb_flush", &[0, 1]);
    at(t + 100, "call_function_entry", &[0xfc]);
    at(t + 150, "tlb_flush", &[1, 1]);
    at(t + 900, "call_function_exit", &[0xfc]);
    at(t + 1_000, "reschedule_entry", &[0xfd]);
    at(t + 1_010, "tlb_flush", &[1, 1]);
    at(t + 1_040, "reschedule_exit", &[0xfd]);

    let p = probe.read();
    assert_eq!(
        p.intr,
        [1, 1, 3, 1, 1, 2],
        "device, timer, IPI, other, TLB, reschedule"
    );
    assert_eq!(p.softirq_runs, 1);
    assert_eq!(
        p.traced_ns,
        200 + 1_000 + 300 + 100 + 50 + 70 + 20 + 400 + 800 + 40
    );
    drop(probe);

    let r = d.read();
    let me = r.tasks.get(&common::gettid()).expect("charged");
    // The device IRQ before the probe was armed counts for the task too.
    assert_eq!(me.acct.hardirq_count, 2);
    assert_eq!(me.acct.sysvec_count, 9);
    // ipi_count holds every IPI; TLB shootdowns and reschedules are of it.
    assert_eq!((me.acct.timer_count, me.acct.ipi_count), (1, 7));
    assert_eq!((me.acct.tlb_count, me.acct.resched_count), (1, 3));
    // Plain IPIs' handler time: call_function_single, irq_work and the
    // RPS IPI, not the TLB shootdown's or the reschedules'.
    assert_eq!(me.acct.ipi_ns, 300 + 50 + 20);
    // The shootdown's own handler time, not the reschedule's flush.
    assert_eq!(me.acct.tlb_ns, 800);
    assert_eq!(me.acct.in_softirq_count, [0, 0, 0, 0, 0, 1]);
    assert_eq!(me.acct.softirq_stolen_count, 1, "the IPI's NET_RX");
    let cpu = &r.cpus[0];
    assert_eq!((cpu.acct.timer_count, cpu.acct.ipi_count), (1, 7));
    assert_eq!((cpu.acct.tlb_count, cpu.acct.resched_count), (1, 3));
    assert_eq!(cpu.acct.ipi_ns, 300 + 50 + 20);
    assert_eq!(cpu.acct.tlb_ns, 800);
    assert_eq!(cpu.acct.in_softirq_count, [0, 0, 0, 0, 0, 1]);
    assert_eq!(cpu.acct.softirq_stolen_count, 1);
}
