//! Cost of the /proc readers on a host with thousands of threads. Prints
//! numbers for BENCHMARKS.md; asserts nothing about time (the machine decides).
//! Run: `cargo run --release --example procfs_bench [NAME]`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/common/parked.rs"]
mod parked;

use std::time::Instant;

use nettop::collector::procfiles;
use nettop::model::compute;
use nettop::sys::sysroot::Sysroot;
use parked::ParkedThreads;

fn read_tasks_with_2000_extra_threads() {
    const N: usize = 2000;
    let idle = ParkedThreads::spawn(N).unwrap();
    let root = Sysroot::default();
    let host = nettop::collector::facts::detect(&root);
    let mut prev = None;
    let mut times = Vec::new();
    let mut n_tasks = 0;
    for _ in 0..10 {
        let t0 = Instant::now();
        let tasks = procfiles::read_tasks(&root, &[]).unwrap();
        let cpus = procfiles::read_cpus(&root, &tasks).unwrap();
        let read = t0.elapsed();
        n_tasks = tasks.len();
        let cur = nettop::sample::RawSample {
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
    drop(idle);
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

/// Parse cost of each per-task file: nettop's own parsers against the
/// `procfs` crate's (procfs-core's `FromRead` impls, on the same bytes), and
/// the read itself (open+read+close, where the kernel formats the file) for
/// scale. Decides which parser the /proc path uses; see BENCHMARKS.md.
fn parsers_hand_vs_procfs_crate() {
    use ::procfs::FromRead;
    use ::procfs::process::{Schedstat, Stat, Status};
    use std::hint::black_box;
    use std::path::PathBuf;

    const N: usize = 2000;
    const ROUNDS: usize = 15;
    let idle = ParkedThreads::spawn(N).unwrap();
    // Every task directory on the host.
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if p.file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        if let Ok(rd) = std::fs::read_dir(p.path().join("task")) {
            dirs.extend(rd.flatten().map(|t| t.path()));
        }
    }
    let read_all = |name: &str| -> (Vec<Vec<u8>>, f64) {
        let mut best = f64::MAX;
        let mut bufs = Vec::new();
        for _ in 0..5 {
            let t0 = Instant::now();
            bufs = dirs
                .iter()
                .filter_map(|d| std::fs::read(d.join(name)).ok())
                .filter(|b| !b.is_empty())
                .collect();
            best = best.min(t0.elapsed().as_secs_f64() * 1e9 / bufs.len() as f64);
        }
        (bufs, best)
    };
    let (stat, stat_read) = read_all("stat");
    let (status, status_read) = read_all("status");
    let (sched, sched_read) = read_all("schedstat");
    drop(idle);

    // Median ns per file over ROUNDS passes over all buffers.
    fn per_file(bufs: &[Vec<u8>], mut f: impl FnMut(&[u8]) -> bool) -> f64 {
        let mut t: Vec<f64> = (0..ROUNDS)
            .map(|_| {
                let t0 = Instant::now();
                let ok = bufs.iter().filter(|b| f(b)).count();
                assert_eq!(ok, bufs.len(), "a parser failed on real input");
                t0.elapsed().as_secs_f64() * 1e9 / bufs.len() as f64
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    }
    let hand_stat = per_file(&stat, |b| {
        black_box(procfiles::parse_stat(&String::from_utf8_lossy(b))).is_ok()
    });
    let crate_stat = per_file(&stat, |b| black_box(Stat::from_read(b)).is_ok());
    let hand_status = per_file(&status, |b| {
        black_box(procfiles::parse_status(&String::from_utf8_lossy(b)));
        true
    });
    let crate_status = per_file(&status, |b| black_box(Status::from_read(b)).is_ok());
    // The hand parser nettop used before (procfiles::parse_schedstat is now
    // the crate's), kept here as the reference.
    let hand_sched = per_file(&sched, |b| {
        let text = String::from_utf8_lossy(b);
        let mut it = text.split_ascii_whitespace().map(str::parse::<u64>);
        black_box(matches!((it.next(), it.next()), (Some(Ok(_)), Some(Ok(_)))))
    });
    let crate_sched = per_file(&sched, |b| black_box(Schedstat::from_read(b)).is_ok());
    let nettop_sched = per_file(&sched, |b| black_box(procfiles::parse_schedstat(b)).is_ok());
    println!(
        "task files: {} stat, {} status, {} schedstat",
        stat.len(),
        status.len(),
        sched.len()
    );
    println!("| file | read (open+read+close) ns | nettop parser ns | procfs crate ns |");
    println!("|---|---:|---:|---:|");
    for (f, r, h, c) in [
        ("stat", stat_read, hand_stat, crate_stat),
        ("status", status_read, hand_status, crate_status),
        ("schedstat", sched_read, hand_sched, crate_sched),
    ] {
        println!("| `{f}` | {r:.0} | {h:.0} | {c:.0} |");
    }
    println!("procfiles::parse_schedstat (crate parser and error mapping): {nettop_sched:.0} ns");
}

/// Runs the measurements named on the command line, or all of them.
fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let all: [(&str, fn()); 2] = [
        (
            "read_tasks_with_2000_extra_threads",
            read_tasks_with_2000_extra_threads,
        ),
        ("parsers_hand_vs_procfs_crate", parsers_hand_vs_procfs_crate),
    ];
    for (name, run) in all {
        if only.is_empty() || only.iter().any(|o| name.contains(o.as_str())) {
            run();
        }
    }
}
