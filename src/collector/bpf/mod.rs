//! Loads `bpf/nettop.bpf.c`, attaches it, and reads its counters back as raw
//! cumulative values. No arithmetic beyond unit conversion happens here: the
//! model owns every delta and percentage.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};

use crate::sample::{BpfHealth, CpuNet, IrqAcct, NR_SOFTIRQS, ProgStat, RawNapi, SOFTIRQ_CTX};
use crate::sys::cpuset::CpuSet;

#[allow(
    clippy::all,
    clippy::pedantic,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    unused_imports,
    unsafe_op_in_unsafe_fn
)]
pub(super) mod skel {
    include!(concat!(env!("OUT_DIR"), "/nettop.skel.rs"));
}

use skel::{NettopSkel, NettopSkelBuilder, types};

mod read;
#[cfg(test)]
use read::u32_from;
pub(super) use read::{acct_from, c_str, from_bytes};

/// `BPF_F_TEST_RUN_ON_CPU` from uapi/linux/bpf.h.
const BPF_F_TEST_RUN_ON_CPU: u32 = 1 << 0;

/// Which program flavour is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    /// BTF-typed raw tracepoints: cheapest, needs BTF and BPF trampolines.
    TpBtf,
    /// Plain raw tracepoints: the fallback for kernels where tp_btf fails.
    RawTp,
}

impl AttachMode {
    /// "tp_btf" or "raw_tp".
    pub fn name(self) -> &'static str {
        self.prefix()
    }

    fn prefix(self) -> &'static str {
        match self {
            AttachMode::TpBtf => "tp_btf",
            AttachMode::RawTp => "raw_tp",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct BpfOptions {
    /// (cpu, tid) of every ksoftirqd thread, so softirq run there is told apart.
    pub ksoftirqd: Vec<(u32, u32)>,
    /// Force a flavour; `None` tries tp_btf first, then raw_tp.
    pub mode: Option<AttachMode>,
    /// Keep `kernel.bpf_stats_enabled` on while we run (via an fd the kernel
    /// drops when we exit, even on kill -9), so per-program cost is reported.
    pub stats: bool,
    /// Tests: load raw_tp programs with the fake clock and attach nothing.
    pub test_clock: bool,
    /// Maximum number of tasks tracked (hash size).
    pub max_tasks: Option<u32>,
    /// Do not load the task sampler (tests of the /proc path).
    pub no_sampler: bool,
    /// Load the task sampler alone, attach no tracepoint: a thread list
    /// for one-shot modes (`--pinning-check`) at a fraction of the cost of
    /// a /proc walk, with no tracing cost to the host.
    pub sampler_only: bool,
}

/// Per-task counters as the BPF hash holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCounters {
    pub tgid: u32,
    /// `task->start_boottime`, nanoseconds; 0 for idle.
    pub start_boottime_ns: u64,
    pub acct: IrqAcct,
}

/// Per-CPU counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuCounters {
    pub acct: IrqAcct,
    pub net: CpuNet,
    pub health: CpuHealth,
    /// Runs of each handler on this CPU, in [`RUN_HANDLERS`] order.
    pub runs: [u64; NR_RUNS],
}

/// Number of handlers that count their own runs per CPU (`NT_NR_RUNS`).
pub const NR_RUNS: usize = 10;

/// The handlers in the order of their `NT_RUN_*` index in bpf/nettop.h,
/// by program name without the `btf_`/`raw_` flavour prefix (a handler's
/// two twins share a count; only one of them is loaded).
///
/// Why the programs count their own runs: bpf_stats reports a program's
/// run time and run count summed over every CPU, and nettop's own cost has
/// to be shown beside the CPU that paid it. The per-CPU counters the model
/// already had do not count program runs (a nested hardirq's entry and
/// exit, an unmatched exit, every softirq raise and every task exit run a
/// program and count nothing there), so sharing out by them would be a
/// guess. Timing each run in BPF instead would add two clock reads to
/// every event, the very cost being measured; one add to a per-CPU word
/// costs about a nanosecond and makes the split by runs exact.
pub const RUN_HANDLERS: [&str; NR_RUNS] = [
    "irq_in",
    "irq_out",
    "sysvec_in",
    "sysvec_out",
    "si_raise",
    "si_in",
    "si_out",
    "napi_poll",
    "task_exit",
    "tlb_flush",
];

/// A program's index in [`RUN_HANDLERS`]; `None` for the programs that
/// count no runs (the flush, the task sampler).
pub fn run_index(program: &str) -> Option<usize> {
    let base = program
        .strip_prefix("btf_")
        .or_else(|| program.strip_prefix("raw_"))
        .unwrap_or(program);
    RUN_HANDLERS.iter().position(|h| *h == base)
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuHealth {
    pub map_full: u64,
    pub map_full_ns: u64,
    pub napi_map_full: u64,
    pub unmatched_exits: u64,
    pub unattributed: u64,
    pub unattributed_ns: u64,
    pub flush_deferred: u64,
    pub unknown_raise: u64,
}

/// System vector kinds in the order of `enum nt_sysvec` in the BPF program.
pub const SYSVEC_KINDS: [&str; 12] = [
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "x86_platform_ipi",
    "spurious_apic",
    "error_apic",
    "thermal_apic",
    "threshold_apic",
    "deferred_error_apic",
    "reboot",
];

/// Everything read in one sample.
#[derive(Debug, Clone, Default)]
pub struct Readout {
    /// Index = CPU number (possible CPUs).
    pub cpus: Vec<CpuCounters>,
    pub tasks: HashMap<u32, TaskCounters>,
    pub napi: Vec<RawNapi>,
    pub health: BpfHealth,
}

pub struct BpfCollector {
    skel: NettopSkel<'static>,
    /// Kept alive: dropping a link detaches its program.
    _links: Vec<Link>,
    mode: AttachMode,
    missing: Vec<String>,
    /// The task sampler's link (`iter/task`); each pass is a new iterator
    /// on it. `None` when this kernel could not load it.
    sampler: Option<Link>,
    /// Why the task sampler is not available.
    sampler_error: Option<String>,
    /// Pass number written into the map entries each pass sees.
    sample_gen: u64,
    /// Entries no pass saw at the previous sweep: swept when still unseen.
    stale: Vec<u32>,
    /// Holds `bpf_stats_enabled` on; the kernel restores it when closed.
    stats_fd: Option<OwnedFd>,
    /// The object's mmapped .bss (fake clock, calibration probe). Every
    /// access after load goes through this pointer, with volatile loads and
    /// stores, so the mapping is never also reached through a Rust reference
    /// while a [`Probe`] reads it.
    bss: *mut types::bss,
}

/// Checks what a BPF load needs and says how to fix what is missing.
pub fn preflight() -> Result<()> {
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        bail!(
            "no kernel BTF (/sys/kernel/btf/vmlinux is missing): the BPF collector needs a kernel \
             built with CONFIG_DEBUG_INFO_BTF=y; use --no-bpf for /proc-only estimates"
        );
    }
    let missing = missing_bpf_caps(effective_caps());
    if !missing.is_empty() {
        bail!(
            "not allowed to load BPF: {} missing (nettop needs CAP_BPF and CAP_PERFMON, or \
             CAP_SYS_ADMIN): run as root, or grant them (sudo setcap cap_bpf,cap_perfmon+ep \
             $(command -v nettop); in a container, add BPF and PERFMON to its capabilities); \
             or use --no-bpf for /proc-only estimates",
            missing.join(" and ")
        );
    }
    Ok(())
}

/// This thread's effective capabilities (0 when /proc/self/status cannot
/// be read).
fn effective_caps() -> u64 {
    // Bytes, not a String: the Name: line is our comm, which is not UTF-8
    // when nettop was started through a non-UTF-8 path.
    let mut status = Vec::new();
    if crate::sys::sysroot::read_bounded(
        std::path::Path::new("/proc/self/status"),
        &mut status,
        crate::sys::sysroot::MAX_FILE,
    )
    .is_err()
    {
        return 0;
    }
    let status = String::from_utf8_lossy(&status);
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0)
}

/// Which of CAP_BPF and CAP_PERFMON an effective set lacks for loading
/// and attaching nettop's programs (none with CAP_SYS_ADMIN, which covers
/// both), so the error names the one a container spec forgot.
fn missing_bpf_caps(eff: u64) -> Vec<&'static str> {
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    let has = |c: u32| eff & (1u64 << c) != 0;
    if has(CAP_SYS_ADMIN) {
        return Vec::new();
    }
    [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
        .into_iter()
        .filter(|(c, _)| !has(*c))
        .map(|(_, n)| n)
        .collect()
}

/// Tracepoints this kernel has, from the `btf_trace_<name>` typedefs that
/// every tracepoint leaves in vmlinux BTF (no tracefs mount needed).
fn available_tracepoints(names: &[String]) -> Result<Vec<String>> {
    let btf = libbpf_rs::btf::Btf::from_vmlinux().context("reading /sys/kernel/btf/vmlinux")?;
    Ok(names
        .iter()
        .filter(|n| {
            btf.type_by_name::<libbpf_rs::btf::BtfType<'_>>(&format!("btf_trace_{n}"))
                .is_some()
        })
        .cloned()
        .collect())
}

/// Tracepoints whose entry and exit must be attached together, or neither:
/// an entry without its exit would leave the nesting depth stuck. Only
/// names whose twin is one of our programs pair (`sched_process_exit` has
/// no entry).
fn paired(tp: &str) -> Option<String> {
    if let Some(base) = tp.strip_suffix("_entry") {
        return Some(format!("{base}_exit"));
    }
    tp.strip_suffix("_exit").map(|base| format!("{base}_entry"))
}

impl BpfCollector {
    /// Loads and attaches, tp_btf first and raw_tp as the fallback.
    pub fn open(opts: &BpfOptions) -> Result<Self> {
        preflight()?;
        let modes = match opts.mode {
            Some(m) => vec![m],
            None if opts.test_clock => vec![AttachMode::RawTp],
            None => vec![AttachMode::TpBtf, AttachMode::RawTp],
        };
        let mut errors = Vec::new();
        for mode in modes {
            // The task sampler is optional (iter/task needs 5.8): one
            // program that does not load fails the whole object, so try
            // again without it and say why.
            let mut sampler_error = opts.no_sampler.then(|| "disabled".to_string());
            if sampler_error.is_none() {
                match Self::open_mode(opts, mode, true) {
                    Ok(c) => return Ok(c),
                    Err(e) if opts.sampler_only => {
                        errors.push(format!("{}: {e:#}", mode.prefix()));
                        continue;
                    }
                    Err(e) => sampler_error = Some(format!("{e:#}")),
                }
            }
            match Self::open_mode(opts, mode, false) {
                Ok(mut c) => {
                    c.sampler_error = sampler_error;
                    return Ok(c);
                }
                Err(e) => errors.push(format!("{}: {e:#}", mode.prefix())),
            }
        }
        Err(anyhow!(
            "could not load the BPF collector ({}); use --no-bpf for /proc-only estimates",
            errors.join("; ")
        ))
    }

    fn open_mode(opts: &BpfOptions, mode: AttachMode, sampler: bool) -> Result<Self> {
        // The skeleton borrows its OpenObject for its whole life; the
        // collector lives as long as the process, so the object is leaked
        // once per load instead of making BpfCollector self-referential.
        let object: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = NettopSkelBuilder::default()
            .open(object)
            .context("opening the BPF object")?;

        if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
            for &(cpu, tid) in &opts.ksoftirqd {
                if let Some(slot) = ro.ksoftirqd_tid.get_mut(cpu as usize) {
                    *slot = tid;
                }
            }
            ro.test_clock = opts.test_clock;
        }
        if let Some(n) = opts.max_tasks {
            open.maps
                .tasks
                .set_max_entries(n)
                .context("sizing the task map")?;
        }

        // Decide which programs load: the flavour's twins whose tracepoints
        // exist, entry/exit pairs together, plus the flush program.
        let sections: Vec<String> = open
            .open_object_mut()
            .progs()
            .map(|p| p.section().to_string_lossy().into_owned())
            .collect();
        let wanted_tps: Vec<String> = sections
            .iter()
            .filter_map(|s| s.strip_prefix(&format!("{}/", mode.prefix())))
            .map(str::to_string)
            .collect();
        // System vectors share one raw_tp pair (sysvec_in/sysvec_out),
        // attached below to each entry/exit this kernel has.
        let sysvec_tps: Vec<String> = SYSVEC_KINDS
            .iter()
            .flat_map(|k| [format!("{k}_entry"), format!("{k}_exit")])
            .collect();
        let all_tps: Vec<String> = wanted_tps.iter().chain(&sysvec_tps).cloned().collect();
        let present = available_tracepoints(&all_tps)?;
        let usable = |tp: &str| {
            present.iter().any(|p| p == tp)
                && paired(tp)
                    .filter(|other| all_tps.contains(other))
                    .is_none_or(|other| present.contains(&other))
        };
        let missing: Vec<String> = all_tps.iter().filter(|tp| !usable(tp)).cloned().collect();
        let sysvecs: Vec<&str> = SYSVEC_KINDS
            .iter()
            .copied()
            .filter(|k| !opts.sampler_only && usable(&format!("{k}_entry")))
            .collect();
        for core in ["softirq_entry", "softirq_exit", "softirq_raise"] {
            if !opts.sampler_only && !usable(core) {
                bail!("this kernel has no {core} tracepoint; nettop cannot account softirq time");
            }
        }
        for mut prog in open.open_object_mut().progs_mut() {
            let section = prog.section().to_string_lossy().into_owned();
            let load = match section.split_once('/') {
                Some(("iter", _)) => sampler && !opts.test_clock,
                _ if opts.sampler_only => false,
                Some((flavour, tp)) => flavour == mode.prefix() && usable(tp),
                None => section == "raw_tp",
            };
            prog.set_autoload(load);
        }

        let mut skel = open.load().context("loading BPF programs")?;
        let bss: *mut types::bss = skel
            .maps
            .bss_data
            .as_deref_mut()
            .map(|b| b as *mut types::bss)
            .ok_or_else(|| anyhow!("the BPF object has no mapped .bss"))?;

        let stats_fd = if opts.stats {
            // SAFETY: plain syscall wrapper; a non-negative return is a new fd we own.
            let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
            if fd < 0 {
                // The kernel wants CAP_SYS_ADMIN for this, more than the
                // collector needs: run without the figure rather than not at all.
                log::warn!(
                    "--bpf-stats: cannot enable BPF run-time statistics ({}); \
                     it needs CAP_SYS_ADMIN, continuing without nettop's own BPF cost",
                    std::io::Error::from_raw_os_error(-fd)
                );
                None
            } else {
                // SAFETY: fd was just returned by the kernel and is owned by nobody else.
                Some(unsafe { OwnedFd::from_raw_fd(fd) })
            }
        } else {
            None
        };

        let mut links = Vec::new();
        let mut sampler_link = None;
        if !opts.test_clock {
            // Exits first, entries last: an entry live before its exit could
            // see an interrupt whose exit it never sees.
            let mut progs: Vec<_> = skel
                .object()
                .progs_mut()
                .filter(|p| p.autoload() && p.section() != "raw_tp")
                .collect();
            progs.sort_by_key(|p| {
                let s = p.section().to_string_lossy();
                if s.ends_with("_exit") {
                    0
                } else if s.ends_with("_entry") {
                    2
                } else {
                    1
                }
            });
            let by_name = |name: &str| {
                skel.object()
                    .progs_mut()
                    .find(|p| p.name() == name && p.autoload())
                    .ok_or_else(|| anyhow!("program {name} not loaded"))
            };
            for k in &sysvecs {
                let tp = format!("{k}_exit");
                let link = by_name("sysvec_out")?
                    .attach_raw_tracepoint(&tp)
                    .with_context(|| format!("attaching raw_tp/{tp}"))?;
                links.push(link);
            }
            for prog in progs {
                let link = prog
                    .attach()
                    .with_context(|| format!("attaching {}", prog.section().to_string_lossy()))?;
                if prog.section().to_string_lossy().starts_with("iter/") {
                    sampler_link = Some(link);
                } else {
                    links.push(link);
                }
            }
            for k in &sysvecs {
                let tp = format!("{k}_entry");
                let link = by_name("sysvec_in")?
                    .attach_raw_tracepoint(&tp)
                    .with_context(|| format!("attaching raw_tp/{tp}"))?;
                links.push(link);
            }
        }
        Ok(Self {
            skel,
            _links: links,
            mode,
            missing,
            sampler: sampler_link,
            sampler_error: None,
            sample_gen: 0,
            stale: Vec::new(),
            stats_fd,
            bss,
        })
    }

    pub fn mode(&self) -> AttachMode {
        self.mode
    }

    /// Starts feeding the calibration probe from `cpu` (see [`Probe`]);
    /// it stops when the probe is dropped.
    pub fn probe(&self, cpu: u32) -> Probe<'_> {
        // SAFETY: `self.bss` is the live mapping (see the field); probe_cpu1
        // is a u32 the BPF programs only read, and a volatile store makes it
        // visible to them at once.
        unsafe {
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*self.bss).probe_cpu1), cpu + 1)
        };
        Probe {
            bss: self.bss,
            _collector: std::marker::PhantomData,
        }
    }

    // ---- test support: drive the state machine with exact timelines ----

    /// Sets the fake clock (only meaningful with `test_clock`).
    pub fn set_fake_now(&self, ns: u64) {
        // SAFETY: `self.bss` is the live mapping (see the field); a volatile
        // store of a u64 the programs only read.
        unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!((*self.bss).fake_now_ns), ns) };
    }

    /// Runs the loaded program attached to `tracepoint` (`raw_tp` flavour)
    /// on `cpu` with the tracepoint's arguments.
    pub fn run_tracepoint(&self, tracepoint: &str, cpu: u32, args: &[u64]) -> Result<()> {
        let section = format!("{}/{tracepoint}", self.mode.prefix());
        // System vectors share one program pair (see bpf/nettop.bpf.c).
        let shared = SYSVEC_KINDS.iter().find_map(|k| {
            let rest = tracepoint.strip_prefix(k)?;
            match rest {
                "_entry" => Some("sysvec_in"),
                "_exit" => Some("sysvec_out"),
                _ => None,
            }
        });
        let prog = self
            .skel
            .object()
            .progs_mut()
            .find(|p| {
                p.autoload()
                    && match shared {
                        Some(name) => p.name() == name,
                        None => p.section().to_string_lossy() == section,
                    }
            })
            .ok_or_else(|| anyhow!("no loaded program for {section}"))?;
        let mut ctx: Vec<u8> = args.iter().flat_map(|a| a.to_ne_bytes()).collect();
        let input = libbpf_rs::ProgramInput {
            context_in: Some(&mut ctx),
            cpu,
            flags: BPF_F_TEST_RUN_ON_CPU,
            ..Default::default()
        };
        prog.test_run(input)
            .with_context(|| format!("test run of {section} on cpu {cpu}"))?;
        Ok(())
    }
}

/// Traced time and interruption counts of the CPU being calibrated,
/// cumulative (see `struct nt_probe` in bpf/nettop.h).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeCounts {
    pub traced_ns: u64,
    /// Outermost hardirqs by class (`sample::INTR_CLASSES`).
    pub intr: [u64; crate::sample::NR_INTR_CLASSES],
    pub softirq_runs: u64,
}

/// The calibration probe of one CPU, read straight from the BPF object's
/// memory: cheap enough to read after every gap a spinner sees, with no
/// system call that would itself disturb the CPU. Stops the probe on drop.
pub struct Probe<'a> {
    bss: *mut types::bss,
    _collector: std::marker::PhantomData<&'a BpfCollector>,
}

// SAFETY: the pointer targets the skeleton's mmapped .bss, which lives as long
// as the borrowed collector ('a). Through &Probe it is only read with
// volatile aligned u64 loads (atomic on every 64-bit target BPF runs on) of
// counters BPF updates with atomic adds; the one write happens in Drop,
// which needs the Probe itself.
unsafe impl Send for Probe<'_> {}
// SAFETY: see Send: shared access only ever reads.
unsafe impl Sync for Probe<'_> {}

impl Probe<'_> {
    pub fn read(&self) -> ProbeCounts {
        // SAFETY: see the Send impl; the fields are naturally aligned u64s.
        unsafe {
            let p = std::ptr::addr_of!((*self.bss).probe);
            let rd = |x: *const u64| std::ptr::read_volatile(x);
            ProbeCounts {
                traced_ns: rd(std::ptr::addr_of!((*p).traced_ns)),
                intr: std::array::from_fn(|k| rd(std::ptr::addr_of!((*p).intr[k]))),
                softirq_runs: rd(std::ptr::addr_of!((*p).softirq_runs)),
            }
        }
    }
}

impl Drop for Probe<'_> {
    fn drop(&mut self) {
        // SAFETY: see the Send impl; a volatile u32 store BPF only reads.
        unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!((*self.bss).probe_cpu1), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error names what a container spec forgot, not both every time.
    #[test]
    fn the_missing_capability_is_named() {
        let cap = |c: u32| 1u64 << c;
        assert_eq!(missing_bpf_caps(0), ["CAP_BPF", "CAP_PERFMON"]);
        assert_eq!(missing_bpf_caps(cap(39)), ["CAP_PERFMON"]);
        assert_eq!(missing_bpf_caps(cap(38)), ["CAP_BPF"]);
        assert!(missing_bpf_caps(cap(38) | cap(39)).is_empty());
        assert!(
            missing_bpf_caps(cap(21)).is_empty(),
            "CAP_SYS_ADMIN covers both"
        );
    }

    #[test]
    fn entry_and_exit_are_paired() {
        assert_eq!(
            paired("local_timer_entry").as_deref(),
            Some("local_timer_exit")
        );
        assert_eq!(
            paired("irq_handler_exit").as_deref(),
            Some("irq_handler_entry")
        );
        assert_eq!(paired("softirq_raise"), None);
    }

    /// Every traced program of the object has a per-CPU run count, both
    /// flavours the same one; the flush and the task sampler none. The
    /// skeleton is opened, not loaded: no privileges needed.
    #[test]
    fn every_traced_program_counts_its_runs() {
        let object: &mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = NettopSkelBuilder::default()
            .open(object)
            .expect("opening the BPF object");
        let names: Vec<String> = open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect();
        assert!(names.len() > 10, "{names:?}");
        for n in &names {
            let counted = run_index(n).is_some();
            let untraced = n == "nettop_flush" || n == "sample_tasks";
            assert_eq!(counted, !untraced, "{n}");
        }
        assert_eq!(run_index("btf_si_out"), run_index("raw_si_out"));
        assert_eq!(run_index("sysvec_out"), Some(3));
        assert_eq!(run_index("btf_task_exit"), Some(8));
        assert_eq!(run_index("raw_tlb_flush"), Some(NR_RUNS - 1));
    }

    #[test]
    fn short_buffers_are_refused() {
        assert!(from_bytes::<types::nt_task>(&[0u8; 8]).is_none());
        assert_eq!(u32_from(&[1, 0, 0, 0]), Some(1));
        assert_eq!(c_str(&[b'e' as i8, b't' as i8, 0, b'x' as i8]), "et");
    }
}
