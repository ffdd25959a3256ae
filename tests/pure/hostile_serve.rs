//! `--serve` under attack (issue 10, items 3 and 15): a huge request
//! header, connection floods under an fd or pids limit, idle connections,
//! and methods other than GET.

use crate::common;
use crate::common::tier::Need;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::run::Guard;

/// Starts `nettop --serve 127.0.0.1:0 --no-bpf` through `wrap` (e.g.
/// prlimit) and returns it with the address it bound.
fn serve(
    wrap: &[&str],
    pre: Option<Box<dyn FnMut() -> std::io::Result<()> + Send + Sync>>,
) -> (Guard, SocketAddr) {
    let bin = env!("CARGO_BIN_EXE_nettop");
    let mut cmd = if wrap.is_empty() {
        Command::new(bin)
    } else {
        let mut c = Command::new(wrap[0]);
        c.args(&wrap[1..]).arg(bin);
        c
    };
    cmd.args(["--serve", "127.0.0.1:0", "--no-bpf", "-d", "0.5"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(f) = pre {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure makes only async-signal-safe syscalls.
        unsafe {
            cmd.pre_exec(f);
        }
    }
    let mut child = cmd.spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let t0 = Instant::now();
    let addr = loop {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 || t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("--serve did not start: {line}");
        }
        if let Some(rest) = line.split("http://").nth(1) {
            let a = rest.split('/').next().unwrap();
            break a.parse::<SocketAddr>().unwrap();
        }
    };
    // Keep draining stderr so the server never blocks on it; panics show up
    // in the test's own stderr.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        if !rest.is_empty() {
            eprintln!("server stderr: {rest}");
        }
    });
    (Guard(child), addr)
}

/// One request; returns the status line and body.
fn request(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<(String, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(15)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let status = resp.lines().next().unwrap_or("").to_string();
    let body = resp.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    Ok((status, body))
}

fn scrape_ok(addr: SocketAddr, what: &str) {
    let (status, body) = request(addr, "GET", "/metrics")
        .unwrap_or_else(|e| panic!("{what}: /metrics unreachable: {e}"));
    assert!(status.contains(" 200 "), "{what}: {status}");
    assert!(body.contains("nettop_tasks"), "{what}: {body}");
}

fn alive(g: &mut Guard, what: &str) {
    assert!(
        g.0.try_wait().unwrap().is_none(),
        "{what}: the server exited"
    );
}

fn vm_hwm_kib(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

/// Item 3: a 300 MB request header was buffered whole (RSS 348 MB).
#[test]
fn huge_request_header_is_refused_early() {
    let (mut g, addr) = serve(&[], None);
    scrape_ok(addr, "before");
    let before = vm_hwm_kib(g.pid());
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nX-Bomb: ").unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0usize;
    for _ in 0..128 {
        if s.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    drop(s);
    std::thread::sleep(Duration::from_millis(300));
    let grew = vm_hwm_kib(g.pid()).saturating_sub(before);
    common::report(&format!(
        "header bomb: {} MiB accepted by the socket, server peak RSS grew {grew} KiB\n",
        sent >> 20
    ));
    assert!(grew < 16 * 1024, "peak RSS grew by {grew} KiB");
    assert!(
        sent < 64 << 20,
        "the server kept reading: {} MiB",
        sent >> 20
    );
    alive(&mut g, "after the header bomb");
    scrape_ok(addr, "after the header bomb");
}

/// Item 15: POST /metrics answered 200.
#[test]
fn methods_other_than_get_are_405() {
    let (_g, addr) = serve(&[], None);
    for m in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let (status, _) = request(addr, m, "/metrics").unwrap();
        assert!(status.contains(" 405 "), "{m}: {status}");
    }
    let (status, body) = request(addr, "HEAD", "/metrics").unwrap();
    assert!(status.contains(" 200 "), "HEAD: {status}");
    assert!(body.is_empty(), "HEAD has a body");
}

/// Opens `n` connections that send half a request and stall.
fn flood(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .filter_map(|_| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n");
            Some(s)
        })
        .collect()
}

/// Item 3: under an fd limit, a connection flood ended the listener for
/// good while the process kept running and said nothing.
#[test]
fn connection_flood_under_an_fd_limit() {
    let (mut g, addr) = serve(&["prlimit", "--nofile=48:48", "--"], None);
    scrape_ok(addr, "before");
    let conns = flood(addr, 300);
    common::report(&format!(
        "fd-limit flood: {} connections open\n",
        conns.len()
    ));
    std::thread::sleep(Duration::from_secs(1));
    alive(&mut g, "during the flood");
    drop(conns);
    std::thread::sleep(Duration::from_millis(500));
    alive(&mut g, "after the flood");
    scrape_ok(addr, "after the flood");
}

/// Idle half-requests (slowloris) may not starve a real scrape.
#[test]
fn idle_connections_do_not_starve_scrapes() {
    let (mut g, addr) = serve(&[], None);
    let conns = flood(addr, 400);
    let t0 = Instant::now();
    scrape_ok(addr, "during the idle flood");
    let took = t0.elapsed();
    common::report(&format!(
        "scrape during {} idle connections: {took:?}\n",
        conns.len()
    ));
    assert!(took < Duration::from_secs(5), "scrape took {took:?}");
    alive(&mut g, "idle flood");
}

/// The pids controller of cgroup v2 or v1, whichever this host mounts.
fn pids_cgroup_root() -> Option<std::path::PathBuf> {
    let v2 = std::path::Path::new("/sys/fs/cgroup");
    if std::fs::read_to_string(v2.join("cgroup.controllers")).is_ok_and(|c| c.contains("pids")) {
        return Some(v2.to_path_buf());
    }
    let v1 = v2.join("pids");
    v1.join("cgroup.procs").exists().then_some(v1)
}

struct Cgroup(std::path::PathBuf);
impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

case!(connection_flood_under_a_pids_limit, [Need::Root]);
/// Item 3: under a pids limit, a connection flood panicked the thread
/// spawn and the listener was gone for good.
fn connection_flood_under_a_pids_limit() {
    const T: &str = "connection_flood_under_a_pids_limit";
    if !common::is_root() {
        common::skip(T, "needs root to create a cgroup");
        return;
    }
    let Some(root) = pids_cgroup_root() else {
        common::skip(T, "no pids cgroup controller mounted");
        return;
    };
    let cg = Cgroup(root.join(format!("nettop-hostile-{}", std::process::id())));
    std::fs::create_dir(&cg.0).unwrap();
    // nettop's own threads fit; one thread per connection does not.
    std::fs::write(cg.0.join("pids.max"), "16").unwrap();
    use std::os::unix::ffi::OsStrExt;
    let procs = std::ffi::CString::new(cg.0.join("cgroup.procs").as_os_str().as_bytes()).unwrap();
    // Only raw syscalls between fork and exec: no allocation.
    let pre = Box::new(move || {
        // SAFETY: `procs` is a valid C string; open/write/close are
        // async-signal-safe and the buffer outlives the write.
        let fd = unsafe { libc::open(procs.as_ptr(), libc::O_WRONLY) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: as above.
        let n = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        // SAFETY: fd was opened above.
        unsafe { libc::close(fd) };
        if n == 1 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    });
    let (mut g, addr) = serve(&[], Some(pre));
    scrape_ok(addr, "before");
    let conns = flood(addr, 100);
    std::thread::sleep(Duration::from_secs(1));
    alive(&mut g, "during the flood");
    drop(conns);
    std::thread::sleep(Duration::from_millis(500));
    alive(&mut g, "after the flood");
    scrape_ok(addr, "after the flood");
}
