//! The one way to turn a recording into frames: batch replay (`-b`),
//! `--export`, the TUI's replay cursor and the pinning lint's recorded
//! evidence all walk samples through here, so they agree on what damage
//! means.
//!
//! # Policy
//!
//! A frame is the model over two samples: the *baseline* and the sample it
//! ends at. The baseline of sample `k` is the last sample before it that
//! was neither unreadable nor out of order, looking back at most [`LOOK`]
//! samples, and
//!
//! - **Bad samples** (checksum, decoding or schema errors) are reported and
//!   skipped. The frame ending at the next readable sample spans the gap:
//!   counters are cumulative and the model divides by the samples' real
//!   clock difference, so that frame is the exact average over the longer
//!   interval (its `interval_s` shows the length). Nothing else is lost.
//! - **Out of order**: a sample taken on the same boot no later than one of
//!   the [`LOOK`] samples before it (a record moved or duplicated in the
//!   file) is reported and skipped like a bad sample: it is neither the
//!   end of a frame nor a baseline, so no frame overlaps another
//!   ([`order`] tells a boot's samples apart).
//! - **Long gaps**: more than [`MAX_BRIDGE`] skipped samples in a row are
//!   not bridged. The next readable sample becomes a new baseline (no
//!   frame ends at it), so a random-access reader never searches further
//!   back than [`LOOK`] samples (and their own [`LOOK`]) for a baseline.
//! - **Clock steps**: when a sample's monotonic clock is not after its
//!   baseline's and it is from another boot, no interval can be computed.
//!   It is reported, no frame ends at that sample, and it becomes the new
//!   baseline.
//! - **Time gaps** (the recorder was stopped or its host suspended) are
//!   not damage: one long frame over the real interval, like live mode's
//!   ticker produces after a stall.
//!
//! A walk covers a [`Window`]: the samples of a span of positions whose
//! time lies in a range (`--begin`/`--end`), in file order; a sample of
//! the span from outside the time range is not part of it. [`pairs_in`]
//! walks in order (one decode per sample); [`frame_ending_at_in`] computes
//! the same frame for random access (the TUI's seek), and the tests check
//! that both agree.

use std::collections::VecDeque;
use std::ops::ControlFlow;

use super::{Recording, Window};
use crate::model::frame::Frame;
use crate::sample::RawSample;

mod order;

use order::{Lookback, Stamp};

/// Most consecutive skipped samples a frame may span.
pub const MAX_BRIDGE: usize = 16;

/// How many samples before a sample the walk looks at: for its baseline,
/// and for a sample that shows it out of order.
pub const LOOK: usize = MAX_BRIDGE + 1;

/// Something the walk skipped, reported as it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Sample `index` could not be read.
    BadSample { index: usize, error: String },
    /// Sample `index` was taken on the same boot as sample `earlier`, one of
    /// the [`LOOK`] before it, and not after it: out of order, skipped.
    OutOfOrder {
        index: usize,
        earlier: usize,
        earlier_ns: u64,
        cur_ns: u64,
    },
    /// Sample `index` follows more than [`MAX_BRIDGE`] skipped ones: it
    /// is a new baseline.
    LongGap { index: usize, skipped: usize },
    /// Sample `index`'s monotonic clock is not after its baseline's, on
    /// another boot: it is a new baseline.
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
            Skip::OutOfOrder {
                index,
                earlier,
                earlier_ns,
                cur_ns,
            } => write!(
                f,
                "sample {index}: monotonic clock {cur_ns} ns is not after sample {earlier}'s \
                 {earlier_ns} ns on the same boot (a record out of order in the file); sample \
                 skipped"
            ),
            Skip::LongGap { index, skipped } => write!(
                f,
                "sample {index} follows {skipped} skipped samples (more than {MAX_BRIDGE}); \
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
    /// Samples out of order (damage too: the recorder writes in order).
    pub out_of_order: u64,
    /// Clock steps and long gaps: new baselines without a frame.
    pub rebased: u64,
    /// The callback asked to stop before the end.
    pub stopped: bool,
}

/// What the front ends say last when a walk skipped samples: `corrupt`
/// corrupted records (the reader's and the walk's), `out_of_order`
/// samples out of order. `None` when there were none.
pub fn skipped_summary(corrupt: u64, out_of_order: u64) -> Option<String> {
    match (corrupt, out_of_order) {
        (0, 0) => None,
        (c, 0) => Some(format!("{c} corrupted record(s) skipped")),
        (0, o) => Some(format!("{o} sample(s) out of order skipped")),
        (c, o) => Some(format!(
            "{c} corrupted record(s) and {o} sample(s) out of order skipped"
        )),
    }
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

/// [`pairs`] over the samples of `window` only (a replay window, or a
/// range of positions).
pub fn pairs_in(
    rec: &Recording,
    window: impl Into<Window>,
    mut f: impl FnMut(usize, Option<&RawSample>, &RawSample) -> anyhow::Result<ControlFlow<()>>,
    note: &mut dyn FnMut(&Skip),
) -> anyhow::Result<Walked> {
    let window = window.into();
    let mut w = Walked::default();
    // The last LOOK samples of the window, oldest first.
    let mut look: VecDeque<(usize, Option<Stamp>)> = VecDeque::with_capacity(LOOK + 1);
    let seen = |look: &mut VecDeque<_>, e| {
        if look.len() == LOOK {
            look.pop_front();
        }
        look.push_back(e);
    };
    let mut prev: Option<RawSample> = None;
    // Samples skipped since `prev`.
    let mut skipped = 0usize;
    for index in window.positions(rec) {
        let cur = match rec.get(index) {
            Ok(s) => s,
            Err(e) => {
                w.bad += 1;
                skipped += 1;
                note(&Skip::BadSample {
                    index,
                    error: format!("{e:#}"),
                });
                seen(&mut look, (index, None));
                continue;
            }
        };
        let st = Stamp::new(&cur, rec.unix_ms(index).unwrap_or(cur.unix_ms));
        let outrun = order::outrun_in(look.iter(), st);
        seen(&mut look, (index, Some(st)));
        if let Some((earlier, e)) = outrun {
            w.out_of_order += 1;
            skipped += 1;
            note(&Skip::OutOfOrder {
                index,
                earlier,
                earlier_ns: e.mono_ns,
                cur_ns: st.mono_ns,
            });
            continue;
        }
        if skipped > MAX_BRIDGE && prev.is_some() {
            w.rebased += 1;
            note(&Skip::LongGap { index, skipped });
            prev = None;
        }
        skipped = 0;
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

/// [`frames`] over the samples of `window` only.
pub fn frames_in(
    rec: &Recording,
    window: impl Into<Window>,
    mut f: impl FnMut(usize, Frame) -> anyhow::Result<ControlFlow<()>>,
    note: &mut dyn FnMut(&Skip),
) -> anyhow::Result<Walked> {
    let host = rec.host().clone();
    let topo = recorded_topology(rec);
    pairs_in(
        rec,
        window,
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
    frame_ending_at_in(rec, &rec.all(), k, topo)
}

/// The frame [`frames_in`] over `window` yields at sample `k`. Decodes `k`,
/// its baseline and what the index cannot rule out of showing either out
/// of order: in an ordered recording sampled every 500 ms or more, only
/// the two it uses.
pub fn frame_ending_at_in(
    rec: &Recording,
    window: &Window,
    k: usize,
    topo: Option<&crate::topology::HostTopology>,
) -> anyhow::Result<Frame> {
    if k < rec.len() && !window.contains(rec, k) {
        anyhow::bail!("sample {k} lies outside the replay window");
    }
    let cur = rec.get(k)?;
    let mut lb = Lookback::new(rec, window);
    let st = Stamp::new(&cur, rec.unix_ms(k).unwrap_or(cur.unix_ms));
    if let Some(skip) = lb.out_of_order(k, st) {
        anyhow::bail!("{skip}");
    }
    let before = lb.before(k);
    let mut base = None;
    for &j in &before {
        let Ok((s, sj)) = lb.sample(j) else {
            continue;
        };
        if lb.out_of_order(j, sj).is_none() {
            base = Some(s);
            break;
        }
    }
    let Some(prev) = base else {
        if before.len() == LOOK {
            anyhow::bail!(
                "{}",
                Skip::LongGap {
                    index: k,
                    skipped: LOOK
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
mod tests;
