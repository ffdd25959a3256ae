//! The model's output: rates and percentages over one interval.
//!
//! Every front end (batch text, JSON, TUI, metrics) renders a [`Frame`] and
//! nothing else, so they can never disagree. Percentages are "of one CPU"
//! (top's Irix mode): a process with two busy threads can show 200 %.

use serde::{Deserialize, Serialize};

use crate::sample::{DeviceGap, NET_RX, NR_SOFTIRQS, Regime, Source};
use crate::sys::cgroup::Identity;

/// One task's (thread's or whole process's) figures over the interval.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TaskView {
    /// Process ID (tgid).
    pub pid: u32,
    /// Thread ID for thread rows; equal to `pid` for process rows.
    pub tid: u32,
    /// Parent process ID (`RawTask::ppid`; a thread row has its process's
    /// parent): the edge of the process tree. 0 for init and kthreadd, and
    /// in frames from older recordings, which never collected it.
    #[serde(default)]
    pub ppid: u32,
    /// `true` for a process row (all threads summed).
    pub is_process: bool,
    pub comm: String,
    /// The command line, one string per argument (`RawTask::cmdline`): on
    /// process rows; empty on thread rows (each process's row carries it
    /// once, however many threads it has), on kernel threads and in frames
    /// from older recordings. A command line longer than the collector
    /// reads ends in `sample::CMDLINE_CUT`.
    #[serde(default)]
    pub cmdline: Vec<String>,
    pub uid: u32,
    pub state: char,
    pub nr_threads: u32,
    pub kthread: bool,
    pub last_cpu: u32,
    pub affinity: String,
    /// %CPU exactly as top computes it: delta(utime+stime) ticks over the interval.
    pub top_pct: f64,
    /// %CPU from schedstat `sum_exec_runtime`: time the scheduler had it on a CPU.
    pub on_cpu_pct: f64,
    /// Device hardirq time in its context.
    pub hardirq_pct: f64,
    /// x86 system vector time (timer, IPIs) in its context.
    pub sysvec_pct: f64,
    /// Softirq raised by interrupts and run in its context, per vector.
    pub softirq_stolen_pct: [f64; NR_SOFTIRQS],
    /// hardirq + sysvec + all stolen softirq: work done for others on its time.
    pub stolen_pct: f64,
    /// Softirq it raised itself and ran at its own `local_bh_enable`.
    pub inline_pct: f64,
    /// Softirq run as ksoftirqd (only non-zero for ksoftirqd threads).
    pub ksoftirqd_pct: f64,
    /// CPU it really got for its own work: after STOLEN and HIDDEN~ (see
    /// `model::compute` for both regimes).
    pub true_pct: f64,
    /// Estimate of the interrupt cost tracepoints cannot see (entry/exit code,
    /// APIC, VM exits): its interruptions by class × the cost calibrated for
    /// this host (`model::hidden`). 0 without BPF or without a calibration.
    #[serde(default)]
    pub hidden_pct: f64,
    /// The band TRUE% and HIDDEN~% are known within: the calibration's
    /// uncertainty on this task's interruptions
    /// ([`crate::sample::calibration::Calibration::hidden_band_ns`]).
    /// Equal to the figure itself without a calibration (nothing is
    /// charged, so nothing is uncertain) and without BPF.
    #[serde(default)]
    pub true_pct_low: f64,
    #[serde(default)]
    pub true_pct_high: f64,
    #[serde(default)]
    pub hidden_pct_low: f64,
    #[serde(default)]
    pub hidden_pct_high: f64,
    /// Its own run time the kernel billed to the threads its reschedule
    /// IPIs woke (the woken thread is billed from the wake-up on another
    /// CPU): given back in TRUE%, which can then exceed ONCPU% − STOLEN%.
    /// Calibrated per IPI (`model::hidden`); 0 without.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub rebilled_pct: f64,
    /// Interruptions (hardirqs + system vectors) per second in its context.
    /// One word for them in metrics, JSON and columns; JSON from before the
    /// rename still reads.
    #[serde(alias = "interrupts_per_s")]
    pub interruptions_per_s: f64,
    /// Softirq runs per second in its context (all vectors, stolen + inline).
    pub softirqs_per_s: f64,
    /// Its cgroup's key (`RawTask::cgroup_id`; see [`Frame::cgroups`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cgroup_id: u64,
    /// `RawTask::start_ticks`: with the ID, which task this row is, so
    /// acting on it (the TUI's `k`, `r`, `a`) never hits a reused PID. Not
    /// an output figure.
    #[serde(skip)]
    pub start_ticks: u64,
    /// Scheduling priority and nice as /proc/PID/stat prints them (`PRI`,
    /// `NI`); null when the sample did not carry them (older recordings).
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub nice: Option<i32>,
    /// Its cumulative CPU time, utime + stime as top's `TIME+` counts it
    /// (a process row's includes its exited threads'), seconds.
    #[serde(default)]
    pub cpu_time_s: f64,
    /// Its address space, bytes (htop's VIRT, RES, SHR; a thread row has
    /// its process's): null for a task without one (kernel threads,
    /// zombies) and in frames from older recordings, never 0.
    #[serde(default)]
    pub virt_bytes: Option<u64>,
    #[serde(default)]
    pub res_bytes: Option<u64>,
    #[serde(default)]
    pub shr_bytes: Option<u64>,
    /// RES as a percent of the host's memory (`MemTotal`); null when
    /// either is unknown.
    #[serde(default)]
    pub mem_pct: Option<f64>,
    /// Its socket traffic and the receive processing it caused; null when
    /// not known (no BPF, a kernel without the socket tracepoints, older
    /// recordings), never 0.
    #[serde(default)]
    pub traffic: Option<super::traffic::TaskTraffic>,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// The figures every front end derives from a task's fields, defined once.
impl TaskView {
    /// HI%: hardirq time stolen from it, device interrupts and x86 system
    /// vectors together, as top's `hi` and /proc/stat's irq count them
    /// (without BPF, the /proc/stat estimate is all of it).
    pub fn hi_pct(&self) -> f64 {
        self.hardirq_pct + self.sysvec_pct
    }

    /// SI%: softirq time stolen from it, all vectors.
    pub fn si_pct(&self) -> f64 {
        self.softirq_stolen_pct.iter().sum()
    }

    /// NET_RX%: the NET_RX part of SI%.
    pub fn net_rx_pct(&self) -> f64 {
        self.softirq_stolen_pct[NET_RX]
    }

    /// GAP: what top over-states, TOP% − TRUE% (negative when top shows
    /// less than the task got, as under IRQ time accounting with inline
    /// softirq).
    pub fn gap_pct(&self) -> f64 {
        self.top_pct - self.true_pct
    }

    /// Half the width of TRUE%'s band, points (0 without one).
    pub fn true_band_pct(&self) -> f64 {
        super::half_width(self.true_pct_low, self.true_pct_high)
    }

    /// Used no CPU in the interval, by top's ticks or the scheduler's
    /// clock, and nothing was stolen from it: what top's `i` hides. A task
    /// that ran for a microsecond is not idle here, although top, counting
    /// ticks, may call it so.
    pub fn is_idle(&self) -> bool {
        self.top_pct <= 0.0 && self.on_cpu_pct <= 0.0 && self.stolen_pct <= 0.0
    }

    /// The row's own ID: the TID of a thread row, the PID of a process row.
    pub fn id(&self) -> u32 {
        if self.is_process { self.pid } else { self.tid }
    }
}

/// One CPU over the interval.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct CpuView {
    pub cpu: u32,
    pub online: bool,
    /// NUMA node, when known.
    pub node: Option<u32>,
    /// mpstat-style percentages from /proc/stat (tick-sampled unless the
    /// regime is IrqTimeAccounting).
    pub usr_pct: f64,
    pub nice_pct: f64,
    pub sys_pct: f64,
    pub iowait_pct: f64,
    pub irq_pct: f64,
    pub soft_pct: f64,
    pub steal_pct: f64,
    pub idle_pct: f64,
    /// Traced (BPF) interrupt time on this CPU.
    pub traced_hardirq_pct: f64,
    pub traced_sysvec_pct: f64,
    pub traced_softirq_pct: [f64; NR_SOFTIRQS],
    /// Traced softirq split by where it ran.
    pub softirq_stolen_pct: f64,
    pub softirq_inline_pct: f64,
    pub softirq_ksoftirqd_pct: f64,
    /// ksoftirqd/N's on-CPU time.
    pub ksoftirqd_pct: f64,
    /// /proc/stat irq+soft minus traced time: what the kernel's tick sampling
    /// saw that tracepoints did not. Only meaningful with BPF; clamped at 0.
    /// A cross-check of `hidden_pct` (tick sampling misses short IPIs and
    /// over-states under heavy softirq load).
    pub unexplained_irq_pct: f64,
    /// Traced interrupt work done on this CPU for others (hardirq, system
    /// vectors, stolen softirq; /proc/stat hi+si without BPF).
    #[serde(default)]
    pub stolen_pct: f64,
    /// Calibrated hidden cost of this CPU's interruptions (estimate).
    #[serde(default)]
    pub hidden_pct: f64,
    /// Non-idle time left to tasks' own work: busy − stolen − hidden.
    #[serde(default)]
    pub true_pct: f64,
    /// The band `true_pct` is known within, as a task's
    /// (`TaskView::true_pct_low`).
    #[serde(default)]
    pub true_pct_low: f64,
    #[serde(default)]
    pub true_pct_high: f64,
    #[serde(alias = "interrupts_per_s")]
    pub interruptions_per_s: f64,
    pub net_rx_per_s: f64,
    /// Mean time of one NET_RX action, microseconds.
    pub net_rx_avg_us: f64,
    pub net_rx_restarts_per_s: f64,
    pub napi_polls_per_s: f64,
    pub packets_per_s: f64,
    pub budget_exhausted_per_s: f64,
    pub time_squeeze_per_s: f64,
    pub softnet_dropped_per_s: f64,
    pub rps_received_per_s: f64,
    /// NET_RX softirq nanoseconds per packet polled on this CPU
    /// (`model::cost`); absent without packets or without BPF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_ns_per_packet: Option<f64>,
    /// nettop's own BPF run time on this CPU over the interval, percent of
    /// the CPU: each program's run time from the kernel's BPF stats, shared
    /// out over the CPUs by the program's runs on each (its mean cost per
    /// run × its runs here; see `compute::cpu::own_bpf_ns`). Not time on
    /// top of the other columns: it is inside them (traced interrupt time,
    /// HIDDEN~, the task that was running); it says how much of them is the
    /// monitor. `None` (JSON null, `-` on screen) when it was not measured:
    /// BPF run-time stats off (they need `--bpf-stats`), no BPF, or a
    /// recording made before the per-CPU run counts.
    #[serde(default)]
    pub own_bpf_pct: Option<f64>,
}

/// One napi instance (device queue) over the interval, all CPUs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct NapiView {
    pub dev: String,
    pub napi_id: u32,
    pub polls_per_s: f64,
    pub packets_per_s: f64,
    /// Mean packets per poll; compare with `budget`.
    pub work_per_poll: f64,
    pub budget: u32,
    pub budget_exhausted_per_s: f64,
    /// CPUs that polled it in the interval, ascending.
    pub cpus: Vec<u32>,
    /// Its device's ifindex and namespace inode (0: unknown, backlog).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub ifindex: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub netns_inode: u64,
    /// NET_RX ns per packet: each CPU's cost per packet, weighted by the
    /// packets this instance had polled there (`model::cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_ns_per_packet: Option<f64>,
    /// NET_RX time charged to it that way, percent of one CPU.
    #[serde(default)]
    pub net_rx_pct: f64,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// One network device over the interval.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct DeviceView {
    pub name: String,
    /// Network namespace name; empty (and absent in JSON) for nettop's own.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub netns: String,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub ifindex: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub netns_inode: u64,
    pub rx_packets_per_s: f64,
    pub rx_bytes_per_s: f64,
    pub tx_packets_per_s: f64,
    pub tx_bytes_per_s: f64,
    pub rx_dropped_per_s: f64,
    /// NET_RX cost of the packets its napi instances polled
    /// (`model::cost`): ns per packet, percent of one CPU, and that percent
    /// per Gbit/s it received. Absent when its packets went through the
    /// per-CPU backlog (veth without XDP) or nothing was received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_ns_per_packet: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_pct_per_gbps: Option<f64>,
    /// Its configuration from the topology (XDP, RPS/XPS, queue IRQs, RSS,
    /// flow rules), joined by the front end that has one; see
    /// `model::devconf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<super::devconf::DeviceConfig>,
}

impl DeviceView {
    /// "veth1 (netns blue)", or the bare name in nettop's own namespace.
    pub fn label(&self) -> String {
        crate::topology::label(&self.name, &self.netns)
    }
}

/// Host-wide figures for the summary lines.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Summary {
    pub cpus_online: u32,
    /// Averages over online CPUs (percent of one CPU).
    pub usr_pct: f64,
    pub sys_pct: f64,
    pub irq_pct: f64,
    pub soft_pct: f64,
    pub idle_pct: f64,
    pub steal_pct: f64,
    pub net_rx_per_s: f64,
    pub napi_polls_per_s: f64,
    pub packets_per_s: f64,
    pub budget_exhausted_per_s: f64,
    pub time_squeeze_per_s: f64,
    /// Host-wide NET_RX ns per packet, and NET_RX CPU (percent of one CPU)
    /// per Gbit/s received by all devices (`model::cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_ns_per_packet: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_pct_per_gbps: Option<f64>,
    /// Why `net_rx_pct_per_gbps` is unknown although NET_RX time was
    /// measured: the device counters leave out devices, so the received
    /// bytes it would divide by are a part of the whole. Every front end
    /// shows the figure as n/a with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_pct_per_gbps_unknown: Option<DeviceGap>,
    /// Sum over tasks of stolen %, i.e. CPUs' worth of time top misattributes.
    pub stolen_pct_total: f64,
    /// Sum over tasks of hidden % (estimate).
    #[serde(default)]
    pub hidden_pct_total: f64,
    pub tasks: u32,
    pub processes: u32,
    /// Of `processes`, kernel threads (htop's `kthr`).
    #[serde(default)]
    pub kthreads: u32,
}

/// Collector health over the interval; non-zero numbers are shown, not hidden.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct HealthView {
    pub map_full: u64,
    pub napi_map_full: u64,
    pub unmatched_exits: u64,
    pub recursion_misses: u64,
    /// Tasks that vanished between samples (their last interval is dropped).
    pub vanished_tasks: u32,
    pub missing_tracepoints: Vec<String>,
    pub attach_mode: String,
    /// BPF cost over the interval, percent of one CPU, when stats are enabled.
    pub bpf_cpu_pct: Option<f64>,
    /// Where task figures came from: "iter/task" or "/proc (why)".
    #[serde(default)]
    pub task_source: String,
    /// Exited threads whose interrupt time could not be kept for their
    /// process in the interval (their process's STOLEN% is low by that).
    #[serde(default)]
    pub exited_lost: u64,
    /// Task sampler records that did not decode in the last pass.
    #[serde(default)]
    pub bad_records: u64,
    /// Interruptions in the interval charged to their CPU but to no task
    /// (they hit while the task's batch was being flushed).
    #[serde(default)]
    pub unattributed: u64,
    /// Sample-time flushes that found a batch in use: those figures arrive
    /// one interval late.
    #[serde(default)]
    pub flush_deferred: u64,
    /// Softirq runs in the interval whose raise nettop did not see (only
    /// right after attaching): charged as stolen.
    #[serde(default)]
    pub unknown_raise: u64,
    /// The collector's notes of the interval's last sample (`RawSample::notes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Everything a front end shows for one interval.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Frame {
    pub seq: u64,
    pub unix_ms: u64,
    pub interval_s: f64,
    pub hostname: String,
    /// The Kubernetes node's name when nettop knows it (`HostInfo`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    pub regime: Regime,
    /// One sentence for users: how this kernel charges interrupt time.
    pub regime_note: String,
    /// One sentence on HIDDEN~: where its calibration came from and how wide
    /// its spread is, or why there is none (empty without BPF).
    #[serde(default)]
    pub hidden_note: String,
    /// Why this frame's HIDDEN~ and TRUE% should not be taken at face
    /// value: the calibration they rest on was disturbed by the host's
    /// own load, or the host now delivers IPIs in a state no calibration
    /// saw. Empty when there is nothing to say. Every front end shows it;
    /// the band each task carries is wider by as much.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub calibration_warning: String,
    pub source: Source,
    pub summary: Summary,
    pub cpus: Vec<CpuView>,
    /// Process rows (threads summed), unsorted.
    pub processes: Vec<TaskView>,
    /// Thread rows, unsorted.
    pub threads: Vec<TaskView>,
    pub napi: Vec<NapiView>,
    pub devices: Vec<DeviceView>,
    pub health: HealthView,
    /// Process rows rolled up per cgroup, largest STOLEN% first; empty when
    /// the samples carry no cgroups (older recordings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<CgroupView>,
    /// Memory, load and uptime at the interval's end; `None` from
    /// recordings made before they were collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<super::system::SystemView>,
    /// Where NET_RX time went and who robbed whom; null when traffic is
    /// not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<super::traffic::TrafficView>,
}

impl Frame {
    /// The host line's name: the hostname, with the Kubernetes node's name
    /// beside it when that differs ("?" when neither is known).
    pub fn host_label(&self) -> String {
        match (self.hostname.as_str(), self.node_name.as_str()) {
            ("", "") => "?".into(),
            (h, "") => h.into(),
            ("", n) => format!("node {n}"),
            (h, n) if h == n => h.into(),
            (h, n) => format!("{h} (node {n})"),
        }
    }

    /// The finest rows the frame has: threads when it carries them (`-H`,
    /// thread view), else processes (one row each; a process's leader TID
    /// is its PID). Per-task evidence (the pinning lint) reads these.
    pub fn finest_rows(&self) -> &[TaskView] {
        if self.threads.is_empty() {
            &self.processes
        } else {
            &self.threads
        }
    }
}

/// One cgroup over the interval: the sums of its processes' figures.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct CgroupView {
    /// Key of the cgroup (`RawTask::cgroup_id`); 0 for tasks whose cgroup
    /// is unknown.
    pub id: u64,
    /// Path in its hierarchy; empty when unknown.
    pub path: String,
    /// `path` is a cgroup v1 path.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub v1: bool,
    /// What a table shows: pod/container/unit when the path names one,
    /// else the path.
    pub name: String,
    /// Pod, QoS class, container and unit parsed from the path.
    #[serde(default)]
    pub identity: Identity,
    pub processes: u32,
    pub threads: u32,
    pub top_pct: f64,
    pub on_cpu_pct: f64,
    pub stolen_pct: f64,
    /// Of `stolen_pct`: NET_RX softirq run in its tasks' context.
    pub net_rx_stolen_pct: f64,
    pub hidden_pct: f64,
    pub inline_pct: f64,
    pub true_pct: f64,
    /// Its processes' bands on TRUE%, summed (their errors move together).
    #[serde(default)]
    pub true_pct_low: f64,
    #[serde(default)]
    pub true_pct_high: f64,
    /// CPUs its cpuset allows; empty when unknown (then every online CPU
    /// is taken as allowed).
    pub cpus: String,
    /// NET_RX on those CPUs, summed (percent of one CPU). Traced with BPF;
    /// without it, all softirq time (`/proc/stat` si), an estimate.
    pub rx_on_cpus_pct: f64,
    /// The allowed CPUs that did at least [`RX_LANDS_PCT`](crate::model::cgroups::RX_LANDS_PCT) of receive work.
    pub rx_cpus: String,
    /// Number of cgroups summed into this row (1, more for "other").
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cgroups: u32,
    /// Memory charged to the cgroup, bytes (`RawCgroup::mem_bytes`; for
    /// "other", the known ones summed): null where no memory controller
    /// counts it and in frames from older recordings.
    #[serde(default)]
    pub mem_bytes: Option<u64>,
    /// Its processes' traffic, and the receive processing for its sockets
    /// (by the socket's cgroup); null when not known.
    #[serde(default)]
    pub traffic: Option<super::traffic::TaskTraffic>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Frame {
    /// Sets `config` of every device the topology knows (same namespace,
    /// same name); others get `None`.
    pub fn attach_config(&mut self, topo: &crate::topology::HostTopology) {
        self.attach_configs(&super::devconf::DeviceConfigs::of(topo));
    }

    /// [`Frame::attach_config`] from configurations read once for many
    /// frames.
    pub fn attach_configs(&mut self, configs: &super::devconf::DeviceConfigs) {
        for d in &mut self.devices {
            d.config = configs.get(&d.name, &d.netns).cloned();
        }
    }
}
