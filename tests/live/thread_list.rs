//! The topology's thread scan from the task sampler's thread list must say
//! what the /proc walk says: same threads, names, affinities and kernel
//! flags. Threads of this process, one of them pinned to a single CPU,
//! are looked up in both scans of the live host.

use crate::common;
use crate::common::tier::Need;

use std::sync::mpsc;

use nettop::sys::sysroot::Sysroot;
use nettop::topology::{self, LoadOptions, ThreadInfo};

fn ours(threads: &[ThreadInfo], pid: u32) -> Vec<(u32, String, String, bool)> {
    let mut v: Vec<_> = threads
        .iter()
        .filter(|t| t.pid == pid)
        .map(|t| (t.tid, t.comm.clone(), t.affinity.to_list(), t.kthread))
        .collect();
    v.sort();
    v
}

case!(sampler_thread_list_matches_the_proc_walk, [Need::Bpf]);
fn sampler_thread_list_matches_the_proc_walk() {
    if !common::is_root() {
        common::skip("thread list", "needs root for BPF");
        return;
    }
    let root = Sysroot::default();
    let known = match nettop::collector::list_threads(&root) {
        Ok(k) => k,
        Err(e) => {
            common::skip("thread list", &format!("task sampler unavailable: {e:#}"));
            return;
        }
    };
    // A named, pinned thread that lives while both scans run.
    let (tid_tx, tid_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let h = std::thread::Builder::new()
        .name("nt-pinned".into())
        .spawn(move || {
            common::pin_self(cpus - 1);
            tid_tx.send(common::gettid()).unwrap();
            let _ = stop_rx.recv();
        })
        .unwrap();
    let pinned_tid = tid_rx.recv().unwrap();
    let known = nettop::collector::list_threads(&root).unwrap_or(known);
    let mut opts = LoadOptions::new(root, None, None);
    opts.sample = None;
    let walked = topology::load(&opts).unwrap();
    opts.known_threads = Some(known);
    let sampled = topology::load(&opts).unwrap();
    stop_tx.send(()).unwrap();
    h.join().unwrap();

    let pid = std::process::id();
    let (a, b) = (ours(&walked.threads, pid), ours(&sampled.threads, pid));
    // Test-harness threads may come and go between the scans; the pinned
    // one and the main thread are there in both.
    for tid in [pid, pinned_tid] {
        let w = a.iter().find(|t| t.0 == tid);
        let s = b.iter().find(|t| t.0 == tid);
        assert!(w.is_some(), "thread {tid} missing from the /proc walk");
        assert_eq!(w, s, "thread {tid}: /proc walk vs sampler");
    }
    let p = b.iter().find(|t| t.0 == pinned_tid).unwrap();
    assert_eq!(p.1, "nt-pinned");
    assert_eq!(p.2, (cpus - 1).to_string());
    // Kernel threads are told apart the same way.
    let kthreads = |t: &[ThreadInfo]| t.iter().filter(|t| t.kthread && t.pid == 2).count();
    assert!(kthreads(&walked.threads) > 0 && kthreads(&sampled.threads) > 0);
    // PID 1's main thread is in both, also where the kernel's task walk
    // does not yield it (the sampler's list reads it through /proc then).
    assert_eq!(ours(&walked.threads, 1).first().map(|t| t.0), Some(1));
    assert_eq!(
        ours(&sampled.threads, 1).first(),
        ours(&walked.threads, 1).first()
    );
}
