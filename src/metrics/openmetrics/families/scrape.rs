//! What the family table reads: one sample, plus the figures several
//! families share (top-N tasks, napi sums, the devices kept), and the
//! helpers that turn per-CPU, per-task … values into labelled samples.

use std::collections::BTreeMap;

use super::super::{MAX_DEVICES, Options};
use super::{Labels, Samples};
use crate::sample::calibration::{Basis, Calibration, ClassCost};
use crate::sample::{
    BpfHealth, CpuNet, HostInfo, IrqAcct, ProgStat, RawCpu, RawDevice, RawSample, Softnet, Source,
};

pub(super) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// What the families read: the sample, and what several of them share.
pub(super) struct Scrape<'a> {
    pub(super) host: &'a HostInfo,
    pub(super) cur: &'a RawSample,
    pub(super) threads: bool,
    /// Clock ticks per second, for /proc's tick counters.
    pub(super) tck: f64,
    /// The calibration HIDDEN~ uses: only with BPF data.
    pub(super) cal: Option<&'a Calibration>,
    /// (device, napi id) → (polls, packets, budget exhausted).
    pub(super) napi: BTreeMap<(String, u32), NapiSum>,
    /// At most [`MAX_DEVICES`], busiest first, then by name.
    pub(super) devices: Vec<&'a RawDevice>,
    /// The top-N tasks by recent stolen time, by (pid, tid).
    pub(super) tasks: Vec<TaskAgg>,
    /// The model's network figures over `prev` → `cur` (cost per packet,
    /// devices with their configuration); `None` for the first sample.
    pub(super) net: Option<crate::model::frame::Frame>,
    /// The recording beside the endpoint, if any.
    pub(super) recording: Option<&'a super::super::RecordingHealth>,
}

#[derive(Default)]
pub(super) struct NapiSum {
    pub(super) polls: u64,
    pub(super) work: u64,
    pub(super) budget_exhausted: u64,
}

/// A task row for export: a thread, or a process.
pub(super) struct TaskAgg {
    pub(super) pid: u32,
    pub(super) tid: u32,
    pub(super) comm: String,
    pub(super) utime: u64,
    pub(super) stime: u64,
    pub(super) on_cpu_ns: u64,
    pub(super) irq: Option<IrqAcct>,
    /// Resident bytes (RES), when the task has an address space.
    pub(super) res: Option<u64>,
}

impl<'a> Scrape<'a> {
    pub(super) fn new(
        host: &'a HostInfo,
        prev: Option<&RawSample>,
        cur: &'a RawSample,
        opts: &'a Options,
    ) -> Self {
        let mut napi: BTreeMap<(String, u32), NapiSum> = BTreeMap::new();
        for n in &cur.napi {
            let e = napi.entry((n.dev.clone(), n.napi_id)).or_default();
            e.polls += n.polls;
            e.work += n.work;
            e.budget_exhausted += n.budget_exhausted;
        }
        let mut devices: Vec<&RawDevice> = cur.devices.iter().collect();
        devices.sort_by(|a, b| {
            (b.rx_bytes.saturating_add(b.tx_bytes))
                .cmp(&a.rx_bytes.saturating_add(a.tx_bytes))
                .then(a.name.cmp(&b.name))
        });
        devices.truncate(MAX_DEVICES);
        devices.sort_by(|a, b| (&a.netns, &a.name).cmp(&(&b.netns, &b.name)));
        let net = prev.map(|p| {
            let mut f = crate::model::compute::network(host, p, cur);
            if let Some(t) = &opts.topology {
                f.attach_config(t);
            }
            f
        });
        Scrape {
            host,
            cur,
            threads: opts.threads,
            tck: host.clk_tck.max(1) as f64,
            cal: host
                .calibration
                .as_ref()
                .filter(|_| cur.source == Source::Bpf),
            napi,
            devices,
            tasks: top_tasks(prev, cur, opts),
            net,
            recording: opts.recording.as_ref(),
        }
    }

    /// The calibration's measured classes, with their basis label.
    pub(super) fn calibration_rows(&self) -> Vec<(&'static str, &ClassCost, &str)> {
        let Some(c) = self.cal else {
            return Vec::new();
        };
        c.rows()
            .into_iter()
            .filter_map(|(class, k)| {
                let basis = match k.basis {
                    Basis::Measured => "measured",
                    Basis::SameAsIpi => "same_as_ipi",
                    Basis::NotMeasured => return None,
                };
                Some((class, k, basis))
            })
            .collect()
    }

    pub(super) fn task_labels(&self, t: &TaskAgg) -> Labels {
        let mut v = vec![("pid", t.pid.to_string())];
        if self.threads {
            v.push(("tid", t.tid.to_string()));
        }
        v.push(("comm", t.comm.clone()));
        v
    }
}

/// Export rows keyed by (pid, tid): threads, or processes as the sample
/// defines them ([`RawSample::process_rows`]).
fn rows(s: &RawSample, threads: bool) -> BTreeMap<(u32, u32), TaskAgg> {
    let rows = if threads {
        std::borrow::Cow::Borrowed(&s.tasks[..])
    } else {
        s.process_rows()
    };
    rows.iter()
        .map(|t| {
            let agg = TaskAgg {
                pid: t.tgid,
                tid: t.tid,
                comm: t.comm.clone(),
                utime: t.utime_ticks,
                stime: t.stime_ticks,
                on_cpu_ns: t.on_cpu_ns,
                irq: t.irq.as_deref().cloned(),
                res: t.mem.map(|m| m.res),
            };
            ((t.tgid, t.tid), agg)
        })
        .collect()
}

/// Top-N by stolen time over the last interval (cumulative when there is
/// no previous sample), then on-CPU time; returned by (pid, tid).
fn top_tasks(prev: Option<&RawSample>, cur: &RawSample, opts: &Options) -> Vec<TaskAgg> {
    let stolen = |t: &TaskAgg| t.irq.as_ref().map_or(0, IrqAcct::stolen_ns);
    let prev_t = prev.map(|p| rows(p, opts.threads));
    let mut ranked: Vec<(TaskAgg, u64, u64)> = rows(cur, opts.threads)
        .into_iter()
        .map(|(k, t)| {
            let p = prev_t.as_ref().and_then(|m| m.get(&k));
            let st = stolen(&t).saturating_sub(p.map_or(0, stolen));
            let oc = t.on_cpu_ns.saturating_sub(p.map_or(0, |p| p.on_cpu_ns));
            (t, st, oc)
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(b.2.cmp(&a.2))
            .then((a.0.pid, a.0.tid).cmp(&(b.0.pid, b.0.tid)))
    });
    ranked.truncate(opts.top_tasks);
    ranked.sort_by_key(|r| (r.0.pid, r.0.tid));
    ranked.into_iter().map(|r| r.0).collect()
}

pub(super) fn per_cpu(s: &Scrape, o: &mut Samples, f: impl Fn(&RawCpu) -> Option<f64>) {
    for c in &s.cur.cpus {
        if let Some(v) = f(c) {
            o.push((vec![("cpu", c.cpu.to_string())], v));
        }
    }
}

pub(super) fn per_cpu_irq(s: &Scrape, o: &mut Samples, f: impl Fn(&IrqAcct) -> f64) {
    per_cpu(s, o, |c| c.irq.as_ref().map(&f));
}

pub(super) fn per_cpu_net(s: &Scrape, o: &mut Samples, f: impl Fn(&CpuNet) -> f64) {
    per_cpu(s, o, |c| c.net.as_ref().map(&f));
}

pub(super) fn per_cpu_softnet(s: &Scrape, o: &mut Samples, f: impl Fn(&Softnet) -> f64) {
    per_cpu(s, o, |c| c.softnet.as_ref().map(&f));
}

pub(super) fn per_napi(s: &Scrape, o: &mut Samples, f: impl Fn(&NapiSum) -> u64) {
    for ((dev, id), n) in &s.napi {
        let l = vec![("device", dev.clone()), ("napi_id", id.to_string())];
        o.push((l, f(n) as f64));
    }
}

pub(super) fn per_device(s: &Scrape, o: &mut Samples, f: impl Fn(&RawDevice) -> u64) {
    for d in &s.devices {
        o.push((
            vec![("device", d.name.clone()), ("netns", d.netns.clone())],
            f(d) as f64,
        ));
    }
}

pub(super) fn per_task(s: &Scrape, o: &mut Samples, f: impl Fn(&TaskAgg) -> Option<f64>) {
    for t in &s.tasks {
        if let Some(v) = f(t) {
            o.push((s.task_labels(t), v));
        }
    }
}

pub(super) fn health(s: &Scrape, o: &mut Samples, f: impl Fn(&BpfHealth) -> f64) {
    if let Some(h) = &s.cur.health {
        o.push((vec![], f(h)));
    }
}

pub(super) fn per_program(s: &Scrape, o: &mut Samples, f: impl Fn(&ProgStat) -> f64) {
    for p in s.cur.health.iter().flat_map(|h| &h.programs) {
        o.push((vec![("program", p.name.clone())], f(p)));
    }
}
