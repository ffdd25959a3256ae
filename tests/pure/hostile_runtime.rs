//! Hostile conditions while running (issue 10, items 2, 4, 13): a stalled
//! process must not burst frames afterwards, SIGHUP closes a recording
//! cleanly, and process names reach no terminal raw.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::run::{Guard, nettop, output_within, process_named, signal, stderr, stdout};
use nettop::record::Recording;

const LIMIT: Duration = Duration::from_secs(60);

/// Waits until `file` holds at least `n` samples.
fn wait_samples(file: &Path, n: usize) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        if Recording::open(file).is_ok_and(|r| r.len() >= n) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never reached {n} samples", file.display());
}

fn stall(pid: i32, d: Duration) {
    signal(pid, libc::SIGSTOP);
    std::thread::sleep(d);
    signal(pid, libc::SIGCONT);
}

/// Item 4: after SIGSTOP/SIGCONT, batch mode burst frames 4 ms apart:
/// TOP% of 268 % on 2 CPUs, us+sy+id of 0 % or 50 %, and the `-n` budget
/// spent on the burst. Missed ticks are skipped: one long interval, then
/// the normal period again.
#[test]
fn batch_does_not_burst_after_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let victim = process_named(dir.path(), b"victim");
    let pid = victim.0.id().to_string();
    let mut child = nettop()
        .args([
            "-b", "--json", "--no-bpf", "-d", "0.2", "-n", "8", "-p", &pid,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let g = Guard(child);
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("a first frame");
    stall(g.pid(), Duration::from_secs(2));
    let mut frames = vec![first];
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(20)) {
        frames.push(l);
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    assert_eq!(frames.len(), 8, "-n 8 gave {} frames", frames.len());
    let mut long = 0;
    for l in &frames {
        let f: serde_json::Value = serde_json::from_str(l).unwrap();
        let dt = f["interval_s"].as_f64().unwrap();
        assert!(dt >= 0.1, "burst: a frame of {dt} s in {frames:#?}");
        if dt > 1.5 {
            long += 1;
        }
        for p in f["processes"].as_array().unwrap() {
            let top = p["top_pct"].as_f64().unwrap();
            assert!(top <= 100.0 * ncpu + 10.0, "TOP% {top} on {ncpu} CPUs");
        }
    }
    assert_eq!(long, 1, "the stall is one long interval: {frames:#?}");
}

/// Item 4, record mode: the stall is one long interval in the recording,
/// not a burst of snapshots milliseconds apart.
#[test]
fn record_does_not_burst_after_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let victim = process_named(dir.path(), b"victim");
    let f = dir.path().join("s.rec");
    let child = nettop()
        .args([
            "--record",
            f.to_str().unwrap(),
            "--no-bpf",
            "-d",
            "0.2",
            "-n",
            "8",
        ])
        .args(["-p", &victim.0.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    wait_samples(&f, 2);
    stall(pid, Duration::from_secs(2));
    let out = common::run::wait_output(child, LIMIT, "recorder");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rec = Recording::open(&f).unwrap();
    assert_eq!(rec.len(), 8);
    let mono: Vec<u64> = (0..rec.len())
        .map(|i| rec.get(i).unwrap().mono_ns)
        .collect();
    let gaps: Vec<f64> = mono
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e9)
        .collect();
    assert!(gaps.iter().all(|&g| g >= 0.1), "burst: gaps {gaps:?}");
    assert_eq!(
        gaps.iter().filter(|&&g| g > 1.5).count(),
        1,
        "gaps {gaps:?}"
    );
}

/// Item 13: SIGHUP (a closed terminal) killed the recorder without its end
/// record.
#[test]
fn sighup_closes_a_recording_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("h.rec");
    let child = nettop()
        .args(["--record", f.to_str().unwrap(), "--no-bpf", "-d", "0.1"])
        .args(["--sysroot", "tests/fixtures/proc/modern"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    wait_samples(&f, 2);
    signal(pid, libc::SIGHUP);
    let out = common::run::wait_output(child, LIMIT, "recorder after SIGHUP");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{:?} {}",
        out.status,
        stderr(&out)
    );
    let rec = Recording::open(&f).unwrap();
    assert!(rec.closed_cleanly(), "{:?}", rec.warnings());
}

const EVIL: &[u8] = b"\x1b]0;PWN\x07\x1b[2J";
const FORGE: &[u8] = b"a\nFORGED 1 2 3";

fn assert_no_controls(text: &str, what: &str) {
    for c in text.chars() {
        assert!(
            !(c.is_control() && c != '\n'),
            "{what}: control character {c:?} in:\n{text:?}"
        );
    }
    assert!(
        !text.lines().any(|l| l.starts_with("FORGED")),
        "{what}: forged line in:\n{text}"
    );
}

/// Item 2: an unprivileged process named "\e]0;PWN\a\e[2J" rewrote root's
/// terminal through batch text and CSV, and a name with '\n' forged a
/// batch line.
#[test]
fn process_names_reach_no_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let a = process_named(dir.path(), EVIL);
    let b = process_named(dir.path(), FORGE);
    let pids = format!("{},{}", a.0.id(), b.0.id());
    for extra in [&[][..], &["-H"][..]] {
        let out = output_within(
            nettop()
                .args([
                    "-b", "--no-bpf", "-n", "1", "-d", "0.1", "--rows", "0", "-p", &pids,
                ])
                .args(extra),
            LIMIT,
            "batch",
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("PWN"), "the processes are listed:\n{text}");
        assert_no_controls(&text, "batch");
    }
    let f = dir.path().join("n.rec");
    let out = output_within(
        nettop().args([
            "--record",
            f.to_str().unwrap(),
            "--no-bpf",
            "-n",
            "2",
            "-d",
            "0.1",
            "-p",
            &pids,
        ]),
        LIMIT,
        "record",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = output_within(
        nettop().args([
            "--replay",
            f.to_str().unwrap(),
            "--export",
            "csv",
            "--rows",
            "0",
        ]),
        LIMIT,
        "csv",
    );
    let csv = stdout(&out);
    assert_no_controls(&csv, "csv");
    let ours = [a.0.id().to_string(), b.0.id().to_string()];
    let rows = csv
        .lines()
        .filter(|l| {
            l.split(',')
                .nth(3)
                .is_some_and(|p| ours.iter().any(|o| o == p))
        })
        .count();
    assert_eq!(rows, 2, "one row per process:\n{csv}");
}

/// Item 2: the boundary itself: every string the live collector hands the
/// model (what the TUI, batch, JSON and recordings are fed) is clean.
#[test]
fn collector_output_is_sanitised() {
    let dir = tempfile::tempdir().unwrap();
    let a = process_named(dir.path(), EVIL);
    let b = process_named(dir.path(), FORGE);
    let mut c = nettop::collector::Collector::new(nettop::collector::CollectorOptions {
        no_bpf: true,
        pids: vec![a.0.id(), b.0.id()],
        ..Default::default()
    })
    .unwrap();
    let s = c.sample().unwrap();
    let ours = [a.0.id(), b.0.id()];
    let mut seen: Vec<u32> = s
        .tasks
        .iter()
        .chain(&s.procs)
        .map(|t| t.tgid)
        .filter(|p| ours.contains(p))
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 2, "both processes sampled");
    let json = serde_json::to_string(&s).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    fn walk(v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => assert!(!s.chars().any(char::is_control), "{s:?}"),
            serde_json::Value::Array(a) => a.iter().for_each(walk),
            serde_json::Value::Object(o) => o.values().for_each(walk),
            _ => {}
        }
    }
    walk(&v);
}
