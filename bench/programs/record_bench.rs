//! Measurements for BENCHMARKS.md (## Recording), run by bench/record.sh:
//! `cargo run --release --example record_bench [NAME]`.
//! They print figures and assert only correctness, never timings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use nettop::record::Recording;
use nettop::record::synth;

fn dir() -> std::path::PathBuf {
    std::env::var_os("NETTOP_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(std::env::temp_dir)
}

fn write(path: &std::path::Path, z: bool, n: u64, ntasks: usize) -> f64 {
    let _ = std::fs::remove_file(path);
    let t = Instant::now();
    synth::write_recording(path, z, 8, (1..=n).map(|k| synth::sample(k, ntasks, 8))).unwrap();
    t.elapsed().as_secs_f64()
}

fn bench_bytes_per_snapshot_synthetic() {
    for ntasks in [100, 1000] {
        for z in [false, true] {
            let p = dir().join(format!("bench-{ntasks}.{}", if z { "zst" } else { "rec" }));
            write(&p, z, 60, ntasks);
            let len = std::fs::metadata(&p).unwrap().len();
            println!(
                "BENCH bytes_per_snapshot synthetic tasks={ntasks} cpus=8 {}: {:.0} B/snapshot, {:.0} B per 100 tasks",
                if z { "zstd" } else { "raw" },
                len as f64 / 60.0,
                len as f64 / 60.0 / (ntasks as f64 / 100.0)
            );
            std::fs::remove_file(&p).unwrap();
        }
    }
}

fn bench_replay_load_24h() {
    let n = 86_400;
    let p = dir().join("bench-24h.zst");
    let wt = write(&p, true, n, 100);
    let len = std::fs::metadata(&p).unwrap().len();
    println!(
        "BENCH synth 24h: {n} snapshots x 100 tasks x 8 CPUs, zstd, {:.1} MiB, written in {wt:.1} s",
        len as f64 / 1048576.0
    );
    // Drop the page cache for this file where we can, for a cold figure too.
    for round in ["first", "warm"] {
        let t = Instant::now();
        let rec = Recording::open(&p).unwrap();
        let open = t.elapsed();
        assert_eq!(rec.len(), n as usize);
        assert!(rec.warnings().is_empty());
        let t = Instant::now();
        let mid = rec.index_at(1_700_000_000_000 + 43_200_000).unwrap();
        let a = rec.get(mid).unwrap();
        let b = rec.get(mid + 1).unwrap();
        let _f = nettop::model::compute(rec.host(), &a, &b);
        let seek = t.elapsed();
        println!(
            "BENCH replay_load_24h ({round}): open+index {:.1} ms, jump to 12:00 + decode 2 + compute {:.2} ms",
            open.as_secs_f64() * 1e3,
            seek.as_secs_f64() * 1e3
        );
    }
    let rec = Recording::open(&p).unwrap();
    let t = Instant::now();
    for i in 0..1000 {
        rec.get(i).unwrap();
    }
    println!(
        "BENCH replay decode: {:.3} ms per snapshot (100 tasks, zstd+JSON)",
        t.elapsed().as_secs_f64()
    );
    std::fs::remove_file(&p).unwrap();
}

/// Runs the measurements named on the command line, or all of them.
fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let all: [(&str, fn()); 2] = [
        (
            "bench_bytes_per_snapshot_synthetic",
            bench_bytes_per_snapshot_synthetic,
        ),
        ("bench_replay_load_24h", bench_replay_load_24h),
    ];
    for (name, run) in all {
        if only.is_empty() || only.iter().any(|o| name.contains(o.as_str())) {
            run();
        }
    }
}
