//! Damaged and crafted recordings (issue 10, items 2, 6, 12): one byte of
//! damage loses one record, replay and export agree on what damage means,
//! a crafted file costs time linear in its size, and recorded strings reach
//! no terminal raw.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::run::{assert_clean_exit, nettop, output_within, stderr, stdout};
use nettop::record::{Meta, Recording, WarningKind, Writer, synth};

const LIMIT: Duration = Duration::from_secs(30);
const SAMPLES: u64 = 6;

/// A clean recording: host record, SAMPLES snapshots, end record.
fn write_valid(p: &Path) -> Vec<u8> {
    synth::write_recording(p, false, 2, (1..=SAMPLES).map(|k| synth::sample(k, 3, 2))).unwrap();
    std::fs::read(p).unwrap()
}

/// Offsets of the record markers: [meta, sample 1 …, end].
fn markers(b: &[u8]) -> Vec<usize> {
    (16..b.len().saturating_sub(3))
        .filter(|&i| &b[i..i + 4] == b"NTRC")
        .collect()
}

fn seqs(rec: &Recording) -> Vec<u64> {
    (0..rec.len())
        .filter_map(|i| rec.get(i).ok())
        .map(|s| s.seq)
        .collect()
}

fn replay_codes(p: &Path) -> (Option<i32>, Option<i32>, String) {
    let f = p.to_str().unwrap();
    let b = output_within(nettop().args(["--replay", f, "-b"]), LIMIT, "-b replay");
    let e = output_within(
        nettop().args(["--replay", f, "--export", "json"]),
        LIMIT,
        "--export",
    );
    assert_clean_exit(&b, "-b replay");
    assert_clean_exit(&e, "--export");
    (
        b.status.code(),
        e.status.code(),
        format!("{}\n{}", stderr(&b), stderr(&e)),
    )
}

/// Item 12: a flipped high bit in one sample's type byte made the whole
/// file "needs a newer nettop", although its checksum shows the damage.
#[test]
fn type_byte_damage_is_damage_not_a_newer_version() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.rec");
    let mut b = write_valid(&p);
    let m = markers(&b);
    b[m[3] + 8] |= 0x80; // sample 3
    std::fs::write(&p, &b).unwrap();
    let rec = Recording::open(&p).unwrap();
    assert!(
        rec.warnings()
            .iter()
            .any(|w| w.kind == WarningKind::Corrupt && w.offset == m[3] as u64),
        "{:?}",
        rec.warnings()
    );
    assert_eq!(seqs(&rec), vec![1, 2, 4, 5, 6]);
    let (bc, ec, err) = replay_codes(&p);
    assert!(!err.contains("newer"), "{err}");
    assert_eq!((bc, ec), (Some(2), Some(2)), "{err}");
}

/// Item 12: damage to a sample's length field lost the next, intact
/// snapshot too.
#[test]
fn length_damage_loses_only_the_damaged_record() {
    for delta in [7i64, -7, 1 << 20, -1000] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.rec");
        let mut b = write_valid(&p);
        let m = markers(&b);
        let at = m[2] + 4; // sample 2's length
        let len = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let bad = (i64::from(len) + delta).max(0) as u32;
        b[at..at + 4].copy_from_slice(&bad.to_le_bytes());
        std::fs::write(&p, &b).unwrap();
        let rec = Recording::open(&p).unwrap();
        assert_eq!(
            seqs(&rec),
            vec![1, 3, 4, 5, 6],
            "length {len} -> {bad}: {:?}",
            rec.warnings()
        );
        assert!(rec.closed_cleanly(), "end record lost ({delta})");
    }
}

/// Item 12: on the same damaged file, `-b` replay exited 0 while
/// `--export` exited 2. Damage is exit 2 for both; a torn tail (kill -9)
/// is only a warning for both.
#[test]
fn replay_and_export_agree_on_damage() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.rec");
    let mut b = write_valid(&p);
    let m = markers(&b);
    b[m[3] + 40] ^= 0x01; // a payload byte of sample 3
    std::fs::write(&p, &b).unwrap();
    let (bc, ec, err) = replay_codes(&p);
    assert_eq!((bc, ec), (Some(2), Some(2)), "payload damage: {err}");

    let good = write_valid(&dir.path().join("good.rec"));
    let m = markers(&good);
    std::fs::write(&p, &good[..m[m.len() - 1] + 10]).unwrap();
    let (bc, ec, err) = replay_codes(&p);
    assert_eq!((bc, ec), (Some(0), Some(0)), "torn tail: {err}");
}

/// Issue 11: `-b` replay dropped both frames around a damaged sample and
/// computed frames across a clock step that `--export` skipped. Both walk
/// the recording through `record::walk` now: same frames, same exit code.
#[test]
fn replay_and_export_print_the_same_frames() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.rec");
    let mut w = Writer::create(&p, false, false).unwrap();
    w.write_meta(&Meta {
        host: synth::host(2),
        interval_s: 1.0,
        ..Default::default()
    })
    .unwrap();
    for k in 1..=8u64 {
        let mut s = synth::sample(k, 3, 2);
        if k == 6 {
            s.mono_ns = 1; // a clock step back
        }
        w.write_sample(&s).unwrap();
    }
    w.finish("count").unwrap();
    let mut b = std::fs::read(&p).unwrap();
    let m = markers(&b);
    b[m[3] + 40] ^= 0x01; // a payload byte of sample 3
    std::fs::write(&p, &b).unwrap();
    let f = p.to_str().unwrap();
    let batch = output_within(
        nettop().args(["--replay", f, "-b", "--json"]),
        LIMIT,
        "-b replay",
    );
    let export = output_within(
        nettop().args(["--replay", f, "--export", "json"]),
        LIMIT,
        "--export",
    );
    assert_eq!(
        (batch.status.code(), export.status.code()),
        (Some(2), Some(2))
    );
    let (bo, eo) = (stdout(&batch), stdout(&export));
    // Samples 1..8: 3 is damaged (2→4 bridges it), 6 steps back (no frame
    // ends at it, 6→7 starts from it): frames end at 2, 4, 5, 7, 8.
    let ends = |out: &str| -> Vec<u64> {
        out.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let seq = |k: u64| synth::sample(k, 3, 2).seq;
    assert_eq!(ends(&eo), [2, 4, 5, 7, 8].map(seq), "--export json");
    assert_eq!(ends(&bo), [2, 4, 5, 7, 8].map(seq), "-b --json");
    assert!(
        bo == eo,
        "-b --json and --export json print different frames"
    );
    let err = stderr(&batch);
    assert!(
        err.contains("sample skipped") && err.contains("monotonic clock"),
        "{err}"
    );
}

/// A sample moved later in the file (checksums intact) goes back in time.
/// Replay warned, then made it a new baseline: the next frame spanned the
/// frames already printed. Now it is skipped like a damaged sample, once,
/// and counted in the last line.
#[test]
fn a_sample_moved_later_is_skipped_and_no_frame_overlaps() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("moved.rec");
    let order = [1, 2, 4, 5, 3, 6, 7, 8u64];
    synth::write_recording(&p, false, 2, order.map(|k| synth::sample(k, 3, 2))).unwrap();
    let f = p.to_str().unwrap();
    let seq = |k: u64| synth::sample(k, 3, 2).seq;
    for args in [
        vec!["--replay", f, "-b", "--json"],
        vec!["--replay", f, "--export", "json"],
    ] {
        let out = output_within(nettop().args(&args), LIMIT, &format!("{args:?}"));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        // (seq, start ms, end ms) of every frame.
        let frames: Vec<(u64, f64, f64)> = stdout(&out)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let end = v["unix_ms"].as_u64().unwrap() as f64;
                let start = end - v["interval_s"].as_f64().unwrap() * 1000.0;
                (v["seq"].as_u64().unwrap(), start, end)
            })
            .collect();
        // 2→4 spans the moved sample's interval, as a bridge does.
        let ends: Vec<u64> = frames.iter().map(|f| f.0).collect();
        assert_eq!(ends, [2, 4, 5, 6, 7, 8].map(seq), "{args:?}: {err}");
        for w in frames.windows(2) {
            assert!(
                w[1].1 >= w[0].2 - 1e-3,
                "{args:?}: frame ending at seq {} overlaps the one before: {frames:?}",
                w[1].0
            );
        }
        let warned: Vec<&str> = err.lines().filter(|l| l.contains("out of order")).collect();
        assert_eq!(warned.len(), 2, "{args:?}: one warning, one summary: {err}");
        assert!(
            warned[0].contains("sample 4:") && warned[0].contains("sample skipped"),
            "{args:?}: {err}"
        );
        assert!(
            warned[1].contains("1 sample(s) out of order skipped"),
            "{args:?}: {err}"
        );
    }
}

/// Item 6: a crafted 128 MB recording kept replay at 100 % CPU for over
/// 60 s: resync checksummed up to 64 MiB per candidate header. Here 8 MiB of
/// overlapping candidates, each claiming to run to the end of the file.
#[test]
fn crafted_resync_costs_time_linear_in_size() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("crafted.rec");
    let mut b = write_valid(&p);
    let m = markers(&b);
    b.truncate(m[2]); // meta + sample 1
    b.extend_from_slice(b"garbage!"); // not a marker: resync starts here
    let total = 8usize << 20;
    let mut off = b.len();
    while off + 24 <= total {
        let claim = (total - off - 24) as u32;
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(b"NTRC");
        h.extend_from_slice(&claim.to_le_bytes());
        h.extend_from_slice(&[2, 0, 0, 0]);
        h.extend_from_slice(&1_700_000_000_000u64.to_le_bytes());
        h.extend_from_slice(&0xdead_beefu32.to_le_bytes());
        b.extend_from_slice(&h);
        off += 24;
    }
    b.resize(total, b'x');
    std::fs::write(&p, &b).unwrap();
    let t0 = Instant::now();
    let out = output_within(
        nettop().args(["--replay", p.to_str().unwrap(), "--export", "json"]),
        Duration::from_secs(60),
        "replay of a crafted file",
    );
    assert_clean_exit(&out, "crafted");
    common::report(&format!(
        "crafted 8 MiB resync: {:?}, exit {:?}\n",
        t0.elapsed(),
        out.status.code()
    ));
    let t0 = Instant::now();
    let rec = Recording::open(&p).unwrap();
    let took = t0.elapsed();
    assert!(
        rec.bytes_examined() <= 8 * b.len() as u64,
        "indexing examined {} bytes of an {}-byte file",
        rec.bytes_examined(),
        b.len()
    );
    assert!(took < Duration::from_secs(10), "indexing took {took:?}");
}

/// Item 2: strings in a recording (comm, device and napi names, host
/// facts) reached the terminal raw in `-b` replay and CSV.
#[test]
fn recorded_strings_reach_no_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.rec");
    let evil = "\x1b]0;PWN\x07\x1b[2J\nFORGED LINE\r\u{9b}31m\u{202e}";
    let mut w = Writer::create(&p, false, false).unwrap();
    let mut host = synth::host(2);
    host.hostname = evil.into();
    w.write_meta(&Meta {
        host,
        interval_s: 1.0,
        ..Default::default()
    })
    .unwrap();
    for k in 1..=3 {
        let mut s = synth::sample(k, 3, 2);
        for t in &mut s.tasks {
            t.comm = evil.into();
        }
        for d in &mut s.devices {
            d.name = evil.into();
        }
        for n in &mut s.napi {
            n.dev = evil.into();
        }
        w.write_sample(&s).unwrap();
    }
    w.finish("count").unwrap();
    let f = p.to_str().unwrap();
    for args in [
        vec!["--replay", f, "-b", "--rows", "0"],
        vec!["--replay", f, "-b", "-H", "--rows", "0"],
        vec!["--replay", f, "--export", "csv", "--rows", "0"],
        vec!["--replay", f, "--export", "csv", "-H", "--rows", "0"],
        vec!["--replay", f, "--export", "openmetrics"],
    ] {
        let out = output_within(nettop().args(&args), LIMIT, &format!("{args:?}"));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert_no_controls(&text, &format!("{args:?}"));
        assert!(
            !text.lines().any(|l| l.starts_with("FORGED")),
            "{args:?}: forged line:\n{text}"
        );
    }
    // Through the library reader too: what the TUI is fed.
    let rec = Recording::open(&p).unwrap();
    assert_no_controls(&rec.host().hostname, "host");
    let s = rec.get(0).unwrap();
    for t in &s.tasks {
        assert_no_controls(&t.comm, "comm");
    }
}

fn assert_no_controls(text: &str, what: &str) {
    for c in text.chars() {
        let bad = (c.is_control() && c != '\n')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(!bad, "{what}: control character {c:?} in output:\n{text:?}");
    }
}
