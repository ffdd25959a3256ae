//! Input: the one keymap table, from which both the key handling and the
//! help overlay come (so they cannot disagree), and the mouse.
//!
//! Each [`Entry`] is one help line: the keys it binds (their names are the
//! line's label) and what they do. [`App::handle_key`] looks every key up
//! here and nowhere else; the prompts and the sort picker, which take text
//! or list keys, are in [`super::prompt`].

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use super::rows::View;
use super::state::{Action, App, CHROME_BOTTOM, Mode};
use super::tabs::tab_at;
use crate::output::columns::ProcColumn;

/// Rows the mouse wheel moves.
const WHEEL_STEP: usize = 3;
/// Samples `{`/`}` jump in replay.
pub const REPLAY_JUMP: usize = 10;

/// A key as bound: with Ctrl, or as typed (Shift is in the character).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

const fn key(code: KeyCode) -> Key {
    Key { code, ctrl: false }
}

const fn ch(c: char) -> Key {
    key(KeyCode::Char(c))
}

impl Key {
    /// Ctrl bindings need Ctrl (either case of the letter), the others
    /// its absence: Ctrl-J is not `j`. Shift is part of the character.
    fn matches(self, ev: &KeyEvent) -> bool {
        if self.ctrl != ev.modifiers.contains(KeyModifiers::CONTROL) {
            return false;
        }
        if !self.ctrl {
            return self.code == ev.code;
        }
        match (self.code, ev.code) {
            (KeyCode::Char(a), KeyCode::Char(b)) => a.eq_ignore_ascii_case(&b),
            (a, b) => a == b,
        }
    }

    /// The key's name in the help overlay.
    pub fn name(self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) if self.ctrl => c.to_ascii_uppercase().to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Up => "Up".into(),
            KeyCode::Down => "Down".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "Shift-Tab".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Left => "Left".into(),
            KeyCode::Right => "Right".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        };
        if self.ctrl {
            format!("Ctrl-{base}")
        } else {
            base
        }
    }
}

/// What a key does in the views (no prompt open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Quit,
    Help,
    NextView,
    PrevView,
    Show(View),
    Up,
    Down,
    PageUp,
    PageDown,
    First,
    Last,
    Threads,
    Tree,
    Forest,
    Idle,
    /// Enter: the detail pane of the selected process, or in the cgroup
    /// grouping open/close the group.
    Open,
    WriteConfig,
    Scheme,
    /// `m`: the header's next mode (full, compact, brief).
    Header,
    CmdLine,
    Group,
    /// Open (true), close (false) or toggle (None) the cgroup under the cursor.
    Expand(Option<bool>),
    SortLeft,
    SortRight,
    /// Sort by this column (`M`: RES, as in htop and top).
    SortBy(ProcColumn),
    Fields,
    Reverse,
    Filter,
    Follow,
    Clear,
    Pause,
    Delay,
    Step(isize),
    GotoTime,
    /// `P`: the plan in the Pinning view, applied after a question.
    Plan,
    /// `k`/F9: send a signal to the selected task (asks).
    Kill,
    /// `r`: renice; F7/F8: one step towards -20 / 19 (asks).
    Renice(Option<i32>),
    /// `a`: set the selected task's CPU affinity (asks).
    Affinity,
    /// `u`: one user's tasks only.
    Users,
    /// `K`: kernel threads hidden or listed.
    KernelThreads,
    /// A key htop users press that nettop has no equivalent for: a hint.
    Hint(char),
}

/// One help line: the keys and what they do.
pub struct Entry {
    pub binds: &'static [(Key, Command)],
    pub help: &'static str,
}

use Command as C;
use KeyCode as K;

/// Every key of the views, in help order.
pub const KEYMAP: &[Entry] = &[
    Entry {
        binds: &[(key(K::Tab), C::NextView), (key(K::BackTab), C::PrevView)],
        help: "next / previous view",
    },
    Entry {
        binds: &[
            (ch('1'), C::Show(View::Processes)),
            (ch('2'), C::Show(View::Cpus)),
            (ch('3'), C::Show(View::Devices)),
            (ch('4'), C::Show(View::Topology)),
            (ch('5'), C::Show(View::Pinning)),
        ],
        help: "Processes, CPUs, Devices/NAPI, Topology, Pinning",
    },
    Entry {
        binds: &[(key(K::Up), C::Up), (key(K::Down), C::Down)],
        help: "move selection (scroll in text views)",
    },
    Entry {
        binds: &[(key(K::PageUp), C::PageUp), (key(K::PageDown), C::PageDown)],
        help: "move one page",
    },
    Entry {
        binds: &[
            (key(K::Home), C::First),
            (key(K::End), C::Last),
            (ch('g'), C::First),
            (ch('G'), C::Last),
        ],
        help: "first / last row",
    },
    Entry {
        binds: &[(ch('H'), C::Threads)],
        help: "threads on/off (as in top)",
    },
    Entry {
        binds: &[(ch('t'), C::Tree)],
        help: "tree: threads under their process",
    },
    Entry {
        binds: &[(ch('V'), C::Forest), (key(K::F(5)), C::Forest)],
        help: "forest: processes under parents (as in top)",
    },
    Entry {
        binds: &[(ch('i'), C::Idle)],
        help: "hide / list tasks that used no CPU (as in top)",
    },
    Entry {
        binds: &[(ch('K'), C::KernelThreads)],
        help: "hide / list kernel threads (as in htop)",
    },
    Entry {
        binds: &[(ch('u'), C::Users)],
        help: "show one user's tasks (as in top, htop)",
    },
    Entry {
        binds: &[(ch('c'), C::CmdLine)],
        help: "COMMAND: full command line / name (as in top)",
    },
    Entry {
        binds: &[(ch('C'), C::Group)],
        help: "group by cgroup (pod, container, service)",
    },
    Entry {
        binds: &[
            (key(K::Right), C::Expand(Some(true))),
            (key(K::Left), C::Expand(Some(false))),
        ],
        help: "grouped: open / close the group",
    },
    Entry {
        binds: &[(key(K::Enter), C::Open)],
        help: "detail pane (grouped: open / close the group)",
    },
    Entry {
        binds: &[(ch('<'), C::SortLeft), (ch('>'), C::SortRight)],
        help: "sort by the column left / right",
    },
    Entry {
        binds: &[(ch('M'), C::SortBy(ProcColumn::Res))],
        help: "sort by resident memory, RES (as in htop and top)",
    },
    Entry {
        binds: &[
            (ch('F'), C::Fields),
            (key(K::F(2)), C::Fields),
            (key(K::F(6)), C::Fields),
        ],
        help: "fields: sort by, show / hide / move columns",
    },
    Entry {
        binds: &[(ch('R'), C::Reverse)],
        help: "reverse sort order",
    },
    Entry {
        binds: &[
            (ch('/'), C::Filter),
            (ch('\\'), C::Filter),
            (key(K::F(3)), C::Filter),
            (key(K::F(4)), C::Filter),
        ],
        help: "filter as you type: command, user, PID (Esc clears)",
    },
    Entry {
        binds: &[(ch('f'), C::Follow)],
        help: "follow the selected PID",
    },
    Entry {
        binds: &[(key(K::Esc), C::Clear)],
        help: "clear filter and follow",
    },
    Entry {
        binds: &[(ch('p'), C::Pause), (ch(' '), C::Pause)],
        help: "pause / resume (replay: play / pause)",
    },
    Entry {
        binds: &[(ch('d'), C::Delay), (ch('s'), C::Delay)],
        help: "set delay in seconds (as in top)",
    },
    Entry {
        binds: &[(ch('['), C::Step(-1)), (ch(']'), C::Step(1))],
        help: "replay: previous / next sample",
    },
    Entry {
        binds: &[
            (ch('{'), C::Step(-(REPLAY_JUMP as isize))),
            (ch('}'), C::Step(REPLAY_JUMP as isize)),
        ],
        help: "replay: jump 10 samples",
    },
    Entry {
        binds: &[(ch('T'), C::GotoTime)],
        help: "replay: go to a time (14:05 UTC, +30s, -10m)",
    },
    Entry {
        binds: &[(ch('P'), C::Plan)],
        help: "the plan; in the Pinning view: apply it (asks)",
    },
    Entry {
        binds: &[(ch('k'), C::Kill), (key(K::F(9)), C::Kill)],
        help: "kill: send the selected task a signal (asks)",
    },
    Entry {
        binds: &[
            (ch('r'), C::Renice(None)),
            (key(K::F(7)), C::Renice(Some(-1))),
            (key(K::F(8)), C::Renice(Some(1))),
        ],
        help: "renice; F7 F8 one step up / down (as in htop)",
    },
    Entry {
        binds: &[(ch('a'), C::Affinity)],
        help: "CPU affinity: picker marks NET_RX, IRQ CPUs (asks)",
    },
    Entry {
        binds: &[
            (ch('l'), C::Hint('l')),
            (ch('e'), C::Hint('e')),
            (ch('x'), C::Hint('x')),
            (ch('I'), C::Hint('I')),
            (ch('S'), C::Hint('S')),
        ],
        help: "htop keys nettop lacks: what to use instead",
    },
    Entry {
        binds: &[(ch('m'), C::Header)],
        help: "header meters: full, compact, brief (as top's t/m)",
    },
    Entry {
        binds: &[(ch('Z'), C::Scheme)],
        help: "colours: default, light, mono (NO_COLOR: mono)",
    },
    Entry {
        binds: &[(ch('W'), C::WriteConfig)],
        help: "write settings to the config file (as in top)",
    },
    Entry {
        binds: &[
            (ch('?'), C::Help),
            (ch('h'), C::Help),
            (key(K::F(1)), C::Help),
        ],
        help: "this help (arrows scroll, other keys close)",
    },
    Entry {
        binds: &[
            (ch('q'), C::Quit),
            (
                Key {
                    code: K::Char('c'),
                    ctrl: true,
                },
                C::Quit,
            ),
            (key(K::F(10)), C::Quit),
        ],
        help: "quit",
    },
];

/// The help line for the mouse, which has no keys to bind.
const MOUSE_HELP: (&str, &str) = ("mouse", "click selects a row or a tab; wheel scrolls");

/// The help overlay's lines, the keys' then the mouse's: (key names, what
/// they do). README's keys table is this, word for word
/// (tests/pure/keys_readme.rs).
pub fn help() -> Vec<(String, &'static str)> {
    KEYMAP
        .iter()
        .map(|e| {
            let names: Vec<String> = e.binds.iter().map(|(k, _)| k.name()).collect();
            (names.join(" "), e.help)
        })
        .chain([(MOUSE_HELP.0.to_string(), MOUSE_HELP.1)])
        .collect()
}

/// The command bound to `ev`; Ctrl bindings first, so Ctrl-C is never
/// taken for a plain `c`.
fn lookup(ev: &KeyEvent, ctrl_only: bool) -> Option<Command> {
    let binds = || KEYMAP.iter().flat_map(|e| e.binds.iter());
    binds()
        .filter(|(k, _)| k.ctrl)
        .chain(binds().filter(|(k, _)| !k.ctrl && !ctrl_only))
        .find(|(k, _)| k.matches(ev))
        .map(|(_, c)| *c)
}

impl App {
    pub fn handle_event(&mut self, ev: &Event) -> Action {
        match ev {
            Event::Key(k) if k.kind != KeyEventKind::Release => self.handle_key(*k),
            Event::Mouse(m) => {
                self.handle_mouse(*m);
                Action::None
            }
            Event::Resize(w, h) => {
                self.resize(*w, *h);
                Action::None
            }
            _ => Action::None,
        }
    }

    pub fn handle_key(&mut self, k: KeyEvent) -> Action {
        // Ctrl bindings (quit) work in every mode, prompts included.
        if let Some(c) = lookup(&k, true) {
            self.mode = Mode::Normal;
            return self.run(c);
        }
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => {
                self.message = None;
                lookup(&k, false).map_or(Action::None, |c| self.run(c))
            }
            // The arrows scroll the help; any other key closes it, `q`
            // too rather than quitting, as in htop.
            Mode::Help(off) => {
                let page = self.viewport(self.view) as u16;
                self.mode = match k.code {
                    KeyCode::Down | KeyCode::Char('j') => Mode::Help(off.saturating_add(1)),
                    KeyCode::Up | KeyCode::Char('k') => Mode::Help(off.saturating_sub(1)),
                    KeyCode::PageDown => Mode::Help(off.saturating_add(page)),
                    KeyCode::PageUp => Mode::Help(off.saturating_sub(page)),
                    _ => Mode::Normal,
                };
                Action::None
            }
            Mode::Filter(buf) => {
                self.key_filter(k, buf);
                Action::None
            }
            Mode::Delay(buf) => self.key_delay(k, buf),
            Mode::Goto(buf) => self.key_goto(k, buf),
            Mode::Fields { at, moving } => {
                self.key_fields(k, at, moving);
                Action::None
            }
            Mode::ConfirmPlan(plan) => self.key_confirm_plan(k, plan),
            Mode::Signal { target, at } => self.key_signal(k, target, at),
            Mode::Renice { target, now, buf } => {
                self.key_renice(k, target, now, buf);
                Action::None
            }
            Mode::Affinity { target, cpus, at } => self.key_affinity(k, target, cpus, at),
            Mode::Users(at) => {
                self.key_users(k, at);
                Action::None
            }
            Mode::Confirm(c) => self.key_confirm(k, c),
        }
    }

    fn run(&mut self, c: Command) -> Action {
        let view = self.view;
        let page = self.viewport(view) as isize;
        match c {
            C::Quit => return Action::Quit,
            C::Help => self.mode = Mode::Help(0),
            C::NextView => self.set_view(View::ALL[(view.index() + 1) % View::ALL.len()]),
            C::PrevView => {
                let n = View::ALL.len();
                self.set_view(View::ALL[(view.index() + n - 1) % n]);
            }
            C::Show(v) => self.set_view(v),
            C::Up => self.move_by(view, -1),
            C::Down => self.move_by(view, 1),
            C::PageUp => self.move_by(view, -page),
            C::PageDown => self.move_by(view, page),
            C::First => self.move_to(view, 0),
            C::Last => self.move_to(view, usize::MAX),
            C::Threads => {
                self.threads = !self.threads;
                self.rebuild();
                return self.thread_rows();
            }
            C::Tree => {
                self.tree = !self.tree;
                self.rebuild();
                return self.thread_rows();
            }
            C::Forest => {
                self.forest = !self.forest;
                self.rebuild();
            }
            C::Open if view == View::Processes && self.group_cgroup => self.expand(None),
            C::Open if view == View::Processes => self.open_detail(),
            C::Open => {}
            C::Scheme => self.next_scheme(),
            C::Header => self.next_header(),
            C::WriteConfig => return Action::SaveSettings(Box::new(self.settings())),
            C::CmdLine => self.toggle_cmdline(),
            C::Idle => self.toggle_idle(),
            C::Group if view == View::Processes => self.toggle_group(),
            C::Expand(open) if view == View::Processes && self.group_cgroup => self.expand(open),
            C::Group | C::Expand(_) => {}
            C::SortLeft => self.shift_sort(-1),
            C::SortRight => self.shift_sort(1),
            C::SortBy(c) => self.set_sort(c),
            C::Reverse => {
                self.sort.descending = !self.sort.descending;
                self.rebuild();
            }
            C::Fields => self.open_fields(),
            C::Filter => self.mode = Mode::Filter(self.filter.clone()),
            C::Follow => self.toggle_follow(),
            // Esc closes the detail pane first, as it closes any pane.
            C::Clear if self.detail.is_some() => self.detail = None,
            C::Clear => {
                self.filter.clear();
                self.user = None;
                self.follow = None;
                self.rebuild();
            }
            C::Pause => return self.toggle_pause(),
            C::Delay => self.mode = Mode::Delay(String::new()),
            C::Step(d) => return self.seek_by(d),
            C::GotoTime if self.replay.is_some() => self.mode = Mode::Goto(String::new()),
            C::GotoTime => {}
            C::Plan => return self.plan_key(),
            C::Kill => self.kill_key(),
            C::Renice(step) => self.renice_key(step),
            C::Affinity => self.affinity_key(),
            C::Users => self.open_users(),
            C::KernelThreads => {
                self.hide_kthreads = !self.hide_kthreads;
                self.message = Some(if self.hide_kthreads {
                    "kernel threads hidden (K lists them again)".into()
                } else {
                    "kernel threads listed".into()
                });
                self.rebuild();
            }
            C::Hint(c) => self.message = Some(self.hint(c)),
        }
        Action::None
    }

    fn handle_mouse(&mut self, m: MouseEvent) {
        if self.mode != Mode::Normal {
            return;
        }
        let view = self.view;
        match m.kind {
            MouseEventKind::ScrollDown => self.move_by(view, WHEEL_STEP as isize),
            MouseEventKind::ScrollUp => self.move_by(view, -(WHEEL_STEP as isize)),
            MouseEventKind::Down(MouseButton::Left) => {
                if m.row == self.header_rows() {
                    if let Some(v) = tab_at(m.column) {
                        self.set_view(v);
                    }
                    return;
                }
                let top = self.chrome_top() + u16::from(view.has_table_header());
                let bottom = self.height.saturating_sub(CHROME_BOTTOM);
                if m.row >= top && m.row < bottom && !view.scrolls_only() {
                    let i = self.pos[view.index()].offset + (m.row - top) as usize;
                    if i < self.len(view) {
                        self.pos[view.index()].selected = i;
                        self.follow = None;
                    }
                }
            }
            _ => {}
        }
    }
}
