//! Building a recording's index, and what one damaged byte may cost.
//!
//! Samples are indexed from their headers alone (a day-long file opens in
//! milliseconds); their checksums are verified when they are decoded. Three
//! rules keep damage local:
//!
//! - Every record that is not a sample is checksummed before its type is
//!   believed: a flipped bit in a type byte makes a record look like an end
//!   record or a "critical" type of a newer nettop, and only the checksum
//!   tells damage from a genuinely newer file.
//! - When a record header is not where the previous sample's length said,
//!   that sample's own length may be the damaged field: it is checksummed,
//!   and if it fails, it is dropped and the search for the next record
//!   starts right after *its* header, so the intact snapshot that follows is
//!   not skipped with it.
//! - Resynchronising (finding the next record after damage) checksums each
//!   candidate header's payload, which is the only proof that a candidate is
//!   real. Candidates can be crafted: overlapping fake headers, each claiming
//!   a payload up to the end of the file, cost O(n²). So the bytes
//!   checksummed for candidates are bounded by [`RESYNC_BUDGET`] times the
//!   file size; past that the rest of the file is reported as unreadable.
//!   Random damage almost never forms a plausible header, so honest files
//!   never come near the bound.

use anyhow::{Context, bail};

use super::{Entry, Recording, Step, Warning, WarningKind, decode_bytes, read_up_to};
use crate::record::format::{self, FILE_HEADER_LEN, MAX_PAYLOAD, RECORD_HEADER_LEN, RecordHeader};
use crate::sys::sanitize::Untrusted;

/// Bytes checksummed for resync candidates, as a multiple of the file size.
pub const RESYNC_BUDGET: u64 = 2;

/// Read size for scanning and streaming checksums.
const CHUNK: usize = 1 << 16;

/// Outcome of a search for the next intact record.
enum Resync {
    Found(u64),
    /// Nothing intact up to the end of the file.
    End,
    /// The candidate budget ran out at this offset.
    GaveUp(u64),
}

/// Record types a resync may land on: the ones this reader knows. An
/// unknown type right after damage is skipped along with the damage.
fn known_type(t: u8) -> bool {
    matches!(
        t,
        format::TYPE_META | format::TYPE_SAMPLE | format::TYPE_END | format::TYPE_TOPOLOGY
    )
}

fn known_encoding(e: u8) -> bool {
    matches!(
        e,
        format::ENC_JSON | format::ENC_ZSTD_JSON | format::ENC_BYTES | format::ENC_ZSTD_BYTES
    )
}

impl Recording {
    /// Checksums the record at `off` by streaming its payload through a
    /// fixed buffer (a claimed 64 MiB payload is never allocated).
    fn checksum_ok(&mut self, off: u64, h: &RecordHeader) -> anyhow::Result<bool> {
        let mut head = [0u8; RECORD_HEADER_LEN];
        self.file.read_exact_at_ctx(&mut head, off, &self.at(off))?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head[..20]);
        let mut buf = vec![0u8; CHUNK.min(h.len as usize)];
        let mut done = 0u64;
        let len = u64::from(h.len);
        while done < len {
            let n = ((len - done) as usize).min(buf.len());
            let at = off + RECORD_HEADER_LEN as u64 + done;
            self.file
                .read_exact_at_ctx(&mut buf[..n], at, &self.at(at))?;
            crc.update(&buf[..n]);
            done += n as u64;
        }
        self.examined += RECORD_HEADER_LEN as u64 + len;
        Ok(crc.finalize() == h.crc)
    }

    /// The next offset from `from` holding a record whose checksum
    /// verifies, spending at most `budget` bytes of checksumming.
    fn resync(&mut self, from: u64, budget: &mut u64) -> anyhow::Result<Resync> {
        let mut pos = from;
        let mut buf = vec![0u8; CHUNK + RECORD_HEADER_LEN];
        while pos < self.file_len {
            let n = read_up_to(&self.file, pos, &mut buf)
                .with_context(|| format!("{}: read error", self.at(pos)))?;
            if n < 4 {
                break;
            }
            self.examined += n as u64;
            // Candidates starting in the first CHUNK bytes; the overlap
            // lets their headers be parsed from this buffer.
            let last = (n - 4).min(CHUNK - 1);
            for i in 0..=last {
                if buf[i..i + 4] != format::SYNC {
                    continue;
                }
                let cand = pos + i as u64;
                let h = if i + RECORD_HEADER_LEN <= n {
                    let mut hb = [0u8; RECORD_HEADER_LEN];
                    hb.copy_from_slice(&buf[i..i + RECORD_HEADER_LEN]);
                    RecordHeader::parse(&hb)
                } else {
                    None
                };
                let Some(h) = h else { continue };
                let plausible = h.len <= MAX_PAYLOAD
                    && cand + RECORD_HEADER_LEN as u64 + u64::from(h.len) <= self.file_len
                    && known_type(h.rtype)
                    && known_encoding(h.encoding)
                    && buf[i + 10] == 0
                    && buf[i + 11] == 0;
                if !plausible {
                    continue;
                }
                let cost = RECORD_HEADER_LEN as u64 + u64::from(h.len);
                if cost > *budget {
                    return Ok(Resync::GaveUp(cand));
                }
                *budget -= cost;
                if self.checksum_ok(cand, &h)? {
                    return Ok(Resync::Found(cand));
                }
            }
            pos += (last + 1) as u64;
        }
        Ok(Resync::End)
    }

    fn warn(&mut self, offset: u64, kind: WarningKind, message: String) {
        self.warnings.push(Warning {
            offset,
            kind,
            message,
        });
    }

    /// Reports damage at `at` and finds where reading resumes: `Some(next)`
    /// or `None` when nothing readable follows.
    fn skip_damage(
        &mut self,
        at: u64,
        why: &str,
        torn_if_last: bool,
        budget: &mut u64,
    ) -> anyhow::Result<Option<u64>> {
        match self.resync(at + 1, budget)? {
            Resync::Found(next) => {
                self.warn(
                    at,
                    WarningKind::Corrupt,
                    format!("corrupted record ({why}); skipped {} bytes", next - at),
                );
                Ok(Some(next))
            }
            Resync::End if torn_if_last => {
                let n = self.file_len - at;
                self.warn(
                    at,
                    WarningKind::TornTail,
                    format!(
                        "torn tail: last {n} bytes are an incomplete record (recorder killed mid-write?), skipped"
                    ),
                );
                Ok(None)
            }
            Resync::End => {
                self.warn(
                    at,
                    WarningKind::Corrupt,
                    format!("corrupted record ({why}); nothing readable follows it"),
                );
                Ok(None)
            }
            Resync::GaveUp(cand) => {
                self.warn(
                    at,
                    WarningKind::Corrupt,
                    format!(
                        "corrupted record ({why}); the damaged region holds too many false record \
                         markers: gave up at offset {cand}, the last {} bytes were not read",
                        self.file_len - cand
                    ),
                );
                Ok(None)
            }
        }
    }

    pub(super) fn index(&mut self) -> anyhow::Result<()> {
        let mut pos = FILE_HEADER_LEN as u64;
        let mut have_meta = false;
        let mut budget = self.file_len.saturating_mul(RESYNC_BUDGET);
        // The last sample accepted on its header alone: if the next header
        // is not where its length says, its length may be the damage.
        let mut unverified: Option<(u64, RecordHeader)> = None;
        while pos < self.file_len {
            let why = match self.step(pos)? {
                Step::Record(h) => {
                    match self.record(pos, h, &mut have_meta, &mut unverified, &mut budget)? {
                        Some(next) => {
                            pos = next;
                            continue;
                        }
                        None => break,
                    }
                }
                Step::Short => "record length runs past the end of file".to_string(),
                Step::Bad(w) => w,
            };
            if !have_meta {
                bail!("{}: unreadable host record: {why}", self.at(pos));
            }
            let mut at = pos;
            let mut why = why;
            if let Some((prev, h)) = unverified.take()
                && !self.checksum_ok(prev, &h)?
            {
                // The previous sample was the damage; resume right after
                // its header so the snapshot behind it is kept.
                self.samples.pop();
                at = prev;
                why = "checksum mismatch: its length field is damaged".into();
            }
            match self.skip_damage(at, &why, at == pos, &mut budget)? {
                Some(next) => pos = next,
                None => break,
            }
        }
        if !have_meta {
            bail!(
                "{}: no host record (file has only a header)",
                self.at(FILE_HEADER_LEN as u64)
            );
        }
        if !self.closed_cleanly
            && !self
                .warnings
                .iter()
                .any(|w| w.kind == WarningKind::TornTail)
        {
            self.warn(
                self.file_len,
                WarningKind::NotClosed,
                "no end record: the recorder did not close cleanly".into(),
            );
        }
        Ok(())
    }

    /// Handles the record whose header is at `pos`. Returns where the next
    /// record starts, or `None` to stop indexing.
    fn record(
        &mut self,
        pos: u64,
        h: RecordHeader,
        have_meta: &mut bool,
        unverified: &mut Option<(u64, RecordHeader)>,
        budget: &mut u64,
    ) -> anyhow::Result<Option<u64>> {
        let next = pos + RECORD_HEADER_LEN as u64 + u64::from(h.len);
        let is_last = next == self.file_len;
        let entry = Entry {
            offset: pos,
            len: h.len,
            encoding: h.encoding,
            unix_ms: h.unix_ms,
        };
        if h.rtype == format::TYPE_SAMPLE && *have_meta {
            *unverified = None;
            // The last record is checked now, because a power loss can
            // leave a full-length record of zeros.
            if is_last && !self.checksum_ok(pos, &h)? {
                self.warn(
                    pos,
                    WarningKind::TornTail,
                    "torn tail: last record fails its checksum, skipped".into(),
                );
                return Ok(None);
            }
            self.samples.push(entry);
            if !is_last {
                *unverified = Some((pos, h));
            }
            return Ok(Some(next));
        }
        // A header landed where the previous length said: that length was right.
        *unverified = None;
        if !self.checksum_ok(pos, &h)? {
            if !*have_meta {
                bail!(
                    "{}: unreadable host record: checksum mismatch",
                    self.at(pos)
                );
            }
            let why = format!("type {:#04x}, checksum mismatch", h.rtype);
            return self.skip_damage(pos, &why, false, budget);
        }
        match h.rtype {
            format::TYPE_META if !*have_meta => {
                let body = self
                    .payload(pos, &h)
                    .context("the host record is unreadable")?;
                let bytes = decode_bytes(&body, h.encoding)
                    .with_context(|| format!("{}: host record", self.at(pos)))?;
                self.meta = serde_json::from_slice(&bytes).with_context(|| {
                    format!("{}: host record is not valid JSON metadata", self.at(pos))
                })?;
                self.meta.sanitize();
                *have_meta = true;
            }
            _ if !*have_meta => {
                bail!(
                    "{}: first record has type {:#04x}, expected the host record",
                    self.at(pos),
                    h.rtype
                );
            }
            format::TYPE_META => {
                self.warn(
                    pos,
                    WarningKind::Unknown,
                    "second host record ignored".into(),
                );
            }
            format::TYPE_END => self.closed_cleanly = true,
            format::TYPE_TOPOLOGY => self.topology = Some(entry),
            t if t >= format::TYPE_CRITICAL => bail!(
                "{}: record type {t:#04x} needs a newer nettop (its checksum is intact, so this \
                 is not damage)",
                self.at(pos)
            ),
            t => self.warn(
                pos,
                WarningKind::Unknown,
                format!("unknown optional record type {t:#04x} skipped"),
            ),
        }
        Ok(Some(next))
    }
}

/// `read_exact_at` with the file name and offset in the error.
trait ReadAtCtx {
    fn read_exact_at_ctx(&self, buf: &mut [u8], off: u64, at: &str) -> anyhow::Result<()>;
}

impl ReadAtCtx for std::fs::File {
    fn read_exact_at_ctx(&self, buf: &mut [u8], off: u64, at: &str) -> anyhow::Result<()> {
        use std::os::unix::fs::FileExt;
        self.read_exact_at(buf, off)
            .with_context(|| format!("{at}: read error"))
    }
}
