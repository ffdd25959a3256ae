//! Thread placement: affinity, last CPU, cgroup cpuset, memory placement and
//! NICs in use. The expensive parts (numa_maps, sockets, CPU sampling) are
//! done only for pinned threads, which keeps a 2,000-thread host fast.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::net::{NetNs, nics_of, socket_inodes};
use super::{Nic, ThreadInfo};
use crate::sample::RawTask;
use crate::sys::cgroup::Mounts;
use crate::sys::cpuset::CpuSet;
use crate::sys::sysroot::Sysroot;

/// `PF_KTHREAD` in include/linux/sched.h.
const PF_KTHREAD: u64 = 0x0020_0000;

pub(super) struct ThreadScan {
    pub threads: Vec<ThreadInfo>,
    pub irqbalance_pid: Option<u32>,
}

struct Stat {
    comm: String,
    flags: u64,
    last_cpu: Option<u32>,
}

fn parse_stat(s: &str) -> Option<Stat> {
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = s.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field n is rest[n - 3].
    Some(Stat {
        comm,
        flags: rest.get(6)?.parse().ok()?,
        last_cpu: rest.get(36).and_then(|c| c.parse().ok()),
    })
}

fn numeric_dirs(root: &Sysroot, abs: &str) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(root.path(abs))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// The container or service a process's cgroups name (v2 path first,
/// else the most specific v1 path), for findings that name workloads.
fn workload(text: &str) -> Option<String> {
    let pc = crate::sys::cgroup::ProcCgroup::parse(text);
    let label = |p: &str| crate::sys::cgroup::Identity::parse(p).label();
    pc.v2
        .as_deref()
        .and_then(label)
        .or_else(|| pc.v1_path().and_then(label))
}

/// cgroup path and the effective cpuset it imposes, from `/proc/PID/cgroup`,
/// looked up where this host mounts the hierarchies (v2-only, hybrid with
/// v2 at `unified`, v1, or a container's sub-tree).
fn cgroup_cpuset_of(
    root: &Sysroot,
    mounts: &Mounts,
    text: &str,
    cache: &mut HashMap<String, Option<CpuSet>>,
) -> (Option<String>, Option<CpuSet>) {
    let pc = crate::sys::cgroup::ProcCgroup::parse(text);
    let (path, v1) = match (pc.v1_cpuset(), &pc.v2) {
        (Some(p), _) if mounts.v1_cpuset.is_some() => (p.to_string(), true),
        (_, Some(p)) => (p.clone(), false),
        (Some(p), None) => (p.to_string(), true),
        (None, None) => return (None, None),
    };
    let key = format!("{}{path}", if v1 { "v1:" } else { "v2:" });
    let set = cache
        .entry(key)
        .or_insert_with(|| {
            let file = if v1 {
                mounts.v1_cpus_file(root, &path)
            } else {
                mounts.v2_cpus_file(root, &path)
            };
            file.and_then(|f| root.read_opt(&f))
                .and_then(|s| CpuSet::parse_list(&s).ok())
                .filter(|s| !s.is_empty())
        })
        .clone();
    (Some(path), set)
}

/// KiB of the process's memory per NUMA node, from `numa_maps`.
fn numa_kib(root: &Sysroot, pid: u32) -> Option<BTreeMap<u32, u64>> {
    let text = root.read_large(format!("/proc/{pid}/numa_maps")).ok()?;
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let mut page_kb = 4u64;
        let mut per: Vec<(u32, u64)> = Vec::new();
        for tok in l.split_whitespace() {
            if let Some(v) = tok.strip_prefix("kernelpagesize_kB=") {
                page_kb = v.parse().unwrap_or(4);
            } else if let Some((n, c)) = tok.strip_prefix('N').and_then(|t| t.split_once('='))
                && let (Ok(n), Ok(c)) = (n.parse::<u32>(), c.parse::<u64>())
            {
                per.push((n, c));
            }
        }
        for (n, c) in per {
            *m.entry(n).or_insert(0) += c * page_kb;
        }
    }
    Some(m)
}

fn schedstat_ns(root: &Sysroot, pid: u32, tid: u32) -> Option<u64> {
    root.read_opt(format!("/proc/{pid}/task/{tid}/schedstat"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// One thread as the scan first sees it: from /proc, or from a thread
/// list the caller already has (the task sampler's).
struct Seen {
    tid: u32,
    comm: String,
    kthread: bool,
    last_cpu: Option<u32>,
    affinity: CpuSet,
}

/// A process's threads from /proc: `stat` and the affinity of each.
fn walk_threads(root: &Sysroot, pid: u32) -> Vec<Seen> {
    let mut out = Vec::new();
    for tid in numeric_dirs(root, &format!("/proc/{pid}/task")) {
        let dir = format!("/proc/{pid}/task/{tid}");
        // Threads exit while we look: a vanished file is not an error.
        let Some(stat) = root
            .read_opt(format!("{dir}/stat"))
            .and_then(|s| parse_stat(&s))
        else {
            continue;
        };
        let affinity = if root.is_live() {
            crate::sys::cpuset::live_affinity(tid)
        } else {
            None
        };
        let affinity = affinity
            .or_else(|| {
                root.read_opt(format!("{dir}/status"))
                    .and_then(|s| {
                        s.lines()
                            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                            .map(|v| v.trim().to_string())
                    })
                    .and_then(|v| CpuSet::parse_list(&v).ok())
            })
            .unwrap_or_default();
        out.push(Seen {
            tid,
            comm: stat.comm,
            kthread: stat.flags & PF_KTHREAD != 0,
            last_cpu: stat.last_cpu,
            affinity,
        });
    }
    out
}

/// The caller's thread list by process.
fn by_process(known: &[RawTask]) -> BTreeMap<u32, Vec<Seen>> {
    let mut m: BTreeMap<u32, Vec<Seen>> = BTreeMap::new();
    for t in known {
        m.entry(t.tgid).or_default().push(Seen {
            tid: t.tid,
            comm: t.comm.clone(),
            kthread: t.kthread,
            last_cpu: Some(t.last_cpu),
            affinity: CpuSet::parse_list(&t.affinity).unwrap_or_default(),
        });
    }
    for v in m.values_mut() {
        v.sort_by_key(|s| s.tid);
    }
    m
}

/// Every thread's placement. `known`: the threads with their names and
/// affinities when the caller has them (the task sampler), so that only
/// per-process files are read; else every thread's `stat` and affinity.
pub(super) fn load_threads(
    root: &Sysroot,
    online: &CpuSet,
    nics: &[Nic],
    sample: Option<Duration>,
    known: Option<&[RawTask]>,
    notes: &mut Vec<String>,
) -> anyhow::Result<ThreadScan> {
    let t0 = Instant::now();
    let mut known = known.map(by_process);
    let pids: Vec<u32> = match &known {
        Some(k) => k.keys().copied().collect(),
        None => numeric_dirs(root, "/proc"),
    };
    if pids.is_empty() {
        notes.push(format!(
            "{}: no processes readable: thread placement not checked",
            root.proc().display()
        ));
    }
    let multi_node = nics.iter().any(|n| n.numa_node.is_some())
        || root.path("/sys/devices/system/node/node1").exists();
    let ifindex: BTreeMap<u32, String> = nics
        .iter()
        .filter_map(|n| Some((n.ifindex?, n.name.clone())))
        .collect();
    let own_ns = std::fs::read_link(root.path("/proc/self/ns/net")).ok();
    let mut cg_cache = HashMap::new();
    let mounts = Mounts::detect(root);
    let mut ns_cache: HashMap<String, NetNs> = HashMap::new();
    let mut out = Vec::new();
    let mut irqbalance_pid = None;
    let mut first_sample: Vec<(usize, u64, Instant)> = Vec::new();
    for pid in pids {
        let seen = match known.as_mut() {
            Some(k) => k.remove(&pid).unwrap_or_default(),
            None => walk_threads(root, pid),
        };
        let cg_text = root.read_opt(format!("/proc/{pid}/cgroup"));
        let (cgroup, cpuset) = match &cg_text {
            Some(t) => cgroup_cpuset_of(root, &mounts, t, &mut cg_cache),
            None => (None, None),
        };
        let workload = cg_text.as_deref().and_then(workload);
        let cpuset = cpuset.filter(|c| !online.is_subset(c));
        let start = out.len();
        for t in seen {
            if t.tid == pid && t.comm == "irqbalance" {
                irqbalance_pid = Some(pid);
            }
            out.push(ThreadInfo {
                pid,
                tid: t.tid,
                comm: t.comm,
                affinity: t.affinity,
                last_cpu: t.last_cpu,
                kthread: t.kthread,
                cgroup: cgroup.clone(),
                cpuset: cpuset.clone(),
                workload: workload.clone(),
                ..Default::default()
            });
        }
        let pinned: Vec<usize> = (start..out.len())
            .filter(|&i| out[i].is_pinned(online))
            .collect();
        if pinned.is_empty() {
            continue;
        }
        let mem = if multi_node {
            numa_kib(root, pid)
        } else {
            None
        };
        let mut used = Vec::new();
        if !nics.is_empty() {
            let ns_key = std::fs::read_link(root.path(format!("/proc/{pid}/ns/net")))
                .ok()
                .map(|p| p.to_string_lossy().to_string());
            let same_ns = match (&ns_key, &own_ns) {
                (Some(a), Some(b)) => std::path::Path::new(a) == b.as_path(),
                _ => true,
            };
            if same_ns {
                let inodes = socket_inodes(root, pid);
                if !inodes.is_empty() {
                    let key = ns_key.unwrap_or_else(|| format!("pid{pid}"));
                    let ns = ns_cache
                        .entry(key)
                        .or_insert_with(|| NetNs::load(root, pid));
                    used = nics_of(ns, &inodes, &ifindex);
                }
            }
        }
        for i in pinned {
            out[i].mem_kib = mem.clone();
            out[i].nics = used.clone();
            if sample.is_some()
                && let Some(ns) = schedstat_ns(root, pid, out[i].tid)
            {
                first_sample.push((i, ns, Instant::now()));
            }
        }
    }
    if let Some(interval) = sample
        && !first_sample.is_empty()
    {
        let elapsed = t0.elapsed();
        if elapsed < interval {
            std::thread::sleep(interval - elapsed);
        }
        for (i, before, at) in first_sample {
            let t = &mut out[i];
            if let Some(after) = schedstat_ns(root, t.pid, t.tid) {
                let wall = at.elapsed().as_nanos().max(1) as f64;
                t.cpu_pct = Some((after.saturating_sub(before) as f64 / wall * 100.0).min(100.0));
            }
        }
    }
    Ok(ThreadScan {
        threads: out,
        irqbalance_pid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parens_in_comm() {
        let mut line = String::from("42 (a (b) c) S 1 42 42 0 -1 2097216");
        for i in 10..=38 {
            line.push_str(&format!(" {i}"));
        }
        line.push_str(" 7 0 0");
        let s = parse_stat(&line).unwrap();
        assert_eq!(s.comm, "a (b) c");
        assert_eq!(s.flags & PF_KTHREAD, PF_KTHREAD);
        assert_eq!(s.last_cpu, Some(7));
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let f = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        }
        d
    }

    fn cpuset(d: &tempfile::TempDir, cgroup: &str) -> Option<String> {
        let root = Sysroot::new(d.path());
        let mounts = Mounts::detect(&root);
        cgroup_cpuset_of(&root, &mounts, cgroup, &mut HashMap::new())
            .1
            .map(|c| c.to_list())
    }

    /// A container that sees its own sub-tree of the hierarchy mounted at
    /// /sys/fs/cgroup (no cgroup namespace): the path /proc names is the
    /// full one, the files are under the mount without the prefix.
    #[test]
    fn cpuset_of_a_subtree_mount_is_the_cgroups_own() {
        let d = tree(&[
            (
                "/proc/self/mountinfo",
                "35 30 0:30 /kubepods/pod1 /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
            ),
            ("/sys/fs/cgroup/cpuset.cpus.effective", "0-3\n"),
            ("/sys/fs/cgroup/ctr/cpuset.cpus.effective", "2-3\n"),
        ]);
        assert_eq!(
            cpuset(&d, "0::/kubepods/pod1/ctr\n").as_deref(),
            Some("2-3")
        );
        // Walking up stops at the mount's root.
        assert_eq!(
            cpuset(&d, "0::/kubepods/pod1/other\n").as_deref(),
            Some("0-3")
        );
        // Outside what the mount shows: unknown, not some other cgroup's.
        assert_eq!(cpuset(&d, "0::/system.slice/x\n"), None);
    }

    /// v1 cpuset where mountinfo says, not at a guessed path.
    #[test]
    fn v1_cpuset_is_found_through_mountinfo() {
        let d = tree(&[
            (
                "/proc/self/mountinfo",
                "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
                 40 30 0:35 / /sys/fs/cgroup/cpuset,cpu rw - cgroup cgroup rw,cpuset,cpu\n",
            ),
            ("/sys/fs/cgroup/cpuset,cpu/app/cpuset.cpus", "1\n"),
        ]);
        assert_eq!(
            cpuset(&d, "5:cpuset,cpu:/app\n0::/app\n").as_deref(),
            Some("1")
        );
    }
}
