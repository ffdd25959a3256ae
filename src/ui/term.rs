//! Terminal setup and the guarantees around it: whatever happens (quit,
//! error, panic, SIGTERM/SIGHUP), the user's terminal comes back cooked,
//! on the main screen, with a cursor and without mouse reporting.

use std::io::{self, Stdout};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal on drop (normal return and error paths).
pub struct TermGuard {
    _private: (),
}

static HOOK: Once = Once::new();

/// Undo everything `enter` did. Safe to call more than once: each step is
/// idempotent, and errors are ignored because there is nowhere left to
/// report them (we may be inside a panic).
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        Show
    );
}

impl TermGuard {
    pub fn enter() -> anyhow::Result<(TermGuard, Term)> {
        HOOK.call_once(|| {
            let prev = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                // Restore first so the panic message lands on a sane screen.
                restore();
                prev(info);
            }));
        });
        enable_raw_mode()
            .map_err(|e| anyhow::anyhow!("cannot put the terminal in raw mode: {e}"))?;
        let guard = TermGuard { _private: () };
        execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)
            .map_err(|e| anyhow::anyhow!("cannot switch to the alternate screen: {e}"))?;
        let mut term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        term.clear()?;
        term.hide_cursor()?;
        Ok((guard, term))
    }
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// `true` once the controlling terminal on stdin has hung up (its pty
/// master closed): poll reports POLLHUP/POLLERR/POLLNVAL.
pub fn hung_up() -> bool {
    let mut pfd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid pollfd that outlives the call; timeout 0
    // makes poll return at once without blocking.
    let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
    rc > 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}
