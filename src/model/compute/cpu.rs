//! Per-CPU interval figures: /proc/stat and BPF counters of one CPU over
//! the interval, and the CPU view built from them.

use super::*;

pub(super) fn times_delta(p: &CpuTimes, c: &CpuTimes) -> CpuTimes {
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
pub(super) struct CpuCalc {
    /// Online in both samples with /proc/stat times in both.
    pub(super) valid: bool,
    pub(super) t: CpuTimes,
    pub(super) irq: IrqAcct,
    pub(super) net: CpuNet,
    pub(super) softnet: Softnet,
    /// /proc/stat irq and softirq time, ns.
    pub(super) stat_irq_ns: f64,
    pub(super) stat_soft_ns: f64,
    /// Non-idle time the CPU ran (user+nice+system+irq+softirq), ns.
    pub(super) busy_ns: f64,
    /// What /proc/stat saw as interrupt time that tracepoints did not: a
    /// tick-sampled cross-check of the calibrated hidden cost.
    pub(super) excess_ns: f64,
    /// ksoftirqd/N's on-CPU time, ns.
    pub(super) ksoftirqd_ns: u64,
}

pub(super) fn cpu_calc(ctx: &Ctx, p: Option<&RawCpu>, c: &RawCpu, ksoftirqd_ns: u64) -> CpuCalc {
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
                rx: cn.rx.since(&pn.rx),
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

/// nettop's own BPF run time over the interval on each CPU, ns, by CPU
/// number (CPUs missing from the map spent none); `None` when it was not
/// measured.
///
/// The kernel's BPF stats give each program's run time and run count
/// summed over all CPUs only; each program also counts its own runs per
/// CPU (`ProgStat::cpu_runs`). A program's time is shared out by those
/// runs: `Δrun_time × Δruns on the CPU / Δrun_cnt`, its mean cost per run
/// times its runs there. The counts are exact, the per-run cost is the
/// program's mean over all CPUs (what bpf_stats can tell; a CPU whose runs
/// are dearer, e.g. more task switches to flush, is under-stated by that
/// much, and another over-stated, never the total). The divisor is the
/// larger of the kernel's run count and the per-CPU counts' sum (the two
/// are read a moment apart), so the CPUs together never get more than the
/// program's run time.
///
/// `None` without BPF, without run time (stats off: not measured is not
/// zero), and when a program that ran has no per-CPU runs in either sample
/// (a recording made before them): a figure missing some programs would
/// under-state the monitor.
pub(super) fn own_bpf_ns(
    ctx: &Ctx,
    prev: &RawSample,
    cur: &RawSample,
) -> Option<BTreeMap<u32, f64>> {
    if ctx.source != Source::Bpf {
        return None;
    }
    let c = cur.health.as_ref()?;
    if !c.programs.iter().any(|p| p.run_time_ns > 0) {
        return None;
    }
    let prev_progs: HashMap<&str, &ProgStat> = prev
        .health
        .iter()
        .flat_map(|h| &h.programs)
        .map(|p| (p.name.as_str(), p))
        .collect();
    let zero = ProgStat::default();
    let mut out: BTreeMap<u32, f64> = BTreeMap::new();
    for p in &c.programs {
        let q = prev_progs.get(p.name.as_str()).copied().unwrap_or(&zero);
        let dt = d(q.run_time_ns, p.run_time_ns);
        if dt == 0 {
            continue;
        }
        // A baseline that ran with stats on but has no per-CPU runs cannot
        // be subtracted from.
        if p.cpu_runs.is_empty() || (q.cpu_runs.is_empty() && q.run_cnt > 0) {
            return None;
        }
        let runs: Vec<u64> = p
            .cpu_runs
            .iter()
            .enumerate()
            .map(|(i, n)| d(q.cpu_runs.get(i).copied().unwrap_or(0), *n))
            .collect();
        let counted = runs.iter().fold(0u64, |s, x| s.saturating_add(*x));
        let divisor = d(q.run_cnt, p.run_cnt).max(counted);
        if divisor == 0 {
            continue;
        }
        for (cpu, n) in runs.iter().enumerate() {
            if *n == 0 {
                continue;
            }
            let Ok(cpu) = u32::try_from(cpu) else { break };
            let ns = fin(dt as f64 * *n as f64 / divisor as f64);
            *out.entry(cpu).or_default() += ns;
        }
    }
    Some(out)
}

pub(super) fn cpu_view(
    ctx: &Ctx,
    host: &HostInfo,
    cpu: u32,
    k: &CpuCalc,
    own_bpf: Option<&BTreeMap<u32, f64>>,
) -> CpuView {
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
    let mut band = 0.0;
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
        let charges = ctx.charges(&k.irq);
        v.hidden_pct = ctx.pct_ns(charges.hidden_ns);
        band = ctx.pct_ns(charges.band_ns);
        v.interruptions_per_s = ctx.rate(k.irq.interruptions() as f64);
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
        v.own_bpf_pct = own_bpf.map(|m| ctx.pct_ns(m.get(&cpu).copied().unwrap_or(0.0)));
    } else {
        // Without napi tracing, packets are what softnet_stat says this CPU
        // processed (backlog/RPS included).
        v.packets_per_s = ctx.rate(k.softnet.processed as f64);
        v.stolen_pct = v.irq_pct + v.soft_pct;
    }
    // Tasks' own work: non-idle time less interrupt work and its hidden cost.
    let busy = 100.0 - v.idle_pct - v.iowait_pct - v.steal_pct;
    v.true_pct = fin((busy - v.stolen_pct - v.hidden_pct).max(0.0));
    (v.true_pct_low, v.true_pct_high) = true_band(v.true_pct, band, v.hidden_pct, 0.0);
    v
}

pub(super) fn cpu_cost(k: &CpuCalc) -> CpuCost {
    CpuCost {
        net_rx_ns: k.net.net_rx_ns,
        packets: k.net.napi_work,
    }
}
