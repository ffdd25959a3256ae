//! The pure model: two raw samples in, one Frame of rates and percentages out.
pub mod cgroups;
pub mod compute;
pub mod cost;
pub mod devconf;
pub mod frame;
pub mod hidden;
pub mod system;
pub mod traffic;
pub use compute::compute;

/// Replaces NaN/inf (impossible by construction, but a frame must never
/// carry one) with 0.
pub(crate) fn fin(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// `ns` of an interval of `dt_ns` as a percent of one CPU (0 for an empty
/// interval).
pub(crate) fn pct(ns: f64, dt_ns: u64) -> f64 {
    if dt_ns == 0 {
        0.0
    } else {
        fin(ns / dt_ns as f64 * 100.0)
    }
}

/// Half the width of a band from `low` to `high` (0 for none).
pub(crate) fn half_width(low: f64, high: f64) -> f64 {
    fin(((high - low) / 2.0).max(0.0))
}

/// `n` events over an interval of `dt_ns`, per second (0 for an empty
/// interval).
pub(crate) fn per_s(n: u64, dt_ns: u64) -> f64 {
    if dt_ns == 0 {
        0.0
    } else {
        fin(n as f64 / (dt_ns as f64 / 1e9))
    }
}
