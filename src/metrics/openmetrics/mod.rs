//! OpenMetrics / Prometheus text rendering of raw samples. Pure: samples in,
//! text out.
//!
//! Raw cumulative counters are exposed as counters (`*_seconds_total`,
//! `*_packets_total`) so Prometheus computes rates with `rate()` and a missed
//! scrape loses nothing. Cardinality is bounded: per CPU (or per NUMA node),
//! per napi instance, at most [`MAX_DEVICES`] devices, and only the top-N
//! tasks by stolen time in the last interval; families a fleet already
//! has from elsewhere can be left out ([`select`]). docs/metrics.md counts
//! the series.

mod families;
pub mod select;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

pub use families::families;

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
    /// An empty family, for exporters outside the table (the cgroup roll-up
    /// builds its families from the model's rows).
    pub fn new(
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

    pub fn push(&mut self, labels: Vec<(&'static str, String)>, v: f64) {
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
#[derive(Clone, Debug)]
pub struct Options {
    /// Tasks exported (top-N by stolen time over the last interval).
    pub top_tasks: usize,
    /// Thread rows instead of processes.
    pub threads: bool,
    /// Device configuration (the live topology or a recording's); without
    /// it the configuration families are empty.
    pub topology: Option<std::sync::Arc<crate::topology::HostTopology>>,
    /// cgroups exported on their own (top-N by stolen time); the rest are
    /// summed into one `cgroup="other"` series.
    pub top_cgroups: usize,
    /// Family names left out (`--metrics-exclude`, presets expanded by
    /// [`select::resolve`]): neither read nor rendered.
    pub exclude: BTreeSet<&'static str>,
    /// Per-CPU families per CPU, or folded into NUMA nodes.
    pub cpu_series: CpuSeries,
    /// The health of the recording made beside the endpoint (`--record`
    /// with `--serve`), as of the last sample; `None` without one.
    pub recording: Option<RecordingHealth>,
}

/// What `nettop_recording_*` shows: whether disk faults paused the
/// recording, and what they cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordingHealth {
    pub paused: bool,
    /// Snapshots not recorded while paused.
    pub dropped_samples: u64,
    /// Failed writes by reason: a fixed, small set of labels, each always
    /// present so a series never appears out of nowhere.
    pub write_errors: Vec<(&'static str, u64)>,
}

/// The `cpu` series of the per-CPU families (`--metrics-cpu`): about 30
/// per CPU, the bulk of a big host's series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CpuSeries {
    /// One series per CPU, label `cpu`.
    #[default]
    PerCpu,
    /// One per NUMA node, label `node`: counters summed over the node's
    /// CPUs, maxima the largest, ratios the node's totals divided.
    PerNode,
}

/// Default top-N tasks exported when `--rows 0` asks for "all": metrics must
/// stay bounded whatever the host runs.
const DEFAULT_TOP_TASKS: usize = 20;
const MAX_TOP_TASKS: usize = 200;

impl Options {
    /// `rows` task series (0: the default bound, never unbounded), thread
    /// rows or processes, and `top_cgroups` cgroup series; no device
    /// configuration yet.
    pub fn new(rows: usize, threads: bool, top_cgroups: usize) -> Options {
        Options {
            top_tasks: if rows == 0 {
                DEFAULT_TOP_TASKS
            } else {
                rows.min(MAX_TOP_TASKS)
            },
            threads,
            topology: None,
            top_cgroups,
            exclude: BTreeSet::new(),
            cpu_series: CpuSeries::PerCpu,
            recording: None,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top_tasks: 20,
            threads: false,
            topology: None,
            top_cgroups: 50,
            exclude: BTreeSet::new(),
            cpu_series: CpuSeries::PerCpu,
            recording: None,
        }
    }
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
