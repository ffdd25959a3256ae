//! One root for every /proc and /sys read, so tests can describe machines we
//! don't have (2-socket hosts, containers) as plain directory trees.

use std::io;
use std::path::{Path, PathBuf};

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

    pub fn read(&self, abs: impl AsRef<Path>) -> io::Result<String> {
        std::fs::read_to_string(self.path(abs))
    }

    /// Reads a file and trims it; `None` when it does not exist or is unreadable.
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
}
