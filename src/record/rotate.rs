//! Rotation of `--record FILE --max-size S`: FILE, FILE.1 … FILE.N.
//!
//! Rotation renames and deletes, so it only ever touches files this run
//! created, identified by device and inode rather than by name:
//!
//! - before recording starts, any existing FILE.1 … FILE.N is an error (it
//!   is an older recording's part; shifting or deleting it would destroy
//!   evidence without asking);
//! - renames never replace (`RENAME_NOREPLACE`), so a file that appears
//!   under one of the names during the run stops the recording with an
//!   error instead of being overwritten;
//! - the oldest part is deleted only if it is still the file we wrote.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::sys::safefile::{self, FileId};

/// Rotated files kept besides the live one (FILE.1 … FILE.N) unless `--keep`
/// says otherwise; older ones are deleted, so disk use stays below
/// (N + 1) × `--max-size`.
pub const MAX_ROTATED: u32 = 4;

/// FILE.k.
pub fn part_path(path: &Path, k: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{k}"));
    PathBuf::from(s)
}

/// Refuses to start a rotating recording over an older recording's parts.
pub fn check_free(path: &Path) -> anyhow::Result<()> {
    check_free_n(path, MAX_ROTATED)
}

/// [`check_free`] for a recording that keeps `keep` old parts.
pub fn check_free_n(path: &Path, keep: u32) -> anyhow::Result<()> {
    for k in 1..=keep {
        let p = part_path(path, k);
        if safefile::id_of(&p)
            .with_context(|| format!("cannot check {}", p.display()))?
            .is_some()
        {
            bail!(
                "{} exists (an older recording's part?); --max-size rotates into {}.1 … .{keep} \
                 and will not shift or delete files it did not create: move them away or choose another name",
                p.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// The parts this run created, newest first: `ids[0]` is FILE, `ids[k]` FILE.k.
#[derive(Debug)]
pub struct Parts {
    path: PathBuf,
    ids: Vec<Option<FileId>>,
}

impl Parts {
    /// Tracks the live file `path`, created by this run as `live`.
    pub fn new(path: &Path, live: FileId) -> Parts {
        Parts::keeping(path, Some(live), MAX_ROTATED)
    }

    /// [`Parts::new`] keeping `keep` old parts; `live` is `None` when the
    /// first part could not be created (a service starting on a full disk).
    pub fn keeping(path: &Path, live: Option<FileId>, keep: u32) -> Parts {
        let mut ids = vec![None; keep as usize + 1];
        ids[0] = live;
        Parts {
            path: path.to_path_buf(),
            ids,
        }
    }

    /// Shifts FILE → FILE.1 → … → FILE.N, deleting our FILE.N. Afterwards
    /// FILE does not exist; call [`Parts::created`] with the new live file.
    pub fn rotate(&mut self) -> anyhow::Result<()> {
        let n = self.ids.len() - 1;
        self.remove(n)?;
        for k in (0..n).rev() {
            let Some(id) = self.ids[k] else { continue };
            let from = if k == 0 {
                self.path.clone()
            } else {
                part_path(&self.path, k as u32)
            };
            let to = part_path(&self.path, k as u32 + 1);
            if safefile::id_of(&from)? != Some(id) {
                bail!(
                    "{} was moved or replaced during the recording; stopping rather than rotating \
                     files this recording did not create",
                    from.display()
                );
            }
            safefile::rename_noreplace(&from, &to).with_context(|| {
                format!(
                    "cannot rotate {} to {} (a file this recording did not create is in the way?)",
                    from.display(),
                    to.display()
                )
            })?;
            self.ids[k + 1] = Some(id);
            self.ids[k] = None;
        }
        Ok(())
    }

    /// Records the new live file created after [`Parts::rotate`].
    pub fn created(&mut self, live: FileId) {
        self.ids[0] = Some(live);
    }

    /// Whether FILE still is the live part this run created (a SIGHUP after
    /// logrotate moved it away finds it is not).
    pub fn live_in_place(&self) -> bool {
        self.ids[0].is_some() && safefile::id_of(&self.path).ok().flatten() == self.ids[0]
    }

    /// Lets go of the live part (it was moved away, and is no longer ours
    /// to rotate); call [`Parts::created`] with the new live file.
    pub fn forget_live(&mut self) {
        self.ids[0] = None;
    }

    /// Deletes our old parts last modified before `cutoff` (`--keep-for`).
    /// Parts shift with age, so the first one too old ends the walk and
    /// every older one goes with it. Returns the paths deleted.
    pub fn expire(&mut self, cutoff: std::time::SystemTime) -> anyhow::Result<Vec<PathBuf>> {
        let mut gone = Vec::new();
        let first_old = (1..self.ids.len()).find(|&k| {
            self.ids[k].is_some()
                && std::fs::symlink_metadata(part_path(&self.path, k as u32))
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t < cutoff)
        });
        if let Some(first) = first_old {
            for k in (first..self.ids.len()).rev() {
                if self.ids[k].is_some() {
                    self.remove(k)?;
                    gone.push(part_path(&self.path, k as u32));
                }
            }
        }
        Ok(gone)
    }

    /// Deletes the oldest part this run rotated (never FILE, the live
    /// one, nor the part `spare`), to make room on a full disk. Returns
    /// its path, or `None` when there is none left.
    pub fn remove_oldest(&mut self, spare: Option<FileId>) -> anyhow::Result<Option<PathBuf>> {
        let Some(k) = (1..self.ids.len())
            .rev()
            .find(|&k| self.ids[k].is_some() && self.ids[k] != spare)
        else {
            return Ok(None);
        };
        self.remove(k)?;
        Ok(Some(part_path(&self.path, k as u32)))
    }

    /// Deletes FILE.k if it still is the file this run wrote there.
    fn remove(&mut self, k: usize) -> anyhow::Result<()> {
        let Some(ours) = self.ids[k] else {
            return Ok(());
        };
        let p = part_path(&self.path, k as u32);
        match safefile::id_of(&p)? {
            Some(id) if id == ours => std::fs::remove_file(&p)
                .with_context(|| format!("cannot remove {}", p.display()))?,
            Some(_) => bail!(
                "{} was replaced by a file this recording did not create; not deleting it",
                p.display()
            ),
            None => {}
        }
        self.ids[k] = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(p: &Path, text: &str) -> FileId {
        let mut o = safefile::create_output(p).unwrap();
        std::io::Write::write_all(&mut o.file, text.as_bytes()).unwrap();
        o.id
    }

    #[test]
    fn rotates_only_its_own_files() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r");
        check_free(&f).unwrap();
        let mut parts = Parts::new(&f, create(&f, "0"));
        for i in 1..=6 {
            parts.rotate().unwrap();
            parts.created(create(&f, &i.to_string()));
        }
        // Newest is live; parts hold the four before it; older ones deleted.
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "6");
        for k in 1..=MAX_ROTATED {
            let got = std::fs::read_to_string(part_path(&f, k)).unwrap();
            assert_eq!(got, (6 - k).to_string());
        }
        assert!(!part_path(&f, MAX_ROTATED + 1).exists());
        assert!(check_free(&f).is_err(), "parts exist now");
    }

    #[test]
    fn making_room_deletes_the_oldest_part_never_the_live_or_spared_one() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r");
        let mut parts = Parts::new(&f, create(&f, "0"));
        for i in 1..=3 {
            parts.rotate().unwrap();
            parts.created(create(&f, &i.to_string()));
        }
        // r.3 ("0") is the oldest; r.1 ("2") is spared.
        let spare = safefile::id_of(&part_path(&f, 1)).unwrap();
        assert_eq!(parts.remove_oldest(spare).unwrap(), Some(part_path(&f, 3)));
        assert_eq!(parts.remove_oldest(spare).unwrap(), Some(part_path(&f, 2)));
        assert_eq!(parts.remove_oldest(spare).unwrap(), None);
        assert_eq!(std::fs::read_to_string(part_path(&f, 1)).unwrap(), "2");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "3");
    }

    #[test]
    fn a_foreign_file_stops_rotation_untouched() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r");
        let mut parts = Parts::new(&f, create(&f, "0"));
        parts.rotate().unwrap();
        parts.created(create(&f, "1"));
        // Someone else's file appears where FILE.2 will go.
        std::fs::write(part_path(&f, 2), "foreign").unwrap();
        let e = format!("{:#}", parts.rotate().unwrap_err());
        assert!(e.contains("r.2"), "{e}");
        assert_eq!(
            std::fs::read_to_string(part_path(&f, 2)).unwrap(),
            "foreign"
        );
        assert_eq!(std::fs::read_to_string(part_path(&f, 1)).unwrap(), "0");
        // The oldest part swapped for another file is not deleted.
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r");
        let mut parts = Parts::new(&f, create(&f, "0"));
        for i in 1..=MAX_ROTATED {
            parts.rotate().unwrap();
            parts.created(create(&f, &i.to_string()));
        }
        let oldest = part_path(&f, MAX_ROTATED);
        // Replaced by rename, so the new file cannot reuse the old inode.
        let other = d.path().join("other");
        std::fs::write(&other, "swapped").unwrap();
        std::fs::rename(&other, &oldest).unwrap();
        assert!(parts.rotate().is_err());
        assert_eq!(std::fs::read_to_string(&oldest).unwrap(), "swapped");
    }
}
