//! Processes the task sampler's walk does not yield, found and read the
//! /proc way.
//!
//! The task walks do not yield every task on every kernel: on the
//! development VM's kernel neither the `iter/task` walk nor the open-coded
//! task iterator ever yields PID 1's thread group (a minimal iterator
//! pinned with bpftool does not see it either),
//! while /proc lists it. With the sampler alone, init, and with it the root
//! of the forest view, was missing from every output. So the pass's
//! records are held against the kernel's own task count (/proc/loadavg):
//! when they fall short, init's thread count, or else /proc's process list,
//! says which processes the walk left out, and those are read through
//! /proc like any task on the /proc path. The list is read again only when
//! the shortfall changes, so a host whose walk yields everything pays one
//! small read per sample.

use anyhow::Result;

use super::procfiles;
use crate::sample::RawTask;
use crate::sys::sysroot::Sysroot;

/// What the last look found.
#[derive(Debug, Default)]
pub struct Unseen {
    /// Processes the walk did not yield, ascending.
    tgids: Vec<u32>,
    /// The walk's shortfall in tasks when they were listed.
    short: usize,
    /// /proc listings so far (tests check a steady host costs none).
    pub listings: u64,
}

impl Unseen {
    /// The processes of this pass to read through /proc: of the `-p`
    /// processes (`pids`) those the pass has no row for, or, without `-p`,
    /// those /proc lists and the pass has not. `seen`: the pass's process
    /// rows, sorted by TGID; `records`: its task records, all of them
    /// (filtered out or not); `tasks_now`: the kernel's task count.
    pub fn find(
        &mut self,
        root: &Sysroot,
        pids: &[u32],
        seen: &[RawTask],
        records: usize,
        tasks_now: usize,
    ) -> Result<Vec<u32>> {
        let has = |p: u32| seen.binary_search_by_key(&p, |t| t.tgid).is_ok();
        if !pids.is_empty() {
            return Ok(pids
                .iter()
                .copied()
                .filter(|&p| !has(p) && root.path(format!("/proc/{p}")).exists())
                .collect());
        }
        // Tasks that exit during the pass can hide the shortfall (the count
        // is taken after it): no shortfall keeps what the last look found,
        // as long as it exists; only a new shortfall lists /proc again.
        let short = tasks_now.saturating_sub(records);
        if short > 0 && short != self.short {
            self.tgids = if !has(1) && procfiles::count_threads(root, 1) == Some(short) {
                // The one gap seen so far: init's group. Its thread count
                // explaining the whole shortfall spares the listing, which
                // steps over every thread's PID (~5 ms at 30,000).
                vec![1]
            } else {
                self.listings += 1;
                procfiles::list_pids(root)?
            };
        } else if short == 0 {
            self.tgids
                .retain(|p| root.path(format!("/proc/{p}")).exists());
        }
        self.short = short;
        // Processes born after the pass are listed too; the next pass
        // yields them, and a process is never read twice.
        self.tgids.retain(|&p| !has(p));
        Ok(self.tgids.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc_row(tgid: u32) -> RawTask {
        RawTask {
            tgid,
            tid: tgid,
            ..Default::default()
        }
    }

    #[test]
    fn lists_proc_only_when_the_shortfall_changes() {
        let dir = tempfile::tempdir().unwrap();
        for p in [1, 2, 30] {
            std::fs::create_dir_all(dir.path().join(format!("proc/{p}"))).unwrap();
        }
        let root = Sysroot::new(dir.path());
        let mut u = Unseen::default();
        let seen = [proc_row(2), proc_row(30)];
        // Every task yielded: nothing listed, nothing read.
        assert!(u.find(&root, &[], &seen, 5, 5).unwrap().is_empty());
        assert_eq!(u.listings, 0);
        // Two tasks short: /proc says which process is missing.
        assert_eq!(u.find(&root, &[], &seen, 5, 7).unwrap(), [1]);
        assert_eq!(u.listings, 1);
        // The same shortfall: the same process, no listing.
        assert_eq!(u.find(&root, &[], &seen, 5, 7).unwrap(), [1]);
        assert_eq!(u.listings, 1);
        // Tasks exited during the pass hide the shortfall: still read.
        assert_eq!(u.find(&root, &[], &seen, 9, 7).unwrap(), [1]);
        assert_eq!(u.listings, 1);
        // The walk yields it again: never read twice.
        let all = [proc_row(1), proc_row(2), proc_row(30)];
        assert!(u.find(&root, &[], &all, 5, 7).unwrap().is_empty());
        // -p: only the named processes, and only those that exist.
        assert_eq!(u.find(&root, &[1, 2, 99], &seen, 5, 5).unwrap(), [1]);
    }

    #[test]
    fn init_alone_is_read_without_listing_proc() {
        let dir = tempfile::tempdir().unwrap();
        for p in ["1/task/1", "1/task/7", "1/task/8", "2/task/2", "30/task/30"] {
            std::fs::create_dir_all(dir.path().join(format!("proc/{p}"))).unwrap();
        }
        let root = Sysroot::new(dir.path());
        let mut u = Unseen::default();
        let seen = [proc_row(2), proc_row(30)];
        // Three tasks short, and init has three threads: no listing.
        assert_eq!(u.find(&root, &[], &seen, 5, 8).unwrap(), [1]);
        assert_eq!(u.listings, 0);
        // A shortfall init does not explain: /proc is listed.
        let mut u = Unseen::default();
        assert_eq!(u.find(&root, &[], &seen, 5, 9).unwrap(), [1]);
        assert_eq!(u.listings, 1);
    }
}
