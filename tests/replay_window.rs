//! `--begin`/`--end` select a slice of a recording for replay and export,
//! in the replay `T` prompt's time syntax: clock times (UTC, the first such
//! time after the recording starts), offsets from its start (`+D`) or end
//! (`-D`), and dates.

mod common;

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
    rec.window(b.map(p), e.map(p)).map(|r| (r.start, r.end))
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
