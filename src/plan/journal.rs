//! The state directory's record of applies, so that host writes are a
//! transaction a later nettop can account for:
//!
//! - **One at a time.** An apply or a revert holds `apply.lock` (an
//!   `flock`, released by the kernel however the holder ends) from before
//!   it reads the values it will restore until its verdict. A second one
//!   is refused at once instead of measuring the first one's changes, or
//!   recording them as "previous".
//! - **Every apply ends with a verdict** beside its revert file
//!   (`revert-….json.verdict`): kept, reverted, or restored by `--revert`.
//!   A revert file without one is an apply that never finished (killed,
//!   power cut, a revert that failed). [`unfinished`] finds those, compares
//!   their entries with the host now, and the front ends say so with the
//!   exact command that undoes them ([`undo_command`]).

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::Kind;
use super::revert::{self, Entry, RevertFile};
use crate::sys::cpuset::CpuSet;
use crate::sys::safefile;

const LOCK_FILE: &str = "apply.lock";
const VERDICT_SUFFIX: &str = ".verdict";

/// How an apply ended, as its verdict file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The changes stay; the revert file is the way back.
    Kept,
    /// Restored automatically (judged worse, interrupted, or an error).
    Reverted,
    /// It stopped before its first write.
    NothingWritten,
    /// Restored by `--revert`.
    RestoredByRevert,
    /// Found unfinished with none of its changes left on the host.
    FoundRestored,
}

#[derive(Debug, Serialize, Deserialize)]
struct Verdict {
    outcome: Outcome,
    unix: u64,
}

/// The apply lock, held until dropped.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

fn flock(f: &File, op: i32) -> std::io::Result<()> {
    // SAFETY: flock(2) on a descriptor `f` keeps open for the call.
    if unsafe { libc::flock(f.as_raw_fd(), op | libc::LOCK_NB) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The PID the holder wrote into the lock file, for the message.
fn holder(dir: &Path) -> String {
    std::fs::read_to_string(lock_path(dir))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .map_or_else(|| "another nettop".into(), |p| format!("nettop pid {p}"))
}

/// Takes the apply lock in `dir` (a checked state directory), or says who
/// holds it. The lock file is never a symlink, device or another user's
/// file (nettop writes its PID into it).
pub fn lock(dir: &Path) -> anyhow::Result<Lock> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = lock_path(dir);
    safefile::check_path(&path)?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    let m = file.metadata()?;
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    if !m.is_file() || m.uid() != unsafe { libc::geteuid() } {
        bail!(
            "{} is not a regular file of ours; refusing to use it as the apply lock",
            path.display()
        );
    }
    match flock(&file, libc::LOCK_EX) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => bail!(
            "{} is applying or reverting changes on this host now (it holds {}); wait for it to \
             finish: two at once would each record the other's changes as the way back",
            holder(dir),
            path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
    // Who holds it, for the next one's message; a full disk costs only that.
    let _ = file
        .set_len(0)
        .and_then(|()| (&file).write_all(format!("{}\n", std::process::id()).as_bytes()));
    Ok(Lock { _file: file })
}

/// Whether an apply or revert holds the lock now (without taking it).
fn busy(dir: &Path) -> bool {
    let Ok(f) = File::open(lock_path(dir)) else {
        return false;
    };
    match flock(&f, libc::LOCK_SH) {
        Ok(()) => {
            let _ = flock(&f, libc::LOCK_UN);
            false
        }
        Err(_) => true,
    }
}

/// A dry run's stand-in for [`lock`]: refuses as the real run would while
/// another apply or revert holds the lock, without taking it.
pub fn refuse_if_busy(dir: &Path) -> anyhow::Result<()> {
    if busy(dir) {
        bail!(
            "{} is applying or reverting changes on this host now (it holds {}); the real run \
             would be refused",
            holder(dir),
            lock_path(dir).display()
        );
    }
    Ok(())
}

fn verdict_path(revert_file: &Path) -> PathBuf {
    let mut p = revert_file.as_os_str().to_owned();
    p.push(VERDICT_SUFFIX);
    PathBuf::from(p)
}

/// Writes the verdict beside `revert_file`. A failure is logged, not
/// returned: the apply itself is over, and the next command will report
/// it as unfinished, which errs on the side of saying too much.
pub fn settle(revert_file: &Path, outcome: Outcome) {
    let v = Verdict {
        outcome,
        unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    let body = match serde_json::to_vec(&v) {
        Ok(mut b) => {
            b.push(b'\n');
            b
        }
        Err(e) => {
            log::warn!("cannot encode the verdict: {e}");
            return;
        }
    };
    let path = verdict_path(revert_file);
    let res = safefile::replace(&path, &body, |old| {
        serde_json::from_slice::<Verdict>(old)
            .map(drop)
            .context("not a verdict")
    });
    if let Err(e) = res {
        log::warn!(
            "{e:#}: {} will be reported as an unfinished apply",
            revert_file.display()
        );
    }
}

/// An apply that never reached its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Unfinished {
    pub file: PathBuf,
    /// Entries whose file still holds what the apply wrote.
    pub still_applied: Vec<Entry>,
    /// Entries that could not be read now, and why.
    pub unreadable: Vec<String>,
    pub entries: usize,
}

impl Unfinished {
    /// Whether any of its changes may still be on the host.
    pub fn left_changes(&self) -> bool {
        !self.still_applied.is_empty() || !self.unreadable.is_empty()
    }

    /// The status line's shorter form of [`Unfinished::summary`].
    pub fn short(&self, dir: &Path) -> String {
        format!(
            "an earlier apply did not finish and left {} change(s) on this host; undo: {}",
            self.still_applied.len().max(self.unreadable.len()),
            undo_command(dir, &self.file)
        )
    }

    /// One line for a log: what is left, and the undo.
    pub fn summary(&self, dir: &Path) -> String {
        let what = if self.still_applied.is_empty() && self.unreadable.is_empty() {
            "none of its changes are on the host now".to_string()
        } else {
            let mut parts = Vec::new();
            if !self.still_applied.is_empty() {
                parts.push(format!(
                    "{} of its {} change(s) still on the host ({})",
                    self.still_applied.len(),
                    self.entries,
                    self.still_applied
                        .iter()
                        .map(|e| format!("{}{}", e.path, super::apply::ns_note(&e.netns)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !self.unreadable.is_empty() {
                parts.push(format!("unreadable now: {}", self.unreadable.join("; ")));
            }
            parts.join("; ")
        };
        format!(
            "an earlier apply did not finish (no verdict): {what}; undo it with: {}",
            undo_command(dir, &self.file)
        )
    }
}

/// What [`unfinished`] found.
#[derive(Debug, Default)]
pub struct Scan {
    /// An apply or revert holds the lock now.
    pub busy: bool,
    pub unfinished: Vec<Unfinished>,
}

/// Whether two values of a file of `kind` are the same setting (the
/// kernel prints masks with leading zeros the plan did not write).
fn same(kind: Kind, a: &str, b: &str) -> bool {
    let parsed = match kind {
        Kind::IrqAffinity => CpuSet::parse_list(a).ok().zip(CpuSet::parse_list(b).ok()),
        _ => CpuSet::parse_mask(a).ok().zip(CpuSet::parse_mask(b).ok()),
    };
    parsed.map_or(a.trim() == b.trim(), |(x, y)| x == y)
}

fn revert_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("revert-") && n.ends_with(".json"))
        })
        .collect();
    v.sort();
    v
}

/// Every revert file in `dir` without a verdict, with what of it is on
/// the host now. Files from before the last boot are not unfinished: a
/// reboot reset what they changed. Read-only; a missing directory or key
/// is nothing to report.
pub fn unfinished(dir: &Path) -> Scan {
    if !dir.is_dir() {
        return Scan::default();
    }
    let mut scan = Scan {
        busy: busy(dir),
        unfinished: Vec::new(),
    };
    for file in revert_files(dir) {
        if verdict_path(&file).exists() {
            continue;
        }
        let rf = match revert::read(dir, &file) {
            Ok(rf) => rf,
            Err(e) if revert::is_other_boot(&e) => continue,
            Err(e) => {
                log::warn!("{e:#}");
                continue;
            }
        };
        scan.unfinished.push(compare(file, &rf));
    }
    scan
}

fn compare(file: PathBuf, rf: &RevertFile) -> Unfinished {
    let mut u = Unfinished {
        file,
        still_applied: Vec::new(),
        unreadable: Vec::new(),
        entries: rf.entries.len(),
    };
    for e in &rf.entries {
        match super::apply::read(&e.netns, &e.path) {
            Ok(now) if same(e.kind, &now, &e.applied) && !same(e.kind, &now, &e.previous) => {
                u.still_applied.push(e.clone());
            }
            Ok(_) => {}
            Err(err) => u.unreadable.push(format!("{}: {err:#}", e.path)),
        }
    }
    u
}

/// Before a new apply (or its dry run): refuses while an earlier apply's
/// changes are on the host, naming the undo; settles (unless `dry_run`)
/// the unfinished ones that left nothing behind.
pub fn clear_for_apply(dir: &Path, dry_run: bool) -> anyhow::Result<()> {
    let scan = unfinished(dir);
    let mut blocking = Vec::new();
    for u in scan.unfinished {
        if u.left_changes() {
            blocking.push(u.summary(dir));
        } else if !dry_run {
            log::info!("{}: settled", u.summary(dir));
            settle(&u.file, Outcome::FoundRestored);
        }
    }
    if !blocking.is_empty() {
        bail!(
            "{}\n(a new apply would record those changes as this host's previous values; undo \
             the earlier one first, or remove its revert file to keep its changes for good)",
            blocking.join("\n")
        );
    }
    Ok(())
}

/// The command that undoes `file`: with `--state-dir` when the key is not
/// in the default place, quoted for a POSIX shell.
pub fn undo_command(dir: &Path, file: &Path) -> String {
    let mut cmd = format!("nettop --revert {}", quote(&file.to_string_lossy()));
    if dir != Path::new(revert::DEFAULT_DIR) {
        cmd.push_str(&format!(" --state-dir {}", quote(&dir.to_string_lossy())));
    }
    cmd
}

fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-,:=+@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_names_the_state_dir_only_when_not_the_default() {
        let f = Path::new("/var/lib/nettop/revert-1-2.json");
        assert_eq!(
            undo_command(Path::new(revert::DEFAULT_DIR), f),
            "nettop --revert /var/lib/nettop/revert-1-2.json"
        );
        assert_eq!(
            undo_command(
                Path::new("/tmp/my state"),
                Path::new("/tmp/my state/r.json")
            ),
            "nettop --revert '/tmp/my state/r.json' --state-dir '/tmp/my state'"
        );
    }

    #[test]
    fn masks_compare_as_sets() {
        assert!(same(Kind::Rps, "00000002", "2"));
        assert!(!same(Kind::Rps, "00000002", "0"));
        assert!(same(Kind::IrqAffinity, "0-1", "0,1"));
    }

    #[test]
    fn a_second_lock_is_refused_with_the_holders_pid() {
        let d = tempfile::tempdir().unwrap();
        let held = lock(d.path()).unwrap();
        let e = lock(d.path()).unwrap_err().to_string();
        assert!(
            e.contains(&format!("nettop pid {}", std::process::id())),
            "{e}"
        );
        assert!(busy(d.path()));
        drop(held);
        assert!(!busy(d.path()));
        lock(d.path()).unwrap();
    }
}
