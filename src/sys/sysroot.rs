//! One root for every /proc and /sys read, so tests can describe machines we
//! don't have (2-socket hosts, containers) as plain directory trees.
//!
//! Every file under the root is read with a size cap ([`read_bounded`]): a
//! fake tree whose `proc/stat` is `/dev/zero` (or a FIFO, or a huge file)
//! must end in a clear error, not in a process that grows without bound and
//! cannot be stopped because it never returns to its signal checks.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Cap for every /proc and /sys file except the few in [`MAX_LARGE_FILE`].
/// The biggest legitimate member of this class is a process's `environ` or
/// `cmdline`: since Linux 4.13 execve limits arguments plus environment to
/// 3/4 of the 8 MiB stack limit, 6 MiB. Everything else is tiny: a task's
/// `stat` is ~300 bytes, `status` ~1.5 KB (~400 KB with 65,536
/// supplementary groups), sysfs attributes at most one page, `/proc/stat` on
/// a 1,024-CPU host ~200 KB.
pub const MAX_FILE: u64 = 8 << 20;

/// Cap for files that grow with CPUs times IRQs or with a process's
/// mappings: `/proc/interrupts` prints 11 bytes per online CPU per IRQ line,
/// so 1,024 CPUs and 4,096 IRQ lines (NVMe and NIC queues per CPU) are
/// 46 MiB; `/proc/<pid>/numa_maps` has one line per mapping (up to 65,530
/// by default, ~200 bytes each); an hwloc XML export of a big machine.
pub const MAX_LARGE_FILE: u64 = 64 << 20;

/// Reads the whole file at `path` into `buf` (cleared first, allocation
/// reused) and fails with [`io::ErrorKind::FileTooLarge`] as soon as it
/// holds more than `cap` bytes. The message names no path: callers add it,
/// as they do for every other I/O error.
pub fn read_bounded(path: &Path, buf: &mut Vec<u8>, cap: u64) -> io::Result<()> {
    buf.clear();
    // One byte past the cap tells "exactly cap bytes" from "more".
    open_nonblocking(path)?
        .take(cap.saturating_add(1))
        .read_to_end(buf)?;
    if buf.len() as u64 > cap {
        buf.clear();
        buf.shrink_to(64 * 1024);
        return Err(too_large(cap));
    }
    Ok(())
}

/// Opens a file for reading with `O_NONBLOCK`: a FIFO in a fake tree must
/// not block the open (or a read) forever waiting for a writer; regular,
/// /proc and /sys files ignore the flag. For readers that stream a file
/// (decompression) rather than read it whole; bound them with `take`.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// [`read_bounded`] into a fresh `String`; invalid UTF-8 is an error
/// (`InvalidData`), as with `std::fs::read_to_string`.
pub fn read_string_bounded(path: &Path, cap: u64) -> io::Result<String> {
    let mut buf = Vec::new();
    read_bounded(path, &mut buf, cap)?;
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn too_large(cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("larger than {cap} bytes, not a /proc or /sys file?"),
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysroot {
    root: PathBuf,
}

impl Default for Sysroot {
    fn default() -> Self {
        Self::new("/")
    }
}

impl Sysroot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `true` when reading the live system (root is `/`).
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of an absolute system path ("/proc/stat") under the root.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        self.root.join(abs.strip_prefix("/").unwrap_or(abs))
    }

    pub fn proc(&self) -> PathBuf {
        self.path("/proc")
    }

    pub fn sys(&self) -> PathBuf {
        self.path("/sys")
    }

    /// Reads a text file under the root, capped at [`MAX_FILE`].
    pub fn read(&self, abs: impl AsRef<Path>) -> io::Result<String> {
        read_string_bounded(&self.path(abs), MAX_FILE)
    }

    /// Reads a text file under the root, capped at [`MAX_LARGE_FILE`]: only
    /// for the files named there.
    pub fn read_large(&self, abs: impl AsRef<Path>) -> io::Result<String> {
        read_string_bounded(&self.path(abs), MAX_LARGE_FILE)
    }

    /// Reads raw bytes under the root (NUL-separated `environ`, `cmdline`),
    /// capped at [`MAX_FILE`].
    pub fn read_bytes(&self, abs: impl AsRef<Path>) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        read_bounded(&self.path(abs), &mut buf, MAX_FILE)?;
        Ok(buf)
    }

    /// Reads a file and trims it; `None` when it does not exist or is
    /// unreadable (including larger than [`MAX_FILE`]).
    pub fn read_opt(&self, abs: impl AsRef<Path>) -> Option<String> {
        self.read(abs).ok().map(|s| s.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_absolute_paths_under_root() {
        let r = Sysroot::new("/tmp/fake");
        assert_eq!(r.path("/proc/stat"), PathBuf::from("/tmp/fake/proc/stat"));
        assert_eq!(r.proc(), PathBuf::from("/tmp/fake/proc"));
        assert!(!r.is_live());
        assert!(Sysroot::default().is_live());
    }

    #[test]
    fn bounded_read_stops_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, vec![b'x'; 100]).unwrap();
        let mut buf = Vec::new();
        read_bounded(&f, &mut buf, 100).unwrap();
        assert_eq!(buf.len(), 100);
        let e = read_bounded(&f, &mut buf, 99).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("larger than 99 bytes"), "{e}");
        assert!(buf.is_empty());
    }

    #[test]
    fn endless_file_is_an_error_not_a_hang() {
        let t0 = std::time::Instant::now();
        let e = read_string_bounded(Path::new("/dev/zero"), MAX_FILE).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        let root = Sysroot::new("/dev");
        assert!(root.read_opt("/zero").is_none());
        assert!(root.read_large("/zero").is_err());
        assert!(root.read_bytes("/zero").is_err());
        // Generous: this guards against "never returns", not speed.
        assert!(t0.elapsed().as_secs() < 30);
    }
}
