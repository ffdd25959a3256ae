//! One recording session: the live part, its rotation (size, day, SIGHUP)
//! and retention. The sampling loop that feeds it is shared with `--serve`
//! ([`crate::app::service`]); this file only decides which file a snapshot goes
//! to and when a part ends.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

mod pause;

use super::fault::{Fault, Health};
use super::format::{self, Meta};
use super::retention::{self, Retention};
use super::rotate::{self, Parts};
use super::writer::{self, Writer};
use super::{RecordOptions, RecordSummary, too_small};
use crate::sample::{HostInfo, RawSample};
use crate::sys::safefile::FileId;
use pause::{Pause, one_line};

/// How often `--keep-for` is applied between rotations.
const EXPIRE_EVERY: Duration = Duration::from_secs(60);

/// Where `--record` writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// FILE, rotated into FILE.1 … FILE.N with `--max-size`.
    File(PathBuf),
    /// DIR/nettop-YYYYMMDD-HHMMSS.rec.zst, a new part each UTC day.
    Dir(PathBuf),
}

impl Target {
    /// A directory when `path` is one (or names one with a trailing `/`).
    /// The directory is kept without its trailing slashes: with them,
    /// `lstat` and `open` resolve a symlink (POSIX path resolution), and
    /// `--record link/` slipped past the symlink check that `--record link`
    /// met.
    pub fn of(path: &Path) -> Target {
        let bytes = path.as_os_str().as_encoded_bytes();
        // "/" or "///" stay the root.
        let end = bytes
            .iter()
            .rposition(|b| *b != b'/')
            .map_or(bytes.len().min(1), |i| i + 1);
        let bare = &bytes[..end];
        let slash = bare.len() < bytes.len();
        // SAFETY: `bare` is a prefix of an OsStr's encoded bytes that ends
        // just before an ASCII '/' (or is empty or "/"), a split at an ASCII
        // character, so it is valid OsStr encoding, as
        // `from_encoded_bytes_unchecked` requires.
        let bare = Path::new(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(bare) });
        if slash || path.is_dir() {
            Target::Dir(bare.to_path_buf())
        } else {
            Target::File(path.to_path_buf())
        }
    }
}

enum Out {
    File(Parts),
    /// `named`: the start time in the live part's name, which the next
    /// part's name must follow.
    Dir {
        dir: PathBuf,
        day: u64,
        named: u64,
    },
}

/// The recording side of a run: snapshots in, parts on disk.
pub struct Recorder {
    out: Out,
    /// The live part; `None` while paused.
    w: Option<Writer>,
    /// The live part, or while paused the last one.
    path: PathBuf,
    meta: Option<Meta>,
    topology: Option<Vec<u8>>,
    end_room: u64,
    max_size: Option<u64>,
    compressed: bool,
    sync: bool,
    retention: Retention,
    last_expiry: Instant,
    total: RecordSummary,
    deleted: Vec<PathBuf>,
    /// Disk faults pause the recording instead of ending it (a service).
    pausing: bool,
    pause: Option<Pause>,
    health: Health,
    /// Whether a part was begun (host record written): the next is part 1.
    begun: bool,
    /// What a new part takes before its first new snapshot (host record,
    /// topology, the repeated snapshot), and the last snapshot's record:
    /// the room a paused recording waits for.
    head_bytes: u64,
    last_record: u64,
    /// The live part (while paused: the last one), which making room
    /// never deletes.
    live_id: Option<FileId>,
}

impl Recorder {
    /// Creates the first part. Runs before any collector starts, so an
    /// unwritable or unsafe path (or, for FILE, an older recording's parts
    /// in the way) fails first.
    pub fn create(
        target: &Target,
        opts: &RecordOptions,
        retention: Retention,
    ) -> anyhow::Result<Recorder> {
        let mut out = Recorder::prepare(target, opts, retention)?;
        let w = Recorder::first_part(target, &mut out, opts)?;
        Ok(Recorder::on(out, w, opts, retention))
    }

    /// [`Recorder::create`] for a service: a full, read-only or failing
    /// disk pauses the recording (from the start, if the first part
    /// cannot be written) instead of ending the run; see [`Fault`]. A
    /// path that is wrong (not nettop's directory, older parts in the
    /// way) still fails at once.
    pub fn create_pausing(
        target: &Target,
        opts: &RecordOptions,
        retention: Retention,
    ) -> anyhow::Result<Recorder> {
        let mut out = Recorder::prepare(target, opts, retention)?;
        let mut rec = match Recorder::first_part(target, &mut out, opts) {
            Ok(w) => Recorder::on(out, w, opts, retention),
            Err(e) => {
                let path = match target {
                    Target::File(p) | Target::Dir(p) => p,
                };
                let mut rec = Recorder::new(out, None, path, opts, retention);
                rec.pausing = true;
                rec.fault_between(e)?;
                rec
            }
        };
        rec.pausing = true;
        Ok(rec)
    }

    /// Checks the target (and creates DIR) before any part is written.
    fn prepare(target: &Target, opts: &RecordOptions, retention: Retention) -> anyhow::Result<Out> {
        Ok(match target {
            Target::File(path) => {
                if opts.max_size.is_some() {
                    rotate::check_free_n(path, retention.keep)?;
                }
                Out::File(Parts::keeping(path, None, retention.keep))
            }
            Target::Dir(dir) => {
                if !dir.exists() {
                    std::fs::DirBuilder::new()
                        .mode(0o700)
                        .create(dir)
                        .with_context(|| format!("--record: cannot create {}", dir.display()))?;
                }
                retention::check_dir(dir)?;
                Out::Dir {
                    dir: dir.clone(),
                    day: retention::utc_day(writer::now_unix_ms()),
                    named: 0,
                }
            }
        })
    }

    fn first_part(target: &Target, out: &mut Out, opts: &RecordOptions) -> anyhow::Result<Writer> {
        match (target, out) {
            (_, Out::Dir { dir, named, .. }) => {
                let (w, ms) = create_part(dir, *named, opts.compressed, opts.sync)?;
                *named = ms;
                Ok(w)
            }
            (Target::File(path) | Target::Dir(path), Out::File(_)) => {
                Writer::create(path, opts.compressed, opts.sync)
            }
        }
    }

    /// A session whose first part `w` is open.
    fn on(mut out: Out, w: Writer, opts: &RecordOptions, retention: Retention) -> Recorder {
        if let Out::File(parts) = &mut out {
            parts.created(w.id());
        }
        Recorder::with_writer(out, w, opts, retention)
    }

    /// A session on a FILE already created by the caller.
    pub fn from_writer(
        path: &Path,
        w: Writer,
        opts: &RecordOptions,
        retention: Retention,
    ) -> Recorder {
        let parts = Parts::keeping(path, Some(w.id()), retention.keep);
        Recorder::with_writer(Out::File(parts), w, opts, retention)
    }

    fn with_writer(out: Out, w: Writer, opts: &RecordOptions, retention: Retention) -> Recorder {
        let path = w.path().to_path_buf();
        Recorder::new(out, Some(w), &path, opts, retention)
    }

    fn new(
        out: Out,
        w: Option<Writer>,
        path: &Path,
        opts: &RecordOptions,
        retention: Retention,
    ) -> Recorder {
        Recorder {
            out,
            path: path.to_path_buf(),
            meta: None,
            topology: None,
            end_room: 0,
            max_size: opts.max_size,
            compressed: opts.compressed,
            sync: opts.sync,
            retention,
            last_expiry: Instant::now(),
            total: RecordSummary::default(),
            deleted: Vec::new(),
            pausing: false,
            pause: None,
            health: Health::default(),
            begun: false,
            head_bytes: 0,
            last_record: 0,
            live_id: w.as_ref().map(Writer::id),
            w,
        }
    }

    /// Writes the host record and topology of the first part, and applies
    /// retention to what earlier runs left. A paused recording keeps
    /// them for the part it begins when it can write again.
    pub fn begin(
        &mut self,
        host: &HostInfo,
        interval: Duration,
        topology: Option<Vec<u8>>,
    ) -> anyhow::Result<()> {
        let meta = Meta {
            format: format::VERSION,
            writer: format!("nettop {}", env!("CARGO_PKG_VERSION")),
            created_unix_ms: writer::now_unix_ms(),
            interval_s: interval.as_secs_f64(),
            host: host.clone(),
            part: 0,
        };
        self.meta = Some(meta.clone());
        self.topology = topology;
        if let Some(mut w) = self.w.take() {
            let head = (|| {
                w.write_meta(&meta)?;
                if let Some(t) = &self.topology {
                    w.write_topology(t)?;
                }
                w.end_record_bound()
            })();
            match head {
                Ok(room) => {
                    self.end_room = room;
                    self.head_bytes = w.bytes();
                    self.begun = true;
                    self.w = Some(w);
                }
                // A part without its host record is no recording: gone,
                // and the first part is begun when there is room.
                Err(e) => {
                    w.remove();
                    self.fault_between(e)?;
                }
            }
        }
        self.expire_or_warn()
    }

    fn writer(&mut self) -> anyhow::Result<&mut Writer> {
        self.w
            .as_mut()
            .context("the recording was closed after an earlier error")
    }

    /// The live part (while paused: the last one, or the directory).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Totals so far.
    pub fn summary(&self) -> &RecordSummary {
        &self.total
    }

    /// Whether the recording is paused, and the health metrics' figures.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// Parts retention deleted since the last call (for the log).
    pub fn take_deleted(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.deleted)
    }

    /// Appends `cur`; `prev` is the snapshot before it, repeated at the
    /// start of a new part so that part's first interval can be computed.
    /// With `max_size`, no part ever exceeds it: room for the end record is
    /// kept, and a new part (host record, topology, the previous snapshot,
    /// the new one) must fit too, or recording stops with an error.
    ///
    /// A service's recording ([`Recorder::create_pausing`]) meets a disk
    /// fault by closing the live part, deleting its oldest parts while
    /// space is what is missing, and trying a new part; failing that it
    /// pauses, drops snapshots, and tries again with each one.
    pub fn push(&mut self, prev: Option<&RawSample>, cur: &RawSample) -> anyhow::Result<()> {
        if self.pause.is_some() {
            return self.retry(prev, cur);
        }
        if let Err(e) = self.append(prev, cur) {
            return self.fault(e, prev, cur);
        }
        if self.last_expiry.elapsed() >= EXPIRE_EVERY {
            self.expire_or_warn()?;
        }
        Ok(())
    }

    fn append(&mut self, prev: Option<&RawSample>, cur: &RawSample) -> anyhow::Result<()> {
        if let Out::Dir { day, .. } = &self.out
            && retention::utc_day(cur.unix_ms) != *day
            && self.writer()?.samples() > 0
        {
            self.roll("day", prev)?;
        }
        let rec = self.writer()?.encode_sample(cur)?;
        if let Some(max) = self.max_size {
            let (bytes, samples) = {
                let w = self.writer()?;
                (w.bytes(), w.samples())
            };
            if bytes + rec.len() as u64 + self.end_room > max {
                if samples < 2 {
                    return Err(too_small(max, bytes + rec.len() as u64 + self.end_room));
                }
                self.roll("rotated", prev)?;
                let need = self.writer()?.bytes() + rec.len() as u64 + self.end_room;
                if need > max {
                    return Err(too_small(max, need));
                }
            }
        }
        let n = self.writer()?.write_record(&rec)?;
        self.total.samples += 1;
        self.total.bytes += n;
        self.last_record = n;
        Ok(())
    }

    /// SIGHUP: ends the live part and starts a new one. For FILE, a part
    /// still in place is rotated like a full one; one that logrotate moved
    /// away is closed where it now is, and FILE is created again. A
    /// paused recording has no live part: it begins one as soon as it can
    /// write, whatever the signal.
    pub fn reopen(&mut self, prev: Option<&RawSample>) -> anyhow::Result<()> {
        if self.pause.is_some() {
            return Ok(());
        }
        match self.roll("reopen", prev) {
            Err(e) => self.fault_between(e),
            Ok(()) => Ok(()),
        }
    }

    /// Whether a disk fault has paused the recording.
    pub fn is_paused(&self) -> bool {
        self.pause.is_some()
    }

    /// Ends the live part and opens the next one.
    fn roll(&mut self, reason: &str, prev: Option<&RawSample>) -> anyhow::Result<()> {
        // Ended in place: a part a full disk leaves without its end
        // record stays at hand, to be closed once there is room.
        self.writer()?.end(reason)?;
        self.w = None;
        self.open_next(prev)?;
        self.expire_or_warn()
    }

    /// Begins the next part (FILE rotated, or a new name in DIR): host
    /// record, topology, and `prev`, repeated so the part stands alone. A
    /// part that cannot be begun whole is deleted again, so a full disk
    /// leaves no empty or headless files behind.
    fn open_next(&mut self, prev: Option<&RawSample>) -> anyhow::Result<()> {
        let mut name = None;
        let mut w = match &mut self.out {
            Out::File(parts) => {
                if parts.live_in_place() {
                    parts.rotate()?;
                } else {
                    parts.forget_live();
                }
                let w = Writer::create(&self.path, self.compressed, self.sync)?;
                parts.created(w.id());
                w
            }
            Out::Dir { dir, day, named } => {
                *day = retention::utc_day(writer::now_unix_ms());
                let (w, ms) = create_part(dir, *named, self.compressed, self.sync)?;
                name = Some(ms);
                w
            }
        };
        let mut meta = self.meta.clone().context("recording not begun")?;
        if self.begun {
            meta.part += 1;
        }
        meta.created_unix_ms = writer::now_unix_ms();
        let head = (|| {
            w.write_meta(&meta)?;
            if let Some(t) = &self.topology {
                w.write_topology(t)?;
            }
            if let Some(p) = prev {
                w.write_sample(p)?;
            }
            w.end_record_bound()
        })();
        let room = match head {
            Ok(room) => room,
            Err(e) => {
                w.remove();
                return Err(e);
            }
        };
        if let (Out::Dir { named, .. }, Some(ms)) = (&mut self.out, name) {
            *named = ms;
        }
        self.end_room = room;
        self.head_bytes = w.bytes();
        self.path = w.path().to_path_buf();
        self.live_id = Some(w.id());
        self.w = Some(w);
        self.meta = Some(meta);
        if self.begun {
            self.total.rotations += 1;
        }
        self.begun = true;
        Ok(())
    }

    /// Applies `--keep` / `--keep-for` to the finished parts.
    fn expire(&mut self) -> anyhow::Result<()> {
        self.last_expiry = Instant::now();
        let now = SystemTime::now();
        let gone = match &mut self.out {
            Out::File(parts) => match self.retention.keep_for.and_then(|d| now.checked_sub(d)) {
                Some(cutoff) => parts.expire(cutoff)?,
                None => Vec::new(),
            },
            Out::Dir { dir, .. } => retention::expire_dir(dir, &self.path, &self.retention, now)?,
        };
        self.deleted.extend(gone);
        Ok(())
    }

    /// [`Recorder::expire`], where a service only warns of a disk fault:
    /// a read-only disk keeps the old parts, and that is no reason to
    /// stop sampling.
    fn expire_or_warn(&mut self) -> anyhow::Result<()> {
        match self.expire() {
            Err(e) if self.pausing && Fault::of(&e).is_some() => {
                log::warn!("{}", one_line(&e));
                Ok(())
            }
            r => r,
        }
    }

    /// Writes the end record with `reason` and returns the totals.
    pub fn finish(mut self, reason: &str) -> anyhow::Result<RecordSummary> {
        if let Some(mut w) = self.pause.take().and_then(Pause::into_open) {
            let _ = w.end(reason);
        }
        if let Some(w) = self.w.take() {
            w.finish(reason)?;
        }
        self.total.reason = reason.to_string();
        self.total.dropped = self.health.dropped;
        Ok(self.total)
    }

    /// Closes the live part after an error, marking it so.
    pub fn abort(mut self) {
        if let Some(mut w) = self.pause.take().and_then(Pause::into_open) {
            let _ = w.end("error");
        }
        if let Some(w) = self.w.take() {
            let _ = w.finish("error");
        }
    }

    /// Removes the first part again when nothing was recorded in it (the
    /// collector failed to start), if the name still is that file.
    pub fn discard(mut self) {
        if let Some(w) = self.w.take()
            && w.samples() == 0
        {
            w.remove();
        }
    }
}

/// Creates the part named for now in `dir`, or for the first second
/// after `named` (the previous part's name) when that is later: parts
/// rotating faster than once a second, or a name an earlier run left,
/// move the name on, so names stay unique and sort in the order the
/// parts were begun (retention deletes the first ones, replay reads them
/// in that order), even when an earlier name is free again. Returns the
/// part and the time in its name.
fn create_part(
    dir: &Path,
    named: u64,
    compressed: bool,
    sync: bool,
) -> anyhow::Result<(Writer, u64)> {
    let start = writer::now_unix_ms().max(named.saturating_add(1000));
    let mut last_err = None;
    for k in 0..100 {
        let ms = start + k * 1000;
        let p = dir.join(retention::part_name(ms, compressed));
        if std::fs::symlink_metadata(&p).is_ok() {
            continue;
        }
        match Writer::create(&p, compressed, sync) {
            Ok(w) => return Ok((w, ms)),
            // Another name fails alike on a full or read-only disk.
            Err(e) if Fault::of(&e).is_some() => return Err(e),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_else(|| {
        anyhow::anyhow!(
            "--record {}: 100 parts already start in this second",
            dir.display()
        )
    }))
}
