//! What every part of the screen shares: the colour schemes and the
//! palette, and the helpers that fit text into fixed-width cells.

use ratatui::style::{Color, Modifier, Style};

use serde::{Deserialize, Serialize};

pub use crate::output::fields::STOLEN_MARK_PCT;

/// A colour scheme (top's `Z`): the same marks in colours that read on a
/// dark or a light background, or none. Only the 16 basic colours are
/// ever used, so the terminal's own palette decides the exact shades.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// For dark backgrounds (most terminals).
    #[default]
    Default,
    /// For light backgrounds: no yellow, no cyan.
    Light,
    /// Attributes only (bold, reverse), as under `NO_COLOR`.
    Mono,
}

impl Scheme {
    pub const ALL: [Scheme; 3] = [Scheme::Default, Scheme::Light, Scheme::Mono];

    pub fn name(self) -> &'static str {
        match self {
            Scheme::Default => "default",
            Scheme::Light => "light",
            Scheme::Mono => "mono",
        }
    }

    /// The next scheme in [`Scheme::ALL`], for `Z`.
    pub fn next(self) -> Scheme {
        let i = Scheme::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Scheme::ALL[(i + 1) % Scheme::ALL.len()]
    }
}

/// The scheme chosen, and whether `NO_COLOR` overrules it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Theme {
    pub scheme: Scheme,
    /// `NO_COLOR` is set: monochrome whatever the scheme (no-color.org),
    /// while `Z` and `W` still change and save the scheme.
    pub no_color: bool,
}

impl Theme {
    /// The default scheme, monochrome if `NO_COLOR` is set to anything
    /// non-empty.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme {
            scheme: Scheme::Default,
            no_color,
        }
    }

    /// Attributes only.
    pub fn mono() -> Self {
        Theme {
            scheme: Scheme::Mono,
            no_color: false,
        }
    }

    pub fn with_scheme(self, scheme: Scheme) -> Self {
        Theme { scheme, ..self }
    }

    /// The scheme in effect on screen.
    pub fn effective(self) -> Scheme {
        if self.no_color {
            Scheme::Mono
        } else {
            self.scheme
        }
    }

    pub fn color(self) -> bool {
        self.effective() != Scheme::Mono
    }
}

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
