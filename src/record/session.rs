//! One recording session: the live part, its rotation (size, day, SIGHUP)
//! and retention. The sampling loop that feeds it is shared with `--serve`
//! ([`crate::service`]); this file only decides which file a snapshot goes
//! to and when a part ends.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

use super::format::{self, Meta};
use super::retention::{self, Retention};
use super::rotate::{self, Parts};
use super::writer::{self, Writer};
use super::{RecordOptions, RecordSummary, too_small};
use crate::sample::{HostInfo, RawSample};

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
    Dir { dir: PathBuf, day: u64 },
}

/// The recording side of a run: snapshots in, parts on disk.
pub struct Recorder {
    out: Out,
    w: Option<Writer>,
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
        let (out, w) = match target {
            Target::File(path) => {
                if opts.max_size.is_some() {
                    rotate::check_free_n(path, retention.keep)?;
                }
                let w = Writer::create(path, opts.compressed, opts.sync)?;
                (Out::File(Parts::keeping(path, w.id(), retention.keep)), w)
            }
            Target::Dir(dir) => {
                if !dir.exists() {
                    std::fs::DirBuilder::new()
                        .mode(0o700)
                        .create(dir)
                        .with_context(|| format!("--record: cannot create {}", dir.display()))?;
                }
                retention::check_dir(dir)?;
                let now = writer::now_unix_ms();
                let w = create_part(dir, now, opts.compressed, opts.sync)?;
                let day = retention::utc_day(now);
                (
                    Out::Dir {
                        dir: dir.clone(),
                        day,
                    },
                    w,
                )
            }
        };
        Ok(Recorder::with_writer(out, w, opts, retention))
    }

    /// A session on a FILE already created by the caller.
    pub fn from_writer(
        path: &Path,
        w: Writer,
        opts: &RecordOptions,
        retention: Retention,
    ) -> Recorder {
        let parts = Parts::keeping(path, w.id(), retention.keep);
        Recorder::with_writer(Out::File(parts), w, opts, retention)
    }

    fn with_writer(out: Out, w: Writer, opts: &RecordOptions, retention: Retention) -> Recorder {
        Recorder {
            out,
            path: w.path().to_path_buf(),
            w: Some(w),
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
        }
    }

    /// Writes the host record and topology of the first part, and applies
    /// retention to what earlier runs left.
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
        let w = self.writer()?;
        w.write_meta(&meta)?;
        if let Some(t) = &topology {
            w.write_topology(t)?;
        }
        self.end_room = w.end_record_bound()?;
        self.meta = Some(meta);
        self.topology = topology;
        self.expire()
    }

    fn writer(&mut self) -> anyhow::Result<&mut Writer> {
        self.w
            .as_mut()
            .context("the recording was closed after an earlier error")
    }

    /// The live part.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Totals so far.
    pub fn summary(&self) -> &RecordSummary {
        &self.total
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
    pub fn push(&mut self, prev: Option<&RawSample>, cur: &RawSample) -> anyhow::Result<()> {
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
        if self.last_expiry.elapsed() >= EXPIRE_EVERY {
            self.expire()?;
        }
        Ok(())
    }

    /// SIGHUP: ends the live part and starts a new one. For FILE, a part
    /// still in place is rotated like a full one; one that logrotate moved
    /// away is closed where it now is, and FILE is created again.
    pub fn reopen(&mut self, prev: Option<&RawSample>) -> anyhow::Result<()> {
        self.roll("reopen", prev)
    }

    /// Ends the live part and opens the next one.
    fn roll(&mut self, reason: &str, prev: Option<&RawSample>) -> anyhow::Result<()> {
        let w = self.w.take().context("no live part")?;
        w.finish(reason)?;
        let w = match &mut self.out {
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
            Out::Dir { dir, day } => {
                let now = writer::now_unix_ms();
                *day = retention::utc_day(now);
                create_part(dir, now, self.compressed, self.sync)?
            }
        };
        self.path = w.path().to_path_buf();
        self.w = Some(w);
        let topology = self.topology.take();
        let meta = self.meta.as_mut().context("recording not begun")?;
        meta.part += 1;
        meta.created_unix_ms = writer::now_unix_ms();
        let meta = meta.clone();
        let w = self.writer()?;
        w.write_meta(&meta)?;
        if let Some(t) = &topology {
            w.write_topology(t)?;
        }
        // Each part stands alone: repeat the previous snapshot.
        if let Some(p) = prev {
            w.write_sample(p)?;
        }
        self.topology = topology;
        self.total.rotations += 1;
        self.expire()
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

    /// Writes the end record with `reason` and returns the totals.
    pub fn finish(mut self, reason: &str) -> anyhow::Result<RecordSummary> {
        if let Some(w) = self.w.take() {
            w.finish(reason)?;
        }
        self.total.reason = reason.to_string();
        Ok(self.total)
    }

    /// Closes the live part after an error, marking it so.
    pub fn abort(mut self) {
        if let Some(w) = self.w.take() {
            let _ = w.finish("error");
        }
    }

    /// Removes the first part again when nothing was recorded in it (the
    /// collector failed to start), if the name still is that file.
    pub fn discard(mut self) {
        if let Some(w) = self.w.take()
            && w.samples() == 0
            && crate::sys::safefile::id_of(&self.path).ok().flatten() == Some(w.id())
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Creates the part named for `unix_ms` in `dir`. When that second's name
/// is taken (parts rotating faster than once a second, or an earlier run's
/// part), the next free second is used, so names stay unique and in order.
fn create_part(dir: &Path, unix_ms: u64, compressed: bool, sync: bool) -> anyhow::Result<Writer> {
    let mut last_err = None;
    for k in 0..100 {
        let p = dir.join(retention::part_name(unix_ms + k * 1000, compressed));
        if std::fs::symlink_metadata(&p).is_ok() {
            continue;
        }
        match Writer::create(&p, compressed, sync) {
            Ok(w) => return Ok(w),
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
