//! The container image under podman (runc), run with exactly what the
//! chart's DaemonSet renders: its capabilities, seccomp profile, read-only
//! root, user, host namespaces, mounts and environment, read from the
//! rendering by the strict validator (packaging/k8s/validate), never
//! written twice. Like a Kubernetes pod on a cgroup v2 node, it gets a
//! cgroup namespace of its own.
//!
//! One container serves metrics as the DaemonSet does; the test then
//! looks at it from the node (its capabilities, seccomp mode and mounts in
//! /proc), runs a second nettop in it as `kubectl exec` would (JSON, batch
//! text and the TUI on a terminal with no TERM), and has a real Prometheus
//! scrape it with the labels a PodMonitor attaches. A process in a
//! pod-like cgroup the test creates is named by the namespace and name
//! of a kubelet-style pod directory the test creates (the hostPath
//! /var/log/pods and /var/log/containers are served from those, as no
//! kubelet runs here). The same container without CAP_BPF, or without
//! CAP_PERFMON, must fail naming the missing one.
//!
//! Everything it makes (containers, the image, cgroups, processes,
//! directories) is removed on every way out, and leftovers of a killed run
//! by the next one.

use crate::common;
use crate::common::tier::Need;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::k8s::{
    self, IMAGE, PREFIX, Scene, expand, ok, podman, remove_stale, run_flags, submounts,
};
use nettop::sys::cgroup::Mounts;
use nettop::sys::sysroot::Sysroot;
use serde_json::Value;

const T: &str = "the_daemonset_container_runs_under_podman";
const NODE: &str = "k8s-test-node";
const POD_UID: &str = "5e1f0c2a-9b7d-4e3f-8a6b-0c1d2e3f4a5b";
const CONTAINER_ID: &str = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";

/// Waits for `f` to return `Some`, up to `limit`.
fn wait_for<R>(limit: Duration, mut f: impl FnMut() -> Option<R>) -> Option<R> {
    let t0 = Instant::now();
    loop {
        if let Some(r) = f() {
            return Some(r);
        }
        if t0.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn query(web: &str, q: &str) -> Option<Vec<Value>> {
    let (200, body) = common::prom::get(web, &format!("/api/v1/query?query={}", encode(q)))? else {
        return None;
    };
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"]
        .as_array()
        .cloned()
        .filter(|r| !r.is_empty())
}

/// Why this test cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !common::is_root() {
        return Some("needs root (podman, cgroups, BPF)".into());
    }
    for (tool, arg) in [
        ("podman", "--version"),
        ("buildah", "--version"),
        ("runc", "--version"),
    ] {
        if !common::tool_runs(tool, arg) {
            return Some(format!("{tool} is missing (scripts/deps.sh installs it)"));
        }
    }
    if !common::tool_runs("prometheus", "--version") {
        return Some("prometheus is missing".into());
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("no kernel BTF: the image's BPF collector cannot load".into());
    }
    k8s::tools_missing()
}

case!(
    the_daemonset_container_runs_under_podman,
    [
        Need::Root,
        Need::Tool("podman", "--version"),
        Need::Tool("buildah", "--version")
    ]
);
fn the_daemonset_container_runs_under_podman() {
    if let Some(why) = missing() {
        common::skip(T, &why);
        return;
    }
    let t0 = Instant::now();
    let me = std::process::id();
    let host_mounts = Mounts::detect(&Sysroot::default());
    let Some((v2_mount, _)) = host_mounts.v2.clone() else {
        common::skip(T, "no cgroup2 hierarchy to put a pod-like cgroup in");
        return;
    };
    let v2 = PathBuf::from(&v2_mount);
    remove_stale(Some(&v2));
    let mut scene = Scene::default();

    // The image, from the release build.
    let tag = format!("{IMAGE}:{me}");
    scene.image = Some(tag.clone());
    let out = common::run::output_within(
        Command::new("bash")
            .arg(k8s::repo("scripts/image.sh"))
            .args(["--tag", &tag]),
        Duration::from_secs(3600),
        "scripts/image.sh",
    );
    ok(&out, "scripts/image.sh");
    let built = t0.elapsed();
    let size: u64 = ok(
        &podman(&["image", "inspect", "--format", "{{.Size}}", &tag]),
        "podman image inspect",
    )
    .trim()
    .parse()
    .unwrap();
    assert!(size <= 40 << 20, "the image is {size} bytes, over 40 MiB");
    let labels: Value = serde_json::from_str(&ok(
        &podman(&["image", "inspect", "--format", "{{json .Labels}}", &tag]),
        "labels",
    ))
    .unwrap();
    for l in [
        "title", "version", "revision", "created", "source", "licenses",
    ] {
        let v = &labels[format!("org.opencontainers.image.{l}")];
        assert!(
            v.as_str().is_some_and(|v| !v.is_empty()),
            "label {l}: {labels}"
        );
    }

    // The DaemonSet's container, as the chart renders it for this image.
    let (port, spec) = rendered_container(
        me,
        &[
            "interval=1",
            // Every cgroup its own series: a busy host's top 50 by STOLEN%
            // would leave the idle pod in "other".
            "extraArgs={--top-cgroups,1000}",
        ],
    );
    assert_eq!(spec["image"], tag.as_str());
    // The downward API: the node's name, and the pod's IP, which under
    // hostNetwork is the node's (loopback stands in for it here).
    let env: Vec<(String, String)> = spec["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            let value = match e["fieldRef"].as_str() {
                Some("spec.nodeName") => NODE.to_string(),
                Some("status.podIP") => "127.0.0.1".to_string(),
                Some(other) => panic!("fieldRef {other}"),
                None => e["value"].as_str().unwrap_or("").to_string(),
            };
            (name, value)
        })
        .collect();

    // A kubelet-style node: the pod's log directory and container link,
    // and its cgroup with a process in it (run as nobody, for USER).
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods");
    let links = dir.path().join("containers");
    let pod_dir = pods.join(format!("shop_web-0_{POD_UID}/nginx"));
    std::fs::create_dir_all(&pod_dir).unwrap();
    std::fs::write(pod_dir.join("0.log"), "").unwrap();
    std::fs::create_dir_all(&links).unwrap();
    std::os::unix::fs::symlink(
        format!("/var/log/pods/shop_web-0_{POD_UID}/nginx/0.log"),
        links.join(format!("web-0_shop_nginx-{CONTAINER_ID}.log")),
    )
    .unwrap();
    scene.dir = Some(dir);
    let top = v2.join(format!("{PREFIX}{me}"));
    let cg = top.join(format!(
        "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/cri-containerd-{CONTAINER_ID}.scope",
        POD_UID.replace('-', "_")
    ));
    std::fs::create_dir_all(&cg).unwrap();
    let mut d = cg.clone();
    while d != v2 {
        scene.cgroups.push(d.clone());
        d = d.parent().unwrap().to_path_buf();
    }
    let sleeper = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sleep",
            "600",
        ])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let sleeper_pid = sleeper.id();
    scene.children.push(sleeper);
    std::fs::write(cg.join("cgroup.procs"), sleeper_pid.to_string()).unwrap();
    // A network namespace only a process holds, as a pod's: nettop, with
    // neither CAP_SYS_PTRACE nor CAP_SYS_ADMIN, can neither list nor read
    // it, and must say so rather than divide by part of the traffic.
    let netns_holder = Command::new("unshare")
        .args(["--net", "sleep", "600"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    scene.children.push(netns_holder);

    let hostpaths = [
        ("/var/log/pods", pods.clone()),
        ("/var/log/containers", links.clone()),
    ];
    let args: Vec<String> = strs(&spec["args"])
        .iter()
        .map(|a| expand(a, &env))
        .collect();
    let name = format!("{PREFIX}{me}-serve");
    scene.containers.push(name.clone());
    let mut run: Vec<String> = vec!["run".into(), "-d".into(), format!("--name={name}")];
    run.extend(run_flags(&spec, &env, &hostpaths, None));
    run.push(tag.clone());
    run.extend(args);
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    ok(&podman(&run), "podman run (the DaemonSet's container)");
    let target = format!("127.0.0.1:{port}");
    let served = wait_for(Duration::from_secs(120), || {
        common::prom::get(&target, "/metrics").filter(|(code, _)| *code == 200)
    });
    if served.is_none() {
        let logs = podman(&["logs", &name]);
        panic!(
            "the container never served /metrics on {target}:\n{}{}",
            common::run::stdout(&logs),
            common::run::stderr(&logs)
        );
    }

    // From the node: exactly two capabilities, seccomp filtering, no new
    // privileges, and every mount read-only but the cache.
    let pid = ok(
        &podman(&["inspect", "--format", "{{.State.Pid}}", &name]),
        "podman inspect",
    )
    .trim()
    .to_string();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let eff = u64::from_str_radix(&field("CapEff:"), 16).unwrap();
    assert_eq!(
        eff,
        (1 << 38) | (1 << 39),
        "CapEff {eff:x}: want CAP_PERFMON and CAP_BPF only"
    );
    assert_eq!(field("CapBnd:"), field("CapEff:"));
    assert_eq!(field("NoNewPrivs:"), "1");
    assert_eq!(field("Seccomp:"), "2", "not filtered by a seccomp profile");
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    let opts_of = |point: &str| -> Vec<String> {
        mountinfo
            .lines()
            .filter(|l| l.split(' ').nth(4) == Some(point))
            .map(|l| l.split(' ').nth(5).unwrap_or("").to_string())
            .collect()
    };
    let ro = |point: &str| {
        let o = opts_of(point);
        assert!(!o.is_empty(), "{point} is not mounted:\n{mountinfo}");
        // The last mount on a point is the one seen.
        assert!(
            o.last().unwrap().split(',').any(|x| x == "ro"),
            "{point} is writable ({o:?})"
        );
    };
    for p in [
        "/",
        "/sys",
        "/sys/fs/cgroup",
        "/var/log/pods",
        "/var/log/containers",
        "/etc/passwd",
    ] {
        ro(p);
    }
    for sub in submounts("/sys/fs/cgroup") {
        ro(&sub);
    }
    assert!(
        !mountinfo.contains(" debugfs ") && !mountinfo.contains("/sys/kernel/debug"),
        "debugfs in the container"
    );

    // kubectl exec: a second nettop in the same container.
    let exec = |args: &[&str]| -> String {
        let mut a = vec!["exec", name.as_str(), "nettop"];
        a.extend_from_slice(args);
        ok(&podman(&a), &format!("podman exec nettop {args:?}"))
    };
    let json = exec(&["-b", "-n", "3", "-d", "1", "--json"]);
    let frames: Vec<Value> = json
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let f = frames.last().expect("no JSON frame");
    assert_eq!(f["source"], "bpf", "not the BPF collector: {}", f["health"]);
    assert_eq!(f["node_name"], NODE);
    // The calibration the serving nettop measured at start, cached in
    // the in-memory volume on the read-only root, serves the second one.
    assert!(
        f["hidden_note"]
            .as_str()
            .is_some_and(|n| n.contains("cache /var/cache/nettop/calibration.json")),
        "{}",
        f["hidden_note"]
    );
    let own_host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(
        f["hostname"],
        own_host.trim(),
        "the node's hostname (hostNetwork)"
    );
    let cgroups = f["cgroups"].as_array().unwrap();
    let pod = cgroups
        .iter()
        .find(|c| c["identity"]["pod_uid"] == POD_UID)
        .unwrap_or_else(|| panic!("no cgroup of the pod: {cgroups:#?}"));
    assert_eq!(pod["identity"]["namespace"], "shop", "{pod}");
    assert_eq!(pod["identity"]["pod"], "web-0", "{pod}");
    assert_eq!(pod["identity"]["container"], "nginx", "{pod}");
    assert_eq!(pod["name"], "shop/web-0/nginx");
    assert!(
        pod["path"]
            .as_str()
            .unwrap()
            .starts_with(&format!("/{PREFIX}{me}/kubepods.slice/")),
        "the path as on the node, not /../..: {}",
        pod["path"]
    );
    let procs = f["processes"].as_array().unwrap();
    let sleeping = procs
        .iter()
        .find(|p| p["pid"] == sleeper_pid)
        .expect("the pod's process is not listed");
    assert_eq!(sleeping["cgroup_id"], pod["id"]);
    assert_eq!(sleeping["uid"], 65534);
    // The pod's namespace cannot be read: the host's figure per Gbit/s
    // is never a number then, and the health line says why.
    let notes: Vec<String> = strs(&f["health"]["notes"]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("CAP_SYS_PTRACE to find them")),
        "{notes:?}"
    );
    for fr in &frames {
        let s = &fr["summary"];
        assert!(s.get("net_rx_pct_per_gbps").is_none(), "{s}");
        if s.get("net_rx_ns_per_packet").is_some() {
            assert_eq!(
                s["net_rx_pct_per_gbps_unknown"]["cause"], "netns_denied",
                "{s}"
            );
        }
    }
    // Batch text: the node in the host line, the host's user names.
    let text = exec(&["-b", "-n", "2", "-d", "0.5", "-p", &sleeper_pid.to_string()]);
    assert!(
        text.contains(&format!("(node {NODE})")),
        "host line: {}",
        text.lines().next().unwrap_or("")
    );
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&sleeper_pid.to_string()))
        .unwrap_or_else(|| panic!("no row for {sleeper_pid}:\n{text}"));
    assert_eq!(row.split_whitespace().nth(1), Some("nobody"), "{row}");

    // A real Prometheus scrapes it with the labels a PodMonitor attaches
    // (honorLabels, as the chart's PodMonitor sets).
    let prom_dir = tempfile::tempdir().unwrap();
    let (_prom, web) = common::prom::start_prometheus(
        prom_dir.path(),
        &format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: nettop\n    honor_labels: true\n    \
             static_configs:\n      - targets: ['{target}']\n        labels:\n          namespace: nettop\n          \
             pod: nettop-abcde\n"
        ),
    );
    let info = wait_for(Duration::from_secs(90), || {
        query(
            &web,
            &format!("nettop_cgroup_info{{pod_uid=\"{POD_UID}\"}}"),
        )
    })
    .expect("Prometheus never scraped the pod's cgroup");
    let m = &info[0]["metric"];
    assert_eq!(
        (
            m["namespace"].as_str(),
            m["pod"].as_str(),
            m["container"].as_str()
        ),
        (Some("shop"), Some("web-0"), Some("nginx")),
        "{m}"
    );
    let host = query(&web, &format!("nettop_host_info{{node_name=\"{NODE}\"}}"))
        .expect("no nettop_host_info with the node's name");
    assert_eq!(host[0]["metric"]["source"], "bpf");
    // Series of no pod keep no pod label, not nettop's own.
    let up = query(&web, "up{job=\"nettop\"} == 1").expect("the target is not up");
    assert_eq!(up.len(), 1);
    let system = query(&web, "nettop_cgroup_info{pod_uid=\"\"}");
    if let Some(rows) = system {
        for r in rows {
            assert!(r["metric"].get("pod").is_none(), "{}", r["metric"]);
        }
    }

    // The TUI over `kubectl exec -it`, with no TERM: it draws, names the
    // node and gives the terminal back.
    if let Some(tmux) = common::tmux::Tmux::start(
        "k8s",
        &format!("podman exec -it -e TERM= {name} nettop"),
        160,
        40,
    ) {
        let screen = wait_for(Duration::from_secs(60), || {
            let s = tmux.screen();
            s.contains(&format!("(node {NODE})")).then_some(s)
        });
        assert!(screen.is_some(), "the TUI never drew:\n{}", tmux.screen());
        tmux.keys(&["q"]);
        // The terminal's mode is printed after the exit code: wait for it.
        let end = wait_for(Duration::from_secs(20), || {
            let s = tmux.screen();
            s.contains("TTY=").then_some(s)
        })
        .expect("the TUI did not quit");
        assert!(end.contains("EXIT=0"), "{end}");
        assert!(
            end.contains("TTY=icanon"),
            "the terminal is not given back: {end}"
        );
    } else {
        common::skip(T, "tmux is missing: the TUI part did not run");
    }

    // Without either capability the same container fails, naming it.
    for cap in strs(&spec["capAdd"]) {
        let mut run: Vec<String> = vec!["run".into(), "--rm".into()];
        run.push(format!("--name={PREFIX}{me}-no-{}", cap.to_lowercase()));
        scene
            .containers
            .push(format!("{PREFIX}{me}-no-{}", cap.to_lowercase()));
        run.extend(run_flags(&spec, &env, &hostpaths, Some(&cap)));
        run.extend([tag.clone(), "-b".into(), "-n".into(), "1".into()]);
        let run: Vec<&str> = run.iter().map(String::as_str).collect();
        let out = podman(&run);
        let err = common::run::stderr(&out);
        assert!(!out.status.success(), "ran without CAP_{cap}:\n{err}");
        assert!(
            err.contains(&format!("CAP_{cap} missing")),
            "without CAP_{cap}, the message does not name it:\n{err}"
        );
    }
    drop(scene);
    common::report(&format!(
        "k8s_image: image {:.1} MiB built in {:.0} s; whole test {:.0} s\n",
        size as f64 / 1048576.0,
        built.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    ));
}

/// The DaemonSet's container as the chart renders it for the image tagged
/// `me`, with `extra` values, on a free port: the port and the spec.
fn rendered_container(me: u32, extra: &[&str]) -> (String, Value) {
    let port = common::prom::free_addr()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let base = [
        format!("image.repository={IMAGE}"),
        format!("image.tag={me}"),
        format!("port={port}"),
        format!("listen=$(POD_IP):{port}"),
    ];
    let sets: Vec<&str> = base
        .iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
        .collect();
    let spec = k8s::container(&k8s::render(&sets, &[]).unwrap()).unwrap();
    (port, spec)
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// One pod's worth of a kubelet node: a pod cgroup with a sandbox and an
/// app container scope, a sleeping process in each, the pod's log
/// directory and the app container's link.
fn make_pod(top: &Path, pods: &Path, links: &Path, i: usize, scene: &mut Scene) {
    let uid = format!("{:08x}-0000-4000-8000-{:012x}", i, i * 7919);
    let pod = top.join(format!(
        "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice",
        uid.replace('-', "_")
    ));
    for (k, ctr) in ["pause", "app"].iter().enumerate() {
        let cid = format!("{:032x}{:032x}", i, k);
        let scope = pod.join(format!("cri-containerd-{cid}.scope"));
        std::fs::create_dir_all(&scope).unwrap();
        scene.cgroups.push(scope.clone());
        let child = Command::new("sleep")
            .arg("3600")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        std::fs::write(scope.join("cgroup.procs"), child.id().to_string()).unwrap();
        scene.children.push(child);
        if *ctr == "app" {
            let name = format!("app-{i}");
            std::fs::create_dir_all(pods.join(format!("bench_{name}_{uid}/app"))).unwrap();
            std::fs::write(links.join(format!("{name}_bench_app-{cid}.log")), "").unwrap();
        }
    }
    scene.cgroups.push(pod);
}

/// utime + stime of a process, seconds.
fn cpu_s(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<u64> = after
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // Fields 14 and 15 of stat, 12 and 13 after the state.
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0)) as f64 / tck
}

/// The memory the container's cgroup is charged now and at its peak
/// (RSS, page cache and kernel memory, BPF maps included: what a limit
/// applies to), bytes.
fn cgroup_memory(pid: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let read = |p: String| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    };
    for l in text.lines() {
        let mut it = l.splitn(3, ':');
        let (_, ctrl, path) = (it.next(), it.next().unwrap_or(""), it.next().unwrap_or(""));
        if ctrl.split(',').any(|c| c == "memory") {
            let d = format!("/sys/fs/cgroup/memory{path}");
            return (
                read(format!("{d}/memory.usage_in_bytes")),
                read(format!("{d}/memory.max_usage_in_bytes")),
            );
        }
    }
    (0, 0)
}

case!(
    daemonset_cost_at_100_and_1000_pods,
    [
        Need::Root,
        Need::Tool("podman", "--version"),
        Need::Tool("buildah", "--version")
    ],
    ignore = "benchmark: 1,000 pods' worth of cgroups and 2,000 processes"
);
/// nettop's cost as the DaemonSet runs it (the chart's defaults, the
/// image, scraped every 10 s as the PodMonitor does) on a node with 0,
/// 100 and 1,000 pods' worth of cgroups: the figures behind the chart's
/// resource requests and limits (BENCHMARKS.md, "On Kubernetes").
/// Run: `cargo test --release --test system -- --ignored --nocapture daemonset_cost`
fn daemonset_cost_at_100_and_1000_pods() {
    if let Some(why) = missing() {
        panic!("cannot run: {why}");
    }
    let me = std::process::id();
    let v2 = PathBuf::from(Mounts::detect(&Sysroot::default()).v2.unwrap().0);
    remove_stale(Some(&v2));
    let tag = format!("{IMAGE}:{me}");
    let mut image = Scene::default();
    image.image = Some(tag.clone());
    ok(
        &common::run::output_within(
            Command::new("bash")
                .arg(k8s::repo("scripts/image.sh"))
                .args(["--tag", &tag]),
            Duration::from_secs(3600),
            "scripts/image.sh",
        ),
        "scripts/image.sh",
    );
    let (port, spec) = rendered_container(me, &[]);
    let env: Vec<(String, String)> = vec![
        ("NODE_NAME".into(), NODE.into()),
        ("POD_IP".into(), "127.0.0.1".into()),
    ];
    let warm = Duration::from_secs(25);
    let window = Duration::from_secs(60);
    println!(
        "| pods (cgroups, processes) | CPU at start (first {} s) | CPU steady ({} s) | RSS | peak RSS | cgroup memory | cgroup peak |",
        warm.as_secs(),
        window.as_secs()
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for n in [0usize, 100, 1000] {
        let mut scene = Scene::default();
        let dir = tempfile::tempdir().unwrap();
        let (pods, links) = (dir.path().join("pods"), dir.path().join("containers"));
        std::fs::create_dir_all(&pods).unwrap();
        std::fs::create_dir_all(&links).unwrap();
        let top = v2.join(format!("{PREFIX}{me}"));
        std::fs::create_dir_all(&top).unwrap();
        for i in 0..n {
            make_pod(&top, &pods, &links, i, &mut scene);
        }
        // Deepest first, the top last.
        scene
            .cgroups
            .sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        scene.cgroups.dedup();
        for d in k8s::walk(&top) {
            if !scene.cgroups.contains(&d) {
                scene.cgroups.push(d);
            }
        }
        scene
            .cgroups
            .sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        scene.dir = Some(dir);
        let name = format!("{PREFIX}{me}-bench-{n}");
        scene.containers.push(name.clone());
        let hostpaths = [("/var/log/pods", pods), ("/var/log/containers", links)];
        let mut run: Vec<String> = vec!["run".into(), "-d".into(), format!("--name={name}")];
        run.extend(run_flags(&spec, &env, &hostpaths, None));
        run.push(tag.clone());
        run.extend(strs(&spec["args"]).iter().map(|a| expand(a, &env)));
        let run: Vec<&str> = run.iter().map(String::as_str).collect();
        ok(&podman(&run), "podman run");
        let pid = ok(
            &podman(&["inspect", "--format", "{{.State.Pid}}", &name]),
            "inspect",
        )
        .trim()
        .to_string();
        let target = format!("127.0.0.1:{port}");
        let t0 = Instant::now();
        let scrape = |until: Instant| {
            while Instant::now() < until {
                let _ = common::prom::get(&target, "/metrics");
                std::thread::sleep(Duration::from_secs(10).min(until - Instant::now()));
            }
        };
        scrape(t0 + warm);
        let start_cpu = cpu_s(&pid);
        scrape(Instant::now() + window);
        let steady = (cpu_s(&pid) - start_cpu) / window.as_secs_f64();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kb = |k: &str| -> f64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        let (mem, peak) = cgroup_memory(&pid);
        let mib = |b: u64| b as f64 / 1048576.0;
        println!(
            "| {n} ({}, {}) | {:.0} m | {:.1} m | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.1} MiB |",
            3 * n,
            2 * n,
            start_cpu / warm.as_secs_f64() * 1000.0,
            steady * 1000.0,
            kb("VmRSS:"),
            kb("VmHWM:"),
            mib(mem),
            mib(peak)
        );
        drop(scene);
    }
    drop(image);
}
