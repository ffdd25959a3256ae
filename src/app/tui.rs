//! `nettop` and `nettop --replay FILE`: the TUI ([`crate::ui`]) fed by data
//! threads. Everything that does I/O for the TUI (collector samples,
//! model arithmetic, recordings, user names, topology) runs here and sends
//! finished values to the UI thread.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::cli::Cli;
use crate::app::live::LiveFrames;
use crate::app::options;
use crate::model::frame::Frame;
use crate::sys::ticker::Ticker;
use crate::ui::app::{App, Extras, Options, Theme};
use crate::ui::rows::{LineKind, devices, pinning, topology};
use crate::ui::{Cmd, Msg};

/// How often the topology (threads' pinning, IRQ affinity) is re-read, at
/// the most.
const TOPOLOGY_REFRESH: Duration = Duration::from_secs(15);
/// The topology thread's share of one CPU, at the most. A scan reads every
/// thread's stat and affinity: most of a second of CPU at 30,000 threads,
/// which every 15 s would cost more than the collector itself. There it is
/// re-read less often instead, and the Pinning view says so.
const TOPOLOGY_CPU_SHARE: f64 = 0.01;

/// The wait before the next scan, given what the last one cost.
fn topology_refresh(scan_cpu: Duration) -> Duration {
    TOPOLOGY_REFRESH.max(scan_cpu.div_f64(TOPOLOGY_CPU_SHARE))
}

use crate::sys::users::UserNames;

/// Every UID a frame's rows show.
fn task_uids(f: &Frame) -> impl Iterator<Item = u32> + '_ {
    f.processes.iter().chain(&f.threads).map(|t| t.uid)
}

/// Names for the UIDs of `f` that `names` has not met before, sent ahead
/// of the frame so it is drawn with them. `false` when the UI has gone.
fn send_new_users(names: Option<&mut UserNames>, f: &Frame, tx: &Sender<Msg>) -> bool {
    let Some(names) = names else {
        return true;
    };
    let new = names.resolve_new(task_uids(f));
    new.is_empty() || tx.send(Msg::Users(new)).is_ok()
}

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

/// What the collector thread shares with the topology thread: the latest
/// per-thread stolen time, so the live pinning lint judges with
/// measurements, and on request the task sampler's thread list, so a
/// re-check does not walk /proc for every thread's affinity.
#[derive(Default)]
struct Shared {
    evidence: crate::pinning::Evidence,
    /// Set by the topology thread; the collector thread answers on its
    /// next frame by filling `threads`.
    want_threads: bool,
    threads: Option<Vec<crate::sample::RawTask>>,
}

type SharedState = Arc<Mutex<Shared>>;

/// How long a re-check waits for the collector thread's thread list
/// before it walks /proc itself.
const THREADS_WAIT: Duration = Duration::from_millis(2500);

/// The sampler's thread list from the collector thread, or `None` (no
/// sampler, or it did not answer within [`THREADS_WAIT`]).
fn threads_from(shared: &SharedState) -> Option<Vec<crate::sample::RawTask>> {
    if let Ok(mut g) = shared.lock() {
        g.want_threads = true;
        g.threads = None;
    }
    let until = Instant::now() + THREADS_WAIT;
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        let Ok(mut g) = shared.lock() else {
            return None;
        };
        if !g.want_threads {
            return g.threads.take();
        }
    }
    if let Ok(mut g) = shared.lock() {
        g.want_threads = false;
    }
    None
}

/// The Devices, Topology and Pinning views' data from one topology, linted
/// with `evidence` (live or recorded stolen time).
fn topology_extras(
    t: &crate::topology::HostTopology,
    evidence: &crate::pinning::Evidence,
) -> Extras {
    Extras {
        devices: Some(devices::device_info(t)),
        topology: Some(topology::lines(t)),
        pinning: Some(pinning::lines(&crate::pinning::check(t, evidence))),
    }
}

/// Why the Topology and Pinning views have nothing to show.
fn note_extras(kind: LineKind, text: String) -> Extras {
    let l = vec![(kind, text)];
    Extras {
        topology: Some(l.clone()),
        pinning: Some(l),
        devices: None,
    }
}

/// Loads the topology now and every [`TOPOLOGY_REFRESH`], sending the
/// Topology and Pinning views' lines. Failures become a note in the views.
fn topology_thread(cli: &Cli, shared: Option<SharedState>, tx: Sender<Msg>) {
    let mut opts = options::topology(cli);
    std::thread::spawn(move || {
        let mut ticker = Ticker::new(TOPOLOGY_REFRESH);
        loop {
            opts.known_threads = shared.as_ref().and_then(threads_from);
            let cpu0 = crate::sys::clock::thread_cputime_ns();
            let mut extras = match crate::topology::load(&opts) {
                Ok(t) => {
                    let ev = shared
                        .as_ref()
                        .and_then(|e| e.lock().ok().map(|g| g.evidence.clone()))
                        .unwrap_or_default();
                    topology_extras(&t, &ev)
                }
                Err(e) => note_extras(LineKind::Warn, format!("topology unavailable: {e:#}")),
            };
            let cpu =
                Duration::from_nanos(crate::sys::clock::thread_cputime_ns().saturating_sub(cpu0));
            let every = topology_refresh(cpu);
            if every > TOPOLOGY_REFRESH
                && let Some(p) = extras.pinning.as_mut()
            {
                p.insert(
                    0,
                    (
                        LineKind::Note,
                        format!(
                            "re-checked every {} s: one check of this host costs {:.2} s of CPU",
                            every.as_secs(),
                            cpu.as_secs_f64()
                        ),
                    ),
                );
            }
            ticker.set_period(every, Instant::now());
            if tx.send(Msg::Extras(extras)).is_err() {
                return;
            }
            // Never stopped by a flag: the thread ends when the UI is gone.
            ticker.sleep(&AtomicBool::new(false), None);
        }
    });
}

/// What the data thread was woken for.
enum Due {
    /// The ticker's deadline: take a sample.
    Tick,
    /// A new delay (`d` key): take a sample now, then one every new delay.
    Delay(f64),
    /// Thread rows on or off: a new baseline is needed.
    ThreadRows(bool),
    /// The UI has gone.
    Quit,
}

/// Waits for the ticker's deadline or a command.
fn wait(rx: &Receiver<Cmd>, ticker: &mut Ticker) -> Due {
    loop {
        let now = Instant::now();
        if now >= ticker.deadline() {
            ticker.advance(now);
            return Due::Tick;
        }
        match rx.recv_timeout(ticker.deadline() - now) {
            Ok(Cmd::SetDelay(v)) => return Due::Delay(v),
            Ok(Cmd::ThreadRows(on)) => return Due::ThreadRows(on),
            Ok(Cmd::Quit) | Err(RecvTimeoutError::Disconnected) => return Due::Quit,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// The UI's end of the data thread's channel, its command channel, and a
/// sender for log records (shown in the status line).
type Channels = (Receiver<Msg>, Sender<Cmd>, Sender<Msg>);

/// First interval is short so the screen fills quickly; later ones use `-d`.
const FIRST_INTERVAL: f64 = 0.5;

/// Starts live collection. Returns only once the collector is up, so its
/// errors are printed before the terminal is touched.
fn start_live(cli: &Cli) -> anyhow::Result<Channels> {
    let sysroot = options::sysroot(cli);
    let cli_owned = cli.clone();
    let mut delay = cli.delay;
    let (tx, rx) = mpsc::channel::<Msg>();
    let (ctx, crx) = mpsc::channel::<Cmd>();
    let (ready_tx, ready_rx) = mpsc::channel::<anyhow::Result<()>>();
    let shared: SharedState = Arc::default();
    let ev = Arc::clone(&shared);
    let data_tx = tx.clone();
    std::thread::spawn(move || {
        // The collector is created on this thread (BPF objects need not be Send).
        let mut live = match LiveFrames::open(&cli_owned) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        let _ = ready_tx.send(Ok(()));
        let mut names = UserNames::new(&sysroot);
        // The same skipping ticker as batch and record mode: after a stall
        // (SIGSTOP, a suspended VM) one long frame, not a burst. The first
        // interval (and the first after a new baseline) is short so the
        // screen fills quickly.
        let short = |d: f64| Duration::from_secs_f64(d.min(FIRST_INTERVAL));
        let mut ticker = Ticker::new(short(delay));
        let mut first = true;
        loop {
            match wait(&crx, &mut ticker) {
                Due::Quit => return,
                Due::Delay(d) => {
                    // A new delay takes effect now rather than after the old one.
                    delay = d;
                    ticker.set_period(Duration::from_secs_f64(d), Instant::now());
                    first = false;
                }
                Due::ThreadRows(on) => {
                    // Thread rows need a baseline: start a new interval
                    // with them.
                    if let Err(e) = live.set_threads(on) {
                        let _ = data_tx.send(Msg::Fatal(format!("sampling failed: {e:#}")));
                        return;
                    }
                    ticker.set_period(short(delay), Instant::now());
                    first = true;
                    continue;
                }
                Due::Tick if first => {
                    ticker.set_period(Duration::from_secs_f64(delay), Instant::now());
                    first = false;
                }
                Due::Tick => {}
            }
            let frame = match live.next_frame() {
                Ok(f) => f,
                Err(e) => {
                    let _ = data_tx.send(Msg::Fatal(format!("sampling failed: {e:#}")));
                    return;
                }
            };
            if let Ok(mut g) = ev.lock() {
                g.evidence.stolen_pct = frame
                    .finest_rows()
                    .iter()
                    .map(|t| (t.tid, t.stolen_pct))
                    .collect();
                if g.want_threads {
                    g.threads = live.threads_now();
                    g.want_threads = false;
                }
            }
            if !send_new_users(Some(&mut names), &frame, &data_tx)
                || data_tx.send(Msg::Frame(Box::new(frame))).is_err()
            {
                return;
            }
        }
    });
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => anyhow::bail!("the collector thread died while starting"),
    }
    let warn = tx.clone();
    topology_thread(cli, Some(shared), tx);
    Ok((rx, ctx, warn))
}

/// Frames of a recording: frame `i` ends at sample `i + 1`, computed by
/// [`crate::record::walk`]'s policy (so `-b` and `--export` show the same).
/// Only the samples of `span` (`--begin`/`--end`): frame `i` ends at
/// sample `span.start + i + 1`.
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
fn open_replay(
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
fn start_replay(
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
    let delay = cli.delay;
    let warn = tx.clone();
    std::thread::spawn(move || replay_loop(RecordingFrames { rec, span }, delay, names, crx, tx));
    Ok((rx, ctx, warn))
}

fn check_tty() -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the interactive view needs a terminal on stdin and stdout; use -b for batch text or --json"
        );
    }
    Ok(())
}

fn ui_options(cli: &Cli) -> Options {
    let (width, height) = crossterm::terminal::size().unwrap_or((80, 24));
    Options {
        delay: cli.delay,
        threads: cli.threads,
        cmdline: cli.command_line,
        theme: Theme::from_env(),
        width,
        height,
    }
}

/// Runs the TUI over `rx`; log records go to its status line meanwhile.
fn run_ui(cli: &Cli, rx: Receiver<Msg>, tx: Sender<Cmd>, warn: Sender<Msg>) -> anyhow::Result<u8> {
    let warn = Mutex::new(warn);
    crate::app::logger::redirect(Box::new(move |m: &str| {
        if let Ok(w) = warn.lock() {
            let _ = w.send(Msg::Warn(m.to_string()));
        }
    }));
    let res = crate::ui::run(App::new(ui_options(cli)), rx, tx);
    crate::app::logger::redirect_end();
    res
}

/// `nettop`: the live TUI.
pub fn run_live(cli: &Cli) -> anyhow::Result<u8> {
    check_tty()?;
    // Collector errors (no permission, bad --sysroot, BPF refused) surface
    // here, before raw mode, as plain text.
    let (rx, tx, warn) = start_live(cli)?;
    run_ui(cli, rx, tx, warn)
}

/// `nettop --replay FILE`: a recording in the TUI.
pub fn run_replay(cli: &Cli, file: &Path) -> anyhow::Result<u8> {
    let (rec, span) = open_replay(cli, file)?;
    check_tty()?;
    let (rx, tx, warn) = start_replay(cli, file, rec, span)?;
    run_ui(cli, rx, tx, warn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_costly_topology_scan_is_repeated_less_often() {
        assert_eq!(
            topology_refresh(Duration::from_millis(20)),
            TOPOLOGY_REFRESH
        );
        assert_eq!(
            topology_refresh(Duration::from_millis(150)),
            TOPOLOGY_REFRESH
        );
        assert_eq!(
            topology_refresh(Duration::from_millis(900)),
            Duration::from_secs(90)
        );
    }
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
