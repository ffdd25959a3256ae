//! What `W` saves and the next start restores: the TUI's settings as plain
//! data. Reading and writing the file is the mode runner's part
//! (`app::config`); here they are only taken from and given to an [`App`],
//! so a saved screen comes back the same whether it was saved live or in
//! replay.
//!
//! Every field is optional in the file: a setting the file does not name
//! keeps its default, and a file written by an older nettop still loads.

use serde::{Deserialize, Serialize};

use super::app::{App, Scheme};
use super::rows::View;
use super::rows::processes::SortKey;
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
    pub color_scheme: Option<Scheme>,
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
            color_scheme,
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
        self.color_scheme = color_scheme.or(self.color_scheme);
    }
}

impl App {
    /// The settings on screen now, every field given.
    pub fn settings(&self) -> Settings {
        Settings {
            view: Some(self.view),
            sort: Some(self.sort.column),
            sort_descending: Some(self.sort.descending),
            columns: Some(self.columns.clone()),
            delay: Some(self.delay),
            threads: Some(self.threads),
            tree: Some(self.tree),
            forest: Some(self.forest),
            command_line: Some(self.cmdline),
            color_scheme: Some(self.theme.scheme),
        }
    }

    /// Takes every setting `s` gives; the others stay as they are.
    pub fn apply_settings(&mut self, s: &Settings) {
        if let Some(v) = s.view {
            self.view = v;
        }
        if let Some(c) = s.sort {
            self.sort = SortKey {
                column: c,
                descending: s.sort_descending.unwrap_or(c.default_descending()),
            };
        } else if let Some(d) = s.sort_descending {
            self.sort.descending = d;
        }
        if let Some(cols) = &s.columns {
            self.columns = ProcColumn::visible_from(cols);
        }
        if let Some(d) = s.delay {
            self.delay = d;
        }
        if let Some(t) = s.threads {
            self.threads = t;
        }
        if let Some(t) = s.tree {
            self.tree = t;
        }
        if let Some(f) = s.forest {
            self.forest = f;
        }
        if let Some(c) = s.command_line {
            self.cmdline = c;
        }
        if let Some(c) = s.color_scheme {
            self.theme = self.theme.with_scheme(c);
        }
        self.rebuild();
    }
}
