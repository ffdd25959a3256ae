//! Calibration tables for tests that need HIDDEN~ charged: the shape the
//! real calibrator (`nettop::calibrate`) produces, with the numbers each
//! test picks.

use nettop::sample::calibration::{Basis, Calibration, ClassCost};

/// A class cost measured from `samples` interruptions: `traced_ns` handler
/// time, `hidden_ns` untraced time each, `spread_ns` half its IQR.
pub fn measured(samples: u64, traced_ns: f64, hidden_ns: f64, spread_ns: f64) -> ClassCost {
    ClassCost {
        basis: Basis::Measured,
        samples,
        traced_ns,
        hidden_ns,
        spread_ns,
    }
}

/// A calibration built around the measured IPI cost `ipi`: device, timer
/// and other interrupts charged the same (`SameAsIpi`, with no samples or
/// traced time of their own, as the calibrator writes them), the softirq
/// tail not measured, and all of the hidden cost left in the interrupted
/// task's runtime (`runtime_share` 1, tick-based accounting). Metadata
/// (CPU, origin, time) is left at its default.
///
/// Tests set what they pin on top with struct-update syntax, e.g.
/// `Calibration { cpu: 3, timer: measured(..), ..from_ipi(measured(..)) }`.
pub fn from_ipi(ipi: ClassCost) -> Calibration {
    let same = ClassCost {
        basis: Basis::SameAsIpi,
        samples: 0,
        traced_ns: 0.0,
        ..ipi.clone()
    };
    Calibration {
        device: same.clone(),
        timer: same.clone(),
        other: same,
        ipi,
        runtime_share: 1.0,
        ..Default::default()
    }
}
