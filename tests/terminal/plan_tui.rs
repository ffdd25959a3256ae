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

use crate::common;
use crate::common::tier::Need;

use std::path::Path;
use std::time::{Duration, Instant};

use common::netns::NetnsPair;
use common::plan_scene::{can_run, load_at, pair, revert, rps_bytes, warm_calibration};
use common::tmux::Tmux;

const BIN: &str = env!("CARGO_BIN_EXE_nettop");

/// UDP at a fixed rate rather than flat out: RPS still costs the spinner
/// several percent, and CPU 0 keeps time for nettop and tmux (flat out,
/// keys and screens came tens of seconds late in CI).
const RATE: &str = "300M";

/// Both tests load CPUs 0 and 1.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// nettop's TUI on `pair`'s veth only (the host's own NIC IRQs are left
/// alone), 4 s windows, revert files under `state`, started on the idle
/// pair.
fn tui(name: &str, pair: &NetnsPair, state: &Path) -> Option<Tmux> {
    // tmux does not pass our environment on: name the test cache inline.
    let cmd = format!(
        "env NETTOP_CACHE_DIR={} nice -n -10 {BIN} -d 1 --nic {} --measure 4s --state-dir {}",
        common::cache_dir().display(),
        pair.veth_rx,
        state.display()
    );
    let Some(t) = Tmux::start(name, &cmd, 170, 60) else {
        common::skip("plan TUI test", "tmux not installed");
        return None;
    };
    // The terminal too: a tmux server at nice 0 under that load delivered
    // keys and screens tens of seconds late.
    let server = t.format("#{pid}");
    let ok = std::process::Command::new("renice")
        .args(["-n", "-10", "-p", &server])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "renice of the tmux server {server} failed");
    // At the traffic's priority (nice -10): at nice 0, with the spinner
    // holding CPU 1 at SCHED_FIFO and iperf3 at nice -10 on CPU 0, nettop
    // got a few percent of one CPU and took up to 82 s to start and as
    // long for a lint, which is no test of `P`.
    let s = wait_until(&t, "the TUI", 120, |s| {
        s.contains("COMMAND") || s.contains("TTY=")
    });
    assert!(!s.contains("TTY="), "nettop did not start:\n{s}");
    Some(t)
}

/// Waits up to `secs` for `pred` to hold for the screen. Every wait here
/// is long: nettop and tmux share CPU 0 with the scene's traffic at nice
/// -10, so even a key's answer can take seconds.
fn wait_until(t: &Tmux, what: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    let until = start + Duration::from_secs(secs);
    loop {
        let s = t.screen();
        if pred(&s) {
            common::report(&format!(
                "plan TUI: {what} after {:.1} s\n",
                start.elapsed().as_secs_f64()
            ));
            return s;
        }
        assert!(
            Instant::now() < until,
            "no {what} after {secs} s; screen:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn wait_long(t: &Tmux, text: &str, secs: u64) -> String {
    wait_until(t, &format!("{text:?}"), secs, |s| s.contains(text))
}

/// `P` (the plan comes into view and the host is checked again), `P`
/// (the question), `y`.
fn apply_from_tui(t: &Tmux) {
    t.keys(&["P"]);
    wait_long(t, "P again applies the plan", 30);
    // "1 written by --apply": the RPS mask (how many changes there are
    // depends on the load: with CPU 0 idle a kernel command line is
    // proposed too). Without `P`'s re-check the load started after the
    // first lint would show only at the next one, 15–90 s later.
    wait_long(t, "1 written by --apply", 60);
    t.keys(&["P"]);
    wait_long(t, "Apply 1 change(s) to this host?", 30);
    t.keys(&["y"]);
    wait_long(t, "measuring before", 30);
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

/// What both tests start from: the TUI on the idle pair, then the load,
/// and `rps_cpus` as it was before anything was applied.
struct Scene {
    _serial: std::sync::MutexGuard<'static, ()>,
    pair: NetnsPair,
    state: tempfile::TempDir,
    t: Tmux,
    spinner: u32,
    original: Vec<u8>,
}

impl Scene {
    fn start(tag: &str, name: &str) -> Option<Scene> {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        if !can_run() {
            return None;
        }
        warm_calibration();
        let mut pair = pair(tag)?;
        let state = tempfile::tempdir().unwrap();
        let t = tui(name, &pair, state.path())?;
        let spinner = load_at(&mut pair, "2", RATE);
        let original = rps_bytes(&pair);
        Some(Scene {
            _serial,
            pair,
            state,
            t,
            spinner,
            original,
        })
    }
}

case!(
    p_applies_the_plan_with_before_after_and_revert_restores_it,
    [
        Need::Bpf,
        Need::Tool("tmux", "-V"),
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version"),
        Need::Cpus(2)
    ]
);
fn p_applies_the_plan_with_before_after_and_revert_restores_it() {
    let Some(Scene {
        _serial,
        pair,
        state,
        t,
        spinner,
        original,
    }) = Scene::start("tp", "plan-apply")
    else {
        return;
    };
    apply_from_tui(&t);
    let s = wait_long(&t, "plan applied and kept", 90);
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
    wait_long(&t, "TTY=", 60);
    t.assert_restored(0);
    // Kept: quitting leaves the change, and the revert file undoes it.
    assert_eq!(String::from_utf8_lossy(&rps_bytes(&pair)).trim(), "0");
    let files = revert_files(state.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let out = revert(state.path(), &files[0]);
    assert_eq!(out.status.code(), Some(0), "{}", common::run::stderr(&out));
    assert_eq!(rps_bytes(&pair), original, "not restored byte for byte");
}

case!(
    quitting_before_the_verdict_restores_the_host,
    [
        Need::Bpf,
        Need::Tool("tmux", "-V"),
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version"),
        Need::Cpus(2)
    ]
);
fn quitting_before_the_verdict_restores_the_host() {
    let Some(Scene {
        _serial,
        pair,
        state: _state,
        t,
        original,
        ..
    }) = Scene::start("tq", "plan-quit")
    else {
        return;
    };
    apply_from_tui(&t);
    wait_long(&t, "measuring after", 60);
    assert_eq!(String::from_utf8_lossy(&rps_bytes(&pair)).trim(), "0");
    t.keys(&["q"]);
    wait_long(&t, "TTY=", 60);
    t.assert_restored(0);
    let s = t.screen();
    assert!(
        s.contains("the apply ended before its verdict: reverted"),
        "{s}"
    );
    assert_eq!(rps_bytes(&pair), original, "not restored byte for byte");
}
