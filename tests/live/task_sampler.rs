//! The in-kernel task sampler against /proc: the figures top reads.
//!
//! Workloads of every shape run while the collector (task sampler on) and
//! /proc are read at the same moments; TOP% computed from both must agree
//! within 1 percentage point, per process and per thread. The process that
//! creates and joins threads in a loop is the case summing live threads
//! gets wrong: the kernel keeps exited threads' time in the process.

use crate::common;
use crate::common::tier::Need;

use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nettop::collector::{Collector, CollectorOptions};
use nettop::model::frame::{Frame, TaskView};
use nettop::sample::RawSample;

/// `stat` fields after the comm: (state, utime, stime). Parsed here rather
/// than with nettop's own parser, which is what is under test.
fn stat_fields(path: &str) -> Option<(char, u64, u64)> {
    let stat = std::fs::read_to_string(format!("{path}/stat")).ok()?;
    let rest: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    Some((
        rest.first()?.chars().next()?,
        rest.get(11)?.parse().ok()?,
        rest.get(12)?.parse().ok()?,
    ))
}

/// /proc's figures for one task: utime+stime ticks and schedstat runtime.
fn proc_ticks(path: &str) -> Option<(u64, u64)> {
    let (_, u, s) = stat_fields(path)?;
    let sched = std::fs::read_to_string(format!("{path}/schedstat")).ok()?;
    let run = sched.split_whitespace().next()?.parse().ok()?;
    Some((u + s, run))
}

fn spin_until(stop: &AtomicBool) {
    let mut x = 0u64;
    while !stop.load(Ordering::Relaxed) {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

struct Kill(Vec<Child>);
impl Drop for Kill {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn collector() -> Option<Collector> {
    if !common::is_root() {
        common::skip("task sampler", "needs root for BPF");
        return None;
    }
    let opts = CollectorOptions {
        threads: true,
        ..Default::default()
    };
    match Collector::new(opts) {
        Ok(c) => Some(c),
        Err(e) => {
            common::skip("task sampler", &format!("BPF unavailable: {e:#}"));
            None
        }
    }
}

fn row(rows: &[TaskView], tid: u32) -> &TaskView {
    rows.iter()
        .find(|t| t.tid == tid)
        .unwrap_or_else(|| panic!("task {tid} missing from the frame"))
}

case!(
    task_sampler_matches_proc_for_every_kind_of_task,
    [Need::Bpf]
);
fn task_sampler_matches_proc_for_every_kind_of_task() {
    let Some(mut col) = collector() else {
        return;
    };
    let sampled = |s: &RawSample| {
        s.health
            .as_ref()
            .is_some_and(|h| h.task_source == "iter/task")
    };
    // User-space hog, system-heavy copier, a multi-threaded process with
    // thread churn (this test process itself).
    let hog = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("sh");
    let copier = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=512"])
        .spawn()
        .expect("dd");
    let pids = [hog.id(), copier.id()];
    let _kill = Kill(vec![hog, copier]);
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("spinner".into())
            .spawn(move || spin_until(&stop))
            .expect("spawn")
    };
    let churn = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let t = std::thread::spawn(|| {
                    let end = Instant::now() + Duration::from_millis(3);
                    while Instant::now() < end {}
                });
                let _ = t.join();
                n += 1;
            }
            n
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let me = std::process::id();

    let read_proc = |tids: &[(u32, u32)]| -> Vec<Option<(u64, u64)>> {
        tids.iter()
            .map(|&(pid, tid)| {
                if pid == tid {
                    // The process: /proc/PID/stat has every thread, exited ones too.
                    proc_ticks(&format!("/proc/{pid}"))
                } else {
                    proc_ticks(&format!("/proc/{pid}/task/{tid}"))
                }
            })
            .collect()
    };
    // The spinner, alive through the whole test.
    let spinner_tid = {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let tids: Vec<u32> = std::fs::read_dir(format!("/proc/{me}/task"))
                .expect("task dir")
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect();
            let busy = tids.iter().copied().find(|&t| {
                std::fs::read_to_string(format!("/proc/{me}/task/{t}/comm"))
                    .is_ok_and(|c| c.trim() == "spinner")
            });
            if let Some(t) = busy {
                break t;
            }
            assert!(Instant::now() < deadline, "no spinning thread found");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let keys = [
        (pids[0], pids[0]),
        (pids[1], pids[1]),
        (me, me),
        (me, spinner_tid),
    ];

    let a = col.sample().expect("sample");
    let pa = read_proc(&keys);
    let ta = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    let b = col.sample().expect("sample");
    let pb = read_proc(&keys);
    let dt = ta.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = spinner.join();
    let joined = churn.join().unwrap_or(0);
    assert!(sampled(&a) && sampled(&b), "the task sampler did not run");

    let host = col.host().clone();
    let f: Frame = nettop::model::compute(&host, &a, &b);
    let tck = host.clk_tck as f64;
    let mut report = String::from("\nTOP% from the task sampler vs /proc over the same interval\n");
    for (i, &(pid, tid)) in keys.iter().enumerate() {
        let (Some(x), Some(y)) = (pa[i], pb[i]) else {
            panic!("/proc lost task {pid}/{tid}");
        };
        let proc_pct = (y.0 - x.0) as f64 / tck / dt * 100.0;
        let v = if pid == tid {
            row(&f.processes, pid)
        } else {
            row(&f.threads, tid)
        };
        report.push_str(&format!(
            "  {pid:>7}/{tid:<7} {:<10} nettop {:6.1}  /proc {:6.1}\n",
            v.comm, v.top_pct, proc_pct
        ));
        assert!(
            (v.top_pct - proc_pct).abs() <= 1.0,
            "{pid}/{tid} ({}): nettop TOP% {:.1} vs /proc {:.1}",
            v.comm,
            v.top_pct,
            proc_pct
        );
        // On-CPU time is the scheduler's runtime either way.
        if pid != tid {
            let run_pct = (y.1 - x.1) as f64 / 1e9 / dt * 100.0;
            assert!(
                (v.on_cpu_pct - run_pct).abs() <= 1.0,
                "{tid}: on-CPU {:.1} vs schedstat {:.1}",
                v.on_cpu_pct,
                run_pct
            );
        }
    }
    report.push_str(&format!(
        "  (thread churn: {joined} threads created and joined)\n"
    ));
    common::report(&report);
    // The churned threads' time is in the process total: two spinners plus
    // churn keep it well above what its live threads alone show.
    let live_sum: f64 = f
        .threads
        .iter()
        .filter(|t| t.pid == me)
        .map(|t| t.top_pct)
        .sum();
    let proc_row = row(&f.processes, me);
    assert!(joined > 50, "the churn thread barely ran ({joined})");
    assert!(
        proc_row.top_pct > live_sum + 5.0,
        "exited threads' time is missing: process {:.1} vs live threads {:.1}",
        proc_row.top_pct,
        live_sum
    );
}

case!(process_mode_has_no_thread_rows, [Need::Bpf]);
/// Process mode builds no thread rows, and the process totals equal the
/// ones thread mode computes for the same interval.
fn process_mode_has_no_thread_rows() {
    let Some(mut col) = collector() else {
        return;
    };
    col.set_threads(false);
    let a = col.sample().expect("sample");
    std::thread::sleep(Duration::from_millis(200));
    let b = col.sample().expect("sample");
    assert!(a.tasks.is_empty() && b.tasks.is_empty());
    assert!(b.procs.len() > 10, "too few processes: {}", b.procs.len());
    let f = nettop::model::compute(col.host(), &a, &b);
    assert!(f.threads.is_empty());
    assert!(f.summary.tasks as usize >= f.processes.len());
    let me = std::process::id();
    let p = row(&f.processes, me);
    assert!(p.nr_threads >= 2, "test harness threads: {}", p.nr_threads);
}

case!(exited_threads_keep_their_interrupt_time, [Need::Bpf]);
/// Interrupt work a thread did before it exited stays in its process's
/// totals (sched_process_exit moves it in the kernel): loopback sends run
/// their NET_RX softirq inline in the sending thread, which then exits.
fn exited_threads_keep_their_interrupt_time() {
    let Some(mut col) = collector() else {
        return;
    };
    col.set_threads(false);
    let rx = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = rx.local_addr().expect("addr");
    let me = std::process::id();
    let net_rx = |s: &RawSample| -> u64 {
        s.procs
            .iter()
            .find(|p| p.tgid == me)
            .and_then(|p| p.irq.as_ref())
            .map_or(0, |a| a.softirq_count[nettop::sample::NET_RX])
    };
    let a = col.sample().expect("sample");
    const THREADS: u64 = 40;
    const SENDS: u64 = 25;
    for _ in 0..THREADS {
        std::thread::spawn(move || {
            let tx = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
            for _ in 0..SENDS {
                let _ = tx.send_to(&[0u8; 64], addr);
            }
        })
        .join()
        .expect("sender");
    }
    let b = col.sample().expect("sample");
    let runs = net_rx(&b).saturating_sub(net_rx(&a));
    common::report(&format!(
        "\nNET_RX runs kept from {THREADS} exited threads ({} sends): {runs}\n",
        THREADS * SENDS
    ));
    assert!(
        runs >= THREADS * SENDS * 9 / 10,
        "exited threads' NET_RX runs lost: {runs} of {} sends",
        THREADS * SENDS
    );
}

case!(proc_path_process_totals_include_exited_threads, [Need::Bpf]);
/// The /proc path (no task sampler) also reports process totals with the
/// group's exited threads, from /proc/PID/stat, and on-CPU time to match.
fn proc_path_process_totals_include_exited_threads() {
    if !common::is_root() {
        common::skip("proc path totals", "needs root for BPF");
        return;
    }
    let mut col = match Collector::new(CollectorOptions {
        no_task_sampler: true,
        threads: true,
        ..Default::default()
    }) {
        Ok(c) => c,
        Err(e) => {
            common::skip("proc path totals", &format!("BPF unavailable: {e:#}"));
            return;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let t = std::thread::spawn(|| {
                    let end = Instant::now() + Duration::from_millis(3);
                    while Instant::now() < end {}
                });
                let _ = t.join();
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let a = col.sample().expect("sample");
    std::thread::sleep(Duration::from_secs(2));
    let b = col.sample().expect("sample");
    stop.store(true, Ordering::Relaxed);
    let _ = churn.join();
    assert!(
        b.health
            .as_ref()
            .is_some_and(|h| h.task_source.starts_with("/proc")),
        "{:?}",
        b.health.as_ref().map(|h| &h.task_source)
    );
    let f = nettop::model::compute(col.host(), &a, &b);
    let me = std::process::id();
    let p = row(&f.processes, me);
    let live: f64 = f
        .threads
        .iter()
        .filter(|t| t.pid == me)
        .map(|t| t.top_pct)
        .sum();
    common::report(&format!(
        "\n/proc path, thread churn: process TOP% {:.1}, on-CPU {:.1}, live threads {:.1}\n",
        p.top_pct, p.on_cpu_pct, live
    ));
    // The churned threads all exited between the samples: only the
    // process-level figures can show their work.
    assert!(
        p.top_pct > live + 10.0,
        "TOP% {:.1} vs live threads {:.1}",
        p.top_pct,
        live
    );
    assert!(
        (p.on_cpu_pct - p.top_pct).abs() < 10.0,
        "on-CPU {:.1} vs TOP% {:.1}",
        p.on_cpu_pct,
        p.top_pct
    );
}

/// Waits until process `pid` is called `comm` and has its arguments: the
/// kernel renames a process in exec a moment before it sets them up (the
/// collector reads an empty command line again, the cache's unit test
/// checks that; this test wants the steady state).
fn wait_for_exec(pid: u32, comm: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let done = || {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
            && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|a| !a.is_empty())
    };
    while !done() {
        assert!(Instant::now() < deadline, "{pid} never became {comm}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A child started with arguments shows them, and this process as its
/// parent, in the collector's process rows and in the frame; after it
/// execs another program (same PID and start time, a new name) the next
/// sample shows the new program's arguments, not the cached ones.
fn command_line_and_parent_of_a_child(col: &mut Collector, path: &str) {
    use std::io::Write;
    let me = std::process::id();
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let mut child = Command::new("sh")
        .args(["-c", "read x; exec sleep 30", "nettop-marker-arg"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let _kill = Kill(vec![child]);
    wait_for_exec(pid, "sh");
    let a = col.sample().expect("sample");
    let source = a.health.as_ref().map_or("", |h| h.task_source.as_str());
    assert!(source.starts_with(path), "{path}: tasks from {source:?}");
    let row = |s: &RawSample| s.procs.iter().find(|p| p.tgid == pid).cloned();
    let p = row(&a).expect("child listed");
    assert_eq!(
        p.cmdline,
        argv(&["sh", "-c", "read x; exec sleep 30", "nettop-marker-arg"]),
        "{path}"
    );
    assert_eq!(p.ppid, me, "{path}");

    writeln!(stdin, "go").expect("write");
    wait_for_exec(pid, "sleep");
    let b = col.sample().expect("sample");
    let p = row(&b).expect("child listed after exec");
    assert_eq!(p.cmdline, argv(&["sleep", "30"]), "{path}: exec re-reads");
    assert_eq!(p.ppid, me, "{path}");
    let f = nettop::model::compute(col.host(), &a, &b);
    let v = f
        .processes
        .iter()
        .find(|t| t.pid == pid)
        .expect("child in the frame");
    assert_eq!((v.ppid, v.cmdline.clone()), (me, argv(&["sleep", "30"])));
    // This process is in the frame with its own whole argv.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mine = f.processes.iter().find(|t| t.pid == me).expect("me");
    assert_eq!(mine.cmdline, args, "{path}");
}

case!(children_show_their_command_line_and_parent, [Need::Bpf]);
fn children_show_their_command_line_and_parent() {
    let Some(mut col) = collector() else {
        return;
    };
    col.set_threads(false);
    command_line_and_parent_of_a_child(&mut col, "iter/task");
}

case!(
    proc_path_children_show_their_command_line_and_parent,
    [Need::Bpf]
);
/// The same through the /proc path (without BPF: no root needed).
fn proc_path_children_show_their_command_line_and_parent() {
    let mut col = Collector::new(CollectorOptions {
        no_bpf: true,
        ..Default::default()
    })
    .expect("collector");
    command_line_and_parent_of_a_child(&mut col, "");
}
