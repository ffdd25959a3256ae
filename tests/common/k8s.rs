//! The Kubernetes packaging as the tests use it: the chart rendered by
//! helm, decoded strictly by packaging/k8s/validate (Go, the real API
//! types), the DaemonSet's container as that validator prints it, and
//! that container run under podman as the kubelet would run it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub const CHART: &str = "packaging/k8s/chart/nettop";
pub const VALIDATE: &str = "packaging/k8s/validate";
/// A Kubernetes version the chart supports (its kubeVersion), for
/// `helm template`, which has no cluster to ask.
pub const KUBE_VERSION: &str = "1.33.0";

/// helm: on PATH, else where `go install` puts it (scripts/deps.sh).
pub fn helm() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(home.map(|h| h.join("go/bin")));
    candidates
        .map(|d| d.join("helm"))
        .find(|p| p.is_file() && super::tool_runs(p.to_str().unwrap_or("helm"), "version"))
}

/// go: on PATH, else the official tarball's place.
pub fn go() -> Option<PathBuf> {
    ["go", "/usr/local/go/bin/go"]
        .iter()
        .find(|g| super::tool_runs(g, "version"))
        .map(PathBuf::from)
}

/// Why the Kubernetes tools are missing, if they are.
pub fn tools_missing() -> Option<String> {
    match (helm(), go()) {
        (Some(_), Some(_)) => None,
        (h, g) => Some(format!(
            "needs helm ({}) and go ({}); scripts/deps.sh installs both",
            if h.is_some() { "found" } else { "missing" },
            if g.is_some() { "found" } else { "missing" },
        )),
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = super::run::output_within(cmd, Duration::from_secs(900), what);
    if out.status.success() {
        Ok(super::run::stdout(&out))
    } else {
        Err(format!(
            "{what}: {}\n{}{}",
            out.status,
            super::run::stdout(&out),
            super::run::stderr(&out)
        ))
    }
}

/// `helm template` of the chart in namespace nettop with `sets`
/// (`key=value`) and optional extra arguments.
pub fn render(sets: &[&str], extra: &[&str]) -> Result<String, String> {
    let helm = helm().ok_or("no helm")?;
    let mut cmd = Command::new(helm);
    cmd.args(["template", "nettop"]).arg(repo(CHART)).args([
        "--namespace",
        "nettop",
        "--kube-version",
        KUBE_VERSION,
    ]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd.args(extra);
    run(&mut cmd, "helm template")
}

/// Runs the strict validator on `manifests`; `container`: with
/// `-container`, whose JSON is returned.
pub fn validate(manifests: &str, container: bool) -> Result<String, String> {
    let go = go().ok_or("no go")?;
    let mut cmd = Command::new(go);
    cmd.arg("run").arg(".");
    if container {
        cmd.arg("-container");
    }
    cmd.current_dir(repo(VALIDATE))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("go run: {e}"))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        stdin
            .write_all(manifests.as_bytes())
            .map_err(|e| format!("writing to the validator: {e}"))?;
    }
    let out = super::run::wait_output(child, Duration::from_secs(900), "validate");
    if out.status.success() {
        Ok(super::run::stdout(&out))
    } else {
        Err(super::run::stderr(&out))
    }
}

/// The DaemonSet's container of a rendering, as the validator prints it.
pub fn container(manifests: &str) -> Result<Value, String> {
    let text = validate(manifests, true)?;
    serde_json::from_str(&text).map_err(|e| format!("validator output: {e}: {text}"))
}

// ------------------------------------------------------------ podman

/// Prefix of every container, image tag and cgroup of these tests, then
/// the test process's PID: leftovers of a killed run are found by it.
pub const PREFIX: &str = "nettop-k8s-";
pub const IMAGE: &str = "localhost/nettop-k8s-test";

pub fn podman(args: &[&str]) -> Output {
    super::run::output_within(
        Command::new("podman").args(args),
        Duration::from_secs(300),
        &format!("podman {}", args.first().unwrap_or(&"")),
    )
}

pub fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        super::run::stdout(out),
        super::run::stderr(out)
    );
    super::run::stdout(out)
}

pub fn pid_alive(pid: &str) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Everything the test made, removed on drop (and on panic).
#[derive(Default)]
pub struct Scene {
    pub containers: Vec<String>,
    pub image: Option<String>,
    /// Deepest first.
    pub cgroups: Vec<PathBuf>,
    pub children: Vec<Child>,
    pub dir: Option<tempfile::TempDir>,
}

impl Drop for Scene {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = Command::new("podman")
                .args(["rm", "-f", "-t", "0", c])
                .output();
        }
        if let Some(i) = &self.image {
            let _ = Command::new("podman").args(["rmi", "-f", i]).output();
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for d in &self.cgroups {
            remove_cgroup(d);
        }
    }
}

/// Empties a cgroup of this test (its processes are killed first) and
/// removes it.
pub fn remove_cgroup(dir: &Path) {
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            for p in procs
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                // SAFETY: kill(2) on a process in this test's own cgroup.
                unsafe {
                    libc::kill(p, libc::SIGKILL);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Containers, images and cgroups of runs whose test process is gone.
pub fn remove_stale(v2: Option<&Path>) {
    if let Ok(o) = Command::new("podman")
        .args(["ps", "-a", "--format", "{{.Names}}"])
        .output()
    {
        for name in String::from_utf8_lossy(&o.stdout).lines() {
            let Some(rest) = name.strip_prefix(PREFIX) else {
                continue;
            };
            let pid = rest.split('-').next().unwrap_or("");
            if !pid_alive(pid) {
                let _ = Command::new("podman")
                    .args(["rm", "-f", "-t", "0", name])
                    .output();
            }
        }
    }
    if let Ok(o) = Command::new("podman")
        .args(["images", "--format", "{{.Repository}}:{{.Tag}}", IMAGE])
        .output()
    {
        for img in String::from_utf8_lossy(&o.stdout).lines() {
            let pid = img.rsplit(':').next().unwrap_or("");
            if !pid_alive(pid) {
                let _ = Command::new("podman").args(["rmi", "-f", img]).output();
            }
        }
    }
    let Some(v2) = v2 else { return };
    for e in std::fs::read_dir(v2).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix(PREFIX)
            && !pid_alive(pid)
        {
            let mut dirs: Vec<PathBuf> = walk(&e.path());
            dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            for d in dirs {
                remove_cgroup(&d);
            }
        }
    }
}

pub fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = vec![d.to_path_buf()];
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// Mount points at or below `dir` in this mount namespace (a hostPath
/// with mounts under it, like /sys/fs/cgroup on a hybrid host).
pub fn submounts(dir: &str) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut v: Vec<String> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&format!("{dir}/")))
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// `$(VAR)` in an argument, expanded from the container's environment as
/// the kubelet does.
pub fn expand(arg: &str, env: &[(String, String)]) -> String {
    let mut s = arg.to_string();
    for (k, v) in env {
        s = s.replace(&format!("$({k})"), v);
    }
    s
}

/// The limits runc sets must not exceed this process's (no
/// CAP_SYS_RESOURCE in the VM's root).
pub fn ulimits() -> Vec<String> {
    let lim = |r| {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit(2) fills the struct it is given.
        unsafe { libc::getrlimit(r, &mut l) };
        l.rlim_cur.min(l.rlim_max)
    };
    let nofile = lim(libc::RLIMIT_NOFILE).min(65_536);
    let nproc = lim(libc::RLIMIT_NPROC).min(4096);
    vec![
        format!("--ulimit=nofile={nofile}:{nofile}"),
        format!("--ulimit=nproc={nproc}:{nproc}"),
    ]
}

/// `podman run` flags for the validator's container: what the kubelet
/// would ask of the runtime. `hostpaths` maps a hostPath to the
/// directory standing in for it. `without`: a capability to leave out.
pub fn run_flags(
    c: &Value,
    env: &[(String, String)],
    hostpaths: &[(&str, PathBuf)],
    without: Option<&str>,
) -> Vec<String> {
    let mut f: Vec<String> = vec!["--runtime=runc".into(), "--cgroupns=private".into()];
    f.extend(ulimits());
    let flag = |on: bool, s: &str| on.then(|| s.to_string());
    f.extend(flag(c["hostPID"] == true, "--pid=host"));
    // hostNetwork shares the node's UTS namespace too.
    if c["hostNetwork"] == true {
        f.extend(["--network=host".into(), "--uts=host".into()]);
    }
    f.extend(flag(c["hostIPC"] == true, "--ipc=host"));
    f.extend(flag(c["privileged"] == true, "--privileged"));
    f.extend(flag(
        c["allowPrivilegeEscalation"] == false,
        "--security-opt=no-new-privileges",
    ));
    if c["readOnlyRootFilesystem"] == true {
        // Kubernetes adds no tmpfs of its own on a read-only root.
        f.extend(["--read-only".into(), "--read-only-tmpfs=false".into()]);
    }
    f.push(format!("--user={}:{}", c["runAsUser"], c["runAsGroup"]));
    for d in c["capDrop"].as_array().unwrap() {
        f.push(format!("--cap-drop={}", d.as_str().unwrap()));
    }
    for a in c["capAdd"].as_array().unwrap() {
        let a = a.as_str().unwrap();
        if Some(a) != without {
            f.push(format!("--cap-add={a}"));
        }
    }
    match c["seccompType"].as_str().unwrap() {
        // The kubelet's seccomp directory is the repository's here.
        "Localhost" => f.push(format!(
            "--security-opt=seccomp={}",
            repo("packaging/k8s/seccomp")
                .join(c["seccompLocalhostProfile"].as_str().unwrap())
                .display()
        )),
        "RuntimeDefault" => {}
        other => panic!("seccomp profile type {other} is not least privilege"),
    }
    for m in c["mounts"].as_array().unwrap() {
        let dst = m["mountPath"].as_str().unwrap();
        if let Some(src) = m["hostPath"].as_str() {
            let local = hostpaths
                .iter()
                .find(|(h, _)| *h == src)
                .map_or(PathBuf::from(src), |(_, p)| p.clone());
            let ro = m["readOnly"] == true;
            f.push(format!(
                "--volume={}:{dst}:{}",
                local.display(),
                if ro { "ro" } else { "rw" }
            ));
            // recursiveReadOnly: each mount under the path read-only too
            // (podman's own ro binds only the top one).
            if ro && m["recursiveReadOnly"].is_string() {
                for sub in submounts(src) {
                    let rel = &sub[src.len()..];
                    f.push(format!("--volume={sub}:{dst}{rel}:ro"));
                }
            }
        } else {
            let size = m["emptyDirSizeLimit"].as_str().unwrap_or("1Mi");
            let size = size.replace("Mi", "m").replace("Ki", "k");
            assert_eq!(m["emptyDirMedium"], "Memory", "{m}");
            f.push(format!("--tmpfs={dst}:rw,size={size}"));
        }
    }
    for (k, v) in env {
        f.push(format!("--env={k}={v}"));
    }
    f
}
