//! `P`, confirmed, on the live data thread: `--plan --apply` without
//! leaving the TUI. The revert file is written first; the before window
//! and the after window are each measured from a raw sample kept at its
//! start to the sample of the first frame past its end, while frames keep
//! flowing to the screen; then the same verdict as the command line's
//! keeps the changes or reverts them. The written changes are held by a
//! [`steps::Armed`] guard, so quitting (or any error) before the verdict
//! restores them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::app::live::LiveFrames;
use crate::plan::measure::{self, Measure};
use crate::plan::revert::{self, RevertFile};
use crate::plan::{Plan, journal, steps};
use crate::sample::RawSample;
use crate::ui::rows::LineKind;
use crate::ui::rows::pinning::PlanRun;

enum Phase {
    Before {
        rf: RevertFile,
        unwritten: Unwritten,
    },
    After {
        before: Measure,
        armed: steps::Armed,
    },
}

/// A revert file nothing has been written for yet: dropped (the TUI quit
/// in the before window), its verdict says so.
struct Unwritten(Option<PathBuf>);

impl Drop for Unwritten {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            journal::settle(&p, journal::Outcome::NothingWritten);
        }
    }
}

/// An apply between its start and its verdict.
pub(super) struct Applying {
    plan: Plan,
    revert_file: String,
    revert_path: PathBuf,
    /// The command that undoes it once kept.
    undo: String,
    /// Held until the verdict: no other apply or revert meanwhile.
    _lock: journal::Lock,
    window: Duration,
    /// The sample the current window starts at, and when it ends.
    mark: RawSample,
    until: Instant,
    phase: Phase,
    lines: Vec<(LineKind, String)>,
}

fn heading(s: impl Into<String>) -> (LineKind, String) {
    (LineKind::Heading, s.into())
}

fn normal(s: impl Into<String>) -> (LineKind, String) {
    (LineKind::Normal, s.into())
}

/// Lines of a text block ("a\nb\n") as view lines of one kind.
fn block(text: &str, kind: LineKind) -> impl Iterator<Item = (LineKind, String)> + '_ {
    text.lines().map(move |l| (kind, l.to_string()))
}

/// The status heading over what the apply has said so far.
fn news(status: String, said: &[(LineKind, String)], running: bool) -> PlanRun {
    let mut lines = vec![heading(status)];
    lines.extend(said.iter().cloned());
    PlanRun { lines, running }
}

/// An apply that could not start: nothing was written.
pub(super) fn failed(why: &str) -> PlanRun {
    PlanRun {
        lines: vec![
            heading("applying the plan: not started, nothing written"),
            (LineKind::Warn, why.to_string()),
        ],
        running: false,
    }
}

/// What [`Applying::step`] has to say after a frame.
pub(super) enum Step {
    /// Still measuring: the progress to show.
    Running(PlanRun),
    /// The verdict, or why the apply stopped: the last thing to show.
    Done(PlanRun),
}

impl Applying {
    /// Reads the current values, writes the revert file and starts the
    /// before window at the last sample `live` took (with thread rows:
    /// the victims are threads). `Err`: why nothing was started.
    pub(super) fn start(
        plan: Plan,
        live: &LiveFrames,
        window: Duration,
        state_dir: &Path,
    ) -> anyhow::Result<Applying> {
        let place = |e: anyhow::Error| {
            anyhow::anyhow!("{e:#} (nothing written; --state-dir picks another place)")
        };
        revert::check_state_dir(state_dir, true).map_err(place)?;
        let lock = journal::lock(state_dir)?;
        journal::clear_for_apply(state_dir, false)?;
        let entries = steps::entries(&plan)?;
        if entries.is_empty() {
            anyhow::bail!("nothing to apply");
        }
        let rf = RevertFile::new(entries);
        let path = revert::write(state_dir, &rf).map_err(place)?;
        let revert_file = path.display().to_string();
        log::info!("applying the plan; revert file {revert_file}");
        Ok(Applying {
            lines: vec![normal(format!("revert file: {revert_file}"))],
            plan,
            undo: journal::undo_command(state_dir, &path),
            phase: Phase::Before {
                rf,
                unwritten: Unwritten(Some(path.clone())),
            },
            revert_path: path,
            _lock: lock,
            revert_file,
            window,
            mark: live.mark(),
            until: Instant::now() + window,
        })
    }

    fn left(&self) -> u64 {
        self.until
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
            .ceil() as u64
    }

    /// The progress as it stands (sent when the apply starts).
    pub(super) fn progress(&self) -> PlanRun {
        let what = match self.phase {
            Phase::Before { .. } => "measuring before",
            Phase::After { .. } => "measuring after",
        };
        news(
            format!(
                "applying the plan: {what} ({} s left; q undoes any change written)",
                self.left()
            ),
            &self.lines,
            true,
        )
    }

    /// After each frame `live` made: the window's measure once it is over,
    /// then the writes, or the verdict.
    pub(super) fn step(mut self, live: &LiveFrames) -> (Option<Applying>, Step) {
        if Instant::now() < self.until {
            let p = self.progress();
            return (Some(self), Step::Running(p));
        }
        let m = Measure::of(&live.frame_since(&self.mark), &self.plan.victims);
        match self.phase {
            Phase::Before { rf, mut unwritten } => {
                // From here the guard below records the verdict.
                unwritten.0 = None;
                let mut armed = steps::Armed::new(rf, &self.revert_path);
                let written = match armed.write_all(|_| {}) {
                    Ok(w) => w,
                    Err(e) => {
                        let line = (LineKind::Warn, format!("{e:#}"));
                        self.lines.push(line);
                        let run = news("applying the plan: stopped".into(), &self.lines, false);
                        return (None, Step::Done(run));
                    }
                };
                log::info!(
                    "plan applied ({} change(s)); revert file {}",
                    written.len(),
                    self.revert_file
                );
                self.lines
                    .extend(written.iter().map(|w| normal(format!("wrote {w}"))));
                self.phase = Phase::After { before: m, armed };
                self.mark = live.mark();
                self.until = Instant::now() + self.window;
                let p = self.progress();
                (Some(self), Step::Running(p))
            }
            Phase::After { before, armed } => {
                let verdict = steps::conclude(&self.plan, (&before, &m), armed, &self.revert_file);
                self.lines.push(normal(String::new()));
                self.lines
                    .extend(block(&measure::render_table(&before, &m), LineKind::Normal));
                self.lines.push(normal(String::new()));
                let kind = if verdict.reverted() {
                    LineKind::Warn
                } else {
                    LineKind::Note
                };
                self.lines
                    .extend(block(&verdict.text(&self.revert_file, &self.undo), kind));
                let status = match (verdict.reverted(), verdict.ok) {
                    (false, _) => "plan applied and kept",
                    (true, true) => "plan reverted automatically: it made things worse",
                    (true, false) => "plan made things worse and the revert FAILED for some files",
                };
                (None, Step::Done(news(status.into(), &self.lines, false)))
            }
        }
    }
}
