//! The one way to turn a recording into frames: batch replay (`-b`),
//! `--export`, the TUI's replay cursor and the pinning lint's recorded
//! evidence all walk samples through here, so they agree on what damage
//! means.
//!
//! # Policy
//!
//! A frame is the model over two samples: the *baseline* and the sample it
//! ends at. The baseline of sample `k` is the last readable sample before
//! it, and
//!
//! - **Bad samples** (checksum, decoding or schema errors) are reported and
//!   skipped. The frame ending at the next readable sample spans the gap:
//!   counters are cumulative and the model divides by the samples' real
//!   clock difference, so that frame is the exact average over the longer
//!   interval (its `interval_s` shows the length). Nothing else is lost.
//! - **Long gaps**: more than [`MAX_BRIDGE`] unreadable samples in a row
//!   are not bridged. The next readable sample becomes a new baseline (no
//!   frame ends at it), so a random-access reader never searches further
//!   back than that for a baseline.
//! - **Clock steps**: when a sample's monotonic clock is not after its
//!   baseline's (a different boot, a reordered or duplicated record), no
//!   interval can be computed. It is reported, no frame ends at that
//!   sample, and it becomes the new baseline.
//! - **Time gaps** (the recorder was stopped or its host suspended) are
//!   not damage: one long frame over the real interval, like live mode's
//!   ticker produces after a stall.
//!
//! [`pairs`] walks in order (one decode per sample); [`frame_ending_at`]
//! computes the same frame for random access (the TUI's seek), and the
//! tests check that both agree.

use std::ops::{ControlFlow, Range};

use super::Recording;
use crate::model::frame::Frame;
use crate::sample::RawSample;

/// Most consecutive unreadable samples a frame may span.
pub const MAX_BRIDGE: usize = 16;

/// Something the walk skipped, reported as it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Sample `index` could not be read.
    BadSample { index: usize, error: String },
    /// Sample `index` follows more than [`MAX_BRIDGE`] unreadable ones: it
    /// is a new baseline.
    LongGap { index: usize, unreadable: usize },
    /// Sample `index`'s monotonic clock is not after its baseline's: it is
    /// a new baseline.
    ClockStep {
        index: usize,
        prev_ns: u64,
        cur_ns: u64,
    },
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::BadSample { error, .. } => write!(f, "{error}; sample skipped"),
            Skip::LongGap { index, unreadable } => write!(
                f,
                "sample {index} follows {unreadable} unreadable samples (more than {MAX_BRIDGE}); \
                 no frame ends at it, the next starts from it"
            ),
            Skip::ClockStep {
                index,
                prev_ns,
                cur_ns,
            } => write!(
                f,
                "sample {index}: monotonic clock {cur_ns} ns is not after the previous sample's \
                 {prev_ns} ns (another boot?); no frame ends at it, the next starts from it"
            ),
        }
    }
}

/// What a walk did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Walked {
    /// Unreadable samples (damage: `-b` and `--export` exit 2).
    pub bad: u64,
    /// Clock steps and long gaps: new baselines without a frame.
    pub rebased: u64,
    /// The callback asked to stop before the end.
    pub stopped: bool,
}

/// Walks samples `from..` in order, handing each readable sample to `f`
/// with its baseline (`None` at the start, after a clock step or a long
/// gap). Skips go to `note` as they happen.
pub fn pairs(
    rec: &Recording,
    from: usize,
    f: impl FnMut(usize, Option<&RawSample>, &RawSample) -> anyhow::Result<ControlFlow<()>>,
    note: &mut dyn FnMut(&Skip),
) -> anyhow::Result<Walked> {
    pairs_in(rec, from..rec.len(), f, note)
}

/// [`pairs`] over the samples of `span` only (a replay window).
pub fn pairs_in(
    rec: &Recording,
    span: Range<usize>,
    mut f: impl FnMut(usize, Option<&RawSample>, &RawSample) -> anyhow::Result<ControlFlow<()>>,
    note: &mut dyn FnMut(&Skip),
) -> anyhow::Result<Walked> {
    let mut w = Walked::default();
    let mut prev: Option<RawSample> = None;
    let mut unreadable = 0usize;
    for index in span.start..span.end.min(rec.len()) {
        let cur = match rec.get(index) {
            Ok(s) => s,
            Err(e) => {
                w.bad += 1;
                unreadable += 1;
                note(&Skip::BadSample {
                    index,
                    error: format!("{e:#}"),
                });
                continue;
            }
        };
        if unreadable > MAX_BRIDGE && prev.is_some() {
            w.rebased += 1;
            note(&Skip::LongGap { index, unreadable });
            prev = None;
        }
        unreadable = 0;
        if let Some(p) = &prev
            && cur.mono_ns <= p.mono_ns
        {
            w.rebased += 1;
            note(&Skip::ClockStep {
                index,
                prev_ns: p.mono_ns,
                cur_ns: cur.mono_ns,
            });
            prev = None;
        }
        if f(index, prev.as_ref(), &cur)?.is_break() {
            w.stopped = true;
            return Ok(w);
        }
        prev = Some(cur);
    }
    Ok(w)
}

/// The frames of [`pairs`]: one per readable sample that has a baseline,
/// with the index of the sample it ends at.
pub fn frames(
    rec: &Recording,
    from: usize,
    f: impl FnMut(usize, Frame) -> anyhow::Result<ControlFlow<()>>,
    note: &mut dyn FnMut(&Skip),
) -> anyhow::Result<Walked> {
    frames_in(rec, from..rec.len(), f, note)
}

/// [`frames`] over the samples of `span` only (a replay window).
pub fn frames_in(
    rec: &Recording,
    span: Range<usize>,
    mut f: impl FnMut(usize, Frame) -> anyhow::Result<ControlFlow<()>>,
    note: &mut dyn FnMut(&Skip),
) -> anyhow::Result<Walked> {
    let host = rec.host().clone();
    let topo = recorded_topology(rec);
    pairs_in(
        rec,
        span,
        |i, prev, cur| match prev {
            Some(p) => f(i, frame_of(&host, p, cur, topo.as_ref())),
            None => Ok(ControlFlow::Continue(())),
        },
        note,
    )
}

/// One frame of a recording, the same whether walked or reached at
/// random: computed from its pair and carrying each device's configuration
/// as the recording captured it.
fn frame_of(
    host: &crate::sample::HostInfo,
    prev: &RawSample,
    cur: &RawSample,
    topo: Option<&crate::topology::HostTopology>,
) -> Frame {
    let mut frame = crate::model::compute(host, prev, cur);
    if let Some(t) = topo {
        frame.attach_config(t);
    }
    frame
}

/// The configuration the recording captured (`None` in files without a
/// topology record): frames carry each device's configuration as it was.
pub fn recorded_topology(rec: &Recording) -> Option<crate::topology::HostTopology> {
    rec.topology()
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// The frame [`frames`] (from 0) yields at sample `k`, for random access;
/// an error says why there is none. `topo` is [`recorded_topology`],
/// parsed once by the caller rather than once a frame.
pub fn frame_ending_at(
    rec: &Recording,
    k: usize,
    topo: Option<&crate::topology::HostTopology>,
) -> anyhow::Result<Frame> {
    let cur = rec.get(k)?;
    let first = k.saturating_sub(MAX_BRIDGE + 1);
    let mut unreadable = 0;
    let mut base = None;
    for j in (first..k).rev() {
        match rec.get(j) {
            Ok(s) => {
                base = Some(s);
                break;
            }
            Err(_) => unreadable += 1,
        }
    }
    let Some(prev) = base else {
        if unreadable > MAX_BRIDGE {
            anyhow::bail!(
                "{}",
                Skip::LongGap {
                    index: k,
                    unreadable
                }
            );
        }
        anyhow::bail!("sample {k}: no readable sample before it to compute a frame from");
    };
    if cur.mono_ns <= prev.mono_ns {
        anyhow::bail!(
            "{}",
            Skip::ClockStep {
                index: k,
                prev_ns: prev.mono_ns,
                cur_ns: cur.mono_ns
            }
        );
    }
    Ok(frame_of(rec.host(), &prev, &cur, topo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Meta, Writer, synth};

    /// Writes samples with the given monotonic clocks (seconds), then
    /// damages the payload of the samples in `bad`.
    fn recording(dir: &std::path::Path, clocks: &[u64], bad: &[usize]) -> Recording {
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
        for (i, c) in clocks.iter().enumerate() {
            let mut s = synth::sample(i as u64 + 1, 3, 2);
            s.mono_ns = c * 1_000_000_000;
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
        // An equal clock (a duplicated record) is a step too.
        let rec = recording(d.path(), &[1, 2, 2, 3], &[]);
        let (got, _, w) = walk(&rec);
        assert_eq!(got[2], (2, None));
        assert_eq!(w.rebased, 1);
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
            unreadable: MAX_BRIDGE + 1
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
}
