//! Where the cgroup hierarchies are mounted, as nettop's mount namespace
//! sees them (v2, v1 cpuset and memory, hybrid, container sub-trees), and
//! the walk that maps v2 cgroup ids to paths. The collector's resolver and
//! the topology's thread scan both read cpusets through these; the
//! resolver reads each cgroup's memory through them too.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;

use crate::sys::sysroot::Sysroot;

/// Bounds of one hierarchy walk: a crafted or enormous tree costs at most
/// this many directories (a Kubernetes node has a few thousand).
const MAX_WALK_DIRS: usize = 100_000;
const MAX_WALK_DEPTH: usize = 64;

/// Where the hierarchies are mounted (absolute, under the sysroot).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mounts {
    /// The cgroup2 mount, and the path of its root within the hierarchy
    /// ("/" unless nettop's mount namespace sees a sub-tree).
    pub v2: Option<(String, String)>,
    /// The v1 cpuset hierarchy's mount point.
    pub v1_cpuset: Option<String>,
    /// The v1 memory hierarchy's mount point.
    pub v1_memory: Option<String>,
    /// Any v1 hierarchy is mounted (v1-only or hybrid).
    pub v1: bool,
}

/// Octal escapes in mountinfo paths (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && let Some(Ok(oct)) = b.get(i + 1..i + 4).map(std::str::from_utf8)
            && let Ok(v) = u8::from_str_radix(oct, 8)
        {
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Mounts {
    /// Parses `/proc/self/mountinfo`.
    pub fn parse_mountinfo(text: &str) -> Mounts {
        let mut m = Mounts::default();
        for l in text.lines() {
            let Some((left, right)) = l.split_once(" - ") else {
                continue;
            };
            let f: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let (Some(root), Some(point), Some(fstype)) = (f.get(3), f.get(4), r.first()) else {
                continue;
            };
            match *fstype {
                "cgroup2" if m.v2.is_none() => m.v2 = Some((unescape(point), unescape(root))),
                "cgroup" => {
                    m.v1 = true;
                    let opts = r.get(2).copied().unwrap_or("");
                    if m.v1_cpuset.is_none() && opts.split(',').any(|o| o == "cpuset") {
                        m.v1_cpuset = Some(unescape(point));
                    }
                    if m.v1_memory.is_none() && opts.split(',').any(|o| o == "memory") {
                        m.v1_memory = Some(unescape(point));
                    }
                }
                _ => {}
            }
        }
        m
    }

    /// The v1 `cpuset.effective_cpus` (or `cpuset.cpus`) of cpuset cgroup
    /// `path`, under the v1 cpuset mount.
    pub fn v1_cpus_file(&self, root: &Sysroot, path: &str) -> Option<String> {
        let mount = self.v1_cpuset.as_ref()?;
        let p = path.trim_end_matches('/');
        ["cpuset.effective_cpus", "cpuset.cpus"]
            .iter()
            .map(|f| format!("{mount}{p}/{f}"))
            .find(|f| root.path(f).exists())
    }

    /// The v1 `memory.usage_in_bytes` of memory cgroup `path`, under the
    /// v1 memory mount. None for the root, as in v2: its figure is the
    /// whole host's, not what its own processes use.
    pub fn v1_mem_file(&self, root: &Sysroot, path: &str) -> Option<String> {
        let mount = self.v1_memory.as_ref()?;
        let p = path.trim_end_matches('/');
        if p.is_empty() {
            return None;
        }
        let f = format!("{mount}{p}/memory.usage_in_bytes");
        root.path(&f).exists().then_some(f)
    }

    /// The v2 `memory.current` of `path` (as `/proc/PID/cgroup` names it):
    /// only the cgroup's own. Where the controller is off a cgroup's pages
    /// are charged to an ancestor with siblings' pages, which would be a
    /// wrong number for it; the root has none.
    pub fn v2_mem_file(&self, root: &Sysroot, path: &str) -> Option<String> {
        let (m, r) = self.v2.as_ref()?;
        let rel = path.strip_prefix(r.trim_end_matches('/'))?;
        if !(rel.is_empty() || rel.starts_with('/')) {
            return None;
        }
        let f = format!("{m}{}/memory.current", rel.trim_end_matches('/'));
        root.path(&f).exists().then_some(f)
    }

    /// The v2 `cpuset.cpus.effective` of `path` (as `/proc/PID/cgroup`
    /// names it) or of its nearest ancestor that has one (the file exists
    /// only where the controller is on), no higher than the sub-tree the
    /// mount shows; `None` for a path outside that sub-tree, whose cpuset
    /// this host cannot see.
    pub fn v2_cpus_file(&self, root: &Sysroot, path: &str) -> Option<String> {
        let (m, r) = self.v2.as_ref()?;
        let rel = path.strip_prefix(r.trim_end_matches('/'))?;
        if !(rel.is_empty() || rel.starts_with('/')) {
            return None;
        }
        let mut cur = rel.trim_end_matches('/').to_string();
        loop {
            let f = format!("{m}{cur}/cpuset.cpus.effective");
            if root.path(&f).exists() {
                return Some(f);
            }
            let i = cur.rfind('/')?;
            cur.truncate(i);
        }
    }

    /// Reads the mount table under `root`; a tree without one (a fixture)
    /// is probed at the usual places.
    pub fn detect(root: &Sysroot) -> Mounts {
        if let Ok(t) = root.read("/proc/self/mountinfo") {
            return Mounts::parse_mountinfo(&t);
        }
        let has = |p: &str| root.path(p).exists();
        let mut m = Mounts::default();
        if has("/sys/fs/cgroup/unified/cgroup.controllers") {
            m.v2 = Some(("/sys/fs/cgroup/unified".into(), "/".into()));
        } else if has("/sys/fs/cgroup/cgroup.controllers")
            || has("/sys/fs/cgroup/cpuset.cpus.effective")
        {
            m.v2 = Some(("/sys/fs/cgroup".into(), "/".into()));
        }
        if has("/sys/fs/cgroup/cpuset/cpuset.cpus") {
            m.v1 = true;
            m.v1_cpuset = Some("/sys/fs/cgroup/cpuset".into());
        }
        if has("/sys/fs/cgroup/memory/memory.usage_in_bytes") {
            m.v1 = true;
            m.v1_memory = Some("/sys/fs/cgroup/memory".into());
        }
        m
    }
}

/// Walks the v2 hierarchy below `mount`: directory inode (= cgroup id) →
/// path in the hierarchy.
pub fn walk_v2(root: &Sysroot, mount: &str, mount_root: &str) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    let base = root.path(mount);
    let prefix = mount_root.trim_end_matches('/');
    let mut stack: Vec<(std::path::PathBuf, String, usize)> = vec![(base, String::new(), 0)];
    while let Some((dir, rel, depth)) = stack.pop() {
        let Ok(md) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        let path = format!("{prefix}{rel}");
        out.insert(md.ino(), if path.is_empty() { "/".into() } else { path });
        if depth >= MAX_WALK_DEPTH || out.len() >= MAX_WALK_DIRS {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir())
                && let Some(name) = e.file_name().to_str()
            {
                stack.push((e.path(), format!("{rel}/{name}"), depth + 1));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_v2_only_hybrid_and_v1_only() {
        let hybrid = "\
30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
35 30 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset
36 30 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
";
        let m = Mounts::parse_mountinfo(hybrid);
        assert_eq!(
            m.v2,
            Some(("/sys/fs/cgroup/unified".to_string(), "/".to_string()))
        );
        assert_eq!(m.v1_cpuset.as_deref(), Some("/sys/fs/cgroup/cpuset"));
        assert_eq!(m.v1_memory.as_deref(), Some("/sys/fs/cgroup/memory"));
        assert!(m.v1);
        let v2 = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n";
        let m = Mounts::parse_mountinfo(v2);
        assert_eq!(m.v2.as_ref().map(|x| x.0.as_str()), Some("/sys/fs/cgroup"));
        assert!(!m.v1 && m.v1_cpuset.is_none());
        let v1 = "35 30 0:31 / /sys/fs/cgroup/cpu\\040set rw - cgroup cgroup rw,cpuset\n";
        let m = Mounts::parse_mountinfo(v1);
        assert_eq!(m.v2, None);
        assert_eq!(m.v1_cpuset.as_deref(), Some("/sys/fs/cgroup/cpu set"));
    }

    /// The premise of the whole design: the sampler's id is the
    /// directory's inode number, and the kernel's own file handle for a
    /// cgroup directory (`name_to_handle_at`, 8 bytes: the kernfs id)
    /// says the same.
    #[test]
    fn cgroup_id_is_the_directory_inode() {
        let m = Mounts::detect(&Sysroot::default());
        let Some((mount, _)) = m.v2 else {
            eprintln!("SKIPPED: no cgroup2 mount here");
            return;
        };
        // A child cgroup if there is one: the root's id is 1 everywhere.
        let path = std::fs::read_dir(&mount)
            .unwrap()
            .flatten()
            .find(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map_or(std::path::PathBuf::from(&mount), |e| e.path());
        let dir = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        #[repr(C)]
        struct Handle {
            bytes: u32,
            kind: i32,
            id: [u8; 8],
        }
        let mut h = Handle {
            bytes: 8,
            kind: 0,
            id: [0; 8],
        };
        let mut mnt = 0;
        // SAFETY: valid NUL-terminated path; `h` is a file_handle with room
        // for the 8 bytes announced in `bytes`.
        let rc = unsafe {
            libc::name_to_handle_at(
                libc::AT_FDCWD,
                dir.as_ptr(),
                (&mut h as *mut Handle).cast(),
                &mut mnt,
                0,
            )
        };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        let ino = std::fs::metadata(&path).unwrap().ino();
        assert_eq!(u64::from_ne_bytes(h.id), ino, "{}", path.display());
    }
}
