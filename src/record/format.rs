//! On-disk framing of a recording (see docs/record-format.md).
//!
//! Every record carries its own sync marker, length, type, encoding,
//! timestamp and CRC-32, so a reader can detect a torn tail or a corrupted
//! record, skip it and find the next one, and can build a time index by
//! reading headers only. Payloads are JSON (self-describing, so fields added
//! later with `#[serde(default)]` still read old files), optionally in an
//! independent zstd frame per record, so compression never couples records:
//! a torn tail loses one snapshot and random access needs no stream replay.

use crate::sys::sanitize::{Untrusted, clean_string};
use serde::{Deserialize, Serialize};

use crate::sample::HostInfo;

/// First bytes of every recording. The high-bit first byte (as in PNG)
/// catches 7-bit and text-mode transfers.
pub const MAGIC: [u8; 8] = *b"\x89NETTOP\n";
/// Framing version. Bumped only when the framing changes; payload schema
/// evolves inside a version through `#[serde(default)]` fields.
pub const VERSION: u16 = 1;
pub const FILE_HEADER_LEN: usize = 16;
/// File header flag: payloads are zstd-compressed (informational; every
/// record says its own encoding).
pub const FLAG_ZSTD: u16 = 1;

pub const SYNC: [u8; 4] = *b"NTRC";
pub const RECORD_HEADER_LEN: usize = 24;
/// Upper bound of one payload, stored or decompressed. A 10,000-task
/// snapshot is about 6 MiB of JSON; anything claiming more is corruption and
/// is never allocated.
pub const MAX_PAYLOAD: u32 = 64 << 20;

/// Record types. Types below 0x80 are optional: a reader that does not know
/// one skips it. Types from 0x80 up are critical: an older reader refuses the
/// file instead of misreading it.
pub const TYPE_META: u8 = 0x01;
pub const TYPE_SAMPLE: u8 = 0x02;
pub const TYPE_END: u8 = 0x03;
/// The host's configuration (`HostTopology` as JSON) for `--pinning-check --replay`.
pub const TYPE_TOPOLOGY: u8 = 0x04;
pub const TYPE_CRITICAL: u8 = 0x80;

pub const ENC_JSON: u8 = 0;
pub const ENC_ZSTD_JSON: u8 = 1;
/// Opaque bytes (the topology JSON), optionally zstd.
pub const ENC_BYTES: u8 = 2;
pub const ENC_ZSTD_BYTES: u8 = 3;

/// The first record of every file: who wrote it and about which host.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Meta {
    /// Framing version that wrote the file.
    pub format: u16,
    /// "nettop 0.1.0".
    pub writer: String,
    pub created_unix_ms: u64,
    /// Requested sampling interval.
    pub interval_s: f64,
    pub host: HostInfo,
    /// Index of this file in a rotated set (0 = first file of the recording).
    #[serde(default)]
    pub part: u32,
}

/// Last record of a cleanly closed file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct End {
    pub samples: u64,
    /// "count", "duration", "signal", "rotated", "day", "reopen",
    /// "paused" (a disk fault ended the part), "error".
    pub reason: String,
}

pub fn file_header(compressed: bool) -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    let flags = if compressed { FLAG_ZSTD } else { 0 };
    h[10..12].copy_from_slice(&flags.to_le_bytes());
    let crc = crc32fast::hash(&h[0..12]);
    h[12..16].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A decoded record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub len: u32,
    pub rtype: u8,
    pub encoding: u8,
    pub unix_ms: u64,
    pub crc: u32,
}

impl RecordHeader {
    pub fn parse(b: &[u8; RECORD_HEADER_LEN]) -> Option<RecordHeader> {
        if b[0..4] != SYNC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut ms = [0u8; 8];
        ms.copy_from_slice(&b[12..20]);
        Some(RecordHeader {
            len: u32_at(4),
            rtype: b[8],
            encoding: b[9],
            unix_ms: u64::from_le_bytes(ms),
            crc: u32_at(20),
        })
    }

    /// CRC over the header's first 20 bytes and the payload.
    pub fn compute_crc(head: &[u8], payload: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new();
        h.update(&head[0..20]);
        h.update(payload);
        h.finalize()
    }
}

/// One complete record (header + payload) ready for a single `write()`.
pub fn encode_record(rtype: u8, encoding: u8, unix_ms: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD_HEADER_LEN + payload.len());
    out.extend_from_slice(&SYNC);
    // Callers bound payloads by MAX_PAYLOAD before getting here.
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.push(rtype);
    out.push(encoding);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&unix_ms.to_le_bytes());
    let crc = RecordHeader::compute_crc(&out, payload);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

impl Untrusted for Meta {
    fn sanitize(&mut self) {
        clean_string(&mut self.writer);
        self.host.sanitize();
    }
}
