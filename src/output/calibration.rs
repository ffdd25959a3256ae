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
    if !c.states.is_empty() {
        let _ = writeln!(
            out,
            "\nThe host's other states seen on this boot (a frame is charged the state its own \
             IPIs' handler time shows):\n{:<19} {:>9} {:>9} {:>9} {:>9}",
            "measured", "ipi trc", "ipi hid", "tlb trc", "tlb hid"
        );
        for s in &c.states {
            let (tt, th) = match s.tlb.basis {
                Basis::Measured => (ns(s.tlb.traced_ns), ns(s.tlb.hidden_ns)),
                Basis::SameAsIpi | Basis::NotMeasured => ("-".into(), "= ipi".into()),
            };
            let _ = writeln!(
                out,
                "{:<19} {:>9} {:>9} {tt:>9} {th:>9}",
                format_utc(s.measured_unix_ms),
                ns(s.ipi.traced_ns),
                ns(s.ipi.hidden_ns)
            );
        }
    }
    for n in &c.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    let _ = writeln!(out, "Origin: {}", c.origin);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::calibration::{ClassCost, IpiState};

    #[test]
    fn the_table_lists_the_other_states() {
        let cost = |traced_ns, hidden_ns| ClassCost {
            basis: Basis::Measured,
            samples: 1_000,
            traced_ns,
            hidden_ns,
            spread_ns: 80.0,
        };
        let mut c = Calibration {
            ipi: cost(270.0, 5_600.0),
            tlb: cost(470.0, 5_700.0),
            ..Default::default()
        };
        assert!(!render_table(&c).contains("other states"));
        c.states = vec![
            IpiState {
                measured_unix_ms: 1_764_133_200_000,
                ipi: cost(480.0, 7_000.0),
                tlb: cost(870.0, 7_100.0),
            },
            IpiState {
                measured_unix_ms: 1_764_133_260_000,
                ipi: cost(900.0, 9_000.0),
                tlb: ClassCost::not_measured(),
            },
        ];
        let t = render_table(&c);
        let rows: Vec<&str> = t
            .lines()
            .skip_while(|l| !l.contains("other states"))
            .skip(2)
            .take(2)
            .collect();
        assert_eq!(rows.len(), 2, "{t}");
        fn cells(l: &str) -> Vec<&str> {
            l.split_whitespace().rev().take(4).collect()
        }
        assert_eq!(cells(rows[0]), ["7100", "870", "7000", "480"], "{t}");
        assert_eq!(cells(rows[1]), ["ipi", "=", "-", "9000"], "{t}");
    }
}
