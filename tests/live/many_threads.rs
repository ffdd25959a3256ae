//! 40,000 threads in one process: nettop keeps running, reports the process
//! with all its threads, stays within bounded memory, and never panics.
//! Own test binary: the threads live in this process.

use crate::common;
use crate::common::tier::Need;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::parked::ParkedThreads;

const THREADS: usize = 40_000;

/// Sets a sysctl for the test's lifetime (the default pid_max of 32768 and
/// max_map_count of 65530 cannot hold 40,000 threads).
struct Sysctl(&'static str, String);
impl Sysctl {
    fn raise(path: &'static str, min: u64) -> Option<Self> {
        let old = std::fs::read_to_string(path).ok()?;
        if old.trim().parse::<u64>().ok()? < min {
            std::fs::write(path, min.to_string()).ok()?;
        }
        Some(Sysctl(path, old))
    }
}
impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0, self.1.trim());
    }
}

/// Runs nettop, returning its output and its peak RSS (VmHWM, KiB), read
/// from /proc while it runs: rusage of children would count the image this
/// 40,000-thread process had before exec.
fn run_with_peak_rss(args: &[&str]) -> (std::process::Output, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nettop"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run nettop");
    let status = format!("/proc/{}/status", child.id());
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let mut peak = 0;
    while child.try_wait().ok().flatten().is_none() {
        if let Some(kib) = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(kib);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("wait");
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    (
        std::process::Output {
            status,
            stdout,
            stderr,
        },
        peak,
    )
}

case!(forty_thousand_threads, [Need::Bpf]);
fn forty_thousand_threads() {
    if !common::is_root() {
        common::skip("forty_thousand_threads", "needs root (BPF, sysctls)");
        return;
    }
    let (Some(_pid_max), Some(_maps)) = (
        Sysctl::raise("/proc/sys/kernel/pid_max", 4_194_304),
        Sysctl::raise("/proc/sys/vm/max_map_count", 1_048_576),
    ) else {
        common::skip(
            "forty_thousand_threads",
            "cannot raise pid_max/max_map_count",
        );
        return;
    };
    let parked = match ParkedThreads::spawn(THREADS) {
        Ok(p) => p,
        Err(e) => {
            common::skip("forty_thousand_threads", &e);
            return;
        }
    };
    let me = std::process::id();
    let (out, rss_kib) = run_with_peak_rss(&["-b", "--json", "-n", "3", "-d", "0.5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nettop failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    let frames: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON frame"))
        .collect();
    assert_eq!(frames.len(), 3);
    let last = frames.last().expect("frame");
    let row = last["processes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["pid"] == me))
        .expect("this process in the frame");
    let n = row["nr_threads"].as_u64().unwrap_or(0);
    assert!(n as usize > THREADS, "nr_threads {n}");
    assert_eq!(last["threads"].as_array().map_or(0, Vec::len), 0);
    let health = &last["health"];
    common::report(&format!(
        "\n{THREADS} threads: nettop -b --json ran 3 frames, process row shows {n} threads, \
         peak RSS {} KiB, tasks from {}, map-full {}\n",
        rss_kib, health["task_source"], health["map_full"]
    ));
    assert_eq!(health["task_source"], "iter/task");
    // Bounded: process mode holds one row per process, not per thread
    // (this is a debug build; BENCHMARKS.md has the release figure).
    assert!(rss_kib > 0 && rss_kib < 64 * 1024, "peak RSS {rss_kib} KiB");

    // Thread mode copes with every row too.
    let (out, _) = run_with_peak_rss(&["-b", "-H", "-n", "2", "-d", "0.5", "--rows", "5"]);
    assert!(
        out.status.success(),
        "nettop -H failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(parked);
}
