//! `nettop` and `nettop --replay FILE`: the TUI ([`crate::ui`]) fed by data
//! threads. Everything that does I/O for the TUI (collector samples,
//! model arithmetic, recordings, user names, topology) runs here and sends
//! finished values to the UI thread: the live collector's thread in this
//! file, the [`topology`] thread and the [`replay`] cursor beside it.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::cli::Cli;
use crate::app::config;
use crate::app::live::LiveFrames;
use crate::app::options;
use crate::model::frame::Frame;
use crate::sys::ticker::Ticker;
use crate::ui::settings::Settings;
use crate::ui::state::{App, Options, Theme};
use crate::ui::{Cmd, Msg};

mod apply;
mod replay;
mod signals;
mod topology;

use replay::{open_replay, start_replay};
use topology::{SharedState, topology_thread};

use crate::sys::users::UserNames;

/// Every UID a frame's rows show.
fn task_uids(f: &Frame) -> impl Iterator<Item = u32> + '_ {
    f.processes.iter().chain(&f.threads).map(|t| t.uid)
}

/// Names for the UIDs of `f` that `names` has not met before, sent ahead
/// of the frame so it is drawn with them. `false` when the UI has gone.
pub(super) fn send_new_users(names: Option<&mut UserNames>, f: &Frame, tx: &Sender<Msg>) -> bool {
    let Some(names) = names else {
        return true;
    };
    let new = names.resolve_new(task_uids(f));
    new.is_empty() || tx.send(Msg::Users(new)).is_ok()
}

/// What the data thread was woken for.
enum Due {
    /// The ticker's deadline: take a sample.
    Tick,
    /// A new delay (`d` key): take a sample now, then one every new delay.
    Delay(f64),
    /// Thread rows on or off: a new baseline is needed.
    ThreadRows(bool),
    /// `P`, confirmed.
    Apply(Box<crate::plan::Plan>),
    /// The UI has gone.
    Quit,
}

/// Waits for the ticker's deadline or a command; `P`'s re-check only
/// wakes the topology thread (`recheck`).
fn wait(rx: &Receiver<Cmd>, ticker: &mut Ticker, recheck: &AtomicBool) -> Due {
    loop {
        let now = Instant::now();
        if now >= ticker.deadline() {
            ticker.advance(now);
            return Due::Tick;
        }
        match rx.recv_timeout(ticker.deadline() - now) {
            Ok(Cmd::SetDelay(v)) => return Due::Delay(v),
            Ok(Cmd::ThreadRows(on)) => return Due::ThreadRows(on),
            Ok(Cmd::ApplyPlan(p)) => return Due::Apply(p),
            Ok(Cmd::Recheck) => recheck.store(true, Ordering::Relaxed),
            Ok(Cmd::Quit) | Err(RecvTimeoutError::Disconnected) => return Due::Quit,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// The UI's end of the data thread's channel, its command channel, and a
/// sender for log records (shown in the status line).
pub(super) type Channels = (Receiver<Msg>, Sender<Cmd>, Sender<Msg>);

/// The live data thread's last word: an apply it had not finished (to be
/// dropped, which restores the host, once the terminal is back). Closed
/// without a word when the thread died unwinding (which restored it).
type Ended = Receiver<Option<apply::Applying>>;

/// How long nettop waits at exit for the data thread to end, so an apply
/// that has not reached its verdict restores the host before the process
/// is gone.
const DATA_THREAD_END: Duration = Duration::from_secs(10);

/// First interval is short so the screen fills quickly; later ones use `-d`.
const FIRST_INTERVAL: f64 = 0.5;

/// Starts live collection. Returns only once the collector is up, so its
/// errors are printed before the terminal is touched.
fn start_live(cli: &Cli) -> anyhow::Result<(Channels, Ended)> {
    let sysroot = options::sysroot(cli);
    let cli_owned = cli.clone();
    let mut delay = cli.delay();
    let (ended_tx, ended_rx) = mpsc::channel::<Option<apply::Applying>>();
    let window = cli.measure.unwrap_or(crate::plan::measure::DEFAULT_WINDOW);
    let state_dir = options::plan_state_dir(cli);
    let (tx, rx) = mpsc::channel::<Msg>();
    let (ctx, crx) = mpsc::channel::<Cmd>();
    let (ready_tx, ready_rx) = mpsc::channel::<anyhow::Result<()>>();
    let shared: SharedState = Arc::default();
    let recheck = Arc::new(AtomicBool::new(false));
    let recheck_data = Arc::clone(&recheck);
    let ev = Arc::clone(&shared);
    let data_tx = tx.clone();
    std::thread::spawn(move || {
        // The collector is created on this thread (BPF objects need not be Send).
        let mut live = match LiveFrames::open(&cli_owned, false) {
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
        // Thread rows as the UI wants them; an apply needs them meanwhile
        // (its victims are threads).
        let mut ui_threads = cli_owned.threads;
        let mut applying: Option<apply::Applying> = None;
        // Every way out of the loop (quit, the UI gone, a failed sample)
        // hands an unfinished apply to the main thread, which restores
        // the host once the terminal is back, so the warning is seen.
        (|| {
            loop {
                match wait(&crx, &mut ticker, &recheck_data) {
                    Due::Quit => return,
                    Due::Delay(d) => {
                        // A new delay takes effect now rather than after the old one.
                        delay = d;
                        ticker.set_period(Duration::from_secs_f64(d), Instant::now());
                        first = false;
                    }
                    Due::ThreadRows(on) => {
                        ui_threads = on;
                        if applying.is_some() {
                            continue;
                        }
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
                    Due::Apply(plan) => {
                        if applying.is_some() {
                            continue;
                        }
                        let started = if ui_threads {
                            Ok(())
                        } else {
                            live.set_threads(true)
                        };
                        let run = started.and_then(|()| {
                            apply::Applying::start(*plan, &live, window, &state_dir)
                        });
                        let news = match run {
                            Ok(a) => {
                                let p = a.progress();
                                applying = Some(a);
                                p
                            }
                            Err(e) => apply::failed(&format!("{e:#}")),
                        };
                        if data_tx.send(Msg::PlanRun(news)).is_err() {
                            return;
                        }
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
                    g.observed = crate::plan::measure::Observed::of(&frame);
                    if g.want_threads {
                        g.threads = live.threads_now();
                        g.want_threads = false;
                    }
                }
                if let Some(a) = applying.take() {
                    let (rest, news) = a.step(&live);
                    applying = rest;
                    let news = match news {
                        apply::Step::Running(p) => p,
                        apply::Step::Done(p) => {
                            if !ui_threads && let Err(e) = live.set_threads(false) {
                                let _ = data_tx.send(Msg::Fatal(format!("sampling failed: {e:#}")));
                                return;
                            }
                            p
                        }
                    };
                    if data_tx.send(Msg::PlanRun(news)).is_err() {
                        return;
                    }
                }
                if !send_new_users(Some(&mut names), &frame, &data_tx)
                    || data_tx.send(Msg::Frame(Box::new(frame))).is_err()
                {
                    return;
                }
            }
        })();
        let _ = ended_tx.send(applying.take());
    });
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => anyhow::bail!("the collector thread died while starting"),
    }
    let warn = tx.clone();
    topology_thread(cli, Some((shared, recheck)), tx);
    Ok(((rx, ctx, warn), ended_rx))
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
        delay: cli.delay(),
        threads: cli.threads,
        cmdline: cli.command_line,
        forest: false,
        hide_idle: cli.hide_idle,
        plan_measure_s: cli
            .measure
            .unwrap_or(crate::plan::measure::DEFAULT_WINDOW)
            .as_secs_f64(),
        theme: Theme::from_env(),
        width,
        height,
        pids: cli.pids.clone(),
        read_only: cli.read_only,
    }
}

/// The command line as the data thread needs it with the saved settings
/// in: their delay, and thread rows when the saved view shows threads.
fn with_settings(cli: &Cli, s: &Settings) -> Cli {
    let mut c = cli.clone();
    c.delay = s.delay.or(cli.delay);
    c.threads = s.threads.unwrap_or(false) || s.tree.unwrap_or(false);
    c
}

/// Runs the TUI over `rx`, starting from `settings`; log records go to its
/// status line meanwhile, and the configuration file's warning is the
/// first thing it shows.
fn run_ui(
    cli: &Cli,
    (settings, warning): (Settings, Option<String>),
    (rx, tx, warn): Channels,
) -> anyhow::Result<u8> {
    if let Some(w) = &warning {
        log::warn!("{w}");
    }
    let mut app = App::new(ui_options(cli));
    app.apply_settings(&settings);
    app.message = warning;
    if cli.replay.is_none() {
        // An apply that never reached its verdict outranks the config's
        // warning: it may have left this host changed.
        let dir = options::plan_state_dir(cli);
        let scan = crate::plan::journal::unfinished(&dir);
        if let Some(u) = scan.unfinished.iter().find(|u| u.left_changes()) {
            log::warn!("{}", u.summary(&dir));
            app.message = Some(u.short(&dir));
        }
    }
    let warn = Mutex::new(warn);
    crate::app::logger::redirect(Box::new(move |m: &str| {
        if let Ok(w) = warn.lock() {
            let _ = w.send(Msg::Warn(m.to_string()));
        }
    }));
    let mut save = config::saver(cli);
    let mut control = control;
    let hooks = crate::ui::Hooks {
        save: &mut save,
        control: &mut control,
    };
    let stop = signals::install()?;
    let res = crate::ui::run(app, rx, tx, hooks, &stop);
    crate::app::logger::redirect_end();
    res
}

/// `k`, `r` and `a`, confirmed in the TUI: done here, answered in one
/// status line.
fn control(c: &crate::ui::asked::Control) -> Result<String, String> {
    use crate::sys::control::{self, signal_name};
    use crate::ui::asked::Op;
    let who = c.target.label();
    let threads = |n: usize| {
        if n == 1 {
            String::new()
        } else {
            format!(" ({n} threads)")
        }
    };
    match &c.op {
        Op::Signal(s) => control::send_signal(&c.target, *s)
            .map(|()| format!("sent {} to {who}", signal_name(*s))),
        Op::Renice(n) => {
            control::renice(&c.target, *n).map(|k| format!("{who} reniced to {n}{}", threads(k)))
        }
        Op::Affinity(cpus) => control::set_affinity(&c.target, cpus).map(|k| {
            format!(
                "{who} now runs on CPUs {}{}; the detail pane shows STOLEN% before and after",
                cpus.to_list(),
                threads(k)
            )
        }),
    }
    .map_err(|e| format!("{e:#}"))
}

/// `nettop`: the live TUI.
pub fn run_live(cli: &Cli) -> anyhow::Result<u8> {
    check_tty()?;
    let settings = config::for_tui(cli);
    let data_cli = with_settings(cli, &settings.0);
    // Collector errors (no permission, bad --sysroot, BPF refused) surface
    // here, before raw mode, as plain text.
    let (channels, ended) = start_live(&data_cli)?;
    let res = run_ui(cli, settings, channels);
    // The UI has told the data thread to quit; an apply it was in the
    // middle of restores the host here (and says so on stderr, now that
    // the terminal is back).
    match ended.recv_timeout(DATA_THREAD_END) {
        Ok(unfinished) => drop(unfinished),
        Err(RecvTimeoutError::Timeout) => {
            crate::plan::steps::restore_all_armed();
        }
        Err(RecvTimeoutError::Disconnected) => {}
    }
    res
}

/// `nettop --replay FILE`: a recording in the TUI.
pub fn run_replay(cli: &Cli, file: &Path) -> anyhow::Result<u8> {
    let (rec, span) = open_replay(cli, file)?;
    check_tty()?;
    let settings = config::for_tui(cli);
    let data_cli = with_settings(cli, &settings.0);
    let channels = start_replay(&data_cli, file, rec, span)?;
    run_ui(cli, settings, channels)
}
