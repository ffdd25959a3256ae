//! UDP ends for live traffic tests, each a process of its own (this test
//! binary re-executed with [`ROLE_ENV`] set), so each is its own task, in
//! the cgroup and network namespace it was started in, and counts for
//! itself what nettop is checked against:
//!
//! - `sink PORT SECS [spin]`: receives on PORT for SECS seconds and prints
//!   what it received; with `spin` it never sleeps (non-blocking reads in
//!   a loop), so no delivery has to wake it;
//! - `deaf PORT SECS`: binds PORT and never reads (its queue fills, then
//!   the kernel drops);
//! - `source SECS ADDR:PORT:PPS,...`: one socket sending 1,000-byte
//!   datagrams to every target at its own rate, in bursts of [`BURST`]
//!   (a sparse flow's lone packet costs its receiver more than one of a
//!   dense flow: it finds the caches cold and its reader asleep; in equal
//!   bursts both flows' packets cost the same), and prints what it sent to
//!   each.
//!
//! Each prints one JSON line: `{"bytes":B,"datagrams":D}` (a list of them,
//! one per target, for a source).

#![allow(dead_code)] // Not every test binary uses every helper.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The role of a re-executed test binary.
pub const ROLE_ENV: &str = "NETTOP_TEST_UDP";

/// Payload of every datagram a source sends.
pub const PAYLOAD: usize = 1000;

/// Datagrams a source sends to one target back to back.
pub const BURST: u64 = 4;

/// What one end counted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Count {
    pub bytes: u64,
    pub datagrams: u64,
}

impl Count {
    fn json(&self) -> String {
        format!(
            "{{\"bytes\":{},\"datagrams\":{}}}",
            self.bytes, self.datagrams
        )
    }

    fn from_json(v: &serde_json::Value) -> Option<Count> {
        Some(Count {
            bytes: v["bytes"].as_u64()?,
            datagrams: v["datagrams"].as_u64()?,
        })
    }
}

/// Runs the role the environment names, if any: then that is this
/// process's whole job, and its exit code is returned.
pub fn role_from_env() -> Option<ExitCode> {
    let spec = std::env::var(ROLE_ENV).ok()?;
    let args: Vec<&str> = spec.split_whitespace().collect();
    let secs = |i: usize| -> Duration {
        Duration::from_secs_f64(args.get(i).and_then(|s| s.parse().ok()).unwrap_or(1.0))
    };
    let port = |i: usize| -> u16 { args.get(i).and_then(|s| s.parse().ok()).unwrap_or(0) };
    let out = match args.first().copied() {
        Some("sink") => sink(port(1), secs(2), args.get(3) == Some(&"spin")).map(|c| c.json()),
        Some("deaf") => deaf(port(1), secs(2)).map(|()| "{}".to_string()),
        Some("source") => source(secs(1), args.get(2).copied().unwrap_or("")).map(|v| {
            let parts: Vec<String> = v.iter().map(Count::json).collect();
            format!("[{}]", parts.join(","))
        }),
        _ => Err(format!("unknown role '{spec}'")),
    };
    match out {
        Ok(line) => {
            println!("{line}");
            Some(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{ROLE_ENV}={spec}: {e}");
            Some(ExitCode::FAILURE)
        }
    }
}

/// A receive buffer large enough that a sink never drops at the rates the
/// tests send (SO_RCVBUFFORCE: root may exceed rmem_max).
fn big_buffer(s: &UdpSocket) {
    let bytes: libc::c_int = 16 << 20;
    // SAFETY: setsockopt on a socket we own, with a pointer to a live c_int
    // and its size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn sink(port: u16, secs: Duration, spin: bool) -> Result<Count, String> {
    let s = UdpSocket::bind(("0.0.0.0", port)).map_err(|e| format!("bind {port}: {e}"))?;
    big_buffer(&s);
    if spin {
        s.set_nonblocking(true).map_err(|e| e.to_string())?;
    } else {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
    }
    let end = Instant::now() + secs;
    let mut buf = vec![0u8; 65536];
    let mut c = Count::default();
    while Instant::now() < end {
        if let Ok(n) = s.recv(&mut buf) {
            c.bytes += n as u64;
            c.datagrams += 1;
        }
    }
    Ok(c)
}

fn deaf(port: u16, secs: Duration) -> Result<(), String> {
    let _s = UdpSocket::bind(("0.0.0.0", port)).map_err(|e| format!("bind {port}: {e}"))?;
    std::thread::sleep(secs);
    Ok(())
}

fn source(secs: Duration, targets: &str) -> Result<Vec<Count>, String> {
    let mut to: Vec<(String, f64)> = Vec::new();
    for t in targets.split(',').filter(|t| !t.is_empty()) {
        let (addr, pps) = t
            .rsplit_once(':')
            .ok_or_else(|| format!("target '{t}': want ADDR:PORT:PPS"))?;
        let pps: f64 = pps.parse().map_err(|e| format!("rate '{pps}': {e}"))?;
        to.push((addr.to_string(), pps));
    }
    let s = UdpSocket::bind(("0.0.0.0", 0)).map_err(|e| e.to_string())?;
    let payload = vec![0x5au8; PAYLOAD];
    let mut counts = vec![Count::default(); to.len()];
    let start = Instant::now();
    for step in 0usize.. {
        let t = start.elapsed();
        if t >= secs {
            break;
        }
        // Each step starts with another target: the first datagram after
        // a pause meets cold caches on the receiving CPU, and that cost
        // must not always fall to the same flow.
        for k in 0..to.len() {
            let i = (step + k) % to.len();
            let (addr, pps) = &to[i];
            // Whole bursts only: every flow reaches the receiving CPU in
            // runs of the same size, so a packet of the sparser flow costs
            // what one of the denser flow does.
            let due = (t.as_secs_f64() * pps) as u64 / BURST * BURST;
            while counts[i].datagrams < due {
                match s.send_to(&payload, addr.as_str()) {
                    Ok(n) => {
                        counts[i].bytes += n as u64;
                        counts[i].datagrams += 1;
                    }
                    // A full device queue: try again next step.
                    Err(_) => break,
                }
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(counts)
}

/// Starts `role` in network namespace `ns`, pinned to `cpu`, in the
/// cgroup whose directory is `cgroup` (the shell joins it before it execs,
/// so every socket the role makes belongs to it). Its stdout is piped.
pub fn spawn(role: &str, ns: &str, cpu: usize, cgroup: Option<&Path>) -> Child {
    let exe = std::env::current_exe().expect("test binary path");
    let join = cgroup.map_or(String::new(), |d| {
        format!("echo $$ > '{}/cgroup.procs' && ", d.display())
    });
    Command::new("sh")
        .args([
            "-c",
            &format!("{join}exec ip netns exec \"$1\" taskset -c \"$2\" \"$3\""),
            "sh",
            ns,
            &cpu.to_string(),
        ])
        .arg(exe)
        .env(ROLE_ENV, role)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh")
}

/// What a started role printed when it finished (within `limit`).
pub fn counts(child: Child, limit: Duration, what: &str) -> Vec<Count> {
    let out = super::run::wait_output(child, limit, what);
    assert!(
        out.status.success(),
        "{what} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{what} printed '{}': {e}", text.trim()));
    match &v {
        serde_json::Value::Array(a) => a.iter().filter_map(Count::from_json).collect(),
        one => Count::from_json(one).into_iter().collect(),
    }
}
