//! `--metrics-exclude` and `--metrics-cpu` on the command line: a typo is
//! a usage error that lists the valid names, the flags need a metrics
//! sink, and `--export openmetrics` honours both.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::run::{nettop, output_within};

fn golden() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/v1.rec.zst")
        .display()
        .to_string()
}

/// Runs nettop with `args`: exit code, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = output_within(
        nettop().args(args),
        Duration::from_secs(60),
        &args.join(" "),
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn export(extra: &[&str]) -> String {
    let g = golden();
    let mut args = vec!["--replay", g.as_str(), "--export", "openmetrics"];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{extra:?}: {err}");
    out
}

/// Sample lines of a family (`name{` or `name `).
fn lines_of<'a>(om: &'a str, name: &str) -> Vec<&'a str> {
    om.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
        })
        .collect()
}

#[test]
fn csv_says_interruptions_as_the_metrics_do() {
    let g = golden();
    let (code, out, err) = run(&["--replay", &g, "--export", "csv"]);
    assert_eq!(code, 0, "{err}");
    let header: Vec<&str> = out.lines().next().unwrap_or("").split(',').collect();
    assert!(header.contains(&"interruptions_per_s"), "{header:?}");
    assert!(
        !header.iter().any(|h| h.contains("interrupts")),
        "{header:?}"
    );
}

#[test]
fn an_unknown_family_is_a_usage_error_that_lists_the_valid_ones() {
    let (code, _, err) = run(&[
        "--replay",
        &golden(),
        "--export",
        "openmetrics",
        "--metrics-exclude",
        "node-exporter,nettop_cpu_interrupts_total",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nettop_cpu_interrupts_total"), "{err}");
    for valid in [
        "node-exporter",
        "nettop_cpu_seconds",
        "nettop_cpu_interruptions",
        "nettop_cgroup_stolen_cpu_ratio",
    ] {
        assert!(err.contains(valid), "{valid} not listed: {err}");
    }
}

#[test]
fn the_flags_need_a_metrics_sink() {
    let g = golden();
    for args in [
        vec![
            "--replay",
            &g,
            "--export",
            "json",
            "--metrics-cpu",
            "per-node",
        ],
        vec![
            "--replay",
            &g,
            "--export",
            "csv",
            "--metrics-exclude",
            "nettop_tasks",
        ],
        vec!["--metrics-exclude", "node-exporter"],
        vec!["--metrics-cpu", "per-node"],
        vec!["-b", "-n", "1", "--metrics-cpu", "per-node"],
        vec!["--pinning-check", "--metrics-exclude", "nettop_tasks"],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?} should be a usage error: {err}");
        assert!(err.contains("--metrics-"), "{args:?}: {err}");
    }
}

#[test]
fn export_leaves_out_excluded_families_and_folds_cpus_into_nodes() {
    let all = export(&[]);
    let cut = export(&["--metrics-exclude", "node-exporter,nettop_tasks"]);
    for gone in [
        "nettop_cpu_seconds_total",
        "nettop_cpu_online",
        "nettop_softnet_processed_packets_total",
        "nettop_network_receive_bytes_total",
        "nettop_tasks",
    ] {
        assert!(
            !lines_of(&all, gone).is_empty(),
            "{gone} not in the full export"
        );
        assert!(lines_of(&cut, gone).is_empty(), "{gone} still exported");
    }
    let kept = "nettop_cpu_traced_hardirq_seconds_total";
    assert_eq!(lines_of(&all, kept), lines_of(&cut, kept));

    let nodes = export(&["--metrics-cpu", "per-node"]);
    assert!(!nodes.contains("cpu=\""), "a cpu label per node");
    // The recording's two CPUs are on one node: its counters are their sum.
    let total = |om: &str, name: &str| -> f64 {
        lines_of(om, name)
            .iter()
            .filter(|l| l.contains("1700000003"))
            .map(|l| l.split(' ').nth(1).unwrap().parse::<f64>().unwrap())
            .sum()
    };
    let name = "nettop_cpu_traced_hardirq_seconds_total";
    let per_node = lines_of(&nodes, name);
    assert!(
        !per_node.is_empty() && per_node.iter().all(|l| l.contains("node=\"0\"")),
        "{per_node:?}"
    );
    let (a, b) = (total(&all, name), total(&nodes, name));
    assert!(
        a > 0.0 && (a - b).abs() < 1e-9 * a,
        "{a} per CPU, {b} per node"
    );
    assert!(nodes.lines().count() < all.lines().count());
}
