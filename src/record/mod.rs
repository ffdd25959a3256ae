//! `--record`: raw snapshots to a versioned, crash-safe file; reader for replay.
//!
//! The file format is documented in docs/record-format.md. Recordings hold
//! raw cumulative counters only ([`RawSample`]); frames are computed when the
//! recording is read, so a later fix to the model applies to old evidence.

pub mod format;
pub mod reader;
pub mod rotate;
/// Test scaffolding: synthetic samples (feature `testing`).
#[cfg(any(test, feature = "testing"))]
pub mod synth;
pub mod walk;
pub mod writer;

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::bail;

pub use format::Meta;
pub use reader::{Recording, Warning, WarningKind};
pub use rotate::MAX_ROTATED;
pub use writer::Writer;

/// Whether `path` is a regular file starting with the recording magic (so
/// a saved topology JSON or a garbage file is told apart before choosing
/// how to read it). A FIFO or device is not, and is never blocked on.
pub fn is_recording(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    crate::safefile::open_input(path, None)
        .is_ok_and(|mut f| f.read_exact(&mut magic).is_ok() && magic == format::MAGIC)
}

use crate::cli::Cli;
use crate::model::raw::{HostInfo, RawSample};

/// Where snapshots come from: the live collector, or fixtures in tests.
pub trait SampleSource {
    fn host(&self) -> &HostInfo;
    fn sample(&mut self) -> anyhow::Result<RawSample>;
    /// The host's configuration for `--pinning-check --replay`: a
    /// [`crate::topology::HostTopology`] as JSON, stored at the start of every
    /// file part. `None` when the source has none (fixtures, or the topology
    /// could not be read: the recording is still worth having).
    fn topology(&mut self) -> Option<Vec<u8>> {
        None
    }
}

/// When to stop and how to write.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    pub interval: Duration,
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    pub max_size: Option<u64>,
    pub compressed: bool,
    /// fdatasync after each record.
    pub sync: bool,
    /// One-line status on stderr (terminals only).
    pub progress: bool,
}

/// What a recording session did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordSummary {
    pub samples: u64,
    pub bytes: u64,
    pub rotations: u32,
    pub reason: String,
}

/// Longest `--duration`: about 31 years. Anything longer is a typo.
pub const MAX_DURATION: Duration = Duration::from_secs(1_000_000_000);

/// Smallest and largest `--max-size`.
pub const MIN_SIZE: u64 = 4 << 10;
pub const MAX_SIZE: u64 = 1 << 60;

/// `--duration` in the one duration syntax ([`crate::units`]).
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    crate::units::parse_duration("--duration", s, MAX_DURATION).map_err(anyhow::Error::msg)
}

/// `--max-size` in the one size syntax ([`crate::units`]).
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    crate::units::parse_size("--max-size", s, MIN_SIZE, MAX_SIZE).map_err(anyhow::Error::msg)
}

/// Creates FILE with its header. Fails on an unwritable or unsafe path,
/// or (with `--max-size`) on an older recording's parts in the way, before
/// any collector is started.
pub fn create_writer(path: &Path, opts: &RecordOptions) -> anyhow::Result<Writer> {
    if opts.max_size.is_some() {
        rotate::check_free(path)?;
    }
    Writer::create(path, opts.compressed, opts.sync)
}

/// Why a part cannot honour `--max-size`.
fn too_small(max: u64, need: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "--max-size {} is too small: a part needs {} for its host record, topology, two \
         snapshots (one interval) and end record; raise --max-size",
        human_bytes(max),
        human_bytes(need)
    )
}

/// The recording loop: a snapshot now, then one per tick of a
/// [`Ticker`](crate::ticker::Ticker) (a stall is one long interval, never a
/// burst). Stops after `count` snapshots, at the end of `duration` (with a
/// last snapshot then, so the whole span is covered), or when `stop` is set
/// (SIGINT/SIGTERM/SIGHUP); then writes the end record and returns.
/// `status` receives the one-line progress. With `max_size`, no part ever
/// exceeds it: room for the end record is kept, and a new part (host
/// record, topology, the previous snapshot again so its first interval can
/// be computed, the new snapshot) must fit too, or the recording stops
/// with an error.
pub fn record_loop(
    path: &Path,
    mut w: Writer,
    src: &mut dyn SampleSource,
    opts: &RecordOptions,
    stop: &AtomicBool,
    status: &mut dyn FnMut(&str),
) -> anyhow::Result<RecordSummary> {
    let start = Instant::now();
    let end = opts.duration.map(|d| start + d);
    let mut ticker = crate::ticker::Ticker::starting_at(start, opts.interval);
    let mut meta = Meta {
        format: format::VERSION,
        writer: format!("nettop {}", env!("CARGO_PKG_VERSION")),
        created_unix_ms: writer::now_unix_ms(),
        interval_s: opts.interval.as_secs_f64(),
        host: src.host().clone(),
        part: 0,
    };
    let mut parts = rotate::Parts::new(path, w.id());
    w.write_meta(&meta)?;
    let topology = src.topology();
    if let Some(t) = &topology {
        w.write_topology(t)?;
    }
    let end_room = w.end_record_bound()?;
    let mut total = RecordSummary::default();
    let mut last: Option<RawSample> = None;
    let reason = loop {
        let s = match src.sample() {
            Ok(s) => s,
            Err(e) => {
                let _ = w.finish("error");
                return Err(e);
            }
        };
        let rec = w.encode_sample(&s)?;
        if let Some(max) = opts.max_size
            && w.bytes() + rec.len() as u64 + end_room > max
        {
            if w.samples() < 2 {
                let need = w.bytes() + rec.len() as u64 + end_room;
                let _ = w.finish("error");
                return Err(too_small(max, need));
            }
            w.finish("rotated")?;
            parts.rotate()?;
            w = Writer::create(path, opts.compressed, opts.sync)?;
            parts.created(w.id());
            meta.part += 1;
            meta.created_unix_ms = writer::now_unix_ms();
            w.write_meta(&meta)?;
            if let Some(t) = &topology {
                w.write_topology(t)?;
            }
            // Each file stands alone: repeat the previous snapshot so the
            // first interval of the new file can be computed.
            if let Some(prev) = &last {
                w.write_sample(prev)?;
            }
            total.rotations += 1;
            let need = w.bytes() + rec.len() as u64 + end_room;
            if need > max {
                let _ = w.finish("error");
                return Err(too_small(max, need));
            }
        }
        let n = w.write_record(&rec)?;
        total.samples += 1;
        total.bytes += n;
        if opts.progress {
            let dropped = s
                .health
                .as_ref()
                .map(|h| h.map_full + h.napi_map_full + h.unmatched_exits + h.recursion_misses)
                .unwrap_or(0);
            status(&format!(
                "{} snapshots, {}, {} dropped events{}",
                total.samples,
                human_bytes(total.bytes),
                dropped,
                if total.rotations > 0 {
                    format!(", {} rotations", total.rotations)
                } else {
                    String::new()
                }
            ));
        }
        last = Some(s);
        if opts.count.is_some_and(|n| total.samples >= n) {
            break "count";
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            break "duration";
        }
        if ticker.sleep(stop, end) == crate::ticker::Wake::Stop {
            break "signal";
        }
    };
    w.finish(reason)?;
    total.reason = reason.to_string();
    Ok(total)
}

pub fn human_bytes(b: u64) -> String {
    let f = b as f64;
    if f >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", f / (1u64 << 30) as f64)
    } else if f >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", f / (1u64 << 20) as f64)
    } else if f >= 1024.0 {
        format!("{:.1} KiB", f / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// `nettop --record FILE`.
pub fn run_record(cli: &Cli, file: &Path) -> anyhow::Result<u8> {
    let opts = RecordOptions {
        interval: Duration::from_secs_f64(cli.delay),
        count: cli.iterations,
        duration: cli.duration.as_deref().map(parse_duration).transpose()?,
        max_size: cli.max_size.as_deref().map(parse_size).transpose()?,
        compressed: writer::wants_zstd(file),
        sync: true,
        progress: std::io::stderr().is_terminal(),
    };
    if let Some(d) = opts.duration
        && d < opts.interval
    {
        bail!(
            "--duration {} is shorter than one interval (-d {} s): nothing would be recorded",
            cli.duration.as_deref().unwrap_or_default(),
            cli.delay
        );
    }
    let stop = crate::signals::stop_flag()?;
    // Open the file first: an unwritable path fails before collecting.
    let w = create_writer(file, &opts)?;
    let mut src = match live_source(cli) {
        Ok(s) => s,
        Err(e) => {
            // Only if the name still is the file opened above.
            if crate::safefile::id_of(file).ok().flatten() == Some(w.id()) {
                let _ = std::fs::remove_file(file);
            }
            return Err(e);
        }
    };
    let mut until = String::new();
    if let Some(n) = opts.count {
        until = format!(", {n} snapshots");
    }
    if let Some(d) = &cli.duration {
        until.push_str(&format!(", for {d}"));
    }
    if let Some(m) = &cli.max_size {
        until.push_str(&format!(
            ", rotating at {m} (keeping {MAX_ROTATED} old files)"
        ));
    }
    eprintln!(
        "nettop: recording to {}{} every {} s{until}; Ctrl-C stops",
        file.display(),
        if opts.compressed { " (zstd)" } else { "" },
        cli.delay
    );
    let mut stderr = std::io::stderr();
    let mut status = |line: &str| {
        let _ = write!(stderr, "\r\x1b[2K{line}");
        let _ = stderr.flush();
    };
    let res = record_loop(file, w, src.as_mut(), &opts, &stop, &mut status);
    if opts.progress {
        eprintln!();
    }
    let sum = res?;
    eprintln!(
        "nettop: wrote {} snapshots ({}) to {}{}",
        sum.samples,
        human_bytes(sum.bytes),
        file.display(),
        if sum.rotations > 0 {
            format!(" after {} rotations", sum.rotations)
        } else {
            String::new()
        }
    );
    Ok(0)
}

struct Live(crate::collector::Collector, crate::topology::LoadOptions);

impl SampleSource for Live {
    fn host(&self) -> &HostInfo {
        self.0.host()
    }
    fn sample(&mut self) -> anyhow::Result<RawSample> {
        self.0.sample()
    }
    fn topology(&mut self) -> Option<Vec<u8>> {
        let loaded = crate::topology::load(&self.1)
            .and_then(|t| serde_json::to_vec(&t).map_err(anyhow::Error::from));
        match loaded {
            Ok(json) => Some(json),
            Err(e) => {
                eprintln!(
                    "nettop: warning: recording without topology (--pinning-check --replay will not work on it): {e:#}"
                );
                None
            }
        }
    }
}

/// The live collector with the CLI's options.
pub fn live_source(cli: &Cli) -> anyhow::Result<Box<dyn SampleSource>> {
    let c = crate::collector::Collector::new(crate::collector::CollectorOptions::from_cli(cli))?;
    Ok(Box::new(Live(
        c,
        crate::topology::LoadOptions::from_cli(cli),
    )))
}
