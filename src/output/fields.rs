//! What every entity's column table shares: processes
//! ([`super::columns::ProcColumn`]), devices and their napi instances
//! ([`super::devices::DevField`]), CPUs ([`super::cpus::CpuField`]) and
//! cgroups ([`super::cgroups::CgField`]).
//!
//! Each table says once, per column, its key, header, meaning, width,
//! alignment and how its value prints (a [`Cell`]: text and [`Tone`]).
//! The TUI's views, batch text and README's column tables are drawn from
//! or checked against it (tests/pure/columns_readme.rs), so adding a column to
//! a table adds it to every front end. Front ends differ only in layout:
//! the TUI cuts cells to the column width, colours them by tone and keeps
//! the columns of [`Field::PRIORITY`] that fit a narrow terminal; batch
//! text prints every column but the TUI's own ([`Field::tui_only`]),
//! padded to the same widths, without colour, and never cuts a value.

use std::fmt::Write as _;

/// How a column lines up its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    /// Numbers.
    Right,
}

/// What a cell's value says beyond its text, for the TUI's colours; batch
/// text and README ignore it. Each front end maps a tone to its own look,
/// so a table never names a colour.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Tone {
    #[default]
    Plain,
    /// Worth a look: drops, exhausted budgets, time squeezes, generic XDP.
    Warn,
    /// Interrupt work stolen from a task, at or above [`STOLEN_MARK_PCT`].
    Stolen,
    /// NET_RX work.
    NetRx,
    /// TOP% over-stating a task by at least [`STOLEN_MARK_PCT`].
    Gap,
    /// Emphasis without a colour of its own.
    Strong,
    /// A row's name that heads the rows under it (a device over its napi
    /// instances).
    Accent,
    /// Secondary text (a cgroup's path).
    Dim,
    /// A fill level from 0 to 1: the TUI draws the cell as a bar of its
    /// width (a napi instance's budget use) instead of its text.
    Bar(f64),
}

/// Stolen time (percent of one CPU) at which a row or figure gets marked.
pub const STOLEN_MARK_PCT: f64 = 10.0;

/// One cell: the text every front end prints, and how it reads.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Cell {
    pub text: String,
    pub tone: Tone,
}

impl Cell {
    pub fn new(text: impl Into<String>, tone: Tone) -> Self {
        Cell {
            text: text.into(),
            tone,
        }
    }

    pub fn plain(text: impl Into<String>) -> Self {
        Cell::new(text, Tone::Plain)
    }

    /// Nothing in this column for this row (a napi instance's TX rate).
    pub fn empty() -> Self {
        Cell::default()
    }

    /// `tone` when `when`, else plain.
    pub fn marked(text: impl Into<String>, when: bool, tone: Tone) -> Self {
        Cell::new(text, if when { tone } else { Tone::Plain })
    }
}

/// One entity's column vocabulary. The value of a cell is each table's own
/// `cell` function (the rows differ); everything else a front end needs to
/// lay a column out is here.
pub trait Field: Copy + PartialEq + 'static {
    /// Every column, in display order.
    const ALL: &'static [Self];
    /// The columns the TUI keeps on a narrow terminal, most wanted first;
    /// a column not listed is shown only when it fits after all of them.
    const PRIORITY: &'static [Self];

    /// Its name in configuration files and README's anchors: lower case,
    /// `_` for what a name cannot hold.
    fn key(self) -> &'static str;
    /// The header, and the name README's table lists.
    fn title(self) -> &'static str;
    /// What the column means, in a few words (README, the fields screen).
    fn describe(self) -> &'static str;
    /// Columns wide enough for their header and their usual values.
    fn width(self) -> u16;
    fn align(self) -> Align;
    /// Drawn by the TUI alone from what it keeps (a bar, a sparkline of
    /// its history): batch text has no text for it and leaves it out.
    fn tui_only(self) -> bool {
        false
    }

    fn from_key(k: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|c| c.key().eq_ignore_ascii_case(k))
    }
}

/// The columns batch text prints: all but the TUI's own, in order.
pub fn batch_columns<F: Field>() -> Vec<F> {
    F::ALL.iter().copied().filter(|c| !c.tui_only()).collect()
}

/// One line of a batch table: each cell padded to its column's width and
/// aligned, never cut (logs keep whole values: a longer one pushes the
/// rest of its line right), one space between cells, the last one not
/// padded, no trailing spaces.
pub fn text_line<F: Field>(out: &mut String, cols: &[F], text: impl Fn(F) -> String) {
    let mut line = String::new();
    for (i, &c) in cols.iter().enumerate() {
        let t = text(c);
        let w = c.width() as usize;
        if i + 1 == cols.len() {
            line.push_str(&t);
        } else if c.align() == Align::Right {
            let _ = write!(line, "{t:>w$} ");
        } else {
            let _ = write!(line, "{t:<w$} ");
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// "-" for a figure the model has not got (no packets, no BPF).
pub fn fmt_opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.prec$}"))
}

/// A CPU list ("0-3,8"), `-` when empty.
pub fn cpu_list(cpus: &[u32]) -> String {
    if cpus.is_empty() {
        "-".into()
    } else {
        crate::sys::cpuset::CpuSet::from_cpus(cpus.iter().copied()).to_list()
    }
}

/// Checks a table's vocabulary: keys and titles unique, titles fit their
/// width, every prioritised column a column. For each table's unit test.
#[cfg(test)]
pub(crate) fn check_table<F: Field + std::fmt::Debug>() {
    let mut keys = std::collections::HashSet::new();
    let mut titles = std::collections::HashSet::new();
    for &c in F::ALL {
        assert!(keys.insert(c.key()), "{c:?}: key {} twice", c.key());
        assert!(titles.insert(c.title()), "{c:?}: title {} twice", c.title());
        assert!(
            c.title().chars().count() <= c.width() as usize,
            "{c:?}: title {} wider than {}",
            c.title(),
            c.width()
        );
        assert!(!c.describe().is_empty(), "{c:?} undescribed");
        // Batch headers split on whitespace (awk, README's check).
        assert!(
            c.tui_only() || !c.title().contains(char::is_whitespace),
            "{c:?}: batch title {:?} has a space",
            c.title()
        );
        assert_eq!(F::from_key(c.key()), Some(c));
    }
    for c in F::PRIORITY {
        assert!(F::ALL.contains(c), "{c:?} in PRIORITY but not ALL");
    }
}
