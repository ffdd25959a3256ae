//! Two raw samples in, one [`Frame`] out. Pure and total: any input, including
//! garbage from a corrupt recording, gives a frame of finite numbers; a zero
//! interval or a zero denominator gives 0, a counter that went backwards gives
//! a delta of 0.
//!
//! # How a task's CPU time is split
//!
//! BPF charges every interrupt to the task that was `current` when it ran:
//! device hardirqs, x86 system vectors, and softirqs by context (stolen:
//! raised by an interrupt and run in whoever was interrupted; inline: raised
//! by the task itself and run at its own `local_bh_enable`; ksoftirqd).
//! `stolen = hardirq + sysvec + stolen softirq` is work done for others on
//! the task's time. What that means for the task's own figures depends on how
//! the kernel accounts interrupt time ([`Regime`]):
//!
//! Each interruption also costs time no tracepoint sees (entry/exit code,
//! APIC, VM exits): `hidden` = the task's interruptions by class × the cost
//! calibrated for this host ([`super::hidden`]), an estimate.
//!
//! * **Tick-based** (`CONFIG_IRQ_TIME_ACCOUNTING` off) and **Unknown** (which
//!   is computed the same way and says so): the scheduler's
//!   `sum_exec_runtime` runs on across interrupts, so `on_cpu` *includes* the
//!   stolen and the hidden time; the task really got
//!   `true = max(0, on_cpu − stolen − hidden)`. Its own inline softirq is its
//!   own work and stays in.
//! * **IrqTimeAccounting**: irq time is measured at each transition and taken
//!   out of `rq->clock_task`, so `on_cpu` already *excludes* all traced irq
//!   time — including the task's own inline softirq, but not ksoftirqd's
//!   softirq (ksoftirqd is exempt). Stolen time therefore vanished from top
//!   instead of being charged, and `true = on_cpu + inline − hidden left in
//!   runtime` gives the task back the network work it did for itself and
//!   takes out the part of the hidden cost outside the kernel's irq clock
//!   (the calibration measures that share).
//!
//! `top_pct` is always top's own figure, Δ(utime+stime) ticks, so the two can
//! be compared side by side.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::cost::{self, CpuCost};
use super::frame::{CpuView, DeviceView, Frame, HealthView, NapiView, Summary, TaskView};
use super::hidden;
use crate::sample::calibration::Calibration;
use crate::sample::{
    CTX_INLINE, CTX_KSOFTIRQD, CTX_STOLEN, CpuNet, CpuTimes, HostInfo, IrqAcct, NR_SOFTIRQS,
    ProgStat, RawCpu, RawDevice, RawNapi, RawSample, RawTask, Regime, SOFTIRQ_CTX, Softnet, Source,
};

use super::fin;

fn d(prev: u64, cur: u64) -> u64 {
    cur.saturating_sub(prev)
}

/// Interval constants and unit conversions, all denominator-safe.
struct Ctx<'a> {
    dt_ns: u64,
    clk_tck: u64,
    regime: Regime,
    source: Source,
    cal: Option<&'a Calibration>,
    /// The host's memory, bytes (MEM%'s denominator), when known.
    mem_total: Option<u64>,
    /// Socket traffic was counted in both samples.
    traffic: bool,
    /// One plain IPI's untraced cost, ns, at the calibration's own state (0
    /// without a calibration or without BPF): what an RPS IPI costs beyond
    /// its handler.
    ipi_cost_ns: f64,
    /// The interval's IPIs show a state of the host no calibration saw
    /// ([`hidden::state_note`]): the band is wider.
    unknown_state: bool,
}

impl Ctx<'_> {
    fn pct_ns(&self, ns: f64) -> f64 {
        super::pct(ns, self.dt_ns)
    }
    fn rate(&self, n: f64) -> f64 {
        if self.dt_ns == 0 {
            0.0
        } else {
            fin(n * 1e9 / self.dt_ns as f64)
        }
    }
    /// `bytes` as a percent of the host's memory.
    fn mem_pct(&self, bytes: u64) -> Option<f64> {
        let total = self.mem_total.filter(|&t| t > 0)?;
        Some(fin(bytes as f64 / total as f64 * 100.0))
    }
    fn ticks_ns(&self, ticks: u64) -> f64 {
        if self.clk_tck == 0 {
            0.0
        } else {
            fin(ticks as f64 * 1e9 / self.clk_tck as f64)
        }
    }
    /// Tick-based arithmetic for both TickBased and Unknown.
    fn irq_in_runtime(&self) -> bool {
        self.regime != Regime::IrqTimeAccounting
    }
    /// What the calibration charges `a` (all 0 without a calibration or
    /// without BPF), `a` priced once.
    fn charges(&self, a: &IrqAcct) -> Charges {
        match self.cal {
            Some(c) if self.source == Source::Bpf => {
                let share = c.runtime_share_in(self.regime);
                let hidden::Charge { hidden_ns, band_ns } = c.charge(a, self.unknown_state);
                Charges {
                    hidden_ns: fin(hidden_ns),
                    hidden_in_runtime_ns: fin(hidden_ns * share),
                    band_ns: fin(band_ns),
                    band_in_runtime_ns: fin(band_ns * share),
                    rebilled_ns: fin(c.rebilled_ns(a)),
                    rebilled_band_ns: fin(c.rebilled_band_ns(a)),
                }
            }
            _ => Charges::default(),
        }
    }
}

/// TRUE%'s band around `true_pct`, points: `band` either way on the
/// hidden cost charged (the top no higher than nothing hidden at all,
/// `hidden`), and `given_back_band` either way on the time given back.
fn true_band(true_pct: f64, band: f64, hidden: f64, given_back_band: f64) -> (f64, f64) {
    (
        fin((true_pct - band - given_back_band).max(0.0)),
        fin(true_pct + band.min(hidden) + given_back_band),
    )
}

/// What HIDDEN~ charges an account, ns: the calibrated untraced cost and
/// its part left in runtime, the time given back (rebilled), and how far
/// each may be off (half its band).
#[derive(Default)]
struct Charges {
    hidden_ns: f64,
    hidden_in_runtime_ns: f64,
    band_ns: f64,
    band_in_runtime_ns: f64,
    rebilled_ns: f64,
    rebilled_band_ns: f64,
}

/// Field-wise saturating difference; `None` reads as all-zero counters.
fn irq_delta(prev: Option<&IrqAcct>, cur: Option<&IrqAcct>) -> IrqAcct {
    let zero = IrqAcct::default();
    let p = prev.unwrap_or(&zero);
    let Some(c) = cur else { return zero };
    let mut out = IrqAcct {
        hardirq_ns: d(p.hardirq_ns, c.hardirq_ns),
        hardirq_count: d(p.hardirq_count, c.hardirq_count),
        sysvec_ns: d(p.sysvec_ns, c.sysvec_ns),
        sysvec_count: d(p.sysvec_count, c.sysvec_count),
        timer_count: d(p.timer_count, c.timer_count),
        ipi_count: d(p.ipi_count, c.ipi_count),
        softirq_stolen_count: d(p.softirq_stolen_count, c.softirq_stolen_count),
        tlb_count: d(p.tlb_count, c.tlb_count),
        resched_count: d(p.resched_count, c.resched_count),
        ipi_ns: d(p.ipi_ns, c.ipi_ns),
        tlb_ns: d(p.tlb_ns, c.tlb_ns),
        timer_ns: d(p.timer_ns, c.timer_ns),
        sock: c.sock.since(&p.sock),
        ..Default::default()
    };
    for ctx in 0..SOFTIRQ_CTX {
        for v in 0..NR_SOFTIRQS {
            out.softirq_ns[ctx][v] = d(p.softirq_ns[ctx][v], c.softirq_ns[ctx][v]);
        }
    }
    for v in 0..NR_SOFTIRQS {
        out.softirq_count[v] = d(p.softirq_count[v], c.softirq_count[v]);
    }
    for k in 0..out.in_softirq_count.len() {
        out.in_softirq_count[k] = d(p.in_softirq_count[k], c.in_softirq_count[k]);
    }
    out
}

/// Traced interrupt time comparable with /proc/stat irq+softirq. Under
/// IrqTimeAccounting the kernel leaves ksoftirqd's softirq time in
/// ksoftirqd's own runtime, not in the per-CPU softirq column, so it is left
/// out of the comparison there.
fn traced_comparable_ns(a: &IrqAcct, regime: Regime) -> u64 {
    let mut t = a
        .hardirq_ns
        .saturating_add(a.sysvec_ns)
        .saturating_add(a.softirq_ctx_ns(CTX_STOLEN))
        .saturating_add(a.softirq_ctx_ns(CTX_INLINE));
    if regime != Regime::IrqTimeAccounting {
        t = t.saturating_add(a.softirq_ctx_ns(CTX_KSOFTIRQD));
    }
    t
}
/// The one sentence every front end shows about the accounting regime.
pub fn regime_note(regime: Regime) -> &'static str {
    match regime {
        Regime::TickBased => {
            "Tick-based irq accounting (CONFIG_IRQ_TIME_ACCOUNTING off): interrupt work is charged to \
             whichever task it interrupted, so TOP% includes time stolen from it; \
             TRUE% = on-CPU - STOLEN% - HIDDEN~%."
        }
        Regime::IrqTimeAccounting => {
            "Precise irq accounting (CONFIG_IRQ_TIME_ACCOUNTING=y): interrupt time is removed from every \
             task but ksoftirqd, so stolen time vanishes from TOP% instead of inflating it; \
             TRUE% = on-CPU + own inline softirq - the part of HIDDEN~% the kernel left in its runtime."
        }
        Regime::Unknown => {
            "Kernel config unreadable, irq accounting regime unknown: computed as tick-based (TOP% may \
             include interrupt work done for others); check /proc/config.gz or /boot/config-$(uname -r)."
        }
    }
}
mod cpu;
mod net;
mod task;
mod traffic;

use cpu::*;
use net::*;
use task::*;

/// Computes one frame from two consecutive samples (see the module docs for
/// the arithmetic). `prev` and `cur` may come from a recording; nothing is
/// assumed about their contents beyond the types.
pub fn compute(host: &HostInfo, prev: &RawSample, cur: &RawSample) -> Frame {
    let cal = host.calibration.as_ref();
    let mut ctx = Ctx {
        dt_ns: d(prev.mono_ns, cur.mono_ns),
        clk_tck: host.clk_tck,
        regime: host.regime,
        source: cur.source,
        cal,
        mem_total: host.mem_total_bytes,
        traffic: prev.traffic.available && cur.traffic.available,
        ipi_cost_ns: match cal {
            Some(c) if cur.source == Source::Bpf => fin(c.ipi.hidden_ns.max(0.0)),
            _ => 0.0,
        },
        unknown_state: false,
    };

    // Threads are keyed by (tid, start_ticks) so a reused TID is a new task.
    let prev_tasks: HashMap<(u32, u64), &RawTask> = prev
        .tasks
        .iter()
        .map(|t| ((t.tid, t.start_ticks), t))
        .collect();

    // Process totals (newer samples): keyed like threads, by their leader.
    let prev_procs: HashMap<(u32, u64), &RawTask> = prev
        .procs
        .iter()
        .map(|t| ((t.tid, t.start_ticks), t))
        .collect();

    // CPUs, with ksoftirqd/N's on-CPU time found through this sample's TID
    // (a thread row, or in process mode its single-threaded process row).
    let by_tid: HashMap<u32, &RawTask> = cur
        .procs
        .iter()
        .chain(&cur.tasks)
        .map(|t| (t.tid, t))
        .collect();
    let ksoftirqd_ns = |c: &RawCpu| -> u64 {
        let Some(t) = c.ksoftirqd_tid.and_then(|tid| by_tid.get(&tid)) else {
            return 0;
        };
        let key = (t.tid, t.start_ticks);
        let p = prev_tasks
            .get(&key)
            .or_else(|| prev_procs.get(&key))
            .map_or(0, |p| p.on_cpu_ns);
        d(p, t.on_cpu_ns)
    };
    let prev_cpus: HashMap<u32, &RawCpu> = prev.cpus.iter().map(|c| (c.cpu, c)).collect();
    let calcs: BTreeMap<u32, CpuCalc> = cur
        .cpus
        .iter()
        .map(|c| {
            (
                c.cpu,
                cpu_calc(&ctx, prev_cpus.get(&c.cpu).copied(), c, ksoftirqd_ns(c)),
            )
        })
        .collect();
    // The host's state as the CPUs' IPIs show it, before any task is
    // charged: a state no calibration saw widens every band.
    let state_warning = match (cur.source, host.calibration.as_ref()) {
        (Source::Bpf, Some(c)) => {
            hidden::state_note(c, calcs.iter().map(|(cpu, k)| (*cpu, &k.irq)))
        }
        _ => None,
    };
    ctx.unknown_state = state_warning.is_some();
    let ctx = ctx;

    let cur_keys: HashSet<(u32, u64)> = cur.tasks.iter().map(|t| (t.tid, t.start_ticks)).collect();
    let cur_proc_keys: HashSet<(u32, u64)> =
        cur.procs.iter().map(|t| (t.tid, t.start_ticks)).collect();
    let vanished = prev_tasks.keys().filter(|k| !cur_keys.contains(k)).count()
        + prev_procs
            .keys()
            .filter(|k| !cur_proc_keys.contains(k))
            .count();
    // Thread rows need thread rows before them: after a switch from process
    // to thread mode the first interval has no baseline, and showing whole
    // lifetimes as one interval would be a wrong number.
    let thread_rows: &[RawTask] = if prev.tasks.is_empty() && !prev.procs.is_empty() {
        &[]
    } else {
        &cur.tasks
    };
    let delta_of = |t: &RawTask| {
        task_delta(
            &ctx,
            &calcs,
            prev_tasks.get(&(t.tid, t.start_ticks)).copied(),
            t,
        )
    };
    let thread_view = |t: &RawTask, td: &TaskDelta| {
        let m = Meta {
            pid: t.tgid,
            tid: t.tid,
            is_process: false,
            leader: t,
            nr_threads: 1,
            cpu_ticks: cpu_ticks(t),
        };
        task_view(&ctx, &m, td)
    };
    // The thread deltas are kept only when processes are summed from them
    // (no process totals in the sample); otherwise each is dropped once its
    // row is made: at 30,000 threads the kept vector was 13 MiB of the
    // `-H` peak.
    let deltas: Vec<TaskDelta> = if cur.procs.is_empty() {
        thread_rows.iter().map(delta_of).collect()
    } else {
        Vec::new()
    };
    let mut threads: Vec<TaskView> = if cur.procs.is_empty() {
        thread_rows
            .iter()
            .zip(&deltas)
            .map(|(t, td)| thread_view(t, td))
            .collect()
    } else {
        thread_rows
            .iter()
            .map(|t| thread_view(t, &delta_of(t)))
            .collect()
    };
    threads.sort_by_key(|t| (t.pid, t.tid));

    // Processes: the kernel's per-process totals when the sample has them
    // (they include threads that exited, as /proc/PID/stat does), else the
    // sums of their threads with identity from the leader.
    let processes: Vec<TaskView> = if !cur.procs.is_empty() {
        cur.procs
            .iter()
            .map(|p| {
                let td = task_delta(
                    &ctx,
                    &calcs,
                    prev_procs.get(&(p.tid, p.start_ticks)).copied(),
                    p,
                );
                let m = Meta {
                    pid: p.tgid,
                    tid: p.tgid,
                    is_process: true,
                    leader: p,
                    nr_threads: p.nr_threads.max(1),
                    cpu_ticks: cpu_ticks(p),
                };
                task_view(&ctx, &m, &td)
            })
            .collect()
    } else {
        group_threads(&ctx, cur, &deltas)
    };

    let empty = CpuCalc::default();
    let own_bpf = own_bpf_ns(&ctx, prev, cur);
    let cpus: Vec<CpuView> = cur
        .cpus
        .iter()
        .map(|c| {
            let k = calcs.get(&c.cpu).unwrap_or(&empty);
            cpu_view(&ctx, host, c.cpu, k, own_bpf.as_ref())
        })
        .collect();

    let summary = summarize(&cpus, &processes);

    let costs: BTreeMap<u32, CpuCost> = if cur.source == Source::Bpf {
        calcs.iter().map(|(c, k)| (*c, cpu_cost(k))).collect()
    } else {
        BTreeMap::new()
    };
    let napi = napi_views(&ctx, &prev.napi, &cur.napi, &costs);
    let mut devices = device_views(&ctx, &prev.devices, &cur.devices);
    let mut summary = summary;
    cost::fill_devices(
        &mut devices,
        &napi,
        &costs,
        ctx.dt_ns as f64 / 1e9,
        cur.devices_incomplete.as_ref(),
        &mut summary,
    );
    summary.net_rx_ns_per_packet = summary.net_rx_ns_per_packet.map(fin);
    summary.net_rx_pct_per_gbps = summary.net_rx_pct_per_gbps.map(fin);

    let mut cgroups = super::cgroups::rollup(&processes, &cur.cgroups, &cpus, cur.source);
    traffic::fill_cgroups(
        prev,
        cur,
        ctx.dt_ns,
        ctx.ipi_cost_ns,
        &mut cgroups,
        &processes,
    );
    let rx: Vec<_> = calcs.values().map(|k| k.net.rx.clone()).collect();
    let net_rx_ns = calcs
        .values()
        .fold(0u64, |s, k| s.saturating_add(k.net.net_rx_ns));
    let traffic = traffic::traffic_view(prev, cur, ctx.dt_ns, &rx, net_rx_ns, &processes, &cgroups);
    let mut health = health_view(&ctx, prev, cur);
    health.vanished_tasks = u32::try_from(vanished).unwrap_or(u32::MAX);
    health.notes = cur.notes.clone();

    Frame {
        seq: cur.seq,
        unix_ms: cur.unix_ms,
        interval_s: ctx.dt_ns as f64 / 1e9,
        hostname: host.hostname.clone(),
        node_name: host.node_name.clone(),
        regime: host.regime,
        regime_note: regime_note(host.regime).to_string(),
        hidden_note: match cur.source {
            Source::Bpf => {
                let note = hidden::note(
                    host.calibration.as_ref(),
                    &host.calibration_missing,
                    cur.unix_ms,
                );
                match state_warning {
                    Some(w) => format!("{note}. {w}"),
                    None => note,
                }
            }
            Source::ProcOnly => String::new(),
        },
        calibration_warning: match (cur.source, host.calibration.as_ref()) {
            (Source::Bpf, Some(c)) => hidden::warning(c, ctx.unknown_state),
            _ => String::new(),
        },
        source: cur.source,
        summary,
        cpus,
        processes,
        threads,
        napi,
        devices,
        health,
        cgroups,
        system: cur.system.as_ref().map(super::system::system_view),
        traffic,
    }
}

/// The summary line's figures from the CPU and process rows: CPU shares
/// averaged over the online CPUs, rates and task figures summed. The cost
/// figures are left to `cost::fill_devices`.
pub fn summarize(cpus: &[CpuView], processes: &[TaskView]) -> Summary {
    let online: Vec<&CpuView> = cpus.iter().filter(|c| c.online).collect();
    let n = online.len();
    let avg = |f: fn(&CpuView) -> f64| {
        if n == 0 {
            0.0
        } else {
            fin(online.iter().map(|c| f(c)).sum::<f64>() / n as f64)
        }
    };
    let total = |f: fn(&CpuView) -> f64| fin(cpus.iter().map(f).sum::<f64>());
    Summary {
        cpus_online: u32::try_from(n).unwrap_or(u32::MAX),
        usr_pct: avg(|c| c.usr_pct),
        sys_pct: avg(|c| c.sys_pct),
        irq_pct: avg(|c| c.irq_pct),
        soft_pct: avg(|c| c.soft_pct),
        idle_pct: avg(|c| c.idle_pct),
        steal_pct: avg(|c| c.steal_pct),
        net_rx_per_s: total(|c| c.net_rx_per_s),
        napi_polls_per_s: total(|c| c.napi_polls_per_s),
        packets_per_s: total(|c| c.packets_per_s),
        budget_exhausted_per_s: total(|c| c.budget_exhausted_per_s),
        time_squeeze_per_s: total(|c| c.time_squeeze_per_s),
        stolen_pct_total: fin(processes.iter().map(|p| p.stolen_pct).sum()),
        hidden_pct_total: fin(processes.iter().map(|p| p.hidden_pct).sum()),
        // Every thread, whether or not the sample has a row for each.
        tasks: processes
            .iter()
            .fold(0u32, |n, p| n.saturating_add(p.nr_threads)),
        processes: u32::try_from(processes.len()).unwrap_or(u32::MAX),
        kthreads: u32::try_from(processes.iter().filter(|p| p.kthread).count()).unwrap_or(u32::MAX),
        ..Default::default()
    }
}

/// The network part of [`compute`]: CPUs (with nettop's own BPF cost on
/// each), napi instances, devices and the summary's cost figures, without
/// tasks (whose rows the metrics exporter builds its own way). Task-derived
/// fields stay zero.
pub fn network(host: &HostInfo, prev: &RawSample, cur: &RawSample) -> Frame {
    let light = |s: &RawSample| RawSample {
        seq: s.seq,
        mono_ns: s.mono_ns,
        unix_ms: s.unix_ms,
        source: s.source,
        cpus: s.cpus.clone(),
        napi: s.napi.clone(),
        devices: s.devices.clone(),
        devices_incomplete: s.devices_incomplete.clone(),
        // For the CPUs' own BPF cost: a few programs, no tasks.
        health: s.health.clone(),
        ..Default::default()
    };
    compute(host, &light(prev), &light(cur))
}
