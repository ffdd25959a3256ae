//! The TUI's state machine: Frames and input events in, state out.
//!
//! It knows nothing about terminals or threads, so every key can be tested
//! as `event → state`, and live and replay feed it the same way. Everything
//! the renderer needs that costs more than formatting a visible row (sorting
//! 5,000 tasks, grouping threads, victims per CPU) is computed here when a
//! Frame or a setting changes, never per draw.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use crate::model::frame::{Frame, TaskView};
use crate::model::raw::NET_RX;

/// Samples of per-CPU history kept for sparklines.
pub const HISTORY_LEN: usize = 120;
/// Stolen time (percent of one CPU) at which a process row gets marked.
pub const STOLEN_MARK_PCT: f64 = 10.0;
/// Rows the mouse wheel moves.
const WHEEL_STEP: usize = 3;
/// Samples `{`/`}` jump in replay.
pub const REPLAY_JUMP: usize = 10;

/// Screen rows above the body (summary, tabs, view header) and below (status).
pub const CHROME_TOP: u16 = 3;
pub const CHROME_BOTTOM: u16 = 1;
/// Smallest terminal the TUI draws into; below it shows a note.
pub const MIN_WIDTH: u16 = 30;
pub const MIN_HEIGHT: u16 = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Processes,
    Cpus,
    Devices,
    Topology,
    Pinning,
}

impl View {
    pub const ALL: [View; 5] = [
        View::Processes,
        View::Cpus,
        View::Devices,
        View::Topology,
        View::Pinning,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn title(self) -> &'static str {
        match self {
            View::Processes => "Processes",
            View::Cpus => "CPUs",
            View::Devices => "Devices/NAPI",
            View::Topology => "Topology",
            View::Pinning => "Pinning",
        }
    }

    /// Whether the body is a table with a header row (vs. plain text lines).
    fn has_table_header(self) -> bool {
        matches!(self, View::Processes | View::Cpus | View::Devices)
    }
}

/// Process table columns, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Pid,
    User,
    Command,
    Top,
    True,
    Gap,
    Stolen,
    Hidden,
    Hardirq,
    Softirq,
    NetRx,
    Inline,
    Cpu,
    Affinity,
    Node,
}

impl Column {
    /// Screen order (COMMAND last, as in top), which `<`/`>` walk.
    pub const ALL: [Column; 15] = [
        Column::Pid,
        Column::User,
        Column::Top,
        Column::True,
        Column::Gap,
        Column::Stolen,
        Column::Hidden,
        Column::Hardirq,
        Column::Softirq,
        Column::NetRx,
        Column::Inline,
        Column::Cpu,
        Column::Affinity,
        Column::Node,
        Column::Command,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Column::Pid => "PID",
            Column::User => "USER",
            Column::Command => "COMMAND",
            Column::Top => "TOP%",
            Column::True => "TRUE%",
            Column::Gap => "GAP",
            Column::Stolen => "STOLEN%",
            Column::Hidden => "HID~%",
            Column::Hardirq => "HI%",
            Column::Softirq => "SI%",
            Column::NetRx => "NET_RX%",
            Column::Inline => "INLINE%",
            Column::Cpu => "CPU",
            Column::Affinity => "AFFINITY",
            Column::Node => "NODE",
        }
    }

    /// What the column means, for the sort picker.
    pub fn describe(self) -> &'static str {
        match self {
            Column::Pid => "process (or thread) ID",
            Column::User => "owner",
            Column::Command => "command name",
            Column::Top => "%CPU exactly as top shows it",
            Column::True => "CPU the task really got for its own work",
            Column::Gap => "TOP% minus TRUE%: what top gets wrong",
            Column::Stolen => "hardirq+softirq run on its time for others",
            Column::Hidden => "estimate: untraced cost of its interruptions",
            Column::Hardirq => "stolen: hardirq + system vectors",
            Column::Softirq => "stolen: softirq, all vectors",
            Column::NetRx => "stolen: NET_RX softirq",
            Column::Inline => "softirq it raised itself (e.g. its sends)",
            Column::Cpu => "CPU it last ran on",
            Column::Affinity => "CPUs it may run on",
            Column::Node => "NUMA node of its last CPU",
        }
    }

    /// Numbers sort largest first and align right.
    pub fn numeric(self) -> bool {
        !matches!(self, Column::User | Column::Command | Column::Affinity)
    }

    /// Amounts sort largest first; identifiers and text ascending (htop).
    pub fn default_descending(self) -> bool {
        self.numeric() && !matches!(self, Column::Pid | Column::Cpu | Column::Node)
    }

    fn pos(self) -> usize {
        Column::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }
}

/// Hardirq + system-vector time stolen from the task.
pub fn hi_pct(t: &TaskView) -> f64 {
    t.hardirq_pct + t.sysvec_pct
}

/// Softirq time stolen from the task, all vectors.
pub fn si_pct(t: &TaskView) -> f64 {
    t.softirq_stolen_pct.iter().sum()
}

pub fn net_rx_pct(t: &TaskView) -> f64 {
    t.softirq_stolen_pct[NET_RX]
}

/// Which Frame list a task row points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    Proc(usize),
    Thread(usize),
}

/// One visible row of the Processes view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRow {
    pub src: Src,
    /// 0 for top-level rows, 1 for threads under a process in tree mode.
    pub depth: u8,
    /// Last child of its parent (tree drawing).
    pub last: bool,
}

/// One row of the Devices/NAPI view.
#[derive(Clone, Debug, PartialEq)]
pub enum DevRow {
    /// Interface name and its index in `frame.devices` (if it has counters).
    Device(String, Option<usize>),
    Napi(usize),
}

/// Text line kinds of the Topology/Pinning views (styled by the renderer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Heading,
    Normal,
    Warn,
    Note,
}

/// Selection and scroll offset of one view's list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListPos {
    pub selected: usize,
    pub offset: usize,
}

/// Text being typed at the status line, or a popup.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    Normal,
    Help,
    Filter(String),
    Delay(String),
    /// Replay: time to jump to, as typed.
    Goto(String),
    /// Sort picker with the highlighted column index.
    SortPicker(usize),
}

/// What the run loop must do after an event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    None,
    Quit,
    /// New sampling delay for the collector thread (or replay playback).
    SetDelay(f64),
    /// Replay: show sample index.
    Seek(usize),
    /// Replay: show the frame ending at or before this time (unix ms).
    SeekTime(u64),
    /// Live: the collector should (not) take a row per thread, which only
    /// the thread list and the tree need.
    ThreadRows(bool),
}

/// Replay position; `None` in live mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayPos {
    pub index: usize,
    pub len: usize,
    pub playing: bool,
}

/// Sort order of the Processes view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    pub column: Column,
    pub descending: bool,
}

/// Colours on or off (`NO_COLOR`); only the 16 basic colours are ever used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to anything non-empty (no-color.org).
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no_color }
    }
}

/// Settings the TUI starts with, from the command line.
#[derive(Clone, Debug)]
pub struct Options {
    pub delay: f64,
    pub threads: bool,
    pub theme: Theme,
    pub width: u16,
    pub height: u16,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            delay: 1.0,
            threads: false,
            theme: Theme { color: true },
            width: 80,
            height: 24,
        }
    }
}

/// Extra panes that come from other modules (topology, pinning), already
/// turned into text lines outside the render thread.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub topology: Option<Vec<(LineKind, String)>>,
    pub pinning: Option<Vec<(LineKind, String)>>,
    /// Per interface name: what the topology knows that counters do not
    /// (XDP attachment, RPS steering, queue IRQs and where they land).
    pub devices: Option<BTreeMap<String, DevTopo>>,
}

/// Configuration of one interface for the Devices view, as text cells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevTopo {
    /// none / generic / native / offload / ? ; generic on a veth costs
    /// several times native, so it is shown next to the packet rates.
    pub xdp: String,
    /// Union of the RX queues' `rps_cpus`, "-" when RPS is off.
    pub rps: String,
    /// Queue IRQs and the CPUs each lands on ("38→0 39→1"), "-" when none.
    pub irqs: String,
}

pub struct App {
    pub view: View,
    pub mode: Mode,
    pub theme: Theme,
    pub frame: Option<Frame>,
    /// Newest frame received while paused (live), shown on resume.
    pending: Option<Frame>,
    pub users: HashMap<u32, String>,
    pub extras: Extras,
    pub threads: bool,
    pub tree: bool,
    pub sort: SortKey,
    pub filter: String,
    pub follow: Option<u32>,
    pub paused: bool,
    pub delay: f64,
    pub replay: Option<ReplayPos>,
    /// One-line note in the status bar (e.g. a rejected delay).
    pub message: Option<String>,
    pub pos: [ListPos; 5],
    pub width: u16,
    pub height: u16,
    /// Per CPU: busy % (100 - idle) history, oldest first.
    pub history: BTreeMap<u32, VecDeque<f64>>,
    // Derived from the frame and settings by `rebuild`.
    pub rows: Vec<TaskRow>,
    pub dev_rows: Vec<DevRow>,
    /// NUMA node by CPU number.
    pub cpu_node: Vec<Option<u32>>,
    /// Top victims (comm, stolen %) by CPU number.
    pub victims: Vec<Vec<(String, f64)>>,
    pub topo_lines: Vec<(LineKind, String)>,
    pub pin_lines: Vec<(LineKind, String)>,
    /// Processes grouped by cgroup (`c`), with these groups expanded.
    pub group_cgroup: bool,
    pub expanded: std::collections::HashSet<u64>,
    pub cg_rows: Vec<super::containers_view::CgRow>,
}

impl App {
    pub fn new(opts: Options) -> Self {
        let mut app = App {
            view: View::Processes,
            mode: Mode::Normal,
            theme: opts.theme,
            frame: None,
            pending: None,
            users: HashMap::new(),
            extras: Extras::default(),
            threads: opts.threads,
            tree: false,
            sort: SortKey {
                column: Column::Top,
                descending: true,
            },
            filter: String::new(),
            follow: None,
            paused: false,
            delay: opts.delay,
            replay: None,
            message: None,
            pos: [ListPos::default(); 5],
            width: opts.width,
            height: opts.height,
            history: BTreeMap::new(),
            rows: Vec::new(),
            dev_rows: Vec::new(),
            cpu_node: Vec::new(),
            victims: Vec::new(),
            topo_lines: Vec::new(),
            pin_lines: Vec::new(),
            group_cgroup: false,
            expanded: std::collections::HashSet::new(),
            cg_rows: Vec::new(),
        };
        app.rebuild();
        app
    }

    /// Adds user names (resolved by the collector thread, never by render).
    pub fn add_users(&mut self, users: impl IntoIterator<Item = (u32, String)>) {
        self.users.extend(users);
    }

    pub fn set_extras(&mut self, extras: Extras) {
        self.extras = extras;
        self.rebuild();
    }

    /// A new live frame. While paused it is held back, not shown.
    pub fn push_frame(&mut self, frame: Frame) {
        if self.paused {
            self.pending = Some(frame);
            return;
        }
        self.show_frame(frame);
    }

    /// Shows `frame` now (replay seeks bypass pause) and extends history.
    pub fn show_frame(&mut self, frame: Frame) {
        for c in &frame.cpus {
            let h = self.history.entry(c.cpu).or_default();
            if h.len() == HISTORY_LEN {
                h.pop_front();
            }
            h.push_back(if c.online {
                (100.0 - c.idle_pct).clamp(0.0, 100.0)
            } else {
                0.0
            });
        }
        self.frame = Some(frame);
        self.rebuild();
    }

    /// Forgets sparkline history (replay jumped backwards or far).
    pub fn clear_history(&mut self) {
        self.history.clear();
    }

    pub fn resize(&mut self, width: u16, height: u16) {
        self.width = width;
        self.height = height;
        for v in View::ALL {
            self.clamp(v);
        }
    }

    /// Rows of list content visible in `view` at the current size.
    pub fn viewport(&self, view: View) -> usize {
        let header = u16::from(view.has_table_header());
        self.height
            .saturating_sub(CHROME_TOP + CHROME_BOTTOM + header)
            .max(1) as usize
    }

    /// Length of `view`'s list.
    pub fn len(&self, view: View) -> usize {
        match view {
            View::Processes if self.group_cgroup => self.cg_rows.len(),
            View::Processes => self.rows.len(),
            View::Cpus => self.frame.as_ref().map_or(0, |f| f.cpus.len()),
            View::Devices => self.dev_rows.len(),
            View::Topology => self.topo_lines.len(),
            View::Pinning => self.pin_lines.len(),
        }
    }

    /// Text views scroll; list views move a selection.
    fn scrolls_only(view: View) -> bool {
        matches!(view, View::Topology | View::Pinning)
    }

    /// The task under the cursor in the Processes view.
    pub fn selected_task(&self) -> Option<&TaskView> {
        if self.group_cgroup {
            return None;
        }
        let row = self.rows.get(self.pos[View::Processes.index()].selected)?;
        self.task(row.src)
    }

    pub fn task(&self, src: Src) -> Option<&TaskView> {
        let f = self.frame.as_ref()?;
        match src {
            Src::Proc(i) => f.processes.get(i),
            Src::Thread(i) => f.threads.get(i),
        }
    }

    pub fn user_name(&self, uid: u32) -> String {
        self.users
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string())
    }

    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.cpu_node.get(cpu as usize).copied().flatten()
    }

    // ---------------------------------------------------------------- events

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
        if k.modifiers.contains(KeyModifiers::CONTROL)
            && matches!(k.code, KeyCode::Char('c') | KeyCode::Char('C'))
        {
            return Action::Quit;
        }
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => self.key_normal(k),
            Mode::Help => {
                // Any key closes help; `q` closes it rather than quitting, as in htop.
                Action::None
            }
            Mode::Filter(buf) => {
                self.key_filter(k, buf);
                Action::None
            }
            Mode::Delay(buf) => self.key_delay(k, buf),
            Mode::Goto(buf) => self.key_goto(k, buf),
            Mode::SortPicker(i) => {
                self.key_picker(k, i);
                Action::None
            }
        }
    }

    fn key_normal(&mut self, k: KeyEvent) -> Action {
        self.message = None;
        let view = self.view;
        match k.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') | KeyCode::F(1) => self.mode = Mode::Help,
            KeyCode::Tab => self.set_view(View::ALL[(view.index() + 1) % 5]),
            KeyCode::BackTab => self.set_view(View::ALL[(view.index() + 4) % 5]),
            KeyCode::Char(c @ '1'..='5') => {
                self.set_view(View::ALL[(c as u8 - b'1') as usize]);
            }
            KeyCode::Char('p') | KeyCode::Char(' ') => return self.toggle_pause(),
            KeyCode::Char('d') => self.mode = Mode::Delay(String::new()),
            KeyCode::Char('T') if self.replay.is_some() => self.mode = Mode::Goto(String::new()),
            KeyCode::Up | KeyCode::Char('k') => self.move_by(view, -1),
            KeyCode::Down | KeyCode::Char('j') => self.move_by(view, 1),
            KeyCode::PageUp => self.move_by(view, -(self.viewport(view) as isize)),
            KeyCode::PageDown => self.move_by(view, self.viewport(view) as isize),
            KeyCode::Home | KeyCode::Char('g') => self.move_to(view, 0),
            KeyCode::End | KeyCode::Char('G') => self.move_to(view, usize::MAX),
            KeyCode::Char('[') => return self.seek_by(-1),
            KeyCode::Char(']') => return self.seek_by(1),
            KeyCode::Char('{') => return self.seek_by(-(REPLAY_JUMP as isize)),
            KeyCode::Char('}') => return self.seek_by(REPLAY_JUMP as isize),
            KeyCode::Char('H') => {
                self.threads = !self.threads;
                self.rebuild();
                return self.thread_rows();
            }
            KeyCode::Char('t') => {
                self.tree = !self.tree;
                self.rebuild();
                return self.thread_rows();
            }
            KeyCode::Char('c') if view == View::Processes => self.toggle_group(),
            KeyCode::Enter | KeyCode::Right | KeyCode::Left
                if view == View::Processes && self.group_cgroup =>
            {
                self.expand(k.code);
            }
            KeyCode::Char('<') => self.shift_sort(-1),
            KeyCode::Char('>') => self.shift_sort(1),
            KeyCode::Char('R') => {
                self.sort.descending = !self.sort.descending;
                self.rebuild();
            }
            KeyCode::Char('F') | KeyCode::Char('s') => {
                self.mode = Mode::SortPicker(self.sort.column.pos());
            }
            KeyCode::Char('/') => self.mode = Mode::Filter(self.filter.clone()),
            KeyCode::Char('f') => self.toggle_follow(),
            KeyCode::Esc => {
                self.filter.clear();
                self.follow = None;
                self.rebuild();
            }
            _ => {}
        }
        Action::None
    }

    fn key_filter(&mut self, k: KeyEvent, mut buf: String) {
        match k.code {
            KeyCode::Enter => {
                self.filter = buf.trim().to_string();
                self.rebuild();
                self.move_to(View::Processes, 0);
            }
            KeyCode::Esc => {}
            KeyCode::Backspace => {
                buf.pop();
                self.mode = Mode::Filter(buf);
            }
            KeyCode::Char(c) if !c.is_control() => {
                buf.push(c);
                self.mode = Mode::Filter(buf);
            }
            _ => self.mode = Mode::Filter(buf),
        }
    }

    fn key_delay(&mut self, k: KeyEvent, mut buf: String) -> Action {
        match k.code {
            KeyCode::Enter => {
                let s = buf.trim();
                if s.is_empty() {
                    return Action::None;
                }
                match s.parse::<f64>() {
                    Ok(v) if (0.05..=3600.0).contains(&v) => {
                        self.delay = v;
                        self.message = Some(format!("delay set to {v} s"));
                        return Action::SetDelay(v);
                    }
                    _ => {
                        self.message =
                            Some(format!("'{s}' is not a delay (seconds, 0.05 to 3600)"));
                    }
                }
            }
            KeyCode::Esc => {}
            KeyCode::Backspace => {
                buf.pop();
                self.mode = Mode::Delay(buf);
            }
            KeyCode::Char(c) if c.is_ascii_digit() || c == '.' => {
                buf.push(c);
                self.mode = Mode::Delay(buf);
            }
            _ => self.mode = Mode::Delay(buf),
        }
        Action::None
    }

    fn key_goto(&mut self, k: KeyEvent, mut buf: String) -> Action {
        match k.code {
            KeyCode::Enter => {
                let now = self.frame.as_ref().map_or(0, |f| f.unix_ms);
                match parse_goto(buf.trim(), now) {
                    Ok(t) => return Action::SeekTime(t),
                    Err(e) => self.message = Some(e),
                }
            }
            KeyCode::Esc => {}
            KeyCode::Backspace => {
                buf.pop();
                self.mode = Mode::Goto(buf);
            }
            KeyCode::Char(c) if c.is_ascii_alphanumeric() || ":+-.".contains(c) => {
                buf.push(c);
                self.mode = Mode::Goto(buf);
            }
            _ => self.mode = Mode::Goto(buf),
        }
        Action::None
    }

    fn key_picker(&mut self, k: KeyEvent, i: usize) {
        let n = Column::ALL.len();
        match k.code {
            KeyCode::Up | KeyCode::Char('k') => self.mode = Mode::SortPicker(i.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => self.mode = Mode::SortPicker((i + 1).min(n - 1)),
            KeyCode::Home => self.mode = Mode::SortPicker(0),
            KeyCode::End => self.mode = Mode::SortPicker(n - 1),
            KeyCode::Enter | KeyCode::Char('s') | KeyCode::Char('F') => {
                self.set_sort(Column::ALL[i.min(n - 1)]);
            }
            KeyCode::Esc | KeyCode::Char('q') => {}
            _ => self.mode = Mode::SortPicker(i),
        }
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
                if m.row == 1 {
                    if let Some(v) = tab_at(m.column) {
                        self.set_view(v);
                    }
                    return;
                }
                let top = CHROME_TOP + u16::from(view.has_table_header());
                let bottom = self.height.saturating_sub(CHROME_BOTTOM);
                if m.row >= top && m.row < bottom && !Self::scrolls_only(view) {
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

    fn set_view(&mut self, v: View) {
        self.view = v;
        self.clamp(v);
    }

    /// Thread rows are collected only while a view needs them.
    fn thread_rows(&self) -> Action {
        if self.replay.is_some() {
            Action::None
        } else {
            Action::ThreadRows(self.threads || self.tree)
        }
    }

    fn toggle_pause(&mut self) -> Action {
        if let Some(r) = self.replay.as_mut() {
            // At the end, play restarts from the beginning.
            r.playing = !r.playing;
            if r.playing && r.index + 1 >= r.len {
                return Action::Seek(0);
            }
            return Action::None;
        }
        self.paused = !self.paused;
        if !self.paused {
            if let Some(f) = self.pending.take() {
                self.show_frame(f);
            }
        }
        Action::None
    }

    fn seek_by(&mut self, d: isize) -> Action {
        let Some(r) = self.replay else {
            self.message = Some("[ ] { } step through a recording (--replay)".into());
            return Action::None;
        };
        let last = r.len.saturating_sub(1);
        let to = (r.index as isize + d).clamp(0, last as isize) as usize;
        if to == r.index {
            return Action::None;
        }
        Action::Seek(to)
    }

    /// Replay: the loop loaded sample `index` of `len` into the app.
    pub fn set_replay(&mut self, index: usize, len: usize, playing: bool) {
        self.replay = Some(ReplayPos {
            index,
            len,
            playing,
        });
    }

    fn shift_sort(&mut self, d: isize) {
        let n = Column::ALL.len() as isize;
        let i = (self.sort.column.pos() as isize + d).clamp(0, n - 1) as usize;
        self.set_sort(Column::ALL[i]);
    }

    fn set_sort(&mut self, c: Column) {
        if self.sort.column != c {
            self.sort = SortKey {
                column: c,
                descending: c.default_descending(),
            };
        }
        self.rebuild();
    }

    /// `c`: the Processes view grouped by cgroup, or back.
    fn toggle_group(&mut self) {
        self.group_cgroup = !self.group_cgroup;
        self.pos[View::Processes.index()] = ListPos::default();
        self.rebuild();
    }

    /// Enter toggles the group under the cursor, → expands, ← collapses
    /// (also from one of its processes, which moves the cursor to it).
    fn expand(&mut self, key: KeyCode) {
        use super::containers_view::{CgRow, group_id};
        let pi = View::Processes.index();
        let Some(&row) = self.cg_rows.get(self.pos[pi].selected) else {
            return;
        };
        let Some(id) = group_id(self.frame.as_ref(), row) else {
            return;
        };
        let open = self.expanded.contains(&id);
        match (key, open) {
            (KeyCode::Right, _) | (KeyCode::Enter, false) => {
                self.expanded.insert(id);
            }
            _ => {
                self.expanded.remove(&id);
            }
        }
        self.rebuild();
        let f = self.frame.as_ref();
        if let Some(i) = self
            .cg_rows
            .iter()
            .position(|r| matches!(r, CgRow::Group(_)) && group_id(f, *r) == Some(id))
        {
            self.pos[pi].selected = i;
            self.clamp(View::Processes);
        }
    }

    fn toggle_follow(&mut self) {
        if self.follow.is_some() {
            self.follow = None;
            return;
        }
        if let Some(pid) = self.selected_task().map(|t| t.pid) {
            self.follow = Some(pid);
            self.message = Some(format!("following PID {pid} (f or Esc to stop)"));
        }
        self.rebuild();
    }

    fn move_by(&mut self, view: View, d: isize) {
        let p = &mut self.pos[view.index()];
        if Self::scrolls_only(view) {
            p.offset = (p.offset as isize + d).max(0) as usize;
        } else {
            p.selected = (p.selected as isize + d).max(0) as usize;
        }
        if view == View::Processes {
            self.follow = None;
        }
        self.clamp(view);
    }

    fn move_to(&mut self, view: View, i: usize) {
        let p = &mut self.pos[view.index()];
        if Self::scrolls_only(view) {
            p.offset = i;
        } else {
            p.selected = i;
        }
        if view == View::Processes {
            self.follow = None;
        }
        self.clamp(view);
    }

    /// Keeps selection inside the list and the offset such that it is visible.
    fn clamp(&mut self, view: View) {
        let len = self.len(view);
        let vp = self.viewport(view);
        let p = &mut self.pos[view.index()];
        if Self::scrolls_only(view) {
            p.offset = p.offset.min(len.saturating_sub(vp));
            p.selected = 0;
            return;
        }
        p.selected = p.selected.min(len.saturating_sub(1));
        if p.selected < p.offset {
            p.offset = p.selected;
        }
        if p.selected >= p.offset + vp {
            p.offset = p.selected + 1 - vp;
        }
        p.offset = p.offset.min(len.saturating_sub(vp));
    }

    // --------------------------------------------------------------- derived

    /// Recomputes everything derived from the frame and the settings.
    pub fn rebuild(&mut self) {
        let keep = self.selected_task().map(|t| (t.pid, t.tid, t.is_process));
        self.derive_cpu_data();
        self.rows = self.build_rows();
        self.dev_rows = self.build_dev_rows();
        self.cg_rows = super::containers_view::build_rows(
            self.frame.as_ref(),
            &self.expanded,
            self.sort.descending,
            &self.filter,
        );
        self.topo_lines = match &self.extras.topology {
            Some(lines) => lines.clone(),
            None => self.fallback_topology(),
        };
        self.pin_lines = match &self.extras.pinning {
            Some(lines) => lines.clone(),
            None => vec![
                (LineKind::Note, "Pinning findings appear here once the topology is loaded (the lint of `nettop --pinning-check`, refreshed live).".into()),
            ],
        };
        // Keep the cursor on the same task across re-sorts and new frames.
        let pi = View::Processes.index();
        let want = match self.follow {
            Some(pid) => self.rows.iter().position(|r| {
                self.task(r.src)
                    .is_some_and(|t| t.pid == pid && (t.is_process || t.tid == pid))
            }),
            None => keep.and_then(|(pid, tid, isp)| {
                self.rows.iter().position(|r| {
                    self.task(r.src)
                        .is_some_and(|t| t.pid == pid && t.tid == tid && t.is_process == isp)
                })
            }),
        };
        if let Some(i) = want {
            self.pos[pi].selected = i;
        }
        for v in View::ALL {
            self.clamp(v);
        }
    }

    fn derive_cpu_data(&mut self) {
        self.cpu_node.clear();
        self.victims.clear();
        let Some(f) = &self.frame else { return };
        let max = f.cpus.iter().map(|c| c.cpu + 1).max().unwrap_or(0) as usize;
        self.cpu_node = vec![None; max];
        for c in &f.cpus {
            self.cpu_node[c.cpu as usize] = c.node;
        }
        let mut by_cpu: Vec<Vec<(String, f64)>> = vec![Vec::new(); max];
        let tasks = if f.threads.is_empty() {
            &f.processes
        } else {
            &f.threads
        };
        for t in tasks {
            if t.stolen_pct >= 1.0 {
                if let Some(v) = by_cpu.get_mut(t.last_cpu as usize) {
                    v.push((t.comm.clone(), t.stolen_pct));
                }
            }
        }
        for v in &mut by_cpu {
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(3);
        }
        self.victims = by_cpu;
    }

    fn matches(&self, t: &TaskView) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        let f = self.filter.to_lowercase();
        if let Ok(pid) = f.parse::<u32>() {
            if t.pid == pid || t.tid == pid {
                return true;
            }
        }
        t.comm.to_lowercase().contains(&f)
            || self
                .users
                .get(&t.uid)
                .is_some_and(|u| u.to_lowercase().contains(&f))
    }

    fn compare(&self, a: &TaskView, b: &TaskView) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let num = |f: fn(&TaskView) -> f64| f(a).total_cmp(&f(b));
        let ord = match self.sort.column {
            Column::Pid => a.pid.cmp(&b.pid).then(a.tid.cmp(&b.tid)),
            Column::User => self.user_name(a.uid).cmp(&self.user_name(b.uid)),
            Column::Command => a.comm.cmp(&b.comm),
            Column::Top => num(|t| t.top_pct),
            Column::True => num(|t| t.true_pct),
            Column::Gap => num(|t| t.top_pct - t.true_pct),
            Column::Stolen => num(|t| t.stolen_pct),
            Column::Hidden => num(|t| t.hidden_pct),
            Column::Hardirq => num(hi_pct),
            Column::Softirq => num(si_pct),
            Column::NetRx => num(net_rx_pct),
            Column::Inline => num(|t| t.inline_pct),
            Column::Cpu => a.last_cpu.cmp(&b.last_cpu),
            Column::Affinity => a.affinity.cmp(&b.affinity),
            Column::Node => self.node_of(a.last_cpu).cmp(&self.node_of(b.last_cpu)),
        };
        let ord = if self.sort.descending {
            ord.reverse()
        } else {
            ord
        };
        // Ties by PID/TID ascending, whatever the direction: stable screens.
        match ord {
            Ordering::Equal => a.pid.cmp(&b.pid).then(a.tid.cmp(&b.tid)),
            o => o,
        }
    }

    fn build_rows(&self) -> Vec<TaskRow> {
        let Some(f) = &self.frame else {
            return Vec::new();
        };
        if !self.tree {
            let (list, mk): (&[TaskView], fn(usize) -> Src) = if self.threads {
                (&f.threads, Src::Thread)
            } else {
                (&f.processes, Src::Proc)
            };
            let mut idx: Vec<usize> = (0..list.len())
                .filter(|&i| self.matches(&list[i]))
                .collect();
            idx.sort_by(|&a, &b| self.compare(&list[a], &list[b]));
            return idx
                .into_iter()
                .map(|i| TaskRow {
                    src: mk(i),
                    depth: 0,
                    last: false,
                })
                .collect();
        }
        // Tree: each process, then its threads (the Frame has no parent PIDs,
        // so the tree is process → threads).
        let mut threads_of: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, t) in f.threads.iter().enumerate() {
            threads_of.entry(t.pid).or_default().push(i);
        }
        let mut procs: Vec<usize> = (0..f.processes.len())
            .filter(|&i| {
                let p = &f.processes[i];
                self.matches(p)
                    || threads_of
                        .get(&p.pid)
                        .is_some_and(|ts| ts.iter().any(|&j| self.matches(&f.threads[j])))
            })
            .collect();
        procs.sort_by(|&a, &b| self.compare(&f.processes[a], &f.processes[b]));
        let mut rows = Vec::with_capacity(procs.len() + f.threads.len());
        for p in procs {
            rows.push(TaskRow {
                src: Src::Proc(p),
                depth: 0,
                last: false,
            });
            if let Some(ts) = threads_of.get_mut(&f.processes[p].pid) {
                if ts.len() < 2 {
                    continue;
                }
                ts.sort_by(|&a, &b| self.compare(&f.threads[a], &f.threads[b]));
                let n = ts.len();
                for (k, &j) in ts.iter().enumerate() {
                    rows.push(TaskRow {
                        src: Src::Thread(j),
                        depth: 1,
                        last: k + 1 == n,
                    });
                }
            }
        }
        rows
    }

    fn build_dev_rows(&self) -> Vec<DevRow> {
        let Some(f) = &self.frame else {
            return Vec::new();
        };
        let mut names: BTreeMap<&str, Option<usize>> = BTreeMap::new();
        for (i, d) in f.devices.iter().enumerate() {
            names.insert(&d.name, Some(i));
        }
        for n in &f.napi {
            names.entry(&n.dev).or_insert(None);
        }
        let mut rows = Vec::new();
        for (name, idx) in names {
            rows.push(DevRow::Device(name.to_string(), idx));
            let mut napis: Vec<usize> = (0..f.napi.len())
                .filter(|&i| f.napi[i].dev == name)
                .collect();
            napis.sort_by_key(|&i| f.napi[i].napi_id);
            rows.extend(napis.into_iter().map(DevRow::Napi));
        }
        rows
    }

    /// What the Frame alone says about placement, until hwloc data is wired.
    fn fallback_topology(&self) -> Vec<(LineKind, String)> {
        let mut out = vec![(
            LineKind::Note,
            "hwloc topology (caches, cores, NIC locality, queue IRQs) is not available yet; showing NUMA placement from the model.".to_string(),
        )];
        let Some(f) = &self.frame else {
            return out;
        };
        let mut nodes: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
        for c in &f.cpus {
            nodes.entry(c.node).or_default().push(c.cpu);
        }
        let all: Vec<u32> = f.cpus.iter().map(|c| c.cpu).collect();
        let all_list = crate::cpuset::CpuSet::from_cpus(all.iter().copied()).to_list();
        let tasks = if f.threads.is_empty() {
            &f.processes
        } else {
            &f.threads
        };
        // Parse each narrowly pinned task's affinity once, not once per CPU.
        let mut pinned_on: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for t in tasks
            .iter()
            .filter(|t| !t.kthread && t.affinity != all_list)
        {
            if let Ok(set) = crate::cpuset::CpuSet::parse_list(&t.affinity) {
                if set.len() <= 4 {
                    for c in set.iter() {
                        pinned_on
                            .entry(c)
                            .or_default()
                            .push(format!("{}({})", t.comm, t.tid));
                    }
                }
            }
        }
        for (node, cpus) in nodes {
            let name = node.map_or("node ?".to_string(), |n| format!("NUMA node {n}"));
            let list = crate::cpuset::CpuSet::from_cpus(cpus.iter().copied()).to_list();
            out.push((LineKind::Heading, format!("{name}: CPUs {list}")));
            for c in cpus {
                let mut polled: Vec<String> = f
                    .napi
                    .iter()
                    .filter(|n| n.cpus.contains(&c) && n.polls_per_s > 0.0)
                    .map(|n| format!("{}#{}", n.dev, n.napi_id))
                    .collect();
                polled.dedup();
                let mut pinned = pinned_on.remove(&c).unwrap_or_default();
                pinned.sort();
                if polled.is_empty() && pinned.is_empty() {
                    continue;
                }
                let mut s = format!("  CPU {c:>3}");
                if !polled.is_empty() {
                    s.push_str(&format!("  napi: {}", polled.join(" ")));
                }
                if !pinned.is_empty() {
                    s.push_str(&format!("  pinned here: {}", pinned.join(" ")));
                }
                let kind = if polled.is_empty() || pinned.is_empty() {
                    LineKind::Normal
                } else {
                    // A pinned task sharing its CPU with NET_RX is the classic victim.
                    LineKind::Warn
                };
                out.push((kind, s));
            }
        }
        out
    }
}

/// Tab labels as drawn on the tab line, with their x ranges (for the mouse).
pub fn tab_spans() -> Vec<(View, String, u16, u16)> {
    let mut x = 0u16;
    View::ALL
        .iter()
        .map(|v| {
            let label = format!(" {} {} ", v.index() + 1, v.title());
            let w = label.chars().count() as u16;
            let span = (*v, label, x, x + w);
            x += w + 1;
            span
        })
        .collect()
}

fn tab_at(x: u16) -> Option<View> {
    tab_spans()
        .into_iter()
        .find(|(_, _, a, b)| x >= *a && x < *b)
        .map(|(v, ..)| v)
}

/// Every key, for the help overlay (a test checks each one is handled).
pub const KEYS: &[(&str, &str)] = &[
    ("Tab / Shift-Tab", "next / previous view"),
    (
        "1 2 3 4 5",
        "Processes, CPUs, Devices/NAPI, Topology, Pinning",
    ),
    ("Up Down / j k", "move selection (scroll in text views)"),
    ("PgUp PgDn", "move one page"),
    ("Home End / g G", "first / last row"),
    ("mouse", "click selects a row or a tab; wheel scrolls"),
    ("H", "threads on/off (as in top)"),
    ("t", "tree: threads under their process"),
    (
        "c, Enter → ←",
        "group by cgroup (pod, container, service); expand",
    ),
    ("< >", "sort by the column left / right"),
    ("F or s", "sort column picker"),
    ("R", "reverse sort order"),
    ("/", "filter by command, user or PID (Enter applies)"),
    ("f", "follow the selected PID"),
    ("Esc", "clear filter and follow"),
    ("p or Space", "pause / resume (replay: play / pause)"),
    ("d", "set delay in seconds"),
    ("[ ]", "replay: previous / next sample"),
    ("{ }", "replay: jump 10 samples"),
    ("T", "replay: go to a time (14:05 UTC, +30s, -10m)"),
    ("?", "this help (any key closes)"),
    ("q / Ctrl-C", "quit (nettop never kills anything)"),
];

/// Farther than any recording reaches; longer offsets are typos.
const GOTO_MAX: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 86_400);

/// A replay jump target: `HH:MM[:SS]` (UTC, as the header shows times) on
/// the day of the frame on screen, or an offset from it in the one duration
/// syntax ([`crate::units`]): `+90s`, `-10m`, `+1h30m` (a bare number is
/// seconds). Returns unix milliseconds.
pub fn parse_goto(s: &str, now_unix_ms: u64) -> Result<u64, String> {
    let bad = || format!("'{s}': go to HH:MM[:SS] (UTC) or an offset like +30s, -10m, +1h");
    if s.is_empty() {
        return Err(bad());
    }
    if s.starts_with(['+', '-']) {
        let (fwd, d) = crate::units::parse_offset("T", s, GOTO_MAX)
            .map_err(|e| format!("{e}; or HH:MM[:SS] (UTC)"))?;
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        return Ok(if fwd {
            now_unix_ms.saturating_add(ms)
        } else {
            now_unix_ms.saturating_sub(ms)
        });
    }
    let parts: Vec<&str> = s.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(bad());
    }
    let mut v = [0u64; 3];
    for (slot, p) in v.iter_mut().zip(&parts) {
        *slot = p.parse().map_err(|_| bad())?;
    }
    let [h, m, sec] = v;
    if h > 23 || m > 59 || sec > 59 {
        return Err(bad());
    }
    let day = now_unix_ms / 86_400_000 * 86_400_000;
    Ok(day + (h * 3600 + m * 60 + sec) * 1000)
}
