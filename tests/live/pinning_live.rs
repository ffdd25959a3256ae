//! Live check on this machine: a veth pair between two network namespaces,
//! RPS on the receiving end steered to CPU 1, a process pinned to CPU 1.
//! The real binary, run inside the receiving namespace (a veth is only
//! visible in /sys/class/net of its own namespace; /proc still shows every
//! process), must name that process and CPU; with RPS cleared it must not.
//! Needs root and `ip`; prints SKIPPED otherwise, fails under
//! NETTOP_REQUIRE_BPF=1.

use crate::common;
use crate::common::tier::Need;

use std::process::{Child, Command};

use common::netns::pinning_report_in;

fn skip(reason: &str) {
    common::skip("pinning live test", reason);
}

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Deletes the namespaces (and with them the veth pair) and kills the
/// pinned child, whatever happened in between.
struct Guard {
    ns: Vec<String>,
    child: Option<Child>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn findings_for(report: &serde_json::Value, tid: u32) -> Vec<serde_json::Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["threads"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["tid"] == tid)
        })
        .cloned()
        .collect()
}

case!(
    rps_onto_a_pinned_cpu_is_reported_and_clearing_it_is_clean,
    [Need::Bpf, Need::Cpus(2)]
);
fn rps_onto_a_pinned_cpu_is_reported_and_clearing_it_is_clean() {
    if !common::is_root() {
        return skip("not root");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return skip("`ip` not installed");
    }
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if ncpu < 2 {
        return skip("needs at least 2 CPUs");
    }
    let id = std::process::id();
    let (nsa, nsb) = (format!("ntpin-a-{id}"), format!("ntpin-b-{id}"));
    let (va, vb) = (
        format!("ntpa{}", id % 100000),
        format!("ntpb{}", id % 100000),
    );
    let mut g = Guard {
        ns: Vec::new(),
        child: None,
    };
    for n in [&nsa, &nsb] {
        if let Err(e) = sh(&["ip", "netns", "add", n]) {
            return skip(&e);
        }
        g.ns.push(n.clone());
    }
    sh(&[
        "ip", "link", "add", &va, "netns", &nsa, "type", "veth", "peer", "name", &vb, "netns", &nsb,
    ])
    .unwrap();
    sh(&["ip", "-n", &nsa, "link", "set", &va, "up"]).unwrap();
    sh(&["ip", "-n", &nsb, "link", "set", &vb, "up"]).unwrap();
    let rps = format!("/sys/class/net/{vb}/queues/rx-0/rps_cpus");
    sh(&[
        "ip",
        "netns",
        "exec",
        &nsb,
        "sh",
        "-c",
        &format!("echo 2 > {rps}"),
    ])
    .unwrap();

    g.child = Some(
        Command::new("taskset")
            .args(["-c", "1", "sleep", "30"])
            .spawn()
            .unwrap(),
    );
    let victim = g.child.as_ref().unwrap().id();
    // taskset sets the affinity, then execs sleep: wait for the exec.
    for _ in 0..100 {
        let comm = std::fs::read_to_string(format!("/proc/{victim}/comm")).unwrap_or_default();
        if comm.trim() == "sleep" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }

    let r = pinning_report_in(&nsb);
    assert_eq!(r["schema"], "nettop.pinning/1");
    let f = findings_for(&r, victim);
    let rps_f: Vec<_> = f.iter().filter(|f| f["rule"] == "NT003").collect();
    assert_eq!(rps_f.len(), 1, "expected NT003 for pid {victim}: {r:#}");
    assert_eq!(rps_f[0]["cpus"], "1");
    assert_eq!(rps_f[0]["nics"][0], vb.as_str());
    assert!(
        rps_f[0]["fix"][0]
            .as_str()
            .unwrap()
            .contains(&format!("{vb}/queues/rx-0/rps_cpus")),
        "{rps_f:?}"
    );

    // Record the misconfigured host, then fix it: the recording must still
    // be linted as recorded (the evidence that survives the incident).
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("pin.zst");
    let out = Command::new("ip")
        .args(["netns", "exec", &nsb, env!("CARGO_BIN_EXE_nettop")])
        .args([
            "--record",
            rec.to_str().unwrap(),
            "--no-bpf",
            "-d",
            "0.2",
            "-n",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nettop --record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    sh(&[
        "ip",
        "netns",
        "exec",
        &nsb,
        "sh",
        "-c",
        &format!("echo 0 > {rps}"),
    ])
    .unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_nettop"))
        .args(["--pinning-check", "--format", "json", "--replay"])
        .arg(&rec)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "replayed lint should fail on the recorded warning: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = findings_for(&replayed, victim);
    assert!(
        f.iter().any(|f| f["rule"] == "NT003" && f["cpus"] == "1"),
        "recording lost the RPS finding: {replayed:#}"
    );

    let r = pinning_report_in(&nsb);
    // Only RPS is cleared: nettop also sees the host's namespace from
    // here, and a host NIC's IRQ may really land on CPU 1 (NT002 is then a
    // true finding about this CPU, not about the veth).
    let rps_left: Vec<_> = findings_for(&r, victim)
        .into_iter()
        .filter(|f| f["rule"] == "NT003")
        .collect();
    assert!(
        rps_left.is_empty(),
        "clean RPS still reports pid {victim}: {r:#}"
    );
    let mentions_vb = r["findings"].as_array().unwrap().iter().any(|f| {
        f["nics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == vb.as_str())
    });
    assert!(!mentions_vb, "{r:#}");
}
