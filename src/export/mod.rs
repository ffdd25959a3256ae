//! Exporters: recordings to JSON/CSV/OpenMetrics, and `--serve` for Prometheus.
//!
//! Frames are computed from consecutive raw samples at export time, exactly as
//! replay and live modes do, so every front end agrees.

pub mod http;
pub mod openmetrics;
pub mod serve;

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::bail;

use crate::cli::{Cli, ExportFormat};
use crate::model::frame::{Frame, TaskView};
use crate::model::raw::{HostInfo, RawSample, SOFTIRQ_NAMES};
use crate::record::{Recording, WarningKind};

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

/// Walks a recording's samples in order, handing each readable one to `f`
/// with the previous readable one. Unreadable samples are reported and
/// skipped (the next interval then spans the gap). Returns the number of
/// unreadable samples. `from` is the first sample read (0: all of them).
pub fn for_each_pair(
    rec: &Recording,
    from: usize,
    mut f: impl FnMut(Option<&RawSample>, &RawSample) -> anyhow::Result<()>,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<u64> {
    let mut prev: Option<RawSample> = None;
    let mut bad = 0;
    for i in from..rec.len() {
        match rec.get(i) {
            Ok(cur) => {
                f(prev.as_ref(), &cur)?;
                prev = Some(cur);
            }
            Err(e) => {
                bad += 1;
                warn(format!("{e:#}; sample skipped"));
            }
        }
    }
    Ok(bad)
}

/// Frames of a recording from sample `from` on, as `--export json` prints
/// them (one per line).
pub fn frames(
    host: &HostInfo,
    rec: &Recording,
    from: usize,
    mut f: impl FnMut(Frame) -> anyhow::Result<()>,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<u64> {
    let topo = recorded_topology(rec);
    for_each_pair(
        rec,
        from,
        |prev, cur| match prev {
            Some(p) if cur.mono_ns > p.mono_ns => {
                let mut frame = crate::model::compute(host, p, cur);
                if let Some(t) = &topo {
                    crate::model::devconf::attach(&mut frame, t);
                }
                f(frame)
            }
            _ => Ok(()),
        },
        warn,
    )
}

/// The device configuration a recording captured, for metrics and JSON.
fn recorded_topology(rec: &Recording) -> Option<crate::topology::HostTopology> {
    rec.topology()
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
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
    let mut warn = |m: String| eprintln!("nettop: warning: {m}");
    let host = rec.host().clone();
    let res = match fmt {
        ExportFormat::Json => frames(
            &host,
            &rec,
            0,
            |fr| {
                serde_json::to_writer(&mut out, &fr)?;
                out.write_all(b"\n")?;
                Ok(())
            },
            &mut warn,
        ),
        ExportFormat::Csv => {
            writeln!(out, "{CSV_HEADER}").map_err(anyhow::Error::from)?;
            frames(
                &host,
                &rec,
                0,
                |fr| {
                    out.write_all(csv_rows(&fr, cli.threads, cli.rows).as_bytes())?;
                    Ok(())
                },
                &mut warn,
            )
        }
        ExportFormat::Openmetrics => {
            let mut opts = metric_options(cli);
            opts.topology = recorded_topology(&rec).map(std::sync::Arc::new);
            let mut series = openmetrics::Series::default();
            let bad = for_each_pair(
                &rec,
                0,
                |prev, cur| {
                    series.add(openmetrics::families(&host, prev, cur, &opts), cur.unix_ms);
                    Ok(())
                },
                &mut warn,
            );
            if bad.is_ok() {
                out.write_all(series.render().as_bytes())?;
            }
            bad
        }
    };
    let flushed = out.flush();
    match res {
        Ok(bad) => corrupt += bad,
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
