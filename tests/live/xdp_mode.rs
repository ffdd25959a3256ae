//! Live XDP mode check: a veth pair inside a fresh network namespace,
//! `bpf/testing/xdp_pass.bpf.c` attached in generic mode, then native mode, then
//! detached. nettop's rtnetlink reader, run inside that namespace, must
//! report each mode with the id of the program the kernel loaded, and the
//! real binary's `--pinning-check --format json` must show it too.
//! Needs root, `ip` and BPF; prints SKIPPED otherwise, fails under
//! NETTOP_REQUIRE_BPF=1.

use crate::common;
use crate::common::tier::Need;

use std::fs::File;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::process::Command;

use libbpf_rs::{Xdp, XdpFlags};
use nettop::topology::XdpMode;
use nettop::topology::xdp::{LinkXdpState, read_links};

fn skip(reason: &str) {
    common::skip("xdp_mode live test", reason);
}

fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Deletes the namespace, and with it the veth pair and any XDP program
/// still attached, even when an assertion failed.
struct NsGuard(String);

impl Drop for NsGuard {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

/// Runs `f` on a thread that has entered network namespace `ns` (setns on
/// CLONE_NEWNET switches only the calling thread), propagating panics.
fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    let path = format!("/run/netns/{ns}");
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let fd = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // SAFETY: `fd` is an open namespace file owned by this frame;
            // setns only changes this thread's network namespace.
            let rc = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
            f()
        });
        match h.join() {
            Ok(v) => v,
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}

/// Kernel id of a loaded program, asked of the kernel through its fd: an
/// oracle independent of netlink.
fn prog_id(fd: BorrowedFd<'_>) -> u32 {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: `info` is a writable bpf_prog_info of `len` bytes; the fd is a
    // live BPF program fd borrowed for the call.
    let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    assert_eq!(rc, 0, "bpf_prog_get_info_by_fd: {rc}");
    assert_ne!(info.id, 0);
    info.id
}

fn ifindex(name: &str) -> i32 {
    let c = std::ffi::CString::new(name).unwrap();
    // SAFETY: `c` is a NUL-terminated string alive for the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    assert_ne!(
        i,
        0,
        "if_nametoindex({name}): {}",
        std::io::Error::last_os_error()
    );
    i as i32
}

/// CPU time of the calling thread, kernel time included: under a loaded
/// machine the wall clock measures the neighbours, this measures the dump.
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

fn state_of(name: &str) -> LinkXdpState {
    let (links, bad) = read_links().expect("rtnetlink dump inside the namespace");
    assert!(bad.is_empty(), "undecodable messages: {bad:?}");
    links
        .into_iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("{name} missing from the dump"))
}

fn progs(l: &LinkXdpState) -> Vec<(XdpMode, u32)> {
    l.progs.iter().map(|p| (p.mode, p.id)).collect()
}

/// The real binary, inside the namespace (`ip netns exec` remounts /sys so
/// the veth shows in /sys/class/net): `summary.nic_xdp` for `dev`.
fn binary_nic_xdp(ns: &str, dev: &str) -> serde_json::Value {
    let v = common::netns::pinning_report_in(ns);
    let names = v["summary"]["nics"].as_array().unwrap().clone();
    let xdp = v["summary"]["nic_xdp"].as_array().unwrap();
    assert_eq!(
        xdp.iter().map(|e| e["nic"].clone()).collect::<Vec<_>>(),
        names,
        "nic_xdp follows nics"
    );
    xdp.iter()
        .find(|e| e["nic"] == dev)
        .unwrap_or_else(|| panic!("{dev} not in nic_xdp: {v}"))
        .clone()
}

case!(
    veth_generic_native_none,
    [Need::Root, Need::Tool("ip", "-V")]
);
fn veth_generic_native_none() {
    if !common::is_root() {
        return skip("needs root (netns, veth, XDP attach)");
    }
    let pid = std::process::id();
    let ns = format!("nettop-xdp-{pid}");
    let (a, b) = (format!("ntxa{pid}"), format!("ntxb{pid}"));
    // A leftover from a killed run with the same pid would make `add` fail.
    let _ = ip(&["netns", "del", &ns]);
    if let Err(e) = ip(&["netns", "add", &ns]) {
        return skip(&e);
    }
    let _guard = NsGuard(ns.clone());
    let setup = [
        vec![
            "-n", &ns, "link", "add", &a, "type", "veth", "peer", "name", &b,
        ],
        vec!["-n", &ns, "link", "set", &a, "up"],
        vec!["-n", &ns, "link", "set", &b, "up"],
    ];
    for args in &setup {
        if let Err(e) = ip(args) {
            return skip(&e);
        }
    }

    let mut obj = MaybeUninit::uninit();
    let sk = match common::xdp_pass::load(&mut obj) {
        Ok(s) => s,
        Err(e) => return skip(&e),
    };
    let fd = sk.progs.xdp_pass.as_fd();
    let id = prog_id(fd);

    in_netns(&ns, || {
        let idx = ifindex(&a);
        let xdp = Xdp::new(fd);

        let before = state_of(&a);
        assert_eq!(before.ifindex, idx as u32);
        assert_eq!((before.mode, progs(&before)), (XdpMode::None, vec![]));

        xdp.attach(idx, XdpFlags::SKB_MODE).expect("generic attach");
        let g = state_of(&a);
        assert_eq!(
            (g.mode, progs(&g)),
            (XdpMode::Generic, vec![(XdpMode::Generic, id)])
        );
        // The peer is untouched.
        assert_eq!(state_of(&b).mode, XdpMode::None);

        // The real binary, through topology::load and the pinning JSON.
        let e = binary_nic_xdp(&ns, &a);
        assert_eq!(e["mode"], "generic", "{e}");
        assert_eq!(
            e["progs"],
            serde_json::json!([{ "mode": "generic", "id": id }]),
            "{e}"
        );
        assert_eq!(binary_nic_xdp(&ns, &b)["mode"], "none");

        xdp.detach(idx, XdpFlags::SKB_MODE).expect("generic detach");
        assert_eq!(state_of(&a).mode, XdpMode::None);

        // veth implements ndo_bpf: native mode.
        xdp.attach(idx, XdpFlags::DRV_MODE)
            .expect("native attach on veth");
        let n = state_of(&a);
        assert_eq!(
            (n.mode, progs(&n)),
            (XdpMode::Native, vec![(XdpMode::Native, id)])
        );
        assert_eq!(binary_nic_xdp(&ns, &a)["mode"], "native");

        xdp.detach(idx, XdpFlags::DRV_MODE).expect("native detach");
        let none = state_of(&a);
        assert_eq!((none.mode, progs(&none)), (XdpMode::None, vec![]));
        assert_eq!(binary_nic_xdp(&ns, &a)["mode"], "none");
    });
}

case!(
    dump_cost_200_devices,
    [Need::Root, Need::Tool("ip", "-V")],
    ignore = "benchmark; run by hand"
);
/// Cost of one dump with 100 veth pairs (200 devices) in a namespace; for
/// BENCHMARKS.md, not an assertion. `cargo test --release --test live
/// -- --ignored --nocapture dump_cost`.
fn dump_cost_200_devices() {
    if !common::is_root() {
        return skip("needs root");
    }
    let pid = std::process::id();
    let ns = format!("nettop-xdpb-{pid}");
    let _ = ip(&["netns", "del", &ns]);
    ip(&["netns", "add", &ns]).unwrap();
    let _guard = NsGuard(ns.clone());
    let batch: String = (0..100)
        .map(|i| format!("link add xb{i}a type veth peer name xb{i}b\n"))
        .collect();
    let path = std::env::temp_dir().join(format!("nettop-xdpb-{pid}.batch"));
    std::fs::write(&path, batch).unwrap();
    ip(&["-n", &ns, "-batch", path.to_str().unwrap()]).unwrap();
    let _ = std::fs::remove_file(&path);
    in_netns(&ns, || {
        let (links, _) = read_links().unwrap();
        assert_eq!(links.len(), 201, "lo + 200 veths");
        let n = 200;
        let mut wall = Vec::with_capacity(n);
        let mut cpu = Vec::with_capacity(n);
        for _ in 0..n {
            let (t, c) = (std::time::Instant::now(), thread_cpu_ms());
            let r = read_links().unwrap();
            std::hint::black_box(r);
            cpu.push(thread_cpu_ms() - c);
            wall.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for (what, v) in [("wall", &mut wall), ("thread CPU (user+sys)", &mut cpu)] {
            v.sort_by(f64::total_cmp);
            println!(
                "rtnetlink XDP dump, 201 links, {what}: median {:.3} ms, p90 {:.3} ms, max {:.3} ms ({n} runs)",
                v[n / 2],
                v[n * 9 / 10],
                v[n - 1]
            );
        }
    });
}
