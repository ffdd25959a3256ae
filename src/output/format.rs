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

/// A percent of one CPU that is usually small (nettop's own BPF time on a
/// CPU: hundredths matter there), in at most 5 characters: two decimals
/// below 10, else as [`fmt_pct`]; `-` when it was not measured.
pub fn fmt_fine_pct(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v < 9.995 => format!("{:.2}", v.max(0.0)),
        Some(v) => fmt_pct(v),
    }
}

/// A rate per second in at most 6 characters, SI prefixes: "950",
/// "48.0k", "1.2M", "3.4G". The model never gives a negative or non-finite
/// rate; if one came, "0" is the least wrong thing a column can say.
pub fn fmt_rate(v: f64) -> String {
    if !v.is_finite() || v < 0.5 {
        "0".into()
    } else if v < 999.5 {
        format!("{v:.0}")
    } else if v < 999_950.0 {
        format!("{:.1}k", v / 1e3)
    } else if v < 999_950_000.0 {
        format!("{:.1}M", v / 1e6)
    } else {
        format!("{:.1}G", v / 1e9)
    }
}

/// "08:40:01Z": time of day in UTC, as the TUI's summary line shows it.
pub fn hms(unix_ms: u64) -> String {
    let s = (unix_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}Z", s / 3600, (s / 60) % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_compact_and_fit_six_columns() {
        assert_eq!(fmt_rate(950.4), "950");
        assert_eq!(fmt_rate(999.7), "1.0k");
        assert_eq!(fmt_rate(48_000.0), "48.0k");
        assert_eq!(fmt_rate(999_960.0), "1.0M");
        assert_eq!(fmt_rate(1_150_000.0), "1.1M");
        assert_eq!(fmt_rate(3.4e9), "3.4G");
        assert_eq!(fmt_rate(f64::NAN), "0");
        assert_eq!(fmt_rate(-3.0), "0");
        for v in [
            0.0, 999.4, 999.6, 99_999.0, 999_949.0, 999_951.0, 5e8, 9.9e11,
        ] {
            assert!(fmt_rate(v).chars().count() <= 6, "{v} -> {}", fmt_rate(v));
        }
    }

    #[test]
    fn percents() {
        assert_eq!(fmt_pct(12.34), "12.3");
        assert_eq!(fmt_pct(99.96), "100");
        assert_eq!(fmt_pct(250.0), "250");
        assert_eq!(fmt_pct_or_dash(0.04), "-");
        assert_eq!(fmt_pct_or_dash(0.06), "0.1");
        assert_eq!(fmt_fine_pct(None), "-", "not measured is not 0");
        assert_eq!(fmt_fine_pct(Some(0.0)), "0.00");
        assert_eq!(fmt_fine_pct(Some(0.046)), "0.05");
        assert_eq!(fmt_fine_pct(Some(9.996)), "10.0");
        assert_eq!(fmt_fine_pct(Some(100.0)), "100");
    }
}
