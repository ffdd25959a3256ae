//! Two network namespaces joined by a veth pair, for tests that need real
//! traffic without touching the host's network.
//!
//! Everything is named after the test process's pid plus a tag, so parallel
//! tests and leftovers of a killed run never collide. [`NetnsPair`]'s `Drop`
//! kills every process it started and every process still inside either
//! namespace, then deletes both namespaces (which deletes the veth pair), so
//! a failing or panicking test leaves nothing behind. Namespaces left by a
//! test process that was SIGKILLed are removed by the next [`NetnsPair::create`].

use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Prefix of every namespace this harness creates: `nettop-t<pid>-<tag>-{tx,rx}`.
const NS_PREFIX: &str = "nettop-t";

/// Transmit side: 10.213.0.1, receive side: 10.213.0.2 (inside the namespaces only).
pub const ADDR_TX: &str = "10.213.0.1";
pub const ADDR_RX: &str = "10.213.0.2";

pub struct NetnsPair {
    pub ns_tx: String,
    pub ns_rx: String,
    pub veth_tx: String,
    pub veth_rx: String,
    children: Vec<Child>,
    created: Vec<String>,
}

fn run(cmd: &mut Command) -> Result<Output, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out)
}

fn ip(args: &[&str]) -> Result<Output, String> {
    run(Command::new("ip").args(args))
}

/// True if a program is on PATH (checked by running it with `-V`/`--version`
/// would have side effects for some; searching PATH is enough).
pub fn have_program(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

/// Deletes namespaces of this harness whose creating process is gone.
fn remove_stale() {
    let Ok(out) = ip(&["netns", "list"]) else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(NS_PREFIX) else {
            continue;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if pid.is_empty() || std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        kill_pids_in(name);
        let _ = ip(&["netns", "del", name]);
    }
}

/// SIGKILLs every process still running inside namespace `ns`.
pub fn kill_pids_in(ns: &str) {
    if let Ok(out) = ip(&["netns", "pids", ns]) {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<i32>() {
                // SAFETY: kill(2) with a pid listed as a member of our own
                // namespace and a valid signal number; no memory involved.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

impl NetnsPair {
    /// Creates `nettop-t<pid>-<tag>-tx` and `-rx`, a veth pair between them,
    /// addresses [`ADDR_TX`]/[`ADDR_RX`] on a /24, links up. `tag` must be
    /// short (veth names are limited to 15 bytes) and unique within the process.
    pub fn create(tag: &str) -> Result<NetnsPair, String> {
        remove_stale();
        let pid = std::process::id();
        let mut p = NetnsPair {
            ns_tx: format!("{NS_PREFIX}{pid}-{tag}-tx"),
            ns_rx: format!("{NS_PREFIX}{pid}-{tag}-rx"),
            veth_tx: format!("nt{tag}{pid}t").chars().take(15).collect(),
            veth_rx: format!("nt{tag}{pid}r").chars().take(15).collect(),
            children: Vec::new(),
            created: Vec::new(),
        };
        for ns in [p.ns_tx.clone(), p.ns_rx.clone()] {
            ip(&["netns", "add", &ns])?;
            p.created.push(ns);
        }
        ip(&[
            "link", "add", &p.veth_tx, "netns", &p.ns_tx, "type", "veth", "peer", "name",
            &p.veth_rx, "netns", &p.ns_rx,
        ])?;
        for (ns, dev, addr) in [
            (&p.ns_tx, &p.veth_tx, ADDR_TX),
            (&p.ns_rx, &p.veth_rx, ADDR_RX),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(p)
    }

    /// Writes a hex CPU mask to `rps_cpus` of the receiving veth's rx-0
    /// queue: receive processing then runs on those CPUs (raised there by
    /// an IPI) instead of the CPU the packet arrived on.
    pub fn set_rps(&self, mask: &str) -> Result<(), String> {
        let path = format!("/sys/class/net/{}/queues/rx-0/rps_cpus", self.veth_rx);
        // `ip netns exec` remounts /sys for the namespace, so the veth is visible.
        run(Command::new("ip").args([
            "netns",
            "exec",
            &self.ns_rx,
            "sh",
            "-c",
            &format!("echo {mask} > {path}"),
        ]))?;
        let out = run(Command::new("ip").args(["netns", "exec", &self.ns_rx, "cat", &path]))?;
        let got = String::from_utf8_lossy(&out.stdout);
        let want = u64::from_str_radix(mask, 16).map_err(|e| format!("mask {mask}: {e}"))?;
        let have = u64::from_str_radix(got.trim().replace(',', "").as_str(), 16)
            .map_err(|e| format!("{path} reads '{}': {e}", got.trim()))?;
        if have != want {
            return Err(format!("{path} is {} after writing {mask}", got.trim()));
        }
        Ok(())
    }

    /// Starts `argv` inside namespace `ns`, optionally pinned to `cpu`;
    /// output discarded. The process is killed when the pair is dropped.
    pub fn spawn_in(&mut self, ns: &str, cpu: Option<usize>, argv: &[&str]) -> Result<u32, String> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]);
        if let Some(cpu) = cpu {
            cmd.args(["taskset", "-c", &cpu.to_string()]);
        }
        cmd.args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
        let pid = child.id();
        self.children.push(child);
        Ok(pid)
    }

    /// Bounded traffic tx → rx with iperf3, both ends pinned to `cpu`:
    /// unthrottled UDP in 1400-byte datagrams, so every datagram is its own
    /// packet on the receive path, as frames from a NIC queue are. (TCP over
    /// veth moves 64 KB GSO super-packets: a tenth of the per-packet receive
    /// work, which hides exactly the cost nettop exists to show.)
    /// Returns once the client is connected (or errors if it cannot be).
    pub fn start_iperf3(&mut self, secs: u32, cpu: usize) -> Result<(), String> {
        let rx = self.ns_rx.clone();
        let tx = self.ns_tx.clone();
        self.spawn_in(&rx, Some(cpu), &["iperf3", "-s", "-1", "-B", ADDR_RX])?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            sleep(Duration::from_millis(100));
            let secs_s = secs.to_string();
            self.spawn_in(
                &tx,
                Some(cpu),
                &[
                    "iperf3", "-c", ADDR_RX, "-t", &secs_s, "-i", "0", "-u", "-b", "0", "-l",
                    "1400",
                ],
            )?;
            sleep(Duration::from_millis(300));
            // An unreachable server makes the client exit at once.
            let client = self.children.last_mut().ok_or("no client")?;
            match client.try_wait() {
                Ok(None) => return Ok(()),
                Ok(Some(status)) => {
                    let mut err = String::new();
                    if let Some(mut e) = client.stderr.take() {
                        use std::io::Read;
                        let _ = e.read_to_string(&mut err);
                    }
                    if Instant::now() > deadline {
                        return Err(format!(
                            "iperf3 client exited ({status}) before sending: {}",
                            err.trim()
                        ));
                    }
                }
                Err(e) => return Err(format!("waiting for iperf3: {e}")),
            }
        }
    }

    /// Packets the receiving veth has taken so far (its counter, read
    /// inside its namespace).
    #[allow(dead_code)] // Not every test binary checks its load.
    pub fn rx_packets(&self) -> Result<u64, String> {
        let path = format!("/sys/class/net/{}/statistics/rx_packets", self.veth_rx);
        let out = run(Command::new("ip").args(["netns", "exec", &self.ns_rx, "cat", &path]))?;
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .parse()
            .map_err(|e| format!("{path} reads '{}': {e}", text.trim()))
    }

    /// Kills every process started with [`Self::spawn_in`] and anything else
    /// left in the namespaces.
    pub fn stop_children(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.children.clear();
        for ns in &self.created {
            kill_pids_in(ns);
        }
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        self.stop_children();
        for ns in self.created.drain(..) {
            delete(&ns);
        }
    }
}

/// Kills what still runs in namespace `ns` and deletes it. A namespace
/// with a dying process can refuse deletion briefly: it is tried again.
pub fn delete(ns: &str) {
    kill_pids_in(ns);
    for _ in 0..10 {
        if ip(&["netns", "del", ns]).is_ok() {
            break;
        }
        sleep(Duration::from_millis(100));
    }
}

/// The real binary's `--pinning-check --format json` report, run inside
/// namespace `ns` (`ip netns exec` remounts /sys, so the namespace's veths
/// show in /sys/class/net; /proc still shows every process).
pub fn pinning_report_in(ns: &str) -> serde_json::Value {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_nettop")])
        .args(["--pinning-check", "--format", "json", "--fail-on", "never"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nettop --pinning-check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `f` on a thread that has entered network namespace `ns` (setns on
/// CLONE_NEWNET switches only the calling thread; sockets it opens belong
/// to `ns`), propagating panics.
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    in_netns_inner(ns, None, |_| f())
}

/// Like [`in_netns`], and `f` gets a directory whose `sys/` is a sysfs
/// mounted from inside `ns`, so `Sysroot::new(dir)` lists that namespace's
/// `/sys/class/net`, as `ip netns exec` shows it, without a child process.
/// The mount lives in a private mount namespace of that thread only (made
/// `MS_PRIVATE` first, so nothing propagates to the host) and is gone when
/// the thread ends.
pub fn in_netns_with_sysfs<T: Send>(
    ns: &str,
    f: impl FnOnce(&std::path::Path) -> T + Send,
) -> Result<T, String> {
    let dir = std::env::temp_dir().join(format!(
        "nettop-sysfs-{}-{ns}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(dir.join("sys")).map_err(|e| format!("{}: {e}", dir.display()))?;
    /// Removes the (empty, unmounted) directories also when `f` panics.
    struct Cleanup(std::path::PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(self.0.join("sys"));
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _cleanup = Cleanup(dir.clone());
    in_netns_inner(ns, Some(&dir), |d| f(d.unwrap_or(&dir)))
}

fn in_netns_inner<T: Send>(
    ns: &str,
    sysfs_dir: Option<&std::path::Path>,
    f: impl FnOnce(Option<&std::path::Path>) -> T + Send,
) -> Result<T, String> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    let path = format!("/run/netns/{ns}");
    std::thread::scope(|s| {
        let h = s.spawn(|| -> Result<T, String> {
            let fd = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
            nettop::sys::netns::enter_net(fd.as_raw_fd()).map_err(|e| format!("{path}: {e:#}"))?;
            let Some(dir) = sysfs_dir else {
                return Ok(f(None));
            };
            // The crate's one sequence: a private mount table for this
            // thread, then a sysfs that shows `ns`.
            nettop::sys::netns::private_mounts().map_err(|e| format!("{e:#}"))?;
            nettop::sys::netns::mount_sysfs(&dir.join("sys")).map_err(|e| format!("{e:#}"))?;
            let target = CString::new(dir.join("sys").to_string_lossy().into_owned())
                .map_err(|e| e.to_string())?;
            let out = f(Some(dir));
            // SAFETY: unmounts what we mounted above, by the same path.
            unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
            Ok(out)
        });
        match h.join() {
            Ok(v) => v,
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}
