//! Cgroup v2 groups for live tests, in the unified hierarchy wherever it is
//! mounted (`/sys/fs/cgroup` on v2-only hosts, `/sys/fs/cgroup/unified` on
//! hybrid ones), named after the test process so parallel tests and the
//! leftovers of a killed run never collide. Everything a [`Groups`] made is
//! undone on drop: its processes killed, its groups removed.

#![allow(dead_code)] // Not every test binary uses every helper.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The cgroup2 mount point, from our own mount table.
pub fn cgroup2_mount() -> Option<PathBuf> {
    let t = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    t.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        (right.split(' ').next()? == "cgroup2").then(|| PathBuf::from(point))
    })
}

/// Prefix of every group this test creates: `nettop-t<pid>-<role>`.
const PREFIX: &str = "nettop-t";

/// Two groups, busy processes in them; everything is undone on drop
/// (processes killed, groups removed), however the test ends.
pub struct Groups {
    mount: PathBuf,
    dirs: Vec<PathBuf>,
    children: Vec<Child>,
}

impl Groups {
    pub fn new(mount: &Path) -> Groups {
        remove_stale(mount);
        Groups {
            mount: mount.to_path_buf(),
            dirs: Vec::new(),
            children: Vec::new(),
        }
    }

    pub fn create(&mut self, role: &str) -> Result<String, String> {
        let name = format!("{PREFIX}{}-{role}", std::process::id());
        let dir = self.mount.join(&name);
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        self.dirs.push(dir);
        Ok(format!("/{name}"))
    }

    /// A busy shell loop pinned to `cpu` at nice `nice`, moved into group
    /// `path`.
    pub fn spin_in(&mut self, path: &str, cpu: usize, nice: i32) -> Result<u32, String> {
        // Its own session, so its own autogroup: with autogroups on, nice
        // only orders tasks within one, and the autogroup's own nice is
        // what weighs against other sessions' load.
        let child = Command::new("setsid")
            .args([
                "nice",
                "-n",
                &nice.to_string(),
                "taskset",
                "-c",
                &cpu.to_string(),
            ])
            .args(["sh", "-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("taskset: {e}"))?;
        let pid = child.id();
        self.children.push(child);
        let ag = format!("/proc/{pid}/autogroup");
        if Path::new(&ag).exists() {
            let _ = std::fs::write(&ag, nice.to_string());
        }
        let procs = self
            .mount
            .join(path.trim_start_matches('/'))
            .join("cgroup.procs");
        std::fs::write(&procs, pid.to_string())
            .map_err(|e| format!("moving {pid} into {}: {e}", procs.display()))?;
        Ok(pid)
    }

    /// The directory of group `path` (as [`Groups::create`] returned it).
    pub fn dir(&self, path: &str) -> PathBuf {
        self.mount.join(path.trim_start_matches('/'))
    }

    /// Keeps `child` to be killed when the groups go.
    pub fn adopt(&mut self, child: Child) {
        self.children.push(child);
    }

    pub fn stop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.children.clear();
        for d in self.dirs.drain(..) {
            remove_group(&self.mount, &d);
        }
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Moves anything left in `dir` to the root and removes it (a dying
/// process can hold it for a moment).
fn remove_group(mount: &Path, dir: &Path) {
    for _ in 0..50 {
        if let Ok(pids) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            for p in pids.split_whitespace() {
                let _ = std::fs::write(mount.join("cgroup.procs"), p);
            }
        }
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Groups left by a test process that was SIGKILLed.
fn remove_stale(mount: &Path) {
    let Ok(rd) = std::fs::read_dir(mount) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
            remove_group(mount, &e.path());
        }
    }
}
