//! Raw counters exactly as collected: cumulative, unprocessed, serialisable.
//!
//! Everything the model needs is here and nothing it computes is. The record
//! file stores these structs, so a later fix to the arithmetic in
//! [`crate::model::compute()`] applies to old recordings too. Add fields only
//! with `#[serde(default)]` so older recordings stay readable.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

pub mod calibration;
mod sanitize;
mod system;
pub mod traffic;

use self::calibration::Calibration;
pub use self::system::{LoadAvg, MemInfo, RawSystem};
pub use self::traffic::{RawTraffic, RxSplit, SockAcct};

/// Number of softirq vectors (`NR_SOFTIRQS` in include/linux/interrupt.h).
pub const NR_SOFTIRQS: usize = 10;

/// Softirq vector names in kernel order, as `/proc/softirqs` prints them.
pub const SOFTIRQ_NAMES: [&str; NR_SOFTIRQS] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// Index of NET_RX in [`SOFTIRQ_NAMES`].
pub const NET_RX: usize = 3;

/// Where a softirq ran, decided in BPF from who raised the vector.
///
/// `Stolen`: raised by a hardirq (device IRQ, RPS IPI, timer) and run in
/// whatever task was interrupted. `Inline`: raised by the task itself in
/// process context (e.g. a veth/loopback send) and run at its own
/// `local_bh_enable`. `Ksoftirqd`: run by `ksoftirqd/N`, visible to top.
pub const SOFTIRQ_CTX: usize = 3;
pub const CTX_STOLEN: usize = 0;
pub const CTX_INLINE: usize = 1;
pub const CTX_KSOFTIRQD: usize = 2;

/// Interrupt work traced by BPF, charged to the task (or CPU) that was
/// `current` when it ran. All values are cumulative since the collector
/// started; the model only ever looks at differences.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct IrqAcct {
    /// Device hardirq handler time (irq_handler_entry/exit), outermost only.
    pub hardirq_ns: u64,
    pub hardirq_count: u64,
    /// x86 system vectors (local timer, IPIs, irq_work...) from irq_vectors:*.
    pub sysvec_ns: u64,
    pub sysvec_count: u64,
    /// Softirq time per `[context][vector]`, nested hardirq time already removed.
    pub softirq_ns: [[u64; NR_SOFTIRQS]; SOFTIRQ_CTX],
    /// Softirq runs per vector, all contexts.
    pub softirq_count: [u64; NR_SOFTIRQS],
    /// Of `sysvec_count`: local timer interrupts, and IPIs (reschedule,
    /// call_function, call_function_single, irq_work). The rest are "other"
    /// vectors. They weigh the calibrated hidden cost per interruption
    /// (`model::hidden`); recordings made before the split read as 0, i.e.
    /// every system vector counts as "other".
    #[serde(default)]
    pub timer_count: u64,
    #[serde(default)]
    pub ipi_count: u64,
    /// Softirq runs in the stolen context (raised by an interrupt, run in
    /// whoever it interrupted): each has its own untraced entry/exit cost.
    #[serde(default)]
    pub softirq_stolen_count: u64,
    /// Of the interruptions, by class ([`INTR_CLASSES`]): those that
    /// landed inside a stolen softirq run. The run's span holds their
    /// untraced entry/exit cost, so STOLEN has it already and HIDDEN~ does
    /// not charge it again. Older recordings read as 0 (charged twice), and
    /// those from before the TLB and reschedule classes hold four values:
    /// the two missing ones read as 0.
    #[serde(default, deserialize_with = "classes_padded")]
    pub in_softirq_count: [u64; NR_INTR_CLASSES],
    /// Of `ipi_count`: call-function IPIs whose handler flushed this CPU's
    /// TLB for another (TLB shootdowns), and reschedule IPIs. Each class
    /// has its own calibrated cost; older recordings read as 0, i.e. every
    /// IPI is charged as a plain one, as they were.
    #[serde(default)]
    pub tlb_count: u64,
    #[serde(default)]
    pub resched_count: u64,
    /// Handler time of the plain IPIs (`ipi_count` less `tlb_count` and
    /// `resched_count`): per IPI, the sign of the host's way of delivering
    /// interrupts ([`crate::model::hidden::state_note`]). Older recordings
    /// read as 0: not known.
    #[serde(default)]
    pub ipi_ns: u64,
    /// Handler time of the TLB shootdowns: the same sign for a task whose
    /// IPIs are nearly all shootdowns. Older recordings read as 0.
    #[serde(default)]
    pub tlb_ns: u64,
    /// Handler time of the local timer interrupts: how far the host's
    /// state has slowed the whole interrupt path since the calibration
    /// (`Calibration::timer_scale`). Older recordings read as 0: not known.
    #[serde(default)]
    pub timer_ns: u64,
    /// Socket traffic and caused receive processing of a task (always
    /// zero for a CPU): here so a thread's traffic reaches its process
    /// the way its interrupt time does. Older recordings read as zero;
    /// whether it is known is `RawSample::traffic`.
    #[serde(default, skip_serializing_if = "SockAcct::is_zero")]
    pub sock: SockAcct,
}

/// Interruption classes, in the order of `NT_INTR_*` (bpf/nettop.h), of
/// `in_softirq_count` and of the calibration probe.
pub const INTR_CLASSES: [&str; NR_INTR_CLASSES] =
    ["device", "timer", "ipi", "other", "tlb", "resched"];
pub const NR_INTR_CLASSES: usize = 6;

/// A per-class array from a recording that may predate some classes (it
/// holds fewer values): the missing classes read as 0; extra values (a
/// newer writer's classes) are dropped.
fn classes_padded<'de, D>(d: D) -> Result<[u64; NR_INTR_CLASSES], D::Error>
where
    D: serde::Deserializer<'de>,
{
    let v: Vec<u64> = Deserialize::deserialize(d)?;
    let mut out = [0u64; NR_INTR_CLASSES];
    for (o, x) in out.iter_mut().zip(v) {
        *o = x;
    }
    Ok(out)
}

impl IrqAcct {
    /// Softirq time in one context ([`CTX_STOLEN`], [`CTX_INLINE`],
    /// [`CTX_KSOFTIRQD`]), all vectors.
    pub fn softirq_ctx_ns(&self, ctx: usize) -> u64 {
        self.softirq_ns
            .get(ctx)
            .map_or(0, |v| v.iter().fold(0u64, |s, x| s.saturating_add(*x)))
    }

    /// Work done in this context for others: hardirqs, system vectors and
    /// the softirqs they raised that ran here (the task's STOLEN time).
    pub fn stolen_ns(&self) -> u64 {
        self.hardirq_ns
            .saturating_add(self.sysvec_ns)
            .saturating_add(self.softirq_ctx_ns(CTX_STOLEN))
    }

    /// Hardirqs and system vectors: each is one entry/exit the tracepoints
    /// do not see.
    pub fn interruptions(&self) -> u64 {
        self.hardirq_count.saturating_add(self.sysvec_count)
    }

    /// Field-wise saturating sum.
    pub fn add(&mut self, b: &IrqAcct) {
        self.hardirq_ns = self.hardirq_ns.saturating_add(b.hardirq_ns);
        self.hardirq_count = self.hardirq_count.saturating_add(b.hardirq_count);
        self.sysvec_ns = self.sysvec_ns.saturating_add(b.sysvec_ns);
        self.sysvec_count = self.sysvec_count.saturating_add(b.sysvec_count);
        self.timer_count = self.timer_count.saturating_add(b.timer_count);
        self.ipi_count = self.ipi_count.saturating_add(b.ipi_count);
        self.softirq_stolen_count = self
            .softirq_stolen_count
            .saturating_add(b.softirq_stolen_count);
        self.tlb_count = self.tlb_count.saturating_add(b.tlb_count);
        self.resched_count = self.resched_count.saturating_add(b.resched_count);
        self.ipi_ns = self.ipi_ns.saturating_add(b.ipi_ns);
        self.tlb_ns = self.tlb_ns.saturating_add(b.tlb_ns);
        self.timer_ns = self.timer_ns.saturating_add(b.timer_ns);
        self.sock.add(&b.sock);
        for (x, y) in self.in_softirq_count.iter_mut().zip(&b.in_softirq_count) {
            *x = x.saturating_add(*y);
        }
        for (a, b) in self.softirq_ns.iter_mut().zip(&b.softirq_ns) {
            for (x, y) in a.iter_mut().zip(b) {
                *x = x.saturating_add(*y);
            }
        }
        for (x, y) in self.softirq_count.iter_mut().zip(&b.softirq_count) {
            *x = x.saturating_add(*y);
        }
    }
}

/// One thread as seen in `/proc/<pid>/task/<tid>/{stat,schedstat,status}`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RawTask {
    pub tgid: u32,
    pub tid: u32,
    /// `stat` field 22, clock ticks since boot. With `tid` it identifies a
    /// task across PID reuse.
    pub start_ticks: u64,
    /// Re-read every sample, so it is fresh after exec.
    pub comm: String,
    pub uid: u32,
    pub state: char,
    /// `stat` fields 14/15 in clock ticks: what top computes %CPU from.
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    /// `schedstat` field 1 (`sum_exec_runtime`), nanoseconds on CPU.
    pub on_cpu_ns: u64,
    /// `schedstat` field 2, nanoseconds waiting on a runqueue.
    pub run_delay_ns: u64,
    /// `stat` field 39.
    pub last_cpu: u32,
    /// `Cpus_allowed_list` from status, e.g. "0-3,8".
    pub affinity: String,
    /// `true` for kernel threads (PF_KTHREAD / empty cmdline).
    #[serde(default)]
    pub kthread: bool,
    /// BPF counters for this task, when the collector runs and the start
    /// time matched (a reused TID never inherits a dead task's counters).
    /// Boxed: most threads of a large host were never interrupted, and an
    /// inline `IrqAcct` (~400 bytes) made every thread row pay for it
    /// (`-H` at 30,000 threads peaked at 73 MiB, mostly these rows).
    pub irq: Option<Box<IrqAcct>>,
    /// Parent process (`stat` field 4, the kernel's `real_parent`; a
    /// thread's is its process's): what a process tree is built from. 0
    /// for init and kthreadd, and when unknown (older recordings).
    #[serde(default)]
    pub ppid: u32,
    /// The process's command line (`/proc/PID/cmdline`), one string per
    /// argument, as `ps`/`top -c` show it. Process rows only
    /// ([`RawSample::procs`]): thread rows leave it empty (their process
    /// row has it), and so do kernel threads, zombies and older
    /// recordings. The collector reads at most 4 KiB per process (top's
    /// default); a longer command line is cut there and its last argument
    /// ends in [`CMDLINE_CUT`]. Skipped when empty, so samples without it
    /// cost nothing and older recordings read as "unknown".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cmdline: Vec<String>,
    /// 0 for a thread row. For a process-total row (`RawSample::procs`):
    /// the group's thread count.
    #[serde(default)]
    pub nr_threads: u32,
    /// Its cgroup: a key into [`RawSample::cgroups`]. The kernel's cgroup
    /// v2 id (the kernfs inode of the cgroup's directory) from the task
    /// sampler, or, for a path read from `/proc/PID/cgroup` (the /proc
    /// path, cgroup v1), a key derived from the path with bit 63 set
    /// ([`cgroup_key`]). 0: unknown.
    #[serde(default)]
    pub cgroup_id: u64,
    /// Its address space's size and resident pages, as /proc/PID/statm
    /// counts them. Threads share their process's, so a thread row carries
    /// its process's. `None` for a task without one (kernel threads,
    /// zombies) and in recordings made before it was collected: unknown,
    /// never 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<TaskMem>,
    /// Scheduling priority and nice value as /proc/PID/stat fields 18 and
    /// 19 print them (`prio - 100` and `static_prio - 120`: 20 and 0 for a
    /// default task, -100 for SCHED_FIFO 99). `None` in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
}

/// A task's memory in bytes, with htop's meaning: VIRT is the whole
/// address space (`total_vm`), RES what of it is resident (anonymous,
/// file and shmem pages), SHR the file and shmem part of RES (pages that
/// may be shared with other processes).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TaskMem {
    pub virt: u64,
    pub res: u64,
    pub shr: u64,
}

/// Ends the last argument of a command line that was longer than the
/// collector reads (`RawTask::cmdline`): the next argument, or the rest of
/// this one, is missing.
pub const CMDLINE_CUT: &str = "\u{2026}";

/// Bit 63 marks a cgroup key derived from a path, never a kernel id
/// (kernfs ids are inode numbers, far below 2^63).
pub const CGROUP_KEY_DERIVED: u64 = 1 << 63;

/// The key of a cgroup known by path only: FNV-1a of hierarchy and path,
/// bit 63 set. Deterministic, so fixtures and recordings agree run to run.
pub fn cgroup_key(v1: bool, path: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let tag: &[u8] = if v1 { b"v1:" } else { b"v2:" };
    for b in tag.iter().chain(path.as_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | CGROUP_KEY_DERIVED
}

/// One cgroup some task of the sample is in. Samples carry the table (only
/// the cgroups their tasks use), so a replay on another machine shows the
/// same groups; recordings made before it read as "no cgroups".
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RawCgroup {
    /// The key tasks carry in [`RawTask::cgroup_id`].
    pub id: u64,
    /// Path in its hierarchy, e.g. `/system.slice/nginx.service`.
    pub path: String,
    /// `true` when `path` is a cgroup v1 path (no v2 hierarchy, or the
    /// task sits in the v2 root of a hybrid host and v1 says more).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub v1: bool,
    /// CPUs its cpuset allows (`cpuset.cpus.effective`, or v1
    /// `cpuset.effective_cpus`), as a list; empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpus: String,
    /// Memory charged to it, bytes: `memory.current` (v2), or
    /// `memory.usage_in_bytes` of its memory hierarchy (v1). `None` where
    /// no memory controller counts it (the root, a v2 hierarchy without the
    /// controller) and in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_bytes: Option<u64>,
    /// The Kubernetes pod (and container) the path's ids name, from the
    /// kubelet's directories on the node (`sys::cgroup::pods`); kept in
    /// recordings, where the node's directories are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<crate::sys::cgroup::PodName>,
}

/// `/proc/stat` per-CPU line, clock ticks.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

/// One row of `/proc/net/softnet_stat` (hex columns), cumulative.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Softnet {
    pub processed: u64,
    pub dropped: u64,
    pub time_squeeze: u64,
    pub received_rps: u64,
    pub flow_limit: u64,
}

/// Per-CPU NET_RX/napi counters traced by BPF, cumulative.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuNet {
    /// NET_RX softirq runs (`net_rx_action` calls).
    pub net_rx_actions: u64,
    /// Time inside those runs, nested hardirqs removed.
    pub net_rx_ns: u64,
    /// NET_RX re-raised from inside NET_RX: budget or 2 ms ran out and
    /// `net_rx_action` asked for another round (restart or ksoftirqd).
    pub net_rx_restarts: u64,
    /// Longest single NET_RX run seen since start (a high-water mark).
    pub net_rx_max_ns: u64,
    pub napi_polls: u64,
    /// Packets (napi `work`) processed by those polls.
    pub napi_work: u64,
    /// Polls that used their whole budget (work == budget).
    pub napi_budget_exhausted: u64,
    /// `net_rx_ns` by what the runs did. Older recordings: all zero.
    #[serde(default)]
    pub rx: RxSplit,
}

/// One CPU.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RawCpu {
    pub cpu: u32,
    /// From `/sys/devices/system/cpu/online`; an offline CPU keeps its row
    /// so that deltas across a hotplug are computed as "offline", not as 0.
    pub online: bool,
    pub times: Option<CpuTimes>,
    pub softnet: Option<Softnet>,
    /// BPF per-CPU interrupt accounting (all tasks on this CPU, idle included).
    pub irq: Option<IrqAcct>,
    pub net: Option<CpuNet>,
    /// TID of `ksoftirqd/<cpu>`, if found.
    pub ksoftirqd_tid: Option<u32>,
}

/// napi polls of one (device, napi instance) on one CPU, from `napi:napi_poll`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RawNapi {
    pub dev: String,
    pub napi_id: u32,
    pub cpu: u32,
    pub polls: u64,
    pub work: u64,
    pub budget_exhausted: u64,
    /// Budget seen on the last poll (64 unless changed).
    pub budget: u32,
    /// The device's ifindex and network namespace inode (0: unknown, the
    /// backlog, or a recording made before they were collected). With
    /// them a napi is matched to its device even when names repeat across
    /// namespaces.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub ifindex: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub netns_inode: u64,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// `/sys/class/net/<dev>/statistics`, cumulative.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct RawDevice {
    pub name: String,
    pub ifindex: u32,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    /// Network namespace name (`topology::NetnsInfo::name`); empty for
    /// nettop's own. Absent in older recordings.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub netns: String,
    /// Its nsfs inode, to match napi instances (`RawNapi::netns_inode`);
    /// 0 when unknown (fixtures, older recordings).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub netns_inode: u64,
}

/// Cost and run count of one BPF program (`bpf_enable_stats`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ProgStat {
    pub name: String,
    /// Runs and run time summed over all CPUs, as the kernel's BPF stats
    /// keep them (both stay 0 unless `kernel.bpf_stats_enabled` is on,
    /// which `--bpf-stats` holds).
    pub run_cnt: u64,
    pub run_time_ns: u64,
    /// The program's runs on each CPU (index = CPU number), counted by the
    /// program itself: the kernel keeps run time per CPU internally but
    /// reports only the sum, so this is what shares `run_time_ns` out over
    /// the CPUs it was spent on (`model::compute`, nettop's own cost per
    /// CPU). Cumulative since the collector loaded. Filled only while BPF
    /// stats are on (without run time there is nothing to share out), so
    /// it costs recordings nothing otherwise; empty in older recordings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_runs: Vec<u64>,
}

/// Collector health: nothing is ever dropped silently.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct BpfHealth {
    /// Task hash full: a task's interrupt time could not be stored.
    pub map_full: u64,
    /// Nanoseconds of interrupt time lost to `map_full`.
    pub map_full_ns: u64,
    /// napi device table full.
    pub napi_map_full: u64,
    /// Exit events without a matching entry (collector attached mid-event,
    /// or a missed tracepoint): their time is not counted.
    pub unmatched_exits: u64,
    /// Programs that did not run because another BPF program was running
    /// on the CPU (kernel `recursion_misses`).
    pub recursion_misses: u64,
    pub programs: Vec<ProgStat>,
    /// Tracepoints that could not be attached (absent on this kernel).
    pub missing_tracepoints: Vec<String>,
    /// "tp_btf" or "raw_tp".
    pub attach_mode: String,
    /// Where task figures came from: "iter/task" (the in-kernel task
    /// sampler) or "/proc (reason)".
    #[serde(default)]
    pub task_source: String,
    /// Interrupt time of exited threads that could not be kept for their
    /// process (exited-thread table full).
    #[serde(default)]
    pub exited_lost: u64,
    #[serde(default)]
    pub exited_lost_ns: u64,
    /// Sampler records that did not decode.
    #[serde(default)]
    pub bad_records: u64,
    /// Interruptions that landed while their task's per-CPU batch was being
    /// flushed: counted for the CPU but charged to no task.
    #[serde(default)]
    pub unattributed: u64,
    #[serde(default)]
    pub unattributed_ns: u64,
    /// Sample-time flushes that found a batch in use; it reaches the task
    /// one sample later (totals are late, never lost).
    #[serde(default)]
    pub flush_deferred: u64,
    /// Softirq runs whose raise happened before nettop attached, charged as
    /// stolen (the common case); nonzero only right after start.
    #[serde(default)]
    pub unknown_raise: u64,
}

/// How interrupt time is charged on this kernel. Decides the arithmetic.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    /// `CONFIG_IRQ_TIME_ACCOUNTING=y`: irq time is removed from tasks'
    /// runtime (it vanishes from every process but ksoftirqd).
    IrqTimeAccounting,
    /// Not set: the tick charges irq time to the interrupted task, top lies.
    TickBased,
    /// Could not read the kernel config; arithmetic assumes `TickBased` and
    /// every output says so.
    #[default]
    Unknown,
}

impl Regime {
    /// Its one spelling in every output: the JSON and OpenMetrics value.
    pub fn name(self) -> &'static str {
        match self {
            Regime::IrqTimeAccounting => "irq_time_accounting",
            Regime::TickBased => "tick_based",
            Regime::Unknown => "unknown",
        }
    }
}

/// Static facts about the host, recorded once per recording.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct HostInfo {
    pub hostname: String,
    /// The Kubernetes node's name (the downward API's `NODE_NAME`), which
    /// need not be the kernel's hostname; empty outside Kubernetes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    pub kernel: String,
    pub boot_id: String,
    pub regime: Regime,
    /// Where the regime came from ("/proc/config.gz", "/boot/config-...").
    pub regime_source: String,
    pub clk_tck: u64,
    /// Possible CPUs (highest CPU number + 1).
    pub nr_cpus: u32,
    /// NUMA node of each CPU (index = CPU), empty when unknown.
    pub cpu_node: Vec<u32>,
    /// Hidden interrupt cost per interruption class on this host
    /// (`model::hidden`); recordings carry it so replays charge the same.
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Why there is no calibration (e.g. every CPU is isolated), for the
    /// front ends; empty when there is one or BPF is off.
    #[serde(default)]
    pub calibration_missing: String,
    /// `MemTotal` of /proc/meminfo in bytes: what MEM% is a share of.
    /// `None` when unreadable and in older recordings (MEM% is unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_total_bytes: Option<u64>,
}

/// Which data a sample has.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// BPF collector attached: interrupt time is traced.
    Bpf,
    /// `--no-bpf`: /proc only; interrupt columns are estimates.
    #[default]
    ProcOnly,
}

/// One snapshot of everything.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RawSample {
    pub seq: u64,
    /// CLOCK_MONOTONIC when the sample was taken; intervals come from here.
    pub mono_ns: u64,
    /// Wall clock (ms since the epoch), for display and replay navigation.
    pub unix_ms: u64,
    pub source: Source,
    pub cpus: Vec<RawCpu>,
    pub tasks: Vec<RawTask>,
    /// Process totals as the kernel keeps them (live threads plus the
    /// group's exited ones, what /proc/PID/stat reports), one row per
    /// process with `nr_threads` set. Empty in older recordings: the model
    /// then sums `tasks` per process. In process mode `tasks` is empty.
    #[serde(default)]
    pub procs: Vec<RawTask>,
    pub napi: Vec<RawNapi>,
    pub devices: Vec<RawDevice>,
    pub health: Option<BpfHealth>,
    /// The cgroups this sample's tasks are in (see [`RawTask::cgroup_id`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<RawCgroup>,
    /// What this sample could not read the usual way, in words for the
    /// health line (device counters from the sysfs fallback, ...). Empty
    /// when all is well, and in recordings made before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Memory, load and uptime for the header meters; `None` in
    /// recordings made before they were collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<RawSystem>,
    /// Set when `devices` leaves out devices nettop knows exist (other
    /// network namespaces it could not enter, links that did not decode):
    /// a figure divided by every device's traffic is then unknown, not
    /// merely low. `None` in recordings made before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices_incomplete: Option<DeviceGap>,
    /// Socket traffic beyond the per-task counters, and whether it is
    /// known at all. Older recordings: not available.
    #[serde(default)]
    pub traffic: RawTraffic,
}

/// Why a sample's device counters do not cover every device of the host.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DeviceGap {
    pub cause: GapCause,
    /// The collector's sentence, as the health notes carry it.
    pub why: String,
}

/// The kind of gap, a stable word for metric labels.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GapCause {
    /// Other network namespaces could not be entered (CAP_SYS_ADMIN).
    NetnsDenied,
    /// Other network namespaces failed to answer for another reason.
    NetnsFailed,
    /// Links of nettop's own namespace did not decode.
    LinksLeftOut,
    /// No device counters at all.
    Unreadable,
}

impl GapCause {
    pub fn as_str(self) -> &'static str {
        match self {
            GapCause::NetnsDenied => "netns_denied",
            GapCause::NetnsFailed => "netns_failed",
            GapCause::LinksLeftOut => "links_left_out",
            GapCause::Unreadable => "unreadable",
        }
    }
}

impl RawSample {
    /// One row per process: the kernel's per-process totals when the sample
    /// has them (they include threads that exited, as /proc/PID/stat does;
    /// every sample this nettop takes has them), else each process's threads
    /// summed, with identity (comm, command line, parent, state, CPU,
    /// cgroup) from its leader, or from its first thread when the leader is
    /// not listed: cumulative counters per process, as exporters publish
    /// them. (The model sums its threads' interval figures instead,
    /// `model::compute`: without BPF each thread's interrupt estimate
    /// depends on the CPU it ran on.)
    pub fn process_rows(&self) -> Cow<'_, [RawTask]> {
        if !self.procs.is_empty() || self.tasks.is_empty() {
            return Cow::Borrowed(&self.procs);
        }
        let mut out: Vec<RawTask> = Vec::new();
        let mut at: HashMap<u32, usize> = HashMap::new();
        for t in &self.tasks {
            let Some(&i) = at.get(&t.tgid) else {
                at.insert(t.tgid, out.len());
                out.push(RawTask {
                    tid: t.tgid,
                    nr_threads: 1,
                    ..t.clone()
                });
                continue;
            };
            let p = &mut out[i];
            if t.tid == t.tgid {
                // The leader names the process; the counters stay summed.
                let sums = (p.utime_ticks, p.stime_ticks, p.on_cpu_ns, p.run_delay_ns);
                let (irq, n) = (p.irq.take(), p.nr_threads);
                *p = t.clone();
                (p.utime_ticks, p.stime_ticks, p.on_cpu_ns, p.run_delay_ns) = sums;
                p.irq = irq;
                p.nr_threads = n;
            }
            p.nr_threads += 1;
            p.utime_ticks = p.utime_ticks.saturating_add(t.utime_ticks);
            p.stime_ticks = p.stime_ticks.saturating_add(t.stime_ticks);
            p.on_cpu_ns = p.on_cpu_ns.saturating_add(t.on_cpu_ns);
            p.run_delay_ns = p.run_delay_ns.saturating_add(t.run_delay_ns);
            if let Some(a) = &t.irq {
                p.irq.get_or_insert_with(Box::default).add(a);
            }
        }
        out.sort_by_key(|p| p.tgid);
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recordings from before the TLB and reschedule classes hold four
    /// values per class and no TLB/reschedule counts: they read as 0.
    #[test]
    fn older_accounts_read_with_the_new_classes_at_zero() {
        let old = r#"{"hardirq_ns":1,"hardirq_count":2,"sysvec_ns":3,"sysvec_count":4,
            "softirq_ns":[[0,0,0,0,0,0,0,0,0,0],[0,0,0,0,0,0,0,0,0,0],[0,0,0,0,0,0,0,0,0,0]],
            "softirq_count":[0,0,0,0,0,0,0,0,0,0],"ipi_count":4,"in_softirq_count":[1,2,3,4]}"#;
        let a: IrqAcct = serde_json::from_str(old).expect("old account");
        assert_eq!(a.in_softirq_count, [1, 2, 3, 4, 0, 0]);
        assert_eq!((a.ipi_count, a.tlb_count, a.resched_count), (4, 0, 0));
        let back: IrqAcct =
            serde_json::from_str(&serde_json::to_string(&a).expect("json")).expect("new");
        assert_eq!(back, a);
    }

    #[test]
    fn stolen_is_hardirq_sysvec_and_stolen_softirqs_only() {
        let mut a = IrqAcct {
            hardirq_ns: 100,
            sysvec_ns: 20,
            hardirq_count: 3,
            sysvec_count: 4,
            ..Default::default()
        };
        a.softirq_ns[CTX_STOLEN][NET_RX] = 1_000;
        a.softirq_ns[CTX_STOLEN][1] = 5;
        a.softirq_ns[CTX_INLINE][NET_RX] = 70_000;
        a.softirq_ns[CTX_KSOFTIRQD][NET_RX] = 900_000;
        assert_eq!(a.stolen_ns(), 1_125);
        assert_eq!(a.softirq_ctx_ns(CTX_INLINE), 70_000);
        assert_eq!(a.softirq_ctx_ns(SOFTIRQ_CTX), 0, "no such context");
        assert_eq!(a.interruptions(), 7);
        a.hardirq_ns = u64::MAX;
        assert_eq!(a.stolen_ns(), u64::MAX, "saturates");
    }

    /// Older samples have thread rows only: the process row summed from
    /// them names the process after its leader, command line and parent
    /// included, even when a worker thread is listed first.
    #[test]
    fn process_rows_from_threads_take_the_leaders_cmdline_and_parent() {
        let thread = |tid: u32, cmdline: &[&str]| RawTask {
            tgid: 10,
            tid,
            ppid: if tid == 10 { 1 } else { 7 },
            on_cpu_ns: 5,
            cmdline: cmdline.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let s = RawSample {
            tasks: vec![thread(11, &[]), thread(10, &["nginx", "-g", "daemon off;"])],
            ..Default::default()
        };
        let rows = s.process_rows();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].cmdline, ["nginx", "-g", "daemon off;"]);
        assert_eq!((rows[0].ppid, rows[0].on_cpu_ns), (1, 10));
    }
}
