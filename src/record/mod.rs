//! `--record`: raw snapshots to a versioned, crash-safe file; reader for replay.
//!
//! The file format is documented in docs/record-format.md. Recordings hold
//! raw cumulative counters only ([`RawSample`]); frames are computed when the
//! recording is read, so a later fix to the model applies to old evidence.

pub mod format;
pub mod reader;
pub mod synth;
pub mod writer;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

pub use format::Meta;
pub use reader::{Recording, Warning, WarningKind};
pub use writer::Writer;

/// Whether `path` starts with the recording magic (so a saved topology JSON
/// or a garbage file is told apart before choosing how to read it).
pub fn is_recording(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == format::MAGIC)
}

use crate::cli::Cli;
use crate::model::raw::{HostInfo, RawSample};

/// Rotated files kept besides the live one (FILE.1 … FILE.N); older ones are
/// deleted, so disk use stays below (N + 1) × `--max-size`.
pub const MAX_ROTATED: u32 = 4;

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

/// `30s`, `10m`, `2h`, `1d`, `1h30m` or plain seconds.
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let t = s.trim();
    let bad = || anyhow::anyhow!("--duration '{s}': expected e.g. 30s, 10m, 2h, 1h30m");
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<f64>() {
        if !(secs > 0.0 && secs.is_finite()) {
            return Err(bad());
        }
        return Ok(Duration::from_secs_f64(secs));
    }
    let mut total = 0f64;
    let mut num = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mult = match c {
            's' => 1.0,
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            _ => return Err(bad()),
        };
        let v: f64 = num.parse().map_err(|_| bad())?;
        total += v * mult;
        num.clear();
    }
    if !(num.is_empty() && total > 0.0 && total.is_finite() && total < 1e9) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(total))
}

/// `100M`, `1G`, `512K`, `1.5G` or plain bytes (powers of 1024).
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let bad = || anyhow::anyhow!("--max-size '{s}': expected e.g. 100M, 1G, 500K");
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'B' => 1,
                _ => return Err(bad()),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    let bytes = v * mult as f64;
    if !(4096.0..1e18).contains(&bytes) {
        bail!("--max-size '{s}': must be at least 4K");
    }
    Ok(bytes as u64)
}

/// FILE.k for rotation.
fn rotated(path: &Path, k: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{k}"));
    PathBuf::from(s)
}

/// Shifts FILE → FILE.1 → … → FILE.MAX_ROTATED (dropping the oldest).
fn rotate_files(path: &Path) -> anyhow::Result<()> {
    let oldest = rotated(path, MAX_ROTATED);
    if oldest.exists() {
        std::fs::remove_file(&oldest)
            .with_context(|| format!("cannot remove {}", oldest.display()))?;
    }
    for k in (1..MAX_ROTATED).rev() {
        let from = rotated(path, k);
        if from.exists() {
            std::fs::rename(&from, rotated(path, k + 1))
                .with_context(|| format!("cannot rotate {}", from.display()))?;
        }
    }
    std::fs::rename(path, rotated(path, 1))
        .with_context(|| format!("cannot rotate {}", path.display()))
}

/// Creates FILE with its header. Fails on an unwritable path before any
/// collector is started.
pub fn create_writer(path: &Path, opts: &RecordOptions) -> anyhow::Result<Writer> {
    Writer::create(path, opts.compressed, opts.sync)
}

/// The recording loop. `stop` is set by SIGINT/SIGTERM; the loop then writes
/// the end record and returns. `status` receives the one-line progress.
pub fn record_loop(
    path: &Path,
    mut w: Writer,
    src: &mut dyn SampleSource,
    opts: &RecordOptions,
    stop: &AtomicBool,
    status: &mut dyn FnMut(&str),
) -> anyhow::Result<RecordSummary> {
    let start = Instant::now();
    let mut meta = Meta {
        format: format::VERSION,
        writer: format!("nettop {}", env!("CARGO_PKG_VERSION")),
        created_unix_ms: writer::now_unix_ms(),
        interval_s: opts.interval.as_secs_f64(),
        host: src.host().clone(),
        part: 0,
    };
    w.write_meta(&meta)?;
    let topology = src.topology();
    if let Some(t) = &topology {
        w.write_topology(t)?;
    }
    let mut total = RecordSummary::default();
    let mut last: Option<RawSample> = None;
    let mut k: u64 = 0;
    let reason = loop {
        if stop.load(Ordering::Relaxed) {
            break "signal";
        }
        if opts.count.is_some_and(|n| total.samples >= n) {
            break "count";
        }
        if opts.duration.is_some_and(|d| start.elapsed() >= d) {
            break "duration";
        }
        let s = src.sample()?;
        let rec = w.encode_sample(&s)?;
        if let Some(max) = opts.max_size
            && w.samples() > 0
            && w.bytes() + rec.len() as u64 > max
        {
            w.finish("rotated")?;
            rotate_files(path)?;
            w = Writer::create(path, opts.compressed, opts.sync)?;
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
        k += 1;
        // Deadline-based: the interval does not drift by the sampling time.
        let due = start + opts.interval.mul_f64(k as f64);
        while Instant::now() < due {
            if stop.load(Ordering::Relaxed)
                || opts.count.is_some_and(|n| total.samples >= n)
                || opts.duration.is_some_and(|d| start.elapsed() >= d)
            {
                break;
            }
            let left = due.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(50)));
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
    if opts.count == Some(0) {
        bail!("-n 0: nothing to record");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("cannot install signal handler")?;
    }
    // Open the file first: an unwritable path fails before collecting.
    let w = create_writer(file, &opts)?;
    let mut src = match live_source(cli) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(file);
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
    let c = crate::collector::Collector::new(crate::collector::CollectorOptions {
        sysroot: crate::sysroot::Sysroot::new(&cli.sysroot),
        no_bpf: cli.no_bpf,
        pids: cli.pids.clone(),
        bpf_stats: cli.bpf_stats,
        cache_dir: cli.cache_dir.clone(),
    })?;
    Ok(Box::new(Live(
        c,
        crate::topology::LoadOptions::from_cli(cli),
    )))
}
