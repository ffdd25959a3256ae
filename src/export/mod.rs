//! Exporters: recordings to JSON/CSV/OpenMetrics, and `--serve` for Prometheus.
//!
//! Frames are computed from consecutive raw samples at export time, exactly as
//! replay and live modes do, so every front end agrees.

pub mod cgroup_metrics;
pub mod http;
pub mod openmetrics;

use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::cli::{Cli, ExportFormat};
use crate::model::frame::{Frame, TaskView};
use crate::model::raw::{HostInfo, RawSample, SOFTIRQ_NAMES};
use crate::record::{Recording, WarningKind};
use crate::ticker::{Ticker, Wake};

use openmetrics::{Flavor, Options};

/// Default top-N tasks exported when `--rows 0` asks for "all": metrics must
/// stay bounded whatever the host runs.
const DEFAULT_TOP_TASKS: usize = 20;
const MAX_TOP_TASKS: usize = 200;

fn metric_options(cli: &Cli) -> Options {
    Options {
        top_tasks: if cli.rows == 0 {
            DEFAULT_TOP_TASKS
        } else {
            cli.rows.min(MAX_TOP_TASKS)
        },
        threads: cli.threads,
        top_cgroups: cli.top_cgroups,
    }
}

/// Pre-rendered scrape bodies, swapped in by the sampler after each sample.
struct Scrape {
    openmetrics: Arc<[u8]>,
    prometheus: Arc<[u8]>,
}

/// The two paths `--serve` answers.
fn route(req: &http::Request, scrape: &Mutex<Scrape>) -> http::Response {
    match req.path.as_str() {
        "/metrics" => {
            let om = req
                .accept
                .as_deref()
                .is_some_and(|a| a.contains("application/openmetrics-text"));
            let Ok(g) = scrape.lock() else {
                return http::Response::text(500, "sampler failed\n");
            };
            if om {
                http::Response {
                    status: 200,
                    content_type: openmetrics::OPENMETRICS_CONTENT_TYPE,
                    body: Arc::clone(&g.openmetrics),
                }
            } else {
                http::Response {
                    status: 200,
                    content_type: openmetrics::PROMETHEUS_CONTENT_TYPE,
                    body: Arc::clone(&g.prometheus),
                }
            }
        }
        "/" => http::Response::text(200, "nettop: metrics at /metrics\n"),
        _ => http::Response::text(404, "not found\n"),
    }
}

/// `nettop --serve ADDR`: a sampler on this thread, the HTTP loop
/// ([`http::run`]) on one other thread created at start.
pub fn serve(cli: &Cli, addr: &str) -> anyhow::Result<u8> {
    let stop = crate::signals::stop_flag()?;
    // Bind first: a busy port fails before the collector loads BPF.
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| anyhow::anyhow!("--serve: cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| addr.to_string());
    let mut src = crate::record::live_source(cli)?;
    let host = src.host().clone();
    let opts = metric_options(cli);
    let render = |prev: Option<&RawSample>, cur: &RawSample| {
        let fams = openmetrics::families(&host, prev, cur, &opts);
        Scrape {
            openmetrics: Arc::from(openmetrics::render(&fams, Flavor::OpenMetrics).into_bytes()),
            prometheus: Arc::from(openmetrics::render(&fams, Flavor::Prometheus).into_bytes()),
        }
    };
    let mut prev = src.sample()?;
    let scrape = Arc::new(Mutex::new(render(None, &prev)));

    let limits = http::Limits::default().fit_fd_limit();
    let listener_error: Arc<Mutex<Option<String>>> = Arc::default();
    let http = {
        let (stop, scrape, err) = (
            Arc::clone(&stop),
            Arc::clone(&scrape),
            Arc::clone(&listener_error),
        );
        std::thread::Builder::new()
            .name("nettop-http".into())
            .spawn(move || {
                let handler = |r: &http::Request| route(r, &scrape);
                if let Err(e) = http::run(&listener, &handler, &stop, &limits) {
                    if let Ok(mut g) = err.lock() {
                        *g = Some(e.to_string());
                    }
                    // Without a listener there is no endpoint: end the run.
                    stop.store(true, Ordering::Relaxed);
                }
            })
            .context("--serve: cannot start the HTTP thread")?
    };
    eprintln!(
        "nettop: serving OpenMetrics at http://{bound}/metrics (sampled every {} s); Ctrl-C stops",
        cli.delay
    );
    if std::io::stdout().is_terminal() {
        let mut out = std::io::stdout();
        let _ = writeln!(out, "http://{bound}/metrics");
    }
    let mut ticker = Ticker::new(Duration::from_secs_f64(cli.delay));
    let mut result = Ok(0);
    while ticker.sleep(&stop, None) == Wake::Tick {
        match src.sample() {
            Ok(cur) => {
                let s = render(Some(&prev), &cur);
                if let Ok(mut g) = scrape.lock() {
                    *g = s;
                }
                prev = cur;
            }
            Err(e) => {
                result = Err(e.context("sampling for --serve"));
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = http.join();
    if let Some(e) = listener_error.lock().ok().and_then(|mut g| g.take()) {
        anyhow::bail!("--serve: the HTTP listener on {bound} failed: {e}");
    }
    result
}

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
    for_each_pair(
        rec,
        from,
        |prev, cur| match prev {
            Some(p) if cur.mono_ns > p.mono_ns => f(crate::model::compute(host, p, cur)),
            _ => Ok(()),
        },
        warn,
    )
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
            let opts = metric_options(cli);
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
