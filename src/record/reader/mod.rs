//! Reading recordings: an index of record offsets built from headers only, so
//! a day-long recording opens in milliseconds and samples are decoded on
//! demand. Anything wrong is reported with the file name and byte offset.

use std::fs::File;
use std::io::Read;
use std::ops::{Range, RangeInclusive};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::format::{
    self, FILE_HEADER_LEN, MAGIC, MAX_PAYLOAD, Meta, RECORD_HEADER_LEN, RecordHeader,
};
use crate::sample::{HostInfo, RawSample};
use crate::sys::sanitize::Untrusted;
use crate::sys::units::TimeSpec;

mod index;

/// Something the reader skipped or noticed but could work around.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub offset: u64,
    pub kind: WarningKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// The file ends inside a record: the recorder was killed mid-write.
    /// Expected after `kill -9` or power loss; at most one snapshot lost.
    TornTail,
    /// Bytes that are not a valid record in the middle of the file.
    Corrupt,
    /// A record type this version does not know (optional, skipped).
    Unknown,
    /// The file has no end record: the recorder did not close cleanly.
    NotClosed,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.message)
    }
}

/// The samples a replay covers: those at the positions of `span` whose
/// time (the index's wall clock) lies in `ms`. File order need not be time
/// order, so a position inside `span` can hold a sample from outside `ms`;
/// it is not part of the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub span: Range<usize>,
    pub ms: RangeInclusive<u64>,
}

impl Window {
    /// Whether sample `i` of `rec` is in the window.
    pub fn contains(&self, rec: &Recording, i: usize) -> bool {
        self.span.contains(&i) && rec.unix_ms(i).is_some_and(|t| self.ms.contains(&t))
    }

    /// The positions of the window's samples, in file order.
    pub fn positions<'a>(
        &'a self,
        rec: &'a Recording,
    ) -> impl DoubleEndedIterator<Item = usize> + 'a {
        self.span.clone().filter(move |&i| self.contains(rec, i))
    }

    /// How many samples lie in the window.
    pub fn count(&self, rec: &Recording) -> usize {
        self.positions(rec).count()
    }
}

/// The samples at these positions, whatever their time.
impl From<Range<usize>> for Window {
    fn from(span: Range<usize>) -> Window {
        Window {
            span,
            ms: 0..=u64::MAX,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    offset: u64,
    len: u32,
    encoding: u8,
    unix_ms: u64,
}

/// An open recording. Holds the index (about 24 bytes per sample), never the
/// samples themselves.
#[derive(Debug)]
pub struct Recording {
    path: PathBuf,
    file: File,
    file_len: u64,
    version: u16,
    meta: Meta,
    samples: Vec<Entry>,
    topology: Option<Entry>,
    warnings: Vec<Warning>,
    closed_cleanly: bool,
    /// Bytes read or checksummed while indexing (see [`Recording::bytes_examined`]).
    examined: u64,
}

enum Step {
    /// A plausible record header at this offset.
    Record(RecordHeader),
    /// Fewer bytes left than a header / the payload claims.
    Short,
    /// Not a record header.
    Bad(String),
}

impl Recording {
    /// Opens and indexes `path`. Fails (naming the file and offset) when the
    /// file is not a readable nettop recording at all; problems after the
    /// host record become [`Recording::warnings`].
    pub fn open(path: impl AsRef<Path>) -> anyhow::Result<Recording> {
        let path = path.as_ref();
        // A regular file only: a FIFO would block here and has no length.
        let file = crate::sys::safefile::open_input(path, None)
            .with_context(|| format!("cannot open recording {}", path.display()))?;
        let file_len = file
            .metadata()
            .with_context(|| format!("cannot stat recording {}", path.display()))?
            .len();
        let at = |off: u64| format!("{}: offset {off}", path.display());
        if file_len == 0 {
            bail!("{}: empty file, not a nettop recording", at(0));
        }
        let mut head = [0u8; FILE_HEADER_LEN];
        let n = read_up_to(&file, 0, &mut head)
            .with_context(|| format!("{}: cannot read header", at(0)))?;
        if head[..n.min(8)] != MAGIC[..n.min(8)] {
            let hint = if head[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
                " (it is a plain zstd stream; decompress it or check the file)"
            } else {
                ""
            };
            bail!("{}: not a nettop recording (bad magic){hint}", at(0));
        }
        if n < FILE_HEADER_LEN {
            bail!(
                "{}: truncated file header ({n} of {FILE_HEADER_LEN} bytes)",
                at(0)
            );
        }
        let crc = u32::from_le_bytes([head[12], head[13], head[14], head[15]]);
        if crc != crc32fast::hash(&head[0..12]) {
            bail!("{}: corrupted file header (checksum mismatch)", at(8));
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version == 0 || version > format::VERSION {
            bail!(
                "{}: recording format version {version}, this nettop reads up to {} (upgrade nettop)",
                at(8),
                format::VERSION
            );
        }

        let mut rec = Recording {
            path: path.to_path_buf(),
            file,
            file_len,
            version,
            meta: Meta::default(),
            samples: Vec::new(),
            topology: None,
            warnings: Vec::new(),
            closed_cleanly: false,
            examined: 0,
        };
        rec.index()?;
        Ok(rec)
    }

    fn at(&self, off: u64) -> String {
        format!("{}: offset {off}", self.path.display())
    }

    fn step(&mut self, pos: u64) -> anyhow::Result<Step> {
        if self.file_len - pos < RECORD_HEADER_LEN as u64 {
            return Ok(Step::Short);
        }
        self.examined += RECORD_HEADER_LEN as u64;
        let mut hb = [0u8; RECORD_HEADER_LEN];
        self.file
            .read_exact_at(&mut hb, pos)
            .with_context(|| format!("{}: read error", self.at(pos)))?;
        let Some(h) = RecordHeader::parse(&hb) else {
            return Ok(Step::Bad("no record marker".into()));
        };
        if h.len > MAX_PAYLOAD {
            return Ok(Step::Bad(format!(
                "record claims {} bytes, over the {} MiB limit",
                h.len,
                MAX_PAYLOAD >> 20
            )));
        }
        if pos + (RECORD_HEADER_LEN as u64) + u64::from(h.len) > self.file_len {
            return Ok(Step::Short);
        }
        Ok(Step::Record(h))
    }

    /// Reads and checksums a record's payload.
    fn payload(&self, off: u64, h: &RecordHeader) -> anyhow::Result<Vec<u8>> {
        let mut buf = vec![0u8; RECORD_HEADER_LEN + h.len as usize];
        self.file
            .read_exact_at(&mut buf, off)
            .with_context(|| format!("{}: read error", self.at(off)))?;
        let (head, body) = buf.split_at(RECORD_HEADER_LEN);
        let crc = RecordHeader::compute_crc(head, body);
        if crc != h.crc {
            bail!(
                "{}: corrupted record (checksum {crc:08x}, expected {:08x})",
                self.at(off),
                h.crc
            );
        }
        buf.drain(..RECORD_HEADER_LEN);
        Ok(buf)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn host(&self) -> &HostInfo {
        &self.meta.host
    }
    pub fn meta(&self) -> &Meta {
        &self.meta
    }
    /// Framing version of the file.
    pub fn version(&self) -> u16 {
        self.version
    }
    pub fn len(&self) -> usize {
        self.samples.len()
    }
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }
    /// Bytes read or checksummed to build the index: bounded by a small
    /// multiple of the file size whatever the file holds, so a crafted file
    /// cannot make opening it expensive.
    pub fn bytes_examined(&self) -> u64 {
        self.examined
    }
    /// `true` when the recorder wrote its end record (not killed).
    pub fn closed_cleanly(&self) -> bool {
        self.closed_cleanly
    }
    /// Wall-clock time of sample `i` from the index, without decoding it.
    pub fn unix_ms(&self, i: usize) -> Option<u64> {
        self.samples.get(i).map(|e| e.unix_ms)
    }
    /// The samples between `begin` and `end` (`--begin`/`--end`): those
    /// whose time lies between them, wherever they are in the file (a
    /// moved record puts file order and time order apart). A clock time is
    /// the first such time at or after the recording's start (for `end`:
    /// at or after the window's begin), so a recording that runs past
    /// midnight reads `--begin 01:00` as the night's; `+D` counts from the
    /// earliest sample, `-D` back from the latest. An error when `end` is
    /// before `begin`, or when the window holds fewer than two samples (no
    /// frame), saying what the recording covers.
    pub fn window(&self, begin: Option<TimeSpec>, end: Option<TimeSpec>) -> anyhow::Result<Window> {
        let Some((first, last)) = self.time_span() else {
            bail!("{}: the recording holds no snapshots", self.path.display());
        };
        let at_or_after = |t: TimeSpec, from: u64| -> u64 {
            let base = match t {
                TimeSpec::Offset(false, _) => last,
                _ => first,
            };
            let v = t.resolve(from, base);
            match t {
                TimeSpec::Clock(_) if v < from => v + 86_400_000,
                _ => v,
            }
        };
        let b = begin.map_or(first, |t| at_or_after(t, first));
        let e = end.map_or(last, |t| at_or_after(t, b));
        if begin.is_some() && end.is_some() && e < b {
            bail!(
                "{}: --end ({}) is before --begin ({}); the recording runs from {} to {}",
                self.path.display(),
                utc(e),
                utc(b),
                utc(first),
                utc(last)
            );
        }
        let mut w = Window {
            span: 0..0,
            ms: b..=e,
        };
        let mut inside = (0..self.len()).filter(|&i| w.ms.contains(&self.samples[i].unix_ms));
        let (lo, mut hi, mut n) = match inside.next() {
            Some(i) => (i, i, 1),
            None => (0, 0, 0),
        };
        for i in inside {
            hi = i;
            n += 1;
        }
        if n < 2 {
            bail!(
                "{}: {n} sample(s) between {} and {} (a frame needs two); the recording runs from \
                 {} to {}",
                self.path.display(),
                utc(b),
                utc(e),
                utc(first),
                utc(last)
            );
        }
        w.span = lo..hi + 1;
        Ok(w)
    }

    /// Every sample of the recording, as a [`Window`].
    pub fn all(&self) -> Window {
        Window::from(0..self.len())
    }

    /// The times of the earliest and the latest intact sample. A time in
    /// the index comes from a header not yet checksummed, so the extremes
    /// are checked: one flipped bit in one header must not move the
    /// recording's start or end by years.
    fn time_span(&self) -> Option<(u64, u64)> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&i| (self.samples[i].unix_ms, i));
        let first = order.iter().find(|&&i| self.intact(i)).or(order.first())?;
        let last = order
            .iter()
            .rev()
            .find(|&&i| self.intact(i))
            .or(order.last())?;
        Some((self.samples[*first].unix_ms, self.samples[*last].unix_ms))
    }

    /// Whether sample `i`'s checksum holds (without decoding it).
    fn intact(&self, i: usize) -> bool {
        self.samples.get(i).is_some_and(|e| {
            self.stored_crc(e.offset).is_ok_and(|crc| {
                let h = RecordHeader {
                    len: e.len,
                    rtype: format::TYPE_SAMPLE,
                    encoding: e.encoding,
                    unix_ms: e.unix_ms,
                    crc,
                };
                self.payload(e.offset, &h).is_ok()
            })
        })
    }

    /// Index of the sample taken last at or before `unix_ms` (the earliest
    /// sample if all are later): "jump to time". By time, not by file
    /// order.
    pub fn index_at(&self, unix_ms: u64) -> Option<usize> {
        self.index_at_in(&self.all(), unix_ms)
    }

    /// [`Recording::index_at`] among the samples of `w`.
    pub fn index_at_in(&self, w: &Window, unix_ms: u64) -> Option<usize> {
        let t = |i: usize| self.samples[i].unix_ms;
        let mut at_or_before: Option<usize> = None;
        let mut earliest: Option<usize> = None;
        for i in w.positions(self) {
            if t(i) <= unix_ms && at_or_before.is_none_or(|j| t(i) >= t(j)) {
                at_or_before = Some(i);
            }
            if earliest.is_none_or(|j| t(i) < t(j)) {
                earliest = Some(i);
            }
        }
        at_or_before.or(earliest)
    }

    /// Decodes sample `i`, verifying its checksum.
    pub fn get(&self, i: usize) -> anyhow::Result<RawSample> {
        let Some(e) = self.samples.get(i) else {
            bail!(
                "{}: sample {i} out of range ({} samples)",
                self.path.display(),
                self.samples.len()
            );
        };
        let bytes = self.decoded(e, format::TYPE_SAMPLE, || {
            format!("{}: sample {i}", self.at(e.offset))
        })?;
        let mut s: RawSample = serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{}: sample {i} is not a valid snapshot for this nettop",
                self.at(e.offset)
            )
        })?;
        // Recorded strings are as untrusted as live ones.
        s.sanitize();
        Ok(s)
    }

    /// The newest recorded topology blob (`HostTopology` JSON), if the
    /// recorder stored one.
    pub fn topology(&self) -> anyhow::Result<Option<Vec<u8>>> {
        let Some(e) = self.topology else {
            return Ok(None);
        };
        Ok(Some(self.decoded(&e, format::TYPE_TOPOLOGY, || {
            format!("{}: topology record", self.at(e.offset))
        })?))
    }

    /// An indexed record's payload, checksummed and decoded (`what` names
    /// it in a decoding error; checksum errors name the offset already).
    fn decoded(&self, e: &Entry, rtype: u8, what: impl Fn() -> String) -> anyhow::Result<Vec<u8>> {
        let h = RecordHeader {
            len: e.len,
            rtype,
            encoding: e.encoding,
            unix_ms: e.unix_ms,
            crc: self.stored_crc(e.offset)?,
        };
        let body = self.payload(e.offset, &h)?;
        decode_bytes(&body, e.encoding).with_context(what)
    }

    fn stored_crc(&self, off: u64) -> anyhow::Result<u32> {
        let mut b = [0u8; 4];
        self.file
            .read_exact_at(&mut b, off + 20)
            .with_context(|| format!("{}: read error", self.at(off)))?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads every sample, checksums and decodes it: the slow, thorough check
    /// behind `open`'s fast header-only index. Returns one message per bad
    /// sample.
    pub fn verify(&self) -> Vec<String> {
        (0..self.len())
            .filter_map(|i| self.get(i).err().map(|e| format!("{e:#}")))
            .collect()
    }
}

/// Undoes the record encoding, never producing more than [`MAX_PAYLOAD`].
pub fn decode_bytes(body: &[u8], encoding: u8) -> anyhow::Result<Vec<u8>> {
    match encoding {
        format::ENC_JSON | format::ENC_BYTES => Ok(body.to_vec()),
        format::ENC_ZSTD_JSON | format::ENC_ZSTD_BYTES => {
            let dec = zstd::stream::read::Decoder::new(body).context("zstd decoder")?;
            let mut out = Vec::new();
            dec.take(u64::from(MAX_PAYLOAD) + 1)
                .read_to_end(&mut out)
                .context("corrupted zstd payload")?;
            if out.len() > MAX_PAYLOAD as usize {
                bail!(
                    "zstd payload expands past the {} MiB limit",
                    MAX_PAYLOAD >> 20
                );
            }
            Ok(out)
        }
        e => bail!("unknown payload encoding {e}"),
    }
}

fn read_up_to(f: &File, off: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// `unix_ms` as an RFC 3339 UTC time, to the second unless that would
/// hide the difference (`--begin +1.5s`).
/// Times past what RFC 3339 writes (a damaged or crafted header) are
/// shown as milliseconds rather than failing the message.
fn utc(unix_ms: u64) -> String {
    use std::fmt::Write;
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(unix_ms);
    let mut out = String::new();
    let written = if unix_ms.is_multiple_of(1000) {
        write!(out, "{}", humantime::format_rfc3339_seconds(t))
    } else {
        write!(out, "{}", humantime::format_rfc3339_millis(t))
    };
    if written.is_err() {
        return format!("{unix_ms} ms after 1970");
    }
    out
}
