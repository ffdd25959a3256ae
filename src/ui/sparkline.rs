//! Text sparklines: one character per sample, from [`TICKS`], a space
//! where there is no sample; and the helpers that fit a history into a
//! width and label its span. Pure, for the views over [`super::history`].

/// The range percent sparklines are drawn against: 100 % of one CPU, fixed
/// rather than fitted to each row, so two rows compare at a glance and a
/// row whose STOLEN% wobbles between 0.1 and 0.3 % stays flat instead of
/// looking like a saturated CPU. A CPU's figures and a thread's cannot
/// exceed it; a multi-threaded process above it shows full blocks.
pub const PCT_SCALE: f64 = 100.0;

/// Sparkline levels, lowest first: a sample in `[k, k+1) × scale / 8` is
/// `TICKS[k]`, so zero is the baseline `▁`. A space means "no sample".
pub const TICKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// One character per value: [`TICKS`] for `v / scale` in eight equal
/// steps (clamped), a space for "no sample".
pub fn spark(values: &[Option<f32>], scale: f64) -> String {
    values
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(v) if scale <= 0.0 => TICKS[usize::from(*v > 0.0) * 7],
            Some(v) => {
                let level = (f64::from(*v) / scale * TICKS.len() as f64).floor();
                TICKS[level.clamp(0.0, (TICKS.len() - 1) as f64) as usize]
            }
        })
        .collect()
}

/// `values` merged into at most `w` buckets of equal frame counts (the
/// newest bucket full), each the highest of its samples: a one-frame spike
/// stays visible when 300 frames are drawn in 80 columns.
pub fn squeeze(values: &[Option<f32>], w: usize) -> Vec<Option<f32>> {
    if w == 0 {
        return Vec::new();
    }
    let per = values.len().div_ceil(w).max(1);
    let lead = (per - values.len() % per) % per;
    let mut out = Vec::with_capacity(w);
    let mut i = 0;
    while i < values.len() {
        let take = if i == 0 { per - lead } else { per };
        let bucket = &values[i..(i + take).min(values.len())];
        out.push(bucket.iter().flatten().copied().reduce(f32::max));
        i += take;
    }
    out
}

/// "42s", "4m 59s", "1h 05m": a span of history for a label.
pub fn fmt_span(ms: u64) -> String {
    let s = (ms + 500) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s / 60) % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_levels_and_gaps() {
        let v = [
            None,
            Some(0.0),
            Some(12.5),
            Some(50.0),
            Some(99.0),
            Some(400.0),
        ];
        assert_eq!(spark(&v, PCT_SCALE), " ▁▂▅██");
        assert_eq!(spark(&[Some(0.0), Some(3.0)], 0.0), "▁█");
    }

    #[test]
    fn squeeze_keeps_spikes_and_the_newest_bucket_full() {
        let v: Vec<Option<f32>> = (0..7).map(|i| Some(i as f32)).collect();
        assert_eq!(squeeze(&v, 3), vec![Some(0.0), Some(3.0), Some(6.0)]);
        assert_eq!(squeeze(&v, 10).len(), 7);
        assert_eq!(squeeze(&[None, None, Some(1.0)], 1), vec![Some(1.0)]);
        assert_eq!(squeeze(&[None, None], 1), vec![None]);
    }

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(fmt_span(42_000), "42s");
        assert_eq!(fmt_span(299_000), "4m 59s");
        assert_eq!(fmt_span(3_900_000), "1h 05m");
    }
}
