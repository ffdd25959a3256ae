//! The real binary: exit codes 0/1/2, --fail-on, --replay of a saved
//! topology, and clear errors naming the bad file.

use std::process::{Command, Output};

use nettop::pinning::{self, Evidence};
use nettop::sys::sysroot::Sysroot;
use nettop::topology::{self, LoadOptions};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nettop"))
        .arg("--pinning-check")
        .args(args)
        .output()
        .unwrap()
}

const M: &str = "tests/fixtures/machines";

#[test]
fn exit_codes() {
    let o = run(&["--sysroot", &format!("{M}/clean")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no findings"));
    assert_eq!(
        run(&["--sysroot", &format!("{M}/two_socket")])
            .status
            .code(),
        Some(1)
    );
    // two_socket has warnings but no error.
    assert_eq!(
        run(&[
            "--sysroot",
            &format!("{M}/two_socket"),
            "--fail-on",
            "error"
        ])
        .status
        .code(),
        Some(0)
    );
    assert_eq!(
        run(&["--sysroot", &format!("{M}/container"), "--fail-on", "error"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        run(&["--sysroot", &format!("{M}/isolcpus"), "--fail-on", "never"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn could_not_check_exits_2_naming_the_file() {
    let o = run(&[
        "--sysroot",
        &format!("{M}/clean"),
        "--hwloc-xml",
        "/nonexistent/topo.xml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/topo.xml"));

    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("sys/devices/system/cpu")).unwrap();
    std::fs::write(d.path().join("sys/devices/system/cpu/online"), "0-x\n").unwrap();
    std::fs::write(d.path().join("hwloc.synthetic"), "pack:1 core:2 pu:1\n").unwrap();
    let o = run(&["--sysroot", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("sys/devices/system/cpu/online"), "{err}");

    let o = run(&[
        "--sysroot",
        &format!("{M}/clean"),
        "--hwloc-synthetic",
        "bogus:7",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bogus:7"));

    // A fake root without any CPU description is refused, not guessed.
    let e = tempfile::tempdir().unwrap();
    let o = run(&["--sysroot", e.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn replay_lints_a_saved_topology() {
    let topo = topology::load(&LoadOptions::new(
        Sysroot::new(format!("{M}/isolcpus")),
        None,
        None,
    ))
    .unwrap();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), serde_json::to_string(&topo).unwrap()).unwrap();
    let o = run(&["--replay", f.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let got: pinning::Report = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got, pinning::check(&topo, &Evidence::default()));

    std::fs::write(f.path(), "{not json").unwrap();
    let o = run(&["--replay", f.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("neither a nettop recording nor a saved topology")
    );
}

#[test]
fn live_machine_check_runs() {
    // Whatever this machine's configuration, the check must complete and
    // emit a valid versioned report (exit 0 or 1, never 2).
    let o = run(&["--format", "json", "--fail-on", "never"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "nettop.pinning/1");
    assert!(v["summary"]["threads"].as_u64().unwrap() > 0);
}
