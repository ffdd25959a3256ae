//! cgroup attribution on the /proc path (`--no-bpf --sysroot`), on a copy
//! of the "modern" fixture given a hybrid cgroup layout: a docker
//! container known to cgroup v1 only (its v2 path is the root), and a
//! Kubernetes pod's container in v2 whose cpuset lives in v1. Then the
//! cgroup table's trip through a recording, and an old recording without
//! one.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::run::{nettop, output_within};
use nettop::model::compute;
use nettop::record::{Recording, synth};

const DOCKER: &str = "4f1c3b5e0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c";
const CTR: &str = "aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeee0000";
const UID: &str = "0f9a5c2e-7d1b-4a3c-9e8f-1a2b3c4d5e6f";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn hybrid_tree() -> tempfile::TempDir {
    let dst = common::fixture_copy("proc/modern");
    let r = dst.path();
    // The fixture's proc/self is a placeholder file.
    let _ = std::fs::remove_file(r.join("proc/self"));
    write(
        r,
        "/proc/self/mountinfo",
        "30 25 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n\
         31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
         35 30 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n",
    );
    write(r, "/sys/fs/cgroup/unified/cgroup.controllers", "\n");
    // systemd (pid 1): docker's cgroupfs driver, v1 only.
    write(
        r,
        "/proc/1/cgroup",
        &format!("4:memory:/docker/{DOCKER}\n3:cpuset:/docker/{DOCKER}\n0::/\n"),
    );
    write(
        r,
        &format!("/sys/fs/cgroup/cpuset/docker/{DOCKER}/cpuset.effective_cpus"),
        "1\n",
    );
    // pid 100: a burstable pod's container, v2, cpuset in v1.
    let pod = format!(
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{CTR}.scope",
        UID.replace('-', "_")
    );
    write(
        r,
        "/proc/100/cgroup",
        &format!("3:cpuset:/kubepods/burstable/pod{UID}/{CTR}\n0::{pod}\n"),
    );
    write(
        r,
        &format!("/sys/fs/cgroup/cpuset/kubepods/burstable/pod{UID}/{CTR}/cpuset.effective_cpus"),
        "0\n",
    );
    dst
}

fn row<'a>(f: &'a serde_json::Value, name_part: &str) -> &'a serde_json::Value {
    f["cgroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().contains(name_part))
        .unwrap_or_else(|| panic!("no cgroup named *{name_part}*: {f:#}"))
}

#[test]
fn proc_path_names_pods_and_containers_with_their_cpusets() {
    let tree = hybrid_tree();
    let out = output_within(
        nettop()
            .args(["--no-bpf", "--sysroot"])
            .arg(tree.path())
            .args(["-b", "--json", "--group", "cgroup", "-n", "1", "-d", "0.1"]),
        Duration::from_secs(30),
        "nettop --group cgroup on a fixture",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(f["processes"].as_array().is_none_or(|p| p.is_empty()));

    let d = row(&f, "docker:4f1c3b5e0d9a");
    assert_eq!(d["path"], format!("/docker/{DOCKER}"));
    assert_eq!(d["v1"], true);
    assert_eq!(d["identity"]["container_id"], DOCKER);
    assert_eq!(d["cpus"], "1");
    assert_eq!(d["processes"], 1);

    let k = row(&f, "pod:0f9a5c2e/containerd:aaaaaaaaaaaa");
    assert!(k["path"].as_str().unwrap().starts_with("/kubepods.slice/"));
    assert!(k.get("v1").is_none(), "a v2 path: {k:#}");
    assert_eq!(k["identity"]["pod_uid"], UID);
    assert_eq!(k["identity"]["qos"], "burstable");
    assert_eq!(k["identity"]["runtime"], "containerd");
    assert_eq!(k["cpus"], "0");

    // Kernel threads are in the root cgroup: never read, never named.
    let known: u64 = f["cgroups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] != 0)
        .map(|c| c["processes"].as_u64().unwrap())
        .sum();
    assert_eq!(known, 2);

    // Text: one line per cgroup, with the path.
    let out = output_within(
        nettop()
            .args(["--no-bpf", "--sysroot"])
            .arg(tree.path())
            .args(["-b", "--group", "cgroup", "-n", "1", "-d", "0.1"]),
        Duration::from_secs(30),
        "nettop --group cgroup text",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("CGROUP "), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("docker:4f1c3b5e0d9a"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with(&format!("/docker/{DOCKER}")), "{line}");
    assert!(!text.contains("COMMAND"), "no task table: {text}");
}

#[test]
fn recordings_carry_the_cgroup_table_and_old_ones_replay_without() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cg.rec.zst");
    synth::write_recording(
        &p,
        true,
        2,
        (1..=2).map(|k| synth::sample_with_cgroups(k, 40, 2, 5)),
    )
    .unwrap();
    let rec = Recording::open(&p).unwrap();
    let (a, b) = (rec.get(0).unwrap(), rec.get(1).unwrap());
    assert_eq!(b.cgroups.len(), 5);
    let f = compute(rec.host(), &a, &b);
    assert_eq!(f.cgroups.len(), 5);
    let names: Vec<&str> = f.cgroups.iter().map(|c| c.name.as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("pod:")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".service")), "{names:?}");
    // The same frame from the live samples: the recording lost nothing.
    let live = compute(
        rec.host(),
        &synth::sample_with_cgroups(1, 40, 2, 5),
        &synth::sample_with_cgroups(2, 40, 2, 5),
    );
    assert_eq!(live.cgroups, f.cgroups);

    // A version-1 recording from before the table: frames, no roll-up.
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1.rec");
    let out = output_within(
        nettop()
            .args(["--replay"])
            .arg(&golden)
            .args(["-b", "--group", "cgroup"]),
        Duration::from_secs(30),
        "replaying the golden recording grouped",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(no cgroup information in this frame)"),
        "{text}"
    );
}
