//! Robust summaries of samples a busy host spoils now and then: the
//! calibration's gaps, and the woken thread's billing per wake-up.

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil().min((sorted.len() - 1) as f64) as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Mean, median and semi-IQR of `xs` after dropping far outliers (beyond
/// three interquartile ranges from the quartiles, Tukey's "far out"). In
/// the census the outliers are gaps where something else hit at the same
/// time, e.g. the hypervisor's own periodic work, which would have cost
/// the same without the interruption; a plain mean would charge it to the
/// interruption.
pub fn robust(xs: &[f64]) -> (f64, f64, f64, u64) {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0);
    }
    v.sort_by(f64::total_cmp);
    let q1 = quantile(&v, 0.25);
    let q3 = quantile(&v, 0.75);
    let iqr = q3 - q1;
    let (lo, hi) = (q1 - 3.0 * iqr, q3 + 3.0 * iqr);
    let kept: Vec<f64> = v.iter().copied().filter(|x| *x >= lo && *x <= hi).collect();
    let dropped = (v.len() - kept.len()) as u64;
    let mean = kept.iter().sum::<f64>() / kept.len().max(1) as f64;
    (mean, quantile(&v, 0.5), iqr / 2.0, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robust_summary() {
        let (mean, median, spread, out) = robust(&[1.0, 2.0, 3.0, 4.0, 5.0, 1000.0]);
        assert_eq!(out, 1);
        assert!((mean - 3.0).abs() < 1e-9);
        assert!((median - 3.5).abs() < 1e-9);
        assert!((spread - 1.25).abs() < 1e-9);
        assert_eq!(robust(&[]), (0.0, 0.0, 0.0, 0));
    }
}
