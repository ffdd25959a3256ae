//! What htop and top users reach for that is not a column or a view: the
//! user picker (`u`), and a hint for the htop keys nettop has no
//! equivalent for, so a key press is never met with silence.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent};

use super::state::{App, Mode};

/// One line of the user picker: `None` is "every user".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserChoice {
    pub uid: Option<u32>,
    pub name: String,
    /// Processes of that user in the frame.
    pub processes: usize,
}

impl App {
    /// "every user", then the users with processes in the frame, most
    /// processes first.
    pub fn user_choices(&self) -> Vec<UserChoice> {
        let mut count: BTreeMap<u32, usize> = BTreeMap::new();
        if let Some(f) = &self.frame {
            for p in &f.processes {
                *count.entry(p.uid).or_default() += 1;
            }
        }
        let mut v: Vec<UserChoice> = count
            .into_iter()
            .map(|(uid, processes)| UserChoice {
                uid: Some(uid),
                name: self
                    .users
                    .get(&uid)
                    .cloned()
                    .unwrap_or_else(|| uid.to_string()),
                processes,
            })
            .collect();
        v.sort_by(|a, b| b.processes.cmp(&a.processes).then(a.name.cmp(&b.name)));
        v.insert(
            0,
            UserChoice {
                uid: None,
                name: "every user".into(),
                processes: self.frame.as_ref().map_or(0, |f| f.processes.len()),
            },
        );
        v
    }

    /// `u`: the picker, on the user shown now.
    pub(crate) fn open_users(&mut self) {
        let at = self
            .user_choices()
            .iter()
            .position(|c| c.uid == self.user)
            .unwrap_or(0);
        self.mode = Mode::Users(at);
    }

    pub(crate) fn key_users(&mut self, k: KeyEvent, at: usize) {
        let choices = self.user_choices();
        let last = choices.len().saturating_sub(1);
        let at = match k.code {
            KeyCode::Up => at.saturating_sub(1),
            KeyCode::Down => (at + 1).min(last),
            KeyCode::Home => 0,
            KeyCode::End => last,
            KeyCode::Enter => {
                if let Some(c) = choices.get(at) {
                    self.user = c.uid;
                    self.message = Some(match c.uid {
                        Some(_) => format!("only {}'s tasks (u, or Esc, for every user)", c.name),
                        None => "every user's tasks".into(),
                    });
                    self.rebuild();
                }
                return;
            }
            KeyCode::Esc | KeyCode::Char('q') => return,
            _ => at,
        };
        self.mode = Mode::Users(at);
    }

    /// What to use instead of an htop key nettop does not have.
    pub(crate) fn hint(&self, key: char) -> String {
        let pid = self
            .selected_task()
            .map_or_else(|| "PID".to_string(), |t| t.pid.to_string());
        match key {
            'l' => format!("l (htop: open files) is not in nettop: run lsof -p {pid}"),
            'e' => format!(
                "e (htop: environment) is not in nettop: run tr '\\0' '\\n' < /proc/{pid}/environ"
            ),
            'x' => format!("x (htop: file locks) is not in nettop: run lslocks -p {pid}"),
            'I' => "I (htop: invert sort) is R here, as in top".into(),
            'S' => "S (htop: setup) is F for columns, Z for colours and W to save here".into(),
            other => format!("{other} does nothing in nettop (? lists the keys)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::fixtures;
    use crate::ui::state::Options;
    use crossterm::event::{Event, KeyModifiers};

    fn press(app: &mut App, code: KeyCode) {
        app.handle_event(&Event::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }

    #[test]
    fn u_narrows_to_one_user_and_esc_clears_it() {
        let mut a = App::new(Options::default());
        a.push_frame(fixtures::busy_host());
        let all = a.rows.len();
        let choices = a.user_choices();
        assert!(choices.len() >= 2, "{choices:?}");
        press(&mut a, KeyCode::Char('u'));
        press(&mut a, KeyCode::Down);
        press(&mut a, KeyCode::Enter);
        let uid = choices[1].uid;
        assert_eq!(a.user, uid);
        assert_eq!(a.rows.len(), choices[1].processes);
        assert!(a.rows.len() < all);
        press(&mut a, KeyCode::Esc);
        assert_eq!(a.user, None);
        assert_eq!(a.rows.len(), all);
    }

    #[test]
    fn htop_keys_without_an_equivalent_say_what_to_use() {
        let mut a = App::new(Options::default());
        a.push_frame(fixtures::busy_host());
        for (k, says) in [('l', "lsof -p"), ('e', "/environ"), ('I', "R here")] {
            press(&mut a, KeyCode::Char(k));
            let m = a.message.clone().unwrap_or_default();
            assert!(m.contains(says), "{k}: {m}");
        }
    }
}
