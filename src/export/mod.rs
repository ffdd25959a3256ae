//! Exporters: recordings to JSON/CSV/OpenMetrics, and `--serve` for Prometheus.
//!
//! Frames are computed from consecutive raw samples at export time, exactly as
//! replay and live modes do, so every front end agrees.

pub mod cgroup_metrics;
pub mod http;
pub mod openmetrics;
pub mod serve;

use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::Path;

use anyhow::bail;

use crate::cli::{Cli, ExportFormat};
use crate::model::frame::{Frame, TaskView};
use crate::model::raw::SOFTIRQ_NAMES;
use crate::record::{Recording, WarningKind, walk};

pub use serve::metric_options;

/// CSV header of [`csv_rows`].
pub const CSV_HEADER: &str = "unix_ms,seq,interval_s,pid,tid,comm,state,last_cpu,top_pct,on_cpu_pct,true_pct,stolen_pct,hardirq_pct,sysvec_pct,softirq_stolen_net_rx_pct,softirq_stolen_pct,inline_pct,ksoftirqd_pct,hidden_pct,interrupts_per_s,softirqs_per_s";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Task rows of one frame as CSV lines, most stolen time first, at most
/// `rows` (0 = all). Pure.
pub fn csv_rows(f: &Frame, threads: bool, rows: usize) -> String {
    let mut v: Vec<&TaskView> = if threads {
        f.threads.iter().collect()
    } else {
        f.processes.iter().collect()
    };
    v.sort_by(|a, b| {
        b.stolen_pct
            .total_cmp(&a.stolen_pct)
            .then(b.top_pct.total_cmp(&a.top_pct))
            .then((a.pid, a.tid).cmp(&(b.pid, b.tid)))
    });
    if rows > 0 {
        v.truncate(rows);
    }
    let net_rx = SOFTIRQ_NAMES
        .iter()
        .position(|n| *n == "NET_RX")
        .unwrap_or(3);
    let mut out = String::new();
    for t in v {
        let soft: f64 = t.softirq_stolen_pct.iter().sum();
        out.push_str(&format!(
            "{},{},{:.3},{},{},{},{},{},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.1},{:.1}\n",
            f.unix_ms,
            f.seq,
            f.interval_s,
            t.pid,
            t.tid,
            csv_field(&t.comm),
            csv_field(&t.state.to_string()),
            t.last_cpu,
            t.top_pct,
            t.on_cpu_pct,
            t.true_pct,
            t.stolen_pct,
            t.hardirq_pct,
            t.sysvec_pct,
            t.softirq_stolen_pct[net_rx],
            soft,
            t.inline_pct,
            t.ksoftirqd_pct,
            t.hidden_pct,
            t.interrupts_per_s,
            t.softirqs_per_s,
        ));
    }
    out
}

/// `nettop --replay FILE --export FORMAT`: to stdout. Exit 2 when records
/// were corrupt (after exporting everything readable); a torn tail (the
/// normal result of `kill -9`) is only a warning.
pub fn export_recording(cli: &Cli, file: &Path, fmt: ExportFormat) -> anyhow::Result<u8> {
    let rec = Recording::open(file)?;
    let name = file.display().to_string();
    let mut corrupt = 0u64;
    for w in rec.warnings() {
        eprintln!("nettop: warning: {name}: {w}");
        if w.kind == WarningKind::Corrupt {
            corrupt += 1;
        }
    }
    if rec.is_empty() {
        bail!("{name}: the recording holds no snapshots");
    }
    if fmt != ExportFormat::Openmetrics && rec.len() < 2 {
        bail!("{name}: only one snapshot; a frame needs two consecutive snapshots");
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut warn = |s: &walk::Skip| eprintln!("nettop: warning: {s}");
    let host = rec.host().clone();
    let res = match fmt {
        ExportFormat::Json => walk::frames(
            &rec,
            0,
            |_, fr| {
                serde_json::to_writer(&mut out, &fr)?;
                out.write_all(b"\n")?;
                Ok(ControlFlow::Continue(()))
            },
            &mut warn,
        ),
        ExportFormat::Csv => {
            writeln!(out, "{CSV_HEADER}").map_err(anyhow::Error::from)?;
            walk::frames(
                &rec,
                0,
                |_, fr| {
                    out.write_all(csv_rows(&fr, cli.threads, cli.rows).as_bytes())?;
                    Ok(ControlFlow::Continue(()))
                },
                &mut warn,
            )
        }
        ExportFormat::Openmetrics => {
            let mut opts = metric_options(cli);
            opts.topology = walk::recorded_topology(&rec).map(std::sync::Arc::new);
            let mut series = openmetrics::Series::default();
            let walked = walk::pairs(
                &rec,
                0,
                |_, prev, cur| {
                    series.add(openmetrics::families(&host, prev, cur, &opts), cur.unix_ms);
                    Ok(ControlFlow::Continue(()))
                },
                &mut warn,
            );
            if walked.is_ok() {
                out.write_all(series.render().as_bytes())?;
            }
            walked
        }
    };
    let flushed = out.flush();
    match res {
        Ok(w) => corrupt += w.bad,
        Err(e) if is_broken_pipe(&e) => return Ok(0),
        Err(e) => return Err(e),
    }
    if let Err(e) = flushed
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    if corrupt > 0 {
        eprintln!("nettop: {name}: {corrupt} corrupted record(s) skipped; exported the rest");
        return Ok(2);
    }
    Ok(0)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}
