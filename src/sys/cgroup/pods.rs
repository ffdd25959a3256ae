//! Pods by namespace and name from the node alone, with no API server: the
//! kubelet names each pod's log directory after it, and each container's
//! log link after the container.
//!
//! - `/var/log/pods/<namespace>_<name>_<uid>/<container>/<n>.log`: one
//!   directory per pod on the node (and for a while after it is gone);
//! - `/var/log/containers/<name>_<namespace>_<container>-<id>.log`: one
//!   link per container, with the runtime's container id.
//!
//! A cgroup path names the pod's UID and the container's id
//! (`path::Identity`), so the two directories turn them into names.
//! Kubernetes names cannot hold `_` (namespaces and containers are DNS
//! labels, pods DNS subdomains), which makes both layouts unambiguous.
//! Only directory listings are read, never a log, and nothing is
//! followed: the links point at absolute host paths.
//!
//! In the DaemonSet both directories are the node's, mounted read-only at
//! the same paths. Elsewhere they are simply absent, and pods keep being
//! shown by UID.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::sys::sysroot::Sysroot;

pub const PODS_DIR: &str = "/var/log/pods";
pub const CONTAINERS_DIR: &str = "/var/log/containers";

/// Bound of one listing: a node runs at most a few hundred pods (110 by
/// default); a directory far larger is not the kubelet's.
const MAX_ENTRIES: usize = 100_000;

/// A pod's names as the kubelet wrote them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct PodName {
    pub namespace: String,
    pub name: String,
    /// The container's name; empty for the pod's own cgroup (and the
    /// sandbox's), or when the container's link is not there.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub container: String,
}

/// What the two directories say: pod UID → (namespace, name), container
/// id → container name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodDirs {
    pub pods: HashMap<String, (String, String)>,
    pub containers: HashMap<String, String>,
    /// Whether the pods directory could be listed at all.
    pub found: bool,
}

impl PodDirs {
    /// The names of the pod `uid` and, when known, of its container `cid`.
    pub fn name(&self, uid: &str, cid: Option<&str>) -> Option<PodName> {
        let (namespace, name) = self.pods.get(uid)?;
        let container = cid
            .and_then(|c| self.containers.get(c))
            .cloned()
            .unwrap_or_default();
        Some(PodName {
            namespace: namespace.clone(),
            name: name.clone(),
            container,
        })
    }
}

/// A Kubernetes name part: no `_`, no `/`, printable, not empty.
fn name_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// A pod UID: hex and dashes (an RFC 4122 UUID, or a static pod's hash).
fn uid_part(s: &str) -> bool {
    (8..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// `<namespace>_<name>_<uid>` → (uid, namespace, name).
pub fn parse_pod_dir(entry: &str) -> Option<(String, String, String)> {
    let mut it = entry.splitn(3, '_');
    let (ns, name, uid) = (it.next()?, it.next()?, it.next()?);
    (name_part(ns) && name_part(name) && uid_part(uid))
        .then(|| (uid.to_ascii_lowercase(), ns.to_string(), name.to_string()))
}

/// `<name>_<namespace>_<container>-<id>.log` → (id, container).
pub fn parse_container_link(entry: &str) -> Option<(String, String)> {
    let stem = entry.strip_suffix(".log")?;
    let (rest, id) = stem.rsplit_once('-')?;
    if !(12..=128).contains(&id.len()) || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut it = rest.splitn(3, '_');
    let (name, ns, container) = (it.next()?, it.next()?, it.next()?);
    (name_part(name) && name_part(ns) && name_part(container))
        .then(|| (id.to_ascii_lowercase(), container.to_string()))
}

fn list(root: &Sysroot, dir: &str) -> Option<Vec<String>> {
    let rd = std::fs::read_dir(root.path(dir)).ok()?;
    Some(
        rd.flatten()
            .take(MAX_ENTRIES)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
    )
}

/// Lists both directories under `root` (two `readdir`s; nothing else).
pub fn read_pod_dirs(root: &Sysroot) -> PodDirs {
    let mut out = PodDirs::default();
    if let Some(entries) = list(root, PODS_DIR) {
        out.found = true;
        for e in entries {
            if let Some((uid, ns, name)) = parse_pod_dir(&e) {
                out.pods.insert(uid, (ns, name));
            }
        }
    }
    for e in list(root, CONTAINERS_DIR).unwrap_or_default() {
        if let Some((id, container)) = parse_container_link(&e) {
            out.containers.insert(id, container);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f9a5c2e-7d1b-4a3c-9e8f-1a2b3c4d5e6f";
    const CID: &str = "4f1c3b5e0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c";

    #[test]
    fn kubelet_layouts_parse_and_odd_names_do_not() {
        assert_eq!(
            parse_pod_dir(&format!("kube-system_coredns-5d78c9869d-x7k2p_{UID}")),
            Some((
                UID.into(),
                "kube-system".into(),
                "coredns-5d78c9869d-x7k2p".into()
            ))
        );
        assert_eq!(
            parse_container_link(&format!("web-0_shop_nginx-{CID}.log")),
            Some((CID.into(), "nginx".into()))
        );
        for bad in [
            "no-underscores",
            "ns_name",
            &format!("ns_na me_{UID}"),
            &format!("_name_{UID}"),
            "ns_name_not-a-uid!",
            &format!("ns_name_{UID}\x1b[2J"),
        ] {
            assert_eq!(parse_pod_dir(bad), None, "{bad:?}");
        }
        for bad in [
            format!("web-0_shop_nginx-{CID}"),
            "web-0_shop_nginx-xyz.log".into(),
            format!("web-0_nginx-{CID}.log"),
            format!("web-0_shop_ng\tinx-{CID}.log"),
        ] {
            assert_eq!(parse_container_link(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_node_tree_names_pods_and_containers() {
        let d = tempfile::tempdir().unwrap();
        let root = Sysroot::new(d.path());
        assert!(!read_pod_dirs(&root).found, "no kubelet, nothing found");
        let pod = d
            .path()
            .join(format!("var/log/pods/shop_web-0_{UID}/nginx"));
        std::fs::create_dir_all(&pod).unwrap();
        std::fs::write(pod.join("0.log"), "").unwrap();
        let links = d.path().join("var/log/containers");
        std::fs::create_dir_all(&links).unwrap();
        std::os::unix::fs::symlink(
            format!("/var/log/pods/shop_web-0_{UID}/nginx/0.log"),
            links.join(format!("web-0_shop_nginx-{CID}.log")),
        )
        .unwrap();
        let dirs = read_pod_dirs(&root);
        assert!(dirs.found);
        assert_eq!(
            dirs.name(UID, Some(CID)),
            Some(PodName {
                namespace: "shop".into(),
                name: "web-0".into(),
                container: "nginx".into(),
            })
        );
        // The pod's own cgroup, or a container with no link yet.
        assert_eq!(dirs.name(UID, None).unwrap().container, "");
        assert_eq!(dirs.name(UID, Some("ab12ab12ab12")).unwrap().container, "");
        assert_eq!(dirs.name("0000aaaa-0000", Some(CID)), None);
    }
}
