//! Writing recordings: one `write()` and one `fdatasync()` per record, so a
//! killed recorder or a power cut loses at most the record being written.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::format::{self, End, MAX_PAYLOAD, Meta};
use crate::sample::RawSample;
use crate::sys::safefile::{self, FileId};

/// zstd level per record: level 3 is the library default; higher levels buy
/// a few percent at several times the CPU, which a 1 s recorder should not spend.
const ZSTD_LEVEL: i32 = 3;

pub struct Writer {
    path: PathBuf,
    file: File,
    id: FileId,
    compressed: bool,
    bytes: u64,
    samples: u64,
    /// `fdatasync` after each record (power-loss safety).
    sync: bool,
}

/// `true` when records of `path` should be zstd-compressed.
pub fn wants_zstd(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

impl Writer {
    /// Creates `path` and writes the file header. Refuses anything but a new
    /// file or an empty regular file of our own (see [`safefile`]): not a
    /// non-empty file (it may be yesterday's evidence), a symlink, a device,
    /// a FIFO or a /proc file. The file is created 0600.
    pub fn create(path: &Path, compressed: bool, sync: bool) -> anyhow::Result<Writer> {
        let out = safefile::create_output(path)
            .with_context(|| format!("cannot create recording {}", path.display()))?;
        let mut w = Writer {
            path: path.to_path_buf(),
            file: out.file,
            id: out.id,
            compressed,
            bytes: 0,
            samples: 0,
            sync,
        };
        let head = format::file_header(compressed);
        // A full disk takes the name but not the header: a file that
        // is not even a recording would be left, which no reader opens
        // and no retention deletes.
        if let Err(e) = w.file.write_all(&head) {
            w.remove();
            return Err(e).with_context(|| format!("cannot write to {}", path.display()));
        }
        w.bytes = head.len() as u64;
        Ok(w)
    }

    /// Deletes the file again (a part that could not be begun), if the
    /// name still is the file this writer created.
    pub fn remove(self) {
        if safefile::id_of(&self.path).ok().flatten() == Some(self.id) {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Device and inode of the file, for rotation.
    pub fn id(&self) -> FileId {
        self.id
    }

    /// Bytes the end record written by [`Writer::finish`] can take at most,
    /// so a size limit can keep room for it: the record with the longest
    /// field values, plus slack because a zstd frame of a shorter input is
    /// not guaranteed to be shorter.
    pub fn end_record_bound(&self) -> anyhow::Result<u64> {
        const SLACK: u64 = 16;
        let end = End {
            samples: u64::MAX,
            reason: "duration".into(),
        };
        let json = serde_json::to_vec(&end).context("encoding end record")?;
        Ok(self.encode(format::TYPE_END, u64::MAX, &json)?.len() as u64 + SLACK)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Bytes written to the current file so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Frames (and compresses) one record without writing it.
    pub fn encode(&self, rtype: u8, unix_ms: u64, json: &[u8]) -> anyhow::Result<Vec<u8>> {
        if json.len() > MAX_PAYLOAD as usize {
            bail!(
                "record of {} bytes exceeds the {} MiB limit",
                json.len(),
                MAX_PAYLOAD >> 20
            );
        }
        let (enc, body) = if self.compressed {
            let z = zstd::bulk::compress(json, ZSTD_LEVEL).context("zstd compression")?;
            (format::ENC_ZSTD_JSON, z)
        } else {
            (format::ENC_JSON, json.to_vec())
        };
        if body.len() > MAX_PAYLOAD as usize {
            bail!(
                "compressed record exceeds the {} MiB limit",
                MAX_PAYLOAD >> 20
            );
        }
        Ok(format::encode_record(rtype, enc, unix_ms, &body))
    }

    /// Frames a snapshot; pass the result to [`Writer::write_record`].
    pub fn encode_sample(&self, s: &RawSample) -> anyhow::Result<Vec<u8>> {
        let json = serde_json::to_vec(s).context("encoding snapshot")?;
        self.encode(format::TYPE_SAMPLE, s.unix_ms, &json)
    }

    /// Appends one framed record in a single write, then syncs. When
    /// either fails the file is cut back to the last whole record, so a
    /// full disk leaves no half record behind and the next record (the
    /// end record, once there is room) follows a whole one.
    pub fn write_record(&mut self, rec: &[u8]) -> anyhow::Result<u64> {
        if let Err(e) = self.file.write_all(rec) {
            self.cut_back();
            return Err(e).with_context(|| format!("cannot write to {}", self.path.display()));
        }
        if self.sync
            && let Err(e) = self.file.sync_data()
        {
            // The record may never reach the disk: it is not counted,
            // and not left to look written.
            self.cut_back();
            return Err(e).with_context(|| format!("cannot sync {}", self.path.display()));
        }
        self.bytes += rec.len() as u64;
        if rec.get(8) == Some(&format::TYPE_SAMPLE) {
            self.samples += 1;
        }
        Ok(rec.len() as u64)
    }

    /// Drops whatever a failed write left after the last whole record.
    /// Best effort: where even that fails (an I/O error), the reader
    /// still reads up to the last whole record and warns of a torn tail.
    fn cut_back(&mut self) {
        use std::io::{Seek, SeekFrom};
        let _ = self.file.set_len(self.bytes);
        let _ = self.file.seek(SeekFrom::Start(self.bytes));
    }

    pub fn write_meta(&mut self, meta: &Meta) -> anyhow::Result<u64> {
        let json = serde_json::to_vec(meta).context("encoding host record")?;
        let rec = self.encode(format::TYPE_META, meta.created_unix_ms, &json)?;
        self.write_record(&rec)
    }

    /// Appends one snapshot; returns the bytes it took on disk.
    pub fn write_sample(&mut self, s: &RawSample) -> anyhow::Result<u64> {
        let rec = self.encode_sample(s)?;
        self.write_record(&rec)
    }

    /// Stores the topology blob (`HostTopology` JSON) for `--pinning-check --replay`.
    pub fn write_topology(&mut self, json: &[u8]) -> anyhow::Result<u64> {
        let (enc, body) = if self.compressed {
            let z = zstd::bulk::compress(json, ZSTD_LEVEL).context("zstd compression")?;
            (format::ENC_ZSTD_BYTES, z)
        } else {
            (format::ENC_BYTES, json.to_vec())
        };
        if body.len() > MAX_PAYLOAD as usize {
            bail!(
                "topology exceeds the {} MiB record limit",
                MAX_PAYLOAD >> 20
            );
        }
        let rec = format::encode_record(format::TYPE_TOPOLOGY, enc, now_unix_ms(), &body);
        self.write_record(&rec)
    }

    /// Writes the end record; the file then reads as cleanly closed.
    pub fn finish(mut self, reason: &str) -> anyhow::Result<u64> {
        self.end(reason)
    }

    /// [`Writer::finish`] that keeps the writer when it fails, so a part a
    /// full disk left open can be closed once there is room again.
    pub fn end(&mut self, reason: &str) -> anyhow::Result<u64> {
        let end = End {
            samples: self.samples,
            reason: reason.to_string(),
        };
        let json = serde_json::to_vec(&end).context("encoding end record")?;
        let rec = self.encode(format::TYPE_END, now_unix_ms(), &json)?;
        let before = self.bytes;
        self.write_record(&rec)?;
        if let Err(e) = self.file.sync_all() {
            // Tried again later, so no end record may stay behind.
            self.bytes = before;
            self.cut_back();
            return Err(e).with_context(|| format!("cannot sync {}", self.path.display()));
        }
        Ok(self.bytes)
    }
}

pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
