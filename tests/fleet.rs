//! The fleet files (issue 13): Prometheus rules that promtool accepts and
//! whose alerts fire as their names promise, a Grafana dashboard whose
//! every query names a metric nettop exports or one of those rules, and a
//! real Prometheus that loads the rules, scrapes `nettop --serve` and
//! answers a query on a recording rule.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::calibration;
use common::run::nettop;
use nettop::export::openmetrics::{self, Options};
use nettop::record::synth;

fn fleet(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fleet")
        .join(rel)
}

const RULES: &str = "prometheus/nettop.rules.yml";

fn promtool(args: &[&str]) -> Result<String, String> {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(fleet("prometheus"))
        .output()
        .map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

/// Names of the recording rules in the rules file.
fn recording_rules() -> BTreeSet<String> {
    std::fs::read_to_string(fleet(RULES))
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record:"))
        .map(|n| n.trim().to_string())
        .collect()
}

/// Every sample name nettop's renderer can export (families exist whether
/// or not this snapshot fills them).
fn exported_metrics() -> BTreeSet<String> {
    let mut host = synth::host(2);
    host.calibration = Some(calibration::from_ipi(calibration::measured(
        10, 100.0, 1000.0, 10.0,
    )));
    let prev = synth::sample(1, 8, 2);
    let cur = synth::sample(2, 8, 2);
    openmetrics::families(&host, Some(&prev), &cur, &Options::default())
        .iter()
        .map(|f| f.sample_name())
        .collect()
}

/// Metric-like identifiers (`nettop_…`, `nettop:…`) in a PromQL expression.
fn referenced(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while let Some(pos) = expr[i..].find("nettop") {
        let start = i + pos;
        let boundary =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] == b':')
        {
            end += 1;
        }
        if boundary && matches!(b.get(start + 6), Some(b'_' | b':')) {
            out.push(expr[start..end].to_string());
        }
        i = end.max(start + 1);
    }
    out
}

#[test]
fn rules_pass_promtool_and_their_unit_tests() {
    if !common::tool_runs("promtool", "--version") {
        common::skip("rules_pass_promtool", "promtool not installed");
        return;
    }
    let checked = promtool(&["check", "rules", "nettop.rules.yml"]).unwrap();
    assert!(checked.contains("SUCCESS"), "{checked}");
    promtool(&["test", "rules", "nettop.rules.test.yml"]).unwrap();
}

#[test]
fn every_query_names_an_exported_metric_or_a_rule() {
    let exported = exported_metrics();
    let rules = recording_rules();
    assert!(rules.len() >= 5, "{rules:?}");
    let known = |name: &str| exported.contains(name) || rules.contains(name);
    // The rules themselves only read what nettop exports.
    let rules_text = std::fs::read_to_string(fleet(RULES)).unwrap();
    for l in rules_text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
    {
        let expr = l
            .trim()
            .trim_start_matches("- record:")
            .trim_start_matches("expr:");
        for name in referenced(expr) {
            assert!(
                known(&name) || name == "nettop",
                "rules: {name} is neither exported nor recorded ({l})"
            );
        }
    }
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fleet("grafana/nettop.json")).unwrap())
            .unwrap();
    assert!(dash["uid"].is_string() && dash["title"].is_string());
    let vars: BTreeSet<&str> = dash["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    let panels = dash["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6);
    let mut ids = BTreeSet::new();
    let mut used_rules = BTreeSet::new();
    for p in panels {
        let title = p["title"].as_str().expect("panel title");
        assert!(
            ids.insert(p["id"].as_u64().expect("panel id")),
            "{title}: id reused"
        );
        assert!(
            p["type"].is_string() && p["gridPos"]["w"].is_u64(),
            "{title}"
        );
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no queries");
        for t in targets {
            let expr = t["expr"].as_str().expect("expr");
            let names = referenced(expr);
            assert!(!names.is_empty(), "{title}: {expr} reads no nettop metric");
            for n in names {
                assert!(known(&n), "{title}: {n} is neither exported nor recorded");
                if rules.contains(&n) {
                    used_rules.insert(n);
                }
            }
            for v in expr.split('$').skip(1) {
                let var: String = v
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                assert!(vars.contains(var.as_str()), "{title}: ${var} not defined");
            }
        }
    }
    // What the issue asks the dashboard to show.
    for want in [
        "nettop:task_interrupt_cpu:rate5m",
        "nettop:cpu_softirq_stolen_seconds:rate5m",
        "nettop:cpu_net_rx_seconds:rate5m",
        "nettop:cpu_napi_budget_exhausted:rate5m",
        "nettop:softnet_dropped:rate5m",
    ] {
        assert!(used_rules.contains(want), "no panel shows {want}");
    }
}

#[test]
fn prometheus_loads_the_rules_and_records_from_serve() {
    const T: &str = "prometheus_loads_the_rules_and_records_from_serve";
    if !common::tool_runs("prometheus", "--version") {
        common::skip(T, "prometheus not installed");
        return;
    }
    if !common::is_root() {
        common::skip(T, "needs root: the recorded rule reads BPF-traced metrics");
        return;
    }
    let target = common::prom::free_addr();
    let _serve = common::run::Guard(
        nettop()
            .env("NETTOP_CACHE_DIR", common::cache_dir())
            .args(["--serve", &target, "-d", "0.5"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: nettop\n    static_configs:\n      - targets: ['{target}']\n",
        fleet(RULES).display()
    );
    let (_prom, web) = common::prom::start_prometheus(dir.path(), &config);
    let q = "/api/v1/query?query=nettop%3Acpu_irq_seconds%3Arate5m";
    let t0 = Instant::now();
    let mut last = String::new();
    while t0.elapsed() < Duration::from_secs(90) {
        std::thread::sleep(Duration::from_millis(500));
        let Some((200, body)) = common::prom::get(&web, q) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        last = body;
        let Some(res) = v["data"]["result"].as_array().filter(|a| !a.is_empty()) else {
            continue;
        };
        assert_eq!(res[0]["metric"]["job"], "nettop", "{last}");
        assert!(res[0]["metric"]["cpu"].is_string(), "{last}");
        let rate: f64 = res[0]["value"][1].as_str().unwrap().parse().unwrap();
        // Seconds of interrupt work per second on one CPU.
        assert!((0.0..=1.0).contains(&rate), "{last}");
        let (_, rules) = common::prom::get(&web, "/api/v1/rules").unwrap();
        let rv: serde_json::Value = serde_json::from_str(&rules).unwrap();
        let mut n = 0;
        for g in rv["data"]["groups"].as_array().unwrap() {
            for r in g["rules"].as_array().unwrap() {
                n += 1;
                assert_eq!(r["health"], "ok", "{r}");
            }
        }
        assert_eq!(n, 11, "{rules}");
        common::report(&format!(
            "{T}: {n} rules loaded, nettop:cpu_irq_seconds:rate5m = {rate:.5} after {:?}\n",
            t0.elapsed()
        ));
        return;
    }
    panic!("Prometheus never returned nettop:cpu_irq_seconds:rate5m; last answer: {last}");
}
