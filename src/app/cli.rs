//! Command line. One flag set shared by every mode so that `-d`, `-p`,
//! `--no-bpf` mean the same thing in the TUI, batch, record and lint.

use std::path::PathBuf;

use clap::{ArgGroup, CommandFactory, Parser, ValueEnum};

/// Every flag belongs to the modes that use it. A combination where one
/// flag would be silently ignored (`--record x --replay y` ran one mode and
/// dropped the other) is a usage error (exit 2) instead: the conflict and
/// `requires` rules below, and [`Cli::check`] for the one combination that
/// gets its own message. clap waives a `requires` when an argument that
/// conflicts with the required one is present (`--duration 10s -b` passed
/// `requires = "record"` because `-b` conflicts with `--record`), so every
/// flag that requires a mode also lists that mode's conflicts itself.
#[derive(Parser, Debug, Clone, Default)]
#[command(
    name = "nettop",
    version,
    about = "top that tells the truth on busy network hosts",
    long_about = "nettop splits every task's CPU time into its own work and the hardirq/softirq \
work (NET_RX above all) the kernel ran in its context and charged to it. Interactive by default; \
-b for batch text, --record/--replay for evidence, --pinning-check to lint CPU affinity.",
    group(ArgGroup::new("counted").args(["batch", "record", "serve"]).multiple(true)),
    group(ArgGroup::new("live_only").args(["no_bpf", "bpf_stats", "traffic", "sysroot"]).multiple(true)),
    group(ArgGroup::new("metrics_out").args(["serve", "export"]).multiple(true)),
    group(ArgGroup::new("report").args(["pinning_check", "plan"]).multiple(true)),
    group(ArgGroup::new("changes").args(["apply", "revert"]).multiple(true)),
)]
pub struct Cli {
    /// Batch mode: print text frames like `top -b` instead of the TUI.
    #[arg(short = 'b', long = "batch",
          conflicts_with_all = ["record", "serve", "pinning_check", "export"])]
    pub batch: bool,

    /// Number of frames to print (batch) or snapshots to take (record,
    /// serve) before exiting.
    #[arg(short = 'n', long = "iterations", value_name = "N", requires = "counted",
          value_parser = parse_iterations)]
    pub iterations: Option<u64>,

    /// Seconds between frames [default: 1, or the configuration file's].
    #[arg(short = 'd', long = "delay", value_name = "SECS",
          value_parser = parse_delay, conflicts_with_all = ["pinning_check", "export"])]
    pub delay: Option<f64>,

    /// Only show these processes (comma-separated PIDs).
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID,...",
        value_delimiter = ',',
        conflicts_with = "pinning_check"
    )]
    pub pids: Vec<u32>,

    /// COMMAND shows the full command line instead of the name, as `top -c`
    /// (the TUI's `c` toggles it).
    #[arg(short = 'c', long = "command-line", conflicts_with = "pinning_check")]
    pub command_line: bool,

    /// Show threads instead of processes.
    #[arg(short = 'H', long = "threads", conflicts_with = "pinning_check")]
    pub threads: bool,

    /// The TUI never acts on the host: no kill, renice or affinity (k, r,
    /// a), and no plan applied (P); for shared screens and unattended
    /// sessions. `read_only = true` in the configuration file does the same.
    #[arg(long = "read-only",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "plan", "revert"])]
    pub read_only: bool,

    /// Leave out tasks that used no CPU in the interval, as `top -i` (the
    /// TUI's `i` toggles it; batch text only, JSON keeps every task).
    #[arg(short = 'i', long = "hide-idle", conflicts_with = "pinning_check")]
    pub hide_idle: bool,

    /// Print one JSON object per frame (batch mode), or the calibration
    /// table as JSON (--calibrate).
    #[arg(long = "json",
          conflicts_with_all = ["record", "serve", "pinning_check", "export"])]
    pub json: bool,

    /// Task rows per batch frame, CSV export or scrape (0 = all).
    #[arg(long = "rows", value_name = "N", default_value_t = 20,
          conflicts_with_all = ["record", "pinning_check"])]
    pub rows: usize,

    /// Batch: one row per cgroup (pod, container, service) instead of per
    /// task, in text and JSON.
    #[arg(long = "group", value_enum, value_name = "BY", requires = "batch")]
    pub group: Option<Group>,

    /// Per-cgroup metric series (--serve, --export openmetrics): the N
    /// cgroups with the most STOLEN%; the rest are summed into one
    /// cgroup="other" series.
    #[arg(long = "top-cgroups", value_name = "N", default_value_t = 50,
          conflicts_with_all = ["record", "pinning_check", "batch"])]
    pub top_cgroups: usize,

    /// Metric families to leave out of --serve and --export openmetrics:
    /// family names (nettop_cpu_seconds or nettop_cpu_seconds_total) or the
    /// preset node-exporter (what node_exporter already exports: /proc/stat
    /// CPU modes, online CPUs, softnet_stat, device counters). See
    /// docs/metrics.md.
    #[arg(long = "metrics-exclude", value_name = "FAMILY,...", value_delimiter = ',',
          value_parser = parse_metrics_exclude, requires = "metrics_out",
          conflicts_with_all = ["batch", "pinning_check", "calibrate"])]
    pub metrics_exclude: Vec<String>,

    /// Per-CPU metric series (--serve, --export openmetrics): one per CPU,
    /// or one per NUMA node (label node; counters summed over its CPUs).
    #[arg(long = "metrics-cpu", value_enum, value_name = "PER", default_value_t = MetricsCpu::PerCpu,
          requires = "metrics_out", conflicts_with_all = ["batch", "pinning_check", "calibrate"])]
    pub metrics_cpu: MetricsCpu,

    /// Do not load BPF: /proc only; interrupt columns become estimates.
    #[arg(long = "no-bpf", conflicts_with = "pinning_check")]
    pub no_bpf: bool,

    /// Count socket traffic: RX/TX per task and cgroup, CAUSED% and who
    /// robs whom. Off by default: it traces every send and receive call,
    /// about half a microsecond each (BENCHMARKS "Socket traffic").
    #[arg(long = "traffic", conflicts_with_all = ["no_bpf", "pinning_check"])]
    pub traffic: bool,

    /// Enable kernel BPF run-time statistics while running (restored on exit)
    /// so nettop reports its own BPF cost, in all and per CPU (BPF%).
    #[arg(long = "bpf-stats", conflicts_with_all = ["no_bpf", "pinning_check"])]
    pub bpf_stats: bool,

    /// Longest the in-kernel task walk may hold a CPU in one piece (default
    /// 2ms). On Linux 6.4+ each sample follows the task list itself, about
    /// half the kernel's per-thread walk, and on kernels that preempt only
    /// voluntarily nothing else runs on that CPU meanwhile (~13 ms for a
    /// whole pass at 30,000 threads on a 2-CPU VM, BENCHMARKS "The task
    /// walk in runs"). So a pass stops after this long and goes on after a
    /// return to user space. Lower it where other tasks on nettop's CPU
    /// must wake sooner; each run costs one more system call.
    #[arg(long = "walk-span", value_name = "D", value_parser = parse_walk_span,
          conflicts_with = "no_bpf")]
    pub walk_span: Option<std::time::Duration>,

    /// Read /proc and /sys under DIR instead of / (tests, offline analysis).
    #[arg(long = "sysroot", value_name = "DIR", default_value = "/")]
    pub sysroot: PathBuf,

    /// Measure this host's hidden interrupt cost per interruption (the HIDDEN~
    /// column), replace the cached calibration and print the table.
    #[arg(long = "calibrate")]
    pub calibrate: bool,

    /// The TUI's configuration file (default
    /// $XDG_CONFIG_HOME/nettop/config.toml, else
    /// ~/.config/nettop/config.toml); `W` writes it.
    #[arg(long = "config", value_name = "FILE", conflicts_with_all = ["no_config", "batch",
          "record", "serve", "pinning_check", "export", "calibrate"])]
    pub config: Option<PathBuf>,

    /// Start with the default settings and write none (`W` is refused).
    #[arg(long = "no-config", conflicts_with_all = ["batch", "record", "serve",
          "pinning_check", "export", "calibrate"])]
    pub no_config: bool,

    /// Directory of the calibration cache (default $NETTOP_CACHE_DIR, else
    /// /var/cache/nettop).
    #[arg(long = "cache-dir", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Lint CPU/IRQ/NUMA affinity and exit (0 clean, 1 findings, 2 could not check).
    #[arg(long = "pinning-check",
          conflicts_with_all = ["record", "serve", "export", "iterations"])]
    pub pinning_check: bool,

    /// Output format of --pinning-check and --plan (sh: --plan only).
    #[arg(long = "format", value_enum, default_value_t = Format::Text, requires = "report",
          conflicts_with_all = ["batch", "record", "serve", "export"])]
    pub format: Format,

    /// Compute one coherent layout for this host (IRQ affinity, RPS/XPS,
    /// RSS and flow rules, the kernel command line) from the topology, the
    /// lint's findings and a 1 s load measurement, print it and exit.
    #[arg(long = "plan",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch",
                                "iterations", "replay", "revert"])]
    pub plan: bool,

    /// With --plan: write the plan's IRQ/RPS/XPS changes after saving a
    /// revert file, measure before and after, and revert automatically
    /// when it made things worse.
    #[arg(long = "apply", requires = "plan",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "replay",
                                "revert"])]
    pub apply: bool,

    /// With --plan (or the TUI's P): plan for these devices only (names, or
    /// labels as the lint prints them: "veth1 (netns blue)"); other
    /// devices' IRQs and steering are left alone.
    #[arg(long = "nic", value_name = "DEV,...", value_delimiter = ',',
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "replay",
                                "revert"])]
    pub nics: Vec<String>,

    /// With --plan --apply: apply this plan, saved with `--plan --format
    /// json` and reviewed, instead of computing one now.
    #[arg(long = "plan-file", value_name = "PLAN", requires = "apply",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "replay",
                                "revert"])]
    pub plan_file: Option<PathBuf>,

    /// Length of each of --apply's (or the TUI's P's) before and after
    /// measurements (e.g. 10s).
    #[arg(long = "measure", value_name = "D", value_parser = parse_measure,
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "replay",
                                "revert"])]
    pub measure: Option<std::time::Duration>,

    /// Restore what a revert file written by --apply holds, and exit.
    #[arg(long = "revert", value_name = "FILE",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch",
                                "iterations", "replay"])]
    pub revert: Option<PathBuf>,

    /// --apply/--revert without asking (needed when stdin is not a terminal).
    #[arg(long = "yes", requires = "changes",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "replay"])]
    pub yes: bool,

    /// --apply/--revert: print what would be written, write nothing.
    #[arg(long = "dry-run", requires = "changes",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "replay"])]
    pub dry_run: bool,

    /// Where --apply and the TUI's P keep revert files and their key
    /// (default /var/lib/nettop).
    #[arg(long = "state-dir", value_name = "DIR",
          conflicts_with_all = ["record", "serve", "export", "pinning_check", "batch", "replay"])]
    pub state_dir: Option<PathBuf>,

    /// Lowest severity that makes --pinning-check exit 1.
    #[arg(long = "fail-on", value_enum, default_value_t = FailOn::Warning,
          requires = "pinning_check", conflicts_with_all = ["batch", "record", "serve", "export"])]
    pub fail_on: FailOn,

    /// Topology from an hwloc XML file instead of this machine.
    #[arg(long = "hwloc-xml", value_name = "FILE",
          conflicts_with_all = ["hwloc_synthetic", "replay", "batch", "serve"])]
    pub hwloc_xml: Option<PathBuf>,

    /// Topology from an hwloc synthetic description, e.g. "pack:2 numa:1 l3:1 core:4 pu:2".
    #[arg(long = "hwloc-synthetic", value_name = "DESC",
          conflicts_with_all = ["replay", "batch", "serve"])]
    pub hwloc_synthetic: Option<String>,

    /// Append raw snapshots to FILE (zstd-compressed if it ends in .zst), or
    /// to daily files in DIR (an existing directory, or a path ending in /).
    #[arg(long = "record", value_name = "FILE|DIR", conflicts_with_all = ["replay", "export"])]
    pub record: Option<PathBuf>,

    /// Stop recording after this long (e.g. 30s, 10m, 2h).
    #[arg(long = "duration", value_name = "D", requires = "record",
          conflicts_with_all = ["batch", "replay", "pinning_check", "export"])]
    pub duration: Option<String>,

    /// Start a new part when the recording reaches this size (e.g. 100M, 1G).
    #[arg(long = "max-size", value_name = "SIZE", requires = "record",
          conflicts_with_all = ["batch", "replay", "pinning_check", "export"])]
    pub max_size: Option<String>,

    /// Finished recording parts to keep besides the live one (default 4);
    /// older ones are deleted.
    #[arg(long = "keep", value_name = "N", requires = "record",
          value_parser = crate::record::retention::parse_keep,
          conflicts_with_all = ["batch", "replay", "pinning_check", "export"])]
    pub keep: Option<u32>,

    /// Delete finished recording parts last written longer ago than this (e.g. 7d).
    #[arg(long = "keep-for", value_name = "D", requires = "record",
          value_parser = crate::record::retention::parse_keep_for,
          conflicts_with_all = ["batch", "replay", "pinning_check", "export"])]
    pub keep_for: Option<std::time::Duration>,

    /// Show a recording instead of live data.
    #[arg(long = "replay", value_name = "FILE", conflicts_with_all = ["serve", "live_only"])]
    pub replay: Option<PathBuf>,

    /// Replay or export from this point of the recording on: HH:MM\[:SS\]
    /// (UTC; the first such time after the recording starts), +D after its
    /// start, -D before its end, or a date (2026-11-25T12:00:00Z). The
    /// syntax of the replay T prompt.
    #[arg(long = "begin", value_name = "TIME", requires = "replay",
          value_parser = parse_time_arg, allow_hyphen_values = true,
          conflicts_with = "pinning_check")]
    pub begin: Option<crate::sys::units::TimeSpec>,

    /// Replay or export up to this point of the recording (same syntax as
    /// --begin; a clock time is the first such time after --begin).
    #[arg(long = "end", value_name = "TIME", requires = "replay",
          value_parser = parse_time_arg, allow_hyphen_values = true,
          conflicts_with = "pinning_check")]
    pub end: Option<crate::sys::units::TimeSpec>,

    /// Convert a recording (with --replay) to this format on stdout.
    #[arg(long = "export", value_enum, value_name = "FORMAT", requires = "replay",
          conflicts_with_all = ["batch", "record", "serve", "pinning_check"])]
    pub export: Option<ExportFormat>,

    /// Serve OpenMetrics for Prometheus at ADDR (default 127.0.0.1:9867).
    #[arg(long = "serve", value_name = "ADDR", num_args = 0..=1,
          default_missing_value = "127.0.0.1:9867",
          conflicts_with_all = ["replay", "batch", "pinning_check", "export"])]
    pub serve: Option<String>,

    /// Packaging: write the man page (`man`) or shell completions
    /// (`completions`) into DIR and exit.
    #[arg(long = "generate", value_names = ["WHAT", "DIR"], num_args = 2, hide = true,
          exclusive = true)]
    pub generate: Vec<String>,
}

impl Cli {
    /// Parses the command line; usage errors exit 2 with clap's message.
    pub fn parse_checked() -> Cli {
        use clap::FromArgMatches;
        // `--version` adds build and host facts; `-V` stays one line. Leaked
        // once: clap keeps a 'static string, and this runs once per process.
        let long: &'static str = Box::leak(crate::sys::version::long_version().into_boxed_str());
        let matches = Cli::command().long_version(long).get_matches();
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        if let Err(msg) = cli.check() {
            Cli::command()
                .error(clap::error::ErrorKind::ArgumentConflict, msg)
                .exit();
        }
        cli
    }

    /// Combinations clap's rules do not express with a useful message.
    pub fn check(&self) -> Result<(), String> {
        // clap's own message ("required: <--batch|--calibrate>") named
        // the rare use first; JSON frames are what --json is for.
        if self.json && !self.batch && !self.calibrate {
            return Err("--json prints batch frames: use `nettop -b --json` (or \
                        `nettop --calibrate --json` for the calibration table)"
                .into());
        }
        // clap's `requires` is met by `--export` of any format; only
        // OpenMetrics has metric families.
        let metrics_flags =
            !self.metrics_exclude.is_empty() || self.metrics_cpu != MetricsCpu::PerCpu;
        if metrics_flags && matches!(self.export, Some(ExportFormat::Json | ExportFormat::Csv)) {
            return Err(
                "--metrics-exclude and --metrics-cpu shape metric series: they need \
                        --serve or --export openmetrics"
                    .into(),
            );
        }
        // The plan's own flags shape an apply: `--plan --apply`, or the
        // TUI's `P`. Anywhere else they would be silently ignored.
        let tui =
            !self.plan && self.revert.is_none() && !self.calibrate && self.generate.is_empty();
        if !(tui || self.plan && self.apply) {
            let stray = [
                ("--measure", self.measure.is_some()),
                ("--nic", !self.nics.is_empty() && !self.plan),
                // `--plan` alone reads it too: it reports applies that
                // did not finish.
                (
                    "--state-dir",
                    self.state_dir.is_some() && self.revert.is_none() && !self.plan,
                ),
            ];
            if let Some((flag, _)) = stray.iter().find(|(_, given)| *given) {
                return Err(format!(
                    "{flag} shapes an apply: use it with `nettop --plan --apply`, or in the \
                     TUI (`nettop {flag} ...`, then P in the Pinning view)"
                ));
            }
        }
        if self.format == Format::Sh && !self.plan {
            return Err(
                "--format sh is a script of --plan's changes: use `nettop --plan \
                        --format sh`"
                    .into(),
            );
        }
        Ok(())
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    /// A reviewable shell script (--plan only).
    Sh,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailOn {
    Info,
    #[default]
    Warning,
    Error,
    /// Never fail on findings (exit 0 unless the check could not run).
    Never,
}

impl FailOn {
    /// The lowest severity that fails the check; `None` never fails.
    pub fn severity(self) -> Option<crate::pinning::Severity> {
        use crate::pinning::Severity;
        match self {
            FailOn::Info => Some(Severity::Info),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Error => Some(Severity::Error),
            FailOn::Never => None,
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// One row per cgroup: Kubernetes pod/container, docker, systemd unit.
    Cgroup,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Csv,
    Openmetrics,
}

/// `--metrics-cpu`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsCpu {
    /// One series per CPU (label cpu).
    #[default]
    PerCpu,
    /// One series per NUMA node (label node): a 256-CPU host's ~30 series
    /// per CPU become ~30 per node.
    PerNode,
}

/// One `--metrics-exclude` value, checked against the families and
/// presets the exporter knows; the exporter expands it.
fn parse_metrics_exclude(s: &str) -> Result<String, String> {
    crate::metrics::openmetrics::select::resolve(s).map(|_| s.trim().to_string())
}

fn parse_iterations(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("-n 0 would do nothing; give at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("-n '{s}' is not a positive whole number")),
    }
}

/// `-d` in the one duration syntax: `0.5` (seconds, as top takes it),
/// `500ms`, `2s`; 0.05 s to 1 h.
fn parse_delay(s: &str) -> Result<f64, String> {
    let d = crate::sys::units::parse_duration("-d", s, std::time::Duration::from_secs(3600))?;
    if d < std::time::Duration::from_millis(50) {
        return Err(format!("-d '{s}': at least 50ms"));
    }
    Ok(d.as_secs_f64())
}

/// `--walk-span` in the one duration syntax: up to 1 s.
fn parse_walk_span(s: &str) -> Result<std::time::Duration, String> {
    crate::sys::units::parse_duration("--walk-span", s, std::time::Duration::from_secs(1))
}

/// `--measure` in the one duration syntax: 1 s to 10 min.
fn parse_measure(s: &str) -> Result<std::time::Duration, String> {
    let d = crate::sys::units::parse_duration("--measure", s, std::time::Duration::from_secs(600))?;
    if d < std::time::Duration::from_secs(1) {
        return Err(format!("--measure '{s}': at least 1s"));
    }
    Ok(d)
}

/// `--begin`/`--end` in the one time syntax.
fn parse_time_arg(s: &str) -> Result<crate::sys::units::TimeSpec, String> {
    crate::sys::units::parse_time("time", s)
}

impl Cli {
    /// Seconds between frames: `-d`, else 1.
    pub fn delay(&self) -> f64 {
        self.delay.unwrap_or(1.0)
    }
}
