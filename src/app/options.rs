//! The one place where the command line becomes each layer's own plain
//! options. Below `app`, no module knows clap or [`Cli`].

use std::time::Duration;

use crate::app::cli::{Cli, MetricsCpu};
use crate::collector::CollectorOptions;
use crate::metrics::openmetrics;
use crate::sys::sysroot::Sysroot;
use crate::topology::LoadOptions;

pub fn sysroot(cli: &Cli) -> Sysroot {
    Sysroot::new(&cli.sysroot)
}

/// What every live mode collects.
pub fn collector(cli: &Cli) -> CollectorOptions {
    CollectorOptions {
        sysroot: sysroot(cli),
        no_bpf: cli.no_bpf,
        pids: cli.pids.clone(),
        bpf_stats: cli.bpf_stats,
        traffic: cli.traffic,
        threads: cli.threads,
        no_task_sampler: std::env::var_os("NETTOP_NO_TASK_SAMPLER").is_some(),
        walk_span: cli.walk_span,
    }
}

/// Where the topology (CPU structure, devices, threads) is read from.
pub fn topology(cli: &Cli) -> LoadOptions {
    LoadOptions::new(
        sysroot(cli),
        cli.hwloc_xml.clone(),
        cli.hwloc_synthetic.clone(),
    )
}

/// The calibration cache directory (`--cache-dir`, `$NETTOP_CACHE_DIR` or
/// the default).
pub fn cache_dir(cli: &Cli) -> std::path::PathBuf {
    crate::calibrate::cache::dir(cli.cache_dir.as_deref())
}

/// Where applies (`--plan --apply`, the TUI's `P`) keep revert files and
/// their key (`--state-dir`, or /var/lib/nettop).
pub fn plan_state_dir(cli: &Cli) -> std::path::PathBuf {
    cli.state_dir
        .clone()
        .unwrap_or_else(|| crate::plan::revert::DEFAULT_DIR.into())
}

/// Metric families for `--serve` and `--export openmetrics`.
pub fn metrics(cli: &Cli) -> openmetrics::Options {
    let mut o = openmetrics::Options::new(cli.rows, cli.threads, cli.top_cgroups);
    // clap checked every name (`cli::parse_metrics_exclude`); one that
    // still does not resolve (a `Cli` built in code) excludes nothing.
    o.exclude = cli
        .metrics_exclude
        .iter()
        .filter_map(|n| openmetrics::select::resolve(n).ok())
        .flatten()
        .collect();
    o.cpu_series = match cli.metrics_cpu {
        MetricsCpu::PerCpu => openmetrics::CpuSeries::PerCpu,
        MetricsCpu::PerNode => openmetrics::CpuSeries::PerNode,
    };
    o
}

/// The sampling interval (`-d`).
pub fn interval(cli: &Cli) -> Duration {
    Duration::from_secs_f64(cli.delay())
}

/// The samples of a recording that `--begin`/`--end` select (all of them
/// without either).
pub fn replay_window(
    cli: &Cli,
    rec: &crate::record::Recording,
) -> anyhow::Result<crate::record::Window> {
    if cli.begin.is_none() && cli.end.is_none() {
        return Ok(rec.all());
    }
    rec.window(cli.begin, cli.end)
}
