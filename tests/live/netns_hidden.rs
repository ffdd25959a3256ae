//! Network namespaces nettop may not list are still counted: without
//! CAP_SYS_PTRACE it cannot read another root process's `/proc/PID/ns/net`
//! (the DaemonSet's case), but `/proc/PID/net` tells that the process's
//! namespace is not nettop's. Without that count, nettop would think it
//! read every device and divide the host's NET_RX time by part of the
//! traffic (`model::cost`).
//!
//! Credentials are per thread on Linux, so the test drops its effective
//! capabilities in one thread only, as nettop in the container has them.

use crate::common;
use crate::common::tier::Need;

use nettop::sys::netns::{enumerate_live, enumerate_live_and_hidden};

const T: &str = "namespaces_nettop_cannot_list_are_counted";

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_V3: u32 = 0x2008_0522;

/// Clears this thread's effective capabilities (permitted stay, unused).
fn drop_effective_caps() {
    let mut hdr = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget(2) with a valid header and room for the two data
    // structs version 3 fills.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    assert_eq!(r, 0, "capget: {}", std::io::Error::last_os_error());
    for d in &mut data {
        d.effective = 0;
    }
    // SAFETY: capset(2) on the calling thread (pid 0) with the structs just
    // read back, only the effective sets cleared.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) };
    assert_eq!(r, 0, "capset: {}", std::io::Error::last_os_error());
}

/// Kills the unshared sleeper on every way out.
struct Sleeper(std::process::Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

case!(namespaces_nettop_cannot_list_are_counted, [Need::Root]);
fn namespaces_nettop_cannot_list_are_counted() {
    if !common::is_root() {
        common::skip(T, "needs root to create a network namespace");
        return;
    }
    // A namespace only a process holds, as a pod's is to the node.
    let child = match std::process::Command::new("unshare")
        .args(["--net", "sleep", "120"])
        .spawn()
    {
        Ok(c) => Sleeper(c),
        Err(e) => {
            common::skip(T, &format!("cannot run unshare: {e}"));
            return;
        }
    };
    let pid = child.0.id();
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    let mut theirs = None;
    for _ in 0..200 {
        // unshare execs sleep once the namespace is made.
        if std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep") {
            theirs = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        theirs.is_some_and(|t| t != own),
        "the sleeper has no namespace of its own"
    );
    // Privileged: listed by its process, nothing hidden.
    let (found, hidden) = enumerate_live_and_hidden(None);
    assert!(
        found.iter().any(|f| f.info.pid == Some(pid)),
        "{:?}",
        found.iter().map(|f| &f.info.name).collect::<Vec<_>>()
    );
    assert_eq!(hidden, 0);
    // A caller's process list is what is looked at, not /proc's.
    let given = enumerate_live(Some(&[pid]));
    assert!(given.iter().any(|f| f.info.pid == Some(pid)));
    let none = enumerate_live(Some(&[]));
    assert!(!none.iter().any(|f| f.info.pid == Some(pid)));
    // Without capabilities its link is unreadable: it must be counted.
    let (found, hidden) = std::thread::spawn(|| {
        drop_effective_caps();
        assert!(
            std::fs::read_link("/proc/1/ns/net").is_err(),
            "PID 1's link still readable without capabilities"
        );
        enumerate_live_and_hidden(None)
    })
    .join()
    .unwrap();
    assert!(
        !found.iter().any(|f| f.info.pid == Some(pid)),
        "listed although its link is unreadable?"
    );
    assert!(
        hidden >= 1,
        "the sleeper's namespace is neither listed nor counted"
    );
    drop(child);
}
