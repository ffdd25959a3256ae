//! `nettop --calibrate` on the real machine: it measures, caches where it is
//! told (never /var/cache/nettop from a test), live nettop then uses the
//! cache, and it refuses a CPU where a busy pinned thread runs.
//!
//! Needs root and BTF (BPF) and two CPUs; prints `SKIPPED:` otherwise, and
//! fails instead when NETTOP_REQUIRE_BPF=1.

use crate::common;
use crate::common::tier::Need;

use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nettop::model::frame::Frame;
use nettop::sample::calibration::{Basis, Calibration};

/// The tests load the same two CPUs: one at a time.
static CPUS: Mutex<()> = Mutex::new(());

fn nettop(cache: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nettop"))
        .env_remove("NETTOP_CACHE_DIR")
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .output()
        .expect("running nettop")
}

/// The JSON frames of a batch run's standard output.
fn json_frames(stdout: &[u8]) -> Vec<Frame> {
    serde_json::Deserializer::from_slice(stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("JSON frames")
}

fn can_run(test: &str) -> bool {
    if !common::is_root() {
        common::skip(test, "needs root (BPF)");
        return false;
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        common::skip(test, "kernel has no BTF");
        return false;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        common::skip(test, "needs two CPUs");
        return false;
    }
    true
}

case!(
    calibrate_caches_and_live_nettop_uses_the_cache,
    [Need::Bpf, Need::Cpus(2)]
);
fn calibrate_caches_and_live_nettop_uses_the_cache() {
    let _cpus = CPUS.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run("calibrate_live::calibrate_caches_and_live_nettop_uses_the_cache") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = nettop(dir.path(), &["--calibrate"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::report(&text);
    for want in [
        "kind",
        "hidden ns",
        "spread ns",
        "ipi",
        "measured",
        "Origin: measured, cached in",
    ] {
        assert!(text.contains(want), "table lacks '{want}':\n{text}");
    }
    let file = dir.path().join("calibration.json");
    let c: Calibration =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("cache file written"))
            .expect("cache file is a calibration");
    assert_eq!(c.ipi.basis, Basis::Measured);
    assert!(c.ipi.samples >= 200, "{c:?}");
    assert!(c.ipi.hidden_ns > 0.0 && c.ipi.traced_ns > 0.0, "{c:?}");
    assert_ne!(c.cpu, c.sender_cpu);
    // As root the loopback RPS namespace can be made: the softirq in an
    // IPI's tail is measured, not left out.
    assert_eq!(c.softirq.basis, Basis::Measured, "{:?}", c.notes);
    assert!(
        c.softirq.samples >= 200 && c.softirq.traced_ns > 0.0,
        "{c:?}"
    );
    // As root the local timer is induced (a perf cpu-clock hrtimer on the
    // spinner's CPU): hundreds of clean timer gaps, where the natural ticks
    // in the windows give a few dozen at most.
    assert!(
        !c.notes.iter().any(|n| n.starts_with("local timer")),
        "{:?}",
        c.notes
    );
    assert_eq!(c.timer.basis, Basis::Measured, "{:?}", c.notes);
    assert!(c.timer.samples >= 100, "{:?}", c.timer);
    // As root the woken thread is SCHED_FIFO: every wake-up preempts the
    // spinner, and its billing per wake-up is a run's, not the whole
    // window's spread over a few (tens of µs on any host, not ms).
    assert!(
        c.resched_woken_ns > 0.0 && c.resched_woken_ns < 1e6,
        "{} ns per wake-up: {:?}",
        c.resched_woken_ns,
        c.notes
    );
    // At most 0.5 s of one CPU (spinner + sender) per measurement, and a
    // second one only when the host disturbed the first. The spinner's
    // windows add up to ~0.3 s of wall time, so more would mean a runaway
    // sender or spinner, not a slow machine.
    let measurements = if c.notes.iter().any(|n| n.starts_with("measured twice")) {
        2.0
    } else {
        1.0
    };
    assert!(
        c.cost_cpu_ms <= 500.0 * measurements,
        "calibration used {} ms of CPU in {measurements} measurement(s)",
        c.cost_cpu_ms
    );

    // Live nettop takes the cached table instead of measuring again.
    let out = nettop(dir.path(), &["-b", "--json", "-n", "1", "-d", "0.2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f: Frame = serde_json::from_slice(&out.stdout).expect("one JSON frame");
    let want = format!("cache {}", file.display());
    assert!(f.hidden_note.contains(&want), "{}", f.hidden_note);

    // The same table as if the host had disturbed it (its IPI cost spread
    // by 30 %): the frames say so and carry a band, and a live run
    // measures again in the background once that is due.
    let mut busy = c.clone();
    busy.ipi.spread_ns = 0.3 * busy.ipi.hidden_ns;
    std::fs::write(&file, serde_json::to_vec(&busy).expect("encoding")).expect("writing cache");
    // The first frame before the measurement is due, the second after.
    let due = nettop::calibrate::again::FIRST_AFTER.as_secs_f64() / 2.0 + 1.0;
    let out = nettop(
        dir.path(),
        &["-b", "--json", "-n", "2", "-d", &format!("{due}")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = json_frames(&out.stdout);
    assert_eq!(frames.len(), 2);
    let w = &frames[0].calibration_warning;
    common::report(&format!(
        "first frame: {w}\nsecond frame: {}\n",
        frames[1].calibration_warning
    ));
    assert!(
        w.contains("disturbed the calibration (spread up to 30 %")
            && w.contains("measuring again in the background in"),
        "{w}"
    );
    let w = &frames[1].calibration_warning;
    assert!(w.contains("measured again during this frame"), "{w}");
    // Kept (a quieter table, cached) or dropped (the host still busy):
    // either way the frame says which.
    let again: Calibration =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("cache file"))
            .expect("cache file is a calibration");
    if w.contains("the new table charges it") {
        assert!(again.noise() < busy.noise(), "{again:?}");
        assert!(
            frames[1]
                .hidden_note
                .contains("measured again in the background")
        );
    } else {
        assert!(w.contains("the earlier table stays"), "{w}");
    }
}

case!(
    a_first_start_says_it_is_measuring,
    [Need::Bpf, Need::Cpus(2)]
);
/// The first start of a boot measures for about a second before its first
/// frame: it says so instead of leaving the screen blank; a start with the
/// cache says nothing.
fn a_first_start_says_it_is_measuring() {
    let _cpus = CPUS.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run("calibrate_live::a_first_start_says_it_is_measuring") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let said = |out: &Output| {
        String::from_utf8_lossy(&out.stderr).contains("measuring this host's hidden interrupt cost")
    };
    let first = nettop(dir.path(), &["-b", "-n", "1", "-d", "0.2"]);
    assert!(said(&first), "{}", String::from_utf8_lossy(&first.stderr));
    if dir.path().join("calibration.json").exists() {
        let again = nettop(dir.path(), &["-b", "-n", "1", "-d", "0.2"]);
        assert!(!said(&again), "{}", String::from_utf8_lossy(&again.stderr));
    }
}

case!(
    never_next_to_a_busy_pinned_thread,
    [Need::Bpf, Need::Cpus(2)]
);
fn never_next_to_a_busy_pinned_thread() {
    let _cpus = CPUS.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run("calibrate_live::never_next_to_a_busy_pinned_thread") {
        return;
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stop = AtomicBool::new(false);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            common::victim::pin_to_cpu(1).expect("pin");
            let t = Instant::now();
            // Bounded: the calibration takes well under a second.
            while !stop.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(30) {
                std::hint::spin_loop();
            }
        });
        std::thread::sleep(Duration::from_millis(200));
        let out = nettop(dir.path(), &["--calibrate", "--json"]);
        stop.store(true, Ordering::Relaxed);
        out
    });
    let err = String::from_utf8_lossy(&out.stderr);
    if ncpu == 2 {
        // Only CPU 0 is left: no calibration, and the reason names the thread.
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("CPU 1: busy pinned thread") && err.contains("needs two CPUs"),
            "{err}"
        );
        assert!(!dir.path().join("calibration.json").exists());
    } else {
        assert!(out.status.success(), "{err}");
        let c: Calibration = serde_json::from_slice(&out.stdout).expect("calibration JSON");
        assert!(c.cpu != 1 && c.sender_cpu != 1, "{c:?}");
    }
}

case!(
    a_failed_calibration_is_retried_until_it_cannot_be,
    [Need::Bpf, Need::Cpus(2)]
);
/// A run whose calibration failed says so in every frame and measures
/// again in the background; when the reason is one that lasts (here nettop
/// is allowed one CPU, and the calibration needs two), it says so once and
/// stops trying.
fn a_failed_calibration_is_retried_until_it_cannot_be() {
    let _cpus = CPUS.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run("calibrate_live::a_failed_calibration_is_retried_until_it_cannot_be") {
        return;
    }
    if !common::tool_runs("taskset", "--version") {
        common::skip(
            "calibrate_live::a_failed_calibration_is_retried_until_it_cannot_be",
            "taskset is not installed",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let due = nettop::calibrate::again::FIRST_AFTER.as_secs_f64() / 2.0 + 1.0;
    let out = Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_nettop")])
        .env_remove("NETTOP_CACHE_DIR")
        .arg("--cache-dir")
        .arg(dir.path())
        .args(["-b", "--json", "-n", "3", "-d", &format!("{due}")])
        .output()
        .expect("running nettop under taskset");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = json_frames(&out.stdout);
    let w: Vec<&str> = frames
        .iter()
        .map(|f| f.calibration_warning.as_str())
        .collect();
    common::report(&format!("{w:#?}\n"));
    assert_eq!(w.len(), 3);
    assert!(
        w[0].starts_with("HIDDEN~ not calibrated; measuring again in the background in"),
        "{w:?}"
    );
    assert!(w[1].contains("not measured again: needs two CPUs"), "{w:?}");
    // No more promises: the HIDDEN~ line alone says why.
    assert_eq!(w[2], "", "{w:?}");
    assert!(
        frames[2]
            .hidden_note
            .contains("not calibrated (needs two CPUs")
    );
}
