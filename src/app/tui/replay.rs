//! `nettop --replay FILE` in the TUI: the replay cursor (seek, step, play)
//! on its own thread over the recording's frames, so decoding a sample
//! never blocks a key.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

use super::topology::{note_extras, send_extras, topology_extras};
use super::{Channels, send_new_users};
use crate::app::cli::Cli;
use crate::app::options;
use crate::model::frame::Frame;
use crate::sys::ticker::Ticker;
use crate::sys::users::UserNames;
use crate::ui::history::{HISTORY_LEN, History};
use crate::ui::rows::LineKind;
use crate::ui::state::Extras;
use crate::ui::{Cmd, Msg};

/// Random access to a sequence of Frames (a recording).
pub(crate) trait FrameSource {
    fn len(&self) -> usize;
    fn frame(&mut self, i: usize) -> anyhow::Result<Frame>;
    /// Index of the frame ending at or before `unix_ms` (the first frame
    /// when the time is earlier); `None` when frames carry no times.
    fn index_at(&self, unix_ms: u64) -> Option<usize>;
    /// The frames that end before frame `i`, oldest first, at most `n`:
    /// what the history would hold had playback reached `i`. `f` may stop
    /// the walk.
    fn frames_before(
        &mut self,
        i: usize,
        n: usize,
        f: &mut dyn FnMut(Frame) -> ControlFlow<()>,
    ) -> anyhow::Result<()>;
}

/// What a jump may spend reading the history before its frame. The frame
/// is shown first; the history follows, as many frames as fit by what a
/// frame of the last walk cost (the first walk: what the jump's own frame
/// cost), so at 100 tasks all [`HISTORY_LEN`] frames come, at 30,000
/// threads a few. A walk past twice the budget is dropped, and any
/// command cuts it short (held `{` or `}` never queue walks).
const HISTORY_BUDGET: Duration = Duration::from_millis(400);

/// Frames of history a jump reads, given what computing one frame cost.
fn history_frames(cost: Duration) -> usize {
    let fit = HISTORY_BUDGET.as_secs_f64() / cost.as_secs_f64().max(1e-6);
    // The app pushes the jump's own frame onto it.
    (fit as usize).min(HISTORY_LEN - 1)
}

/// The replay cursor's side of the channel: what was sent last, so that a
/// jump (anything but the next frame) gets its history.
struct Out {
    tx: Sender<Msg>,
    names: Option<UserNames>,
    len: usize,
    shown: Option<usize>,
    /// A command that arrived while a history was read: handled next.
    pending: Option<Cmd>,
    /// What one frame of the last history walk cost: the next walk's
    /// estimate (a first walk goes by what its jump's frame cost).
    walk_cost: Option<Duration>,
}

impl Out {
    /// Shows frame `index`, then after a jump the history before it.
    /// `false` once the UI is gone.
    fn show<S: FrameSource>(
        &mut self,
        src: &mut S,
        rx: &Receiver<Cmd>,
        index: usize,
        playing: bool,
    ) -> bool {
        let t0 = Instant::now();
        let f = match src.frame(index) {
            Ok(f) => f,
            Err(e) => {
                self.shown = None;
                return self
                    .tx
                    .send(Msg::Warn(format!("sample {index}: {e:#}")))
                    .is_ok();
            }
        };
        let cost = t0.elapsed();
        if !send_new_users(self.names.as_mut(), &f, &self.tx) {
            return false;
        }
        let msg = Msg::Replay {
            index,
            len: self.len,
            playing,
            frame: Box::new(f),
        };
        if self.tx.send(msg).is_err() {
            return false;
        }
        let jump = index == 0 || self.shown != Some(index - 1);
        self.shown = Some(index);
        if !jump {
            return true;
        }
        match self.history(src, rx, index, cost) {
            Some(h) => self
                .tx
                .send(Msg::History {
                    index,
                    history: Box::new(h),
                })
                .is_ok(),
            None => true,
        }
    }

    /// The history before frame `index`, read within [`HISTORY_BUDGET`]
    /// (twice it at the most, however wrong the estimate); `None` when
    /// there is none or a command came first.
    fn history<S: FrameSource>(
        &mut self,
        src: &mut S,
        rx: &Receiver<Cmd>,
        index: usize,
        cost: Duration,
    ) -> Option<History> {
        let n = history_frames(self.walk_cost.unwrap_or(cost));
        if n == 0 {
            return None;
        }
        let t0 = Instant::now();
        let deadline = t0 + HISTORY_BUDGET * 2;
        let mut h = History::default();
        let mut cut = false;
        let pending = &mut self.pending;
        let walked = src.frames_before(index, n, &mut |f| {
            if pending.is_none() {
                *pending = match rx.try_recv() {
                    Ok(c) => Some(c),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => Some(Cmd::Quit),
                };
            }
            if pending.is_some() || Instant::now() > deadline {
                cut = true;
                return ControlFlow::Break(());
            }
            h.push(&f);
            ControlFlow::Continue(())
        });
        if pending.is_none() && h.frames() > 0 {
            self.walk_cost = Some(t0.elapsed() / h.frames() as u32);
        }
        // A cut history would end short of the frame: none is better.
        (walked.is_ok() && !cut && h.frames() > 0).then_some(h)
    }
}

/// The replay cursor: seek, step and play at `delay`, on its own thread so
/// decoding a sample never blocks a key. `names` (on the recording's own
/// host only) names the UIDs of each frame shown.
pub(crate) fn replay_loop<S: FrameSource>(
    mut src: S,
    mut delay: f64,
    names: Option<UserNames>,
    rx: Receiver<Cmd>,
    tx: Sender<Msg>,
) {
    let len = src.len();
    let mut index = 0usize;
    let mut playing = false;
    let mut out = Out {
        tx,
        names,
        len,
        shown: None,
        pending: None,
        walk_cost: None,
    };
    if !out.show(&mut src, &rx, index, playing) {
        return;
    }
    // Playback steps on the ticker's grid: decoding a frame does not
    // stretch the delay, and a key (seek, help) does not restart it.
    let mut ticker = Ticker::new(Duration::from_secs_f64(delay));
    loop {
        let wait = if playing {
            ticker.deadline().saturating_duration_since(Instant::now())
        } else {
            Duration::from_secs(3600)
        };
        let cmd = match out.pending.take() {
            Some(c) => Ok(c),
            None => rx.recv_timeout(wait),
        };
        match cmd {
            Ok(Cmd::Seek(i)) => {
                index = i.min(len.saturating_sub(1));
                if !out.show(&mut src, &rx, index, playing) {
                    return;
                }
            }
            Ok(Cmd::SeekTime(t)) => {
                let Some(i) = src.index_at(t) else {
                    if out
                        .tx
                        .send(Msg::Warn("this recording has no sample times".into()))
                        .is_err()
                    {
                        return;
                    }
                    continue;
                };
                index = i.min(len.saturating_sub(1));
                if !out.show(&mut src, &rx, index, playing) {
                    return;
                }
            }
            Ok(Cmd::Play(p)) => {
                if p && !playing {
                    ticker.set_period(Duration::from_secs_f64(delay), Instant::now());
                }
                playing = p;
            }
            Ok(Cmd::SetDelay(d)) => {
                delay = d;
                ticker.set_period(Duration::from_secs_f64(d), Instant::now());
            }
            // A recording has the rows it has, and no host to change.
            Ok(Cmd::ThreadRows(_) | Cmd::ApplyPlan(_) | Cmd::Recheck) => {}
            Ok(Cmd::Quit) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) if !playing => {}
            Err(RecvTimeoutError::Timeout) => {
                ticker.advance(Instant::now());
                if index + 1 < len {
                    index += 1;
                } else {
                    playing = false;
                }
                if !out.show(&mut src, &rx, index, playing) {
                    return;
                }
            }
        }
    }
}

/// Frames of a recording, computed by [`crate::record::walk`]'s policy (so
/// `-b` and `--export` show the same), over the samples of `window`
/// (`--begin`/`--end`): frame `i` ends at sample `window.span.start + i + 1`.
struct RecordingFrames {
    rec: crate::record::Recording,
    window: crate::record::Window,
    /// The recorded device configuration, parsed once for every jump.
    topo: Option<crate::topology::HostTopology>,
}

impl RecordingFrames {
    fn new(rec: crate::record::Recording, window: crate::record::Window) -> RecordingFrames {
        let topo = crate::record::walk::recorded_topology(&rec);
        RecordingFrames { rec, window, topo }
    }
}

impl FrameSource for RecordingFrames {
    fn len(&self) -> usize {
        self.window.span.len().saturating_sub(1)
    }
    fn frame(&mut self, i: usize) -> anyhow::Result<Frame> {
        crate::record::walk::frame_ending_at_in(
            &self.rec,
            &self.window,
            self.window.span.start + i + 1,
            self.topo.as_ref(),
        )
    }
    /// By the samples' times, not their order in the file.
    fn index_at(&self, unix_ms: u64) -> Option<usize> {
        let k = self
            .rec
            .index_at_in(&self.window, unix_ms)
            .unwrap_or(self.window.span.start);
        Some((k - self.window.span.start).saturating_sub(1))
    }
    /// Through [`crate::record::walk::frames_in`], from before the
    /// `--begin` window too: history is what came before, window or not.
    fn frames_before(
        &mut self,
        i: usize,
        n: usize,
        f: &mut dyn FnMut(Frame) -> ControlFlow<()>,
    ) -> anyhow::Result<()> {
        // Frame `i` ends at sample `end`; the n before it end at the n
        // samples before, and the first of them needs a baseline before it.
        let end = self.window.span.start + i + 1;
        let from = end.saturating_sub(n + 1);
        crate::record::walk::frames_in(&self.rec, from..end, |_, frame| Ok(f(frame)), &mut |_| {})?;
        Ok(())
    }
}

/// Opens a recording and its `--begin`/`--end` window: every problem with
/// the file is said before anything about the terminal.
pub(super) fn open_replay(
    cli: &Cli,
    file: &Path,
) -> anyhow::Result<(crate::record::Recording, crate::record::Window)> {
    let rec = crate::record::Recording::open(file)?;
    if rec.len() < 2 {
        anyhow::bail!(
            "{}: {} sample(s); replay needs at least 2 (one interval)",
            file.display(),
            rec.len()
        );
    }
    let window = options::replay_window(cli, &rec)?;
    Ok((rec, window))
}

/// Starts the replay cursor over an opened recording.
pub(super) fn start_replay(
    cli: &Cli,
    file: &Path,
    rec: crate::record::Recording,
    window: crate::record::Window,
) -> anyhow::Result<Channels> {
    let names = crate::sys::users::for_recording(&rec.host().hostname);
    let warnings: Vec<String> = rec.warnings().iter().map(|w| w.message.clone()).collect();
    let (tx, rx) = mpsc::channel::<Msg>();
    let (ctx, crx) = mpsc::channel::<Cmd>();
    if let Some(w) = warnings.first() {
        let _ = tx.send(Msg::Warn(format!("{}: {w}", file.display())));
    }
    let _ = tx.send(Msg::Extras(Extras {
        topology: Some(vec![(
            LineKind::Note,
            "Replay: reading the recorded topology…".into(),
        )]),
        pinning: None,
        devices: None,
        plan: None,
        cpu_interrupts: None,
    }));
    // The recorded configuration, linted with the recorded stolen time, off
    // the UI thread (it decodes up to RECORDED_EVIDENCE_FRAMES samples).
    let path = file.to_path_buf();
    let extras_tx = tx.clone();
    std::thread::spawn(move || {
        let (extras, facts) = match crate::app::pinning_check::load_recorded(&path) {
            Ok((topo, ev)) => {
                let load = crate::plan::Load {
                    measured: (!ev.stolen_pct.is_empty())
                        .then(|| "the stolen time this recording measured".to_string()),
                    ..Default::default()
                };
                let (extras, facts) = topology_extras(&topo, &ev, &load, &[]);
                (extras, Some(facts))
            }
            Err(e) => (note_extras(LineKind::Note, format!("Replay: {e:#}")), None),
        };
        send_extras(&extras_tx, extras, facts);
    });
    let delay = cli.delay();
    let warn = tx.clone();
    std::thread::spawn(move || {
        replay_loop(RecordingFrames::new(rec, window), delay, names, crx, tx)
    });
    Ok((rx, ctx, warn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::fixtures;
    use crate::ui::{Cmd, Msg};

    struct Fixed(Vec<Frame>);
    impl FrameSource for Fixed {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn frame(&mut self, i: usize) -> anyhow::Result<Frame> {
            self.0
                .get(i)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no sample {i}"))
        }
        fn index_at(&self, unix_ms: u64) -> Option<usize> {
            let n = self.0.partition_point(|f| f.unix_ms <= unix_ms);
            Some(n.saturating_sub(1))
        }
        fn frames_before(
            &mut self,
            i: usize,
            n: usize,
            f: &mut dyn FnMut(Frame) -> ControlFlow<()>,
        ) -> anyhow::Result<()> {
            for fr in &self.0[i.saturating_sub(n)..i.min(self.0.len())] {
                if f(fr.clone()).is_break() {
                    break;
                }
            }
            Ok(())
        }
    }

    fn index_of(m: Msg) -> (usize, bool) {
        match m {
            Msg::Replay { index, playing, .. } => (index, playing),
            _ => panic!("expected a replay frame"),
        }
    }

    /// The next frame's (index, playing), past the histories jumps send.
    fn next(rx: &Receiver<Msg>) -> (usize, bool) {
        loop {
            match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
                Msg::History { .. } => {}
                m => return index_of(m),
            }
        }
    }

    #[test]
    fn replay_cursor_seeks_plays_and_stops_at_the_end() {
        let frames: Vec<Frame> = (0..4).map(fixtures::busy_host_at).collect();
        let (ctx, crx) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || replay_loop(Fixed(frames), 0.05, None, crx, tx));
        assert_eq!(next(&rx), (0, false));
        ctx.send(Cmd::Seek(2)).unwrap();
        assert_eq!(next(&rx), (2, false));
        ctx.send(Cmd::Seek(99)).unwrap();
        assert_eq!(next(&rx), (3, false));
        ctx.send(Cmd::Seek(1)).unwrap();
        assert_eq!(next(&rx), (1, false));
        ctx.send(Cmd::Play(true)).unwrap();
        assert_eq!(next(&rx), (2, true));
        assert_eq!(next(&rx), (3, true));
        // At the end playback stops by itself.
        assert_eq!(next(&rx), (3, false));
        ctx.send(Cmd::Quit).unwrap();
        h.join().unwrap();
    }

    /// Names go out ahead of the first frame that shows their UIDs, and
    /// only once.
    #[test]
    fn replay_sends_each_name_once_before_its_frame() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("etc")).unwrap();
        std::fs::write(
            d.path().join("etc/passwd"),
            "root:x:0:0::/:/\nalice:x:1000:1000::/:/\n",
        )
        .unwrap();
        let names = UserNames::new(&crate::sys::sysroot::Sysroot::new(d.path()));
        let frames: Vec<Frame> = (0..3).map(fixtures::busy_host_at).collect();
        let (ctx, crx) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || replay_loop(Fixed(frames), 0.05, Some(names), crx, tx));
        let t = Duration::from_secs(5);
        match rx.recv_timeout(t).unwrap() {
            Msg::Users(mut u) => {
                u.sort();
                assert_eq!(u, vec![(0, "root".into()), (1000, "alice".into())]);
            }
            _ => panic!("expected names before the first frame"),
        }
        assert_eq!(next(&rx), (0, false));
        ctx.send(Cmd::Seek(2)).unwrap();
        assert_eq!(next(&rx), (2, false));
        ctx.send(Cmd::Quit).unwrap();
        h.join().unwrap();
    }

    #[test]
    fn replay_cursor_jumps_to_a_time() {
        let frames: Vec<Frame> = (0..4u64)
            .map(|i| {
                let mut f = fixtures::busy_host();
                f.unix_ms = 1_000_000 + i * 1000;
                f
            })
            .collect();
        let (tx, rx) = mpsc::channel();
        let (ctx, crx) = mpsc::channel();
        let h = std::thread::spawn(move || replay_loop(Fixed(frames), 0.05, None, crx, tx));
        assert_eq!(next(&rx), (0, false));
        // Between two frames: the one ending before.
        ctx.send(Cmd::SeekTime(1_002_500)).unwrap();
        assert_eq!(next(&rx), (2, false));
        // Before the start and after the end: clamp.
        ctx.send(Cmd::SeekTime(5)).unwrap();
        assert_eq!(next(&rx), (0, false));
        ctx.send(Cmd::SeekTime(9_999_999)).unwrap();
        assert_eq!(next(&rx), (3, false));
        ctx.send(Cmd::Quit).unwrap();
        h.join().unwrap();
    }

    /// A jump shows its frame, then the history before it from the
    /// recording; the frames that follow in order come without one.
    #[test]
    fn a_jump_is_followed_by_the_history_before_it() {
        use crate::ui::history::{Key, Series};
        let frames: Vec<Frame> = (0..10).map(fixtures::busy_host_at).collect();
        let want: Vec<f64> = frames
            .iter()
            .map(|f| {
                f.processes
                    .iter()
                    .find(|p| p.pid == 5001)
                    .unwrap()
                    .stolen_pct
            })
            .collect();
        let (ctx, crx) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || replay_loop(Fixed(frames), 0.05, None, crx, tx));
        let t = Duration::from_secs(5);
        // Nothing comes before the first frame.
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (0, false));
        ctx.send(Cmd::Seek(6)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (6, false));
        let Msg::History { index, history } = rx.recv_timeout(t).unwrap() else {
            panic!("expected the history after a jump");
        };
        assert_eq!((index, history.frames()), (6, 6));
        let got: Vec<f64> = history
            .last_n(Key::Proc(5001), Series::Stolen, 6)
            .into_iter()
            .map(|v| f64::from(v.unwrap()))
            .collect();
        for (g, w) in got.iter().zip(&want[..6]) {
            assert!((g - w).abs() <= w * 0.004, "{got:?} vs {want:?}");
        }
        ctx.send(Cmd::Play(true)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (7, true));
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (8, true));
        ctx.send(Cmd::Quit).unwrap();
        h.join().unwrap();
    }

    #[test]
    fn history_budget_bounds_the_frames_read() {
        assert_eq!(history_frames(Duration::from_micros(300)), HISTORY_LEN - 1);
        assert_eq!(history_frames(Duration::from_millis(40)), 10);
        assert_eq!(history_frames(Duration::from_secs(2)), 0);
    }

    /// A jump to a time lands on the sample taken last at or before it,
    /// by time rather than by position: a binary search over a file with
    /// a record moved later landed elsewhere.
    #[test]
    fn recording_frames_seek_by_time_not_file_order() {
        use crate::record::synth;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.rec");
        let order = [1, 2, 4, 5, 3, 6, 7, 8u64];
        synth::write_recording(&p, false, 2, order.map(|k| synth::sample(k, 3, 2))).unwrap();
        let rec = crate::record::Recording::open(&p).unwrap();
        let time = |k: u64| synth::sample(k, 3, 2).unix_ms;
        let src = RecordingFrames::new(rec, (0..8).into());
        for (pos, &k) in order.iter().enumerate() {
            // Frame i ends at sample i + 1.
            let want = pos.saturating_sub(1);
            assert_eq!(src.index_at(time(k) + 500), Some(want), "sample {k}");
        }
        assert_eq!(src.index_at(0), Some(0));
        assert_eq!(src.index_at(u64::MAX), Some(6));
        // In a window of samples 2..=4 (positions 1, 2 and 4; 5 at 3 is
        // not in it), 5's time is past its end: its last sample, 4.
        let w = crate::record::Window {
            span: 1..5,
            ms: time(2)..=time(4),
        };
        let rec = crate::record::Recording::open(&p).unwrap();
        let src = RecordingFrames::new(rec, w);
        assert_eq!(src.index_at(time(5)), Some(0));
        assert_eq!(src.index_at(time(3)), Some(2));
    }

    /// A recording's frames before a replay frame are the walk's, from
    /// before the `--begin` window too.
    #[test]
    fn recording_frames_before_come_from_the_walk() {
        use crate::record::synth;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h.rec");
        synth::write_recording(&p, false, 2, (1..=12).map(|k| synth::sample(k, 3, 2))).unwrap();
        let rec = crate::record::Recording::open(&p).unwrap();
        let mut src = RecordingFrames::new(rec, (4..12).into());
        let mut got = Vec::new();
        src.frames_before(2, 5, &mut |f| {
            got.push(f);
            ControlFlow::Continue(())
        })
        .unwrap();
        // Frame 2 of the window ends at sample 7: the five before end at 2..=6.
        assert_eq!(got.len(), 5);
        for (k, f) in (2..=6).zip(&got) {
            let want =
                crate::record::walk::frame_ending_at(&src.rec, k, src.topo.as_ref()).unwrap();
            assert_eq!(f.seq, want.seq, "sample {k}");
            assert_eq!(f.processes, want.processes, "sample {k}");
        }
    }
}
