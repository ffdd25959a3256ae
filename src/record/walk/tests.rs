//! The walk's policy, and random access agreeing with it.

use super::*;
use crate::record::{Meta, Writer, synth};

/// Writes samples with the given monotonic clocks (seconds), a second
/// apart by the wall clock (so a clock that steps back is a reboot),
/// then damages the payload of the samples in `bad`.
fn recording(dir: &std::path::Path, clocks: &[u64], bad: &[usize]) -> Recording {
    let clocks: Vec<(u64, u64)> = (1..).zip(clocks).map(|(t, &c)| (c, t)).collect();
    recording_at(dir, &clocks, bad)
}

/// Writes samples with the given (monotonic, wall) clocks in seconds,
/// then damages the payload of the samples in `bad`.
fn recording_at(dir: &std::path::Path, clocks: &[(u64, u64)], bad: &[usize]) -> Recording {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = dir.join(format!("w{n}.rec"));
    let mut w = Writer::create(&p, false, false).unwrap();
    w.write_meta(&Meta {
        host: synth::host(2),
        interval_s: 1.0,
        ..Default::default()
    })
    .unwrap();
    // The configuration of the samples' one device, as a recording
    // stores it: frames must carry it however they are reached.
    let topo = crate::topology::HostTopology {
        nics: vec![crate::topology::Nic {
            name: "eth0".into(),
            driver: Some("virtio_net".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    w.write_topology(&serde_json::to_vec(&topo).unwrap())
        .unwrap();
    let mut starts = Vec::new();
    for (i, &(mono, wall)) in clocks.iter().enumerate() {
        let mut s = synth::sample(i as u64 + 1, 3, 2);
        s.mono_ns = mono * 1_000_000_000;
        s.unix_ms = 1_700_000_000_000 + wall * 1000;
        starts.push(w.bytes());
        w.write_sample(&s).unwrap();
    }
    w.finish("count").unwrap();
    let mut b = std::fs::read(&p).unwrap();
    for &i in bad {
        // A payload byte: the record stays indexed, its checksum fails.
        b[starts[i] as usize + 40] ^= 0x01;
    }
    std::fs::write(&p, &b).unwrap();
    Recording::open(&p).unwrap()
}

/// (sample index, baseline's seq) of every pair.
type Pairs = Vec<(usize, Option<u64>)>;

/// The pairs a walk hands on, its skips and its summary.
fn walk(rec: &Recording) -> (Pairs, Vec<Skip>, Walked) {
    let mut got = Vec::new();
    let mut skips = Vec::new();
    let w = pairs(
        rec,
        0,
        |i, p, _| {
            got.push((i, p.map(|p| p.seq)));
            Ok(ControlFlow::Continue(()))
        },
        &mut |s| skips.push(s.clone()),
    )
    .unwrap();
    (got, skips, w)
}

fn seq_of(i: usize) -> u64 {
    synth::sample(i as u64 + 1, 3, 2).seq
}

#[test]
fn a_bad_sample_in_the_middle_is_bridged() {
    let d = tempfile::tempdir().unwrap();
    let rec = recording(d.path(), &[1, 2, 3, 4, 5], &[2]);
    let (got, skips, w) = walk(&rec);
    assert_eq!(
        got,
        vec![
            (0, None),
            (1, Some(seq_of(0))),
            (3, Some(seq_of(1))),
            (4, Some(seq_of(3)))
        ]
    );
    assert!(matches!(
        skips.as_slice(),
        [Skip::BadSample { index: 2, .. }]
    ));
    assert_eq!((w.bad, w.rebased), (1, 0));
    // The bridging frame spans both intervals.
    let f = frame_ending_at(&rec, 3, None).unwrap();
    assert!((f.interval_s - 2.0).abs() < 1e-9, "{}", f.interval_s);
}

#[test]
fn a_clock_step_back_is_a_new_baseline() {
    let d = tempfile::tempdir().unwrap();
    let rec = recording(d.path(), &[10, 11, 12, 3, 4], &[]);
    let (got, skips, w) = walk(&rec);
    assert_eq!(got[3], (3, None), "no frame across the step");
    assert_eq!(got[4], (4, Some(seq_of(3))), "the next starts from it");
    assert_eq!(
        skips,
        vec![Skip::ClockStep {
            index: 3,
            prev_ns: 12_000_000_000,
            cur_ns: 3_000_000_000
        }]
    );
    assert_eq!((w.bad, w.rebased), (0, 1));
}

/// A record moved later in the file, or duplicated, goes back in time
/// on the same boot: skipped, not a new baseline whose next frame
/// would overlap the frames before.
#[test]
fn a_sample_out_of_order_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    // Taken at 1..=7 s; the one taken at 3 s written after 5 s.
    let moved = [1, 2, 4, 5, 3, 6, 7].map(|t| (100 + t, t));
    let rec = recording_at(d.path(), &moved, &[]);
    let (got, skips, w) = walk(&rec);
    let bases: Vec<(usize, Option<usize>)> = got
        .iter()
        .map(|&(i, b)| (i, b.map(|seq| seq as usize - 1)))
        .collect();
    assert_eq!(
        bases,
        vec![
            (0, None),
            (1, Some(0)),
            (2, Some(1)),
            (3, Some(2)),
            (5, Some(3)),
            (6, Some(5))
        ]
    );
    assert_eq!(
        skips,
        vec![Skip::OutOfOrder {
            index: 4,
            earlier: 3,
            earlier_ns: 105_000_000_000,
            cur_ns: 103_000_000_000
        }]
    );
    assert_eq!((w.bad, w.out_of_order, w.rebased), (0, 1, 0));
    // A duplicated record (both clocks equal) is out of order too.
    let rec = recording_at(d.path(), &[(1, 1), (2, 2), (2, 2), (3, 3)], &[]);
    let (got, skips, w) = walk(&rec);
    assert_eq!(got.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1, 3]);
    assert!(matches!(skips[..], [Skip::OutOfOrder { index: 2, .. }]));
    assert_eq!((w.out_of_order, w.rebased), (1, 0));
    // A reboot goes back by the monotonic clock, on by the wall clock:
    // still a new baseline.
    let rec = recording_at(d.path(), &[(500, 1), (501, 2), (7, 40), (8, 41)], &[]);
    let (got, skips, w) = walk(&rec);
    assert_eq!(got[2], (2, None));
    assert_eq!(got[3], (3, Some(seq_of(2))));
    assert!(matches!(skips[..], [Skip::ClockStep { index: 2, .. }]));
    assert_eq!((w.out_of_order, w.rebased), (0, 1));
}

#[test]
fn a_long_gap_of_bad_samples_is_not_bridged() {
    let d = tempfile::tempdir().unwrap();
    let n = MAX_BRIDGE + 4;
    let clocks: Vec<u64> = (1..=n as u64).collect();
    // MAX_BRIDGE bad samples are bridged, one more is not.
    let bridged: Vec<usize> = (1..=MAX_BRIDGE).collect();
    let rec = recording(d.path(), &clocks, &bridged);
    let (got, _, w) = walk(&rec);
    assert_eq!(got[1], (MAX_BRIDGE + 1, Some(seq_of(0))));
    assert_eq!(w.rebased, 0);
    let too_many: Vec<usize> = (1..=MAX_BRIDGE + 1).collect();
    let rec = recording(d.path(), &clocks, &too_many);
    let (got, skips, w) = walk(&rec);
    assert_eq!(got[1], (MAX_BRIDGE + 2, None));
    assert_eq!(got[2], (MAX_BRIDGE + 3, Some(seq_of(MAX_BRIDGE + 2))));
    assert!(skips.contains(&Skip::LongGap {
        index: MAX_BRIDGE + 2,
        skipped: MAX_BRIDGE + 1
    }));
    assert_eq!((w.bad, w.rebased), (MAX_BRIDGE as u64 + 1, 1));
}

#[test]
fn random_access_agrees_with_the_walk() {
    let d = tempfile::tempdir().unwrap();
    let n = MAX_BRIDGE + 12;
    let mut clocks: Vec<u64> = (10..10 + n as u64).collect();
    clocks[5] = 2; // a step back
    clocks[6] = 3;
    let bad: Vec<usize> = [0, 3].into_iter().chain(8..8 + MAX_BRIDGE + 1).collect();
    let rec = recording(d.path(), &clocks, &bad);
    let mut walked = vec![None; rec.len()];
    frames(
        &rec,
        0,
        |i, f| {
            walked[i] = Some(f);
            Ok(ControlFlow::Continue(()))
        },
        &mut |_| {},
    )
    .unwrap();
    let topo = recorded_topology(&rec);
    assert!(topo.is_some());
    for (k, want) in walked.iter().enumerate() {
        let got = frame_ending_at(&rec, k, topo.as_ref()).ok();
        assert_eq!(&got, want, "sample {k}");
    }
    let shown: Vec<&Frame> = walked.iter().flatten().collect();
    assert!(shown.len() >= 4);
    assert!(
        shown
            .iter()
            .all(|f| f.devices.iter().all(|d| d.config.is_some())),
        "every frame carries the recorded configuration"
    );
}

/// Samples out of order (one moved later, one moved earlier with a
/// run behind it longer than the walk looks back, a duplicate), a
/// reboot and damage: random access agrees with the walk, over the
/// whole recording and over a time window, and no walked frame
/// overlaps the one before.
#[test]
fn random_access_agrees_with_the_walk_out_of_order() {
    let d = tempfile::tempdir().unwrap();
    let mut at: Vec<(u64, u64)> = Vec::new();
    let same = |t: u64| (1000 + t, t);
    at.extend((1..=6).map(same));
    at.push(same(3));
    at.extend((7..=9).map(same));
    at.push(same(60));
    at.extend((10..10 + LOOK as u64 + 3).map(same));
    at.extend([(5, 100), (6, 101), (7, 102), (7, 102), (8, 103)]);
    let bad = [2, 13];
    let rec = recording_at(d.path(), &at, &bad);
    let topo = recorded_topology(&rec);
    let ms = |s: u64| 1_700_000_000_000 + s * 1000;
    let windows = [
        rec.all(),
        Window {
            span: 0..rec.len(),
            ms: ms(4)..=ms(12),
        },
        Window {
            span: 5..rec.len() - 2,
            ms: ms(0)..=ms(1000),
        },
    ];
    for window in &windows {
        let mut walked = vec![None; rec.len()];
        let mut out_of_order = Vec::new();
        frames_in(
            &rec,
            window.clone(),
            |i, f| {
                walked[i] = Some(f);
                Ok(ControlFlow::Continue(()))
            },
            &mut |s| {
                if let Skip::OutOfOrder { index, .. } = s {
                    out_of_order.push(*index);
                }
            },
        )
        .unwrap();
        for (k, want) in walked.iter().enumerate() {
            let got = frame_ending_at_in(&rec, window, k, topo.as_ref()).ok();
            assert_eq!(&got, want, "sample {k} of {window:?}");
        }
        let shown: Vec<&Frame> = walked.iter().flatten().collect();
        // Samples 28..=30 (seq 29..=31) follow more than MAX_BRIDGE
        // skipped ones: a new baseline, the documented limit.
        let after_long_gap = |seq: u64| (30..=31).contains(&seq);
        for pair in shown.windows(2) {
            let start = pair[1].unix_ms as f64 - pair[1].interval_s * 1000.0;
            assert!(
                start >= pair[0].unix_ms as f64 - 1e-3 || after_long_gap(pair[1].seq),
                "frame ending at seq {} overlaps the one before ({window:?})",
                pair[1].seq
            );
        }
        if *window == rec.all() {
            // The one moved later; the run behind the one moved
            // earlier (13 is damaged) until it leaves the look-back;
            // the duplicate.
            let want: Vec<usize> = [6, 11, 12]
                .into_iter()
                .chain(14..=10 + LOOK)
                .chain([34])
                .collect();
            assert_eq!(out_of_order, want);
        }
    }
}

#[test]
fn the_callback_can_stop_the_walk() {
    let d = tempfile::tempdir().unwrap();
    let rec = recording(d.path(), &[1, 2, 3, 4], &[]);
    let mut n = 0;
    let w = frames(
        &rec,
        0,
        |_, _| {
            n += 1;
            Ok(if n == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(w.stopped);
    assert_eq!(n, 2);
}
