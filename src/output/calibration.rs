//! The table `nettop --calibrate` prints. Pure.

use std::fmt::Write;

use super::text::format_utc;
use crate::sample::calibration::{Basis, Calibration};

fn ns(x: f64) -> String {
    format!("{x:.0}")
}

/// The calibration as a text table, ending in a newline.
pub fn render_table(c: &Calibration) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Hidden interrupt cost, measured {} on CPU {} (IPIs from CPU {}): {:.0} ms of CPU, {:.0} ms wall",
        format_utc(c.measured_unix_ms),
        c.cpu,
        c.sender_cpu,
        c.cost_cpu_ms,
        c.wall_ms
    );
    let _ = writeln!(
        out,
        "Host: {} · {} · hypervisor {} · nettop {}",
        c.key.kernel, c.key.cpu_model, c.key.hypervisor, c.key.nettop
    );
    let _ = writeln!(
        out,
        "\n{:<8} {:>8} {:>10} {:>10} {:>10}  basis",
        "kind", "samples", "traced ns", "hidden ns", "spread ns"
    );
    for (name, k) in c.rows() {
        let (samples, traced, basis) = match (name, k.basis) {
            ("softirq", Basis::Measured) => (
                k.samples.to_string(),
                ns(k.traced_ns),
                "measured: extra of an IPI with one softirq in its tail (loopback RPS)",
            ),
            (_, Basis::Measured) => (
                k.samples.to_string(),
                ns(k.traced_ns),
                "measured: gaps holding exactly one",
            ),
            ("device" | "other", Basis::SameAsIpi) => {
                ("-".into(), "-".into(), "same as ipi (not inducible)")
            }
            (_, Basis::SameAsIpi) => (
                "-".into(),
                "-".into(),
                "same as ipi (too few clean gaps, see the notes)",
            ),
            ("softirq", Basis::NotMeasured) => {
                ("-".into(), "-".into(), "not measured: charged as 0")
            }
            (_, Basis::NotMeasured) => ("-".into(), "-".into(), "not measured: charged as ipi"),
        };
        let _ = writeln!(
            out,
            "{name:<8} {samples:>8} {traced:>10} {:>10} {:>10}  {basis}",
            ns(k.hidden_ns),
            ns(k.spread_ns)
        );
    }
    let _ = writeln!(
        out,
        "\nspread = half the interquartile range of the per-interruption hidden time."
    );
    let _ = writeln!(
        out,
        "hidden = the single-gap cost × {:.2}, what the induced windows lost beyond the quiet ones.",
        c.marginal_ratio
    );
    if c.resched.basis == Basis::Measured {
        let _ = writeln!(
            out,
            "resched = the gap less the woken thread's own run ({} ns per wake-up, its time, not the IPI's).",
            ns(c.resched_woken_ns)
        );
        if c.resched_rebilled_ns > 0.0 {
            let _ = writeln!(
                out,
                "given back = what the woken thread was billed beyond that: {} ns per wake-up, \
                 the interrupted task's time (added to its TRUE%).",
                ns(c.resched_rebilled_ns)
            );
        }
    }
    let _ = writeln!(
        out,
        "Share of the hidden cost left in the task's runtime: {:.2}{}",
        c.runtime_share,
        if c.runtime_share >= 1.0 {
            " (tick-based accounting: all of it)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "Gaps without any traced interruption (the hypervisor's own work): {:.0}/s, {:.2}% of the CPU; \
         not charged to anyone. {} gaps, {} context switches in the spinner.",
        c.untraced_gaps_per_s, c.untraced_pct, c.gaps, c.ctx_switches
    );
    for n in &c.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    let _ = writeln!(out, "Origin: {}", c.origin);
    out
}
