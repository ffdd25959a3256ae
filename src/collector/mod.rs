//! Collectors: /proc and /sys readers and the BPF collector, producing raw
//! samples. Nothing here formats or computes rates; see `model`.

pub mod bpf;
pub mod cgroups;
pub mod facts;
pub mod netdev;
pub mod pods;
pub mod procfiles;
pub mod taskiter;
pub mod unseen;

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::sample::calibration::Calibration;
use crate::sample::{DeviceGap, HostInfo, RawSample, RawTask, Source};
use crate::sys::sanitize::Untrusted;
use crate::sys::sysroot::Sysroot;

use self::bpf::{BpfCollector, BpfOptions};

#[derive(Debug, Clone, Default)]
pub struct CollectorOptions {
    pub sysroot: Sysroot,
    pub no_bpf: bool,
    /// Processes to collect (their threads); empty = all.
    pub pids: Vec<u32>,
    /// Keep kernel BPF run-time stats on while running.
    pub bpf_stats: bool,
    /// Load the socket traffic programs.
    pub traffic: bool,
    /// Thread rows too (`-H`, tree view). Without it a sample holds one
    /// row per process and costs nothing per thread beyond the kernel's.
    pub threads: bool,
    /// Read tasks from /proc even when the in-kernel sampler loads.
    pub no_task_sampler: bool,
    /// Longest one run of the open-coded task walk may go on (`None`: the
    /// sampler's default).
    pub walk_span: Option<std::time::Duration>,
}

/// How often stray task records are swept (samples).
const SWEEP_EVERY: u64 = 60;

/// The live source of [`RawSample`]s.
pub struct Collector {
    opts: CollectorOptions,
    host: HostInfo,
    bpf: Option<BpfCollector>,
    seq: u64,
    /// Why tasks come from /proc although BPF runs (None: the sampler).
    proc_reason: Option<String>,
    /// The task sampler's raw records, reused between samples.
    buf: Vec<u8>,
    /// Task-hash overflows seen at the last sweep.
    map_full_seen: u64,
    /// Device counters of the other network namespaces.
    netns: netdev::OtherNamespaces,
    /// cgroup ids → paths and cpusets, learnt once and kept.
    cgroups: cgroups::CgroupResolver,
    /// Pod cgroups → namespace/pod/container, from the kubelet's
    /// directories on the node.
    pods: pods::PodNamer,
    /// Each process's command line, read once and kept (both task paths).
    cmdlines: procfiles::CmdlineCache,
    /// Processes the sampler's walk leaves out, read through /proc.
    unseen: unseen::Unseen,
    /// Bytes per page (the mm counters and `statm` count pages).
    page_size: u64,
}

impl Collector {
    /// Opens the collector. Without `no_bpf` this fails with an actionable
    /// message when BPF cannot be used (no root, no BTF).
    pub fn new(opts: CollectorOptions) -> Result<Self> {
        check_pids_exist(&opts.sysroot, &opts.pids)?;
        let mut host = facts::detect(&opts.sysroot);
        host.sanitize();
        let bpf = if opts.no_bpf {
            None
        } else {
            if !opts.sysroot.is_live() {
                bail!(
                    "--sysroot {} reads a recorded tree, but BPF sees the live kernel: add --no-bpf",
                    opts.sysroot.root().display()
                );
            }
            let ks =
                procfiles::read_ksoftirqd(&opts.sysroot).context("listing ksoftirqd threads")?;
            let ksoftirqd = procfiles::find_ksoftirqd(&ks).into_iter().collect();
            let pidns = nested_pid_namespace();
            let host_tasks = thread_count(&opts.sysroot);
            let bpf = BpfCollector::open(&BpfOptions {
                ksoftirqd,
                stats: opts.bpf_stats,
                traffic: opts.traffic,
                max_tasks: Some(task_map_size(host_tasks)),
                host_tasks,
                walk_span: opts.walk_span,
                no_sampler: opts.no_task_sampler || pidns,
                ..Default::default()
            })?;
            Some(bpf)
        };
        let proc_reason = match &bpf {
            None => Some("no BPF".to_string()),
            Some(b) => b.sampler_status().err().map(|e| {
                if opts.no_task_sampler {
                    "NETTOP_NO_TASK_SAMPLER is set".to_string()
                } else if nested_pid_namespace() {
                    "nettop runs in a child PID namespace: the task sampler sees host PIDs"
                        .to_string()
                } else {
                    format!("task sampler unavailable: {e:#}")
                }
            }),
        };
        Ok(Self {
            host,
            bpf,
            seq: 0,
            proc_reason,
            buf: Vec::new(),
            map_full_seen: 0,
            netns: netdev::OtherNamespaces::default(),
            cgroups: cgroups::CgroupResolver::new(&opts.sysroot),
            pods: pods::PodNamer::default(),
            cmdlines: procfiles::CmdlineCache::default(),
            unseen: unseen::Unseen::default(),
            page_size: procfiles::page_size(),
            opts,
        })
    }

    /// Thread rows on or off from the next sample on (the TUI's `H`/`t`).
    pub fn set_threads(&mut self, on: bool) {
        self.opts.threads = on;
    }

    pub fn host(&self) -> &HostInfo {
        &self.host
    }

    /// The loaded BPF side, for whoever calibrates with it (`calibrate`
    /// drives the collector, never the other way round).
    pub fn bpf(&self) -> Option<&BpfCollector> {
        self.bpf.as_ref()
    }

    /// The calibration table HIDDEN~ charges with, or why there is none.
    /// Without one nettop still runs, and the frames say why.
    pub fn set_calibration(&mut self, cal: Result<Calibration>) {
        match cal {
            Ok(c) => {
                self.host.calibration = Some(c);
                self.host.calibration_missing.clear();
            }
            Err(why) => {
                self.host.calibration = None;
                self.host.calibration_missing = format!("{why:#}");
            }
        }
    }

    pub fn source(&self) -> Source {
        if self.bpf.is_some() {
            Source::Bpf
        } else {
            Source::ProcOnly
        }
    }

    /// Every thread on the host now, from the task sampler (name, affinity,
    /// last CPU, kernel thread): what a walk of /proc would give, without a
    /// file read per thread. `None` where the sampler is not loaded.
    pub fn threads_now(&mut self) -> Option<Vec<RawTask>> {
        let bpf = self.bpf.as_mut()?;
        let mut buf = Vec::new();
        if !bpf.sample_tasks(&mut buf, true).ok()? {
            return None;
        }
        let root = &self.opts.sysroot;
        Some(decode_threads(root, &buf, &self.host, &mut self.unseen))
    }

    /// Takes one snapshot of every counter.
    pub fn sample(&mut self) -> Result<RawSample> {
        let root = &self.opts.sysroot;
        let online = procfiles::read_online(root)?;
        // Slot batches reach the task hash before anything reads it.
        if let Some(bpf) = &self.bpf {
            bpf.flush(&online);
        }
        let sampled = match &mut self.bpf {
            Some(bpf) => bpf.sample_tasks(&mut self.buf, self.opts.threads)?,
            None => false,
        };
        let mut exited_irq: Vec<(u32, crate::sample::IrqAcct)> = Vec::new();
        // Threads of the processes the sampler's walk did not yield, read
        // through /proc (`unseen`); empty on the /proc path.
        let mut unseen_threads: Vec<RawTask> = Vec::new();
        let (mut tasks, mut procs, bad_records) = if sampled {
            let set = taskiter::decode(
                &self.buf,
                &taskiter::DecodeOptions {
                    threads: self.opts.threads,
                    pids: &self.opts.pids,
                    clk_tck: self.host.clk_tck,
                    nr_cpus: self.host.nr_cpus,
                    page_size: self.page_size,
                },
            );
            let missing = self.unseen.find(
                root,
                &self.opts.pids,
                &set.procs,
                set.records,
                thread_count(root),
            )?;
            unseen_threads = procfiles::read_processes(root, &missing)?;
            (set.threads, set.procs, set.bad_records)
        } else {
            (procfiles::read_tasks(root, &self.opts.pids)?, Vec::new(), 0)
        };
        let ksoftirqd_from = if tasks.is_empty() { &procs } else { &tasks };
        let mut cpus = procfiles::read_cpus(root, ksoftirqd_from)?;
        let netdev::DeviceRead {
            mut devices,
            note: devices_note,
            gap: devices_gap,
        } = netdev::read_devices(root);
        // Every process, when this pass has them all: the namespaces they
        // hold are then found without listing /proc again.
        let processes = || {
            self.opts.pids.is_empty().then(|| {
                if sampled {
                    let unseen = unseen_threads.iter().map(|t| t.tgid);
                    procs.iter().map(|p| p.tgid).chain(unseen).collect()
                } else {
                    tasks.iter().map(|t| t.tgid).collect()
                }
            })
        };
        let others = self.netns.read(root, self.seq, &mut devices, processes);
        devices.extend(others.devices);
        // Own namespace first: its gap is the larger one.
        let devices_incomplete = match (devices_gap, others.gap) {
            (Some(cause), _) => devices_note.clone().map(|why| DeviceGap { cause, why }),
            (None, Some(cause)) => others.note.clone().map(|why| DeviceGap { cause, why }),
            (None, None) => None,
        };
        let mono_ns = crate::sys::clock::clock_ns(libc::CLOCK_MONOTONIC);
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);

        let mut napi = Vec::new();
        let mut health = None;
        let mut traffic = crate::sample::RawTraffic {
            why: "no BPF collector (--no-bpf)".into(),
            ..Default::default()
        };
        if let Some(bpf) = &mut self.bpf {
            let mut r = bpf.read_counters(!sampled)?;
            traffic = std::mem::take(&mut r.traffic);
            for cpu in cpus.iter_mut() {
                if let Some(c) = r.cpus.get(cpu.cpu as usize) {
                    cpu.irq = Some(c.acct.clone());
                    cpu.net = Some(c.net.clone());
                }
            }
            // A task only gets counters whose start time is its own: a
            // reused TID must not inherit a dead task's interrupt time.
            let ns_per_tick = 1_000_000_000 / self.host.clk_tck.max(1);
            let own = |t: &RawTask, start_ns: u64| start_ns / ns_per_tick == t.start_ticks;
            if !sampled {
                for t in tasks.iter_mut() {
                    if let Some(c) = r.tasks.get(&t.tid)
                        && own(t, c.start_boottime_ns)
                    {
                        t.irq = Some(Box::new(c.acct.clone()));
                    }
                }
            }
            // The sampler joins its tasks' records in the kernel; the tasks
            // its walk left out are looked up one by one.
            for t in unseen_threads.iter_mut() {
                if let Some(c) = bpf.task_counters(t.tid)
                    && own(t, c.start_boottime_ns)
                {
                    t.irq = Some(Box::new(c.acct));
                }
            }
            // Exited threads' interrupt time, kept per process in the kernel.
            let procfs_rows: &[RawTask] = if sampled { &unseen_threads } else { &tasks };
            if !procfs_rows.is_empty() {
                for (tgid, leader_start, acct) in bpf.read_exited()? {
                    let leader = procfs_rows
                        .iter()
                        .any(|t| t.tid == tgid && own(t, leader_start));
                    if leader {
                        exited_irq.push((tgid, acct));
                    }
                }
            }
            // Exits are handled in the kernel; strays are swept now and
            // then, or at once when the hash overflowed.
            let overflowed = r.health.map_full > self.map_full_seen;
            if overflowed || self.seq % SWEEP_EVERY == SWEEP_EVERY - 1 {
                self.map_full_seen = r.health.map_full;
                let live: Option<std::collections::HashSet<u32>> = (!sampled
                    && self.opts.pids.is_empty())
                .then(|| tasks.iter().map(|t| t.tid).collect());
                let unseen: std::collections::HashSet<u32> =
                    unseen_threads.iter().map(|t| t.tid).collect();
                if sampled || live.is_some() {
                    bpf.sweep(live.as_ref(), &unseen)?;
                }
            }
            napi = r.napi;
            let mut h = r.health;
            h.task_source = match &self.proc_reason {
                None => "iter/task".into(),
                Some(why) => format!("/proc ({why})"),
            };
            h.bad_records = bad_records;
            health = Some(h);
        }
        if !unseen_threads.is_empty() {
            procs.extend(procfiles::process_totals(root, &unseen_threads));
            procs.sort_by_key(|p| p.tgid);
            if self.opts.threads {
                tasks.append(&mut unseen_threads);
            }
        }
        tasks.sort_by_key(|t| (t.tgid, t.tid));
        if !sampled {
            // The /proc path: process totals as /proc/PID/stat has them.
            procs = procfiles::process_totals(root, &tasks);
            if !self.opts.threads {
                tasks.clear();
            }
        }
        for (tgid, acct) in exited_irq {
            if let Ok(i) = procs.binary_search_by_key(&tgid, |p| p.tgid) {
                procs[i].irq.get_or_insert_with(Default::default).add(&acct);
            }
        }
        // Process rows of either path: the sampler's records carry no
        // command line, and the /proc walk reads only per-task files.
        self.cmdlines.fill(root, &mut procs);
        let mut cgroups = self.cgroups.resolve(&mut tasks, &mut procs, sampled);
        self.pods.fill(root, &mut cgroups);
        self.seq += 1;
        let mut sample = RawSample {
            seq: self.seq,
            mono_ns,
            unix_ms,
            source: self.source(),
            cpus,
            tasks,
            procs,
            napi,
            devices,
            health,
            cgroups,
            notes: devices_note.into_iter().chain(others.note).collect(),
            system: Some(procfiles::read_system(root)),
            devices_incomplete,
            traffic,
        };
        // The boundary: names chosen by other users and drivers are made
        // safe to print before any front end or recording sees them.
        sample.sanitize();
        Ok(sample)
    }

    /// Every process in `sample`, one of this collector's, when it has
    /// them all: `None` when `-p` left some out.
    pub fn process_ids(&self, sample: &RawSample) -> Option<Vec<u32>> {
        self.opts
            .pids
            .is_empty()
            .then(|| sample.procs.iter().map(|p| p.tgid).collect())
    }
}

/// Every thread on the host, from the task sampler loaded alone (no
/// tracepoint attached, so the host pays no tracing cost): the thread list
/// of one-shot modes. An error where BPF or the sampler is unavailable;
/// callers walk /proc then.
pub fn list_threads(root: &Sysroot) -> Result<Vec<RawTask>> {
    if !root.is_live() {
        bail!("a recorded tree has no live tasks to sample");
    }
    if nested_pid_namespace() {
        bail!("nettop runs in a child PID namespace: the task sampler sees host PIDs");
    }
    let mut bpf = BpfCollector::open(&BpfOptions {
        sampler_only: true,
        max_tasks: Some(1),
        host_tasks: thread_count(root),
        ..Default::default()
    })?;
    let mut buf = Vec::new();
    if !bpf.sample_tasks(&mut buf, true)? {
        bail!("the task sampler did not load");
    }
    let host = facts::detect(root);
    Ok(decode_threads(
        root,
        &buf,
        &host,
        &mut unseen::Unseen::default(),
    ))
}

/// Thread rows of one sampler pass, with the threads of the processes its
/// walk left out read through /proc (a list without them would leave
/// those processes out of the topology's thread scan). A /proc that cannot
/// be read costs only those.
fn decode_threads(
    root: &Sysroot,
    buf: &[u8],
    host: &HostInfo,
    unseen: &mut unseen::Unseen,
) -> Vec<RawTask> {
    let set = taskiter::decode(
        buf,
        &taskiter::DecodeOptions {
            threads: true,
            pids: &[],
            clk_tck: host.clk_tck,
            nr_cpus: host.nr_cpus,
            page_size: procfiles::page_size(),
        },
    );
    let mut threads = set.threads;
    let more = unseen
        .find(root, &[], &set.procs, set.records, thread_count(root))
        .and_then(|missing| procfiles::read_processes(root, &missing));
    if let Ok(more) = more
        && !more.is_empty()
    {
        threads.extend(more);
        threads.sort_unstable_by_key(|t| (t.tgid, t.tid));
    }
    threads
}

/// Task-hash size: records exist only for tasks that were interrupted, but
/// on a busy host that can be most of them. Room for twice today's threads,
/// at least the default, and bounded (each entry is ~0.5 KiB of kernel
/// memory, preallocated). A full hash is reported in health, never silent.
fn task_map_size(threads_now: usize) -> u32 {
    let want = threads_now.saturating_mul(2).clamp(32_768, 1 << 20);
    u32::try_from(want.next_power_of_two()).unwrap_or(1 << 20)
}

/// Threads on the host now, from /proc/loadavg ("1/2345"): one small read.
pub fn thread_count(root: &Sysroot) -> usize {
    root.read_opt("/proc/loadavg")
        .and_then(|s| {
            let field = s.split_ascii_whitespace().nth(3)?;
            field.split_once('/')?.1.parse().ok()
        })
        .unwrap_or(0)
}

/// True when nettop's PID namespace is not the initial one: the kernel's
/// task walk reports PIDs of the initial namespace, /proc here does not.
fn nested_pid_namespace() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .map(|v| v.split_ascii_whitespace().count() > 1)
        })
        .unwrap_or(false)
}

/// A mistyped `-p` would otherwise show an empty, healthy-looking screen
/// forever. Checked once at start: a process that exits later simply
/// leaves the list, as in top.
fn check_pids_exist(root: &Sysroot, pids: &[u32]) -> Result<()> {
    let missing: Vec<String> = pids
        .iter()
        .filter(|&&p| !root.path(format!("/proc/{p}")).exists())
        .map(u32::to_string)
        .collect();
    if !missing.is_empty() {
        bail!(
            "no such process: {} (-p takes PIDs of running processes)",
            missing.join(",")
        );
    }
    Ok(())
}
