//! `--record`: raw snapshots to a versioned, crash-safe file; reader for replay.
//!
//! The file format is documented in docs/record-format.md. Recordings hold
//! raw cumulative counters only ([`RawSample`]); frames are computed when the
//! recording is read, so a later fix to the model applies to old evidence.

pub mod fault;
pub mod format;
pub mod reader;
pub mod retention;
pub mod rotate;
pub mod session;
/// Test scaffolding: synthetic samples (feature `testing`).
#[cfg(any(test, feature = "testing"))]
pub mod synth;
pub mod walk;
pub mod writer;

use std::path::Path;
use std::time::Duration;

pub use format::Meta;
pub use reader::{Recording, Warning, WarningKind, Window};
pub use rotate::MAX_ROTATED;
pub use writer::Writer;

/// Whether `path` is a regular file starting with the recording magic (so
/// a saved topology JSON or a garbage file is told apart before choosing
/// how to read it). A FIFO or device is not, and is never blocked on.
pub fn is_recording(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    crate::sys::safefile::open_input(path, None)
        .is_ok_and(|mut f| f.read_exact(&mut magic).is_ok() && magic == format::MAGIC)
}

use crate::sample::{HostInfo, RawSample};

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
    /// Snapshots a paused recording dropped (disk faults, see [`fault`]).
    pub dropped: u64,
}

/// Longest `--duration`: about 31 years. Anything longer is a typo.
pub const MAX_DURATION: Duration = Duration::from_secs(1_000_000_000);

/// Smallest and largest `--max-size`.
pub const MIN_SIZE: u64 = 4 << 10;
pub const MAX_SIZE: u64 = 1 << 60;

/// `--duration` in the one duration syntax ([`crate::sys::units`]).
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    crate::sys::units::parse_duration("--duration", s, MAX_DURATION).map_err(anyhow::Error::msg)
}

/// `--max-size` in the one size syntax ([`crate::sys::units`]).
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    crate::sys::units::parse_size("--max-size", s, MIN_SIZE, MAX_SIZE).map_err(anyhow::Error::msg)
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

/// The recorder's one-line status: snapshots, bytes, events the BPF side
/// dropped, rotations.
pub fn progress_line(total: &RecordSummary, s: &RawSample) -> String {
    let dropped = s
        .health
        .as_ref()
        .map(|h| h.map_full + h.napi_map_full + h.unmatched_exits + h.recursion_misses)
        .unwrap_or(0);
    format!(
        "{} snapshots, {}, {} dropped events{}",
        total.samples,
        human_bytes(total.bytes),
        dropped,
        if total.rotations > 0 {
            format!(", {} rotations", total.rotations)
        } else {
            String::new()
        }
    )
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
