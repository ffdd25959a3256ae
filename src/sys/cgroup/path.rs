//! A cgroup path in, the names people know out: Kubernetes pod UID and QoS
//! class, container id and runtime, systemd unit and slice.
//!
//! On call the question is "which pod, which service", not "which PID": a
//! PID lives seconds, a path names the workload. Container runtimes and
//! systemd encode identity in the path in a handful of layouts, recognised
//! here without any I/O:
//!
//! - Kubernetes, systemd cgroup driver:
//!   `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope`
//!   (the UID's `-` become `_`; a guaranteed pod sits right under `kubepods.slice`);
//! - Kubernetes, cgroupfs driver: `/kubepods/burstable/pod<uid>/<id>`;
//! - docker: `/system.slice/docker-<id>.scope`, `/docker/<id>`; containerd
//!   `cri-containerd-<id>.scope`; cri-o `crio-<id>.scope` (`crio-conmon-` for
//!   its monitor); podman `libpod-<id>.scope`;
//! - systemd: `/system.slice/nginx.service`, `/user.slice/user-1000.slice/session-2.scope`;
//! - nested (docker in docker, systemd in a container): the innermost
//!   container, and the unit inside it.
//!
//! The same parser reads v1 paths (`/docker/<id>` in every controller).

use serde::{Deserialize, Serialize};

/// Kubernetes QoS class, as the kubelet names its cgroups.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Qos {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl Qos {
    pub fn as_str(self) -> &'static str {
        match self {
            Qos::Guaranteed => "guaranteed",
            Qos::Burstable => "burstable",
            Qos::BestEffort => "besteffort",
        }
    }
}

/// What a cgroup path says about its tasks. Every field is optional: a
/// path outside every known layout is just a path.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Identity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<Qos>,
    /// The innermost container's id (full, as the runtime prints it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// "docker", "containerd", "cri-o", "cri-o-conmon", "podman"; absent
    /// when the layout does not say (a bare id under `kubepods/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Innermost systemd unit that is not a container scope
    /// (`nginx.service`, `session-2.scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Innermost systemd slice (`system.slice`, `user-1000.slice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<String>,
}

/// Container scopes: systemd unit prefix → runtime.
const SCOPES: [(&str, &str); 6] = [
    ("cri-containerd-", "containerd"),
    ("crio-conmon-", "cri-o-conmon"),
    ("crio-", "cri-o"),
    ("docker-", "docker"),
    ("libpod-conmon-", "podman-conmon"),
    ("libpod-", "podman"),
];

/// Container ids are hex; runtimes use 64 digits, short forms exist.
fn is_container_id(s: &str) -> bool {
    (12..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `cri-containerd-<id>.scope` → (runtime, id).
fn container_scope(c: &str) -> Option<(&'static str, &str)> {
    let stem = c.strip_suffix(".scope")?;
    SCOPES.iter().find_map(|(prefix, rt)| {
        let id = stem.strip_prefix(prefix)?;
        is_container_id(id).then_some((*rt, id))
    })
}

/// A pod component: `pod<uid>` (cgroupfs) or `kubepods[-qos]-pod<uid>.slice`.
fn pod_uid(c: &str) -> Option<String> {
    let raw = if let Some(stem) = c.strip_suffix(".slice") {
        let i = stem.find("-pod")?;
        stem[..i].starts_with("kubepods").then(|| &stem[i + 4..])?
    } else {
        c.strip_prefix("pod")?
    };
    // A UID is hex and dashes (systemd escapes the dashes as underscores).
    let uid = raw.replace('_', "-");
    (uid.len() >= 8 && uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')).then_some(uid)
}

fn qos_of(c: &str) -> Option<Qos> {
    match c {
        "burstable" | "kubepods-burstable.slice" => Some(Qos::Burstable),
        "besteffort" | "kubepods-besteffort.slice" => Some(Qos::BestEffort),
        _ => None,
    }
}

impl Identity {
    /// Parses one cgroup path (v2, or the path part of a v1 line).
    pub fn parse(path: &str) -> Identity {
        let mut id = Identity::default();
        let mut in_kubepods = false;
        let mut prev = "";
        for c in path.split('/').filter(|c| !c.is_empty()) {
            if c == "kubepods" || c == "kubepods.slice" {
                in_kubepods = true;
            } else if in_kubepods && let Some(q) = qos_of(c) {
                id.qos = Some(q);
            } else if in_kubepods && let Some(uid) = pod_uid(c) {
                id.pod_uid = Some(uid);
                id.qos.get_or_insert(Qos::Guaranteed);
            } else if let Some((rt, cid)) = container_scope(c) {
                id.container_id = Some(cid.to_string());
                id.runtime = Some(rt.to_string());
                // A unit outside the container is the runtime's, not the workload's.
                id.unit = None;
            } else if is_container_id(c) && (prev == "docker" || id.pod_uid.is_some()) {
                id.container_id = Some(c.to_string());
                id.runtime = (prev == "docker").then(|| "docker".to_string());
                id.unit = None;
            } else if c.ends_with(".service") || c.ends_with(".scope") {
                id.unit = Some(c.to_string());
            } else if c.ends_with(".slice") {
                id.slice = Some(c.to_string());
            }
            prev = c;
        }
        id
    }

    /// A short name for one line of a table: pod and container, else the
    /// unit, else the slice; `None` when the path names nothing known.
    pub fn label(&self) -> Option<String> {
        let short = |s: &str| s.chars().take(12).collect::<String>();
        let ctr = self.container_id.as_deref().map(|c| match &self.runtime {
            Some(rt) => format!("{rt}:{}", short(c)),
            None => format!("ctr:{}", short(c)),
        });
        let mut parts: Vec<String> = Vec::new();
        if let Some(p) = &self.pod_uid {
            parts.push(format!("pod:{}", p.chars().take(8).collect::<String>()));
        }
        parts.extend(ctr);
        if let Some(u) = &self.unit {
            parts.push(u.clone());
        }
        if parts.is_empty() {
            return self.slice.clone();
        }
        Some(parts.join("/"))
    }
}

/// `/proc/PID/cgroup`: the v2 line (`0::/path`) and the v1 lines
/// (`4:memory:/path`, `1:name=systemd:/path`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ProcCgroup {
    pub v2: Option<String>,
    /// (controllers, path), in file order.
    pub v1: Vec<(String, String)>,
}

impl ProcCgroup {
    pub fn parse(text: &str) -> ProcCgroup {
        let mut out = ProcCgroup::default();
        for l in text.lines() {
            let mut it = l.splitn(3, ':');
            let (Some(_), Some(ctrl), Some(path)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !path.starts_with('/') {
                continue;
            }
            if ctrl.is_empty() {
                out.v2 = Some(path.to_string());
            } else {
                out.v1.push((ctrl.to_string(), path.to_string()));
            }
        }
        out
    }

    /// The v1 path that names the workload best: the deepest one (runtimes
    /// create the container's cgroup in every controller, systemd only in
    /// some); on a tie the `name=systemd` hierarchy, then file order.
    pub fn v1_path(&self) -> Option<&str> {
        let depth = |p: &str| p.split('/').filter(|c| !c.is_empty()).count();
        let mut best: Option<(&str, &str)> = None;
        for (ctrl, path) in &self.v1 {
            best = match best {
                None => Some((ctrl, path)),
                Some((bc, bp)) => {
                    let (d, bd) = (depth(path), depth(bp));
                    if d > bd || (d == bd && ctrl == "name=systemd" && bc != "name=systemd") {
                        Some((ctrl, path))
                    } else {
                        Some((bc, bp))
                    }
                }
            };
        }
        best.map(|(_, p)| p)
    }

    /// Path in the v1 cpuset hierarchy, when it is mounted as v1.
    pub fn v1_cpuset(&self) -> Option<&str> {
        self.v1_controller("cpuset")
    }

    /// Path in the v1 memory hierarchy, when it is mounted as v1.
    pub fn v1_memory(&self) -> Option<&str> {
        self.v1_controller("memory")
    }

    fn v1_controller(&self, name: &str) -> Option<&str> {
        self.v1
            .iter()
            .find(|(c, _)| c.split(',').any(|x| x == name))
            .map(|(_, p)| p.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CID: &str = "4f1c3b5e0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c";
    const UID: &str = "0f9a5c2e-7d1b-4a3c-9e8f-1a2b3c4d5e6f";

    fn uid_us() -> String {
        UID.replace('-', "_")
    }

    #[test]
    fn kubepods_systemd_driver_burstable_containerd() {
        let p = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{CID}.scope",
            uid_us()
        );
        let id = Identity::parse(&p);
        assert_eq!(id.pod_uid.as_deref(), Some(UID));
        assert_eq!(id.qos, Some(Qos::Burstable));
        assert_eq!(id.container_id.as_deref(), Some(CID));
        assert_eq!(id.runtime.as_deref(), Some("containerd"));
        assert_eq!(id.unit, None);
        assert_eq!(
            id.label().as_deref(),
            Some("pod:0f9a5c2e/containerd:4f1c3b5e0d9a")
        );
    }

    #[test]
    fn kubepods_systemd_driver_besteffort_crio() {
        let p = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/crio-{CID}.scope",
            uid_us()
        );
        let id = Identity::parse(&p);
        assert_eq!(id.qos, Some(Qos::BestEffort));
        assert_eq!(id.pod_uid.as_deref(), Some(UID));
        assert_eq!(id.runtime.as_deref(), Some("cri-o"));
        assert_eq!(id.container_id.as_deref(), Some(CID));
        // cri-o's monitor process has its own scope.
        let conmon = Identity::parse(&p.replace("crio-", "crio-conmon-"));
        assert_eq!(conmon.runtime.as_deref(), Some("cri-o-conmon"));
        assert_eq!(conmon.container_id.as_deref(), Some(CID));
    }

    #[test]
    fn kubepods_guaranteed_sits_right_under_kubepods() {
        let p = format!(
            "/kubepods.slice/kubepods-pod{}.slice/cri-containerd-{CID}.scope",
            uid_us()
        );
        let id = Identity::parse(&p);
        assert_eq!(id.qos, Some(Qos::Guaranteed));
        assert_eq!(id.pod_uid.as_deref(), Some(UID));
        // cgroupfs driver: the same three classes.
        let g = Identity::parse(&format!("/kubepods/pod{UID}/{CID}"));
        assert_eq!(
            (g.qos, g.pod_uid.as_deref(), g.container_id.as_deref()),
            (Some(Qos::Guaranteed), Some(UID), Some(CID))
        );
        assert_eq!(g.runtime, None);
        assert_eq!(g.label().as_deref(), Some("pod:0f9a5c2e/ctr:4f1c3b5e0d9a"));
        let b = Identity::parse(&format!("/kubepods/burstable/pod{UID}/{CID}"));
        assert_eq!(b.qos, Some(Qos::Burstable));
        let e = Identity::parse(&format!("/kubepods/besteffort/pod{UID}"));
        assert_eq!(
            (e.qos, e.pod_uid.as_deref(), e.container_id.as_deref()),
            (Some(Qos::BestEffort), Some(UID), None)
        );
        // The QoS parents alone name no pod.
        let q = Identity::parse("/kubepods.slice/kubepods-burstable.slice");
        assert_eq!((q.qos, q.pod_uid.as_deref()), (Some(Qos::Burstable), None));
    }

    #[test]
    fn docker_both_drivers() {
        let s = Identity::parse(&format!("/system.slice/docker-{CID}.scope"));
        assert_eq!(s.runtime.as_deref(), Some("docker"));
        assert_eq!(s.container_id.as_deref(), Some(CID));
        assert_eq!(s.slice.as_deref(), Some("system.slice"));
        assert_eq!(s.pod_uid, None);
        assert_eq!(s.label().as_deref(), Some("docker:4f1c3b5e0d9a"));
        let c = Identity::parse(&format!("/docker/{CID}"));
        assert_eq!(
            (c.runtime.as_deref(), c.container_id.as_deref()),
            (Some("docker"), Some(CID))
        );
        // The daemon itself is a service, not a container.
        let d = Identity::parse("/system.slice/docker.service");
        assert_eq!(
            (d.unit.as_deref(), d.container_id.as_deref()),
            (Some("docker.service"), None)
        );
        // A hex-looking directory elsewhere is not a container.
        let x = Identity::parse(&format!("/batch/{CID}"));
        assert_eq!(x.container_id, None);
    }

    #[test]
    fn podman_scope() {
        let p = Identity::parse(&format!(
            "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{CID}.scope"
        ));
        assert_eq!(p.runtime.as_deref(), Some("podman"));
        assert_eq!(p.unit, None, "user@1000.service is outside the container");
    }

    #[test]
    fn systemd_services_and_sessions() {
        let n = Identity::parse("/system.slice/nginx.service");
        assert_eq!(n.unit.as_deref(), Some("nginx.service"));
        assert_eq!(n.slice.as_deref(), Some("system.slice"));
        assert_eq!(n.label().as_deref(), Some("nginx.service"));
        let u = Identity::parse("/user.slice/user-1000.slice/session-2.scope");
        assert_eq!(u.unit.as_deref(), Some("session-2.scope"));
        assert_eq!(u.slice.as_deref(), Some("user-1000.slice"));
        let s = Identity::parse("/system.slice");
        assert_eq!(s.label().as_deref(), Some("system.slice"));
        assert_eq!(Identity::parse("/").label(), None);
        assert_eq!(Identity::parse("/process_api/3f9b").label(), None);
        assert_eq!(Identity::parse(""), Identity::default());
    }

    #[test]
    fn nested_innermost_container_and_its_unit() {
        // systemd inside a docker container.
        let p = Identity::parse(&format!(
            "/system.slice/docker-{CID}.scope/system.slice/nginx.service"
        ));
        assert_eq!(p.container_id.as_deref(), Some(CID));
        assert_eq!(p.unit.as_deref(), Some("nginx.service"));
        assert_eq!(
            p.label().as_deref(),
            Some("docker:4f1c3b5e0d9a/nginx.service")
        );
        // docker in docker: the inner container.
        let inner = "aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeee0000";
        let d = Identity::parse(&format!("/docker/{CID}/docker/{inner}"));
        assert_eq!(d.container_id.as_deref(), Some(inner));
        // A pod's container running a unit.
        let k = Identity::parse(&format!(
            "/kubepods/besteffort/pod{UID}/{CID}/system.slice/app.service"
        ));
        assert_eq!(
            (
                k.pod_uid.as_deref(),
                k.container_id.as_deref(),
                k.unit.as_deref()
            ),
            (Some(UID), Some(CID), Some("app.service"))
        );
    }

    #[test]
    fn proc_cgroup_v1_hybrid_and_v2_lines() {
        let hybrid = format!(
            "12:cpuset:/docker/{CID}\n11:memory:/docker/{CID}\n1:name=systemd:/system.slice/docker-{CID}.scope\n0::/system.slice/docker-{CID}.scope\n"
        );
        let p = ProcCgroup::parse(&hybrid);
        assert_eq!(
            p.v2.as_deref(),
            Some(format!("/system.slice/docker-{CID}.scope").as_str())
        );
        assert_eq!(p.v1_cpuset(), Some(format!("/docker/{CID}").as_str()));
        // Tie on depth: name=systemd wins.
        assert_eq!(
            p.v1_path(),
            Some(format!("/system.slice/docker-{CID}.scope").as_str())
        );
        let id = Identity::parse(p.v1_path().unwrap());
        assert_eq!(id.container_id.as_deref(), Some(CID));

        // v1 only (no 0:: line): the deepest path names the workload.
        let v1 = "9:name=systemd:/\n4:memory:/process_api/3f9b\n3:cpuset:/\n2:cpu,cpuacct:/\n";
        let p = ProcCgroup::parse(v1);
        assert_eq!(p.v2, None);
        assert_eq!(p.v1_path(), Some("/process_api/3f9b"));
        assert_eq!(p.v1_cpuset(), Some("/"));
        let p = ProcCgroup::parse(&format!(
            "5:cpu,cpuacct:/kubepods/burstable/pod{UID}/{CID}\n"
        ));
        let id = Identity::parse(p.v1_path().unwrap());
        assert_eq!(id.qos, Some(Qos::Burstable));
        assert_eq!(id.container_id.as_deref(), Some(CID));

        // v2 only; garbage lines are skipped.
        let p = ProcCgroup::parse("0::/system.slice/nginx.service\nnonsense\n3:x:relative\n");
        assert_eq!(p.v2.as_deref(), Some("/system.slice/nginx.service"));
        assert!(p.v1.is_empty());
        assert_eq!(p.v1_path(), None);
    }
}
