//! Cost of the /proc readers on a host with thousands of threads. Prints
//! numbers for BENCHMARKS.md; asserts nothing about time (the machine decides).
//! Run: `cargo test --release --test procfs_bench -- --ignored --nocapture`

use std::sync::{Arc, Barrier};
use std::time::Instant;

use nettop::collector::procfs;
use nettop::model::compute;
use nettop::sysroot::Sysroot;

#[test]
#[ignore = "benchmark: run explicitly with --ignored --nocapture"]
fn read_tasks_with_2000_extra_threads() {
    const N: usize = 2000;
    let gate = Arc::new(Barrier::new(N + 1));
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let g = Arc::clone(&gate);
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || g.wait())
                .unwrap()
        })
        .collect();
    let root = Sysroot::default();
    let host = nettop::collector::host::detect(&root);
    let mut prev = None;
    let mut times = Vec::new();
    let mut n_tasks = 0;
    for _ in 0..10 {
        let t0 = Instant::now();
        let tasks = procfs::read_tasks(&root, &[]).unwrap();
        let cpus = procfs::read_cpus(&root, &tasks).unwrap();
        let read = t0.elapsed();
        n_tasks = tasks.len();
        let cur = nettop::model::raw::RawSample {
            mono_ns: t0.elapsed().as_nanos() as u64,
            tasks,
            cpus,
            ..Default::default()
        };
        let t1 = Instant::now();
        if let Some(p) = &prev {
            std::hint::black_box(compute(&host, p, &cur));
        }
        times.push((read, t1.elapsed()));
        prev = Some(cur);
    }
    gate.wait();
    for h in handles {
        h.join().unwrap();
    }
    times.sort();
    let (read, _) = times[times.len() / 2];
    let mut c: Vec<_> = times.iter().skip(1).map(|t| t.1).collect();
    c.sort();
    println!("threads read: {n_tasks}");
    println!(
        "read_tasks+read_cpus median: {:.2} ms ({:.1} us/thread)",
        read.as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e6 / n_tasks as f64
    );
    println!(
        "compute median: {:.2} ms",
        c[c.len() / 2].as_secs_f64() * 1e3
    );
    assert!(n_tasks > N);
}
