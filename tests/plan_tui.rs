//! `P` in the live TUI, in a real terminal (tmux), on the scene of
//! `common::plan_scene`: RPS of a veth steered onto the CPU of a pinned
//! spinner, with real traffic and the real BPF collector.
//!
//! - `P` shows the plan, `P` again asks, `y` applies it: the before/after
//!   table appears in the Pinning view, the spinner is left with < 2 %
//!   STOLEN, RPS is off, and `--revert` with the file it names restores
//!   `rps_cpus` byte for byte;
//! - quitting while the after window is measured restores the mask before
//!   nettop exits, and says so.
//!
//! Needs root, tmux, `ip`, `iperf3` and 2 CPUs; skips loudly otherwise
//! and fails under NETTOP_REQUIRE_BPF=1.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::netns::NetnsPair;
use common::plan_scene::{can_run, rps_bytes, scene, warm_calibration};
use common::run::{nettop, output_within};
use common::tmux::Tmux;

const BIN: &str = env!("CARGO_BIN_EXE_nettop");

/// Both tests load CPUs 0 and 1.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// nettop's TUI on `pair`'s veth only (the host's own NIC IRQs are left
/// alone), 4 s windows, revert files under `state`.
fn tui(name: &str, pair: &NetnsPair, state: &Path) -> Option<Tmux> {
    // tmux does not pass our environment on: name the test cache inline.
    let cmd = format!(
        "env NETTOP_CACHE_DIR={} {BIN} -d 1 --nic {} --measure 4s --state-dir {}",
        common::cache_dir().display(),
        pair.veth_rx,
        state.display()
    );
    let Some(t) = Tmux::start(name, &cmd, 170, 60) else {
        common::skip("plan TUI test", "tmux not installed");
        return None;
    };
    let s = t.wait_for("the TUI", |s| s.contains("COMMAND") || s.contains("TTY="));
    assert!(!s.contains("TTY="), "nettop did not start:\n{s}");
    Some(t)
}

/// Waits up to `secs` for `text` on the screen.
fn wait_long(t: &Tmux, text: &str, secs: u64) -> String {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        let s = t.screen();
        if s.contains(text) {
            return s;
        }
        assert!(
            Instant::now() < until,
            "no {text:?} after {secs} s; screen:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `P` (the plan comes into view), `P` (the question), `y`.
fn apply_from_tui(t: &Tmux) {
    // The plan turns RPS off once the first lint has seen the stolen time.
    t.keys(&["5"]);
    wait_long(t, "nettop plan: 1 change(s), 1 written by --apply", 30);
    t.keys(&["1", "P"]);
    t.wait_text("P again applies it");
    t.keys(&["P"]);
    t.wait_text("Apply 1 change(s) to this host?");
    t.keys(&["y"]);
    wait_long(t, "measuring before", 10);
}

/// The spinner's STOLEN% before and after, from its row of the table
/// ("TID COMMAND ONCPU% b → a STOLEN% b → a TRUE% b → a").
fn stolen_before_after(screen: &str, tid: u32) -> (f64, f64) {
    let row = screen
        .lines()
        .map(str::split_whitespace)
        .map(Iterator::collect::<Vec<_>>)
        .find(|w| w.first() == Some(&tid.to_string().as_str()) && w.len() == 11)
        .unwrap_or_else(|| panic!("no before/after row for {tid}:\n{screen}"));
    (row[5].parse().unwrap(), row[7].parse().unwrap())
}

fn revert_files(state: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(state)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

#[test]
fn p_applies_the_plan_with_before_after_and_revert_restores_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    warm_calibration();
    let Some((pair, spinner)) = scene("tp", "2") else {
        return;
    };
    let original = rps_bytes(&pair);
    let state = tempfile::tempdir().unwrap();
    let Some(t) = tui("plan-apply", &pair, state.path()) else {
        return;
    };
    apply_from_tui(&t);
    let s = wait_long(&t, "plan applied and kept", 40);
    assert!(s.contains("before/after (4."), "{s}");
    assert!(s.contains("kept. To undo: nettop --revert"), "{s}");
    let (sb, sa) = stolen_before_after(&s, spinner);
    common::report(&format!(
        "plan TUI: spinner {spinner} STOLEN {sb:.1} -> {sa:.1} %\n"
    ));
    assert!(sb > sa + 1.0, "RPS should have cost the spinner more:\n{s}");
    assert!(sa < 2.0, "spinner still loses {sa:.1} % after P:\n{s}");
    assert_eq!(String::from_utf8_lossy(&rps_bytes(&pair)).trim(), "0");
    t.keys(&["q"]);
    t.assert_restored(0);
    // Kept: quitting leaves the change, and the revert file undoes it.
    assert_eq!(String::from_utf8_lossy(&rps_bytes(&pair)).trim(), "0");
    let files = revert_files(state.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let out = output_within(
        nettop()
            .arg("--revert")
            .arg(&files[0])
            .args(["--yes", "--state-dir"])
            .arg(state.path()),
        Duration::from_secs(60),
        "nettop --revert",
    );
    assert_eq!(out.status.code(), Some(0), "{}", common::run::stderr(&out));
    assert_eq!(rps_bytes(&pair), original, "not restored byte for byte");
}

#[test]
fn quitting_before_the_verdict_restores_the_host() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    warm_calibration();
    let Some((pair, _spinner)) = scene("tq", "2") else {
        return;
    };
    let original = rps_bytes(&pair);
    let state = tempfile::tempdir().unwrap();
    let Some(t) = tui("plan-quit", &pair, state.path()) else {
        return;
    };
    apply_from_tui(&t);
    wait_long(&t, "measuring after", 20);
    assert_eq!(String::from_utf8_lossy(&rps_bytes(&pair)).trim(), "0");
    t.keys(&["q"]);
    t.assert_restored(0);
    let s = t.screen();
    assert!(
        s.contains("the apply ended before its verdict: reverted"),
        "{s}"
    );
    assert_eq!(rps_bytes(&pair), original, "not restored byte for byte");
}
