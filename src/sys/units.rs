//! The one duration syntax and the one size syntax every option and prompt
//! accepts (`-d`, `--duration`, `--max-size`, the replay `T` prompt, and
//! anything added later), so a user learns them once.
//!
//! Durations are humantime's grammar (`500ms`, `30s`, `10m`, `1h30m`, `7d`)
//! plus a bare number meaning seconds, as `top -d 0.5` has always taken.
//! Sizes are parse-size's grammar (`100M`, `1GB`, `512KiB`, `1.5G`, plain
//! bytes), read as binary: `1G` and `1GB` are both 2^30, as systemd, atop
//! and the kernel's own "1G" mean it.
//!
//! Errors are plain `String`s: the parsers stand behind clap's value
//! parsers, which show the message as it is; the config file and the `T`
//! prompt wrap the same message.

use std::time::Duration;

/// Parses a duration: `500ms`, `30s`, `10m`, `1h30m`, `1d`, or plain seconds
/// (`0.5`). Zero, negative, NaN and values above `max` are refused, each
/// with a message that says what is accepted. `what` names the option in
/// the message (`--duration`, `-d`).
pub fn parse_duration(what: &str, s: &str, max: Duration) -> Result<Duration, String> {
    let d = length(what, s, s, max)?;
    if d.is_zero() {
        return Err(format!("{what} '{s}': must be more than zero"));
    }
    Ok(d)
}

/// The duration syntax with zero allowed: how far, where nothing says it
/// must be more than nothing (an offset: `+0s` is the start itself).
/// `shown` is the input as the message quotes it (with its sign).
fn length(what: &str, shown: &str, s: &str, max: Duration) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "{what} '{shown}': expected a duration like 500ms, 30s, 10m, 1h30m or 2d (a bare number is seconds)"
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    let d = if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t.parse().map_err(|_| bad())?;
        if secs > max.as_secs_f64() {
            return Err(too_long(what, shown, max));
        }
        Duration::try_from_secs_f64(secs).map_err(|_| bad())?
    } else {
        humantime::parse_duration(t).map_err(|_| bad())?
    };
    if d > max {
        return Err(too_long(what, shown, max));
    }
    Ok(d)
}

fn too_long(what: &str, s: &str, max: Duration) -> String {
    format!(
        "{what} '{s}': at most {}",
        humantime::format_duration(Duration::from_secs(max.as_secs()))
    )
}

/// A signed offset for jumping in a recording: `+30s`, `-10m`, `+1h30m`
/// (no sign means forward). Returns (forward?, magnitude). Zero is an
/// offset like any other: `+0s` is the point it counts from.
pub fn parse_offset(what: &str, s: &str, max: Duration) -> Result<(bool, Duration), String> {
    let t = s.trim();
    let (fwd, body) = match t.as_bytes().first() {
        Some(b'+') => (true, &t[1..]),
        Some(b'-') => (false, &t[1..]),
        _ => (true, t),
    };
    length(what, t, body, max).map(|d| (fwd, d))
}

/// A point in a recording, in the one time syntax of the replay `T` prompt
/// and `--begin`/`--end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpec {
    /// `HH:MM[:SS]`, UTC (the header shows UTC): seconds into a day.
    Clock(u64),
    /// `+D` or `-D` in the one duration syntax: forward?, how far.
    Offset(bool, Duration),
    /// A full date and time, RFC 3339 (`2026-11-25T12:00:00Z`, or with a
    /// space and no zone, read as UTC): unix milliseconds.
    At(u64),
}

/// Farther than any recording reaches; longer offsets are typos. A round
/// 100 years as the message prints it (humantime's year is 365.25 days).
const TIME_MAX: Duration = Duration::from_secs(3_155_760_000);

/// Parses a [`TimeSpec`]; `what` names the option or prompt in messages.
pub fn parse_time(what: &str, s: &str) -> Result<TimeSpec, String> {
    let s = s.trim();
    let bad = || {
        format!(
            "{what} '{s}': expected HH:MM[:SS] (UTC), an offset like +30s, -10m, +1h, or a date \
             like 2026-11-25T12:00:00Z"
        )
    };
    if s.is_empty() {
        return Err(bad());
    }
    if s.starts_with(['+', '-']) {
        let (fwd, d) =
            parse_offset(what, s, TIME_MAX).map_err(|e| format!("{e}; or HH:MM[:SS] (UTC)"))?;
        return Ok(TimeSpec::Offset(fwd, d));
    }
    if s.len() > 8
        && let Ok(t) = humantime::parse_rfc3339_weak(s)
    {
        let ms = t
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| bad())?
            .as_millis();
        return Ok(TimeSpec::At(u64::try_from(ms).map_err(|_| bad())?));
    }
    let parts: Vec<&str> = s.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(bad());
    }
    let mut v = [0u64; 3];
    for (slot, p) in v.iter_mut().zip(&parts) {
        *slot = p.parse().map_err(|_| bad())?;
    }
    let [h, m, sec] = v;
    if h > 23 || m > 59 || sec > 59 {
        return Err(bad());
    }
    Ok(TimeSpec::Clock(h * 3600 + m * 60 + sec))
}

const DAY_MS: u64 = 86_400_000;

impl TimeSpec {
    /// Unix ms: a clock time on the day of `day_of`, an offset from
    /// `base` (both unix ms).
    pub fn resolve(self, day_of: u64, base: u64) -> u64 {
        match self {
            TimeSpec::Clock(secs) => day_of / DAY_MS * DAY_MS + secs * 1000,
            TimeSpec::Offset(fwd, d) => {
                let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                if fwd {
                    base.saturating_add(ms)
                } else {
                    base.saturating_sub(ms)
                }
            }
            TimeSpec::At(ms) => ms,
        }
    }
}

/// Parses a size: `100M`, `1GB`, `512KiB`, `1.5G` or plain bytes, within
/// `min..=max`. Units are binary.
pub fn parse_size(what: &str, s: &str, min: u64, max: u64) -> Result<u64, String> {
    let bad = || format!("{what} '{s}': expected a size like 100M, 1GB, 512KiB or plain bytes");
    let cfg = parse_size::Config::new().with_binary();
    let v = match cfg.parse_size(s.trim()) {
        Ok(v) => v,
        Err(parse_size::Error::PosOverflow) => u64::MAX,
        Err(_) => return Err(bad()),
    };
    if v < min {
        return Err(format!(
            "{what} '{s}': must be at least {}",
            human_bytes(min)
        ));
    }
    if v > max {
        return Err(format!(
            "{what} '{s}': must be at most {}",
            human_bytes(max)
        ));
    }
    Ok(v)
}

/// A number from input, for a message: in full when that is short (`0.01`,
/// `3600`), otherwise rounded to six decimals, or to six significant
/// digits in exponent form when large or small (`1e308`, not 309 digits).
/// For every message that quotes a number it refuses.
pub fn human_number(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() <= 12 || !v.is_finite() {
        return plain;
    }
    let a = v.abs();
    if (1e-4..1e12).contains(&a) {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let s = format!("{v:.5e}");
        match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            None => s,
        }
    }
}

/// Bytes in the largest binary unit that divides them, for messages.
pub fn human_bytes(v: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut x = v;
    let mut i = 0;
    while x >= 1024 && x.is_multiple_of(1024) && i + 1 < UNITS.len() {
        x /= 1024;
        i += 1;
    }
    format!("{x} {}", UNITS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn durations() {
        let p = |s| parse_duration("-d", s, DAY);
        assert_eq!(p("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(p("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(p("30"), Ok(Duration::from_secs(30)));
        assert_eq!(p("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(p("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(p("1d"), Ok(DAY));
        for bad in ["", "0", "0s", "-1", "abc", "1x", "nan", "inf", "1e3", "2d"] {
            assert!(p(bad).is_err(), "{bad:?} accepted");
        }
        assert!(
            p("2d").unwrap_err().contains("at most 1day"),
            "{:?}",
            p("2d")
        );
    }

    #[test]
    fn offsets() {
        let p = |s| parse_offset("T", s, DAY);
        // Zero is the point an offset counts from: the start, or the end.
        assert_eq!(p("+0s"), Ok((true, Duration::ZERO)));
        assert_eq!(p("-0"), Ok((false, Duration::ZERO)));
        assert_eq!(p("+0"), Ok((true, Duration::ZERO)));
        assert!(p("+2d").unwrap_err().contains("'+2d'"), "{:?}", p("+2d"));
        assert_eq!(p("+1h30m"), Ok((true, Duration::from_secs(5400))));
        assert_eq!(p("-10m"), Ok((false, Duration::from_secs(600))));
        assert_eq!(p("+1.5"), Ok((true, Duration::from_millis(1500))));
        assert!(p("-").is_err());
        assert!(p("+-1s").is_err());
    }

    /// Zero is a point in time, never a duration: the same syntax still
    /// refuses it where a length is asked for.
    #[test]
    fn zero_is_a_time_not_a_duration() {
        assert!(parse_time("t", "+0s").is_ok());
        assert!(parse_time("t", "-0").is_ok());
        for z in ["0", "0s", "0ms", "0.0"] {
            let e = parse_duration("--keep-for", z, DAY).unwrap_err();
            assert!(e.contains("must be more than zero"), "{z}: {e}");
        }
        assert!(
            parse_time("t", "+200y")
                .unwrap_err()
                .contains("at most 100years"),
            "{:?}",
            parse_time("t", "+200y")
        );
    }

    #[test]
    fn numbers_in_messages_stay_short() {
        assert_eq!(human_number(0.01), "0.01");
        assert_eq!(human_number(3600.0), "3600");
        assert_eq!(human_number(1e308), "1e308");
        assert_eq!(human_number(-1.5e300), "-1.5e300");
        assert_eq!(human_number(1e-300), "1e-300");
        assert_eq!(human_number(0.1 + 0.2), "0.3");
        assert_eq!(human_number(f64::NAN), "NaN");
        assert_eq!(human_number(f64::INFINITY), "inf");
        assert!(
            human_number(f64::MAX).len() < 16,
            "{}",
            human_number(f64::MAX)
        );
    }

    #[test]
    fn sizes() {
        let p = |s| parse_size("--max-size", s, 4096, 1 << 60);
        assert_eq!(p("1GB"), Ok(1 << 30));
        assert_eq!(p("1G"), Ok(1 << 30));
        assert_eq!(p("1GiB"), Ok(1 << 30));
        assert_eq!(p("512K"), Ok(512 << 10));
        assert_eq!(p("1.5G"), Ok(3 << 29));
        assert_eq!(p("100000"), Ok(100_000));
        assert!(p("1K").unwrap_err().contains("at least 4 KiB"));
        assert!(p("2048P").unwrap_err().contains("at most 1 EiB"));
        assert!(p("1e300").unwrap_err().contains("at most"));
        for bad in ["", "G", "-1G", "1Q", "nan"] {
            assert!(p(bad).is_err(), "{bad:?} accepted");
        }
    }
}
