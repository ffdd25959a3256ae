//! Hostile flags and outputs (issue 10, items 7, 9, 14, 15): meaningless
//! combinations are errors, absurd numbers are clear errors, write errors
//! keep the documented exit codes, and the errors name the real cause.

use crate::common;
use crate::common::tier::Need;

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::run::{assert_clean_exit, nettop, output_within, stderr, stderr_within};
use nettop::record::synth;

const LIMIT: Duration = Duration::from_secs(30);
const FIXTURE: &str = "tests/fixtures/proc/modern";

fn valid_recording(p: &Path) {
    synth::write_recording(p, false, 2, (1..=3).map(|k| synth::sample(k, 3, 2))).unwrap();
}

/// Item 9: conflicting modes ran one and silently dropped the other.
#[test]
fn meaningless_combinations_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("in.rec");
    valid_recording(&rec);
    let r = rec.to_str().unwrap();
    let out_file = dir.path().join("out.rec");
    let o = out_file.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--record", o, "--replay", r],
        vec!["--serve", "127.0.0.1:0", "--pinning-check"],
        vec!["--pinning-check", "--record", o],
        vec!["--export", "json"],
        vec!["--export", "csv", "-b", "--replay", r],
        vec!["--replay", r, "-b", "--no-bpf"],
        vec!["--replay", r, "-b", "--sysroot", FIXTURE],
        vec!["--duration", "10s", "-b"],
        vec!["--max-size", "1G", "-b"],
        vec!["--format", "json", "-b"],
        vec!["--fail-on", "error", "-b"],
        vec!["--json", "--pinning-check"],
        vec!["--no-bpf", "--bpf-stats", "-b"],
        // The configuration file is the TUI's: modes that feed scripts
        // neither read nor skip it.
        vec!["--config", "x.toml", "-b"],
        vec!["--no-config", "--pinning-check"],
        vec!["--config", "x.toml", "--no-config"],
        vec![
            "--hwloc-xml",
            "x.xml",
            "--hwloc-synthetic",
            "pack:1 pu:2",
            "--pinning-check",
        ],
    ];
    for args in &cases {
        let out = output_within(nettop().args(args), LIMIT, &format!("{args:?}"));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?} was accepted: {err}");
        assert!(
            err.contains("cannot be used with")
                || err.contains("required arguments were not provided")
                || err.contains("requires"),
            "{args:?}: not a usage error: {err}"
        );
        assert!(!out_file.exists(), "{args:?} created {o}");
    }
}

/// Item 9: `--serve A --record f` never created `f`. Both now share one
/// loop (issue 13): the file gets every snapshot.
#[test]
fn serve_with_record_records() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.rec");
    let out = output_within(
        nettop().args([
            "--serve",
            "127.0.0.1:0",
            "--record",
            f.to_str().unwrap(),
            "--no-bpf",
            "-d",
            "0.1",
            "-n",
            "3",
        ]),
        LIMIT,
        "--serve --record",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let rec = nettop::record::Recording::open(&f).unwrap();
    assert_eq!(rec.len(), 3, "{err}");
}

/// Item 7: `--record f --duration 1e20` panicked in Duration::from_secs_f64.
#[test]
fn huge_duration_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.rec");
    for d in ["1e20", "1e20s", "inf", "NaN", "99999999999h"] {
        let out = output_within(
            nettop().args(["--record", f.to_str().unwrap(), "--no-bpf", "--duration", d]),
            LIMIT,
            "--duration",
        );
        assert_clean_exit(&out, d);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{d}: {err}");
        assert!(err.contains("--duration"), "{d}: {err}");
        assert!(!f.exists(), "{d}");
    }
}

/// Item 15: `--duration 1e-12` wrote an empty recording and exited 0.
#[test]
fn duration_shorter_than_an_interval_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.rec");
    let out = output_within(
        nettop().args([
            "--record",
            f.to_str().unwrap(),
            "--no-bpf",
            "--duration",
            "1e-12",
        ]),
        LIMIT,
        "--duration 1e-12",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--duration"), "{err}");
    assert!(!f.exists());
}

/// Item 15: `--max-size 1e300` said "must be at least 4K".
#[test]
fn huge_max_size_says_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.rec");
    let out = output_within(
        nettop().args([
            "--record",
            f.to_str().unwrap(),
            "--no-bpf",
            "--max-size",
            "1e300",
        ]),
        LIMIT,
        "--max-size 1e300",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("at least"), "{err}");
    assert!(err.contains("at most"), "{err}");
}

/// Item 15: `-b -n 0` printed nothing and exited 0, while `--record -n 0`
/// was an error. Both are usage errors now.
#[test]
fn zero_iterations_is_an_error_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.rec");
    for args in [
        vec!["-b", "-n", "0", "--no-bpf"],
        vec!["--record", f.to_str().unwrap(), "-n", "0", "--no-bpf"],
    ] {
        let out = output_within(nettop().args(&args), LIMIT, &format!("{args:?}"));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("-n"), "{args:?}: {err}");
    }
}

fn closed_pipe() -> OwnedFd {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2(2) writes.
    // O_CLOEXEC: a child spawned meanwhile by another test thread must not
    // inherit (and so keep open) the read end.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned by nobody
    // else; the read end is closed at once, the write end handed out.
    unsafe {
        drop(OwnedFd::from_raw_fd(fds[0]));
        OwnedFd::from_raw_fd(fds[1])
    }
}

/// Item 7: `--pinning-check` into a closed pipe or /dev/full panicked
/// ("failed printing to stdout", exit 101), breaking its 0/1/2 contract.
#[test]
fn pinning_check_write_errors_exit_2() {
    let clean = "tests/fixtures/machines/clean";
    let findings = "tests/fixtures/machines/two_socket";
    for root in [clean, findings] {
        for (what, out) in [
            ("closed pipe", Stdio::from(closed_pipe())),
            (
                "/dev/full",
                Stdio::from(
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open("/dev/full")
                        .unwrap(),
                ),
            ),
        ] {
            let o = stderr_within(
                nettop()
                    .args(["--pinning-check", "--sysroot", root])
                    .stdout(out),
                LIMIT,
                what,
            );
            assert_clean_exit(&o, what);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{root} into {what}: {err}");
            assert!(err.contains("stdout"), "{what}: {err}");
        }
    }
}

/// A copy of the binary under `name` in a directory `nobody` can enter.
fn binary_copy(dir: &Path, name: &std::ffi::OsStr) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join(name);
    std::fs::copy(env!("CARGO_BIN_EXE_nettop"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

case!(non_utf8_program_name_still_loads_bpf, [Need::Bpf]);
/// Item 14: started through a path with a non-UTF-8 byte, nettop (as root)
/// said "not allowed to load BPF": its own /proc/self/status was not UTF-8.
fn non_utf8_program_name_still_loads_bpf() {
    const T: &str = "non_utf8_program_name_still_loads_bpf";
    if !common::is_root() {
        common::skip(T, "needs root for BPF");
        return;
    }
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = binary_copy(dir.path(), std::ffi::OsStr::from_bytes(b"nt\xff\xfe"));
    let out = output_within(
        Command::new(&bin)
            .args(["-b", "-n", "1", "-d", "0.2"])
            .stdin(Stdio::null()),
        LIMIT,
        "non-UTF-8 program name",
    );
    let err = stderr(&out);
    assert!(!err.contains("not allowed"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

case!(
    bpf_stats_without_sys_admin_degrades,
    [Need::Bpf, Need::Tool("setpriv", "--version")]
);
/// Item 15: `--bpf-stats` with only CAP_BPF+CAP_PERFMON failed outright;
/// enabling run-time stats needs CAP_SYS_ADMIN, so it now degrades with a
/// warning and the collector runs.
fn bpf_stats_without_sys_admin_degrades() {
    const T: &str = "bpf_stats_without_sys_admin_degrades";
    if !common::is_root() {
        common::skip(T, "needs root to hand out CAP_BPF and CAP_PERFMON");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = binary_copy(dir.path(), std::ffi::OsStr::new("nettop"));
    let out = output_within(
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all,+bpf,+perfmon",
                "--ambient-caps=+bpf,+perfmon",
                "--",
            ])
            .arg(&bin)
            .args(["--bpf-stats", "-b", "-n", "1", "-d", "0.2", "--json"])
            .stdin(Stdio::null()),
        LIMIT,
        "--bpf-stats with CAP_BPF+CAP_PERFMON",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--bpf-stats") && err.contains("CAP_SYS_ADMIN"),
        "{err}"
    );
    let frame: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(frame["source"], "bpf", "{frame}");
}

/// The first error is the real one: a missing recording is named before the
/// missing terminal, `--json` alone points at `-b`, and `--serve -n 1`
/// serves one snapshot instead of asking for a mode it then refuses.
#[test]
fn errors_name_the_real_problem_first() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such.rec");
    let m = missing.to_str().unwrap();
    let out = output_within(nettop().args(["--replay", m]), LIMIT, "replay missing");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such.rec"), "{err}");
    assert!(!err.contains("terminal"), "{err}");

    let out = output_within(nettop().args(["--json"]), LIMIT, "--json alone");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nettop -b --json"), "{err}");

    let out = output_within(
        nettop().args(["--serve", "127.0.0.1:0", "-n", "1", "--no-bpf", "-d", "0.2"]),
        LIMIT,
        "--serve -n 1",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
