//! Retention of a long-running recorder: `--keep N` parts and `--keep-for D`,
//! and the daily files of `--record DIR` (as atop keeps its daily logs).
//!
//! `--record FILE` rotates into FILE.1 … FILE.N and only ever deletes files
//! the same run created ([`super::rotate`]). `--record DIR` is meant for a
//! service that restarts: its retention must also remove the parts earlier
//! runs left, so it deletes by name instead — but only in a directory that
//! is nettop's own (owned by the user nettop runs as, writable by no one
//! else, so no other user can plant or swap a file there), and only regular
//! files of that user whose name is a part name and whose content starts
//! with the recording magic.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};

use super::rotate::MAX_ROTATED;

/// Most parts `--keep` accepts: 27 years of daily files.
pub const MAX_KEEP: u32 = 10_000;
/// Longest `--keep-for`.
pub const MAX_KEEP_FOR: Duration = Duration::from_secs(10 * 366 * 86_400);

/// How many finished parts to keep, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Finished parts kept besides the live one.
    pub keep: u32,
    /// Finished parts last written longer ago than this are deleted.
    pub keep_for: Option<Duration>,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep: MAX_ROTATED,
            keep_for: None,
        }
    }
}

/// `--keep N`: 1 to [`MAX_KEEP`].
pub fn parse_keep(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("--keep 0 would delete every finished part; give at least 1".into()),
        Ok(n) if n <= MAX_KEEP => Ok(n),
        _ => Err(format!(
            "--keep '{s}': expected a whole number of parts from 1 to {MAX_KEEP}"
        )),
    }
}

/// `--keep-for D` in the one duration syntax ([`crate::sys::units`]).
pub fn parse_keep_for(s: &str) -> Result<Duration, String> {
    crate::sys::units::parse_duration("--keep-for", s, MAX_KEEP_FOR)
}

/// The file name of a part started at `unix_ms` (UTC):
/// `nettop-YYYYMMDD-HHMMSS.rec[.zst]`. Names sort by start time, in `ls`
/// as in retention.
pub fn part_name(unix_ms: u64, compressed: bool) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(unix_ms);
    // "2024-05-21T13:04:05Z"
    let iso = humantime::format_rfc3339_seconds(t).to_string();
    let digits: String = iso.chars().filter(char::is_ascii_digit).collect();
    let (date, time) = digits.split_at(8.min(digits.len()));
    let ext = if compressed { ".rec.zst" } else { ".rec" };
    format!("nettop-{date}-{time}{ext}")
}

/// The sort key of a part name (its start time's digits), or `None` for
/// any other name.
pub fn part_key(name: &str) -> Option<String> {
    let rest = name.strip_prefix("nettop-")?;
    let rest = rest
        .strip_suffix(".rec.zst")
        .or_else(|| rest.strip_suffix(".rec"))?;
    let (date, time) = rest.split_once('-')?;
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    (digits(date, 8) && digits(time, 6)).then(|| format!("{date}{time}"))
}

/// UTC day number of `unix_ms`: a new daily part starts when it changes.
pub fn utc_day(unix_ms: u64) -> u64 {
    unix_ms / 86_400_000
}

/// The effective user id.
fn euid() -> u32 {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuses a directory retention could be tricked in: it must be a real
/// directory (not a symlink), owned by the user nettop runs as, and
/// writable by no one else.
pub fn check_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir)
        .with_context(|| format!("--record {}: cannot read the directory", dir.display()))?;
    if !m.is_dir() {
        bail!(
            "--record {}: not a directory (a symbolic link is refused: daily files and their \
             retention need nettop's own directory)",
            dir.display()
        );
    }
    if m.uid() != euid() || m.mode() & 0o022 != 0 {
        bail!(
            "--record {}: retention deletes old parts there, so the directory must belong to \
             the user nettop runs as and be writable by no one else (owner uid {}, mode {:o}); \
             use a directory of its own, e.g. `install -d -m 0750 {}`",
            dir.display(),
            m.uid(),
            m.mode() & 0o7777,
            dir.display()
        );
    }
    Ok(())
}

/// A finished part in a recording directory.
#[derive(Debug)]
struct Part {
    key: String,
    path: PathBuf,
    modified: SystemTime,
}

/// Parts in `dir` that retention may delete: part names, regular files
/// of our user, recordings by content. `live` (the part being written) is
/// never one of them.
fn finished_parts(dir: &Path, live: &Path) -> anyhow::Result<Vec<Part>> {
    use std::os::unix::fs::MetadataExt;
    let mut parts = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        let path = e.path();
        let Some(key) = e.file_name().to_str().and_then(part_key) else {
            continue;
        };
        if path == live {
            continue;
        }
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !m.is_file() || m.uid() != euid() || !super::is_recording(&path) {
            continue;
        }
        let modified = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        parts.push(Part {
            key,
            path,
            modified,
        });
    }
    parts.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(parts)
}

/// Applies `ret` to the finished parts in `dir` at time `now`: keeps the
/// newest `keep`, and of those only the ones written within `keep_for`.
/// Returns the paths deleted, oldest first.
pub fn expire_dir(
    dir: &Path,
    live: &Path,
    ret: &Retention,
    now: SystemTime,
) -> anyhow::Result<Vec<PathBuf>> {
    let parts = finished_parts(dir, live)?;
    let excess = parts.len().saturating_sub(ret.keep as usize);
    let cutoff = ret.keep_for.and_then(|d| now.checked_sub(d));
    let mut gone = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        let too_old = cutoff.is_some_and(|c| p.modified < c);
        if i < excess || too_old {
            std::fs::remove_file(&p.path)
                .with_context(|| format!("retention: cannot remove {}", p.path.display()))?;
            gone.push(p.path);
        }
    }
    Ok(gone)
}

/// Deletes the oldest finished part in `dir` (by the same rules as
/// [`expire_dir`], whatever `--keep` says), to make room on a full disk.
/// Returns its path, or `None` when only `live` is left.
pub fn remove_oldest(dir: &Path, live: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Some(p) = finished_parts(dir, live)?.into_iter().next() else {
        return Ok(None);
    };
    std::fs::remove_file(&p.path)
        .with_context(|| format!("retention: cannot remove {}", p.path.display()))?;
    Ok(Some(p.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_sort_by_start_and_parse_back() {
        // 2024-05-21 13:04:05.678 UTC
        let ms = 1_716_296_645_678;
        assert_eq!(part_name(ms, true), "nettop-20240521-130405.rec.zst");
        assert_eq!(part_name(ms, false), "nettop-20240521-130405.rec");
        let k = |n: &str| part_key(n).unwrap();
        assert!(k(&part_name(ms, true)) < k(&part_name(ms + 1000, false)));
        assert!(part_name(ms, true) < part_name(ms + 1000, true));
        for bad in [
            "nettop-2024052-130405.rec",
            "nettop-20240521-130405-1.rec",
            "nettop-20240521-130405.json",
            "atop_20240521",
            "nettop-20240521-130405-x.rec.zst",
        ] {
            assert!(part_key(bad).is_none(), "{bad}");
        }
        assert_eq!(utc_day(ms), 19_864);
    }

    #[test]
    fn keep_and_keep_for_parsing() {
        assert_eq!(parse_keep("28"), Ok(28));
        for bad in ["0", "-1", "x", "10001", ""] {
            assert!(parse_keep(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_keep_for("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert!(parse_keep_for("0").is_err());
        assert!(parse_keep_for("20y").is_err());
    }

    fn write_part(dir: &Path, name: &str, age: Duration) -> PathBuf {
        let p = dir.join(name);
        let w = crate::record::Writer::create(&p, false, false).unwrap();
        w.finish("test").unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(SystemTime::now() - age).unwrap();
        p
    }

    #[test]
    fn expiry_keeps_the_newest_and_touches_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        let names: Vec<String> = (0..5)
            .map(|i| part_name(1_716_296_645_678 + i * 86_400_000, false))
            .collect();
        let paths: Vec<PathBuf> = names
            .iter()
            .enumerate()
            .map(|(i, n)| write_part(d.path(), n, day * (5 - i as u32)))
            .collect();
        // Not ours to delete: another name, a non-recording with a part name.
        std::fs::write(d.path().join("notes.txt"), "x").unwrap();
        let fake = d.path().join("nettop-20000101-000000.rec");
        std::fs::write(&fake, "not a recording").unwrap();
        let live = d
            .path()
            .join(part_name(1_716_296_645_678 + 6 * 86_400_000, false));
        std::fs::write(&live, "").unwrap();

        let keep3 = Retention {
            keep: 3,
            keep_for: None,
        };
        let gone = expire_dir(d.path(), &live, &keep3, SystemTime::now()).unwrap();
        assert_eq!(gone, paths[..2].to_vec(), "the two oldest");
        // 2.5 days: of the three left (3, 2, 1 days old) one goes.
        let ret = Retention {
            keep: 10,
            keep_for: Some(day * 5 / 2),
        };
        let gone = expire_dir(d.path(), &live, &ret, SystemTime::now()).unwrap();
        assert_eq!(gone, vec![paths[2].clone()]);
        for p in &paths[3..] {
            assert!(p.exists());
        }
        assert!(fake.exists() && live.exists());
        assert!(d.path().join("notes.txt").exists());
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        check_dir(d.path()).unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = check_dir(d.path()).unwrap_err().to_string();
        assert!(e.contains("writable by no one else"), "{e}");
        let link = d.path().join("link");
        std::os::unix::fs::symlink("/tmp", &link).unwrap();
        assert!(check_dir(&link).is_err());
    }
}
