//! Acting on a process or thread the user picked on screen: a signal, a
//! new nice value, a new CPU affinity (the TUI's `k`, `r`, `a`).
//!
//! What is on screen is up to one frame old, and PIDs are reused: the
//! task is named by its ID *and* its start time (`stat` field 22), and
//! every action checks that the task with that ID still started then, so a
//! PID that died and was handed to another process is never hit. A
//! process is signalled through a pidfd opened before the check, which
//! closes the last window; a thread through `tgkill`, which at least
//! requires the thread to still belong to its process. Renice and affinity
//! act on every thread of a process (the kernel sets them per thread), or
//! on the one thread picked.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::cpuset::CpuSet;

/// Who an action is for, as the screen named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub pid: u32,
    /// Equal to `pid` for a whole process.
    pub tid: u32,
    /// The whole process (every thread), not one thread.
    pub process: bool,
    /// `stat` field 22 (clock ticks since boot); 0 when unknown (then the
    /// identity is not checked).
    pub start_ticks: u64,
    pub comm: String,
}

impl Target {
    /// "PID 42 (nginx)" or "thread 43 of PID 42 (nginx)": how every
    /// question and answer names it.
    pub fn label(&self) -> String {
        if self.process {
            format!("PID {} ({})", self.pid, self.comm)
        } else {
            format!("thread {} of PID {} ({})", self.tid, self.pid, self.comm)
        }
    }
}

/// The signals `k` offers, in the number order `kill -l` lists them.
pub const SIGNALS: &[(i32, &str)] = &[
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGTRAP, "SIGTRAP"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGKILL, "SIGKILL"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGPIPE, "SIGPIPE"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGCHLD, "SIGCHLD"),
    (libc::SIGCONT, "SIGCONT"),
    (libc::SIGSTOP, "SIGSTOP"),
    (libc::SIGTSTP, "SIGTSTP"),
    (libc::SIGTTIN, "SIGTTIN"),
    (libc::SIGTTOU, "SIGTTOU"),
    (libc::SIGURG, "SIGURG"),
    (libc::SIGXCPU, "SIGXCPU"),
    (libc::SIGXFSZ, "SIGXFSZ"),
    (libc::SIGVTALRM, "SIGVTALRM"),
    (libc::SIGPROF, "SIGPROF"),
    (libc::SIGWINCH, "SIGWINCH"),
    (libc::SIGIO, "SIGIO"),
    (libc::SIGPWR, "SIGPWR"),
    (libc::SIGSYS, "SIGSYS"),
];

/// A signal's name, or its number.
pub fn signal_name(sig: i32) -> String {
    SIGNALS
        .iter()
        .find(|(n, _)| *n == sig)
        .map_or_else(|| format!("signal {sig}"), |(_, s)| (*s).to_string())
}

/// Nice values the kernel takes.
pub const NICE_RANGE: std::ops::RangeInclusive<i32> = -20..=19;

fn stat_path(pid: u32, tid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/task/{tid}/stat"))
}

/// `stat` field 22 of a task, from the text after the command's closing
/// parenthesis (a command may contain spaces and parentheses).
fn start_ticks_of(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 3 is the first after ")": field 22 is the 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Fails unless the task `tid` of `pid` exists and started when the
/// screen saw it start.
fn check_identity(t: &Target, tid: u32) -> anyhow::Result<()> {
    let stat = std::fs::read_to_string(stat_path(t.pid, tid))
        .map_err(|_| anyhow::anyhow!("{} has exited", t.label()))?;
    if t.start_ticks != 0 && tid == t.tid && start_ticks_of(&stat) != Some(t.start_ticks) {
        bail!(
            "{} has exited and its ID was reused by another task; nothing done",
            t.label()
        );
    }
    Ok(())
}

/// The threads an action on `t` reaches: every thread of the process, or
/// the one thread.
fn threads(t: &Target) -> anyhow::Result<Vec<u32>> {
    check_identity(t, t.tid)?;
    if !t.process {
        return Ok(vec![t.tid]);
    }
    let dir = format!("/proc/{}/task", t.pid);
    let mut tids: Vec<u32> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list the threads of {}", t.label()))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// The failed call's error, worded for the status line.
fn os_error(what: &str, t: &Target) -> anyhow::Error {
    let e = std::io::Error::last_os_error();
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => " (not permitted: run nettop as root)",
        Some(libc::ESRCH) => " (it has exited)",
        Some(libc::EINVAL) if what.contains("affinity") => {
            " (no CPU of the set is allowed to it: its cpuset, or a per-CPU kernel thread)"
        }
        _ => "",
    };
    anyhow::anyhow!("{what} {}: {e}{hint}", t.label())
}

/// Sends `sig` to the process, or to the one thread.
pub fn send_signal(t: &Target, sig: i32) -> anyhow::Result<()> {
    if t.process {
        // SAFETY: pidfd_open(2) takes a PID and flags and returns a new
        // descriptor or -1; no memory is passed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, t.pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(os_error("cannot open", t));
        }
        // SAFETY: `fd` was just returned by pidfd_open and is ours.
        let fd =
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
        // The pidfd holds the process the ID names now: once its start
        // time checks out, the signal cannot reach any other.
        check_identity(t, t.tid)?;
        use std::os::fd::AsRawFd;
        // SAFETY: pidfd_send_signal(2) with an open pidfd, a signal
        // number, no siginfo (NULL) and no flags.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if rc != 0 {
            return Err(os_error(&format!("cannot send {}", signal_name(sig)), t));
        }
        return Ok(());
    }
    check_identity(t, t.tid)?;
    // SAFETY: tgkill(2) takes three integers; it fails unless `tid` is a
    // thread of `pid`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            t.pid as libc::pid_t,
            t.tid as libc::pid_t,
            sig,
        )
    };
    if rc != 0 {
        return Err(os_error(&format!("cannot send {}", signal_name(sig)), t));
    }
    Ok(())
}

/// The nice value of one thread now.
pub fn nice_of(tid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 19 (nice) is the 17th after ")".
    rest.split_whitespace().nth(16)?.parse().ok()
}

/// Sets the nice value of every thread `t` reaches; returns how many.
pub fn renice(t: &Target, nice: i32) -> anyhow::Result<usize> {
    if !NICE_RANGE.contains(&nice) {
        bail!("{nice} is not a nice value (-20 to 19)");
    }
    let tids = threads(t)?;
    for &tid in &tids {
        // SAFETY: setpriority(2) takes integers only. `which`'s type
        // differs between libc targets, hence the cast.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS as _, tid as libc::id_t, nice) };
        if rc != 0 {
            return Err(os_error(&format!("cannot renice to {nice}"), t));
        }
    }
    Ok(tids.len())
}

/// Sets the CPU affinity of every thread `t` reaches; returns how many.
pub fn set_affinity(t: &Target, cpus: &CpuSet) -> anyhow::Result<usize> {
    if cpus.is_empty() {
        bail!("an empty CPU set is no affinity");
    }
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
    for c in cpus.iter() {
        if c >= max {
            bail!("CPU {c} is beyond what this build can name");
        }
        // SAFETY: `c` is below the set's capacity (checked above).
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    let tids = threads(t)?;
    for &tid in &tids {
        // SAFETY: `set` is a valid cpu_set_t of the size passed.
        let rc = unsafe {
            libc::sched_setaffinity(
                tid as libc::pid_t,
                std::mem::size_of::<libc::cpu_set_t>(),
                &set,
            )
        };
        if rc != 0 {
            return Err(os_error(
                &format!("cannot set affinity {} on", cpus.to_list()),
                t,
            ));
        }
    }
    Ok(tids.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_field_22_even_with_parentheses_in_the_name() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 \
                    123456 1000 200 18446744073709551615";
        assert_eq!(start_ticks_of(stat), Some(123456));
    }

    /// A child of ours: signalled, reniced and moved for real, and a
    /// reused PID (wrong start time) refused.
    #[test]
    fn acts_on_a_real_child_and_refuses_a_stale_identity() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let t = Target {
            pid,
            tid: pid,
            process: true,
            start_ticks: start_ticks_of(&stat).unwrap(),
            comm: "sleep".into(),
        };
        assert_eq!(renice(&t, 5).unwrap(), 1);
        assert_eq!(nice_of(pid), Some(5));
        let one = CpuSet::from_cpus([0]);
        assert_eq!(set_affinity(&t, &one).unwrap(), 1);
        assert_eq!(crate::sys::cpuset::live_affinity(pid), Some(one));
        let stale = Target {
            start_ticks: t.start_ticks + 1,
            ..t.clone()
        };
        let e = send_signal(&stale, libc::SIGTERM).unwrap_err().to_string();
        assert!(e.contains("reused"), "{e}");
        send_signal(&t, libc::SIGTERM).unwrap();
        let st = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(st.signal(), Some(libc::SIGTERM));
        let e = send_signal(&t, libc::SIGTERM).unwrap_err().to_string();
        assert!(e.contains("exited"), "{e}");
    }
}
