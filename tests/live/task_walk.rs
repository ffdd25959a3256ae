//! The task sampler's two walks against each other. Where the kernel has
//! the open-coded walk (6.8+), passes take it; its records must be
//! the kernel's `iter/task` walk's, also when a pass outgrows the first ring
//! and the ring is replaced by a bigger one.

use crate::common;
use crate::common::tier::Need;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::parked::ParkedThreads;
use nettop::collector::bpf::{BpfCollector, BpfOptions};
use nettop::collector::taskiter::{self, DecodeOptions, TaskSet};

/// 1,500 full records are ~340 KiB: more than the first ring (256 KiB).
const PARKED: usize = 1500;

/// (major, minor) of the running kernel.
fn kernel() -> Option<(u32, u32)> {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let mut it = r.trim().split(['.', '-']).map(|p| p.parse::<u32>().ok());
    Some((it.next()??, it.next()??))
}

fn pass(bpf: &mut BpfCollector, thread_rows: bool) -> TaskSet {
    let mut buf = Vec::new();
    assert!(
        bpf.sample_tasks(&mut buf, thread_rows).expect("a pass"),
        "no task sampler"
    );
    let set = taskiter::decode(
        &buf,
        &DecodeOptions {
            threads: thread_rows,
            pids: &[],
            clk_tck: 100,
            nr_cpus: 256,
            page_size: 4096,
        },
    );
    assert_eq!(set.bad_records, 0, "undecodable records");
    set
}

case!(open_coded_walk_gives_the_kernel_walks_records, [Need::Bpf]);
fn open_coded_walk_gives_the_kernel_walks_records() {
    let parked = match ParkedThreads::spawn(PARKED) {
        Ok(p) => p,
        Err(e) => return common::skip("task walks", &e),
    };
    let mut bpf = match BpfCollector::open(&BpfOptions {
        sampler_only: true,
        max_tasks: Some(1),
        ..Default::default()
    }) {
        Ok(b) => b,
        Err(e) => return common::skip("task walks", &format!("BPF unavailable: {e:#}")),
    };
    let ours: HashSet<u32> = std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    assert!(ours.len() > PARKED, "{} threads", ours.len());

    let open = pass(&mut bpf, true);
    let ring = bpf.task_walk_ring();
    assert_eq!(bpf.last_pass_open(), ring.is_some());
    let has_walk = kernel().is_some_and(|v| v >= (6, 8));
    if !has_walk {
        assert_eq!(ring, None, "an open-coded walk before Linux 6.8");
        return common::skip("task walks", "Linux before 6.8 has only the kernel's walk");
    }
    let ring = ring.expect("Linux 6.8+: passes take the open-coded walk");
    assert!(
        ring > 256 << 10,
        "the first pass outgrew the first ring, which was not replaced ({ring} bytes)"
    );
    let open_procs = pass(&mut bpf, false);
    assert_eq!(bpf.task_walk_ring(), Some(ring), "the ring changed again");
    bpf.use_kernel_walk();
    assert_eq!(bpf.task_walk_ring(), None);
    let kernel = pass(&mut bpf, true);
    let kernel_procs = pass(&mut bpf, false);

    // Every thread of this process, with the same identity, in both.
    let by_tid = |set: &TaskSet| -> HashMap<u32, String> {
        set.threads
            .iter()
            .map(|t| {
                let id = (t.tgid, &t.comm, t.start_ticks, t.uid, t.ppid, t.nice);
                (t.tid, format!("{id:?} {}", t.affinity))
            })
            .collect()
    };
    let (o, k) = (by_tid(&open), by_tid(&kernel));
    for tid in &ours {
        assert!(
            o.contains_key(tid),
            "thread {tid} missing from the open walk"
        );
        assert_eq!(o.get(tid), k.get(tid), "thread {tid}");
    }
    // The idle task heads the kernel's task list; /proc has no PID 0.
    assert!(!o.contains_key(&0), "the open walk yielded the idle task");
    // The rest of the host: the same threads, but for churn between passes.
    let (o_ids, k_ids): (HashSet<u32>, HashSet<u32>) =
        (o.keys().copied().collect(), k.keys().copied().collect());
    let only_kernel = k_ids.difference(&o_ids).count();
    assert!(
        only_kernel <= 10,
        "{only_kernel} threads only the kernel's walk yields"
    );
    // A process mode pass: this process's totals from heads alone.
    let me = std::process::id();
    let proc_of = |set: &TaskSet| {
        set.procs
            .iter()
            .find(|p| p.tgid == me)
            .map(|p| (p.nr_threads, p.comm.clone(), p.start_ticks))
    };
    assert_eq!(proc_of(&open_procs), proc_of(&kernel_procs));
    assert!(proc_of(&open_procs).is_some_and(|(n, ..)| n as usize >= PARKED));
    drop(parked);
}

case!(
    passes_over_the_span_budget_take_the_kernel_walk,
    [Need::Bpf]
);
/// A pass predicted to hold the CPU longer than `--walk-span` takes the
/// kernel's walk, in preemptible pieces; one within it the open walk.
fn passes_over_the_span_budget_take_the_kernel_walk() {
    if kernel().is_none_or(|v| v < (6, 8)) {
        return common::skip(
            "task walk budget",
            "Linux before 6.8 has only the kernel's walk",
        );
    }
    for (span, open) in [
        (Duration::from_nanos(1), false),
        (Duration::from_secs(1), true),
    ] {
        let mut bpf = match BpfCollector::open(&BpfOptions {
            sampler_only: true,
            max_tasks: Some(1),
            host_tasks: 1000,
            walk_span: Some(span),
            ..Default::default()
        }) {
            Ok(b) => b,
            Err(e) => return common::skip("task walk budget", &format!("BPF unavailable: {e:#}")),
        };
        for n in 0..3 {
            let set = pass(&mut bpf, false);
            assert!(
                set.records > 10,
                "{span:?}: pass {n} has {} records",
                set.records
            );
            assert_eq!(bpf.last_pass_open(), open, "{span:?}: pass {n}");
        }
    }
}
