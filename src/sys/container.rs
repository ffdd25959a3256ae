//! nettop in a container that watches its node (the Kubernetes DaemonSet:
//! host PID namespace, host network, the node's cgroup tree mounted): what
//! it reads must describe the node, not the image it runs from.
//!
//! Most of that is given by the namespaces: under hostPID /proc lists the
//! node's tasks, under hostNetwork the netlink dump and /sys/class/net are
//! the node's devices, and the BPF programs see every task whatever
//! namespace they are in. Two things are not: the image's own files
//! (there is no passwd in a `FROM scratch` image, and a distribution
//! image's would name the image's users, not the node's), and the node's
//! name (the kernel's hostname may differ from the name Kubernetes knows
//! the node by). This module finds the node's files through PID 1's root
//! and the node's name in the downward API's `NODE_NAME`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The downward API's node name (`spec.nodeName` set as an environment
/// variable in the DaemonSet).
pub const NODE_NAME_ENV: &str = "NODE_NAME";

/// Where PID 1's root directory is seen from here: under hostPID, the
/// node's init, whose root is the node's file system.
pub const INIT_ROOT: &str = "/proc/1/root";

/// Where the host's own files (`/etc/passwd`) are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostFiles {
    /// nettop's root is the host's (no container, or a service sandbox
    /// that bind-mounts the same root read-only).
    Own,
    /// nettop runs under another root than PID 1 (a container with the
    /// host's PID namespace): the host's files are under this path.
    Via(PathBuf),
    /// Neither can be told: PID 1's root cannot be looked at (it needs
    /// CAP_SYS_PTRACE when PID 1 holds capabilities nettop lacks) and
    /// nettop's own root has no passwd, so it is not the host's either.
    Unknown(String),
}

/// Compares nettop's root with PID 1's. Roots are the same directory
/// when device and inode agree; a systemd sandbox (ProtectSystem=) mounts
/// the same root directory again, so it counts as the host's.
pub fn host_files() -> HostFiles {
    host_files_at(Path::new("/"), Path::new(INIT_ROOT))
}

/// [`host_files`] for an own root and an init root given as paths.
pub fn host_files_at(own: &Path, init: &Path) -> HostFiles {
    let own_md = match std::fs::metadata(own) {
        Ok(m) => m,
        Err(_) => return HostFiles::Own,
    };
    match std::fs::metadata(init) {
        Ok(m) if (m.dev(), m.ino()) == (own_md.dev(), own_md.ino()) => HostFiles::Own,
        Ok(_) => HostFiles::Via(init.to_path_buf()),
        // An unprivileged nettop on a host: its own passwd is the host's.
        Err(_) if own.join("etc/passwd").exists() => HostFiles::Own,
        Err(e) => HostFiles::Unknown(format!(
            "{} unreadable ({e}; it needs CAP_SYS_PTRACE) and no /etc/passwd here",
            init.display()
        )),
    }
}

/// The node's name from [`NODE_NAME_ENV`], when it is set to a name
/// Kubernetes could have given a node (a DNS subdomain: at most 253
/// characters of lower-case letters, digits, `-` and `.`). Anything else
/// is ignored with a warning rather than shown as the node's name.
pub fn node_name() -> Option<String> {
    let raw = std::env::var_os(NODE_NAME_ENV)?;
    let Some(v) = raw.to_str().filter(|v| !v.is_empty()) else {
        log::warn!("{NODE_NAME_ENV} is empty or not UTF-8: ignored");
        return None;
    };
    if is_node_name(v) {
        Some(v.to_string())
    } else {
        log::warn!(
            "{NODE_NAME_ENV}={:?} is not a Kubernetes node name (a DNS subdomain): ignored",
            crate::sys::sanitize::clean(v)
        );
        None
    }
}

/// A DNS-1123 subdomain, as Kubernetes requires of a node's name.
pub fn is_node_name(s: &str) -> bool {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    s.len() <= 253 && s.split('.').all(label_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_root_is_own_another_is_the_hosts() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        assert_eq!(host_files_at(a.path(), a.path()), HostFiles::Own);
        assert_eq!(
            host_files_at(a.path(), b.path()),
            HostFiles::Via(b.path().to_path_buf())
        );
        // PID 1's root hidden: a root with a passwd is the host's own...
        let gone = b.path().join("nothing");
        std::fs::create_dir(a.path().join("etc")).unwrap();
        std::fs::write(a.path().join("etc/passwd"), "root:x:0:0::/:/\n").unwrap();
        assert_eq!(host_files_at(a.path(), &gone), HostFiles::Own);
        // ...and one without (an image from scratch) cannot tell.
        let HostFiles::Unknown(why) = host_files_at(b.path(), &gone) else {
            panic!("not unknown");
        };
        assert!(why.contains("CAP_SYS_PTRACE"), "{why}");
        // The live system from outside any container: its own root.
        if Path::new(INIT_ROOT).exists() && std::fs::metadata(INIT_ROOT).is_ok() {
            assert_eq!(host_files(), HostFiles::Own);
        }
    }

    #[test]
    fn node_names_are_dns_subdomains() {
        for ok in ["node-1", "ip-10-0-0-7.eu-west-1.compute.internal", "a"] {
            assert!(is_node_name(ok), "{ok}");
        }
        let long = "a".repeat(254);
        for bad in ["", "Node1", "-a", "a-", "a..b", "a_b", "a\x1b[2J", &long] {
            assert!(!is_node_name(bad), "{bad:?}");
        }
    }
}
