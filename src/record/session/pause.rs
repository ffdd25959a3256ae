//! A service's recording on a sick disk: a write that fails with a disk
//! fault ([`Fault`]) closes the live part at its last whole record,
//! deletes the oldest finished parts while space is what is missing, and
//! begins a new part; when that cannot be done the recording pauses.
//! While paused each snapshot is dropped (and counted) after one cheap
//! look at the file system, and the first one that fits begins a new
//! part, as SIGHUP does. One log line when it pauses, one when it resumes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Out, Recorder};
use crate::record::fault::{self, Fault};
use crate::record::retention;
use crate::record::writer::Writer;
use crate::sample::RawSample;
use crate::sys::safefile::FileId;

/// A paused recording: since when, why, and what it dropped.
pub(super) struct Pause {
    fault: Fault,
    since: Instant,
    dropped: u64,
    /// The part the fault hit, until its end record is written (on a full
    /// disk, once there is room for it).
    open: Option<Writer>,
    /// That part, which making room never deletes.
    hit: Option<FileId>,
}

impl Recorder {
    /// A write of `cur` failed with `e`: the end of a service's recording
    /// only when it is no disk fault.
    pub(super) fn fault(
        &mut self,
        e: anyhow::Error,
        prev: Option<&RawSample>,
        cur: &RawSample,
    ) -> anyhow::Result<()> {
        let Some(fault) = Fault::of(&e).filter(|_| self.pausing) else {
            return Err(e);
        };
        self.health.failed(fault);
        // What the failed write left was cut back to whole records
        // ([`Writer::write_record`]); the part ends there.
        let open = self.w.take();
        self.pause = Some(Pause::new(fault, open, self.live_id));
        self.recover(prev, cur, Some(&e))
    }

    /// A fault with no snapshot at hand (the first part at the start, or
    /// SIGHUP's new part): pause, and let the next snapshot try again.
    pub(super) fn fault_between(&mut self, e: anyhow::Error) -> anyhow::Result<()> {
        let Some(fault) = Fault::of(&e).filter(|_| self.pausing) else {
            return Err(e);
        };
        self.health.failed(fault);
        let open = self.w.take();
        self.pause = Some(Pause::new(fault, open, self.live_id));
        self.health.paused = Some(fault);
        self.log_pause(fault, &e);
        Ok(())
    }

    /// Each snapshot while paused: one cheap look at the file system, and
    /// a new part when it may fit.
    pub(super) fn retry(
        &mut self,
        prev: Option<&RawSample>,
        cur: &RawSample,
    ) -> anyhow::Result<()> {
        let need = self.head_bytes + 2 * self.last_record + self.end_room;
        if !fault::may_fit(self.dir(), need) {
            self.dropped();
            return Ok(());
        }
        self.recover(prev, cur, None)
    }

    /// Closes the part the fault hit and begins a new one with `cur`,
    /// deleting the oldest finished parts one by one while only space is
    /// missing; pauses when that does not help. `first` is the write
    /// error of a recording that was running, for the log.
    fn recover(
        &mut self,
        prev: Option<&RawSample>,
        cur: &RawSample,
        first: Option<&anyhow::Error>,
    ) -> anyhow::Result<()> {
        let mut freed = Vec::new();
        let err = loop {
            let e = match self.resume(prev, cur) {
                Ok(()) => {
                    self.resumed(first, &freed);
                    return Ok(());
                }
                Err(e) => e,
            };
            let Some(fault) = Fault::of(&e) else {
                return Err(e);
            };
            self.health.failed(fault);
            if let Some(p) = self.pause.as_mut() {
                p.fault = fault;
            }
            if !fault.freed_by_pruning() {
                break e;
            }
            match self.remove_oldest() {
                Some(gone) => freed.push(gone),
                None => break e,
            }
        };
        self.deleted.extend(freed);
        self.dropped();
        if first.is_some()
            && let Some(fault) = self.pause.as_ref().map(|p| p.fault)
        {
            self.log_pause(fault, &err);
        }
        Ok(())
    }

    /// Closes the part the fault hit (on a full disk first, since a new
    /// part cannot fit where its end record does not) and begins a new
    /// part with `cur`.
    fn resume(&mut self, prev: Option<&RawSample>, cur: &RawSample) -> anyhow::Result<()> {
        if let Some(p) = self.pause.as_mut()
            && let Some(w) = p.open.as_mut()
        {
            match w.end("paused") {
                Ok(_) => p.open = None,
                Err(e) if Fault::of(&e).is_some_and(Fault::freed_by_pruning) => return Err(e),
                // Read-only or failing: perhaps another file system is
                // mounted there by now; the part keeps its whole records.
                Err(_) => {}
            }
        }
        self.open_next(prev)?;
        let written = self
            .writer()
            .and_then(|w| w.encode_sample(cur))
            .and_then(|rec| self.writer()?.write_record(&rec));
        match written {
            Ok(n) => {
                self.total.samples += 1;
                self.total.bytes += n;
                self.last_record = n;
                Ok(())
            }
            Err(e) => {
                // Nothing new in it: not a part worth keeping.
                if let Some(w) = self.w.take() {
                    w.remove();
                }
                Err(e)
            }
        }
    }

    /// The recording runs again.
    fn resumed(&mut self, first: Option<&anyhow::Error>, freed: &[PathBuf]) {
        let Some(mut p) = self.pause.take() else {
            return;
        };
        if let Some(w) = p.open.as_mut() {
            let _ = w.end("paused");
        }
        self.health.paused = None;
        self.deleted.extend(freed.iter().cloned());
        match first {
            // It never paused: a new part (after deleting old ones) did.
            Some(e) => log::warn!(
                "recording: {} ({}); {}recording goes on in {}",
                one_line(e),
                p.fault.errno(),
                if freed.is_empty() {
                    String::new()
                } else {
                    format!("deleted the {} oldest part(s) to make room; ", freed.len())
                },
                self.path.display()
            ),
            None => log::info!(
                "recording resumed in {} after {} paused ({} snapshots dropped)",
                self.path.display(),
                humantime::format_duration(Duration::from_secs(p.since.elapsed().as_secs())),
                p.dropped
            ),
        }
    }

    /// The one line a pause logs; resuming logs the other.
    fn log_pause(&self, fault: Fault, e: &anyhow::Error) {
        log::warn!(
            "recording paused: cannot write to {} ({}: {}); snapshots are dropped and counted \
             until it can write again, tried each interval",
            self.dir().display(),
            fault.errno(),
            one_line(e),
        );
    }

    fn dropped(&mut self) {
        self.health.dropped += 1;
        if let Some(p) = self.pause.as_mut() {
            p.dropped += 1;
            self.health.paused = Some(p.fault);
        }
    }

    /// Where the parts go: DIR, or FILE's directory.
    fn dir(&self) -> &Path {
        match &self.out {
            Out::Dir { dir, .. } => dir,
            Out::File(_) => match self.path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            },
        }
    }

    /// Deletes the oldest finished part to make room: never the live
    /// part, nor the one the fault hit. `None` when none is left, or
    /// deleting failed.
    fn remove_oldest(&mut self) -> Option<PathBuf> {
        let hit = self.pause.as_ref().and_then(|p| p.hit);
        let gone = match &mut self.out {
            Out::File(parts) => parts.remove_oldest(hit),
            Out::Dir { dir, .. } => retention::remove_oldest(dir, &self.path),
        };
        gone.ok().flatten()
    }
}

impl Pause {
    fn new(fault: Fault, open: Option<Writer>, hit: Option<FileId>) -> Pause {
        Pause {
            fault,
            since: Instant::now(),
            dropped: 0,
            hit,
            open,
        }
    }

    /// The part the fault left open, to close at the end of the run.
    pub(super) fn into_open(self) -> Option<Writer> {
        self.open
    }
}

/// An error chain on one line, for the log.
pub(super) fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
}
