//! The task sampler's two walks against each other. Where the kernel has
//! the open-coded walk (6.4+), passes take it; its records must be the
//! kernel's `iter/task` walk's, also when a run outgrows the first ring and
//! the ring is replaced by a bigger one, and when a pass is cut into many
//! runs while threads come and go.

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
    // One run per pass, so the first outgrows the first ring.
    let mut bpf = match BpfCollector::open(&BpfOptions {
        sampler_only: true,
        max_tasks: Some(1),
        walk_span: Some(Duration::from_secs(1)),
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
    assert_eq!(bpf.last_pass_runs() > 0, ring.is_some());
    let has_walk = kernel().is_some_and(|v| v >= (6, 4));
    if !has_walk {
        assert_eq!(ring, None, "an open-coded walk before Linux 6.4");
        return common::skip("task walks", "Linux before 6.4 has only the kernel's walk");
    }
    let ring = ring.expect("Linux 6.4+: passes take the open-coded walk");
    assert!(
        ring > 256 << 10,
        "the first pass outgrew the first ring, which was not replaced ({ring} bytes)"
    );
    let open_procs = pass(&mut bpf, false);
    assert_eq!(bpf.last_pass_runs(), 1, "a pass within the budget in runs");
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
    assert!(o.contains_key(&1), "the open walk missed init");
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

case!(a_pass_in_many_runs_yields_every_thread_once, [Need::Bpf]);
/// A budget too small for more than a few dozen threads per run cuts each
/// pass into many runs, each resuming after the thread the last stopped
/// after, while a churner makes and ends threads. A resume thread that has
/// exited sends its pass to the kernel's walk; every pass, either way,
/// yields every long-lived thread exactly once.
fn a_pass_in_many_runs_yields_every_thread_once() {
    if kernel().is_none_or(|v| v < (6, 4)) {
        return common::skip(
            "task walk runs",
            "Linux before 6.4 has only the kernel's walk",
        );
    }
    let parked = match ParkedThreads::spawn(PARKED) {
        Ok(p) => p,
        Err(e) => return common::skip("task walk runs", &e),
    };
    let mut bpf = match BpfCollector::open(&BpfOptions {
        sampler_only: true,
        max_tasks: Some(1),
        host_tasks: 1000,
        walk_span: Some(Duration::from_nanos(1)),
        ..Default::default()
    }) {
        Ok(b) => b,
        Err(e) => return common::skip("task walk runs", &format!("BPF unavailable: {e:#}")),
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churner = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut made = 0u64;
            // Threads that end as soon as they start, made as fast as one
            // thread can: some run stops after one of them, now and then
            // one that is gone before the next run.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let short: Vec<_> = (0..64)
                    .filter_map(|_| {
                        std::thread::Builder::new()
                            .stack_size(64 << 10)
                            .spawn(|| ())
                            .ok()
                    })
                    .collect();
                made += short.len() as u64;
                for t in short {
                    let _ = t.join();
                }
            }
            made
        })
    };
    let ours: HashSet<u32> = std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let (mut cut, mut retaken) = (0, 0);
    for n in 0..200 {
        let set = pass(&mut bpf, true);
        let runs = bpf.last_pass_runs();
        if runs == 0 {
            retaken += 1;
        } else {
            cut += 1;
            assert!(runs > 10, "pass {n}: {runs} runs at a 1 ns budget");
        }
        let mut seen: HashMap<u32, usize> = HashMap::new();
        for t in &set.threads {
            *seen.entry(t.tid).or_default() += 1;
        }
        let twice: Vec<_> = seen.iter().filter(|&(_, &c)| c > 1).collect();
        assert!(
            twice.is_empty(),
            "pass {n} ({runs} runs): threads yielded twice: {twice:?}"
        );
        for tid in parked.tids() {
            assert_eq!(
                seen.get(tid),
                Some(&1),
                "pass {n} ({runs} runs): parked thread {tid}"
            );
        }
        // The kernel's walk on some kernels hides init's threads (the
        // collector reads them through /proc); the open walk does not.
        assert!(
            runs == 0 || seen.contains_key(&1),
            "pass {n} ({runs} runs): init missing"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let made = churner.join().expect("the churner");
    eprintln!(
        "task walk runs: {cut} passes in runs, {retaken} retaken by the kernel's walk, \
         {made} threads churned, {} threads of ours",
        ours.len()
    );
    assert!(cut > 0, "no pass finished in runs");
    drop(parked);
}
