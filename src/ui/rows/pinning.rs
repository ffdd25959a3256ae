//! Pinning view's lines: the findings of `nettop --pinning-check`, relinted
//! live on the data thread with measured stolen time as evidence.

use super::LineKind;

/// An apply started from the TUI, as the data thread reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanRun {
    /// Shown above the findings: progress, writes, before/after, verdict.
    pub lines: Vec<(LineKind, String)>,
    /// Until the verdict (or an error) another apply is refused.
    pub running: bool,
}

/// Shown until the topology thread has linted once.
pub fn waiting_lines() -> Vec<(LineKind, String)> {
    vec![(
        LineKind::Note,
        "Pinning findings appear here once the topology is loaded (the lint of `nettop --pinning-check`, refreshed live).".into(),
    )]
}

/// Turns a pinning report into the Pinning view's lines.
pub fn lines(report: &crate::pinning::Report) -> Vec<(LineKind, String)> {
    crate::pinning::render_text(report)
        .lines()
        .map(|l| {
            let t = l.trim_start().to_ascii_lowercase();
            let kind = if t.starts_with("error") || t.starts_with("warning") {
                LineKind::Warn
            } else if t.starts_with("nettop pinning check") {
                LineKind::Heading
            } else {
                LineKind::Normal
            };
            (kind, l.to_string())
        })
        .collect()
}
