//! The display toggles that change how rows are shown, not which view
//! or task is under the cursor: COMMAND as names or command lines, idle
//! tasks listed or hidden, the colour scheme, the header. Each says what
//! it did on the status line, as top does.

use super::state::App;

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

    /// `m`: the header's next mode (top's `t` and `m` step through their
    /// summary lines the same way).
    pub(crate) fn next_header(&mut self) {
        self.meters.mode = self.meters.mode.next();
        let want = self.meters.mode;
        let shown = super::meters::layout::plan(
            &self.meters,
            &super::meters::shape(self.frame.as_ref(), self.width, self.height),
        )
        .mode;
        self.message = Some(if shown == want {
            format!("header {} (m: next, W: save)", want.name())
        } else {
            format!(
                "header {} (shown {}: the terminal is too small)",
                want.name(),
                shown.name()
            )
        });
        // The body grows or shrinks with the header.
        self.resize(self.width, self.height);
    }
}
