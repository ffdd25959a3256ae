//! The long-running modes, `--record` and `--serve`, alone or together: one
//! collector, one sampling clock, and each snapshot handed to every sink
//! (the recording, the scrape endpoint). Two processes used to load two
//! sets of BPF programs and pay the tracing cost twice.
//!
//! As a service (`--record DIR`, or `--record` with `--serve`) nettop tells
//! systemd when it is ready (`sd_notify`), logs one line per event in a form
//! journald keeps its priority for, and treats SIGHUP as "reopen the
//! output" instead of "stop".

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::bail;

use crate::app::cli::Cli;
use crate::app::live::{DeviceConfigSource, Live};
use crate::app::options;
use crate::app::sampling::{Event, Schedule, record_with, run_loop};
use crate::metrics::serve::{self, Endpoint};
use crate::record::retention::Retention;
use crate::record::session::{Recorder, Target};
use crate::record::{RecordOptions, SampleSource, human_bytes};

/// `--record` and/or `--serve` from the command line.
pub fn run(cli: &Cli) -> anyhow::Result<u8> {
    let target = cli.record.as_deref().map(Target::of);
    let service =
        target.is_some() && (cli.serve.is_some() || matches!(target, Some(Target::Dir(_))));
    let sched = Schedule {
        interval: options::interval(cli),
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
            cli.delay()
        );
    }
    let retention = Retention {
        keep: cli.keep.unwrap_or(Retention::default().keep),
        keep_for: cli.keep_for,
    };
    let (stop, reopen) = if service {
        let (s, r) = crate::sys::signals::service_flags()?;
        (s, Some(r))
    } else {
        (crate::sys::signals::stop_flag()?, None)
    };
    // Bind and create the first part before loading BPF: a busy port or an
    // unwritable path fails first.
    let listener = cli.serve.as_deref().map(serve::bind).transpose()?;
    let opts = target
        .as_ref()
        .map(|t| record_options(cli, t))
        .transpose()?;
    let recorder = match (&target, &opts) {
        // A service rides out disk faults (the recording pauses, the
        // endpoint keeps answering); a one-shot run ends with the error.
        (Some(t), Some(o)) if service => Some(Recorder::create_pausing(t, o, retention)?),
        (Some(t), Some(o)) => Some(Recorder::create(t, o, retention)?),
        _ => None,
    };
    let mut src: Box<dyn SampleSource> = match Live::open(cli) {
        Ok(s) => Box::new(s),
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
            crate::metrics::openmetrics::Options {
                // Counters are per sample; the configuration as of start.
                topology: DeviceConfigSource::new(options::topology(cli)).current(|| None),
                ..options::metrics(cli)
            },
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
                    log::info!("retention: deleted {}", p.display());
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
            if recorder.is_paused() {
                log::info!(target: crate::app::logger::NOTICE,
                    "SIGHUP: the recording is paused (disk fault); it begins a new part as soon as it can write"
                );
            } else {
                log::info!(target: crate::app::logger::NOTICE,
                    "SIGHUP: now recording to {}",
                    recorder.path().display()
                );
            }
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
        log::info!(
            "wrote {} snapshots ({}) to {}{}",
            sum.samples,
            human_bytes(sum.bytes),
            file.display(),
            if sum.rotations > 0 {
                format!(" in {} parts", sum.rotations + 1)
            } else {
                String::new()
            },
        );
        if sum.dropped > 0 {
            log::warn!(
                "{} snapshots were dropped while disk faults paused the recording",
                sum.dropped
            );
        }
    }
    Ok(0)
}

fn record_options(cli: &Cli, target: &Target) -> anyhow::Result<RecordOptions> {
    Ok(RecordOptions {
        interval: options::interval(cli),
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
    log::info!(
        "{} (sampled every {} s); {stop}",
        what.join(" and "),
        cli.delay()
    );
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
        log::warn!("cannot notify systemd: {e}");
    }
}

/// Whether `path` would be recorded as a directory of daily parts.
pub fn is_dir_target(path: &Path) -> bool {
    matches!(Target::of(path), Target::Dir(_))
}
