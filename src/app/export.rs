//! `nettop --replay FILE --export FORMAT`: a recording as JSON frames, CSV
//! rows or OpenMetrics series on stdout, computed as replay computes them.

use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::Path;

use anyhow::bail;

use crate::app::cli::{Cli, ExportFormat};
use crate::app::options;
use crate::record::{Recording, WarningKind, walk};

/// `nettop --replay FILE --export FORMAT`: to stdout. Exit 2 when records
/// were corrupt (after exporting everything readable); a torn tail (the
/// normal result of `kill -9`) is only a warning.
pub fn run(cli: &Cli, file: &Path, fmt: ExportFormat) -> anyhow::Result<u8> {
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
    let window = options::replay_window(cli, &rec)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut warn = |s: &walk::Skip| eprintln!("nettop: warning: {s}");
    let host = rec.host().clone();
    let res = match fmt {
        ExportFormat::Json => walk::frames_in(
            &rec,
            window.clone(),
            |_, fr| {
                serde_json::to_writer(&mut out, &fr)?;
                out.write_all(b"\n")?;
                Ok(ControlFlow::Continue(()))
            },
            &mut warn,
        ),
        ExportFormat::Csv => {
            writeln!(out, "{}", crate::output::csv::CSV_HEADER).map_err(anyhow::Error::from)?;
            walk::frames_in(
                &rec,
                window.clone(),
                |_, fr| {
                    out.write_all(
                        crate::output::csv::csv_rows(&fr, cli.threads, cli.rows).as_bytes(),
                    )?;
                    Ok(ControlFlow::Continue(()))
                },
                &mut warn,
            )
        }
        ExportFormat::Openmetrics => {
            let mut opts = options::metrics(cli);
            opts.topology = walk::recorded_topology(&rec).map(std::sync::Arc::new);
            let mut series = crate::metrics::openmetrics::Series::default();
            let walked = walk::pairs_in(
                &rec,
                window,
                |_, prev, cur| {
                    series.add(
                        crate::metrics::openmetrics::families(&host, prev, cur, &opts),
                        cur.unix_ms,
                    );
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
    let walked = match res {
        Ok(w) => w,
        Err(e) if is_broken_pipe(&e) => return Ok(0),
        Err(e) => return Err(e),
    };
    corrupt += walked.bad;
    if let Err(e) = flushed
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    if let Some(skipped) = walk::skipped_summary(corrupt, walked.out_of_order) {
        eprintln!("nettop: {name}: {skipped}; exported the rest");
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
