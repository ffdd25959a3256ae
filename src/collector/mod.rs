//! Collectors: /proc and /sys readers and the BPF collector, producing raw
//! samples. Nothing here formats or computes rates; see `model`.

pub mod bpf;
pub mod host;
pub mod procfs;

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::cpuset::CpuSet;
use crate::model::raw::{HostInfo, RawSample, Source};
use crate::sysroot::Sysroot;

use self::bpf::{BpfCollector, BpfOptions};

#[derive(Debug, Clone, Default)]
pub struct CollectorOptions {
    pub sysroot: Sysroot,
    pub no_bpf: bool,
    /// Processes to collect (their threads); empty = all.
    pub pids: Vec<u32>,
    /// Keep kernel BPF run-time stats on while running.
    pub bpf_stats: bool,
    /// Calibration cache directory (`None`: `$NETTOP_CACHE_DIR` or the default).
    pub cache_dir: Option<std::path::PathBuf>,
}

/// The live source of [`RawSample`]s.
pub struct Collector {
    opts: CollectorOptions,
    host: HostInfo,
    bpf: Option<BpfCollector>,
    seq: u64,
}

impl Collector {
    /// Opens the collector. Without `no_bpf` this fails with an actionable
    /// message when BPF cannot be used (no root, no BTF).
    pub fn new(opts: CollectorOptions) -> Result<Self> {
        check_pids_exist(&opts.sysroot, &opts.pids)?;
        let mut host = host::detect(&opts.sysroot);
        let bpf = if opts.no_bpf {
            None
        } else {
            if !opts.sysroot.is_live() {
                bail!(
                    "--sysroot {} reads a recorded tree, but BPF sees the live kernel: add --no-bpf",
                    opts.sysroot.root().display()
                );
            }
            let tasks =
                procfs::read_tasks(&opts.sysroot, &[]).context("listing ksoftirqd threads")?;
            let ksoftirqd = procfs::find_ksoftirqd(&tasks).into_iter().collect();
            let bpf = BpfCollector::open(&BpfOptions {
                ksoftirqd,
                stats: opts.bpf_stats,
                ..Default::default()
            })?;
            // Once per boot (cached): without it HIDDEN~ is not shown and the
            // frames say why, but nettop still runs.
            let dir = crate::calibrate::cache::dir(opts.cache_dir.as_deref());
            match crate::calibrate::cached_or_measure(&bpf, &opts.sysroot, &dir, &host) {
                Ok(c) => host.calibration = Some(c),
                Err(e) => host.calibration_missing = format!("{e:#}"),
            }
            Some(bpf)
        };
        Ok(Self {
            opts,
            host,
            bpf,
            seq: 0,
        })
    }

    pub fn host(&self) -> &HostInfo {
        &self.host
    }

    pub fn source(&self) -> Source {
        if self.bpf.is_some() {
            Source::Bpf
        } else {
            Source::ProcOnly
        }
    }

    /// Takes one snapshot of every counter.
    pub fn sample(&mut self) -> Result<RawSample> {
        let root = &self.opts.sysroot;
        let mut tasks = procfs::read_tasks(root, &self.opts.pids)?;
        let mut cpus = procfs::read_cpus(root, &tasks)?;
        let devices = procfs::read_devices(root).unwrap_or_default();
        let mono_ns = monotonic_ns();
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);

        let mut napi = Vec::new();
        let mut health = None;
        if let Some(bpf) = &self.bpf {
            let online = CpuSet::from_cpus(cpus.iter().filter(|c| c.online).map(|c| c.cpu));
            let r = bpf.read(&online)?;
            for cpu in cpus.iter_mut() {
                if let Some(c) = r.cpus.get(cpu.cpu as usize) {
                    cpu.irq = Some(c.acct.clone());
                    cpu.net = Some(c.net.clone());
                }
            }
            // A task only gets counters whose start time is its own: a
            // reused TID must not inherit a dead task's interrupt time.
            let ns_per_tick = 1_000_000_000 / self.host.clk_tck.max(1);
            for t in tasks.iter_mut() {
                if let Some(c) = r.tasks.get(&t.tid) {
                    if c.start_boottime_ns / ns_per_tick == t.start_ticks {
                        t.irq = Some(c.acct.clone());
                    }
                }
            }
            let dead: Vec<u32> = r
                .tasks
                .keys()
                .copied()
                .filter(|&tid| tid != 0 && !root.path(format!("/proc/{tid}")).exists())
                .collect();
            bpf.forget(&dead);
            napi = r.napi;
            health = Some(r.health);
        }
        self.seq += 1;
        tasks.sort_by_key(|t| (t.tgid, t.tid));
        Ok(RawSample {
            seq: self.seq,
            mono_ns,
            unix_ms,
            source: self.source(),
            cpus,
            tasks,
            napi,
            devices,
            health,
        })
    }
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

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}
