//! The revert file `--apply` writes before touching anything, and that
//! `--revert` and the automatic revert restore from (format: docs/plan.md).
//!
//! It holds the exact previous value of every file the plan writes. As
//! root restores whatever it names, a file nettop did not write, or one
//! changed since, must be refused: the body is followed by an HMAC-SHA256
//! over its exact bytes, keyed with a host-local secret (`revert.key`,
//! 32 random bytes, mode 0600, in the state directory). Another host's or
//! another user's file, or an edited one, fails the check. The file is
//! created as recordings are ([`safefile::create_output`]: new, mode 0600,
//! no symlink, no device), in a directory only its owner can write.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::{Kind, apply};
use crate::sys::safefile;

pub const SCHEMA: &str = "nettop.revert/1";
/// The default state directory (`--state-dir` replaces it).
pub const DEFAULT_DIR: &str = "/var/lib/nettop";
const KEY_FILE: &str = "revert.key";
const KEY_LEN: usize = 32;
const TRAILER: &str = "hmac-sha256 ";
const MAX_LEN: u64 = 4 << 20;

/// One file to restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: Kind,
    /// Network namespace name; empty for nettop's own.
    pub netns: String,
    pub path: String,
    /// The value read just before the plan wrote it, as the kernel printed it.
    pub previous: String,
    /// What the plan wrote.
    pub applied: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertFile {
    pub schema: String,
    pub created_unix: u64,
    pub hostname: String,
    /// `/proc/sys/kernel/random/boot_id`: after a reboot IRQ numbers and
    /// devices may differ, so such a file is refused.
    pub boot_id: String,
    pub entries: Vec<Entry>,
}

fn read_trim(p: &str) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl RevertFile {
    pub fn new(entries: Vec<Entry>) -> RevertFile {
        RevertFile {
            schema: SCHEMA.into(),
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            hostname: read_trim("/proc/sys/kernel/hostname"),
            boot_id: read_trim("/proc/sys/kernel/random/boot_id"),
            entries,
        }
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The state directory, created 0700 if missing (with `create`); refused
/// when it is a symlink, not a directory, another user's, or writable by
/// others (they could swap files). A dry run checks it without creating.
pub fn check_state_dir(dir: &Path, create: bool) -> anyhow::Result<()> {
    let shown = dir.display();
    safefile::check_path(dir)?;
    let m = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {shown}"))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("cannot set mode 0700 on {shown}"))?;
            std::fs::symlink_metadata(dir)
        }
        other => other,
    }
    .with_context(|| format!("state directory {shown}"))?;
    if m.file_type().is_symlink() {
        bail!(
            "state directory {shown} is a symbolic link; give the directory it points to \
             ({}) itself",
            std::fs::read_link(dir)
                .map(|t| t.display().to_string())
                .unwrap_or_default()
        );
    }
    if !m.is_dir() {
        bail!("state directory {shown} is not a directory");
    }
    if m.uid() != euid() || m.mode() & 0o022 != 0 {
        bail!(
            "state directory {shown}: owned by uid {} with mode {:o}; it must be ours and \
             writable by us only (chmod 700)",
            m.uid(),
            m.mode() & 0o7777
        );
    }
    Ok(())
}

/// The host-local key: read, or made once from the kernel's random pool.
/// It is written whole or not at all; an empty key (what an older nettop
/// left on a full disk) can have signed nothing and is made anew.
fn key(dir: &Path, create: bool) -> anyhow::Result<Vec<u8>> {
    let path = dir.join(KEY_FILE);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if create && m.file_type().is_file() && m.uid() == euid() && m.len() == 0 => {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove the empty key {}", path.display()))?;
            key(dir, create)
        }
        Ok(m) => {
            if !m.file_type().is_file()
                || m.uid() != euid()
                || m.mode() & 0o077 != 0
                || m.len() != KEY_LEN as u64
            {
                bail!(
                    "{}: not a {KEY_LEN}-byte regular file of ours with mode 0600; refusing to \
                     trust it as the revert key",
                    path.display()
                );
            }
            safefile::read_input(&path, KEY_LEN as u64)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            let mut k = vec![0u8; KEY_LEN];
            // SAFETY: getrandom(2) writes at most `k.len()` bytes into `k`,
            // which is valid and writable for the call.
            let n = unsafe { libc::getrandom(k.as_mut_ptr().cast(), k.len(), 0) };
            if n != KEY_LEN as isize {
                bail!("getrandom: {}", std::io::Error::last_os_error());
            }
            safefile::create_new(&path, &k)?;
            Ok(k)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "{} does not exist: this host has written no revert file in {}",
            path.display(),
            dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("{}", path.display())),
    }
}

/// What a dry run of an apply checks of the state directory: what the
/// real run would refuse (not a directory, not ours, an unusable key),
/// without creating anything.
pub fn check_writable(dir: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            bail!(
                "state directory {}: its parent {} is not a directory",
                dir.display(),
                parent.display()
            );
        }
        return safefile::check_path(dir);
    }
    check_state_dir(dir, false)?;
    if dir.join(KEY_FILE).exists() {
        key(dir, false)?;
    }
    Ok(())
}

fn mac(key: &[u8], body: &[u8]) -> anyhow::Result<Hmac<Sha256>> {
    let mut m =
        Hmac::<Sha256>::new_from_slice(key).map_err(|e| anyhow::anyhow!("hmac key: {e}"))?;
    m.update(body);
    Ok(m)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Writes `rf` into `dir` as a new file and returns its path.
/// Written whole or not at all: a full disk leaves no empty file.
pub fn write(dir: &Path, rf: &RevertFile) -> anyhow::Result<PathBuf> {
    check_state_dir(dir, true)?;
    let k = key(dir, true)?;
    let mut body = serde_json::to_vec_pretty(rf)?;
    body.push(b'\n');
    let tag = hex(&mac(&k, &body)?.finalize().into_bytes());
    body.extend_from_slice(format!("{TRAILER}{tag}\n").as_bytes());
    // Two applies of one process within a second (the TUI's P) get names
    // of their own: an existing file is never replaced.
    for n in 0..100u32 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let path = dir.join(format!(
            "revert-{}-{}{suffix}.json",
            rf.created_unix,
            std::process::id()
        ));
        if safefile::id_of(&path)?.is_none() {
            safefile::create_new(&path, &body)?;
            return Ok(path);
        }
    }
    bail!("{}: no free revert file name", dir.display())
}

/// A revert file written before the last boot: nothing it changed is on
/// the host any more, so it is neither restored nor reported unfinished.
#[derive(Debug, thiserror::Error)]
#[error(
    "{file}: written before the last reboot (boot id {boot_id}); IRQ numbers and devices may \
     differ now, so it is not restored"
)]
pub struct OtherBoot {
    file: String,
    boot_id: String,
}

/// Whether `e` is [`OtherBoot`].
pub fn is_other_boot(e: &anyhow::Error) -> bool {
    e.downcast_ref::<OtherBoot>().is_some()
}

/// Refuses a revert file that is not a regular file of ours that only we
/// can write: the HMAC proves who wrote it, this keeps anyone else from
/// swapping it between the check and the use.
fn check_file(path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    let m = std::fs::symlink_metadata(path).with_context(|| format!("cannot open {shown}"))?;
    if m.file_type().is_symlink() {
        bail!("{shown} is a symbolic link; give the revert file itself");
    }
    if !m.is_file() {
        bail!("{shown} is not a regular file");
    }
    if m.uid() != euid() || m.mode() & 0o022 != 0 {
        bail!(
            "{shown}: owned by uid {} with mode {:o}; a revert file must be ours and writable by \
             us only (nettop writes them 0600)",
            m.uid(),
            m.mode() & 0o7777
        );
    }
    Ok(())
}

/// When the file sits beside another key than `dir`'s: the `--state-dir`
/// it was written with, which the reader must give too.
fn state_dir_hint(dir: &Path, file: &Path) -> String {
    match file.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) if p != dir && p.join(KEY_FILE).exists() => format!(
            " (it was written with --state-dir {0}: run nettop --revert {1} --state-dir {0})",
            p.display(),
            file.display()
        ),
        _ => String::new(),
    }
}

/// Reads a revert file, refusing one this host's key did not sign, one
/// changed since, one from before the last boot, or one naming a file
/// nettop never writes.
pub fn read(dir: &Path, path: &Path) -> anyhow::Result<RevertFile> {
    let shown = path.display();
    check_file(path)?;
    let bytes = safefile::read_input(path, MAX_LEN)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| anyhow::anyhow!("{shown}: not a nettop revert file (not UTF-8)"))?;
    let cut = text.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
    let (body, last) = text.split_at(cut);
    let Some(tag) = last.trim_end().strip_prefix(TRAILER).and_then(unhex) else {
        bail!("{shown}: not a nettop revert file (no {TRAILER}line at the end)");
    };
    let hinted = |e: anyhow::Error| match state_dir_hint(dir, path) {
        h if h.is_empty() => e,
        h => e.context(h.trim_start().to_string()),
    };
    check_state_dir(dir, false).map_err(hinted)?;
    let k = key(dir, false).map_err(hinted)?;
    mac(&k, body.as_bytes())?.verify_slice(&tag).map_err(|_| {
        anyhow::anyhow!(
            "{shown}: refused: its checksum does not match this host's key ({}): nettop did not \
             write it here, or it was changed since{}",
            dir.join(KEY_FILE).display(),
            state_dir_hint(dir, path)
        )
    })?;
    let rf: RevertFile = serde_json::from_str(body)
        .map_err(|e| anyhow::anyhow!("{shown}: signed but unreadable: {e}"))?;
    if rf.schema != SCHEMA {
        bail!(
            "{shown}: schema {:?}, this nettop reads {SCHEMA}",
            rf.schema
        );
    }
    let boot = read_trim("/proc/sys/kernel/random/boot_id");
    if !boot.is_empty() && rf.boot_id != boot {
        return Err(OtherBoot {
            file: shown.to_string(),
            boot_id: rf.boot_id,
        }
        .into());
    }
    for e in &rf.entries {
        apply::validate(e.kind, &e.path, &e.previous).with_context(|| format!("{shown}"))?;
    }
    Ok(rf)
}

/// Restores every entry it can, last written first, going on past a
/// failure: the automatic revert, where anything restored is better than
/// nothing. Returns one line per entry and whether all were restored.
pub fn restore(rf: &RevertFile) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut ok = true;
    for e in rf.entries.iter().rev() {
        let ns = apply::ns_note(&e.netns);
        match apply::write(e.kind, &e.netns, &e.path, &e.previous) {
            Ok(()) => lines.push(format!("restored {}{ns}: {}", e.path, e.previous)),
            Err(err) => {
                ok = false;
                lines.push(format!("FAILED {}{ns}: {err:#}", e.path));
            }
        }
    }
    (lines, ok)
}

/// `--revert`: all or nothing. Every entry is checked against the host
/// first (its namespace there, its file readable and writable, the value
/// one nettop writes), and nothing is written unless all pass; a dry run
/// stops there, so it refuses exactly what the real run refuses. A write
/// the kernel still refuses part way puts back the ones before it.
pub fn revert_all(rf: &RevertFile, dry_run: bool) -> anyhow::Result<Vec<String>> {
    let mut now = Vec::new();
    let mut problems = Vec::new();
    for e in &rf.entries {
        match apply::preflight(e.kind, &e.netns, &e.path, &e.previous) {
            Ok(v) => now.push(v),
            Err(err) => problems.push(format!("{}{}: {err:#}", e.path, apply::ns_note(&e.netns))),
        }
    }
    if !problems.is_empty() {
        bail!(
            "nothing restored: {} of the {} file(s) cannot be restored now:\n  {}",
            problems.len(),
            rf.entries.len(),
            problems.join("\n  ")
        );
    }
    let line = |verb: &str, e: &Entry, was: &str| {
        format!(
            "{verb} {}{}: {} (now {was})",
            e.path,
            apply::ns_note(&e.netns),
            e.previous
        )
    };
    if dry_run {
        return Ok(rf
            .entries
            .iter()
            .zip(&now)
            .rev()
            .map(|(e, was)| line("would write", e, was))
            .collect());
    }
    let mut lines = Vec::new();
    let mut written: Vec<usize> = Vec::new();
    for (i, e) in rf.entries.iter().enumerate().rev() {
        if let Err(err) = apply::write(e.kind, &e.netns, &e.path, &e.previous) {
            let back: Vec<String> = written
                .iter()
                .rev()
                .map(|&j| {
                    let b = &rf.entries[j];
                    match apply::write(b.kind, &b.netns, &b.path, &now[j]) {
                        Ok(()) => format!("put back {}: {}", b.path, now[j]),
                        Err(e2) => format!("FAILED to put back {}: {e2:#}", b.path),
                    }
                })
                .collect();
            bail!(
                "restoring {}{} failed: {err:#}; {}",
                e.path,
                apply::ns_note(&e.netns),
                if back.is_empty() {
                    "nothing was written".to_string()
                } else {
                    format!(
                        "the files restored before it were put back ({})",
                        back.join("; ")
                    )
                }
            );
        }
        written.push(i);
        lines.push(line("restored", e, &now[i]));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RevertFile {
        let mut rf = RevertFile::new(vec![Entry {
            kind: Kind::Rps,
            netns: "blue".into(),
            path: "/sys/class/net/veth1/queues/rx-0/rps_cpus".into(),
            previous: "2".into(),
            applied: "0".into(),
        }]);
        rf.created_unix = 1;
        rf
    }

    #[test]
    fn round_trip_and_refusals() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("state");
        let p = write(&dir, &sample()).unwrap();
        let mode = std::fs::metadata(&p).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read(&dir, &p).unwrap(), sample());

        // One changed byte in the body.
        let text = std::fs::read_to_string(&p).unwrap();
        let tampered = d.path().join("t.json");
        std::fs::write(&tampered, text.replace("\"2\"", "\"3\"")).unwrap();
        let e = read(&dir, &tampered).unwrap_err().to_string();
        assert!(e.contains("does not match this host's key"), "{e}");

        // Signed with another key (another host, or someone's own file).
        let other = d.path().join("other");
        let p2 = write(&other, &sample()).unwrap();
        assert!(read(&dir, &p2).is_err());

        // No trailer at all.
        let bare = d.path().join("bare.json");
        std::fs::write(&bare, serde_json::to_string(&sample()).unwrap()).unwrap();
        assert!(
            read(&dir, &bare)
                .unwrap_err()
                .to_string()
                .contains("not a nettop revert")
        );
    }
}
