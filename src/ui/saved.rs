//! The App's side of the saved settings: what `W` hands over and what a
//! start restores ([`Settings`] is the data, [`super::settings`]).

use super::rows::processes::SortKey;
use super::settings::Settings;
use super::state::App;
use crate::output::columns::ProcColumn;

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
            show_idle: Some(self.idle),
            color_scheme: Some(self.theme.scheme),
            hide_kernel_threads: Some(self.hide_kthreads),
            read_only: Some(self.read_only),
            header: Some(self.meters.mode),
            meters_left: Some(self.meters.left.clone()),
            meters_right: Some(self.meters.right.clone()),
            meters_below: Some(self.meters.below.clone()),
            cpu_bars: Some(self.meters.cpu_bars),
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
        if let Some(i) = s.show_idle {
            self.idle = i;
        }
        if let Some(c) = s.color_scheme {
            self.theme = self.theme.with_scheme(c);
        }
        if let Some(k) = s.hide_kernel_threads {
            self.hide_kthreads = k;
        }
        // The file can turn it on; only the absence of both turns it off.
        if let Some(r) = s.read_only {
            self.read_only |= r;
        }
        let m = &mut self.meters;
        if let Some(h) = s.header {
            m.mode = h;
        }
        for (to, from) in [
            (&mut m.left, &s.meters_left),
            (&mut m.right, &s.meters_right),
            (&mut m.below, &s.meters_below),
        ] {
            if let Some(v) = from {
                to.clone_from(v);
            }
        }
        if let Some(c) = s.cpu_bars {
            m.cpu_bars = c;
        }
        self.rebuild();
    }
}
