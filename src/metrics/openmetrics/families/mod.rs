//! The metric families as a table: name, type, unit, help and the function
//! that reads its samples from a [`Scrape`]. A family is added by adding a
//! row; figures the model derives (stolen time, interruptions, softirq
//! time per context, hidden cost) come from the model's own methods.
//! Per-CPU rows also say how they fold into NUMA nodes, so
//! `--metrics-cpu per-node` cannot forget a family or fold one wrongly.

mod cgroups;
mod netcost;
mod node;
mod scrape;

use super::{CpuSeries, Family, Kind, Options, RecordingHealth};
use crate::sample::{
    CTX_INLINE, CTX_KSOFTIRQD, CTX_STOLEN, HostInfo, RawSample, SOFTIRQ_NAMES, Source,
};

use scrape::{
    Scrape, health, per_cpu, per_cpu_irq, per_cpu_net, per_cpu_softnet, per_device, per_napi,
    per_program, per_task, secs,
};

type Labels = Vec<(&'static str, String)>;
type Samples = Vec<(Labels, f64)>;
type Read = fn(&Scrape, &mut Samples);

/// How a per-CPU family becomes per-node (`--metrics-cpu per-node`): the
/// `cpu` label is replaced by `node`, and the node's CPUs are folded.
#[derive(Clone, Copy)]
enum Fold {
    /// Not a per-CPU family: the same in both modes.
    No,
    /// Counters, and counts such as online CPUs: the node's CPUs summed.
    Sum,
    /// A maximum: the largest of the node's CPUs.
    Max,
    /// A ratio, read per node by its own reader: the node's totals
    /// divided, not an average of its CPUs' ratios.
    Read(Read),
}

/// One row of the table.
struct Def {
    kind: Kind,
    name: &'static str,
    unit: Option<&'static str>,
    help: &'static str,
    fold: Fold,
    samples: Read,
}

const fn def(
    kind: Kind,
    name: &'static str,
    unit: Option<&'static str>,
    help: &'static str,
    samples: Read,
) -> Def {
    cpu(kind, name, unit, help, Fold::No, samples)
}

/// A row with a `cpu` label, and how it folds into nodes.
const fn cpu(
    kind: Kind,
    name: &'static str,
    unit: Option<&'static str>,
    help: &'static str,
    fold: Fold,
    samples: Read,
) -> Def {
    Def {
        kind,
        name,
        unit,
        help,
        fold,
        samples,
    }
}

use Fold::{Max, Sum};
use Kind::{Counter, Gauge, Info};
const S: Option<&str> = Some("seconds");
const B: Option<&str> = Some("bytes");
const NO: Option<&str> = None;

/// In output order, one family per line: type, name, unit, help, and what
/// reads its samples (readers longer than a cell are named, below).
/// Families without samples are left out when rendered.
#[rustfmt::skip]
const FAMILIES: &[Def] = &[
    def(Info, "nettop_host", NO, "Host facts from the recording or collector", host),
    def(Gauge, "nettop_sample_timestamp_seconds", S, "Wall-clock time the sample was taken", |s, o| o.push((vec![], s.cur.unix_ms as f64 / 1e3))),
    def(Gauge, "nettop_tasks", NO, "Threads seen in the sample", |s, o| o.push((vec![], s.cur.tasks.len() as f64))),
    // The calibration HIDDEN~ rests on (per interruption, by class).
    def(Gauge, "nettop_calibration_hidden_seconds", S, "Untraced cost of one interruption per class, and of a softirq run in an interrupt's tail (calibrated; basis measured or same_as_ipi)", calibration_hidden),
    def(Gauge, "nettop_calibration_spread_seconds", S, "Half the interquartile range of the per-interruption untraced cost", calibration_spread),
    def(Gauge, "nettop_calibration_disturbed", NO, "1 when the host disturbed the calibration (a class's spread beyond 8 % of its cost): HIDDEN~ and TRUE may be a busy moment's, their band is wider", |s, o| o.extend(s.cal.map(|c| (vec![], if c.disturbed() { 1.0 } else { 0.0 })))),
    // Per CPU, or per NUMA node (--metrics-cpu per-node).
    cpu(Gauge, "nettop_cpu_online", NO, "1 if the CPU is online; per node: how many of its CPUs are", Sum, |s, o| per_cpu(s, o, |c| Some(if c.online { 1.0 } else { 0.0 }))),
    cpu(Counter, "nettop_cpu_seconds", S, "CPU time per mode from /proc/stat (tick-sampled unless regime is irq_time_accounting)", Sum, cpu_seconds),
    cpu(Counter, "nettop_cpu_traced_hardirq_seconds", S, "Device hardirq time traced by BPF", Sum, |s, o| per_cpu_irq(s, o, |a| secs(a.hardirq_ns))),
    cpu(Counter, "nettop_cpu_traced_sysvec_seconds", S, "x86 system vector time (timer, IPIs) traced by BPF", Sum, |s, o| per_cpu_irq(s, o, |a| secs(a.sysvec_ns))),
    cpu(Counter, "nettop_cpu_traced_softirq_seconds", S, "Softirq time traced by BPF per vector and context (stolen: run in an interrupted task; inline: raised and run by the task itself; ksoftirqd)", Sum, cpu_traced_softirq),
    cpu(Counter, "nettop_cpu_interruptions", NO, "Interruptions traced by BPF (hardirq: device IRQs, sysvec: system vectors)", Sum, cpu_interruptions),
    cpu(Counter, "nettop_cpu_hidden_seconds", S, "Estimated untraced interrupt cost: interruptions by class x calibrated cost", Sum, cpu_hidden),
    cpu(Counter, "nettop_cpu_hidden_band_seconds", S, "How far nettop_cpu_hidden_seconds may be off either way (half its band: drift since the calibration, its disturbance, classes charged another's cost)", Sum, |s, o| if let Some(cal) = s.cal { per_cpu_irq(s, o, |a| cal.hidden_band_ns(a, false) / 1e9) }),
    cpu(Counter, "nettop_cpu_net_rx_seconds", S, "Time in NET_RX softirq (net_rx_action), nested hardirqs removed", Sum, |s, o| per_cpu_net(s, o, |n| secs(n.net_rx_ns))),
    cpu(Counter, "nettop_cpu_net_rx_split_seconds", S, "NET_RX time, and the RPS IPIs that brought its packets, by what the runs did (bucket: delivered to a read socket, unread, dropped, forwarded, xdp, steered by RPS, no_socket); none where traffic is not counted", Sum, cpu_rx_split),
    cpu(Counter, "nettop_cpu_net_rx_actions", NO, "NET_RX softirq runs", Sum, |s, o| per_cpu_net(s, o, |n| n.net_rx_actions as f64)),
    cpu(Counter, "nettop_cpu_net_rx_restarts", NO, "NET_RX re-raised from inside NET_RX (budget or time limit ran out)", Sum, |s, o| per_cpu_net(s, o, |n| n.net_rx_restarts as f64)),
    cpu(Gauge, "nettop_cpu_net_rx_max_seconds", S, "Longest single NET_RX run since the collector started (per node: on any of its CPUs)", Max, |s, o| per_cpu_net(s, o, |n| secs(n.net_rx_max_ns))),
    cpu(Counter, "nettop_cpu_napi_polls", NO, "napi polls on the CPU", Sum, |s, o| per_cpu_net(s, o, |n| n.napi_polls as f64)),
    cpu(Counter, "nettop_cpu_napi_packets", NO, "Packets processed by napi polls on the CPU", Sum, |s, o| per_cpu_net(s, o, |n| n.napi_work as f64)),
    cpu(Counter, "nettop_cpu_napi_budget_exhausted", NO, "napi polls that used their whole budget", Sum, |s, o| per_cpu_net(s, o, |n| n.napi_budget_exhausted as f64)),
    cpu(Counter, "nettop_softnet_processed_packets", NO, "Packets processed (/proc/net/softnet_stat)", Sum, |s, o| per_cpu_softnet(s, o, |n| n.processed as f64)),
    cpu(Counter, "nettop_softnet_dropped_packets", NO, "Packets dropped, backlog full (/proc/net/softnet_stat)", Sum, |s, o| per_cpu_softnet(s, o, |n| n.dropped as f64)),
    cpu(Counter, "nettop_softnet_time_squeeze", NO, "NET_RX runs that ran out of budget or time (/proc/net/softnet_stat)", Sum, |s, o| per_cpu_softnet(s, o, |n| n.time_squeeze as f64)),
    cpu(Counter, "nettop_softnet_rps_received", NO, "RPS IPIs received (/proc/net/softnet_stat)", Sum, |s, o| per_cpu_softnet(s, o, |n| n.received_rps as f64)),
    // napi instances, summed over the CPUs that polled them.
    def(Counter, "nettop_napi_polls", NO, "Polls per napi instance", |s, o| per_napi(s, o, |n| n.polls)),
    def(Counter, "nettop_napi_packets", NO, "Packets processed per napi instance", |s, o| per_napi(s, o, |n| n.work)),
    def(Counter, "nettop_napi_budget_exhausted", NO, "Polls that used their whole budget per napi instance", |s, o| per_napi(s, o, |n| n.budget_exhausted)),
    // Devices, busiest first, bounded.
    def(Counter, "nettop_network_receive_bytes", B, "Bytes received per device", |s, o| per_device(s, o, |d| d.rx_bytes)),
    def(Counter, "nettop_network_transmit_bytes", B, "Bytes transmitted per device", |s, o| per_device(s, o, |d| d.tx_bytes)),
    def(Counter, "nettop_network_receive_packets", NO, "Packets received per device", |s, o| per_device(s, o, |d| d.rx_packets)),
    def(Counter, "nettop_network_transmit_packets", NO, "Packets transmitted per device", |s, o| per_device(s, o, |d| d.tx_packets)),
    def(Counter, "nettop_network_receive_dropped_packets", NO, "Received packets dropped per device", |s, o| per_device(s, o, |d| d.rx_dropped)),
    // Tasks: top-N by stolen time over the last interval.
    def(Counter, "nettop_task_cpu_seconds", S, "CPU time as top sees it (utime/stime ticks), top-N tasks by stolen time", task_cpu_seconds),
    def(Counter, "nettop_task_on_cpu_seconds", S, "Scheduler on-CPU time (schedstat), top-N tasks by stolen time", |s, o| per_task(s, o, |t| Some(secs(t.on_cpu_ns)))),
    def(Counter, "nettop_task_stolen_seconds", S, "Hardirq, system vector and softirq time run in the task's context for others, top-N tasks", |s, o| per_task(s, o, |t| t.irq.as_ref().map(|a| secs(a.stolen_ns())))),
    def(Counter, "nettop_task_hidden_seconds", S, "Estimated untraced cost of the interruptions in the task's context (calibrated), top-N tasks", task_hidden),
    def(Counter, "nettop_task_hidden_band_seconds", S, "How far nettop_task_hidden_seconds and nettop_task_rebilled_seconds may be off either way, added up: half the band the task's true CPU lies in (calibrated), top-N tasks", |s, o| if let Some(cal) = s.cal { per_task(s, o, |t| t.irq.as_ref().map(|a| (cal.hidden_band_ns(a, false) + cal.rebilled_band_ns(a)) / 1e9)) }),
    def(Counter, "nettop_task_rebilled_seconds", S, "CPU time the kernel billed to the threads the task's reschedule IPIs woke though it was the task's (calibrated; TRUE = on-CPU - stolen - hidden + rebilled), top-N tasks", task_rebilled),
    def(Counter, "nettop_task_softirq_inline_seconds", S, "Softirq time the task raised and ran itself, top-N tasks", |s, o| per_task(s, o, |t| t.irq.as_ref().map(|a| secs(a.softirq_ctx_ns(CTX_INLINE))))),
    def(Counter, "nettop_task_interruptions", NO, "Hardirqs and system vectors that interrupted the task, top-N tasks", |s, o| per_task(s, o, |t| t.irq.as_ref().map(|a| a.interruptions() as f64))),
    def(Counter, "nettop_task_caused_seconds", S, "NET_RX time spent delivering to the task's sockets, on any CPU and in any task's context (its share of each run, per packet), top-N tasks; none where traffic is not counted", |s, o| task_sock(s, o, |a| secs(a.caused_ns))),
    def(Counter, "nettop_task_socket_receive_bytes", B, "Bytes the task's receive calls took from inet sockets, top-N tasks; none where traffic is not counted", |s, o| task_sock(s, o, |a| a.rx_bytes_total() as f64)),
    def(Counter, "nettop_task_socket_transmit_bytes", B, "Bytes the task's send calls gave to inet sockets, top-N tasks; none where traffic is not counted", |s, o| task_sock(s, o, |a| a.tx_bytes_total() as f64)),
    def(Gauge, "nettop_task_resident_bytes", B, "Resident memory (RES: anonymous, file and shmem pages, as /proc/PID/statm counts them; a thread has its process's), top-N tasks; none for a task without an address space", |s, o| per_task(s, o, |t| t.res.map(|b| b as f64))),
    // Collector health.
    def(Counter, "nettop_bpf_map_full", NO, "Interrupt records lost because the task map was full", |s, o| health(s, o, |h| h.map_full as f64)),
    def(Counter, "nettop_bpf_map_full_lost_seconds", S, "Interrupt time lost because the task map was full", |s, o| health(s, o, |h| secs(h.map_full_ns))),
    def(Counter, "nettop_bpf_napi_map_full", NO, "napi records lost because the device table was full", |s, o| health(s, o, |h| h.napi_map_full as f64)),
    def(Counter, "nettop_bpf_unmatched_exits", NO, "Exit events without a matching entry (not counted)", |s, o| health(s, o, |h| h.unmatched_exits as f64)),
    def(Counter, "nettop_bpf_recursion_misses", NO, "BPF programs skipped because another ran on the CPU", |s, o| health(s, o, |h| h.recursion_misses as f64)),
    def(Counter, "nettop_bpf_program_run_seconds", S, "Run time of nettop's BPF programs (with --bpf-stats)", |s, o| per_program(s, o, |p| secs(p.run_time_ns))),
    def(Counter, "nettop_bpf_program_runs", NO, "Runs of nettop's BPF programs (with --bpf-stats)", |s, o| per_program(s, o, |p| p.run_cnt as f64)),
    // The recording beside the endpoint (--record with --serve).
    def(Gauge, "nettop_recording_paused", NO, "1 while a disk fault (full, quota, read-only, I/O error) keeps the recording from writing; it resumes on its own", |s, o| recording(s, o, |r| f64::from(u8::from(r.paused)))),
    def(Counter, "nettop_recording_dropped_samples", NO, "Snapshots not recorded because the recording was paused", |s, o| recording(s, o, |r| r.dropped_samples as f64)),
    def(Counter, "nettop_recording_write_errors", NO, "Writes to the recording that failed, by reason (no_space, quota, read_only, io_error)", recording_write_errors),
    cpu(Gauge, "nettop_cpu_own_bpf_ratio", NO, "nettop's own BPF run time on the CPU over the last interval, fraction of the CPU (with --bpf-stats): each program's run time shared out by its runs there (per node: summed over its CPUs)", Sum, cpu_own_bpf),
    // The cost of a received packet over the last interval (model::cost).
    def(Gauge, "nettop_net_rx_per_packet_seconds", S, "NET_RX softirq time per packet over the last interval, all CPUs", netcost::host_per_packet),
    def(Gauge, "nettop_net_rx_per_byte_seconds", S, "NET_RX softirq time per byte received by all devices over the last interval (x 1.25e8: CPUs busy per Gbit/s)", netcost::host_per_byte),
    def(Info, "nettop_net_rx_per_byte_unknown", NO, "Present when nettop_net_rx_per_byte_seconds is unknown although NET_RX time was measured: the device counters leave out devices (cause: netns_denied, netns_failed, links_left_out, unreadable)", netcost::host_per_byte_unknown),
    cpu(Gauge, "nettop_cpu_net_rx_per_packet_seconds", S, "NET_RX softirq time per packet polled on the CPU (per node: its NET_RX time over its packets) over the last interval", Fold::Read(netcost::node_per_packet), netcost::cpu_per_packet),
    def(Gauge, "nettop_device_net_rx_per_packet_seconds", S, "NET_RX time per packet polled by the device's napi instances over the last interval", netcost::device_per_packet),
    def(Gauge, "nettop_device_net_rx_per_byte_seconds", S, "NET_RX time charged to the device per byte it received over the last interval (x 1.25e8: CPUs busy per Gbit/s)", netcost::device_per_byte),
    // Device configuration from the topology (model::devconf).
    def(Info, "nettop_device_xdp", NO, "XDP attachment per device: mode and program id (0 when none)", netcost::xdp),
    def(Info, "nettop_device_rx_queue", NO, "RX queue steering: RPS CPUs, IRQ and where it lands", netcost::rx_queue),
    def(Gauge, "nettop_device_rx_queue_rss_weight", NO, "RSS indirection table entries pointing at the queue", netcost::rss_weight),
    def(Info, "nettop_device_flow_rule", NO, "Flow-steering (ntuple) rule: match and action", netcost::flow_rule),
];

// Readers longer than a table cell, in table order.

fn host(s: &Scrape, o: &mut Samples) {
    let source = match s.cur.source {
        Source::Bpf => "bpf",
        Source::ProcOnly => "proc_only",
    };
    let mut labels = vec![("hostname", s.host.hostname.clone())];
    // Only in Kubernetes (NODE_NAME): elsewhere the series stay as they were.
    if !s.host.node_name.is_empty() {
        labels.push(("node_name", s.host.node_name.clone()));
    }
    labels.extend([
        ("kernel", s.host.kernel.clone()),
        ("regime", s.host.regime.name().to_string()),
        ("source", source.to_string()),
    ]);
    o.push((labels, 1.0));
}

fn recording(s: &Scrape, o: &mut Samples, f: impl Fn(&RecordingHealth) -> f64) {
    if let Some(r) = s.recording {
        o.push((vec![], f(r)));
    }
}

fn recording_write_errors(s: &Scrape, o: &mut Samples) {
    for (reason, n) in s.recording.iter().flat_map(|r| &r.write_errors) {
        o.push((vec![("reason", reason.to_string())], *n as f64));
    }
}

fn calibration_hidden(s: &Scrape, o: &mut Samples) {
    for (class, k, basis) in s.calibration_rows() {
        let l = vec![("class", class.to_string()), ("basis", basis.to_string())];
        o.push((l, k.hidden_ns / 1e9));
    }
}

fn calibration_spread(s: &Scrape, o: &mut Samples) {
    for (class, k, _) in s.calibration_rows() {
        o.push((vec![("class", class.to_string())], k.spread_ns / 1e9));
    }
}

fn cpu_seconds(s: &Scrape, o: &mut Samples) {
    for c in &s.cur.cpus {
        let Some(t) = &c.times else { continue };
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
            let l = vec![("cpu", c.cpu.to_string()), ("mode", mode.to_string())];
            o.push((l, v as f64 / s.tck));
        }
    }
}

fn cpu_traced_softirq(s: &Scrape, o: &mut Samples) {
    for c in &s.cur.cpus {
        let Some(a) = &c.irq else { continue };
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
                    let l = vec![
                        ("cpu", c.cpu.to_string()),
                        ("vector", vname.to_ascii_lowercase()),
                        ("context", cname.to_string()),
                    ];
                    o.push((l, secs(ns)));
                }
            }
        }
    }
}

fn cpu_interruptions(s: &Scrape, o: &mut Samples) {
    for c in &s.cur.cpus {
        let Some(a) = &c.irq else { continue };
        for (kind, n) in [("hardirq", a.hardirq_count), ("sysvec", a.sysvec_count)] {
            let l = vec![("cpu", c.cpu.to_string()), ("kind", kind.into())];
            o.push((l, n as f64));
        }
    }
}

fn cpu_hidden(s: &Scrape, o: &mut Samples) {
    if let Some(cal) = s.cal {
        per_cpu_irq(s, o, |a| cal.hidden_ns(a) / 1e9);
    }
}

/// From the model's CPU rows over the last interval ([`Scrape::net`]): a
/// gauge, not a counter, because the per-CPU split exists only per
/// interval (a program's time is shared out at its mean cost per run in
/// that interval, and a cumulative share could go backwards when that
/// mean moves). CPUs without the figure (BPF stats off) have no series.
fn cpu_own_bpf(s: &Scrape, o: &mut Samples) {
    for c in s.net.iter().flat_map(|f| &f.cpus) {
        if let Some(v) = c.own_bpf_pct {
            o.push((vec![("cpu", c.cpu.to_string())], v / 100.0));
        }
    }
}

fn task_cpu_seconds(s: &Scrape, o: &mut Samples) {
    for t in &s.tasks {
        for (mode, ticks) in [("user", t.utime), ("system", t.stime)] {
            let mut l = s.task_labels(t);
            l.push(("mode", mode.into()));
            o.push((l, ticks as f64 / s.tck));
        }
    }
}

/// A task's socket figure, only where the sample counted traffic: a
/// kernel without the tracepoints has no series, never a 0.
fn task_sock(s: &Scrape, o: &mut Samples, f: impl Fn(&crate::sample::SockAcct) -> f64) {
    if s.cur.traffic.available {
        per_task(s, o, |t| Some(t.irq.as_ref().map_or(0.0, |a| f(&a.sock))));
    }
}

fn cpu_rx_split(s: &Scrape, o: &mut Samples) {
    if !s.cur.traffic.available {
        return;
    }
    for c in &s.cur.cpus {
        let Some(n) = &c.net else { continue };
        for (b, name) in crate::sample::traffic::RX_BUCKETS.iter().enumerate() {
            o.push((
                vec![("cpu", c.cpu.to_string()), ("bucket", (*name).to_string())],
                secs(n.rx.ns[b]),
            ));
        }
    }
}

fn task_hidden(s: &Scrape, o: &mut Samples) {
    if let Some(cal) = s.cal {
        per_task(s, o, |t| t.irq.as_ref().map(|a| cal.hidden_ns(a) / 1e9));
    }
}

fn task_rebilled(s: &Scrape, o: &mut Samples) {
    if let Some(cal) = s.cal {
        per_task(s, o, |t| t.irq.as_ref().map(|a| cal.rebilled_ns(a) / 1e9));
    }
}

/// Every family name a scrape can carry, in output order: what
/// `--metrics-exclude` accepts.
pub fn names() -> Vec<&'static str> {
    FAMILIES
        .iter()
        .map(|d| d.name)
        .chain(cgroups::NAMES.iter().copied())
        .collect()
}

/// One family's samples, per CPU or folded into nodes.
fn read(d: &Def, s: &Scrape, per_node: bool) -> Samples {
    let mut samples = Vec::new();
    match (per_node, d.fold) {
        (true, Fold::Read(r)) => r(s, &mut samples),
        (true, Fold::Sum) => {
            (d.samples)(s, &mut samples);
            samples = node::fold(s.host, samples, |a, b| a + b);
        }
        (true, Fold::Max) => {
            (d.samples)(s, &mut samples);
            samples = node::fold(s.host, samples, f64::max);
        }
        (false, _) | (true, Fold::No) => (d.samples)(s, &mut samples),
    }
    samples
}

/// Builds the metric families of `cur`; `prev` (the sample before) only
/// ranks tasks by their recent stolen time. Excluded families are not
/// read at all, so leaving out the expensive ones saves their work too.
pub fn families(
    host: &HostInfo,
    prev: Option<&RawSample>,
    cur: &RawSample,
    opts: &Options,
) -> Vec<Family> {
    let s = Scrape::new(host, prev, cur, opts);
    let per_node = opts.cpu_series == CpuSeries::PerNode;
    let mut out: Vec<Family> = FAMILIES
        .iter()
        .filter(|d| !opts.exclude.contains(d.name))
        .map(|d| Family {
            name: d.name,
            help: d.help,
            unit: d.unit,
            kind: d.kind,
            samples: read(d, &s, per_node),
        })
        .collect();
    if !cgroups::NAMES.iter().all(|n| opts.exclude.contains(n)) {
        let cg = cgroups::families(host, prev, cur, opts.top_cgroups);
        out.extend(cg.into_iter().filter(|f| !opts.exclude.contains(f.name)));
    }
    out
}
