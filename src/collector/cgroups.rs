//! Which cgroup each task is in, without a /proc read per task.
//!
//! The task sampler hands every task's cgroup v2 id (`dfl_cgrp->kn->id`).
//! On 64-bit kernels that id is the inode number of the cgroup's directory
//! in the v2 hierarchy, so one walk of that hierarchy (wherever it is
//! mounted: `/sys/fs/cgroup` on v2-only hosts, `/sys/fs/cgroup/unified` on
//! hybrid ones) maps every id to its path. The map is kept and walked again
//! only when an id it does not know shows up.
//!
//! `/proc/PID/cgroup` is read once per **process** (cached by PID and start
//! time, never per thread or per sample) only where the id says nothing:
//! hosts without a v2 hierarchy (v1 only), tasks in the v2 root of a hybrid
//! host (where the runtime may have used v1 alone), ids the walk cannot see,
//! and the /proc path (`--no-bpf`, `--sysroot`), where there is no id.
//! Kernel threads are in the root cgroup of every hierarchy: never read.
//!
//! Each sample carries the table of the cgroups its tasks use
//! ([`RawCgroup`]), with the CPUs their cpuset allows and the memory
//! charged to them: two small reads per cgroup per sample, so a changed
//! cpuset shows at once.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;

use crate::sample::{RawCgroup, RawTask, cgroup_key};
use crate::sys::cgroup::{Mounts, ProcCgroup, walk_v2};
use crate::sys::sysroot::Sysroot;

/// Samples before an id the walk did not find is looked for again.
const RETRY_MISSING: u64 = 30;

/// A cgroup the resolver knows.
#[derive(Debug, Clone)]
struct Known {
    path: String,
    v1: bool,
    /// The file holding its allowed CPUs (absolute, under the sysroot),
    /// once found; `Some("")` when there is none to read.
    cpus_file: Option<String>,
    /// The same for the memory charged to it (`memory.current`, v1
    /// `memory.usage_in_bytes`).
    mem_file: Option<String>,
}

/// The process fallback: what `/proc/PID/cgroup` said, per process.
#[derive(Debug, Clone)]
struct ProcEntry {
    key: u64,
    seen: u64,
}

pub struct CgroupResolver {
    root: Sysroot,
    mounts: Mounts,
    /// The v2 hierarchy has the cpuset controller (its root lists it).
    v2_cpuset: bool,
    /// Kernel id or path key → cgroup.
    known: HashMap<u64, Known>,
    /// Ids the last walk did not find, with the sample they were missed at.
    missing: HashMap<u64, u64>,
    /// (PID, start ticks) → key, for processes read through /proc.
    procs: HashMap<(u32, u64), ProcEntry>,
    /// The v2 root's id (its directory inode), when a v2 mount exists.
    v2_root_id: Option<u64>,
    samples: u64,
    /// Hierarchy walks so far (tests check that known ids cost none).
    pub walks: u64,
    /// /proc/PID/cgroup reads so far.
    pub proc_reads: u64,
}

impl CgroupResolver {
    pub fn new(root: &Sysroot) -> Self {
        let mounts = Mounts::detect(root);
        let v2_cpuset = mounts.v2.as_ref().is_some_and(|(m, _)| {
            root.path(format!("{m}/cpuset.cpus.effective")).exists()
                || root
                    .read_opt(format!("{m}/cgroup.controllers"))
                    .is_some_and(|c| c.split_whitespace().any(|x| x == "cpuset"))
        });
        let v2_root_id = mounts
            .v2
            .as_ref()
            .and_then(|(m, _)| std::fs::metadata(root.path(m)).ok())
            .map(|md| md.ino());
        Self {
            root: root.clone(),
            mounts,
            v2_cpuset,
            known: HashMap::new(),
            missing: HashMap::new(),
            procs: HashMap::new(),
            v2_root_id,
            samples: 0,
            walks: 0,
            proc_reads: 0,
        }
    }

    pub fn mounts(&self) -> &Mounts {
        &self.mounts
    }

    fn rescan(&mut self) {
        let Some((m, r)) = &self.mounts.v2 else {
            return;
        };
        self.walks += 1;
        let map = walk_v2(&self.root, m, r);
        // Keep what was learnt about cpusets for cgroups that still exist.
        let mut known: HashMap<u64, Known> = map
            .into_iter()
            .map(|(id, path)| {
                let old = self.known.get(&id).filter(|k| !k.v1 && k.path == path);
                let cpus_file = old.and_then(|k| k.cpus_file.clone());
                let mem_file = old.and_then(|k| k.mem_file.clone());
                (
                    id,
                    Known {
                        path,
                        v1: false,
                        cpus_file,
                        mem_file,
                    },
                )
            })
            .collect();
        known.extend(self.known.drain().filter(|(_, k)| k.v1));
        self.known = known;
    }

    /// The process's cgroup from `/proc/PID/cgroup`, once per process.
    fn read_proc(&mut self, p: &RawTask) -> Option<u64> {
        let pk = (p.tgid, p.start_ticks);
        if let Some(e) = self.procs.get_mut(&pk) {
            e.seen = self.samples;
            return Some(e.key);
        }
        self.proc_reads += 1;
        let text = self.root.read_opt(format!("/proc/{}/cgroup", p.tgid))?;
        let pc = ProcCgroup::parse(&text);
        // The v2 path, unless it is the root of a hybrid host and a v1
        // hierarchy names more (a runtime that used v1 alone).
        let v1_path = pc.v1_path().filter(|p| *p != "/");
        let (v1, path) = match (&pc.v2, v1_path) {
            (Some(v2), Some(v1p)) if v2 == "/" => (true, v1p.to_string()),
            (Some(v2), _) => (false, v2.clone()),
            (None, Some(v1p)) => (true, v1p.to_string()),
            (None, None) => (true, pc.v1_path()?.to_string()),
        };
        // A process in the v2 root is in the same cgroup as the kernel
        // threads there, whose key is the kernel's id of the root: one row
        // for the root, not one per way it was found.
        let key = match self.v2_root_id {
            Some(root) if !v1 && path == "/" => root,
            _ => cgroup_key(v1, &path),
        };
        let cpus_file = pc
            .v1_cpuset()
            .and_then(|p| self.mounts.v1_cpus_file(&self.root, p));
        let v1_mem = pc
            .v1_memory()
            .and_then(|p| self.mounts.v1_mem_file(&self.root, p));
        let v2_mem = (!v1)
            .then(|| self.mounts.v2_mem_file(&self.root, &path))
            .flatten();
        let k = self.known.entry(key).or_insert_with(|| Known {
            path,
            v1,
            cpus_file: None,
            mem_file: None,
        });
        if k.cpus_file.is_none() && (v1 || !self.v2_cpuset) {
            k.cpus_file = Some(cpus_file.unwrap_or_default());
        }
        if k.mem_file.is_none() {
            k.mem_file = Some(v2_mem.or(v1_mem).unwrap_or_default());
        }
        self.procs.insert(
            pk,
            ProcEntry {
                key,
                seen: self.samples,
            },
        );
        Some(key)
    }

    /// Gives every task and process a key into the returned table, and the
    /// table (only the cgroups in use, sorted by key). `from_kernel`: the
    /// rows carry the sampler's v2 ids; otherwise they come from /proc and
    /// carry none.
    pub fn resolve(
        &mut self,
        tasks: &mut [RawTask],
        procs: &mut [RawTask],
        from_kernel: bool,
    ) -> Vec<RawCgroup> {
        self.samples += 1;
        let by_kernel_id = from_kernel && self.mounts.v2.is_some();
        if by_kernel_id {
            let wanted: HashSet<u64> = procs
                .iter()
                .chain(tasks.iter())
                .map(|t| t.cgroup_id)
                .filter(|&id| id != 0)
                .collect();
            let now = self.samples;
            self.missing
                .retain(|_, at| now.saturating_sub(*at) < RETRY_MISSING);
            if wanted
                .iter()
                .any(|id| !self.known.contains_key(id) && !self.missing.contains_key(id))
            {
                self.rescan();
                for id in &wanted {
                    if !self.known.contains_key(id) {
                        self.missing.entry(*id).or_insert(now);
                    }
                }
            }
        }
        // Processes: the kernel's id when it names a cgroup, else /proc.
        let hybrid = self.mounts.v1;
        let mut by_tgid: HashMap<u32, u64> = HashMap::new();
        for p in procs.iter_mut() {
            let kernel_ok = by_kernel_id
                && self.known.contains_key(&p.cgroup_id)
                && !(hybrid && Some(p.cgroup_id) == self.v2_root_id);
            if !kernel_ok {
                let key = if p.kthread { None } else { self.read_proc(p) };
                p.cgroup_id = match key {
                    Some(k) => k,
                    None if by_kernel_id && self.known.contains_key(&p.cgroup_id) => p.cgroup_id,
                    None => 0,
                };
            }
            by_tgid.insert(p.tgid, p.cgroup_id);
        }
        // Threads: their own v2 id when it is known and not the hybrid
        // root (threaded cgroups), else their process's.
        for t in tasks.iter_mut() {
            let own = by_kernel_id
                && self.known.contains_key(&t.cgroup_id)
                && !(hybrid && Some(t.cgroup_id) == self.v2_root_id);
            if !own {
                t.cgroup_id = by_tgid.get(&t.tgid).copied().unwrap_or(0);
            }
        }
        // Forget processes that are gone.
        let now = self.samples;
        self.procs.retain(|_, e| e.seen == now);

        let used: HashSet<u64> = procs
            .iter()
            .chain(tasks.iter())
            .map(|t| t.cgroup_id)
            .filter(|&id| id != 0)
            .collect();
        let mut out: Vec<RawCgroup> = Vec::with_capacity(used.len());
        for id in used {
            let Some(k) = self.known.get(&id).cloned() else {
                continue;
            };
            let (cpus_file, mem_file) = match (k.cpus_file, k.mem_file) {
                (Some(c), Some(m)) => (c, m),
                (c, m) => {
                    let (c, m) = self.find_files(id, &k.path, k.v1, procs, c, m);
                    if let Some(e) = self.known.get_mut(&id) {
                        e.cpus_file = Some(c.clone());
                        e.mem_file = Some(m.clone());
                    }
                    (c, m)
                }
            };
            let read = |f: &str| (!f.is_empty()).then(|| self.root.read_opt(f)).flatten();
            out.push(RawCgroup {
                id,
                path: k.path,
                v1: k.v1,
                cpus: read(&cpus_file).unwrap_or_default(),
                mem_bytes: read(&mem_file).and_then(|t| t.trim().parse().ok()),
                // Named afterwards, from the kubelet's directories.
                pod: None,
            });
        }
        out.sort_by_key(|c| c.id);
        out
    }

    /// The files a cgroup's allowed CPUs and memory are read from, for the
    /// ones not known yet (`""`: none): in v2 where its controller is on
    /// there, else, for a v2 cgroup on a hybrid host, in v1, found through
    /// one of its processes (read once for both).
    fn find_files(
        &self,
        id: u64,
        path: &str,
        v1: bool,
        procs: &[RawTask],
        cpus: Option<String>,
        mem: Option<String>,
    ) -> (String, String) {
        let v2_cpus = || {
            (!v1 && self.v2_cpuset)
                .then(|| self.mounts.v2_cpus_file(&self.root, path))
                .flatten()
        };
        let v2_mem = || {
            (!v1)
                .then(|| self.mounts.v2_mem_file(&self.root, path))
                .flatten()
        };
        let cpus = cpus.or_else(v2_cpus);
        let mem = mem.or_else(v2_mem);
        if let (Some(c), Some(m)) = (&cpus, &mem) {
            return (c.clone(), m.clone());
        }
        let pc = procs
            .iter()
            .find(|p| p.cgroup_id == id && !p.kthread)
            .and_then(|p| self.root.read_opt(format!("/proc/{}/cgroup", p.tgid)))
            .map(|t| ProcCgroup::parse(&t));
        let v1_file = |get: fn(&ProcCgroup) -> Option<&str>,
                       file: fn(&Mounts, &Sysroot, &str) -> Option<String>| {
            pc.as_ref()
                .and_then(|pc| file(&self.mounts, &self.root, get(pc)?))
                .unwrap_or_default()
        };
        (
            cpus.unwrap_or_else(|| v1_file(ProcCgroup::v1_cpuset, Mounts::v1_cpus_file)),
            mem.unwrap_or_else(|| v1_file(ProcCgroup::v1_memory, Mounts::v1_mem_file)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(tgid: u32, cg: u64) -> RawTask {
        RawTask {
            tgid,
            tid: tgid,
            start_ticks: 7,
            cgroup_id: cg,
            ..Default::default()
        }
    }

    /// The sampler's ids: one walk for ids never seen, none for known
    /// ones, one /proc read per process for the hybrid root, and a
    /// vanished id not walked for again at every sample.
    #[test]
    fn kernel_ids_cost_one_walk_and_the_hybrid_root_one_read_per_process() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let w = |rel: &str, text: &str| {
            let p = r.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            "proc/self/mountinfo",
            "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
             35 30 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n\
             36 30 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
        );
        w("sys/fs/cgroup/unified/a/b/cgroup.procs", "");
        w("sys/fs/cgroup/unified/a/b/memory.current", "8388608\n");
        w("sys/fs/cgroup/cpuset/web/cpuset.effective_cpus", "2-3\n");
        w(
            "sys/fs/cgroup/memory/web/db/memory.usage_in_bytes",
            "1048576\n",
        );
        // The v1 root's figure is the whole host's: not the root cgroup's.
        w("sys/fs/cgroup/memory/memory.usage_in_bytes", "9999999999\n");
        w("proc/50/cgroup", "4:memory:/\n3:cpuset:/\n0::/\n");
        w(
            "proc/30/cgroup",
            "4:memory:/web/db\n3:cpuset:/web\n1:name=systemd:/web\n0::/\n",
        );
        w("proc/10/cgroup", "3:cpuset:/web\n0::/a/b\n");
        let ino = |rel: &str| std::fs::metadata(r.join(rel)).unwrap().ino();
        let (root_id, b_id) = (
            ino("sys/fs/cgroup/unified"),
            ino("sys/fs/cgroup/unified/a/b"),
        );
        let mut res = CgroupResolver::new(&Sysroot::new(r));
        let mut procs = vec![task(10, b_id), task(30, root_id)];
        let mut threads = vec![
            RawTask {
                tid: 11,
                ..task(10, b_id)
            },
            RawTask {
                tid: 31,
                ..task(30, root_id)
            },
        ];
        let t = res.resolve(&mut threads, &mut procs, true);
        assert_eq!(res.walks, 1);
        assert_eq!(res.proc_reads, 1, "only the process in the hybrid root");
        let path_of = |id: u64| t.iter().find(|c| c.id == id).map(|c| c.path.as_str());
        assert_eq!(path_of(b_id), Some("/a/b"));
        assert_eq!(
            t.iter().find(|c| c.id == b_id).unwrap().mem_bytes,
            Some(8 << 20)
        );
        // The hybrid root says nothing; v1 does (its deepest path, whose
        // memory is that of its own memory hierarchy).
        assert_eq!(procs[1].cgroup_id, cgroup_key(true, "/web/db"));
        assert_eq!(threads[1].cgroup_id, procs[1].cgroup_id);
        assert_eq!(threads[0].cgroup_id, b_id);
        let web = t.iter().find(|c| c.path == "/web/db").unwrap();
        assert!(web.v1);
        assert_eq!((web.cpus.as_str(), web.mem_bytes), ("2-3", Some(1 << 20)));

        // Same ids again: no walk, no read.
        let mut procs = vec![task(10, b_id), task(30, root_id)];
        res.resolve(&mut [], &mut procs, true);
        assert_eq!((res.walks, res.proc_reads), (1, 1));
        // A new cgroup: one walk finds it.
        w("sys/fs/cgroup/unified/c/cgroup.procs", "");
        let c_id = ino("sys/fs/cgroup/unified/c");
        w("proc/40/cgroup", "0::/c\n");
        let mut procs = vec![task(10, b_id), task(40, c_id)];
        let t = res.resolve(&mut [], &mut procs, true);
        assert_eq!(res.walks, 2);
        let c = t.iter().find(|c| c.id == c_id).unwrap();
        // No memory controller for it: unknown, not 0.
        assert_eq!((c.path.as_str(), c.mem_bytes), ("/c", None));
        // An id no walk finds (a cgroup gone already): one walk, then it
        // waits; the process is named from /proc meanwhile.
        let mut procs = vec![task(40, 999_999_999)];
        let t = res.resolve(&mut [], &mut procs, true);
        assert_eq!(res.walks, 3);
        assert_eq!(t[0].path, "/c");
        let mut procs = vec![task(40, 999_999_999)];
        res.resolve(&mut [], &mut procs, true);
        assert_eq!(res.walks, 3, "a missing id is not walked for every sample");
        // The v1 root's usage is the whole host's: the root has none.
        let mut roots = vec![task(50, root_id)];
        let t = res.resolve(&mut [], &mut roots, true);
        assert_eq!(t.len(), 1);
        assert_eq!((t[0].path.as_str(), t[0].mem_bytes), ("/", None));
    }
}
