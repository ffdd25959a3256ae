//! Running the nettop binary the way a careless or hostile user would: with
//! a time limit (a hang is a failure, not a stuck CI job), and with a guard
//! that kills long-running modes when a test ends early.

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test, stdin from /dev/null.
pub fn nettop() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nettop"));
    c.stdin(Stdio::null());
    c
}

/// Kills and reaps the child when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    pub fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

/// Runs `cmd` to completion with stdout and stderr captured; panics naming
/// `what` (after killing the child) if it is still running after `limit`.
pub fn output_within(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    wait_output(child, limit, what)
}

/// Like [`output_within`], but leaves stdout as the caller set it (a closed
/// pipe, /dev/full); only stderr is captured.
pub fn stderr_within(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    cmd.stderr(Stdio::piped());
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    wait_output(child, limit, what)
}

/// Collects a spawned child's piped output, with the same time limit.
pub fn wait_output(mut child: Child, limit: Duration, what: &str) -> Output {
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Output {
                status,
                stdout: out.join().unwrap(),
                stderr: err.join().unwrap(),
            };
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let e = err.join().unwrap_or_default();
            panic!(
                "{what}: still running after {limit:?} (killed); stderr: {}",
                String::from_utf8_lossy(&e)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// No panic, no abort: a clean exit with one of nettop's own codes.
pub fn assert_clean_exit(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{what}: panicked: {err}");
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "{what}: exit {:?} (expected 0, 1 or 2); stderr: {err}",
        out.status
    );
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Sends `sig` to `pid`.
pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) with a pid we spawned and a valid signal number; it
    // touches no memory of ours.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// A long-sleeping process whose command name (comm) is `name`: the kernel
/// takes comm from the name of the file executed, so a symlink to `sleep`
/// named `name` gives an unprivileged process any comm without '/' or NUL.
pub fn process_named(dir: &std::path::Path, name: &[u8]) -> Guard {
    use std::os::unix::ffi::OsStrExt;
    let link = dir.join(std::ffi::OsStr::from_bytes(name));
    let sleep = ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("sleep(1) is installed");
    std::os::unix::fs::symlink(sleep, &link).unwrap();
    let child = Command::new(&link)
        .arg("60")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // comm is set by exec; wait until it is visible.
    let pid = child.id();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        let want = &name[..name.len().min(15)];
        if std::fs::read(format!("/proc/{pid}/comm"))
            .is_ok_and(|c| c.strip_suffix(b"\n") == Some(want))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Guard(child)
}

/// Replays the recording `p` as batch text (`-b --rows 1`), which must
/// succeed, and counts the frames it printed.
#[allow(dead_code)]
pub fn replay_frames(p: &std::path::Path) -> usize {
    let out = output_within(
        nettop().arg("--replay").arg(p).args(["-b", "--rows", "1"]),
        Duration::from_secs(60),
        "replay",
    );
    assert!(out.status.success(), "{}: {}", p.display(), stderr(&out));
    stdout(&out)
        .lines()
        .filter(|l| l.starts_with("nettop "))
        .count()
}
