//! The TUI's state machine: Frames and input events in, state out.
//!
//! It knows nothing about terminals or threads, so every key can be tested
//! as `event → state`, and live and replay feed it the same way. Everything
//! the renderer needs that costs more than formatting a visible row (sorting
//! 5,000 tasks, grouping threads, victims per CPU) is computed here when a
//! Frame or a setting changes, never per draw: [`App::rebuild`] asks each
//! view's file in [`super::rows`] for its rows. Input is turned into state changes
//! by [`super::keymap`] (view keys, mouse) and [`super::prompt`] (prompts).

use std::collections::{BTreeMap, HashMap};

use super::history::History;
use super::meters::{self, MeterConfig};
use super::rows::cgroups::{self, CgRow};
use super::rows::cpus::CpuRows;
use super::rows::detail::{self, Facts, Pane};
use super::rows::devices;
use super::rows::pinning::{self, PlanRun};
use super::rows::processes::{self, SortKey, Src, TaskRow};
use super::rows::{LineKind, View, topology};
use crate::model::devconf::DeviceConfigs;
use crate::model::frame::{Frame, TaskView};
use crate::output::columns::{self, ProcColumn, RowCtx};

/// Screen rows below the body (status); above it are the header meters,
/// the tabs and the view's title line ([`App::chrome_top`]).
pub const CHROME_BOTTOM: u16 = 1;
/// Smallest terminal the TUI draws into; below it shows a note.
pub const MIN_WIDTH: u16 = 30;
pub const MIN_HEIGHT: u16 = 7;

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
    /// The help overlay, scrolled down this many lines (a short terminal
    /// cannot show all of it).
    Help(u16),
    Filter(String),
    Delay(String),
    /// Replay: time to jump to, as typed.
    Goto(String),
    /// The fields screen ([`super::fields`]): the highlighted line, and
    /// whether its column is being moved.
    Fields {
        at: usize,
        moving: bool,
    },
    /// `P`: this plan waits for y/n ([`super::plan`]).
    ConfirmPlan(Box<crate::plan::Plan>),
    /// `k`: the signal chooser for this task, on this line of
    /// [`crate::sys::control::SIGNALS`] ([`super::control`]).
    Signal {
        target: Box<crate::sys::control::Target>,
        at: usize,
    },
    /// `r`: the new nice value as typed; the task's nice now, if known.
    Renice {
        target: Box<crate::sys::control::Target>,
        now: Option<i32>,
        buf: String,
    },
    /// `a`: the CPU picker: the CPUs ticked, the highlighted line.
    Affinity {
        target: Box<crate::sys::control::Target>,
        cpus: crate::sys::cpuset::CpuSet,
        at: usize,
    },
    /// `u`: the user picker, on this line ([`App::user_choices`]).
    Users(usize),
    /// `k`, `r` or `a` waits for y/n.
    Confirm(Box<super::asked::Control>),
}

/// What the run loop must do after an event.
#[derive(Clone, Debug, PartialEq)]
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
    /// `W`: write these settings to the configuration file (as top's `W`).
    SaveSettings(Box<super::settings::Settings>),
    /// `P`, confirmed: apply this plan, measured before and after.
    ApplyPlan(Box<crate::plan::Plan>),
    /// `P` brought the plan into view: check the host again now.
    Recheck,
    /// `k`, `r` or `a`, confirmed: act on the task; the answer goes to
    /// [`App::control_done`].
    Control(Box<super::asked::Control>),
}

/// Replay position; `None` in live mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayPos {
    pub index: usize,
    pub len: usize,
    pub playing: bool,
}

pub use super::style::{Scheme, Theme};

pub use super::settings::Options;

/// Extra panes that come from other modules (topology, pinning), already
/// turned into text lines outside the render thread.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub topology: Option<Vec<(LineKind, String)>>,
    pub pinning: Option<Vec<(LineKind, String)>>,
    /// Each device's configuration from the topology (XDP attachment,
    /// RPS steering, queue IRQs and where they land), which the App joins
    /// to every frame as batch does ([`Frame::attach_configs`]).
    pub devices: Option<DeviceConfigs>,
    /// The plan shown under the findings, which `P` applies.
    pub plan: Option<Box<crate::plan::Plan>>,
    /// Per CPU, the queue IRQs and RPS steering that land there
    /// ([`super::rows::devices::cpu_interrupts`]), for `a`'s picker.
    pub cpu_interrupts: Option<BTreeMap<u32, Vec<String>>>,
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
    /// `V`: processes under their parents (top's forest view).
    pub forest: bool,
    /// Tasks that used no CPU in the frame are listed; top's `i` hides
    /// them, so the busy few are not lost among hundreds of sleepers.
    pub idle: bool,
    /// The Processes view's columns in order, COMMAND not among them (it
    /// is always last and takes the rest of the line).
    pub columns: Vec<ProcColumn>,
    /// The detail pane (`Enter`) shows this PID; `Esc` closes it.
    pub detail: Option<u32>,
    pub sort: SortKey,
    pub filter: String,
    /// `u`: only this user's tasks.
    pub user: Option<u32>,
    /// `K`: kernel threads left out (htop's).
    pub hide_kthreads: bool,
    /// `-p`: the PIDs the collector was restricted to (shown in the title,
    /// and named when they have all exited).
    pub pids: Vec<u32>,
    /// `--read-only`: `k`, `r`, `a` and `P`'s apply are off.
    pub read_only: bool,
    /// Affinities set with `a`, with STOLEN% before and after.
    pub affinity_changes: Vec<super::asked::AffinityChange>,
    /// `f`: the PID the cursor stays on while rows re-sort. Without it the
    /// cursor keeps its row ([`App::rebuild`]).
    pub follow: Option<u32>,
    pub paused: bool,
    pub delay: f64,
    pub replay: Option<ReplayPos>,
    /// One-line note in the status bar (e.g. a rejected delay).
    pub message: Option<String>,
    pub pos: [ListPos; 5],
    pub width: u16,
    pub height: u16,
    /// Sparkline rings per CPU and task ([`super::history`]).
    pub history: History,
    /// The topology thread's facts for the detail pane, and the pane.
    pub facts: Facts,
    pub pane: Option<Pane>,
    // Derived from the frame and settings by `rebuild`.
    pub rows: Vec<TaskRow>,
    pub dev_rows: Vec<crate::output::devices::DevLine>,
    /// NUMA node and victims by CPU number.
    pub cpu_rows: CpuRows,
    pub topo_lines: Vec<(LineKind, String)>,
    pub pin_lines: Vec<(LineKind, String)>,
    /// An apply from `P`: shown above the findings.
    pub plan_run: PlanRun,
    pub plan_measure_s: f64,
    /// COMMAND shows full command lines (`c`, as in top).
    pub cmdline: bool,
    /// Processes grouped by cgroup (`C`), with these groups expanded.
    pub group_cgroup: bool,
    pub expanded: std::collections::HashSet<u64>,
    pub cg_rows: Vec<CgRow>,
    /// The header meters shown and their layout (`m`, `W`).
    pub meters: MeterConfig,
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
            cmdline: opts.cmdline,
            tree: false,
            forest: opts.forest,
            idle: !opts.hide_idle,
            columns: ProcColumn::default_visible(),
            detail: None,
            sort: SortKey {
                column: ProcColumn::Top,
                descending: true,
            },
            filter: String::new(),
            user: None,
            hide_kthreads: false,
            pids: opts.pids.clone(),
            read_only: opts.read_only,
            affinity_changes: Vec::new(),
            follow: None,
            paused: false,
            delay: opts.delay,
            replay: None,
            message: None,
            pos: [ListPos::default(); 5],
            width: opts.width,
            height: opts.height,
            history: History::default(),
            facts: Facts::default(),
            pane: None,
            rows: Vec::new(),
            dev_rows: Vec::new(),
            cpu_rows: CpuRows::default(),
            topo_lines: Vec::new(),
            pin_lines: Vec::new(),
            plan_run: PlanRun::default(),
            plan_measure_s: opts.plan_measure_s,
            group_cgroup: false,
            expanded: std::collections::HashSet::new(),
            cg_rows: Vec::new(),
            meters: MeterConfig::default(),
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
        if let Some(c) = &self.extras.devices {
            for f in [&mut self.frame, &mut self.pending].into_iter().flatten() {
                f.attach_configs(c);
            }
        }
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
    pub fn show_frame(&mut self, mut frame: Frame) {
        if let Some(c) = &self.extras.devices {
            frame.attach_configs(c);
        }
        self.history.push(&frame);
        self.frame = Some(frame);
        self.track_affinity();
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

    /// Lines the header meters take at the current size.
    pub fn header_rows(&self) -> u16 {
        meters::height(&self.meters, self.frame.as_ref(), self.width, self.height)
    }

    /// Screen rows above the body: the header meters, the tabs and the
    /// view's title line.
    pub fn chrome_top(&self) -> u16 {
        self.header_rows() + 2
    }

    /// Rows of list content visible in `view` at the current size.
    pub fn viewport(&self, view: View) -> usize {
        let header = u16::from(view.has_table_header());
        self.height
            .saturating_sub(self.chrome_top() + CHROME_BOTTOM + header)
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

    /// The task under the cursor in the Processes view.
    pub fn selected_task(&self) -> Option<&TaskView> {
        if self.group_cgroup {
            return None;
        }
        let row = self.rows.get(self.pos[View::Processes.index()].selected)?;
        self.task(row.src)
    }

    /// The row of the followed PID: its process row, or in the thread
    /// list its main thread.
    fn followed_row(&self, pid: u32) -> Option<usize> {
        self.rows.iter().position(|r| {
            self.task(r.src)
                .is_some_and(|t| t.pid == pid && (t.is_process || t.tid == pid))
        })
    }

    pub fn task(&self, src: Src) -> Option<&TaskView> {
        let f = self.frame.as_ref()?;
        match src {
            Src::Proc(i) => f.processes.get(i),
            Src::Thread(i) => f.threads.get(i),
        }
    }

    /// What the shared column table needs from the App to print or sort a row.
    pub(crate) fn row_ctx(&self) -> RowCtx<'_> {
        RowCtx {
            users: &self.users,
            cpu_node: &self.cpu_rows.node,
            traced: self.frame.as_ref().is_none_or(columns::traced),
            cmdline: self.cmdline,
        }
    }

    pub(crate) fn set_view(&mut self, v: View) {
        self.view = v;
        self.clamp(v);
    }

    /// Thread rows are collected only while a view or the detail pane
    /// needs them.
    pub(crate) fn thread_rows(&self) -> Action {
        if self.replay.is_some() {
            Action::None
        } else {
            Action::ThreadRows(self.threads || self.tree || self.detail.is_some())
        }
    }

    pub(crate) fn toggle_pause(&mut self) -> Action {
        if let Some(r) = self.replay.as_mut() {
            // At the end, play restarts from the beginning.
            r.playing = !r.playing;
            if r.playing && r.index + 1 >= r.len {
                return Action::Seek(0);
            }
            return Action::None;
        }
        self.paused = !self.paused;
        if !self.paused
            && let Some(f) = self.pending.take()
        {
            self.show_frame(f);
        }
        Action::None
    }

    pub(crate) fn seek_by(&mut self, d: isize) -> Action {
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

    /// `<`/`>`: the sort moves to the shown column left or right (top's),
    /// COMMAND being the last.
    pub(crate) fn shift_sort(&mut self, d: isize) {
        let shown: Vec<ProcColumn> = self
            .columns
            .iter()
            .copied()
            .chain([ProcColumn::Command])
            .collect();
        let n = shown.len() as isize;
        let Some(now) = shown.iter().position(|c| *c == self.sort.column) else {
            // Sorted by a hidden column: the first step lands on the edge.
            let edge = if d < 0 { 0 } else { shown.len() - 1 };
            self.set_sort(shown[edge]);
            return;
        };
        let i = (now as isize + d).clamp(0, n - 1) as usize;
        self.set_sort(shown[i]);
    }

    pub(crate) fn set_sort(&mut self, c: ProcColumn) {
        if self.sort.column != c {
            self.sort = SortKey {
                column: c,
                descending: c.default_descending(),
            };
        }
        self.rebuild();
    }

    /// `Enter`: the detail pane of the process under the cursor.
    pub(crate) fn open_detail(&mut self) {
        self.detail = self.selected_task().map(|t| t.pid);
        self.pane = detail::pane(self.detail, self.frame.as_ref(), &self.facts, None);
    }

    /// `C`: the Processes view grouped by cgroup, or back.
    pub(crate) fn toggle_group(&mut self) {
        self.group_cgroup = !self.group_cgroup;
        self.pos[View::Processes.index()] = ListPos::default();
        self.rebuild();
    }

    /// Opens (`Some(true)`), closes (`Some(false)`) or toggles (`None`) the
    /// group under the cursor, also from one of its processes, and keeps
    /// the cursor on the group.
    pub(crate) fn expand(&mut self, open: Option<bool>) {
        let pi = View::Processes.index();
        let Some(&row) = self.cg_rows.get(self.pos[pi].selected) else {
            return;
        };
        let Some(id) = cgroups::group_id(self.frame.as_ref(), row) else {
            return;
        };
        if open.unwrap_or(!self.expanded.contains(&id)) {
            self.expanded.insert(id);
        } else {
            self.expanded.remove(&id);
        }
        self.rebuild();
        let f = self.frame.as_ref();
        if let Some(i) = self
            .cg_rows
            .iter()
            .position(|r| matches!(r, CgRow::Group(_)) && cgroups::group_id(f, *r) == Some(id))
        {
            self.pos[pi].selected = i;
            self.clamp(View::Processes);
        }
    }

    pub(crate) fn toggle_follow(&mut self) {
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

    pub(crate) fn move_by(&mut self, view: View, d: isize) {
        let p = &mut self.pos[view.index()];
        if view.scrolls_only() {
            p.offset = (p.offset as isize + d).max(0) as usize;
        } else {
            p.selected = (p.selected as isize + d).max(0) as usize;
        }
        if view == View::Processes {
            self.follow = None;
        }
        self.clamp(view);
    }

    pub(crate) fn move_to(&mut self, view: View, i: usize) {
        let p = &mut self.pos[view.index()];
        if view.scrolls_only() {
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
        if view.scrolls_only() {
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
    ///
    /// The cursor keeps its row, not its task, as in htop: rows re-sort
    /// every frame, and a cursor riding along with one task would drift
    /// down to the idle end of the list while the busiest tasks scroll off
    /// screen. Only `f` ties it to a task. A cursor on the last row stays
    /// on the last row as the list grows or shrinks (htop does the same),
    /// so `End` keeps showing the tail.
    pub fn rebuild(&mut self) {
        let pi = View::Processes.index();
        let was_last = {
            let selected = self.pos[pi].selected;
            selected > 0 && selected + 1 == self.len(View::Processes)
        };
        self.cpu_rows = CpuRows::build(self.frame.as_ref());
        self.rows = processes::rows(&processes::Query {
            frame: self.frame.as_ref(),
            filter: &self.filter,
            user: self.user,
            kthreads: !self.hide_kthreads,
            sort: self.sort,
            threads: self.threads,
            tree: self.tree,
            forest: self.forest,
            idle: self.idle,
            ctx: self.row_ctx(),
        });
        self.dev_rows = devices::rows(self.frame.as_ref());
        self.pane = detail::pane(
            self.detail,
            self.frame.as_ref(),
            &self.facts,
            self.pane.take(),
        );
        self.cg_rows = cgroups::rows(
            self.frame.as_ref(),
            &self.expanded,
            self.sort.descending,
            &self.filter,
        );
        self.topo_lines = match &self.extras.topology {
            Some(lines) => lines.clone(),
            None => topology::frame_lines(self.frame.as_ref()),
        };
        self.pin_lines = self.plan_run.lines.clone();
        if !self.pin_lines.is_empty() {
            self.pin_lines.push((LineKind::Normal, String::new()));
        }
        match &self.extras.pinning {
            Some(lines) => self.pin_lines.extend(lines.iter().cloned()),
            None => self.pin_lines.extend(pinning::waiting_lines()),
        }
        match self.follow {
            // Grouped rows index `cg_rows`, where no task can be followed.
            Some(_) if self.group_cgroup => self.follow = None,
            Some(pid) => match self.followed_row(pid) {
                // The followed row keeps its line on screen (as in htop):
                // the list scrolls under it instead of it jumping about.
                Some(i) => {
                    let p = &mut self.pos[pi];
                    p.offset = (p.offset + i).saturating_sub(p.selected);
                    p.selected = i;
                }
                // Hidden, not gone (a filter, thread rows not collected
                // yet): it comes back when the rows do.
                None if self
                    .frame
                    .as_ref()
                    .is_some_and(|f| f.processes.iter().any(|p| p.pid == pid)) => {}
                // It exited: following nothing would leave "following" in
                // the title over some other task (htop stops here too).
                None => {
                    self.follow = None;
                    self.message = Some(format!("PID {pid} exited: no longer following"));
                }
            },
            None if was_last => self.pos[pi].selected = usize::MAX,
            None => {}
        }
        for v in View::ALL {
            self.clamp(v);
        }
    }
}
