//! `--plan --apply` and `--revert` on this machine, with real veths, real
//! RPS steering and the real BPF collector. A spinner pinned to CPU 1 at
//! SCHED_FIFO (`chrt -f`: whatever else runs on this shared VM cannot take
//! its CPU, so its TRUE% moves with interrupts only; the kernel's RT
//! throttling still leaves others 5 %), UDP traffic between two namespaces
//! on CPU 0, the receiving veth's RPS onto CPU 1:
//!
//! - the plan (`--nic` the veth: the host's own NIC IRQs are left alone)
//!   turns that RPS off; nettop's own after-measurement leaves
//!   the spinner with < 2 % STOLEN; a tampered revert file is refused;
//!   `--revert` restores `rps_cpus` byte for byte;
//! - interrupted (SIGINT) while measuring after the writes, `--apply`
//!   reverts before it exits 2;
//! - a reviewed plan file that steers RPS onto the spinner (worse) is
//!   applied, judged worse (TRUE% fell), reverted automatically and
//!   logged, and `rps_cpus` is back byte for byte.
//!
//! The scene is `common::plan_scene`'s. Needs root, `ip`, `iperf3` and 2
//! CPUs; skips loudly otherwise and fails under NETTOP_REQUIRE_BPF=1.

use crate::common;
use crate::common::tier::Need;

use std::path::Path;
use std::time::Duration;

use common::plan_scene::{
    can_run, revert, revert_restores, rps_bytes, rps_path, scene, warm_calibration,
};
use common::run::{nettop, output_within};
use serde_json::Value;

/// Both tests load CPUs 0 and 1: run together, one's RPS would land in
/// the other's measurement.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn apply(state: &Path, extra: &[&str]) -> (std::process::Output, Value) {
    let out = output_within(
        nettop()
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .args([
                "--plan",
                "--apply",
                "--yes",
                "--measure",
                "4s",
                "--format",
                "json",
            ])
            .arg("--state-dir")
            .arg(state)
            .args(extra),
        Duration::from_secs(240),
        "nettop --plan --apply",
    );
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}\nstderr: {}",
            common::run::stdout(&out),
            common::run::stderr(&out)
        )
    });
    (out, v)
}

fn victim(m: &Value, tid: u32) -> &Value {
    m["victims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["tid"] == tid)
        .unwrap_or_else(|| panic!("victim {tid} not measured: {m:#}"))
}

case!(
    apply_relieves_the_pinned_thread_and_revert_restores_the_mask,
    [
        Need::Bpf,
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version"),
        Need::Cpus(2),
        Need::Tool("chrt", "--version")
    ]
);
fn apply_relieves_the_pinned_thread_and_revert_restores_the_mask() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    warm_calibration();
    let Some((pair, spinner)) = scene("pa", "2") else {
        return;
    };
    let original = rps_bytes(&pair);
    let state = tempfile::tempdir().unwrap();
    let (out, r) = apply(state.path(), &["--nic", &pair.veth_rx]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{r:#}\n{}",
        common::run::stderr(&out)
    );
    assert_eq!(r["reverted"], false, "{r:#}");
    let written = r["written"].as_array().unwrap();
    assert!(
        written
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(&format!(
                "{} (netns {}): ",
                rps_path(&pair),
                pair.ns_rx
            ))),
        "{r:#}"
    );
    assert_eq!(String::from_utf8_lossy(&rps_bytes(&pair)).trim(), "0");
    let (b, a) = (victim(&r["before"], spinner), victim(&r["after"], spinner));
    let (sb, sa) = (
        b["stolen_pct"].as_f64().unwrap(),
        a["stolen_pct"].as_f64().unwrap(),
    );
    common::report(&format!(
        "plan live: spinner {spinner} STOLEN {sb:.1} -> {sa:.1} %, TRUE {} -> {} %, ONCPU {} -> {} %\n",
        b["true_pct"], a["true_pct"], b["on_cpu_pct"], a["on_cpu_pct"]
    ));
    // On a quiet machine RPS costs the spinner ~20 %; another test's CPU
    // hog on CPU 0 slows the sender and with it the cost (1.6 % seen).
    assert!(
        sb > sa + 1.0,
        "RPS onto CPU 1 should have cost the spinner more than the plan leaves: {r:#}"
    );
    assert!(
        sa < 2.0,
        "spinner still loses {sa:.1} % after the plan: {r:#}"
    );

    // A revert file changed after the fact is refused, and nothing is written.
    let file = std::path::PathBuf::from(r["revert_file"].as_str().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    let tampered = state.path().join("tampered.json");
    std::fs::write(
        &tampered,
        text.replace("\"applied\": \"0\"", "\"applied\": \"1\""),
    )
    .unwrap();
    assert_ne!(std::fs::read(&tampered).unwrap(), text.as_bytes());
    let out = revert(state.path(), &tampered);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::run::stderr(&out).contains("does not match this host's key"));
    assert_eq!(String::from_utf8_lossy(&rps_bytes(&pair)).trim(), "0");

    revert_restores(state.path(), &file, &pair, &original);
}

case!(
    a_plan_that_makes_things_worse_is_reverted_and_logged,
    [
        Need::Bpf,
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version"),
        Need::Cpus(2),
        Need::Tool("chrt", "--version")
    ]
);
fn a_plan_that_makes_things_worse_is_reverted_and_logged() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    warm_calibration();
    let Some((pair, spinner)) = scene("pw", "0") else {
        return;
    };
    let original = rps_bytes(&pair);
    // A real plan of this host, edited the way a careless reviewer would:
    // RPS steered onto the spinner's CPU.
    let out = output_within(
        nettop()
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .args(["--plan", "--format", "json"]),
        Duration::from_secs(120),
        "nettop --plan",
    );
    assert!(out.status.success(), "{}", common::run::stderr(&out));
    let mut plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = rps_path(&pair);
    plan["changes"] = serde_json::json!([{
        "kind": "rps",
        "nic": format!("{} (netns {})", pair.veth_rx, pair.ns_rx),
        "netns": pair.ns_rx,
        "target": path,
        "from": "0",
        "to": "2",
        "command": format!("echo 2 > {path}"),
        "resolves": [],
        "why": "a bad edit: RPS onto the pinned spinner's CPU"
    }]);
    plan["victims"] = serde_json::json!([{
        "pid": spinner, "tid": spinner, "comm": "sh", "affinity": "1"
    }]);
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("plan.json");
    std::fs::write(&file, plan.to_string()).unwrap();

    let (out, r) = apply(state.path(), &["--plan-file", file.to_str().unwrap()]);
    let err = common::run::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}\n{err}");
    assert_eq!(r["reverted"], true, "{r:#}");
    let worse = r["worse"].as_array().unwrap();
    assert!(
        worse.iter().any(|w| w
            .as_str()
            .unwrap()
            .starts_with(&format!("{spinner} (sh) TRUE% fell"))),
        "{r:#}"
    );
    assert!(
        err.contains("the plan made things worse"),
        "not logged: {err}"
    );
    assert!(err.contains(r["revert_file"].as_str().unwrap()), "{err}");
    common::report(&format!(
        "plan live (worse plan): spinner TRUE {} -> {} %, reverted\n",
        victim(&r["before"], spinner)["true_pct"],
        victim(&r["after"], spinner)["true_pct"]
    ));
    assert_eq!(r["restored"].as_array().unwrap().len(), 1, "{r:#}");
    assert_eq!(
        rps_bytes(&pair),
        original,
        "rps_cpus not restored byte for byte"
    );
}

case!(
    an_apply_interrupted_while_measuring_is_reverted,
    [
        Need::Bpf,
        Need::Tool("ip", "-V"),
        Need::Tool("iperf3", "--version"),
        Need::Cpus(2),
        Need::Tool("chrt", "--version")
    ]
);
fn an_apply_interrupted_while_measuring_is_reverted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    warm_calibration();
    let Some((pair, _spinner)) = scene("pi", "2") else {
        return;
    };
    let original = rps_bytes(&pair);
    let state = tempfile::tempdir().unwrap();
    let mut child = nettop()
        .env("NETTOP_CACHE_DIR", common::cache_dir())
        .args(["--plan", "--apply", "--yes", "--measure", "10s", "--nic"])
        .arg(&pair.veth_rx)
        .arg("--state-dir")
        .arg(state.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // "wrote ..." comes right after the write, as the "after" window
    // starts: interrupt it then. (Polling rps_cpus through `ip netns exec`
    // was too slow on a loaded VM: the window could end first.)
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        seen.push_str(&line);
        assert!(n > 0, "nettop ended before writing: {seen}");
        if line.starts_with("wrote ") {
            break;
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    common::run::signal(pid, libc::SIGINT);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = common::run::wait_output(child, Duration::from_secs(60), "interrupted --apply");
    let err = common::run::stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{:?}\nstderr: {err}\nstdout: {seen}{rest}",
        out.status
    );
    assert!(
        err.contains("interrupted while measuring: reverted"),
        "{err}"
    );
    assert_eq!(
        rps_bytes(&pair),
        original,
        "rps_cpus not restored byte for byte"
    );
}
