//! The long-running modes, `--record` and `--serve`, alone or together: one
//! collector, one sampling clock, and each snapshot handed to every sink
//! (the recording, the scrape endpoint). Two processes used to load two
//! sets of BPF programs and pay the tracing cost twice.
//!
//! As a service (`--record DIR`, or `--record` with `--serve`) nettop tells
//! systemd when it is ready (`sd_notify`), logs one line per event in a form
//! journald keeps its priority for, and treats SIGHUP as "reopen the
//! output" instead of "stop".

pub mod log;

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::cli::Cli;
use crate::export::serve::{self, Endpoint};
use crate::model::raw::RawSample;
use crate::record::retention::{self, Retention};
use crate::record::session::{Recorder, Target};
use crate::record::{RecordOptions, RecordSummary, SampleSource, human_bytes};
use crate::ticker::{Ticker, Wake};

/// When the sampling loop stops.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    pub interval: Duration,
    pub count: Option<u64>,
    pub duration: Option<Duration>,
}

/// What the loop hands back after each snapshot.
pub enum Event<'a> {
    /// Snapshot `n` (from 1) went to every sink.
    Sampled {
        n: u64,
        cur: &'a RawSample,
        recorder: Option<&'a mut Recorder>,
    },
    /// SIGHUP closed the live part; a new one is open.
    Reopened { recorder: &'a mut Recorder },
}

/// The sampling loop every long-running mode shares: a snapshot now, then
/// one per tick of a [`Ticker`] (a stall is one long interval, never a
/// burst), each written to `recorder` and rendered into `endpoint`. Stops
/// after `count` snapshots, at the end of `duration` (with a last snapshot
/// then, so the whole span is covered) or when `stop` is set; returns why.
/// When `reopen` is set (SIGHUP), the recorder starts a new part before
/// the next snapshot. Closing the recording is the caller's: it owns it
/// and must end it on errors too.
pub fn run_loop(
    src: &mut dyn SampleSource,
    mut recorder: Option<&mut Recorder>,
    mut endpoint: Option<&mut Endpoint>,
    sched: &Schedule,
    stop: &AtomicBool,
    reopen: Option<&AtomicBool>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> anyhow::Result<&'static str> {
    let start = Instant::now();
    let end = sched.duration.map(|d| start + d);
    let mut ticker = Ticker::starting_at(start, sched.interval);
    let mut prev: Option<RawSample> = None;
    let mut n = 0u64;
    loop {
        if let (Some(flag), Some(r)) = (reopen, recorder.as_deref_mut())
            && flag.swap(false, Ordering::Relaxed)
        {
            r.reopen(prev.as_ref())?;
            on_event(Event::Reopened { recorder: r });
        }
        let cur = src.sample()?;
        if let Some(r) = recorder.as_deref_mut() {
            r.push(prev.as_ref(), &cur)?;
        }
        if let Some(e) = endpoint.as_deref_mut() {
            e.update(prev.as_ref(), &cur)?;
        }
        n += 1;
        on_event(Event::Sampled {
            n,
            cur: &cur,
            recorder: recorder.as_deref_mut(),
        });
        prev = Some(cur);
        if sched.count.is_some_and(|c| n >= c) {
            return Ok("count");
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            return Ok("duration");
        }
        if ticker.sleep(stop, end) == Wake::Stop {
            return Ok("signal");
        }
    }
}

/// Records `src` into `recorder` until the schedule or `stop` ends it, and
/// closes the recording (with reason "error" when something failed).
pub fn record_with(
    mut recorder: Recorder,
    src: &mut dyn SampleSource,
    endpoint: Option<&mut Endpoint>,
    sched: &Schedule,
    stop: &AtomicBool,
    reopen: Option<&AtomicBool>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> anyhow::Result<RecordSummary> {
    let topology = src.topology();
    if let Err(e) = recorder.begin(src.host(), sched.interval, topology) {
        recorder.abort();
        return Err(e);
    }
    match run_loop(
        src,
        Some(&mut recorder),
        endpoint,
        sched,
        stop,
        reopen,
        on_event,
    ) {
        Ok(reason) => recorder.finish(reason),
        Err(e) => {
            recorder.abort();
            Err(e)
        }
    }
}

/// `--record` and/or `--serve` from the command line.
pub fn run(cli: &Cli) -> anyhow::Result<u8> {
    let target = cli.record.as_deref().map(Target::of);
    let service =
        target.is_some() && (cli.serve.is_some() || matches!(target, Some(Target::Dir(_))));
    let sched = Schedule {
        interval: Duration::from_secs_f64(cli.delay),
        count: cli.iterations,
        duration: cli
            .duration
            .as_deref()
            .map(crate::record::parse_duration)
            .transpose()?,
    };
    if let Some(d) = sched.duration
        && d < sched.interval
    {
        bail!(
            "--duration {} is shorter than one interval (-d {} s): nothing would be recorded",
            cli.duration.as_deref().unwrap_or_default(),
            cli.delay
        );
    }
    let retention = Retention {
        keep: cli.keep.unwrap_or(Retention::default().keep),
        keep_for: cli.keep_for,
    };
    let (stop, reopen) = if service {
        let (s, r) = crate::signals::service_flags()?;
        (s, Some(r))
    } else {
        (crate::signals::stop_flag()?, None)
    };
    // Bind and create the first part before loading BPF: a busy port or an
    // unwritable path fails first.
    let listener = cli.serve.as_deref().map(serve::bind).transpose()?;
    let opts = target
        .as_ref()
        .map(|t| record_options(cli, t))
        .transpose()?;
    let recorder = match (&target, &opts) {
        (Some(t), Some(o)) => Some(Recorder::create(t, o, retention)?),
        _ => None,
    };
    let mut src = match crate::record::live_source(cli) {
        Ok(s) => s,
        Err(e) => {
            if let Some(r) = recorder {
                r.discard();
            }
            return Err(e);
        }
    };
    let mut endpoint = listener.map(|l| {
        Endpoint::new(
            l,
            src.host().clone(),
            serve::live_metric_options(cli),
            std::sync::Arc::clone(&stop),
        )
    });
    announce(
        cli,
        recorder.as_ref(),
        endpoint.as_ref(),
        &retention,
        service,
    );
    let progress = !service && recorder.is_some() && std::io::stderr().is_terminal();
    let status = status_line(recorder.as_ref(), endpoint.as_ref());
    let mut on_event = |ev: Event<'_>| match ev {
        Event::Sampled { n, cur, recorder } => {
            if n == 1 {
                notify(&[sd_notify::NotifyState::Ready]);
                notify(&[sd_notify::NotifyState::Status(&status)]);
            }
            if let Some(r) = recorder {
                for p in r.take_deleted() {
                    log::info(&format!("retention: deleted {}", p.display()));
                }
                if progress {
                    let mut e = std::io::stderr();
                    let line = crate::record::progress_line(r.summary(), cur);
                    let _ = write!(e, "\r\x1b[2K{line}");
                    let _ = e.flush();
                }
            }
        }
        Event::Reopened { recorder } => {
            log::notice(&format!(
                "SIGHUP: now recording to {}",
                recorder.path().display()
            ));
        }
    };
    let res = match recorder {
        Some(r) => record_with(
            r,
            src.as_mut(),
            endpoint.as_mut(),
            &sched,
            &stop,
            reopen.as_deref(),
            &mut on_event,
        )
        .map(Some),
        None => run_loop(
            src.as_mut(),
            None,
            endpoint.as_mut(),
            &sched,
            &stop,
            None,
            &mut on_event,
        )
        .map(|_| None),
    };
    notify(&[sd_notify::NotifyState::Stopping]);
    if progress {
        eprintln!();
    }
    stop.store(true, Ordering::Relaxed);
    let served = endpoint.map(Endpoint::finish).transpose();
    let sum = res.map_err(|e| {
        e.context(if cli.record.is_some() {
            "recording"
        } else {
            "sampling for --serve"
        })
    })?;
    served?;
    if let (Some(sum), Some(file)) = (sum, &cli.record) {
        log::info(&format!(
            "wrote {} snapshots ({}) to {}{}",
            sum.samples,
            human_bytes(sum.bytes),
            file.display(),
            if sum.rotations > 0 {
                format!(" in {} parts", sum.rotations + 1)
            } else {
                String::new()
            }
        ));
    }
    Ok(0)
}

fn record_options(cli: &Cli, target: &Target) -> anyhow::Result<RecordOptions> {
    Ok(RecordOptions {
        interval: Duration::from_secs_f64(cli.delay),
        count: cli.iterations,
        duration: None,
        max_size: cli
            .max_size
            .as_deref()
            .map(crate::record::parse_size)
            .transpose()?,
        // A directory holds a service's recordings: always compressed.
        compressed: match target {
            Target::File(f) => crate::record::writer::wants_zstd(f),
            Target::Dir(_) => true,
        },
        sync: true,
        progress: false,
    })
}

/// The one-line `STATUS=` systemd shows.
fn status_line(rec: Option<&Recorder>, ep: Option<&Endpoint>) -> String {
    let mut parts = Vec::new();
    if let Some(r) = rec {
        parts.push(format!("recording to {}", r.path().display()));
    }
    if let Some(e) = ep {
        parts.push(format!("serving http://{}/metrics", e.bound()));
    }
    parts.join(", ")
}

/// What the run does, logged once at start.
fn announce(
    cli: &Cli,
    rec: Option<&Recorder>,
    ep: Option<&Endpoint>,
    ret: &Retention,
    service: bool,
) {
    let mut what = Vec::new();
    if let Some(r) = rec {
        let mut s = format!("recording to {}", r.path().display());
        if let Some(n) = cli.iterations {
            s.push_str(&format!(", {n} snapshots"));
        }
        if let Some(d) = &cli.duration {
            s.push_str(&format!(", for {d}"));
        }
        if let Some(m) = &cli.max_size {
            s.push_str(&format!(", rotating at {m}"));
        }
        if matches!(cli.record.as_deref().map(Target::of), Some(Target::Dir(_))) {
            s.push_str(", a new part each UTC day");
        }
        if cli.max_size.is_some() || service {
            s.push_str(&format!(", keeping {} old parts", ret.keep));
        }
        if let Some(d) = ret.keep_for {
            s.push_str(&format!(" for at most {}", humantime::format_duration(d)));
        }
        what.push(s);
    }
    if let Some(e) = ep {
        what.push(format!(
            "serving OpenMetrics at http://{}/metrics",
            e.bound()
        ));
    }
    let stop = if service {
        "SIGTERM stops, SIGHUP reopens the recording"
    } else {
        "Ctrl-C stops"
    };
    log::info(&format!(
        "{} (sampled every {} s); {stop}",
        what.join(" and "),
        cli.delay
    ));
    if !service
        && std::io::stdout().is_terminal()
        && let Some(e) = ep
    {
        println!("http://{}/metrics", e.bound());
    }
}

/// Tells systemd (when it started us with `Type=notify`); a no-op elsewhere.
fn notify(state: &[sd_notify::NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(state) {
        log::warn(&format!("cannot notify systemd: {e}"));
    }
}

/// `--keep`'s parser for clap.
pub fn parse_keep(s: &str) -> Result<u32, String> {
    retention::parse_keep(s)
}

/// `--keep-for`'s parser for clap.
pub fn parse_keep_for(s: &str) -> Result<Duration, String> {
    retention::parse_keep_for(s)
}

/// Whether `path` would be recorded as a directory of daily parts.
pub fn is_dir_target(path: &Path) -> bool {
    matches!(Target::of(path), Target::Dir(_))
}
