//! Every network namespace on the host, and its devices.
//!
//! On a container host most receive steering (RPS on a pod's veth, XDP in a
//! CNF) lives in namespaces other than nettop's. They are found where the
//! kernel keeps references to them: named ones bind-mounted under
//! `/run/netns` and `/var/run/netns` (`ip netns add`), and the ones
//! processes hold (`/proc/PID/ns/net`), deduplicated by inode.
//!
//! Reading one: sysfs shows the devices of the namespace its *mounter* was
//! in, and rtnetlink and ethtool sockets answer for the namespace of the
//! thread that opened them. So a short-lived helper thread unshares its
//! filesystem context and mount namespace, makes its mounts private
//! (`MS_REC|MS_SLAVE`, nothing propagates back to the host), enters the
//! namespace with `setns`, mounts a fresh sysfs over `/sys` and runs the
//! same readers as for nettop's own namespace. The thread's mounts vanish
//! with it; nettop's own threads never change namespace.
//!
//! Fixtures (`--sysroot`): `netns/<name>/` under the root is one namespace,
//! laid out as a root of its own (`sys/class/net/...`, `proc/net/route`);
//! an optional `netns/<name>/inode` file gives its inode, and
//! `netns/<name>/workload` the pod or container owning it.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};

use crate::sys::sysroot::Sysroot;

/// Where nettop learned of a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NetnsKind {
    /// nettop's own namespace (usually the host's).
    #[default]
    Own,
    /// Bind-mounted under /run/netns or /var/run/netns.
    Named,
    /// Held only by processes.
    Process,
    /// A `--sysroot` fixture directory.
    Fixture,
}

/// One network namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct NetnsInfo {
    /// nsfs inode (`ls -iL /proc/PID/ns/net`); 0 when unknown (fixtures).
    pub inode: u64,
    /// The netns name, else "pid N (comm)" for the lowest PID holding it;
    /// empty for nettop's own namespace.
    pub name: String,
    pub kind: NetnsKind,
    /// A process inside it (the lowest PID), for `nsenter -t PID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The pod, container or service that process belongs to
    /// (`cgroup::Identity::label`, e.g. "pod:1a2b3c4d/containerd:0123abcd");
    /// `None` when its cgroup names nothing known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
}

impl NetnsInfo {
    /// A shell prefix that runs a command inside this namespace with its own
    /// /sys, for fix commands; empty for nettop's own namespace.
    pub fn exec_prefix(&self) -> String {
        match self.kind {
            NetnsKind::Own => String::new(),
            NetnsKind::Named | NetnsKind::Fixture => {
                format!("ip netns exec {} ", self.name)
            }
            NetnsKind::Process => match self.pid {
                // The process's mount namespace has the /sys its runtime
                // mounted for this network namespace.
                Some(p) => format!("nsenter -t {p} -n -m "),
                None => String::new(),
            },
        }
    }
}

/// Inode of an nsfs file (`/proc/self/ns/net`, `/run/netns/x`).
fn inode_of(path: &std::path::Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// `net:[4026531840]` → 4026531840.
fn parse_ns_link(s: &str) -> Option<u64> {
    s.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
}

/// nettop's own network namespace inode (the main thread's).
pub fn own_inode() -> Option<u64> {
    inode_of(std::path::Path::new("/proc/self/ns/net"))
}

/// A namespace found live, with a path that opens it.
#[derive(Debug, Clone)]
pub struct Found {
    pub info: NetnsInfo,
    pub path: std::path::PathBuf,
}

/// Every network namespace but nettop's own, live. Named ones first (by
/// name), then process-held ones (by lowest PID); each inode once.
/// `processes`: every process on the host when the caller has the list
/// (a task sampler pass; in any order, repeats allowed), so /proc is not
/// listed again: on a host with 30,000 threads one listing costs ~5 ms, as
/// the kernel steps over every thread's PID. `None` lists /proc.
pub fn enumerate_live(processes: Option<&[u32]>) -> Vec<Found> {
    enumerate_live_and_hidden(processes).0
}

/// The inode of `/proc/<pid>/net/dev`: procfs gives each network
/// namespace's entries inodes of their own, and, unlike `ns/net`, any
/// user may look at them.
fn proc_net_ino(pid: &str) -> Option<u64> {
    inode_of(std::path::Path::new(&format!("/proc/{pid}/net/dev")))
}

/// [`enumerate_live`], and how many other namespaces exist that it could
/// not list: those of processes whose `ns/net` link nettop may not read
/// (it needs CAP_SYS_PTRACE for another user's process, or for a root
/// process with capabilities nettop lacks). They are told apart by
/// their `/proc/PID/net` entries, which need no privilege, so nettop
/// knows the device counters it reads leave them out.
pub fn enumerate_live_and_hidden(processes: Option<&[u32]>) -> (Vec<Found>, usize) {
    let own = own_inode();
    let own_net = proc_net_ino("self");
    let mut hidden: std::collections::BTreeSet<u64> = std::collections::BTreeSet::new();
    let mut listed_net: std::collections::BTreeSet<u64> = std::collections::BTreeSet::new();
    let mut seen: BTreeMap<u64, Found> = BTreeMap::new();
    let mut named: Vec<(String, std::path::PathBuf)> = Vec::new();
    for dir in ["/run/netns", "/var/run/netns"] {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.flatten() {
            named.push((e.file_name().to_string_lossy().into_owned(), e.path()));
        }
    }
    named.sort();
    for (name, path) in named {
        // An entry left after its namespace died is a plain empty file
        // with an ordinary inode; nsfs files are what `ip` mounted there.
        let Ok(st) = nix_statfs_is_nsfs(&path) else {
            continue;
        };
        if !st {
            continue;
        }
        let Some(ino) = inode_of(&path) else {
            continue;
        };
        if Some(ino) == own || seen.contains_key(&ino) {
            continue;
        }
        seen.insert(
            ino,
            Found {
                info: NetnsInfo {
                    inode: ino,
                    name,
                    kind: NetnsKind::Named,
                    pid: None,
                    workload: None,
                },
                path,
            },
        );
    }
    let mut pids: Vec<u32> = match processes {
        Some(p) => p.to_vec(),
        None => std::fs::read_dir("/proc")
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default(),
    };
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let link = format!("/proc/{pid}/ns/net");
        let ino = match std::fs::read_link(&link) {
            Ok(l) => parse_ns_link(&l.to_string_lossy()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
                let net = proc_net_ino(&pid.to_string());
                if let Some(n) = net.filter(|n| Some(*n) != own_net) {
                    hidden.insert(n);
                }
                continue;
            }
            Err(_) => None,
        };
        let Some(ino) = ino else {
            continue;
        };
        if Some(ino) == own {
            continue;
        }
        // The same namespace may be hidden behind another process's link.
        if let Some(n) = proc_net_ino(&pid.to_string()) {
            listed_net.insert(n);
        }
        match seen.get_mut(&ino) {
            Some(f) => {
                f.info.pid.get_or_insert(pid);
            }
            None => {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim_end().to_string())
                    .unwrap_or_default();
                seen.insert(
                    ino,
                    Found {
                        info: NetnsInfo {
                            inode: ino,
                            name: format!("pid {pid} ({comm})"),
                            kind: NetnsKind::Process,
                            pid: Some(pid),
                            workload: None,
                        },
                        path: link.into(),
                    },
                );
            }
        }
    }
    let mut v: Vec<Found> = seen.into_values().collect();
    for f in &mut v {
        f.info.workload = f.info.pid.and_then(workload_of);
    }
    v.sort_by(|a, b| {
        (
            a.info.kind != NetnsKind::Named,
            a.info.pid.unwrap_or(0),
            &a.info.name,
        )
            .cmp(&(
                b.info.kind != NetnsKind::Named,
                b.info.pid.unwrap_or(0),
                &b.info.name,
            ))
    });
    (v, hidden.difference(&listed_net).count())
}

/// The workload a process belongs to, from its cgroup path.
fn workload_of(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let cg = crate::sys::cgroup::ProcCgroup::parse(&text);
    let path = cg.v2.as_deref().or_else(|| cg.v1_path())?;
    crate::sys::cgroup::Identity::parse(path).label()
}

/// `NSFS_MAGIC` from include/uapi/linux/magic.h.
const NSFS_MAGIC: i64 = 0x6e73_6673;

fn nix_statfs_is_nsfs(path: &std::path::Path) -> std::io::Result<bool> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statfs(2) with a NUL-terminated path and a zeroed, writable
    // struct statfs the kernel fills.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above: a valid C path and a writable struct of ours.
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_type as i64 == NSFS_MAGIC)
}

/// Fixture namespaces: every directory under `<root>/netns`, by name.
pub fn enumerate_fixture(root: &Sysroot) -> Vec<(NetnsInfo, Sysroot)> {
    let dir = root.root().join("netns");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let sub = Sysroot::new(dir.join(&name));
            let inode = sub
                .read_opt("/inode")
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            (
                NetnsInfo {
                    inode,
                    name,
                    kind: NetnsKind::Fixture,
                    pid: None,
                    workload: sub
                        .read_opt("/workload")
                        .map(|w| w.trim().to_string())
                        .filter(|w| !w.is_empty()),
                },
                sub,
            )
        })
        .collect()
}

/// Runs `f` on a helper thread that has entered the namespace at `path`
/// with a sysfs of its own mounted at /sys. `f` reads through
/// `Sysroot::new("/")` and opens netlink/ethtool sockets as usual; the
/// per-namespace /proc/net is `/proc/thread-self/net`.
pub fn with_netns<T: Send>(
    path: &std::path::Path,
    f: impl FnOnce() -> T + Send,
) -> anyhow::Result<T> {
    on_ns_thread(path, enter, f)
}

/// Runs `f` on a scoped helper thread after `enter` has moved that thread
/// into the namespace whose nsfs file is at `path`; nettop's own threads
/// never change namespace.
fn on_ns_thread<T: Send>(
    path: &std::path::Path,
    enter: fn(i32) -> anyhow::Result<()>,
    f: impl FnOnce() -> T + Send,
) -> anyhow::Result<T> {
    let file = std::fs::File::open(path).with_context(|| path.display().to_string())?;
    std::thread::scope(|s| {
        s.spawn(move || {
            enter(file.as_raw_fd())?;
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow!("namespace reader thread panicked"))?
    })
}

/// The OS error of the call that just failed, kept as the source so a
/// caller can still ask for its kind.
fn errno(what: &str) -> anyhow::Error {
    anyhow::Error::new(std::io::Error::last_os_error()).context(what.to_string())
}

/// The helper thread's setup; see the module comment.
fn enter(fd: i32) -> anyhow::Result<()> {
    private_mounts()?;
    enter_net(fd)?;
    // The old sysfs stays underneath; MNT_DETACH would need it idle.
    mount_sysfs(std::path::Path::new("/sys"))
}

/// Gives the calling thread its own root/cwd and a private copy of the
/// mount table (`unshare(CLONE_FS | CLONE_NEWNS)`), its mounts made
/// `MS_REC|MS_SLAVE`: what it mounts from now on is seen by no other thread
/// and never propagates to the host, and it vanishes with the thread. The
/// one sequence every "look at a namespace from a thread" path uses: the
/// namespace readers here, the calibration's loopback namespace and the
/// tests' fixtures.
pub fn private_mounts() -> anyhow::Result<()> {
    // SAFETY: unshare(2) with flags only, on this thread.
    if unsafe { libc::unshare(libc::CLONE_FS | libc::CLONE_NEWNS) } != 0 {
        return Err(errno("unshare(CLONE_FS|CLONE_NEWNS)"));
    }
    // SAFETY: a propagation change of "/": NUL-terminated literal target,
    // null source, type and data, which the kernel accepts for it.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(errno("making mounts private"));
    }
    Ok(())
}

/// Mounts a fresh sysfs at `at`: it shows the network namespace of the
/// calling thread. Call after [`private_mounts`].
pub fn mount_sysfs(at: &std::path::Path) -> anyhow::Result<()> {
    let target = CString::new(at.as_os_str().as_encoded_bytes())
        .with_context(|| at.display().to_string())?;
    // SAFETY: NUL-terminated source, target and type alive for the call;
    // sysfs takes no data.
    let rc = unsafe {
        libc::mount(
            c"sysfs".as_ptr(),
            target.as_ptr(),
            c"sysfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(errno(&format!("mounting sysfs on {}", at.display())));
    }
    Ok(())
}

/// Moves the calling thread into a new, empty network namespace.
pub fn new_netns() -> anyhow::Result<()> {
    // SAFETY: unshare(2) with a flag only, on this thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(errno("unshare(CLONE_NEWNET) (needs CAP_SYS_ADMIN)"));
    }
    Ok(())
}

/// Runs `f` on a helper thread inside the namespace at `path`, without any
/// mount (sockets only: rtnetlink counters).
pub fn with_netns_sockets<T: Send>(
    path: &std::path::Path,
    f: impl FnOnce() -> T + Send,
) -> anyhow::Result<T> {
    on_ns_thread(path, enter_net, f)
}

/// `setns(CLONE_NEWNET)` only: this thread's sockets open in the namespace.
pub fn enter_net(fd: i32) -> anyhow::Result<()> {
    // SAFETY: setns(2) on this thread with an open nsfs descriptor.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(errno("setns(CLONE_NEWNET)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_link_parses() {
        assert_eq!(parse_ns_link("net:[4026531840]"), Some(4026531840));
        assert_eq!(parse_ns_link("mnt:[1]"), None);
        assert_eq!(parse_ns_link("net:[x]"), None);
    }

    #[test]
    fn exec_prefix_per_kind() {
        let mut n = NetnsInfo {
            inode: 1,
            name: "blue".into(),
            kind: NetnsKind::Named,
            pid: None,
            workload: None,
        };
        assert_eq!(n.exec_prefix(), "ip netns exec blue ");
        n.kind = NetnsKind::Process;
        n.pid = Some(42);
        assert_eq!(n.exec_prefix(), "nsenter -t 42 -n -m ");
        n.kind = NetnsKind::Own;
        assert_eq!(n.exec_prefix(), "");
    }
}
