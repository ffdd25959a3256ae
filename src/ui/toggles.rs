//! The display toggles that change how rows are shown, not which view
//! or task is under the cursor: COMMAND as names or command lines, idle
//! tasks listed or hidden, the colour scheme. Each says what it did on the
//! status line, as top does.

use super::app::App;

impl App {
    /// `c`: COMMAND as the full command line, or the name (top's `c`).
    pub(crate) fn toggle_cmdline(&mut self) {
        self.cmdline = !self.cmdline;
        self.message = Some(if self.cmdline {
            "COMMAND: full command lines (c: names)".into()
        } else {
            "COMMAND: names (c: full command lines)".into()
        });
    }

    /// `i`: tasks that used no CPU hidden or listed again (top's `i`).
    pub(crate) fn toggle_idle(&mut self) {
        self.idle = !self.idle;
        self.message = Some(if self.idle {
            "idle tasks listed (i: hide them)".into()
        } else {
            "idle tasks hidden: only tasks that used CPU (i: list all)".into()
        });
        self.rebuild();
    }

    /// `Z`: the next colour scheme.
    pub(crate) fn next_scheme(&mut self) {
        self.theme = self.theme.with_scheme(self.theme.scheme.next());
        self.message = Some(if self.theme.no_color {
            format!(
                "colour scheme {} (NO_COLOR is set: shown without colour)",
                self.theme.scheme.name()
            )
        } else {
            format!(
                "colour scheme {} (Z: next, W: save)",
                self.theme.scheme.name()
            )
        });
    }
}
