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

/// A percent known within ± `band` points: as [`fmt_pct`] while the band
/// is 2 points wide or less, else whole points and the half-width
/// ("44±6"), in the width of a percent column. A figure shown to a tenth
/// of a point would claim more than is known.
pub fn fmt_pct_band(v: f64, band: f64) -> String {
    if band > 1.0 && band.is_finite() {
        format!("{v:.0}±{:.0}", band.min(99.0))
    } else {
        fmt_pct(v)
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

/// Bytes in at most 5 characters, as top and htop print memory: KiB as a
/// plain number below 100,000 KiB, then `M` and `G` (one decimal below
/// 100) and `T`: "4096", "1234M", "12.3G", "512G", "1.5T". `-` when
/// unknown (a kernel thread has no address space: nothing, not 0).
pub fn fmt_mem(bytes: Option<u64>) -> String {
    const K: f64 = 1024.0;
    let Some(b) = bytes else {
        return "-".into();
    };
    let kib = b / 1024;
    let mib = b as f64 / (K * K);
    let gib = mib / K;
    if kib < 100_000 {
        kib.to_string()
    } else if mib < 9_999.5 {
        format!("{mib:.0}M")
    } else if gib < 99.95 {
        format!("{gib:.1}G")
    } else if gib < 1023.5 {
        format!("{gib:.0}G")
    } else if gib / K < 99.95 {
        format!("{:.1}T", gib / K)
    } else {
        format!("{:.0}T", gib / K)
    }
}

/// CPU time as htop's TIME+: "m:ss.cc" below an hour, "h:mm:ss" from
/// there (in at most 9 characters: up to 999 hours), "12345h" beyond.
pub fn fmt_cpu_time(secs: f64) -> String {
    let cs = if secs.is_finite() && secs > 0.0 {
        (secs * 100.0) as u64
    } else {
        0
    };
    let s = cs / 100;
    let (h, m) = (s / 3600, s / 60 % 60);
    if h == 0 {
        format!("{}:{:02}.{:02}", s / 60, s % 60, cs % 100)
    } else if h < 1000 {
        format!("{h}:{m:02}:{:02}", s % 60)
    } else {
        format!("{h}h")
    }
}

/// `PRI` as htop prints it: `RT` for a real-time task at the top priority
/// (/proc says -100 or less), `-` when unknown.
pub fn fmt_priority(p: Option<i32>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p <= -100 => "RT".into(),
        Some(p) => p.to_string(),
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
    fn a_band_wider_than_two_points_is_shown_in_whole_points() {
        assert_eq!(fmt_pct_band(44.13, 0.9), "44.1");
        assert_eq!(fmt_pct_band(44.13, 1.0), "44.1");
        assert_eq!(fmt_pct_band(44.13, 5.6), "44±6");
        assert_eq!(fmt_pct_band(44.13, f64::NAN), "44.1");
        for (v, b) in [(100.0, 250.0), (0.0, 1.5), (99.96, 30.0)] {
            let s = fmt_pct_band(v, b);
            assert!(s.chars().count() <= 6, "{v} ± {b} -> {s}");
        }
    }

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
    fn memory_fits_five_columns() {
        let cases = [
            (None, "-"),
            (Some(0), "0"),
            (Some(4096 * 1024), "4096"),
            (Some(99_999 * 1024), "99999"),
            (Some(100_000 * 1024), "98M"),
            (Some(1234 << 20), "1234M"),
            (Some(12_700 << 20), "12.4G"),
            (Some(512 << 30), "512G"),
            (Some(1536 << 30), "1.5T"),
            (Some(u64::MAX), "16777216T"),
        ];
        for (b, want) in cases {
            assert_eq!(fmt_mem(b), want, "{b:?}");
        }
        for e in 10..54 {
            let b = Some(3u64 << e);
            assert!(
                fmt_mem(b).chars().count() <= 5 || e > 50,
                "{b:?} -> {}",
                fmt_mem(b)
            );
        }
    }

    #[test]
    fn cpu_time_as_htop() {
        assert_eq!(fmt_cpu_time(0.0), "0:00.00");
        assert_eq!(fmt_cpu_time(-3.0), "0:00.00");
        assert_eq!(fmt_cpu_time(f64::NAN), "0:00.00");
        assert_eq!(fmt_cpu_time(83.456), "1:23.45");
        assert_eq!(fmt_cpu_time(3599.99), "59:59.99");
        assert_eq!(fmt_cpu_time(3600.0), "1:00:00");
        assert_eq!(fmt_cpu_time(999.0 * 3600.0 + 3599.0), "999:59:59");
        assert_eq!(fmt_cpu_time(1000.0 * 3600.0), "1000h");
        assert_eq!(fmt_priority(Some(20)), "20");
        assert_eq!(fmt_priority(Some(-51)), "-51");
        assert_eq!(fmt_priority(Some(-100)), "RT");
        assert_eq!(fmt_priority(None), "-");
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
