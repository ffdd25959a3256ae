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
use super::hidden::{self, Calibration};
use super::raw::{
    CTX_INLINE, CTX_KSOFTIRQD, CTX_STOLEN, CpuNet, CpuTimes, HostInfo, IrqAcct, NR_SOFTIRQS,
    RawCpu, RawDevice, RawNapi, RawSample, RawTask, Regime, SOFTIRQ_CTX, Softnet, Source,
};

/// Replaces NaN/inf (impossible by construction, but a frame must never
/// carry one) with 0.
fn fin(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

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
}

impl Ctx<'_> {
    fn pct_ns(&self, ns: f64) -> f64 {
        if self.dt_ns == 0 {
            0.0
        } else {
            fin(ns / self.dt_ns as f64 * 100.0)
        }
    }
    fn rate(&self, n: f64) -> f64 {
        if self.dt_ns == 0 {
            0.0
        } else {
            fin(n * 1e9 / self.dt_ns as f64)
        }
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
    /// Calibrated untraced cost of the interruptions in `a` (0 without a
    /// calibration or without BPF), and its part left in runtime, ns.
    fn hidden(&self, a: &IrqAcct) -> (f64, f64) {
        match self.cal {
            Some(c) if self.source == Source::Bpf => (
                fin(c.hidden_ns(a)),
                fin(c.hidden_in_runtime_ns(a, self.regime)),
            ),
            _ => (0.0, 0.0),
        }
    }
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

fn times_delta(p: &CpuTimes, c: &CpuTimes) -> CpuTimes {
    CpuTimes {
        user: d(p.user, c.user),
        nice: d(p.nice, c.nice),
        system: d(p.system, c.system),
        idle: d(p.idle, c.idle),
        iowait: d(p.iowait, c.iowait),
        irq: d(p.irq, c.irq),
        softirq: d(p.softirq, c.softirq),
        steal: d(p.steal, c.steal),
        guest: d(p.guest, c.guest),
        guest_nice: d(p.guest_nice, c.guest_nice),
    }
}

/// Per-CPU interval figures the task arithmetic needs.
#[derive(Default)]
struct CpuCalc {
    /// Online in both samples with /proc/stat times in both.
    valid: bool,
    t: CpuTimes,
    irq: IrqAcct,
    net: CpuNet,
    softnet: Softnet,
    /// /proc/stat irq and softirq time, ns.
    stat_irq_ns: f64,
    stat_soft_ns: f64,
    /// Non-idle time the CPU ran (user+nice+system+irq+softirq), ns.
    busy_ns: f64,
    /// What /proc/stat saw as interrupt time that tracepoints did not: a
    /// tick-sampled cross-check of the calibrated hidden cost.
    excess_ns: f64,
    /// ksoftirqd/N's on-CPU time, ns.
    ksoftirqd_ns: u64,
}

fn cpu_calc(ctx: &Ctx, p: Option<&RawCpu>, c: &RawCpu, ksoftirqd_ns: u64) -> CpuCalc {
    let Some(p) = p else {
        return CpuCalc::default();
    };
    let (Some(pt), Some(ct)) = (&p.times, &c.times) else {
        return CpuCalc::default();
    };
    if !p.online || !c.online {
        return CpuCalc::default();
    }
    let t = times_delta(pt, ct);
    let irq = irq_delta(p.irq.as_ref(), c.irq.as_ref());
    let net = match (&p.net, &c.net) {
        (pn, Some(cn)) => {
            let z = CpuNet::default();
            let pn = pn.as_ref().unwrap_or(&z);
            CpuNet {
                net_rx_actions: d(pn.net_rx_actions, cn.net_rx_actions),
                net_rx_ns: d(pn.net_rx_ns, cn.net_rx_ns),
                net_rx_restarts: d(pn.net_rx_restarts, cn.net_rx_restarts),
                net_rx_max_ns: cn.net_rx_max_ns,
                napi_polls: d(pn.napi_polls, cn.napi_polls),
                napi_work: d(pn.napi_work, cn.napi_work),
                napi_budget_exhausted: d(pn.napi_budget_exhausted, cn.napi_budget_exhausted),
            }
        }
        _ => CpuNet::default(),
    };
    let softnet = match (&p.softnet, &c.softnet) {
        (Some(ps), Some(cs)) => Softnet {
            processed: d(ps.processed, cs.processed),
            dropped: d(ps.dropped, cs.dropped),
            time_squeeze: d(ps.time_squeeze, cs.time_squeeze),
            received_rps: d(ps.received_rps, cs.received_rps),
            flow_limit: d(ps.flow_limit, cs.flow_limit),
        },
        _ => Softnet::default(),
    };
    let stat_irq_ns = ctx.ticks_ns(t.irq);
    let stat_soft_ns = ctx.ticks_ns(t.softirq);
    let busy_ticks = t
        .user
        .saturating_add(t.nice)
        .saturating_add(t.system)
        .saturating_add(t.irq)
        .saturating_add(t.softirq);
    let excess_ns = if ctx.source == Source::Bpf && c.irq.is_some() {
        let traced = traced_comparable_ns(&irq, ctx.regime) as f64;
        (stat_irq_ns + stat_soft_ns - traced).max(0.0)
    } else {
        0.0
    };
    CpuCalc {
        valid: true,
        t,
        irq,
        net,
        softnet,
        stat_irq_ns,
        stat_soft_ns,
        busy_ns: ctx.ticks_ns(busy_ticks),
        excess_ns: fin(excess_ns),
        ksoftirqd_ns,
    }
}

/// One thread's (or a whole process's) interval counters.
#[derive(Default, Clone)]
struct TaskDelta {
    ticks: u64,
    on_cpu_ns: u64,
    irq: IrqAcct,
    /// ProcOnly estimates of interrupt time in its context, ns.
    est_hardirq_ns: f64,
    est_stolen_ns: f64,
}

impl TaskDelta {
    fn add(&mut self, o: &TaskDelta) {
        self.ticks = self.ticks.saturating_add(o.ticks);
        self.on_cpu_ns = self.on_cpu_ns.saturating_add(o.on_cpu_ns);
        self.irq.add(&o.irq);
        self.est_hardirq_ns += o.est_hardirq_ns;
        self.est_stolen_ns += o.est_stolen_ns;
    }
}

fn is_ksoftirqd(t: &RawTask) -> bool {
    t.kthread && t.comm.starts_with("ksoftirqd/")
}

fn task_delta(
    ctx: &Ctx,
    cpus: &BTreeMap<u32, CpuCalc>,
    p: Option<&RawTask>,
    c: &RawTask,
) -> TaskDelta {
    let ticks = |t: &RawTask| t.utime_ticks.saturating_add(t.stime_ticks);
    let (p_ticks, p_on) = p.map(|p| (ticks(p), p.on_cpu_ns)).unwrap_or((0, 0));
    let mut td = TaskDelta {
        ticks: d(p_ticks, ticks(c)),
        on_cpu_ns: d(p_on, c.on_cpu_ns),
        irq: irq_delta(p.and_then(|p| p.irq.as_ref()), c.irq.as_ref()),
        ..Default::default()
    };
    let Some(cpu) = cpus.get(&c.last_cpu).filter(|k| k.valid) else {
        return td;
    };
    match ctx.source {
        // Traced: everything is in `irq`; the hidden cost follows from it.
        Source::Bpf => {}
        // Without tracing, the CPU's /proc/stat interrupt time is shared out
        // by the task's part of the CPU's non-interrupt busy time (an
        // estimate: it assumes interrupts hit busy time evenly, and it books
        // the task's whole interval on its last CPU). Tick-based runtime
        // contains the interrupt time, so the share is of all busy time;
        // under IrqTimeAccounting it does not, so the share is of busy time
        // minus interrupt time. ksoftirqd's softirq is its own work, so its
        // runtime leaves the pool and the shared busy time; tick-based
        // kernels count its softirq ticks in /proc/stat softirq, so that
        // leaves the interrupt time to share out as well.
        Source::ProcOnly if !is_ksoftirqd(c) => {
            let ks = cpu.ksoftirqd_ns as f64;
            let irq_total = cpu.stat_irq_ns + cpu.stat_soft_ns;
            let (pool, denom) = if ctx.irq_in_runtime() {
                ((irq_total - ks).max(0.0), cpu.busy_ns - ks)
            } else {
                (irq_total, cpu.busy_ns - irq_total - ks)
            };
            if denom > 0.0 && irq_total > 0.0 {
                let share = (td.on_cpu_ns as f64 / denom).min(1.0);
                td.est_stolen_ns = fin(pool * share);
                // Hardirq's part of the pool, in /proc/stat's proportion.
                td.est_hardirq_ns = fin(td.est_stolen_ns * cpu.stat_irq_ns / irq_total);
            }
        }
        Source::ProcOnly => {}
    }
    td
}

/// Identity fields of a task row.
struct Meta<'a> {
    pid: u32,
    tid: u32,
    is_process: bool,
    leader: &'a RawTask,
    nr_threads: u32,
}

fn task_view(ctx: &Ctx, m: &Meta<'_>, td: &TaskDelta) -> TaskView {
    let on_cpu_pct = ctx.pct_ns(td.on_cpu_ns as f64);
    let mut v = TaskView {
        pid: m.pid,
        tid: m.tid,
        is_process: m.is_process,
        comm: m.leader.comm.clone(),
        uid: m.leader.uid,
        state: m.leader.state,
        nr_threads: m.nr_threads,
        kthread: m.leader.kthread,
        last_cpu: m.leader.last_cpu,
        affinity: m.leader.affinity.clone(),
        cgroup_id: m.leader.cgroup_id,
        top_pct: ctx.pct_ns(ctx.ticks_ns(td.ticks)),
        on_cpu_pct,
        ..Default::default()
    };
    let mut hidden_in_runtime_pct = 0.0;
    match ctx.source {
        Source::Bpf => {
            v.hardirq_pct = ctx.pct_ns(td.irq.hardirq_ns as f64);
            v.sysvec_pct = ctx.pct_ns(td.irq.sysvec_ns as f64);
            for vec in 0..NR_SOFTIRQS {
                v.softirq_stolen_pct[vec] = ctx.pct_ns(td.irq.softirq_ns[CTX_STOLEN][vec] as f64);
            }
            // Summed from the shown parts so the row adds up exactly.
            v.stolen_pct = v.hardirq_pct + v.sysvec_pct + v.softirq_stolen_pct.iter().sum::<f64>();
            v.inline_pct = ctx.pct_ns(td.irq.softirq_ctx_ns(CTX_INLINE) as f64);
            v.ksoftirqd_pct = ctx.pct_ns(td.irq.softirq_ctx_ns(CTX_KSOFTIRQD) as f64);
            let (hidden, in_runtime) = ctx.hidden(&td.irq);
            v.hidden_pct = ctx.pct_ns(hidden);
            hidden_in_runtime_pct = ctx.pct_ns(in_runtime);
            v.interrupts_per_s = ctx.rate(td.irq.interruptions() as f64);
            v.softirqs_per_s = ctx.rate(
                td.irq
                    .softirq_count
                    .iter()
                    .fold(0u64, |s, x| s.saturating_add(*x)) as f64,
            );
        }
        Source::ProcOnly => {
            v.hardirq_pct = ctx.pct_ns(td.est_hardirq_ns);
            v.stolen_pct = ctx.pct_ns(td.est_stolen_ns);
        }
    }
    v.true_pct = fin(if ctx.irq_in_runtime() {
        (on_cpu_pct - v.stolen_pct - hidden_in_runtime_pct).max(0.0)
    } else {
        (on_cpu_pct + v.inline_pct - hidden_in_runtime_pct).max(0.0)
    });
    v
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

fn cpu_view(ctx: &Ctx, host: &HostInfo, cpu: u32, k: &CpuCalc) -> CpuView {
    let node = host.cpu_node.get(cpu as usize).copied();
    if !k.valid {
        return CpuView {
            cpu,
            online: false,
            node,
            ..Default::default()
        };
    }
    let t = &k.t;
    let total = [
        t.user, t.nice, t.system, t.idle, t.iowait, t.irq, t.softirq, t.steal,
    ]
    .iter()
    .fold(0u64, |s, x| s.saturating_add(*x));
    let tp = |x: u64| {
        if total == 0 {
            0.0
        } else {
            fin(x as f64 / total as f64 * 100.0)
        }
    };
    let mut v = CpuView {
        cpu,
        online: true,
        node,
        usr_pct: tp(t.user),
        nice_pct: tp(t.nice),
        sys_pct: tp(t.system),
        iowait_pct: tp(t.iowait),
        irq_pct: tp(t.irq),
        soft_pct: tp(t.softirq),
        steal_pct: tp(t.steal),
        idle_pct: tp(t.idle),
        ksoftirqd_pct: ctx.pct_ns(k.ksoftirqd_ns as f64),
        time_squeeze_per_s: ctx.rate(k.softnet.time_squeeze as f64),
        softnet_dropped_per_s: ctx.rate(k.softnet.dropped as f64),
        rps_received_per_s: ctx.rate(k.softnet.received_rps as f64),
        ..Default::default()
    };
    if ctx.source == Source::Bpf {
        v.traced_hardirq_pct = ctx.pct_ns(k.irq.hardirq_ns as f64);
        v.traced_sysvec_pct = ctx.pct_ns(k.irq.sysvec_ns as f64);
        for vec in 0..NR_SOFTIRQS {
            let ns = (0..SOFTIRQ_CTX).fold(0u64, |s, c| s.saturating_add(k.irq.softirq_ns[c][vec]));
            v.traced_softirq_pct[vec] = ctx.pct_ns(ns as f64);
        }
        v.softirq_stolen_pct = ctx.pct_ns(k.irq.softirq_ctx_ns(CTX_STOLEN) as f64);
        v.softirq_inline_pct = ctx.pct_ns(k.irq.softirq_ctx_ns(CTX_INLINE) as f64);
        v.softirq_ksoftirqd_pct = ctx.pct_ns(k.irq.softirq_ctx_ns(CTX_KSOFTIRQD) as f64);
        v.unexplained_irq_pct = ctx.pct_ns(k.excess_ns);
        v.stolen_pct = v.traced_hardirq_pct + v.traced_sysvec_pct + v.softirq_stolen_pct;
        v.hidden_pct = ctx.pct_ns(ctx.hidden(&k.irq).0);
        v.interrupts_per_s = ctx.rate(k.irq.interruptions() as f64);
        v.net_rx_per_s = ctx.rate(k.net.net_rx_actions as f64);
        v.net_rx_avg_us = if k.net.net_rx_actions == 0 {
            0.0
        } else {
            fin(k.net.net_rx_ns as f64 / k.net.net_rx_actions as f64 / 1000.0)
        };
        v.net_rx_restarts_per_s = ctx.rate(k.net.net_rx_restarts as f64);
        v.napi_polls_per_s = ctx.rate(k.net.napi_polls as f64);
        v.packets_per_s = ctx.rate(k.net.napi_work as f64);
        v.budget_exhausted_per_s = ctx.rate(k.net.napi_budget_exhausted as f64);
        v.net_rx_ns_per_packet = cpu_cost(k).per_packet().map(fin);
    } else {
        // Without napi tracing, packets are what softnet_stat says this CPU
        // processed (backlog/RPS included).
        v.packets_per_s = ctx.rate(k.softnet.processed as f64);
        v.stolen_pct = v.irq_pct + v.soft_pct;
    }
    // Tasks' own work: non-idle time less interrupt work and its hidden cost.
    let busy = 100.0 - v.idle_pct - v.iowait_pct - v.steal_pct;
    v.true_pct = fin((busy - v.stolen_pct - v.hidden_pct).max(0.0));
    v
}

fn cpu_cost(k: &CpuCalc) -> CpuCost {
    CpuCost {
        net_rx_ns: k.net.net_rx_ns,
        packets: k.net.napi_work,
    }
}

fn napi_views(
    ctx: &Ctx,
    prev: &[RawNapi],
    cur: &[RawNapi],
    costs: &BTreeMap<u32, CpuCost>,
) -> Vec<NapiView> {
    let pm: HashMap<(&str, u32, u32), &RawNapi> = prev
        .iter()
        .map(|n| ((n.dev.as_str(), n.napi_id, n.cpu), n))
        .collect();
    #[derive(Default)]
    struct Acc {
        polls: u64,
        work: u64,
        exhausted: u64,
        budget: u32,
        cpus: Vec<u32>,
        work_by_cpu: BTreeMap<u32, u64>,
        ifindex: u32,
        netns_inode: u64,
    }
    let mut acc: BTreeMap<(&str, u32), Acc> = BTreeMap::new();
    for n in cur {
        let z = RawNapi::default();
        let p = pm
            .get(&(n.dev.as_str(), n.napi_id, n.cpu))
            .copied()
            .unwrap_or(&z);
        let a = acc.entry((n.dev.as_str(), n.napi_id)).or_default();
        let polls = d(p.polls, n.polls);
        a.polls = a.polls.saturating_add(polls);
        a.work = a.work.saturating_add(d(p.work, n.work));
        a.exhausted = a
            .exhausted
            .saturating_add(d(p.budget_exhausted, n.budget_exhausted));
        a.budget = a.budget.max(n.budget);
        a.ifindex = a.ifindex.max(n.ifindex);
        a.netns_inode = a.netns_inode.max(n.netns_inode);
        if polls > 0 {
            a.cpus.push(n.cpu);
            *a.work_by_cpu.entry(n.cpu).or_default() += d(p.work, n.work);
        }
    }
    acc.into_iter()
        .map(|((dev, napi_id), mut a)| {
            a.cpus.sort_unstable();
            a.cpus.dedup();
            let (per_packet, charged_ns) = cost::napi_charge(&a.work_by_cpu, costs);
            NapiView {
                ifindex: a.ifindex,
                netns_inode: a.netns_inode,
                net_rx_ns_per_packet: per_packet.map(fin),
                net_rx_pct: ctx.pct_ns(charged_ns),
                dev: dev.to_string(),
                napi_id,
                polls_per_s: ctx.rate(a.polls as f64),
                packets_per_s: ctx.rate(a.work as f64),
                work_per_poll: if a.polls == 0 {
                    0.0
                } else {
                    fin(a.work as f64 / a.polls as f64)
                },
                budget: a.budget,
                budget_exhausted_per_s: ctx.rate(a.exhausted as f64),
                cpus: a.cpus,
            }
        })
        .collect()
}

fn device_views(ctx: &Ctx, prev: &[RawDevice], cur: &[RawDevice]) -> Vec<DeviceView> {
    let pm: HashMap<(&str, &str), &RawDevice> = prev
        .iter()
        .map(|x| ((x.netns.as_str(), x.name.as_str()), x))
        .collect();
    let z = RawDevice::default();
    cur.iter()
        .map(|c| {
            // Same name, new ifindex: the device was recreated, counters restarted.
            let p = pm
                .get(&(c.netns.as_str(), c.name.as_str()))
                .copied()
                .filter(|p| p.ifindex == c.ifindex)
                .unwrap_or(&z);
            DeviceView {
                name: c.name.clone(),
                netns: c.netns.clone(),
                ifindex: c.ifindex,
                netns_inode: c.netns_inode,
                rx_packets_per_s: ctx.rate(d(p.rx_packets, c.rx_packets) as f64),
                rx_bytes_per_s: ctx.rate(d(p.rx_bytes, c.rx_bytes) as f64),
                tx_packets_per_s: ctx.rate(d(p.tx_packets, c.tx_packets) as f64),
                tx_bytes_per_s: ctx.rate(d(p.tx_bytes, c.tx_bytes) as f64),
                rx_dropped_per_s: ctx.rate(d(p.rx_dropped, c.rx_dropped) as f64),
                ..Default::default()
            }
        })
        .collect()
}

fn health_view(ctx: &Ctx, prev: &RawSample, cur: &RawSample) -> HealthView {
    let Some(c) = &cur.health else {
        return HealthView::default();
    };
    let z = Default::default();
    let p = prev.health.as_ref().unwrap_or(&z);
    let prev_progs: HashMap<&str, u64> = p
        .programs
        .iter()
        .map(|x| (x.name.as_str(), x.run_time_ns))
        .collect();
    // run_time_ns stays 0 unless kernel BPF stats are on: no figure then
    // rather than a misleading 0 %.
    let stats_on = c.programs.iter().any(|x| x.run_time_ns > 0);
    let bpf_ns = c.programs.iter().fold(0u64, |s, x| {
        s.saturating_add(d(
            prev_progs.get(x.name.as_str()).copied().unwrap_or(0),
            x.run_time_ns,
        ))
    });
    HealthView {
        map_full: d(p.map_full, c.map_full),
        napi_map_full: d(p.napi_map_full, c.napi_map_full),
        unmatched_exits: d(p.unmatched_exits, c.unmatched_exits),
        recursion_misses: d(p.recursion_misses, c.recursion_misses),
        vanished_tasks: 0,
        missing_tracepoints: c.missing_tracepoints.clone(),
        attach_mode: c.attach_mode.clone(),
        bpf_cpu_pct: stats_on.then(|| ctx.pct_ns(bpf_ns as f64)),
        task_source: c.task_source.clone(),
        exited_lost: d(p.exited_lost, c.exited_lost),
        bad_records: c.bad_records,
        unattributed: d(p.unattributed, c.unattributed),
        flush_deferred: d(p.flush_deferred, c.flush_deferred),
        unknown_raise: d(p.unknown_raise, c.unknown_raise),
        notes: Vec::new(),
    }
}

/// Process rows summed from thread rows (samples without process totals).
fn group_threads(ctx: &Ctx, cur: &RawSample, deltas: &[TaskDelta]) -> Vec<TaskView> {
    let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, t) in cur.tasks.iter().enumerate() {
        groups.entry(t.tgid).or_default().push(i);
    }
    groups
        .iter()
        .filter_map(|(&tgid, idx)| {
            let first = *idx.first()?;
            let leader_i = idx
                .iter()
                .copied()
                .find(|&i| cur.tasks[i].tid == tgid)
                .unwrap_or(first);
            let mut sum = TaskDelta::default();
            for d in idx.iter().filter_map(|&i| deltas.get(i)) {
                sum.add(d);
            }
            let m = Meta {
                pid: tgid,
                tid: tgid,
                is_process: true,
                leader: &cur.tasks[leader_i],
                nr_threads: u32::try_from(idx.len()).unwrap_or(u32::MAX),
            };
            Some(task_view(ctx, &m, &sum))
        })
        .collect()
}

/// Computes one frame from two consecutive samples (see the module docs for
/// the arithmetic). `prev` and `cur` may come from a recording; nothing is
/// assumed about their contents beyond the types.
pub fn compute(host: &HostInfo, prev: &RawSample, cur: &RawSample) -> Frame {
    let ctx = Ctx {
        dt_ns: d(prev.mono_ns, cur.mono_ns),
        clk_tck: host.clk_tck,
        regime: host.regime,
        source: cur.source,
        cal: host.calibration.as_ref(),
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
    let deltas: Vec<TaskDelta> = thread_rows
        .iter()
        .map(|t| {
            task_delta(
                &ctx,
                &calcs,
                prev_tasks.get(&(t.tid, t.start_ticks)).copied(),
                t,
            )
        })
        .collect();

    let mut threads: Vec<TaskView> = thread_rows
        .iter()
        .zip(&deltas)
        .map(|(t, td)| {
            let m = Meta {
                pid: t.tgid,
                tid: t.tid,
                is_process: false,
                leader: t,
                nr_threads: 1,
            };
            task_view(&ctx, &m, td)
        })
        .collect();
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
                };
                task_view(&ctx, &m, &td)
            })
            .collect()
    } else {
        group_threads(&ctx, cur, &deltas)
    };

    let empty = CpuCalc::default();
    let cpus: Vec<CpuView> = cur
        .cpus
        .iter()
        .map(|c| cpu_view(&ctx, host, c.cpu, calcs.get(&c.cpu).unwrap_or(&empty)))
        .collect();

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
    let summary = Summary {
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
        ..Default::default()
    };

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
        &mut summary,
    );
    summary.net_rx_ns_per_packet = summary.net_rx_ns_per_packet.map(fin);
    summary.net_rx_pct_per_gbps = summary.net_rx_pct_per_gbps.map(fin);

    let cgroups = super::cgroups::rollup(&processes, &cur.cgroups, &cpus, cur.source);
    let mut health = health_view(&ctx, prev, cur);
    health.vanished_tasks = u32::try_from(vanished).unwrap_or(u32::MAX);
    health.notes = cur.notes.clone();

    Frame {
        seq: cur.seq,
        unix_ms: cur.unix_ms,
        interval_s: ctx.dt_ns as f64 / 1e9,
        hostname: host.hostname.clone(),
        regime: host.regime,
        regime_note: regime_note(host.regime).to_string(),
        hidden_note: match cur.source {
            Source::Bpf => hidden::note(
                host.calibration.as_ref(),
                &host.calibration_missing,
                cur.unix_ms,
            ),
            Source::ProcOnly => String::new(),
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
    }
}

/// The network part of [`compute`]: CPUs, napi instances, devices and the
/// summary's cost figures, without tasks (whose rows the metrics exporter
/// builds its own way). Task-derived fields stay zero.
pub fn network(host: &HostInfo, prev: &RawSample, cur: &RawSample) -> Frame {
    let light = |s: &RawSample| RawSample {
        seq: s.seq,
        mono_ns: s.mono_ns,
        unix_ms: s.unix_ms,
        source: s.source,
        cpus: s.cpus.clone(),
        napi: s.napi.clone(),
        devices: s.devices.clone(),
        ..Default::default()
    };
    compute(host, &light(prev), &light(cur))
}
