//! Helpers shared by integration tests; each test binary uses a subset.
#![allow(dead_code)]

pub mod calibration;
pub mod cgroups;
pub mod k8s;
pub mod mount;
pub mod netns;
pub mod parked;
pub mod plan_scene;
pub mod prom;
pub mod readme;
pub mod run;
pub mod screen;
#[macro_use]
pub mod tier;
pub mod tmux;
pub mod udp;
pub mod victim;
pub mod xdp_pass;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Env var that turns every "cannot run here" skip into a failure (CI).
pub const REQUIRE_ENV: &str = "NETTOP_REQUIRE_BPF";

/// True when the environment demands that privileged tests really run.
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// Reports a test that cannot run here: a loud `SKIPPED:` line on the real
/// stderr (not swallowed by the test harness's capture), or a panic when
/// [`REQUIRE_ENV`]=1.
pub fn skip(test: &str, reason: &str) {
    if required() {
        panic!("{test}: {REQUIRE_ENV}=1 but the test cannot run: {reason}");
    }
    if let Ok(mut s) = SKIPPED.lock() {
        s.push((test.to_string(), reason.to_string()));
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED: {test}: {reason} (set {REQUIRE_ENV}=1 to make this a failure)\n"
    );
}

/// Tests that found out only while running that the machine cannot run
/// them (a loop device refused, BPF failing to load): the tier's summary
/// counts them as not run, beside those whose needs were missing.
static SKIPPED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// What [`skip`] recorded so far: (test, reason).
#[allow(dead_code)]
pub fn runtime_skips() -> Vec<(String, String)> {
    SKIPPED.lock().map(|s| s.clone()).unwrap_or_default()
}

/// Writes to the real stderr, bypassing the harness's output capture, so
/// reports show up in CI logs of passing tests too.
pub fn report(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// True when `bin` can be run here: `bin arg` (e.g. `promtool --version`)
/// starts and exits successfully. Its output is discarded. Tests that need
/// an external tool check this first and [`skip`] when it is false.
pub fn tool_runs(bin: &str, arg: &str) -> bool {
    Command::new(bin)
        .arg(arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when running as root (euid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments, cannot fail, touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// The calibration cache every test's nettop uses (via `NETTOP_CACHE_DIR`),
/// never the real /var/cache/nettop. Shared by all test binaries of one
/// target directory, so one calibration serves them all.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nettop-cache")
}

/// A private copy of a fixture tree under tests/fixtures (e.g.
/// `proc/modern`), which the test may vandalise.
pub fn fixture_copy(rel: &str) -> tempfile::TempDir {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    let dst = tempfile::tempdir().expect("tempdir");
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(src.join("."))
        .arg(dst.path())
        .status()
        .expect("cp");
    assert!(st.success(), "copying fixture {rel}");
    dst
}

/// The calling thread's TID.
pub fn gettid() -> u32 {
    // SAFETY: gettid(2) takes no arguments and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Pins the calling thread to `cpu` (panics if the kernel refuses: every
/// caller needs the pinning to mean anything).
pub fn pin_self(cpu: usize) {
    // SAFETY: cpu_set_t is plain bits; zeroed is the empty set; CPU_SET
    // writes one bit below its size; sched_setaffinity reads
    // `size_of::<cpu_set_t>()` bytes of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "sched_setaffinity to CPU {cpu}"
        );
    }
}

/// The topology of fixture machine `name` (tests/fixtures/machines, made
/// by make_fixtures.py), read through its sysroot as nettop reads a host.
pub fn machine(name: &str) -> nettop::topology::HostTopology {
    nettop::topology::load(&nettop::topology::LoadOptions::new(
        nettop::sys::sysroot::Sysroot::new(format!("tests/fixtures/machines/{name}")),
        None,
        None,
    ))
    .unwrap()
}
