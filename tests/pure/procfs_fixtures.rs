//! The /proc and /sys readers against fake trees in tests/fixtures/proc/.
//! "modern": 6.x layout (softnet cpu column, /proc/config.gz with
//! IRQ_TIME_ACCOUNTING=y, node cpulists). "old": softnet without the cpu
//! column, /boot/config with the option not set, cpuN/nodeM links.
//! "noconfig": a corrupt /proc/config.gz and no /boot config.

use crate::common;

use std::path::PathBuf;

use nettop::collector::facts;
use nettop::collector::procfiles;
use nettop::sample::{Regime, Softnet};
use nettop::sys::sysroot::Sysroot;

fn root(name: &str) -> Sysroot {
    Sysroot::new(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/proc")
            .join(name),
    )
}

#[test]
fn tasks_all_threads_skip_vanished_and_odd_comm() {
    let r = root("modern");
    let tasks = procfiles::read_tasks(&r, &[]).unwrap();
    let ids: Vec<(u32, u32)> = tasks.iter().map(|t| (t.tgid, t.tid)).collect();
    // 100/task/102 has no stat (vanished thread), 200 has no task dir
    // (vanished process), "self" is not a pid: all skipped silently.
    assert_eq!(ids, vec![(1, 1), (9, 9), (15, 15), (100, 100), (100, 101)]);

    let weird = &tasks[3];
    assert_eq!(weird.comm, "weird) name (x");
    assert_eq!(weird.state, 'R');
    assert_eq!((weird.utime_ticks, weird.stime_ticks), (200, 100));
    assert_eq!(weird.start_ticks, 500);
    assert_eq!(weird.last_cpu, 3);
    assert_eq!(weird.on_cpu_ns, 3_000_000_000);
    assert_eq!(weird.run_delay_ns, 5000);
    // Effective UID (second column), not the real one.
    assert_eq!(weird.uid, 1000);
    assert_eq!(weird.affinity, "0-3");
    assert!(!weird.kthread);
    assert!(weird.irq.is_none());

    assert_eq!(tasks[4].comm, "worker 1");
    assert_eq!(tasks[4].affinity, "1");
    assert!(tasks[1].kthread, "PF_KTHREAD set in stat flags");
    assert_eq!(tasks[0].uid, 0);
}

#[test]
fn pid_filter_keeps_ksoftirqd() {
    let r = root("modern");
    let tasks = procfiles::read_tasks(&r, &[100]).unwrap();
    let ids: Vec<u32> = tasks.iter().map(|t| t.tid).collect();
    assert_eq!(ids, vec![9, 15, 100, 101]);
    // A pid that does not exist is not an error either.
    let tasks = procfiles::read_tasks(&r, &[4242]).unwrap();
    assert_eq!(tasks.iter().map(|t| t.tid).collect::<Vec<_>>(), vec![9, 15]);
}

/// Start-up finds ksoftirqd among kthreadd's children, without listing
/// /proc (which steps over every thread on the host), and lists /proc when
/// PID 2 is not kthreadd (a child PID namespace) or names none.
#[test]
fn ksoftirqd_from_kthreadds_children() {
    let tids = |r: &Sysroot| -> Vec<u32> {
        let mut t: Vec<u32> = procfiles::read_ksoftirqd(r)
            .unwrap()
            .iter()
            .map(|t| t.tid)
            .collect();
        t.sort_unstable();
        t
    };
    let d = common::fixture_copy("proc/modern");
    let r = Sysroot::new(d.path().to_path_buf());
    assert_eq!(tids(&r), [9, 15], "no PID 2: the listing");
    let kthreadd = d.path().join("proc/2");
    std::fs::create_dir_all(kthreadd.join("task/2")).unwrap();
    std::fs::write(kthreadd.join("comm"), "kthreadd\n").unwrap();
    // Lists 9, not 15: what is found came from the children.
    std::fs::write(kthreadd.join("task/2/children"), "3 9 100 ").unwrap();
    assert_eq!(tids(&r), [9]);
    std::fs::write(kthreadd.join("comm"), "bash\n").unwrap();
    assert_eq!(tids(&r), [9, 15], "PID 2 is not kthreadd: the listing");
    std::fs::write(kthreadd.join("comm"), "kthreadd\n").unwrap();
    std::fs::write(kthreadd.join("task/2/children"), "3 100").unwrap();
    assert_eq!(tids(&r), [9, 15], "no ksoftirqd among them: the listing");
}

#[test]
fn ksoftirqd_map_only_kernel_threads() {
    let r = root("modern");
    let mut tasks = procfiles::read_tasks(&r, &[]).unwrap();
    let mut fake = tasks[3].clone();
    fake.comm = "ksoftirqd/3".into();
    fake.tid = 7777;
    tasks.push(fake);
    let m = procfiles::find_ksoftirqd(&tasks);
    assert_eq!(m.into_iter().collect::<Vec<_>>(), vec![(0, 9), (1, 15)]);
}

#[test]
fn cpus_offline_row_and_softnet_cpu_column() {
    let r = root("modern");
    let tasks = procfiles::read_tasks(&r, &[]).unwrap();
    let cpus = procfiles::read_cpus(&r, &tasks).unwrap();
    assert_eq!(
        cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    let on: Vec<bool> = cpus.iter().map(|c| c.online).collect();
    assert_eq!(on, vec![true, true, false, true]);
    assert!(cpus[2].times.is_none() && cpus[2].softnet.is_none());
    let t1 = cpus[1].times.as_ref().unwrap();
    assert_eq!(
        (
            t1.user,
            t1.nice,
            t1.system,
            t1.idle,
            t1.iowait,
            t1.irq,
            t1.softirq,
            t1.steal,
            t1.guest,
            t1.guest_nice
        ),
        (200, 2, 60, 2000, 3, 4, 5, 6, 7, 8)
    );
    assert_eq!(cpus[3].softnet.as_ref().unwrap().processed, 0xff);
    assert_eq!(cpus[1].softnet.as_ref().unwrap().processed, 0x2000);
    assert_eq!(cpus[0].ksoftirqd_tid, Some(9));
    assert_eq!(cpus[1].ksoftirqd_tid, Some(15));
    assert_eq!(cpus[3].ksoftirqd_tid, None);
    assert!(cpus.iter().all(|c| c.irq.is_none() && c.net.is_none()));
}

#[test]
fn softnet_without_cpu_column_maps_rows_to_online_cpus() {
    let sn = procfiles::read_softnet(&root("old")).unwrap();
    let cpus: Vec<u32> = sn.iter().map(|(c, _)| *c).collect();
    assert_eq!(cpus, vec![0, 1, 3]);
    assert_eq!(
        sn[2].1,
        Softnet {
            processed: 0xff,
            dropped: 1,
            time_squeeze: 2,
            received_rps: 5,
            flow_limit: 0
        }
    );
    let modern = procfiles::read_softnet(&root("modern")).unwrap();
    assert_eq!(
        modern
            .iter()
            .map(|(c, s)| (*c, s.processed))
            .collect::<Vec<_>>(),
        vec![(0, 0x10), (1, 0x2000), (3, 0xff)]
    );
}

#[test]
fn softnet_garbage_is_an_error_naming_the_problem() {
    let e = procfiles::parse_softnet("0000000z 1 2\n", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("0000000z"), "{e}");
    let online = nettop::sys::cpuset::CpuSet::parse_list("0").unwrap();
    assert!(procfiles::parse_softnet("1 2 3\n1 2 3\n", Some(&online)).is_err());
}

#[test]
fn devices_skip_non_devices() {
    let devs = procfiles::read_devices(&root("modern")).unwrap();
    assert_eq!(devs.len(), 2);
    assert_eq!((devs[0].name.as_str(), devs[0].ifindex), ("eth0", 2));
    assert_eq!(
        (
            devs[0].rx_packets,
            devs[0].rx_bytes,
            devs[0].tx_packets,
            devs[0].tx_bytes,
            devs[0].rx_dropped
        ),
        (1000, 2000, 3000, 4000, 5000)
    );
    assert_eq!(devs[1].name, "lo");
}

#[test]
fn host_modern_config_gz_and_node_lists() {
    let h = facts::detect(&root("modern"));
    assert_eq!(h.hostname, "modern-host");
    assert_eq!(h.kernel, "6.18.0-test");
    assert_eq!(h.boot_id, "11111111-2222-3333-4444-555555555555");
    assert_eq!(h.regime, Regime::IrqTimeAccounting);
    assert_eq!(h.regime_source, "/proc/config.gz");
    assert_eq!(h.nr_cpus, 4);
    assert_eq!(h.cpu_node, vec![0, 0, 1, 1]);
    assert!(h.clk_tck > 0);
}

#[test]
fn host_old_boot_config_and_cpu_node_links() {
    let h = facts::detect(&root("old"));
    assert_eq!(h.regime, Regime::TickBased);
    assert_eq!(h.regime_source, "/boot/config-5.4.0-old");
    assert_eq!(h.cpu_node, vec![0, 0, 0, 0]);
}

#[test]
fn host_unreadable_config_is_unknown_and_partial_numa_is_empty() {
    let h = facts::detect(&root("noconfig"));
    assert_eq!(h.regime, Regime::Unknown);
    assert_eq!(h.regime_source, "");
    assert_eq!(h.hostname, "");
    assert_eq!(h.nr_cpus, 8);
    // CPUs 6-7 have no node on a two-node host: unknown, not guessed.
    assert!(h.cpu_node.is_empty());
}

#[test]
fn missing_proc_is_an_error_naming_the_path() {
    let r = Sysroot::new("/nonexistent-nettop-root");
    let e = format!("{:#}", procfiles::read_tasks(&r, &[]).unwrap_err());
    assert!(e.contains("/nonexistent-nettop-root/proc"), "{e}");
    let e = format!("{:#}", procfiles::read_cpu_times(&r).unwrap_err());
    assert!(e.contains("/nonexistent-nettop-root/proc/stat"), "{e}");
}

/// The real /proc: this test process's own threads must be there.
#[test]
fn live_proc_has_this_process() {
    let me = std::process::id();
    let tasks = procfiles::read_tasks(&Sysroot::default(), &[me]).unwrap();
    let mine: Vec<_> = tasks.iter().filter(|t| t.tgid == me).collect();
    assert!(!mine.is_empty());
    assert!(mine.iter().any(|t| t.tid == me));
    assert!(mine.iter().all(|t| t.on_cpu_ns > 0 || t.tid != me));
    let cpus = procfiles::read_cpus(&Sysroot::default(), &tasks).unwrap();
    assert!(cpus.iter().any(|c| c.online && c.times.is_some()));
}

/// The live fast path (one `status` per process, `sched_getaffinity` per
/// thread) reports what each thread's own `status` says: a thread pinned
/// to one CPU keeps its own affinity, and the uid is ours.
#[test]
fn live_threads_get_their_own_affinity() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        let tid = common::gettid();
        common::pin_self(0);
        tx.send(tid).unwrap();
        let _ = done_rx.recv();
    });
    let tid = rx.recv().unwrap();
    let me = std::process::id();
    let tasks = procfiles::read_tasks(&Sysroot::default(), &[me]).unwrap();
    let status_of = |t: u32| {
        let text = std::fs::read_to_string(format!("/proc/{me}/task/{t}/status")).unwrap();
        procfiles::parse_status(&text)
    };
    let (pinned_uid, pinned_aff) = status_of(tid);
    let (main_uid, main_aff) = status_of(me);
    done_tx.send(()).unwrap();
    h.join().unwrap();

    let pinned = tasks
        .iter()
        .find(|t| t.tid == tid)
        .expect("pinned thread listed");
    assert_eq!(pinned_aff, "0");
    assert_eq!((pinned.uid, pinned.affinity.as_str()), (pinned_uid, "0"));
    let main = tasks
        .iter()
        .find(|t| t.tid == me)
        .expect("main thread listed");
    assert_eq!((main.uid, main.affinity.clone()), (main_uid, main_aff));
    assert!(tasks.len() > 1, "the test harness runs several threads");
}

/// The /proc path fills every row's parent (`stat` field 4) and each
/// process row's command line: one with arguments holding spaces,
/// parentheses and an escape (which the sample's sanitiser turns into
/// '?'), kernel threads with an empty one that is never read.
#[test]
fn proc_path_reads_parents_and_command_lines() {
    use nettop::collector::{Collector, CollectorOptions};
    let r = root("modern");
    let tasks = procfiles::read_tasks(&r, &[]).unwrap();
    let ppids: Vec<(u32, u32)> = tasks.iter().map(|t| (t.tid, t.ppid)).collect();
    assert_eq!(ppids, vec![(1, 0), (9, 2), (15, 2), (100, 1), (101, 1)]);

    // The readers, before the sanitiser: the escape is still there.
    let mut procs = procfiles::process_totals(&r, &tasks);
    let mut cache = procfiles::CmdlineCache::default();
    cache.fill(&r, &mut procs);
    let weird = procs.iter().find(|p| p.tgid == 100).unwrap();
    assert_eq!(weird.cmdline[3], "--color=\x1b[31mred");
    assert_eq!(cache.reads(), 2, "kernel threads are not read");

    // The collector's /proc path, as `--no-bpf --sysroot` runs it.
    let mut col = Collector::new(CollectorOptions {
        sysroot: r.clone(),
        no_bpf: true,
        threads: true,
        ..Default::default()
    })
    .unwrap();
    let a = col.sample().unwrap();
    let p = |pid: u32| a.procs.iter().find(|p| p.tgid == pid).unwrap();
    assert_eq!(
        p(100).cmdline,
        [
            "/opt/weird/bin/weird",
            "--title",
            "weird) name (x",
            "--color=?[31mred"
        ]
    );
    assert_eq!(p(100).ppid, 1);
    assert_eq!(
        (p(1).cmdline.clone(), p(1).ppid),
        (vec!["/sbin/init".to_string(), "splash".into()], 0)
    );
    for ks in [9, 15] {
        assert!(p(ks).kthread && p(ks).cmdline.is_empty());
        assert_eq!(p(ks).ppid, 2);
    }
    // Thread rows: their parent, no command line (their process has it).
    assert!(a.tasks.iter().all(|t| t.cmdline.is_empty()));
    assert_eq!(a.tasks.iter().find(|t| t.tid == 101).unwrap().ppid, 1);

    // And through the model into the frame.
    let b = col.sample().unwrap();
    let f = nettop::model::compute(col.host(), &a, &b);
    let v = f.processes.iter().find(|t| t.pid == 100).unwrap();
    assert_eq!((v.ppid, v.cmdline.len()), (1, 4));
    assert_eq!(f.threads.iter().find(|t| t.tid == 101).unwrap().ppid, 1);
}

/// Memory, load and uptime through the sysroot: a tree that has the files
/// gives their figures, one that lacks them (the fixture trees) gives
/// unknown, never 0, and the live /proc gives this host's.
#[test]
fn system_figures_from_a_tree_and_live() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    let file =
        |name: &str, text: &str| std::fs::write(dir.path().join("proc").join(name), text).unwrap();
    file(
        "meminfo",
        "MemTotal: 8000 kB\nMemFree: 1000 kB\nSwapTotal: 0 kB\n",
    );
    file("loadavg", "0.50 0.25 0.12 2/300 4242\n");
    file("uptime", "3725.50 7000.00\n");
    let s = procfiles::read_system(&Sysroot::new(dir.path()));
    assert_eq!(
        s.mem.as_ref().map(|m| (m.total_kib, m.free_kib)),
        Some((8000, 1000))
    );
    assert_eq!(
        s.load.as_ref().map(|l| (l.running, l.threads)),
        Some((2, 300))
    );
    assert_eq!(s.uptime_s, Some(3725.5));
    // A file that does not parse is unknown on its own.
    file("loadavg", "garbage\n");
    let s = procfiles::read_system(&Sysroot::new(dir.path()));
    assert_eq!((s.load, s.uptime_s), (None, Some(3725.5)));

    // The fixture tree has meminfo (for MemTotal) but no loadavg or uptime.
    let fixture = procfiles::read_system(&root("modern"));
    assert!(fixture.mem.is_some());
    assert_eq!((fixture.load, fixture.uptime_s), (None, None));

    let live = procfiles::read_system(&Sysroot::default());
    let m = live.mem.expect("this host's /proc/meminfo");
    assert!(m.total_kib > 0 && m.free_kib <= m.total_kib, "{m:?}");
    assert!(live.load.is_some() && live.uptime_s.is_some_and(|u| u > 0.0));
}

/// The htop columns on the /proc path: each process's `statm` once for
/// all its threads (bytes), kernel threads and a tree without `statm`
/// with no memory (unknown, never 0), `stat` fields 18/19 per thread,
/// MemTotal from meminfo, and through the model MEM% and TIME+.
#[test]
fn proc_path_reads_memory_priority_and_mem_total() {
    use nettop::collector::{Collector, CollectorOptions};
    let r = root("modern");
    let page = procfiles::page_size();
    let tasks = procfiles::read_tasks(&r, &[]).unwrap();
    let t = |tid: u32| tasks.iter().find(|t| t.tid == tid).unwrap();
    let m = t(100).mem.expect("statm of process 100");
    assert_eq!(
        (m.virt, m.res, m.shr),
        (250_000 * page, 64_000 * page, 2_000 * page)
    );
    assert_eq!(t(101).mem, t(100).mem, "a thread has its process's memory");
    assert_eq!(t(9).mem, None, "a kernel thread has none");
    // Per thread: the leader reniced, its worker not.
    assert_eq!((t(100).priority, t(100).nice), (Some(15), Some(-5)));
    assert_eq!((t(101).priority, t(101).nice), (Some(20), Some(0)));
    let old = procfiles::read_tasks(&root("old"), &[]).unwrap();
    assert!(old.iter().all(|t| t.mem.is_none()), "no statm: unknown");

    let h = facts::detect(&r);
    assert_eq!(h.mem_total_bytes, Some(16_315_444 * 1024));
    assert_eq!(facts::detect(&root("old")).mem_total_bytes, None);

    let mut col = Collector::new(CollectorOptions {
        sysroot: r.clone(),
        no_bpf: true,
        threads: true,
        ..Default::default()
    })
    .unwrap();
    let (a, b) = (col.sample().unwrap(), col.sample().unwrap());
    let f = nettop::model::compute(col.host(), &a, &b);
    let v = f.processes.iter().find(|t| t.pid == 100).unwrap();
    assert_eq!(v.res_bytes, Some(64_000 * page));
    let pct = v.mem_pct.unwrap();
    let want = (64_000 * page) as f64 / (16_315_444.0 * 1024.0) * 100.0;
    assert!((pct - want).abs() < 1e-9, "{pct} vs {want}");
    assert_eq!((v.priority, v.nice), (Some(15), Some(-5)));
    // 200 + 100 ticks of the leader and 400 of its worker, at USER_HZ.
    let tck = col.host().clk_tck as f64;
    assert!(
        (v.cpu_time_s - 700.0 / tck).abs() < 1e-9,
        "{}",
        v.cpu_time_s
    );
    let k = f.processes.iter().find(|t| t.pid == 9).unwrap();
    assert_eq!((k.res_bytes, k.mem_pct), (None, None));
}
