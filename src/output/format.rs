//! How numbers look, in every front end: percentages of one CPU, rates and
//! times. One function per kind, so batch text and the TUI print a figure
//! the same way.

/// Percent of one CPU in at most 5 characters.
pub fn fmt_pct(v: f64) -> String {
    if v >= 99.95 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Interrupt-related percent: "-" for nothing, so real values stand out.
pub fn fmt_pct_or_dash(v: f64) -> String {
    if v < 0.05 { "-".into() } else { fmt_pct(v) }
}

/// Rate with K/M/G suffix in at most 6 characters.
pub fn fmt_rate(v: f64) -> String {
    let a = v.abs();
    if a < 0.5 {
        "0".into()
    } else if a < 1e3 {
        format!("{v:.0}")
    } else if a < 1e6 {
        format!("{:.1}K", v / 1e3)
    } else if a < 1e9 {
        format!("{:.1}M", v / 1e6)
    } else {
        format!("{:.1}G", v / 1e9)
    }
}

pub fn hms(unix_ms: u64) -> String {
    let s = (unix_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}Z", s / 3600, (s / 60) % 60, s % 60)
}
