//! OpenMetrics / Prometheus text rendering of raw samples. Pure: samples in,
//! text out.
//!
//! Raw cumulative counters are exposed as counters (`*_seconds_total`,
//! `*_packets_total`) so Prometheus computes rates with `rate()` and a missed
//! scrape loses nothing. Cardinality is bounded: per CPU, per napi instance,
//! at most [`MAX_DEVICES`] devices, and only the top-N tasks by stolen time
//! in the last interval.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use crate::model::hidden::Basis;
use crate::model::raw::{
    CTX_INLINE, CTX_KSOFTIRQD, CTX_STOLEN, HostInfo, IrqAcct, NR_SOFTIRQS, RawSample, RawTask,
    Regime, SOFTIRQ_NAMES, Source,
};

/// Devices exported per scrape (busiest first): hosts with thousands of veths
/// must not explode the series count.
pub const MAX_DEVICES: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Info,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `application/openmetrics-text; version=1.0.0` (with `# UNIT`, `# EOF`).
    OpenMetrics,
    /// Prometheus text format 0.0.4, for `promtool check metrics` and old scrapers.
    Prometheus,
}

pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One metric family. `name` excludes `_total`/`_info`; for a family with a
/// unit the name ends in that unit, as OpenMetrics requires.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub unit: Option<&'static str>,
    pub kind: Kind,
    pub samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    pub(super) fn new(
        name: &'static str,
        kind: Kind,
        unit: Option<&'static str>,
        help: &'static str,
    ) -> Self {
        Family {
            name,
            help,
            unit,
            kind,
            samples: Vec::new(),
        }
    }
    pub(super) fn push(&mut self, labels: Vec<(&'static str, String)>, v: f64) {
        self.samples.push((labels, v));
    }

    /// Name of the sample lines.
    pub fn sample_name(&self) -> String {
        match self.kind {
            Kind::Counter => format!("{}_total", self.name),
            Kind::Info => format!("{}_info", self.name),
            Kind::Gauge => self.name.to_string(),
        }
    }
}

/// What to export.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Tasks exported (top-N by stolen time over the last interval).
    pub top_tasks: usize,
    /// Thread rows instead of processes.
    pub threads: bool,
    /// cgroups exported on their own (top-N by stolen time); the rest are
    /// summed into one `cgroup="other"` series.
    pub top_cgroups: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top_tasks: 20,
            threads: false,
            top_cgroups: 50,
        }
    }
}

fn secs_ns(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn stolen_ns(a: &IrqAcct) -> u64 {
    a.softirq_ns[CTX_STOLEN]
        .iter()
        .fold(a.hardirq_ns.saturating_add(a.sysvec_ns), |s, v| {
            s.saturating_add(*v)
        })
}

fn regime_label(r: Regime) -> &'static str {
    match r {
        Regime::IrqTimeAccounting => "irq_time_accounting",
        Regime::TickBased => "tick_based",
        Regime::Unknown => "unknown",
    }
}

/// A task row for export: a thread, or a process summing its threads.
#[derive(Default)]
struct TaskAgg {
    pid: u32,
    tid: u32,
    comm: String,
    utime: u64,
    stime: u64,
    on_cpu_ns: u64,
    irq: Option<IrqAcct>,
}

fn add_irq(into: &mut Option<IrqAcct>, a: &IrqAcct) {
    let t = into.get_or_insert_with(IrqAcct::default);
    t.hardirq_ns += a.hardirq_ns;
    t.hardirq_count += a.hardirq_count;
    t.sysvec_ns += a.sysvec_ns;
    t.sysvec_count += a.sysvec_count;
    t.timer_count += a.timer_count;
    t.ipi_count += a.ipi_count;
    t.softirq_stolen_count += a.softirq_stolen_count;
    for c in 0..t.softirq_ns.len() {
        for v in 0..NR_SOFTIRQS {
            t.softirq_ns[c][v] += a.softirq_ns[c][v];
        }
    }
    for v in 0..NR_SOFTIRQS {
        t.softirq_count[v] += a.softirq_count[v];
    }
}

fn aggregate(tasks: &[RawTask], threads: bool) -> BTreeMap<(u32, u32), TaskAgg> {
    let mut m: BTreeMap<(u32, u32), TaskAgg> = BTreeMap::new();
    for t in tasks {
        let key = if threads {
            (t.tgid, t.tid)
        } else {
            (t.tgid, t.tgid)
        };
        let e = m.entry(key).or_insert_with(|| TaskAgg {
            pid: t.tgid,
            tid: key.1,
            comm: t.comm.clone(),
            ..Default::default()
        });
        if t.tid == t.tgid {
            e.comm = t.comm.clone();
        }
        e.utime += t.utime_ticks;
        e.stime += t.stime_ticks;
        e.on_cpu_ns += t.on_cpu_ns;
        if let Some(a) = &t.irq {
            add_irq(&mut e.irq, a);
        }
    }
    m
}

/// Builds the metric families of `cur`; `prev` (the sample before) only
/// ranks tasks by their recent stolen time.
pub fn families(
    host: &HostInfo,
    prev: Option<&RawSample>,
    cur: &RawSample,
    opts: &Options,
) -> Vec<Family> {
    let tck = host.clk_tck.max(1) as f64;
    let mut out = Vec::new();

    let mut info = Family::new(
        "nettop_host",
        Kind::Info,
        None,
        "Host facts from the recording or collector",
    );
    info.push(
        vec![
            ("hostname", host.hostname.clone()),
            ("kernel", host.kernel.clone()),
            ("regime", regime_label(host.regime).to_string()),
            (
                "source",
                match cur.source {
                    Source::Bpf => "bpf",
                    Source::ProcOnly => "proc_only",
                }
                .to_string(),
            ),
        ],
        1.0,
    );
    out.push(info);
    let mut ts = Family::new(
        "nettop_sample_timestamp_seconds",
        Kind::Gauge,
        Some("seconds"),
        "Wall-clock time the sample was taken",
    );
    ts.push(vec![], cur.unix_ms as f64 / 1e3);
    out.push(ts);
    let mut ntasks = Family::new(
        "nettop_tasks",
        Kind::Gauge,
        None,
        "Threads seen in the sample",
    );
    ntasks.push(vec![], cur.tasks.len() as f64);
    out.push(ntasks);

    // The calibration HIDDEN~ rests on (per interruption, by class).
    let cal = host
        .calibration
        .as_ref()
        .filter(|_| cur.source == Source::Bpf);
    if let Some(c) = cal {
        let mut ch = Family::new(
            "nettop_calibration_hidden_seconds",
            Kind::Gauge,
            Some("seconds"),
            "Untraced cost of one interruption per class, and of a softirq run in an interrupt's tail (calibrated; basis measured or same_as_ipi)",
        );
        let mut cs = Family::new(
            "nettop_calibration_spread_seconds",
            Kind::Gauge,
            Some("seconds"),
            "Half the interquartile range of the per-interruption untraced cost",
        );
        for (class, k) in c.rows() {
            let basis = match k.basis {
                Basis::Measured => "measured",
                Basis::SameAsIpi => "same_as_ipi",
                Basis::NotMeasured => continue,
            };
            ch.push(
                vec![("class", class.to_string()), ("basis", basis.to_string())],
                k.hidden_ns / 1e9,
            );
            cs.push(vec![("class", class.to_string())], k.spread_ns / 1e9);
        }
        out.extend([ch, cs]);
    }

    // Per CPU.
    let mut online = Family::new(
        "nettop_cpu_online",
        Kind::Gauge,
        None,
        "1 if the CPU is online",
    );
    let mut cpu_s = Family::new(
        "nettop_cpu_seconds",
        Kind::Counter,
        Some("seconds"),
        "CPU time per mode from /proc/stat (tick-sampled unless regime is irq_time_accounting)",
    );
    let mut hard = Family::new(
        "nettop_cpu_traced_hardirq_seconds",
        Kind::Counter,
        Some("seconds"),
        "Device hardirq time traced by BPF",
    );
    let mut sysvec = Family::new(
        "nettop_cpu_traced_sysvec_seconds",
        Kind::Counter,
        Some("seconds"),
        "x86 system vector time (timer, IPIs) traced by BPF",
    );
    let mut soft = Family::new(
        "nettop_cpu_traced_softirq_seconds",
        Kind::Counter,
        Some("seconds"),
        "Softirq time traced by BPF per vector and context (stolen: run in an interrupted task; inline: raised and run by the task itself; ksoftirqd)",
    );
    let mut intr = Family::new(
        "nettop_cpu_interrupts",
        Kind::Counter,
        None,
        "Interruptions traced by BPF (hardirq: device IRQs, sysvec: system vectors)",
    );
    let mut chid = Family::new(
        "nettop_cpu_hidden_seconds",
        Kind::Counter,
        Some("seconds"),
        "Estimated untraced interrupt cost on this CPU: interruptions by class x calibrated cost",
    );
    let mut rx_s = Family::new(
        "nettop_cpu_net_rx_seconds",
        Kind::Counter,
        Some("seconds"),
        "Time in NET_RX softirq (net_rx_action), nested hardirqs removed",
    );
    let mut rx_n = Family::new(
        "nettop_cpu_net_rx_actions",
        Kind::Counter,
        None,
        "NET_RX softirq runs",
    );
    let mut rx_r = Family::new(
        "nettop_cpu_net_rx_restarts",
        Kind::Counter,
        None,
        "NET_RX re-raised from inside NET_RX (budget or time limit ran out)",
    );
    let mut rx_max = Family::new(
        "nettop_cpu_net_rx_max_seconds",
        Kind::Gauge,
        Some("seconds"),
        "Longest single NET_RX run since the collector started",
    );
    let mut polls = Family::new(
        "nettop_cpu_napi_polls",
        Kind::Counter,
        None,
        "napi polls on this CPU",
    );
    let mut pkts = Family::new(
        "nettop_cpu_napi_packets",
        Kind::Counter,
        None,
        "Packets processed by napi polls on this CPU",
    );
    let mut exh = Family::new(
        "nettop_cpu_napi_budget_exhausted",
        Kind::Counter,
        None,
        "napi polls that used their whole budget",
    );
    let mut sn_p = Family::new(
        "nettop_softnet_processed_packets",
        Kind::Counter,
        None,
        "Packets processed (/proc/net/softnet_stat)",
    );
    let mut sn_d = Family::new(
        "nettop_softnet_dropped_packets",
        Kind::Counter,
        None,
        "Packets dropped, backlog full (/proc/net/softnet_stat)",
    );
    let mut sn_s = Family::new(
        "nettop_softnet_time_squeeze",
        Kind::Counter,
        None,
        "NET_RX runs that ran out of budget or time (/proc/net/softnet_stat)",
    );
    let mut sn_r = Family::new(
        "nettop_softnet_rps_received",
        Kind::Counter,
        None,
        "RPS IPIs received (/proc/net/softnet_stat)",
    );
    for c in &cur.cpus {
        let cpu = || vec![("cpu", c.cpu.to_string())];
        online.push(cpu(), if c.online { 1.0 } else { 0.0 });
        if let Some(t) = &c.times {
            for (mode, v) in [
                ("user", t.user),
                ("nice", t.nice),
                ("system", t.system),
                ("idle", t.idle),
                ("iowait", t.iowait),
                ("irq", t.irq),
                ("softirq", t.softirq),
                ("steal", t.steal),
            ] {
                cpu_s.push(
                    vec![("cpu", c.cpu.to_string()), ("mode", mode.to_string())],
                    v as f64 / tck,
                );
            }
        }
        if let Some(a) = &c.irq {
            hard.push(cpu(), secs_ns(a.hardirq_ns));
            sysvec.push(cpu(), secs_ns(a.sysvec_ns));
            for (ctx, cname) in [
                (CTX_STOLEN, "stolen"),
                (CTX_INLINE, "inline"),
                (CTX_KSOFTIRQD, "ksoftirqd"),
            ] {
                for (v, vname) in SOFTIRQ_NAMES.iter().enumerate() {
                    // Only vectors that ever ran: cumulative, so a series
                    // never disappears once it exists.
                    let ns = a.softirq_ns[ctx][v];
                    if ns > 0 {
                        soft.push(
                            vec![
                                ("cpu", c.cpu.to_string()),
                                ("vector", vname.to_ascii_lowercase()),
                                ("context", cname.to_string()),
                            ],
                            secs_ns(ns),
                        );
                    }
                }
            }
            intr.push(
                vec![("cpu", c.cpu.to_string()), ("kind", "hardirq".into())],
                a.hardirq_count as f64,
            );
            intr.push(
                vec![("cpu", c.cpu.to_string()), ("kind", "sysvec".into())],
                a.sysvec_count as f64,
            );
            if let Some(cal) = cal {
                chid.push(cpu(), cal.hidden_ns(a) / 1e9);
            }
        }
        if let Some(n) = &c.net {
            rx_s.push(cpu(), secs_ns(n.net_rx_ns));
            rx_n.push(cpu(), n.net_rx_actions as f64);
            rx_r.push(cpu(), n.net_rx_restarts as f64);
            rx_max.push(cpu(), secs_ns(n.net_rx_max_ns));
            polls.push(cpu(), n.napi_polls as f64);
            pkts.push(cpu(), n.napi_work as f64);
            exh.push(cpu(), n.napi_budget_exhausted as f64);
        }
        if let Some(s) = &c.softnet {
            sn_p.push(cpu(), s.processed as f64);
            sn_d.push(cpu(), s.dropped as f64);
            sn_s.push(cpu(), s.time_squeeze as f64);
            sn_r.push(cpu(), s.received_rps as f64);
        }
    }
    out.extend([
        online, cpu_s, hard, sysvec, soft, intr, chid, rx_s, rx_n, rx_r, rx_max, polls, pkts, exh,
        sn_p, sn_d, sn_s, sn_r,
    ]);

    // napi instances, summed over the CPUs that polled them.
    let mut napi: BTreeMap<(String, u32), (u64, u64, u64)> = BTreeMap::new();
    for n in &cur.napi {
        let e = napi.entry((n.dev.clone(), n.napi_id)).or_default();
        e.0 += n.polls;
        e.1 += n.work;
        e.2 += n.budget_exhausted;
    }
    let mut np = Family::new(
        "nettop_napi_polls",
        Kind::Counter,
        None,
        "Polls per napi instance",
    );
    let mut nw = Family::new(
        "nettop_napi_packets",
        Kind::Counter,
        None,
        "Packets processed per napi instance",
    );
    let mut ne = Family::new(
        "nettop_napi_budget_exhausted",
        Kind::Counter,
        None,
        "Polls that used their whole budget per napi instance",
    );
    for ((dev, id), (p, w, e)) in &napi {
        let l = || vec![("device", dev.clone()), ("napi_id", id.to_string())];
        np.push(l(), *p as f64);
        nw.push(l(), *w as f64);
        ne.push(l(), *e as f64);
    }
    out.extend([np, nw, ne]);

    // Devices, busiest first, bounded.
    let mut devs: Vec<_> = cur.devices.iter().collect();
    devs.sort_by(|a, b| {
        (b.rx_bytes.saturating_add(b.tx_bytes))
            .cmp(&a.rx_bytes.saturating_add(a.tx_bytes))
            .then(a.name.cmp(&b.name))
    });
    devs.truncate(MAX_DEVICES);
    devs.sort_by(|a, b| a.name.cmp(&b.name));
    let mut rb = Family::new(
        "nettop_network_receive_bytes",
        Kind::Counter,
        Some("bytes"),
        "Bytes received per device",
    );
    let mut tb = Family::new(
        "nettop_network_transmit_bytes",
        Kind::Counter,
        Some("bytes"),
        "Bytes transmitted per device",
    );
    let mut rp = Family::new(
        "nettop_network_receive_packets",
        Kind::Counter,
        None,
        "Packets received per device",
    );
    let mut tp = Family::new(
        "nettop_network_transmit_packets",
        Kind::Counter,
        None,
        "Packets transmitted per device",
    );
    let mut rd = Family::new(
        "nettop_network_receive_dropped_packets",
        Kind::Counter,
        None,
        "Received packets dropped per device",
    );
    for d in devs {
        let l = || vec![("device", d.name.clone())];
        rb.push(l(), d.rx_bytes as f64);
        tb.push(l(), d.tx_bytes as f64);
        rp.push(l(), d.rx_packets as f64);
        tp.push(l(), d.tx_packets as f64);
        rd.push(l(), d.rx_dropped as f64);
    }
    out.extend([rb, tb, rp, tp, rd]);

    // Tasks: top-N by stolen time over the last interval (cumulative when
    // there is no previous sample), then on-CPU time.
    let cur_t = aggregate(&cur.tasks, opts.threads);
    let prev_t = prev.map(|p| aggregate(&p.tasks, opts.threads));
    let mut ranked: Vec<(&TaskAgg, u64, u64)> = cur_t
        .iter()
        .map(|(k, t)| {
            let p = prev_t.as_ref().and_then(|m| m.get(k));
            let st = t.irq.as_ref().map(stolen_ns).unwrap_or(0);
            let pst = p.and_then(|p| p.irq.as_ref()).map(stolen_ns).unwrap_or(0);
            let oc = t
                .on_cpu_ns
                .saturating_sub(p.map(|p| p.on_cpu_ns).unwrap_or(0));
            (t, st.saturating_sub(pst), oc)
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(b.2.cmp(&a.2))
            .then((a.0.pid, a.0.tid).cmp(&(b.0.pid, b.0.tid)))
    });
    ranked.truncate(opts.top_tasks);
    ranked.sort_by_key(|r| (r.0.pid, r.0.tid));
    let mut tcpu = Family::new(
        "nettop_task_cpu_seconds",
        Kind::Counter,
        Some("seconds"),
        "CPU time as top sees it (utime/stime ticks), top-N tasks by stolen time",
    );
    let mut toncpu = Family::new(
        "nettop_task_on_cpu_seconds",
        Kind::Counter,
        Some("seconds"),
        "Scheduler on-CPU time (schedstat), top-N tasks by stolen time",
    );
    let mut tstolen = Family::new(
        "nettop_task_stolen_seconds",
        Kind::Counter,
        Some("seconds"),
        "Hardirq, system vector and softirq time run in the task's context for others, top-N tasks",
    );
    let mut thidden = Family::new(
        "nettop_task_hidden_seconds",
        Kind::Counter,
        Some("seconds"),
        "Estimated untraced cost of the interruptions in the task's context (calibrated), top-N tasks",
    );
    let mut tinline = Family::new(
        "nettop_task_softirq_inline_seconds",
        Kind::Counter,
        Some("seconds"),
        "Softirq time the task raised and ran itself, top-N tasks",
    );
    let mut tint = Family::new(
        "nettop_task_interruptions",
        Kind::Counter,
        None,
        "Hardirqs and system vectors that interrupted the task, top-N tasks",
    );
    for (t, _, _) in &ranked {
        let l = || {
            let mut v = vec![("pid", t.pid.to_string())];
            if opts.threads {
                v.push(("tid", t.tid.to_string()));
            }
            v.push(("comm", t.comm.clone()));
            v
        };
        let mut lu = l();
        lu.push(("mode", "user".into()));
        tcpu.push(lu, t.utime as f64 / tck);
        let mut ls = l();
        ls.push(("mode", "system".into()));
        tcpu.push(ls, t.stime as f64 / tck);
        toncpu.push(l(), secs_ns(t.on_cpu_ns));
        if let Some(a) = &t.irq {
            tstolen.push(l(), secs_ns(stolen_ns(a)));
            if let Some(cal) = cal {
                thidden.push(l(), cal.hidden_ns(a) / 1e9);
            }
            let inline = a.softirq_ns[CTX_INLINE].iter().sum::<u64>();
            tinline.push(l(), secs_ns(inline));
            tint.push(l(), (a.hardirq_count + a.sysvec_count) as f64);
        }
    }
    out.extend([tcpu, toncpu, tstolen, thidden, tinline, tint]);
    out.extend(super::cgroup_metrics::families(
        host,
        prev,
        cur,
        opts.top_cgroups,
    ));

    // Collector health.
    if let Some(h) = &cur.health {
        let one = |name, help, v: f64, unit| {
            let mut f = Family::new(name, Kind::Counter, unit, help);
            f.push(vec![], v);
            f
        };
        out.push(one(
            "nettop_bpf_map_full",
            "Interrupt records lost because the task map was full",
            h.map_full as f64,
            None,
        ));
        out.push(one(
            "nettop_bpf_map_full_lost_seconds",
            "Interrupt time lost because the task map was full",
            secs_ns(h.map_full_ns),
            Some("seconds"),
        ));
        out.push(one(
            "nettop_bpf_napi_map_full",
            "napi records lost because the device table was full",
            h.napi_map_full as f64,
            None,
        ));
        out.push(one(
            "nettop_bpf_unmatched_exits",
            "Exit events without a matching entry (not counted)",
            h.unmatched_exits as f64,
            None,
        ));
        out.push(one(
            "nettop_bpf_recursion_misses",
            "BPF programs skipped because another ran on the CPU",
            h.recursion_misses as f64,
            None,
        ));
        let mut pr = Family::new(
            "nettop_bpf_program_run_seconds",
            Kind::Counter,
            Some("seconds"),
            "Run time of nettop's BPF programs (with --bpf-stats)",
        );
        let mut pc = Family::new(
            "nettop_bpf_program_runs",
            Kind::Counter,
            None,
            "Runs of nettop's BPF programs (with --bpf-stats)",
        );
        for p in &h.programs {
            pr.push(vec![("program", p.name.clone())], secs_ns(p.run_time_ns));
            pc.push(vec![("program", p.name.clone())], p.run_cnt as f64);
        }
        out.extend([pr, pc]);
    }
    out
}

fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

fn write_sample(out: &mut String, name: &str, labels: &[(&str, String)], v: f64, ts: Option<f64>) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, val)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", escape(val));
        }
        out.push('}');
    }
    let _ = write!(out, " {}", fmt_value(v));
    if let Some(t) = ts {
        let _ = write!(out, " {t:.3}");
    }
    out.push('\n');
}

fn write_meta(out: &mut String, f: &Family, flavor: Flavor) {
    match flavor {
        Flavor::OpenMetrics => {
            let kind = match f.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Info => "info",
            };
            let _ = writeln!(out, "# TYPE {} {kind}", f.name);
            if let Some(u) = f.unit {
                let _ = writeln!(out, "# UNIT {} {u}", f.name);
            }
            let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        }
        Flavor::Prometheus => {
            let kind = match f.kind {
                Kind::Counter => "counter",
                Kind::Gauge | Kind::Info => "gauge",
            };
            let n = f.sample_name();
            let _ = writeln!(out, "# HELP {n} {}", f.help);
            let _ = writeln!(out, "# TYPE {n} {kind}");
        }
    }
}

/// Renders one scrape. Families without samples are left out.
pub fn render(fams: &[Family], flavor: Flavor) -> String {
    let mut out = String::new();
    for f in fams.iter().filter(|f| !f.samples.is_empty()) {
        write_meta(&mut out, f, flavor);
        let name = f.sample_name();
        for (l, v) in &f.samples {
            write_sample(&mut out, &name, l, *v, None);
        }
    }
    if flavor == Flavor::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// Accumulates many samples into one timestamped OpenMetrics document (as
/// `promtool tsdb create-blocks-from openmetrics` backfills): each family's
/// lines stay together and each series' points are consecutive, in time
/// order, as OpenMetrics requires.
#[derive(Default)]
pub struct Series {
    order: Vec<&'static str>,
    fams: HashMap<&'static str, (Family, BTreeMap<String, String>)>,
}

impl Series {
    pub fn add(&mut self, fams: Vec<Family>, unix_ms: u64) {
        let ts = unix_ms as f64 / 1e3;
        for f in fams {
            let name = f.sample_name();
            let entry = self.fams.entry(f.name).or_insert_with(|| {
                self.order.push(f.name);
                (
                    Family {
                        samples: Vec::new(),
                        ..f.clone()
                    },
                    BTreeMap::new(),
                )
            });
            for (l, v) in &f.samples {
                let mut key = String::new();
                write_sample(&mut key, &name, l, 0.0, None);
                let mut line = String::new();
                write_sample(&mut line, &name, l, *v, Some(ts));
                entry.1.entry(key).or_default().push_str(&line);
            }
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for n in &self.order {
            if let Some((f, series)) = self.fams.get(n)
                && !series.is_empty()
            {
                write_meta(&mut out, f, Flavor::OpenMetrics);
                for lines in series.values() {
                    out.push_str(lines);
                }
            }
        }
        out.push_str("# EOF\n");
        out
    }
}
