//! `nettop --replay FILE` in the TUI: the replay cursor (seek, step, play)
//! on its own thread over the recording's frames, so decoding a sample
//! never blocks a key.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::topology::{note_extras, topology_extras};
use super::{Channels, send_new_users};
use crate::app::cli::Cli;
use crate::app::options;
use crate::model::frame::Frame;
use crate::sys::ticker::Ticker;
use crate::sys::users::UserNames;
use crate::ui::app::Extras;
use crate::ui::rows::LineKind;
use crate::ui::{Cmd, Msg};

/// Random access to a sequence of Frames (a recording).
pub(crate) trait FrameSource {
    fn len(&self) -> usize;
    fn frame(&mut self, i: usize) -> anyhow::Result<Frame>;
    /// Index of the frame ending at or before `unix_ms` (the first frame
    /// when the time is earlier); `None` when frames carry no times.
    fn index_at(&self, unix_ms: u64) -> Option<usize>;
}

/// The replay cursor: seek, step and play at `delay`, on its own thread so
/// decoding a sample never blocks a key. `names` (on the recording's own
/// host only) names the UIDs of each frame shown.
pub(crate) fn replay_loop<S: FrameSource>(
    mut src: S,
    mut delay: f64,
    mut names: Option<UserNames>,
    rx: Receiver<Cmd>,
    tx: Sender<Msg>,
) {
    let len = src.len();
    let mut index = 0usize;
    let mut playing = false;
    let mut send = |src: &mut S, index: usize, playing: bool| -> bool {
        let msg = match src.frame(index) {
            Ok(f) => {
                if !send_new_users(names.as_mut(), &f, &tx) {
                    return false;
                }
                Msg::Replay {
                    index,
                    len,
                    playing,
                    frame: Box::new(f),
                }
            }
            Err(e) => Msg::Warn(format!("sample {index}: {e:#}")),
        };
        tx.send(msg).is_ok()
    };
    if !send(&mut src, index, playing) {
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
        match rx.recv_timeout(wait) {
            Ok(Cmd::Seek(i)) => {
                index = i.min(len.saturating_sub(1));
                if !send(&mut src, index, playing) {
                    return;
                }
            }
            Ok(Cmd::SeekTime(t)) => {
                let Some(i) = src.index_at(t) else {
                    if tx
                        .send(Msg::Warn("this recording has no sample times".into()))
                        .is_err()
                    {
                        return;
                    }
                    continue;
                };
                index = i.min(len.saturating_sub(1));
                if !send(&mut src, index, playing) {
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
            // A recording has the rows it has.
            Ok(Cmd::ThreadRows(_)) => {}
            Ok(Cmd::Quit) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) if !playing => {}
            Err(RecvTimeoutError::Timeout) => {
                ticker.advance(Instant::now());
                if index + 1 < len {
                    index += 1;
                } else {
                    playing = false;
                }
                if !send(&mut src, index, playing) {
                    return;
                }
            }
        }
    }
}

/// Frames of a recording, computed by [`crate::record::walk`]'s policy (so
/// `-b` and `--export` show the same), over the samples of `span`
/// (`--begin`/`--end`): frame `i` ends at sample `span.start + i + 1`.
struct RecordingFrames {
    rec: crate::record::Recording,
    span: std::ops::Range<usize>,
}

impl FrameSource for RecordingFrames {
    fn len(&self) -> usize {
        self.span.len().saturating_sub(1)
    }
    fn frame(&mut self, i: usize) -> anyhow::Result<Frame> {
        crate::record::walk::frame_ending_at(&self.rec, self.span.start + i + 1)
    }
    fn index_at(&self, unix_ms: u64) -> Option<usize> {
        let last = self.span.end.saturating_sub(1).max(self.span.start);
        let k = self
            .rec
            .index_at(unix_ms)
            .unwrap_or(0)
            .clamp(self.span.start, last);
        Some((k - self.span.start).saturating_sub(1))
    }
}

/// Opens a recording and its `--begin`/`--end` window: every problem with
/// the file is said before anything about the terminal.
pub(super) fn open_replay(
    cli: &Cli,
    file: &Path,
) -> anyhow::Result<(crate::record::Recording, std::ops::Range<usize>)> {
    let rec = crate::record::Recording::open(file)?;
    if rec.len() < 2 {
        anyhow::bail!(
            "{}: {} sample(s); replay needs at least 2 (one interval)",
            file.display(),
            rec.len()
        );
    }
    let span = options::replay_window(cli, &rec)?;
    Ok((rec, span))
}

/// Starts the replay cursor over an opened recording.
pub(super) fn start_replay(
    cli: &Cli,
    file: &Path,
    rec: crate::record::Recording,
    span: std::ops::Range<usize>,
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
    }));
    // The recorded configuration, linted with the recorded stolen time, off
    // the UI thread (it decodes up to RECORDED_EVIDENCE_FRAMES samples).
    let path = file.to_path_buf();
    let extras_tx = tx.clone();
    std::thread::spawn(move || {
        let extras = match crate::app::pinning_check::load_recorded(&path) {
            Ok((topo, ev)) => topology_extras(&topo, &ev),
            Err(e) => note_extras(LineKind::Note, format!("Replay: {e:#}")),
        };
        let _ = extras_tx.send(Msg::Extras(extras));
    });
    let delay = cli.delay();
    let warn = tx.clone();
    std::thread::spawn(move || replay_loop(RecordingFrames { rec, span }, delay, names, crx, tx));
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
    }

    fn index_of(m: Msg) -> (usize, bool) {
        match m {
            Msg::Replay { index, playing, .. } => (index, playing),
            _ => panic!("expected a replay frame"),
        }
    }

    #[test]
    fn replay_cursor_seeks_plays_and_stops_at_the_end() {
        let frames: Vec<Frame> = (0..4).map(fixtures::busy_host_at).collect();
        let (ctx, crx) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || replay_loop(Fixed(frames), 0.05, None, crx, tx));
        let t = Duration::from_secs(5);
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (0, false));
        ctx.send(Cmd::Seek(2)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (2, false));
        ctx.send(Cmd::Seek(99)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (3, false));
        ctx.send(Cmd::Seek(1)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (1, false));
        ctx.send(Cmd::Play(true)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (2, true));
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (3, true));
        // At the end playback stops by itself.
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (3, false));
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
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (0, false));
        ctx.send(Cmd::Seek(2)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (2, false));
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
        let t = Duration::from_secs(5);
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (0, false));
        // Between two frames: the one ending before.
        ctx.send(Cmd::SeekTime(1_002_500)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (2, false));
        // Before the start and after the end: clamp.
        ctx.send(Cmd::SeekTime(5)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (0, false));
        ctx.send(Cmd::SeekTime(9_999_999)).unwrap();
        assert_eq!(index_of(rx.recv_timeout(t).unwrap()), (3, false));
        ctx.send(Cmd::Quit).unwrap();
        h.join().unwrap();
    }
}
