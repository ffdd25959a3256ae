//! The status-line prompts (filter, delay, go to time): keys while one of
//! them is open. The keys of the views themselves are in
//! [`super::keymap`].

use crossterm::event::{KeyCode, KeyEvent};

use super::rows::View;
use super::state::{Action, App, Mode};

impl App {
    /// The filter applies as it is typed (htop's); Enter keeps it and
    /// goes to the first row, Esc clears it.
    pub(crate) fn key_filter(&mut self, k: KeyEvent, mut buf: String) {
        match k.code {
            KeyCode::Enter => {
                self.set_filter(buf.trim());
                self.move_to(View::Processes, 0);
                return;
            }
            KeyCode::Esc => {
                self.set_filter("");
                return;
            }
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Char(c) if !c.is_control() => buf.push(c),
            _ => {}
        }
        self.set_filter(buf.trim());
        self.mode = Mode::Filter(buf);
    }

    fn set_filter(&mut self, f: &str) {
        if self.filter != f {
            self.filter = f.to_string();
            self.rebuild();
        }
    }

    pub(crate) fn key_delay(&mut self, k: KeyEvent, mut buf: String) -> Action {
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

    pub(crate) fn key_goto(&mut self, k: KeyEvent, mut buf: String) -> Action {
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
}

/// A replay jump target in the one time syntax ([`crate::sys::units::parse_time`]):
/// `HH:MM[:SS]` (UTC, as the header shows times) on the day of the frame on
/// screen, an offset from it (`+90s`, `-10m`, `+1h30m`; a bare number is
/// seconds), or a full date. Returns unix milliseconds.
pub fn parse_goto(s: &str, now_unix_ms: u64) -> Result<u64, String> {
    crate::sys::units::parse_time("T", s).map(|t| t.resolve(now_unix_ms, now_unix_ms))
}
