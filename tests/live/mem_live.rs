//! htop's columns on the live host, from both task paths: a process that
//! allocates and touches 64 MiB shows the RES, SHR and VIRT its
//! /proc/PID/statm says, with the task sampler (BPF) and with the /proc
//! path; and PID 1, which the kernel's task walk does not yield on every
//! kernel, is in the output of the real binary either way, its children
//! under it in the forest.

use crate::common;
use crate::common::tier::Need;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::run::{nettop, output_within, stdout};
use nettop::collector::{Collector, CollectorOptions};
use nettop::model::frame::Frame;

/// Set for the hog: how many MiB it allocates.
const HOG_ENV: &str = "NETTOP_TEST_HOG_MIB";
const HOG_MIB: usize = 64;

case!(
    memory_hog,
    [Need::Bpf],
    ignore = "helper process for res_matches_statm_on_both_paths"
);
/// The hog: not a test of its own. `res_matches_statm_on_both_paths`
/// re-executes this binary with `--ignored --exact memory_hog` and
/// [`HOG_ENV`] set, to get a process whose memory is known. It touches
/// every page, says `ready` and sleeps until its stdin closes.
fn memory_hog() {
    let mib: usize = std::env::var(HOG_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut v = vec![0u8; mib << 20];
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&v);
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    let mut sink = [0u8; 16];
    while matches!(std::io::stdin().read(&mut sink), Ok(k) if k > 0) {}
}

struct Hog(Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn hog() -> Hog {
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(exe)
        .args([
            "mem_live::memory_hog",
            "--exact",
            "--ignored",
            "--nocapture",
            "-q",
        ])
        .env(HOG_ENV, HOG_MIB.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the hog");
    // The harness prints its own lines first.
    let out = BufReader::new(c.stdout.take().unwrap());
    let said: Vec<String> = out
        .lines()
        .map_while(Result::ok)
        .take_while(|l| l != "ready")
        .take(10)
        .collect();
    assert!(said.len() < 10, "the hog never got ready: {said:?}");
    Hog(c)
}

/// (VIRT, RES, SHR) in bytes from /proc/PID/statm.
fn statm(pid: u32) -> (u64, u64, u64) {
    let t = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap();
    let v: Vec<u64> = t
        .split_whitespace()
        .take(3)
        .map(|x| x.parse().unwrap())
        .collect();
    let page = nettop::collector::procfiles::page_size();
    (v[0] * page, v[1] * page, v[2] * page)
}

fn collector(no_task_sampler: bool, pid: u32) -> Option<Collector> {
    if !common::is_root() {
        common::skip("mem_live", "needs root for BPF");
        return None;
    }
    match Collector::new(CollectorOptions {
        pids: vec![pid],
        threads: true,
        no_task_sampler,
        ..Default::default()
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            common::skip("mem_live", &format!("BPF unavailable: {e:#}"));
            None
        }
    }
}

fn within(what: &str, got: u64, want: u64, pct: f64) {
    let d = (got as f64 - want as f64).abs() / want as f64 * 100.0;
    assert!(
        d <= pct,
        "{what}: nettop {got} vs statm {want} ({d:.2} % apart, at most {pct} %)"
    );
}

case!(res_matches_statm_on_both_paths, [Need::Bpf]);
fn res_matches_statm_on_both_paths() {
    let h = hog();
    let pid = h.0.id();
    for no_sampler in [false, true] {
        let Some(mut col) = collector(no_sampler, pid) else {
            return;
        };
        let a = col.sample().unwrap();
        let b = col.sample().unwrap();
        let (virt, res, shr) = statm(pid);
        let source = b.health.as_ref().map(|h| h.task_source.clone());
        if !no_sampler && source.as_deref() != Some("iter/task") {
            common::skip("mem_live", &format!("no task sampler: {source:?}"));
            return;
        }
        let what = format!("{source:?}");
        let f = nettop::model::compute(col.host(), &a, &b);
        let p = f.processes.iter().find(|t| t.pid == pid).unwrap();
        let got = |v: Option<u64>, name: &str| v.unwrap_or_else(|| panic!("{what}: no {name}"));
        let r = got(p.res_bytes, "RES");
        assert!(
            r >= (HOG_MIB as u64) << 20,
            "{what}: RES {r} below what it touched"
        );
        within(&format!("{what} RES"), r, res, 3.0);
        within(&format!("{what} SHR"), got(p.shr_bytes, "SHR"), shr, 10.0);
        within(
            &format!("{what} VIRT"),
            got(p.virt_bytes, "VIRT"),
            virt,
            1.0,
        );
        // MEM% is RES over MemTotal; every thread row has its process's.
        let total = col.host().mem_total_bytes.expect("MemTotal");
        let pct = p.mem_pct.unwrap();
        assert!(
            (pct - r as f64 / total as f64 * 100.0).abs() < 1e-9,
            "{what}"
        );
        let threads: Vec<_> = f.threads.iter().filter(|t| t.pid == pid).collect();
        assert!(threads.len() >= 2, "{what}: the harness has threads");
        assert!(threads.iter().all(|t| t.res_bytes == p.res_bytes), "{what}");
        assert_eq!((p.priority, p.nice), (Some(20), Some(0)), "{what}");
        common::report(&format!(
            "mem_live {what}: RES {r} vs statm {res} ({:+} pages)\n",
            (r as i64 - res as i64) / nettop::collector::procfiles::page_size() as i64
        ));
    }
}

case!(kernel_threads_have_no_memory, [Need::Bpf]);
/// Kernel threads have no address space: no memory, on both paths.
fn kernel_threads_have_no_memory() {
    for no_sampler in [false, true] {
        let Some(mut col) = collector(no_sampler, 2) else {
            return;
        };
        let s = col.sample().unwrap();
        let kthreadd = s.procs.iter().find(|p| p.tgid == 2).expect("kthreadd");
        assert!(kthreadd.kthread);
        assert_eq!(kthreadd.mem, None, "no_sampler {no_sampler}");
    }
}

fn processes(json: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(json.lines().last().unwrap_or("")).unwrap();
    v["processes"].as_array().cloned().unwrap_or_default()
}

case!(
    pid_1_is_in_the_output_with_and_without_the_task_sampler,
    [Need::Bpf]
);
/// `nettop -b -n 1 -p 1 --json` has PID 1, with the task sampler (whose
/// kernel walk leaves it out on some kernels) and without.
fn pid_1_is_in_the_output_with_and_without_the_task_sampler() {
    if !common::is_root() {
        common::skip("pid 1", "needs root for BPF");
        return;
    }
    for sampler in [true, false] {
        let mut cmd = nettop();
        cmd.args(["-b", "-n", "1", "-p", "1", "--json"])
            .env("NETTOP_CACHE_DIR", common::cache_dir());
        if !sampler {
            cmd.env("NETTOP_NO_TASK_SAMPLER", "1");
        }
        let out = output_within(&mut cmd, Duration::from_secs(120), "nettop -p 1");
        common::run::assert_clean_exit(&out, "nettop -p 1");
        let text = stdout(&out);
        let procs = processes(&text);
        let init = procs.iter().find(|p| p["pid"] == 1);
        assert!(init.is_some(), "sampler {sampler}: no PID 1 in {text}");
        let init = init.unwrap();
        assert_eq!(init["ppid"], 0);
        assert!(init["res_bytes"].as_u64().is_some_and(|r| r > 0), "{init}");
    }
}

case!(the_forest_hangs_pid_1s_children_under_it, [Need::Bpf]);
/// Every process with the sampler is in the forest under its parent: PID
/// 1 at the top, its children one level below it.
fn the_forest_hangs_pid_1s_children_under_it() {
    if !common::is_root() {
        common::skip("pid 1 forest", "needs root for BPF");
        return;
    }
    let mut cmd = nettop();
    cmd.args(["-b", "-n", "1", "--json"])
        .env("NETTOP_CACHE_DIR", common::cache_dir());
    let out = output_within(&mut cmd, Duration::from_secs(120), "nettop --json");
    common::run::assert_clean_exit(&out, "nettop --json");
    let text = stdout(&out);
    let frame: Frame = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    if frame.health.task_source != "iter/task" {
        common::skip("pid 1 forest", &frame.health.task_source);
        return;
    }
    let children: Vec<u32> = frame
        .processes
        .iter()
        .filter(|p| p.ppid == 1)
        .map(|p| p.pid)
        .collect();
    assert!(!children.is_empty(), "no process has PID 1 for a parent");
    let mut app = nettop::ui::state::App::new(nettop::ui::state::Options {
        forest: true,
        width: 160,
        height: 60,
        ..Default::default()
    });
    app.push_frame(frame);
    let depth = |pid: u32| {
        app.rows
            .iter()
            .find(|r| app.task(r.src).is_some_and(|t| t.pid == pid))
            .map(|r| r.depth)
    };
    assert_eq!(depth(1), Some(0), "PID 1 is a root of the forest");
    for c in children {
        assert_eq!(depth(c), Some(1), "PID {c} is not under PID 1");
    }
}
