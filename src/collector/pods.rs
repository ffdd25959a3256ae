//! Names each sample's pod cgroups by namespace, pod and container, from
//! the kubelet's directories on the node (`sys::cgroup::pods`).
//!
//! The directories are listed again only when a pod UID or container id
//! shows up that the last listing did not name (a new pod or container),
//! and then at most once every
//! [`RELIST_EVERY`] samples, so a host with no kubelet (no pod UIDs in its
//! paths) never lists anything, and a pod the directories never name (an
//! unmounted /var/log/pods) costs one listing per minute or so, not one
//! per sample. Names are cached per cgroup id.

use std::collections::HashMap;

use crate::sample::RawCgroup;
use crate::sys::cgroup::pods::{PodDirs, read_pod_dirs};
use crate::sys::cgroup::{Identity, PodName};
use crate::sys::sysroot::Sysroot;

/// Samples between two listings prompted by unknown pods.
const RELIST_EVERY: u64 = 30;

#[derive(Default)]
pub struct PodNamer {
    dirs: PodDirs,
    /// The sample of the last listing.
    listed_at: Option<u64>,
    /// Cgroup id → (its path, its names), for cgroups already named.
    named: HashMap<u64, (String, Option<PodName>)>,
    samples: u64,
    /// Listings so far (tests check that known pods cost none).
    pub listings: u64,
}

impl PodNamer {
    /// Sets `pod` on every cgroup of `table` whose path names a pod the
    /// node's directories know.
    pub fn fill(&mut self, root: &Sysroot, table: &mut [RawCgroup]) {
        self.samples += 1;
        let now = self.samples;
        let mut wanted: Vec<(usize, Identity)> = Vec::new();
        for (i, c) in table.iter_mut().enumerate() {
            if let Some((path, name)) = self.named.get(&c.id)
                && *path == c.path
            {
                c.pod = name.clone();
                continue;
            }
            let id = Identity::parse(&c.path);
            if id.pod_uid.is_some() {
                wanted.push((i, id));
            }
        }
        if wanted.is_empty() {
            return;
        }
        // A new pod, or a container whose log link was not there yet (a
        // pod's sandbox never has one: it costs a listing per
        // RELIST_EVERY samples).
        let unknown = wanted.iter().any(|(_, id)| {
            id.pod_uid
                .as_ref()
                .is_some_and(|u| !self.dirs.pods.contains_key(u))
                || id
                    .container_id
                    .as_ref()
                    .is_some_and(|c| !self.dirs.containers.contains_key(c))
        });
        if unknown && self.listed_at.is_none_or(|at| now >= at + RELIST_EVERY) {
            self.dirs = read_pod_dirs(root);
            self.listed_at = Some(now);
            self.listings += 1;
        }
        for (i, id) in wanted {
            let Some(uid) = id.pod_uid.as_deref() else {
                continue;
            };
            let name = self.dirs.name(uid, id.container_id.as_deref());
            // Cached only once named: a container whose log link is not
            // there yet is looked up again at the next listing.
            let complete = name
                .as_ref()
                .is_some_and(|n| !n.container.is_empty() || id.container_id.is_none());
            if complete {
                self.named
                    .insert(table[i].id, (table[i].path.clone(), name.clone()));
            }
            table[i].pod = name;
        }
        // Forget cgroups not seen for a while (their pods are gone).
        if self.named.len() > 4 * table.len() + 1024 {
            let live: std::collections::HashSet<u64> = table.iter().map(|c| c.id).collect();
            self.named.retain(|id, _| live.contains(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f9a5c2e-7d1b-4a3c-9e8f-1a2b3c4d5e6f";
    const CID: &str = "4f1c3b5e0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c";

    fn cg(id: u64, path: String) -> RawCgroup {
        RawCgroup {
            id,
            path,
            ..Default::default()
        }
    }

    /// A kubelet tree appears after the pod's cgroup: one listing then,
    /// none for known pods, none at all for cgroups that are no pod.
    #[test]
    fn pods_are_named_once_and_listings_are_rationed() {
        let d = tempfile::tempdir().unwrap();
        let root = Sysroot::new(d.path());
        let path = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/cri-containerd-{CID}.scope",
            UID.replace('-', "_")
        );
        let mut n = PodNamer::default();
        let mut t = vec![cg(1, "/system.slice/sshd.service".into())];
        n.fill(&root, &mut t);
        assert_eq!((n.listings, &t[0].pod), (0, &None), "no pod, no listing");

        let mut t = vec![
            cg(1, "/system.slice/sshd.service".into()),
            cg(2, path.clone()),
        ];
        n.fill(&root, &mut t);
        assert_eq!((n.listings, &t[1].pod), (1, &None), "no kubelet here");
        // The directories appear: not listed again at once...
        let pod = d
            .path()
            .join(format!("var/log/pods/shop_web-0_{UID}/nginx"));
        std::fs::create_dir_all(&pod).unwrap();
        let links = d.path().join("var/log/containers");
        std::fs::create_dir_all(&links).unwrap();
        std::fs::write(links.join(format!("web-0_shop_nginx-{CID}.log")), "").unwrap();
        for _ in 0..RELIST_EVERY - 1 {
            n.fill(&root, &mut t);
        }
        assert_eq!((n.listings, &t[1].pod), (1, &None));
        // ...but within RELIST_EVERY samples.
        n.fill(&root, &mut t);
        assert_eq!(n.listings, 2);
        let want = PodName {
            namespace: "shop".into(),
            name: "web-0".into(),
            container: "nginx".into(),
        };
        assert_eq!(t[1].pod.as_ref(), Some(&want));
        // Known from now on, even with the directories gone.
        std::fs::remove_dir_all(d.path().join("var")).unwrap();
        for _ in 0..2 * RELIST_EVERY {
            let mut t = vec![cg(2, path.clone())];
            n.fill(&root, &mut t);
            assert_eq!(t[0].pod.as_ref(), Some(&want));
        }
        assert_eq!(n.listings, 2);
    }
}
