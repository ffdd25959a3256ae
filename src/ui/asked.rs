//! What the user asked nettop to do to a task (`k`, `r`, `a`), as plain
//! data: the App holds it while it asks, the run loop carries it out, and
//! [`super::control`] has the keys. Also the record of an affinity set
//! that way, which the detail pane shows before and after.

use super::history::Key as HistKey;
use super::rows::LineKind;
use crate::output::format::{fmt_pct, hms};
use crate::sys::control::{Target, signal_name};
use crate::sys::cpuset::CpuSet;

/// What `y` on the question does.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Signal(i32),
    Renice(i32),
    Affinity(CpuSet),
}

/// One confirmed action for the run loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Control {
    pub target: Target,
    pub op: Op,
}

impl Control {
    /// The question the status line asks.
    pub fn question(&self) -> String {
        let who = self.target.label();
        let what = match &self.op {
            Op::Signal(s) => format!("Send {} to {who}", signal_name(*s)),
            Op::Renice(n) => format!("Renice {who} to {n}"),
            Op::Affinity(c) => format!("Set the affinity of {who} to CPUs {}", c.to_list()),
        };
        let all = if self.target.process && !matches!(self.op, Op::Signal(_)) {
            " (every thread)"
        } else {
            ""
        };
        format!("{what}{all}? [y/N] ")
    }
}

/// An affinity set from `a`, and STOLEN% either side of it.
#[derive(Clone, Debug, PartialEq)]
pub struct AffinityChange {
    /// The task's history ring (its process or its thread).
    pub key: HistKey,
    pub pid: u32,
    pub from: String,
    pub to: String,
    /// When it was set (the frame on screen then, unix ms).
    pub at_ms: u64,
    /// Mean STOLEN% over the last frames before it, and how many.
    pub before: Option<(f64, usize)>,
    /// Sum of STOLEN% over the frames since, and how many.
    pub after_sum: f64,
    pub after_n: usize,
}

impl AffinityChange {
    pub fn after(&self) -> Option<f64> {
        (self.after_n > 0).then(|| self.after_sum / self.after_n as f64)
    }

    /// The detail pane's lines: what moved where, and STOLEN% either side,
    /// as the plan's before/after says it.
    pub fn lines(&self) -> Vec<(LineKind, String)> {
        let who = match self.key {
            HistKey::Thread(tid) => format!("thread {tid}"),
            _ => "the process".to_string(),
        };
        let pct =
            |v: Option<f64>| v.map_or_else(|| "?".to_string(), |x| format!("{}%", fmt_pct(x)));
        let before = self.before.map(|(v, _)| v);
        let after = self.after();
        let mut v = vec![
            (LineKind::Heading, "Affinity set with a".to_string()),
            (
                LineKind::Normal,
                format!(
                    "{who}: CPUs {} → {} at {}",
                    self.from,
                    self.to,
                    hms(self.at_ms)
                ),
            ),
            (
                LineKind::Normal,
                format!(
                    "STOLEN% before {} ({} frames) → after {} ({} frames)",
                    pct(before),
                    self.before.map_or(0, |(_, n)| n),
                    pct(after),
                    self.after_n
                ),
            ),
        ];
        if let (Some(b), Some(a)) = (before, after)
            && b - a >= 1.0
        {
            v.push((
                LineKind::Note,
                format!(
                    "{} points of CPU no longer lost to interrupt work",
                    fmt_pct(b - a)
                ),
            ));
        }
        v
    }
}
