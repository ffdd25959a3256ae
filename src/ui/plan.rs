//! `P`: the plan the Pinning view shows under the findings, applied from
//! the TUI as `nettop --plan --apply` applies it. The first `P` brings the
//! plan into view; in the Pinning view `P` asks, on the status line, to
//! apply exactly the plan on screen. The data thread then writes the
//! revert file, measures, writes, measures again and keeps or reverts;
//! its progress and the before/after table arrive as [`PlanRun`] lines
//! shown at the top of the Pinning view.

use crossterm::event::{KeyCode, KeyEvent};

use super::rows::pinning::PlanRun;
use super::rows::{LineKind, View};
use super::state::{Action, App, Mode};
use crate::plan::Plan;

impl App {
    /// `P`. Bringing the plan into view also asks for a fresh check of
    /// the host (the topology thread re-checks only every 15–90 s on its
    /// own), so the plan about to be confirmed is the host's as it is now.
    pub(crate) fn plan_key(&mut self) -> Action {
        if self.replay.is_some() {
            self.message =
                Some("replay: a plan is applied to the live host only (run nettop, then P)".into());
            return Action::None;
        }
        if self.plan_run.running {
            self.message =
                Some("an apply is running: its before/after is at the top of this view".into());
            self.set_view(View::Pinning);
            self.move_to(View::Pinning, 0);
            return Action::None;
        }
        if self.view != View::Pinning {
            self.set_view(View::Pinning);
            if let Some(i) = self.plan_heading() {
                self.move_to(View::Pinning, i);
            }
            self.message = Some("P again applies the plan; re-checking the host now".into());
            return Action::Recheck;
        }
        let Some(plan) = self.extras.plan.clone() else {
            self.message = Some("the plan appears once the topology is loaded".into());
            return Action::Recheck;
        };
        if plan.applied().next().is_none() {
            self.message =
                Some("nothing to apply: the plan writes no IRQ affinity, RPS or XPS file".into());
            return Action::None;
        }
        self.mode = Mode::ConfirmPlan(plan);
        Action::None
    }

    /// The line of the plan's heading in the Pinning view.
    fn plan_heading(&self) -> Option<usize> {
        self.pin_lines
            .iter()
            .position(|(k, l)| *k == LineKind::Heading && l.starts_with("nettop plan:"))
    }

    /// The status-line question while `plan` waits for y/n.
    pub fn plan_question(&self, plan: &Plan) -> String {
        format!(
            "Apply {} change(s) to this host? Revert file first, {:.0} s measured before and \
             after, reverted when worse [y/N] ",
            plan.applied().count(),
            self.plan_measure_s
        )
    }

    pub(crate) fn key_confirm_plan(&mut self, k: KeyEvent, plan: Box<Plan>) -> Action {
        if matches!(k.code, KeyCode::Char('y' | 'Y')) {
            self.plan_run = PlanRun {
                lines: vec![(LineKind::Heading, "applying the plan: starting".into())],
                running: true,
            };
            self.rebuild();
            self.move_to(View::Pinning, 0);
            return Action::ApplyPlan(plan);
        }
        self.message = Some("plan not applied: nothing written".into());
        Action::None
    }

    /// The data thread's news of the apply.
    pub fn set_plan_run(&mut self, run: PlanRun) {
        self.plan_run = run;
        self.rebuild();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::state::{Extras, Options};
    use crossterm::event::{Event, KeyModifiers};

    fn key(app: &mut App, c: char) -> Action {
        app.handle_event(&Event::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    }

    fn plan(changes: usize) -> Plan {
        let mut p = crate::plan::Plan {
            schema: crate::plan::SCHEMA.into(),
            source: "test".into(),
            load: "none".into(),
            protected: Default::default(),
            feasible: true,
            changes: Vec::new(),
            impossible: Vec::new(),
            unaddressed: Vec::new(),
            victims: Vec::new(),
        };
        for i in 0..changes {
            p.changes.push(crate::plan::Change {
                kind: crate::plan::Kind::Rps,
                nic: "veth1".into(),
                netns: String::new(),
                target: format!("/sys/class/net/veth1/queues/rx-{i}/rps_cpus"),
                from: "2".into(),
                to: "0".into(),
                command: String::new(),
                resolves: Vec::new(),
                why: String::new(),
            });
        }
        p
    }

    fn app_with(p: Option<Plan>) -> App {
        let mut app = App::new(Options::default());
        app.set_extras(Extras {
            pinning: Some(vec![
                (LineKind::Heading, "nettop pinning check".into()),
                (LineKind::Heading, "nettop plan: 1 change(s)".into()),
            ]),
            plan: p.map(Box::new),
            ..Default::default()
        });
        app
    }

    #[test]
    fn p_shows_the_plan_then_asks_then_applies_exactly_it() {
        let mut app = app_with(Some(plan(2)));
        assert_eq!(key(&mut app, 'P'), Action::Recheck);
        assert_eq!(app.view, View::Pinning);
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(key(&mut app, 'P'), Action::None);
        let Mode::ConfirmPlan(asked) = app.mode.clone() else {
            panic!("no question: {:?}", app.mode);
        };
        assert!(app.plan_question(&asked).starts_with("Apply 2 change(s)"));
        assert_eq!(key(&mut app, 'y'), Action::ApplyPlan(Box::new(plan(2))));
        assert!(app.plan_run.running);
        assert_eq!(app.pin_lines[0].1, "applying the plan: starting");
        // A second apply waits for the first one's verdict.
        assert_eq!(key(&mut app, 'P'), Action::None);
        assert_eq!(app.mode, Mode::Normal);
        app.set_plan_run(PlanRun {
            lines: vec![(LineKind::Heading, "kept".into())],
            running: false,
        });
        assert_eq!(app.pin_lines[0].1, "kept");
        key(&mut app, 'P');
        assert!(matches!(app.mode, Mode::ConfirmPlan(_)));
    }

    #[test]
    fn anything_but_y_writes_nothing() {
        let mut app = app_with(Some(plan(1)));
        app.set_view(View::Pinning);
        key(&mut app, 'P');
        assert_eq!(key(&mut app, 'n'), Action::None);
        assert!(!app.plan_run.running);
        assert_eq!(
            app.message.as_deref(),
            Some("plan not applied: nothing written")
        );
    }

    #[test]
    fn nothing_to_apply_or_no_plan_yet_or_replay_never_asks() {
        for (p, replay, says) in [
            (Some(plan(0)), false, "nothing to apply"),
            (None, false, "once the topology is loaded"),
            (Some(plan(1)), true, "live host only"),
        ] {
            let mut app = app_with(p);
            app.set_view(View::Pinning);
            if replay {
                app.set_replay(0, 2, false);
            }
            key(&mut app, 'P');
            assert_eq!(app.mode, Mode::Normal);
            assert!(
                app.message.as_deref().is_some_and(|m| m.contains(says)),
                "{:?}",
                app.message
            );
        }
    }
}
