//! Files named on the command line, opened without trusting the path.
//!
//! nettop usually runs as root, and the paths it is given may sit in
//! directories other users can write (`/tmp`, someone's home). Sizes do not
//! tell a file from a device: block devices, /proc files and FIFOs all
//! report 0 bytes. So every file nettop writes for a user (recordings, the
//! configuration, the calibration cache, revert files and their key) goes
//! through this module, which holds these rules:
//!
//! - **No symlink is followed in the last component**, and none that sits
//!   in a directory owned by another user (neither us nor root) anywhere on
//!   the path: that user could point it at a file of ours
//!   ([`check_path`]). Symlinks root or we made (`/var/run` on Debian) are
//!   followed.
//! - **New files** ([`create_output`]) are created `O_CREAT|O_EXCL`, always a
//!   regular file with mode 0600 (recordings list every process on the
//!   host); the only existing file ever written is an empty regular file of
//!   our own (`mktemp`), never a device, FIFO, kernel pseudo-file or another
//!   user's file.
//! - **Whole files** ([`replace`], [`create_new`]) are written to a temporary
//!   file beside the target, synced and renamed into place: a crash or a
//!   full disk leaves the old file or the new one, never half of one and
//!   never a 0-byte leftover. [`replace`] replaces only a regular file of
//!   ours; the caller must have read and understood it first (the
//!   `understood` argument says it did), so a file nettop could not parse is
//!   never overwritten by accident.
//! - **Inputs** ([`open_input`]) must be regular files; they are opened
//!   `O_NONBLOCK` and checked with `fstat`, so a FIFO can neither hang
//!   nettop nor be mistaken for a recording.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Mode of every file nettop creates.
pub const OUTPUT_MODE: libc::mode_t = 0o600;

/// A file's identity, so rotation can tell the files it created from
/// files that merely have the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    fn of(st: &libc::stat) -> FileId {
        FileId {
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }
}

/// A freshly created (or reused empty) output file.
#[derive(Debug)]
pub struct Output {
    pub file: File,
    pub id: FileId,
}

fn cstring(p: &Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .with_context(|| format!("{}: path contains a NUL byte", p.display()))
}

fn fstat(fd: &OwnedFd) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is an open descriptor and `st` is writable for the call.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// What kind of file `mode` describes, in words for an error message.
fn kind(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "an unknown kind of file",
    }
}

fn is_reg(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// Kernel pseudo-filesystems: their files look regular and empty but
/// writing them changes kernel state (`/proc/self/comm`, sysfs knobs).
fn pseudo_fs(fd: &OwnedFd) -> Option<&'static str> {
    // SAFETY: an all-zero `statfs` is a valid value of this plain C struct.
    let mut sf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open (O_PATH descriptors are accepted by fstatfs) and
    // `sf` is writable for the call.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut sf) } != 0 {
        return None;
    }
    // f_type's width differs between architectures; the magics fit in 32 bits.
    let magic = sf.f_type as u32;
    Some(match magic {
        0x9fa0 => "proc",
        0x6265_6572 => "sysfs",
        0x6462_6720 => "debugfs",
        0x7472_6163 => "tracefs",
        0x0027_e0eb => "cgroup",
        0x6367_7270 => "cgroup2",
        0x7363_6673 => "securityfs",
        0xcafe_4a11 => "bpffs",
        0x6265_6570 => "configfs",
        0x6165_676c => "pstore",
        0xde5e_81e4 => "efivarfs",
        0x6573_5543 => "fusectl",
        _ => return None,
    })
}

/// Opens `dir` as an `O_PATH` handle for the *at() calls below.
fn open_dir(dir: &Path) -> anyhow::Result<OwnedFd> {
    let c = cstring(dir)?;
    // SAFETY: `c` is a valid NUL-terminated path; the flags open no data.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        bail!("directory {}: {e}", dir.display());
    }
    // SAFETY: `fd` was just returned by open(2) and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Splits `path` into its directory and last component.
fn split(path: &Path) -> anyhow::Result<(PathBuf, CString)> {
    let name = path
        .file_name()
        .filter(|n| !n.is_empty())
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, cstring(Path::new(name))?))
}

fn openat(
    dir: &OwnedFd,
    name: &CString,
    flags: i32,
    mode: libc::mode_t,
) -> std::io::Result<OwnedFd> {
    // SAFETY: `dir` is an open directory handle, `name` a valid C string;
    // `mode` is passed as the variadic argument open(2) expects.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat(2) and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn lstatat(dir: &OwnedFd, name: &CString) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid directory handle, C string and writable `st`.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn euid() -> u32 {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Puts a descriptor opened `O_NONBLOCK` (so that opening could not block)
/// back into blocking mode for ordinary I/O, and fixes its mode.
fn finish(fd: OwnedFd, chmod: bool) -> anyhow::Result<File> {
    // SAFETY: fcntl on an open descriptor we own; F_GETFL/F_SETFL only
    // read and set its status flags.
    unsafe {
        let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
    // SAFETY: fchmod on an open descriptor of a regular file we own.
    if chmod && unsafe { libc::fchmod(fd.as_raw_fd(), OUTPUT_MODE) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot set mode 0600");
    }
    Ok(File::from(fd))
}

/// Creates `path` for writing; see the module docs for what is refused.
/// Errors name the path and say why.
pub fn create_output(path: &Path) -> anyhow::Result<Output> {
    let shown = path.display();
    check_path(path)?;
    let (dir, name) = split(path)?;
    let dirfd = open_dir(&dir)?;
    if let Some(fs) = pseudo_fs(&dirfd) {
        bail!(
            "{shown} is a kernel pseudo-file ({fs}), not a regular file; refusing to write to it"
        );
    }
    let flags =
        libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    match openat(
        &dirfd,
        &name,
        flags | libc::O_CREAT | libc::O_EXCL,
        OUTPUT_MODE,
    ) {
        Ok(fd) => {
            let st = fstat(&fd)?;
            let id = FileId::of(&st);
            return Ok(Output {
                file: finish(fd, true)?,
                id,
            });
        }
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {shown}")),
    }
    // It exists. Only an empty regular file of our own may be used.
    let st = lstatat(&dirfd, &name).with_context(|| format!("cannot stat {shown}"))?;
    check_reusable(&st, path)?;
    let fd = openat(&dirfd, &name, flags, 0).with_context(|| format!("cannot open {shown}"))?;
    let now = fstat(&fd)?;
    if FileId::of(&now) != FileId::of(&st) {
        bail!("{shown} was replaced while being opened; refusing to write to it");
    }
    check_reusable(&now, path)?;
    Ok(Output {
        id: FileId::of(&now),
        file: finish(fd, true)?,
    })
}

fn check_reusable(st: &libc::stat, path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
        bail!(
            "{shown} is a symbolic link; nettop does not follow symlinks for files it writes \
             (give the target path itself)"
        );
    }
    if !is_reg(st) {
        bail!(
            "{shown} is {}, not a regular file; refusing to write to it",
            kind(st.st_mode)
        );
    }
    if st.st_size > 0 {
        bail!(
            "{shown} already exists and is not empty; refusing to overwrite a recording \
             (remove it or choose another name)"
        );
    }
    if st.st_uid != euid() {
        bail!(
            "{shown} is an empty file owned by uid {}, not by us; refusing to write into a file \
             another user controls (remove it or choose another name)",
            st.st_uid
        );
    }
    if st.st_nlink != 1 {
        bail!(
            "{shown} has {} hard links; refusing to write to it",
            st.st_nlink
        );
    }
    Ok(())
}

/// Refuses a path that follows a symlink nettop must not trust: one that
/// sits in a directory owned by another user (neither us nor root), who
/// could point it at any file of ours. Checked for every directory on the
/// way to `path`'s parent; the last component is the callers' to refuse
/// (they open it `O_NOFOLLOW`).
pub fn check_path(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let me = euid();
    let mut walked = PathBuf::new();
    for c in parent.components() {
        walked.push(c);
        let Ok(m) = std::fs::symlink_metadata(&walked) else {
            // A missing directory is the caller's error to report, with
            // its own words (it may be about to create it).
            return Ok(());
        };
        if !m.file_type().is_symlink() {
            continue;
        }
        let holder = walked
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let owner = std::fs::metadata(holder)
            .with_context(|| format!("cannot stat {}", holder.display()))?
            .uid();
        if owner != me && owner != 0 {
            bail!(
                "{} is a symbolic link in {}, a directory owned by uid {owner}; nettop does not \
                 follow it to write {} (that user could point it anywhere; give the real path)",
                walked.display(),
                holder.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// A temporary name beside `path` that no other process of ours uses.
fn temp_beside(dir: &Path, name: &CString) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.join(format!(
        ".{}.{}.{n}.tmp",
        String::from_utf8_lossy(name.as_bytes()),
        std::process::id()
    ))
}

/// Writes `bytes` to a new temporary file beside `path`, synced, and hands
/// it to `place`; on any failure the temporary file is removed, so nothing
/// is left behind (a full disk leaves no 0-byte file).
fn via_temp(
    path: &Path,
    bytes: &[u8],
    place: impl FnOnce(&Path) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let shown = path.display();
    let (dir, name) = split(path)?;
    let tmp = temp_beside(&dir, &name);
    let write = || -> anyhow::Result<()> {
        let mut out = create_output(&tmp).with_context(|| format!("cannot write {shown}"))?;
        out.file
            .write_all(bytes)
            .and_then(|()| out.file.sync_all())
            .with_context(|| {
                format!(
                    "cannot write {shown} (through {}, now removed)",
                    tmp.display()
                )
            })?;
        place(&tmp).with_context(|| format!("cannot put {shown} in place"))?;
        // The rename is durable only once the directory is synced.
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Replaces `path` with `bytes` in one step (see the module docs). What is
/// at `path` now must be a regular file of ours, with one link, and
/// `understood` must accept its contents: the caller's own parser, so that
/// a file nettop cannot read as its own is never overwritten. A symlink at
/// `path` is refused, not written through and not replaced.
pub fn replace(
    path: &Path,
    bytes: &[u8],
    understood: impl FnOnce(&[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let shown = path.display();
    check_path(path)?;
    let (dir, name) = split(path)?;
    if let Ok(dirfd) = open_dir(&dir) {
        match lstatat(&dirfd, &name) {
            Ok(st) => {
                check_replaceable(&st, path)?;
                let fd = openat(
                    &dirfd,
                    &name,
                    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
                    0,
                )
                .with_context(|| format!("cannot read {shown} before replacing it"))?;
                let now = fstat(&fd)?;
                check_replaceable(&now, path)?;
                let mut old = Vec::new();
                use std::io::Read;
                finish(fd, false)?
                    .take(MAX_REPLACED + 1)
                    .read_to_end(&mut old)
                    .with_context(|| format!("cannot read {shown} before replacing it"))?;
                if old.len() as u64 > MAX_REPLACED {
                    bail!("{shown} is larger than anything nettop writes there; not replaced");
                }
                understood(&old).map_err(|why| {
                    anyhow::anyhow!(
                        "{shown} is not a file nettop can read as its own ({why:#}); not replaced \
                         (move it away, or give another path)"
                    )
                })?;
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot stat {shown}")),
        }
    }
    via_temp(path, bytes, |tmp| std::fs::rename(tmp, path))
}

/// The most [`replace`] reads of the file it replaces.
const MAX_REPLACED: u64 = 16 << 20;

fn check_replaceable(st: &libc::stat, path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
        let to = std::fs::read_link(path)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        bail!(
            "{shown} is a symbolic link{to}; nettop neither writes through nor replaces a \
             symlink (give the real path)"
        );
    }
    if !is_reg(st) {
        bail!(
            "{shown} is {}, not a regular file; not replaced",
            kind(st.st_mode)
        );
    }
    if st.st_uid != euid() {
        bail!(
            "{shown} is owned by uid {}, not by us; nettop does not replace another user's file",
            st.st_uid
        );
    }
    if st.st_nlink != 1 {
        bail!("{shown} has {} hard links; not replaced", st.st_nlink);
    }
    Ok(())
}

/// Creates `path` with `bytes`, whole or not at all: written beside it,
/// synced, then renamed into place only if nothing is there yet (an
/// existing file is never replaced; the error says so).
pub fn create_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    via_temp(path, bytes, |tmp| rename_noreplace(tmp, path))
}

/// Opens `path` for reading: a regular file only, at most `max_len` bytes
/// when given. A FIFO or device is refused without blocking.
pub fn open_input(path: &Path, max_len: Option<u64>) -> anyhow::Result<File> {
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| format!("cannot open {shown}"))?;
    if !meta.file_type().is_file() {
        use std::os::unix::fs::MetadataExt;
        bail!(
            "{shown} is {}, not a regular file",
            kind(meta.mode() as libc::mode_t)
        );
    }
    let c = cstring(path)?;
    // SAFETY: valid C string; O_NONBLOCK makes even a FIFO swapped in after
    // the check above return at once.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot open {shown}"));
    }
    // SAFETY: `fd` was just returned by open(2) and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let st = fstat(&fd)?;
    if !is_reg(&st) {
        bail!("{shown} is {}, not a regular file", kind(st.st_mode));
    }
    if let Some(max) = max_len
        && st.st_size as u64 > max
    {
        bail!(
            "{shown} is {} bytes, more than the {} MiB this file can sensibly be",
            st.st_size,
            max >> 20
        );
    }
    finish(fd, false)
}

/// Reads a whole input file of at most `max_len` bytes (see [`open_input`]).
pub fn read_input(path: &Path, max_len: u64) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let f = open_input(path, Some(max_len))?;
    let mut v = Vec::new();
    f.take(max_len + 1)
        .read_to_end(&mut v)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if v.len() as u64 > max_len {
        bail!(
            "{} grew past {} MiB while being read",
            path.display(),
            max_len >> 20
        );
    }
    Ok(v)
}

/// The identity of whatever `path` names, without following a symlink.
pub fn id_of(path: &Path) -> std::io::Result<Option<FileId>> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(FileId {
            dev: m.dev(),
            ino: m.ino(),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `rename(from, to)` that fails with `EEXIST` instead of replacing `to`.
pub fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    let (Ok(f), Ok(t)) = (cstring(from), cstring(to)) else {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    };
    // SAFETY: two valid C strings; AT_FDCWD resolves them like rename(2).
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anything(_: &[u8]) -> anyhow::Result<()> {
        Ok(())
    }

    #[test]
    fn replace_swaps_a_file_of_ours_and_leaves_nothing_beside_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cache.json");
        replace(&p, b"new", anything).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let mut seen = Vec::new();
        replace(&p, b"newer", |old| {
            seen = old.to_vec();
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, b"new");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "newer");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn replace_refuses_symlinks_files_it_cannot_read_and_other_users_files() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let p = d.path().join("config.toml");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let e = format!("{:#}", replace(&p, b"new", anything).unwrap_err());
        assert!(e.contains("symbolic link (to "), "{e}");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");

        let e = format!(
            "{:#}",
            replace(&victim, b"new", |_| Err(anyhow::anyhow!(
                "line 1: not TOML"
            )))
            .unwrap_err()
        );
        assert!(e.contains("(line 1: not TOML); not replaced"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");

        if euid() == 0 {
            std::os::unix::fs::chown(&victim, Some(65534), None).unwrap();
            let e = format!("{:#}", replace(&victim, b"new", anything).unwrap_err());
            assert!(e.contains("owned by uid 65534"), "{e}");
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        }
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn symlinks_in_another_users_directory_are_not_followed() {
        if euid() != 0 {
            eprintln!("not run: needs root to own a directory as another user");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let theirs = d.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        let mine = d.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::os::unix::fs::symlink(&mine, theirs.join("link")).unwrap();
        // Ours (root's) directory: followed.
        create_new(&theirs.join("link/a"), b"x").unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let e = format!(
            "{:#}",
            create_new(&theirs.join("link/b"), b"x").unwrap_err()
        );
        assert!(e.contains("a directory owned by uid 65534"), "{e}");
        let e = format!("{:#}", create_output(&theirs.join("link/c")).unwrap_err());
        assert!(e.contains("owned by uid 65534"), "{e}");
        assert!(!mine.join("b").exists() && !mine.join("c").exists());
    }

    #[test]
    fn create_new_never_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("key");
        create_new(&p, b"one").unwrap();
        let e = format!("{:#}", create_new(&p, b"two").unwrap_err());
        assert!(e.contains("cannot put"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_private_files_and_refuses_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        let o = create_output(&p).unwrap();
        assert_eq!(id_of(&p).unwrap(), Some(o.id));
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        drop(o);
        // Our own empty file: reused. Non-empty: refused.
        assert!(create_output(&p).is_ok());
        std::fs::write(&p, b"x").unwrap();
        let e = create_output(&p).unwrap_err().to_string();
        assert!(e.contains("not empty"), "{e}");
        let l = d.path().join("l");
        std::os::unix::fs::symlink(d.path().join("nowhere"), &l).unwrap();
        let e = create_output(&l).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!d.path().join("nowhere").exists());
        let e = format!("{:#}", create_output(Path::new("/dev/null")).unwrap_err());
        assert!(e.contains("character device"), "{e}");
        let e = format!(
            "{:#}",
            create_output(Path::new("/proc/self/comm")).unwrap_err()
        );
        assert!(e.contains("pseudo-file (proc)"), "{e}");
        let e = format!("{:#}", create_output(Path::new("/")).unwrap_err());
        assert!(e.contains("not a file name"), "{e}");
    }

    #[test]
    fn inputs_must_be_regular_files() {
        let e = format!(
            "{:#}",
            open_input(Path::new("/dev/zero"), None).unwrap_err()
        );
        assert!(e.contains("character device, not a regular file"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![0u8; 100]).unwrap();
        assert_eq!(read_input(&p, 100).unwrap().len(), 100);
        assert!(read_input(&p, 99).is_err());
    }

    #[test]
    fn rename_never_replaces() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let e = rename_noreplace(&a, &b).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        assert_eq!(std::fs::read(&b).unwrap(), b"b");
    }
}
