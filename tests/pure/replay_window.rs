//! `--begin`/`--end` select a slice of a recording for replay and export,
//! in the replay `T` prompt's time syntax: clock times (UTC, the first such
//! time after the recording starts), offsets from its start (`+D`) or end
//! (`-D`), and dates.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::run::{nettop, output_within, stderr};
use nettop::record::{Recording, synth};
use nettop::sys::units::{TimeSpec, parse_time};

const LIMIT: Duration = Duration::from_secs(30);

/// 2026-11-24 23:58:00 UTC.
const START_MS: u64 = 1_795_564_680_000;

/// Eight samples a minute apart from 23:58, across midnight.
fn recording(p: &Path) {
    let samples = (1..=8u64).map(|k| {
        let mut s = synth::sample(k, 3, 2);
        s.unix_ms = START_MS + (k - 1) * 60_000;
        s
    });
    synth::write_recording(p, false, 2, samples).unwrap();
}

fn window(rec: &Recording, b: Option<&str>, e: Option<&str>) -> anyhow::Result<(usize, usize)> {
    let p = |s: &str| parse_time("t", s).unwrap();
    rec.window(b.map(p), e.map(p))
        .map(|w| (w.span.start, w.span.end))
}

#[test]
fn the_time_syntax() {
    assert_eq!(parse_time("t", "12:30"), Ok(TimeSpec::Clock(45_000)));
    assert_eq!(parse_time("t", "00:00:05"), Ok(TimeSpec::Clock(5)));
    assert_eq!(
        parse_time("t", "-10m"),
        Ok(TimeSpec::Offset(false, Duration::from_secs(600)))
    );
    assert_eq!(
        parse_time("t", "2026-11-24T23:58:00Z"),
        Ok(TimeSpec::At(START_MS))
    );
    for bad in ["", "25:00", "12", "soon", "+", "12:00:00:00"] {
        assert!(parse_time("t", bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn windows_of_a_recording_across_midnight() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    recording(&f);
    let rec = Recording::open(&f).unwrap();
    assert_eq!(rec.len(), 8);
    // Samples at 23:58, 23:59, 00:00, …, 00:05.
    assert_eq!(window(&rec, None, None).unwrap(), (0, 8));
    // A clock time before the start is the next day's.
    assert_eq!(window(&rec, Some("00:01"), None).unwrap(), (3, 8));
    assert_eq!(window(&rec, Some("23:59"), Some("00:02")).unwrap(), (1, 5));
    // Offsets: from the start forward, from the end back.
    assert_eq!(window(&rec, Some("+2m"), Some("-1m")).unwrap(), (2, 7));
    assert_eq!(
        window(&rec, Some("2026-11-25T00:03:00Z"), None).unwrap(),
        (5, 8)
    );
    // One sample is no frame; the error says what the recording covers.
    let e = window(&rec, Some("00:05"), None).unwrap_err().to_string();
    assert!(e.contains("1 sample(s)"), "{e}");
    assert!(e.contains("2026-11-24T23:58:00Z"), "{e}");
    // An end clock time is the first after the begin: the next day's.
    assert_eq!(window(&rec, Some("00:03"), Some("00:01")).unwrap(), (5, 8));
    assert!(window(&rec, Some("+30m"), None).is_err());
}

#[test]
fn export_and_batch_replay_honour_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    recording(&f);
    let r = f.to_str().unwrap();
    let frames = |args: &[&str]| -> Vec<u64> {
        let out = output_within(nettop().args(args), LIMIT, &format!("{args:?}"));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["unix_ms"].as_u64().unwrap()
            })
            .collect()
    };
    let min = |m: u64| START_MS + m * 60_000;
    // Samples 2..=4 (00:00, 00:01, 00:02): frames end at 00:01 and 00:02.
    let want = vec![min(3), min(4)];
    assert_eq!(
        frames(&[
            "--replay", r, "--export", "json", "--begin", "00:00", "--end", "00:02"
        ]),
        want
    );
    assert_eq!(
        frames(&[
            "--replay", r, "-b", "--json", "--begin", "+2m", "--end", "-3m"
        ]),
        want
    );
    // An empty window is an error naming the recording's span, exit 2.
    let out = output_within(
        nettop().args(["--replay", r, "--export", "csv", "--begin", "-30s"]),
        LIMIT,
        "empty window",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the recording runs from"),
        "{}",
        stderr(&out)
    );
    // Without --replay the flags are usage errors.
    let out = output_within(
        nettop().args(["-b", "--begin", "12:00"]),
        LIMIT,
        "no replay",
    );
    assert_eq!(out.status.code(), Some(2));
}

/// Samples a second apart (`synth::sample(k)` is taken at k s), written in
/// `order`.
fn written_in(p: &Path, order: &[u64]) {
    synth::write_recording(p, false, 2, order.iter().map(|&k| synth::sample(k, 3, 2))).unwrap();
}

/// JSON frames of `args`: (exit code, seq of each frame, stderr).
fn json_frames(args: &[&str]) -> (Option<i32>, Vec<u64>, String) {
    let out = output_within(nettop().args(args), LIMIT, &format!("{args:?}"));
    let seqs = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["seq"].as_u64().unwrap()
        })
        .collect();
    (out.status.code(), seqs, stderr(&out))
}

/// A window counted a span of file positions found by binary search, as if
/// file order were time order: with one record written early, `--begin
/// +2s --end +4s` missed samples that lie in it. It counts by time now.
#[test]
fn a_window_counts_the_samples_whose_time_lies_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    // The sample taken at 7 s written third.
    let order = [1, 2, 7, 3, 4, 5, 6, 8];
    written_in(&f, &order);
    let rec = Recording::open(&f).unwrap();
    // Every window of whole seconds from the start, against a count by
    // hand: sample k is taken k - 1 s after the first.
    for b in 0..=8u64 {
        for e in b..=8u64 {
            let want = order
                .iter()
                .filter(|&&k| (b..=e).contains(&(k - 1)))
                .count();
            let (bs, es) = (format!("+{b}s"), format!("+{e}s"));
            match window(&rec, Some(&bs), Some(&es)) {
                Ok(_) => {
                    let w = rec
                        .window(parse_time("t", &bs).ok(), parse_time("t", &es).ok())
                        .unwrap();
                    assert_eq!(w.count(&rec), want, "{bs} {es}");
                }
                Err(err) => {
                    assert!(want < 2, "{bs} {es}: {err}");
                    assert!(
                        err.to_string().contains(&format!("{want} sample(s)")),
                        "{err}"
                    );
                }
            }
        }
    }
    let r = f.to_str().unwrap();
    let seq = |k: u64| synth::sample(k, 3, 2).seq;
    // Samples 3, 4 and 5: frames end at 4 and 5, and nothing is skipped.
    for mode in ["-b", "--export"] {
        let mut args = vec!["--replay", r, "--begin", "+2s", "--end", "+4s", mode];
        args.push(if mode == "-b" { "--json" } else { "json" });
        let (code, seqs, err) = json_frames(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert_eq!(seqs, [4, 5].map(seq), "{args:?}: {err}");
    }
}

/// `--end` before `--begin` said "0 sample(s) between" the two times.
#[test]
fn end_before_begin_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    written_in(&f, &[1, 2, 3, 4, 5, 6, 7, 8]);
    let r = f.to_str().unwrap();
    for mode in [&["-b"][..], &["--export", "json"]] {
        let mut args = vec!["--replay", r, "--begin", "+5s", "--end", "+1s"];
        args.extend(mode);
        let (code, seqs, err) = json_frames(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(seqs.is_empty());
        assert!(
            err.contains("--end (2023-11-14T22:13:22Z) is before --begin (2023-11-14T22:13:26Z)"),
            "{args:?}: {err}"
        );
    }
}

/// `+0s` is the start of the recording and `-0` its end; both were
/// refused as "must be more than zero".
#[test]
fn plus_zero_is_the_start_and_minus_zero_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    written_in(&f, &[1, 2, 3, 4, 5]);
    let rec = Recording::open(&f).unwrap();
    assert_eq!(window(&rec, Some("+0s"), Some("-0")).unwrap(), (0, 5));
    assert_eq!(window(&rec, Some("+0"), Some("+1s")).unwrap(), (0, 2));
    let r = f.to_str().unwrap();
    let (code, seqs, err) = json_frames(&[
        "--replay", r, "-b", "--json", "--begin", "+0s", "--end", "-0",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(seqs.len(), 4, "{err}");
}

/// A sample time past year 9999 (a crafted header, checksum intact) made
/// the window's message panic while writing the recording's span.
#[test]
fn a_time_past_year_9999_is_shown_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.rec");
    let samples = (1..=4u64).map(|k| {
        let mut s = synth::sample(k, 3, 2);
        if k == 4 {
            s.unix_ms = 300_000_000_000_000;
        }
        s
    });
    synth::write_recording(&f, false, 2, samples).unwrap();
    let r = f.to_str().unwrap();
    let (code, _, err) = json_frames(&["--replay", r, "-b", "--json", "--begin", "-1s"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("300000000000000 ms after 1970"), "{err}");
}
