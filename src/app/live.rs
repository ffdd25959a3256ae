//! The live side of every mode: the collector opened and calibrated, the
//! one loop that turns its samples into frames (sample → compute → device
//! configuration), and the sample source the recording/serving loop takes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::app::cli::Cli;
use crate::app::options;
use crate::calibrate::again::Again;
use crate::collector::Collector;
use crate::model::frame::Frame;
use crate::record::SampleSource;
use crate::sample::{HostInfo, RawSample};
use crate::sys::sysroot::Sysroot;
use crate::topology::{HostTopology, LoadOptions};

/// The collector with the command line's options, calibrated (cache or
/// measured now) so that HIDDEN~ can be charged from the first frame.
pub fn open_collector(cli: &Cli) -> anyhow::Result<Collector> {
    let mut col = Collector::new(options::collector(cli))?;
    crate::calibrate::attach(&mut col, &options::sysroot(cli), &options::cache_dir(cli));
    Ok(col)
}

/// How often live frames re-read device configuration (the TUI re-reads
/// its topology as often).
const CONFIG_REFRESH: Duration = Duration::from_secs(15);

/// Device configuration for live frames: `topology::load_devices` (no
/// hwloc, no thread walk) at start and every [`CONFIG_REFRESH`]. A failed
/// load leaves frames without `config` (the device counters are still
/// right).
pub struct DeviceConfigSource {
    opts: LoadOptions,
    topo: Option<Arc<HostTopology>>,
    at: Option<Instant>,
}

impl DeviceConfigSource {
    pub fn new(opts: LoadOptions) -> Self {
        Self {
            opts,
            topo: None,
            at: None,
        }
    }

    /// The configuration as of at most [`CONFIG_REFRESH`] ago.
    /// `processes`: every process on the host, when the caller has them
    /// (`LoadOptions::processes`).
    pub fn current(
        &mut self,
        processes: impl FnOnce() -> Option<Vec<u32>>,
    ) -> Option<Arc<HostTopology>> {
        if self.at.is_none_or(|t| t.elapsed() >= CONFIG_REFRESH) {
            self.at = Some(Instant::now());
            self.opts.processes = processes();
            self.topo = crate::topology::load_devices(&self.opts).ok().map(Arc::new);
        }
        self.topo.clone()
    }

    pub fn attach(&mut self, frame: &mut Frame, processes: impl FnOnce() -> Option<Vec<u32>>) {
        if let Some(t) = self.current(processes) {
            frame.attach_config(&t);
        }
    }
}

/// Live frames: each call samples, computes the interval since the last
/// sample and, where the front end shows it, attaches the device
/// configuration. Batch and the TUI both run on it.
pub struct LiveFrames {
    col: Collector,
    prev: RawSample,
    config: Option<DeviceConfigSource>,
    /// A disturbed or failed calibration measured again in the background.
    again: Again,
    root: Sysroot,
    cache_dir: PathBuf,
}

impl LiveFrames {
    /// Opens the collector and takes the baseline sample. `with_config`:
    /// frames carry each device's configuration (batch text and JSON show
    /// it; the TUI joins the configuration its topology thread reads to
    /// each frame, so it would be read twice every 15 s).
    pub fn open(cli: &Cli, with_config: bool) -> anyhow::Result<Self> {
        let mut col = open_collector(cli)?;
        let prev = col
            .sample()
            .map_err(|e| e.context("taking the first sample"))?;
        Ok(Self {
            col,
            prev,
            config: with_config.then(|| DeviceConfigSource::new(options::topology(cli))),
            again: Again::new(Instant::now()),
            root: options::sysroot(cli),
            cache_dir: options::cache_dir(cli),
        })
    }

    pub fn host(&self) -> &HostInfo {
        self.col.host()
    }

    /// The frame from the last sample to now. A disturbed or failed
    /// calibration is measured again first when that is due (see
    /// [`crate::calibrate::again`]); the frame says so.
    pub fn next_frame(&mut self) -> anyhow::Result<Frame> {
        let now = Instant::now();
        let traced = self.col.bpf().is_some();
        let again = self
            .again
            .due(now, self.col.host().calibration.as_ref(), traced)
            .then(|| {
                let (outcome, cpu_ms) =
                    crate::calibrate::again::run(&mut self.col, &self.root, &self.cache_dir);
                self.again.measured(Instant::now(), &outcome, cpu_ms);
                outcome
            });
        let cur = self.col.sample()?;
        let mut frame = crate::model::compute(self.col.host(), &self.prev, &cur);
        if let Some(c) = self.config.as_mut() {
            c.attach(&mut frame, || self.col.process_ids(&cur));
        }
        let wanted = self
            .again
            .wants(self.col.host().calibration.as_ref(), traced);
        if again.is_some() || wanted {
            let w = &mut frame.calibration_warning;
            let mut parts: Vec<String> = Vec::new();
            if !w.is_empty() {
                parts.push(std::mem::take(w));
            } else if self.col.host().calibration.is_none() {
                parts.push("HIDDEN~ not calibrated".into());
            }
            parts.extend(again.map(|o| o.note()));
            if wanted {
                parts.push(self.again.status(Instant::now()));
            }
            *w = parts.join("; ");
        }
        self.prev = cur;
        Ok(frame)
    }

    /// The last sample taken: where a longer window than one frame starts
    /// (the before and after windows of an apply from the TUI).
    pub fn mark(&self) -> RawSample {
        self.prev.clone()
    }

    /// The frame from `mark` to the last sample taken, while frames of
    /// the usual interval go on between them.
    pub fn frame_since(&self, mark: &RawSample) -> Frame {
        crate::model::compute(self.col.host(), mark, &self.prev)
    }

    /// Every thread now, from the task sampler (see
    /// [`Collector::threads_now`]).
    pub fn threads_now(&mut self) -> Option<Vec<crate::sample::RawTask>> {
        self.col.threads_now()
    }

    /// Thread rows on or off: a new baseline, so the next frame's interval
    /// starts now with them.
    pub fn set_threads(&mut self, on: bool) -> anyhow::Result<()> {
        self.col.set_threads(on);
        self.prev = self.col.sample()?;
        Ok(())
    }
}

/// The collector as the recording/serving loop's source, with the topology
/// stored at the start of every recorded part.
pub struct Live {
    col: Collector,
    topology: LoadOptions,
}

impl Live {
    pub fn open(cli: &Cli) -> anyhow::Result<Self> {
        Ok(Self {
            col: open_collector(cli)?,
            topology: options::topology(cli),
        })
    }
}

impl SampleSource for Live {
    fn host(&self) -> &HostInfo {
        self.col.host()
    }
    fn sample(&mut self) -> anyhow::Result<RawSample> {
        self.col.sample()
    }
    fn topology(&mut self) -> Option<Vec<u8>> {
        let opts = LoadOptions {
            known_threads: self.col.threads_now(),
            ..self.topology.clone()
        };
        let loaded = crate::topology::load(&opts)
            .and_then(|t| serde_json::to_vec(&t).map_err(anyhow::Error::from));
        match loaded {
            Ok(json) => Some(json),
            Err(e) => {
                log::warn!(
                    "recording without topology (--pinning-check --replay will not work on it): {e:#}"
                );
                None
            }
        }
    }
}
