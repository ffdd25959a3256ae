//! `nettop -b` end to end: fixture sysroots, a closed pipe, live BPF, and
//! the clear errors for bad input and missing privileges.

use std::io::Read;
use std::process::{Command, Output, Stdio};

use nettop::model::frame::Frame;
use nettop::sample::{Regime, Source};

use crate::common;
use crate::common::tier::Need;

fn nettop() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nettop"));
    c.env("NETTOP_CACHE_DIR", common::cache_dir());
    c
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/proc/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    nettop().args(args).output().unwrap()
}

/// The stdout of a run that must succeed; its stderr says why it did not.
fn stdout_ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `--json` output: one frame a line.
fn json_frames(text: &str) -> Vec<Frame> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The stderr of a run that must be refused with exit 2.
fn refused(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// The fixture tree never changes, so every rate is 0, but the whole path
/// runs: host detection, readers, model, renderer, user names from the
/// sysroot's /etc/passwd, -n and -d.
#[test]
fn binary_batch_on_fixture_sysroot() {
    let text = stdout_ok(run(&[
        "-b",
        "--no-bpf",
        "-n",
        "2",
        "-d",
        "0.05",
        "-H",
        "--sysroot",
        &fixture("modern"),
    ]));
    assert_eq!(text.matches("nettop - ").count(), 2, "{text}");
    assert!(text.contains("host modern-host"));
    assert!(text.contains("irq_time_accounting (from /proc/config.gz)"));
    assert!(text.contains("weird) name (x"));
    assert!(
        text.contains("alice"),
        "uid 1000 named from the sysroot's /etc/passwd:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().next() == Some("2") && l.ends_with("offline")),
        "CPU 2 offline:\n{text}"
    );

    let frames = json_frames(&stdout_ok(run(&[
        "-b",
        "--no-bpf",
        "--json",
        "-n",
        "3",
        "-d",
        "0.05",
        "--sysroot",
        &fixture("old"),
    ])));
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0].regime, Regime::TickBased);
    assert_eq!(frames[0].source, Source::ProcOnly);
}

#[test]
fn binary_bad_sysroot_is_a_clear_error() {
    let err = refused(&run(&[
        "-b",
        "--no-bpf",
        "-n",
        "1",
        "--sysroot",
        "/nonexistent-nettop",
    ]));
    assert!(err.contains("/nonexistent-nettop/"), "{err}");
}

/// `nettop -b | head -c 100`: the reader goes away, nettop exits 0 quietly.
#[test]
fn binary_closed_pipe_exits_zero() {
    let mut child = nettop()
        .args([
            "-b",
            "--no-bpf",
            "-d",
            "0.05",
            "--sysroot",
            &fixture("modern"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 100];
    stdout.read_exact(&mut buf).unwrap();
    drop(stdout);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "{err}");
}

case!(binary_live_bpf_json, [Need::Bpf]);
/// Live, with BPF: two JSON frames from this machine.
fn binary_live_bpf_json() {
    if !common::is_root() {
        return common::skip("binary_live_bpf_json", "needs root for BPF");
    }
    let out = run(&["-b", "--json", "-H", "-n", "2", "-d", "0.2"]);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return common::skip("binary_live_bpf_json", &format!("BPF unavailable: {err}"));
    }
    let frames = json_frames(&stdout_ok(out));
    assert_eq!(frames.len(), 2);
    for f in &frames {
        assert_eq!(f.source, Source::Bpf);
        assert!(f.interval_s > 0.1 && f.interval_s < 1.0, "{}", f.interval_s);
        assert!(f.summary.cpus_online >= 1);
        // -H: thread rows too (process mode emits none, see below).
        assert!(!f.threads.is_empty());
        assert!(!f.processes.is_empty());
        assert!(
            f.cpus
                .iter()
                .filter(|c| c.online)
                .all(|c| c.idle_pct + c.usr_pct + c.sys_pct <= 100.0 + 1e-6)
        );
    }
}

case!(binary_live_process_mode_has_no_thread_rows, [Need::Bpf]);
/// Without -H a frame has one row per process and none per thread, so its
/// size does not grow with the host's threads.
fn binary_live_process_mode_has_no_thread_rows() {
    if !common::is_root() {
        return common::skip(
            "binary_live_process_mode_has_no_thread_rows",
            "needs root for BPF",
        );
    }
    let text = stdout_ok(run(&["-b", "--json", "-n", "1", "-d", "0.2"]));
    let f: Frame = serde_json::from_str(text.trim()).unwrap();
    assert!(f.threads.is_empty());
    assert!(f.processes.len() > 5);
    assert!(f.summary.tasks as usize >= f.processes.len());
    assert_eq!(f.health.task_source, "iter/task");
}

/// A mistyped `-p` is an error naming the PID, not an empty screen.
#[test]
fn binary_unknown_pid_is_a_clear_error() {
    let err = refused(&run(&[
        "-b",
        "--no-bpf",
        "-n",
        "1",
        "-p",
        "100,4242",
        "--sysroot",
        &fixture("modern"),
    ]));
    assert!(err.contains("no such process: 4242"), "{err}");
    assert!(!err.contains("100,"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Without root or CAP_BPF+CAP_PERFMON: one line saying what is missing and
/// how to fix it, exit 2. Run as `nobody` through setpriv when we are root.
#[test]
fn binary_unprivileged_is_a_clear_error() {
    if !common::is_root() {
        // Already unprivileged: the binary itself is the test subject.
        let err = refused(&run(&["-b", "-n", "1"]));
        assert!(err.contains("CAP_BPF"), "{err}");
        return;
    }
    // The checkout may sit under a directory `nobody` cannot enter: run a
    // copy from a world-readable temporary directory.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("nettop");
    std::fs::copy(env!("CARGO_BIN_EXE_nettop"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            bin.to_str().unwrap(),
            "-b",
            "-n",
            "1",
        ])
        .output()
        .expect("setpriv (util-linux) runs");
    let err = refused(&out);
    assert!(
        err.contains("CAP_BPF") && err.contains("CAP_PERFMON") && err.contains("--no-bpf"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
}
