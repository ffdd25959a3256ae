//! Process control, as in htop and top: `k`/F9 sends a signal (a chooser,
//! SIGTERM first), `r` renices (F7/F8 one step up or down), `a` sets the
//! CPU affinity (a CPU picker that marks the CPUs taking NET_RX and queue
//! IRQs: the move nettop's own findings call for). Each names its target
//! (a whole process or the one thread under the cursor) and asks before
//! acting; the action itself is the run loop's ([`Action::Control`]), so
//! the App stays pure. Replay and `--read-only` refuse them all.
//!
//! After `a` the detail pane shows the task's STOLEN% before the move (the
//! history's mean) and after it (the frames since), as the plan's
//! before/after does.

use crossterm::event::{KeyCode, KeyEvent};

use super::asked::{AffinityChange, Control, Op};
use super::history::{Key as HistKey, Series};
use super::state::{Action, App, Mode};
use crate::model::frame::TaskView;
use crate::sys::control::{NICE_RANGE, SIGNALS, Target};
use crate::sys::cpuset::CpuSet;

/// Frames of history the "before" of an affinity change averages.
const BEFORE_FRAMES: usize = 10;

/// The task's nice value now, as the frame has it.
fn nice_now(t: &TaskView) -> Option<i32> {
    t.nice
}

/// The target of a task row.
fn target_of(t: &TaskView) -> Target {
    Target {
        pid: t.pid,
        tid: t.tid,
        process: t.is_process,
        start_ticks: t.start_ticks,
        comm: t.comm.clone(),
    }
}

impl App {
    /// Why process control is off here, if it is.
    fn control_refused(&self) -> Option<&'static str> {
        if self.replay.is_some() {
            Some("replay: k, r and a act on live processes, not on a recording")
        } else if self.read_only {
            Some("read-only (--read-only, or read_only in the config): k, r, a and P are off")
        } else {
            None
        }
    }

    /// The task the action would be for, or why there is none.
    fn control_target(&mut self) -> Option<Target> {
        if let Some(why) = self.control_refused() {
            self.message = Some(why.into());
            return None;
        }
        let t = if self.view == super::rows::View::Processes {
            self.selected_task().map(target_of)
        } else {
            None
        };
        if t.is_none() {
            self.message = Some("select a process or thread in the Processes view first".into());
        }
        t
    }

    /// `k`/F9: the signal chooser, on SIGTERM.
    pub(crate) fn kill_key(&mut self) {
        if let Some(target) = self.control_target() {
            let at = SIGNALS
                .iter()
                .position(|(s, _)| *s == libc::SIGTERM)
                .unwrap_or(0);
            self.mode = Mode::Signal {
                target: Box::new(target),
                at,
            };
        }
    }

    pub(crate) fn key_signal(&mut self, k: KeyEvent, target: Box<Target>, at: usize) -> Action {
        let last = SIGNALS.len() - 1;
        let at = match k.code {
            KeyCode::Up => at.saturating_sub(1),
            KeyCode::Down => (at + 1).min(last),
            KeyCode::PageUp | KeyCode::Home => 0,
            KeyCode::PageDown | KeyCode::End => last,
            KeyCode::Enter => {
                let sig = SIGNALS.get(at).map_or(libc::SIGTERM, |(s, _)| *s);
                self.mode = Mode::Confirm(Box::new(Control {
                    target: *target,
                    op: Op::Signal(sig),
                }));
                return Action::None;
            }
            KeyCode::Esc | KeyCode::Char('q') => {
                self.message = Some("no signal sent".into());
                return Action::None;
            }
            // A number picks that signal, as `kill -N`.
            KeyCode::Char(c) if c.is_ascii_digit() => {
                let n = c.to_digit(10).unwrap_or(0) as i32;
                let typed = if SIGNALS.get(at).is_some_and(|(s, _)| *s < 10) {
                    SIGNALS[at].0 * 10 + n
                } else {
                    n
                };
                SIGNALS
                    .iter()
                    .position(|(s, _)| *s == typed)
                    .or_else(|| SIGNALS.iter().position(|(s, _)| *s == n))
                    .unwrap_or(at)
            }
            _ => at,
        };
        self.mode = Mode::Signal { target, at };
        Action::None
    }

    /// `r`: a prompt for the new nice value; F7/F8 (`step` -1/+1): one
    /// step from the current value, asked as a question.
    pub(crate) fn renice_key(&mut self, step: Option<i32>) {
        let Some(target) = self.control_target() else {
            return;
        };
        let now = self.selected_task().and_then(nice_now);
        match (step, now) {
            (Some(d), Some(n)) => {
                let to = (n + d).clamp(*NICE_RANGE.start(), *NICE_RANGE.end());
                if to == n {
                    self.message = Some(format!("nice is already {n}, the end of the range"));
                    return;
                }
                self.mode = Mode::Confirm(Box::new(Control {
                    target,
                    op: Op::Renice(to),
                }));
            }
            _ => {
                self.mode = Mode::Renice {
                    target: Box::new(target),
                    now,
                    buf: String::new(),
                }
            }
        }
    }

    pub(crate) fn key_renice(
        &mut self,
        k: KeyEvent,
        target: Box<Target>,
        now: Option<i32>,
        mut buf: String,
    ) {
        match k.code {
            KeyCode::Enter => match buf.trim().parse::<i32>() {
                Ok(n) if NICE_RANGE.contains(&n) => {
                    self.mode = Mode::Confirm(Box::new(Control {
                        target: *target,
                        op: Op::Renice(n),
                    }));
                }
                _ => {
                    self.message = Some(format!(
                        "'{}' is not a nice value (-20, the highest priority, to 19)",
                        buf.trim()
                    ))
                }
            },
            KeyCode::Esc => self.message = Some("nice not changed".into()),
            KeyCode::Backspace => {
                buf.pop();
                self.mode = Mode::Renice { target, now, buf };
            }
            KeyCode::Char(c) if c.is_ascii_digit() || (c == '-' && buf.is_empty()) => {
                if buf.len() < 3 {
                    buf.push(c);
                }
                self.mode = Mode::Renice { target, now, buf };
            }
            _ => self.mode = Mode::Renice { target, now, buf },
        }
    }

    /// `a`: the CPU picker, ticked as the task's affinity is now.
    pub(crate) fn affinity_key(&mut self) {
        let Some(target) = self.control_target() else {
            return;
        };
        let cpus = self
            .selected_task()
            .and_then(|t| CpuSet::parse_list(&t.affinity).ok())
            .unwrap_or_default();
        self.mode = Mode::Affinity {
            target: Box::new(target),
            cpus,
            at: 0,
        };
    }

    /// The CPUs the picker lists: the frame's online ones.
    pub(crate) fn picker_cpus(&self) -> Vec<u32> {
        self.frame.as_ref().map_or_else(Vec::new, |f| {
            f.cpus.iter().filter(|c| c.online).map(|c| c.cpu).collect()
        })
    }

    pub(crate) fn key_affinity(
        &mut self,
        k: KeyEvent,
        target: Box<Target>,
        mut cpus: CpuSet,
        at: usize,
    ) -> Action {
        let list = self.picker_cpus();
        let last = list.len().saturating_sub(1);
        let at = match k.code {
            KeyCode::Up => at.saturating_sub(1),
            KeyCode::Down => (at + 1).min(last),
            KeyCode::Home => 0,
            KeyCode::End => last,
            KeyCode::Char(' ') | KeyCode::Char('x') => {
                if let Some(&c) = list.get(at) {
                    cpus = if cpus.contains(c) {
                        cpus.difference(&CpuSet::from_cpus([c]))
                    } else {
                        cpus.union(&CpuSet::from_cpus([c]))
                    };
                }
                at
            }
            // All CPUs, or none but the one under the cursor.
            KeyCode::Char('A') => {
                cpus = CpuSet::from_cpus(list.iter().copied());
                at
            }
            KeyCode::Char('o') => {
                cpus = CpuSet::from_cpus(list.get(at).copied());
                at
            }
            KeyCode::Enter if cpus.is_empty() => {
                self.message = Some("tick at least one CPU (Space)".into());
                at
            }
            KeyCode::Enter => {
                self.mode = Mode::Confirm(Box::new(Control {
                    target: *target,
                    op: Op::Affinity(cpus),
                }));
                return Action::None;
            }
            KeyCode::Esc | KeyCode::Char('q') => {
                self.message = Some("affinity not changed".into());
                return Action::None;
            }
            _ => at,
        };
        self.mode = Mode::Affinity { target, cpus, at };
        Action::None
    }

    pub(crate) fn key_confirm(&mut self, k: KeyEvent, c: Box<Control>) -> Action {
        if matches!(k.code, KeyCode::Char('y' | 'Y')) {
            return Action::Control(c);
        }
        self.message = Some("not done: nothing changed".into());
        Action::None
    }

    /// The run loop's answer to [`Action::Control`]: the status line says
    /// it, and a new affinity starts its before/after.
    pub fn control_done(&mut self, c: &Control, result: Result<String, String>) {
        match result {
            Ok(msg) => {
                if let Op::Affinity(cpus) = &c.op {
                    self.start_affinity_watch(c, cpus);
                }
                self.message = Some(msg);
            }
            Err(e) => self.message = Some(e),
        }
    }

    fn start_affinity_watch(&mut self, c: &Control, cpus: &CpuSet) {
        let key = if c.target.process {
            HistKey::Proc(c.target.pid)
        } else {
            HistKey::Thread(c.target.tid)
        };
        let before: Vec<f64> = self
            .history
            .last_n(key, Series::Stolen, BEFORE_FRAMES)
            .into_iter()
            .flatten()
            .map(f64::from)
            .collect();
        let from = self
            .frame
            .as_ref()
            .and_then(|f| {
                let list = if c.target.process {
                    &f.processes
                } else {
                    &f.threads
                };
                list.iter()
                    .find(|t| t.pid == c.target.pid && t.tid == c.target.tid)
            })
            .map_or_else(|| "?".to_string(), |t| t.affinity.clone());
        self.affinity_changes.retain(|a| a.key != key);
        self.affinity_changes.push(AffinityChange {
            key,
            pid: c.target.pid,
            from,
            to: cpus.to_list(),
            at_ms: self.frame.as_ref().map_or(0, |f| f.unix_ms),
            before: (!before.is_empty()).then(|| {
                (
                    before.iter().sum::<f64>() / before.len() as f64,
                    before.len(),
                )
            }),
            after_sum: 0.0,
            after_n: 0,
        });
        // The detail pane shows it: open it on the task.
        self.detail = Some(c.target.pid);
        self.rebuild();
    }

    /// Each new frame adds to the "after" of the changes it covers.
    pub(crate) fn track_affinity(&mut self) {
        let Some(f) = self.frame.as_ref() else {
            return;
        };
        for a in &mut self.affinity_changes {
            if f.unix_ms <= a.at_ms {
                continue;
            }
            let row = match a.key {
                HistKey::Proc(pid) => f.processes.iter().find(|t| t.pid == pid),
                HistKey::Thread(tid) => f.threads.iter().find(|t| t.tid == tid),
                HistKey::Cpu(_) => None,
            };
            if let Some(t) = row {
                a.after_sum += t.stolen_pct;
                a.after_n += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::fixtures;
    use crate::ui::state::Options;
    use crossterm::event::{Event, KeyModifiers};

    fn press(app: &mut App, code: KeyCode) -> Action {
        app.handle_event(&Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    fn app() -> App {
        let mut a = App::new(Options::default());
        a.push_frame(fixtures::busy_host());
        a
    }

    #[test]
    fn k_asks_with_sigterm_first_and_names_the_target() {
        let mut a = app();
        press(&mut a, KeyCode::Char('k'));
        assert!(matches!(a.mode, Mode::Signal { .. }), "{:?}", a.mode);
        press(&mut a, KeyCode::Enter);
        let Mode::Confirm(c) = &a.mode else {
            panic!("{:?}", a.mode)
        };
        assert_eq!(c.op, Op::Signal(libc::SIGTERM));
        assert!(
            c.question().starts_with("Send SIGTERM to PID "),
            "{}",
            c.question()
        );
        let c = c.clone();
        assert_eq!(press(&mut a, KeyCode::Char('y')), Action::Control(c));
        // Anything but y is no.
        press(&mut a, KeyCode::F(9));
        press(&mut a, KeyCode::Down);
        press(&mut a, KeyCode::Enter);
        assert_eq!(press(&mut a, KeyCode::Char('n')), Action::None);
        assert_eq!(a.message.as_deref(), Some("not done: nothing changed"));
    }

    #[test]
    fn read_only_and_replay_refuse_every_action() {
        for (read_only, replay) in [(true, false), (false, true)] {
            let mut a = App::new(Options {
                read_only,
                ..Options::default()
            });
            a.push_frame(fixtures::busy_host());
            if replay {
                a.set_replay(0, 2, false);
            }
            for k in [
                KeyCode::Char('k'),
                KeyCode::F(9),
                KeyCode::Char('r'),
                KeyCode::F(7),
                KeyCode::F(8),
                KeyCode::Char('a'),
            ] {
                press(&mut a, k);
                assert_eq!(a.mode, Mode::Normal, "{k:?}");
                let m = a.message.clone().unwrap_or_default();
                assert!(
                    m.contains(if replay { "replay" } else { "read-only" }),
                    "{k:?}: {m}"
                );
            }
        }
    }

    #[test]
    fn the_cpu_picker_ticks_and_refuses_an_empty_set() {
        let mut a = app();
        press(&mut a, KeyCode::Char('a'));
        let Mode::Affinity { cpus, .. } = &a.mode else {
            panic!("{:?}", a.mode)
        };
        let start = cpus.clone();
        press(&mut a, KeyCode::Char('o'));
        let Mode::Affinity { cpus, at, .. } = &a.mode else {
            panic!("{:?}", a.mode)
        };
        assert_eq!(cpus.len(), 1);
        assert_eq!(cpus.first(), a.picker_cpus().get(*at).copied());
        press(&mut a, KeyCode::Char(' '));
        press(&mut a, KeyCode::Enter);
        assert!(matches!(a.mode, Mode::Affinity { .. }), "empty set refused");
        press(&mut a, KeyCode::Char(' '));
        press(&mut a, KeyCode::Enter);
        let Mode::Confirm(c) = &a.mode else {
            panic!("{:?}", a.mode)
        };
        assert!(
            matches!(&c.op, Op::Affinity(s) if s.len() == 1 && *s != start || start.len() == 1)
        );
    }

    #[test]
    fn renice_takes_a_number_in_range() {
        let mut a = app();
        press(&mut a, KeyCode::Char('r'));
        for c in "-25".chars() {
            press(&mut a, KeyCode::Char(c));
        }
        press(&mut a, KeyCode::Enter);
        assert_eq!(a.mode, Mode::Normal);
        assert!(
            a.message
                .as_deref()
                .unwrap_or("")
                .contains("not a nice value")
        );
        press(&mut a, KeyCode::Char('r'));
        for c in "-5".chars() {
            press(&mut a, KeyCode::Char(c));
        }
        press(&mut a, KeyCode::Enter);
        let Mode::Confirm(c) = &a.mode else {
            panic!("{:?}", a.mode)
        };
        assert_eq!(c.op, Op::Renice(-5));
    }
}
