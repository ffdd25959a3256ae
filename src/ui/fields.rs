//! The fields screen (`F`, `s`, `F2`): top's Fields Management and htop's
//! Setup ▸ Columns in one list. It picks the sort column and chooses which
//! columns the Processes view shows and in what order; `W` saves both.
//!
//! The list is the shown columns in their order, then the hidden ones, then
//! COMMAND, which is always shown and always last (it takes what is left
//! of the line). Keys follow top's: Up/Down walk, Space or `d` shows or
//! hides, Right takes the column to move it with Up/Down and Left or Enter
//! puts it down, Enter sorts by it and closes (`s` sorts and stays), Esc or
//! `q` closes.

use crossterm::event::{KeyCode, KeyEvent};

use super::state::{App, Mode};
use crate::output::columns::ProcColumn;

/// One line of the fields screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub column: ProcColumn,
    pub shown: bool,
}

impl App {
    /// The fields screen's lines, in order.
    pub fn fields(&self) -> Vec<Field> {
        let shown = self.columns.iter().map(|&column| Field {
            column,
            shown: true,
        });
        let hidden = ProcColumn::ALL
            .into_iter()
            .filter(|c| *c != ProcColumn::Command && !self.columns.contains(c))
            .map(|column| Field {
                column,
                shown: false,
            });
        shown
            .chain(hidden)
            .chain([Field {
                column: ProcColumn::Command,
                shown: true,
            }])
            .collect()
    }

    /// Opens the fields screen on the sort column.
    pub(crate) fn open_fields(&mut self) {
        let at = self
            .fields()
            .iter()
            .position(|f| f.column == self.sort.column)
            .unwrap_or(0);
        self.mode = Mode::Fields { at, moving: false };
    }

    pub(crate) fn key_fields(&mut self, k: KeyEvent, at: usize, moving: bool) {
        let fields = self.fields();
        let last = fields.len() - 1;
        let at = at.min(last);
        let here = fields[at];
        let stay = |at, moving| Mode::Fields { at, moving };
        self.mode = match (k.code, moving) {
            (KeyCode::Esc | KeyCode::Char('q'), _) => Mode::Normal,
            (KeyCode::Up | KeyCode::Char('k'), true) => stay(self.move_column(at, -1), true),
            (KeyCode::Down | KeyCode::Char('j'), true) => stay(self.move_column(at, 1), true),
            (KeyCode::Left | KeyCode::Enter, true) => stay(at, false),
            (KeyCode::Up | KeyCode::Char('k'), false) => stay(at.saturating_sub(1), false),
            (KeyCode::Down | KeyCode::Char('j'), false) => stay((at + 1).min(last), false),
            (KeyCode::Home, false) => stay(0, false),
            (KeyCode::End, false) => stay(last, false),
            (KeyCode::Right, false) if here.shown && here.column != ProcColumn::Command => {
                stay(at, true)
            }
            (KeyCode::Right, false) => {
                self.message = Some(match here.column {
                    ProcColumn::Command => "COMMAND is always last".into(),
                    _ => "show the column first (Space), then move it".into(),
                });
                stay(at, false)
            }
            (KeyCode::Char(' ') | KeyCode::Char('d'), false) => {
                stay(self.toggle_column(here.column).unwrap_or(at), false)
            }
            // Enter sorts and closes, as the sort picker of htop (F6) does;
            // `s` sorts and stays, as in top's fields screen.
            (KeyCode::Enter, false) => {
                self.set_sort(here.column);
                Mode::Normal
            }
            (KeyCode::Char('s'), false) => {
                self.set_sort(here.column);
                stay(at, false)
            }
            (_, m) => stay(at, m),
        };
    }

    /// Moves the shown column at `at` one place up or down among the shown
    /// ones; returns where it is now.
    fn move_column(&mut self, at: usize, d: isize) -> usize {
        let to = at as isize + d;
        if to < 0 || to as usize >= self.columns.len() || at >= self.columns.len() {
            return at;
        }
        self.columns.swap(at, to as usize);
        to as usize
    }

    /// Shows a hidden column (as the last shown one) or hides a shown one;
    /// returns the line it is on now. COMMAND cannot be hidden.
    fn toggle_column(&mut self, c: ProcColumn) -> Option<usize> {
        if c == ProcColumn::Command {
            self.message = Some("COMMAND is always shown".into());
            return None;
        }
        if let Some(i) = self.columns.iter().position(|x| *x == c) {
            self.columns.remove(i);
            // The cursor stays on the line, which is now the next column.
            return Some(i);
        }
        self.columns.push(c);
        Some(self.columns.len() - 1)
    }
}
