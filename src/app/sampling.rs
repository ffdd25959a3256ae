//! The run's one sampling loop: snapshots from a [`SampleSource`] on the
//! ticker's grid, handed to every sink (a recording, the scrape endpoint).
//! `--record`, `--serve` and both together run it; tests drive it with
//! fixture sources.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::metrics::openmetrics::RecordingHealth;
use crate::metrics::serve::Endpoint;
use crate::record::fault::Health;
use crate::record::retention::Retention;
use crate::record::session::Recorder;
use crate::record::{RecordOptions, RecordSummary, SampleSource, Writer};
use crate::sample::RawSample;
use crate::sys::ticker::{Ticker, Wake};

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
            if let Some(r) = recorder.as_deref() {
                e.set_recording(recording_health(r.health()));
            }
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

/// The recording's health as the scrape shows it.
fn recording_health(h: &Health) -> RecordingHealth {
    RecordingHealth {
        paused: h.paused.is_some(),
        dropped_samples: h.dropped,
        write_errors: h.errors().map(|(f, n)| (f.label(), n)).collect(),
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

/// The recording loop over any [`SampleSource`]: the run's one sampling
/// loop ([`run_loop`]) with a recording as its only sink,
/// keeping the default number of rotated parts. Stops after `count`
/// snapshots, at the end of `duration`, or when `stop` is set; then writes
/// the end record and returns. `status` receives the one-line progress
/// when `opts.progress` is set.
pub fn record_loop(
    path: &Path,
    w: Writer,
    src: &mut dyn SampleSource,
    opts: &RecordOptions,
    stop: &AtomicBool,
    status: &mut dyn FnMut(&str),
) -> anyhow::Result<RecordSummary> {
    let rec = Recorder::from_writer(path, w, opts, Retention::default());
    let sched = Schedule {
        interval: opts.interval,
        count: opts.count,
        duration: opts.duration,
    };
    record_with(rec, src, None, &sched, stop, None, &mut |ev| {
        if let Event::Sampled {
            cur,
            recorder: Some(r),
            ..
        } = ev
            && opts.progress
        {
            status(&crate::record::progress_line(r.summary(), cur));
        }
    })
}
