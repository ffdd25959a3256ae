//! Per-task interval figures: one thread's or process's counters over the
//! interval, and the task view (TOP%, TRUE%, STOLEN%, HIDDEN~%) built from
//! them under the regime's arithmetic (see the parent module).

use super::*;
use crate::model::traffic::TaskTraffic;

/// One thread's (or a whole process's) interval counters.
#[derive(Default, Clone)]
pub(super) struct TaskDelta {
    pub(super) ticks: u64,
    pub(super) on_cpu_ns: u64,
    pub(super) irq: IrqAcct,
    /// ProcOnly estimates of interrupt time in its context, ns.
    pub(super) est_hardirq_ns: f64,
    pub(super) est_stolen_ns: f64,
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

pub(super) fn is_ksoftirqd(t: &RawTask) -> bool {
    t.kthread && t.comm.starts_with("ksoftirqd/")
}

pub(super) fn task_delta(
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
        irq: irq_delta(p.and_then(|p| p.irq.as_deref()), c.irq.as_deref()),
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
pub(super) struct Meta<'a> {
    pub(super) pid: u32,
    pub(super) tid: u32,
    pub(super) is_process: bool,
    /// Names the row: its comm, command line, parent, state, CPU, cgroup.
    pub(super) leader: &'a RawTask,
    pub(super) nr_threads: u32,
    /// Cumulative utime + stime ticks of the row (TIME+): the leader's own
    /// unless the row sums threads without the kernel's process totals.
    pub(super) cpu_ticks: u64,
}

/// utime + stime, ticks.
pub(super) fn cpu_ticks(t: &RawTask) -> u64 {
    t.utime_ticks.saturating_add(t.stime_ticks)
}

pub(super) fn task_view(ctx: &Ctx, m: &Meta<'_>, td: &TaskDelta) -> TaskView {
    let on_cpu_pct = ctx.pct_ns(td.on_cpu_ns as f64);
    let mut v = TaskView {
        pid: m.pid,
        tid: m.tid,
        ppid: m.leader.ppid,
        is_process: m.is_process,
        comm: m.leader.comm.clone(),
        // Once per process: a thread row's process row has it.
        cmdline: if m.is_process {
            m.leader.cmdline.clone()
        } else {
            Vec::new()
        },
        uid: m.leader.uid,
        state: m.leader.state,
        nr_threads: m.nr_threads,
        kthread: m.leader.kthread,
        last_cpu: m.leader.last_cpu,
        affinity: m.leader.affinity.clone(),
        cgroup_id: m.leader.cgroup_id,
        start_ticks: m.leader.start_ticks,
        top_pct: ctx.pct_ns(ctx.ticks_ns(td.ticks)),
        on_cpu_pct,
        priority: m.leader.priority,
        nice: m.leader.nice,
        cpu_time_s: ctx.ticks_ns(m.cpu_ticks) / 1e9,
        virt_bytes: m.leader.mem.map(|x| x.virt),
        res_bytes: m.leader.mem.map(|x| x.res),
        shr_bytes: m.leader.mem.map(|x| x.shr),
        mem_pct: m.leader.mem.and_then(|x| ctx.mem_pct(x.res)),
        ..Default::default()
    };
    // Nothing is charged without BPF.
    let mut c = Charges::default();
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
            c = ctx.charges(&td.irq);
            v.hidden_pct = ctx.pct_ns(c.hidden_ns);
            v.rebilled_pct = ctx.pct_ns(c.rebilled_ns);
            if ctx.traffic {
                v.traffic = Some(TaskTraffic::from_delta(
                    &td.irq.sock,
                    ctx.dt_ns,
                    ctx.ipi_cost_ns,
                ));
            }
            v.interruptions_per_s = ctx.rate(td.irq.interruptions() as f64);
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
    let hidden_in_runtime_pct = ctx.pct_ns(c.hidden_in_runtime_ns);
    let band_in_runtime_pct = ctx.pct_ns(c.band_in_runtime_ns);
    let rebilled_band_pct = ctx.pct_ns(c.rebilled_band_ns);
    v.true_pct = fin(if ctx.irq_in_runtime() {
        (on_cpu_pct - v.stolen_pct - hidden_in_runtime_pct + v.rebilled_pct).max(0.0)
    } else {
        (on_cpu_pct + v.inline_pct - hidden_in_runtime_pct + v.rebilled_pct).max(0.0)
    });
    (v.true_pct_low, v.true_pct_high) = true_band(
        v.true_pct,
        band_in_runtime_pct,
        hidden_in_runtime_pct,
        rebilled_band_pct,
    );
    let band_pct = ctx.pct_ns(c.band_ns);
    v.hidden_pct_low = fin((v.hidden_pct - band_pct).max(0.0));
    v.hidden_pct_high = fin(v.hidden_pct + band_pct);
    v
}

/// Process rows summed from thread rows (samples without process totals):
/// interval figures, not counters, because the /proc-only interrupt
/// estimate of each thread depends on its own CPU. Cumulative process rows
/// are `RawSample::process_rows`.
pub(super) fn group_threads(ctx: &Ctx, cur: &RawSample, deltas: &[TaskDelta]) -> Vec<TaskView> {
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
                cpu_ticks: idx
                    .iter()
                    .fold(0u64, |n, &i| n.saturating_add(cpu_ticks(&cur.tasks[i]))),
            };
            Some(task_view(ctx, &m, &sum))
        })
        .collect()
}
