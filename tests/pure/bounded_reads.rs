//! Every file under --sysroot is read with a size cap: a fake tree whose
//! files are devices (`/dev/zero`) or FIFOs ends in a clear error and exit
//! code 2 at once, instead of a process that grows without bound (5.5 GB in
//! 5 s before the cap) and cannot be stopped.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn nettop(args: &[&str]) -> (Output, Duration) {
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nettop"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Reads stdout/stderr on their own threads so a chatty child cannot
    // block; a hung child is killed after the deadline and fails below.
    let deadline = t0 + Duration::from_secs(20);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out, t0.elapsed())
}

/// A copy of the "modern" /proc fixture that the test may vandalise.
fn modern_copy() -> tempfile::TempDir {
    common::fixture_copy("proc/modern")
}

fn replace_with_zero(path: &Path) {
    std::fs::remove_file(path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
}

fn assert_exit2_naming(o: &Output, took: Duration, path: &Path) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "took {took:?}, stderr: {err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        err.contains(&path.display().to_string()) && err.contains("larger than"),
        "{err}"
    );
}

#[test]
fn proc_stat_on_dev_zero_exits_2_quickly() {
    let d = modern_copy();
    let stat = d.path().join("proc/stat");
    replace_with_zero(&stat);
    let root = d.path().to_str().unwrap();
    let (o, took) = nettop(&["--sysroot", root, "--no-bpf", "-b", "-n", "2", "-d", "0.1"]);
    assert_exit2_naming(&o, took, &stat);
}

#[test]
fn task_stat_on_dev_zero_exits_2_naming_it() {
    let d = modern_copy();
    let stat = d.path().join("proc/100/task/100/stat");
    replace_with_zero(&stat);
    let root = d.path().to_str().unwrap();
    let (o, took) = nettop(&["--sysroot", root, "--no-bpf", "-b", "-n", "2", "-d", "0.1"]);
    assert_exit2_naming(&o, took, &stat);
}

/// A FIFO without a writer used to block the open forever.
#[test]
fn fifo_does_not_hang() {
    let d = modern_copy();
    // config.gz is streamed through a decompressor, stat read whole.
    for f in ["proc/config.gz", "proc/stat"] {
        let p = d.path().join(f);
        std::fs::remove_file(&p).unwrap();
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }
    let root = d.path().to_str().unwrap();
    let (o, took) = nettop(&["--sysroot", root, "--no-bpf", "-b", "-n", "2", "-d", "0.1"]);
    // An empty /proc/stat has no CPU lines: the frame is empty but the run
    // ends; what matters is that it returns at all.
    assert!(o.status.code().is_some(), "killed after {took:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn hwloc_xml_on_dev_zero_says_not_a_file_not_missing() {
    let (o, took) = nettop(&[
        "--pinning-check",
        "--sysroot",
        "tests/fixtures/machines/clean",
        "--hwloc-xml",
        "/dev/zero",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // A device is refused as not a regular file before anything is read.
    assert!(
        err.contains("/dev/zero") && err.contains("not a regular file"),
        "{err}"
    );
    assert!(!err.contains("no such file"), "{err}");
}

/// An optional file (IRQ placement) that is too large becomes a note that
/// says why; the check still runs.
#[test]
fn interrupts_on_dev_zero_is_a_note() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines/clean");
    let d = tempfile::tempdir().unwrap();
    let st = Command::new("cp")
        .arg("-a")
        .arg(src.join("."))
        .arg(d.path())
        .status()
        .unwrap();
    assert!(st.success());
    replace_with_zero(&d.path().join("proc/interrupts"));
    let (o, took) = nettop(&[
        "--pinning-check",
        "--sysroot",
        d.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        out.contains("/proc/interrupts unreadable (larger than"),
        "{out}"
    );
}

#[test]
fn replay_of_dev_zero_exits_2() {
    let (o, took) = nettop(&["--pinning-check", "--replay", "/dev/zero"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        err.contains("/dev/zero is a character device, not a regular file"),
        "{err}"
    );
}
