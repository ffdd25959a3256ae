//! The steps of an apply that the command line (`--plan --apply`) and the
//! TUI (`P` in the Pinning view) share: the revert file's entries read
//! from the host, the writes in order, and the verdict with its automatic
//! revert. Measuring is the caller's: the command line sleeps through its
//! windows, the TUI keeps drawing frames through them.
//!
//! Written changes are kernel state that outlives nettop, so from the
//! first write until the verdict they are held by an [`Armed`] guard:
//! dropped on any way out (an error, a panic, the TUI's quit), it restores
//! them, and [`restore_all_armed`] lets a last-resort exit (the TUI's
//! signal watchdog) do the same without unwinding.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Plan;
use super::apply::{self, ns_note};
use super::journal::{self, Outcome};
use super::measure::{self, Measure};
use super::revert::{self, Entry, RevertFile};
use crate::sys::cpuset::CpuSet;

/// The revert file's entries for every change `--apply` writes: each
/// checked before anything is written ([`apply::preflight`]: the value,
/// the namespace, the file writable) and its current value read now.
pub fn entries(plan: &Plan) -> anyhow::Result<Vec<Entry>> {
    plan.applied()
        .map(|c| {
            Ok(Entry {
                kind: c.kind,
                netns: c.netns.clone(),
                path: c.target.clone(),
                previous: apply::preflight(c.kind, &c.netns, &c.target, &c.to)?,
                applied: c.to.clone(),
            })
        })
        .collect()
}

/// "PATH (netns NS): OLD -> NEW", as both front ends list the writes.
pub fn entry_line(e: &Entry) -> String {
    format!(
        "{}{}: {} -> {}",
        e.path,
        ns_note(&e.netns),
        e.previous,
        e.applied
    )
}

/// An armed apply: its revert file (contents and path) and how many of
/// its entries are written so far.
struct Held {
    rf: RevertFile,
    path: PathBuf,
    written: usize,
}

/// Every armed apply.
static ARMED: Mutex<BTreeMap<u64, Held>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn armed() -> std::sync::MutexGuard<'static, BTreeMap<u64, Held>> {
    // A panic while holding it leaves the map as it was: still usable.
    ARMED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The written entries restored (last written first), and the verdict
/// recorded beside the revert file when all were: a failed restore leaves
/// none, so the next nettop reports the apply as unfinished.
fn restore_written(h: &Held) -> (Vec<String>, bool) {
    let part = RevertFile {
        entries: h.rf.entries[..h.written.min(h.rf.entries.len())].to_vec(),
        ..h.rf.clone()
    };
    let (lines, ok) = revert::restore(&part);
    if ok {
        let outcome = if h.written == 0 {
            Outcome::NothingWritten
        } else {
            Outcome::Reverted
        };
        journal::settle(&h.path, outcome);
    }
    (lines, ok)
}

/// Written changes not yet judged: restored when dropped, unless kept.
/// Created once the revert file is on disk, before the first write; the
/// caller holds the apply lock ([`journal::lock`]) for its whole life.
#[must_use = "dropping the guard restores what it wrote"]
pub struct Armed {
    id: u64,
}

impl Armed {
    /// `path` is where `rf` was written: its verdict goes beside it.
    pub fn new(rf: RevertFile, path: &Path) -> Armed {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        armed().insert(
            id,
            Held {
                rf,
                path: path.to_path_buf(),
                written: 0,
            },
        );
        Armed { id }
    }

    /// Writes every entry in order, calling `each` after each write. When
    /// one fails, the ones before it are restored and the error says so.
    pub fn write_all(&mut self, mut each: impl FnMut(&Entry)) -> anyhow::Result<Vec<String>> {
        let entries = armed()
            .get(&self.id)
            .map(|h| h.rf.entries.clone())
            .unwrap_or_default();
        let mut written = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            if let Err(err) = apply::write(e.kind, &e.netns, &e.path, &e.applied) {
                let (lines, _) = self
                    .take()
                    .map_or_else(Default::default, |h| restore_written(&h));
                anyhow::bail!(
                    "applying stopped at {}{}: {err:#}; the {i} change(s) before it were \
                     restored ({})",
                    e.path,
                    ns_note(&e.netns),
                    lines.join("; ")
                );
            }
            if let Some(h) = armed().get_mut(&self.id) {
                h.written = i + 1;
            }
            each(e);
            written.push(entry_line(e));
        }
        Ok(written)
    }

    fn take(&self) -> Option<Held> {
        armed().remove(&self.id)
    }

    /// The changes stay; the revert file is the way back.
    pub fn keep(self) {
        if let Some(h) = self.take() {
            journal::settle(&h.path, Outcome::Kept);
        }
    }

    /// Restores what was written: one line per file, and whether all of
    /// them were restored.
    pub fn restore(self) -> (Vec<String>, bool) {
        self.take()
            .map_or((Vec::new(), true), |h| restore_written(&h))
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(h) = self.take() {
            let (lines, ok) = restore_written(&h);
            if h.written > 0 {
                log::warn!(
                    "the apply ended before its verdict: {} ({})",
                    if ok { "reverted" } else { "the revert FAILED" },
                    lines.join("; ")
                );
            }
        }
    }
}

/// Restores every armed apply now; for an exit that cannot unwind (the
/// TUI's watchdog after a signal). Returns how many were restored.
pub fn restore_all_armed() -> usize {
    let all = std::mem::take(&mut *armed());
    for h in all.values() {
        let _ = restore_written(h);
    }
    all.len()
}

/// How an apply ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Why the plan was judged worse; empty when it was kept.
    pub worse: Vec<String>,
    /// What the automatic revert restored.
    pub restored: Vec<String>,
    /// `false` when the automatic revert failed for some file.
    pub ok: bool,
}

impl Verdict {
    pub fn reverted(&self) -> bool {
        !self.worse.is_empty()
    }

    /// The verdict as the text front ends say it, ending with the revert
    /// file's path either way; `undo` is the command that undoes a kept
    /// plan ([`journal::undo_command`]).
    pub fn text(&self, revert_file: &str, undo: &str) -> String {
        if self.worse.is_empty() {
            format!("kept. To undo: {undo}\nrevert file: {revert_file}\n")
        } else {
            format!(
                "reverted automatically: {}\n  {}\nrevert file: {revert_file}\n",
                self.worse.join("; "),
                self.restored.join("\n  ")
            )
        }
    }
}

/// Judges `after` against `before` ([`measure::judge`]; the victims' own
/// CPUs are busy by design) and keeps the changes or restores them, with
/// the revert logged with the revert file's path.
pub fn conclude(
    plan: &Plan,
    (before, after): (&Measure, &Measure),
    armed: Armed,
    revert_file: &str,
) -> Verdict {
    let victim_cpus = plan
        .victims
        .iter()
        .fold(CpuSet::new(), |a, v| a.union(&v.affinity));
    let worse = measure::judge(before, after, &victim_cpus);
    if worse.is_empty() {
        armed.keep();
        return Verdict {
            worse,
            restored: Vec::new(),
            ok: true,
        };
    }
    log::warn!(
        "the plan made things worse ({}): reverting from {revert_file}",
        worse.join("; ")
    );
    let (restored, ok) = armed.restore();
    Verdict {
        worse,
        restored,
        ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Kind;

    /// An entry whose write the validator refuses before touching the
    /// host: a write that fails without a kernel file.
    fn refused() -> Entry {
        Entry {
            kind: Kind::Rps,
            netns: String::new(),
            path: "/sys/class/net/lo/queues/rx-0/rps_cpus".into(),
            previous: "0".into(),
            applied: "not a mask".into(),
        }
    }

    #[test]
    fn a_guard_registers_until_kept_or_dropped() {
        let held = |a: &Armed| armed().contains_key(&a.id);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("revert-1-1.json");
        let a = Armed::new(RevertFile::new(Vec::new()), &p);
        let id = a.id;
        assert!(held(&a));
        a.keep();
        assert!(!armed().contains_key(&id));
        let a = Armed::new(RevertFile::new(Vec::new()), &p);
        let id = a.id;
        drop(a);
        assert!(!armed().contains_key(&id));
    }

    #[test]
    fn a_failed_write_disarms_and_says_where() {
        let d = tempfile::tempdir().unwrap();
        let mut a = Armed::new(
            RevertFile::new(vec![refused()]),
            &d.path().join("revert-1-1.json"),
        );
        let e = a.write_all(|_| {}).unwrap_err().to_string();
        assert!(e.contains("applying stopped at /sys/class/net/lo"), "{e}");
        assert!(e.contains("the 0 change(s) before it"), "{e}");
        assert!(armed().get(&a.id).is_none());
    }
}
