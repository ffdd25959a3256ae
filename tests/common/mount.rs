//! Real file systems for tests that need a disk to fail: a small tmpfs, or
//! an ext4 image on a loop device. Each is a guard that unmounts (lazily,
//! if something still holds it) and detaches its loop device on every
//! way out of the test, a panic included.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `cmd`; its stderr in the error.
pub fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A mounted file system at `at`.
pub struct Mount {
    pub at: PathBuf,
    /// The loop device behind it, detached after the unmount.
    pub dev: Option<String>,
}

impl Mount {
    /// A tmpfs of `size` (as mount takes it: `8m`) at `at`, root dir 0700.
    pub fn tmpfs(at: &Path, size: &str) -> Result<Mount, String> {
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(at))?;
        Ok(Mount {
            at: at.to_path_buf(),
            dev: None,
        })
    }

    /// A fresh ext4 file system without a journal (so an error does not
    /// abort one) in image file `img` of `size_mib`, on a loop device,
    /// mounted at `at` with mount options `opts`.
    pub fn ext4(img: &Path, size_mib: u64, at: &Path, opts: &str) -> Result<Mount, String> {
        let f = std::fs::File::create(img).map_err(|e| e.to_string())?;
        f.set_len(size_mib << 20).map_err(|e| e.to_string())?;
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-O", "^has_journal"])
            .arg(img))?;
        let dev = run(Command::new("losetup").args(["-f", "--show"]).arg(img))?;
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        let m = Mount {
            at: at.to_path_buf(),
            dev: Some(dev.clone()),
        };
        run(Command::new("mount")
            .args(["-t", "ext4", "-o", opts])
            .arg(&dev)
            .arg(at))?;
        Ok(m)
    }

    /// The loop device's name (`loop3`), as /sys names it.
    pub fn dev_name(&self) -> Option<&str> {
        self.dev.as_deref().and_then(|d| d.strip_prefix("/dev/"))
    }

    /// Moves the mount to `to` (over whatever is mounted there), in one
    /// step.
    pub fn move_to(&mut self, to: &Path) -> Result<(), String> {
        run(Command::new("mount").arg("--move").arg(&self.at).arg(to))?;
        self.at = to.to_path_buf();
        Ok(())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if run(Command::new("umount").arg(&self.at)).is_err() {
            let _ = run(Command::new("umount").arg("-l").arg(&self.at));
        }
        if let Some(d) = &self.dev {
            let _ = run(Command::new("losetup").arg("-d").arg(d));
        }
    }
}

/// Fills the file system holding `path` by writing `path` until the
/// disk says it is full; returns the bytes written.
pub fn fill(path: &Path) -> u64 {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let chunk = vec![0x55u8; 4096];
    let mut n = 0u64;
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(k) => n += k as u64,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    n
}
