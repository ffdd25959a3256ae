//! What every part of the screen shares: the palette and the helpers that
//! fit text into fixed-width cells.

use ratatui::style::{Color, Modifier, Style};

use super::app::{Scheme, Theme};

/// Stolen time (percent of one CPU) at which a row or figure gets marked.
pub const STOLEN_MARK_PCT: f64 = 10.0;

/// Styles, each collapsing to attribute-only (bold/reverse) in the mono
/// scheme and under NO_COLOR; only the 16 basic colours are ever used.
pub(crate) struct Sty(pub Theme);

impl Sty {
    /// `c` as the scheme shows it: on a light background yellow and cyan
    /// wash out, so they become their darker neighbours.
    pub fn fg(&self, c: Color) -> Style {
        match self.0.effective() {
            Scheme::Mono => Style::new(),
            Scheme::Default => Style::new().fg(c),
            Scheme::Light => Style::new().fg(match c {
                Color::Yellow => Color::Magenta,
                Color::Magenta => Color::Blue,
                Color::Cyan => Color::Blue,
                c => c,
            }),
        }
    }
    pub fn header(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
    }
    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    pub fn stolen(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    pub fn net_rx(&self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }
    pub fn gap(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub fn dim(&self) -> Style {
        self.fg(Color::DarkGray)
    }
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub fn accent(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
}

/// Pads or cuts `s` to exactly `w` columns (right-aligned for numbers).
pub fn fit(s: &str, w: usize, right: bool) -> String {
    let n = s.chars().count();
    if n > w {
        s.chars().take(w).collect()
    } else if right {
        format!("{s:>w$}")
    } else {
        format!("{s:<w$}")
    }
}

/// Chooses which columns fit `avail`: take them in priority order while
/// they fit (a column listed twice counts once), then show them in
/// display order.
pub fn fit_columns<C: Copy + PartialEq>(
    display: &[(C, u16)],
    priority: &[C],
    avail: u16,
    flex_min: u16,
) -> Vec<C> {
    let mut used = flex_min;
    let mut chosen: Vec<C> = Vec::new();
    for c in priority {
        if chosen.contains(c) {
            continue;
        }
        if let Some((_, w)) = display.iter().find(|(d, _)| d == c)
            && used + w < avail
        {
            used += w + 1;
            chosen.push(*c);
        }
    }
    display
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| chosen.contains(c))
        .collect()
}
