//! Interactive ratatui front end over the same Frames batch mode prints.
//!
//! Three parts, so that keys never wait on /proc or BPF:
//! - a data thread (live collector or replay cursor) that does all I/O and
//!   model arithmetic and sends finished Frames over a channel;
//! - [`state::App`], a pure state machine fed Frames and input events
//!   ([`keymap`] for the keys and the help they show, [`prompt`] for the
//!   status-line prompts), holding each view's rows from [`rows`];
//! - [`render::draw`], which turns App state into a screen and does no I/O:
//!   [`chrome`] around one of the [`views`], one file per view.

pub mod asked;
pub mod chrome;
mod control;
mod fields;
#[cfg(feature = "testing")]
pub mod fixtures;
mod habits;
pub mod history;
pub mod keymap;
pub mod meters;
mod pickers;
mod plan;
pub mod prompt;
pub mod render;
pub mod rows;
mod saved;
pub mod settings;
pub mod sparkline;
pub mod state;
mod style;
mod tabs;
mod term;
mod toggles;
pub mod views;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::Duration;

use crossterm::event;

use crate::model::frame::Frame;
use state::{Action, App, Extras};

/// Longest the loop waits for input before looking at new data; bounds how
/// late a Frame or a signal is noticed.
const INPUT_POLL: Duration = Duration::from_millis(40);

/// Data thread → UI.
pub enum Msg {
    Frame(Box<Frame>),
    Replay {
        index: usize,
        len: usize,
        playing: bool,
        frame: Box<Frame>,
    },
    /// Replay: the history of the frames before replay frame `index`,
    /// read from the recording after a jump (the frame itself is pushed
    /// onto it here). Dropped when another frame is shown by then.
    History {
        index: usize,
        history: Box<history::History>,
    },
    Users(Vec<(u32, String)>),
    Extras(Extras),
    /// The topology thread's facts for the detail pane.
    Facts(Box<rows::detail::Facts>),
    /// The progress and result of an apply started with `P`.
    PlanRun(rows::pinning::PlanRun),
    /// Shown in the status line; the TUI keeps running.
    Warn(String),
    /// The data thread cannot go on: leave the TUI and print this.
    Fatal(String),
}

/// UI → data thread.
pub enum Cmd {
    SetDelay(f64),
    Seek(usize),
    SeekTime(u64),
    Play(bool),
    /// Live: collect thread rows or not.
    ThreadRows(bool),
    /// Live: apply this plan (`P`, confirmed).
    ApplyPlan(Box<crate::plan::Plan>),
    /// Live: re-check the topology and the plan now (`P`).
    Recheck,
    Quit,
}

/// What the TUI hands to the mode runner to do, each answering in one
/// line for the status line: the runner owns the configuration file and
/// acts on processes; the TUI only says what the user asked for.
pub struct Hooks<'a> {
    /// Writes the settings `W` saves; says where, or why not.
    pub save: &'a mut dyn FnMut(&settings::Settings) -> Result<String, String>,
    /// Sends the signal, renices or sets the affinity the user confirmed.
    pub control: &'a mut dyn FnMut(&asked::Control) -> Result<String, String>,
}

/// Runs the TUI: enters the terminal, draws `app` and feeds it Frames from
/// `rx` and keys from the terminal; commands go back over `tx`, what the
/// user asked of the host to `hooks`. `stop` is the runner's signal flag
/// (the signal's number, 0 while none came): the loop notices it within
/// [`INPUT_POLL`] and unwinds normally, so the terminal is restored on
/// every way out.
pub fn run(
    mut app: App,
    rx: Receiver<Msg>,
    tx: Sender<Cmd>,
    hooks: Hooks,
    stop: &AtomicUsize,
) -> anyhow::Result<u8> {
    let (guard, mut term) = term::TermGuard::enter()?;
    let size = term.size()?;
    app.resize(size.width, size.height);
    let result = event_loop(&mut term, &mut app, &rx, &tx, stop, hooks);
    let _ = tx.send(Cmd::Quit);
    drop(term);
    drop(guard);
    result
}

/// Puts the terminal back as far as it still exists, for a runner that
/// must exit without unwinding (see `app::tui::signals`).
pub fn restore_terminal() {
    term::restore();
}

/// `true` once the terminal on stdin has hung up: there is nothing left
/// to draw on, nor to restore.
pub fn terminal_hung_up() -> bool {
    term::hung_up()
}

fn apply(app: &mut App, msg: Msg) -> anyhow::Result<()> {
    match msg {
        Msg::Frame(f) => app.push_frame(*f),
        Msg::Replay {
            index,
            len,
            playing,
            frame,
        } => {
            let contiguous = app.replay.is_some_and(|r| index == r.index + 1);
            if !contiguous {
                app.clear_history();
            }
            app.set_replay(index, len, playing);
            app.show_frame(*frame);
        }
        Msg::Users(u) => {
            app.add_users(u);
            app.rebuild();
        }
        Msg::History { index, history } => {
            if app.replay.is_some_and(|r| r.index == index) {
                app.history = *history;
                if let Some(f) = &app.frame {
                    app.history.push(f);
                }
            }
        }
        Msg::Extras(e) => app.set_extras(e),
        Msg::Facts(f) => {
            app.facts = *f;
            app.rebuild();
        }
        Msg::PlanRun(r) => app.set_plan_run(r),
        Msg::Warn(w) => app.message = Some(w),
        Msg::Fatal(e) => return Err(anyhow::Error::msg(e)),
    }
    Ok(())
}

/// Keys that open or close the detail pane change which thread rows the
/// App wants without saying so (the keymap returns no action for them):
/// the command to send when the wish changed and the key's own action did
/// not already carry it.
fn thread_rows_follow_up(before: &Action, action: &Action, app: &App) -> Option<Cmd> {
    let now = app.thread_rows();
    match now {
        Action::ThreadRows(on) if now != *before && !matches!(action, Action::ThreadRows(_)) => {
            Some(Cmd::ThreadRows(on))
        }
        _ => None,
    }
}

fn event_loop(
    term: &mut term::Term,
    app: &mut App,
    rx: &Receiver<Msg>,
    tx: &Sender<Cmd>,
    signal: &AtomicUsize,
    hooks: Hooks,
) -> anyhow::Result<u8> {
    let mut dirty = true;
    loop {
        let sig = signal.load(Ordering::Relaxed);
        if sig != 0 {
            return Ok(128u8.saturating_add(sig as u8));
        }
        if terminal_hung_up() {
            return Ok(128u8.saturating_add(signal_hook::consts::SIGHUP as u8));
        }
        loop {
            match rx.try_recv() {
                Ok(m) => {
                    apply(app, m)?;
                    dirty = true;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    anyhow::bail!("the data collection thread stopped unexpectedly")
                }
            }
        }
        if dirty {
            term.draw(|f| render::draw(f, app))?;
            dirty = false;
        }
        if !event::poll(INPUT_POLL)? {
            continue;
        }
        // Drain everything queued (mouse floods, pasted keys) before drawing.
        loop {
            let ev = event::read()?;
            let playing = app.replay.map(|r| r.playing);
            let rows = app.thread_rows();
            let action = app.handle_event(&ev);
            if let Some(cmd) = thread_rows_follow_up(&rows, &action, app) {
                let _ = tx.send(cmd);
            }
            match action {
                Action::Quit => return Ok(0),
                Action::SetDelay(d) => {
                    let _ = tx.send(Cmd::SetDelay(d));
                }
                Action::Seek(i) => {
                    let _ = tx.send(Cmd::Seek(i));
                }
                Action::SeekTime(t) => {
                    let _ = tx.send(Cmd::SeekTime(t));
                }
                Action::ThreadRows(on) => {
                    let _ = tx.send(Cmd::ThreadRows(on));
                }
                Action::SaveSettings(s) => {
                    app.message = Some(match (hooks.save)(&s) {
                        Ok(m) | Err(m) => m,
                    });
                }
                Action::Control(c) => {
                    let res = (hooks.control)(&c);
                    app.control_done(&c, res);
                }
                Action::ApplyPlan(p) => {
                    let _ = tx.send(Cmd::ApplyPlan(p));
                }
                Action::Recheck => {
                    let _ = tx.send(Cmd::Recheck);
                }
                Action::None => {}
            }
            if let Some(p) = app.replay.map(|r| r.playing)
                && Some(p) != playing
            {
                let _ = tx.send(Cmd::Play(p));
            }
            dirty = true;
            if !event::poll(Duration::ZERO)? {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

    /// The thread rows the loop asks for after key `c`, if it asks.
    fn asks(app: &mut App, c: KeyCode) -> Option<bool> {
        let before = app.thread_rows();
        let action = app.handle_event(&Event::Key(KeyEvent::new(c, KeyModifiers::NONE)));
        match thread_rows_follow_up(&before, &action, app) {
            Some(Cmd::ThreadRows(on)) => Some(on),
            _ => None,
        }
    }

    /// Opening the detail pane asks the collector for thread rows, closing
    /// it stops them; a key that asks by itself is not asked twice.
    #[test]
    fn the_detail_pane_asks_for_thread_rows() {
        let mut app = App::new(state::Options::default());
        app.push_frame(fixtures::busy_host());
        assert_eq!(asks(&mut app, KeyCode::Enter), Some(true));
        assert_eq!(asks(&mut app, KeyCode::Char('H')), None);
        assert_eq!(asks(&mut app, KeyCode::Esc), None, "H still wants them");
        assert_eq!(asks(&mut app, KeyCode::Char('H')), None);
        assert_eq!(asks(&mut app, KeyCode::Enter), Some(true));
        assert_eq!(asks(&mut app, KeyCode::Esc), Some(false));
        assert_eq!(asks(&mut app, KeyCode::Down), None);
    }

    /// A history from the recording replaces the app's only for the frame
    /// it was made for, and ends with that frame.
    #[test]
    fn replay_history_lands_on_its_own_frame() {
        let mut app = App::new(state::Options::default());
        let mut h = history::History::default();
        for t in 0..5 {
            h.push(&fixtures::busy_host_at(t));
        }
        let replay = |app: &mut App, index| {
            apply(
                app,
                Msg::Replay {
                    index,
                    len: 20,
                    playing: false,
                    frame: Box::new(fixtures::busy_host_at(index as u64)),
                },
            )
        };
        replay(&mut app, 5).unwrap();
        assert_eq!(app.history.frames(), 1);
        let stale = Msg::History {
            index: 4,
            history: Box::new(h.clone()),
        };
        apply(&mut app, stale).unwrap();
        assert_eq!(app.history.frames(), 1);
        let fresh = Msg::History {
            index: 5,
            history: Box::new(h),
        };
        apply(&mut app, fresh).unwrap();
        assert_eq!(app.history.frames(), 6);
        // The next frame in order extends it; a jump starts over.
        replay(&mut app, 6).unwrap();
        assert_eq!(app.history.frames(), 7);
        replay(&mut app, 12).unwrap();
        assert_eq!(app.history.frames(), 1);
    }
}
