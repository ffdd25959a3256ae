//! What `W` saves and the next start restores: the TUI's settings as plain
//! data. Reading and writing the file is the mode runner's part
//! (`app::config`); taking them from and giving them to the App is
//! `saved.rs`'s, so a saved screen comes back the same whether it was saved
//! live or in replay.
//!
//! Every field is optional in the file: a setting the file does not name
//! keeps its default, and a file written by an older nettop still loads.
//! The command line's own start settings ([`Options`]) live here too: the
//! App starts from them, then applies the saved ones.

use serde::{Deserialize, Serialize};

use super::meters::{CpuBars, HeaderMode, Meter};
use super::rows::View;
use super::style::{Scheme, Theme};
use crate::output::columns::ProcColumn;

/// The settings a configuration file holds, each `None` when not given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The view on screen at start: `processes`, `cpus`, `devices`,
    /// `topology` or `pinning`.
    pub view: Option<View>,
    /// Sort column (its key, as `--sort` and the column table name it).
    pub sort: Option<ProcColumn>,
    /// Largest first.
    pub sort_descending: Option<bool>,
    /// The Processes view's columns, in order; COMMAND is always last.
    pub columns: Option<Vec<ProcColumn>>,
    /// Seconds between frames.
    pub delay: Option<f64>,
    pub threads: Option<bool>,
    /// Threads under their process (`t`).
    pub tree: Option<bool>,
    /// Processes under their parents (`V`).
    pub forest: Option<bool>,
    /// COMMAND as the full command line (`c`).
    pub command_line: Option<bool>,
    /// Tasks that used no CPU are listed (`i` hides them, as in top).
    pub show_idle: Option<bool>,
    pub color_scheme: Option<Scheme>,
    /// `true`: kernel threads left out (`K`).
    pub hide_kernel_threads: Option<bool>,
    /// `true`: no kill, renice, affinity or plan from the TUI, as
    /// `--read-only`. `W` keeps it as it is.
    pub read_only: Option<bool>,
    /// The header: `full`, `compact` or `brief` (`m`).
    pub header: Option<HeaderMode>,
    /// The header's left and right columns and the full-width meters
    /// under them, top to bottom (htop's left_meters and right_meters).
    pub meters_left: Option<Vec<Meter>>,
    pub meters_right: Option<Vec<Meter>>,
    pub meters_below: Option<Vec<Meter>>,
    /// The CPU bars side by side: `auto`, `1`, `2`, `4` or `strip`.
    pub cpu_bars: Option<CpuBars>,
}

impl Settings {
    /// Takes every setting `o` gives over this one's.
    pub fn merge(&mut self, o: Settings) {
        let Settings {
            view,
            sort,
            sort_descending,
            columns,
            delay,
            threads,
            tree,
            forest,
            command_line,
            show_idle,
            color_scheme,
            hide_kernel_threads,
            read_only,
            header,
            meters_left,
            meters_right,
            meters_below,
            cpu_bars,
        } = o;
        self.view = view.or(self.view);
        self.sort = sort.or(self.sort);
        self.sort_descending = sort_descending.or(self.sort_descending);
        self.columns = columns.or(self.columns.take());
        self.delay = delay.or(self.delay);
        self.threads = threads.or(self.threads);
        self.tree = tree.or(self.tree);
        self.forest = forest.or(self.forest);
        self.command_line = command_line.or(self.command_line);
        self.show_idle = show_idle.or(self.show_idle);
        self.color_scheme = color_scheme.or(self.color_scheme);
        self.hide_kernel_threads = hide_kernel_threads.or(self.hide_kernel_threads);
        self.read_only = read_only.or(self.read_only);
        self.header = header.or(self.header);
        self.meters_left = meters_left.or(self.meters_left.take());
        self.meters_right = meters_right.or(self.meters_right.take());
        self.meters_below = meters_below.or(self.meters_below.take());
        self.cpu_bars = cpu_bars.or(self.cpu_bars);
    }
}

/// Settings the TUI starts with, from the command line.
#[derive(Clone, Debug)]
pub struct Options {
    pub delay: f64,
    pub threads: bool,
    /// COMMAND as the full command line from the start (`-c`).
    pub cmdline: bool,
    /// Processes under their parents from the start (`V`).
    pub forest: bool,
    /// Tasks that used no CPU hidden from the start (`-i`, as top's).
    pub hide_idle: bool,
    /// Each of the before and after windows of an apply from `P`.
    pub plan_measure_s: f64,
    /// `-p`: the PIDs the collector watches.
    pub pids: Vec<u32>,
    /// `--read-only`: no `k`, `r`, `a`, nor `P`'s apply.
    pub read_only: bool,
    pub theme: Theme,
    pub width: u16,
    pub height: u16,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            delay: 1.0,
            threads: false,
            cmdline: false,
            forest: false,
            hide_idle: false,
            plan_measure_s: 10.0,
            pids: Vec::new(),
            read_only: false,
            theme: Theme::default(),
            width: 80,
            height: 24,
        }
    }
}
